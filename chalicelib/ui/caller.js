// Who this tab acts as. The document says how callers are known (its <meta>
// elements, rendered by chalicelib/api/page.py): with WORKFLOW_AUTH=none a
// name and groups the person gives, with jwt a bearer token, whose claims are
// read for display only (the API verifies the token on every call). Either is
// kept for the tab (sessionStorage), or in memory where that is refused.
// Where the service signs people in (SIGNIN), it holds their tokens in a
// cookie no script reads: who is signed in is what GET /auth/session said
// (session.js), kept here in memory.
import { sameName, splitList } from "./format.js";

/** @typedef {import("./types.js").Caller} Caller */

/**
 * @param {string} name
 * @returns {string}
 */
const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.getAttribute("content") ?? "";

/** Where the API is: "" locally, the stage ("/api") behind API Gateway. */
export const BASE = meta("api-base");
export const MODE = meta("auth-mode") === "none" ? "none" : "jwt";
export const ACTOR_CLAIM = meta("actor-claim") || "sub";
const GROUPS_CLAIM = meta("groups-claim") || "groups";
export const ADMIN_GROUP = meta("admin-group") || "workflow-admins";
/** Whether the service signs people in through an OpenID provider (WORKFLOW_OIDC_ISSUER). */
export const SIGNIN = MODE === "jwt" && meta("sign-in") === "oidc";
export const KEYS = { actor: "approvals.actor", groups: "approvals.groups", token: "approvals.token", next: "approvals.next" };

/** @type {Caller | null} */
let signedInCaller = null; // with SIGNIN: who GET /auth/session says is signed in

/**
 * With SIGNIN: who is signed in from now on (null: nobody).
 * @param {Caller | null} caller
 */
export const rememberSignedIn = (caller) => (signedInCaller = caller);

/** @type {Map<string, string>} */
const memory = new Map(); // when sessionStorage is refused: kept until the page reloads

export const session = {
  /**
   * @param {string} key
   * @returns {string | null}
   */
  get(key) {
    try {
      return sessionStorage.getItem(key);
    } catch {
      return memory.get(key) ?? null;
    }
  },
  /**
   * @param {string} key
   * @param {string | null} value
   */
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

/**
 * A token's claims, read for display only: the API verifies the token on every call.
 * @param {string} token
 * @returns {{ [claim: string]: unknown } | null}
 */
export function tokenClaims(token) {
  try {
    const part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    const binary = atob(part.padEnd(part.length + ((4 - (part.length % 4)) % 4), "="));
    const claims = JSON.parse(new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0))));
    return claims && typeof claims === "object" ? claims : null;
  } catch {
    return null;
  }
}

/**
 * @param {unknown} value
 * @returns {string[]}
 */
function claimGroups(value) {
  if (typeof value === "string") return splitList(value);
  return Array.isArray(value) ? value.filter((group) => typeof group === "string" && group.trim()).map((group) => group.trim()) : [];
}

/**
 * Who this tab acts as: {actor, groups, token?, expires?}, or null before they said.
 * @returns {Caller | null}
 */
export function me() {
  if (SIGNIN) return signedInCaller;
  if (MODE === "none") {
    const actor = (session.get(KEYS.actor) || "").trim();
    return actor ? { actor, groups: splitList(session.get(KEYS.groups)) } : null;
  }
  const token = session.get(KEYS.token);
  if (!token) return null;
  const claims = tokenClaims(token) || {};
  const named = claims[ACTOR_CLAIM];
  const actor = typeof named === "string" ? named.trim() : "";
  const expires = typeof claims.exp === "number" ? new Date(claims.exp * 1000).toISOString() : null;
  return { actor, groups: claimGroups(claims[GROUPS_CLAIM]), token, expires };
}

/**
 * Who this tab acts as, in a view that only opens once they said (the router
 * sends anyone else to #/me first).
 * @returns {Caller}
 */
export function signedIn() {
  const caller = me();
  if (!caller) throw new Error("Say who you are first.");
  return caller;
}

/**
 * Whether the caller may define workflows and append steps: anyone without
 * sign-in; with tokens, the members of the admin group (read from the token
 * for display only: the API checks the token on every call).
 * @param {Caller | null} caller
 * @returns {boolean}
 */
export function isAdmin(caller) {
  if (MODE === "none") return true;
  return caller !== null && caller.groups.some((group) => sameName(group, ADMIN_GROUP));
}

/**
 * @param {Caller | null} caller
 * @returns {string}
 */
export function describeCaller(caller) {
  if (!caller) return "nobody yet";
  const who = caller.actor || "an unnamed caller";
  return caller.groups.length ? `${who} (${caller.groups.join(", ")})` : who;
}

/**
 * Who asks, in the query of a read that names them (the inbox, the
 * permissions answer): without sign-in only; a token says it otherwise.
 * @returns {{ [name: string]: string | string[] }}
 */
export function callerQuery() {
  if (MODE !== "none") return {};
  const caller = signedIn();
  return { actor: caller.actor, group: caller.groups };
}
