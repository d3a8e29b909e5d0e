// Verify a saved answer of GET /runs/{id}/audit, with the saved answers of
// GET /workflows/{id}/versions/{n} for the versions its chain binds:
// node verify-audit.mjs run-1-audit.json version-1.json
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

const GENESIS = [
  ...["run_id", "workflow_id", "title", "requested_by", "created_at"],
  ...["input_digest", "workflow_version", "definition_digest", "definition_steps"], // only where present
];
const ENTRY = [
  ...["run_id", "seq", "step_id", "step_name", "action", "actor", "comment", "created_at"],
  ...["on_behalf_of", "round", "input_digest", "channel", "approvers", "workflow_version"], // only where present
  ...["next_step_digest", "definition_digest", "definition_steps"],
];
// A version's members that say which it is and when, not what its runs do.
const NOT_DEFINITION = ["id", "name", "created_at", "version", "version_created_at", "retired"];
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
// The members that set something: null, false, [] and {} left out.
const unset = (v) => v === null || v === false || (typeof v === "object" && Object.keys(v).length === 0);
const set = (record) => Object.fromEntries(Object.entries(record).filter(([, v]) => !unset(v)));
const fail = (why) => {
  console.error(`invalid: ${why}`);
  process.exit(1);
};

const load = (path) => JSON.parse(readFileSync(path, "utf8"));
const audit = load(process.argv[2]);
const versions = new Map(
  process.argv.slice(3).map(load).filter((v) => v.id === audit.genesis.workflow_id).map((v) => [v.version, v]),
);
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
// The definitions bound: the genesis's and a move's, of the version the run is
// on there (its first definition_steps steps); an arrival's, one of its steps.
let version = 1;
[audit.genesis, ...audit.entries].forEach((e, seq) => {
  version = e.workflow_version ?? version;
  if (!("definition_digest" in e || "next_step_digest" in e)) return;
  const shown = versions.get(version) ?? fail(`seq ${seq} binds version ${version}: give its answer`);
  const steps = shown.steps.map(set);
  const definition = set(only(shown, Object.keys(shown).filter((k) => !NOT_DEFINITION.includes(k))));
  definition.steps = steps.slice(0, e.definition_steps);
  if ("definition_digest" in e && e.definition_digest !== sha256(canonical(definition))) {
    fail(`version ${version} is not the definition seq ${seq} binds`);
  }
  if ("next_step_digest" in e && !steps.some((s) => sha256(canonical(s)) === e.next_step_digest)) {
    fail(`version ${version} has not the step seq ${seq} binds`);
  }
});
console.log("valid");
