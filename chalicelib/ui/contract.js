// What the page reads from its server's own contract, GET /openapi.json, read
// once per page: how long each field its forms send may be (the schemas'
// maxLength, the very limits the API holds requests to), a workflow's rules
// (the boolean fields of a new workflow) and what a step's deadline may do.
// The page ships with the server that serves it: it asks the document for
// values, never whether a feature is there.
import { request } from "./api.js";
import { isObject } from "./format.js";

/** @typedef {{ [key: string]: unknown }} SchemaNode */

/**
 * @typedef {object} Contract
 * @property {string[]} flags A new workflow's rules (its boolean fields), in the document's order.
 * @property {string[]} onDeadline What a step's deadline may do: "remind", "escalate", "reject".
 * @property {(path: string, field: string, method?: string) => string | null} maxLength
 *   The most characters `field` of `path`'s body (POST's, or `method`'s) may have, as an
 *   attribute's value; null where the document sets no limit.
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
  };
  return contract;
}
