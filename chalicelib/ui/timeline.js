// A run's steps as a timeline (done, skipped, current, to come; where it
// ended), its current round only, and its whole history, every round.
import { stepWhen } from "./conditions.js";
import { el } from "./dom.js";
import { capitalised, time } from "./format.js";
import { STATUS_TEXT, approvalsSoFar, stepRules } from "./steps.js";

/** @typedef {import("./types.js").Action} Action */
/** @typedef {import("./types.js").ActionName} ActionName */
/** @typedef {import("./types.js").Run} Run */
/** @typedef {import("./types.js").Step} Step */
/** @typedef {import("./types.js").Workflow} Workflow */

// Every action a caller takes (types.js's ActionName), in words.
/** @type {{ [action: string]: string }} */
const DECIDED = /** @satisfies {{ [action in ActionName]: string }} */ ({ approve: "approved", reject: "rejected", cancel: "cancelled the run", return: "sent it back for changes", resubmit: "resubmitted the run", reassign: "reassigned the step", move: "moved the run to a newer version" });
// How a step's own list of decisions says each ("Approved by ann").
/** @type {{ [action: string]: string }} */
const STEP_DECIDED = /** @satisfies {{ [action in ActionName]: string }} */ ({ approve: "Approved", reject: "Rejected", cancel: "Cancelled the run", return: "Sent back for changes", resubmit: "Resubmitted", reassign: "Reassigned", move: "Moved here" });
// Who acts for the service itself: a step skipped by its condition.
const SERVICE_ACTORS = new Map([["system:conditions", "The service"]]);

/**
 * The run with the actions of its current round only: what its steps show.
 * @param {Run} run
 * @returns {Run}
 */
function inThisRound(run) {
  if (typeof run.round !== "number") return run;
  return { ...run, actions: run.actions.filter((action) => (typeof action.round === "number" ? action.round : 1) === run.round) };
}

/**
 * Each step's state in this run: done, skipped, current, to come; where it ended.
 * @param {Run} run
 * @param {Step[]} steps
 * @returns {Array<[string, string]>} Each step's state (its badge's class) and its words.
 */
function stepStates(run, steps) {
  const decided = run.actions.filter((action) => action.action !== "skip" && action.action !== "resubmit");
  const last = decided[decided.length - 1];
  const endedAt = last ? steps.find((step) => step.id === last.step_id) : null;
  const currentOrder = run.current_step ? run.current_step.step_order : null;
  const skipped = new Set(run.actions.filter((action) => action.action === "skip").map((action) => action.step_id));
  return steps.map((step) => {
    if (skipped.has(step.id)) return ["skipped", "Skipped"];
    if (run.status === "in_progress" || run.status === "returned") {
      if (run.status === "returned" && step.step_order === currentOrder) return ["returned", "Sent back here"];
      if (currentOrder !== null && step.step_order < currentOrder) return ["done", "Done"];
      return step.step_order === currentOrder ? ["current", "Current step"] : ["upcoming", "To come"];
    }
    if (run.status === "completed") return ["done", "Done"];
    if (!endedAt || step.step_order > endedAt.step_order) return ["upcoming", "Not reached"];
    if (step.step_order < endedAt.step_order) return ["done", "Done"];
    return [run.status, run.status === "rejected" ? "Rejected here" : `${STATUS_TEXT[run.status] || run.status} here`];
  });
}

/**
 * The run's steps, as its current round went through them.
 * @param {Run} whole
 * @param {Workflow} workflow
 * @returns {HTMLElement}
 */
export function timeline(whole, workflow) {
  const run = inThisRound(whole);
  const states = stepStates(run, workflow.steps);
  const items = workflow.steps.map((step, index) => {
    const [state, label] = states[index];
    const decisions = run.actions.filter((action) => action.step_id === step.id && action.action !== "skip" && action.action !== "resubmit");
    return el(
      "li",
      { class: `step step-${state}`, "aria-current": state === "current" ? "step" : null },
      el("p", { class: "step-head" }, el("span", { class: "step-name" }, step.name), " ", el("span", { class: `badge badge-${state}` }, label)),
      stepWhen(step, run),
      stepRules(step),
      state === "current" && approvalsSoFar(run) ? el("p", {}, `Approvals so far: ${approvalsSoFar(run)}.`) : null,
      decisions.length
        ? el(
            "ul",
            { class: "step-decisions" },
            decisions.map((action) => el("li", {}, `${STEP_DECIDED[action.action] || capitalised(action.action)} by ${action.actor}${behalfText(action)}, `, time(action.created_at))),
          )
        : null,
    );
  });
  const round = typeof whole.round === "number" && whole.round > 1 ? el("p", {}, `Round ${whole.round}: the approvals of earlier rounds count no more, and the history keeps them.`) : null;
  return el("section", { "aria-labelledby": "steps-heading" }, el("h2", { id: "steps-heading" }, "Steps"), round, el("ol", { class: "timeline" }, items));
}

/**
 * " on behalf of bob", for an action made for a delegator ("" otherwise).
 * @param {Action} action
 * @returns {string}
 */
function behalfText(action) {
  return typeof action.on_behalf_of === "string" && action.on_behalf_of ? ` on behalf of ${action.on_behalf_of}` : "";
}

/**
 * @param {string} actor
 * @returns {string}
 */
const actorName = (actor) => SERVICE_ACTORS.get(actor) || actor;

/**
 * @param {Action} action
 * @returns {HTMLLIElement}
 */
function historyEntry(action) {
  if (action.action === "skip") {
    return el(
      "li",
      { class: "history-skip" },
      el("p", { class: "history-head" }, time(action.created_at), " ", el("strong", {}, actorName(action.actor)), ` skipped ${action.step_name}`),
      el("p", { class: "history-why" }, action.comment ? ["It applies only if ", el("code", { class: "condition" }, action.comment), ", which does not hold for this run."] : "Its condition does not hold for this run."),
    );
  }
  const what = action.action === "resubmit" ? ` resubmitted the run${action.input_digest ? " with a new input" : ""}` : ` ${DECIDED[action.action] || action.action} at ${action.step_name}`;
  return el(
    "li",
    { class: `history-${action.action}` },
    el("p", { class: "history-head" }, time(action.created_at), " ", el("strong", {}, action.actor), behalfText(action), what),
    action.comment ? el("blockquote", { class: "comment" }, action.comment) : null,
  );
}

/**
 * Every action of the run; past round 1, under a heading per round.
 * @param {Run} run
 * @returns {HTMLElement}
 */
export function historySection(run) {
  /**
   * @param {Action} action
   * @returns {number}
   */
  const roundOf = (action) => (typeof action.round === "number" ? action.round : 1);
  const rounds = [...new Set(run.actions.map(roundOf))];
  let content;
  if (!run.actions.length) content = el("p", { class: "empty" }, "No decision yet.");
  else if (rounds.length === 1 && rounds[0] === 1) content = el("ol", { class: "history" }, run.actions.map(historyEntry));
  else {
    content = rounds.flatMap((round) => [
      el("h3", { class: "history-round" }, `Round ${round}`),
      el("ol", { class: "history" }, run.actions.filter((action) => roundOf(action) === round).map(historyEntry)),
    ]);
  }
  return el("section", { "aria-labelledby": "history-heading" }, el("h2", { id: "history-heading" }, "History"), content);
}
