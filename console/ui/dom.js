// dom.js: building elements without innerHTML, so no text of the app is ever parsed as
// markup, and nothing inline the Content-Security-Policy would refuse.

/** h builds an element: h("a", {href: "#"}, "text", child). */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

/** fill replaces el's children with children (arrays flattened, null and false left out). */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** json renders a value as indented JSON in a <pre>. */
export function json(v, label) {
  return h("pre", { "aria-label": label }, JSON.stringify(v, null, 2));
}

/** when renders an instant for people, in their locale and time zone. */
export function when(t) {
  if (!t || t.startsWith("0001-")) return "—";
  const d = new Date(t);
  return h("time", { datetime: t }, d.toLocaleString());
}

/** duration renders milliseconds as "1.2 s", "3 min 4 s", … */
export function duration(ms) {
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.round(s - m * 60)} s`;
  const hours = Math.floor(m / 60);
  if (hours < 48) return `${hours} h ${m % 60} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

/** table renders rows under a header with a caption for screen readers. */
export function table(caption, head, rows) {
  return h("table", {},
    h("caption", { class: "skip" }, caption),
    h("thead", {}, h("tr", {}, head.map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows.map((r) => h("tr", {}, r.map((c) => h("td", {}, c))))));
}
