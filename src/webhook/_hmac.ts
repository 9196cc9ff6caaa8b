/**
 * HMAC-SHA256 (RFC 2104) with the key's setup done once per key instead of once per request.
 *
 * HMAC hashes one 64-byte block derived from the key before the message and another before the
 * inner digest. Here the SHA-256 states after those two blocks are kept per key and copied for
 * each message, so a request hashes only its own bytes: about half the cost of `createHmac` for
 * a webhook body, which the gateway pays on every request. The result is the same bytes.
 *
 * @module
 */
import { createHash, type Hash } from "node:crypto";
import { Buffer } from "node:buffer";

const BLOCK_BYTES = 64;
/** Keys kept at most; a gateway has one per route at most. Past it, the cache starts over. */
const MAX_KEYS = 256;

interface KeyedState {
  /** SHA-256 after the key XOR 0x36 block. */
  inner: Hash;
  /** SHA-256 after the key XOR 0x5c block. */
  outer: Hash;
}

const states = new Map<string, KeyedState>();

/**
 * HMAC-SHA256 of the message `parts` (hashed one after another, as if joined) under `key`: a
 * string is its UTF-8 bytes, as `createHmac` reads it.
 *
 * @example RFC 4231 test case 2
 * ```ts
 * import assert from "node:assert/strict";
 * import { hmacSha256 } from "./_hmac.ts";
 * assert.equal(
 *   hmacSha256("Jefe", ["what do ya want ", "for nothing?"]).toString("hex"),
 *   "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
 * );
 * ```
 */
export function hmacSha256(
  key: string | Uint8Array,
  parts: readonly (string | Uint8Array)[],
): Buffer {
  const name = typeof key === "string" ? `s:${key}` : `b:${Buffer.from(key).toString("base64")}`;
  let state = states.get(name);
  if (!state) {
    if (states.size >= MAX_KEYS) states.clear();
    states.set(name, state = keyedState(typeof key === "string" ? Buffer.from(key) : key));
  }
  const inner = state.inner.copy();
  for (const part of parts) inner.update(part);
  return state.outer.copy().update(inner.digest()).digest();
}

function keyedState(key: Uint8Array): KeyedState {
  const block = new Uint8Array(BLOCK_BYTES);
  block.set(key.length > BLOCK_BYTES ? createHash("sha256").update(key).digest() : key);
  const padded = (byte: number) => createHash("sha256").update(block.map((b) => b ^ byte));
  return { inner: padded(0x36), outer: padded(0x5c) };
}
