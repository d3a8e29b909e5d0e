// What a workflow's next version changes of its newest, in words, one line
// each: the workflow's own fields, then its steps (added, renamed, each rule
// changed, removed, their order). The service carries a step over BY NAME
// (docs/versions.md): a step with a new name is a new step, so a rename is
// said as what it is to the service, the old step removed and a new one added.
import { settled } from "./schemafields.js";

/** @typedef {import("./contract.js").Contract} Contract */
/** @typedef {import("./types.js").Workflow} Workflow */
/** @typedef {{ [field: string]: unknown }} Definition A definition, as POST /workflows/{id}/versions takes it. */

export const VERSIONS_PATH = "/workflows/{workflow_id}/versions";
// What a publish sends besides the definition, and what the definition holds as a list.
const NOT_DEFINED = ["steps", "expected_version"];

/**
 * The definition of `workflow`'s version, as POST /workflows/{id}/versions
 * takes it: every field the document names, but those at the API's default.
 * @param {Workflow} workflow
 * @param {Contract} contract
 * @returns {Definition}
 */
export function definitionOf(workflow, contract) {
  /** @type {Definition} */
  const definition = {};
  const record = /** @type {{ [field: string]: unknown }} */ (/** @type {unknown} */ (workflow));
  for (const spec of contract.fields(VERSIONS_PATH)) {
    const value = NOT_DEFINED.includes(spec.name) ? undefined : settled(spec, record[spec.name]);
    if (value !== undefined) definition[spec.name] = value;
  }
  const specs = contract.stepFields(VERSIONS_PATH);
  definition.steps = workflow.steps.map((step) => {
    const rules = /** @type {{ [field: string]: unknown }} */ (/** @type {unknown} */ (step));
    /** @type {Definition} */
    const kept = {};
    for (const spec of specs) {
      const value = settled(spec, rules[spec.name]);
      if (value !== undefined) kept[spec.name] = value;
    }
    return kept;
  });
  return definition;
}

/**
 * A step's name as the service compares it: trimmed, NFC.
 * @param {unknown} name
 * @returns {string}
 */
export const stepKey = (name) => String(name).trim().normalize("NFC");

/**
 * The steps of a definition, each an object (a name alone is a step with the defaults).
 * @param {Definition} definition
 * @returns {Definition[]}
 */
export function stepsOf(definition) {
  const steps = Array.isArray(definition.steps) ? definition.steps : [];
  return steps.map((step) => (typeof step === "string" ? { name: step } : /** @type {Definition} */ (step)));
}

/**
 * What `after` changes of `before`, one line each. `origins` names, for each
 * step of `after`, the step of `before` it was edited from (the form knows
 * a rename; the JSON text does not: there a step is known by its name only).
 * @param {Definition} before
 * @param {Definition} after
 * @param {Array<string | null>} [origins]
 * @returns {string[]}
 */
export function changes(before, after, origins) {
  const lines = [];
  for (const field of fieldsOf([before, after], NOT_DEFINED)) {
    if (shown(before[field]) !== shown(after[field])) lines.push(`${field}: ${shown(before[field])} → ${shown(after[field])}`);
  }
  const was = stepsOf(before);
  const now = stepsOf(after);
  const find = (/** @type {Definition[]} */ steps, /** @type {unknown} */ name) => steps.find((step) => stepKey(step.name) === stepKey(name));
  /** @type {Set<Definition>} */
  const gone = new Set(was);
  /** @type {string[]} */
  const kept = [];
  now.forEach((step, index) => {
    const same = find(was, step.name);
    const origin = same ? null : origins?.[index];
    const from = same || (origin ? find(was, origin) : undefined);
    // A rename only where the old name is gone: else the service sees that name's step, moved or kept.
    const renamed = from && !same && !find(now, from.name) ? from : undefined;
    if (same) kept.push(stepKey(step.name));
    if (!same && !renamed) {
      lines.push(`Step ${index + 1}, ${step.name}: added`);
      return;
    }
    const old = /** @type {Definition} */ (same || renamed);
    gone.delete(old);
    if (renamed) {
      lines.push(`Step ${index + 1}, ${step.name}: renamed from ${old.name}. Steps carry over by name, so the service removes ${old.name} and adds ${step.name} as a new step.`);
    }
    for (const rule of fieldsOf([old, step], ["name"])) {
      const [a, b] = [shown(old[rule]), shown(step[rule])];
      if (a !== b) lines.push(`Step ${step.name}, ${rule}: ${a} → ${b}`);
    }
  });
  for (const old of gone) lines.push(`Step ${old.name}: removed`);
  const order = was.map((step) => stepKey(step.name)).filter((name) => kept.includes(name));
  if (order.join("\n") !== kept.join("\n")) lines.push(`Steps reordered: ${order.join(", ")} → ${kept.join(", ")}`);
  return lines;
}

/**
 * The fields of `definitions`, in the order they first hold them, but `left`.
 * @param {Definition[]} definitions
 * @param {string[]} left
 * @returns {string[]}
 */
function fieldsOf(definitions, left) {
  const names = new Set(definitions.flatMap((definition) => Object.keys(definition)));
  return [...names].filter((name) => !left.includes(name));
}

/**
 * A field's value in a change's words: absent, it is the API's default;
 * objects with their keys sorted, so that the order keys were written in is no change.
 * @param {unknown} value
 * @returns {string}
 */
function shown(value) {
  if (value === undefined || value === null) return "(the default)";
  return JSON.stringify(sorted(value));
}

/**
 * @param {unknown} value
 * @returns {unknown}
 */
function sorted(value) {
  if (Array.isArray(value)) return value.map(sorted);
  if (value === null || typeof value !== "object") return value;
  const entries = Object.entries(/** @type {{ [key: string]: unknown }} */ (value)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(entries.map(([key, each]) => [key, sorted(each)]));
}
