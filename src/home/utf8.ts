/**
 * Where UTF-8 text goes wrong: for messages that point at the byte (a config file, an install
 * link) instead of decoding it as U+FFFD.
 *
 * @module
 */

/**
 * The 0-based offset of the lead byte of the first sequence in `bytes` that is not well-formed
 * UTF-8 (a stray continuation byte, a lead byte without its continuation, an overlong form, a
 * surrogate, beyond U+10FFFF), or `undefined` when all of it is well-formed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { firstInvalidUtf8 } from "./utf8.ts";
 * assert.equal(firstInvalidUtf8(new TextEncoder().encode("café")), undefined);
 * assert.equal(firstInvalidUtf8(new Uint8Array([0x63, 0x61, 0x66, 0xe9])), 3);
 * assert.equal(firstInvalidUtf8(new Uint8Array([0x61, 0xed, 0xa0, 0x80])), 1); // a surrogate
 * ```
 */
export function firstInvalidUtf8(bytes: Uint8Array): number | undefined {
  let i = 0;
  while (i < bytes.length) {
    const lead = bytes[i];
    if (lead < 0x80) {
      i++;
      continue;
    }
    const trailing = lead >= 0xc2 && lead <= 0xdf
      ? 1
      : lead >= 0xe0 && lead <= 0xef
      ? 2
      : lead >= 0xf0 && lead <= 0xf4
      ? 3
      : 0;
    if (trailing === 0) return i;
    // The second byte is narrower after E0, ED, F0 and F4 (no overlongs, surrogates, > U+10FFFF).
    const low = lead === 0xe0 ? 0xa0 : lead === 0xf0 ? 0x90 : 0x80;
    const high = lead === 0xed ? 0x9f : lead === 0xf4 ? 0x8f : 0xbf;
    for (let k = 1; k <= trailing; k++) {
      const byte = bytes[i + k];
      const [min, max] = k === 1 ? [low, high] : [0x80, 0xbf];
      if (byte === undefined || byte < min || byte > max) return i;
    }
    i += trailing + 1;
  }
  return undefined;
}
