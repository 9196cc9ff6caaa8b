/**
 * A server that answers the MCP handshake (`initialize`) with a JSON-RPC error: the message says
 * the handshake was refused and quotes the server's words; the failure stays a protocol failure
 * (retried, not parked at once).
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { McpManager } from "../../src/mcp/manager.ts";
import { denoRunArgs } from "../fixtures/mcp/spawn.ts";
import { failure, serverEntry } from "./_helpers.ts";

const ODD_TOOLS = fileURLToPath(new URL("../fixtures/mcp/odd_tools_stdio.ts", import.meta.url));

function refusing(message: string, fields: Record<string, unknown> = {}) {
  return serverEntry("refusing", {
    command: Deno.execPath(),
    args: denoRunArgs(ODD_TOOLS, ["--initialize-error", message]),
    connect_timeout: 20,
    ...fields,
  });
}

Deno.test("a JSON-RPC error answering initialize: the handshake was refused, in the server's quoted words", async (t) => {
  await t.step("the message", async () => {
    const { error } = await failure(refusing('closed for "maintenance"\nuntil 10:00'));
    assert.equal(error.kind, "protocol");
    assert.equal(
      error.message,
      "MCP server 'refusing': the server refused the MCP handshake (initialize): " +
        '"closed for \\"maintenance\\"\\nuntil 10:00" (JSON-RPC error -32603)',
    );
  });

  await t.step("a long one is cut", async () => {
    const { error } = await failure(refusing("x".repeat(5000)));
    assert.equal(
      error.message,
      "MCP server 'refusing': the server refused the MCP handshake (initialize): " +
        `"${"x".repeat(199)}…" (JSON-RPC error -32603)`,
    );
  });

  await t.step(
    "words that read like a missing command are still the server's refusal",
    async () => {
      const { error } = await failure(refusing("Method not found", { protocol: "legacy" }));
      assert.equal(error.kind, "protocol");
      assert.match(error.message, /refused the MCP handshake \(initialize\): "Method not found"/);
    },
  );

  await t.step("retried like other protocol failures, not parked at once", async () => {
    const manager = new McpManager({ reconnect: true, random: () => 0.5 });
    try {
      await manager.start([refusing("closed")]);
      const [server] = manager.servers();
      assert.equal(server.status, "reconnecting");
      assert.match(server.error ?? "", /refused the MCP handshake \(initialize\): "closed"/);
    } finally {
      await manager.shutdown();
    }
  });
});
