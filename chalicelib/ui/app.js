// The approvers' page: views over the JSON API of the app that serves it.
//
// Views are hash routes, so every link can be shared and reloads where it was:
// #/inbox, #/runs/42 (#/runs/42?for=bob: decided on bob's behalf), #/workflows,
// #/delegations (rights to decide lent and lent to me), #/me (who am I). What the API sends reaches
// the DOM only as text, in elements made here (textContent, createElement):
// never as markup. Every decision sends the step it was made on
// (expected_step_id) and a fresh Idempotency-Key, so a stale page cannot
// decide another step and a retried request is not recorded twice.
//
// What this server accepts is read from its own contract, GET /openapi.json:
// the inbox, cancel and permissions routes, and the fields of steps, workflows,
// runs and decisions (approvers, quorum, deadline, a run's input), so the page
// offers exactly those. A run's input (what is being approved) is shown as
// text, the fields its workflow's schema names first; the start form offers a
// field per property of that schema; a step's condition is said in the
// service's own words ("only if amount > 10000"), and a step a run skipped
// because of it is shown as skipped.
// What the caller may do with a run is the API's to say, GET
// /runs/{id}/permissions: the page offers those actions only (send back for
// changes and resubmit among them), and says in words why the others are not
// offered. A run's steps show its current round; its history, every round.
"use strict";

(() => {
  const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.getAttribute("content") ?? "";
  const BASE = meta("api-base");
  const MODE = meta("auth-mode") === "none" ? "none" : "jwt";
  const ACTOR_CLAIM = meta("actor-claim") || "sub";
  const GROUPS_CLAIM = meta("groups-claim") || "groups";
  const ADMIN_GROUP = meta("admin-group") || "workflow-admins";
  const PAGE_SIZE = 20;
  const KEYS = { actor: "approvals.actor", groups: "approvals.groups", token: "approvals.token", next: "approvals.next" };
  // Times in the reader's own zone, and saying which it is.
  const DATE = new Intl.DateTimeFormat(undefined, { year: "numeric", month: "short", day: "numeric", hour: "numeric", minute: "2-digit", timeZoneName: "short" });
  const STATUS_TEXT = { in_progress: "In progress", returned: "Sent back for changes", completed: "Completed", rejected: "Rejected", cancelled: "Cancelled" };
  const ENDED = { completed: "completed", rejected: "rejected", cancelled: "cancelled" };
  const DECIDED = { approve: "approved", reject: "rejected", cancel: "cancelled the run", return: "sent it back for changes", resubmit: "resubmitted the run" };
  // How a step's own list of decisions says each ("Approved by ann").
  const STEP_DECIDED = { approve: "Approved", reject: "Rejected", cancel: "Cancelled the run", return: "Sent back for changes", resubmit: "Resubmitted" };
  // Who acts for the service itself: a step skipped by its condition.
  const SERVICE_ACTORS = new Map([["system:conditions", "The service"]]);
  const ACTIONS = ["approve", "reject", "return", "resubmit", "cancel"];
  const ACTION_NAMES = { approve: "Approve", reject: "Reject", return: "Send back for changes", resubmit: "Resubmit", cancel: "Cancel" };
  // A delegation's state, in words (and its badge's class).
  const DELEGATION_STATES = { active: "Active", upcoming: "Upcoming", ended: "Ended", revoked: "Revoked" };
  const WEEK_MS = 7 * 24 * 3600 * 1000;
  // A workflow's rules (its boolean fields): the define form's label and hint,
  // and how a workflow's card says each, when true and when false.
  const FLAG_LABELS = {
    allow_self_approval: "The requester may decide their own run",
    distinct_approvers: "Nobody approves more than one step of a run",
    reject_requires_comment: "Rejecting needs a comment",
  };
  const FLAG_HINTS = {
    allow_self_approval: "Otherwise whoever requested a run can't approve or reject it.",
    distinct_approvers: "Each step of a run is then approved by people who approved none of its other steps.",
    reject_requires_comment: "Whoever rejects a run then has to say why.",
  };
  const FLAG_SAYS = {
    allow_self_approval: ["The requester may approve or reject their own run.", "The requester may not approve or reject their own run."],
    distinct_approvers: ["Nobody approves more than one step of a run.", "One person may approve several steps of a run."],
    reject_requires_comment: ["Rejecting needs a comment.", "Rejecting needs no comment."],
  };
  const ON_DEADLINE_OPTIONS = { remind: "Remind the approvers", reject: "Reject the run" };

  const view = document.getElementById("view");
  const alertRegion = document.getElementById("alert");
  const statusRegion = document.getElementById("status");

  // -- small helpers ---------------------------------------------------------------

  let ids = 0;
  const uid = (prefix) => `${prefix}-${++ids}`;

  /** An element with attributes (on* are listeners) and children (strings become text). */
  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function time(iso) {
    if (!iso) return null;
    const date = new Date(iso);
    return el("time", { datetime: iso }, Number.isNaN(date.getTime()) ? iso : DATE.format(date));
  }

  const isPast = (iso) => Boolean(iso) && new Date(iso).getTime() < Date.now();

  function duration(seconds) {
    const units = [["day", 86400], ["hour", 3600], ["minute", 60], ["second", 1]];
    const [name, size] = units.find(([, size]) => seconds >= size && seconds % size === 0) || units[3];
    const count = seconds / size;
    return `${count} ${name}${count === 1 ? "" : "s"}`;
  }

  const splitList = (text) => String(text || "").split(/[\s,]+/).map((part) => part.trim()).filter(Boolean);
  const plural = (count, one, many) => `${count} ${count === 1 ? one : many}`;
  const asSentence = (text) => (/[.!?]$/.test(text) ? text : `${text}.`);

  /** "a", "a or b", "a, b or c" (`word` "and" for "a, b and c"). */
  function series(items, word = "or") {
    if (items.length <= 1) return items.join("");
    return `${items.slice(0, -1).join(", ")} ${word} ${items[items.length - 1]}`;
  }

  /** A principal in words: "group:finance" is the finance group, "user:cfo" is cfo. */
  function principalWords(principal) {
    const text = String(principal);
    if (text.startsWith("group:")) return `the ${text.slice("group:".length)} group`;
    if (text.startsWith("user:")) return text.slice("user:".length);
    return text === "*" ? "anyone" : text;
  }

  const whoMayDecide = (principals) => (principals && principals.length ? series(principals.map(principalWords)) : "anyone");

  // Width forms (fullwidth and halfwidth, and the ideographic space): the
  // characters whose compatibility mapping is <wide> or <narrow>.
  const WIDTH_FORMS = /[\u3000\uFF01-\uFFEE]/g;

  /** The key the service compares names by (one person, one name): width forms
   *  at their usual width, case folded, NFC. Unicode case folding is
   *  approximated by upper- then lower-casing, which agrees with it but for a
   *  few letters (the dotless ı): there it joins names the service keeps apart,
   *  which can only show a form the API then refuses, never hide one. */
  function nameKey(name) {
    const mapped = String(name).normalize("NFC").replace(WIDTH_FORMS, (char) => char.normalize("NFKC"));
    return mapped.toUpperCase().toLowerCase().normalize("NFC");
  }

  const sameName = (first, second) => typeof first === "string" && typeof second === "string" && nameKey(first) === nameKey(second);

  function newKey() {
    const bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
  }

  function query(params) {
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(params)) {
      for (const each of Array.isArray(value) ? value : [value]) {
        if (each !== undefined && each !== null && each !== "") search.append(name, String(each));
      }
    }
    const text = search.toString();
    return text ? `?${text}` : "";
  }

  /** A definition list of [term, description] pairs; empty descriptions are left out. */
  function facts(pairs) {
    const rows = pairs.filter(([, value]) => value !== null && value !== undefined && value !== "");
    return el("dl", { class: "facts" }, rows.map(([term, value]) => el("div", {}, el("dt", {}, term), el("dd", {}, value))));
  }

  // -- the tab's memory: who I am ------------------------------------------------------

  const memory = new Map(); // when sessionStorage is refused: kept until the page reloads
  const session = {
    get(key) {
      try {
        return sessionStorage.getItem(key);
      } catch {
        return memory.get(key) ?? null;
      }
    },
    set(key, value) {
      try {
        if (value === null) sessionStorage.removeItem(key);
        else sessionStorage.setItem(key, value);
      } catch {
        if (value === null) memory.delete(key);
        else memory.set(key, value);
      }
    },
  };

  /** A token's claims, read for display only: the API verifies the token on every call. */
  function tokenClaims(token) {
    try {
      const part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
      const binary = atob(part.padEnd(part.length + ((4 - (part.length % 4)) % 4), "="));
      const claims = JSON.parse(new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0))));
      return claims && typeof claims === "object" ? claims : null;
    } catch {
      return null;
    }
  }

  function claimGroups(value) {
    if (typeof value === "string") return splitList(value);
    return Array.isArray(value) ? value.filter((group) => typeof group === "string" && group.trim()).map((group) => group.trim()) : [];
  }

  /** Who this tab acts as: {actor, groups, token?, expires?}, or null before they said. */
  function me() {
    if (MODE === "none") {
      const actor = (session.get(KEYS.actor) || "").trim();
      return actor ? { actor, groups: splitList(session.get(KEYS.groups)) } : null;
    }
    const token = session.get(KEYS.token);
    if (!token) return null;
    const claims = tokenClaims(token) || {};
    const actor = typeof claims[ACTOR_CLAIM] === "string" ? claims[ACTOR_CLAIM].trim() : "";
    const expires = typeof claims.exp === "number" ? new Date(claims.exp * 1000).toISOString() : null;
    return { actor, groups: claimGroups(claims[GROUPS_CLAIM]), token, expires };
  }

  /** Whether the caller may define workflows and append steps: anyone without
   *  sign-in; with tokens, the members of the admin group (read from the token
   *  for display only: the API checks the token on every call). */
  function isAdmin(caller) {
    if (MODE === "none") return true;
    return Boolean(caller) && caller.groups.some((group) => sameName(group, ADMIN_GROUP));
  }

  // -- the API ---------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, message, body) {
      super(message);
      this.status = status;
      this.body = body;
    }
  }

  async function request(method, path, body, idempotencyKey) {
    const headers = { Accept: "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const caller = me();
    if (MODE === "jwt" && caller) headers.Authorization = `Bearer ${caller.token}`;
    if (idempotencyKey) headers["Idempotency-Key"] = idempotencyKey;
    let response;
    try {
      response = await fetch(BASE + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        cache: "no-store",
        credentials: "same-origin",
      });
    } catch {
      throw new ApiError(0, "The service could not be reached. Check the connection, then try again.");
    }
    let data = null;
    try {
      data = await response.json();
    } catch {
      data = null;
    }
    if (response.ok) return data;
    const message = data && typeof data.error === "string" ? data.error : unexplained(response.status);
    const error = new ApiError(response.status, message, data);
    if (response.status === 401) {
      signedOut(message);
      error.handled = true;
    }
    throw error;
  }

  /** What to say of a failed answer that says nothing itself. */
  function unexplained(status) {
    if (status === 429) return "The service is busy: try again in a moment.";
    if (status >= 500) return "The service could not answer just now: try again in a moment.";
    return "The service refused this request.";
  }

  let contract = null;

  /** What this server accepts, read once from its OpenAPI document. */
  async function capabilities() {
    if (contract) return contract;
    let doc = null;
    try {
      doc = await request("GET", "/openapi.json");
    } catch (error) {
      if (error.handled) throw error;
    }
    const paths = (doc && doc.paths) || {};
    const deref = (node) => {
      for (let hops = 0; node && typeof node.$ref === "string" && node.$ref.startsWith("#/") && hops < 10; hops++) {
        node = node.$ref.slice(2).split("/").reduce((at, key) => at && at[key.replace(/~1/g, "/").replace(/~0/g, "~")], doc);
      }
      return node || {};
    };
    // The properties an object schema (or the object variants of a union) allows.
    const properties = (node) => {
      node = deref(node);
      const variants = [...(node.anyOf || []), ...(node.oneOf || []), ...(node.allOf || [])];
      return Object.assign({}, ...variants.map(properties), node.properties || {});
    };
    const body = (path) => properties(paths[path]?.post?.requestBody?.content?.["application/json"]?.schema);
    const workflowFields = body("/workflows");
    const stepFields = body("/workflows/{workflow_id}/steps");
    const initialStep = properties(deref(workflowFields.steps).items);
    const onDeadline = deref(stepFields.on_deadline);
    contract = {
      inbox: "/inbox" in paths,
      cancel: "/runs/{run_id}/cancel" in paths,
      permissions: "/runs/{run_id}/permissions" in paths,
      runInput: "input" in body("/runs"),
      decisionGroups: "groups" in body("/runs/{run_id}/approve"),
      expectedRound: "expected_round" in body("/runs/{run_id}/approve"),
      onBehalfOf: "on_behalf_of" in body("/runs/{run_id}/approve"),
      returns: "/runs/{run_id}/return" in paths,
      resubmitInput: "input" in body("/runs/{run_id}/resubmit"),
      delegations: "/delegations" in paths && "/delegations/{delegation_id}" in paths,
      stepFields: new Set(Object.keys(stepFields)),
      initialStepFields: new Set(Object.keys(initialStep)),
      onDeadline: [...(onDeadline.enum || []), ...(onDeadline.anyOf || []).flatMap((each) => deref(each).enum || [])].filter((v) => typeof v === "string"),
      flags: Object.entries(workflowFields)
        .filter(([, schema]) => [deref(schema).type].flat().includes("boolean"))
        .map(([name]) => ({ name })),
    };
    return contract;
  }

  const workflowCache = new Map();

  async function workflowById(id, fresh = false) {
    if (fresh || !workflowCache.has(id)) workflowCache.set(id, await request("GET", `/workflows/${id}`));
    return workflowCache.get(id);
  }

  // -- messages and focus ------------------------------------------------------------

  let carried = null; // messages for the next view, after a navigation

  function say(text) {
    statusRegion.textContent = text;
  }

  function warn(text) {
    alertRegion.textContent = text;
  }

  function clearMessages() {
    say("");
    warn("");
  }

  function focus(node) {
    if (node) node.focus({ preventScroll: false });
  }

  /** Say what is wrong by the field it is about, or else on the form's `problem` line. */
  function explainer(problem) {
    return (field, message) => {
      if (field) {
        field.show(message);
        return focus(field.control);
      }
      problem.textContent = message;
      problem.hidden = false;
      focus(problem);
    };
  }

  /** A form refused before sending: why, and the field to fix focused. */
  function refuse(field, why) {
    warn(why);
    focus(field);
  }

  // -- what is being approved: a run's input, its schema, the steps' conditions --------

  const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
  const isScalar = (value) => value === null || ["string", "number", "boolean"].includes(typeof value);

  /** A literal as conditions.text (and Python's json.dumps) writes it: JSON,
   *  with ", " between a list's items. Numbers are JavaScript's: a float the
   *  service would write 1000.0 reads 1000 here. */
  function literalText(value) {
    if (Array.isArray(value)) return `[${value.map(literalText).join(", ")}]`;
    if (isObject(value)) return `{${Object.entries(value).map(([key, each]) => `${JSON.stringify(key)}: ${literalText(each)}`).join(", ")}}`;
    return JSON.stringify(value) ?? String(value);
  }

  /** A step's condition in words, as the service words it (chalicelib/domain/
   *  conditions.py, text): `amount >= 1000 and country == "DE"`, `not vip`,
   *  `country in ["DE", "AT"]`; nested and/or in parentheses. */
  function conditionText(condition, top = true) {
    if (!isObject(condition) || Object.keys(condition).length !== 1) return literalText(condition);
    let [[operator, operands]] = Object.entries(condition);
    if (operator === "var") return String(operands);
    if (operator === "!") {
      operands = Array.isArray(operands) ? operands : [operands];
      return `not ${conditionText(operands[0], false)}`;
    }
    if (!Array.isArray(operands)) return literalText(condition);
    if (operator === "and" || operator === "or") {
      const joined = operands.map((operand) => conditionText(operand, false)).join(` ${operator} `);
      return top ? joined : `(${joined})`;
    }
    const right = Array.isArray(operands[1]) ? literalText(operands[1]) : conditionText(operands[1], false);
    return `${conditionText(operands[0], false)} ${operator} ${right}`;
  }

  /** When a step applies, in words: null for a step that always does. */
  function stepCondition(step) {
    return step.when === null || step.when === undefined ? null : conditionText(step.when);
  }

  const schemaProperties = (schema) => (isObject(schema) && isObject(schema.properties) ? schema.properties : {});
  const schemaOf = (node) => (isObject(node) ? node : {});

  /** A field's label: its schema's title where it has one, else its name. */
  function fieldLabel(name, property) {
    const title = schemaOf(property).title;
    return typeof title === "string" && title.trim() ? title : name;
  }

  /** An object's fields in the order to show them: those its schema names
   *  first (in its properties' order, with their titles), then the others in
   *  the object's own order. */
  function orderedFields(data, schema) {
    const properties = schemaProperties(schema);
    const named = Object.keys(properties).filter((key) => Object.hasOwn(data, key));
    const others = Object.keys(data).filter((key) => !Object.hasOwn(properties, key));
    return [...named, ...others].map((key) => ({ key, label: fieldLabel(key, properties[key]), value: data[key], schema: schemaOf(properties[key]) }));
  }

  /** The address a text is, where it is an absolute http: or https: URL and
   *  nothing else: the only text of an input that becomes a link. */
  function webAddress(text) {
    if (!/^https?:\/\/\S+$/i.test(text)) return null;
    try {
      const url = new URL(text);
      return url.protocol === "https:" || url.protocol === "http:" ? url.href : null;
    } catch {
      return null;
    }
  }

  const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

  /** One value of an input, as text (a web address as a link; an object as a
   *  nested list of its fields, a list of plain values as compact JSON). */
  function inputValue(value, schema) {
    if (typeof value === "string") {
      const address = webAddress(value);
      if (address) return el("a", { href: address, rel: "noopener noreferrer" }, value);
      if (schema.format === "date-time" && RFC3339.test(value) && !Number.isNaN(Date.parse(value))) return time(value);
      return el("span", { class: "input-text" }, value);
    }
    if (typeof value === "boolean") return value ? "yes" : "no";
    if (value === null) return "none";
    if (Array.isArray(value)) {
      if (!value.length) return "an empty list";
      if (value.every(isScalar)) return el("code", { class: "input-json" }, literalText(value));
      return el("ol", { class: "input-items" }, value.map((item) => el("li", {}, inputValue(item, schemaOf(schema.items)))));
    }
    if (isObject(value)) {
      const fields = orderedFields(value, schema);
      return fields.length ? inputList(fields) : "an empty object";
    }
    return String(value);
  }

  function inputList(fields) {
    return el("dl", { class: "input-fields" }, fields.map((field) => el("div", {}, el("dt", {}, field.label), el("dd", {}, inputValue(field.value, field.schema)))));
  }

  /** The run's input on its page; nothing for an empty one. */
  function inputSection(run, workflow) {
    const fields = isObject(run.input) ? orderedFields(run.input, workflow && workflow.input_schema) : [];
    if (!fields.length) return null;
    return el("section", { "aria-labelledby": "input-heading" }, el("h2", { id: "input-heading" }, "What is being approved"), inputList(fields));
  }

  const SUMMARY_FIELDS = 3;
  const SUMMARY_TEXT = 60;

  function shortText(text) {
    const characters = Array.from(text); // whole characters, not halves of a pair
    return characters.length > SUMMARY_TEXT ? `${characters.slice(0, SUMMARY_TEXT - 1).join("")}…` : text;
  }

  /** A run's input in one line, for the inbox: its first few fields,
   *  "Amount (EUR): 5000 · Supplier: Acme"; null for an empty one. */
  function inputSummary(run, workflow) {
    const fields = isObject(run.input) ? orderedFields(run.input, workflow && workflow.input_schema) : [];
    if (!fields.length) return null;
    const say = (value) => {
      if (typeof value === "string") return shortText(value);
      if (typeof value === "boolean") return value ? "yes" : "no";
      return shortText(value === null ? "none" : literalText(value));
    };
    const parts = fields.slice(0, SUMMARY_FIELDS).map((field) => `${field.label}: ${say(field.value)}`);
    if (fields.length > SUMMARY_FIELDS) parts.push(plural(fields.length - SUMMARY_FIELDS, "more field", "more fields"));
    return el("p", { class: "input-summary" }, parts.join(" · "));
  }

  // -- the start form's input fields ---------------------------------------------------

  const pointerToken = (name) => String(name).replace(/~/g, "~0").replace(/\//g, "~1");

  /** A datetime-local value (the reader's wall time) as RFC 3339, with the
   *  reader's offset at that time: "2026-03-01T10:30:00+01:00". */
  function localTimeText(value) {
    const date = new Date(value); // a date-time without an offset is local time
    if (Number.isNaN(date.getTime())) return null;
    const pad = (number, width = 2) => String(number).padStart(width, "0");
    const offset = -date.getTimezoneOffset();
    const zone = offset === 0 ? "Z" : `${offset > 0 ? "+" : "-"}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)}`;
    const millis = date.getMilliseconds() ? `.${pad(date.getMilliseconds(), 3)}` : "";
    return `${pad(date.getFullYear(), 4)}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}${millis}${zone}`;
  }

  const STRING_INPUTS = { date: "date", "date-time": "datetime-local", email: "email", uri: "url" };

  /** What to offer for one property: a choice, a number, a box to tick, text
   *  of a kind, or (for lists, objects and mixed types) a small box for JSON. */
  function controlKind(property) {
    if (Array.isArray(property.enum) && property.enum.length) return { kind: "choice", choices: property.enum };
    if (Object.hasOwn(property, "const")) return { kind: "choice", choices: [property.const] };
    const types = [property.type].flat().filter((type) => typeof type === "string" && type !== "null");
    const type = types.length === 1 ? types[0] : !types.length && typeof property.format === "string" && STRING_INPUTS[property.format] ? "string" : null;
    if (type === "number" || type === "integer") return { kind: "number", integer: type === "integer" };
    if (type === "boolean") return { kind: "boolean" };
    if (type === "string") return { kind: "text", type: STRING_INPUTS[property.format] || "text" };
    return { kind: "json", type };
  }

  const JSON_HINTS = {
    array: 'A list in JSON, for example ["first", "second"].',
    object: 'An object in JSON, for example {"name": "value"}.',
  };

  /** An RFC 3339 time as a datetime-local value: the reader's wall time. */
  function wallTimeText(iso) {
    const date = new Date(iso);
    if (typeof iso !== "string" || Number.isNaN(date.getTime())) return null;
    const pad = (number, width = 2) => String(number).padStart(width, "0");
    return `${pad(date.getFullYear(), 4)}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
  }

  /** The field of one property of the workflow's input schema, filled with
   *  `current` (a run's input, when resubmitting it) or else its default. */
  function propertyField(name, property, required, current) {
    const id = uid("input");
    const label = fieldLabel(name, property);
    const how = controlKind(property);
    const given = isObject(current) && Object.hasOwn(current, name);
    const fallback = given ? current[name] : Object.hasOwn(property, "default") ? property.default : undefined;
    const hints = [];
    if (typeof property.description === "string" && property.description.trim()) hints.push(property.description.trim());
    if (how.kind === "json") hints.push(JSON_HINTS[how.type] || "In JSON: text in double quotes, numbers, true, false or null as they are.");
    const hintId = hints.length ? uid("hint") : null;
    const errorId = uid("error");
    let control;
    if (how.kind === "choice") {
      const options = how.choices.map((choice, index) => el("option", { value: String(index), selected: fallback !== undefined && literalText(choice) === literalText(fallback) }, typeof choice === "string" ? choice : literalText(choice)));
      control = el("select", { name }, el("option", { value: "" }, required ? "Choose one" : "Not given"), options);
    } else if (how.kind === "number") {
      control = el("input", {
        type: "number",
        name,
        step: how.integer ? "1" : "any",
        min: typeof property.minimum === "number" ? String(property.minimum) : null,
        max: typeof property.maximum === "number" ? String(property.maximum) : null,
        inputmode: how.integer ? "numeric" : "decimal",
        value: typeof fallback === "number" ? String(fallback) : null,
      });
    } else if (how.kind === "boolean") {
      control = el("input", { type: "checkbox", name, checked: fallback === true });
    } else if (how.kind === "text") {
      const value = typeof fallback !== "string" ? null : how.type === "datetime-local" ? (given ? wallTimeText(fallback) : null) : fallback;
      const maxLength = Number.isInteger(property.maxLength) ? String(property.maxLength) : null;
      control = el("input", { type: how.type, name, value, maxlength: maxLength, autocomplete: "off", spellcheck: how.type === "text" ? null : "false" });
    } else {
      control = el("textarea", { name, rows: "3", spellcheck: "false", autocomplete: "off" });
      if (fallback !== undefined) control.value = JSON.stringify(fallback);
    }
    control.id = id;
    if (required) control.required = true;
    const describedBy = (withError) => [hintId, withError ? errorId : null].filter(Boolean).join(" ") || null;
    if (hintId) control.setAttribute("aria-describedby", hintId);
    const error = el("p", { class: "field-error", id: errorId, hidden: true });
    const labelNode = el("label", { for: id }, label, required ? el("span", { class: "required" }, " (required)") : null);
    const hint = hintId ? el("p", { class: "hint", id: hintId }, hints.join(" ")) : null;
    const node = how.kind === "boolean" ? el("div", { class: "check" }, control, labelNode, hint, error) : el("div", { class: "field" }, labelNode, hint, control, error);
    const field = {
      name,
      label,
      pointer: `/${pointerToken(name)}`,
      control,
      node,
      show(message) {
        error.textContent = message;
        error.hidden = false;
        control.setAttribute("aria-invalid", "true");
        control.setAttribute("aria-describedby", describedBy(true));
      },
      clear() {
        error.textContent = "";
        error.hidden = true;
        control.removeAttribute("aria-invalid");
        const rest = describedBy(false);
        if (rest) control.setAttribute("aria-describedby", rest);
        else control.removeAttribute("aria-describedby");
      },
      /** {value}, {absent: true} for an empty field, or {problem: why}. */
      read() {
        if (how.kind === "boolean") return { value: control.checked };
        if (how.kind === "choice") return control.value === "" ? { absent: true } : { value: how.choices[Number(control.value)] };
        if (how.kind === "number") {
          if (control.validity.badInput) return { problem: `${label}: this is not a number.` };
          return control.value === "" ? { absent: true } : { value: Number(control.value) };
        }
        if (how.kind === "json") {
          if (!control.value.trim()) return { absent: true };
          try {
            return { value: JSON.parse(control.value) };
          } catch (exception) {
            return { problem: `${label}: this is not valid JSON (${exception.message}).` };
          }
        }
        if (control.value === "") return { absent: true };
        if (how.type === "datetime-local") {
          const text = localTimeText(control.value);
          return text ? { value: text } : { problem: `${label}: this is not a date and time.` };
        }
        return { value: control.value };
      },
    };
    control.addEventListener("input", () => field.clear());
    return field;
  }

  /** Without a schema to follow: one box for the whole input, in JSON (filled
   *  with `current`, a run's input, when resubmitting it). */
  function wholeInputField(current) {
    const id = uid("input");
    const hintId = uid("hint");
    const errorId = uid("error");
    const control = el("textarea", { id, name: "input", rows: "4", spellcheck: "false", autocomplete: "off", "aria-describedby": hintId });
    if (isObject(current) && Object.keys(current).length) control.value = JSON.stringify(current, null, 2);
    const error = el("p", { class: "field-error", id: errorId, hidden: true });
    const field = {
      name: "input",
      label: "Input (JSON object)",
      pointer: "",
      control,
      node: el(
        "div",
        { class: "field" },
        el("label", { for: id }, "Input (JSON object)"),
        el("p", { class: "hint", id: hintId }, 'Optional: what is being approved, as a JSON object, for example {"amount": 5000, "supplier": "Acme"}.'),
        control,
        error,
      ),
      show(message) {
        error.textContent = message;
        error.hidden = false;
        control.setAttribute("aria-invalid", "true");
        control.setAttribute("aria-describedby", `${hintId} ${errorId}`);
      },
      clear() {
        error.textContent = "";
        error.hidden = true;
        control.removeAttribute("aria-invalid");
        control.setAttribute("aria-describedby", hintId);
      },
      read() {
        const text = control.value.trim();
        if (!text) return { value: {} };
        let value;
        try {
          value = JSON.parse(text);
        } catch (exception) {
          return { problem: `This is not valid JSON (${exception.message}). Nothing was sent.` };
        }
        return isObject(value) ? { value } : { problem: 'The input must be a JSON object, in braces: {"name": "value"}. Nothing was sent.' };
      },
    };
    control.addEventListener("input", () => field.clear());
    return field;
  }

  /** The start form's input: a field per property of the workflow's schema, or
   *  one JSON box without one. read() gives {input} or {field, problem}. */
  function runInputFields(workflow, current) {
    const schema = workflow.input_schema;
    const properties = Object.entries(schemaProperties(schema));
    if (!properties.length) {
      const box = wholeInputField(current);
      return {
        nodes: [box.node],
        fields: [box],
        read() {
          const read = box.read();
          return read.problem ? { field: box, problem: read.problem } : { input: read.value };
        },
      };
    }
    const required = new Set(Array.isArray(schema.required) ? schema.required : []);
    const fields = properties.map(([name, property]) => propertyField(name, schemaOf(property), required.has(name), current));
    // Fields of a run's input that the schema does not name: kept as they are.
    const others = isObject(current) ? Object.entries(current).filter(([name]) => !Object.hasOwn(schema.properties, name)) : [];
    return {
      nodes: [el("fieldset", { class: "input-fieldset" }, el("legend", {}, "What is being approved"), fields.map((field) => field.node))],
      fields,
      read() {
        const input = Object.fromEntries(others);
        for (const field of fields) {
          const read = field.read();
          if (read.problem) return { field, problem: read.problem };
          if (!read.absent) input[field.name] = read.value;
        }
        return { input };
      },
    };
  }

  /** The field an error of the service is about: the one whose JSON Pointer
   *  ("/amount") the message names, the longest where several do. */
  function fieldOfError(fields, message) {
    if (!message.startsWith("'input'")) return null;
    const named = fields.filter((field) => {
      if (field.pointer === "") return true; // the whole input
      const escaped = field.pointer.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      return new RegExp(` at ${escaped}(?=[/:;,]|$)`).test(message);
    });
    return named.sort((first, second) => second.pointer.length - first.pointer.length)[0] || null;
  }

  // -- routing ---------------------------------------------------------------------

  let generation = 0; // bumped by every navigation: a view loaded for an older one is dropped
  // Focus moves to a new view's heading (or its message) once the person has
  // done something; on a fresh load it stays at the top, where the skip link is.
  let interacted = false;

  function go(hash, messages) {
    carried = messages || null;
    if (location.hash === hash) route();
    else location.hash = hash;
  }

  function signedOut(reason) {
    session.set(KEYS.token, null);
    if (!location.hash.startsWith("#/me")) session.set(KEYS.next, location.hash || "#/inbox");
    carried = { alert: `Your token was refused: ${reason}. Paste a valid one to go on.` };
    if (location.hash === "#/me") route();
    else location.replace("#/me");
  }

  function parse(hash) {
    const match = /^#\/(inbox|workflows|delegations|me|runs\/(\d+))?\/?(\?[^#]*)?$/.exec(hash || "#/");
    if (!match) return { name: "inbox" };
    // #/runs/42?for=bob: the run, decided on bob's behalf (from the inbox of his delegate).
    if (match[2]) return { name: "run", id: Number(match[2]), behalf: new URLSearchParams(match[3] || "").get("for") || null };
    return { name: match[1] || "inbox" };
  }

  async function route() {
    const current = ++generation;
    if (location.hash.startsWith("#token=")) {
      // A token handed over in the link: kept for the tab, gone from the address bar and history.
      const token = decodeURIComponent(location.hash.slice("#token=".length)).trim();
      window.history.replaceState(null, "", `${location.pathname}${location.search}#/inbox`);
      if (MODE === "jwt" && token) {
        session.set(KEYS.token, token);
        carried = { status: `Using the token of ${describeCaller(me())}.` };
      }
    }
    const target = parse(location.hash);
    if (target.name !== "me" && !me()) {
      session.set(KEYS.next, location.hash || "#/inbox");
      location.replace("#/me");
      return;
    }
    const messages = carried;
    carried = null;
    clearMessages();
    markNavigation(target.name);
    showCaller();
    view.setAttribute("aria-busy", "true");
    try {
      const title = await VIEWS[target.name](current, target);
      if (current !== generation) return;
      if (messages && messages.alert) {
        warn(messages.alert);
        if (interacted) focus(alertRegion);
      } else if (messages && messages.status) {
        say(messages.status);
        if (interacted) focus(statusRegion);
      } else if (interacted) {
        focus(title);
      }
    } catch (error) {
      if (current !== generation || error.handled) return;
      draw(current, "Something went wrong", el("p", {}, "The page could not be shown: ", error.message || String(error)), el("p", {}, el("button", { type: "button", onclick: () => route() }, "Try again")));
      warn(error.message || String(error));
      focus(alertRegion);
    } finally {
      if (current === generation) view.removeAttribute("aria-busy");
    }
  }

  /** Replace the view (if it is still the current one) with a heading and content. */
  function draw(current, title, ...content) {
    if (current !== generation) return null;
    const heading = el("h1", { tabindex: "-1" }, title);
    view.replaceChildren(heading, ...content.filter((node) => node instanceof Node));
    document.title = `${heading.textContent} · Approvals`;
    return heading;
  }

  function markNavigation(name) {
    for (const link of document.querySelectorAll("nav a[data-view]")) {
      if (link.dataset.view === name) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
  }

  function describeCaller(caller) {
    if (!caller) return "nobody yet";
    const who = caller.actor || "an unnamed caller";
    return caller.groups.length ? `${who} (${caller.groups.join(", ")})` : who;
  }

  function showCaller() {
    const caller = me();
    document.getElementById("whoami").textContent = caller ? `Acting as ${caller.actor || "nobody named"}` : "Who am I?";
  }

  // -- who am I ----------------------------------------------------------------------

  function continueAfterIdentity(message) {
    const next = session.get(KEYS.next);
    session.set(KEYS.next, null);
    go(next && !next.startsWith("#/me") ? next : "#/inbox", { status: message });
  }

  async function showMe(current) {
    const caller = me();
    if (MODE === "none") return drawNameForm(current, caller);
    return drawTokenForm(current, caller);
  }

  function drawNameForm(current, caller) {
    const nameId = uid("actor");
    const groupsId = uid("groups");
    const groupsHint = uid("hint");
    const name = el("input", { id: nameId, name: "actor", type: "text", required: true, autocomplete: "username", maxlength: "200", value: caller ? caller.actor : "" });
    const groups = el("input", { id: groupsId, name: "groups", type: "text", autocomplete: "off", "aria-describedby": groupsHint, value: caller ? caller.groups.join(", ") : "" });
    const form = el(
      "form",
      { class: "panel", novalidate: true },
      el("div", { class: "field" }, el("label", { for: nameId }, "Your name"), name),
      el("div", { class: "field" }, el("label", { for: groupsId }, "Your groups"), el("p", { class: "hint", id: groupsHint }, "Separated by commas, for example: finance, managers. Steps open to a group are yours to decide."), groups),
      el("div", { class: "actions" }, el("button", { type: "submit", class: "primary" }, "Continue"), caller ? el("button", { type: "button", onclick: forget }, "Forget me") : null),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const actor = name.value.trim();
      if (!actor) return refuse(name, "Say who you are: your name is recorded with each decision.");
      session.set(KEYS.actor, actor);
      session.set(KEYS.groups, splitList(groups.value).join(","));
      continueAfterIdentity(`Acting as ${describeCaller(me())}.`);
    });
    return draw(
      current,
      "Who are you?",
      el("p", {}, "This service takes your word for who you are (it runs without sign-in, for local use). Your name is recorded with every decision you make here; it is kept for this tab only."),
      form,
    );
  }

  function drawTokenForm(current, caller) {
    const tokenId = uid("token");
    const hintId = uid("hint");
    const token = el("textarea", { id: tokenId, name: "token", rows: "4", required: true, autocomplete: "off", spellcheck: "false", "aria-describedby": hintId });
    const form = el(
      "form",
      { class: "panel", novalidate: true },
      el("div", { class: "field" }, el("label", { for: tokenId }, "Bearer token"), el("p", { class: "hint", id: hintId }, "The JSON Web Token your sign-in gave you. It is kept for this tab only and sent to this service alone."), token),
      el("div", { class: "actions" }, el("button", { type: "submit", class: "primary" }, "Use this token"), caller ? el("button", { type: "button", onclick: forget }, "Forget the token") : null),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const value = token.value.trim().replace(/^bearer\s+/i, "");
      if (value.split(".").length !== 3 || !tokenClaims(value)) return refuse(token, "This is not a JSON Web Token: it should be three parts separated by dots.");
      session.set(KEYS.token, value);
      continueAfterIdentity(`Using the token of ${describeCaller(me())}.`);
    });
    const current_token = caller
      ? el(
          "section",
          { "aria-labelledby": "token-owner" },
          el("h2", { id: "token-owner" }, "The token in use"),
          facts([
            ["Belongs to", caller.actor || `nobody: it has no ${ACTOR_CLAIM} claim`],
            ["Groups", caller.groups.join(", ") || "none"],
            ["Valid until", caller.expires ? el("span", {}, time(caller.expires), isPast(caller.expires) ? " (expired)" : "") : "no expiry given"],
          ]),
        )
      : null;
    return draw(current, "Who are you?", el("p", {}, "This service verifies who you are with a bearer token. Paste yours, or open a link that carries it after #token=."), current_token, form);
  }

  function forget() {
    for (const key of Object.values(KEYS)) session.set(key, null);
    go("#/me", { status: "Forgotten: this tab acts as nobody now." });
  }

  // -- the inbox ---------------------------------------------------------------------

  let inboxMissing = false; // the server answered 404 to /inbox: list runs in progress instead
  let inboxPages = { cursors: [null], index: 0 };

  async function showInbox(current) {
    inboxPages = { cursors: [null], index: 0 };
    return drawInboxPage(current);
  }

  async function loadInbox(caps) {
    const cursor = inboxPages.cursors[inboxPages.index];
    if (caps.inbox && !inboxMissing) {
      const caller = me();
      const params = MODE === "none" ? { actor: caller.actor, group: caller.groups } : {};
      try {
        return { page: await request("GET", `/inbox${query({ ...params, limit: PAGE_SIZE, cursor })}`), mine: true };
      } catch (error) {
        if (error.status !== 404) throw error;
        inboxMissing = true;
        inboxPages = { cursors: [null], index: 0 };
      }
    }
    const fallbackCursor = inboxPages.cursors[inboxPages.index];
    return { page: await request("GET", `/runs${query({ status: "in_progress", limit: PAGE_SIZE, cursor: fallbackCursor })}`), mine: false };
  }

  async function drawInboxPage(current) {
    const caps = await capabilities();
    const { page, mine } = await loadInbox(caps);
    for (const id of new Set(page.items.map((run) => run.workflow_id))) await workflowById(id);
    const items = page.items.map((run) => inboxItem(run, workflowCache.get(run.workflow_id)));
    const pageNumber = inboxPages.index + 1;
    const intro = mine
      ? el("p", {}, "Runs whose current step is yours to decide, the longest waiting first.")
      : el("p", {}, "Every run in progress, the newest first: this server has no personal inbox, so check each run's step before you decide.");
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
      mine ? "Waiting for you" : "Runs in progress",
      intro,
      pageNumber > 1 || page.next_cursor ? el("p", { class: "page-number" }, `Page ${pageNumber}`) : null,
      items.length ? el("ul", { class: "cards" }, items) : el("p", { class: "empty" }, mine ? "Nothing waits for you." : "No run is in progress."),
      pager,
    );
  }

  async function turnInboxPage(step, nextCursor) {
    if (step > 0) inboxPages.cursors[inboxPages.index + 1] = nextCursor;
    inboxPages.index += step;
    const current = ++generation;
    view.setAttribute("aria-busy", "true");
    try {
      const title = await drawInboxPage(current);
      if (current === generation) focus(title);
    } catch (error) {
      if (!error.handled && current === generation) {
        warn(error.message);
        focus(alertRegion);
      }
    } finally {
      if (current === generation) view.removeAttribute("aria-busy");
    }
  }

  function stepPosition(step, workflow) {
    const count = workflow ? Math.max(workflow.steps.length, step.step_order) : null;
    return count ? `${step.step_order} of ${count}: ${step.name}` : `${step.step_order}: ${step.name}`;
  }

  function approvalsSoFar(run) {
    const step = run.current_step;
    if (!step || typeof step.required_approvals !== "number") return null;
    const approved = run.current_step_approved_by || [];
    return `${approved.length} of ${step.required_approvals}`;
  }

  function deadline(iso) {
    if (!iso) return null;
    return el("span", {}, time(iso), isPast(iso) ? el("strong", { class: "badge badge-overdue" }, "Overdue") : null);
  }

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

  // -- a run -------------------------------------------------------------------------

  // Whom the run page acts for: the delegator named in its link (#/runs/42?for=bob), or nobody.
  let behalfOf = null;

  async function showRun(current, target) {
    const caps = await capabilities();
    behalfOf = caps.onBehalfOf ? target.behalf : null;
    const run = await request("GET", `/runs/${target.id}`);
    const [workflow, permissions] = await Promise.all([workflowById(run.workflow_id, true), permissionsOf(run.id, caps)]);
    return drawRun(current, run, workflow, caps, permissions, "");
  }

  /** What the caller may do with run `id`, as GET /runs/{id}/permissions says
   *  ({approve, reject, cancel}, each {allowed, reason, message}); null from a
   *  server without that route; {failed: why} when it could not be asked. */
  async function permissionsOf(id, caps) {
    if (!caps.permissions) return null;
    const caller = me();
    const params = MODE === "none" ? { actor: caller.actor, group: caller.groups } : {};
    if (behalfOf) params.on_behalf_of = behalfOf;
    try {
      return await request("GET", `/runs/${id}/permissions${query(params)}`);
    } catch (error) {
      if (error.handled) throw error;
      return { failed: error.message };
    }
  }

  /** The actions to offer: those the API allows. A server without the
   *  permissions route gets the decisions offered to all and the cancel to
   *  the requester, and has the last word on each. */
  function offered(run, caps, permissions) {
    if (permissions === null) {
      const caller = me();
      const mine = Boolean(caller) && sameName(run.requested_by, caller.actor);
      return { approve: true, reject: true, return: false, resubmit: false, cancel: caps.cancel && mine };
    }
    if (permissions.failed) return { approve: false, reject: false, return: false, resubmit: false, cancel: false };
    return Object.fromEntries(ACTIONS.map((action) => [action, Boolean(permissions[action] && permissions[action].allowed)]));
  }

  function drawRun(current, run, workflow, caps, permissions, draft) {
    const status = STATUS_TEXT[run.status] || run.status;
    const returned = run.status === "returned";
    const rounds = typeof run.round === "number" && (run.round > 1 || returned);
    const summary = facts([
      ["Workflow", workflow.name],
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
    const offer = offered(run, caps, permissions);
    if (run.status === "in_progress" && run.current_step) {
      if (offer.approve || offer.reject) sections.push(decisionForm(run, workflow, caps, offer, permissions, draft));
      if (offer.return) sections.push(returnForm(run, workflow, caps, permissions));
      if (offer.cancel) sections.push(cancelForm(run, caps));
      sections.push(notOffered(run, permissions));
    } else if (returned) {
      if (offer.resubmit) sections.push(resubmitForm(run, workflow, caps));
      if (offer.cancel) sections.push(cancelForm(run, caps));
      sections.push(notOffered(run, permissions));
    }
    sections.push(timeline(run, workflow), historySection(run));
    sections.push(el("p", { class: "actions" }, el("a", { href: "#/inbox" }, "Back to the inbox"), el("button", { type: "button", onclick: () => route() }, "Reload")));
    return draw(current, run.title, ...sections);
  }

  // Reasons that say nothing to the reader where they appear: everyone but a
  // returned run's requester is told "not returned" for Resubmit.
  const UNSAID = new Set(["run_not_returned"]);

  /** The actions the API does not allow the caller, each with why, in words;
   *  actions held back for one reason are named together. */
  function notOffered(run, permissions) {
    if (permissions === null) return null;
    const section = (...content) =>
      el("section", { class: "panel", "aria-labelledby": "not-offered-heading" }, el("h2", { id: "not-offered-heading" }, "Not offered to you"), content);
    if (permissions.failed) {
      return section(el("p", {}, `The page could not check what you may do with this run, so it offers nothing: ${asSentence(permissions.failed)} Reload to try again.`));
    }
    const reasons = new Map(); // the reason -> the actions it holds back, and one of its answers
    for (const action of ACTIONS) {
      const permission = permissions[action];
      if (!permission || permission.allowed || UNSAID.has(permission.reason)) continue;
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

  /** "approve or reject it", "approve or reject it, or send it back": what
   *  `actions` let one do with a run, in words. */
  function doingWords(actions) {
    const verbs = { approve: "approve", reject: "reject", resubmit: "resubmit", cancel: "cancel" };
    const plain = actions.filter((action) => verbs[action]).map((action) => verbs[action]);
    const back = actions.includes("return");
    if (!plain.length) return back ? "send it back" : "do this with it";
    return `${series(plain)} it${back ? ", or send it back" : ""}`;
  }

  /** Why the API does not allow an action (its reason code), said to the caller. */
  function whyNot(permission, run, actions = []) {
    const step = run.current_step || {};
    switch (permission.reason) {
      case "run_not_in_progress":
        return "This run has ended meanwhile: reload the page to see how.";
      case "not_an_approver": {
        const principals = [...(step.approvers || []), ...(run.current_step_escalated_to || [])];
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

  /** Whom a decision allowed by `permissions` is made for: the delegator, or null for oneself. */
  function actingFor(permissions, action) {
    const permission = permissions && !permissions.failed ? permissions[action] : null;
    return permission && permission.allowed && typeof permission.on_behalf_of === "string" && permission.on_behalf_of ? permission.on_behalf_of : null;
  }

  /** What every decision on the current step sends: the step and round it was
   *  made on, who decides, and for whom. */
  function decisionBody(run, caps, permissions, action) {
    const caller = me();
    const body = { expected_step_id: run.current_step.id };
    if (caps.expectedRound && typeof run.round === "number") body.expected_round = run.round;
    if (MODE === "none") {
      body.actor = caller.actor;
      if (caps.decisionGroups && caller.groups.length) body.groups = caller.groups;
    }
    const behalf = caps.onBehalfOf ? actingFor(permissions, action) : null;
    if (behalf) body.on_behalf_of = behalf;
    return body;
  }

  const forWhom = (body) => (body.on_behalf_of ? `, on behalf of ${body.on_behalf_of}` : "");

  function decisionForm(run, workflow, caps, offer, permissions, draft) {
    const step = run.current_step;
    const commentId = uid("comment");
    const hintId = uid("hint");
    const needsComment = workflow.reject_requires_comment === true && offer.reject;
    const comment = el("textarea", { id: commentId, name: "comment", rows: "3", maxlength: "5000", "aria-describedby": hintId });
    comment.value = draft;
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
      const chosen = event.submitter && event.submitter.value;
      const decision = chosen === "reject" || chosen === "approve" ? chosen : offer.approve ? "approve" : "reject";
      const text = comment.value;
      if (decision === "reject" && needsComment && !text.trim()) return refuse(comment, "Say why you reject: this workflow needs a comment to reject.");
      const body = decisionBody(run, caps, permissions, decision);
      if (text.trim()) body.comment = text;
      act(form, run, caps, decision, body, text, (updated, fresh) => decidedText(decision, step, updated, fresh, body) + skippedText(updated.actions.slice(run.actions.length)));
    });
    return form;
  }

  /** Send the run back to its requester, saying what should change. */
  function returnForm(run, workflow, caps, permissions) {
    const step = run.current_step;
    const commentId = uid("what-to-change");
    const hintId = uid("hint");
    const comment = el("textarea", { id: commentId, name: "comment", rows: "3", maxlength: "5000", required: true, "aria-describedby": hintId });
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
      const body = { ...decisionBody(run, caps, permissions, "return"), comment: text };
      act(form, run, caps, "return", body, "", () => `You sent this run back to ${who} for changes at step ${stepPosition(step, workflow)}${forWhom(body)}.`);
    });
    return form;
  }

  /** Resubmit a returned run: a comment, and its input changed where the workflow takes one. */
  function resubmitForm(run, workflow, caps) {
    const commentId = uid("what-changed");
    const comment = el("textarea", { id: commentId, name: "comment", rows: "3", maxlength: "5000" });
    const sentBack = [...run.actions].reverse().find((action) => action.action === "return");
    const input = caps.resubmitInput ? runInputFields(workflow, run.input) : null;
    const problem = el("p", { class: "field-error form-error", tabindex: "-1", hidden: true });
    const form = el(
      "form",
      { class: "panel", novalidate: true, "aria-labelledby": "resubmit-heading" },
      el("h2", { id: "resubmit-heading" }, "Change and resubmit"),
      sentBack ? el("p", {}, `${sentBack.actor} sent it back${sentBack.on_behalf_of ? ` on behalf of ${sentBack.on_behalf_of}` : ""}, asking:`) : null,
      sentBack && sentBack.comment ? el("blockquote", { class: "comment" }, sentBack.comment) : null,
      el("p", {}, `Resubmitting starts round ${(run.round || 1) + 1}: everyone approves again, from the first step.`),
      input ? input.nodes : null,
      el("div", { class: "field" }, el("label", { for: commentId }, "What you changed (optional)"), comment),
      problem,
      el("div", { class: "actions" }, el("button", { type: "submit", class: "primary" }, "Resubmit")),
    );
    const explain = explainer(problem);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      problem.hidden = true;
      for (const field of input ? input.fields : []) field.clear();
      const body = {};
      if (MODE === "none") body.actor = me().actor;
      if (comment.value.trim()) body.comment = comment.value;
      if (input) {
        const read = input.read();
        if (read.problem) return explain(read.field, read.problem);
        // Only a changed input is sent: the same one needs no new record of it.
        if (stableText(read.input) !== stableText(run.input || {})) body.input = read.input;
      }
      await submit(
        form,
        () => request("POST", `/runs/${run.id}/resubmit`, body, newKey()),
        (updated) => go(location.hash, { status: resubmittedText(updated, workflow, "input" in body) }),
        (error) => {
          // 422: an input the workflow's schema refuses (400: one no input may be).
          if ([400, 413, 422].includes(error.status)) {
            explain(input && error.status !== 413 ? fieldOfError(input.fields, error.message) : null, asSentence(error.message));
            return true;
          }
          return false;
        },
      );
    });
    return form;
  }

  /** JSON with its objects' keys in order: two inputs compare by it. */
  function stableText(value) {
    if (Array.isArray(value)) return `[${value.map(stableText).join(",")}]`;
    if (isObject(value)) return `{${Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${stableText(value[key])}`).join(",")}}`;
    return JSON.stringify(value) ?? "null";
  }

  function resubmittedText(run, workflow, changed) {
    const what = changed ? "with its new input" : "with its input unchanged";
    if (run.status === "completed") return `You resubmitted this run ${what}: round ${run.round} needed no approval, as none of its steps applies, and the run is completed.`;
    const at = run.current_step ? `, at step ${stepPosition(run.current_step, workflow)}` : "";
    return `You resubmitted this run ${what}: round ${run.round} starts${at}.`;
  }

  function cancelForm(run, caps) {
    const caller = me();
    const mine = Boolean(caller) && sameName(run.requested_by, caller.actor);
    const reasonId = uid("reason");
    const reason = el("input", { id: reasonId, name: "reason", type: "text", maxlength: "5000" });
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
      const body = {};
      if (MODE === "none") body.actor = me().actor;
      if (reason.value.trim()) body.reason = reason.value;
      act(form, run, caps, "cancel", body, "", () => "You cancelled this run.");
    });
    return form;
  }

  /** Send a decision; show the outcome (or why it was not recorded) and the
   *  run as it is now, with what the caller may do with it now. */
  async function act(form, run, caps, action, body, draft, describe) {
    const buttons = form.querySelectorAll("button");
    for (const button of buttons) button.disabled = true;
    const current = generation;
    clearMessages();
    try {
      const updated = await request("POST", `/runs/${run.id}/${action}`, body, newKey());
      const [fresh, permissions] = await Promise.all([workflowById(updated.workflow_id, true), permissionsOf(updated.id, caps)]);
      if (current !== generation) return;
      drawRun(current, updated, fresh, caps, permissions, "");
      say(describe(updated, fresh));
      focus(statusRegion);
    } catch (error) {
      if (error.handled || current !== generation) return;
      warn(error.message);
      try {
        const reloaded = await request("GET", `/runs/${run.id}`);
        const [fresh, permissions] = await Promise.all([workflowById(reloaded.workflow_id, true), permissionsOf(reloaded.id, caps)]);
        if (current !== generation) return;
        drawRun(current, reloaded, fresh, caps, permissions, draft);
        if (error.status === 403 || error.status === 409) warn(notRecorded(action, run, reloaded, fresh, permissions) || error.message);
      } catch (reloadError) {
        if (reloadError.handled) return;
        for (const button of buttons) button.disabled = false;
      }
      focus(alertRegion);
    }
  }

  const NOUNS = { approve: "approval", reject: "rejection", cancel: "cancellation", return: "sending back", resubmit: "resubmission" };

  /** Why a refused action was not recorded, from the run as it is now (`after`);
   *  null when that does not tell. */
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
    const permission = permissions && !permissions.failed ? permissions[action] : null;
    return permission && !permission.allowed ? `${lead}. ${whyNot(permission, after)}` : null;
  }

  /** The steps skipped among `actions`, in words ("" for none). */
  function skippedText(actions) {
    const names = actions.filter((action) => action.action === "skip").map((action) => action.step_name);
    if (!names.length) return "";
    return names.length === 1 ? ` Skipped, as its condition does not hold: ${names[0]}.` : ` Skipped, as their conditions do not hold: ${series(names, "and")}.`;
  }

  function decidedText(decision, step, run, workflow, body) {
    const done = `You ${decision === "reject" ? "rejected" : "approved"} step ${step.step_order}, ${step.name}${forWhom(body)}.`;
    if (run.status !== "in_progress") return `${done} The run is ${(STATUS_TEXT[run.status] || run.status).toLowerCase()}.`;
    if (run.current_step_id === step.id) {
      const so_far = approvalsSoFar(run);
      return so_far ? `${done} Approvals so far: ${so_far}.` : done;
    }
    return `${done} The run waits at step ${stepPosition(run.current_step, workflow)} now.`;
  }

  /** The run with the actions of its current round only: what its steps show. */
  function inThisRound(run) {
    if (typeof run.round !== "number") return run;
    return { ...run, actions: run.actions.filter((action) => (typeof action.round === "number" ? action.round : 1) === run.round) };
  }

  /** Each step's state in this run: done, skipped, current, to come; where it ended. */
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
        if (step.step_order < currentOrder) return ["done", "Done"];
        return step.step_order === currentOrder ? ["current", "Current step"] : ["upcoming", "To come"];
      }
      if (run.status === "completed") return ["done", "Done"];
      if (!endedAt || step.step_order > endedAt.step_order) return ["upcoming", "Not reached"];
      if (step.step_order < endedAt.step_order) return ["done", "Done"];
      return [run.status, run.status === "rejected" ? "Rejected here" : `${STATUS_TEXT[run.status] || run.status} here`];
    });
  }

  /** What happens when a step's deadline passes, in words. */
  function deadlineOutcome(step) {
    switch (step.on_deadline) {
      case null:
      case undefined:
      case "":
        return "";
      case "remind":
        return ", then its approvers are reminded";
      case "reject":
        return ", then the run is rejected";
      case "escalate":
        return `, then ${whoMayDecide(step.escalate_to)} may decide it too`;
      default:
        return `, then ${String(step.on_deadline).replace(/_/g, " ")}`;
    }
  }

  function stepRules(step) {
    const rules = [];
    if (Array.isArray(step.approvers)) rules.push(`Who may decide: ${whoMayDecide(step.approvers)}.`);
    if (typeof step.required_approvals === "number") rules.push(` Needs ${plural(step.required_approvals, "approval", "approvals")}.`);
    if (typeof step.deadline_seconds === "number") rules.push(` Deadline: ${duration(step.deadline_seconds)} after it starts${deadlineOutcome(step)}.`);
    return rules.length ? el("p", { class: "step-rules" }, rules) : null;
  }

  /** When a step applies, on a workflow's card or (with `run`) in that run's
   *  timeline: whether it held, where the run tells. */
  function stepWhen(step, run) {
    const words = stepCondition(step);
    const skip = run ? run.actions.find((action) => action.step_id === step.id && action.action === "skip") : null;
    if (skip) {
      const said = skip.comment || words;
      return said ? el("p", { class: "step-when" }, "Skipped: it applies only if ", el("code", { class: "condition" }, said), ", which does not hold for this run.") : el("p", { class: "step-when" }, "Skipped: its condition does not hold for this run.");
    }
    if (!words) return null;
    const reached = run && (run.current_step_id === step.id || run.actions.some((action) => action.step_id === step.id));
    return el("p", { class: "step-when" }, "Applies only if ", el("code", { class: "condition" }, words), reached ? ", which holds for this run." : ".");
  }

  function timeline(whole, workflow) {
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

  const behalfText = (action) => (typeof action.on_behalf_of === "string" && action.on_behalf_of ? ` on behalf of ${action.on_behalf_of}` : "");

  const capitalised = (text) => text.charAt(0).toUpperCase() + text.slice(1);

  const actorName = (actor) => SERVICE_ACTORS.get(actor) || actor;

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

  /** Every action of the run; past round 1, under a heading per round. */
  function historySection(run) {
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

  // -- delegations -------------------------------------------------------------------

  /** A delegation's state now: revoked, ended, upcoming or active. */
  function delegationState(delegation) {
    if (delegation.revoked_at) return "revoked";
    if (isPast(delegation.ends_at)) return "ended";
    return isPast(delegation.starts_at) ? "active" : "upcoming";
  }

  /** Every delegation matching `filter`, following the pages (up to `most`). */
  async function allDelegations(filter, most = 5) {
    const found = [];
    let cursor = null;
    for (let pages = 0; pages < most; pages++) {
      const page = await request("GET", `/delegations${query({ ...filter, limit: 100, cursor })}`);
      found.push(...page.items);
      cursor = page.next_cursor;
      if (!cursor) break;
    }
    return found;
  }

  /** Every workflow, for the form's list to choose from and to name them. */
  async function allWorkflows(most = 5) {
    const found = [];
    let cursor = null;
    for (let pages = 0; pages < most; pages++) {
      const page = await request("GET", `/workflows${query({ limit: 100, cursor })}`);
      for (const workflow of page.items) workflowCache.set(workflow.id, workflow);
      found.push(...page.items);
      cursor = page.next_cursor;
      if (!cursor) break;
    }
    return found;
  }

  async function showDelegations(current) {
    const caps = await capabilities();
    if (!caps.delegations) {
      return draw(current, "Delegations", el("p", { class: "panel" }, "This server does not take delegations."));
    }
    const caller = me();
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
      delegationForm(workflows),
    );
  }

  function delegationCard(delegation, workflows, mine) {
    const state = delegationState(delegation);
    const workflow = delegation.workflow_id === null ? "Every workflow" : workflows.has(delegation.workflow_id) ? workflows.get(delegation.workflow_id).name : `Workflow ${delegation.workflow_id}`;
    const who = mine ? `To ${principalWords(delegation.delegate)}` : `From ${delegation.delegator}${String(delegation.delegate).startsWith("group:") ? `, to ${principalWords(delegation.delegate)}` : ""}`;
    const revoke = mine && (state === "active" || state === "upcoming")
      ? el("div", { class: "actions" }, el("button", { type: "button", class: "danger", onclick: (event) => revokeDelegation(event.currentTarget, delegation) }, `Revoke the delegation to ${principalWords(delegation.delegate)}`))
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

  async function revokeDelegation(button, delegation) {
    button.disabled = true;
    clearMessages();
    const params = MODE === "none" ? { actor: me().actor } : {};
    try {
      await request("DELETE", `/delegations/${delegation.id}${query(params)}`);
      go("#/delegations", { status: `You revoked the delegation to ${principalWords(delegation.delegate)}: it ends now.` });
    } catch (error) {
      if (error.handled) return;
      button.disabled = false;
      warn(`The delegation was not revoked: ${asSentence(error.message)}`);
      focus(alertRegion);
    }
  }

  function delegationForm(workflows) {
    const field = (label, control, hint) => {
      control.id = uid(control.name);
      const hintId = hint ? uid("hint") : null;
      if (hintId) control.setAttribute("aria-describedby", hintId);
      return el("div", { class: "field" }, el("label", { for: control.id }, label), hint ? el("p", { class: "hint", id: hintId }, hint) : null, control);
    };
    const now = new Date();
    const delegate = el("input", { type: "text", name: "delegate", required: true, maxlength: "200", autocomplete: "off" });
    const workflow = el("select", { name: "workflow" }, el("option", { value: "" }, "Every workflow"), workflows.map((each) => el("option", { value: String(each.id) }, each.name)));
    const starts = el("input", { type: "datetime-local", name: "starts", required: true, value: wallTimeText(now.toISOString()) });
    const ends = el("input", { type: "datetime-local", name: "ends", required: true, value: wallTimeText(new Date(now.getTime() + WEEK_MS).toISOString()) });
    const reason = el("input", { type: "text", name: "reason", maxlength: "500", autocomplete: "off" });
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
      const body = { delegate: delegate.value.trim(), starts_at: startsAt, ends_at: endsAt };
      if (MODE === "none") body.delegator = me().actor;
      if (workflow.value) body.workflow_id = Number(workflow.value);
      if (reason.value.trim()) body.reason = reason.value.trim();
      await submit(
        form,
        () => request("POST", "/delegations", body, newKey()),
        (created) => go("#/delegations", { status: `You lent your rights to ${principalWords(created.delegate)}, from ${DATE.format(new Date(created.starts_at))} until ${DATE.format(new Date(created.ends_at))}.` }),
        (error) => {
          explain(`The delegation was not made: ${asSentence(error.message)}`);
          return true;
        },
      );
    });
    return form;
  }

  // -- workflows ---------------------------------------------------------------------

  async function showWorkflows(current) {
    const caps = await capabilities();
    const admin = isAdmin(me());
    const list = el("ul", { class: "cards" });
    const more = el("div", { class: "actions" });
    const load = async (cursor) => {
      const page = await request("GET", `/workflows${query({ limit: PAGE_SIZE, cursor })}`);
      for (const workflow of page.items) {
        workflowCache.set(workflow.id, workflow);
        list.append(workflowCard(workflow, caps, admin));
      }
      more.replaceChildren(
        page.next_cursor
          ? el("button", { type: "button", onclick: async (event) => { event.target.disabled = true; await load(page.next_cursor).catch((error) => error.handled || warn(error.message)); } }, "Show more workflows")
          : el("p", { class: "empty" }, list.children.length ? "That is every workflow." : admin ? "No workflow yet: define the first one below." : "No workflow yet."),
      );
    };
    await load(null);
    return draw(
      current,
      "Workflows",
      el("section", { "aria-labelledby": "defined-heading" }, el("h2", { id: "defined-heading" }, "Defined workflows"), list, more),
      admin
        ? defineForm(caps)
        : el("p", { class: "panel" }, `Defining workflows and appending steps is for members of the ${ADMIN_GROUP} group, which your token does not list. You may start runs of the workflows above.`),
    );
  }

  function flagLabel(flag) {
    return FLAG_LABELS[flag] || capitalised(flag.replace(/_/g, " "));
  }

  /** What a workflow's rule (a boolean field) being `value` means, in words. */
  function flagText(flag, value) {
    const says = FLAG_SAYS[flag];
    return says ? says[value ? 0 : 1] : `${flagLabel(flag)}: ${value ? "yes" : "no"}.`;
  }

  function workflowCard(workflow, caps, admin) {
    const flags = Object.entries(workflow).filter(([, value]) => typeof value === "boolean");
    return el(
      "li",
      { class: "card" },
      el("h3", { class: "card-title" }, workflow.name),
      workflow.description ? el("p", {}, workflow.description) : null,
      flags.length ? [el("h4", {}, "Rules"), el("ul", { class: "flags" }, flags.map(([name, value]) => el("li", {}, flagText(name, value))))] : null,
      el("h4", {}, "Steps"),
      workflow.steps.length
        ? el("ol", { class: "steps" }, workflow.steps.map((step) => el("li", {}, el("span", { class: "step-name" }, step.name), stepWhen(step, null), stepRules(step))))
        : el("p", { class: "empty" }, admin ? "No step yet: append one before starting runs." : "No step yet: runs can start once an administrator appends one."),
      // A workflow without steps cannot start a run (the API answers 409): not offered.
      workflow.steps.length ? el("details", {}, el("summary", {}, "Start a run"), startRunForm(workflow, caps)) : null,
      admin ? el("details", {}, el("summary", {}, "Append a step"), appendStepForm(workflow, caps)) : null,
    );
  }

  /** The inputs of one step (name, and what else this server takes), and how to read them. */
  function stepInputs(fields, caps, legend) {
    const inputs = {};
    const rows = [];
    const field = (key, label, input, hint) => {
      const id = uid(key);
      input.id = id;
      inputs[key] = input;
      const hintId = hint ? uid("hint") : null;
      if (hintId) input.setAttribute("aria-describedby", hintId);
      rows.push(el("div", { class: "field" }, el("label", { for: id }, label), hint ? el("p", { class: "hint", id: hintId }, hint) : null, input));
    };
    field("name", "Step name", el("input", { type: "text", name: "name", required: true, maxlength: "200" }));
    if (fields.has("approvers")) {
      field("approvers", "Who may decide", el("input", { type: "text", name: "approvers", autocomplete: "off" }), "People as user:name and groups as group:name, separated by commas (for example: group:finance, user:cfo). Leave it empty to let anyone decide.");
    }
    if (fields.has("required_approvals")) {
      field("required_approvals", "Approvals needed", el("input", { type: "number", name: "required_approvals", min: "1", max: "20", step: "1", value: "1", inputmode: "numeric" }));
    }
    if (fields.has("deadline_seconds")) {
      field("deadline_hours", "Deadline, in hours after the step starts", el("input", { type: "number", name: "deadline_hours", min: "0", step: "any", inputmode: "decimal" }), "Leave it empty for no deadline.");
      // Escalating needs whom to escalate to, which this form does not ask: not offered.
      const outcomes = caps.onDeadline.filter((value) => value !== "escalate");
      if (fields.has("on_deadline") && outcomes.length) {
        const select = el("select", { name: "on_deadline" }, outcomes.map((value) => el("option", { value }, ON_DEADLINE_OPTIONS[value] || capitalised(value.replace(/_/g, " ")))));
        field("on_deadline", "When the deadline passes", select);
      }
    }
    const read = () => {
      const step = { name: inputs.name.value.trim() };
      if (inputs.approvers && inputs.approvers.value.trim()) step.approvers = splitList(inputs.approvers.value);
      if (inputs.required_approvals && inputs.required_approvals.value && inputs.required_approvals.value !== "1") {
        step.required_approvals = Number(inputs.required_approvals.value);
      }
      if (inputs.deadline_hours && inputs.deadline_hours.value) {
        step.deadline_seconds = Math.round(Number(inputs.deadline_hours.value) * 3600);
        if (inputs.on_deadline) step.on_deadline = inputs.on_deadline.value;
      }
      return step;
    };
    const node = legend ? el("fieldset", { class: "step-fields" }, el("legend", {}, legend), rows) : el("div", {}, rows);
    return { node, read, first: inputs.name };
  }

  function startRunForm(workflow, caps) {
    const titleId = uid("title");
    const title = el("input", { id: titleId, name: "title", type: "text", required: true, maxlength: "500" });
    // What is being approved: a field per property of the workflow's schema, or a JSON box.
    const input = caps.runInput ? runInputFields(workflow) : null;
    const problem = el("p", { class: "field-error form-error", tabindex: "-1", hidden: true });
    const form = el(
      "form",
      { class: "inline-form", novalidate: true },
      el("div", { class: "field" }, el("label", { for: titleId }, `Title of the new run of ${workflow.name}`), title),
      input ? input.nodes : null,
      problem,
      el("div", { class: "actions" }, el("button", { type: "submit", class: "primary" }, "Start run")),
    );
    const clear = () => {
      problem.textContent = "";
      problem.hidden = true;
      for (const field of input ? input.fields : []) field.clear();
    };
    const explain = explainer(problem);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      clear();
      if (!title.value.trim()) return refuse(title, "Give the run a title.");
      const body = { workflow_id: workflow.id, title: title.value.trim() };
      if (MODE === "none") body.requested_by = me().actor;
      if (input) {
        const read = input.read();
        if (read.problem) return explain(read.field, read.problem);
        if (Object.keys(read.input).length) body.input = read.input;
      }
      await submit(
        form,
        () => request("POST", "/runs", body, newKey()),
        (run) => go(`#/runs/${run.id}`, { status: startedText(run) }),
        (error) => {
          if (error.status === 413) {
            explain(input ? fieldOfError(input.fields, error.message) : null, `The input is too large for the service, which takes at most 32 KiB of it: ${asSentence(error.message)}`);
          } else {
            explain(input && [400, 422].includes(error.status) ? fieldOfError(input.fields, error.message) : null, asSentence(error.message));
          }
          return true;
        },
      );
    });
    return form;
  }

  /** Where a run just started is: at its first step, past the steps that do not
   *  apply to its input, or completed when none does. */
  function startedText(run) {
    const skipped = skippedText(run.actions || []);
    if (run.status === "completed") return `Run ${run.id} started and is completed: none of its steps applies to its input.${skipped}`;
    if (!skipped || !run.current_step) return `Run ${run.id} started: it waits at its first step.`;
    return `Run ${run.id} started: it waits at step ${run.current_step.step_order}, ${run.current_step.name}.${skipped}`;
  }

  function appendStepForm(workflow, caps) {
    const step = stepInputs(caps.stepFields, caps, null);
    const form = el("form", { class: "inline-form", novalidate: true }, step.node, el("div", { class: "actions" }, el("button", { type: "submit", class: "primary" }, "Append step")));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const body = step.read();
      if (!body.name) return refuse(step.first, "Give the step a name.");
      await submit(form, () => request("POST", `/workflows/${workflow.id}/steps`, body, newKey()), (created) =>
        go("#/workflows", { status: `Step ${created.step_order}, ${created.name}, appended to ${workflow.name}.` }),
      );
    });
    return form;
  }

  function defineForm(caps) {
    const nameId = uid("workflow-name");
    const descriptionId = uid("description");
    const name = el("input", { id: nameId, name: "name", type: "text", required: true, maxlength: "200" });
    const description = el("textarea", { id: descriptionId, name: "description", rows: "2", maxlength: "5000" });
    const flags = caps.flags.map((flag) => {
      const id = uid(flag.name);
      // The page's own words: the contract's descriptions are written for programmers.
      const hint = FLAG_HINTS[flag.name];
      const hintId = hint ? uid("hint") : null;
      const box = el("input", { id, type: "checkbox", name: flag.name, "aria-describedby": hintId });
      return { flag, box, node: el("div", { class: "check" }, box, el("label", { for: id }, flagLabel(flag.name)), hintId ? el("p", { class: "hint", id: hintId }, hint) : null) };
    });
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
      const inputs = stepInputs(caps.initialStepFields.size ? caps.initialStepFields : new Set(["name"]), caps, "Step");
      const remove = el("button", { type: "button", class: "link-button" }, "Remove");
      const entry = { ...inputs, remove, legend: inputs.node.querySelector("legend") };
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
      const body = { name: name.value.trim(), steps: read.map((step) => (Object.keys(step).length === 1 ? step.name : step)) };
      if (description.value.trim()) body.description = description.value;
      for (const { flag, box } of flags) if (box.checked) body[flag.name] = true;
      await submit(form, () => request("POST", "/workflows", body, newKey()), (workflow) =>
        go("#/workflows", { status: `Workflow ${workflow.name} defined with ${plural(workflow.steps.length, "step", "steps")}.` }),
      );
    });
    return form;
  }

  /** Send a form's request; on success `done(answer)`, else the API's error in
   *  the alert (or where `explain(error)` puts it, when it returns true). */
  async function submit(form, send, done, explain) {
    const buttons = form.querySelectorAll("button");
    for (const button of buttons) button.disabled = true;
    clearMessages();
    try {
      const answer = await send();
      workflowCache.clear();
      done(answer);
    } catch (error) {
      for (const button of buttons) button.disabled = false;
      if (error.handled || (explain && explain(error))) return;
      warn(error.message);
      focus(alertRegion);
    }
  }

  // -- start -------------------------------------------------------------------------

  const VIEWS = { inbox: showInbox, run: showRun, workflows: showWorkflows, delegations: showDelegations, me: showMe };

  document.getElementById("skip-link").addEventListener("click", (event) => {
    event.preventDefault();
    focus(document.getElementById("main"));
  });
  for (const kind of ["pointerdown", "keydown"]) {
    document.addEventListener(kind, () => (interacted = true), { capture: true, passive: true });
  }
  window.addEventListener("hashchange", () => route());
  route();
})();
