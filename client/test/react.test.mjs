// useAgentRun, rendered with react-test-renderer against local servers: a run through two
// approvals, a second send while one streams, and unmounting mid-stream.
import { test } from "node:test";
import assert from "node:assert/strict";
import React from "react";
import TR from "react-test-renderer";
import { useAgentRun } from "engine/client/react";
import { fakeServer } from "./helpers.mjs";

globalThis.IS_REACT_ACT_ENVIRONMENT = false;
const tick = (ms) => new Promise((r) => setTimeout(r, ms));

/** Renders useAgentRun; h() is the hook's latest value. */
function mount(opts) {
  let h;
  function C() {
    h = useAgentRun(opts);
    return null;
  }
  const r = TR.create(React.createElement(C));
  return { h: () => h, unmount: () => r.unmount() };
}

/** Rejects when p does not settle within 5 s. */
const within = (what, p) =>
  Promise.race([p, new Promise((_, rej) => setTimeout(() => rej(new Error(what + " did not end within 5 s")), 5000).unref())]);

/** Waits until cond() holds, up to 5 s. */
async function until(what, cond) {
  for (const end = Date.now() + 5000; !cond(); await tick(10)) if (Date.now() > end) throw new Error("waiting for " + what);
}

const interrupt = (id) => ({ type: "RUN_FINISHED", runId: "r1", outcome: { type: "interrupt", interrupts: [{ id, reason: "approval", payload: { tool: "t", args: {} } }] } });

test("useAgentRun: two approvals in a row, each followed from where the last one stopped", async () => {
  const log = [
    { type: "RUN_STARTED", runId: "r1", threadId: "t" },
    { type: "TEXT_MESSAGE_CONTENT", messageId: "m-1", delta: "a" },
    interrupt("i1"),
    { type: "RUN_STARTED", runId: "r1", threadId: "t" },
    { type: "TEXT_MESSAGE_CONTENT", messageId: "m-2", delta: "b" },
    interrupt("i2"),
    { type: "RUN_STARTED", runId: "r1", threadId: "t" },
    { type: "TEXT_MESSAGE_CONTENT", messageId: "m-3", delta: "c" },
    { type: "RUN_FINISHED", runId: "r1", result: { stopReason: "completed" } },
  ];
  const frame = (i) => `id: ${i + 1}\ndata: ${JSON.stringify(log[i])}\n\n`;
  let decided = 0;
  const waiters = [];
  // The follow route stays open through an interrupt: rows past the next interrupt appear
  // only once it is decided.
  const srv = await fakeServer(async (req, res) => {
    if (req.url.startsWith("/agent/approvals/")) {
      decided++;
      waiters.splice(0).forEach((w) => w());
      return res.writeHead(200, { "Content-Type": "application/json" }).end('{"data":{"ok":true},"error":null}');
    }
    res.writeHead(200, { "Content-Type": "text/event-stream" });
    if (req.url.startsWith("/agent/runs/r1/events")) {
      for (let i = Number(req.headers["last-event-id"] || 0); ; ) {
        const upTo = [3, 6, 9][Math.min(decided, 2)];
        while (i < upTo) res.write(frame(i++));
        if (i >= 9) return res.end();
        await new Promise((r) => waiters.push(r));
      }
    }
    for (let i = 0; i < 3; i++) res.write(frame(i)); // the live stream, to the first interrupt
    res.end("data: [DONE]\n\n");
  });
  const send = async () => ({ data: await fetch(srv.url + "/chat", { method: "POST" }), error: null });
  const m = mount({ url: srv.url, send });
  try {
    await within("send", m.h().send("hi"));
    assert.deepEqual([m.h().status, m.h().text], ["interrupted", "a"]);
    const first = m.h().approve("i1");
    await until("the second interrupt", () => m.h().interrupts[0]?.id == "i2");
    assert.deepEqual([m.h().status, m.h().text], ["interrupted", "ab"]);
    await within("approve i2", m.h().approve("i2"));
    await within("the first follow", first);
    assert.deepEqual([m.h().status, m.h().text, m.h().error], ["finished", "abc", null]);
    const follows = srv.seen.filter((s) => s.url.startsWith("/agent/runs/"));
    assert.deepEqual(follows.map((s) => s.headers["last-event-id"]), [undefined, "6"]);
  } finally {
    m.unmount();
    await srv.close();
  }
});

/** A server whose /chat/slow streams a delta every 20 ms until its client leaves. */
async function streaming() {
  const state = { closed: false, sent: 0 };
  const srv = await fakeServer((req, res) => {
    res.writeHead(200, { "Content-Type": "text/event-stream" });
    if (req.url == "/chat/quick")
      return res.end('data: {"type":"TEXT_MESSAGE_CONTENT","delta":"b"}\n\ndata: {"type":"RUN_FINISHED","runId":"r2"}\n\n');
    const iv = setInterval(() => (state.sent++, res.write('data: {"type":"TEXT_MESSAGE_CONTENT","delta":"a"}\n\n')), 20);
    req.socket.on("close", () => ((state.closed = true), clearInterval(iv)));
  });
  return { srv, state };
}

test("useAgentRun: a second send stops the first stream; its events are not mixed in", async () => {
  const { srv, state } = await streaming();
  const send = async (m) => ({ data: await fetch(srv.url + "/chat/" + m, { method: "POST" }), error: null });
  const m = mount({ url: srv.url, send });
  try {
    const first = m.h().send("slow");
    await until("streaming", () => m.h().text.length >= 2);
    await within("the second send", m.h().send("quick"));
    await within("the first send", first);
    await tick(200);
    assert.deepEqual([m.h().status, m.h().text, m.h().error], ["finished", "b", null]);
    await until("the first stream's socket to close", () => state.closed);
  } finally {
    m.unmount();
    await srv.close();
  }
});

test("useAgentRun: unmounting closes the stream and stops the state", async () => {
  const { srv, state } = await streaming();
  let signal;
  const send = async (m, init) => ((signal = init?.signal), { data: await fetch(srv.url + "/chat/" + m, { method: "POST" }), error: null });
  const m = mount({ url: srv.url, send });
  const run = m.h().send("slow");
  await until("streaming", () => m.h().text.length >= 2);
  m.unmount();
  try {
    assert.ok(signal instanceof AbortSignal, "send was given a signal");
    await until("the signal to abort on unmount (effect cleanups run after unmount returns)", () => signal.aborted);
    await within("the send", run);
    await until("the socket to close", () => state.closed);
    const n = state.sent;
    await tick(200);
    assert.equal(state.sent, n, "nothing streamed after the close");
  } finally {
    await srv.close();
  }
});
