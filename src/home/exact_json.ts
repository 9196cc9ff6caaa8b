/**
 * JSON that keeps large integers exact. `JSON.parse` turns an integer beyond 2^53 into the
 * nearest double, so a Discord channel id `1234567890123456789` in a payload would become
 * `1234567890123456800` and a message would go to another channel. Here such integers are parsed
 * as `bigint`s and written back as the same digits.
 *
 * @module
 */

/** At least 16 digits in a row: the only texts that can hold an integer beyond 2^53. */
const LONG_DIGIT_RUN = /\d{16}/;
const INTEGER = /^-?\d+$/;

/** The third argument V8 gives a `JSON.parse` reviver: the source text of a primitive. */
interface ReviverContext {
  source?: string;
}

/**
 * `JSON.parse`, except that an integer too large to be exact as a number becomes a `bigint`
 * with its exact value. Throws as `JSON.parse` does on text that is not JSON.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseJsonExact } from "./exact_json.ts";
 * assert.deepEqual(parseJsonExact('{"id": 1234567890123456789, "n": 7, "x": 1e300}'), {
 *   id: 1234567890123456789n,
 *   n: 7,
 *   x: 1e300,
 * });
 * ```
 */
export function parseJsonExact(text: string): unknown {
  if (!LONG_DIGIT_RUN.test(text)) return JSON.parse(text);
  return JSON.parse(text, keepLargeIntegers);
}

function keepLargeIntegers(_key: string, value: unknown, context?: ReviverContext): unknown {
  if (typeof value !== "number" || Number.isSafeInteger(value)) return value;
  const source = context?.source;
  return source !== undefined && INTEGER.test(source) ? BigInt(source) : value;
}

/**
 * `JSON.stringify` that writes `bigint`s as JSON numbers with their exact digits (plain
 * `JSON.stringify` throws on them).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { stringifyJsonExact } from "./exact_json.ts";
 * assert.equal(stringifyJsonExact({ id: 1234567890123456789n }), '{"id":1234567890123456789}');
 * assert.equal(stringifyJsonExact([1], 2), "[\n  1\n]");
 * ```
 */
export function stringifyJsonExact(value: unknown, indent?: number): string {
  try {
    return JSON.stringify(value, undefined, indent) ?? "null";
  } catch (error) {
    // Almost every payload has no bigint: only those pay for the replacer.
    if (!(error instanceof TypeError)) throw error;
    return JSON.stringify(value, bigintAsDigits, indent) ?? "null";
  }
}

const rawJson = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON;

function bigintAsDigits(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? rawJson(value.toString()) : value;
}
