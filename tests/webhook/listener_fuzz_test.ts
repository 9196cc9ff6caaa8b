/**
 * Bad input gets a clear answer, never a crash: random methods, paths, headers, content types and
 * bodies, sent to the real listener app in process, are each answered with a status of decisions.md
 * §6 and a JSON body (an `error` string, or one of the documented success shapes); and a good
 * event is still accepted after them.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { githubSignature } from "../../src/webhook/signatures.ts";
import { signGeneric, signGenericV2, signStandard } from "../e2e/_gateway.ts";
import { assertServing, type Harness, harness, NOW, route, SECRET } from "./_listener_harness.ts";
import { SIGNATURE_HEADER_NAMES } from "./_signature_headers.ts";

const RUNS = 400;
const CAP = 4096;

/** The statuses decisions.md §6 lists for the listener. */
const STATUSES = new Set([200, 202, 400, 401, 403, 404, 405, 413, 429, 502]);
const SUCCESS = new Set(["ok", "ignored", "duplicate", "delivered", "accepted"]);

/** A route signed GitHub's way (an agent run), and a generic direct-delivery one with a filter. */
const ROUTES = {
  github: route(),
  generic: route({
    deliver: "telegram",
    deliver_only: true,
    prompt: "{__raw__}",
    filters: { not: { field: "headers.x-skip", exists: true } },
  }),
};

async function fuzzHarness(): Promise<Harness> {
  return await harness({ routes: ROUTES, maxBodyBytes: CAP, rate: 1_000_000 });
}

// --- requests -------------------------------------------------------------------------------

const segment = fc.oneof(
  fc.constantFrom(
    "webhooks",
    "github",
    "GitHub",
    "generic",
    "health",
    "",
    ".",
    "..",
    "%2e%2e",
    "%2F",
    "%00",
    "%ff",
    "%",
    "webhooks%2Fgithub",
    "é",
    "\u212a",
    "🙂",
  ),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: "grapheme", maxLength: 8 }),
  fc.nat(3000).map((n) => "a".repeat(n)),
);

/** Mostly a route's URL (to reach its steps), else any path. */
const path = fc.oneof(
  fc.array(segment, { minLength: 1, maxLength: 6 }).map((parts) => `/${parts.join("/")}`),
  {
    weight: 3,
    arbitrary: fc.tuple(
      fc.constantFrom("github", "generic", "GITHUB", "nope"),
      fc.constantFrom("", "/", "//"),
    ).map(([name, end]) => `/webhooks/${name}${end}`),
  },
  fc.tuple(segment, fc.string({ maxLength: 20 })).map(([name, query]) =>
    `/webhooks/${name}?${query}`
  ),
);

/** Methods a `Request` can be built with (CONNECT, TRACE and TRACK cannot). */
const method = fc.oneof(
  { weight: 3, arbitrary: fc.constant("POST") },
  fc.constantFrom("GET", "HEAD", "post", "PUT", "DELETE", "PATCH", "OPTIONS"),
  fc.stringMatching(/^[A-Za-z!#$%&'*+.^_`|~-]{1,12}$/).filter((m) =>
    !["CONNECT", "TRACE", "TRACK"].includes(m.toUpperCase())
  ),
);

// With GitHub's SHA-1 header, which no route takes (a downgrade attempt).
const SIGNATURE_HEADERS = [...SIGNATURE_HEADER_NAMES, "x-hub-signature"];
const OTHER_HEADERS = [
  "x-github-event",
  "x-gitlab-event",
  "x-github-delivery",
  "x-gitlab-event-uuid",
  "idempotency-key",
  "x-request-id",
  "content-length",
  "host",
  "x-skip",
];

/** A header name, in any mix of cases. */
const headerName = fc.tuple(
  fc.constantFrom(...SIGNATURE_HEADERS, ...OTHER_HEADERS),
  fc.array(fc.boolean(), { minLength: 30, maxLength: 30 }),
).map(([name, upper]) => [...name].map((char, i) => upper[i] ? char.toUpperCase() : char).join(""));

/** What a header value can hold: no NUL, CR or LF, nothing above U+00FF. */
const headerChar = fc.oneof(
  fc.integer({ min: 0x20, max: 0xff }).map((code) => String.fromCharCode(code)),
  fc.constantFrom("\t", ",", " ", "=", "v1,", "v1a,", "sha256=", "whsec_", "."),
);
const hex = (length: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${length}}$`));

const headerValue = fc.oneof(
  fc.string({ unit: headerChar, maxLength: 80 }),
  fc.nat(128).chain(hex),
  hex(64).map((h) => `sha256=${h}`),
  fc.string({ unit: fc.constantFrom(..."ghijklmnopqrstuvwxyzGHIJ"), minLength: 64, maxLength: 64 })
    .map((h) => `sha256=${h}`),
  fc.base64String({ maxLength: 60 }).map((b) => `v1,${b}`),
  fc.array(fc.base64String({ minLength: 44, maxLength: 44 }), { maxLength: 4 })
    .map((list) => list.map((b) => `v1,${b}`).join(" ")),
  fc.oneof(
    fc.integer({ min: -(2 ** 53), max: 2 ** 53 }),
    fc.integer({ min: -400, max: 400 }).map((d) => Math.floor(NOW / 1000) + d),
    fc.double(),
  ).map(String),
  fc.constantFrom("1e999", "NaN", "-0", "0x10", "\u00b2\u00b3", ""),
  fc.tuple(fc.string({ unit: headerChar, maxLength: 4 }), fc.nat(40_000)).map(([unit, n]) =>
    (unit || "a").repeat(n)
  ),
);

const headers = fc.array(fc.tuple(headerName, headerValue), { maxLength: 8 });

const contentType = fc.oneof(
  fc.constantFrom(
    undefined,
    "application/json",
    "application/json; charset=utf-8",
    "APPLICATION/JSON;charset=latin1",
    "application/x-www-form-urlencoded",
    "Application/X-WWW-Form-Urlencoded ; charset=UTF-8",
    "application/x-www-form-urlencoded;;;",
    "text/plain",
    "multipart/form-data; boundary=xyz",
    "",
    ";",
    "/",
  ),
  fc.tuple(
    fc.string({ unit: headerChar, maxLength: 20 }),
    fc.array(
      fc.tuple(fc.string({ maxLength: 8 }), fc.string({ unit: headerChar, maxLength: 12 })),
      {
        maxLength: 3,
      },
    ),
  ).map(([type, params]) =>
    type + params.map(([key, value]) => `; ${key.replace(/[^\x20-\x7e]/g, "")}=${value}`).join("")
  ),
);

/** JSON texts an object holds keys of, nested `depth` deep in arrays and objects. */
const deepJson = fc.tuple(fc.nat(100), fc.boolean(), fc.jsonValue({ maxDepth: 2 })).map(
  ([depth, arrays, leaf]) =>
    `{"a":${(arrays ? "[" : '{"x":').repeat(depth)}${JSON.stringify(leaf)}${
      (arrays ? "]" : "}").repeat(depth)
    }}`,
);

const oddJson = fc.constantFrom(
  '{"n":1e999999}',
  '{"n":-1e-999999}',
  '{"n":123456789012345678901234567890123456789}',
  '{"n":-0}',
  '{"a":1,"a":2}',
  '{"a":{"b":1,"b":1}}',
  '{"\\u0061":1,"a":2}',
  '{"__proto__":{"x":1},"constructor":1}',
  '{"a":"\\ud800"}',
  '{"a":"\\u0000"}',
  "{}",
  "[]",
  "null",
  '"text"',
  "1",
  "{",
  '{"a":1}{"b":2}',
  '{"a":1} ',
  "",
);

const jsonText = fc.oneof(
  fc.object({ maxDepth: 4 }).map((value) => JSON.stringify(value)),
  fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value)),
  fc.json({ maxDepth: 3 }),
  deepJson,
  oddJson,
  fc.tuple(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 2 })).map(([key, value]) =>
    `{${JSON.stringify(key)}:${JSON.stringify(value)},${JSON.stringify(key)}:0}`
  ),
);

const encoder = new TextEncoder();

const bodyBytes: fc.Arbitrary<Uint8Array<ArrayBuffer>> = fc.oneof(
  fc.uint8Array({ maxLength: 300 }),
  jsonText.map((text) => encoder.encode(text)),
  jsonText.map((text) => encoder.encode(`\uFEFF${text}`)),
  jsonText.map((text) => encoder.encode(`\uFEFF\uFEFF${text}`)),
  // Invalid UTF-8 inside valid JSON text: a lone continuation, an overlong form, a cut sequence.
  fc.tuple(jsonText, fc.constantFrom([0xff], [0xc0, 0xaf], [0xe2, 0x82], [0xed, 0xa0, 0x80]))
    .map(([text, bad]) => {
      const bytes = encoder.encode(text);
      const at = Math.floor(bytes.length / 2);
      return new Uint8Array([...bytes.subarray(0, at), ...bad, ...bytes.subarray(at)]);
    }),
  // Form bodies with payload fields: encoded, raw, repeated, broken percent escapes.
  fc.tuple(
    fc.array(
      fc.oneof(
        jsonText.map((text) => `payload=${encodeURIComponent(text)}`),
        jsonText.map((text) => `payload=${text}`),
        fc.constantFrom("payload", "payload=", "payload=%", "payload=%ff", "pay%6coad=%7B%7D"),
        fc.tuple(fc.string({ maxLength: 8 }), fc.string({ maxLength: 12 })).map(([k, v]) =>
          `${k}=${v}`
        ),
      ),
      { maxLength: 4 },
    ),
  ).map(([fields]) => encoder.encode(fields.join("&"))),
  // Over the cap, or just at it.
  fc.constantFrom(CAP - 1, CAP, CAP + 1, 3 * CAP).map((size) => {
    const bytes = new Uint8Array(size).fill(0x20);
    bytes.set(encoder.encode('{"a":1}'));
    return bytes;
  }),
).map((bytes) => new Uint8Array(bytes));

// --- answers --------------------------------------------------------------------------------

/** Asserts that `response` is one the listener may give: a §6 status and a documented body. */
async function assertClearAnswer(
  h: Harness,
  response: Response,
  request: string,
  logsBefore: number,
): Promise<void> {
  const text = await response.text();
  const where = `${request} → ${response.status} ${text.slice(0, 300)}`;
  assert.ok(STATUSES.has(response.status), `a status decisions.md §6 does not list: ${where}`);
  const failed = h.logs.slice(logsBefore).find((line) => line.includes("webhook request failed"));
  assert.equal(failed, undefined, where);
  if (text === "") {
    assert.equal(request.split(" ")[0], "HEAD", `an empty body: ${where}`);
    return;
  }
  assert.match(response.headers.get("content-type") ?? "", /^application\/json/, where);
  const body = JSON.parse(text);
  assert.ok(typeof body === "object" && body !== null && !Array.isArray(body), where);
  if (response.status >= 400) {
    assert.equal(typeof body.error, "string", where);
    assert.notEqual(body.error.trim(), "", where);
    if (response.status === 401) assert.equal(body.error, "Invalid signature", where);
    if (response.status === 405) assert.ok(response.headers.get("allow"), where);
    if (response.status === 429) assert.ok(response.headers.get("retry-after"), where);
  } else {
    assert.ok(SUCCESS.has(body.status), `not a documented success: ${where}`);
  }
}

function describe(method: string, url: string, list: [string, string][], body?: Uint8Array) {
  const shown = list.map(([name, value]) => `${name}: ${value.slice(0, 80)}`).join(" | ");
  return `${method} ${url.slice(0, 200)} [${shown}] body ${
    body ? JSON.stringify(new TextDecoder().decode(body.subarray(0, 200))) : "none"
  }`;
}

function buildHeaders(list: [string, string][], type: string | undefined): Headers {
  const built = new Headers();
  if (type !== undefined) built.set("content-type", type);
  for (const [name, value] of list) built.append(name, value);
  return built;
}

Deno.test("fuzz: any method, path, headers and body get a §6 status and a JSON answer", async () => {
  await using h = await fuzzHarness();
  await fc.assert(
    fc.asyncProperty(
      method,
      path,
      headers,
      contentType,
      fc.option(bodyBytes, { nil: undefined }),
      async (verb, where, list, type, body) => {
        const url = `http://localhost${where}`;
        const withBody = verb !== "GET" && verb !== "HEAD" ? body : undefined;
        const request = new Request(url, {
          method: verb,
          headers: buildHeaders(list, type),
          body: withBody,
        });
        const logsBefore = h.logs.length;
        const response = await h.app.fetch(request);
        await assertClearAnswer(h, response, describe(verb, url, list, withBody), logsBefore);
      },
    ),
    { numRuns: RUNS },
  );
  await assertServing(h, "github");
});

/** How a request to a route is signed: each family's headers, computed right for the body. */
type Signer = (body: Uint8Array, id: string) => [string, string][];

const utf8 = (body: Uint8Array) => new TextDecoder().decode(body);
const seconds = Math.floor(NOW / 1000);

const signers: Record<string, Signer> = {
  // Over the body's bytes: the e2e signer takes text, which cannot hold bytes that are not UTF-8.
  github: (body) => [["X-Hub-Signature-256", githubSignature(SECRET, body)]],
  standard: (body, id) => [
    ["webhook-id", id],
    ["webhook-timestamp", String(seconds)],
    ["webhook-signature", signStandard(SECRET, id, seconds, utf8(body))],
  ],
  generic: (body) => [["X-Webhook-Signature", signGeneric(SECRET, utf8(body))]],
  genericV2: (body) => [
    ["X-Webhook-Timestamp", String(seconds)],
    ["X-Webhook-Signature-V2", signGenericV2(SECRET, seconds, utf8(body))],
  ],
  gitlab: () => [["X-Gitlab-Token", SECRET]],
};

Deno.test("fuzz: signed requests with any body, content type and event headers get a §6 answer", async () => {
  await using h = await fuzzHarness();
  let accepted = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom("github", "generic", "GitHub", "generic/"),
      fc.constantFrom(...Object.keys(signers)),
      fc.array(fc.tuple(fc.constantFrom(...OTHER_HEADERS.slice(0, 6), "x-skip"), headerValue), {
        maxLength: 4,
      }),
      contentType,
      bodyBytes,
      fc.string({ minLength: 1, maxLength: 20 }).map((id) => id.replace(/[^\x21-\x7e]/g, "x")),
      async (name, family, list, type, body, id) => {
        // The signers over text sign the body decoded (a BOM dropped): right only for plain UTF-8.
        const signed = family === "github" || family === "gitlab" ||
            encoder.encode(utf8(body)).length === body.length
          ? signers[family](body, id)
          : signers.github(body, id);
        const all = [...list, ...signed];
        const url = `http://localhost/webhooks/${name}`;
        const logsBefore = h.logs.length;
        const response = await h.app.fetch(
          new Request(url, { method: "POST", headers: buildHeaders(all, type), body }),
        );
        if (response.status === 202) accepted++;
        assert.notEqual(response.status, 401, describe("POST", url, all, body));
        await assertClearAnswer(h, response, describe("POST", url, all, body), logsBefore);
      },
    ),
    { numRuns: RUNS },
  );
  assert.ok(accepted > 0, "no fuzzed event was accepted: the generators miss the good path");
  await assertServing(h, "github");
});
