/**
 * Validation of a usage-metrics package against the closed JSON Schema
 * `schemas/shared_metrics.v2.schema.json` (draft 2020-12, schema version
 * `agent.shared_metrics.v2`).
 *
 * The schema is compiled once, when this module loads. Whether a package is valid is decided by
 * that compiled schema alone; the errors of an invalid package are made precise: each names the
 * JSON pointer of the offending value, the schema rule it breaks and the value itself.
 *
 * @module
 */

import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020";
import ajvFormats from "ajv-formats";
import schema from "../../schemas/shared_metrics.v2.schema.json" with { type: "json" };
import { codePointCount, firstCodePoints } from "../home/text.ts";

/** A JSON value, read-only. */
type JsonValue =
  | null
  | boolean
  | number
  | string
  | readonly JsonValue[]
  | { readonly [key: string]: JsonValue };

/**
 * The JSON Schema of the usage-metrics package, schema version `agent.shared_metrics.v2`.
 *
 * Read-only: it is the object the validator was compiled from.
 *
 * @example Read the schema's identity
 * ```ts
 * import { sharedMetricsSchema } from "./schema.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(sharedMetricsSchema.$id, "urn:agent:schema:shared-metrics:v2");
 * assert.equal(sharedMetricsSchema.additionalProperties, false);
 * ```
 */
export const sharedMetricsSchema: { readonly [key: string]: JsonValue } = schema;

/**
 * One reason a package does not match the schema.
 *
 * @example A package with the wrong schema version
 * ```ts
 * import { validateMetricsPackage, type MetricsValidationError } from "./schema.ts";
 * import assert from "node:assert/strict";
 *
 * const result = validateMetricsPackage({ schema_version: "agent.shared_metrics.v1" });
 * assert.equal(result.valid, false);
 * if (!result.valid) {
 *   const error: MetricsValidationError = result.errors.find((e) => e.rule === "const")!;
 *   assert.equal(error.pointer, "/schema_version");
 *   assert.equal(error.value, "agent.shared_metrics.v1");
 * }
 * ```
 */
export interface MetricsValidationError {
  /**
   * JSON pointer (RFC 6901) of the offending value; `""` is the whole package. For an extra
   * property it names that property, for a missing one the property that should be there.
   */
  pointer: string;
  /** The schema keyword that was broken, such as `enum`, `pattern`, `required` or `oneOf`. */
  rule: string;
  /** A sentence naming the pointer, the rule, the offending value and what is allowed. */
  message: string;
  /** The offending value (`undefined` for a missing property). */
  value: unknown;
}

/**
 * The answer of {@linkcode validateMetricsPackage}: valid, or invalid with at least one error.
 *
 * @example Branch on the answer
 * ```ts
 * import { type MetricsValidationResult, validateMetricsPackage } from "./schema.ts";
 * import assert from "node:assert/strict";
 *
 * const result: MetricsValidationResult = validateMetricsPackage([]);
 * const pointers = result.valid ? [] : result.errors.map((e) => e.pointer);
 * assert.deepEqual(pointers, [""]);
 * ```
 */
export type MetricsValidationResult =
  | { valid: true }
  | { valid: false; errors: MetricsValidationError[] };

const ajv = new Ajv2020({ allErrors: true, strict: true });
// ajv-formats is CommonJS: Deno types its default import as the module, whose `default` is the plugin.
ajvFormats.default(ajv);
const validatePackage: ValidateFunction = ajv.compile(schema);

/** One validator per metric name, used only to explain why a metric item fails. */
const kindValidators: ReadonlyMap<string, ValidateFunction> = new Map(
  Object.entries(schema.$defs).flatMap(([defName, def]) => {
    if (!("properties" in def) || !("name" in def.properties)) return [];
    const validate = ajv.getSchema(`${schema.$id}#/$defs/${defName}`);
    if (validate === undefined) throw new Error(`metrics schema: cannot compile $defs/${defName}`);
    return [[def.properties.name.const, validate] as const];
  }),
);
const METRIC_NAMES_TEXT = [...kindValidators.keys()].map((name) => JSON.stringify(name)).join(
  ", ",
);

const VALID: MetricsValidationResult = Object.freeze({ valid: true });

/**
 * Validate a usage-metrics package against the schema `agent.shared_metrics.v2`.
 *
 * The answer is exactly the compiled schema's. When an item of `metrics` fails, its errors are
 * those of the one metric kind its `name` selects (not of all nine `oneOf` branches); an item
 * whose `name` is none of the nine gets a single `oneOf` error listing the valid names.
 *
 * @example A valid package
 * ```ts
 * import { validateMetricsPackage } from "./schema.ts";
 * import assert from "node:assert/strict";
 *
 * const pkg = {
 *   schema_version: "agent.shared_metrics.v2",
 *   package_id: "3f1c2a9e-8b7d-4c6e-9a5f-1e2d3c4b5a69",
 *   install_id: "9b8a7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
 *   period_start: "2026-03-01T00:00:00Z",
 *   period_end: "2026-03-02T00:00:00Z",
 *   generated_at: "2026-03-02T00:05:00Z",
 *   resource: {
 *     architecture: "x86_64",
 *     agent_version: "0.1.0",
 *     install_method: "git",
 *     os_family: "linux",
 *   },
 *   metrics: [{ name: "agent.client.active", type: "counter", dimensions: {}, value: 1 }],
 * };
 * assert.deepEqual(validateMetricsPackage(pkg), { valid: true });
 * ```
 *
 * @example An invalid metric item is explained by its own kind only
 * ```ts
 * import { validateMetricsPackage } from "./schema.ts";
 * import assert from "node:assert/strict";
 *
 * const result = validateMetricsPackage({
 *   schema_version: "agent.shared_metrics.v2",
 *   package_id: "3f1c2a9e-8b7d-4c6e-9a5f-1e2d3c4b5a69",
 *   install_id: "9b8a7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
 *   period_start: "2026-03-01T00:00:00Z",
 *   period_end: "2026-03-02T00:00:00Z",
 *   generated_at: "2026-03-02T00:05:00Z",
 *   resource: {
 *     architecture: "x86_64",
 *     agent_version: "0.1.0",
 *     install_method: "git",
 *     os_family: "linux",
 *   },
 *   metrics: [{
 *     name: "agent.tool_approval.count",
 *     type: "counter",
 *     dimensions: { attribution: "tool_call", outcome: "maybe" },
 *     value: 2,
 *   }],
 * });
 * assert.equal(result.valid, false);
 * if (!result.valid) {
 *   assert.deepEqual(
 *     result.errors.map(({ pointer, rule }) => ({ pointer, rule })),
 *     [{ pointer: "/metrics/0/dimensions/outcome", rule: "enum" }],
 *   );
 *   assert.match(result.errors[0].message, /"approved", "denied", "timed_out", "unknown"/);
 * }
 * ```
 *
 * @param value The parsed JSON document to check.
 * @returns `{ valid: true }`, or `{ valid: false, errors }` with at least one error.
 */
export function validateMetricsPackage(value: unknown): MetricsValidationResult {
  if (validatePackage(value)) return VALID;
  return { valid: false, errors: explain(value, validatePackage.errors ?? []) };
}

/** Turn the full schema's errors into precise ones, refining each failing metric item. */
function explain(root: unknown, errors: readonly ErrorObject[]): MetricsValidationError[] {
  const out: MetricsValidationError[] = [];
  const explainedItems = new Set<number>();
  const metrics = isObject(root) ? root.metrics : undefined;
  for (const error of errors) {
    const item = /^\/metrics\/(\d+)(?:\/|$)/.exec(error.instancePath);
    if (item === null || !Array.isArray(metrics)) {
      out.push(toValidationError(root, "", error));
      continue;
    }
    const index = Number(item[1]);
    if (explainedItems.has(index)) continue;
    explainedItems.add(index);
    out.push(...explainItem(root, index, metrics[index]));
  }
  if (out.length === 0) {
    // Cannot happen with Ajv; keep the promise that an invalid answer carries an error.
    out.push({
      pointer: "",
      rule: "schema",
      message: "(root) does not match the schema.",
      value: root,
    });
  }
  return out;
}

/** Explain why `metrics[index]` fails, using the metric kind its `name` selects. */
function explainItem(root: unknown, index: number, item: unknown): MetricsValidationError[] {
  const prefix = `/metrics/${index}`;
  const validateKind = isObject(item) && typeof item.name === "string"
    ? kindValidators.get(item.name)
    : undefined;
  if (validateKind !== undefined) {
    if (!validateKind(item)) {
      return (validateKind.errors ?? []).map((error) => toValidationError(root, prefix, error));
    }
    // The kind matches on its own, so the item failed `oneOf` for another reason.
  }
  const pointer = isObject(item) ? `${prefix}/name` : prefix;
  const value = isObject(item) ? item.name : item;
  const what = isObject(item)
    ? (value === undefined ? "is missing" : `is ${show(value)}`)
    : `is not a metric object (got ${show(value)})`;
  return [{
    pointer,
    rule: "oneOf",
    message: `${label(pointer)} ${what}: a metric item must be exactly one of the nine metric ` +
      `kinds, named ${METRIC_NAMES_TEXT} (rule oneOf).`,
    value,
  }];
}

/** Map one Ajv error to a {@linkcode MetricsValidationError}; `prefix` is prepended to paths. */
function toValidationError(
  root: unknown,
  prefix: string,
  error: ErrorObject,
): MetricsValidationError {
  const rule = error.keyword;
  const params = error.params as Record<string, unknown>;
  let pointer = prefix + error.instancePath;
  if (rule === "additionalProperties") {
    pointer += `/${escapePointer(String(params.additionalProperty))}`;
  } else if (rule === "required") {
    pointer += `/${escapePointer(String(params.missingProperty))}`;
  }
  const value = rule === "required" ? undefined : resolvePointer(root, pointer);
  return { pointer, rule, message: describe(pointer, rule, params, value, error), value };
}

/** A human sentence for one broken rule. */
function describe(
  pointer: string,
  rule: string,
  params: Record<string, unknown>,
  value: unknown,
  error: ErrorObject,
): string {
  const at = label(pointer);
  const got = `got ${show(value)}`;
  switch (rule) {
    case "required":
      return `${at} is missing: it is a required property (rule required).`;
    case "additionalProperties":
      return `${at} is not allowed: the object is closed and this property is not listed ` +
        `(rule additionalProperties); remove it.`;
    case "enum":
      return `${at} must be one of ${listValues(params.allowedValues)} (rule enum); ${got}.`;
    case "const":
      return `${at} must be exactly ${show(params.allowedValue)} (rule const); ${got}.`;
    case "type":
      return `${at} must be of type ${params.type} (rule type); ${got}.`;
    case "pattern":
      return `${at} must match the pattern ${params.pattern} (rule pattern); ${got}.`;
    case "format":
      return `${at} must be a valid ${params.format}` +
        (params.format === "date-time" ? " in RFC 3339 form with a time zone" : "") +
        ` (rule format); ${got}.`;
    case "minLength":
      return `${at} must be at least ${params.limit} characters long (rule minLength); ${got}.`;
    case "maxLength":
      return `${at} must be at most ${params.limit} characters long (rule maxLength); ${got}.`;
    case "minimum":
      return `${at} must be at least ${params.limit} (rule minimum); ${got}.`;
    case "minItems":
      return `${at} must have at least ${params.limit} item(s) (rule minItems); ${got}.`;
    case "maxProperties":
      return `${at} must have at most ${params.limit} properties (rule maxProperties); ${got}.`;
    default:
      return `${at} ${error.message ?? "does not match the schema"} (rule ${rule}); ${got}.`;
  }
}

/** How a pointer reads in a message. */
function label(pointer: string): string {
  return pointer === "" ? "(root)" : pointer;
}

/** A short JSON rendering of a value for a message. */
function show(value: unknown): string {
  if (value === undefined) return "nothing";
  const text = JSON.stringify(value) ?? String(value);
  const length = codePointCount(text);
  return length > 80 ? `${firstCodePoints(text, 77)}... (${length} characters of JSON)` : text;
}

/** `"a", "b", "c"` */
function listValues(values: unknown): string {
  return Array.isArray(values) ? values.map((v) => JSON.stringify(v)).join(", ") : show(values);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function escapePointer(token: string): string {
  return token.replaceAll("~", "~0").replaceAll("/", "~1");
}

/** The value at a JSON pointer, or `undefined` when there is none. */
function resolvePointer(root: unknown, pointer: string): unknown {
  if (pointer === "") return root;
  let node: unknown = root;
  for (const raw of pointer.slice(1).split("/")) {
    const token = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    if (Array.isArray(node)) node = node[Number(token)];
    else if (isObject(node) && Object.hasOwn(node, token)) node = node[token];
    else return undefined;
  }
  return node;
}
