// The JSON API of the app that serves the page: every call sends the caller's
// token (jwt) and asks for JSON; an error answer becomes an ApiError with the
// API's own words, and a refused token (401) sends the page back to asking for one.
import { BASE, MODE, SIGNIN, me } from "./caller.js";
import { alertRegion, clearMessages, focus, warn } from "./dom.js";
import { handled, signedOut } from "./router.js";
import { FROM_PAGE } from "./session.js";

/** @typedef {import("./types.js").Workflow} Workflow */

export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {string} message
   * @param {unknown} [body]
   */
  constructor(status, message, body) {
    super(message);
    this.status = status;
    this.body = body;
    /** Dealt with where it arose: the page asks for a token again. */
    this.handled = false;
  }
}

/**
 * The API's answer to a request, as JSON; an ApiError for any error answer.
 * What the answer is, the caller names (`@type` at the call): the API's
 * contract, not this function, says what each route answers.
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body]
 * @param {string} [idempotencyKey]
 * @returns {Promise<unknown>}
 */
export async function request(method, path, body, idempotencyKey) {
  /** @type {{ [name: string]: string }} */
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const caller = me();
  if (SIGNIN) Object.assign(headers, FROM_PAGE); // the session cookie says who calls
  else if (MODE === "jwt" && caller) headers.Authorization = `Bearer ${caller.token}`;
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
  let data;
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

/**
 * What to say of a failed answer that says nothing itself.
 * @param {number} status
 * @returns {string}
 */
function unexplained(status) {
  if (status === 429) return "The service is busy: try again in a moment.";
  if (status >= 500) return "The service could not answer just now: try again in a moment.";
  return "The service refused this request.";
}

/**
 * The status of an API's error answer (0: none reached us, or no API error).
 * @param {unknown} error
 * @returns {number}
 */
export const statusOf = (error) => (error instanceof ApiError ? error.status : 0);

/**
 * A query string ("?limit=20&group=a&group=b") of the parameters given; empty ones left out.
 * @param {{ [name: string]: unknown }} params
 * @returns {string}
 */
export function query(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    for (const each of Array.isArray(value) ? value : [value]) {
      if (each !== undefined && each !== null && each !== "") search.append(name, String(each));
    }
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

/** A fresh Idempotency-Key: a retried request is not recorded twice. */
export function newKey() {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

// -- workflows, as read ---------------------------------------------------------------

/** @type {Map<number, Workflow>} */
const workflowCache = new Map();

/**
 * A workflow, read once per page (or afresh).
 * @param {number} id
 * @param {boolean} [fresh]
 * @returns {Promise<Workflow>}
 */
export async function workflowById(id, fresh = false) {
  let workflow = workflowCache.get(id);
  if (fresh || !workflow) {
    workflow = /** @type {Workflow} */ (await request("GET", `/workflows/${id}`));
    workflowCache.set(id, workflow);
  }
  return workflow;
}

/**
 * Version `version` of workflow `id`: what a run on it follows (its steps),
 * read once (a version's steps only grow by the newest's appends).
 * @param {number} id
 * @param {number} version
 * @returns {Promise<Workflow>}
 */
export async function workflowVersion(id, version) {
  return /** @type {Workflow} */ (await request("GET", `/workflows/${id}/versions/${version}`));
}

/**
 * A workflow read in a list: kept, so that a view that names it asks no more.
 * @param {Workflow} workflow
 */
export const rememberWorkflow = (workflow) => workflowCache.set(workflow.id, workflow);

/**
 * Send a form's request; on success `done(answer)`, else the API's error in
 * the alert (or where `explain(error)` puts it, when it returns true).
 * @template T
 * @param {HTMLFormElement} form
 * @param {() => Promise<T>} send
 * @param {(answer: T) => void} done
 * @param {(error: ApiError) => boolean} [explain]
 */
export async function submit(form, send, done, explain) {
  const buttons = form.querySelectorAll("button");
  for (const button of buttons) button.disabled = true;
  clearMessages();
  try {
    const answer = await send();
    workflowCache.clear();
    done(answer);
  } catch (error) {
    for (const button of buttons) button.disabled = false;
    if (handled(error) || (explain && error instanceof ApiError && explain(error))) return;
    warn(error instanceof Error ? error.message : String(error));
    focus(alertRegion);
  }
}
