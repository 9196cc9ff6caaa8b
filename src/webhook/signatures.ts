/**
 * Webhook authentication over the raw body: Standard Webhooks / Svix, GitHub's
 * `X-Hub-Signature-256`, GitLab's `X-Gitlab-Token`, and the generic `X-Webhook-Signature(-V2)`.
 * The first header family present decides (a request cannot downgrade to a weaker one), every
 * comparison is constant-time, and no header content can make verification throw.
 *
 * @module
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { Buffer } from "node:buffer";
import { hmacSha256 } from "./_hmac.ts";

/** Which scheme authenticated (or failed to authenticate) a request. */
export type SignatureFamily =
  | "standard_webhooks"
  | "github"
  | "gitlab"
  | "generic_v2"
  | "generic";

/** The verdict on one request. */
export type Verification =
  | {
    ok: true;
    family: SignatureFamily;
    /**
     * The delivery id the signature covers (Standard Webhooks' `webhook-id` / `svix-id`): the
     * request's delivery id, whatever unsigned id headers say, so a replay is a duplicate.
     */
    signedId?: string;
  }
  | { ok: false; family?: SignatureFamily; reason: string };

/** What verification needs. */
export interface VerifyInput {
  /** Request headers (any case). */
  headers: Headers;
  /** The raw body bytes, exactly as received. */
  body: Uint8Array;
  /** The route's secret (or the global one). */
  secret: string;
  /** Clock for timestamped schemes (ms since epoch). */
  nowMs: number;
}

/** Timestamped schemes accept this much clock difference either way. */
export const TIMESTAMP_TOLERANCE_SECONDS = 300;

/**
 * Verifies a request's signature or token.
 *
 * @example GitHub's published test vector
 * ```ts
 * import assert from "node:assert/strict";
 * import { verifySignature } from "./signatures.ts";
 * const result = verifySignature({
 *   headers: new Headers({
 *     "x-hub-signature-256":
 *       "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
 *   }),
 *   body: new TextEncoder().encode("Hello, World!"),
 *   secret: "It's a Secret to Everybody",
 *   nowMs: Date.now(),
 * });
 * assert.deepEqual(result, { ok: true, family: "github" });
 * ```
 */
export function verifySignature(input: VerifyInput): Verification {
  const header = (name: string) => printable(input.headers.get(name));
  const present = (name: string) => input.headers.has(name);
  // An empty key makes every HMAC forgeable: refuse rather than accept anyone.
  if (input.secret === "") {
    return { ok: false, reason: "no secret is configured; set one for this route" };
  }
  if (present("webhook-signature") || present("webhook-id") || present("webhook-timestamp")) {
    return standardWebhooks(input, "webhook", header);
  }
  if (present("svix-signature") || present("svix-id") || present("svix-timestamp")) {
    return standardWebhooks(input, "svix", header);
  }
  if (present("x-hub-signature-256")) return github(input, header("x-hub-signature-256"));
  if (present("x-gitlab-token")) {
    const token = header("x-gitlab-token");
    if (token === undefined || token === "") {
      return fail("gitlab", "the token is empty or malformed");
    }
    return sameBytes(digest(token), digest(input.secret))
      ? { ok: true, family: "gitlab" }
      : fail("gitlab", "the token does not match");
  }
  if (present("x-webhook-signature-v2")) return genericV2(input, header);
  if (present("x-webhook-signature")) {
    const hex = stripPrefix(header("x-webhook-signature"));
    return hexMatches(hex, hmac(input.secret, input.body))
      ? { ok: true, family: "generic" }
      : fail("generic", "the signature does not match");
  }
  return { ok: false, reason: "no signature or token header" };
}

/**
 * Signs `body` the way GitHub does: `sha256=<hex HMAC-SHA256>`.
 *
 * @example GitHub's published test vector
 * ```ts
 * import assert from "node:assert/strict";
 * import { githubSignature } from "./signatures.ts";
 * assert.equal(
 *   githubSignature("It's a Secret to Everybody", "Hello, World!"),
 *   "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
 * );
 * ```
 */
export function githubSignature(secret: string, body: Uint8Array | string): string {
  return `sha256=${hmac(secret, body).toString("hex")}`;
}

/**
 * Signs like Standard Webhooks: `v1,<base64 HMAC of id.timestamp.body>`, with a `whsec_` secret
 * base64-decoded.
 *
 * @throws {TypeError} when the secret is empty or a `whsec_` secret is not base64.
 *
 * @example The Standard Webhooks test vector
 * ```ts
 * import assert from "node:assert/strict";
 * import { standardWebhookSignature } from "./signatures.ts";
 * const signature = standardWebhookSignature(
 *   "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
 *   "msg_p5jXN8AQM9LWM0D4loKWxJek",
 *   1614265330,
 *   '{"test": 2432232314}',
 * );
 * assert.equal(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
 * ```
 */
export function standardWebhookSignature(
  secret: string,
  id: string,
  timestampSeconds: number,
  body: Uint8Array | string,
): string {
  const key = standardKey(secret);
  if (!key) {
    throw new TypeError("the secret must be non-empty, and a whsec_ secret must be base64");
  }
  return `v1,${standardDigest(key, id, String(timestampSeconds), Buffer.from(body))}`;
}

function standardWebhooks(
  input: VerifyInput,
  prefix: "webhook" | "svix",
  header: (name: string) => string | undefined,
): Verification {
  const family = "standard_webhooks";
  const id = header(`${prefix}-id`);
  const timestamp = header(`${prefix}-timestamp`);
  const signatures = header(`${prefix}-signature`);
  if (!id || !timestamp || !signatures) {
    return fail(family, `${prefix}-id, ${prefix}-timestamp and ${prefix}-signature are all needed`);
  }
  const stale = checkTimestamp(timestamp, input.nowMs);
  if (stale) return fail(family, stale);
  const key = standardKey(input.secret);
  if (!key) return fail(family, "the whsec_ secret is not base64; copy it again from the sender");
  // Compare canonical base64 text, as the reference libraries do: no unpadded or odd encodings.
  const expected = standardDigest(key, id, timestamp, input.body);
  for (const entry of signatures.split(" ")) {
    const comma = entry.indexOf(",");
    if (comma < 0 || entry.slice(0, comma) !== "v1") continue;
    if (sameText(entry.slice(comma + 1), expected)) {
      return { ok: true, family, signedId: id };
    }
  }
  return fail(family, "no v1 signature matches");
}

function standardDigest(key: Buffer, id: string, timestamp: string, body: Uint8Array): string {
  return hmacSha256(key, [`${id}.${timestamp}.`, body]).toString("base64");
}

function github(input: VerifyInput, value: string | undefined): Verification {
  const match = value ? /^sha256=([0-9a-fA-F]{64})$/.exec(value) : null;
  if (!match) {
    // A repeated header reaches here as its values joined by ", ": each may be well formed.
    return /^sha256=[0-9a-fA-F]{64}(?:\s*,\s*sha256=[0-9a-fA-F]{64})+$/.test(value ?? "")
      ? fail("github", "X-Hub-Signature-256 is sent more than once; send it once")
      : fail("github", "X-Hub-Signature-256 is not sha256=<64 hex digits>");
  }
  return hexMatches(match[1], hmac(input.secret, input.body))
    ? { ok: true, family: "github" }
    : fail("github", "the signature does not match");
}

function genericV2(
  input: VerifyInput,
  header: (name: string) => string | undefined,
): Verification {
  const timestamp = header("x-webhook-timestamp");
  if (!timestamp) return fail("generic_v2", "X-Webhook-Timestamp is missing");
  const stale = checkTimestamp(timestamp, input.nowMs);
  if (stale) return fail("generic_v2", stale);
  const expected = hmacSha256(input.secret, [`${timestamp}.`, input.body]);
  return hexMatches(stripPrefix(header("x-webhook-signature-v2")), expected)
    ? { ok: true, family: "generic_v2" }
    : fail("generic_v2", "the signature does not match");
}

function checkTimestamp(value: string, nowMs: number): string | undefined {
  if (!/^\d{1,12}$/.test(value)) return "the timestamp is not a number of seconds";
  const skew = Math.abs(nowMs / 1000 - Number(value));
  // Written as "not within" so that a broken clock (NaN) rejects instead of accepting everything.
  return skew <= TIMESTAMP_TOLERANCE_SECONDS
    ? undefined
    : `the timestamp is ${
      Math.ceil(skew)
    } s away from now (at most ${TIMESTAMP_TOLERANCE_SECONDS} s)`;
}

/** The HMAC key: a `whsec_` secret's base64 payload, else the secret's bytes; none if empty. */
function standardKey(secret: string): Buffer | undefined {
  if (!secret.startsWith("whsec_")) return secret === "" ? undefined : Buffer.from(secret);
  const encoded = secret.slice("whsec_".length);
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(encoded)) {
    return undefined;
  }
  const key = Buffer.from(encoded, "base64");
  return key.length > 0 ? key : undefined;
}

function hmac(secret: string, body: Uint8Array | string): Buffer {
  return hmacSha256(secret, [body]);
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

function hexMatches(hex: string | undefined, expected: Buffer): boolean {
  if (!hex || !/^[0-9a-fA-F]{64}$/.test(hex)) return false;
  return sameText(hex.toLowerCase(), expected.toString("hex"));
}

/**
 * Whether two texts are equal, in a time that depends only on their length (the length of a
 * signature is public): a JavaScript loop, cheaper here than copying both into buffers for
 * `timingSafeEqual`.
 */
function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return difference === 0;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

function stripPrefix(value: string | undefined): string | undefined {
  return value?.startsWith("sha256=") ? value.slice("sha256=".length) : value;
}

/** A header value as text, or `undefined` when it holds bytes outside printable ASCII. */
function printable(value: string | null): string | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  return /^[\x20-\x7e]*$/.test(trimmed) ? trimmed : undefined;
}

function fail(family: SignatureFamily, reason: string): Verification {
  return { ok: false, family, reason };
}
