/**
 * A tool's arguments in a person's words, read from its `inputSchema`: what it takes, and how
 * given arguments miss it. Only the top level of the schema is read (names, `type`, `required`,
 * `additionalProperties: false`); the server stays the judge of the rest.
 *
 * @module
 */
import { isPlainObject } from "../home/config.ts";

/**
 * The arguments a tool takes, as `name (type, required)` items joined by `, `, or `no arguments`.
 *
 * @param schema The tool's `inputSchema`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { describeArguments } from "./tool_arguments.ts";
 * const schema = {
 *   type: "object",
 *   properties: { a: { type: "number" }, note: { type: "string" } },
 *   required: ["a"],
 * };
 * assert.equal(describeArguments(schema), "a (number, required), note (string)");
 * assert.equal(describeArguments({ type: "object" }), "no arguments");
 * ```
 */
export function describeArguments(schema: Record<string, unknown>): string {
  const properties = propertiesOf(schema);
  const required = requiredOf(schema);
  const names = Object.keys(properties);
  if (names.length === 0) return "no arguments";
  return names.map((name) => {
    const type = typeText(properties[name]);
    const parts = [type, required.includes(name) ? "required" : ""].filter((part) => part !== "");
    return parts.length > 0 ? `${name} (${parts.join(", ")})` : name;
  }).join(", ");
}

/**
 * How `args` miss the top level of `schema`: required arguments left out, values of another
 * JSON type than declared, and names the schema does not allow (`additionalProperties: false`).
 * Empty when nothing is seen to be wrong.
 *
 * @param schema The tool's `inputSchema`.
 * @param args The arguments given.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { argumentProblems } from "./tool_arguments.ts";
 * const schema = {
 *   type: "object",
 *   properties: { a: { type: "number" }, b: { type: "number" } },
 *   required: ["a", "b"],
 * };
 * assert.deepEqual(argumentProblems(schema, { a: "1" }), [
 *   "b is missing",
 *   "a is a string, not a number",
 * ]);
 * assert.deepEqual(argumentProblems(schema, { a: 1, b: 2 }), []);
 * ```
 */
export function argumentProblems(
  schema: Record<string, unknown>,
  args: Record<string, unknown>,
): string[] {
  const properties = propertiesOf(schema);
  const problems = requiredOf(schema).filter((name) => !Object.hasOwn(args, name))
    .map((name) => `${name} is missing`);
  for (const [name, value] of Object.entries(args)) {
    const property = properties[name];
    if (property === undefined) {
      if (schema.additionalProperties === false) {
        problems.push(`${name} is not an argument of this tool`);
      }
      continue;
    }
    const types = typesOf(property);
    if (types.length > 0 && !types.some((type) => hasType(value, type))) {
      problems.push(`${name} is ${jsonTypeOf(value)}, not ${types.map(article).join(" or ")}`);
    }
  }
  return problems;
}

function propertiesOf(schema: Record<string, unknown>): Record<string, unknown> {
  return isPlainObject(schema.properties) ? schema.properties : {};
}

function requiredOf(schema: Record<string, unknown>): string[] {
  return Array.isArray(schema.required)
    ? schema.required.filter((name): name is string => typeof name === "string")
    : [];
}

function typesOf(property: unknown): string[] {
  if (!isPlainObject(property)) return [];
  const type = property.type;
  if (typeof type === "string") return [type];
  return Array.isArray(type) ? type.filter((item): item is string => typeof item === "string") : [];
}

function typeText(property: unknown): string {
  if (isPlainObject(property) && Array.isArray(property.enum) && property.enum.length > 0) {
    return `one of ${property.enum.map((value) => JSON.stringify(value)).join(", ")}`;
  }
  return typesOf(property).join(" or ");
}

function hasType(value: unknown, type: string): boolean {
  switch (type) {
    case "string":
      return typeof value === "string";
    case "number":
      return typeof value === "number";
    case "integer":
      return Number.isInteger(value);
    case "boolean":
      return typeof value === "boolean";
    case "object":
      return isPlainObject(value);
    case "array":
      return Array.isArray(value);
    case "null":
      return value === null;
    default:
      return true; // a type this check does not know: the server judges
  }
}

function jsonTypeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "an object";
  return article(typeof value);
}

function article(type: string): string {
  if (type === "null") return "null";
  if (type === "array") return "a list";
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}
