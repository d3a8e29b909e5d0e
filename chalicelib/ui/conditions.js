// A step's condition (`when`): said in the service's own words
// (chalicelib/domain/conditions.py, text), and whether it held for a run.
// Kept apart from the views, so that how a condition reads and how it is
// judged change in one place.
import { el } from "./dom.js";
import { isObject } from "./format.js";

/** @typedef {import("./types.js").Step} Step */
/** @typedef {import("./types.js").Run} Run */

/**
 * A literal as conditions.text (and Python's json.dumps) writes it: JSON,
 * with ", " between a list's items. Numbers are JavaScript's: a float the
 * service would write 1000.0 reads 1000 here.
 * @param {unknown} value
 * @returns {string}
 */
export function literalText(value) {
  if (Array.isArray(value)) return `[${value.map(literalText).join(", ")}]`;
  if (isObject(value)) return `{${Object.entries(value).map(([key, each]) => `${JSON.stringify(key)}: ${literalText(each)}`).join(", ")}}`;
  return JSON.stringify(value) ?? String(value);
}

/**
 * A step's condition in words, as the service words it (chalicelib/domain/
 * conditions.py, text): `amount >= 1000 and country == "DE"`, `not vip`,
 * `country in ["DE", "AT"]`; nested and/or in parentheses.
 * @param {unknown} condition
 * @param {boolean} [top]
 * @returns {string}
 */
export function conditionText(condition, top = true) {
  if (!isObject(condition) || Object.keys(condition).length !== 1) return literalText(condition);
  const [[operator, operands]] = Object.entries(condition);
  if (operator === "var") return String(operands);
  if (operator === "!") return `not ${conditionText(Array.isArray(operands) ? operands[0] : operands, false)}`;
  if (!Array.isArray(operands)) return literalText(condition);
  if (operator === "and" || operator === "or") {
    const joined = operands.map((operand) => conditionText(operand, false)).join(` ${operator} `);
    return top ? joined : `(${joined})`;
  }
  const right = Array.isArray(operands[1]) ? literalText(operands[1]) : conditionText(operands[1], false);
  return `${conditionText(operands[0], false)} ${operator} ${right}`;
}

/**
 * When a step applies, in words: null for a step that always does.
 * @param {Step} step
 * @returns {string | null}
 */
export function stepCondition(step) {
  return step.when === null || step.when === undefined ? null : conditionText(step.when);
}

/**
 * When a step applies, on a workflow's card or (with `run`) in that run's
 * timeline: whether it held, where the run tells.
 * @param {Step} step
 * @param {Run | null} run
 * @returns {HTMLParagraphElement | null}
 */
export function stepWhen(step, run) {
  const words = stepCondition(step);
  const skip = run ? run.actions.find((action) => action.step_id === step.id && action.action === "skip") : null;
  if (skip) {
    const said = skip.comment || words;
    return said ? el("p", { class: "step-when" }, "Skipped: it applies only if ", el("code", { class: "condition" }, said), ", which does not hold for this run.") : el("p", { class: "step-when" }, "Skipped: its condition does not hold for this run.");
  }
  if (!words) return null;
  // Held for this round's input, the input in force: the step is current, or
  // decided in this round. A resubmit names the step where the last round was
  // sent back, which that round's input (not this one's) reached.
  const reached = run && (run.current_step_id === step.id || run.actions.some((action) => action.step_id === step.id && action.action !== "resubmit"));
  return el("p", { class: "step-when" }, "Applies only if ", el("code", { class: "condition" }, words), reached ? ", which holds for this run." : ".");
}
