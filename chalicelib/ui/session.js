// Signed-in sessions, where the service signs people in through an OpenID
// provider (SIGNIN). The service is the page's backend: it runs the sign-in
// (GET /auth/signin and its callback), keeps the tokens in an HttpOnly cookie
// this script never sees, and says who is signed in (GET /auth/session). This
// module asks it, renews the session a minute before it ends (POST
// /auth/renew, where the provider gave a refresh token), goes back to "Sign
// in" when it has ended, and signs out (POST /auth/signout, then on to the
// provider's end-session page where it has one).
import { BASE, rememberSignedIn } from "./caller.js";
import { go, signedOut } from "./router.js";

/** @typedef {import("./types.js").Caller} Caller */
/** @typedef {{ actor: string, groups: string[], admin: boolean, expires_at: string, renewable: boolean }} SignedIn */

// What every request of the page sends, so the service knows it came from the
// page: another origin cannot send it without a preflight the service refuses.
export const FROM_PAGE = { "X-Requested-With": "approvals-page" };
// Renewed this long before it ends; never sooner than MIN_WAIT_MS from now.
const RENEW_BEFORE_MS = 60_000;
const MIN_WAIT_MS = 5_000;

/** @type {number | undefined} */
let timer;

/**
 * The sign-in's own request: JSON in, JSON out, the session cookie sent.
 * @param {string} method
 * @param {string} path
 * @returns {Promise<{ status: number, body: any }>}
 */
async function call(method, path) {
  const response = await fetch(BASE + path, { method, headers: { Accept: "application/json", ...FROM_PAGE }, cache: "no-store", credentials: "same-origin" });
  const body = await response.json().catch(() => null);
  return { status: response.status, body };
}

/**
 * Who is signed in, as the service says; remembered for the page, and the
 * renewal planned. Nobody (null) when the service says 401.
 * @returns {Promise<Caller | null>}
 */
export async function loadSession() {
  let answer;
  try {
    answer = await call("GET", "/auth/session");
  } catch {
    answer = { status: 0, body: null };
  }
  return remember(answer.status === 200 ? answer.body : null);
}

/**
 * @param {SignedIn | null} signedIn
 * @returns {Caller | null}
 */
function remember(signedIn) {
  window.clearTimeout(timer);
  if (!signedIn) {
    rememberSignedIn(null);
    return null;
  }
  /** @type {Caller} */
  const caller = { actor: signedIn.actor, groups: signedIn.groups, expires: signedIn.expires_at, renewable: signedIn.renewable };
  rememberSignedIn(caller);
  const left = new Date(signedIn.expires_at).getTime() - Date.now();
  if (signedIn.renewable) timer = window.setTimeout(renew, Math.max(left - RENEW_BEFORE_MS, MIN_WAIT_MS));
  else timer = window.setTimeout(ended, Math.max(left, MIN_WAIT_MS));
  return caller;
}

async function renew() {
  let answer;
  try {
    answer = await call("POST", "/auth/renew");
  } catch {
    answer = { status: 0, body: null };
  }
  if (answer.status === 200) remember(answer.body);
  else if (answer.status === 401) ended();
  else timer = window.setTimeout(ended, RENEW_BEFORE_MS); // the provider said no: it ends as planned
}

function ended() {
  rememberSignedIn(null);
  signedOut("Your session has ended");
}

/**
 * Where "Sign in" goes: the service's sign-in, and back to `hash` afterwards.
 * @param {string} hash
 * @returns {string}
 */
export const signInUrl = (hash) => `${BASE}/auth/signin?next=${encodeURIComponent(hash.startsWith("#/") ? hash : "#/inbox")}`;

/** Sign out here, then at the provider where it ends sessions too. */
export async function signOut() {
  const answer = await call("POST", "/auth/signout");
  if (answer.status !== 200) throw new Error((answer.body && answer.body.error) || "The service did not sign you out: try again.");
  remember(null);
  const end = answer.body && answer.body.end_session_url;
  if (typeof end === "string" && end) location.assign(end);
  else go("#/me", { status: "Signed out." });
}
