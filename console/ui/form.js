// form.js: a form generated from a JSON Schema object: one labelled field per property
// (number, checkbox, select for an enum, text, or JSON for anything else), and the
// value it holds read back as JSON, checked against the schema's basic rules.

import { h } from "./dom.js";

let seq = 0;

/** schemaForm returns {el, read} for schema; read() returns {value} or {errors}. */
export function schemaForm(schema, initial) {
  const props = (schema && schema.properties) || {};
  const required = new Set((schema && schema.required) || []);
  const names = Object.keys(props);
  const fields = [];
  const el = h("div", { class: "fields-group" });
  if (names.length === 0) {
    const id = `f${++seq}`;
    const area = h("textarea", { id, rows: 4, spellcheck: "false" }, JSON.stringify(initial ?? {}, null, 2));
    el.append(h("label", { for: id }, "Input (JSON)", area));
    return { el, read: () => parse(area.value, "input") };
  }
  for (const name of names) {
    const p = props[name] || {};
    const id = `f${++seq}`;
    const type = Array.isArray(p.type) ? p.type.find((t) => t !== "null") : p.type;
    const init = initial ? initial[name] : undefined;
    let input;
    let get;
    if (Array.isArray(p.enum)) {
      input = h("select", { id }, !required.has(name) && h("option", { value: "" }, "—"),
        p.enum.map((v) => h("option", { value: JSON.stringify(v), selected: init !== undefined && JSON.stringify(init) === JSON.stringify(v) }, String(v))));
      get = () => (input.value === "" ? undefined : { value: JSON.parse(input.value) });
    } else if (type === "number" || type === "integer") {
      input = h("input", { id, type: "number", step: type === "integer" ? "1" : "any", value: init ?? "" });
      get = () => {
        if (input.value === "") return undefined;
        const n = Number(input.value);
        if (!Number.isFinite(n) || (type === "integer" && !Number.isInteger(n))) return { error: `${name} must be ${type === "integer" ? "a whole number" : "a number"}` };
        return { value: n };
      };
    } else if (type === "boolean") {
      input = h("input", { id, type: "checkbox", checked: init === true });
      get = () => ({ value: input.checked });
    } else if (type === "string") {
      input = h("input", { id, type: "text", value: init ?? "", minlength: p.minLength, maxlength: p.maxLength });
      get = () => {
        if (input.value === "" && !required.has(name)) return undefined;
        if (p.minLength && input.value.length < p.minLength) return { error: `${name} must have at least ${p.minLength} characters` };
        return { value: input.value };
      };
    } else {
      input = h("textarea", { id, rows: 3, spellcheck: "false" }, init === undefined ? "" : JSON.stringify(init, null, 2));
      get = () => (input.value.trim() === "" ? undefined : parse(input.value, name));
    }
    const hint = p.description ? h("span", { class: "muted" }, p.description) : null;
    const label = type === "boolean"
      ? h("label", { class: "inline", for: id }, input, name)
      : h("label", { for: id }, `${name}${required.has(name) ? " (required)" : ""}`, hint, input);
    fields.push({ name, get });
    el.append(label);
  }
  return {
    el,
    read() {
      const value = {};
      const errors = [];
      for (const f of fields) {
        const r = f.get();
        if (r === undefined) {
          if (required.has(f.name)) errors.push(`${f.name} is required`);
        } else if (r.error) errors.push(r.error);
        else value[f.name] = r.value;
      }
      return errors.length ? { errors } : { value };
    },
  };
}

function parse(text, what) {
  try {
    return { value: JSON.parse(text) };
  } catch (e) {
    return { error: `${what} is not JSON: ${e.message}`, errors: [`${what} is not JSON: ${e.message}`] };
  }
}
