// An administrator's changes of a run on its page: reassign its current step
// (whom it awaits from now on, and why) and move it to a step of a newer
// version of its workflow. Offered where GET /runs/{id}/permissions allows
// them; where it does not, the reason is said, as for every action.
import { newKey, request, submit } from "./api.js";
import { MODE, signedIn } from "./caller.js";
import { el, uid } from "./dom.js";

/** @typedef {import("./contract.js").Contract} Contract */
/** @typedef {import("./types.js").PermissionsAnswer} PermissionsAnswer */
/** @typedef {import("./types.js").Run} Run */
/** @typedef {{ [field: string]: unknown }} Body */

/**
 * The section that reassigns or moves `run`, or says why the caller may not
 * (null where the run waits for no decision, or the page could not ask).
 * @param {Run} run
 * @param {number} newest The newest version of the run's workflow.
 * @param {Contract} contract
 * @param {PermissionsAnswer} permissions
 * @param {() => void} done Called with the run changed: the page shows it again.
 * @returns {HTMLElement | null}
 */
export function administerSection(run, newest, contract, permissions, done) {
  if ("failed" in permissions || run.status !== "in_progress") return null;
  const { reassign, move } = permissions;
  if (!reassign || !move) return null;
  if (!reassign.allowed && !move.allowed) {
    const why = reassign.message || move.message || "Not yours to do.";
    return el("section", { class: "panel", "aria-labelledby": "administer-heading" }, el("h2", { id: "administer-heading" }, "Reassign or move"), el("p", {}, why));
  }
  return el(
    "details",
    { class: "panel" },
    el("summary", {}, "Reassign the step, or move the run to a newer version"),
    reassign.allowed ? reassignForm(run, contract, done) : null,
    move.allowed && newest > run.workflow_version ? moveForm(run, newest, contract, done) : null,
  );
}

/**
 * @param {Run} run
 * @param {Contract} contract
 * @param {() => void} done
 * @returns {HTMLFormElement}
 */
function reassignForm(run, contract, done) {
  const approversId = uid("approvers");
  const commentId = uid("reassign-comment");
  const current = (run.current_step && run.current_step.approvers.join(", ")) || "";
  const approvers = el("input", { id: approversId, name: "approvers", type: "text", value: current });
  const comment = el("input", { id: commentId, name: "comment", type: "text", required: true, maxlength: contract.maxLength("/runs/{run_id}/reassign", "comment") });
  const form = el(
    "form",
    { novalidate: true, "aria-labelledby": "reassign-heading" },
    el("h3", { id: "reassign-heading" }, "Reassign the current step"),
    el("div", { class: "field" }, el("label", { for: approversId }, "Who decides it from now on (user:name or group:name, separated by commas; empty: anyone)"), approvers),
    el("div", { class: "field" }, el("label", { for: commentId }, "Why"), comment),
    el("div", { class: "actions" }, el("button", { type: "submit" }, "Reassign")),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    /** @type {Body} */
    const body = { approvers: listed(approvers.value), comment: comment.value };
    send(form, run, "reassign", body, done);
  });
  return form;
}

/**
 * @param {Run} run
 * @param {number} newest
 * @param {Contract} contract
 * @param {() => void} done
 * @returns {HTMLFormElement}
 */
function moveForm(run, newest, contract, done) {
  const versionId = uid("to-version");
  const stepId = uid("to-step");
  const commentId = uid("move-comment");
  const version = el("input", { id: versionId, name: "to_version", type: "number", min: String(run.workflow_version + 1), value: String(newest) });
  const step = el("input", { id: stepId, name: "step", type: "text", required: true, value: run.current_step ? run.current_step.name : "" });
  const comment = el("input", { id: commentId, name: "comment", type: "text", maxlength: contract.maxLength("/runs/{run_id}/move", "comment") });
  const form = el(
    "form",
    { novalidate: true, "aria-labelledby": "move-heading" },
    el("h3", { id: "move-heading" }, "Move the run to a newer version"),
    el("p", {}, `It runs on version ${run.workflow_version}; approvals given at its current step do not carry over.`),
    el("div", { class: "field" }, el("label", { for: versionId }, "Version"), version),
    el("div", { class: "field" }, el("label", { for: stepId }, "Step of that version where it continues"), step),
    el("div", { class: "field" }, el("label", { for: commentId }, "Why (optional)"), comment),
    el("div", { class: "actions" }, el("button", { type: "submit" }, "Move")),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    /** @type {Body} */
    const body = { to_version: Number(version.value), step: step.value, comment: comment.value };
    send(form, run, "move", body, done);
  });
  return form;
}

/**
 * "user:ann, group:finance" -> ["user:ann", "group:finance"].
 * @param {string} text
 * @returns {string[]}
 */
function listed(text) {
  return text
    .split(",")
    .map((part) => part.trim())
    .filter(Boolean);
}

/**
 * @param {HTMLFormElement} form
 * @param {Run} run
 * @param {"reassign" | "move"} action
 * @param {Body} body
 * @param {() => void} done
 */
function send(form, run, action, body, done) {
  if (MODE === "none") body.actor = signedIn().actor;
  submit(form, () => request("POST", `/runs/${run.id}/${action}`, body, newKey()), done);
}
