/**
 * Connections nobody closes: the real gateway under a low open-file limit, filled with idle TCP
 * connections until accepting fails, keeps running, logs why, and listens again once they close.
 */
import assert from "node:assert/strict";
import { tempHome } from "../cli/_helpers.ts";
import { freePort } from "../cli/_mcp_helpers.ts";
import { startGateway, waitUntil, writeGatewayConfig } from "./_gateway.ts";

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
    // More connections than the gateway has descriptors: once accept() fails, the kernel refuses
    // the rest (the failed listener is closed).
    for (let i = 0; i < FILE_LIMIT * 2; i++) {
      try {
        connections.push(await Deno.connect({ hostname: "127.0.0.1", port }));
      } catch {
        break;
      }
    }
    await waitUntil(
      () => gateway.log().includes("the listener stopped accepting connections"),
      "the listener failure in gateway.log",
    );
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
