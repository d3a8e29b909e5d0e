// The fields of a run's input in the forms that start a run and resubmit one:
// a field per property of the workflow's input schema (a choice, a number, a
// box to tick, text of a kind, or a small box for JSON), or one box for the
// whole input in JSON without one; and the field an error of the service names.
import { literalText } from "./conditions.js";
import { el, uid } from "./dom.js";
import { isObject, localTimeText, wallTimeText } from "./format.js";
import { fieldLabel, schemaOf, schemaProperties } from "./input.js";

/** @typedef {import("./types.js").JsonSchema} JsonSchema */
/** @typedef {import("./types.js").Workflow} Workflow */

/** @typedef {{ value: unknown } | { absent: true } | { problem: string }} Read What a field holds. */

/**
 * One field of the input.
 * @typedef {object} Field
 * @property {string} name
 * @property {string} label
 * @property {string} pointer Its JSON Pointer in the input ("/amount"; "" for the whole input).
 * @property {HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement} control
 * @property {HTMLElement} node
 * @property {(message: string) => void} show
 * @property {() => void} clear
 * @property {() => Read} read
 */

/**
 * The input's fields, and what they hold.
 * @typedef {object} InputFields
 * @property {HTMLElement[]} nodes
 * @property {Field[]} fields
 * @property {() => ({ input: { [name: string]: unknown } } | { field: Field, problem: string })} read
 */

/**
 * @typedef {{ kind: "choice", choices: unknown[] } | { kind: "number", integer: boolean } | { kind: "boolean" }
 *   | { kind: "text", type: string } | { kind: "json", type: string | null }} Kind What to offer for a property.
 */

/**
 * @param {string} name
 * @returns {string}
 */
const pointerToken = (name) => String(name).replace(/~/g, "~0").replace(/\//g, "~1");

/** @type {{ [format: string]: string }} */
const STRING_INPUTS = { date: "date", "date-time": "datetime-local", email: "email", uri: "url" };

/**
 * The input type of a string's format: null for a format without one.
 * @param {unknown} format
 * @returns {string | null}
 */
const inputType = (format) => (typeof format === "string" && Object.hasOwn(STRING_INPUTS, format) ? STRING_INPUTS[format] : null);

/**
 * What to offer for one property: a choice, a number, a box to tick, text
 * of a kind, or (for lists, objects and mixed types) a small box for JSON.
 * @param {JsonSchema} property
 * @returns {Kind}
 */
function controlKind(property) {
  if (Array.isArray(property.enum) && property.enum.length) return { kind: "choice", choices: property.enum };
  if (Object.hasOwn(property, "const")) return { kind: "choice", choices: [property.const] };
  const types = [property.type].flat().filter((type) => typeof type === "string" && type !== "null");
  const type = types.length === 1 ? types[0] : !types.length && inputType(property.format) ? "string" : null;
  if (type === "number" || type === "integer") return { kind: "number", integer: type === "integer" };
  if (type === "boolean") return { kind: "boolean" };
  if (type === "string") return { kind: "text", type: inputType(property.format) || "text" };
  return { kind: "json", type: type ?? null };
}

/** @type {{ [type: string]: string }} */
const JSON_HINTS = {
  array: 'A list in JSON, for example ["first", "second"].',
  object: 'An object in JSON, for example {"name": "value"}.',
};

/**
 * What JSON.parse said was wrong.
 * @param {unknown} exception
 * @returns {string}
 */
const messageOf = (exception) => (exception instanceof Error ? exception.message : String(exception));

/**
 * The field of one property of the workflow's input schema, filled with
 * `current` (a run's input, when resubmitting it) or else its default.
 * @param {string} name
 * @param {JsonSchema} property
 * @param {boolean} required
 * @param {unknown} current
 * @returns {Field}
 */
function propertyField(name, property, required, current) {
  const id = uid("input");
  const label = fieldLabel(name, property);
  const how = controlKind(property);
  const given = isObject(current) && Object.hasOwn(current, name);
  const fallback = given ? current[name] : Object.hasOwn(property, "default") ? property.default : undefined;
  const hints = [];
  if (typeof property.description === "string" && property.description.trim()) hints.push(property.description.trim());
  if (how.kind === "json") hints.push((how.type && JSON_HINTS[how.type]) || "In JSON: text in double quotes, numbers, true, false or null as they are.");
  const hintId = hints.length ? uid("hint") : null;
  const errorId = uid("error");
  /** @type {HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement} */
  let control;
  if (how.kind === "choice") {
    const options = how.choices.map((choice, index) => el("option", { value: String(index), selected: fallback !== undefined && literalText(choice) === literalText(fallback) }, typeof choice === "string" ? choice : literalText(choice)));
    control = el("select", { name }, el("option", { value: "" }, required ? "Choose one" : "Not given"), options);
  } else if (how.kind === "number") {
    control = el("input", {
      type: "number",
      name,
      step: how.integer ? "1" : "any",
      min: typeof property.minimum === "number" ? String(property.minimum) : null,
      max: typeof property.maximum === "number" ? String(property.maximum) : null,
      inputmode: how.integer ? "numeric" : "decimal",
      value: typeof fallback === "number" ? String(fallback) : null,
    });
  } else if (how.kind === "boolean") {
    control = el("input", { type: "checkbox", name, checked: fallback === true });
  } else if (how.kind === "text") {
    const value = typeof fallback !== "string" ? null : how.type === "datetime-local" ? (given ? wallTimeText(fallback) : null) : fallback;
    const maxLength = Number.isInteger(property.maxLength) ? String(property.maxLength) : null;
    control = el("input", { type: how.type, name, value, maxlength: maxLength, autocomplete: "off", spellcheck: how.type === "text" ? null : "false" });
  } else {
    control = el("textarea", { name, rows: "3", spellcheck: "false", autocomplete: "off" });
    if (fallback !== undefined) control.value = JSON.stringify(fallback);
  }
  control.id = id;
  if (required) control.required = true;
  /**
   * @param {boolean} withError
   * @returns {string | null}
   */
  const describedBy = (withError) => [hintId, withError ? errorId : null].filter(Boolean).join(" ") || null;
  if (hintId) control.setAttribute("aria-describedby", hintId);
  const error = el("p", { class: "field-error", id: errorId, hidden: true });
  const labelNode = el("label", { for: id }, label, required ? el("span", { class: "required" }, " (required)") : null);
  const hint = hintId ? el("p", { class: "hint", id: hintId }, hints.join(" ")) : null;
  const node = how.kind === "boolean" ? el("div", { class: "check" }, control, labelNode, hint, error) : el("div", { class: "field" }, labelNode, hint, control, error);
  /** @type {Field} */
  const field = {
    name,
    label,
    pointer: `/${pointerToken(name)}`,
    control,
    node,
    show(message) {
      error.textContent = message;
      error.hidden = false;
      control.setAttribute("aria-invalid", "true");
      control.setAttribute("aria-describedby", /** @type {string} */ (describedBy(true)));
    },
    clear() {
      error.textContent = "";
      error.hidden = true;
      control.removeAttribute("aria-invalid");
      const rest = describedBy(false);
      if (rest) control.setAttribute("aria-describedby", rest);
      else control.removeAttribute("aria-describedby");
    },
    read() {
      if (how.kind === "boolean") return { value: /** @type {HTMLInputElement} */ (control).checked };
      if (how.kind === "choice") return control.value === "" ? { absent: true } : { value: how.choices[Number(control.value)] };
      if (how.kind === "number") {
        if (control.validity.badInput) return { problem: `${label}: this is not a number.` };
        return control.value === "" ? { absent: true } : { value: Number(control.value) };
      }
      if (how.kind === "json") {
        if (!control.value.trim()) return { absent: true };
        try {
          return { value: JSON.parse(control.value) };
        } catch (exception) {
          return { problem: `${label}: this is not valid JSON (${messageOf(exception)}).` };
        }
      }
      if (control.value === "") return { absent: true };
      if (how.type === "datetime-local") {
        const text = localTimeText(control.value);
        return text ? { value: text } : { problem: `${label}: this is not a date and time.` };
      }
      return { value: control.value };
    },
  };
  control.addEventListener("input", () => field.clear());
  return field;
}

/**
 * Without a schema to follow: one box for the whole input, in JSON (filled
 * with `current`, a run's input, when resubmitting it).
 * @param {unknown} current
 * @returns {Field}
 */
function wholeInputField(current) {
  const id = uid("input");
  const hintId = uid("hint");
  const errorId = uid("error");
  const control = el("textarea", { id, name: "input", rows: "4", spellcheck: "false", autocomplete: "off", "aria-describedby": hintId });
  if (isObject(current) && Object.keys(current).length) control.value = JSON.stringify(current, null, 2);
  const error = el("p", { class: "field-error", id: errorId, hidden: true });
  /** @type {Field} */
  const field = {
    name: "input",
    label: "Input (JSON object)",
    pointer: "",
    control,
    node: el(
      "div",
      { class: "field" },
      el("label", { for: id }, "Input (JSON object)"),
      el("p", { class: "hint", id: hintId }, 'Optional: what is being approved, as a JSON object, for example {"amount": 5000, "supplier": "Acme"}.'),
      control,
      error,
    ),
    show(message) {
      error.textContent = message;
      error.hidden = false;
      control.setAttribute("aria-invalid", "true");
      control.setAttribute("aria-describedby", `${hintId} ${errorId}`);
    },
    clear() {
      error.textContent = "";
      error.hidden = true;
      control.removeAttribute("aria-invalid");
      control.setAttribute("aria-describedby", hintId);
    },
    read() {
      const text = control.value.trim();
      if (!text) return { value: {} };
      let value;
      try {
        value = JSON.parse(text);
      } catch (exception) {
        return { problem: `This is not valid JSON (${messageOf(exception)}). Nothing was sent.` };
      }
      return isObject(value) ? { value } : { problem: 'The input must be a JSON object, in braces: {"name": "value"}. Nothing was sent.' };
    },
  };
  control.addEventListener("input", () => field.clear());
  return field;
}

/**
 * The start form's input: a field per property of the workflow's schema, or
 * one JSON box without one. read() gives {input} or {field, problem}.
 * @param {Workflow} workflow
 * @param {unknown} [current]
 * @returns {InputFields}
 */
export function runInputFields(workflow, current) {
  const schema = workflow.input_schema;
  const properties = Object.entries(schemaProperties(schema));
  if (!schema || !properties.length) {
    const box = wholeInputField(current);
    return {
      nodes: [box.node],
      fields: [box],
      read() {
        const read = box.read();
        if ("problem" in read) return { field: box, problem: read.problem };
        return { input: /** @type {{ [name: string]: unknown }} */ ("value" in read ? read.value : {}) };
      },
    };
  }
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const fields = properties.map(([name, property]) => propertyField(name, schemaOf(property), required.has(name), current));
  // Fields of a run's input that the schema does not name: kept as they are.
  const others = isObject(current) ? Object.entries(current).filter(([name]) => !Object.hasOwn(schemaProperties(schema), name)) : [];
  return {
    nodes: [el("fieldset", { class: "input-fieldset" }, el("legend", {}, "What is being approved"), fields.map((field) => field.node))],
    fields,
    read() {
      /** @type {{ [name: string]: unknown }} */
      const input = Object.fromEntries(others);
      for (const field of fields) {
        const read = field.read();
        if ("problem" in read) return { field, problem: read.problem };
        if ("value" in read) input[field.name] = read.value;
      }
      return { input };
    },
  };
}

/**
 * The field an error of the service is about: the one whose JSON Pointer
 * ("/amount") the message names, the longest where several do.
 * @param {Field[]} fields
 * @param {string} message
 * @returns {Field | null}
 */
export function fieldOfError(fields, message) {
  if (!message.startsWith("'input'")) return null;
  const named = fields.filter((field) => {
    if (field.pointer === "") return true; // the whole input
    const escaped = field.pointer.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    return new RegExp(` at ${escaped}(?=[/:;,]|$)`).test(message);
  });
  return named.sort((first, second) => second.pointer.length - first.pointer.length)[0] || null;
}

/**
 * JSON with its objects' keys in order: two inputs compare by it.
 * @param {unknown} value
 * @returns {string}
 */
export function stableText(value) {
  if (Array.isArray(value)) return `[${value.map(stableText).join(",")}]`;
  if (isObject(value)) return `{${Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${stableText(value[key])}`).join(",")}}`;
  return JSON.stringify(value) ?? "null";
}
