// transcript.js: an agent's AG-UI event log rendered as it grows: messages, tool calls
// with their arguments and results, subagents nested under the call that ran them,
// usage and cost, and how the run ended.

import { h, json } from "./dom.js";

/** Transcript renders events appended to it, in order, into el. */
export class Transcript {
  constructor() {
    this.el = h("div", { class: "transcript", "aria-label": "Transcript" });
    this.messages = new Map();
    this.calls = new Map();
    this.parent = this.el; // subagent events nest here
    this.stack = [];
  }

  add(ev) {
    switch (ev.type) {
      case "TEXT_MESSAGE_START": {
        const body = h("p", { class: "text" });
        const node = h("div", { class: `msg ${ev.role || "assistant"}` }, h("strong", {}, ev.role || "assistant"), body);
        this.messages.set(ev.messageId, body);
        this.parent.append(node);
        break;
      }
      case "TEXT_MESSAGE_CONTENT": {
        let body = this.messages.get(ev.messageId);
        if (!body) {
          this.add({ type: "TEXT_MESSAGE_START", messageId: ev.messageId, role: "assistant" });
          body = this.messages.get(ev.messageId);
        }
        body.append(ev.delta || "");
        break;
      }
      case "TOOL_CALL_START": {
        const args = h("pre", { "aria-label": `Arguments of ${ev.toolCallName}` });
        const node = h("div", { class: "tool" }, h("strong", {}, "Tool call "), h("code", {}, ev.toolCallName), args);
        this.calls.set(ev.toolCallId, { node, args, text: "", name: ev.toolCallName });
        this.parent.append(node);
        break;
      }
      case "TOOL_CALL_ARGS": {
        const c = this.calls.get(ev.toolCallId);
        if (c) {
          c.text += ev.delta || "";
          c.args.textContent = pretty(c.text);
        }
        break;
      }
      case "TOOL_CALL_RESULT": {
        const c = this.calls.get(ev.toolCallId);
        const out = h("div", {}, h("span", { class: "muted" }, "Result"), h("pre", {}, pretty(ev.content)));
        (c ? c.node : this.parent).append(out);
        break;
      }
      case "CUSTOM":
        this.custom(ev);
        break;
      case "RUN_FINISHED":
        this.finished(ev);
        break;
      case "RUN_ERROR":
        this.parent.append(h("p", { class: "end error" }, `Run error${ev.code ? " " + ev.code : ""}: ${ev.message || ""}`));
        break;
      case "STEP_STARTED":
      case "STEP_FINISHED":
      case "TEXT_MESSAGE_END":
      case "TOOL_CALL_END":
      case "RUN_STARTED":
        break;
      default:
        if (ev.type && ev.type.startsWith("REASONING_MESSAGE_CONTENT")) {
          this.parent.append(h("span", { class: "muted" }, ev.delta || ""));
        }
    }
  }

  custom(ev) {
    const v = ev.value || {};
    if (ev.name === "engine.subagent.started") {
      const box = h("div", { class: "sub", "aria-label": `Subagent ${v.agent || ""}` }, h("strong", {}, `Subagent ${v.agent || ""}`));
      this.parent.append(box);
      this.stack.push(this.parent);
      this.parent = box;
    } else if (ev.name === "engine.subagent.finished" || ev.name === "engine.subagent.error") {
      if (ev.name === "engine.subagent.error") this.parent.append(h("p", { class: "error" }, `Subagent failed: ${v.message || v.code || ""}`));
      else if (v.result !== undefined) this.parent.append(h("div", {}, h("span", { class: "muted" }, "Subagent result"), json(v.result)));
      this.parent = this.stack.pop() || this.el;
    } else {
      this.parent.append(h("div", { class: "muted" }, `${ev.name}`, json(ev.value)));
    }
  }

  finished(ev) {
    const r = ev.result || {};
    const parts = [];
    if (ev.outcome && ev.outcome.type === "interrupt") parts.push("Parked: waiting for approval");
    if (r.stopReason) parts.push(`Stop reason: ${r.stopReason}`);
    if (typeof r.cost === "number") parts.push(`cost ${r.cost}`);
    for (const u of ev.usage || []) {
      parts.push(`tokens in ${u.inputTokens ?? "?"}, out ${u.outputTokens ?? "?"}${u.reasoningTokens ? `, reasoning ${u.reasoningTokens}` : ""}`);
    }
    this.parent.append(h("p", { class: "end" }, parts.join(" · ") || "Run finished"));
  }
}

function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}
