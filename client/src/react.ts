// React bindings: the session status with auth.me, and an agent run kept as state.
import { useCallback, useEffect, useRef, useState, useSyncExternalStore } from "react";
import type { ClientResult, CallInit } from "./types.js";
import type { MemorySession } from "./auth.js";
import { readAgentEvents, follow, approve, deny, stop as stopRun, type AgentEvent, type AgentOptions } from "./agent.js";

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
  /**
   * Starts the run: usually (message, init) => api.chat.ask({ message }, init). init.signal
   * is aborted when the hook unmounts or a later send or decision replaces this one.
   */
  send: (message: string, init: { signal: AbortSignal }) => Promise<ClientResult<Response, any>>;
}

/**
 * Sends a message, keeps the text so far, the tool calls and the interrupts; after an
 * interrupt is decided (approve or deny) it follows the run to its end. One request feeds
 * the state at a time: a send or decision aborts the one before, and unmounting aborts it.
 */
export function useAgentRun(opts: AgentRunOptions) {
  const [text, setText] = useState("");
  const [toolCalls, setToolCalls] = useState<ToolCall[]>([]);
  const [interrupts, setInterrupts] = useState<Interrupt[]>([]);
  const [status, setStatus] = useState<"idle" | "running" | "interrupted" | "finished" | "cancelled" | "error">("idle");
  const [error, setError] = useState<unknown>(null);
  // seq: the id of the last follow-log frame applied, 0 when only the live stream was read.
  const run = useRef<{ runId: string; threadId: string; seq: number; ac?: AbortController }>({ runId: "", threadId: "", seq: 0 });
  const o = useRef(opts);
  o.current = opts;

  const apply = useCallback((e: AgentEvent) => {
    switch (e.type) {
      case "RUN_STARTED":
        run.current.runId = e.runId;
        run.current.threadId = e.threadId;
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
        } else if (e.outcome?.type == "cancelled") {
          setInterrupts([]);
          setStatus("cancelled");
        } else setStatus("finished");
        break;
      case "RUN_ERROR":
        if (e.code != "WorkerLost") (setError(e), setStatus("error"));
        break;
    }
  }, []);

  // Begins a send or decision: aborts the one before, so that it stops setting state.
  const begin = useCallback(() => {
    run.current.ac?.abort();
    const ac = (run.current.ac = new AbortController());
    const { url, send, signal: outer, ...rest } = o.current;
    const signal = outer ? AbortSignal.any([outer, ac.signal]) : ac.signal;
    const fail = (e: unknown) => signal.aborted || (setError(e), setStatus("error"));
    return { url, send, signal, rest: { ...rest, signal }, fail };
  }, []);

  const send = useCallback(async (message: string) => {
    const { send, signal, fail } = begin();
    run.current.seq = 0;
    setText("");
    setToolCalls([]);
    setInterrupts([]);
    setError(null);
    setStatus("running");
    try {
      const res = await send(message, { signal });
      if (signal.aborted) return void res.data?.body?.cancel().catch(() => {});
      if (res.error) return void fail(res.error);
      for await (const e of readAgentEvents(res.data as Response, { signal })) {
        if (signal.aborted) return;
        apply(e);
      }
    } catch (e) {
      fail(e);
    }
  }, [apply, begin]);

  const decide = useCallback(async (id: string, op: "approve" | "deny", extra: { args?: object; reason?: string } = {}) => {
    const { url, signal, rest, fail } = begin();
    const r = run.current;
    try {
      await (op == "approve" ? approve(url, id, { ...rest, ...extra }) : deny(url, id, { ...rest, ...extra }));
      if (signal.aborted) return;
      setInterrupts([]);
      setStatus("running");
      // The decision resumes the run elsewhere. Following resumes after the last frame
      // applied; after only the live stream (whose frames have no log ids) it reads the log
      // from the start and applies only what follows the interrupt, so no text repeats.
      let past = r.seq > 0;
      for await (const f of follow(url, r.runId, { ...rest, lastEventId: r.seq })) {
        if (signal.aborted) return;
        if (past) apply(f.event);
        else if (!(past = f.event.type == "RUN_FINISHED" && f.event.outcome?.type == "interrupt")) continue;
        if (+f.id > 0) r.seq = +f.id;
      }
    } catch (e) {
      fail(e);
    }
  }, [apply, begin]);

  useEffect(() => () => {
    run.current.ac?.abort();
    run.current = { runId: "", threadId: "", seq: 0 };
  }, []);

  // Stops the run on the server, from whichever instance holds it: the stream being read
  // (or followed) ends with the run's cancelled RUN_FINISHED, which sets the status.
  const stop = useCallback(async () => {
    const { url, send: _send, signal: _signal, ...rest } = o.current;
    if (run.current.runId) await stopRun(url, run.current.runId, rest);
  }, []);

  return {
    text, toolCalls, interrupts, status, error, send,
    /** The thread of the current run ("" before its RUN_STARTED), for followThread. */
    threadId: () => run.current.threadId,
    stop,
    approve: (id: string, args?: object) => decide(id, "approve", { args }),
    deny: (id: string, reason?: string) => decide(id, "deny", { reason }),
  };
}
