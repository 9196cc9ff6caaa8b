/**
 * splitMessage and the whitespace where it cuts: no part starts with a blank line or ends with
 * whitespace (outside code blocks), every part fits, and the non-whitespace text is kept whole
 * and in order. Examples, one delivery to the fake Discord, and properties.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  deliver,
  type DeliveryContext,
  MESSAGE_LIMITS,
  splitMessage,
} from "../../src/delivery/mod.ts";
import { startFakePlatform, TARGET_OF, TOKEN_VARIABLE } from "../fixtures/fake_platforms.ts";

// Delivery promises no leaked timers, bodies or connections.
Deno.test.sanitizer({ ops: true, resources: true });

/** `text` without any whitespace: what must survive a split, in order. */
function ink(text: string): string {
  return text.replace(/\s+/g, "");
}

/** The lines of the closing and reopening fences a split may add (they are not the message's). */
const ADDED_FENCE = /^ {0,3}(`{3,}|~{3,}).*$/gm;

/** Asserts the whitespace promises of `parts`, split from `text` at `limit`. */
function assertTidy(text: string, limit: number, parts: string[]): void {
  assert.ok(parts.length >= 1);
  for (const [index, part] of parts.entries()) {
    const shown = `part ${index} of ${parts.length}: ${JSON.stringify(part)}`;
    assert.ok(part.length <= limit, `${part.length} > ${limit}: ${shown}`);
    assert.ok(
      !part.startsWith("\n") && !part.startsWith("\r\n"),
      `starts with a line break: ${shown}`,
    );
    assert.doesNotMatch(part, /^[^\S\n]*\n/, `starts with a blank line: ${shown}`);
    assert.doesNotMatch(part, /\s$/, `ends with whitespace: ${shown}`);
    if (ink(text) !== "") assert.notEqual(ink(part), "", `blank: ${shown}`);
  }
  if (ink(text) === "") assert.deepEqual(parts, [""]);
}

Deno.test("splitMessage: a cut between the two line breaks of a paragraph break starts no part with a blank line", () => {
  // The limit ends after the first "\n" of "\n\n": the cut goes after it.
  assert.deepEqual(splitMessage(`${"x".repeat(10)}\n\n${"y".repeat(5)}`, 11), [
    "xxxxxxxxxx",
    "yyyyy",
  ]);
  assert.deepEqual(splitMessage("aaaa\n\n\n\nbbbb", 7), ["aaaa", "bbbb"]);
  // Blanks before a line break, then a line of blanks: neither ends a part nor makes one.
  assert.deepEqual(splitMessage("aaaa bbbb    \n   \ncccc dddd", 12), ["aaaa bbbb", "cccc dddd"]);
  // The message's own blank lines at its start and whitespace at its end go too.
  assert.deepEqual(splitMessage("\n\n  Hello there\n\n", 8), ["  Hello", "there"]);
  assert.deepEqual(splitMessage("\n \nHello\n\n", 20), ["Hello"]);
  assert.deepEqual(splitMessage(" \n\t\n ", 20), [""]);
});

Deno.test("splitMessage: indentation of a part's first line is kept, and code blocks keep their blank lines", () => {
  assert.deepEqual(splitMessage("    indented code\n\n    more code here", 20), [
    "    indented code",
    "    more code here",
  ]);
  // Blank lines inside a block are code; the whitespace after the block is not.
  const text = "Intro line here\n\n```py\ndef f():\n\n\n    return 1\n```\n\n\nAfter the block.";
  assert.deepEqual(splitMessage(text, 24), [
    "Intro line here",
    "```py\ndef f():\n\n\n```",
    "```py\n    return 1\n```",
    "After the block.",
  ]);
});

Deno.test("deliver: paragraphs just under Discord's limit go out one a message, none starting with a blank line", async () => {
  await using fake = await startFakePlatform("discord");
  const context: DeliveryContext = {
    secrets: { get: (name) => name === TOKEN_VARIABLE.discord ? fake.token : undefined },
    apiBaseUrl: (target) =>
      target === TARGET_OF.discord ? fake.baseUrl : "http://127.0.0.1:1/never-called",
    log: () => {},
  };
  // Each paragraph is one unit shorter than the limit: the limit falls inside "\n\n".
  const paragraphs = Array.from(
    { length: 4 },
    (_, i) =>
      `${`Paragraph ${i}: ${"lorem ipsum ".repeat(200)}`.slice(0, MESSAGE_LIMITS.discord - 2)}.`,
  );
  assert.ok(paragraphs.every((paragraph) => paragraph.length === MESSAGE_LIMITS.discord - 1));
  const message = paragraphs.join("\n\n");

  const result = await deliver({
    target: "discord",
    message,
    extra: { chat_id: "1100000000000000001" },
    payload: {},
    event: "push",
    route: "ci",
    direct: false,
  }, context);

  const sent = fake.requests.map((request) => (request.body as { content: string }).content);
  assert.equal(result.ok && result.parts, 4);
  assert.deepEqual(sent, paragraphs);
});

/** Text whose whitespace makes cuts at and around line breaks likely. */
const spacedText = fc.string({
  unit: fc.constantFrom(
    "a",
    "bc",
    "é",
    "😀",
    " ",
    "  ",
    "\t",
    "\n",
    "\n\n",
    "\n\n\n",
    "\r\n",
    " \n",
  ),
  maxLength: 300,
});

Deno.test("splitMessage (property): no part starts with a blank line, ends with whitespace or is blank; all fit; the text's non-whitespace is kept in order", () => {
  fc.assert(
    fc.property(spacedText, fc.integer({ min: 2, max: 60 }), (text, limit) => {
      const parts = splitMessage(text, limit);
      assertTidy(text, limit, parts);
      assert.equal(ink(parts.join("")), ink(text));
      assert.ok(parts.every((part) => part.isWellFormed()));
    }),
    { numRuns: 1000, seed: 5 },
  );
});

/** Prose lines, blank lines and fenced blocks (closed), in any order. */
const markdownText = fc.array(
  fc.oneof(
    fc.array(fc.constantFrom("word", "x".repeat(30), "é", "😀", "  "), { maxLength: 10 })
      .map((words) => `${words.join(" ")}\n`),
    fc.constantFrom("\n", "\n\n\n", "   \n", "\t\n"),
    fc.array(fc.constantFrom("code();", "", "  ", "    indented();"), { maxLength: 6 })
      .map((lines) => ["```ts", ...lines, "```"].map((line) => `${line}\n`).join("")),
  ),
  { maxLength: 12 },
).map((pieces) => pieces.join(""));

Deno.test("splitMessage (property): with code blocks too, parts are tidy, fit, and keep the non-whitespace text outside the added fences", () => {
  fc.assert(
    fc.property(markdownText, fc.integer({ min: 30, max: 200 }), (text, limit) => {
      const parts = splitMessage(text, limit);
      assertTidy(text, limit, parts);
      // Every fence line is taken out of both: what is left is the message's own text.
      assert.equal(
        ink(parts.map((part) => part.replace(ADDED_FENCE, "")).join("")),
        ink(text.replace(ADDED_FENCE, "")),
      );
      // Fence lines: the message's own, plus a closing and an opening one at each cut in a block.
      const fences = (s: string) => s.match(ADDED_FENCE)?.length ?? 0;
      const added = parts.reduce((sum, part) => sum + fences(part), 0) - fences(text);
      assert.ok(added >= 0 && added % 2 === 0, `${added} fence lines added`);
    }),
    { numRuns: 500, seed: 9 },
  );
});
