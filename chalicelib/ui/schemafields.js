// A form's field for a field of a request's body, as the OpenAPI document
// describes it (contract.js, FieldSpec): text, a number, a box to tick, a
// choice, principals one a line, or JSON text; with the document's limits.
// The version editor builds a workflow's and each step's fields with it, so a
// field the service adds is offered without a change to the page. A value
// reads back as the API takes it, or as absent where the API's default is
// meant (`settled`: the same rule for what the API shows and what a form holds).
import { el, uid } from "./dom.js";

/** @typedef {import("./contract.js").FieldSpec} FieldSpec */

/** @typedef {{ value: unknown } | { problem: string }} Read What a field holds: a value (undefined: the default), or why it cannot be sent. */

/**
 * A form's field.
 * @typedef {object} SchemaField
 * @property {FieldSpec} spec
 * @property {HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement} control
 * @property {HTMLElement} node
 * @property {(message: string) => void} show Say what is wrong, by the field.
 * @property {() => void} clear
 * @property {() => Read} read
 */

/**
 * How a field is offered: its label, a hint, the words of its choices, and
 * whether a number is shown in hours (the API's seconds).
 * @typedef {{ label: string, hint?: string, choices?: { [value: string]: string }, hours?: boolean, lines?: number }} Words
 */

/**
 * A value as the API's default reads it: null, "", and an empty list where
 * a list must hold one item or more, are all "absent" (undefined).
 * @param {FieldSpec} spec
 * @param {unknown} value
 * @returns {unknown}
 */
export function settled(spec, value) {
  if (value === null || value === undefined || value === "") return undefined;
  if (Array.isArray(value) && !value.length && (spec.minItems || 0) > 0) return undefined;
  return value;
}

/**
 * A field for `spec`, holding `value`.
 * @param {FieldSpec} spec
 * @param {unknown} value
 * @param {Words} words
 * @returns {SchemaField}
 */
export function schemaField(spec, value, words) {
  const id = uid(spec.name.replace(/[^a-z0-9]+/gi, "-"));
  const errorId = uid("error");
  const hintId = words.hint ? uid("hint") : null;
  const control = controlFor(spec, value, words);
  control.id = id;
  control.setAttribute("name", spec.name);
  if (hintId) control.setAttribute("aria-describedby", hintId);
  const error = el("p", { class: "field-error", id: errorId, hidden: true });
  const label = el("label", { for: id }, words.label);
  const hint = hintId ? el("p", { class: "hint", id: hintId }, words.hint) : null;
  const node = spec.kind === "boolean" ? el("div", { class: "check" }, control, label, hint, error) : el("div", { class: "field" }, label, hint, control, error);
  const clear = () => {
    error.hidden = true;
    error.textContent = "";
    control.removeAttribute("aria-invalid");
    if (hintId) control.setAttribute("aria-describedby", hintId);
    else control.removeAttribute("aria-describedby");
  };
  /** @param {string} message */
  const show = (message) => {
    error.textContent = message;
    error.hidden = false;
    control.setAttribute("aria-invalid", "true");
    control.setAttribute("aria-describedby", [hintId, errorId].filter(Boolean).join(" "));
  };
  return { spec, control, node, show, clear, read: () => readControl(spec, control, words) };
}

/**
 * @param {FieldSpec} spec
 * @param {unknown} value
 * @param {Words} words
 * @returns {HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement}
 */
function controlFor(spec, value, words) {
  const given = settled(spec, value);
  switch (spec.kind) {
    case "boolean":
      return el("input", { type: "checkbox", checked: given === true });
    case "choice": {
      const select = el("select", {}, el("option", { value: "" }, words.choices?.[""] || "(the default)"));
      for (const choice of spec.choices) select.append(el("option", { value: choice }, words.choices?.[choice] || choice));
      select.value = typeof given === "string" ? given : "";
      return select;
    }
    case "number": {
      const scale = words.hours ? 3600 : 1;
      const bound = (/** @type {number | null} */ limit) => (limit === null ? null : String(limit / scale));
      const shown = typeof given === "number" ? String(given / scale) : "";
      return el("input", { type: "number", inputmode: "decimal", step: words.hours ? "any" : "1", min: bound(spec.minimum), max: bound(spec.maximum), value: shown });
    }
    case "principals":
      return textBox(Array.isArray(given) ? given.join("\n") : "", words.lines || 2, null);
    case "text":
      // A text that can be longer than a line is written in a box.
      if (spec.maxLength === null || spec.maxLength > 500) return textBox(typeof given === "string" ? given : "", words.lines || 2, spec.maxLength);
      return el("input", { type: "text", maxlength: spec.maxLength, value: typeof given === "string" ? given : "" });
    default: {
      // A short value (a condition) on one line; a longer one (a schema) indented.
      const compact = given === undefined ? "" : JSON.stringify(given);
      return textBox(compact.length > 80 ? JSON.stringify(given, null, 1) : compact, words.lines || 3, null);
    }
  }
}

/**
 * @param {string} text
 * @param {number} rows
 * @param {number | null} maxLength
 * @returns {HTMLTextAreaElement}
 */
function textBox(text, rows, maxLength) {
  const box = el("textarea", { rows: String(rows), spellcheck: "false", maxlength: maxLength });
  box.value = text;
  return box;
}

/**
 * @param {FieldSpec} spec
 * @param {HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement} control
 * @param {Words} words
 * @returns {Read}
 */
function readControl(spec, control, words) {
  const text = control.value;
  switch (spec.kind) {
    case "boolean":
      return { value: /** @type {HTMLInputElement} */ (control).checked };
    case "number": {
      if (!text.trim()) return { value: undefined };
      const number = Number(text) * (words.hours ? 3600 : 1);
      if (!Number.isFinite(number)) return { problem: "Write a number." };
      return { value: words.hours ? Math.round(number) : number };
    }
    case "principals":
      return { value: settled(spec, text.split("\n").map((line) => line.trim()).filter(Boolean)) };
    case "json": {
      if (!text.trim()) return { value: undefined };
      try {
        return { value: JSON.parse(text) };
      } catch {
        return { problem: "This is not JSON." };
      }
    }
    default:
      return { value: settled(spec, spec.kind === "text" && control instanceof HTMLInputElement ? text.trim() : text) };
  }
}
