// api.js: the console's requests. The access token of the app's own sign-in is kept in
// sessionStorage (this tab only) and sent as a bearer token; every answer is the app's
// envelope {data, error, meta}.

const base = document.body.dataset.base;
const refreshFlow = document.body.dataset.refresh;
const KEY = "engine.console.token";
const REFRESH = "engine.console.refresh";

export const token = {
  get: () => sessionStorage.getItem(KEY),
  /** set keeps a token set: the access token, and the refresh token when there is one. */
  set: (set) => {
    sessionStorage.setItem(KEY, set.accessToken);
    if (set.refreshToken) sessionStorage.setItem(REFRESH, set.refreshToken);
    else sessionStorage.removeItem(REFRESH);
  },
  clear: () => {
    sessionStorage.removeItem(KEY);
    sessionStorage.removeItem(REFRESH);
  },
};

/** signOut ends the session on the server (its refresh token revoked), then forgets it. */
export async function signOut() {
  const flow = document.body.dataset.signOut;
  const rt = sessionStorage.getItem(REFRESH);
  if (flow && token.get()) {
    const i = flow.lastIndexOf(".");
    await send("POST", `/_engine/${flow.slice(0, i)}/${flow.slice(i + 1)}`, rt ? { refreshToken: rt } : {}, true).catch(() => {});
  }
  token.clear();
}

let refreshing = null;

/** refresh spends the refresh token for a new token set, once for all the requests that
 * found the access token expired at the same time. It reports whether it got one. */
function refresh() {
  const rt = sessionStorage.getItem(REFRESH);
  if (!rt || !refreshFlow) return Promise.resolve(false);
  if (!refreshing) {
    const i = refreshFlow.lastIndexOf(".");
    refreshing = send("POST", `/_engine/${refreshFlow.slice(0, i)}/${refreshFlow.slice(i + 1)}`, { refreshToken: rt }, false)
      .then(({ envelope }) => {
        if (envelope.error || !envelope.data || !envelope.data.accessToken) return false;
        token.set(envelope.data);
        return true;
      })
      .catch(() => false)
      .finally(() => { refreshing = null; });
  }
  return refreshing;
}

/** Failure is an envelope's error, with the HTTP status and Retry-After (seconds). */
export class Failure extends Error {
  constructor(status, error, retryAfter) {
    super(`${error.code}${error.data && error.data.message ? ": " + error.data.message : ""}`);
    this.status = status;
    this.code = error.code;
    this.data = error.data;
    this.retryAfter = retryAfter;
  }
}

/** request sends one request and returns {status, envelope}; it never throws on a
 * failure envelope, only when there is no envelope at all. An expired access token is
 * refreshed once and the request sent again. */
export async function request(method, path, body) {
  const first = await send(method, path, body, true);
  if (first.status === 401 && token.get() && (await refresh())) return send(method, path, body, true);
  return first;
}

async function send(method, path, body, withToken) {
  const headers = { Accept: "application/json" };
  const t = withToken && token.get();
  if (t) headers.Authorization = `Bearer ${t}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  let envelope;
  try {
    envelope = await res.json();
  } catch {
    envelope = { data: null, error: { code: "TransportError", data: { message: `HTTP ${res.status} without an envelope` } } };
  }
  return { status: res.status, envelope, retryAfter: Number(res.headers.get("Retry-After")) || 0 };
}

/** api calls the console's API and returns data, or throws a Failure. */
export async function api(method, path, body) {
  const { status, envelope, retryAfter } = await request(method, `${base}/api${path}`, body);
  if (envelope.error) throw new Failure(status, envelope.error, retryAfter);
  return envelope.data;
}

/** callFlow calls a flow over its RPC route and returns {status, envelope}. */
export function callFlow(rpc, input) {
  return request("POST", rpc, input);
}
