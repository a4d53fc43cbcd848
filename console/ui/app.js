// app.js: the console's pages, routed by the URL's hash (#/runs, #/runs/<id>, …) so the
// app serves one page. Every page asks the operator API; nothing is shown before an
// operator has signed in.

import { api, callFlow, signOut, token, Failure } from "./api.js";
import { h, fill, json, when, duration, table } from "./dom.js";
import { schemaForm } from "./form.js";
import { Transcript } from "./transcript.js";

const body = document.body.dataset;
const main = document.getElementById("main");
const nav = document.getElementById("nav");
const who = document.getElementById("who");
const signout = document.getElementById("signout");
const status = document.getElementById("status");

let me = null;
let timers = [];

/** every runs fn now and then every ms while the page is open. */
function every(ms, fn) {
  fn();
  timers.push(setInterval(fn, ms));
}

function say(text) {
  status.textContent = text;
}

function show(title, ...content) {
  fill(main, h("h1", {}, title), content);
  document.title = `${title} · Console`;
}

function failure(e) {
  if (e instanceof Failure && e.status === 401) {
    token.clear();
    me = null;
    route();
    return h("p", { class: "error", role: "alert" }, "Your session ended: sign in again.");
  }
  return h("p", { class: "error", role: "alert" }, e instanceof Failure ? `${e.code} (HTTP ${e.status})${e.data && e.data.message ? ": " + e.data.message : ""}` : String(e));
}

// ---- sign-in ----

function signInPage(message) {
  nav.hidden = true;
  signout.hidden = true;
  who.textContent = "";
  const email = h("input", { id: "email", type: "email", autocomplete: "username", required: true });
  const password = h("input", { id: "password", type: "password", autocomplete: "current-password", required: true });
  const out = h("div", { "aria-live": "polite" }, message ? h("p", { class: "error", role: "alert" }, message) : null);
  const form = h("form", { class: "fields", "aria-label": "Sign in" },
    h("label", { for: "email" }, "Email", email),
    h("label", { for: "password" }, "Password", password),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Sign in")));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    fill(out, h("p", {}, "Signing in…"));
    const [unit, flow] = splitID(body.signIn);
    token.clear();
    const { envelope, status: code } = await callFlow(`/_engine/${unit}/${flow}`, { email: email.value, password: password.value });
    if (envelope.error || !envelope.data || !envelope.data.accessToken) {
      fill(out, h("p", { class: "error", role: "alert" }, `Sign-in failed: ${envelope.error ? envelope.error.code : "no token"} (HTTP ${code})`));
      return;
    }
    token.set(envelope.data);
    await start();
  });
  show("Sign in", form, out);
  email.focus();
}

function splitID(id) {
  const i = id.lastIndexOf(".");
  return [id.slice(0, i), id.slice(i + 1)];
}

async function start() {
  try {
    me = await api("GET", "/me");
  } catch (e) {
    token.clear();
    me = null;
    const refused = e instanceof Failure && e.status === 403;
    signInPage(refused ? "Refused: only operators may use the console." : `Sign-in failed: ${e.message}`);
    return;
  }
  nav.hidden = false;
  signout.hidden = false;
  who.textContent = `${me.email} (tenant ${me.tenant || "none"})`;
  if (!location.hash || location.hash === "#/") location.hash = "#/flows";
  else route();
}

signout.addEventListener("click", async () => {
  await signOut();
  me = null;
  location.hash = "";
  signInPage();
});

// ---- routing ----

function route() {
  for (const t of timers) clearInterval(t);
  timers = [];
  say("");
  if (!me) {
    if (token.get()) start();
    else signInPage();
    return;
  }
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  for (const a of nav.querySelectorAll("a")) {
    if (a.getAttribute("href") === `#/${parts[0]}`) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  const pages = { flows: flowsPage, runs: parts[1] ? () => runPage(parts[1]) : runsPage, approvals: approvalsPage, health: healthPage };
  (pages[parts[0]] || flowsPage)();
  main.focus();
}

window.addEventListener("hashchange", route);

// ---- flows ----

async function flowsPage() {
  show("Flows", h("p", {}, "Loading…"));
  let d;
  try {
    d = await api("GET", "/flows");
  } catch (e) {
    show("Flows", failure(e));
    return;
  }
  const units = d.units.map((u) => h("section", { "aria-labelledby": `unit-${u.name}` },
    h("h2", { id: `unit-${u.name}` }, u.name),
    u.flows.map(flowCard)));
  const server = (d.server || []).length
    ? h("section", {}, h("h2", {}, "Server flows"), table("Server flows", ["Flow", "Description", "Schedule"],
      d.server.map((f) => [h("code", {}, f.id), f.description || "", (f.tags && f.tags.schedule) || ""])))
    : null;
  show("Flows", units, server);
}

function flowCard(f) {
  const facts = [
    f.trigger ? h("span", { class: "chip" }, `${f.trigger.method} ${f.trigger.path}`) : h("span", { class: "chip" }, "RPC only"),
    h("span", { class: "chip" }, f.public ? "public" : "gated"),
    f.durable && h("span", { class: "chip" }, "durable"),
    f.stream && h("span", { class: "chip" }, "stream"),
    // Gates and other bind options tag the flow (scopes, rate limits, schedules).
    Object.entries(f.tags || {}).map(([k, v]) => h("span", { class: "chip" }, `${k}: ${typeof v == "string" ? v : JSON.stringify(v)}`)),
  ];
  const errors = Object.entries(f.errors || {});
  const details = h("details", {},
    h("summary", {}, "Schemas, errors and a form to call it"),
    h("h3", {}, "Input schema"), json(f.input, `Input schema of ${f.id}`),
    h("h3", {}, "Output schema"), json(f.output, `Output schema of ${f.id}`),
    errors.length ? [h("h3", {}, "Declared errors"), table(`Errors of ${f.id}`, ["Code", "HTTP status", "Data"],
      errors.map(([code, e]) => [h("code", {}, code), String(e.status), json(e.data)]))] : null,
    f.stream ? h("p", { class: "muted" }, "A streaming flow: call it from a client that reads its stream.") : callForm(f));
  return h("article", { class: "flow", "aria-labelledby": `flow-${f.id}` },
    h("h3", { id: `flow-${f.id}` }, h("code", {}, f.id)),
    f.description ? h("p", {}, f.description) : null,
    h("p", {}, facts), details);
}

function callForm(f) {
  const form = schemaForm(f.input);
  const out = h("div", { "aria-live": "polite", "aria-label": `Reply of ${f.id}` });
  const el = h("form", { class: "fields", "aria-label": `Call ${f.id}` }, form.el,
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, `Call ${f.id}`)));
  el.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const r = form.read();
    if (r.errors) {
      fill(out, h("p", { class: "error", role: "alert" }, r.errors.join("; ")));
      return;
    }
    fill(out, h("p", {}, "Calling…"));
    try {
      const { status: code, envelope } = await callFlow(f.rpc, r.value);
      fill(out, h("p", { class: envelope.error ? "error" : "ok" }, `HTTP ${code}${envelope.error ? " · " + envelope.error.code : ""}`),
        json(envelope, `Envelope of ${f.id}`));
    } catch (e) {
      fill(out, failure(e));
    }
  });
  return h("div", {}, h("h3", {}, "Call it"), el, out);
}

// ---- runs ----

const STATUSES = ["", "running", "parked", "completed", "failed", "cancelled"];

function runsPage() {
  const q = new URLSearchParams(location.hash.split("?")[1] || "");
  const statusSel = h("select", { id: "f-status" }, STATUSES.map((s) => h("option", { value: s, selected: q.get("status") === s }, s || "any")));
  const flow = h("input", { id: "f-flow", type: "text", value: q.get("flow") || "" });
  const tenant = h("input", { id: "f-tenant", type: "text", value: q.get("tenant") || "" });
  const filters = h("form", { class: "filters", "aria-label": "Filter runs" },
    h("label", { for: "f-status" }, "Status", statusSel),
    h("label", { for: "f-flow" }, "Flow", flow),
    h("label", { for: "f-tenant" }, "Tenant", tenant),
    h("button", { type: "submit" }, "Filter"));
  const list = h("div", { "aria-live": "polite" });
  const pager = h("div", { class: "actions" });
  let cursors = [""]; // the cursor of each page shown so far
  filters.addEventListener("submit", (ev) => {
    ev.preventDefault();
    cursors = [""];
    load();
  });
  async function load() {
    const p = new URLSearchParams();
    if (statusSel.value) p.set("status", statusSel.value);
    if (flow.value) p.set("flow", flow.value);
    if (tenant.value) p.set("tenant", tenant.value);
    const c = cursors[cursors.length - 1];
    if (c) p.set("cursor", c);
    let d;
    try {
      d = await api("GET", `/runs?${p}`);
    } catch (e) {
      fill(list, failure(e));
      return;
    }
    fill(list, d.runs.length === 0 ? h("p", {}, "No runs.") : table("Runs", ["Run", "Flow", "Status", "Principal", "Tenant", "Started", "Duration"],
      d.runs.map((r) => [h("a", { href: `#/runs/${encodeURIComponent(r.id)}` }, r.id), h("code", {}, r.flow),
        h("span", { class: `status-${r.status}` }, r.status), r.principal || "—", r.tenant || "—", when(r.createdAt), duration(r.durationMs)])));
    fill(pager, 
      cursors.length > 1 ? h("button", { type: "button", onclick: () => { cursors.pop(); load(); } }, "Newer runs") : null,
      d.nextCursor ? h("button", { type: "button", onclick: () => { cursors.push(d.nextCursor); load(); } }, "Older runs") : null);
  }
  show("Runs", filters, list, pager);
  // Live while open: the first page is read again every two seconds.
  every(2000, () => { if (cursors.length === 1) load(); });
}

async function runPage(id) {
  show(`Run ${id}`, h("p", {}, "Loading…"));
  const head = h("div", {});
  const io = h("section", {});
  const streams = h("section", { "aria-label": "Event log" });
  const steps = h("section", {});
  const parks = h("section", {});
  const followed = new Map();
  let done = false;
  async function load() {
    let d;
    try {
      d = await api("GET", `/runs/${encodeURIComponent(id)}`);
    } catch (e) {
      fill(head, failure(e));
      return;
    }
    const r = d.run;
    fill(head, table("Run", ["Flow", "Status", "Principal", "Tenant", "Started", "Duration", "Lease"],
      [[h("code", {}, r.flow), h("span", { class: `status-${r.status}` }, r.status), r.principal || "—", r.tenant || "—", when(r.createdAt), duration(r.durationMs),
        d.leaseOwner ? `${d.leaseOwner} until ${new Date(d.leaseExpires).toLocaleTimeString()}` : "—"]]),
    d.traceUrl ? h("p", {}, h("a", { href: d.traceUrl, rel: "noreferrer" }, "Trace")) : null);
    fill(io, h("h2", {}, "Input"), json(d.input, "Input"),
    d.output ? [h("h2", {}, "Output"), json(d.output, "Output")] : null,
    r.error ? [h("h2", {}, "Error"), h("pre", { class: "error" }, r.error)] : null);
    fill(steps, h("h2", {}, "Steps"), d.steps.length === 0 ? h("p", {}, "No recorded steps.") : table("Steps", ["#", "Name", "Result", "Recorded"],
      d.steps.map((s) => [String(s.position), h("code", {}, s.name), s.error ? h("span", { class: "error" }, s.error) : json(s.result), when(s.createdAt)])));
    fill(parks, h("h2", {}, "Parks"), d.parks.length === 0 ? h("p", {}, "No parks.") : table("Parks", ["Key", "Waits for", "Deadline", "Decision"],
      d.parks.map((p) => [h("code", {}, p.key), p.topic ? `topic ${p.topic}` : json(p.payload), when(p.deadline),
        p.decision ? `${p.decision.kind} at ${new Date(p.decision.decidedAt).toLocaleString()}` : "pending"])));
    for (const s of d.streams) {
      if (!followed.has(s.id)) {
        const t = new Transcript();
        followed.set(s.id, { after: 0, t, finished: false });
        streams.append(h("h3", {}, `Event log ${s.id}`), t.el);
      }
    }
    done = r.status === "completed" || r.status === "failed" || r.status === "cancelled";
  }
  async function follow() {
    for (const [sid, f] of followed) {
      if (f.finished) continue;
      try {
        const d = await api("GET", `/streams/${encodeURIComponent(sid)}/events?after=${f.after}`);
        for (const row of d.rows) {
          f.t.add(row.event);
          f.after = row.seq;
        }
        f.finished = d.finished;
      } catch (e) {
        say(e.message);
      }
    }
  }
  show(`Run ${id}`, head, h("h2", {}, "Transcript"), streams, io, steps, parks);
  await load();
  await follow();
  // Followed live: the log every second, the run's record every two while it can move.
  every(1000, follow);
  every(2000, () => { if (!done) load(); });
}

// ---- approvals ----

function approvalsPage() {
  const list = h("div", {});
  async function load() {
    let d;
    try {
      d = await api("GET", "/approvals");
    } catch (e) {
      fill(list, failure(e));
      return;
    }
    if (d.approvals.length === 0) {
      fill(list, h("p", {}, "No approval is waiting."));
      return;
    }
    // Keep cards that are open (someone may be editing); add the new ones.
    const keep = new Set(d.approvals.map((a) => `${a.runId}/${a.key}`));
    for (const c of [...list.children]) if (!keep.has(c.dataset.key)) c.remove();
    for (const a of d.approvals) {
      const k = `${a.runId}/${a.key}`;
      if (![...list.children].some((c) => c.dataset.key === k)) list.append(approvalCard(a, load));
    }
  }
  show("Approvals", list);
  every(3000, load);
}

function approvalCard(a, reload) {
  const title = a.tool ? `${a.tool} in ${a.flow}` : `${a.key} in ${a.flow}`;
  const out = h("div", { "aria-live": "polite" });
  const form = a.schema ? schemaForm(a.schema, a.args) : schemaForm(null, a.payload);
  const reasonID = `reason-${a.runId}-${a.key}`;
  const reason = h("input", { id: reasonID, type: "text" });
  async function send(decision) {
    const body = { runId: a.runId, key: a.key, decision };
    if (decision === "approve") {
      const r = form.read();
      if (r.errors) {
        fill(out, h("p", { class: "error", role: "alert" }, r.errors.join("; ")));
        return;
      }
      if (a.tool && JSON.stringify(r.value) !== JSON.stringify(a.args)) body.args = r.value;
    } else if (reason.value) body.reason = reason.value;
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        await api("POST", "/approvals/decide", body);
        fill(out, h("p", { class: "ok", role: "status" }, decision === "approve" ? "Approved." : "Denied."));
        setTimeout(reload, 800);
        return;
      } catch (e) {
        if (e instanceof Failure && e.code === "JournalLeaseBusy") {
          const wait = Math.max(1, e.retryAfter || 1);
          fill(out, h("p", { role: "status" }, `JournalLeaseBusy: another instance holds the run; retrying in ${wait} s.`));
          await new Promise((r) => setTimeout(r, wait * 1000));
          continue;
        }
        if (e instanceof Failure && e.code === "Conflict") {
          fill(out, h("p", { class: "error", role: "alert" }, "Conflict: this approval was already decided (or timed out)."));
          setTimeout(reload, 1500);
          return;
        }
        fill(out, failure(e));
        return;
      }
    }
  }
  return h("article", { class: "card", "data-key": `${a.runId}/${a.key}`, "aria-label": `Approval: ${title}` },
    h("h2", {}, title),
    h("p", {}, "Run ", h("a", { href: `#/runs/${encodeURIComponent(a.runId)}` }, a.runId), " · deadline ", when(a.deadline)),
    h("h3", {}, a.tool ? "Arguments (edit before approving)" : "Payload"),
    form.el,
    h("div", { class: "actions" },
      h("button", { type: "button", class: "primary", onclick: () => send("approve") }, "Approve"),
      h("label", { for: reasonID }, "Reason for a denial", reason),
      h("button", { type: "button", class: "danger", onclick: () => send("deny") }, "Deny")),
    out);
}

// ---- health ----

async function healthPage() {
  async function load() {
    let d;
    try {
      d = await api("GET", "/health");
    } catch (e) {
      show("Health", failure(e));
      return;
    }
    show("Health",
      h("h2", {}, "Journal"),
      d.journal ? h("p", {}, `Instance ${d.owner}; driver: ${d.capabilities.join(", ") || "in memory"}.`) : h("p", {}, "The app has no journal."),
      d.retention ? table("Retention", ["Finished logs", "Unfinished logs", "Channel messages"],
        [[duration(d.retention.finishedStreamsMs), duration(d.retention.unfinishedStreamsMs), duration(d.retention.channelMessagesMs)]]) : null,
      h("h2", {}, "Instances"),
      d.instances.length === 0 ? h("p", {}, "No instance holds a run.") : table("Instances", ["Instance", "Runs held", "Leases until"],
        d.instances.map((o) => [o.owner, String(o.runs), when(o.expires)])),
      h("h2", {}, "Leases"),
      d.leases.length === 0 ? h("p", {}, "No named lease is held.") : table("Leases", ["Lease", "Holder", "Until"],
        d.leases.map((l) => [h("code", {}, l.name), l.owner, when(l.expires)])),
      h("h2", {}, "Runs waiting for recovery"),
      d.recoverable.length === 0 ? h("p", {}, "None.") : h("ul", {}, d.recoverable.map((id) => h("li", {}, h("a", { href: `#/runs/${encodeURIComponent(id)}` }, id)))),
      h("h2", {}, "Scheduled flows"),
      d.scheduled.length === 0 ? h("p", {}, "None.") : table("Scheduled flows", ["Flow", "Schedule", "Next tick"],
        d.scheduled.map((s) => [h("code", {}, s.flow), s.schedule, when(s.nextTick)])));
  }
  every(5000, load);
}

route();
