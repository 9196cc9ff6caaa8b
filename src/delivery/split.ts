/**
 * Splitting a long message into parts that fit a platform's length limit.
 *
 * @module
 */

/** Where a part may end, best first: after a blank line, after a line, after a space. */
const BOUNDARIES = ["\n\n", "\n", " "] as const;

/**
 * Splits `text` into parts of at most `limit` UTF-16 code units (the unit JavaScript's
 * `length` counts; Telegram counts the same, and it is never fewer than the code points Discord
 * and Slack count).
 *
 * Nothing is dropped or added: every separator stays at the end of the part it closes, so
 * `parts.join("") === text` always holds. A part ends after the last blank line (`\n\n`) in
 * reach, else after the last line break, else after the last space — each only when that keeps
 * the part at least half the limit long, so a boundary near the start never makes a tiny part.
 * Otherwise the part is cut at the limit, one unit earlier when that would split a surrogate
 * pair. A text within the limit (also `""`) is returned as the only part.
 *
 * @param text The message.
 * @param limit The platform's limit; an integer of at least 2 (one character may take two units).
 * @returns The parts, in order; each is non-empty unless `text` is `""`.
 * @throws {RangeError} When `limit` is not an integer of at least 2.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { splitMessage } from "./split.ts";
 *
 * assert.deepEqual(splitMessage("short", 10), ["short"]);
 * assert.deepEqual(splitMessage("one two\n\nthree four", 12), ["one two\n\n", "three four"]);
 * assert.deepEqual(splitMessage("abcdefghij", 4), ["abcd", "efgh", "ij"]);
 * const text = "word ".repeat(1000);
 * assert.equal(splitMessage(text, 2000).join(""), text);
 * ```
 */
export function splitMessage(text: string, limit: number): string[] {
  if (!Number.isInteger(limit) || limit < 2) {
    throw new RangeError(`splitMessage: limit must be an integer of at least 2, got ${limit}`);
  }
  const parts: string[] = [];
  let rest = text;
  while (rest.length > limit) {
    const end = partEnd(rest, limit);
    parts.push(rest.slice(0, end));
    rest = rest.slice(end);
  }
  parts.push(rest);
  return parts;
}

/** Where the first part of `text` (longer than `limit`) ends. */
function partEnd(text: string, limit: number): number {
  const window = text.slice(0, limit);
  const shortest = Math.ceil(limit / 2);
  for (const boundary of BOUNDARIES) {
    const at = window.lastIndexOf(boundary);
    if (at >= 0 && at + boundary.length >= shortest) return at + boundary.length;
  }
  return isHighSurrogate(text.charCodeAt(limit - 1)) && isLowSurrogate(text.charCodeAt(limit))
    ? limit - 1
    : limit;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}
