/**
 * Cutting text for messages: counted in code points, at most `max` of them with the `…`, never
 * half of a surrogate pair (half an emoji reads as `\ud83d` in JSON, or as U+FFFD). Text of
 * several lines for a terminal: nothing in it can drive the terminal, and its text stays. Lists
 * and blank values in words, as every message says them.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  blankness,
  codePointCount,
  collapseWhitespace,
  cut,
  firstCodePoints,
  listInWords,
  visibleLines,
} from "../../src/home/text.ts";

/** Text mixing ASCII, accented letters and emoji, so cuts often fall next to a surrogate pair. */
const mixedText = fc.string({
  unit: fc.oneof(
    fc.constantFrom("a", "b", " ", "\n", "é", "😀", "👍🏽", "𝄞", "中"),
    fc.string({ unit: "binary", minLength: 1, maxLength: 1 }),
  ),
  maxLength: 60,
});

Deno.test("cut: text of at most max characters is returned as it is", () => {
  assert.equal(cut("", 1), "");
  assert.equal(cut("abc", 3), "abc");
  assert.equal(cut("😀😀😀", 3), "😀😀😀", "3 characters, though 6 UTF-16 units");
});

Deno.test("cut: longer text keeps max - 1 characters and ends in …", () => {
  assert.equal(cut("abcd", 3), "ab…");
  assert.equal(cut("abcd", 1), "…");
  assert.equal(cut("x".repeat(500), 200), `${"x".repeat(199)}…`);
});

Deno.test("cut: an emoji at the cut point is kept whole or dropped whole", () => {
  assert.equal(cut("ab😀cd", 4), "ab😀…");
  assert.equal(cut("ab😀cd", 3), "ab…");
  const out = cut("a".repeat(79) + "😀😀", 80);
  assert.equal(out, `${"a".repeat(79)}…`);
  assert.ok(out.isWellFormed());
});

Deno.test("cut: max below 1 or not whole is a programming error", () => {
  assert.throws(() => cut("abc", 0), RangeError);
  assert.throws(() => cut("abc", 2.5), RangeError);
});

Deno.test("cut: at most max characters, a prefix plus … when cut, never a lone surrogate", () => {
  fc.assert(
    fc.property(mixedText, fc.integer({ min: 1, max: 70 }), (text, max) => {
      assert.ok(text.isWellFormed());
      const out = cut(text, max);
      assert.ok(codePointCount(out) <= max, `${JSON.stringify(out)} over ${max}`);
      assert.ok(out.isWellFormed(), `lone surrogate in ${JSON.stringify(out)}`);
      if (codePointCount(text) <= max) {
        assert.equal(out, text);
      } else {
        assert.ok(out.endsWith("…"));
        assert.equal(codePointCount(out), max);
        assert.ok(text.startsWith(out.slice(0, -1)));
      }
    }),
  );
});

Deno.test("firstCodePoints: the first count code points, as Array.from counts them", () => {
  assert.equal(firstCodePoints("😀😀", 1), "😀");
  assert.equal(firstCodePoints("ab", 0), "");
  assert.equal(firstCodePoints("ab", 5), "ab");
  fc.assert(
    fc.property(mixedText, fc.nat({ max: 70 }), (text, count) => {
      const out = firstCodePoints(text, count);
      assert.equal(out, Array.from(text).slice(0, count).join(""));
      assert.ok(out.isWellFormed());
    }),
  );
});

Deno.test("codePointCount: an emoji counts once", () => {
  assert.equal(codePointCount(""), 0);
  assert.equal(codePointCount("a😀é"), 3);
  fc.assert(fc.property(mixedText, (text) => codePointCount(text) === Array.from(text).length));
});

Deno.test("collapseWhitespace: runs of whitespace are one space, none at the ends", () => {
  assert.equal(collapseWhitespace("  Bad\r\n\tGateway \n"), "Bad Gateway");
  assert.equal(collapseWhitespace(" \n "), "");
  assert.equal(collapseWhitespace("one line"), "one line");
});

Deno.test("visibleLines: nothing a terminal acts on is left; line breaks, tabs and text stay", () => {
  // Line breaks, tabs, CJK, emoji (a ZWJ sequence, a skin tone, a subdivision flag's tags).
  const plain = "a\tb\r\nc\n中文 👩‍💻 👍🏽 🏴󠁧󠁢󠁳󠁣󠁴󠁿 é";
  assert.equal(visibleLines(plain), plain);
  assert.equal(
    visibleLines("x\x1b]0;title\x07\x9b2J\ry\u200Fz\u2066w\uFEFF\u{E0041}"),
    "x\\u{1b}]0;title\\u{7}\\u{9b}2J\\u{d}y\\u{200f}z\\u{2066}w\\u{feff}\\u{e0041}",
  );
  const hostile = fc.string({
    unit: fc.oneof(
      fc.constantFrom("a", " ", "\n", "\r", "\t", "\x1b", "\b", "\u202E", "\u200D", "中", "😀"),
      fc.string({ unit: "binary", minLength: 1, maxLength: 1 }),
    ),
    maxLength: 60,
  });
  // What is left of the characters visible() escapes: line breaks, tabs and the joiners only.
  const left = (text: string) =>
    text.replaceAll("\r\n", "\n").replace(/[\n\t\u200C\u200D]/g, "")
      .match(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu) ?? [];
  fc.assert(
    fc.property(hostile, (text) => {
      assert.deepEqual(left(visibleLines(text)), [], JSON.stringify(text));
      // Only such characters change: the rest of the text is there, in order.
      assert.equal(
        visibleLines(text).replace(/\\u\{[0-9a-f]+\}/g, ""),
        text.replace(/\r(?!\n)/g, "").replace(
          /(?![\n\t\r\u200C\u200D])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu,
          "",
        ),
      );
    }),
  );
});

Deno.test("listInWords: one item as it is, the last two joined by and, the others by commas", () => {
  assert.equal(listInWords([]), "");
  assert.equal(listInWords(["a"]), "a");
  assert.equal(listInWords(["a", "b"]), "a and b");
  assert.equal(listInWords(["a", "b", "c", "d"]), "a, b, c and d");
  assert.equal(listInWords(["", "b"]), " and b", "items are written as given");
});

Deno.test("blankness: empty, only whitespace (line breaks and Unicode spaces too), or nothing to say", () => {
  assert.equal(blankness(""), "is empty");
  for (const text of [" ", "\t", "\r\n", "\u00a0\u2003", "\ufeff"]) {
    assert.equal(blankness(text), "holds only whitespace", JSON.stringify(text));
  }
  for (const text of ["0", " x ", "\u200b"]) assert.equal(blankness(text), undefined, text);
});
