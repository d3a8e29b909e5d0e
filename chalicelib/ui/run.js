// A run's page (#/runs/42): its status, what is being approved, the actions
// the caller may take now (and only those, as GET /runs/{id}/permissions says,
// with why the others are not offered, in words), its steps and its history.
// #/runs/42?for=bob opens it to be decided on bob's behalf.
import { administerSection } from "./administer.js";
import { newKey, query, request, statusOf, workflowById, workflowVersion } from "./api.js";
import { ADMIN_GROUP, MODE, callerQuery } from "./caller.js";
import { readContract } from "./contract.js";
import { cancelForm, decisionForm, resubmitForm, returnForm } from "./decide.js";
import { alertRegion, clearMessages, el, facts, focus, say, statusRegion, warn } from "./dom.js";
import { asSentence, series, time, whoMayDecide } from "./format.js";
import { inputSection } from "./input.js";
import { currentGeneration, draw, handled, messageOf, route } from "./router.js";
import { approvalsSoFar, deadline, statusText, stepPosition } from "./steps.js";
import { historySection, timeline } from "./timeline.js";

/** @typedef {import("./contract.js").Contract} Contract */
/** @typedef {import("./types.js").DecisionName} ActionName */
/** @typedef {import("./types.js").Permission} Permission */
/** @typedef {import("./types.js").PermissionsAnswer} PermissionsAnswer */
/** @typedef {import("./types.js").Run} Run */
/** @typedef {import("./types.js").Workflow} Workflow */
/** @typedef {{ [action in ActionName]: boolean }} Offer The actions offered. */

// Every action a caller takes (types.js's ActionName), in words; offered in ACTION_NAMES's order.
/** @type {{ [action in ActionName]: string }} */
const ACTION_NAMES = { approve: "Approve", reject: "Reject", return: "Send back for changes", resubmit: "Resubmit", cancel: "Cancel" };
/** @type {{ [action in ActionName]: string }} */
const NOUNS = { approve: "approval", reject: "rejection", cancel: "cancellation", return: "sending back", resubmit: "resubmission" };
const ACTIONS = /** @type {ActionName[]} */ (Object.keys(ACTION_NAMES));
/** @type {{ [status: string]: string }} */
const ENDED = { completed: "completed", rejected: "rejected", cancelled: "cancelled" };
// Reasons that say nothing to the reader where they appear: everyone but a
// returned run's requester is told "not returned" for Resubmit.
const UNSAID = new Set(["run_not_returned"]);

// Whom the run page acts for: the delegator named in its link (#/runs/42?for=bob), or nobody.
/** @type {string | null} */
let behalfOf = null;

/**
 * @param {number} current
 * @param {{ id: number, behalf: string | null }} target
 * @returns {Promise<HTMLElement | null>}
 */
export async function showRun(current, target) {
  const contract = await readContract();
  behalfOf = target.behalf;
  const run = /** @type {Run} */ (await request("GET", `/runs/${target.id}`));
  const [workflow, permissions] = await Promise.all([ownVersion(run), permissionsOf(run.id)]);
  return drawRun(current, run, workflow, contract, permissions, "");
}

// The newest version of the shown run's workflow: the run keeps its own.
let newestVersion = 0;

/**
 * The version of its workflow the run follows (its steps, in order), read
 * with the newest, whose number the page names where it is newer.
 * @param {Run} run
 * @returns {Promise<Workflow>}
 */
async function ownVersion(run) {
  const newest = await workflowById(run.workflow_id, true);
  newestVersion = newest.version;
  return newest.version === run.workflow_version ? newest : workflowVersion(run.workflow_id, run.workflow_version);
}

/**
 * What the caller may do with run `id`, as GET /runs/{id}/permissions says
 * ({approve, reject, return, resubmit, cancel}, each {allowed, reason,
 * message}); {failed: why} when it could not be asked.
 * @param {number} id
 * @returns {Promise<PermissionsAnswer>}
 */
async function permissionsOf(id) {
  /** @type {{ [name: string]: unknown }} */
  const params = callerQuery();
  if (behalfOf) params.on_behalf_of = behalfOf;
  try {
    return /** @type {PermissionsAnswer} */ (await request("GET", `/runs/${id}/permissions${query(params)}`));
  } catch (error) {
    if (handled(error)) throw error;
    return { failed: messageOf(error) };
  }
}

/**
 * The actions to offer: those the API allows.
 * @param {PermissionsAnswer} permissions
 * @returns {Offer}
 */
function offered(permissions) {
  if ("failed" in permissions) return { approve: false, reject: false, return: false, resubmit: false, cancel: false };
  return /** @type {Offer} */ (Object.fromEntries(ACTIONS.map((action) => [action, Boolean(permissions[action] && permissions[action].allowed)])));
}

/**
 * The run's page, as it is now; `draft`, the comment the caller was writing.
 * @param {number} current
 * @param {Run} run
 * @param {Workflow} workflow
 * @param {Contract} contract
 * @param {PermissionsAnswer} permissions
 * @param {string} draft
 * @returns {HTMLElement | null}
 */
function drawRun(current, run, workflow, contract, permissions, draft) {
  const status = statusText(run.status);
  const returned = run.status === "returned";
  const rounds = typeof run.round === "number" && (run.round > 1 || returned);
  const summary = facts([
    ["Workflow", workflow.name],
    ["Version", versionText(run)],
    ["Requested by", run.requested_by || "nobody named"],
    ["Started", time(run.created_at)],
    ["Round", rounds ? String(run.round) : null],
    ["Current step", run.current_step && !returned ? stepPosition(run.current_step, workflow) : null],
    ["Approvals", returned ? null : approvalsSoFar(run)],
    ["Waiting since", time(run.current_step_since)],
    ["Deadline", deadline(run.current_step_due_at)],
    ["Run number", String(run.id)],
  ]);
  let where = "";
  if (returned) where = ` ${run.requested_by ? `It waits for ${run.requested_by}, who requested it,` : "It waits"} to change and resubmit it.`;
  else if (run.current_step) where = ` Waiting at step ${stepPosition(run.current_step, workflow)}.`;
  const sections = [
    el("p", { class: "lead" }, "Status: ", el("span", { class: `badge badge-${run.status}` }, status), where),
    summary,
    inputSection(run, workflow),
  ];
  const offer = offered(permissions);
  if (run.status === "in_progress" && run.current_step) {
    if (offer.approve || offer.reject) sections.push(decisionForm(run, workflow, contract, offer, permissions, draft, act));
    if (offer.return) sections.push(returnForm(run, workflow, contract, permissions, act));
    if (offer.cancel) sections.push(cancelForm(run, contract, act));
    sections.push(notOffered(run, permissions));
    sections.push(administerSection(run, newestVersion, contract, permissions, () => route()));
  } else if (returned) {
    if (offer.resubmit) sections.push(resubmitForm(run, workflow, contract));
    if (offer.cancel) sections.push(cancelForm(run, contract, act));
    sections.push(notOffered(run, permissions));
  }
  sections.push(timeline(run, workflow), historySection(run));
  sections.push(el("p", { class: "actions" }, el("a", { href: "#/inbox" }, "Back to the inbox"), el("button", { type: "button", onclick: () => route() }, "Reload")));
  return draw(current, run.title, ...sections);
}

/**
 * "2", or "2 (version 3 is newer; this run keeps its own)".
 * @param {Run} run
 * @returns {string}
 */
function versionText(run) {
  const own = run.workflow_version;
  return newestVersion > own ? `${own} (version ${newestVersion} is newer; this run keeps its own)` : String(own);
}

/**
 * The actions the API does not allow the caller, each with why, in words;
 * actions held back for one reason are named together.
 * @param {Run} run
 * @param {PermissionsAnswer} permissions
 * @returns {HTMLElement | null}
 */
function notOffered(run, permissions) {
  /** @param {...Node} content */
  const section = (...content) =>
    el("section", { class: "panel", "aria-labelledby": "not-offered-heading" }, el("h2", { id: "not-offered-heading" }, "Not offered to you"), content);
  if ("failed" in permissions) {
    return section(el("p", {}, `The page could not check what you may do with this run, so it offers nothing: ${asSentence(permissions.failed)} Reload to try again.`));
  }
  /** @type {Map<string, { permission: Permission, actions: ActionName[] }>} */
  const reasons = new Map(); // the reason -> the actions it holds back, and one of its answers
  for (const action of ACTIONS) {
    const permission = permissions[action];
    if (!permission || permission.allowed || UNSAID.has(permission.reason ?? "")) continue;
    const key = permission.reason || permission.message || "";
    const held = reasons.get(key) || { permission, actions: [] };
    held.actions.push(action);
    reasons.set(key, held);
  }
  if (!reasons.size) return null;
  const items = [...reasons.values()].map(({ permission, actions }) =>
    el("li", {}, el("strong", {}, series(actions.map((action) => ACTION_NAMES[action]), "and")), `: ${whyNot(permission, run, actions)}`),
  );
  return section(el("ul", { class: "why-not" }, items));
}

/**
 * "approve or reject it", "approve or reject it, or send it back": what
 * `actions` let one do with a run, in words.
 * @param {ActionName[]} actions
 * @returns {string}
 */
function doingWords(actions) {
  /** @type {{ [action: string]: string }} */
  const verbs = { approve: "approve", reject: "reject", resubmit: "resubmit", cancel: "cancel" };
  const plain = actions.filter((action) => verbs[action]).map((action) => verbs[action]);
  const back = actions.includes("return");
  if (!plain.length) return back ? "send it back" : "do this with it";
  return `${series(plain)} it${back ? ", or send it back" : ""}`;
}

/**
 * Why the API does not allow an action (its reason code), said to the caller.
 * @param {Permission} permission
 * @param {Run} run
 * @param {ActionName[]} [actions]
 * @returns {string}
 */
function whyNot(permission, run, actions = []) {
  const step = run.current_step;
  switch (permission.reason) {
    case "run_not_in_progress":
      return "This run has ended meanwhile: reload the page to see how.";
    case "not_an_approver": {
      const principals = [...((step && step.approvers) || []), ...(run.current_step_escalated_to || [])];
      return principals.length ? `Only ${whoMayDecide(principals)} can decide this step.` : "You are not among those who may decide this step.";
    }
    case "requester_may_not_decide":
      return `You requested this run, and its workflow doesn't let requesters ${doingWords(actions)}.`;
    case "already_approved_this_step": {
      const soFar = approvalsSoFar(run);
      return `You already approved this step; it waits for other approvers${soFar ? ` (${soFar} approvals so far)` : ""}.`;
    }
    case "approved_another_step":
      return "You approved another step of this run, and its workflow wants a different person for each step.";
    case "not_the_requester": {
      const admins = MODE === "jwt" ? ` or a member of the ${ADMIN_GROUP} group` : "";
      const doing = doingWords(actions.length ? actions : ["cancel"]);
      return run.requested_by ? `Only ${run.requested_by}, who requested this run,${admins ? `${admins},` : ""} can ${doing}.` : `Only the requester${admins} can ${doing}.`;
    }
    case "run_returned":
      return "It was sent back for changes: nobody decides it until it is resubmitted.";
    case "returns_exhausted":
      return "It has been sent back as many times as its workflow allows.";
    case "delegation_not_active":
      return behalfOf ? `No delegation from ${behalfOf} to you is active now for this run's workflow, so you may not act on their behalf.` : "No delegation to you is active now for this run's workflow.";
    default:
      return permission.message || "This is not yours to do with this run now.";
  }
}

/**
 * Send a decision; show the outcome (or why it was not recorded) and the
 * run as it is now, with what the caller may do with it now.
 * @param {HTMLFormElement} form
 * @param {Run} run
 * @param {Contract} contract
 * @param {ActionName} action
 * @param {{ [field: string]: unknown }} body
 * @param {string} draft
 * @param {(updated: Run, fresh: Workflow) => string} describe
 */
async function act(form, run, contract, action, body, draft, describe) {
  const buttons = form.querySelectorAll("button");
  for (const button of buttons) button.disabled = true;
  const current = currentGeneration();
  clearMessages();
  try {
    const updated = /** @type {Run} */ (await request("POST", `/runs/${run.id}/${action}`, body, newKey()));
    const [fresh, permissions] = await Promise.all([ownVersion(updated), permissionsOf(updated.id)]);
    if (current !== currentGeneration()) return;
    drawRun(current, updated, fresh, contract, permissions, "");
    say(describe(updated, fresh));
    focus(statusRegion);
  } catch (error) {
    if (handled(error) || current !== currentGeneration()) return;
    warn(messageOf(error));
    try {
      const reloaded = /** @type {Run} */ (await request("GET", `/runs/${run.id}`));
      const [fresh, permissions] = await Promise.all([ownVersion(reloaded), permissionsOf(reloaded.id)]);
      if (current !== currentGeneration()) return;
      drawRun(current, reloaded, fresh, contract, permissions, draft);
      const status = statusOf(error);
      if (status === 403 || status === 409) warn(notRecorded(action, run, reloaded, fresh, permissions) || messageOf(error));
    } catch (reloadError) {
      if (handled(reloadError)) return;
      for (const button of buttons) button.disabled = false;
    }
    focus(alertRegion);
  }
}

/**
 * Why a refused action was not recorded, from the run as it is now (`after`);
 * null when that does not tell.
 * @param {ActionName} action
 * @param {Run} before
 * @param {Run} after
 * @param {Workflow} workflow
 * @param {PermissionsAnswer} permissions
 * @returns {string | null}
 */
function notRecorded(action, before, after, workflow, permissions) {
  const lead = `Your ${NOUNS[action]} was not recorded`;
  if (after.status === "returned") return `${lead}: the run was sent back for changes meanwhile.`;
  if (after.status !== "in_progress") return `${lead}: the run was ${ENDED[after.status] || after.status} meanwhile.`;
  if (typeof after.round === "number" && after.round !== before.round) {
    return `${lead}: the run was sent back and resubmitted meanwhile, and is in round ${after.round} now. Your comment is kept: decide again if you still want to.`;
  }
  if (after.current_step_id !== before.current_step_id && after.current_step) {
    return `${lead}: the run moved on meanwhile, to step ${stepPosition(after.current_step, workflow)}. Your comment is kept: decide again if you still want to.`;
  }
  const permission = "failed" in permissions ? null : permissions[action];
  return permission && !permission.allowed ? `${lead}. ${whyNot(permission, after)}` : null;
}
