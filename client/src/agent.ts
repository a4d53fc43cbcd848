// Agent helpers: reading agent event streams, deciding approvals, and following a run
// with Last-Event-ID resume.
import { createTransport, type Transport, isEventStream, sleep } from "./transport.js";
import type { ClientError, TransportOptions } from "./types.js";

/** An agent event: the AG-UI vocabulary, type plus its fields. */
export interface AgentEvent {
  type: string;
  [field: string]: any;
}

/** An event with the SSE id of its stored row ("" when the frame had none). */
export interface AgentFrame {
  id: string;
  event: AgentEvent;
}

/**
 * The output of a finished run as a `T`: `RUN_FINISHED`'s `result.output`, the typed
 * value the final answer of an agent with a typed output carried (in Go, `ai.Output[T]`).
 * `T` is yours to name, usually a type of the declarations generated from the app, as
 * `agui.OutputOf[T]` takes its type in Go; the value is the one the server validated
 * against T's schema before it ended the run. Throws when `event` is not a `RUN_FINISHED`
 * with an output (a run that parked, failed or has no typed output).
 */
export function outputOf<T>(event: AgentEvent): T {
  if (event.type != "RUN_FINISHED" || event.result == null || event.result.output === undefined) {
    throw new Error(`engine: no run output in a ${event.type} event`);
  }
  return event.result.output as T;
}

/** A reply that is not an event stream, with its envelope error when it had one. */
export class AgentResponseError extends Error {
  constructor(readonly status: number, readonly error: ClientError | null) {
    super(`agent: HTTP ${status}` + (error ? ": " + error.code : ": not an event stream"));
    this.name = "AgentResponseError";
  }
}

const customNames: Record<string, string> = {
  "engine.subagent.started": "subagent.started",
  "engine.subagent.finished": "subagent.finished",
  "engine.subagent.error": "subagent.error",
};

async function check(res: Response): Promise<Response> {
  if (isEventStream(res) && res.body) return res;
  let error: ClientError | null = null;
  try {
    const env = JSON.parse(await res.text());
    if (env && typeof env.error?.code == "string") error = env.error;
  } catch {
    // not an envelope
  }
  throw new AgentResponseError(res.status, error);
}

/**
 * Reads the frames of an event stream: [DONE] and events without a type are skipped.
 * Breaking out cancels the body, closing the connection; so does aborting signal, which
 * then throws its reason.
 */
export async function* readFrames(res: Response, signal?: AbortSignal): AsyncGenerator<AgentFrame> {
  const reader = (await check(res)).body!.pipeThrough(new TextDecoderStream()).getReader();
  const stop = () => reader.cancel(signal!.reason).catch(() => {});
  signal?.addEventListener("abort", stop);
  let buf = "", data: string[] = [], id = "";
  try {
    for (;;) {
      signal?.throwIfAborted();
      const { done, value } = await reader.read();
      signal?.throwIfAborted();
      buf += done ? "" : value;
      let nl: number;
      // A CR as the last character may be the first half of a CRLF split across chunks:
      // it waits for the next chunk, or the end of the body.
      while ((nl = buf.search(/\r\n|\r|\n/)) >= 0 && (done || nl < buf.length - 1 || buf[nl] != "\r")) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
        if (line == "") {
          const text = data.join("\n"), fid = id;
          data = [];
          id = "";
          if (!text || text == "[DONE]") continue;
          const ev = JSON.parse(text);
          if (!ev || typeof ev != "object" || typeof ev.type != "string" || !ev.type) continue;
          if (ev.type == "CUSTOM" && customNames[ev.name]) ev.name = customNames[ev.name];
          yield { id: fid, event: ev };
          continue;
        }
        const c = line.indexOf(":");
        const field = c < 0 ? line : line.slice(0, c);
        const v = c < 0 ? "" : line.slice(c + (line[c + 1] == " " ? 2 : 1));
        if (field == "data") data.push(v);
        else if (field == "id") id = v;
      }
      if (done) return;
    }
  } finally {
    signal?.removeEventListener("abort", stop);
    // The body is locked to the decoder: cancel through the reader, which reaches the source.
    await reader.cancel().catch(() => {});
  }
}

/** Options of the helpers that make their own requests. */
export interface AgentOptions extends TransportOptions {
  signal?: AbortSignal;
}

/**
 * Reads the agent events of a stream: a Response (a flow call's data), or a URL to GET.
 * CUSTOM engine.subagent.* events are renamed subagent.*; a reply that is not an event
 * stream throws AgentResponseError.
 */
export async function* readAgentEvents(source: Response | string, opts: AgentOptions = {}): AsyncGenerator<AgentEvent> {
  const res = typeof source == "string" ? await get(source, opts, {}) : source;
  for await (const f of readFrames(res, opts.signal)) yield f.event;
}

async function get(url: string, opts: AgentOptions, headers: Record<string, string>): Promise<Response> {
  const r = await createTransport(opts).request("GET", url, undefined, { headers, signal: opts.signal, accept: "text/event-stream", stream: true });
  if (r.error) throw new AgentResponseError(r.status, r.error);
  return r.response || new Response(r.text, { status: r.status, headers: r.headers });
}

/** A decision the server refused; error.code is Conflict when one was already stored. */
export class DecisionError extends Error {
  constructor(readonly op: string, readonly error: ClientError, readonly status: number) {
    super(`agent: ${op}: ${error.code}` + (error.data?.message ? ": " + error.data.message : ""));
    this.name = error.code == "Conflict" ? "Conflict" : "DecisionError";
  }
}

/** Reports whether e is the refusal of a decision already stored. */
export const isConflict = (e: unknown): e is DecisionError => e instanceof DecisionError && e.error.code == "Conflict";

export interface DecideOptions extends AgentOptions {
  /** A transport to send with, instead of one built from these options. */
  transport?: Transport;
}

const base = (url: string) => url.replace(/\/+$/, "");

async function decide(op: string, url: string, body: object | undefined, opts: DecideOptions, path = "/agent/approvals/" + op): Promise<any> {
  const t = opts.transport || createTransport(opts);
  const target = base(url) + path;
  for (;;) {
    const r = body ? await t.request("POST", target, JSON.stringify(body), { signal: opts.signal }) : await t.request("GET", target, undefined, { signal: opts.signal });
    if (r.error) throw new DecisionError(op, r.error, r.status);
    let env: any;
    try {
      env = JSON.parse(r.text);
    } catch {
      env = null;
    }
    const te = (m: string) => new DecisionError(op, { code: "TransportError", data: { message: m, status: r.status } }, r.status);
    if (!env || typeof env != "object" || !("error" in env)) throw te(`HTTP ${r.status} reply without a {data, error} envelope`);
    if (env.error == null) {
      if (r.status >= 200 && r.status < 300) return env.data;
      throw te(`HTTP ${r.status} reply with a success envelope`);
    }
    const e: ClientError = { code: env.error.code, data: env.error.data ?? {} };
    if (e.code != "JournalLeaseBusy") throw new DecisionError(op, e, r.status);
    const ra = r.headers.get("Retry-After");
    const wait = ra && /^\d+$/.test(ra.trim()) ? +ra * 1000 : e.data.retryAfterMs > 0 ? e.data.retryAfterMs : 1000;
    if (!(await sleep(wait, opts.signal))) throw new DecisionError(op, e, r.status);
  }
}

/** Approves a parked tool call; args, when given, replace its input. Retries JournalLeaseBusy. */
export const approve = (url: string, id: string, opts: DecideOptions & { args?: object } = {}): Promise<void> =>
  decide("approve", url, opts.args ? { id, args: opts.args } : { id }, opts);

/** Denies a parked tool call; reason is what the model sees. Retries JournalLeaseBusy. */
export const deny = (url: string, id: string, opts: DecideOptions & { reason?: string } = {}): Promise<void> =>
  decide("deny", url, opts.reason ? { id, reason: opts.reason } : { id }, opts);

/**
 * Stops a run (POST /agent/runs/:runId/stop, runId as in RUN_STARTED) on whichever
 * instance runs it: its live stream and every follower end with RUN_FINISHED, outcome
 * cancelled; a parked run is cancelled and its approvals refused. A run that already
 * finished is refused with Conflict (isConflict), an unknown one with NotFound.
 */
export const stop = (url: string, runId: string, opts: DecideOptions = {}): Promise<void> =>
  decide("stop", url, {}, opts, "/agent/runs/" + encodeURIComponent(runId) + "/stop");

/** One message of a conversation, as AG-UI sends it in MESSAGES_SNAPSHOT. */
export interface ThreadMessage {
  id: string;
  role: string;
  content?: string;
  toolCalls?: { id: string; type: "function"; function: { name: string; arguments: string } }[];
  toolCallId?: string;
  [key: string]: unknown;
}

/**
 * Reads a conversation thread's messages (GET /agent/threads/:threadId/messages), for a
 * page that reloads: what the clients sent and what the runs added, in order. Then
 * followThread with fromNow goes on from there. An unknown thread, or one the caller may
 * not read (only the starter of its first run and operators may), is refused with
 * NotFound (a DecisionError, op "messages").
 */
export const threadMessages = async (url: string, threadId: string, opts: DecideOptions = {}): Promise<ThreadMessage[]> =>
  (await decide("messages", url, undefined, opts, "/agent/threads/" + encodeURIComponent(threadId) + "/messages")).messages;

export interface FollowOptions extends AgentOptions {
  /** Resume after this id (the last one received). */
  lastEventId?: string | number;
  /** Reconnects allowed in a row without receiving a frame; 5 by default. */
  maxReconnects?: number;
  /** First delay before reconnecting, doubled each time up to 5 s; 100 ms by default. */
  backoff?: number;
}

/** Whether an event ends the run (an interrupt or a lost worker does not). */
const ends = (e: AgentEvent) =>
  (e.type == "RUN_FINISHED" && e.outcome?.type != "interrupt") || (e.type == "RUN_ERROR" && e.code != "WorkerLost");

/**
 * Follows a run's stored log (GET /agent/runs/:runId/events) to its end, reconnecting
 * with Last-Event-ID after a dropped connection: no gap, no duplicate. It returns after
 * the run's terminal event (RUN_FINISHED that is not an interrupt, or RUN_ERROR other
 * than WorkerLost); a stream that closes before one is a failed connection, so following
 * from past the terminal event throws once maxReconnects are spent.
 */
export const follow = (url: string, runId: string, opts: FollowOptions = {}): AsyncGenerator<AgentFrame> =>
  followAt(base(url) + "/agent/runs/" + encodeURIComponent(runId) + "/events", opts, false);

/**
 * Follows every run of a conversation thread (GET /agent/threads/:threadId/events), in
 * order: the runs already stored, then each run started later on any instance, as one
 * AG-UI stream. A thread has no end: stop with opts.signal or by leaving the loop. The
 * frames' ids resume with lastEventId; reconnects are follow's. With opts.fromNow the
 * follow joins where the thread is: a run in progress from the middle (RUN_STARTED, then
 * STATE_SNAPSHOT where the run has state and MESSAGES_SNAPSHOT with the conversation so
 * far, then the rest of the run), a thread whose latest run has ended from its next run.
 */
export const followThread = (url: string, threadId: string, opts: ThreadFollowOptions = {}): AsyncGenerator<AgentFrame> =>
  followAt(base(url) + "/agent/threads/" + encodeURIComponent(threadId) + "/events" + (opts.fromNow ? "?from=now" : ""), opts, true);

export interface ThreadFollowOptions extends FollowOptions {
  /** Join the thread where it is instead of from its first run; lastEventId, when set, wins. */
  fromNow?: boolean;
}

async function* followAt(target: string, opts: FollowOptions, thread: boolean): AsyncGenerator<AgentFrame> {
  let last = Number(opts.lastEventId || 0), fails = 0;
  const first = opts.backoff || 100;
  let delay = first;
  for (;;) {
    let got = 0, ended = false, err: unknown = null;
    try {
      const headers: Record<string, string> = {};
      if (last > 0) headers["Last-Event-ID"] = String(last);
      for await (const f of readFrames(await get(target, opts, headers))) {
        const seq = Number(f.id);
        if (seq > 0 && seq <= last) continue; // a server that ignored Last-Event-ID: never yield twice
        if (seq > 0) last = seq;
        got++;
        ended = !thread && ends(f.event);
        yield f;
      }
    } catch (e) {
      if ((e instanceof AgentResponseError && e.status > 0 && e.status < 500) || opts.signal?.aborted || e instanceof SyntaxError) throw e;
      err = e;
    }
    // Only a terminal event ends the run; a stream that ends without one (a proxy's idle
    // cut, say) is a failed connection like a dropped one, bounded by maxReconnects.
    if (!err && ended) return;
    if (got > 0) (fails = 0), (delay = first);
    if (fails >= (opts.maxReconnects ?? 5))
      throw new Error(`agent: following ${target}: giving up after ${fails} reconnects: ${err ? (err as Error).message : "the stream ended before the run did"}`);
    fails++;
    // An abort cuts the wait short; the next request then fails as canceled and is thrown.
    await sleep(delay, opts.signal);
    delay = Math.min(delay * 2, 5000);
  }
}
