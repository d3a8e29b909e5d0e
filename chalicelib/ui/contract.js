// What the page reads from its server's own contract, GET /openapi.json, read
// once per page: how long each field its forms send may be (the schemas'
// maxLength, the very limits the API holds requests to), a workflow's rules
// (the boolean fields of a new workflow) and what a step's deadline may do.
// It also describes the fields of a body as the version editor renders them
// (fields, stepFields), so that a field the document adds gets a form field
// without a change here. The page ships with the server that serves it: it
// asks the document for values, never whether a feature is there.
import { request } from "./api.js";
import { isObject } from "./format.js";

/** @typedef {{ [key: string]: unknown }} SchemaNode */

/**
 * A field of a request's body, as a form offers it: text, a number, a box to
 * tick, a choice, a list of principals (user:name, group:name) or, for
 * anything else, JSON text; with the document's limits. A list whose
 * `minItems` is 1 or more is left out rather than sent empty.
 * @typedef {object} FieldSpec
 * @property {string} name
 * @property {"text" | "number" | "boolean" | "choice" | "principals" | "json"} kind
 * @property {string} description The document's words (written for programmers).
 * @property {boolean} required
 * @property {number | null} maxLength
 * @property {number | null} minimum
 * @property {number | null} maximum
 * @property {number | null} minItems
 * @property {number | null} maxItems
 * @property {string[]} choices A choice's values.
 * @property {unknown} example
 */

/**
 * @typedef {object} Contract
 * @property {string[]} flags A new workflow's rules (its boolean fields), in the document's order.
 * @property {string[]} onDeadline What a step's deadline may do: "remind", "escalate", "reject".
 * @property {(path: string, field: string, method?: string) => string | null} maxLength
 *   The most characters `field` of `path`'s body (POST's, or `method`'s) may have, as an
 *   attribute's value; null where the document sets no limit.
 * @property {(path: string) => FieldSpec[]} fields The fields of `path`'s POST body, in the document's order.
 * @property {(path: string) => FieldSpec[]} stepFields The fields of a step in the `steps` of `path`'s POST body.
 * @property {(path: string) => number | null} maxSteps The most steps `path`'s POST body may hold.
 */

/** @type {Contract | null} */
let contract = null;

/**
 * @param {unknown} value
 * @returns {SchemaNode}
 */
const asNode = (value) => (isObject(value) ? value : {});

/**
 * @param {unknown} value
 * @returns {unknown[]}
 */
const asList = (value) => (Array.isArray(value) ? value : []);

/**
 * @param {unknown} value
 * @returns {number | null}
 */
const numberOr = (value) => (typeof value === "number" ? value : null);

/**
 * The contract of this server, read on first use.
 * @returns {Promise<Contract>}
 */
export async function readContract() {
  if (contract) return contract;
  const doc = asNode(await request("GET", "/openapi.json"));
  /**
   * A node of the document, its local references followed.
   * @param {unknown} value
   * @returns {SchemaNode}
   */
  const deref = (value) => {
    let node = asNode(value);
    for (let hops = 0; typeof node.$ref === "string" && node.$ref.startsWith("#/") && hops < 10; hops++) {
      /** @type {unknown} */
      let at = doc;
      for (const key of node.$ref.slice(2).split("/")) at = asNode(at)[key.replace(/~1/g, "/").replace(/~0/g, "~")];
      node = asNode(at);
    }
    return node;
  };
  /**
   * The properties an object schema (or the object variants of a union) allows.
   * @param {unknown} value
   * @returns {SchemaNode}
   */
  const properties = (value) => {
    const node = deref(value);
    const variants = [...asList(node.anyOf), ...asList(node.oneOf), ...asList(node.allOf)];
    return Object.assign({}, ...variants.map(properties), asNode(node.properties));
  };
  /**
   * @param {string} path
   * @param {string} [method]
   * @returns {SchemaNode}
   */
  const body = (path, method = "post") => {
    const operation = asNode(asNode(asNode(doc.paths)[path])[method]);
    return properties(asNode(asNode(asNode(operation.requestBody).content)["application/json"]).schema);
  };
  /**
   * The longest text a schema takes: its own maxLength; the shortest of
   * all that `allOf` requires; the longest that one of a union's variants
   * takes, where each of its texts has a limit.
   * @param {unknown} value
   * @returns {number | null}
   */
  const longest = (value) => {
    const node = deref(value);
    if (typeof node.maxLength === "number" && Number.isInteger(node.maxLength)) return node.maxLength;
    const all = asList(node.allOf).map(longest).filter((limit) => limit !== null);
    if (all.length) return Math.min(...all);
    const either = [...asList(node.anyOf), ...asList(node.oneOf)].filter((each) => deref(each).type !== "null").map(longest);
    return either.length && either.every((limit) => limit !== null) ? Math.max(.../** @type {number[]} */ (either)) : null;
  };
  /**
   * @param {SchemaNode} fields
   * @param {unknown} required
   * @returns {FieldSpec[]}
   */
  const specs = (fields, required) => Object.entries(fields).map(([name, schema]) => fieldSpec(name, schema, asList(required).includes(name), deref));
  /**
   * The object a request body's `steps` holds (the variant of its items that is an object).
   * @param {string} path
   * @returns {SchemaNode}
   */
  const stepSchema = (path) => {
    const items = deref(deref(body(path).steps).items);
    return [items, ...asList(items.oneOf), ...asList(items.anyOf)].map(deref).find((each) => isObject(each.properties)) || {};
  };
  const onDeadline = deref(body("/workflows/{workflow_id}/steps").on_deadline);
  contract = {
    flags: Object.entries(body("/workflows"))
      .filter(([, schema]) => [deref(schema).type].flat().includes("boolean"))
      .map(([name]) => name),
    onDeadline: [...asList(onDeadline.enum), ...asList(onDeadline.anyOf).flatMap((each) => asList(deref(each).enum))].filter((value) => typeof value === "string"),
    maxLength(path, field, method = "post") {
      const limit = longest(body(path, method)[field]);
      return limit === null ? null : String(limit);
    },
    fields: (path) => specs(body(path), []),
    stepFields(path) {
      const step = stepSchema(path);
      return specs(asNode(step.properties), step.required);
    },
    maxSteps: (path) => numberOr(deref(body(path).steps).maxItems),
  };
  return contract;
}

/**
 * How a form offers the field `name` that `value` (a schema) describes.
 * @param {string} name
 * @param {unknown} value
 * @param {boolean} required
 * @param {(value: unknown) => SchemaNode} deref
 * @returns {FieldSpec}
 */
function fieldSpec(name, value, required, deref) {
  const raw = asNode(value);
  const node = deref(raw);
  // A union with null (anyOf: [X, {type: null}]) is offered as X, left empty for null.
  const variants = [...asList(node.anyOf), ...asList(node.oneOf)].map(deref).filter((each) => each.type !== "null");
  const schema = variants.length === 1 ? { ...variants[0], ...node, anyOf: undefined, oneOf: undefined } : node;
  const types = [schema.type].flat().filter((type) => type !== "null");
  const choices = asList(schema.enum).filter((choice) => typeof choice === "string");
  const items = asNode(schema.items);
  /** @type {FieldSpec["kind"]} */
  let kind = "json";
  if (choices.length) kind = "choice";
  else if (types.length === 1 && types[0] === "boolean") kind = "boolean";
  else if (types.length === 1 && (types[0] === "integer" || types[0] === "number")) kind = "number";
  else if (types.length === 1 && types[0] === "string") kind = "text";
  else if (types.length === 1 && types[0] === "array" && typeof items.$ref === "string" && items.$ref.endsWith("/Principal")) kind = "principals";
  const example = asList(schema.examples)[0] ?? asList(deref(raw).examples)[0];
  return {
    name,
    kind,
    description: typeof schema.description === "string" ? schema.description : "",
    required,
    maxLength: numberOr(schema.maxLength),
    minimum: numberOr(schema.minimum),
    maximum: numberOr(schema.maximum),
    minItems: numberOr(schema.minItems),
    maxItems: numberOr(schema.maxItems),
    choices,
    example,
  };
}
