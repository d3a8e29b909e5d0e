// A workflow's rules (its boolean fields, the document's policy flags) in the
// page's words: the label and hint of their boxes in the define form and the
// version editor, and how a workflow's card says each, when true and when false.
import { capitalised } from "./format.js";

/** @type {{ [flag: string]: string }} */
const FLAG_LABELS = {
  allow_self_approval: "The requester may decide their own run",
  distinct_approvers: "Nobody approves more than one step of a run",
  reject_requires_comment: "Rejecting needs a comment",
};
/** @type {{ [flag: string]: string }} */
export const FLAG_HINTS = {
  allow_self_approval: "Otherwise whoever requested a run can't approve or reject it.",
  distinct_approvers: "Each step of a run is then approved by people who approved none of its other steps.",
  reject_requires_comment: "Whoever rejects a run then has to say why.",
};
/** @type {{ [flag: string]: [string, string] }} */
const FLAG_SAYS = {
  allow_self_approval: ["The requester may approve or reject their own run.", "The requester may not approve or reject their own run."],
  distinct_approvers: ["Nobody approves more than one step of a run.", "One person may approve several steps of a run."],
  reject_requires_comment: ["Rejecting needs a comment.", "Rejecting needs no comment."],
};

/**
 * @param {string} flag
 * @returns {string}
 */
export function flagLabel(flag) {
  return FLAG_LABELS[flag] || capitalised(flag.replace(/_/g, " "));
}

/**
 * What a workflow's rule (a boolean field) being `value` means, in words.
 * @param {string} flag
 * @param {boolean} value
 * @returns {string}
 */
export function flagText(flag, value) {
  const says = FLAG_SAYS[flag];
  return says ? says[value ? 0 : 1] : `${flagLabel(flag)}: ${value ? "yes" : "no"}.`;
}
