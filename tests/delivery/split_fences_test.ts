import assert from "node:assert/strict";
import fc from "fast-check";
import {
  deliver,
  type DeliveryContext,
  type DeliveryRequest,
  MESSAGE_LIMITS,
  splitMessage,
} from "../../src/delivery/mod.ts";
import { startFakePlatform, TARGET_OF, TOKEN_VARIABLE } from "../fixtures/fake_platforms.ts";

// Delivery promises no leaked timers, bodies or connections.
Deno.test.sanitizer({ ops: true, resources: true });

/** A fenced code block of a text, by CommonMark's rules for fences (containers aside). */
interface Block {
  opener: string;
  closer: string;
  contentStart: number;
  /** Where its closing line starts; the text's length when it is never closed. */
  closeStart: number;
}

/** The fenced code blocks of `text`, and whether the last one is left open. */
function codeBlocks(text: string): { blocks: Block[]; unclosed: boolean } {
  const blocks: Block[] = [];
  let open: (Omit<Block, "closeStart"> & { fence: string }) | undefined;
  let offset = 0;
  for (const raw of text.split("\n")) {
    const line = raw.replace(/\r$/, "");
    const start = offset;
    offset += raw.length + 1;
    if (open === undefined) {
      const match = /^( {0,3})(`{3,}|~{3,})(.*)$/s.exec(line);
      if (match && !(match[2][0] === "`" && match[3].includes("`"))) {
        const contentStart = Math.min(offset, text.length);
        open = { opener: line, closer: match[1] + match[2], fence: match[2], contentStart };
      }
    } else {
      const match = /^ {0,3}(`{3,}|~{3,})[ \t]*$/.exec(line);
      if (match && match[1][0] === open.fence[0] && match[1].length >= open.fence.length) {
        blocks.push({ ...open, closeStart: start });
        open = undefined;
      }
    }
  }
  if (open !== undefined) blocks.push({ ...open, closeStart: text.length });
  return { blocks, unclosed: open !== undefined };
}

/** The block whose content `offset` is strictly inside, if any. */
function insideAt(blocks: Block[], offset: number): Block | undefined {
  return blocks.find((block) => block.contentStart < offset && offset < block.closeStart);
}

/**
 * The text the parts were split from: the parts with the added fences taken out and the
 * whitespace the split dropped put back from `text`. Asserts that the added fences are exactly a
 * closing fence where a part ends inside a block of `text` and its opening line where the next
 * part resumes it, that each part takes a non-empty piece of `text`, and that nothing but
 * whitespace outside blocks was dropped: before a part, after one, and at the text's end.
 */
function unsplit(text: string, parts: string[]): string {
  const { blocks } = codeBlocks(text);
  let offset = 0;
  let joined = "";
  for (const [index, part] of parts.entries()) {
    let body = part;
    const resumed = index > 0 ? insideAt(blocks, offset) : undefined;
    if (resumed !== undefined) {
      assert.ok(body.startsWith(`${resumed.opener}\n`), `part ${index} reopens ${resumed.opener}`);
      body = body.slice(resumed.opener.length + 1);
    } else {
      // Whitespace dropped before the part: the part keeps the indentation it starts with.
      const blanks = /^\s*/.exec(text.slice(offset))![0].length;
      const indent = /^\s*/.exec(body)![0].length;
      assert.ok(indent <= blanks, `part ${index} ${JSON.stringify(part)} starts in the text`);
      joined += text.slice(offset, offset + blanks - indent);
      offset += blanks - indent;
    }
    if (index === parts.length - 1) {
      const rest = text.slice(offset);
      assert.equal(body, rest.trimEnd(), "the last part is the rest of the text");
      return joined + rest;
    }
    const lastLine = body.slice(body.lastIndexOf("\n") + 1);
    const beforeLastLine = body.slice(0, body.length - lastLine.length);
    const readings = [
      { piece: body, closing: undefined },
      { piece: beforeLastLine, closing: lastLine },
      { piece: beforeLastLine.slice(0, -1), closing: lastLine, addedBreak: true },
    ].filter(({ piece, closing, addedBreak }) => {
      if (piece === "" || !text.startsWith(piece, offset)) return false;
      const cut = offset + piece.length;
      const inside = insideAt(blocks, cut);
      // Whitespace dropped after it is taken up before the next part.
      if (closing === undefined) return inside === undefined;
      // A line break is added before the closing fence only when the piece ends mid-line, and
      // then not right before the line's own break (the cut would go after that).
      if (addedBreak && /^\r?\n/.test(text.slice(cut, cut + 2))) return false;
      return inside?.closer === closing && piece.endsWith("\n") !== Boolean(addedBreak);
    });
    assert.equal(readings.length, 1, `part ${index} ${JSON.stringify(part)} reads one way`);
    joined += readings[0].piece;
    offset += readings[0].piece.length;
  }
  return joined;
}

/** Asserts what every split promises, and returns the parts. */
function checkedSplit(text: string, limit: number): string[] {
  const parts = splitMessage(text, limit);
  assert.deepEqual(splitMessage(text, limit), parts, "the same text and limit, the same parts");
  for (const part of parts) {
    assert.ok(part.length <= limit, `part of ${part.length} > ${limit}: ${JSON.stringify(part)}`);
    assert.ok(part.isWellFormed(), `lone surrogate in ${JSON.stringify(part)}`);
    assert.ok(text.trim() === "" || part.trim() !== "", "no blank part");
    assert.doesNotMatch(
      part,
      /^[^\S\n]*\n/,
      `a part starts with a blank line: ${JSON.stringify(part)}`,
    );
    assert.doesNotMatch(part, /\s$/, `a part ends with whitespace: ${JSON.stringify(part)}`);
  }
  return parts;
}

/**
 * Asserts each part renders on its own: no part leaves a block open, but the last part of a text
 * that leaves one open.
 */
function assertBalanced(text: string, parts: string[]): void {
  for (const [index, part] of parts.entries()) {
    const expected = index === parts.length - 1 && codeBlocks(text).unclosed;
    assert.equal(codeBlocks(part).unclosed, expected, `part ${index}: ${JSON.stringify(part)}`);
  }
}

/** Lines of whitespace only at the start of a text. */
const BLANK_LINES = /^(?:[^\S\n]*\n)*/;

const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" });

/**
 * splitMessage as it was before it knew fences (with the whitespace around cuts dropped, and
 * cuts between grapheme clusters): what a text without fences still gets.
 */
function plainSplit(text: string, limit: number): string[] {
  const parts: string[] = [];
  let rest = text.replace(BLANK_LINES, "").trimEnd();
  while (rest.length > limit) {
    const window = rest.slice(0, limit);
    const clusterStarts = [...graphemes.segment(rest)].map(({ index }) => index);
    const pairCut = /^[\ud800-\udbff][\udc00-\udfff]$/.test(rest.slice(limit - 1, limit + 1));
    const lastWhole = clusterStarts.findLast((start) => start > 0 && start <= limit);
    let cut = lastWhole ?? (pairCut ? limit - 1 : limit);
    for (const boundary of ["\n\n", "\n", " "]) {
      const at = window.lastIndexOf(boundary);
      if (
        at >= 0 && at + boundary.length >= Math.ceil(limit / 2) &&
        clusterStarts.includes(at + boundary.length)
      ) {
        cut = at + boundary.length;
        break;
      }
    }
    const part = rest.slice(0, cut).trimEnd();
    if (part !== "") parts.push(part);
    rest = rest.slice(cut).replace(BLANK_LINES, "");
  }
  parts.push(rest);
  return parts;
}

/** A long answer with a 300-line TypeScript block between two paragraphs. */
const LONG_ANSWER = "Here is the module you asked for:\n\n```ts\n" +
  Array.from(
    { length: 300 },
    (_, i) => `export const value${i} = compute(${i}, "a string that makes the line longer");`,
  ).join("\n") +
  "\n```\n\nRun it with `deno run main.ts`.\n";

Deno.test("splitMessage: a code block split across parts is closed and reopened in each", () => {
  for (const platform of ["telegram", "discord", "slack"] as const) {
    const limit = MESSAGE_LIMITS[platform];
    const parts = checkedSplit(LONG_ANSWER, limit);

    assert.ok(parts.length >= 4, `${platform}: ${parts.length} parts`);
    assertBalanced(LONG_ANSWER, parts);
    for (const part of parts.slice(1, -1)) {
      assert.match(part, /^```ts\nexport const value\d+ = .*\n```$/s, platform);
    }
    assert.match(parts.at(-1)!, /^```ts\nexport const value\d+ = .*\n```\n\nRun it with/s);
    assert.equal(unsplit(LONG_ANSWER, parts), LONG_ANSWER, platform);
  }
});

Deno.test("splitMessage: the added fences count toward the limit", () => {
  const text = "Intro\n\n```ts\nconst a = 1;\nconst b = 2;\nconst c = 3;\n```\nDone.";

  assert.deepEqual(checkedSplit(text, 32), [
    "Intro\n\n```ts\nconst a = 1;\n```",
    "```ts\nconst b = 2;\n```",
    "```ts\nconst c = 3;\n```\nDone.",
  ]);
});

Deno.test("splitMessage: tilde fences and longer fences are closed with the same fence", () => {
  assert.deepEqual(checkedSplit("Text\n~~~~ sh\nline one\nline two\nline three\n~~~~\n", 28), [
    "Text\n~~~~ sh\nline one\n~~~~",
    "~~~~ sh\nline two\n~~~~",
    "~~~~ sh\nline three\n~~~~",
  ]);
  // A shorter run of the fence's character, or the other character, is code.
  const text = "````md\n```js\n~~~\nx = 1\n```\n````\n";
  assert.deepEqual(checkedSplit(text, 22), [
    "````md\n```js\n~~~\n````",
    "````md\nx = 1\n```\n````",
  ]);
});

Deno.test("splitMessage: each of several blocks is reopened only where it was cut", () => {
  const text = "~~~\naaaaa\n~~~\nbbbbb bbbbb\n```js\nccccc ccccc\n```\n";

  assert.deepEqual(checkedSplit(text, 17), [
    "~~~\naaaaa\n~~~",
    "bbbbb bbbbb",
    "```js\nccccc \n```",
    "```js\nccccc\n```",
  ]);
});

Deno.test("splitMessage: a block never closed runs to the end, and its last part stays open", () => {
  const text = "Output:\n```\nline 1\nline 2\nline 3\nline 4\n";
  const parts = checkedSplit(text, 22);

  assert.deepEqual(parts, [
    "Output:\n```\nline 1\n```",
    "```\nline 2\nline 3\n```",
    "```\nline 4",
  ]);
  assertBalanced(text, parts);
});

Deno.test("splitMessage: a fence indented up to 3 spaces (in a list) is reopened with its indent", () => {
  const text = "1. Install:\n   ```sh\n   npm install\n   npm test\n   ```\n2. Run it.\n";
  const parts = checkedSplit(text, 42);

  assert.deepEqual(parts, [
    "1. Install:\n   ```sh\n   npm install\n   ```",
    "   ```sh\n   npm test\n   ```\n2. Run it.",
  ]);
  // Indented 4 spaces, it is an indented code block, not a fence: nothing is added.
  const indented = text.replaceAll("   ```", "    ```");
  assert.deepEqual(checkedSplit(indented, 42), [
    "1. Install:\n    ```sh\n   npm install",
    "   npm test\n    ```\n2. Run it.",
  ]);
});

Deno.test("splitMessage: a code line longer than a part is cut hard and still fenced", () => {
  const text = "```py\n" + "x".repeat(30) + "\n```\n";
  const parts = checkedSplit(text, 20);

  assert.deepEqual(parts, [
    "```py\nxxxxxxxxxx\n```",
    "```py\nxxxxxxxxxx\n```",
    "```py\nxxxxxxxxxx\n```",
  ]);
  // Never between the halves of a surrogate pair either.
  const emoji = "```\n" + "😀".repeat(12) + "\n```";
  const emojiParts = checkedSplit(emoji, 13);
  assertBalanced(emoji, emojiParts);
  assert.equal(unsplit(emoji, emojiParts), emoji);
});

Deno.test("splitMessage: no piece of a cut line starts with a fence it would become", () => {
  // Cut after "the ", the next part would open a block.
  assert.deepEqual(checkedSplit("see the ```ts block here", 12), [
    "see the ```t",
    "s block here",
  ]);
  // Cut before "```", the next part would close the reopened block.
  const text = "```\nabc ```x\n```\n";
  const parts = checkedSplit(text, 13);
  assertBalanced(text, parts);
  assert.equal(unsplit(text, parts), text);
});

Deno.test("splitMessage: fences that barely fit still go in; when they cannot, plain splitting", () => {
  const text = "```\nabcdefghij\n```";

  // 4 + 1 + 4 units: one character of code per part.
  const parts = checkedSplit(text, 9);
  assert.equal(parts.length, 10);
  assert.deepEqual(parts.slice(0, 2), ["```\na\n```", "```\nb\n```"]);
  assert.equal(parts.at(-1), "```\nj\n```");
  // No room for code between the fences: split as if there were none.
  assert.deepEqual(checkedSplit(text, 8), ["```", "abcdefgh", "ij\n```"]);
  for (let limit = 2; limit <= 8; limit++) {
    assert.deepEqual(checkedSplit(text, limit), plainSplit(text, limit), String(limit));
  }
});

/** Words of prose: no line of it starts like a fence. */
const proseWord = fc.constantFrom("word", "é", "😀", "👍🏽", "`code`", "``", "a~~b", "x".repeat(40));
const paragraph = fc.array(fc.array(proseWord, { maxLength: 12 }), { minLength: 1, maxLength: 4 })
  .map((lines) => lines.map((words) => `${words.join(" ")}\n`).join(""));
const codeLine = fc.array(
  fc.constantFrom("let", "x", " ", "  ", "😀", "`", "``", "```", "~~~", "~", "{}", "y".repeat(70)),
  { maxLength: 10 },
).map((units) => units.join(""));

/** A fenced block of any fence, indent and info string; `closed: false` leaves it open. */
function codeBlock(closed: boolean) {
  return fc.record({
    indent: fc.constantFrom("", " ", "  ", "   "),
    fence: fc.constantFrom("```", "~~~", "````", "~~~~~"),
    info: fc.constantFrom("", "ts", " python ", "js title=x"),
    lines: fc.array(codeLine, { maxLength: 12 }),
  }).map(({ indent, fence, info, lines }) => {
    const closing = new RegExp(`^ {0,3}${fence[0]}{${fence.length},}[ \\t]*$`);
    // A code line that would close the block is made code by a leading "x".
    const code = lines.map((line) => indent + line).map((line) =>
      closing.test(line) ? `x${line}` : line
    );
    const close = closed ? `${indent}${fence}\n` : "";
    return [`${indent}${fence}${info}`, ...code].map((line) => `${line}\n`).join("") + close;
  });
}

const markdown = fc.tuple(
  fc.array(fc.oneof(paragraph, codeBlock(true), fc.constant("\n")), { maxLength: 8 }),
  fc.oneof({ arbitrary: fc.constant(""), weight: 2 }, { arbitrary: codeBlock(false), weight: 1 }),
).map(([segments, open]) => segments.join("") + open);

Deno.test("splitMessage (property): parts fit, fences balance in each, and unsplit gives the text", () => {
  fc.assert(
    fc.property(markdown, fc.integer({ min: 60, max: 400 }), (text, limit) => {
      const parts = checkedSplit(text, limit);
      assertBalanced(text, parts);
      assert.equal(unsplit(text, parts), text);
    }),
    { numRuns: 400, seed: 20240611 },
  );
});

/** Text from units that make fences, cut lines and surrogate pairs likely at small limits. */
const fencyText = fc.string({
  unit: fc.constantFrom(
    ...["\n```\n", "\n~~~~ts\n", "\n ```sh\n", "```", "~~~", "`", "~", "ts", "a", "bcd"],
    ...[" ", "   ", "\n", "\n\n", "\r\n", "😀"],
  ),
  minLength: 10,
  maxLength: 200,
});

Deno.test("splitMessage (property): any limit ends, fits, and either fences or splits plainly", () => {
  let fenced = 0;
  fc.assert(
    fc.property(fencyText, fc.integer({ min: 2, max: 60 }), (text, limit) => {
      const parts = checkedSplit(text, limit);
      if (JSON.stringify(parts) === JSON.stringify(plainSplit(text, limit))) return;
      fenced++;
      assertBalanced(text, parts);
      assert.equal(unsplit(text, parts), text);
    }),
    { numRuns: 1000, seed: 7 },
  );
  // The texts are fenced enough that splitting them plainly would leave blocks open.
  assert.ok(fenced >= 200, `only ${fenced} texts were split with fences`);
});

Deno.test("splitMessage (property): a text without fences is split plainly", () => {
  const text = fc.string({
    unit: fc.constantFrom("a", "`", "``", "~~", " ", "\n", "\n\n", "\r\n", "😀", "👍🏽", "\t"),
    maxLength: 300,
  }).filter((text) => !text.includes("```") && !text.includes("~~~"));
  fc.assert(
    fc.property(text, fc.integer({ min: 2, max: 60 }), (text, limit) => {
      assert.deepEqual(splitMessage(text, limit), plainSplit(text, limit));
    }),
    { numRuns: 500, seed: 11 },
  );
});

Deno.test("skipParts: a retry resumes a fenced answer at the same part", async () => {
  await using fake = await startFakePlatform("discord", {
    answers: ["ok", "ok", "server_error"],
  });
  const context: DeliveryContext = {
    secrets: { get: (variable) => variable === TOKEN_VARIABLE.discord ? fake.token : undefined },
    apiBaseUrl: (target) =>
      target === TARGET_OF.discord ? fake.baseUrl : "http://127.0.0.1:1/never-called",
    log: () => {},
    warn: () => {},
  };
  const request = (skipParts?: number): DeliveryRequest => ({
    target: "discord",
    message: LONG_ANSWER,
    extra: { chat_id: "1100000000000000001" },
    payload: {},
    event: "push",
    route: "ci",
    direct: false,
    ...(skipParts === undefined ? {} : { skipParts }),
  });
  const whole = splitMessage(LONG_ANSWER, MESSAGE_LIMITS.discord);

  const first = await deliver(request(), context);
  assert.equal(first.ok, false);
  const partsSent = first.ok ? 0 : first.partsSent;
  assert.equal(partsSent, 2);
  const retry = await deliver(request(partsSent), context);

  assert.equal(retry.ok && retry.parts, whole.length - 2);
  const sent = fake.requests.map((sent) => (sent.body as { content: string }).content);
  // Parts 1 and 2 once, part 3 twice (refused, then sent), the rest once.
  assert.deepEqual(sent, [whole[0], whole[1], whole[2], ...whole.slice(2)]);
  assertBalanced(LONG_ANSWER, whole);
});
