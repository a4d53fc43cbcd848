// Drives the reference app's POST /chat/ui with the Vercel AI SDK's own chat machinery:
// AbstractChat (what useChat wraps) over DefaultChatTransport, which posts the AI SDK's
// chat request and reads the UI message stream with the package's own parser and
// schema. Run by the Go test TestAISDKChat with:
//
//   UI_URL     the app's base URL
//   UI_TOKEN   a bearer token of alice (tools:transfer)
//
// Each scenario prints one line; any failure exits 1 with the reason.
import {
  AbstractChat,
  DefaultChatTransport,
  isToolUIPart,
  lastAssistantMessageIsCompleteWithApprovalResponses,
} from "ai";

const base = process.env.UI_URL;
const token = process.env.UI_TOKEN;
if (!base || !token) {
  console.error("UI_URL and UI_TOKEN must be set");
  process.exit(2);
}

// State is the chat's message store, as the framework bindings (@ai-sdk/react …) keep it.
class State {
  status = "ready";
  error = undefined;
  messages = [];
  pushMessage = (m) => { this.messages = this.messages.concat(m); };
  popMessage = () => { this.messages = this.messages.slice(0, -1); };
  replaceMessage = (i, m) => { this.messages = [...this.messages.slice(0, i), this.snapshot(m), ...this.messages.slice(i + 1)]; };
  snapshot = (x) => structuredClone(x);
}

class Chat extends AbstractChat {
  constructor(init) {
    super({ ...init, state: new State() });
  }
}

// headers seen on every response, to check the protocol's header.
const seen = [];
function transport(auth = token) {
  return new DefaultChatTransport({
    api: base + "/chat/ui",
    headers: auth ? { Authorization: "Bearer " + auth } : {},
    fetch: async (url, init) => {
      const res = await fetch(url, init);
      seen.push({ status: res.status, header: res.headers.get("x-vercel-ai-ui-message-stream"), type: res.headers.get("content-type") });
      return res;
    },
  });
}

function newChat(id, extra = {}) {
  const errors = [];
  const chat = new Chat({ id, transport: transport(extra.token), onError: (e) => errors.push(e), ...extra });
  chat.errors = errors;
  return chat;
}

function assert(cond, what, detail) {
  if (!cond) {
    throw new Error(what + (detail === undefined ? "" : ": " + JSON.stringify(detail, null, 1)));
  }
}

async function waitFor(what, cond, ms = 20000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("timed out waiting for " + what);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const last = (chat) => chat.messages[chat.messages.length - 1];
const text = (m) => m.parts.filter((p) => p.type === "text").map((p) => p.text).join("");
const tools = (m) => m.parts.filter(isToolUIPart);

async function follow(runId) {
  const res = await fetch(`${base}/agent/runs/${runId}/events`, { headers: { Authorization: "Bearer " + token } });
  assert(res.ok, "follow " + runId, res.status);
  return res.text();
}

const scenarios = {
  async text() {
    const chat = newChat("ui-text");
    await chat.sendMessage({ text: "hello there" });
    assert(chat.status === "ready", "status", chat.status);
    const m = last(chat);
    assert(m.role === "assistant" && text(m) === "Reply to: hello there", "reply", m);
    assert(m.id.startsWith("run_"), "the message id is the run id", m.id);
    const log = await follow(m.id);
    assert(log.includes('"threadId":"ui-text"'), "the chat id is the run's thread", log.slice(0, 300));
  },

  async tool() {
    const chat = newChat("ui-tool");
    await chat.sendMessage({ text: "what is the weather in Paris?" });
    const m = last(chat);
    const [part] = tools(m);
    assert(part && part.type === "tool-tools.weather" && part.state === "output-available", "tool part", m.parts);
    assert(part.input.city === "Paris" && part.output.city === "Paris" && typeof part.output.tempC === "number", "input then output", part);
    assert(text(m).startsWith("Done: "), "the reply after the tool", m.parts);
    assert(m.parts.filter((p) => p.type === "step-start").length === 2, "two steps", m.parts);
  },

  async approve() {
    const chat = newChat("ui-approve", { sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses });
    await chat.sendMessage({ text: "transfer 500 to bob" });
    const m = last(chat);
    const [part] = tools(m);
    assert(part && part.type === "tool-tools.transfer" && part.state === "approval-requested" && part.approval?.id, "approval requested", m.parts);
    await chat.addToolApprovalResponse({ id: part.approval.id, approved: true });
    await waitFor("the approved transfer's reply", () => chat.status === "ready" && text(last(chat)).startsWith("Done: "));
    const after = last(chat);
    assert(after.id === m.id && chat.messages.length === 2, "the same assistant message continued", chat.messages.map((x) => x.id));
    const [done] = tools(after);
    assert(done.state === "output-available" && done.output.ok === true && done.output.amount === 500, "the transfer's output", done);
    assert(done.approval?.approved === true, "the approval kept", done);
  },

  async deny() {
    const chat = newChat("ui-deny", { sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses });
    await chat.sendMessage({ text: "transfer 700 to carol" });
    const [part] = tools(last(chat));
    assert(part?.state === "approval-requested", "approval requested", last(chat).parts);
    await chat.addToolApprovalResponse({ id: part.approval.id, approved: false, reason: "not this week" });
    await waitFor("the denied transfer's reply", () => chat.status === "ready" && text(last(chat)).startsWith("Done: "));
    const after = last(chat);
    const [denied] = tools(after);
    assert(denied.state === "output-denied" && denied.approval?.approved === false, "the part is denied", denied);
    const reply = text(after);
    assert(reply.includes('"code":"Denied"') && reply.includes("not this week"), "the model saw the denial", reply);
  },

  async error() {
    const chat = newChat("ui-error");
    await chat.sendMessage({ text: "please fail" });
    assert(chat.status === "error" && chat.error?.message.includes("model overloaded"), "the error chunk", { status: chat.status, error: chat.error?.message });
    assert(chat.errors.length === 1, "onError called once", chat.errors.map(String));
  },

  async unauthorized() {
    const chat = newChat("ui-anon", { token: "" });
    await chat.sendMessage({ text: "hello" });
    assert(chat.status === "error" && chat.error?.message.includes("Unauthorized"), "refused without a token", chat.error?.message);
  },
};

let failed = 0;
for (const [name, run] of Object.entries(scenarios)) {
  try {
    await run();
    console.log("ok   " + name);
  } catch (e) {
    failed++;
    console.log("FAIL " + name + ": " + (e?.stack ?? e));
  }
}
for (const s of seen) {
  if (s.status === 200 && (s.header !== "v1" || !s.type?.startsWith("text/event-stream"))) {
    failed++;
    console.log("FAIL header: a stream answered with", s);
  }
}
if (seen.filter((s) => s.status === 200).length < 7) {
  failed++;
  console.log("FAIL: only " + seen.length + " responses seen");
}
process.exit(failed ? 1 : 0);
