import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import fc from "fast-check";
import {
  githubSignature,
  standardWebhookSignature,
  TIMESTAMP_TOLERANCE_SECONDS,
  type Verification,
  verifySignature,
} from "../../src/webhook/signatures.ts";
import { SIGNATURE_HEADER_NAMES } from "./_signature_headers.ts";

const encoder = new TextEncoder();

/** Verifies with a fixed clock; headers as a record or a prepared `Headers`. */
function verify(
  headers: Record<string, string> | Headers,
  body: string | Uint8Array,
  secret: string,
  nowMs = NOW_MS,
): Verification {
  return verifySignature({
    headers: headers instanceof Headers ? headers : new Headers(headers),
    body: typeof body === "string" ? encoder.encode(body) : body,
    secret,
    nowMs,
  });
}

function hexHmac(secret: string, content: string): string {
  return createHmac("sha256", secret).update(content).digest("hex");
}

// --- GitHub ---------------------------------------------------------------------------------

const GH_SECRET = "It's a Secret to Everybody";
const GH_BODY = "Hello, World!";
const GH_HEX = "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
const NOW_MS = 1_700_000_000_000;

Deno.test("github: the published test vector verifies", () => {
  assert.deepEqual(verify({ "X-Hub-Signature-256": `sha256=${GH_HEX}` }, GH_BODY, GH_SECRET), {
    ok: true,
    family: "github",
  });
});

Deno.test("github: githubSignature reproduces the published vector", () => {
  assert.equal(githubSignature(GH_SECRET, GH_BODY), `sha256=${GH_HEX}`);
  assert.equal(githubSignature(GH_SECRET, encoder.encode(GH_BODY)), `sha256=${GH_HEX}`);
});

Deno.test("github: a tampered body fails", () => {
  const result = verify({ "x-hub-signature-256": `sha256=${GH_HEX}` }, "Hello, World?", GH_SECRET);
  assert.deepEqual(result, {
    ok: false,
    family: "github",
    reason: "the signature does not match",
  });
});

Deno.test("github: the wrong secret fails", () => {
  const result = verify({ "x-hub-signature-256": `sha256=${GH_HEX}` }, GH_BODY, "not the secret");
  assert.equal(result.ok, false);
  assert.equal(result.family, "github");
});

Deno.test("github: uppercase hex is accepted", () => {
  const result = verify(
    { "x-hub-signature-256": `sha256=${GH_HEX.toUpperCase()}` },
    GH_BODY,
    GH_SECRET,
  );
  assert.deepEqual(result, { ok: true, family: "github" });
});

Deno.test("github: malformed values fail with a format reason", () => {
  for (
    const value of [
      GH_HEX, // no sha256= prefix
      `sha1=${GH_HEX}`,
      `SHA256=${GH_HEX}`,
      `sha256=${GH_HEX.slice(0, 63)}`, // 63 digits
      `sha256=${GH_HEX}0`, // 65 digits
      `sha256=${GH_HEX.slice(0, 62)}`, // 31 bytes
      `sha256=${GH_HEX.slice(0, 63)}g`, // non-hex
      `sha256=${GH_HEX.slice(0, 63)}z`,
      "sha256=",
      "",
      `sha256=${GH_HEX} sha256=${GH_HEX}`,
    ]
  ) {
    assert.deepEqual(
      verify({ "x-hub-signature-256": value }, GH_BODY, GH_SECRET),
      {
        ok: false,
        family: "github",
        reason: "X-Hub-Signature-256 is not sha256=<64 hex digits>",
      },
      `value ${JSON.stringify(value)}`,
    );
  }
});

Deno.test("github: the header sent twice (joined by Headers) fails, and the reason says so", () => {
  for (const second of [GH_HEX, "0".repeat(64)]) {
    const headers = new Headers();
    headers.append("x-hub-signature-256", `sha256=${GH_HEX}`);
    headers.append("x-hub-signature-256", `sha256=${second}`);
    assert.deepEqual(verify(headers, GH_BODY, GH_SECRET), {
      ok: false,
      family: "github",
      reason: "X-Hub-Signature-256 is sent more than once; send it once",
    });
  }
});

Deno.test("github: the signature is over the raw bytes, not re-encoded text", () => {
  const body = new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]); // not UTF-8
  const headers = { "x-hub-signature-256": githubSignature("s", body) };
  assert.equal(verify(headers, body, "s").ok, true);
  assert.equal(verify(headers, new TextDecoder().decode(body), "s").ok, false);
});

// --- Standard Webhooks / Svix ---------------------------------------------------------------

// The test vector of the Standard Webhooks reference libraries.
const SW_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const SW_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const SW_TS = 1614265330;
const SW_BODY = '{"test": 2432232314}';
const SW_SIG = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
const SW_NOW = SW_TS * 1000;

function swHeaders(signature: string, timestamp: string | number = SW_TS, id = SW_ID) {
  return {
    "webhook-id": id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": signature,
  };
}

Deno.test("standard webhooks: the reference test vector verifies, naming the id it signs", () => {
  assert.deepEqual(verify(swHeaders(SW_SIG), SW_BODY, SW_SECRET, SW_NOW), {
    ok: true,
    family: "standard_webhooks",
    signedId: SW_ID,
  });
});

Deno.test("standard webhooks: standardWebhookSignature reproduces the reference vector", () => {
  assert.equal(standardWebhookSignature(SW_SECRET, SW_ID, SW_TS, SW_BODY), SW_SIG);
  assert.equal(standardWebhookSignature(SW_SECRET, SW_ID, SW_TS, encoder.encode(SW_BODY)), SW_SIG);
});

Deno.test("standard webhooks: a tampered body, id or timestamp fails", () => {
  assert.equal(verify(swHeaders(SW_SIG), '{"test": 2432232315}', SW_SECRET, SW_NOW).ok, false);
  assert.equal(verify(swHeaders(SW_SIG, SW_TS, "msg_other"), SW_BODY, SW_SECRET, SW_NOW).ok, false);
  assert.equal(verify(swHeaders(SW_SIG, SW_TS + 1), SW_BODY, SW_SECRET, SW_NOW).ok, false);
});

Deno.test("standard webhooks: one valid entry among several space-separated ones verifies", () => {
  const other = standardWebhookSignature("whsec_AAAAAAAAAAAAAAAAAAAAAAAA", SW_ID, SW_TS, SW_BODY);
  const signature = `v1,Ym9ndXM= ${other} ${SW_SIG} v1a,xyz`;
  assert.equal(verify(swHeaders(signature), SW_BODY, SW_SECRET, SW_NOW).ok, true);
  assert.equal(verify(swHeaders(`${other} v1,Ym9ndXM=`), SW_BODY, SW_SECRET, SW_NOW).ok, false);
});

Deno.test("standard webhooks: a v2 entry is ignored, even with the right bytes", () => {
  const v2 = SW_SIG.replace(/^v1,/, "v2,");
  const alone = verify(swHeaders(v2), SW_BODY, SW_SECRET, SW_NOW);
  assert.deepEqual(alone, {
    ok: false,
    family: "standard_webhooks",
    reason: "no v1 signature matches",
  });
  assert.equal(verify(swHeaders(`${v2} ${SW_SIG}`), SW_BODY, SW_SECRET, SW_NOW).ok, true);
});

Deno.test("standard webhooks: only the canonical base64 text matches", () => {
  for (
    const signature of [
      SW_SIG.slice(0, -1), // padding dropped: same bytes, not the same text
      `${SW_SIG},extra`,
      `${SW_SIG}=`,
      SW_SIG.replace("v1,", "v1, "),
      SW_SIG.replace("v1,", "V1,"),
      SW_SIG.replace("v1,", ""),
    ]
  ) {
    assert.equal(
      verify(swHeaders(signature), SW_BODY, SW_SECRET, SW_NOW).ok,
      false,
      `signature ${JSON.stringify(signature)}`,
    );
  }
});

Deno.test("standard webhooks: timestamps more than 300 s away fail, exactly 300 s passes", () => {
  assert.equal(TIMESTAMP_TOLERANCE_SECONDS, 300);
  const signed = (ts: number) =>
    swHeaders(standardWebhookSignature(SW_SECRET, SW_ID, ts, SW_BODY), ts);
  for (const [ts, ok] of [[SW_TS - 300, true], [SW_TS + 300, true]] as const) {
    assert.equal(verify(signed(ts), SW_BODY, SW_SECRET, SW_NOW).ok, ok, `ts ${ts}`);
  }
  const stale = verify(signed(SW_TS - 301), SW_BODY, SW_SECRET, SW_NOW);
  assert.deepEqual(stale, {
    ok: false,
    family: "standard_webhooks",
    reason: "the timestamp is 301 s away from now (at most 300 s)",
  });
  assert.equal(verify(signed(SW_TS + 301), SW_BODY, SW_SECRET, SW_NOW).ok, false);
  // A millisecond past the edge is past the edge.
  assert.equal(verify(signed(SW_TS - 300), SW_BODY, SW_SECRET, SW_NOW + 1).ok, false);
  assert.equal(verify(signed(SW_TS + 300), SW_BODY, SW_SECRET, SW_NOW - 1).ok, false);
});

Deno.test("standard webhooks: a non-numeric timestamp fails", () => {
  for (const ts of ["soon", "1614265330.0", "-1614265330", "1e9", "0x60368e32", "16142 65330"]) {
    const headers = swHeaders(SW_SIG, ts);
    const result = verify(headers, SW_BODY, SW_SECRET, SW_NOW);
    assert.equal(result.ok, false, `timestamp ${JSON.stringify(ts)}`);
    assert.equal(result.family, "standard_webhooks");
  }
  const result = verify(swHeaders(SW_SIG, "soon"), SW_BODY, SW_SECRET, SW_NOW);
  assert.equal(!result.ok && result.reason, "the timestamp is not a number of seconds");
});

Deno.test("standard webhooks: a broken clock (NaN) rejects a valid signature", () => {
  assert.equal(verify(swHeaders(SW_SIG), SW_BODY, SW_SECRET, Number.NaN).ok, false);
});

Deno.test("standard webhooks: svix-* headers verify the same way", () => {
  const headers = { "svix-id": SW_ID, "svix-timestamp": String(SW_TS), "svix-signature": SW_SIG };
  assert.deepEqual(verify(headers, SW_BODY, SW_SECRET, SW_NOW), {
    ok: true,
    family: "standard_webhooks",
    signedId: SW_ID,
  });
  assert.equal(verify(headers, SW_BODY + " ", SW_SECRET, SW_NOW).ok, false);
});

Deno.test("standard webhooks: headers of both prefixes are not mixed", () => {
  const headers = {
    "webhook-id": SW_ID,
    "svix-timestamp": String(SW_TS),
    "svix-signature": SW_SIG,
  };
  const result = verify(headers, SW_BODY, SW_SECRET, SW_NOW);
  assert.deepEqual(result, {
    ok: false,
    family: "standard_webhooks",
    reason: "webhook-id, webhook-timestamp and webhook-signature are all needed",
  });
});

Deno.test("standard webhooks: a secret without whsec_ is used as raw bytes", () => {
  const secret = "plain-route-secret";
  const expected = createHmac("sha256", secret).update(`${SW_ID}.${SW_TS}.${SW_BODY}`).digest(
    "base64",
  );
  const signature = standardWebhookSignature(secret, SW_ID, SW_TS, SW_BODY);
  assert.equal(signature, `v1,${expected}`);
  assert.equal(verify(swHeaders(signature), SW_BODY, secret, SW_NOW).ok, true);
  // The whsec_ secret's text used raw is a different key.
  const rawWhsec = `v1,${
    createHmac("sha256", SW_SECRET).update(`${SW_ID}.${SW_TS}.${SW_BODY}`).digest("base64")
  }`;
  assert.equal(verify(swHeaders(rawWhsec), SW_BODY, SW_SECRET, SW_NOW).ok, false);
});

Deno.test("standard webhooks: a missing id, timestamp or signature fails", () => {
  const full = swHeaders(SW_SIG);
  for (const drop of Object.keys(full)) {
    const headers = Object.fromEntries(Object.entries(full).filter(([k]) => k !== drop));
    const result = verify(headers, SW_BODY, SW_SECRET, SW_NOW);
    assert.equal(result.ok, false, `without ${drop}`);
    assert.equal(result.family, "standard_webhooks");
  }
});

Deno.test("standard webhooks: a whsec_ secret that is not base64 fails, never throws", () => {
  for (const secret of ["whsec_", "whsec_!!!!", "whsec_abc", "whsec_ab=c"]) {
    const result = verify(swHeaders(SW_SIG), SW_BODY, secret, SW_NOW);
    assert.deepEqual(result, {
      ok: false,
      family: "standard_webhooks",
      reason: "the whsec_ secret is not base64; copy it again from the sender",
    });
    assert.throws(() => standardWebhookSignature(secret, SW_ID, SW_TS, SW_BODY), TypeError);
  }
});

// --- GitLab ---------------------------------------------------------------------------------

Deno.test("gitlab: an equal token verifies, an unequal or empty one fails", () => {
  assert.deepEqual(verify({ "X-Gitlab-Token": "route-token" }, "{}", "route-token"), {
    ok: true,
    family: "gitlab",
  });
  assert.deepEqual(verify({ "x-gitlab-token": "route-tokeN" }, "{}", "route-token"), {
    ok: false,
    family: "gitlab",
    reason: "the token does not match",
  });
  assert.equal(verify({ "x-gitlab-token": "route-token-" }, "{}", "route-token").ok, false);
  assert.equal(verify({ "x-gitlab-token": "route" }, "{}", "route-token").ok, false);
  assert.deepEqual(verify({ "x-gitlab-token": "" }, "{}", "route-token"), {
    ok: false,
    family: "gitlab",
    reason: "the token is empty or malformed",
  });
});

Deno.test("gitlab: the token does not depend on the body", () => {
  assert.equal(verify({ "x-gitlab-token": "t0ken" }, "anything at all", "t0ken").ok, true);
});

// --- generic --------------------------------------------------------------------------------

const TS = Math.floor(NOW_MS / 1000);

Deno.test("generic v2: hex HMAC of <ts>.<body> with a fresh timestamp verifies", () => {
  const body = '{"ok":true}';
  const headers = {
    "X-Webhook-Signature-V2": hexHmac("s3cret", `${TS}.${body}`),
    "X-Webhook-Timestamp": String(TS),
  };
  assert.deepEqual(verify(headers, body, "s3cret"), { ok: true, family: "generic_v2" });
  // An optional sha256= prefix is tolerated.
  const prefixed = {
    ...headers,
    "X-Webhook-Signature-V2": `sha256=${headers["X-Webhook-Signature-V2"]}`,
  };
  assert.equal(verify(prefixed, body, "s3cret").ok, true);
  assert.equal(verify(headers, body + " ", "s3cret").ok, false);
  assert.equal(verify(headers, body, "other").ok, false);
});

Deno.test("generic v2: the timestamp is signed and checked against ±300 s", () => {
  const body = "payload";
  const at = (ts: number, signedTs = ts) => ({
    "x-webhook-signature-v2": hexHmac("s", `${signedTs}.${body}`),
    "x-webhook-timestamp": String(ts),
  });
  assert.equal(verify(at(TS - 300), body, "s").ok, true);
  assert.equal(verify(at(TS + 300), body, "s").ok, true);
  assert.equal(verify(at(TS - 301), body, "s").ok, false);
  assert.equal(verify(at(TS + 301), body, "s").ok, false);
  assert.equal(verify(at(TS, TS - 1), body, "s").ok, false);
  assert.deepEqual(verify(at(TS - 1000), body, "s"), {
    ok: false,
    family: "generic_v2",
    reason: "the timestamp is 1000 s away from now (at most 300 s)",
  });
});

Deno.test("generic v2: a missing or non-numeric timestamp fails", () => {
  const signature = hexHmac("s", `${TS}.x`);
  assert.deepEqual(verify({ "x-webhook-signature-v2": signature }, "x", "s"), {
    ok: false,
    family: "generic_v2",
    reason: "X-Webhook-Timestamp is missing",
  });
  const bad = { "x-webhook-signature-v2": signature, "x-webhook-timestamp": "now" };
  assert.equal(verify(bad, "x", "s").ok, false);
});

Deno.test("generic v2: a body-only (v1-style) signature does not pass as v2", () => {
  const headers = { "x-webhook-signature-v2": hexHmac("s", "x"), "x-webhook-timestamp": `${TS}` };
  assert.equal(verify(headers, "x", "s").ok, false);
});

Deno.test("generic v1: hex HMAC of the body verifies; others fail", () => {
  const body = "hello";
  assert.deepEqual(verify({ "X-Webhook-Signature": hexHmac("k", body) }, body, "k"), {
    ok: true,
    family: "generic",
  });
  assert.equal(
    verify({ "x-webhook-signature": `sha256=${hexHmac("k", body)}` }, body, "k").ok,
    true,
  );
  assert.deepEqual(verify({ "x-webhook-signature": hexHmac("k", "hellO") }, body, "k"), {
    ok: false,
    family: "generic",
    reason: "the signature does not match",
  });
  assert.equal(verify({ "x-webhook-signature": hexHmac("k", body) }, body, "K").ok, false);
  assert.equal(verify({ "x-webhook-signature": "" }, body, "k").ok, false);
  assert.equal(verify({ "x-webhook-signature": "abc" }, body, "k").ok, false);
});

// --- family choice and downgrades -----------------------------------------------------------

Deno.test("no downgrade: a wrong webhook-signature is not rescued by a valid X-Hub-Signature-256", () => {
  const headers = {
    ...swHeaders("v1,Ym9ndXNib2d1c2JvZ3VzYm9ndXNib2d1c2JvZ3VzYm8="),
    "x-hub-signature-256": githubSignature(SW_SECRET, SW_BODY),
  };
  const result = verify(headers, SW_BODY, SW_SECRET, SW_NOW);
  assert.equal(result.ok, false);
  assert.equal(result.family, "standard_webhooks");
});

Deno.test("no downgrade: a lone webhook-id header claims the Standard Webhooks family", () => {
  const headers = { "webhook-id": "x", "x-hub-signature-256": githubSignature("s", "b") };
  assert.equal(verify(headers, "b", "s").family, "standard_webhooks");
  assert.equal(verify(headers, "b", "s").ok, false);
  const svix = { "svix-timestamp": String(TS), "x-gitlab-token": "s" };
  assert.deepEqual(verify(svix, "b", "s").ok, false);
});

Deno.test("no downgrade: a wrong X-Hub-Signature-256 is not rescued by a valid X-Webhook-Signature", () => {
  const headers = {
    "x-hub-signature-256": githubSignature("wrong", "b"),
    "x-webhook-signature": hexHmac("s", "b"),
  };
  assert.deepEqual(verify(headers, "b", "s"), {
    ok: false,
    family: "github",
    reason: "the signature does not match",
  });
});

Deno.test("no downgrade: a wrong GitLab token or a stale v2 is not rescued by the generic v1", () => {
  const v1 = hexHmac("s", "b");
  const gitlab = verify({ "x-gitlab-token": "nope", "x-webhook-signature": v1 }, "b", "s");
  assert.equal(gitlab.ok, false);
  assert.equal(gitlab.family, "gitlab");
  const v2 = verify(
    {
      "x-webhook-signature-v2": hexHmac("s", `${TS - 1000}.b`),
      "x-webhook-timestamp": `${TS - 1000}`,
      "x-webhook-signature": v1,
    },
    "b",
    "s",
  );
  assert.equal(v2.ok, false);
  assert.equal(v2.family, "generic_v2");
});

Deno.test("no header at all: ok false without a family", () => {
  const result = verify(
    { "content-type": "application/json", "x-webhook-timestamp": "1" },
    "{}",
    "s",
  );
  assert.deepEqual(result, { ok: false, reason: "no signature or token header" });
  assert.equal("family" in result, false);
});

Deno.test("an empty secret never verifies, whatever the headers", () => {
  const cases: Record<string, string>[] = [
    { "x-hub-signature-256": githubSignature("", "b") },
    { "x-gitlab-token": "" },
    { "x-webhook-signature": hexHmac("", "b") },
    swHeaders("v1,AAAA", TS),
  ];
  for (const headers of cases) {
    const result = verify(headers, "b", "");
    assert.equal(result.ok, false, JSON.stringify(headers));
    assert.match(!result.ok ? result.reason : "", /no secret is configured/);
  }
});

Deno.test("a signature made for another route's secret fails, in every family", () => {
  const body = '{"n":1}';
  const mine = "route-a-secret";
  const theirs = "route-b-secret";
  const cases: Record<string, string>[] = [
    { "x-hub-signature-256": githubSignature(theirs, body) },
    { "x-gitlab-token": theirs },
    { "x-webhook-signature-v2": hexHmac(theirs, `${TS}.${body}`), "x-webhook-timestamp": `${TS}` },
    { "x-webhook-signature": hexHmac(theirs, body) },
    swHeaders(standardWebhookSignature(theirs, "msg_1", TS, body), TS, "msg_1"),
  ];
  for (const headers of cases) {
    assert.equal(verify(headers, body, mine).ok, false, JSON.stringify(headers));
    assert.equal(verify(headers, body, theirs).ok, true, JSON.stringify(headers));
  }
});

// --- hostile header bytes -------------------------------------------------------------------

const ALL_HEADER_NAMES = SIGNATURE_HEADER_NAMES;

Deno.test("hostile: non-ASCII (latin-1) header values fail and never throw", () => {
  const latin = (value: string) => value.replace(/0/, "\u00e9");
  const gh = verify({ "x-hub-signature-256": latin(`sha256=${GH_HEX}`) }, GH_BODY, GH_SECRET);
  assert.equal(gh.ok, false);
  assert.equal(gh.family, "github");
  // A latin-1 token equal to a latin-1 secret is still refused: only printable ASCII counts.
  const gitlab = verify({ "x-gitlab-token": "caf\u00e9" }, "b", "caf\u00e9");
  assert.deepEqual(gitlab, {
    ok: false,
    family: "gitlab",
    reason: "the token is empty or malformed",
  });
  const sw = verify(
    { ...swHeaders(SW_SIG), "webhook-id": `${SW_ID}\u00ff` },
    SW_BODY,
    SW_SECRET,
    SW_NOW,
  );
  assert.equal(sw.ok, false);
  for (const name of ALL_HEADER_NAMES) {
    const headers = new Headers([[name, "\u00e9\u00ff\u0080 v1,\u00e9"]]);
    const result = verify(headers, "b", "s");
    assert.equal(result.ok, false, name);
  }
});

Deno.test("hostile: 100 KB header values fail and never throw", () => {
  const long = "a".repeat(100 * 1024);
  const base64ish = `v1,${"A".repeat(100 * 1024)}=`;
  for (const name of ALL_HEADER_NAMES) {
    for (const value of [long, base64ish, `sha256=${"0".repeat(100 * 1024)}`]) {
      assert.equal(verify({ [name]: value }, "b", "s").ok, false, name);
    }
  }
  const manyEntries = Array.from({ length: 5000 }, () => "v1,AAAA").join(" ");
  assert.equal(verify(swHeaders(manyEntries), SW_BODY, SW_SECRET, SW_NOW).ok, false);
});

Deno.test("hostile: values with spaces and commas fail and never throw", () => {
  for (const name of ALL_HEADER_NAMES) {
    for (const value of [" , ", ",,,", "v1, v1,", "a b,c d", "sha256=,", `${GH_HEX}, ${GH_HEX}`]) {
      assert.equal(verify({ [name]: value }, "b", "s").ok, false, `${name}: ${value}`);
    }
  }
});

// --- properties -----------------------------------------------------------------------------

/** Characters `Headers` accepts in a value (ByteString without NUL, CR, LF). */
const headerChar = fc.oneof(
  fc.integer({ min: 0x20, max: 0xff }).map((c) => String.fromCharCode(c)),
  fc.constantFrom("\t", ",", " ", "=", "v1,", "sha256=", "whsec_"),
);

const headerValue = fc.oneof(
  fc.string({ unit: headerChar, maxLength: 80 }),
  fc.stringMatching(/^[0-9a-fA-F]{64}$/).map((hex) => `sha256=${hex}`),
  fc.base64String({ minLength: 40, maxLength: 48 }).map((b) => `v1,${b}`),
  fc.integer({ min: -1, max: 2 ** 40 }).map(String),
);

Deno.test("property: verifySignature never throws and answers a Verification", () => {
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.constantFrom(...ALL_HEADER_NAMES), headerValue), { maxLength: 6 }),
      fc.uint8Array({ maxLength: 64 }),
      fc.oneof(fc.string(), fc.constantFrom(SW_SECRET, "whsec_", "whsec_!!", "")),
      fc.oneof(fc.integer({ min: 0, max: 2 ** 45 }), fc.double()),
      (entries, body, secret, nowMs) => {
        const headers = new Headers();
        for (const [name, value] of entries) headers.append(name, value);
        const result = verifySignature({ headers, body, secret, nowMs });
        assert.equal(typeof result.ok, "boolean");
        if (!result.ok) assert.equal(typeof result.reason, "string");
      },
    ),
    { numRuns: 500 },
  );
});

Deno.test("property: githubSignature always verifies; any single-byte change never does", () => {
  fc.assert(
    fc.property(
      fc.string({ minLength: 1 }),
      fc.uint8Array({ minLength: 1, maxLength: 256 }),
      fc.nat(),
      fc.integer({ min: 1, max: 255 }),
      (secret, body, at, flip) => {
        const headers = new Headers({ "x-hub-signature-256": githubSignature(secret, body) });
        assert.deepEqual(verifySignature({ headers, body, secret, nowMs: 0 }), {
          ok: true,
          family: "github",
        });
        const changed = body.slice();
        changed[at % body.length] ^= flip;
        assert.equal(verifySignature({ headers, body: changed, secret, nowMs: 0 }).ok, false);
      },
    ),
    { numRuns: 300 },
  );
});
