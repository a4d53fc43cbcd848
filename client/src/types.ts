// The types of the core client: the app shape the generated engine-client.d.ts fills in,
// the result envelope, and the error union each flow can answer with.

/** A flow as the declarations describe it. */
export interface FlowType {
  input: unknown;
  output: unknown;
  /** Declared error codes and the type of their data. */
  errors: object;
  /** Whether gates (authentication, scopes, policy, rate limits) may deny the call. */
  gated: boolean;
}

/** The shape of an app: units of flows. */
export type AppType = { [unit: string]: { [flow: string]: FlowType } };

/**
 * The module-augmentation slot for the ambient app type: the generated engine-client.d.ts
 * declares `interface Register { app: App }`, so createClient(url) is typed with no import.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface Register {}

/** The app type registered through [Register], or an untyped app when none is. */
export type RegisteredApp = Register extends { app: infer A extends AppType } ? A : AppType;

/** An HTTP trigger. */
export interface Route {
  method: string;
  path: string;
}

/** The runtime route map of an app (app.$routes): unit, then flow, then its trigger. */
export type ClientRouteMap = { [unit: string]: { [flow: string]: Route } };

/** The flat REST table: "unit.flow" to its trigger. */
export type RouteTable = { [id: string]: Route };

declare const appType: unique symbol;

/** An app value: its runtime routes, branded with the app's types. */
export interface AppOf<A extends AppType> {
  $routes: ClientRouteMap;
  readonly [appType]?: A;
}

/** The payload of the client-made TransportError. */
export interface TransportErrorData {
  message: string;
  /** The HTTP status, when there was a reply. */
  status?: number;
}

/** The gate codes, which any gated flow may answer with. */
export interface GateErrors {
  Unauthorized: Record<string, never>;
  Forbidden: { gate: string; reason: string };
  RateLimited: { retryAfterMs: number };
}

/** The framework codes any flow may answer with, and the client-only codes. */
export interface FrameworkErrors {
  NotFound: { message: string };
  ValidationError: { message: string; issues?: { path: string; message: string }[] };
  MethodNotAllowed: { message: string; allow?: string[] };
  PayloadTooLarge: { message: string; limit: number };
  RequestTimeout: { message: string };
  Conflict: { message: string };
  JournalLeaseBusy: { message: string; retryAfterMs: number };
  Unavailable: { message: string; retryAfterMs: number };
  InternalError: { message: string };
  TransportError: TransportErrorData;
  IncompletePath: { message: string };
}

/** An error object of a code map: { code, data } with data typed by its code. */
export type ErrorOf<M> = { [K in keyof M & string]: { code: K; data: M[K] } }[keyof M & string];

/**
 * The errors a flow can answer with: its declared codes, the framework codes, and the gate
 * codes when gated (Forbidden always: the cross-origin check applies to every flow).
 */
export type FlowError<F extends FlowType> = ErrorOf<
  F["errors"] & FrameworkErrors & (F["gated"] extends false ? Pick<GateErrors, "Forbidden"> : GateErrors)
>;

/** Any error object. */
export interface ClientError {
  code: string;
  data: any;
}

/** The envelope's meta: pagination, parking, and what else a flow sets. */
export interface Meta {
  nextCursor?: string;
  parked?: boolean;
  runId?: string;
  [key: string]: unknown;
}

/** A success: data is the flow's output (undefined on a 204 reply). */
export interface Ok<T> {
  data: T;
  error: null;
  meta?: Meta;
  /** The HTTP status of the reply. */
  status: number;
}

/** A failure: a flow code, a gate code, a framework code or TransportError. */
export interface Fail<E extends ClientError = ClientError> {
  data: null;
  error: E;
  meta?: undefined;
  /** The HTTP status of the reply, or 0 when there was none. */
  status: number;
}

/** The result of a call: never thrown, always a value. */
export type ClientResult<T = unknown, E extends ClientError = ClientError> = Ok<T> | Fail<E>;

/** Per-call settings. */
export interface CallInit {
  signal?: AbortSignal;
  headers?: HeadersInput;
  /** false: do not run auth.refresh on a 401 (a session's own rotation uses it). */
  refresh?: boolean;
}

/** A flow of the typed proxy. */
export type FlowCall<F extends FlowType> = {} extends F["input"]
  ? (input?: F["input"], init?: CallInit) => Promise<ClientResult<F["output"], FlowError<F>>>
  : (input: F["input"], init?: CallInit) => Promise<ClientResult<F["output"], FlowError<F>>>;

/** The typed proxy: api.unit.flow(input?). */
export type Client<A extends AppType = RegisteredApp> = {
  [U in keyof A]: { [F in keyof A[U]]: FlowCall<A[U][F]> };
};

/** Headers as a map, a list of pairs, or a Headers value. */
export type HeadersInput = Record<string, string> | [string, string][] | Headers;

/** Bearer authentication: a token per request, and one refresh on 401. */
export interface AuthOptions {
  getToken?: () => string | null | undefined | Promise<string | null | undefined>;
  /** Runs once on HTTP 401; the call is then retried. Its value is ignored. */
  refresh?: () => Promise<unknown>;
}

/** Options of createTransport. */
export interface TransportOptions {
  fetch?: (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
  headers?: HeadersInput | (() => HeadersInput | Promise<HeadersInput>);
  /** Milliseconds an attempt may take until its reply's headers (and body, unless a stream). */
  timeout?: number;
  retry?: { retries?: number; delay?: number; backoff?: number };
  auth?: AuthOptions;
}

/** Options of createClient. */
export interface ClientOptions extends TransportOptions {
  /** The runtime route map (app.$routes): flows with a trigger use REST. */
  $routes?: ClientRouteMap;
  /** A flat REST table; wins over a flattened $routes. */
  routes?: RouteTable;
}
