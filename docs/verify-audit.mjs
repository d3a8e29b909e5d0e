// Verify a saved answer of GET /runs/{id}/audit: node verify-audit.mjs run-1-audit.json
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

const GENESIS = ["run_id", "workflow_id", "title", "requested_by", "created_at", "input_digest", "workflow_version"];
const ENTRY = [
  ...["run_id", "seq", "step_id", "step_name", "action", "actor", "comment", "created_at"],
  ...["on_behalf_of", "round", "input_digest", "channel", "approvers", "workflow_version"], // only where present
];
// RFC 8785: keys sorted by UTF-16 code units (JavaScript's own string order),
// strings and numbers as JSON.stringify writes them.
const canonical = (x) =>
  Array.isArray(x)
    ? `[${x.map(canonical).join(",")}]`
    : x !== null && typeof x === "object"
      ? `{${Object.keys(x).sort().map((k) => `${JSON.stringify(k)}:${canonical(x[k])}`).join(",")}}`
      : JSON.stringify(x);
const sha256 = (text) => createHash("sha256").update(text, "utf8").digest("hex");
const only = (record, names) => Object.fromEntries(names.filter((n) => n in record).map((n) => [n, record[n]]));
const fail = (why) => {
  console.error(`invalid: ${why}`);
  process.exit(1);
};

const audit = JSON.parse(readFileSync(process.argv[2], "utf8"));
let prev = sha256(canonical(only(audit.genesis, GENESIS)));
let bound = audit.genesis.input_digest ?? null;
let byResubmit = false;
audit.entries.forEach((e, i) => {
  if (e.seq !== i + 1 || e.hash !== sha256(`${prev}\n${canonical(only(e, ENTRY))}`)) {
    fail(`first invalid seq ${i + 1}`);
  }
  prev = e.hash;
  if ("input_digest" in e) [bound, byResubmit] = [e.input_digest, true];
});
const input = audit.input ?? {};
const empty = !byResubmit && Object.keys(input).length === 0; // the genesis binds no {}
if (prev !== audit.head_hash || bound !== (empty ? null : sha256(canonical(input)))) {
  fail("head_hash is not the last entry's, or the input is not the one bound");
}
console.log("valid");
