// Drives examples/conformance with AG-UI's stock HttpAgent, as a frontend would. Run by
// the Go test TestAGUIClients, which starts the instances and the fake model and passes:
//   AGUI_A, AGUI_B   base URLs of two instances on one Postgres database
//   AGUI_C           an instance whose approvals expire after a second
//   AGUI_TOKEN       alice's access token; AGUI_FOREIGN carol's (another tenant)
//   AGUI_OUT         a directory: every response body is saved there for the AG-UI verifier
// It exits non-zero on the first failed expectation.
import { HttpAgent } from "@ag-ui/client";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const env = process.env;
let saved = 0;

// A fetch that keeps every response body, so each stream is also checked by the verifier.
async function teeFetch(url, init) {
  const res = await fetch(url, init);
  const body = await res.text();
  if (res.ok) writeFileSync(join(env.AGUI_OUT, `stream-${String(++saved).padStart(2, "0")}.sse`), body);
  return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
}

function agent(base, token = env.AGUI_TOKEN, threadId) {
  return new HttpAgent({
    url: base + "/chat",
    threadId,
    // The engine ends a run stream with data: [DONE] (its own clients want it); stock
    // AG-UI clients ask it to leave that frame out.
    headers: { Authorization: "Bearer " + token, "Engine-Omit-Done": "1" },
    fetch: teeFetch,
  });
}

function user(a, text) {
  a.addMessage({ id: crypto.randomUUID(), role: "user", content: text });
}

const lastText = (a) => a.messages.filter((m) => m.role === "assistant" && m.content).at(-1)?.content;

async function conversation() {
  const a = agent(env.AGUI_A);
  user(a, "weather in Paris?");
  await a.runAgent();
  assert.equal(lastText(a), `Done: {"city":"Paris","tempC":16}`);
  assert.ok(a.messages.some((m) => m.role === "tool"), "turn one has the tool result");
  user(a, "thanks");
  await a.runAgent();
  assert.equal(lastText(a), "Reply to: thanks");
  user(a, "bye");
  await a.runAgent();
  assert.equal(lastText(a), "Reply to: bye");
  assert.equal(a.messages.length, 8);
}

async function clientTool() {
  const a = agent(env.AGUI_A);
  const tools = [{ name: "askUser", description: "Ask the user.", parameters: { type: "object", properties: { question: { type: "string" } } } }];
  user(a, "ask me something");
  await a.runAgent({ tools });
  const call = a.messages.at(-1).toolCalls?.[0];
  assert.equal(call?.function.name, "askUser");
  assert.deepEqual(JSON.parse(call.function.arguments), { question: "Which city?" });
  assert.equal(a.messages.filter((m) => m.role === "tool").length, 0, "the server ran no client tool");
  a.addMessage({ id: crypto.randomUUID(), role: "tool", toolCallId: call.id, content: "Bergen" });
  await a.runAgent({ tools });
  assert.equal(lastText(a), "Done: Bergen");
}

async function state() {
  const a = agent(env.AGUI_A);
  user(a, "remember Oslo");
  await a.runAgent();
  assert.deepEqual(a.state, { city: "Oslo" });
  user(a, "where do I live?");
  await a.runAgent();
  // The fake model answers from the shared state it is shown.
  assert.equal(lastText(a), `State: {"city":"Oslo"}`);
}

async function parkOn(base, text = "transfer 500 to bob") {
  const a = agent(base);
  user(a, text);
  await a.runAgent();
  assert.equal(a.pendingInterrupts.length, 1);
  const it = a.pendingInterrupts[0];
  assert.equal(it.reason, "approval");
  assert.ok(it.toolCallId && it.expiresAt && it.message && it.responseSchema, "interrupt fields AG-UI clients read");
  return a;
}

// other moves a parked agent to instance B: the same client state, another server.
function other(a, base = env.AGUI_B) {
  const b = a.clone();
  b.url = base + "/chat";
  return b;
}

async function approvals() {
  const results = {};
  for (const [name, resume, want] of [
    ["approve", (id) => ({ interruptId: id, status: "resolved" }), `Done: {"ok":true,"to":"bob","amount":500}`],
    ["edited", (id) => ({ interruptId: id, status: "resolved", payload: { args: { to: "bob", amount: 50 } } }), `Done: {"ok":true,"to":"bob","amount":50}`],
    ["deny", (id) => ({ interruptId: id, status: "cancelled", payload: { reason: "not today" } }), `Done: {"error":{"code":"Denied","data":{"reason":"not today"}}}`],
  ]) {
    const a = await parkOn(env.AGUI_A);
    const b = other(a);
    const again = b.clone(); // the same answer, sent a second time later
    await b.runAgent({ resume: [resume(a.pendingInterrupts[0].id)] });
    assert.equal(lastText(b), want, name);
    assert.equal(b.pendingInterrupts.length, 0);
    results[name] = lastText(b);
    if (name === "approve") {
      await assert.rejects(again.runAgent({ resume: [resume(a.pendingInterrupts[0].id)] }), /409|Conflict|already decided/, "already decided");
    }
  }
  // Another tenant cannot answer alice's interrupt.
  const a = await parkOn(env.AGUI_A);
  const foreign = other(a);
  foreign.headers = { ...foreign.headers, Authorization: "Bearer " + env.AGUI_FOREIGN };
  await assert.rejects(foreign.runAgent({ resume: [{ interruptId: a.pendingInterrupts[0].id, status: "resolved" }] }), /404|NotFound/, "foreign tenant");
  return results;
}

async function expired() {
  const c = await parkOn(env.AGUI_C);
  await new Promise((r) => setTimeout(r, 1500));
  const b = other(c);
  // HttpAgent itself refuses to resolve an expired interrupt; cancelling is what it lets through.
  await assert.rejects(b.runAgent({ resume: [{ interruptId: c.pendingInterrupts[0].id, status: "resolved" }] }), /expired/);
  await assert.rejects(b.runAgent({ resume: [{ interruptId: c.pendingInterrupts[0].id, status: "cancelled" }] }), /409|expired/);
}

const scenarios = { conversation, clientTool, state, approvals, expired };
for (const name of (env.AGUI_SCENARIOS ?? Object.keys(scenarios).join(",")).split(",")) {
  await scenarios[name]();
  console.log("ok", name);
}
console.log("streams", saved);
