/**
 * "Did you mean" for keys a user typed: the closest valid key, and the message that names it.
 *
 * @module
 */

/** Suggestions are at most this many edits away from what was typed. */
const MAX_SUGGESTION_DISTANCE = 3;

/**
 * The message for a key that is not one of `valid`: it is ignored, and `meant` is suggested, by
 * default the closest valid key when there is one ({@linkcode closestKey}).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { unknownKeyMessage } from "./suggest.ts";
 * assert.equal(
 *   unknownKeyMessage("mcp_server", ["mcp_servers", "model"]),
 *   "unknown key `mcp_server` is ignored; did you mean `mcp_servers`?",
 * );
 * ```
 */
export function unknownKeyMessage(
  key: string,
  valid: readonly string[],
  meant: string | undefined = closestKey(key, valid),
): string {
  return meant === undefined
    ? `unknown key \`${key}\` is ignored; remove it or check its spelling`
    : `unknown key \`${key}\` is ignored; did you mean \`${meant}\`?`;
}

/**
 * The valid key closest to `key` (case-insensitive Levenshtein), when it is within 3 edits, or
 * when one is a prefix of the other (at least 3 characters). A distance equal to the key's own
 * length is never suggested: `foo` is 3 edits from `env` but nothing like it. Ties go to the
 * earlier key of `valid`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { closestKey } from "./suggest.ts";
 * assert.equal(closestKey("temprature", ["default", "temperature"]), "temperature");
 * assert.equal(closestKey("foo", ["env"]), undefined);
 * ```
 */
export function closestKey(key: string, valid: readonly string[]): string | undefined {
  const typed = key.toLowerCase();
  let best: { key: string; distance: number } | undefined;
  for (const candidate of valid) {
    const distance = levenshtein(typed, candidate);
    const prefix = Math.min(typed.length, candidate.length) >= 3 &&
      (candidate.startsWith(typed) || typed.startsWith(candidate));
    const close = distance <= MAX_SUGGESTION_DISTANCE && distance < typed.length;
    if ((close || prefix) && (best === undefined || distance < best.distance)) {
      best = { key: candidate, distance };
    }
  }
  return best?.key;
}

function levenshtein(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j] + 1, current[j - 1] + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length];
}
