// Workflows (#/workflows): every workflow with its rules and its steps (and
// when each applies), a form to start a run of each, with its input; and,
// for those who may (anyone without sign-in, the admin group with tokens),
// the forms that define a workflow and append a step.
import { newKey, query, rememberWorkflow, request, statusOf, submit } from "./api.js";
import { ADMIN_GROUP, MODE, isAdmin, me, signedIn } from "./caller.js";
import { stepWhen } from "./conditions.js";
import { readContract } from "./contract.js";
import { versionEditor } from "./editor.js";
import { el, explainer, focus, refuse, uid, warn } from "./dom.js";
import { asSentence, capitalised, plural, splitList } from "./format.js";
import { fieldOfError, runInputFields } from "./inputform.js";
import { FLAG_HINTS, flagLabel, flagText } from "./policywords.js";
import { draw, go, handled, messageOf } from "./router.js";
import { skippedText, stepRules } from "./steps.js";

/** @typedef {import("./contract.js").Contract} Contract */
/** @typedef {import("./types.js").Run} Run */
/** @typedef {import("./types.js").Step} Step */
/** @typedef {import("./types.js").Workflow} Workflow */
/** @typedef {import("./types.js").Page<Workflow>} WorkflowPage */
/** @typedef {{ [field: string]: unknown }} NewStep What a step's inputs send. */
/** @typedef {{ node: HTMLElement, read: () => NewStep, first: HTMLInputElement }} StepInputs */

const PAGE_SIZE = 20;
/** @type {{ [outcome: string]: string }} */
const ON_DEADLINE_OPTIONS = { remind: "Remind the approvers", reject: "Reject the run" };

/**
 * @param {number} current
 * @returns {Promise<HTMLElement | null>}
 */
export async function showWorkflows(current) {
  const contract = await readContract();
  const admin = isAdmin(me());
  const list = el("ul", { class: "cards" });
  const more = el("div", { class: "actions" });
  /** @param {string | null} cursor */
  const load = async (cursor) => {
    const page = /** @type {WorkflowPage} */ (await request("GET", `/workflows${query({ limit: PAGE_SIZE, cursor })}`));
    for (const workflow of page.items) {
      rememberWorkflow(workflow);
      list.append(workflowCard(workflow, contract, admin));
    }
    /** @param {Event} event */
    const showMore = async (event) => {
      /** @type {HTMLButtonElement} */ (event.target).disabled = true;
      await load(page.next_cursor).catch((error) => handled(error) || warn(messageOf(error)));
    };
    more.replaceChildren(
      page.next_cursor
        ? el("button", { type: "button", onclick: showMore }, "Show more workflows")
        : el("p", { class: "empty" }, list.children.length ? "That is every workflow." : admin ? "No workflow yet: define the first one below." : "No workflow yet."),
    );
  };
  await load(null);
  return draw(
    current,
    "Workflows",
    el("section", { "aria-labelledby": "defined-heading" }, el("h2", { id: "defined-heading" }, "Defined workflows"), list, more),
    admin
      ? defineForm(contract)
      : el("p", { class: "panel" }, `Defining workflows and appending steps is for members of the ${ADMIN_GROUP} group, which your token does not list. You may start runs of the workflows above.`),
  );
}

/**
 * @param {Workflow} workflow
 * @param {Contract} contract
 * @param {boolean} admin
 * @returns {HTMLLIElement}
 */
function workflowCard(workflow, contract, admin) {
  /** @type {Array<[string, boolean]>} */
  const flags = [];
  for (const [name, value] of Object.entries(workflow)) if (typeof value === "boolean" && name !== "retired") flags.push([name, value]);
  return el(
    "li",
    { class: "card" },
    el("h3", { class: "card-title" }, workflow.name, workflow.retired ? el("span", { class: "badge" }, " retired") : null),
    el("p", { class: "version" }, `Version ${workflow.version}`),
    workflow.description ? el("p", {}, workflow.description) : null,
    el("p", {}, el("a", { href: `#/workflows/${workflow.id}` }, `How long ${workflow.name} takes`)),
    flags.length ? [el("h4", {}, "Rules"), el("ul", { class: "flags" }, flags.map(([name, value]) => el("li", {}, flagText(name, value))))] : null,
    el("h4", {}, "Steps"),
    workflow.steps.length
      ? el("ol", { class: "steps" }, workflow.steps.map((step) => el("li", {}, el("span", { class: "step-name" }, step.name), stepWhen(step, null), stepRules(step))))
      : el("p", { class: "empty" }, admin ? "No step yet: append one before starting runs." : "No step yet: runs can start once an administrator appends one."),
    // A workflow without steps, or retired, cannot start a run (the API answers 409): not offered.
    workflow.steps.length && !workflow.retired ? el("details", {}, el("summary", {}, "Start a run"), startRunForm(workflow, contract)) : null,
    admin ? el("details", {}, el("summary", {}, "Append a step"), appendStepForm(workflow, contract)) : null,
    admin ? builtWhenOpened("Edit as a new version, or retire", () => versionEditor(workflow, contract)) : null,
  );
}

/**
 * A disclosure whose content is built when it is first opened: the version
 * editor is a form of every step, wanted on the one card being edited.
 * @param {string} summary
 * @param {() => HTMLElement} build
 * @returns {HTMLDetailsElement}
 */
function builtWhenOpened(summary, build) {
  const details = el("details", {}, el("summary", {}, summary));
  details.addEventListener("toggle", () => {
    if (details.open && details.children.length === 1) details.append(build());
  });
  return details;
}

/**
 * The inputs of one step (name, who may decide, approvals needed, deadline),
 * and how to read them.
 * @param {Contract} contract
 * @param {string | null} legend
 * @returns {StepInputs}
 */
function stepInputs(contract, legend) {
  /** @type {{ [key: string]: HTMLInputElement | HTMLSelectElement }} */
  const inputs = {};
  /** @type {HTMLElement[]} */
  const rows = [];
  /**
   * @param {string} key
   * @param {string} label
   * @param {HTMLInputElement | HTMLSelectElement} input
   * @param {string} [hint]
   */
  const field = (key, label, input, hint) => {
    const id = uid(key);
    input.id = id;
    inputs[key] = input;
    const hintId = hint ? uid("hint") : null;
    if (hintId) input.setAttribute("aria-describedby", hintId);
    rows.push(el("div", { class: "field" }, el("label", { for: id }, label), hint ? el("p", { class: "hint", id: hintId }, hint) : null, input));
  };
  const name = el("input", { type: "text", name: "name", required: true, maxlength: contract.maxLength("/workflows/{workflow_id}/steps", "name") });
  field("name", "Step name", name);
  field("approvers", "Who may decide", el("input", { type: "text", name: "approvers", autocomplete: "off" }), "People as user:name and groups as group:name, separated by commas (for example: group:finance, user:cfo). Leave it empty to let anyone decide.");
  // The quorum's bounds are the document's, as every other limit on the page.
  const quorum = contract.fields("/workflows/{workflow_id}/steps").find((spec) => spec.name === "required_approvals");
  const bounds = { min: String(quorum?.minimum ?? 1), ...(typeof quorum?.maximum !== "number" ? {} : { max: String(quorum.maximum) }) };
  field("required_approvals", "Approvals needed", el("input", { type: "number", name: "required_approvals", ...bounds, step: "1", value: "1", inputmode: "numeric" }));
  field("deadline_hours", "Deadline, in hours after the step starts", el("input", { type: "number", name: "deadline_hours", min: "0", step: "any", inputmode: "decimal" }), "Leave it empty for no deadline.");
  // Escalating needs whom to escalate to, which this form does not ask: not offered.
  const outcomes = contract.onDeadline.filter((value) => value !== "escalate");
  const select = el("select", { name: "on_deadline" }, outcomes.map((value) => el("option", { value }, ON_DEADLINE_OPTIONS[value] || capitalised(value.replace(/_/g, " ")))));
  field("on_deadline", "When the deadline passes", select);
  const read = () => {
    /** @type {NewStep} */
    const step = { name: name.value.trim() };
    if (inputs.approvers.value.trim()) step.approvers = splitList(inputs.approvers.value);
    if (inputs.required_approvals.value && inputs.required_approvals.value !== "1") {
      step.required_approvals = Number(inputs.required_approvals.value);
    }
    if (inputs.deadline_hours.value) {
      step.deadline_seconds = Math.round(Number(inputs.deadline_hours.value) * 3600);
      step.on_deadline = inputs.on_deadline.value;
    }
    return step;
  };
  const node = legend ? el("fieldset", { class: "step-fields" }, el("legend", {}, legend), rows) : el("div", {}, rows);
  return { node, read, first: name };
}

/**
 * Start a run of `workflow`: its title and its input.
 * @param {Workflow} workflow
 * @param {Contract} contract
 * @returns {HTMLFormElement}
 */
function startRunForm(workflow, contract) {
  const titleId = uid("title");
  const title = el("input", { id: titleId, name: "title", type: "text", required: true, maxlength: contract.maxLength("/runs", "title") });
  // What is being approved: a field per property of the workflow's schema, or a JSON box.
  const input = runInputFields(workflow);
  const problem = el("p", { class: "field-error form-error", tabindex: "-1", hidden: true });
  const form = el(
    "form",
    { class: "inline-form", novalidate: true },
    el("div", { class: "field" }, el("label", { for: titleId }, `Title of the new run of ${workflow.name}`), title),
    input.nodes,
    problem,
    el("div", { class: "actions" }, el("button", { type: "submit", class: "primary" }, "Start run")),
  );
  const clear = () => {
    problem.textContent = "";
    problem.hidden = true;
    for (const field of input.fields) field.clear();
  };
  const explain = explainer(problem);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clear();
    if (!title.value.trim()) return refuse(title, "Give the run a title.");
    /** @type {{ [field: string]: unknown }} */
    const body = { workflow_id: workflow.id, title: title.value.trim() };
    if (MODE === "none") body.requested_by = signedIn().actor;
    const read = input.read();
    if ("problem" in read) return explain(read.field, read.problem);
    if (Object.keys(read.input).length) body.input = read.input;
    await submit(
      form,
      async () => /** @type {Run} */ (await request("POST", "/runs", body, newKey())),
      (run) => go(`#/runs/${run.id}`, { status: startedText(run) }),
      (error) => {
        const status = statusOf(error);
        if (status === 413) {
          explain(fieldOfError(input.fields, error.message), `The input is too large for the service, which takes at most 32 KiB of it: ${asSentence(error.message)}`);
        } else {
          explain(status === 400 || status === 422 ? fieldOfError(input.fields, error.message) : null, asSentence(error.message));
        }
        return true;
      },
    );
  });
  return form;
}

/**
 * Where a run just started is: at its first step, past the steps that do not
 * apply to its input, or completed when none does.
 * @param {Run} run
 * @returns {string}
 */
function startedText(run) {
  const skipped = skippedText(run.actions || []);
  if (run.status === "completed") return `Run ${run.id} started and is completed: none of its steps applies to its input.${skipped}`;
  if (!skipped || !run.current_step) return `Run ${run.id} started: it waits at its first step.`;
  return `Run ${run.id} started: it waits at step ${run.current_step.step_order}, ${run.current_step.name}.${skipped}`;
}

/**
 * @param {Workflow} workflow
 * @param {Contract} contract
 * @returns {HTMLFormElement}
 */
function appendStepForm(workflow, contract) {
  const step = stepInputs(contract, null);
  const form = el("form", { class: "inline-form", novalidate: true }, step.node, el("div", { class: "actions" }, el("button", { type: "submit", class: "primary" }, "Append step")));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = step.read();
    if (!body.name) return refuse(step.first, "Give the step a name.");
    await submit(form, async () => /** @type {Step} */ (await request("POST", `/workflows/${workflow.id}/steps`, body, newKey())), (created) =>
      go("#/workflows", { status: `Step ${created.step_order}, ${created.name}, appended to ${workflow.name}.` }),
    );
  });
  return form;
}

/**
 * Define a workflow: its name, description, rules and first steps.
 * @param {Contract} contract
 * @returns {HTMLFormElement}
 */
function defineForm(contract) {
  const nameId = uid("workflow-name");
  const descriptionId = uid("description");
  const name = el("input", { id: nameId, name: "name", type: "text", required: true, maxlength: contract.maxLength("/workflows", "name") });
  const description = el("textarea", { id: descriptionId, name: "description", rows: "2", maxlength: contract.maxLength("/workflows", "description") });
  const flags = contract.flags.map((flag) => {
    const id = uid(flag);
    // The page's own words: the contract's descriptions are written for programmers.
    const hint = FLAG_HINTS[flag];
    const hintId = hint ? uid("hint") : null;
    const box = el("input", { id, type: "checkbox", name: flag, "aria-describedby": hintId });
    return { flag, box, node: el("div", { class: "check" }, box, el("label", { for: id }, flagLabel(flag)), hintId ? el("p", { class: "hint", id: hintId }, hint) : null) };
  });
  /** @type {Array<StepInputs & { remove: HTMLButtonElement, legend: HTMLElement }>} */
  const steps = [];
  const stepList = el("div", { class: "step-list" });
  const renumber = () => {
    steps.forEach((step, index) => {
      step.legend.textContent = `Step ${index + 1}`;
      step.remove.hidden = steps.length === 1;
      step.remove.textContent = `Remove step ${index + 1}`;
    });
  };
  const addStep = () => {
    const inputs = stepInputs(contract, "Step");
    const remove = el("button", { type: "button", class: "link-button" }, "Remove");
    const entry = { ...inputs, remove, legend: /** @type {HTMLElement} */ (inputs.node.querySelector("legend")) };
    remove.addEventListener("click", () => {
      steps.splice(steps.indexOf(entry), 1);
      inputs.node.remove();
      renumber();
      focus(steps[steps.length - 1].first);
    });
    inputs.node.append(remove);
    steps.push(entry);
    stepList.append(inputs.node);
    renumber();
    return entry;
  };
  addStep();
  const form = el(
    "form",
    { class: "panel", novalidate: true, "aria-labelledby": "define-heading" },
    el("h2", { id: "define-heading" }, "Define a workflow"),
    el("div", { class: "field" }, el("label", { for: nameId }, "Name"), name),
    el("div", { class: "field" }, el("label", { for: descriptionId }, "Description (optional)"), description),
    flags.map((flag) => flag.node),
    stepList,
    el(
      "div",
      { class: "actions" },
      el("button", { type: "button", onclick: () => focus(addStep().first) }, "Add another step"),
      el("button", { type: "submit", class: "primary" }, "Define workflow"),
    ),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!name.value.trim()) return refuse(name, "Give the workflow a name.");
    const read = steps.map((step) => step.read());
    const unnamed = read.findIndex((step) => !step.name);
    if (unnamed >= 0) return refuse(steps[unnamed].first, `Give step ${unnamed + 1} a name.`);
    /** @type {{ [field: string]: unknown }} */
    const body = { name: name.value.trim(), steps: read.map((step) => (Object.keys(step).length === 1 ? step.name : step)) };
    if (description.value.trim()) body.description = description.value;
    for (const { flag, box } of flags) if (box.checked) body[flag] = true;
    await submit(form, async () => /** @type {Workflow} */ (await request("POST", "/workflows", body, newKey())), (workflow) =>
      go("#/workflows", { status: `Workflow ${workflow.name} defined with ${plural(workflow.steps.length, "step", "steps")}.` }),
    );
  });
  return form;
}
