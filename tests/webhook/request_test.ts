import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import fc from "fast-check";
import {
  deliveryId,
  eventName,
  MAX_ID_LENGTH,
  MAX_JSON_DEPTH,
  parsePayload,
  type PayloadResult,
} from "../../src/webhook/request.ts";

const encoder = new TextEncoder();
const JSON_TYPE = "application/json";
const FORM_TYPE = "application/x-www-form-urlencoded";

/** The result of parsing `text`, without the payload's JSON text (checked by its own test). */
function parseText(text: string, contentType: string | null = JSON_TYPE): PayloadResult {
  return withoutJson(parsePayload(encoder.encode(text), contentType));
}

function withoutJson(result: PayloadResult): PayloadResult {
  if (!result.ok) return result;
  const { json: _, ...rest } = result;
  return rest as PayloadResult;
}

/** The error of a refused payload (fails the test if it was accepted). */
function errorOf(result: PayloadResult): string {
  assert.equal(result.ok, false, `expected a refusal, got ${JSON.stringify(result)}`);
  return (result as { error: string }).error;
}

function form(fields: Record<string, string> | [string, string][]): string {
  return new URLSearchParams(fields).toString();
}

/** `depth` nested objects: `{"a":{"a":...{}}}`. */
function nestedObjects(depth: number): string {
  return '{"a":'.repeat(depth - 1) + "{}" + "}".repeat(depth - 1);
}

// --- parsePayload: JSON bodies --------------------------------------------------------------

Deno.test("parsePayload: a JSON object is the payload", () => {
  assert.deepEqual(parseText('{"action":"opened","pull_request":{"number":7,"labels":[]}}'), {
    ok: true,
    payload: { action: "opened", pull_request: { number: 7, labels: [] } },
  });
  assert.deepEqual(parseText("{}"), { ok: true, payload: {} });
  assert.deepEqual(parseText(' \n\t{"a":1}\r\n '), { ok: true, payload: { a: 1 } });
});

Deno.test("parsePayload: integers beyond 2^53 (Discord ids) keep every digit", () => {
  assert.deepEqual(
    parseText(
      '{"channel":1234567890123456789,"n":-98765432109876543210,"x":1.5e300,"s":"1234567890123456789"}',
    ),
    {
      ok: true,
      payload: {
        channel: 1234567890123456789n,
        n: -98765432109876543210n,
        x: 1.5e300,
        s: "1234567890123456789",
      },
    },
  );
  assert.deepEqual(parseText('{"safe":9007199254740991}'), {
    ok: true,
    payload: { safe: 9007199254740991 },
  });
});

Deno.test("parsePayload: any content type other than a form is read as JSON", () => {
  for (
    const type of [null, "", "text/plain", "application/json; charset=utf-8", "APPLICATION/JSON"]
  ) {
    assert.deepEqual(parseText('{"a":1}', type), { ok: true, payload: { a: 1 } }, String(type));
  }
});

Deno.test("parsePayload: a leading byte order mark is tolerated", () => {
  const body = new Uint8Array([0xef, 0xbb, 0xbf, ...encoder.encode('{"a":"b"}')]);
  assert.deepEqual(parsePayload(body, JSON_TYPE), {
    ok: true,
    payload: { a: "b" },
    json: '{"a":"b"}',
  });
});

Deno.test("parsePayload: a body that is not a JSON object is refused, naming what it is", () => {
  const cases: [string, string][] = [
    ["null", "the body is not a JSON object (got null)"],
    ["[]", "the body is not a JSON object (got an array)"],
    ['[{"a":1}]', "the body is not a JSON object (got an array)"],
    ["42", "the body is not a JSON object (got a number)"],
    ['"text"', "the body is not a JSON object (got a string)"],
    ["true", "the body is not a JSON object (got a boolean)"],
  ];
  for (const [text, error] of cases) assert.deepEqual(parseText(text), { ok: false, error }, text);
});

Deno.test("parsePayload: an empty or whitespace-only body is refused, saying which", () => {
  assert.deepEqual(parseText(""), {
    ok: false,
    error: "the body is empty; expected a JSON object",
  });
  for (const text of ["   ", "\n\t\r\n"]) {
    assert.deepEqual(
      parseText(text),
      { ok: false, error: "the body holds only whitespace; expected a JSON object" },
      JSON.stringify(text),
    );
  }
});

Deno.test("parsePayload: invalid JSON is refused with the parser's reason", () => {
  for (const text of ['{"a":1,}', '{"a":1', "{a:1}", "{'a':1}", '{"a":1} {"b":2}', "{}x"]) {
    assert.match(errorOf(parseText(text)), /^the body is not valid JSON \(.+\)$/, text);
  }
});

Deno.test("parsePayload: invalid UTF-8 is refused", () => {
  const cases = [
    new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]), // {"a":"\xff"}
    new Uint8Array([0x7b, 0x7d, 0xc3]), // truncated sequence
    new Uint8Array([0x7b, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x3a, 0x31, 0x7d]), // encoded surrogate
    new Uint8Array([0x7b, 0x22, 0xc0, 0xaf, 0x22, 0x3a, 0x31, 0x7d]), // overlong "/"
  ];
  for (const body of cases) {
    assert.deepEqual(parsePayload(body, JSON_TYPE), {
      ok: false,
      error: "the body is not valid UTF-8; send it encoded as UTF-8",
    });
  }
  // Valid multi-byte UTF-8 passes.
  assert.deepEqual(parseText('{"é":"日本","emoji":"🎉"}'), {
    ok: true,
    payload: { "é": "日本", emoji: "🎉" },
  });
});

Deno.test("parsePayload: the payload's JSON text is the body's, or the form field's, as sent", () => {
  const text = ' {"b": 2,\n "a": [1, 12345678901234567890]}\n';
  const json = parsePayload(encoder.encode(text), JSON_TYPE);
  assert.equal(json.ok && json.json, text);
  const field = parsePayload(encoder.encode(form({ payload: text, other: "{}" })), FORM_TYPE);
  assert.equal(field.ok && field.json, text);
});

// --- parsePayload: form bodies --------------------------------------------------------------

Deno.test("parsePayload: a form body's payload field holds the JSON object", () => {
  const body = form({ payload: '{"ref":"refs/heads/main","commits":[{"id":"a b&c"}]}' });
  assert.deepEqual(parseText(body, FORM_TYPE), {
    ok: true,
    payload: { ref: "refs/heads/main", commits: [{ id: "a b&c" }] },
  });
  // Other fields are ignored; parameters of the content type do not matter.
  const withOthers = form([["token", "x"], ["payload", '{"a":1}'], ["z", ""]]);
  assert.deepEqual(parseText(withOthers, "Application/X-WWW-Form-Urlencoded; charset=UTF-8"), {
    ok: true,
    payload: { a: 1 },
  });
});

Deno.test("parsePayload: a form body without a payload field is refused", () => {
  assert.deepEqual(parseText(form({ data: '{"a":1}' }), FORM_TYPE), {
    ok: false,
    error: "the form body has no payload field; send payload=<JSON object>",
  });
  assert.equal(parseText("", FORM_TYPE).ok, false);
  // A JSON body sent with a form content type has no payload field either.
  assert.equal(parseText('{"payload":{"a":1}}', FORM_TYPE).ok, false);
});

Deno.test("parsePayload: a JSON body sent as a form (curl -d) is told to send its content type", () => {
  for (const body of ['{"action":"opened"}', '\n  {"action": "opened"}', "[1]"]) {
    assert.deepEqual(parseText(body, FORM_TYPE), {
      ok: false,
      error: "the form body has no payload field; send payload=<JSON object> (the body looks " +
        "like JSON: send it with Content-Type: application/json)",
    }, body);
  }
});

Deno.test("parsePayload: a form payload field that is not a JSON object is refused", () => {
  assert.match(
    errorOf(parseText(form({ payload: "not json" }), FORM_TYPE)),
    /^the payload field is not valid JSON \(/,
  );
  assert.deepEqual(parseText(form({ payload: "[1,2]" }), FORM_TYPE), {
    ok: false,
    error: "the payload field is not a JSON object (got an array)",
  });
  assert.deepEqual(parseText(form({ payload: "" }), FORM_TYPE), {
    ok: false,
    error: "the payload field is empty; expected a JSON object",
  });
  assert.deepEqual(parseText(form({ payload: "null" }), FORM_TYPE), {
    ok: false,
    error: "the payload field is not a JSON object (got null)",
  });
});

Deno.test("parsePayload: a form body with two payload fields is refused", () => {
  const body = form([["payload", '{"a":1}'], ["payload", '{"a":2}']]);
  assert.deepEqual(parseText(body, FORM_TYPE), {
    ok: false,
    error: "the form body has 2 payload fields; send exactly one",
  });
});

Deno.test("parsePayload: the duplicate and depth checks apply to a form payload field too", () => {
  assert.match(
    errorOf(parseText(form({ payload: '{"a":1,"a":2}' }), FORM_TYPE)),
    /^the payload field has the key "a" twice/,
  );
  assert.match(
    errorOf(parseText(form({ payload: nestedObjects(MAX_JSON_DEPTH + 1) }), FORM_TYPE)),
    /^the payload field nests objects and arrays more than 64 levels deep/,
  );
});

Deno.test("parsePayload: a form payload field whose percent-decoded bytes are not UTF-8 is refused", () => {
  const refusal = {
    ok: false,
    error: "the form body's payload field is not valid UTF-8 once percent-decoded; encode it " +
      "as UTF-8",
  };
  // URLSearchParams would read %FF as U+FFFD and the event would go on with a changed title.
  assert.deepEqual(parseText("payload=%7B%22title%22%3A%22caf%FF%22%7D", FORM_TYPE), refusal);
  assert.deepEqual(parseText("payload=%C3", FORM_TYPE), refusal, "a sequence cut short");
  assert.deepEqual(parseText("payload=%ED%A0%80", FORM_TYPE), refusal, "an encoded surrogate");
  // The same bytes in a field other than payload do not matter.
  assert.deepEqual(parseText("x=%FF&payload=%7B%22a%22%3A1%7D", FORM_TYPE), {
    ok: true,
    payload: { a: 1 },
  });
});

Deno.test("parsePayload: a form payload field is decoded as URLSearchParams decodes it", () => {
  // %C3%A9 is é; + is a space; a % without two hex digits stays as it is; raw non-ASCII too.
  assert.deepEqual(
    parseText('payload={"t":"%C3%A9+%2B+%zz+%4+100%+\u00e9+ü"}', FORM_TYPE),
    { ok: true, payload: { t: "é + %zz %4 100% é ü" } },
  );
  fc.assert(
    fc.property(
      fc.dictionary(fc.string({ unit: "grapheme" }), fc.string({ unit: "grapheme" })),
      fc.array(fc.tuple(fc.string({ unit: "binary" }), fc.string({ unit: "binary" })), {
        maxLength: 4,
      }),
      (payload, others) => {
        const fields = others.filter(([name]) => name !== "payload");
        fields.splice(fields.length >> 1, 0, ["payload", JSON.stringify(payload)]);
        const body = new URLSearchParams(fields).toString();
        const result = parsePayload(encoder.encode(body), FORM_TYPE);
        assert.deepEqual(
          result,
          {
            ok: true,
            payload: JSON.parse(JSON.stringify(payload)),
            json: new URLSearchParams(body).get("payload"),
          },
        );
      },
    ),
    { numRuns: 500 },
  );
});

// --- parsePayload: duplicate keys -----------------------------------------------------------

Deno.test("parsePayload: a key repeated at the top level is refused", () => {
  assert.deepEqual(parseText('{"action":"opened","action":"closed"}'), {
    ok: false,
    error: 'the body has the key "action" twice in the object at $; each key may appear once per ' +
      "object",
  });
});

Deno.test("parsePayload: a key repeated in a nested object is refused, with its path", () => {
  assert.deepEqual(parseText('{"a":1,"pr":{"user":{"id":1,"id":2}}}'), {
    ok: false,
    error: 'the body has the key "id" twice in the object at $.pr.user; each key may appear once ' +
      "per object",
  });
});

Deno.test("parsePayload: a key repeated in an object inside an array is refused", () => {
  const error = errorOf(parseText('{"commits":[{"id":"1"},{"id":"2","x":0,"id":"3"}]}'));
  assert.equal(
    error,
    'the body has the key "id" twice in the object at $.commits[1]; each key may appear once ' +
      "per object",
  );
  assert.match(
    errorOf(parseText('{"m":[[1,2],[3,{"k y":{"b":1,"b":1}}]]}')),
    /in the object at \$\.m\[1\]\[1\]\["k y"\];/,
  );
});

Deno.test("parsePayload: the same key in different objects is fine", () => {
  const text = '{"id":1,"a":{"id":2,"b":{"id":3}},"list":[{"id":4},{"id":5}],"c":{"id":6}}';
  assert.equal(parseText(text).ok, true);
  assert.equal(parseText('{"a":{},"b":{},"c":[{},{}]}').ok, true);
});

Deno.test("parsePayload: keys that differ only by escape sequences are the same key", () => {
  for (
    const text of [
      '{"a":1,"\\u0061":2}',
      '{"\\u0061":1,"a":2}',
      '{"a/b":1,"a\\/b":2}',
      '{"q\\"":1,"q\\u0022":2}',
      '{"\\n":1,"\\u000a":2}',
      '{"é":1,"\\u00e9":2}',
      '{"😀":1,"\\ud83d\\ude00":2}',
    ]
  ) {
    assert.match(errorOf(parseText(text)), /twice in the object at \$;/, text);
  }
  // Different keys that look alike stay different.
  assert.equal(parseText('{"a":1,"A":2,"a ":3,"\\\\u0061":4}').ok, true);
});

Deno.test("parsePayload: braces, quotes, commas and colons inside strings do not confuse the scan", () => {
  const tricky = [
    '{"a":"}{\\"a\\":1,\\"a\\":2}","b":"[[[[","c":"\\\\","d":"\\\\\\"","e":",\\"a\\":"}',
    '{"x":"\\"","a":"{\\"a\\":1}"}',
    '{"k{":1,"k}":2,"k,":3,"k:":4,"k\\"":5,"k[":6}',
    '{"s":"\\\\","a":1}',
  ];
  for (const text of tricky) {
    assert.deepEqual(parseText(text), { ok: true, payload: JSON.parse(text) }, text);
  }
  // ...and a real duplicate after such strings is still found.
  assert.match(
    errorOf(parseText('{"s":"\\\\","t":"}\\"","a":1,"a":2}')),
    /the key "a" twice in the object at \$;/,
  );
  // A value that equals an earlier key is not a key.
  assert.equal(parseText('{"a":"a","b":["a","b"],"c":{"d":"c"}}').ok, true);
});

Deno.test("parsePayload: a long key in a message is cut", () => {
  const key = "k".repeat(500);
  const error = errorOf(parseText(`{"${key}":1,"${key}":2}`));
  assert.ok(error.length < 200, error);
  assert.ok(error.includes(`"${"k".repeat(39)}…"`), error);
});

// --- parsePayload: depth --------------------------------------------------------------------

Deno.test("parsePayload: depth 64 is accepted, 65 refused (top-level object = depth 1)", () => {
  assert.equal(MAX_JSON_DEPTH, 64);
  assert.equal(parseText(nestedObjects(64)).ok, true);
  assert.deepEqual(parseText(nestedObjects(65)), {
    ok: false,
    error: "the body nests objects and arrays more than 64 levels deep; flatten the payload",
  });
});

Deno.test("parsePayload: a very deep body with a large integer is refused for its depth", () => {
  // The large integer takes the exact-integer parse, whose reviver recurses once per level.
  const deep = '{"id":12345678901234567890,"a":' + "[".repeat(20_000) + "]".repeat(20_000) + "}";
  assert.deepEqual(parseText(deep), {
    ok: false,
    error: "the body nests objects and arrays more than 64 levels deep; flatten the payload",
  });
});

Deno.test("parsePayload: arrays count towards the depth like objects", () => {
  const mixed = (depth: number) => '{"a":' + "[".repeat(depth - 1) + "]".repeat(depth - 1) + "}";
  assert.equal(parseText(mixed(64)).ok, true);
  assert.equal(parseText(mixed(65)).ok, false);
  // Depth is how many are open at once, not how many there are in total.
  const wide = "{" +
    Array.from({ length: 500 }, (_, i) => `"k${i}":${nestedObjects(63)}`).join(",") +
    "}";
  assert.equal(parseText(wide).ok, true);
});

Deno.test("parsePayload: very deep nesting is refused without overflowing the stack", () => {
  const deep = '{"a":' + "[".repeat(200_000) + "]".repeat(200_000) + "}";
  assert.match(errorOf(parseText(deep)), /more than 64 levels deep/);
});

// --- parsePayload: size ---------------------------------------------------------------------

Deno.test("parsePayload: a 1 MB body parses", () => {
  const items = Array.from({ length: 12_000 }, (_, i) => ({
    id: i,
    name: `item "${i}" {with} [brackets], commas: and \\ slashes \u00e9`,
    tags: ["a", "b", { nested: { k: i } }],
  }));
  const text = JSON.stringify({ event_type: "bulk", items });
  assert.ok(text.length > 1_000_000, `only ${text.length} chars`);
  const result = parseText(text);
  assert.ok(result.ok);
  assert.deepEqual(result.payload, JSON.parse(text));
  // A duplicate at the very end of the big body is still found.
  const dup = text.slice(0, -1) + ',"event_type":"again"}';
  assert.match(errorOf(parseText(dup)), /the key "event_type" twice in the object at \$;/);
});

Deno.test("parsePayload: a 1 MB string value with many escapes parses", () => {
  const text = JSON.stringify({ blob: '\\"{}[],:'.repeat(150_000) });
  assert.ok(text.length > 1_000_000);
  assert.equal(parseText(text).ok, true);
});

// --- eventName ------------------------------------------------------------------------------

Deno.test("eventName: precedence X-GitHub-Event > X-Gitlab-Event > event_type > type", () => {
  const payload = { event_type: "from_event_type", type: "from_type" };
  const all = new Headers({ "X-GitHub-Event": "push", "X-Gitlab-Event": "Push Hook" });
  assert.equal(eventName(all, payload), "push");
  assert.equal(eventName(new Headers({ "X-Gitlab-Event": "Push Hook" }), payload), "Push Hook");
  assert.equal(eventName(new Headers(), payload), "from_event_type");
  assert.equal(eventName(new Headers(), { type: "from_type" }), "from_type");
  assert.equal(eventName(new Headers(), {}), "unknown");
});

Deno.test("eventName: names are kept as given, not lower-cased", () => {
  assert.equal(eventName(new Headers({ "x-github-event": "Pull_Request" }), {}), "Pull_Request");
  assert.equal(eventName(new Headers(), { type: "Invoice.Paid" }), "Invoice.Paid");
  assert.equal(eventName(new Headers(), { event_type: "Ünïcode ✓" }), "Ünïcode ✓");
});

Deno.test("eventName: header names are matched in any case", () => {
  assert.equal(eventName(new Headers({ "x-GITHUB-event": "issues" }), {}), "issues");
});

Deno.test("eventName: non-ASCII, non-printable, empty or over-long headers are ignored", () => {
  const payload = { type: "fallback" };
  const bad = [
    "caf\u00e9",
    "tab\there",
    "x\u007f",
    "",
    "   ",
    "e".repeat(MAX_ID_LENGTH + 1),
  ];
  for (const value of bad) {
    const headers = new Headers([["x-github-event", value]]);
    assert.equal(eventName(headers, payload), "fallback", JSON.stringify(value));
    // The next header still counts.
    headers.set("x-gitlab-event", "Issue Hook");
    assert.equal(eventName(headers, payload), "Issue Hook", JSON.stringify(value));
  }
  const exact = "e".repeat(MAX_ID_LENGTH);
  assert.equal(eventName(new Headers({ "x-github-event": exact }), payload), exact);
});

Deno.test("eventName: payload values that are not usable strings are skipped", () => {
  for (const eventType of [42, null, true, {}, ["a"], "", "x".repeat(MAX_ID_LENGTH + 1), "a\nb"]) {
    assert.equal(eventName(new Headers(), { event_type: eventType, type: "t" }), "t");
    assert.equal(eventName(new Headers(), { event_type: eventType }), "unknown");
  }
});

Deno.test("eventName: a payload event_type or type is trimmed as a header is; one of only whitespace counts as absent", () => {
  for (const blank of [" ", "\t \n", "\u00a0", "\u2003"]) {
    assert.equal(eventName(new Headers(), { event_type: blank, type: "t" }), "t");
    assert.equal(eventName(new Headers(), { type: blank }), "unknown");
    assert.equal(eventName(new Headers(), { event_type: blank }, true), "unknown");
    // A signed payload's blank type does not hide the header it would otherwise go before.
    assert.equal(
      eventName(new Headers({ "x-github-event": "push" }), { type: blank }, true),
      "push",
    );
  }
  assert.equal(eventName(new Headers(), { event_type: " invoice.paid\n" }), "invoice.paid");
  assert.equal(eventName(new Headers(), { type: "\tpush " }, true), "push");
  // Headers, for comparison: HTTP trims them, and a blank one is skipped.
  assert.equal(eventName(new Headers({ "x-github-event": " push " }), {}), "push");
});

// --- deliveryId -----------------------------------------------------------------------------

const DELIVERY_HEADERS = [
  "X-GitHub-Delivery",
  // GitLab sends both; only the key stays the same when a delivery is resent.
  "Idempotency-Key",
  "X-Gitlab-Event-UUID",
  "webhook-id",
  "svix-id",
  "X-Request-ID",
];

Deno.test("deliveryId: headers in precedence order", () => {
  const body = encoder.encode("{}");
  // With headers i..end present, header i wins.
  for (let i = 0; i < DELIVERY_HEADERS.length; i++) {
    const headers = new Headers(DELIVERY_HEADERS.slice(i).map((name) => [name, `id-of-${name}`]));
    assert.equal(deliveryId(headers, body), `id-of-${DELIVERY_HEADERS[i]}`);
  }
  // Reversed insertion order changes nothing.
  const reversed = new Headers(DELIVERY_HEADERS.toReversed().map((name) => [name, `id-${name}`]));
  assert.equal(deliveryId(reversed, body), "id-X-GitHub-Delivery");
});

Deno.test("deliveryId: without an id header, the sha256 hex of the body", () => {
  const body = encoder.encode('{"a":1}');
  const expected = createHash("sha256").update(body).digest("hex");
  assert.equal(deliveryId(new Headers(), body), expected);
  assert.match(expected, /^[0-9a-f]{64}$/);
  // Stable for the same bytes, different for different bodies.
  assert.equal(deliveryId(new Headers({ date: "later" }), encoder.encode('{"a":1}')), expected);
  assert.notEqual(deliveryId(new Headers(), encoder.encode('{"a":2}')), expected);
  assert.notEqual(deliveryId(new Headers(), encoder.encode('{"a":1} ')), expected);
  assert.equal(
    deliveryId(new Headers(), new Uint8Array()),
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  );
});

Deno.test("deliveryId: non-ASCII, non-printable, empty or over-long headers are ignored", () => {
  const body = encoder.encode("{}");
  const hash = createHash("sha256").update(body).digest("hex");
  for (const value of ["\u00e9t\u00e9", "a\tb", "", "i".repeat(MAX_ID_LENGTH + 1)]) {
    const headers = new Headers([["x-github-delivery", value]]);
    assert.equal(deliveryId(headers, body), hash, JSON.stringify(value));
    headers.set("svix-id", "msg_1");
    assert.equal(deliveryId(headers, body), "msg_1", JSON.stringify(value));
  }
  const exact = "i".repeat(MAX_ID_LENGTH);
  assert.equal(deliveryId(new Headers({ "x-request-id": exact }), body), exact);
});

// --- parsePayload: repeated keys, against a model ------------------------------------------

/** A JSON value as written: objects keep every entry, repeated keys too. */
type Written =
  | { kind: "scalar"; text: string }
  | { kind: "array"; items: Written[] }
  | { kind: "object"; entries: [key: string, escaped: boolean, value: Written][] };

const KEYS = ["a", "b", "é", ":", '"', "a:", "{", ","];

const writtenValue: fc.Arbitrary<Written> = fc.letrec<{ value: Written }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.oneof(
      fc.constantFrom("1", "null", "true", '"x"', '"a\\":"', '":"', '"}{"'),
      fc.string({ maxLength: 4 }).map((text) => JSON.stringify(text)),
    ).map((text): Written => ({ kind: "scalar", text })),
    fc.array(tie("value"), { maxLength: 3 }).map((items): Written => ({ kind: "array", items })),
    fc.array(fc.tuple(fc.constantFrom(...KEYS), fc.boolean(), tie("value")), { maxLength: 4 })
      .map((entries): Written => ({ kind: "object", entries })),
  ),
})).value;

/** The text of `value`, with spaces around the colons and keys \u-escaped where asked. */
function writeJson(value: Written): string {
  if (value.kind === "scalar") return value.text;
  if (value.kind === "array") return `[${value.items.map(writeJson).join(", ")}]`;
  return `{${
    value.entries.map(([key, escaped, item]) => {
      const text = escaped
        ? `"${[...key].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join("")}"`
        : JSON.stringify(key);
      return `${text} :\n${writeJson(item)}`;
    }).join(",")
  }}`;
}

function repeatsAKey(value: Written): boolean {
  if (value.kind === "scalar") return false;
  if (value.kind === "array") return value.items.some(repeatsAKey);
  const keys = value.entries.map(([key]) => key);
  return new Set(keys).size < keys.length || value.entries.some(([, , item]) => repeatsAKey(item));
}

Deno.test("parsePayload: a payload is refused exactly when one of its objects repeats a key", () => {
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.constantFrom(...KEYS), fc.boolean(), writtenValue), { maxLength: 4 }),
      (entries) => {
        const top: Written = { kind: "object", entries };
        const text = writeJson(top);
        const result = parseText(text);
        if (repeatsAKey(top)) {
          assert.match(errorOf(result), /twice in the object at/, text);
        } else {
          assert.equal(result.ok, true, `${text}: ${JSON.stringify(result)}`);
        }
      },
    ),
    { numRuns: 500 },
  );
});

Deno.test("deliveryId: an id the signature covers goes before every unsigned header", () => {
  const body = new TextEncoder().encode("{}");
  const headers = new Headers({ "x-github-delivery": "g", "idempotency-key": "i" });
  assert.equal(deliveryId(headers, body), "g");
  assert.equal(deliveryId(headers, body, "msg_1"), "msg_1");
  // Too long to store as it is: its sha256, still the same for every replay.
  const long = "m".repeat(201);
  const hashed = deliveryId(headers, body, long);
  assert.match(hashed, /^[0-9a-f]{64}$/);
  assert.equal(deliveryId(new Headers(), body, long), hashed);
});
