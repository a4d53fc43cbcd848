// The core client: createClient, the transport, and the result predicates. It stays
// under a size budget (scripts/size.mjs), so helpers live in their own entries.
import { createTransport, transportError, type Reply } from "./transport.js";
import type {
  AppOf, AppType, CallInit, Client, ClientError, ClientOptions, ClientResult, ClientRouteMap,
  Fail, Ok, RegisteredApp, Route, RouteTable,
} from "./types.js";

export * from "./types.js";
export { createTransport, type Transport, type TransportError, type Reply, type RequestOptions } from "./transport.js";

/** Turns app.$routes into the flat "unit.flow" REST table. */
export function flattenRoutes(routes?: ClientRouteMap): RouteTable {
  const out: RouteTable = {};
  for (const u in routes) for (const f in routes[u]) out[u + "." + f] = routes[u][f];
  return out;
}

export const isOk = <R extends ClientResult<any, any>>(r: R): r is Extract<R, Ok<any>> => r.error === null;
export const isFail = <R extends ClientResult<any, any>>(r: R): r is Extract<R, Fail<any>> => r.error !== null;
export const isErrorCode = <E extends ClientError, C extends E["code"]>(e: E | null | undefined, code: C): e is Extract<E, { code: C }> =>
  !!e && e.code === code;
export const isTransportError = <E extends ClientError>(e: E | null | undefined): e is Extract<E, { code: "TransportError" }> =>
  !!e && e.code === "TransportError";

const fail = (code: string, message: string): Fail => ({ data: null, error: { code, data: { message } }, status: 0 });

/** Maps a JSON input onto a REST route: path parameters, then the query (GET, HEAD) or a JSON body. */
function rest(route: Route, base: string, input: unknown): [string, string | undefined] | Fail {
  const method = route.method.toUpperCase();
  const inQuery = method == "GET" || method == "HEAD";
  const bad = (m: string) => fail("ValidationError", method + " " + route.path + ": " + m);
  const segs = route.path.split("/");
  if (!inQuery && !segs.some((s) => s[0] == ":" && s.length > 1)) return [base + route.path, JSON.stringify(input ?? {})];
  const fields = input == null ? {} : JSON.parse(JSON.stringify(input));
  if (typeof fields != "object" || Array.isArray(fields)) return bad("the input must be a JSON object to fill the path and query");
  let path = "";
  for (const s of segs.slice(1)) {
    let v: unknown = s;
    if (s[0] == ":" && s.length > 1) {
      const name = s.slice(1);
      v = fields[name];
      delete fields[name];
      if (v == null) return bad("path parameter :" + name + " has no value in the input");
      if (typeof v == "object") return bad("path parameter :" + name + " must be a string, number or boolean");
      if (v === "") return bad("path parameter :" + name + " is empty");
      v = encodeURIComponent(String(v));
    }
    path += "/" + v;
  }
  if (!inQuery) return [base + path, JSON.stringify(fields)];
  const q = new URLSearchParams();
  const add = (k: string, v: unknown) => v != null && q.append(k, typeof v == "object" ? JSON.stringify(v) : String(v));
  for (const k of Object.keys(fields).sort()) {
    const v = fields[k];
    if (Array.isArray(v)) v.forEach((x) => add(k, x));
    else add(k, v);
  }
  const qs = q.toString();
  return [base + path + (qs ? "?" + qs : ""), undefined];
}

/** Turns a reply into a result: anything that is not an envelope is a TransportError. */
function decode(method: string, r: Reply): ClientResult {
  if (r.error) return { data: null, error: r.error, status: r.status };
  const s = r.status;
  const ok = s >= 200 && s < 300;
  const te = (m: string): Fail => ({ data: null, ...transportError(m, s) });
  if (r.response) return { data: r.response, error: null, status: s };
  if (s == 204 || (method == "HEAD" && ok && !r.text)) return { data: undefined, error: null, status: s };
  if (!r.text) return te(`empty ${ok ? "" : "error "}response (HTTP ${s})`);
  let env: any;
  try {
    env = JSON.parse(r.text);
  } catch (e) {
    return te(`non-JSON response (HTTP ${s}): ${(e as Error).message}`);
  }
  if (!env || typeof env != "object" || !("data" in env) || !("error" in env))
    return te(`HTTP ${s} response without a {data, error} envelope`);
  const e = env.error;
  if (e !== null) {
    if (typeof e != "object" || typeof e.code != "string" || !e.code) return te(`HTTP ${s} response with a malformed error object`);
    return { data: null, error: { code: e.code, data: e.data ?? {} }, status: s };
  }
  if (!ok) return te(`HTTP ${s} response with a success envelope`);
  const res: Ok<unknown> = { data: env.data, error: null, status: s };
  if (env.meta != null) res.meta = env.meta;
  return res;
}

/** createClient(app, url, opts?): types from the app value, REST from app.$routes. */
export function createClient<A extends AppType>(app: AppOf<A>, url: string, opts?: ClientOptions): Client<A>;
/** createClient<App>(url, opts?), or createClient(url, opts?) typed by the ambient Register. */
export function createClient<A extends AppType = RegisteredApp>(url: string, opts?: ClientOptions): Client<A>;
export function createClient(a: string | AppOf<AppType>, b?: string | ClientOptions, c?: ClientOptions): unknown {
  const [url, o, app] = typeof a == "string" ? [a, (b || {}) as ClientOptions] : [b as string, c || {}, a];
  const table = { ...flattenRoutes(o.$routes || app?.$routes), ...o.routes };
  const t = createTransport(o);
  const base = url.replace(/\/+$/, "");

  async function call(unit: string, flow: string, input: unknown, init: CallInit = {}): Promise<ClientResult> {
    const route = table[unit + "." + flow];
    let target: string, body: string | undefined, method = "POST";
    try {
      if (route) {
        const r = rest(route, base, input);
        if (!Array.isArray(r)) return r;
        [target, body] = r;
        method = route.method.toUpperCase();
      } else {
        target = base + "/_engine/" + unit + "/" + flow;
        body = input === undefined ? undefined : JSON.stringify(input);
      }
    } catch (e) {
      return fail("ValidationError", "encoding the input: " + (e as Error).message);
    }
    return decode(method, await t.request(method, target, body, { ...init, accept: "application/json, text/event-stream", stream: true }));
  }

  const skip = (k: string | symbol): k is symbol => typeof k != "string" || k == "then";
  return new Proxy({}, {
    get: (_, unit) =>
      skip(unit)
        ? undefined
        : new Proxy(() => {}, {
            get: (_, flow) => (skip(flow) ? undefined : (i?: unknown, n?: CallInit) => call(unit, flow, i, n)),
            apply: async () => fail("IncompletePath", "Incomplete path: api." + unit),
          }),
  });
}
