// An administrator edits a workflow as its next version: a form holding its
// newest version's whole definition (what POST /workflows/{id}/versions
// takes): the workflow's own fields, and a fieldset per step (stepform.js) in
// which steps are renamed, reordered, removed or added and every rule
// changed. The same draft can be edited as JSON text instead (advanced).
// "Show the changes" lists what differs from the newest version
// (versiondiff.js); "Publish" shows them first, then sends the draft with
// expected_version: an editor that read an older version is told (409) and
// offered the newest. Retire and reinstate beside it.
import { newKey, request, statusOf, submit, workflowById } from "./api.js";
import { el, focus, say, uid, warn } from "./dom.js";
import { asSentence } from "./format.js";
import { FLAG_HINTS, flagLabel } from "./policywords.js";
import { go, handled, messageOf } from "./router.js";
import { schemaField } from "./schemafields.js";
import { stepList } from "./stepform.js";
import { VERSIONS_PATH, changes, definitionOf, stepKey, stepsOf } from "./versiondiff.js";

/** @typedef {import("./api.js").ApiError} ApiError */
/** @typedef {import("./contract.js").Contract} Contract */
/** @typedef {import("./contract.js").FieldSpec} FieldSpec */
/** @typedef {import("./schemafields.js").SchemaField} SchemaField */
/** @typedef {import("./schemafields.js").Words} Words */
/** @typedef {import("./types.js").Workflow} Workflow */
/** @typedef {import("./versiondiff.js").Definition} Definition */
/** @typedef {{ definition: Definition, origins: Array<string | null> }} Draft */
/** @typedef {{ node: HTMLElement, read: () => Draft | null, clear: () => void }} DraftView */

// What a publish sends besides the definition; the steps have fieldsets of their own.
const NOT_OWN = ["steps", "expected_version"];
// The page's words for the workflow's own fields; a boolean one is a rule (policywords.js).
/** @type {{ [field: string]: Words }} */
const OWN_WORDS = {
  description: { label: "Description", lines: 3 },
  max_returns: { label: "How many times a run may be sent back for changes", hint: "Empty: the service's default." },
  input_schema: { label: "What a run's input must be (a JSON Schema)", hint: "Empty: any object.", lines: 4 },
};

/**
 * @param {FieldSpec} spec
 * @returns {Words}
 */
function ownWords(spec) {
  if (spec.kind === "boolean") return { label: flagLabel(spec.name), hint: FLAG_HINTS[spec.name] };
  return OWN_WORDS[spec.name] || { label: spec.name.replace(/_/g, " "), hint: spec.description };
}

/**
 * The editor of `workflow`'s next version, and its retire (or reinstate) button.
 * @param {Workflow} workflow
 * @param {Contract} contract
 * @returns {HTMLElement}
 */
export function versionEditor(workflow, contract) {
  const holder = el("div", {});
  /** @param {Workflow} newest */
  const load = (newest) => holder.replaceChildren(editForm(newest, contract, load), retireForm(newest));
  load(workflow);
  return holder;
}

/**
 * @param {Workflow} workflow
 * @param {Contract} contract
 * @param {(newest: Workflow) => void} reload Shows the editor again, of `newest`.
 * @returns {HTMLFormElement}
 */
function editForm(workflow, contract, reload) {
  const next = workflow.version + 1;
  const original = definitionOf(workflow, contract);
  const names = stepsOf(original).map((step) => String(step.name));
  let view = formView(original, names, contract);
  const jsonView = textView(next);
  let asText = false;
  const swap = el("button", { type: "button" }, "Edit as JSON text (advanced)");
  const place = el("div", {}, view.node);
  const diff = el("ul", { class: "changes" });
  const changesHeading = el("h4", { tabindex: "-1" }, "Changes");
  const stale = el("div", { class: "stale", hidden: true });
  let reviewed = "";
  /** @returns {Draft | null} */
  const draft = () => {
    view.clear();
    return asText ? jsonView.read() : view.read();
  };
  swap.addEventListener("click", () => {
    const edited = draft();
    if (!edited) return;
    if (asText) {
      // A step of the JSON text is known by its name only.
      const origins = stepsOf(edited.definition).map((step) => names.find((name) => stepKey(name) === stepKey(step.name)) || null);
      view = formView(edited.definition, origins, contract);
    } else {
      jsonView.set(edited.definition);
    }
    asText = !asText;
    place.replaceChildren(asText ? jsonView.node : view.node);
    swap.textContent = asText ? "Edit with the form" : "Edit as JSON text (advanced)";
    focus(swap);
  });
  /**
   * Show what the draft changes; the lines shown, or null where it cannot be read.
   * @returns {string | null}
   */
  const show = () => {
    const edited = draft();
    if (!edited) return null;
    const lines = changes(original, edited.definition, edited.origins);
    diff.replaceChildren(...(lines.length ? lines : ["Nothing changes."]).map((line) => el("li", {}, line)));
    return lines.join("\n");
  };
  const review = () => {
    const shown = show();
    if (shown === null) return;
    reviewed = shown;
    focus(changesHeading);
  };
  const form = el(
    "form",
    { class: "inline-form version-editor", novalidate: true, "aria-label": `Edit ${workflow.name} as version ${next}` },
    el("p", { class: "hint" }, `Version ${next} is published whole: runs in progress keep the version they started on. A step carries over by its name: a renamed step is a new step.`),
    el("div", { class: "actions" }, swap),
    place,
    el("div", { class: "actions" }, el("button", { type: "button", onclick: review }, "Show the changes"), el("button", { type: "submit", class: "primary" }, `Publish version ${next}`)),
    stale,
    changesHeading,
    diff,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const shown = show();
    if (shown === null) return;
    // The changes are seen before they are published: a draft whose changes were not shown yet is shown first.
    if (shown !== reviewed) {
      reviewed = shown;
      say(shown ? `Check the changes below, then publish version ${next}.` : "Nothing changes: there is nothing to publish.");
      return focus(changesHeading);
    }
    if (!shown) return say("Nothing changes: there is nothing to publish.");
    const body = { ...(/** @type {Draft} */ (draft()).definition), expected_version: workflow.version };
    await submit(
      form,
      async () => /** @type {Workflow} */ (await request("POST", `/workflows/${workflow.id}/versions`, body, newKey())),
      (published) => go("#/workflows", { status: `${published.name}: version ${published.version} published. Runs in progress keep their own.` }),
      (error) => (statusOf(error) === 409 ? staleEditor(stale, workflow, error, reload) : byTheField(asText ? null : view.fieldOf(error.message), error.message)),
    );
  });
  return form;
}

/**
 * Say that another version was published since this editor read its own, and
 * offer the newest (this draft's changes are then gone: the JSON view holds them to copy).
 * @param {HTMLElement} box
 * @param {Workflow} workflow
 * @param {ApiError} error
 * @param {(newest: Workflow) => void} reload
 * @returns {true}
 */
function staleEditor(box, workflow, error, reload) {
  const again = el("button", { type: "button" }, "Load the newest version");
  again.addEventListener("click", async () => {
    again.disabled = true;
    try {
      const newest = await workflowById(workflow.id, true);
      reload(newest);
      say(`Version ${newest.version} of ${newest.name} loaded: edit it as version ${newest.version + 1}.`);
    } catch (failure) {
      again.disabled = false;
      if (!handled(failure)) warn(messageOf(failure));
    }
  });
  const said = `Not published: ${workflow.name} changed since this editor read version ${workflow.version}. ${asSentence(error.message)}`;
  box.replaceChildren(el("p", { class: "field-error" }, said, " Your changes here are not kept when you load the newest version: copy them from the JSON text first if you need them."), again);
  box.hidden = false;
  warn(said);
  focus(again);
  return true;
}

/**
 * Say a refusal of the service by the field it is about, where the form tells.
 * @param {SchemaField | null} field
 * @param {string} message
 * @returns {boolean}
 */
function byTheField(field, message) {
  if (!field) return false;
  refused(field, asSentence(message));
  return true;
}

/**
 * The draft as a form: the workflow's own fields, then its steps.
 * @param {Definition} definition
 * @param {Array<string | null>} origins
 * @param {Contract} contract
 * @returns {DraftView & { fieldOf: (message: string) => SchemaField | null }}
 */
function formView(definition, origins, contract) {
  const own = contract.fields(VERSIONS_PATH).filter((spec) => !NOT_OWN.includes(spec.name));
  const fields = own.map((spec) => schemaField(spec, definition[spec.name], ownWords(spec)));
  const steps = stepList(stepsOf(definition), origins, contract, VERSIONS_PATH);
  /** @returns {Draft | null} */
  const read = () => {
    /** @type {Definition} */
    const edited = {};
    for (const field of fields) {
      const value = field.read();
      if ("problem" in value) return refused(field, value.problem);
      if (value.value !== undefined) edited[field.spec.name] = value.value;
    }
    const listed = steps.read();
    if ("problem" in listed) return refused(listed.field, listed.problem);
    return { definition: { ...edited, steps: listed.steps }, origins: listed.origins };
  };
  const node = el(
    "div",
    {},
    el("fieldset", { class: "step-fields" }, el("legend", {}, "The workflow"), fields.map((field) => field.node)),
    el("h4", {}, "Steps"),
    steps.node,
  );
  const clear = () => {
    fields.forEach((field) => field.clear());
    steps.clear();
  };
  /** @param {string} message */
  const fieldOf = (message) => steps.fieldOf(message) || fields.find((field) => message.includes(`'${field.spec.name}'`)) || null;
  return { node, read, clear, fieldOf };
}

/**
 * A field refused before sending: why, by the field, which gets the focus.
 * @param {SchemaField} field
 * @param {string} problem
 * @returns {null}
 */
function refused(field, problem) {
  field.show(problem);
  warn(problem);
  focus(field.control);
  return null;
}

/**
 * The draft as JSON text.
 * @param {number} next
 * @returns {DraftView & { set: (definition: Definition) => void }}
 */
function textView(next) {
  const box = el("textarea", { id: uid("definition"), name: "definition", rows: "16", spellcheck: "false" });
  const node = el("div", { class: "field" }, el("label", { for: box.id }, `Version ${next}: the whole definition, as JSON`), box);
  /** @returns {Draft | null} */
  const read = () => {
    try {
      const parsed = JSON.parse(box.value);
      if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) return { definition: parsed, origins: [] };
    } catch {
      // said below
    }
    warn("The definition is not a JSON object.");
    focus(box);
    return null;
  };
  return { node, read, clear: () => undefined, set: (definition) => (box.value = JSON.stringify(definition, null, 2)) };
}

/**
 * Retire `workflow` (no new runs), or reinstate it.
 * @param {Workflow} workflow
 * @returns {HTMLFormElement}
 */
function retireForm(workflow) {
  const verb = workflow.retired ? "reinstate" : "retire";
  const flip = el("form", { class: "inline-form" }, el("button", { type: "submit" }, workflow.retired ? "Reinstate" : "Retire (no new runs)"));
  flip.addEventListener("submit", async (event) => {
    event.preventDefault();
    await submit(flip, async () => /** @type {Workflow} */ (await request("POST", `/workflows/${workflow.id}/${verb}`, {}, newKey())), (changed) =>
      go("#/workflows", { status: `${changed.name} ${changed.retired ? "is retired: it starts no new runs" : "is reinstated"}.` }),
    );
  });
  return flip;
}
