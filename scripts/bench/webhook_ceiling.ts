/**
 * The ceiling of the webhook benchmark: a bare `Deno.serve` handler that reads the body, checks
 * its `X-Hub-Signature-256` (HMAC-SHA256, constant-time comparison) and answers 202, or 401.
 * Nothing else: no routing, parsing, deduplication or storage. Prints `listening <port>`.
 * The secret comes from `BENCH_SECRET`, so it is not on the command line.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { createHmac, timingSafeEqual } from "node:crypto";

const secret = Deno.env.get("BENCH_SECRET");
if (!secret) throw new Error("set BENCH_SECRET to the secret requests are signed with");

Deno.serve({
  hostname: "127.0.0.1",
  port: 0,
  onListen: ({ port }) => console.log(`listening ${port}`),
}, async (request) => {
  const body = new Uint8Array(await request.arrayBuffer());
  const given = Buffer.from(request.headers.get("x-hub-signature-256") ?? "");
  const expected = Buffer.from(
    `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`,
  );
  const valid = given.length === expected.length && timingSafeEqual(given, expected);
  return new Response(null, { status: valid ? 202 : 401 });
});
