/**
 * Options whose value is a JSON object written on the command line (`webhook test --payload`,
 * `mcp call --args`): read as the gateway reads a sender's body, and refused with what is wrong
 * (where the text stops being JSON, what it holds instead of an object, a key given twice) and
 * what to write instead, never quoting the text as V8's own messages do.
 *
 * @module
 */
import { blankness } from "../home/text.ts";
import { parseJsonObject } from "../webhook/request.ts";
import { UsageError } from "./io.ts";

/**
 * `value`, the text of `option`, as one JSON object (integers beyond 2^53 as exact `bigint`s), or
 * a {@linkcode UsageError}: `--args is not valid JSON (line 1, column 8: expected a property name
 * in double quotes); give <instead>`. A value written as curl's `@file` is refused with the shell
 * form that reads the file: `--args "$(cat args.json)"`.
 *
 * @param value The option's value.
 * @param option The option, as typed: `--args`.
 * @param instead What to give instead, after `give `: a JSON object and an example of it.
 * @returns The object and its text.
 * @throws {UsageError} When the value is not one JSON object.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonObjectOption } from "./json_option.ts";
 * const instead = `a JSON object such as --args '{"message":"hi"}'`;
 * assert.deepEqual(jsonObjectOption('{"a": 1}', "--args", instead).value, { a: 1 });
 * assert.throws(
 *   () => jsonObjectOption("[1]", "--args", instead),
 *   { message: `--args is not a JSON object (got an array); give ${instead}` },
 * );
 * assert.throws(
 *   () => jsonObjectOption("", "--args", instead),
 *   { message: `--args is empty; give ${instead}` },
 * );
 * ```
 */
export function jsonObjectOption(
  value: string,
  option: string,
  instead: string,
): { value: Record<string, unknown>; json: string } {
  const file = /^\s*@(.+)$/.exec(value)?.[1];
  if (file !== undefined) {
    // curl's -d @file: a saved file is what one has at hand.
    throw new UsageError(
      `${option} takes the JSON text itself, not a file name: to send a file, write ` +
        `${option} "$(cat ${file.trim()})"`,
    );
  }
  // Not parseJsonObject's "is empty; expected a JSON object": `instead` says what is expected.
  const blank = blankness(value);
  if (blank) throw new UsageError(`${option} ${blank}; give ${instead}`);
  const parsed = parseJsonObject(value, option);
  if (!parsed.ok) {
    // A key given twice or nesting too deep is said with its fix already.
    const notAnObject = parsed.error.startsWith(`${option} is `);
    throw new UsageError(parsed.error + (notAnObject ? `; give ${instead}` : ""));
  }
  return { value: parsed.payload, json: parsed.json };
}
