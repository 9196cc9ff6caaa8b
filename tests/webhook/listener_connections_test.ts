/**
 * What anyone who can reach the port can do with connections rather than with a request's
 * content, against the listener served over real sockets: slow or endless headers, heads over
 * Deno's limits, framing meant to smuggle a second request, pipelining, HTTP/1.0, `Expect:
 * 100-continue`, and a client that never reads its answers. Honest senders are answered
 * throughout. (Deno's HTTP/1.1 server, not this project, parses the framing: the limits named here
 * are its own, 64 KiB of head and 128 headers, and it has no header or idle timeout.)
 */
import assert from "node:assert/strict";
import { githubSignature } from "../../src/webhook/signatures.ts";
import { rawRequest, within } from "../e2e/_gateway.ts";
import { harness, route, SECRET } from "./_listener_harness.ts";

const encoder = new TextEncoder();

let honestEvents = 0;

/** A signed POST to `github` with its own delivery id, as an honest sender writes it. */
function signedPost(id = `honest-${++honestEvents}`, extraHeaders = ""): string {
  const body = JSON.stringify({ issue: { title: id } });
  return `POST /webhooks/github HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n` +
    `X-GitHub-Delivery: ${id}\r\nX-Hub-Signature-256: ${githubSignature(SECRET, body)}\r\n` +
    `${extraHeaders}Content-Length: ${body.length}\r\n\r\n${body}`;
}

/** Sends an honest event on a new connection: it must be accepted (202) within 2 s. */
async function assertAnswered(port: number): Promise<void> {
  const answer = await within(rawRequest(port, signedPost()), "an honest sender's 202", 2_000);
  assert.match(answer, /^HTTP\/1\.1 202 /, answer);
}

/**
 * Everything the server sends on a new connection for `request`, until it closes it. A server
 * that closes before it read the whole request may reset the connection: the write then fails,
 * and what it answered may be lost.
 */
async function untilClosed(port: number, request: string): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    const bytes = encoder.encode(request);
    try {
      for (let sent = 0; sent < bytes.length;) sent += await conn.write(bytes.subarray(sent));
    } catch (error) {
      if (
        !(error instanceof Deno.errors.ConnectionReset || error instanceof Deno.errors.BrokenPipe)
      ) {
        throw error;
      }
    }
    const buffer = new Uint8Array(65_536);
    let text = "";
    while (true) {
      const read = await within(conn.read(buffer), "the server to close the connection").catch(
        (error) => error instanceof Deno.errors.ConnectionReset ? null : Promise.reject(error),
      );
      if (read === null) return text;
      text += new TextDecoder().decode(buffer.subarray(0, read));
    }
  } finally {
    conn.close();
  }
}

/** The status lines in `text`, in order. */
function statuses(text: string): string[] {
  return [...text.matchAll(/HTTP\/1\.[01] (\d{3}) /g)].map((match) => match[1]);
}

Deno.test("over HTTP: hundreds of connections idle or trickling their headers; honest senders are answered at once", async () => {
  await using h = await harness({ routes: { github: route() } });
  const port = h.serve();
  const held: Deno.TcpConn[] = [];
  const trickle: Deno.TcpConn[] = [];
  try {
    for (let i = 0; i < 300; i++) {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      held.push(conn);
      if (i % 3 === 0) continue; // connected, nothing sent
      await conn.write(encoder.encode("POST /webhooks/github HTTP/1.1\r\nHost: h\r\nX-Slow: "));
      if (i % 3 === 1) trickle.push(conn); // a header byte at a time, never ending
      // else: an unfinished head, then silence
    }
    // A byte to each trickling head every 50 ms; honest senders come before and after the
    // third round of them.
    let thirdRound!: () => void;
    const trickled = new Promise<void>((resolve) => thirdRound = resolve);
    let rounds = 0;
    const timer = setInterval(() => {
      for (const conn of trickle) conn.write(encoder.encode("a")).catch(() => {});
      if (++rounds === 3) thirdRound();
    }, 50);
    try {
      for (let i = 0; i < 5; i++) await assertAnswered(port);
      await trickled;
      await assertAnswered(port);
    } finally {
      clearInterval(timer);
    }
    assert.equal(h.accepted, 6);
  } finally {
    for (const conn of held) conn.close();
  }
});

Deno.test("over HTTP: a head over 64 KiB or 128 headers → 400 and the connection closed, before it is all read; the next sender is answered", async () => {
  await using h = await harness({ routes: { github: route() } });
  const port = h.serve();
  const tooLarge = [
    `POST /webhooks/github HTTP/1.1\r\nHost: h\r\nX-Big: ${"a".repeat(1 << 20)}\r\n\r\n`,
    `POST /webhooks/github HTTP/1.1\r\nHost: h\r\n${
      Array.from({ length: 200 }, (_, i) => `X-H${i}: v\r\n`).join("")
    }\r\n`,
  ];
  // The 200 headers are read whole: the answer is sure to arrive. Of the 1 MiB head, the server
  // reads 64 KiB and closes: the rest unread, the kernel may reset the connection, and the 400
  // sent before may be lost with it.
  const [big, many] = await Promise.all(tooLarge.map((request) => untilClosed(port, request)));
  assert.match(many, /^HTTP\/1\.1 400 Bad Request\r\n/, many);
  assert.deepEqual(statuses(many), ["400"]);
  assert.ok(big === "" || /^HTTP\/1\.1 400 Bad Request\r\n/.test(big), big.slice(0, 200));
  assert.ok(statuses(big).length <= 1);
  // Just under the limits: served, and refused for the missing signature only.
  const large = await rawRequest(
    port,
    `POST /webhooks/github HTTP/1.1\r\nHost: h\r\nX-Big: ${"a".repeat(60_000)}\r\n${
      Array.from({ length: 100 }, (_, i) => `X-H${i}: v\r\n`).join("")
    }Content-Length: 2\r\n\r\n{}`,
  );
  assert.match(large, /^HTTP\/1\.1 401 /);
  await assertAnswered(port);
  assert.equal(h.logs.filter((line) => line.startsWith("error")).length, 0, h.logs.join("\n"));
});

Deno.test("over HTTP: framing that could smuggle a second request → 400 and the connection closed; the request behind is never served", async () => {
  await using h = await harness({ routes: { github: route() } });
  const port = h.serve();
  // Were the framing read another way, this would be a second, signed request on the connection.
  const smuggled = signedPost("smuggled");
  const head = "POST /webhooks/github HTTP/1.1\r\nHost: h\r\n";
  const shapes: [string, string][] = [
    ["Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n"],
    ["Transfer-Encoding: chunked, identity\r\n", "0\r\n\r\n"],
    ["Transfer-Encoding: identity, chunked\r\n", "0\r\n\r\n"],
    ["Transfer-Encoding: xchunked\r\nContent-Length: 5\r\n", "0\r\n\r\n"],
    ["Transfer-Encoding : chunked\r\n", "0\r\n\r\n"],
    ["Content-Length: +2\r\n", "{}"],
    ["Content-Length: 2, 2\r\n", "{}"],
    ["Content-Length : 2\r\n", "{}"],
    ["Content-Length: -1\r\n", "{}"],
    ["Content-Length: 99999999999999999999999\r\n", "{}"],
  ];
  for (const [framing, body] of shapes) {
    const request = `${head}${framing}\r\n${body}${smuggled}`;
    const answer = await untilClosed(port, request);
    assert.deepEqual(statuses(answer), ["400"], `${JSON.stringify(framing)}: ${answer}`);
  }
  // Transfer-Encoding is HTTP/1.1's: an HTTP/1.0 request with it is refused, not read as chunked.
  const old = await untilClosed(
    port,
    `POST /webhooks/github HTTP/1.0\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n` +
      smuggled,
  );
  assert.deepEqual(statuses(old), ["400"], old);
  // A chunk size past 64 bits: the connection is closed without an answer.
  const overflow = await untilClosed(
    port,
    `${head}Transfer-Encoding: chunked\r\n\r\n${"f".repeat(20)}\r\n{}\r\n0\r\n\r\n${smuggled}`,
  );
  assert.deepEqual(statuses(overflow), [], overflow);
  assert.equal(h.accepted, 0);
  await assertAnswered(port);
});

Deno.test("over HTTP: many requests pipelined in one write are answered in order, each once", async () => {
  await using h = await harness({ routes: { github: route() } });
  const port = h.serve();
  const ids = Array.from({ length: 20 }, (_, i) => `pipelined-${i}`);
  const answer = await untilClosed(
    port,
    ids.map((id) => signedPost(id)).join("") + signedPost(ids[0], "Connection: close\r\n"),
  );
  assert.deepEqual(statuses(answer), [...ids.map(() => "202"), "200"]);
  const answered = [...answer.matchAll(/"delivery_id":"([^"]+)"/g)].map((match) => match[1]);
  assert.deepEqual(answered, [...ids, ids[0]]);
  assert.match(answer, /\{"status":"duplicate","delivery_id":"pipelined-0"\}$/);
  assert.equal(h.accepted, 20);
});

Deno.test("over HTTP: an HTTP/1.0 request is answered in HTTP/1.0 and its connection closed", async () => {
  await using h = await harness({ routes: { github: route() } });
  const port = h.serve();
  const request = signedPost().replace(" HTTP/1.1\r\n", " HTTP/1.0\r\n");
  const answer = await untilClosed(port, request);
  assert.match(answer, /^HTTP\/1\.0 202 Accepted\r\n/, answer);
  assert.deepEqual(statuses(answer), ["202"]);
});

Deno.test("over HTTP: Expect: 100-continue over the cap → 413 without the body being sent; under it, the body is read after 100 Continue", async () => {
  await using h = await harness({ routes: { github: route() }, maxBodyBytes: 100 });
  const port = h.serve();
  // Deno answers 100 Continue before the handler sees the request; the 413 follows at once, and
  // the connection is closed once the sender has given up its body (here: hangs up).
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(
      encoder.encode(
        "POST /webhooks/github HTTP/1.1\r\nHost: h\r\nContent-Length: 1000000\r\n" +
          "Expect: 100-continue\r\n\r\n",
      ),
    );
    const buffer = new Uint8Array(4096);
    let text = "";
    while (!text.endsWith("}")) {
      const read = await within(conn.read(buffer), "the 413");
      if (read === null) break;
      text += new TextDecoder().decode(buffer.subarray(0, read));
    }
    assert.match(text, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 413 /, text);
    assert.match(text, /\r\nconnection: close\r\n/i);
    assert.match(text, /\{"error":"body larger than 100 bytes"\}$/);
  } finally {
    conn.close();
  }
  const expecting = await rawRequest(port, signedPost(undefined, "Expect: 100-continue\r\n"));
  assert.match(expecting, /^HTTP\/1\.1 202 /, expecting);
});

Deno.test("over HTTP: a client that pipelines requests and never reads the answers is not read from without end; others are answered", async () => {
  await using h = await harness({ routes: { github: route() } });
  const port = h.serve();
  const one = encoder.encode("GET /health HTTP/1.1\r\nHost: h\r\n\r\n");
  const chunk = new Uint8Array(one.length * 30_000); // about 1 MB of requests
  for (let i = 0; i < 30_000; i++) chunk.set(one, i * one.length);
  const LIMIT = 64 * 1024 * 1024;
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    // Once the answers fill the socket buffers, the server stops reading: writes stall, well
    // before 64 MB, rather than the requests (or the answers) piling up in its memory.
    let written = 0;
    while (written < LIMIT) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const stalled = new Promise<"stalled">((resolve) => {
        timer = setTimeout(() => resolve("stalled"), 1_000);
      });
      const wrote = await Promise.race([conn.write(chunk), stalled]);
      clearTimeout(timer);
      if (wrote === "stalled") break;
      written += wrote;
    }
    assert.ok(written < LIMIT, `the server kept reading: ${written} bytes`);
    await assertAnswered(port);
  } finally {
    conn.close();
  }
});

Deno.test("over HTTP: a body over 64 KiB (read chunk by chunk) is accepted whole, 400 when its sender hangs up, 408 when it stalls", async () => {
  await using h = await harness({
    routes: { github: route() },
    maxBodyBytes: 1024 * 1024,
    bodyTimeoutSeconds: 0.5,
  });
  const port = h.serve();
  const body = JSON.stringify({ issue: { title: "large" }, padding: "x".repeat(200_000) });
  const head = (length: number) =>
    `POST /webhooks/github HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n` +
    `X-Hub-Signature-256: ${githubSignature(SECRET, body)}\r\nContent-Length: ${length}\r\n\r\n`;
  const whole = await rawRequest(port, head(body.length) + body);
  assert.match(whole, /^HTTP\/1\.1 202 /, whole);
  const cut = await rawRequest(port, head(body.length + 10) + body, { closeWrite: true });
  assert.match(cut, /^HTTP\/1\.1 400 /, cut);
  assert.match(cut, /"the request body could not be read to its end"/);
  const stalled = await rawRequest(port, head(body.length) + body.slice(0, 100_000));
  assert.match(stalled, /^HTTP\/1\.1 408 /, stalled);
  assert.match(stalled, /check that Content-Length is the body's size in bytes/);
  assert.equal(h.accepted, 1);
});
