import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { Buffer } from "node:buffer";
import fc from "fast-check";
import { hmacSha256 } from "../../src/webhook/_hmac.ts";

const hex = (text: string) => Buffer.from(text, "hex");

// RFC 4231 section 4: keys shorter than, equal to and longer than the 64-byte block.
const RFC_4231 = [
  {
    name: "case 1 (20-byte key)",
    key: hex("0b".repeat(20)),
    data: Buffer.from("Hi There"),
    mac: "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
  },
  {
    name: "case 3 (bytes 0xdd)",
    key: hex("aa".repeat(20)),
    data: hex("dd".repeat(50)),
    mac: "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe",
  },
  {
    name: "case 6 (131-byte key, hashed first)",
    key: hex("aa".repeat(131)),
    data: Buffer.from("Test Using Larger Than Block-Size Key - Hash Key First"),
    mac: "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
  },
];

for (const vector of RFC_4231) {
  Deno.test(`hmacSha256: RFC 4231 ${vector.name}`, () => {
    assert.equal(hmacSha256(vector.key, [vector.data]).toString("hex"), vector.mac);
    // Twice: the second one starts from the kept key state.
    assert.equal(hmacSha256(vector.key, [vector.data]).toString("hex"), vector.mac);
  });
}

Deno.test("hmacSha256: the same bytes as createHmac for any key, message and split", () => {
  fc.assert(
    fc.property(
      fc.oneof(fc.string({ unit: "grapheme", maxLength: 80 }), fc.uint8Array({ maxLength: 150 })),
      fc.array(fc.oneof(fc.string({ unit: "grapheme" }), fc.uint8Array()), { maxLength: 4 }),
      (key, parts) => {
        const expected = createHmac("sha256", key);
        for (const part of parts) expected.update(part);
        assert.deepEqual(hmacSha256(key, parts), expected.digest());
      },
    ),
    { numRuns: 500 },
  );
});

Deno.test("hmacSha256: a string key and its UTF-8 bytes are the same key", () => {
  const key = "sécret-🔑";
  assert.deepEqual(
    hmacSha256(key, ["body"]),
    hmacSha256(new TextEncoder().encode(key), ["body"]),
  );
});

Deno.test("hmacSha256: stays right past the number of keys it keeps", () => {
  // 600 keys: the cache starts over at least twice; each key's result must still be its own.
  for (let round = 0; round < 2; round++) {
    for (let i = 0; i < 600; i++) {
      const key = `route-secret-${i}`;
      assert.equal(
        hmacSha256(key, [`event ${i}`]).toString("hex"),
        createHmac("sha256", key).update(`event ${i}`).digest("hex"),
        `key ${i}, round ${round}`,
      );
    }
  }
});

Deno.test("hmacSha256: a kept key state is not changed by hashing a message", () => {
  const first = hmacSha256("k", ["a"]);
  hmacSha256("k", ["something else entirely"]);
  assert.deepEqual(hmacSha256("k", ["a"]), first);
});
