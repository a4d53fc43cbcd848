// An expired access token against a second instance of the reference app whose tokens
// last a second (ENGINE_SHORT_TOKENS_URL, started by the Go test with ENGINE_ACCESS_TTL=1s).
import { test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { createClient } from "engine/client";
import { memorySession } from "engine/client/auth";
import { readAgentEvents, approve, follow } from "engine/client/agent";
import { app, PASSWORD } from "./helpers.mjs";

const URL_ = process.env.ENGINE_SHORT_TOKENS_URL;
if (!URL_) throw new Error("ENGINE_SHORT_TOKENS_URL is not set: run these tests through go test ./client (it starts the reference app)");

test("an approval sent with an expired token is refreshed once and lands", async () => {
  const session = memorySession();
  let refreshes = 0;
  const auth = { getToken: session.getToken, refresh: () => (refreshes++, session.refresh(api)) };
  const api = createClient(app, URL_, { auth });
  const signed = await api.auth.signInEmail({ email: "alice@example.com", password: PASSWORD });
  assert.equal(signed.error, null);
  session.set(signed.data);

  const res = await api.chat.ask({ message: "transfer 500 to bob" });
  assert.equal(res.error, null);
  let fin;
  for await (const ev of readAgentEvents(res.data)) if (ev.type == "RUN_FINISHED") fin = ev;
  assert.equal(fin?.outcome?.type, "interrupt");
  const { id } = fin.outcome.interrupts[0];

  // The approver comes back after the access token expired: the route says 401 with
  // the RFC 6750 challenge, not that the approval is gone.
  await sleep(Date.parse(signed.data.expiresAt) - Date.now() + 200);
  const stale = await fetch(URL_ + "/agent/approvals/approve", {
    method: "POST",
    headers: { Authorization: "Bearer " + signed.data.accessToken, "Content-Type": "application/json" },
    body: JSON.stringify({ id }),
  });
  assert.deepEqual([stale.status, stale.headers.get("WWW-Authenticate"), await stale.json()],
    [401, 'Bearer error="invalid_token"', { data: null, error: { code: "Unauthorized", data: {} } }]);

  // The helper refreshes once (through the refresh flow, which ignores the stale token
  // the session still sends) and the approval lands. (On a slow machine the token may
  // have expired during the stream already, and the client refreshed then: count from here.)
  const before = refreshes;
  const expired = session.getToken() === signed.data.accessToken;
  await approve(URL_, id, { auth });
  if (expired) assert.equal(refreshes - before, 1);
  else assert.ok(refreshes - before <= 1, "at most one refresh for the approval");
  assert.notEqual(session.getToken(), signed.data.accessToken);
  let text = "";
  for await (const f of follow(URL_, fin.runId, { auth })) if (f.event.type == "TEXT_MESSAGE_CONTENT") text += f.event.delta;
  assert.match(text, /Transferred 500 to bob\./);
});

test("a public flow with an expired token is refreshed, not run anonymously", async () => {
  const session = memorySession();
  let refreshes = 0;
  const api = createClient(app, URL_, { auth: { getToken: session.getToken, refresh: () => (refreshes++, session.refresh(api)) } });
  const signed = await api.auth.signInEmail({ email: "bob@example.com", password: PASSWORD });
  session.set(signed.data);
  await sleep(Date.parse(signed.data.expiresAt) - Date.now() + 200);
  const sum = await api.math.add({ a: 2, b: 3 });
  assert.deepEqual([sum.error, sum.data, refreshes], [null, { sum: 5 }, 1]);
  // Without a token the public flow answers as always.
  const anon = await createClient(app, URL_).math.add({ a: 1, b: 1 });
  assert.deepEqual([anon.status, anon.data], [200, { sum: 2 }]);
});
