/**
 * Text for a message, a log line or a prompt. Cuts are counted in characters (code points), so a
 * cut never falls inside a surrogate pair (half an emoji prints as a lone surrogate, `\ud83d` in
 * JSON, and some consumers reject it). Lists and blank values are worded the same way in every
 * message.
 *
 * @module
 */

/**
 * `text` unchanged when it has at most `max` characters (code points), else its first `max - 1`
 * characters and `…`: the result never has more than `max` characters.
 *
 * @param text The text to cut.
 * @param max The most characters of the result, `…` included; at least 1.
 * @returns `text`, or its start marked with `…`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { cut } from "./text.ts";
 * assert.equal(cut("short", 10), "short");
 * assert.equal(cut("a long title", 6), "a lon…");
 * assert.equal(cut("ab😀cd", 4), "ab😀…"); // the emoji counts as one character, kept whole
 * ```
 */
export function cut(text: string, max: number): string {
  if (!Number.isInteger(max) || max < 1) {
    throw new RangeError(`cut: max must be a whole number of at least 1, got ${max}`);
  }
  const kept = firstCodePoints(text, max);
  return kept.length === text.length ? text : `${firstCodePoints(kept, max - 1)}…`;
}

/**
 * The first `count` characters (code points) of `text`, or all of it when it has fewer: a slice
 * that never ends inside a surrogate pair. For a cut marked otherwise than with {@linkcode cut}'s
 * `…` (such as a note giving the full length).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { firstCodePoints } from "./text.ts";
 * assert.equal(firstCodePoints("héllo", 2), "hé");
 * assert.equal(firstCodePoints("😀😀", 1), "😀"); // "😀😀".slice(0, 1) would be half of it
 * assert.equal(firstCodePoints("ab", 5), "ab");
 * ```
 */
export function firstCodePoints(text: string, count: number): string {
  if (text.length <= count) return text; // never more code points than UTF-16 units
  let end = 0;
  let taken = 0;
  for (const character of text) {
    if (taken++ === count) break;
    end += character.length;
  }
  return text.slice(0, end);
}

/**
 * How many characters (code points) `text` has: an emoji counts once, where `length` counts its
 * two UTF-16 units.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { codePointCount } from "./text.ts";
 * assert.equal(codePointCount("ab😀"), 3);
 * assert.equal("ab😀".length, 4);
 * ```
 */
export function codePointCount(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

/**
 * `text` on one line: each run of whitespace (line breaks included) as one space, none at either
 * end. Cut it after, so that the cut counts what is shown.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { collapseWhitespace, cut } from "./text.ts";
 * assert.equal(collapseWhitespace("  Bad\r\n\tGateway \n"), "Bad Gateway");
 * assert.equal(cut(collapseWhitespace('{\n  "path": "/tmp/x"\n}'), 12), '{ "path": "…');
 * ```
 */
export function collapseWhitespace(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/**
 * `text` with every character that could hide or disguise text on a terminal written as a
 * `\u{…}` escape: control characters (C0, DEL, C1), format characters (bidi overrides,
 * zero-width joiners), line and paragraph separators.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { visible } from "./text.ts";
 * assert.equal(visible("rm\x1b[2K -rf"), "rm\\u{1b}[2K -rf");
 * assert.equal(visible("evil\u202Etxt.exe"), "evil\\u{202e}txt.exe");
 * ```
 */
export function visible(text: string): string {
  return text.replace(
    /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu,
    (char) => `\\u{${char.codePointAt(0)!.toString(16)}}`,
  );
}

/**
 * The characters {@linkcode visible} escapes, and the sequences of them {@linkcode visibleLines}
 * keeps whole: a `\r\n` line break, an emoji flag's tags (🏴 + tag letters + cancel tag).
 */
const HIDING_OR_KEPT = /\r\n|\u{1F3F4}[\u{E0020}-\u{E007E}]+\u{E007F}|[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;
/** Line breaks, tabs, and the zero-width (non-)joiners of emoji and of scripts that need them. */
const KEPT_AS_IS = new Set(["\r\n", "\n", "\t", "\u200C", "\u200D"]);

/**
 * `text` of several lines (a model's answer) as it may be written to a terminal: like
 * {@linkcode visible}, every character that could hide, move or reorder text (escape sequences,
 * `\r`, backspace, bidi controls) as a `\u{…}` escape, but line breaks (`\n`, `\r\n`) and tabs
 * kept, and the zero-width joiners of emoji (👩‍💻) and of scripts that need them too.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { visibleLines } from "./text.ts";
 * assert.equal(visibleLines("Done.\x1b[2J\rAll fine"), "Done.\\u{1b}[2J\\u{d}All fine");
 * assert.equal(visibleLines("a\tb\nc 中文 👩‍💻"), "a\tb\nc 中文 👩‍💻");
 * assert.equal(visibleLines("evil\u202Etxt.exe"), "evil\\u{202e}txt.exe");
 * ```
 */
export function visibleLines(text: string): string {
  return text.replace(
    HIDING_OR_KEPT,
    (match) =>
      KEPT_AS_IS.has(match) || match.startsWith("\u{1F3F4}")
        ? match
        : `\\u{${match.codePointAt(0)!.toString(16)}}`,
  );
}

/**
 * A list in words: `a`, `a and b`, `a, b and c`; `""` for none (say what none means where it is
 * used).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { listInWords } from "./text.ts";
 * assert.equal(listInWords(["{issue.number}"]), "{issue.number}");
 * assert.equal(listInWords(["a", "b", "c"]), "a, b and c");
 * assert.equal(listInWords([]), "");
 * ```
 */
export function listInWords(words: readonly string[]): string {
  if (words.length <= 1) return words[0] ?? "";
  return `${words.slice(0, -1).join(", ")} and ${words.at(-1)}`;
}

/**
 * What is wrong with a value that has nothing in it: `is empty`, or `holds only whitespace`
 * (spaces, tabs, line breaks); `undefined` when it has something. Put after the value's name:
 * `--payload is empty`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { blankness } from "./text.ts";
 * assert.equal(blankness(""), "is empty");
 * assert.equal(blankness(" \n"), "holds only whitespace");
 * assert.equal(blankness("{}"), undefined);
 * ```
 */
export function blankness(text: string): "is empty" | "holds only whitespace" | undefined {
  if (text.trim() !== "") return undefined;
  return text === "" ? "is empty" : "holds only whitespace";
}
