// The forms of a run's page: decide the current step (Approve, Reject, with
// a comment), send the run back for changes, change and resubmit it, cancel
// it. Each decision sends the step and round it was made on
// (expected_step_id, expected_round), for whom (on_behalf_of) and a fresh
// Idempotency-Key, so a stale page cannot decide another step and a retried
// request is not recorded twice. The run's page sends it (`act`) and shows
// the outcome; each form says it in words (`describe`).
import { newKey, request, statusOf, submit } from "./api.js";
import { ADMIN_GROUP, MODE, me, session, signedIn } from "./caller.js";
import { el, explainer, refuse, uid } from "./dom.js";
import { asSentence, capitalised, plural, sameName, whoMayDecide } from "./format.js";
import { fieldOfError, runInputFields, stableText } from "./inputform.js";
import { go } from "./router.js";
import { approvalsSoFar, skippedText, statusText, stepPosition } from "./steps.js";

/** @typedef {import("./contract.js").Contract} Contract */
/** @typedef {import("./types.js").DecisionName} ActionName */
/** @typedef {import("./types.js").PermissionsAnswer} PermissionsAnswer */
/** @typedef {import("./types.js").Run} Run */
/** @typedef {import("./types.js").Step} Step */
/** @typedef {import("./types.js").Workflow} Workflow */
/** @typedef {{ [field: string]: unknown }} Body */

/**
 * How the run's page sends a decision and shows its outcome.
 * @typedef {(form: HTMLFormElement, run: Run, contract: Contract, action: ActionName, body: Body, draft: string,
 *   describe: (updated: Run, fresh: Workflow) => string) => Promise<void>} Act
 */

/**
 * Whom a decision allowed by `permissions` is made for: the delegator, or null for oneself.
 * @param {PermissionsAnswer} permissions
 * @param {ActionName} action
 * @returns {string | null}
 */
function actingFor(permissions, action) {
  const permission = permissions && !("failed" in permissions) ? permissions[action] : null;
  return permission && permission.allowed && typeof permission.on_behalf_of === "string" && permission.on_behalf_of ? permission.on_behalf_of : null;
}

/**
 * What every decision on the current step sends: the step and round it was
 * made on, who decides, and for whom.
 * @param {Run} run
 * @param {PermissionsAnswer} permissions
 * @param {ActionName} action
 * @returns {Body}
 */
function decisionBody(run, permissions, action) {
  const caller = signedIn();
  /** @type {Body} */
  const body = { expected_step_id: /** @type {Step} */ (run.current_step).id };
  if (typeof run.round === "number") body.expected_round = run.round;
  if (MODE === "none") {
    body.actor = caller.actor;
    if (caller.groups.length) body.groups = caller.groups;
  }
  const behalf = actingFor(permissions, action);
  if (behalf) body.on_behalf_of = behalf;
  return body;
}

/**
 * @param {Body} body
 * @returns {string}
 */
const forWhom = (body) => (body.on_behalf_of ? `, on behalf of ${body.on_behalf_of}` : "");

/**
 * Approve or reject the current step, with a comment.
 * @param {Run} run
 * @param {Workflow} workflow
 * @param {Contract} contract
 * @param {{ approve: boolean, reject: boolean }} offer
 * @param {PermissionsAnswer} permissions
 * @param {string} draft
 * @param {Act} act
 * @returns {HTMLFormElement}
 */
export function decisionForm(run, workflow, contract, offer, permissions, draft, act) {
  const step = /** @type {Step} */ (run.current_step);
  const commentId = uid("comment");
  const hintId = uid("hint");
  const needsComment = workflow.reject_requires_comment === true && offer.reject;
  const comment = el("textarea", { id: commentId, name: "comment", rows: "3", maxlength: contract.maxLength("/runs/{run_id}/approve", "comment"), "aria-describedby": hintId });
  // Kept for the tab as it is typed: a session that ends meanwhile sends the
  // person to sign in again, and they find their comment here when they are back.
  const kept = `approvals.draft.${run.id}`;
  comment.value = draft || session.get(kept) || "";
  comment.addEventListener("input", () => session.set(kept, comment.value || null));
  const approved = run.current_step_approved_by || [];
  const escalated = run.current_step_escalated_to || [];
  const behalf = actingFor(permissions, offer.approve ? "approve" : "reject");
  const notes = [];
  if (typeof step.required_approvals === "number") {
    notes.push(
      `${plural(approved.length, "approval", "approvals")} of the ${step.required_approvals} this step needs`,
      approved.length ? ` (${approved.join(", ")}).` : ".",
    );
  }
  if (Array.isArray(step.approvers)) notes.push(` Who may decide: ${whoMayDecide(step.approvers)}.`);
  if (escalated.length) notes.push(` Its deadline has passed: ${whoMayDecide(escalated)} may decide it too.`);
  let hint = "Optional. Kept in the run's history.";
  if (needsComment) hint = offer.approve ? "Required to reject; optional to approve. Kept in the run's history." : "Required: say why you reject. Kept in the run's history.";
  const form = el(
    "form",
    { class: "panel", novalidate: true, "aria-labelledby": "decide-heading" },
    el("h2", { id: "decide-heading" }, `Decide step ${stepPosition(step, workflow)}`),
    behalf ? el("p", { class: "on-behalf" }, `You decide on behalf of ${behalf}, who lent you their rights; the history records both names.`) : null,
    notes.length ? el("p", {}, notes) : null,
    el("div", { class: "field" }, el("label", { for: commentId }, "Comment"), el("p", { class: "hint", id: hintId }, hint), comment),
    el(
      "div",
      { class: "actions" },
      offer.approve ? el("button", { type: "submit", class: "primary", name: "decision", value: "approve" }, "Approve") : null,
      offer.reject ? el("button", { type: "submit", class: "danger", name: "decision", value: "reject" }, "Reject") : null,
    ),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const submitter = event.submitter;
    const chosen = submitter instanceof HTMLButtonElement ? submitter.value : null;
    const decision = chosen === "reject" || chosen === "approve" ? chosen : offer.approve ? "approve" : "reject";
    const text = comment.value;
    if (decision === "reject" && needsComment && !text.trim()) return refuse(comment, "Say why you reject: this workflow needs a comment to reject.");
    const body = decisionBody(run, permissions, decision);
    if (text.trim()) body.comment = text;
    act(form, run, contract, decision, body, text, (updated, fresh) => {
      session.set(kept, null);
      return decidedText(decision, step, updated, fresh, body) + skippedText(updated.actions.slice(run.actions.length));
    });
  });
  return form;
}

/**
 * @param {"approve" | "reject"} decision
 * @param {Step} step
 * @param {Run} run
 * @param {Workflow} workflow
 * @param {Body} body
 * @returns {string}
 */
function decidedText(decision, step, run, workflow, body) {
  const done = `You ${decision === "reject" ? "rejected" : "approved"} step ${step.step_order}, ${step.name}${forWhom(body)}.`;
  if (run.status !== "in_progress") return `${done} The run is ${statusText(run.status).toLowerCase()}.`;
  if (run.current_step_id === step.id) {
    const soFar = approvalsSoFar(run);
    return soFar ? `${done} Approvals so far: ${soFar}.` : done;
  }
  return `${done} The run waits at step ${stepPosition(/** @type {Step} */ (run.current_step), workflow)} now.`;
}

/**
 * Send the run back to its requester, saying what should change.
 * @param {Run} run
 * @param {Workflow} workflow
 * @param {Contract} contract
 * @param {PermissionsAnswer} permissions
 * @param {Act} act
 * @returns {HTMLFormElement}
 */
export function returnForm(run, workflow, contract, permissions, act) {
  const step = /** @type {Step} */ (run.current_step);
  const commentId = uid("what-to-change");
  const hintId = uid("hint");
  const comment = el("textarea", { id: commentId, name: "comment", rows: "3", maxlength: contract.maxLength("/runs/{run_id}/return", "comment"), required: true, "aria-describedby": hintId });
  const behalf = actingFor(permissions, "return");
  const who = run.requested_by || "its requester";
  const form = el(
    "form",
    { class: "panel", novalidate: true, "aria-labelledby": "return-heading" },
    el("h2", { id: "return-heading" }, "Send back for changes"),
    el("p", {}, `Instead of rejecting it, send this run back to ${who} to change and resubmit it. A new round of approvals then starts from the first step.${behalf ? ` You do this on behalf of ${behalf}.` : ""}`),
    el("div", { class: "field" }, el("label", { for: commentId }, "What should change (required)"), el("p", { class: "hint", id: hintId }, `${capitalised(who)} reads this. Kept in the run's history.`), comment),
    el("div", { class: "actions" }, el("button", { type: "submit" }, "Send back for changes")),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = comment.value;
    if (!text.trim()) return refuse(comment, "Say what should change: the requester reads it before resubmitting.");
    const body = { ...decisionBody(run, permissions, "return"), comment: text };
    act(form, run, contract, "return", body, "", () => `You sent this run back to ${who} for changes at step ${stepPosition(step, workflow)}${forWhom(body)}.`);
  });
  return form;
}

/**
 * Resubmit a returned run: a comment, and its input changed.
 * @param {Run} run
 * @param {Workflow} workflow
 * @param {Contract} contract
 * @returns {HTMLFormElement}
 */
export function resubmitForm(run, workflow, contract) {
  const commentId = uid("what-changed");
  const comment = el("textarea", { id: commentId, name: "comment", rows: "3", maxlength: contract.maxLength("/runs/{run_id}/resubmit", "comment") });
  const sentBack = [...run.actions].reverse().find((action) => action.action === "return");
  const input = runInputFields(workflow, run.input);
  const problem = el("p", { class: "field-error form-error", tabindex: "-1", hidden: true });
  const form = el(
    "form",
    { class: "panel", novalidate: true, "aria-labelledby": "resubmit-heading" },
    el("h2", { id: "resubmit-heading" }, "Change and resubmit"),
    sentBack ? el("p", {}, `${sentBack.actor} sent it back${sentBack.on_behalf_of ? ` on behalf of ${sentBack.on_behalf_of}` : ""}, asking:`) : null,
    sentBack && sentBack.comment ? el("blockquote", { class: "comment" }, sentBack.comment) : null,
    el("p", {}, `Resubmitting starts round ${(run.round || 1) + 1}: everyone approves again, from the first step.`),
    input.nodes,
    el("div", { class: "field" }, el("label", { for: commentId }, "What you changed (optional)"), comment),
    problem,
    el("div", { class: "actions" }, el("button", { type: "submit", class: "primary" }, "Resubmit")),
  );
  const explain = explainer(problem);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    problem.hidden = true;
    for (const field of input.fields) field.clear();
    /** @type {Body} */
    const body = {};
    if (MODE === "none") body.actor = signedIn().actor;
    if (comment.value.trim()) body.comment = comment.value;
    const read = input.read();
    if ("problem" in read) return explain(read.field, read.problem);
    // Only a changed input is sent: the same one needs no new record of it.
    if (stableText(read.input) !== stableText(run.input || {})) body.input = read.input;
    await submit(
      form,
      async () => /** @type {Run} */ (await request("POST", `/runs/${run.id}/resubmit`, body, newKey())),
      (updated) => go(location.hash, { status: resubmittedText(updated, workflow, "input" in body) }),
      (error) => {
        const status = statusOf(error);
        // 422: an input the workflow's schema refuses (400: one no input may be).
        if (status === 400 || status === 413 || status === 422) {
          explain(status !== 413 ? fieldOfError(input.fields, error.message) : null, asSentence(error.message));
          return true;
        }
        return false;
      },
    );
  });
  return form;
}

/**
 * @param {Run} run
 * @param {Workflow} workflow
 * @param {boolean} changed
 * @returns {string}
 */
function resubmittedText(run, workflow, changed) {
  const what = changed ? "with its new input" : "with its input unchanged";
  if (run.status === "completed") return `You resubmitted this run ${what}: round ${run.round} needed no approval, as none of its steps applies, and the run is completed.`;
  const at = run.current_step ? `, at step ${stepPosition(run.current_step, workflow)}` : "";
  return `You resubmitted this run ${what}: round ${run.round} starts${at}.`;
}

/**
 * Withdraw the request (its requester), or cancel someone else's run (an administrator).
 * @param {Run} run
 * @param {Contract} contract
 * @param {Act} act
 * @returns {HTMLFormElement}
 */
export function cancelForm(run, contract, act) {
  const caller = me();
  const mine = Boolean(caller) && sameName(run.requested_by, caller?.actor);
  const reasonId = uid("reason");
  const reason = el("input", { id: reasonId, name: "reason", type: "text", maxlength: contract.maxLength("/runs/{run_id}/cancel", "reason") });
  let note = null;
  if (!mine) {
    note = run.requested_by
      ? `${run.requested_by} requested this run; as a member of the ${ADMIN_GROUP} group, you may cancel it too.`
      : "Nobody is named as this run's requester, so anyone may cancel it.";
  }
  const form = el(
    "form",
    { class: "panel", novalidate: true, "aria-labelledby": "cancel-heading" },
    el("h2", { id: "cancel-heading" }, mine ? "Withdraw your request" : "Cancel the run"),
    note ? el("p", {}, note) : null,
    el("div", { class: "field" }, el("label", { for: reasonId }, "Reason (optional)"), reason),
    el("div", { class: "actions" }, el("button", { type: "submit", class: "danger" }, "Cancel this run")),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    /** @type {Body} */
    const body = {};
    if (MODE === "none") body.actor = signedIn().actor;
    if (reason.value.trim()) body.reason = reason.value;
    act(form, run, contract, "cancel", body, "", () => "You cancelled this run.");
  });
  return form;
}
