// The browser test's page: a small React app built with the client and its React bindings,
// served from the reference app's origin by run.mjs. Every state the test waits for is in
// the DOM (ids and data-* attributes), never only in pixels.
import { StrictMode, useMemo, useState } from "react";
import { createRoot } from "react-dom/client";
import { createClient } from "engine/client";
import { memorySession } from "engine/client/auth";
import { useSession, useAgentRun } from "engine/client/react";
import { followThread } from "engine/client/agent";
import { app } from "../test/gen/engine-client.js";

const PASSWORD = "correct horse battery staple";
const url = location.origin;
const session = memorySession();
const api = createClient(app, url, { auth: { getToken: session.getToken, refresh: (): Promise<void> => session.refresh(api) } });

function Session() {
  const { status, me } = useSession<{ email: string; tenant: string }>(api, session);
  const [err, setErr] = useState("");
  const signIn = async () => {
    const r = await api.auth.signInEmail({ email: "alice@example.com", password: PASSWORD });
    if (r.error) setErr(r.error.code);
    else session.set(r.data);
  };
  return (
    <section>
      <h2>Session</h2>
      <p id="session" data-status={status}>
        {status}
        {me ? ` as ${me.email} (tenant ${me.tenant})` : ""}
      </p>
      {me && <span id="me-email">{me.email}</span>}
      {status == "signed-out" && <button id="sign-in" onClick={signIn}>Sign in as alice</button>}
      {status == "signed-in" && <button id="sign-out" onClick={() => session.set(null)}>Sign out</button>}
      {err && <p id="sign-in-error">{err}</p>}
    </section>
  );
}

function Flows() {
  const [sum, setSum] = useState("");
  const [square, setSquare] = useState("");
  const call = async () => {
    const a = await api.math.add({ a: 2, b: 3 }); // RPC
    setSum(a.error ? "error " + a.error.code : String(a.data.sum));
    const s = await api.math.square({ n: 12 }); // REST: GET /math/square/12
    setSquare(s.error ? "error " + s.error.code : String(s.data.square));
  };
  return (
    <section>
      <h2>Flows</h2>
      <button id="call-flows" onClick={call}>math.add 2 + 3, math.square 12</button>
      <p>sum <output id="sum">{sum}</output>, square <output id="square">{square}</output></p>
    </section>
  );
}

function Assistant() {
  const opts = useMemo(
    () => ({ url, auth: { getToken: session.getToken }, send: (message: string, init: { signal: AbortSignal }) => api.chat.ask({ message }, init) }),
    [],
  );
  const run = useAgentRun(opts);
  const [message, setMessage] = useState("");
  return (
    <section>
      <h2>Assistant</h2>
      <input id="message" value={message} onChange={(e) => setMessage(e.target.value)} />
      <button id="send" onClick={() => run.send(message)}>Send</button>
      {run.status == "running" && <button id="stop" onClick={() => run.stop()}>Stop</button>}
      <p id="run-status" data-status={run.status}>{run.status}</p>
      <p id="text">{run.text}</p>
      <ul id="tool-calls">
        {run.toolCalls.map((c) => (
          <li key={c.id} data-id={c.id} data-name={c.name} data-done={c.result !== undefined ? "yes" : "no"}>
            {c.name} <code className="args">{c.args}</code> → <code className="result">{c.result ?? "…"}</code>
          </li>
        ))}
      </ul>
      <ul id="interrupts">
        {run.interrupts.map((i) => (
          <li key={i.id} data-id={i.id} data-reason={i.reason} data-tool={i.payload.tool}>
            {i.reason}: {i.payload.tool} <code className="args">{JSON.stringify(i.payload.args)}</code>
            <button className="approve" onClick={() => run.approve(i.id)}>Approve</button>
            <button className="deny" onClick={() => run.deny(i.id, "not now")}>Deny</button>
          </li>
        ))}
      </ul>
      {run.error != null && <pre id="run-error">{JSON.stringify(run.error)}</pre>}
      <Thread threadId={run.threadId} />
    </section>
  );
}

// Follows the current run's thread to its first run's end: the events as one list.
function Thread({ threadId }: { threadId: () => string }) {
  const [events, setEvents] = useState<string[]>([]);
  const followIt = async () => {
    const seen: string[] = [];
    for await (const f of followThread(url, threadId(), { auth: { getToken: session.getToken } })) {
      const e = f.event;
      seen.push(e.type == "RUN_FINISHED" ? `RUN_FINISHED:${e.outcome?.type ?? e.result?.stopReason}` : e.type);
      if (e.type == "RUN_FINISHED") break;
    }
    setEvents(seen);
  };
  return (
    <div>
      <button id="follow-thread" onClick={followIt}>Follow the thread</button>
      <ol id="thread-events">{events.map((e, i) => <li key={i}>{e}</li>)}</ol>
    </div>
  );
}

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <h1>engine client in a browser</h1>
    <Session />
    <Flows />
    <Assistant />
  </StrictMode>,
);
