// Delegations (#/delegations): the rights to decide the caller lent ("Lent
// by you", revocable while active or upcoming) and was lent, to them or one
// of their groups ("Lent to you"), each in words; and the form that lends them.
import { newKey, query, rememberWorkflow, request, submit } from "./api.js";
import { MODE, signedIn } from "./caller.js";
import { readContract } from "./contract.js";
import { alertRegion, clearMessages, el, facts, focus, uid, warn } from "./dom.js";
import { DATE, asSentence, isPast, localTimeText, principalWords, time, wallTimeText } from "./format.js";
import { draw, go, handled, messageOf } from "./router.js";

/** @typedef {import("./contract.js").Contract} Contract */
/** @typedef {import("./types.js").Delegation} Delegation */
/** @typedef {import("./types.js").Workflow} Workflow */
/** @typedef {"active" | "upcoming" | "ended" | "revoked"} State */

// A delegation's state, in words (and its badge's class).
const DELEGATION_STATES = { active: "Active", upcoming: "Upcoming", ended: "Ended", revoked: "Revoked" };
const WEEK_MS = 7 * 24 * 3600 * 1000;

/**
 * A delegation's state now: revoked, ended, upcoming or active.
 * @param {Delegation} delegation
 * @returns {State}
 */
function delegationState(delegation) {
  if (delegation.revoked_at) return "revoked";
  if (isPast(delegation.ends_at)) return "ended";
  return isPast(delegation.starts_at) ? "active" : "upcoming";
}

/**
 * Every item of a list matching `filter`, following the pages (up to `most`).
 * @template T
 * @param {string} path
 * @param {{ [name: string]: unknown }} filter
 * @param {number} most
 * @returns {Promise<T[]>}
 */
async function everyItem(path, filter, most) {
  /** @type {T[]} */
  const found = [];
  let cursor = null;
  for (let pages = 0; pages < most; pages++) {
    const page = /** @type {import("./types.js").Page<T>} */ (await request("GET", `${path}${query({ ...filter, limit: 100, cursor })}`));
    found.push(...page.items);
    cursor = page.next_cursor;
    if (!cursor) break;
  }
  return found;
}

/**
 * Every delegation matching `filter`.
 * @param {{ [name: string]: unknown }} filter
 * @returns {Promise<Delegation[]>}
 */
const allDelegations = (filter) => everyItem("/delegations", filter, 5);

/**
 * Every workflow, for the form's list to choose from and to name them.
 * @returns {Promise<Workflow[]>}
 */
async function allWorkflows() {
  /** @type {Workflow[]} */
  const found = await everyItem("/workflows", {}, 5);
  for (const workflow of found) rememberWorkflow(workflow);
  return found;
}

/**
 * @param {number} current
 * @returns {Promise<HTMLElement | null>}
 */
export async function showDelegations(current) {
  const contract = await readContract();
  const caller = signedIn();
  const mine = { delegator: caller.actor };
  const lentTo = [caller.actor, ...caller.groups.map((group) => `group:${group}`)];
  const [given, received, workflows] = await Promise.all([
    allDelegations(mine),
    Promise.all(lentTo.map((delegate) => allDelegations({ delegate }))).then((lists) => {
      const seen = new Map();
      for (const delegation of lists.flat()) seen.set(delegation.id, delegation);
      return [...seen.values()].sort((first, second) => first.id - second.id);
    }),
    allWorkflows(),
  ]);
  const byId = new Map(workflows.map((workflow) => [workflow.id, workflow]));
  return draw(
    current,
    "Delegations",
    el("p", {}, "Away for a while? Lend your rights to decide to someone: during the window you choose, they may decide what you may, on your behalf, and the history records both names. You keep your own rights."),
    el(
      "section",
      { "aria-labelledby": "given-heading" },
      el("h2", { id: "given-heading" }, "Lent by you"),
      given.length ? el("ul", { class: "cards" }, given.map((delegation) => delegationCard(delegation, byId, true))) : el("p", { class: "empty" }, "You have lent your rights to nobody."),
    ),
    el(
      "section",
      { "aria-labelledby": "received-heading" },
      el("h2", { id: "received-heading" }, "Lent to you"),
      received.length ? el("ul", { class: "cards" }, received.map((delegation) => delegationCard(delegation, byId, false))) : el("p", { class: "empty" }, "Nobody has lent you their rights."),
    ),
    delegationForm(workflows, contract),
  );
}

/**
 * @param {Delegation} delegation
 * @param {Map<number, Workflow>} workflows
 * @param {boolean} mine
 * @returns {HTMLLIElement}
 */
function delegationCard(delegation, workflows, mine) {
  const state = delegationState(delegation);
  const lentFor = delegation.workflow_id === null ? null : workflows.get(delegation.workflow_id);
  const workflow = delegation.workflow_id === null ? "Every workflow" : lentFor ? lentFor.name : `Workflow ${delegation.workflow_id}`;
  const who = mine ? `To ${principalWords(delegation.delegate)}` : `From ${delegation.delegator}${String(delegation.delegate).startsWith("group:") ? `, to ${principalWords(delegation.delegate)}` : ""}`;
  const revoke = mine && (state === "active" || state === "upcoming")
    ? el("div", { class: "actions" }, el("button", { type: "button", class: "danger", onclick: (/** @type {Event} */ event) => revokeDelegation(/** @type {HTMLButtonElement} */ (event.currentTarget), delegation) }, `Revoke the delegation to ${principalWords(delegation.delegate)}`))
    : null;
  return el(
    "li",
    { class: "card delegation" },
    el("h3", { class: "card-title" }, who, " ", el("span", { class: `badge badge-${state}` }, DELEGATION_STATES[state])),
    facts([
      ["Workflow", workflow],
      ["From", time(delegation.starts_at)],
      ["Until", time(delegation.ends_at)],
      ["Reason", delegation.reason || null],
      ["Revoked", delegation.revoked_at ? el("span", {}, time(delegation.revoked_at), delegation.revoked_by ? ` by ${delegation.revoked_by}` : "") : null],
    ]),
    revoke,
  );
}

/**
 * @param {HTMLButtonElement} button
 * @param {Delegation} delegation
 */
async function revokeDelegation(button, delegation) {
  button.disabled = true;
  clearMessages();
  const params = MODE === "none" ? { actor: signedIn().actor } : {};
  try {
    await request("DELETE", `/delegations/${delegation.id}${query(params)}`);
    go("#/delegations", { status: `You revoked the delegation to ${principalWords(delegation.delegate)}: it ends now.` });
  } catch (error) {
    if (handled(error)) return;
    button.disabled = false;
    warn(`The delegation was not revoked: ${asSentence(messageOf(error))}`);
    focus(alertRegion);
  }
}

/**
 * Lend one's rights: to whom, for which workflow, from and until when, why.
 * @param {Workflow[]} workflows
 * @param {Contract} contract
 * @returns {HTMLFormElement}
 */
function delegationForm(workflows, contract) {
  /**
   * @param {string} label
   * @param {HTMLInputElement | HTMLSelectElement} control
   * @param {string} [hint]
   * @returns {HTMLDivElement}
   */
  const field = (label, control, hint) => {
    control.id = uid(control.name);
    const hintId = hint ? uid("hint") : null;
    if (hintId) control.setAttribute("aria-describedby", hintId);
    return el("div", { class: "field" }, el("label", { for: control.id }, label), hint ? el("p", { class: "hint", id: hintId }, hint) : null, control);
  };
  const now = new Date();
  const delegate = el("input", { type: "text", name: "delegate", required: true, maxlength: contract.maxLength("/delegations", "delegate"), autocomplete: "off" });
  const workflow = el("select", { name: "workflow" }, el("option", { value: "" }, "Every workflow"), workflows.map((each) => el("option", { value: String(each.id) }, each.name)));
  const starts = el("input", { type: "datetime-local", name: "starts", required: true, value: wallTimeText(now.toISOString()) });
  const ends = el("input", { type: "datetime-local", name: "ends", required: true, value: wallTimeText(new Date(now.getTime() + WEEK_MS).toISOString()) });
  const reason = el("input", { type: "text", name: "reason", maxlength: contract.maxLength("/delegations", "reason"), autocomplete: "off" });
  const problem = el("p", { class: "field-error form-error", tabindex: "-1", hidden: true });
  const form = el(
    "form",
    { class: "panel", novalidate: true, "aria-labelledby": "lend-heading" },
    el("h2", { id: "lend-heading" }, "Lend your rights"),
    field("To whom", delegate, "A person's name, or group:name for every member of a group."),
    field("For which workflow", workflow),
    field("From", starts, "In your time zone. At most 90 days from the start to the end."),
    field("Until", ends),
    field("Reason (optional)", reason, "For example: on holiday."),
    problem,
    el("div", { class: "actions" }, el("button", { type: "submit", class: "primary" }, "Lend my rights")),
  );
  /**
   * @param {string} message
   * @param {HTMLElement} [control]
   */
  const explain = (message, control) => {
    problem.textContent = message;
    problem.hidden = false;
    focus(control || problem);
  };
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    problem.hidden = true;
    if (!delegate.value.trim()) return explain("Say to whom you lend your rights.", delegate);
    const startsAt = starts.value ? localTimeText(starts.value) : null;
    const endsAt = ends.value ? localTimeText(ends.value) : null;
    if (!startsAt) return explain("Say when the delegation starts.", starts);
    if (!endsAt) return explain("Say when the delegation ends.", ends);
    /** @type {{ [field: string]: unknown }} */
    const body = { delegate: delegate.value.trim(), starts_at: startsAt, ends_at: endsAt };
    if (MODE === "none") body.delegator = signedIn().actor;
    if (workflow.value) body.workflow_id = Number(workflow.value);
    if (reason.value.trim()) body.reason = reason.value.trim();
    await submit(
      form,
      async () => /** @type {Delegation} */ (await request("POST", "/delegations", body, newKey())),
      (created) => go("#/delegations", { status: `You lent your rights to ${principalWords(created.delegate)}, from ${DATE.format(new Date(created.starts_at))} until ${DATE.format(new Date(created.ends_at))}.` }),
      (error) => {
        explain(`The delegation was not made: ${asSentence(error.message)}`);
        return true;
      },
    );
  });
  return form;
}
