// React bindings: the session status with auth.me, and an agent run kept as state.
import { useCallback, useEffect, useRef, useState, useSyncExternalStore } from "react";
import type { ClientResult, CallInit } from "./types.js";
import type { MemorySession } from "./auth.js";
import { readAgentEvents, follow, approve, deny, type AgentEvent, type AgentOptions } from "./agent.js";

/** What useSession needs of a client: the auth.me flow. */
export interface MeApi {
  auth: { me: (input?: any, init?: CallInit) => Promise<ClientResult<any, any>> };
}

export type SessionStatus = "loading" | "signed-in" | "signed-out";

/** The session's status plus the auth.me principal; re-read whenever the tokens change. */
export function useSession<M = unknown>(api: MeApi, session?: MemorySession) {
  const token = useSyncExternalStore(
    (l) => (session ? session.subscribe(l) : () => {}),
    () => (session ? session.getToken() : undefined),
  );
  const [state, setState] = useState<{ status: SessionStatus; me: M | null; error: unknown }>({ status: "loading", me: null, error: null });
  useEffect(() => {
    if (session && !token) return setState({ status: "signed-out", me: null, error: null });
    let live = true;
    setState((s) => ({ ...s, status: "loading" }));
    api.auth.me().then((r) => {
      if (live) setState(r.error ? { status: "signed-out", me: null, error: r.error } : { status: "signed-in", me: r.data, error: null });
    });
    return () => void (live = false);
  }, [api, session, token]);
  return state;
}

/** A tool call of the run: its name, arguments so far and result. */
export interface ToolCall {
  id: string;
  name: string;
  args: string;
  result?: string;
}

/** An approval the run waits for. */
export interface Interrupt {
  id: string;
  reason: string;
  payload: { tool: string; args: unknown };
}

/** What useAgentRun needs: a flow call returning the event stream, and where the app is. */
export interface AgentRunOptions extends AgentOptions {
  /** The app's base URL, for approvals and following. */
  url: string;
  /** Starts the run: usually (message) => api.chat.ask({ message }). */
  send: (message: string) => Promise<ClientResult<Response, any>>;
}

/**
 * Sends a message, keeps the text so far, the tool calls and the interrupts; after an
 * interrupt is decided (approve or deny) it follows the run once to its end.
 */
export function useAgentRun(opts: AgentRunOptions) {
  const [text, setText] = useState("");
  const [toolCalls, setToolCalls] = useState<ToolCall[]>([]);
  const [interrupts, setInterrupts] = useState<Interrupt[]>([]);
  const [status, setStatus] = useState<"idle" | "running" | "interrupted" | "finished" | "error">("idle");
  const [error, setError] = useState<unknown>(null);
  const run = useRef<{ runId: string }>({ runId: "" });
  const o = useRef(opts);
  o.current = opts;

  const apply = useCallback((e: AgentEvent) => {
    switch (e.type) {
      case "RUN_STARTED":
        run.current.runId = e.runId;
        break;
      case "TEXT_MESSAGE_CONTENT":
        setText((t) => t + e.delta);
        break;
      case "TOOL_CALL_START":
        setToolCalls((c) => (c.some((x) => x.id == e.toolCallId) ? c : [...c, { id: e.toolCallId, name: e.toolCallName, args: "" }]));
        break;
      case "TOOL_CALL_ARGS":
        setToolCalls((c) => c.map((x) => (x.id == e.toolCallId ? { ...x, args: x.args + e.delta } : x)));
        break;
      case "TOOL_CALL_RESULT":
        setToolCalls((c) => c.map((x) => (x.id == e.toolCallId ? { ...x, result: e.content } : x)));
        break;
      case "RUN_FINISHED":
        if (e.outcome?.type == "interrupt") {
          setInterrupts(e.outcome.interrupts);
          setStatus("interrupted");
        } else setStatus("finished");
        break;
      case "RUN_ERROR":
        if (e.code != "WorkerLost") (setError(e), setStatus("error"));
        break;
    }
  }, []);

  const send = useCallback(async (message: string) => {
    setText("");
    setToolCalls([]);
    setInterrupts([]);
    setError(null);
    setStatus("running");
    const res = await o.current.send(message);
    if (res.error) return setError(res.error), setStatus("error");
    try {
      for await (const e of readAgentEvents(res.data as Response)) apply(e);
    } catch (e) {
      setError(e);
      setStatus("error");
    }
  }, [apply]);

  const decide = useCallback(async (id: string, op: "approve" | "deny", extra: { args?: object; reason?: string } = {}) => {
    const { url, send: _s, ...rest } = o.current;
    try {
      await (op == "approve" ? approve(url, id, { ...rest, ...extra }) : deny(url, id, { ...rest, ...extra }));
      setInterrupts([]);
      setStatus("running");
      // The decision resumes the run elsewhere; the stored log is read from the start and
      // only what follows the interrupt is applied, so the text so far is not repeated.
      let past = false;
      for await (const f of follow(url, run.current.runId, rest)) {
        if (past) apply(f.event);
        else if (f.event.type == "RUN_FINISHED" && f.event.outcome?.type == "interrupt") past = true;
      }
    } catch (e) {
      setError(e);
      setStatus("error");
    }
  }, [apply]);

  useEffect(() => () => void (run.current = { runId: "" }), []);

  return {
    text, toolCalls, interrupts, status, error, send,
    approve: (id: string, args?: object) => decide(id, "approve", { args }),
    deny: (id: string, reason?: string) => decide(id, "deny", { reason }),
  };
}
