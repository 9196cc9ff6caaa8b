/**
 * Connections nobody closes: the real gateway under a low open-file limit warns about it at start
 * (unless bound to loopback), and, filled with idle TCP connections until accepting fails, keeps
 * running, logs why, closes the idle connections and listens again; a request whose body stops
 * arriving is answered 408 once its deadline passed.
 */
import assert from "node:assert/strict";
import { tempHome } from "../cli/_helpers.ts";
import { freePort } from "../cli/_mcp_helpers.ts";
import {
  ISSUES_PAYLOAD,
  post,
  rawRequest,
  signGithub,
  startGateway,
  subscribe,
  waitUntil,
  within,
  writeGatewayConfig,
} from "./_gateway.ts";

const FILE_LIMIT = 128;

async function health(port: number): Promise<number | undefined> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/health`, {
      signal: AbortSignal.timeout(2_000),
    });
    await response.body?.cancel();
    return response.status;
  } catch {
    return undefined;
  }
}

Deno.test("gateway: out of file descriptors from idle connections, it keeps running and listens again once they close", async () => {
  await using h = await tempHome();
  const port = freePort();
  writeGatewayConfig(h.home, {});
  const env = { WEBHOOK_PORT: String(port), WEBHOOK_SECRET: "a-global-secret-of-32-characters" };
  const gateway = await startGateway(h.home, env, { fileLimit: FILE_LIMIT });
  const connections: Deno.TcpConn[] = [];
  try {
    assert.equal(await health(port), 200);
    assert.match(
      gateway.log(),
      new RegExp(
        `the open-file limit of the gateway is ${FILE_LIMIT} .*from anyone who can reach port ` +
          `${port}, stop the listener .*Fix: raise the hard limit .*platforms\\.webhook\\.extra\\.host`,
      ),
    );
    await exhaustDescriptors(port, gateway.log, connections);
    assert.match(gateway.log(), /out of file descriptors .*Too many open files.*raise `ulimit -n`/);

    for (const connection of connections.splice(0)) connection.close();
    await waitUntil(async () => await health(port) === 200, "/health answering again", 20_000);
    await waitUntil(
      () => gateway.log().includes("gateway listening again"),
      "the 'listening again' line",
    );
  } finally {
    for (const connection of connections) connection.close();
    const exit = await gateway.stop();
    assert.equal(exit.code, 0, `the gateway exits cleanly:\n${exit.stdout}\n${exit.stderr}`);
    assert.doesNotMatch(exit.stderr, /Uncaught/);
  }
});

Deno.test("gateway: out of file descriptors, it closes the idle connections and listens again while their sender still holds them", async () => {
  await using h = await tempHome();
  const port = freePort();
  writeGatewayConfig(h.home, {});
  const env = { WEBHOOK_PORT: String(port), WEBHOOK_SECRET: "a-global-secret-of-32-characters" };
  await using gateway = await startGateway(h.home, env, { fileLimit: FILE_LIMIT });
  const connections: Deno.TcpConn[] = [];
  try {
    await exhaustDescriptors(port, gateway.log, connections);
    // None is closed here: the failed server's shutdown ends those without a request under way.
    await waitUntil(async () => await health(port) === 200, "/health answering again");
    const buffer = new Uint8Array(16);
    for (const connection of connections) {
      const read = await within(connection.read(buffer), "the gateway to close it").catch(
        (error) => error instanceof Deno.errors.ConnectionReset ? null : Promise.reject(error),
      );
      assert.equal(read, null);
    }
  } finally {
    for (const connection of connections) connection.close();
  }
});

Deno.test("gateway: bound to 127.0.0.1 (behind a proxy), a low open-file limit is not warned about", async () => {
  await using h = await tempHome();
  const port = freePort();
  writeGatewayConfig(h.home, { webhook: { host: "127.0.0.1" } });
  const env = { WEBHOOK_PORT: String(port), WEBHOOK_SECRET: "a-global-secret-of-32-characters" };
  await using gateway = await startGateway(h.home, env, { fileLimit: FILE_LIMIT });
  assert.equal(await health(port), 200);
  // The line is written after the listener answers; the warning would come right after it.
  await waitUntil(() => /gateway listening on/.test(gateway.log()), "the listening line");
  assert.doesNotMatch(gateway.log(), /open-file limit/);
});

Deno.test("gateway: a body that stops arriving is answered 408 after body_timeout_seconds, and the gateway keeps serving", async () => {
  await using h = await tempHome();
  const port = freePort();
  writeGatewayConfig(h.home, { webhook: { body_timeout_seconds: 0.5 } });
  const env = { WEBHOOK_PORT: String(port), WEBHOOK_SECRET: "a-global-secret-of-32-characters" };
  const { secret } = await subscribe(h.home, env, "ci", ["--deliver", "log"]);
  await using gateway = await startGateway(h.home, env);
  const head = (extra: string) =>
    `POST /webhooks/ci HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${extra}`;

  // A Content-Length larger than what is sent: the sender's bug to fix, so the answer names it.
  const short = await rawRequest(port, `${head("Content-Length: 500")}\r\n\r\n{"action":"opened"`);
  assert.match(short, /^HTTP\/1\.1 408 /);
  assert.match(
    short,
    /\{"error":"the request body did not arrive in full within 0\.5 s \(check that Content-Length is the body's size in bytes\)"\}$/,
  );
  // A chunked body whose last chunk never comes.
  const chunked = await rawRequest(
    port,
    `${head("Transfer-Encoding: chunked")}\r\n\r\n5\r\n{"a":\r\n`,
  );
  assert.match(chunked, /^HTTP\/1\.1 408 /);
  assert.match(chunked, /\{"error":"the request body did not arrive in full within 0\.5 s"\}$/);

  const body = JSON.stringify(ISSUES_PAYLOAD);
  const accepted = await post(gateway, "ci", body, {
    "x-github-event": "issues",
    "x-hub-signature-256": signGithub(secret, body),
  });
  assert.equal(accepted.status, 202, JSON.stringify(accepted.json));
  await waitUntil(() => gateway.log().includes("(408)"), "the 408 warning in gateway.log");
  // One line for both: refusals of one kind are logged once a minute per route.
  const late = gateway.log().split("\n").filter((line) => line.includes("(408)"));
  assert.equal(late.length, 1, gateway.log());
  assert.match(
    late[0],
    /refused an event to \\"ci\\": its body had not arrived in full after 0\.5 s/,
  );
});

/** The resident memory of process `pid`, in bytes (Linux). */
function residentBytes(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1]) * 1024;
}

Deno.test("gateway: senders that declare a large body and stop sending it get 408 and hold no buffer of its size", async () => {
  await using h = await tempHome();
  const port = freePort();
  const declared = 4 * 1024 * 1024;
  writeGatewayConfig(h.home, { webhook: { max_body_bytes: declared, body_timeout_seconds: 0.5 } });
  const env = { WEBHOOK_PORT: String(port), WEBHOOK_SECRET: "a-global-secret-of-32-characters" };
  await subscribe(h.home, env, "ci", ["--deliver", "log"]);
  await using gateway = await startGateway(h.home, env);
  assert.equal(await health(port), 200);
  const before = residentBytes(gateway.pid);
  const senders = 100;
  const connections: Deno.TcpConn[] = [];
  try {
    const head = new TextEncoder().encode(
      `POST /webhooks/ci HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${declared}\r\n\r\n{`,
    );
    for (let i = 0; i < senders; i++) {
      const connection = await Deno.connect({ hostname: "127.0.0.1", port });
      connections.push(connection);
      await connection.write(head);
    }
    // Every body's read has started, and passed its deadline.
    for (const connection of connections) {
      const buffer = new Uint8Array(1024);
      const read = await within(connection.read(buffer), "the 408");
      assert.match(new TextDecoder().decode(buffer.subarray(0, read ?? 0)), /^HTTP\/1\.1 408 /);
    }
    // Were a buffer of the declared size allocated for each, that would be 400 MiB.
    const grown = residentBytes(gateway.pid) - before;
    assert.ok(grown < senders * declared / 4, `the gateway grew by ${grown} bytes`);
  } finally {
    for (const connection of connections) connection.close();
  }
});

Deno.test("gateway: a Host header that is not host[:port] is answered 400; HTTP/2 and HTTP/1.1 without one are served", async () => {
  await using h = await tempHome();
  const port = freePort();
  writeGatewayConfig(h.home, {});
  const env = { WEBHOOK_PORT: String(port), WEBHOOK_SECRET: "a-global-secret-of-32-characters" };
  await using _gateway = await startGateway(h.home, env);
  const bad = await rawRequest(port, "GET /health HTTP/1.1\r\nHost: h/webhooks/x\r\n\r\n");
  assert.match(bad, /^HTTP\/1\.1 400 /);
  assert.match(bad, /"the Host header must be a host name or address with an optional port/);
  const hostless = await rawRequest(port, "GET /health HTTP/1.1\r\n\r\n");
  assert.match(hostless, /^HTTP\/1\.1 200 /);
  // HTTP/2 over plain TCP (prior knowledge): no Host header, `localhost:<port>` in the URL.
  using client = Deno.createHttpClient({ http1: false, http2: true });
  const h2 = await fetch(`http://localhost:${port}/health`, { client });
  assert.equal(h2.status, 200);
  assert.deepEqual(await h2.json(), { status: "ok", platform: "webhook" });
});

/**
 * Opens more idle connections to `port` than the gateway has descriptors (once accept() fails,
 * the kernel refuses the rest: the failed listener is closed), and waits for the failure in
 * gateway.log. The connections go into `connections`, for the caller to close.
 */
async function exhaustDescriptors(
  port: number,
  log: () => string,
  connections: Deno.TcpConn[],
): Promise<void> {
  for (let i = 0; i < FILE_LIMIT * 2; i++) {
    try {
      connections.push(await Deno.connect({ hostname: "127.0.0.1", port }));
    } catch {
      break;
    }
  }
  await waitUntil(
    () => log().includes("the listener stopped accepting connections"),
    "the listener failure in gateway.log",
  );
}
