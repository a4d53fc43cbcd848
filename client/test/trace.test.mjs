import { test } from "node:test";
import assert from "node:assert/strict";
import { createClient } from "engine/client";
import { traceHeaders, traceparent } from "engine/client/trace";
import { fakeServer } from "./helpers.mjs";

test("traceHeaders sends the active span's traceparent, and nothing without one", async () => {
  const { url, seen, close } = await fakeServer((req, res) => {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ data: { sum: 3 }, error: null }));
  });
  try {
    let active;
    const api = createClient(url, { headers: traceHeaders(() => active) });
    active = { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", traceFlags: 1 };
    assert.deepEqual((await api.math.add({ a: 1, b: 2 })).data, { sum: 3 });
    active = undefined;
    await api.math.add({ a: 1, b: 2 });
    assert.equal(seen[0].headers.traceparent, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    assert.equal(seen[1].headers.traceparent, undefined);
  } finally {
    await close();
  }
});

test("traceparent refuses what is not a span context", () => {
  assert.equal(traceparent({ traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7" }),
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
  for (const bad of [undefined, { traceId: "0".repeat(32), spanId: "00f067aa0ba902b7" },
    { traceId: "4BF92F3577B34DA6A3CE929D0E0E4736", spanId: "00f067aa0ba902b7" },
    { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "short" }]) {
    assert.equal(traceparent(bad), undefined);
  }
});
