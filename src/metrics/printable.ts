/**
 * Text from files (package keys and values, schema messages that quote them) printed to a
 * terminal must not drive it: control characters could clear the screen, recolour or rewrite a
 * line ("FAKE: valid\r").
 *
 * @module
 */

// C0 controls, DEL and C1 controls (U+0080–U+009F; some terminals act on them too).
// deno-lint-ignore no-control-regex
const CONTROLS = /[\u0000-\u001f\u007f-\u009f]/g;
const NAMED: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/**
 * `text` with every C0 control, DEL and C1 control written as an escape (`\n`, `\r`, `\t`,
 * else `\u001b` style), so it prints as one inert line.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { escapeControls } from "./printable.ts";
 * assert.equal(escapeControls("x\u001b[2J\rZ"), "x\\u001b[2J\\rZ");
 * assert.equal(escapeControls("plain, ünïcode"), "plain, ünïcode");
 * ```
 */
export function escapeControls(text: string): string {
  return text.replace(
    CONTROLS,
    (char) => NAMED[char] ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}
