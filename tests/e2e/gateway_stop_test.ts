/**
 * A request whose body is still arriving when the real gateway is told to stop: its sender is
 * told to retry (503 with Retry-After), not that the request was bad. Senders that keep their
 * connections open after their answer do not keep the gateway from stopping.
 */
import assert from "node:assert/strict";
import { tempHome } from "../cli/_helpers.ts";
import { freePort } from "../cli/_mcp_helpers.ts";
import {
  signGithub,
  startGateway,
  subscribe,
  waitUntil,
  within,
  writeGatewayConfig,
} from "./_gateway.ts";

const SECRET = "a-route-secret-of-32-characters!";

Deno.test("gateway: a body still arriving when SIGTERM comes is answered 503 with Retry-After", async () => {
  await using h = await tempHome();
  const port = freePort();
  writeGatewayConfig(h.home, {
    webhook: { routes: { ci: { secret: SECRET, prompt: "x", deliver: "log" } } },
  });
  const env = { WEBHOOK_PORT: String(port) };
  const gateway = await startGateway(h.home, env);
  // A subscription made now is loaded by the next request, before its body is read, and logged:
  // that line says the request below is being served (and not still in the kernel's queue).
  await subscribe(h.home, env, "other", []);
  const body = JSON.stringify({ action: "opened", padding: "x".repeat(2_000) });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  let stopping = false;
  try {
    const head = [
      "POST /webhooks/ci HTTP/1.1",
      "Host: 127.0.0.1",
      "Content-Type: application/json",
      `Content-Length: ${body.length}`,
      `X-Hub-Signature-256: ${signGithub(SECRET, body)}`,
      "X-GitHub-Event: issues",
      "X-GitHub-Delivery: stop-1",
      "",
      "",
    ].join("\r\n");
    const encoder = new TextEncoder();
    await conn.write(encoder.encode(head + body.slice(0, 500)));
    // The reload's log line lists the names (JSON-escaped in the log file's message).
    const reloaded = /changed: subscriptions served: 1; added: \\"other\\"; removed: \(none\)/;
    await waitUntil(() => reloaded.test(gateway.log()), "the request served");
    gateway.signal("SIGTERM");
    stopping = true;
    await waitUntil(() => gateway.stdout().includes("Stopping"), "the gateway to say it stops");
    await conn.write(encoder.encode(body.slice(500))).catch(() => {});
    let answer = "";
    const buffer = new Uint8Array(4096);
    while (!answer.includes("\r\n\r\n") || !answer.includes("}")) {
      const n = await conn.read(buffer);
      if (n === null) break;
      answer += new TextDecoder().decode(buffer.subarray(0, n));
    }
    assert.match(answer, /^HTTP\/1\.1 503 /, answer);
    assert.match(answer, /\r\nretry-after: 10\r\n/i, answer);
    assert.match(answer, /the gateway is stopping; send the request again later/);
  } finally {
    conn.close();
    // Failed before SIGTERM was sent: the gateway is ended rather than waited for.
    const exit = stopping ? await gateway.exited() : await gateway.kill("SIGKILL");
    if (stopping) assert.equal(exit.code, 0, exit.stderr);
  }
});

Deno.test("gateway: SIGTERM ends the gateway within seconds while refused senders keep their connections open", async () => {
  await using h = await tempHome();
  const port = freePort();
  writeGatewayConfig(h.home, {
    webhook: {
      max_body_bytes: 1_000,
      body_timeout_seconds: 0.5,
      routes: { ci: { secret: SECRET, prompt: "x", deliver: "log" } },
    },
  });
  const gateway = await startGateway(h.home, { WEBHOOK_PORT: String(port) });
  const head =
    "POST /webhooks/ci HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n";
  // Deno's HTTP server reads the rest of a body the handler did not read before it closes the
  // connection, with no deadline: these senders, answered, never send it and never close.
  const refused: [string, RegExp][] = [
    [`${head}Content-Length: 2000000\r\n\r\n{"a":`, /^HTTP\/1\.1 413 /],
    [`${head}Transfer-Encoding: chunked\r\n\r\n5\r\n{"a":\r\n`, /^HTTP\/1\.1 408 /],
  ];
  const connections: Deno.TcpConn[] = [];
  let stopping = false;
  try {
    for (const [request, status] of refused) {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      connections.push(conn);
      await conn.write(new TextEncoder().encode(request));
      const buffer = new Uint8Array(4096);
      const read = await within(conn.read(buffer), "the refusal");
      assert.match(new TextDecoder().decode(buffer.subarray(0, read ?? 0)), status);
    }
    gateway.signal("SIGTERM");
    stopping = true;
    const exit = await within(gateway.exited(), "the gateway to stop", 8_000);
    assert.equal(exit.code, 0, exit.stderr);
    assert.match(exit.stdout, /Gateway stopped\./);
    assert.match(
      gateway.log(),
      /stopped without waiting for connections still open after their answer/,
    );
  } finally {
    for (const conn of connections) conn.close();
    if (!stopping) await gateway.kill("SIGKILL");
    else await gateway.exited();
  }
});
