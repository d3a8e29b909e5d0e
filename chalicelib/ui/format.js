// Times, numbers, lists and names in words, as the page says them everywhere.
import { el } from "./dom.js";

// Times in the reader's own zone, and saying which it is.
export const DATE = new Intl.DateTimeFormat(undefined, { year: "numeric", month: "short", day: "numeric", hour: "numeric", minute: "2-digit", timeZoneName: "short" });

/**
 * A time as the reader's wall time, in a <time> element; null for none.
 * @param {string | null | undefined} iso
 * @returns {HTMLTimeElement | null}
 */
export function time(iso) {
  if (!iso) return null;
  const date = new Date(iso);
  return el("time", { datetime: iso }, Number.isNaN(date.getTime()) ? iso : DATE.format(date));
}

/**
 * @param {string | null | undefined} iso
 * @returns {boolean}
 */
export const isPast = (iso) => Boolean(iso) && new Date(/** @type {string} */ (iso)).getTime() < Date.now();

/**
 * "2 days", "90 minutes": a number of seconds in the largest whole unit.
 * @param {number} seconds
 * @returns {string}
 */
export function duration(seconds) {
  /** @type {Array<[string, number]>} */
  const units = [["day", 86400], ["hour", 3600], ["minute", 60], ["second", 1]];
  const [name, size] = units.find(([, each]) => seconds >= each && seconds % each === 0) || units[3];
  const count = seconds / size;
  return `${count} ${name}${count === 1 ? "" : "s"}`;
}

/**
 * @param {string | null | undefined} text
 * @returns {string[]}
 */
export const splitList = (text) => String(text || "").split(/[\s,]+/).map((part) => part.trim()).filter(Boolean);

/**
 * @param {number} count
 * @param {string} one
 * @param {string} many
 * @returns {string}
 */
export const plural = (count, one, many) => `${count} ${count === 1 ? one : many}`;

/**
 * @param {string} text
 * @returns {string}
 */
export const asSentence = (text) => (/[.!?]$/.test(text) ? text : `${text}.`);

/**
 * @param {string} text
 * @returns {string}
 */
export const capitalised = (text) => text.charAt(0).toUpperCase() + text.slice(1);

/**
 * "a", "a or b", "a, b or c" (`word` "and" for "a, b and c").
 * @param {string[]} items
 * @param {string} [word]
 * @returns {string}
 */
export function series(items, word = "or") {
  if (items.length <= 1) return items.join("");
  return `${items.slice(0, -1).join(", ")} ${word} ${items[items.length - 1]}`;
}

/**
 * A principal in words: "group:finance" is the finance group, "user:cfo" is cfo.
 * @param {string} principal
 * @returns {string}
 */
export function principalWords(principal) {
  const text = String(principal);
  if (text.startsWith("group:")) return `the ${text.slice("group:".length)} group`;
  if (text.startsWith("user:")) return text.slice("user:".length);
  return text === "*" ? "anyone" : text;
}

/**
 * @param {string[] | null | undefined} principals
 * @returns {string}
 */
export const whoMayDecide = (principals) => (principals && principals.length ? series(principals.map(principalWords)) : "anyone");

// Width forms (fullwidth and halfwidth, and the ideographic space): the
// characters whose compatibility mapping is <wide> or <narrow>.
const WIDTH_FORMS = /[\u3000\uFF01-\uFFEE]/g;

/**
 * The key the service compares names by (one person, one name): width forms
 * at their usual width, case folded, NFC. Unicode case folding is
 * approximated by upper- then lower-casing, which agrees with it but for a
 * few letters (the dotless ı): there it joins names the service keeps apart,
 * which can only show a form the API then refuses, never hide one.
 * @param {string} name
 * @returns {string}
 */
function nameKey(name) {
  const mapped = String(name).normalize("NFC").replace(WIDTH_FORMS, (char) => char.normalize("NFKC"));
  return mapped.toUpperCase().toLowerCase().normalize("NFC");
}

/**
 * @param {unknown} first
 * @param {unknown} second
 * @returns {boolean}
 */
export const sameName = (first, second) => typeof first === "string" && typeof second === "string" && nameKey(first) === nameKey(second);

/**
 * @param {unknown} value
 * @returns {value is { [key: string]: unknown }}
 */
export const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);

/**
 * @param {unknown} value
 * @returns {boolean}
 */
export const isScalar = (value) => value === null || ["string", "number", "boolean"].includes(typeof value);

/**
 * @param {number} number
 * @param {number} [width]
 * @returns {string}
 */
const pad = (number, width = 2) => String(number).padStart(width, "0");

/**
 * A datetime-local value (the reader's wall time) as RFC 3339, with the
 * reader's offset at that time: "2026-03-01T10:30:00+01:00".
 * @param {string} value
 * @returns {string | null}
 */
export function localTimeText(value) {
  const date = new Date(value); // a date-time without an offset is local time
  if (Number.isNaN(date.getTime())) return null;
  const offset = -date.getTimezoneOffset();
  const zone = offset === 0 ? "Z" : `${offset > 0 ? "+" : "-"}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)}`;
  const millis = date.getMilliseconds() ? `.${pad(date.getMilliseconds(), 3)}` : "";
  return `${pad(date.getFullYear(), 4)}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}${millis}${zone}`;
}

/**
 * An RFC 3339 time as a datetime-local value: the reader's wall time.
 * @param {unknown} iso
 * @returns {string | null}
 */
export function wallTimeText(iso) {
  if (typeof iso !== "string") return null;
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return null;
  return `${pad(date.getFullYear(), 4)}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}
