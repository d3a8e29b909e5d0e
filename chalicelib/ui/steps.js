// A run's status and a step in words, as the inbox, a run's page and the
// workflows' cards all say them: "2 of 3: Finance", "1 of 2" approvals, the
// deadline (overdue once passed), who may decide and what the deadline does.
import { el } from "./dom.js";
import { duration, isPast, plural, series, time, whoMayDecide } from "./format.js";

/** @typedef {import("./types.js").Action} Action */
/** @typedef {import("./types.js").RunStatus} RunStatus */
/** @typedef {import("./types.js").RunSummary} RunSummary */
/** @typedef {import("./types.js").Step} Step */
/** @typedef {import("./types.js").Workflow} Workflow */

// Every status of types.js's RunStatus, which tests/unit/test_lifecycle.py holds to the service's.
/** @type {{ [status: string]: string }} */
export const STATUS_TEXT = /** @satisfies {{ [status in RunStatus]: string }} */ ({ in_progress: "In progress", returned: "Sent back for changes", completed: "Completed", rejected: "Rejected", cancelled: "Cancelled" });

/**
 * @param {string} status
 * @returns {string}
 */
export const statusText = (status) => STATUS_TEXT[status] || status;

/**
 * "2 of 3: Finance" (or "2: Finance" without the workflow).
 * @param {Step} step
 * @param {Workflow | null | undefined} workflow
 * @returns {string}
 */
export function stepPosition(step, workflow) {
  const count = workflow ? Math.max(workflow.steps.length, step.step_order) : null;
  return count ? `${step.step_order} of ${count}: ${step.name}` : `${step.step_order}: ${step.name}`;
}

/**
 * "1 of 2": the current step's approvals against its quorum; null without a step.
 * @param {RunSummary} run
 * @returns {string | null}
 */
export function approvalsSoFar(run) {
  const step = run.current_step;
  if (!step || typeof step.required_approvals !== "number") return null;
  const approved = run.current_step_approved_by || [];
  return `${approved.length} of ${step.required_approvals}`;
}

/**
 * A deadline, marked overdue once passed; null for none.
 * @param {string | null} iso
 * @returns {HTMLSpanElement | null}
 */
export function deadline(iso) {
  if (!iso) return null;
  return el("span", {}, time(iso), isPast(iso) ? el("strong", { class: "badge badge-overdue" }, "Overdue") : null);
}

/**
 * What happens when a step's deadline passes, in words.
 * @param {Step} step
 * @returns {string}
 */
function deadlineOutcome(step) {
  switch (step.on_deadline ?? null) {
    case null:
    case "":
      return "";
    case "remind":
      return ", then its approvers are reminded";
    case "reject":
      return ", then the run is rejected";
    case "escalate":
      return `, then ${whoMayDecide(step.escalate_to)} may decide it too`;
    default:
      return `, then ${String(step.on_deadline).replace(/_/g, " ")}`;
  }
}

/**
 * Who may decide a step, how many approvals it needs, its deadline.
 * @param {Step} step
 * @returns {HTMLParagraphElement | null}
 */
export function stepRules(step) {
  const rules = [];
  if (Array.isArray(step.approvers)) rules.push(`Who may decide: ${whoMayDecide(step.approvers)}.`);
  if (typeof step.required_approvals === "number") rules.push(` Needs ${plural(step.required_approvals, "approval", "approvals")}.`);
  if (typeof step.deadline_seconds === "number") rules.push(` Deadline: ${duration(step.deadline_seconds)} after it starts${deadlineOutcome(step)}.`);
  return rules.length ? el("p", { class: "step-rules" }, rules) : null;
}

/**
 * The steps skipped among `actions`, in words ("" for none).
 * @param {Action[]} actions
 * @returns {string}
 */
export function skippedText(actions) {
  const names = actions.filter((action) => action.action === "skip").map((action) => action.step_name);
  if (!names.length) return "";
  return names.length === 1 ? ` Skipped, as its condition does not hold: ${names[0]}.` : ` Skipped, as their conditions do not hold: ${series(names, "and")}.`;
}
