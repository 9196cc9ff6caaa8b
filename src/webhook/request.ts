/**
 * An inbound webhook request as typed values: the payload (a JSON object, from a JSON body or the
 * `payload` field of a form body), the event name and the delivery id.
 *
 * The payload is refused (a 400 for the listener) when it is not UTF-8, not JSON, not an object,
 * repeats a key within one object, or nests deeper than {@linkcode MAX_JSON_DEPTH} levels.
 * Event names and delivery ids are read from headers first, then the payload; a candidate that is
 * empty, longer than {@linkcode MAX_ID_LENGTH} characters or holds bytes outside printable ASCII
 * (headers) or control characters (payload) is ignored as if absent, never cut, so two distinct
 * ids cannot collapse into one.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { parseJsonExact } from "../home/exact_json.ts";
import { jsonSyntaxProblem } from "../home/json_syntax.ts";
import { blankness, cut } from "../home/text.ts";

/** The payload of a request, or why it is refused. */
export type PayloadResult =
  /** `json` is the payload's JSON text as received (the body, or its form field). */
  | { ok: true; payload: Record<string, unknown>; json: string }
  | { ok: false; error: string };

/**
 * The deepest nesting accepted: the number of objects and arrays open at once, the top-level
 * object counting as 1. `{"a":{"b":[1]}}` has depth 3.
 */
export const MAX_JSON_DEPTH = 64;

/** Event names and delivery ids longer than this are ignored as if absent. */
export const MAX_ID_LENGTH = 200;

const FORM = "application/x-www-form-urlencoded";
/** Refuses bytes that are not UTF-8; reusable, since it never decodes in streaming mode. */
const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Parses a request body into its payload object. A form body (`application/x-www-form-urlencoded`)
 * must carry the JSON object in its `payload` field; any other content type is read as JSON.
 * A leading byte order mark is tolerated.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parsePayload } from "./request.ts";
 * const body = new TextEncoder().encode('{"action":"opened","number":7}');
 * const result = parsePayload(body, "application/json");
 * assert.deepEqual(result, {
 *   ok: true,
 *   payload: { action: "opened", number: 7 },
 *   json: '{"action":"opened","number":7}',
 * });
 *
 * const list = parsePayload(new TextEncoder().encode("[1,2]"), "application/json");
 * assert.deepEqual(list, { ok: false, error: "the body is not a JSON object (got an array)" });
 * ```
 */
export function parsePayload(body: Uint8Array, contentType: string | null): PayloadResult {
  let text: string;
  try {
    text = STRICT_UTF8.decode(body);
  } catch {
    return { ok: false, error: "the body is not valid UTF-8; send it encoded as UTF-8" };
  }
  if (mediaType(contentType) !== FORM) return parseJsonObject(text, "the body");
  const fields = formValues(text, "payload");
  if (fields === undefined) {
    return {
      ok: false,
      error: "the form body's payload field is not valid UTF-8 once percent-decoded; encode it " +
        "as UTF-8",
    };
  }
  if (fields.length === 0) {
    // Most often JSON sent without its content type: curl's -d says it is a form.
    const json = /^\s*[[{]/.test(text)
      ? " (the body looks like JSON: send it with Content-Type: application/json)"
      : "";
    return {
      ok: false,
      error: `the form body has no payload field; send payload=<JSON object>${json}`,
    };
  }
  if (fields.length > 1) {
    return {
      ok: false,
      error: `the form body has ${fields.length} payload fields; send exactly one`,
    };
  }
  return parseJsonObject(fields[0], "the payload field");
}

/**
 * The values of the field `name` of an `application/x-www-form-urlencoded` body, decoded as
 * `URLSearchParams` does (`+` is a space, `%` and two hex digits a byte, any other `%` itself),
 * except that a value whose bytes are not UTF-8 is refused (`undefined`) rather than read with
 * U+FFFD in place of the bytes. A name that is not UTF-8 is not `name`.
 */
function formValues(text: string, name: string): string[] | undefined {
  const values: string[] = [];
  for (const pair of text.split("&")) {
    const equals = pair.indexOf("=");
    if (percentDecoded(equals < 0 ? pair : pair.slice(0, equals)) !== name) continue;
    const value = percentDecoded(equals < 0 ? "" : pair.slice(equals + 1));
    if (value === undefined) return undefined;
    values.push(value);
  }
  return values;
}

function percentDecoded(text: string): string | undefined {
  const plain = text.replaceAll("+", " ");
  if (!plain.includes("%")) return plain;
  const bytes = new TextEncoder().encode(plain);
  const out = new Uint8Array(bytes.length);
  let length = 0;
  for (let i = 0; i < bytes.length; i++) {
    const high = hexValue(bytes[i + 1]);
    const low = hexValue(bytes[i + 2]);
    if (bytes[i] === 0x25 && high >= 0 && low >= 0) { // %
      out[length++] = high * 16 + low;
      i += 2;
    } else {
      out[length++] = bytes[i];
    }
  }
  try {
    return STRICT_UTF8.decode(out.subarray(0, length));
  } catch {
    return undefined;
  }
}

/** The value of an ASCII hex digit, or -1. */
function hexValue(byte: number | undefined): number {
  if (byte === undefined) return -1;
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
  const lower = byte | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x61 + 10 : -1;
}

/**
 * The event name: `X-GitHub-Event`, `X-Gitlab-Event`, the payload's `event_type`, the payload's
 * `type`, else `"unknown"`. Names are returned as given (not lower-cased), trimmed of surrounding
 * whitespace; a header or payload value of only whitespace counts as absent.
 *
 * With `payloadSigned` (a Standard Webhooks / Svix signature, which covers the body but no event
 * header), the payload's `event_type` and `type` go first: else a captured event of a kind the
 * route ignores, sent again with an unsigned `X-GitHub-Event` naming one it takes, would be taken.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { eventName } from "./request.ts";
 * const headers = new Headers({ "x-github-event": "pull_request" });
 * assert.equal(eventName(headers, { type: "ignored" }), "pull_request");
 * assert.equal(eventName(headers, { type: "invoice.paid" }, true), "invoice.paid");
 * assert.equal(eventName(headers, {}, true), "pull_request");
 * assert.equal(eventName(new Headers(), { type: "invoice.paid" }), "invoice.paid");
 * assert.equal(eventName(new Headers(), {}), "unknown");
 * ```
 */
export function eventName(
  headers: Headers,
  payload: Record<string, unknown>,
  payloadSigned = false,
): string {
  const fromPayload = () => payloadId(payload.event_type) ?? payloadId(payload.type);
  return (payloadSigned ? fromPayload() : undefined) ??
    headerId(headers, "x-github-event") ??
    headerId(headers, "x-gitlab-event") ??
    fromPayload() ??
    "unknown";
}

/**
 * The delivery id, for deduplication: `signedId` when the signature covers one (Standard
 * Webhooks), else `X-GitHub-Delivery`, `Idempotency-Key`, `X-Gitlab-Event-UUID`, `webhook-id`,
 * `svix-id`, `X-Request-ID`, else the sha256 (hex) of the body, so that a redelivered body keeps
 * its id (a timestamp would not). A signed id goes first because the others are not signed: with
 * them first, a captured request sent again with a new `Idempotency-Key` would be a new event.
 * A signed id too long to store is stored as its sha256.
 *
 * `Idempotency-Key` goes before `X-Gitlab-Event-UUID` because GitLab (17.4 and later) sends both
 * and only the key stays the same when a delivery is resent; the event UUID is new on each send.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { deliveryId } from "./request.ts";
 * const body = new TextEncoder().encode("{}");
 * const headers = new Headers({ "x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958" });
 * assert.equal(deliveryId(headers, body), "72d3162e-cc78-11e3-81ab-4c9367dc0958");
 * assert.equal(deliveryId(headers, body, "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"), "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W");
 * assert.equal(
 *   deliveryId(new Headers(), body),
 *   "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
 * );
 * ```
 */
export function deliveryId(headers: Headers, body: Uint8Array, signedId?: string): string {
  if (signedId !== undefined) {
    return signedId.length <= MAX_ID_LENGTH
      ? signedId
      : createHash("sha256").update(signedId).digest("hex");
  }
  for (
    const name of [
      "x-github-delivery",
      "idempotency-key",
      "x-gitlab-event-uuid",
      "webhook-id",
      "svix-id",
      "x-request-id",
    ]
  ) {
    const id = headerId(headers, name);
    if (id !== undefined) return id;
  }
  return createHash("sha256").update(body).digest("hex");
}

function mediaType(contentType: string | null): string {
  return (contentType ?? "").split(";", 1)[0].trim().toLowerCase();
}

/**
 * `text` read as one JSON object, as the gateway reads a sender's body (integers beyond 2^53
 * exact, a key repeated in one object or nesting past {@linkcode MAX_JSON_DEPTH} refused), or why
 * not, said of `what` and never quoting the text.
 *
 * @param text The JSON text.
 * @param what What the text is, for the error (`"the body"`, `"--payload"`).
 * @returns The object and its text, or the error.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseJsonObject } from "./request.ts";
 * assert.deepEqual(parseJsonObject("[1]", "--payload"), {
 *   ok: false,
 *   error: "--payload is not a JSON object (got an array)",
 * });
 * assert.deepEqual(parseJsonObject('{"a":1}', "--payload"), {
 *   ok: true,
 *   payload: { a: 1 },
 *   json: '{"a":1}',
 * });
 * ```
 */
export function parseJsonObject(text: string, what: string): PayloadResult {
  const blank = blankness(text);
  if (blank) return { ok: false, error: `${what} ${blank}; expected a JSON object` };
  let value: unknown;
  try {
    value = parseJsonExact(text); // a Discord id of 19 digits stays exact
  } catch (error) {
    // Valid JSON nested deep enough to exhaust the stack of the large-integer reviver: that is
    // what to say, not "not valid JSON".
    const tooDeep = error instanceof RangeError ? findAmbiguity(text, what)?.problem : undefined;
    if (tooDeep) return { ok: false, error: tooDeep };
    // V8's message quotes the text around the error; the place and what was expected is what a
    // sender needs, and it keeps the payload's text out of the answer and the log.
    return { ok: false, error: `${what} is not valid JSON (${jsonSyntaxProblem(text)})` };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { ok: false, error: `${what} is not a JSON object (got ${kind(value)})` };
  }
  const ambiguity = jsonAmbiguity(text, value, what);
  if (ambiguity) return { ok: false, error: ambiguity };
  return { ok: true, payload: value as Record<string, unknown>, json: text };
}

/**
 * What `JSON.parse` silently resolved in `text` (valid JSON, parsed as `value`): a key repeated in
 * one object (the last one wins), or nesting deeper than {@linkcode MAX_JSON_DEPTH}; said of
 * `what` ("the body"). `undefined` when there is neither.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonAmbiguity } from "./request.ts";
 * const text = '{"a":1,"b":{"a":2,"a":3}}';
 * assert.equal(
 *   jsonAmbiguity(text, JSON.parse(text), "the output"),
 *   'the output has the key "a" twice in the object at $.b; each key may appear once per object',
 * );
 * assert.equal(jsonAmbiguity('{"a":1}', { a: 1 }, "the output"), undefined);
 * ```
 */
export function jsonAmbiguity(text: string, value: unknown, what: string): string | undefined {
  return jsonAmbiguityAt(text, value, what)?.problem;
}

/** What {@linkcode jsonAmbiguityAt} found, and where. */
export interface JsonAmbiguity {
  /** As {@linkcode jsonAmbiguity} says it. */
  problem: string;
  /** The 1-based line of the text where it is: the repeat of a key, or the bracket too deep. */
  line: number;
  /**
   * The key written twice, the line of its first occurrence and the object's path (`$`, `$.a`),
   * when that is the problem.
   */
  repeated?: { key: string; firstLine: number; path: string };
}

/**
 * {@linkcode jsonAmbiguity} with the line it is on: for a file a person edits, where a body's
 * sender needs only the path.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonAmbiguityAt } from "./request.ts";
 * const text = '{\n  "q1": {},\n  "q1": {}\n}';
 * assert.deepEqual(jsonAmbiguityAt(text, JSON.parse(text), "the file"), {
 *   problem: 'the file has the key "q1" twice in the object at $; each key may appear once per object',
 *   line: 3,
 *   repeated: { key: "q1", firstLine: 2, path: "$" },
 * });
 * ```
 */
export function jsonAmbiguityAt(
  text: string,
  value: unknown,
  what: string,
): JsonAmbiguity | undefined {
  // Almost every text is unambiguous: that is checked without allocating, and only a text that
  // fails the check is scanned again for what to say.
  if (unambiguous(text, value)) return undefined;
  const found = findAmbiguity(text, what);
  if (found === undefined) return undefined;
  const lineAt = (offset: number) => {
    let line = 1;
    for (let at = text.indexOf("\n"); at !== -1 && at < offset; at = text.indexOf("\n", at + 1)) {
      line++;
    }
    return line;
  };
  const { problem, at, repeated } = found;
  return {
    problem,
    line: lineAt(at),
    ...(repeated
      ? { repeated: { key: repeated.key, firstLine: lineAt(repeated.at), path: repeated.path } }
      : {}),
  };
}

function kind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}

/**
 * Whether `text` (valid JSON, parsed as `value`) repeats no key within an object and nests at most
 * {@linkcode MAX_JSON_DEPTH} levels. Every key written in the text is a property of the parsed
 * value unless a later one of the same object replaced it, so the text has no repeated key exactly
 * when it holds as many keys (strings followed by a colon) as the value has properties.
 */
function unambiguous(text: string, value: unknown): boolean {
  let keys = 0;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    switch (text.charCodeAt(i)) {
      case 0x22: { // "
        i = closingQuote(text, i + 1);
        let next = i + 1;
        while (isJsonSpace(text.charCodeAt(next))) next++;
        if (text.charCodeAt(next) === 0x3a) keys++; // :
        break;
      }
      case 0x7b: // {
      case 0x5b: // [
        if (++depth > MAX_JSON_DEPTH) return false;
        break;
      case 0x7d: // }
      case 0x5d: // ]
        depth--;
        break;
    }
  }
  return countProperties(value) === keys;
}

function isJsonSpace(code: number): boolean {
  return code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09;
}

/** The properties of every object in `value` (at most MAX_JSON_DEPTH deep), nested ones too. */
function countProperties(value: unknown): number {
  if (typeof value !== "object" || value === null) return 0;
  let count = 0;
  if (Array.isArray(value)) {
    for (const item of value) count += countProperties(item);
    return count;
  }
  for (const key in value) count += 1 + countProperties((value as Record<string, unknown>)[key]);
  return count;
}

/** One open object (`keys` set) or array (`keys` null) while scanning. */
interface Frame {
  /** Each key of the object read so far, with the offset of its opening quote. */
  keys: Map<string, number> | null;
  /** The last key read in this object. */
  key: string;
  /** The index of the current element in this array. */
  index: number;
}

/**
 * Finds what `JSON.parse` silently resolves: a key repeated in one object (the last one would
 * win), or nesting deeper than {@linkcode MAX_JSON_DEPTH}. `text` must be valid JSON. One pass,
 * linear in the text: strings are skipped whole, so braces, quotes and commas inside them do not
 * count; keys are compared decoded, so `"a"` and `"\u0061"` are the same key.
 */
function findAmbiguity(
  text: string,
  what: string,
):
  | { problem: string; at: number; repeated?: { key: string; at: number; path: string } }
  | undefined {
  const frames: Frame[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    switch (text.charCodeAt(i)) {
      case 0x22: { // "
        const start = i + 1;
        i = closingQuote(text, start);
        if (!expectKey) break;
        let escaped = false; // keys are short: look for an escape in this one only
        for (let k = start; k < i && !escaped; k++) escaped = text.charCodeAt(k) === 0x5c;
        expectKey = false;
        const raw = text.slice(start, i);
        const key = escaped ? JSON.parse(`"${raw}"`) as string : raw;
        const frame = frames[frames.length - 1];
        const first = frame.keys!.get(key);
        if (first !== undefined) {
          const path = pathOf(frames);
          return {
            problem: `${what} has the key ${shorten(key)} twice in the object at ${path}; ` +
              "each key may appear once per object",
            at: start - 1,
            repeated: { key, at: first, path },
          };
        }
        frame.keys!.set(key, start - 1);
        frame.key = key;
        break;
      }
      case 0x7b: // {
      case 0x5b: // [
        frames.push({ keys: text.charCodeAt(i) === 0x7b ? new Map() : null, key: "", index: 0 });
        if (frames.length > MAX_JSON_DEPTH) {
          return {
            problem: `${what} nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep; ` +
              "flatten the payload",
            at: i,
          };
        }
        expectKey = frames[frames.length - 1].keys !== null;
        break;
      case 0x7d: // }
      case 0x5d: // ]
        frames.pop();
        expectKey = false;
        break;
      case 0x2c: { // ,
        const frame = frames[frames.length - 1];
        if (frame.keys) expectKey = true;
        else frame.index++;
        break;
      }
    }
  }
  return undefined;
}

/**
 * The index of the quote that ends the string whose text starts at `start`: the next `"` not
 * escaped, i.e. not preceded by an odd number of backslashes. Found with `indexOf`, which is much
 * faster than a loop over the characters of long strings (payloads are mostly string text).
 */
function closingQuote(text: string, start: number): number {
  let quote = text.indexOf('"', start);
  while (true) {
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return quote;
    quote = text.indexOf('"', quote + 1);
  }
}

/** Where the innermost frame sits, as `$.a[2]["b c"]`. */
function pathOf(frames: readonly Frame[]): string {
  let path = "$";
  for (const frame of frames.slice(0, -1)) {
    if (!frame.keys) path += `[${frame.index}]`;
    else if (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(frame.key)) path += `.${shorten(frame.key, false)}`;
    else path += `[${shorten(frame.key)}]`;
  }
  return path;
}

/** A key fit for a message: JSON-quoted unless `quote` is false, cut to 40 characters. */
function shorten(key: string, quote = true): string {
  const shown = cut(key, 40);
  return quote ? JSON.stringify(shown) : shown;
}

/** A header value usable as an id: non-empty printable ASCII of at most MAX_ID_LENGTH. */
function headerId(headers: Headers, name: string): string | undefined {
  const value = headers.get(name)?.trim();
  if (!value || value.length > MAX_ID_LENGTH || !/^[\x20-\x7e]+$/.test(value)) return undefined;
  return value;
}

/**
 * A payload value usable as an id: a string, trimmed as header values are, then non-empty, of at
 * most MAX_ID_LENGTH, no controls. One of only whitespace counts as absent, as such a header does.
 */
function payloadId(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const text = value.trim();
  if (text === "" || text.length > MAX_ID_LENGTH) return undefined;
  return /\p{Cc}/u.test(text) ? undefined : text;
}
