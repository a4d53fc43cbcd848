// The low-level HTTP layer: headers, bearer auth with one refresh on 401, a per-attempt
// timeout and retries with backoff. It knows nothing of envelopes, so it also serves
// routes that are not flows (approvals, following a run).
import type { HeadersInput, TransportErrorData, TransportOptions } from "./types.js";

/** Per-request settings of [Transport.request]. */
export interface RequestOptions {
  headers?: HeadersInput;
  signal?: AbortSignal;
  /** The Accept header when the headers set none; application/json by default. */
  accept?: string;
  /** Leave a 2xx text/event-stream reply unread, in response; the timeout stops at its headers. */
  stream?: boolean;
  /** false: do not run auth.refresh on a 401. */
  refresh?: boolean;
}

/** The client-made TransportError. */
export interface TransportError {
  code: "TransportError";
  data: TransportErrorData;
}

/** A reply, of any HTTP status, or a TransportError when there was none to use. */
export type Reply =
  | { error: null; status: number; headers: Headers; text: string; response?: Response }
  | { error: TransportError; status: number };

export interface Transport {
  /** Sends one logical request; body is JSON text. Never throws. */
  request(method: string, url: string, body?: string, init?: RequestOptions): Promise<Reply>;
}

/** Builds a TransportError: data.message, and data.status when there was an HTTP status. */
export const transportError = (message: string, status = 0): { error: TransportError; status: number } => ({
  error: { code: "TransportError", data: status ? { message, status } : { message } },
  status,
});

const text = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/** Go's rendering of a duration, so messages match the Go client's. */
const duration = (ms: number): string =>
  ms < 1000 ? ms + "ms" : ms < 60000 ? ms / 1000 + "s" : Math.floor(ms / 60000) + "m" + (ms % 60000) / 1000 + "s";

export const addHeaders = (h: Headers, src?: HeadersInput): void => {
  if (src) new Headers(src as HeadersInit).forEach((v, k) => h.set(k, v));
};

/** Waits ms; false when signal aborted first. Leaves no listener on signal either way. */
export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<boolean>((resolve) => {
    if (signal?.aborted) return resolve(false);
    const end = (ok: boolean) => (clearTimeout(t), signal?.removeEventListener("abort", stop), resolve(ok));
    const stop = () => end(false);
    const t = setTimeout(end, ms, true);
    signal?.addEventListener("abort", stop);
  });

const canceled = (s: AbortSignal) => transportError("request canceled: " + text(s.reason));

export const isEventStream = (res: Response): boolean =>
  res.ok && /^text\/event-stream\s*(;|$)/i.test(res.headers.get("Content-Type") || "");

/** Builds the transport createClient uses; also usable alone. */
export function createTransport(o: TransportOptions = {}): Transport {
  const doFetch = o.fetch || ((i: string | URL | Request, n?: RequestInit) => fetch(i, n));
  const { retries = 0, delay = 50, backoff = 2 } = o.retry || {};

  async function attempt(method: string, url: string, body: string | undefined, init: RequestOptions): Promise<Reply & { again?: boolean }> {
    const outer = init.signal;
    if (outer?.aborted) return canceled(outer);
    const h = new Headers();
    try {
      addHeaders(h, typeof o.headers == "function" ? await o.headers() : o.headers);
    } catch (e) {
      return transportError("header function: " + text(e));
    }
    addHeaders(h, init.headers);
    try {
      const token = await o.auth?.getToken?.();
      if (token) h.set("Authorization", "Bearer " + token);
    } catch (e) {
      return transportError("auth token: " + text(e));
    }
    if (body !== undefined) h.set("Content-Type", "application/json");
    if (!h.has("Accept")) h.set("Accept", init.accept || "application/json");

    const ac = new AbortController();
    const onAbort = () => ac.abort(outer!.reason);
    outer?.addEventListener("abort", onAbort);
    let timedOut = false;
    const timer = o.timeout ? setTimeout(() => ((timedOut = true), ac.abort()), o.timeout) : undefined;
    let status = 0, live = false;
    try {
      const res = await doFetch(url, { method, headers: h, body, signal: ac.signal });
      status = res.status;
      if ((live = !!init.stream && isEventStream(res))) {
        // The timeout bounds the wait for a reply, not the stream; the caller's signal still
        // ends it, so only this path keeps its listener.
        return { error: null, status, headers: res.headers, text: "", response: res };
      }
      const t = await res.text();
      return { error: null, status, headers: res.headers, text: t };
    } catch (e) {
      if (outer?.aborted) return canceled(outer);
      if (timedOut) return { ...transportError("request timed out after " + duration(o.timeout!), status), again: true };
      return { ...transportError("network failure: " + text(e), status), again: true };
    } finally {
      clearTimeout(timer);
      if (!live) outer?.removeEventListener("abort", onAbort);
    }
  }

  return {
    async request(method, url, body, init = {}) {
      let refreshed = init.refresh === false;
      let wait = delay;
      for (let n = 0; ; ) {
        const r = await attempt(method, url, body, init);
        if (r.error ? r.again : r.status >= 500) {
          if (n >= retries) return r.error ? { error: r.error, status: r.status } : r;
          if (!r.error) await r.response?.body?.cancel();
          if (!(await sleep(wait, init.signal))) return canceled(init.signal!);
          n++;
          wait *= backoff;
        } else if (!r.error && r.status == 401 && !refreshed && o.auth?.refresh) {
          refreshed = true;
          try {
            await o.auth.refresh();
          } catch {
            return r; // the refresh failed: the 401 stands as it came
          }
        } else {
          return r.error ? { error: r.error, status: r.status } : r;
        }
      }
    },
  };
}
