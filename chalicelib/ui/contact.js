// Your contact, on #/me: where the service tells you what waits for you and
// what became of your runs (docs/notifications.md): an email address and a
// Slack member id, set with PUT /contacts/user:<you>, removed with DELETE.
// Its limits come from the document, as every form's do.
import { request, statusOf, submit } from "./api.js";
import { readContract } from "./contract.js";
import { el, say, uid } from "./dom.js";

/** @typedef {import("./types.js").Caller} Caller */
/** @typedef {{ principal: string, email: string | null, slack: string | null }} Contact */

const CONTACT_PATH = "/contacts/{principal}";

/**
 * The section of #/me with the caller's contact form (null: no name to set it for).
 * @param {Caller} caller
 * @returns {Promise<HTMLElement | null>}
 */
export async function contactSettings(caller) {
  if (!caller.actor) return null;
  const path = `/contacts/user:${encodeURIComponent(caller.actor)}`;
  /** @type {Contact} */
  let current;
  try {
    current = /** @type {Contact} */ (await request("GET", path));
  } catch (error) {
    return el("p", { class: "hint" }, `Your contact could not be read: ${error instanceof Error ? error.message : String(error)}`);
  }
  const contract = await readContract();
  const headingId = uid("contact");
  const emailId = uid("email");
  const slackId = uid("slack");
  const slackHint = uid("hint");
  const email = el("input", { id: emailId, name: "email", type: "email", autocomplete: "email", maxlength: contract.maxLength(CONTACT_PATH, "email", "put"), value: current.email ?? "" });
  const slack = el("input", { id: slackId, name: "slack", type: "text", autocomplete: "off", "aria-describedby": slackHint, value: current.slack ?? "" });
  const form = el(
    "form",
    { class: "panel", novalidate: true },
    el("div", { class: "field" }, el("label", { for: emailId }, "Email"), email),
    el("div", { class: "field" }, el("label", { for: slackId }, "Slack member id"), el("p", { class: "hint", id: slackHint }, "U... or W..., from your Slack profile. Leave empty for email only."), slack),
    el("div", { class: "actions" }, el("button", { type: "submit", class: "primary" }, "Save contact"), el("button", { type: "button", onclick: () => forgetContact(form, path, email, slack) }, "Remove contact")),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    /** @type {{ email?: string, slack?: string }} */
    const body = {};
    if (email.value.trim()) body.email = email.value.trim();
    if (slack.value.trim()) body.slack = slack.value.trim();
    submit(form, () => request("PUT", path, body), () => say("Saved: you are told there from now on."));
  });
  return el(
    "section",
    { "aria-labelledby": headingId },
    el("h2", { id: headingId }, "Where you are told"),
    el("p", {}, "When a step waits for you, or your run is decided, the service tells you here. An email may carry links that decide at once: keep it to yourself."),
    form,
  );
}

/**
 * @param {HTMLFormElement} form
 * @param {string} path
 * @param {HTMLInputElement} email
 * @param {HTMLInputElement} slack
 */
function forgetContact(form, path, email, slack) {
  submit(
    form,
    () => request("DELETE", path),
    () => {
      email.value = "";
      slack.value = "";
      say("Removed: you are told nothing any more.");
    },
    (error) => {
      if (statusOf(error) !== 404) return false;
      say("You had no contact to remove.");
      return true;
    },
  );
}
