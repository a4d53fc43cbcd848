import { test } from "node:test";
import assert from "node:assert/strict";
import { lastValueFrom, takeWhile, toArray } from "rxjs";
import { HttpAgent, verifyEvents } from "@ag-ui/client";
import { createClient } from "engine/client";
import { readAgentEvents, readFrames, approve, deny, follow, followThread, threadMessages, stop, isConflict, DecisionError, outputOf } from "engine/client/agent";
import { URL_, app, signIn, fakeServer } from "./helpers.mjs";

const alice = await signIn("alice@example.com");
const auth = { getToken: () => alice.accessToken };
const api = createClient(app, URL_, { auth });

async function collect(it) {
  const out = [];
  for await (const x of it) out.push(x);
  return out;
}

async function park(message) {
  const res = await api.chat.ask({ message });
  assert.equal(res.error, null);
  const events = await collect(readAgentEvents(res.data));
  const fin = events.at(-1);
  assert.equal(fin.type, "RUN_FINISHED");
  assert.equal(fin.outcome.type, "interrupt");
  const [intr] = fin.outcome.interrupts;
  assert.deepEqual([intr.reason, intr.payload], ["approval", { tool: "tools.transfer", args: { to: "bob", amount: 500 } }]);
  return { id: intr.id, runId: fin.runId, threadId: fin.threadId };
}

const textOf = (events) => events.filter((e) => e.type == "TEXT_MESSAGE_CONTENT").map((e) => e.delta).join("");

test("an agent stream read to the end", async () => {
  const res = await api.chat.ask({ message: "hello" });
  assert.equal(res.error, null);
  assert.ok(res.data instanceof Response);
  const events = await collect(readAgentEvents(res.data));
  const types = events.map((e) => e.type).filter((t) => t != "TEXT_MESSAGE_CONTENT");
  assert.deepEqual(types, ["RUN_STARTED", "STEP_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_END", "STEP_FINISHED", "RUN_FINISHED"]);
  assert.equal(textOf(events), "Hello there, from the assistant.");
  assert.equal(events.at(-1).result.stopReason, "completed");
  // A gate denial before the stream is an envelope, not a stream.
  const anon = await createClient(app, URL_).chat.ask({ message: "hello" });
  assert.equal(anon.error.code, "Unauthorized");
});

test("readAgentEvents: [DONE], untyped objects and the subagent renaming", async () => {
  const srv = await fakeServer((req, res) => {
    res.writeHead(200, { "Content-Type": "text/event-stream" });
    res.end(
      'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n' +
        'data: {"nope":1}\n\n' +
        ': ping\n\n' +
        'data: {"type":"CUSTOM","name":"engine.subagent.started","value":{"agent":"researcher"}}\n\n' +
        'data: {"type":"CUSTOM","name":"engine.events.truncated","value":{}}\n\n' +
        'id: 7\r\ndata: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\r\n\r\n' +
        "data: [DONE]\n\n",
    );
  });
  try {
    const events = await collect(readAgentEvents(srv.url + "/stream"));
    assert.deepEqual(events.map((e) => e.name || e.type), ["RUN_STARTED", "subagent.started", "engine.events.truncated", "RUN_FINISHED"]);
  } finally {
    await srv.close();
  }
});

test("approve, then Conflict; follow to the end", async () => {
  const { id, runId } = await park("transfer 500 to bob");
  await approve(URL_, id, { auth });
  await assert.rejects(approve(URL_, id, { auth }), (e) => isConflict(e) && e.status == 409);
  await assert.rejects(deny(URL_, id, { auth }), (e) => isConflict(e));
  const frames = await collect(follow(URL_, runId, { auth }));
  const events = frames.map((f) => f.event);
  assert.ok(events.some((e) => e.type == "TOOL_CALL_RESULT" && JSON.parse(e.content).ok === true));
  assert.equal(events.at(-1).type, "RUN_FINISHED");
  assert.equal(events.at(-1).result.stopReason, "completed");
  assert.match(textOf(events), /Transferred 500 to bob\./);
  const ids = frames.map((f) => Number(f.id));
  assert.ok(ids.every((n, i) => n > 0 && (i == 0 || n > ids[i - 1])), "ids increase: " + ids);
  // An unknown id is 404 NotFound, not retried.
  await assert.rejects(approve(URL_, "bm9wZQ", { auth }), (e) => e instanceof DecisionError && e.error.code == "NotFound");
});

test("stop a parked run: it ends cancelled, its approval and a second stop are Conflict", async () => {
  const { id, runId } = await park("transfer 500 to bob");
  await stop(URL_, runId, { auth });
  const events = (await collect(follow(URL_, runId, { auth }))).map((f) => f.event);
  const fin = events.at(-1);
  assert.equal(fin.type, "RUN_FINISHED");
  assert.deepEqual([fin.outcome?.type, fin.result?.stopReason], ["cancelled", "cancelled"]);
  await assert.rejects(approve(URL_, id, { auth }), (e) => isConflict(e) && e.status == 409);
  await assert.rejects(stop(URL_, runId, { auth }), (e) => isConflict(e) && e.status == 409);
  // The typed call of the same route.
  const again = await api.agent.stop({ runId });
  assert.equal(again.error?.code, "Conflict");
  await assert.rejects(stop(URL_, "run_nope", { auth }), (e) => e instanceof DecisionError && e.error.code == "NotFound");
});

test("followThread: a thread's runs in order, resumed by id", async () => {
  const { runId, threadId } = await park("transfer 500 to bob");
  const ac = new AbortController();
  const seen = [];
  for await (const f of followThread(URL_, threadId, { auth, signal: ac.signal })) {
    seen.push(f);
    if (f.event.type == "RUN_FINISHED" && f.event.outcome?.type == "interrupt") break;
  }
  ac.abort();
  assert.equal(seen[0].event.type, "RUN_STARTED");
  assert.equal(seen[0].event.runId, runId);
  const ids = seen.map((f) => Number(f.id));
  assert.ok(ids.every((n, i) => i == 0 || n > ids[i - 1]), "ids increase: " + ids);
});

test("threadMessages, and a mid-run join with fromNow read by the AG-UI HttpAgent", { timeout: 30000 }, async () => {
  const threadId = "thread-join-" + Date.now();
  const first = await api.chat.ask({ message: "hello", threadId });
  assert.equal(first.error, null);
  await collect(readAgentEvents(first.data));
  const msgs = await threadMessages(URL_, threadId, { auth });
  assert.deepEqual(msgs.map((m) => m.role), ["user", "assistant"]);
  assert.equal(msgs[1].content, "Hello there, from the assistant.");
  await assert.rejects(threadMessages(URL_, "thread-nope", { auth }), (e) => e instanceof DecisionError && e.error.code == "NotFound");

  // A slow second run; the stock HttpAgent joins it mid-run through the thread route.
  const second = await api.chat.ask({ message: "slow please", threadId });
  assert.equal(second.error, null);
  // Read by hand: leaving a for-await loop would cancel the stream, and so the run.
  const live = readAgentEvents(second.data)[Symbol.asyncIterator]();
  for (let r = await live.next(); !r.done && r.value.type != "TEXT_MESSAGE_CONTENT"; r = await live.next());
  await new Promise((r) => setTimeout(r, 100)); // the log is written behind the live stream
  class ThreadAgent extends HttpAgent {
    requestInit(input) {
      const { body, method, ...init } = super.requestInit(input);
      return { ...init, method: "GET" };
    }
  }
  const joiner = new ThreadAgent({
    url: URL_ + "/agent/threads/" + encodeURIComponent(threadId) + "/events?from=now",
    headers: { Authorization: "Bearer " + alice.accessToken },
  });
  // A thread has no end: the agent's request is aborted once the run is over.
  const events = await lastValueFrom(
    joiner.run({ threadId, runId: "join", messages: [], tools: [], context: [], state: {}, forwardedProps: {} }).pipe(takeWhile((e) => e.type != "RUN_FINISHED" && e.type != "RUN_ERROR", true), verifyEvents(), toArray()),
  ).finally(() => joiner.abortRun());
  const types = events.map((e) => e.type);
  assert.equal(types[0], "RUN_STARTED");
  assert.equal(types[1], "MESSAGES_SNAPSHOT");
  assert.equal(types.at(-1), "RUN_FINISHED");
  assert.deepEqual(events[1].messages.slice(0, 3).map((m) => m.role), ["user", "assistant", "user"]);
  while (!(await live.next()).done);
});

test("deny, then follow; follow resumes after a cut connection with no gap and no duplicate", async () => {
  const { id, runId } = await park("please transfer 500 to bob");
  await deny(URL_, id, { auth, reason: "not today" });
  const whole = await collect(follow(URL_, runId, { auth }));
  assert.equal(whole.at(-1).event.type, "RUN_FINISHED");
  assert.ok(whole.some((f) => f.event.type == "TOOL_CALL_RESULT" && f.event.content.includes("not today")));

  // The first connection is cut after three frames' bytes.
  const lastIds = [];
  let connects = 0;
  const cutting = async (input, init) => {
    lastIds.push(new Headers(init.headers).get("Last-Event-ID"));
    const res = await fetch(input, init);
    if (connects++ > 0) return res;
    // Pass on exactly the first three frames, then fail the next read like a reset connection.
    const text = await res.text();
    let end = 0;
    for (let i = 0; i < 3; i++) end = text.indexOf("\n\n", end) + 2;
    let sent = false;
    const body = new ReadableStream({
      pull(ctl) {
        if (sent) return ctl.error(new Error("connection reset"));
        sent = true;
        ctl.enqueue(new TextEncoder().encode(text.slice(0, end)));
      },
    });
    return new Response(body, { status: res.status, headers: res.headers });
  };
  const resumed = await collect(follow(URL_, runId, { auth, fetch: cutting, backoff: 10 }));
  assert.equal(connects, 2);
  assert.equal(lastIds[0], null);
  assert.equal(lastIds[1], whole[2].id, "the reconnect sent the last id received");
  assert.deepEqual(resumed.map((f) => f.id), whole.map((f) => f.id));
  assert.deepEqual(resumed.map((f) => f.event), whole.map((f) => f.event));
});

test("approve retries JournalLeaseBusy after Retry-After", async () => {
  const srv = await fakeServer((req, res, n) => {
    if (n == 1)
      return res.writeHead(409, { "Retry-After": "1", "Content-Type": "application/json" })
        .end('{"data":null,"error":{"code":"JournalLeaseBusy","data":{"message":"locked","retryAfterMs":1000}}}');
    res.writeHead(200, { "Content-Type": "application/json" }).end('{"data":{"ok":true},"error":null}');
  });
  try {
    const start = Date.now();
    await approve(srv.url, "abc", { args: { amount: 1 } });
    assert.ok(Date.now() - start >= 950, "waited for Retry-After");
    assert.equal(srv.seen.length, 2);
    assert.deepEqual(JSON.parse(srv.seen[1].body), { id: "abc", args: { amount: 1 } });
    assert.equal(srv.seen[1].url, "/agent/approvals/approve");
  } finally {
    await srv.close();
  }
});

test("the AG-UI HttpAgent reads the stream with Engine-Omit-Done", async () => {
  class EngineAgent extends HttpAgent {
    requestInit(input) {
      const init = super.requestInit(input);
      return { ...init, body: JSON.stringify({ message: input.messages.at(-1).content, threadId: input.threadId }) };
    }
  }
  const agent = new EngineAgent({
    url: URL_ + "/chat",
    headers: { Authorization: "Bearer " + alice.accessToken, "Engine-Omit-Done": "1" },
  });
  const events = await lastValueFrom(
    agent.run({ threadId: "thread-agui", runId: "x", messages: [{ id: "u1", role: "user", content: "hello" }], tools: [], context: [], state: {}, forwardedProps: {} }).pipe(toArray()),
  );
  const types = events.map((e) => e.type);
  assert.equal(types[0], "RUN_STARTED");
  assert.equal(types.at(-1), "RUN_FINISHED");
  assert.equal(events[0].threadId, "thread-agui");
  assert.equal(textOf(events), "Hello there, from the assistant.");
  // Without the header the stream ends with [DONE], which the AG-UI client rejects.
  const strict = new EngineAgent({ url: URL_ + "/chat", headers: { Authorization: "Bearer " + alice.accessToken } });
  await assert.rejects(
    lastValueFrom(strict.run({ threadId: "t2", runId: "y", messages: [{ id: "u1", role: "user", content: "hello" }], tools: [], context: [], state: {}, forwardedProps: {} }).pipe(toArray())),
  );
});

const enc = new TextEncoder();
const chunked = (chunks) =>
  new Response(new ReadableStream({ start(c) { for (const ch of chunks) c.enqueue(enc.encode(ch)); c.close(); } }), {
    headers: { "Content-Type": "text/event-stream" },
  });

test("readAgentEvents: breaking out early closes the connection", async () => {
  let closed;
  const sawClose = new Promise((r) => (closed = r));
  const srv = await fakeServer((req, res) => {
    res.writeHead(200, { "Content-Type": "text/event-stream" });
    let n = 0;
    const iv = setInterval(() => res.write(`id: ${++n}\ndata: {"type":"X"}\n\n`), 20);
    req.socket.on("close", () => (clearInterval(iv), closed(true)));
  });
  try {
    for await (const e of readAgentEvents(srv.url + "/stream")) {
      assert.equal(e.type, "X");
      break;
    }
    const seen = await Promise.race([sawClose, new Promise((r) => setTimeout(r, 2000, false))]);
    assert.equal(seen, true, "the server saw its socket close after the consumer broke out");
  } finally {
    await srv.close();
  }
});

test("readFrames: a CRLF split across chunks is one line break", async () => {
  const collectFrames = (chunks) => collect(readFrames(chunked(chunks)));
  assert.deepEqual(await collectFrames(["id: 7\r", '\ndata: {"type":"RUN_STARTED"}\r\n\r\n']), [{ id: "7", event: { type: "RUN_STARTED" } }]);
  assert.deepEqual(await collectFrames(['data: {"type":\r', '\ndata: "X"}\r\n\r\n']), [{ id: "", event: { type: "X" } }]);
  assert.deepEqual(await collectFrames(['id: 1\r\ndata: {"type":"A"}\r\n\r', "\nid: 2\r\ndata: {\"type\":\"B\"}\r\n\r"]), [
    { id: "1", event: { type: "A" } },
    { id: "2", event: { type: "B" } },
  ]);
  // A lone CR is still a line break, also as the last byte of the body.
  assert.deepEqual(await collectFrames(['id: 3\rdata: {"type":"C"}\r\r']), [{ id: "3", event: { type: "C" } }]);
});

/** Counts the abort listeners added to and removed from a signal. */
function counted(signal) {
  const n = { added: 0, removed: 0 };
  const add = signal.addEventListener.bind(signal), rm = signal.removeEventListener.bind(signal);
  signal.addEventListener = (...a) => (a[0] == "abort" && n.added++, add(...a));
  signal.removeEventListener = (...a) => (a[0] == "abort" && n.removed++, rm(...a));
  return n;
}

test("follow: aborting during the reconnect wait ends it at once", async () => {
  const srv = await fakeServer((req, res) => res.writeHead(503).end());
  try {
    const ac = new AbortController();
    const n = counted(ac.signal);
    setTimeout(() => ac.abort(new Error("stop")), 100);
    const start = Date.now();
    await assert.rejects(collect(follow(srv.url, "r", { backoff: 10_000, signal: ac.signal })));
    assert.ok(Date.now() - start < 5000, "the 10 s wait was cut short: " + (Date.now() - start) + " ms");
    assert.equal(n.added, n.removed, "no abort listener left on the caller's signal");
  } finally {
    await srv.close();
  }
});

test("approve: the JournalLeaseBusy wait leaves no listener and is abortable", async () => {
  const busy = '{"data":null,"error":{"code":"JournalLeaseBusy","data":{"message":"locked","retryAfterMs":10}}}';
  const srv = await fakeServer((req, res, n) => {
    if (n <= 3 || n >= 5) return res.writeHead(409, { "Content-Type": "application/json" }).end(busy);
    res.writeHead(200, { "Content-Type": "application/json" }).end('{"data":{"ok":true},"error":null}');
  });
  try {
    const ac = new AbortController();
    const n = counted(ac.signal);
    await approve(srv.url, "abc", { signal: ac.signal });
    assert.equal(srv.seen.length, 4);
    assert.ok(n.added > 0);
    assert.equal(n.added, n.removed, "no abort listener left on the caller's signal");
    // Aborted during a wait of a minute: it stops at once.
    const slow = await fakeServer((req, res) =>
      res.writeHead(409, { "Retry-After": "60", "Content-Type": "application/json" }).end(busy));
    try {
      const ac2 = new AbortController();
      setTimeout(() => ac2.abort(), 100);
      const start = Date.now();
      await assert.rejects(approve(slow.url, "abc", { signal: ac2.signal }), (e) => e instanceof DecisionError);
      assert.ok(Date.now() - start < 5000);
    } finally {
      await slow.close();
    }
  } finally {
    await srv.close();
  }
});

test("follow: a stream that ends before the run did is a failed reconnect, not the end", async () => {
  const srv = await fakeServer((req, res, n) => {
    res.writeHead(200, { "Content-Type": "text/event-stream" });
    if (n == 1) res.write('id: 1\ndata: {"type":"RUN_STARTED","runId":"r"}\n\nid: 2\ndata: {"type":"TEXT_MESSAGE_CONTENT","delta":"a"}\n\n');
    res.end(); // a proxy's idle cut; the run goes on
  });
  try {
    const got = [];
    await assert.rejects(
      (async () => { for await (const f of follow(srv.url, "r", { backoff: 1, maxReconnects: 2 })) got.push(f.id); })(),
      /giving up after 2 reconnects: the stream ended before the run did/,
    );
    assert.deepEqual(got, ["1", "2"]);
    assert.equal(srv.seen.length, 3);
    assert.deepEqual(srv.seen.map((r) => r.headers["last-event-id"]), [undefined, "2", "2"]);
  } finally {
    await srv.close();
  }
});

test("follow: an empty reconnect before the terminal event keeps following to it", async () => {
  const srv = await fakeServer((req, res, n) => {
    res.writeHead(200, { "Content-Type": "text/event-stream" });
    if (n == 1) res.write('id: 1\ndata: {"type":"RUN_STARTED","runId":"r"}\n\n');
    if (n == 3) res.write('id: 2\ndata: {"type":"RUN_FINISHED","runId":"r","result":{"stopReason":"completed"}}\n\n');
    res.end();
  });
  try {
    const frames = await collect(follow(srv.url, "r", { backoff: 1 }));
    assert.deepEqual(frames.map((f) => f.event.type), ["RUN_STARTED", "RUN_FINISHED"]);
    assert.equal(srv.seen.length, 3);
  } finally {
    await srv.close();
  }
});

test("outputOf: a finished run's typed output, read from the stream", async () => {
  const srv = await fakeServer((req, res) => {
    res.writeHead(200, { "Content-Type": "text/event-stream" });
    res.write('id: 1\ndata: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n');
    res.end('id: 2\ndata: {"type":"RUN_FINISHED","threadId":"t","runId":"r","result":{"stopReason":"completed","output":{"city":"Paris","tempC":21}}}\n\n');
  });
  try {
    const events = await collect(readAgentEvents(await fetch(srv.url)));
    assert.deepEqual(outputOf(events.at(-1)), { city: "Paris", tempC: 21 });
    assert.throws(() => outputOf(events[0]), /no run output in a RUN_STARTED event/);
    assert.throws(() => outputOf({ type: "RUN_FINISHED", result: { stopReason: "completed" } }), /no run output/);
  } finally {
    await srv.close();
  }
});
