// The steps of a workflow's next version as a form (the version editor's,
// editor.js): a fieldset per step with a field for each rule a step carries
// (the document's NewStep: name, who may decide, approvals needed, its
// condition, its deadline and what it does, and any rule added later), and
// buttons that move it up or down or remove it; "Add a step" below. Each step
// remembers the name it had in the version being edited, so that the diff
// can say which step was renamed.
import { el, focus } from "./dom.js";
import { schemaField } from "./schemafields.js";
import { stepKey } from "./versiondiff.js";

/** @typedef {import("./contract.js").Contract} Contract */
/** @typedef {import("./contract.js").FieldSpec} FieldSpec */
/** @typedef {import("./schemafields.js").SchemaField} SchemaField */
/** @typedef {import("./schemafields.js").Words} Words */
/** @typedef {{ [field: string]: unknown }} StepRules A step as POST /workflows/{id}/versions takes it. */

/**
 * The steps as the form holds them, or the first field that cannot be sent.
 * @typedef {{ steps: StepRules[], origins: Array<string | null> } | { field: SchemaField, problem: string }} StepsRead
 */

/**
 * @typedef {object} StepList
 * @property {HTMLElement} node
 * @property {() => StepsRead} read
 * @property {() => void} clear
 * @property {(message: string) => SchemaField | null} fieldOf The field an error of the service is about, where it names a step.
 */

/** @typedef {{ origin: string | null, fields: SchemaField[], node: HTMLLIElement, legend: HTMLLegendElement, up: HTMLButtonElement, down: HTMLButtonElement, remove: HTMLButtonElement }} Card */

// The page's words for the rules a step carries today; a rule the document
// adds later is offered under its own name, its description as the hint.
/** @type {{ [rule: string]: Words }} */
const STEP_WORDS = {
  name: { label: "Step name" },
  approvers: { label: "Who may decide", hint: "One user:name or group:name a line. Empty: anyone." },
  required_approvals: { label: "Approvals needed", hint: "How many of them must approve. Empty: one." },
  deadline_seconds: { label: "Deadline, in hours after the step starts", hint: "Empty: no deadline.", hours: true },
  on_deadline: {
    label: "When the deadline passes",
    choices: { "": "(no deadline, or remind)", remind: "Remind the approvers", escalate: "Let others decide it too (escalate)", reject: "Reject the run" },
  },
  escalate_to: { label: "Who may decide once the deadline passed", hint: "With escalate only: one user:name or group:name a line." },
  when: { label: "Applies only if (a condition, as JSON Logic)", hint: "Empty: always." },
  notify: {
    label: "Who else is told when a run arrives",
    hint: "One user:name or group:name a line. On a step anyone may decide, they are the ones asked; otherwise they are told, with the run's page only.",
  },
};

/**
 * The words a step's rule is offered with.
 * @param {FieldSpec} spec
 * @returns {Words}
 */
function stepWords(spec) {
  const words = STEP_WORDS[spec.name] || { label: spec.name.replace(/_/g, " "), hint: spec.description };
  if (spec.kind !== "json" || spec.example === undefined) return words;
  return { ...words, hint: `${words.hint || ""} For example: ${JSON.stringify(spec.example)}`.trim() };
}

/**
 * The form's steps, starting as `steps` (with, for each, the name it has in
 * the version edited, null for none).
 * @param {StepRules[]} steps
 * @param {Array<string | null>} origins
 * @param {Contract} contract
 * @param {string} path The route whose body's steps these are.
 * @returns {StepList}
 */
export function stepList(steps, origins, contract, path) {
  const specs = contract.stepFields(path);
  const most = contract.maxSteps(path);
  /** @type {Card[]} */
  const cards = [];
  const list = el("ol", { class: "step-cards" });
  const add = el("button", { type: "button" }, "Add a step");
  const renumber = () => {
    cards.forEach((card, index) => {
      card.legend.textContent = `Step ${index + 1}`;
      card.up.textContent = `Move step ${index + 1} up`;
      card.down.textContent = `Move step ${index + 1} down`;
      card.remove.textContent = `Remove step ${index + 1}`;
      card.up.disabled = index === 0;
      card.down.disabled = index === cards.length - 1;
    });
    add.disabled = most !== null && cards.length >= most;
    list.replaceChildren(...cards.map((card) => card.node));
  };
  /**
   * @param {Card} card
   * @param {number} by -1 (up) or 1 (down)
   */
  const move = (card, by) => {
    const from = cards.indexOf(card);
    cards.splice(from, 1);
    cards.splice(from + by, 0, card);
    renumber();
    // The focus stays with the step, on the button that can still move it.
    const same = by < 0 ? card.up : card.down;
    focus(same.disabled ? (by < 0 ? card.down : card.up) : same);
  };
  /**
   * @param {StepRules} rules
   * @param {string | null} origin
   * @returns {Card}
   */
  const cardOf = (rules, origin) => {
    const fields = specs.map((spec) => schemaField(spec, rules[spec.name], stepWords(spec)));
    const legend = el("legend", {});
    const up = el("button", { type: "button", class: "link-button" });
    const down = el("button", { type: "button", class: "link-button" });
    const remove = el("button", { type: "button", class: "link-button" });
    const fieldset = el("fieldset", { class: "step-fields" }, legend, fields.map((field) => field.node), el("div", { class: "actions" }, up, down, remove));
    /** @type {Card} */
    const card = { origin, fields, node: el("li", {}, fieldset), legend, up, down, remove };
    up.addEventListener("click", () => move(card, -1));
    down.addEventListener("click", () => move(card, 1));
    remove.addEventListener("click", () => {
      const at = cards.indexOf(card);
      cards.splice(at, 1);
      renumber();
      focus(cards[Math.min(at, cards.length - 1)]?.fields[0].control || add);
    });
    return card;
  };
  steps.forEach((rules, index) => cards.push(cardOf(rules, origins[index])));
  add.addEventListener("click", () => {
    const card = cardOf({}, null);
    cards.push(card);
    renumber();
    focus(card.fields[0].control);
  });
  renumber();
  return {
    node: el("div", { class: "step-list" }, list, el("div", { class: "actions" }, add)),
    read: () => readCards(cards),
    clear: () => cards.forEach((card) => card.fields.forEach((field) => field.clear())),
    fieldOf: (message) => fieldOfError(cards, message),
  };
}

/**
 * @param {Card[]} cards
 * @returns {StepsRead}
 */
function readCards(cards) {
  /** @type {StepRules[]} */
  const steps = [];
  for (const [index, card] of cards.entries()) {
    /** @type {StepRules} */
    const rules = {};
    for (const field of card.fields) {
      const read = field.read();
      if ("problem" in read) return { field, problem: `Step ${index + 1}: ${read.problem}` };
      if (read.value !== undefined) rules[field.spec.name] = read.value;
      else if (field.spec.required) return { field, problem: `Give step ${index + 1} a ${STEP_WORDS[field.spec.name]?.label.toLowerCase() || field.spec.name}.` };
    }
    steps.push(rules);
  }
  return { steps, origins: cards.map((card) => card.origin) };
}

/**
 * The field an error of the service is about: in the step it names ("Step
 * 'B' requires 3 approvals ..."), the rule it quotes ('when'), else its name.
 * @param {Card[]} cards
 * @param {string} message
 * @returns {SchemaField | null}
 */
function fieldOfError(cards, message) {
  const named = /\bStep (?:'([^']*)'|"([^"]*)")/.exec(message);
  if (!named) return null;
  const name = stepKey(named[1] ?? named[2]);
  const card = cards.find((each) => stepKey(each.fields[0].control.value) === name);
  if (!card) return null;
  return card.fields.find((field) => message.includes(`'${field.spec.name}'`)) || card.fields[0];
}
