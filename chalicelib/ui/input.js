// What is being approved: a run's input, shown as text, the fields its
// workflow's schema names first (in its properties' order, with their
// titles), on the run's page in full and in the inbox in one line.
import { literalText } from "./conditions.js";
import { el } from "./dom.js";
import { isObject, isScalar, plural, time } from "./format.js";

/** @typedef {import("./types.js").JsonSchema} JsonSchema */
/** @typedef {import("./types.js").RunSummary} RunSummary */
/** @typedef {import("./types.js").Workflow} Workflow */
/** @typedef {{ key: string, label: string, value: unknown, schema: JsonSchema }} Shown One field of an input, as shown. */

/**
 * @param {unknown} schema
 * @returns {{ [name: string]: unknown }}
 */
export const schemaProperties = (schema) => (isObject(schema) && isObject(schema.properties) ? schema.properties : {});

/**
 * @param {unknown} node
 * @returns {JsonSchema}
 */
export const schemaOf = (node) => (isObject(node) ? node : {});

/**
 * A field's label: its schema's title where it has one, else its name.
 * @param {string} name
 * @param {unknown} property
 * @returns {string}
 */
export function fieldLabel(name, property) {
  const title = schemaOf(property).title;
  return typeof title === "string" && title.trim() ? title : name;
}

/**
 * An object's fields in the order to show them: those its schema names
 * first (in its properties' order, with their titles), then the others in
 * the object's own order.
 * @param {{ [key: string]: unknown }} data
 * @param {unknown} schema
 * @returns {Shown[]}
 */
function orderedFields(data, schema) {
  const properties = schemaProperties(schema);
  const named = Object.keys(properties).filter((key) => Object.hasOwn(data, key));
  const others = Object.keys(data).filter((key) => !Object.hasOwn(properties, key));
  return [...named, ...others].map((key) => ({ key, label: fieldLabel(key, properties[key]), value: data[key], schema: schemaOf(properties[key]) }));
}

/**
 * The address a text is, where it is an absolute http: or https: URL and
 * nothing else: the only text of an input that becomes a link.
 * @param {string} text
 * @returns {string | null}
 */
function webAddress(text) {
  if (!/^https?:\/\/\S+$/i.test(text)) return null;
  try {
    const url = new URL(text);
    return url.protocol === "https:" || url.protocol === "http:" ? url.href : null;
  } catch {
    return null;
  }
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * One value of an input, as text (a web address as a link; an object as a
 * nested list of its fields, a list of plain values as compact JSON).
 * @param {unknown} value
 * @param {JsonSchema} schema
 * @returns {Node | string | null}
 */
function inputValue(value, schema) {
  if (typeof value === "string") {
    const address = webAddress(value);
    if (address) return el("a", { href: address, rel: "noopener noreferrer" }, value);
    if (schema.format === "date-time" && RFC3339.test(value) && !Number.isNaN(Date.parse(value))) return time(value);
    return el("span", { class: "input-text" }, value);
  }
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (value === null) return "none";
  if (Array.isArray(value)) {
    if (!value.length) return "an empty list";
    if (value.every(isScalar)) return el("code", { class: "input-json" }, literalText(value));
    return el("ol", { class: "input-items" }, value.map((item) => el("li", {}, inputValue(item, schemaOf(schema.items)))));
  }
  if (isObject(value)) {
    const fields = orderedFields(value, schema);
    return fields.length ? inputList(fields) : "an empty object";
  }
  return String(value);
}

/**
 * @param {Shown[]} fields
 * @returns {HTMLDListElement}
 */
function inputList(fields) {
  return el("dl", { class: "input-fields" }, fields.map((field) => el("div", {}, el("dt", {}, field.label), el("dd", {}, inputValue(field.value, field.schema)))));
}

/**
 * The run's input on its page; nothing for an empty one.
 * @param {RunSummary} run
 * @param {Workflow | undefined} workflow
 * @returns {HTMLElement | null}
 */
export function inputSection(run, workflow) {
  const fields = isObject(run.input) ? orderedFields(run.input, workflow && workflow.input_schema) : [];
  if (!fields.length) return null;
  return el("section", { "aria-labelledby": "input-heading" }, el("h2", { id: "input-heading" }, "What is being approved"), inputList(fields));
}

const SUMMARY_FIELDS = 3;
const SUMMARY_TEXT = 60;

/**
 * @param {string} text
 * @returns {string}
 */
function shortText(text) {
  const characters = Array.from(text); // whole characters, not halves of a pair
  return characters.length > SUMMARY_TEXT ? `${characters.slice(0, SUMMARY_TEXT - 1).join("")}…` : text;
}

/**
 * One value in the inbox's line: plain text, cut short.
 * @param {unknown} value
 * @returns {string}
 */
function summaryValue(value) {
  if (typeof value === "string") return shortText(value);
  if (typeof value === "boolean") return value ? "yes" : "no";
  return shortText(value === null ? "none" : literalText(value));
}

/**
 * A run's input in one line, for the inbox: its first few fields,
 * "Amount (EUR): 5000 · Supplier: Acme"; null for an empty one.
 * @param {RunSummary} run
 * @param {Workflow | undefined} workflow
 * @returns {HTMLParagraphElement | null}
 */
export function inputSummary(run, workflow) {
  const fields = isObject(run.input) ? orderedFields(run.input, workflow && workflow.input_schema) : [];
  if (!fields.length) return null;
  const parts = fields.slice(0, SUMMARY_FIELDS).map((field) => `${field.label}: ${summaryValue(field.value)}`);
  if (fields.length > SUMMARY_FIELDS) parts.push(plural(fields.length - SUMMARY_FIELDS, "more field", "more fields"));
  return el("p", { class: "input-summary" }, parts.join(" · "));
}
