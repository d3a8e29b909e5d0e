// Views are hash routes, so every link can be shared and reloads where it was:
// #/inbox, #/runs/42 (#/runs/42?for=bob: decided on bob's behalf), #/workflows,
// #/workflows/7 (how long its approvals take; ?days=90: over the last 90 days),
// #/delegations (rights to decide lent and lent to me), #/me (who am I). Each
// navigation draws its view afresh; one that a later navigation overtook is
// dropped (`generation`).
import { KEYS, MODE, SIGNIN, describeCaller, me, rememberSignedIn, session } from "./caller.js";
import { alertRegion, byId, clearMessages, el, focus, say, statusRegion, view, warn } from "./dom.js";

/**
 * Where a hash leads.
 * @typedef {{ name: "run", id: number, behalf: string | null } | { name: "workflow", id: number, days: number | null } | { name: ViewName }} Target
 * @typedef {"inbox" | "workflows" | "delegations" | "me"} ViewName
 */

/**
 * A view: draws itself for navigation `current`, and gives its heading (null
 * when a later navigation overtook it).
 * @typedef {(current: number, target: any) => Promise<HTMLElement | null>} View
 */
// `target` is any: each view takes the Target of its own name, which the
// table of views (start) cannot say per entry.

/** @typedef {{ alert?: string, status?: string }} Messages What the next view says. */

let generation = 0; // bumped by every navigation: a view loaded for an older one is dropped
// Focus moves to a new view's heading (or its message) once the person has
// done something; on a fresh load it stays at the top, where the skip link is.
let interacted = false;
/** @type {Messages | null} */
let carried = null; // messages for the next view, after a navigation
/** @type {{ [name: string]: View }} */
let views = {};

/** A navigation of its own (turning a page of the inbox): the view's number. */
export const nextGeneration = () => ++generation;

/** The navigation now on screen. */
export const currentGeneration = () => generation;

/**
 * Whether navigation `current` is still the one on screen.
 * @param {number} current
 * @returns {boolean}
 */
export const isCurrent = (current) => current === generation;

/**
 * @param {string} hash
 * @param {Messages} [messages]
 */
export function go(hash, messages) {
  carried = messages || null;
  if (location.hash === hash) route();
  else location.hash = hash;
}

/**
 * The API refused the token or the session (401): ask for another, or to
 * sign in again, then come back here (a comment being written is kept: decide.js).
 * @param {string} reason
 */
export function signedOut(reason) {
  session.set(KEYS.token, null);
  if (SIGNIN) rememberSignedIn(null);
  if (!location.hash.startsWith("#/me")) session.set(KEYS.next, location.hash || "#/inbox");
  const said = reason.replace(/[.\s]+$/, "");
  carried = { alert: SIGNIN ? `You are signed out: ${said}. Sign in to go on where you were.` : `Your token was refused: ${said}. Paste a valid one to go on.` };
  if (location.hash === "#/me") route();
  else location.replace("#/me");
}

/**
 * @param {string} hash
 * @returns {Target}
 */
function parse(hash) {
  const match = /^#\/(inbox|workflows|delegations|me|runs\/(\d+)|workflows\/(\d+))?\/?(\?[^#]*)?$/.exec(hash || "#/");
  if (!match) return { name: "inbox" };
  const params = new URLSearchParams(match[4] || "");
  // #/runs/42?for=bob: the run, decided on bob's behalf (from the inbox of his delegate).
  if (match[2]) return { name: "run", id: Number(match[2]), behalf: params.get("for") || null };
  // #/workflows/7?days=90: how long the workflow's approvals take, over the last 90 days.
  if (match[3]) return { name: "workflow", id: Number(match[3]), days: Number(params.get("days")) || null };
  return { name: /** @type {ViewName} */ (match[1] || "inbox") };
}

/** Draw the view the address names. */
export async function route() {
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
  markNavigation(target.name === "workflow" ? "workflows" : target.name);
  showCaller();
  view.setAttribute("aria-busy", "true");
  try {
    const title = await views[target.name](current, target);
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
    if (current !== generation || handled(error)) return;
    draw(current, "Something went wrong", el("p", {}, "The page could not be shown: ", messageOf(error)), el("p", {}, el("button", { type: "button", onclick: () => route() }, "Try again")));
    warn(messageOf(error));
    focus(alertRegion);
  } finally {
    if (current === generation) view.removeAttribute("aria-busy");
  }
}

/**
 * Whether an error was dealt with where it arose (a refused token: the page
 * went back to asking for one).
 * @param {unknown} error
 * @returns {boolean}
 */
export function handled(error) {
  return error instanceof Error && "handled" in error && error.handled === true;
}

/**
 * What an error says, in words.
 * @param {unknown} error
 * @returns {string}
 */
export function messageOf(error) {
  return (error instanceof Error && error.message) || String(error);
}

/**
 * Replace the view (if it is still the current one) with a heading and content.
 * @param {number} current
 * @param {string} title
 * @param {...(Node | null | false | undefined)} content
 * @returns {HTMLHeadingElement | null}
 */
export function draw(current, title, ...content) {
  if (current !== generation) return null;
  const heading = el("h1", { tabindex: "-1" }, title);
  view.replaceChildren(heading, ...content.filter((node) => node instanceof Node));
  document.title = `${heading.textContent} · Approvals`;
  return heading;
}

/** @param {string} name */
function markNavigation(name) {
  for (const link of document.querySelectorAll("nav a[data-view]")) {
    if (!(link instanceof HTMLElement)) continue;
    if (link.dataset.view === name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

function showCaller() {
  const caller = me();
  if (SIGNIN) byId("whoami").textContent = caller ? `Signed in as ${caller.actor}` : "Sign in";
  else byId("whoami").textContent = caller ? `Acting as ${caller.actor || "nobody named"}` : "Who am I?";
}

/**
 * Follow the address from now on, with these views.
 * @param {{ [name: string]: View }} table
 */
export function start(table) {
  views = table;
  byId("skip-link").addEventListener("click", (event) => {
    event.preventDefault();
    focus(byId("main"));
  });
  for (const kind of ["pointerdown", "keydown"]) {
    document.addEventListener(kind, () => (interacted = true), { capture: true, passive: true });
  }
  window.addEventListener("hashchange", () => route());
  route();
}
