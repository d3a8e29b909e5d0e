// The inbox (#/inbox): the runs whose current step the caller may decide
// (GET /inbox), the longest waiting first, a page at a time; a run that waits
// for someone who lent the caller their rights opens to be decided for them.
import { query, request, workflowById } from "./api.js";
import { callerQuery } from "./caller.js";
import { alertRegion, el, facts, focus, view, warn } from "./dom.js";
import { time } from "./format.js";
import { inputSummary } from "./input.js";
import { draw, handled, isCurrent, messageOf, nextGeneration, route } from "./router.js";
import { approvalsSoFar, deadline, stepPosition } from "./steps.js";

/** @typedef {import("./types.js").InboxItem} InboxItem */
/** @typedef {import("./types.js").Workflow} Workflow */
/** @typedef {import("./types.js").Page<InboxItem>} InboxPage */

const PAGE_SIZE = 20;
/** @type {{ cursors: Array<string | null>, index: number }} */
let inboxPages = { cursors: [null], index: 0 };

/**
 * @param {number} current
 * @returns {Promise<HTMLElement | null>}
 */
export async function showInbox(current) {
  inboxPages = { cursors: [null], index: 0 };
  return drawInboxPage(current);
}

/** @returns {Promise<InboxPage>} */
async function loadInbox() {
  const cursor = inboxPages.cursors[inboxPages.index];
  return /** @type {InboxPage} */ (await request("GET", `/inbox${query({ ...callerQuery(), limit: PAGE_SIZE, cursor })}`));
}

/**
 * @param {number} current
 * @returns {Promise<HTMLElement | null>}
 */
async function drawInboxPage(current) {
  const page = await loadInbox();
  /** @type {Map<number, Workflow>} */
  const workflows = new Map();
  for (const id of new Set(page.items.map((run) => run.workflow_id))) workflows.set(id, await workflowById(id));
  const items = page.items.map((run) => inboxItem(run, workflows.get(run.workflow_id)));
  const pageNumber = inboxPages.index + 1;
  const pager = el(
    "div",
    { class: "actions pager" },
    inboxPages.index > 0 ? el("button", { type: "button", onclick: () => turnInboxPage(-1) }, "Previous page") : null,
    page.next_cursor
      ? el("button", { type: "button", onclick: () => turnInboxPage(+1, page.next_cursor) }, "Next page")
      : null,
    el("button", { type: "button", onclick: () => route() }, "Refresh"),
  );
  return draw(
    current,
    "Waiting for you",
    el("p", {}, "Runs whose current step is yours to decide, the longest waiting first."),
    pageNumber > 1 || page.next_cursor ? el("p", { class: "page-number" }, `Page ${pageNumber}`) : null,
    items.length ? el("ul", { class: "cards" }, items) : el("p", { class: "empty" }, "Nothing waits for you."),
    pager,
  );
}

/**
 * @param {number} step
 * @param {string | null} [nextCursor]
 */
async function turnInboxPage(step, nextCursor) {
  if (step > 0) inboxPages.cursors[inboxPages.index + 1] = nextCursor ?? null;
  inboxPages.index += step;
  const current = nextGeneration();
  view.setAttribute("aria-busy", "true");
  try {
    const title = await drawInboxPage(current);
    if (isCurrent(current)) focus(title);
  } catch (error) {
    if (!handled(error) && isCurrent(current)) {
      warn(messageOf(error));
      focus(alertRegion);
    }
  } finally {
    if (isCurrent(current)) view.removeAttribute("aria-busy");
  }
}

/**
 * @param {InboxItem} run
 * @param {Workflow | undefined} workflow
 * @returns {HTMLLIElement}
 */
function inboxItem(run, workflow) {
  const since = run.current_step_since || null;
  const behalf = typeof run.on_behalf_of === "string" && run.on_behalf_of ? run.on_behalf_of : null;
  return el(
    "li",
    { class: "card" },
    el("h2", { class: "card-title" }, el("a", { href: `#/runs/${run.id}${behalf ? query({ for: behalf }) : ""}` }, run.title)),
    behalf ? el("p", { class: "on-behalf" }, `On behalf of ${behalf}, who lent you their rights to decide.`) : null,
    inputSummary(run, workflow),
    facts([
      ["Workflow", workflow ? workflow.name : `Workflow ${run.workflow_id}`],
      ["Requested by", run.requested_by || "nobody named"],
      ["Current step", run.current_step ? stepPosition(run.current_step, workflow) : null],
      ["Approvals", approvalsSoFar(run)],
      [since ? "Waiting since" : "Last change", time(since || run.updated_at)],
      ["Deadline", deadline(run.current_step_due_at)],
    ]),
  );
}
