/**
 * splitMessage and what a reader sees as one character (a grapheme cluster: an emoji ZWJ
 * sequence, a flag, a keycap, a letter with combining marks): no cut goes inside one unless it is
 * longer than a part. Examples, deliveries to the fake Telegram and Discord, and a property.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  deliver,
  type DeliveryContext,
  MESSAGE_LIMITS,
  splitMessage,
} from "../../src/delivery/mod.ts";
import {
  type FakePlatformName,
  startFakePlatform,
  TARGET_OF,
  TOKEN_VARIABLE,
} from "../fixtures/fake_platforms.ts";

// Delivery promises no leaked timers, bodies or connections.
Deno.test.sanitizer({ ops: true, resources: true });

const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" });

/** The grapheme clusters of `text`. */
function clusters(text: string): string[] {
  return [...graphemes.segment(text)].map(({ segment }) => segment);
}

/** Where the grapheme clusters of `text` begin, and its end. */
function clusterStarts(text: string): Set<number> {
  return new Set([...[...graphemes.segment(text)].map(({ index }) => index), text.length]);
}

/** Asserts that `parts`, split from `text` (no whitespace), are its pieces cut between clusters. */
function assertCutBetweenClusters(text: string, parts: string[], limit: number): void {
  assert.equal(parts.join(""), text);
  const starts = clusterStarts(text);
  let offset = 0;
  for (const [index, part] of parts.entries()) {
    assert.ok(part.length <= limit, `part ${index}: ${part.length} > ${limit}`);
    offset += part.length;
    assert.ok(starts.has(offset), `part ${index} ends inside a cluster: ${JSON.stringify(part)}`);
  }
}

/** 11 UTF-16 code units, 7 code points, one character on screen. */
const FAMILY = "👨‍👩‍👧‍👦";
/** Two regional indicators: 4 code units, one flag. */
const FLAG = "🇫🇷";
/** e and a combining acute accent: 2 code units, one letter. */
const E_ACUTE = "e\u0301";

Deno.test("splitMessage: never inside an emoji ZWJ sequence, a flag or a letter with combining marks", () => {
  for (
    const [text, limit] of [
      [FAMILY.repeat(300), MESSAGE_LIMITS.discord],
      [FAMILY.repeat(400), MESSAGE_LIMITS.telegram],
      [FLAG.repeat(1001), 2002],
      [E_ACUTE.repeat(1500), 2001],
      [`${"1\uFE0F\u20E3".repeat(700)}`, 2000],
      [`${"👍🏽".repeat(600)}`, 2002],
    ] as const
  ) {
    const parts = splitMessage(text, limit);
    assert.ok(parts.length > 1);
    assertCutBetweenClusters(text, parts, limit);
  }
});

Deno.test("splitMessage: a cluster longer than a part is cut between code points, never a surrogate pair", () => {
  // One letter with 12 combining marks (13 units), and an emoji sequence of 11 units at limit 4.
  for (const text of [`a${"\u0301".repeat(12)}`, FAMILY]) {
    const parts = splitMessage(text, 4);

    assert.equal(parts.join(""), text);
    assert.ok(parts.every((part) => part.length <= 4 && part.isWellFormed()), String(parts));
  }
  // The whole clusters around a long one are still cut between clusters.
  const text = `${E_ACUTE.repeat(3)}a${"\u0301".repeat(6)}${E_ACUTE.repeat(3)}`;
  const parts = splitMessage(text, 5);
  assert.equal(parts.join(""), text);
  assert.deepEqual(parts[0], E_ACUTE.repeat(2));
  assert.deepEqual(parts.at(-1), E_ACUTE.repeat(2));
});

Deno.test("splitMessage: a space before a combining mark is no place to cut (the mark sits on it)", () => {
  // " \u0301" is one cluster: cutting after the space would start a part with a lone accent.
  const text = `${"x".repeat(6)} \u0301${"y".repeat(6)}`;
  const parts = splitMessage(text, 10);

  assert.deepEqual(parts, [`${"x".repeat(6)} \u0301yy`, "yyyy"]);
});

for (const name of ["telegram", "discord"] as const satisfies FakePlatformName[]) {
  Deno.test(`deliver (${name}): a long run of emoji sequences arrives as whole emoji in each message`, async () => {
    await using fake = await startFakePlatform(name);
    const context: DeliveryContext = {
      secrets: { get: (variable) => variable === TOKEN_VARIABLE[name] ? fake.token : undefined },
      apiBaseUrl: (target) =>
        target === TARGET_OF[name] ? fake.baseUrl : "http://127.0.0.1:1/never-called",
      log: () => {},
    };
    const message = FAMILY.repeat(400);

    const result = await deliver({
      target: name,
      message,
      extra: { chat_id: name === "telegram" ? "-1001234567890" : "1100000000000000001" },
      payload: {},
      event: "push",
      route: "ci",
      direct: false,
    }, context);

    const sent = fake.requests.map((request) => {
      const body = request.body as { text?: string; content?: string };
      return body.text ?? body.content ?? "";
    });
    assert.ok(result.ok, JSON.stringify(result));
    assert.equal(result.parts, sent.length);
    assert.ok(sent.length > 1);
    assert.equal(sent.join(""), message);
    for (const text of sent) assert.ok(clusters(text).every((cluster) => cluster === FAMILY));
  });
}

Deno.test("splitMessage (property): with every cluster shorter than a part, cuts fall between clusters", () => {
  const text = fc.string({
    unit: fc.constantFrom("a", "é", E_ACUTE, "😀", "👍🏽", FAMILY, FLAG, "1\uFE0F\u20E3", "❤️", "गु"),
    maxLength: 200,
  });
  fc.assert(
    fc.property(text, fc.integer({ min: FAMILY.length, max: 80 }), (text, limit) => {
      assertCutBetweenClusters(text, splitMessage(text, limit), limit);
    }),
    { numRuns: 500, seed: Number(Deno.env.get("FUZZ_SEED") ?? 20261124) },
  );
});
