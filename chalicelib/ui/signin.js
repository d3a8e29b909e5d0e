// Who am I (#/me): without sign-in the page asks for a name and groups; with
// tokens, for a bearer token (pasted, or in a link after #token=), and shows
// whose it is and until when; where the service signs people in, "Sign in",
// or who is signed in, until when, and "Sign out". Then on to where the
// person was going.
import { ACTOR_CLAIM, KEYS, MODE, SIGNIN, describeCaller, me, session, tokenClaims } from "./caller.js";
import { contactSettings } from "./contact.js";
import { readContract } from "./contract.js";
import { el, facts, refuse, uid } from "./dom.js";
import { isPast, splitList, time } from "./format.js";
import { draw, go } from "./router.js";
import { signInUrl, signOut } from "./session.js";

/** @typedef {import("./types.js").Caller} Caller */

/** @param {string} message */
function continueAfterIdentity(message) {
  const next = session.get(KEYS.next);
  session.set(KEYS.next, null);
  go(next && !next.startsWith("#/me") ? next : "#/inbox", { status: message });
}

/**
 * @param {number} current
 * @returns {Promise<HTMLElement | null>}
 */
export async function showMe(current) {
  const caller = me();
  // One's contact, once the page knows who one is (its own section, after the form).
  const contact = caller ? await contactSettings(caller) : null;
  if (MODE === "none") return drawNameForm(current, caller, (await readContract()).maxLength("/runs/{run_id}/approve", "actor"), contact);
  if (SIGNIN) return drawSession(current, caller, contact);
  return drawTokenForm(current, caller, contact);
}

/**
 * @param {number} current
 * @param {Caller | null} caller
 * @param {string | null} nameLength The longest name the API takes.
 * @param {HTMLElement | null} contact
 * @returns {HTMLElement | null}
 */
function drawNameForm(current, caller, nameLength, contact) {
  const nameId = uid("actor");
  const groupsId = uid("groups");
  const groupsHint = uid("hint");
  const name = el("input", { id: nameId, name: "actor", type: "text", required: true, autocomplete: "username", maxlength: nameLength, value: caller ? caller.actor : "" });
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
    contact,
  );
}

/**
 * @param {number} current
 * @param {Caller | null} caller
 * @param {HTMLElement | null} contact
 * @returns {HTMLElement | null}
 */
function drawTokenForm(current, caller, contact) {
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
  const currentToken = caller
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
  return draw(current, "Who are you?", el("p", {}, "This service verifies who you are with a bearer token. Paste yours, or open a link that carries it after #token=."), currentToken, form, contact);
}

/**
 * Signed in through the service: "Sign in", or who is signed in and "Sign out".
 * @param {number} current
 * @param {Caller | null} caller
 * @param {HTMLElement | null} contact
 * @returns {HTMLElement | null}
 */
function drawSession(current, caller, contact) {
  if (!caller) {
    const next = session.get(KEYS.next) || "#/inbox";
    const goSignIn = () => {
      session.set(KEYS.next, null); // the service brings the person back there itself
      location.assign(signInUrl(next));
    };
    const start = el("button", { type: "button", class: "primary", onclick: goSignIn }, "Sign in");
    return draw(current, "Sign in", el("p", {}, "Sign in with your organisation's account to see what waits for you and decide it."), el("div", { class: "actions" }, start));
  }
  const out = el("button", { type: "button", onclick: () => leave(out) }, "Sign out");
  const until = caller.expires ? el("span", {}, time(caller.expires), caller.renewable ? " (renewed while this page is open)" : "") : "the provider did not say";
  return draw(
    current,
    "Signed in",
    facts([
      ["Signed in as", caller.actor],
      ["Groups", caller.groups.join(", ") || "none"],
      ["Until", until],
    ]),
    el("div", { class: "actions" }, out),
    contact,
  );
}

/** @param {HTMLButtonElement} button */
async function leave(button) {
  button.disabled = true;
  try {
    await signOut();
  } catch (error) {
    button.disabled = false;
    refuse(button, error instanceof Error ? error.message : String(error));
  }
}

function forget() {
  for (const key of Object.values(KEYS)) session.set(key, null);
  go("#/me", { status: "Forgotten: this tab acts as nobody now." });
}
