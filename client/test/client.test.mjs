import { test } from "node:test";
import assert from "node:assert/strict";
import { createClient, createTransport, flattenRoutes, isOk, isFail, isErrorCode, isTransportError } from "engine/client";
import { memorySession, AUTH_ERROR_CODES, SignInRequiredError } from "engine/client/auth";
import { URL_, app, signIn, fakeServer } from "./helpers.mjs";

test("RPC, and REST from the app value, $routes and routes", async () => {
  const seen = [];
  const spy = (i, n) => (seen.push(`${n.method} ${new URL(i).pathname}`), fetch(i, n));
  const rpc = createClient(URL_, { fetch: spy });
  assert.deepEqual((await rpc.math.square({ n: 3 })).data, { n: 3, square: 9 });
  const viaApp = createClient(app, URL_, { fetch: spy });
  assert.deepEqual((await viaApp.math.square({ n: 4 })).data, { n: 4, square: 16 });
  const viaMap = createClient(URL_, { fetch: spy, $routes: app.$routes });
  assert.deepEqual((await viaMap.math.search({ q: "a b", limit: 2 })).data, { q: "a b", limit: 2 });
  const echo = await viaMap.math.echo({ id: "x/y", tags: ["a"] });
  assert.deepEqual(echo.data, { id: "x/y", tags: ["a"] });
  assert.deepEqual(seen, [
    "POST /_engine/math/square", "GET /math/square/4", "GET /math/search", "POST /math/echo/x%2Fy",
  ]);
  // routes win over a flattened $routes: this table sends square back to RPC's path.
  seen.length = 0;
  const override = createClient(URL_, { fetch: spy, $routes: app.$routes, routes: { "math.square": { method: "POST", path: "/_engine/math/square" } } });
  assert.equal((await override.math.square({ n: 5 })).data.square, 25);
  assert.deepEqual(seen, ["POST /_engine/math/square"]);
  assert.deepEqual(flattenRoutes({ math: { square: { method: "GET", path: "/math/square/:n" } } }), { "math.square": { method: "GET", path: "/math/square/:n" } });
});

test("envelopes: success, declared code, framework codes, incomplete path", async () => {
  const api = createClient(app, URL_);
  const ok = await api.math.divide({ a: 6, b: 3 });
  assert.ok(isOk(ok) && !isFail(ok));
  assert.deepEqual(ok, { data: { quotient: 2 }, error: null, status: 200 });
  const dz = await api.math.divide({ a: 1, b: 0 });
  assert.ok(isFail(dz) && isErrorCode(dz.error, "DivideByZero"));
  assert.deepEqual(dz.error, { code: "DivideByZero", data: { dividend: 1 } });
  assert.equal(dz.status, 400);
  const bad = await api.math.add({ a: "x", b: 1 });
  assert.equal(bad.error.code, "ValidationError");
  assert.equal(bad.error.data.issues[0].path, "a");
  const missing = await createClient(URL_).math.nope({});
  assert.equal(missing.error.code, "NotFound");
  assert.equal(isTransportError(missing.error), false);
  const incomplete = await api.math();
  assert.deepEqual(incomplete, { data: null, error: { code: "IncompletePath", data: { message: "Incomplete path: api.math" } }, status: 0 });
  const noParam = await api.math.square({});
  assert.deepEqual(noParam.error, { code: "ValidationError", data: { message: "GET /math/square/:n: path parameter :n has no value in the input" } });
  const unauth = await api.auth.me();
  assert.deepEqual([unauth.status, unauth.error], [401, { code: "Unauthorized", data: {} }]);
});

test("TransportError exactly as the Go client makes it", async () => {
  const replies = [
    [200, "text/plain", "hello", "non-JSON response (HTTP 200): "],
    [502, "text/html", "", "empty error response (HTTP 502)"],
    [200, "application/json", "", "empty response (HTTP 200)"],
    [401, "application/json", '{"message":"proxy says no"}', "HTTP 401 response without a {data, error} envelope"],
    [400, "application/json", '{"data":null,"error":{"code":""}}', "HTTP 400 response with a malformed error object"],
    [500, "application/json", '{"data":1,"error":null}', "HTTP 500 response with a success envelope"],
  ];
  const srv = await fakeServer((req, res) => {
    const [status, ct, body] = replies[Number(req.url.split("/").pop())];
    res.writeHead(status, { "Content-Type": ct }).end(body);
  });
  try {
    for (const [i, [status, , , msg]] of replies.entries()) {
      const r = await createClient(srv.url).u[String(i)]();
      assert.ok(isTransportError(r.error), `reply ${i}`);
      assert.equal(r.error.data.status, status);
      assert.ok(r.error.data.message.startsWith(msg), `${r.error.data.message} starts with ${msg}`);
    }
  } finally {
    await srv.close();
  }
  const down = await createClient("http://127.0.0.1:9").math.add({ a: 1, b: 2 });
  assert.equal(down.error.code, "TransportError");
  assert.match(down.error.data.message, /^network failure: /);
  assert.equal(down.error.data.status, undefined);
  assert.equal(down.status, 0);
});

test("retry with backoff on 5xx and network failure, never on 4xx; timeout", async () => {
  const times = [];
  const srv = await fakeServer((req, res, n) => {
    times.push(Date.now());
    if (req.url.includes("slow")) return setTimeout(() => res.end('{"data":1,"error":null}'), 300);
    if (req.url.includes("four")) return res.writeHead(404).end('{"data":null,"error":{"code":"NotFound","data":{}}}');
    if (n < 3 || req.url.includes("down")) return res.writeHead(503).end('{"data":null,"error":{"code":"Unavailable","data":{"message":"busy"}}}');
    res.end('{"data":"third time","error":null}');
  });
  try {
    const api = createClient(srv.url, { retry: { retries: 2, delay: 40, backoff: 3 } });
    const r = await api.u.f();
    assert.deepEqual(r.data, "third time");
    assert.equal(times.length, 3);
    assert.ok(times[1] - times[0] >= 35 && times[2] - times[1] >= 110, `delays ${times[1] - times[0]}, ${times[2] - times[1]}`);
    times.length = 0;
    const none = await createClient(srv.url).u.down();
    assert.equal(none.error.code, "Unavailable"); // the last reply stands, decoded as usual
    assert.equal(times.length, 1); // retries are off by default
    times.length = 0;
    assert.equal((await api.u.four()).error.code, "NotFound");
    assert.equal(times.length, 1);
    times.length = 0;
    const slow = await createClient(srv.url, { timeout: 50, retry: { retries: 1, delay: 1 } }).u.slow();
    assert.deepEqual(slow.error, { code: "TransportError", data: { message: "request timed out after 50ms" } });
    assert.equal(times.length, 2);
    const ac = new AbortController();
    ac.abort(new Error("user left"));
    const canceled = await createClient(srv.url).u.f(undefined, { signal: ac.signal });
    assert.deepEqual(canceled.error.data, { message: "request canceled: user left" });
  } finally {
    await srv.close();
  }
  let calls = 0;
  const flaky = (i, n) => (++calls < 2 ? Promise.reject(new TypeError("fetch failed")) : fetch(i, n));
  const r = await createClient(URL_, { fetch: flaky, retry: { retries: 1, delay: 1 } }).math.add({ a: 1, b: 1 });
  assert.deepEqual([r.data, calls], [{ sum: 2 }, 2]);
});

test("headers as a map, pairs or a function; transport alone", async () => {
  const srv = await fakeServer((req, res) => res.end('{"data":null,"error":null}'));
  try {
    await createClient(srv.url, { headers: { "X-A": "1" } }).u.f();
    await createClient(srv.url, { headers: [["X-A", "2"]] }).u.f();
    let n = 0;
    const fn = createClient(srv.url, { headers: async () => ({ "X-A": String(3 + n++) }) });
    await fn.u.f();
    await fn.u.f();
    assert.deepEqual(srv.seen.map((s) => s.headers["x-a"]), ["1", "2", "3", "4"]);
    const failing = await createClient(srv.url, { headers: () => { throw new Error("no"); } }).u.f();
    assert.deepEqual(failing.error.data, { message: "header function: no" });
    const t = createTransport({ headers: { "X-B": "b" } });
    const r = await t.request("GET", srv.url + "/x");
    assert.equal(r.status, 200);
    assert.equal(srv.seen.at(-1).headers["x-b"], "b");
  } finally {
    await srv.close();
  }
});

test("auth: the token, one refresh on 401 then retried, never on 403 or 429", async () => {
  const tokens = await signIn("alice@example.com");
  const session = memorySession();
  session.set({ ...tokens, accessToken: "expired-or-garbage" });
  let refreshes = 0;
  const api = createClient(app, URL_, {
    auth: { getToken: session.getToken, refresh: () => (refreshes++, session.refresh(api)) },
  });
  const me = await api.auth.me();
  assert.equal(me.data?.email, "alice@example.com");
  assert.equal(refreshes, 1);
  assert.notEqual(session.getToken(), "expired-or-garbage");
  assert.notEqual(session.tokens().refreshToken, tokens.refreshToken); // rotated

  // 401 again after the refresh: refreshed once, then the 401 stands.
  let n = 0;
  const stuck = createClient(app, URL_, { auth: { getToken: () => "garbage", refresh: async () => void n++ } });
  const r = await stuck.auth.me();
  assert.deepEqual([r.status, r.error.code, n], [401, "Unauthorized", 1]);

  // 403: bob may read notes but not write them; no refresh.
  const bob = await signIn("bob@example.com");
  let bobRefreshes = 0;
  const bobApi = createClient(app, URL_, { auth: { getToken: () => bob.accessToken, refresh: async () => void bobRefreshes++ } });
  const denied = await bobApi.notes.create({ title: "t", body: "b" });
  assert.deepEqual([denied.status, denied.error.code, bobRefreshes], [403, "Forbidden", 0]);
  assert.equal(denied.error.data.gate, "scope");

  // 429: limited.ping allows 5 a minute per client address.
  let limitedRefreshes = 0;
  const lim = createClient(URL_, { auth: { getToken: () => null, refresh: async () => void limitedRefreshes++ } });
  let last;
  for (let i = 0; i < 7; i++) last = await lim.limited.ping();
  assert.deepEqual([last.status, last.error.code, limitedRefreshes], [429, "RateLimited", 0]);
  assert.ok(last.error.data.retryAfterMs > 0);
});

test("session: concurrent refreshes share one rotation; a spent token means sign in", async () => {
  const session = memorySession();
  session.set(await signIn("carol@example.com"));
  let rotations = 0;
  const api = createClient(app, URL_);
  const counted = { auth: { refresh: (i, n) => (rotations++, api.auth.refresh(i, n)) } };
  await Promise.all([session.refresh(counted), session.refresh(counted), session.refresh(counted)]);
  assert.equal(rotations, 1);
  const good = createClient(app, URL_, { auth: { getToken: session.getToken } });
  assert.equal((await good.auth.me()).data.email, "carol@example.com");

  const spent = memorySession({ accessToken: "x", refreshToken: "not-a-token" });
  let changes = 0;
  spent.subscribe(() => changes++);
  await assert.rejects(spent.refresh(api), SignInRequiredError);
  assert.equal(spent.tokens(), null);
  assert.equal(changes, 1);
  await assert.rejects(memorySession().refresh(api), /no refresh token/);
  assert.ok(AUTH_ERROR_CODES.includes("Unauthorized") && AUTH_ERROR_CODES.includes("TokenReuse"));
});

test("the caller's signal keeps no abort listener once a reply is read", async () => {
  const srv = await fakeServer((req, res, n) => {
    if (n > 10 && n % 2 == 1) return res.writeHead(503, { "Content-Type": "application/json" }).end('{"data":null,"error":{"code":"Unavailable","data":{}}}');
    res.writeHead(200, { "Content-Type": "application/json" }).end('{"data":1,"error":null}');
  });
  try {
    const ac = new AbortController();
    const n = { added: 0, removed: 0 };
    const add = ac.signal.addEventListener.bind(ac.signal), rm = ac.signal.removeEventListener.bind(ac.signal);
    ac.signal.addEventListener = (...a) => (a[0] == "abort" && n.added++, add(...a));
    ac.signal.removeEventListener = (...a) => (a[0] == "abort" && n.removed++, rm(...a));
    const api = createClient(srv.url, { retry: { retries: 2, delay: 1 } });
    for (let i = 0; i < 10; i++) assert.equal((await api.u.f(undefined, { signal: ac.signal })).data, 1);
    // A 503 then a 200: the attempt and the wait between them.
    for (let i = 0; i < 5; i++) assert.equal((await api.u.down(undefined, { signal: ac.signal })).data, 1);
    assert.equal(srv.seen.length, 20);
    assert.ok(n.added >= 25, "added " + n.added);
    assert.equal(n.removed, n.added);
  } finally {
    await srv.close();
  }
});
