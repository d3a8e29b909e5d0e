// An administrator edits a workflow as its next version: its newest version's
// whole definition (what POST /workflows/{id}/versions takes) as JSON text,
// in which steps can be renamed, reordered, removed or added and any rule
// changed; "Show the changes" lists what differs from the newest version, a
// step being the same step where its name is (docs/versions.md); "Publish"
// sends it with expected_version, so an editor that read an older version is
// told (409). Retire and reinstate beside it.
import { newKey, request, submit } from "./api.js";
import { el, refuse, uid } from "./dom.js";
import { go } from "./router.js";

/** @typedef {import("./types.js").Step} Step */
/** @typedef {import("./types.js").Workflow} Workflow */
/** @typedef {{ [field: string]: unknown }} Definition */

// A step's rules as a definition gives them, and a workflow's own fields.
const STEP_RULES = /** @type {const} */ (["approvers", "required_approvals", "deadline_seconds", "on_deadline", "escalate_to", "when", "notify"]);
const OWN_FIELDS = /** @type {const} */ (["description", "allow_self_approval", "distinct_approvers", "reject_requires_comment", "max_returns", "input_schema"]);

/**
 * The definition of `workflow`'s version, as POST /workflows/{id}/versions takes it.
 * @param {Workflow} workflow
 * @returns {Definition}
 */
export function definitionOf(workflow) {
  /** @type {Definition} */
  const definition = {};
  for (const field of OWN_FIELDS) definition[field] = workflow[field];
  definition.steps = workflow.steps.map((step) => {
    /** @type {Definition} */
    const rules = { name: step.name };
    for (const rule of STEP_RULES) {
      const value = step[rule];
      if (value !== null && !(Array.isArray(value) && !value.length && (rule === "escalate_to" || rule === "notify"))) rules[rule] = value;
    }
    return rules;
  });
  return definition;
}

/**
 * What `after` changes of `before`, in words, one line each: by step name.
 * @param {Definition} before
 * @param {Definition} after
 * @returns {string[]}
 */
export function changes(before, after) {
  const lines = [];
  for (const field of OWN_FIELDS) {
    if (shown(before[field]) !== shown(after[field])) lines.push(`${field}: ${shown(before[field])} → ${shown(after[field])}`);
  }
  const was = stepsOf(before);
  const now = stepsOf(after);
  const names = was.map((step) => step.name);
  now.forEach((step, index) => {
    const old = was.find((candidate) => candidate.name === step.name);
    if (!old) {
      lines.push(`Step ${index + 1}, ${step.name}: added`);
      return;
    }
    const from = names.indexOf(step.name) + 1;
    if (from !== index + 1) lines.push(`Step ${step.name}: moved from ${from} to ${index + 1}`);
    for (const rule of STEP_RULES) {
      const [a, b] = [shown(old[rule]), shown(step[rule])];
      if (a !== b) lines.push(`Step ${step.name}, ${rule}: ${a} → ${b}`);
    }
  });
  for (const old of was) if (!now.some((step) => step.name === old.name)) lines.push(`Step ${old.name}: removed`);
  return lines;
}

/**
 * A field's value in a change's words: left out, it is the API's default.
 * @param {unknown} value
 * @returns {string}
 */
function shown(value) {
  return value === undefined ? "(the default)" : JSON.stringify(value);
}

/**
 * @param {Definition} definition
 * @returns {Definition[]}
 */
function stepsOf(definition) {
  const steps = Array.isArray(definition.steps) ? definition.steps : [];
  return steps.map((step) => (typeof step === "string" ? { name: step } : /** @type {Definition} */ (step)));
}

/**
 * The editor of `workflow`'s next version, and its retire (or reinstate) button.
 * @param {Workflow} workflow
 * @returns {HTMLElement}
 */
export function versionEditor(workflow) {
  const textId = uid("definition");
  const original = definitionOf(workflow);
  const text = el("textarea", { id: textId, name: "definition", rows: "12", spellcheck: "false" });
  text.value = JSON.stringify(original, null, 2);
  const diff = el("ul", { class: "changes", "aria-live": "polite" });
  /** @returns {Definition | null} */
  const read = () => {
    try {
      const parsed = JSON.parse(text.value);
      if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) return parsed;
    } catch {
      // said below
    }
    refuse(text, "The definition is not a JSON object.");
    return null;
  };
  const show = () => {
    const edited = read();
    if (!edited) return;
    const lines = changes(original, edited);
    diff.replaceChildren(...(lines.length ? lines : ["Nothing changes."]).map((line) => el("li", {}, line)));
  };
  const form = el(
    "form",
    { class: "inline-form", novalidate: true, "aria-label": `Edit ${workflow.name} as version ${workflow.version + 1}` },
    el("div", { class: "field" }, el("label", { for: textId }, `Version ${workflow.version + 1}: the whole definition`), text),
    el("div", { class: "actions" }, el("button", { type: "button", onclick: show }, "Show the changes"), el("button", { type: "submit", class: "primary" }, "Publish")),
    el("h4", {}, "Changes"),
    diff,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const edited = read();
    if (!edited) return;
    show();
    const body = { ...edited, expected_version: workflow.version };
    await submit(form, async () => /** @type {Workflow} */ (await request("POST", `/workflows/${workflow.id}/versions`, body, newKey())), (published) =>
      go("#/workflows", { status: `${published.name}: version ${published.version} published. Runs in progress keep their own.` }),
    );
  });
  const verb = workflow.retired ? "reinstate" : "retire";
  const flip = el("form", { class: "inline-form" }, el("button", { type: "submit" }, workflow.retired ? "Reinstate" : "Retire (no new runs)"));
  flip.addEventListener("submit", async (event) => {
    event.preventDefault();
    await submit(flip, async () => /** @type {Workflow} */ (await request("POST", `/workflows/${workflow.id}/${verb}`, {}, newKey())), (changed) =>
      go("#/workflows", { status: `${changed.name} ${changed.retired ? "is retired: it starts no new runs" : "is reinstated"}.` }),
    );
  });
  return el("div", {}, form, flip);
}
