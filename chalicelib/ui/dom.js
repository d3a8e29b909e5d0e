// The page's elements: `el` makes them (what the API sends becomes text, never
// markup), and the two live regions say what happened: the alert for what
// went wrong, the status for what was done.

/** @typedef {string | number | Node | null | undefined | false} Child */
/** @typedef {Child | Child[]} Children A child, or a list of them (flattened one level). */
/** @typedef {{ [name: string]: unknown }} Attributes Attributes; `on*` ones are listeners. */

/**
 * A field of a form that can say what is wrong with it.
 * @typedef {object} Explained
 * @property {HTMLElement} control
 * @property {(message: string) => void} show
 */

/**
 * An element of the page the document always has.
 * @param {string} id
 * @returns {HTMLElement}
 */
export function byId(id) {
  const node = document.getElementById(id);
  if (!node) throw new Error(`The page has no #${id}.`);
  return node;
}

export const view = byId("view");
export const alertRegion = byId("alert");
export const statusRegion = byId("status");

let ids = 0;

/**
 * An id of its own for an element: "comment-7".
 * @param {string} prefix
 * @returns {string}
 */
export const uid = (prefix) => `${prefix}-${++ids}`;

/**
 * An element with attributes (on* are listeners) and children (strings become text).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Attributes} attributes
 * @param {...Children} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), /** @type {EventListener} */ (value));
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/**
 * A definition list of [term, description] pairs; empty descriptions are left out.
 * @param {Array<[string, Child]>} pairs
 * @returns {HTMLDListElement}
 */
export function facts(pairs) {
  const rows = pairs.filter(([, value]) => value !== null && value !== undefined && value !== "");
  return el("dl", { class: "facts" }, rows.map(([term, value]) => el("div", {}, el("dt", {}, term), el("dd", {}, value))));
}

/** @param {HTMLElement | null | undefined} node */
export function focus(node) {
  if (node) node.focus({ preventScroll: false });
}

// -- messages ------------------------------------------------------------------------

/** @param {string} text */
export function say(text) {
  statusRegion.textContent = text;
}

/** @param {string} text */
export function warn(text) {
  alertRegion.textContent = text;
}

export function clearMessages() {
  say("");
  warn("");
}

/**
 * Say what is wrong by the field it is about, or else on the form's `problem` line.
 * @param {HTMLElement} problem
 * @returns {(field: Explained | null, message: string) => void}
 */
export function explainer(problem) {
  return (field, message) => {
    if (field) {
      field.show(message);
      return focus(field.control);
    }
    problem.textContent = message;
    problem.hidden = false;
    focus(problem);
  };
}

/**
 * A form refused before sending: why, and the field to fix focused.
 * @param {HTMLElement} field
 * @param {string} why
 */
export function refuse(field, why) {
  warn(why);
  focus(field);
}
