// Shared by the node:test suites: the running reference app (ENGINE_URL, set by the Go
// test that starts it) and a local server for replies the app never sends.
import http from "node:http";
import { app } from "./gen/engine-client.js";
import { createClient } from "engine/client";

export const URL_ = process.env.ENGINE_URL;
if (!URL_) throw new Error("ENGINE_URL is not set: run these tests through go test ./client (it starts the reference app)");
export const PASSWORD = "correct horse battery staple";
export { app };

export async function signIn(email = "alice@example.com") {
  const api = createClient(app, URL_);
  const res = await api.auth.signInEmail({ email, password: PASSWORD });
  if (res.error) throw new Error("sign in: " + JSON.stringify(res.error));
  return res.data;
}

/** Starts a local server answering with handler; returns its URL and the requests it saw. */
export async function fakeServer(handler) {
  const seen = [];
  const srv = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      handler(req, res, seen.length);
    });
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${srv.address().port}`, seen, close: () => new Promise((r) => { srv.closeAllConnections(); srv.close(r); }) };
}
