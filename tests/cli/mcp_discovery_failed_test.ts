/**
 * A server that connects but whose tool discovery (`tools/list`) then fails: the connection's
 * warnings (here the SSE fallback notice) are still said, in text and in --json, as when
 * discovery works, and not said again when a retry then connects.
 */
import assert from "node:assert/strict";
import { ProtocolError, Server } from "@modelcontextprotocol/server";
import { SseEndpoint } from "../fixtures/mcp/_sse.ts";
import { type McpEvent, McpManager } from "../../src/mcp/manager.ts";
import { serverEntry } from "../mcp/_helpers.ts";
import { cli, cliJson, tempHome } from "./_helpers.ts";
import { writeConfig, yamlValue } from "./_mcp_helpers.ts";

/**
 * An SSE-only server at `/mcp` (a Streamable HTTP POST gets 405, so the client falls back to
 * SSE) whose `tools/list` answers a JSON-RPC error, the first `failures` times (default: always)
 * and then lists the tool `echo`.
 */
function sseServerFailingDiscovery(failures = Infinity) {
  let listed = 0;
  const sse = new SseEndpoint(
    async (transport) => {
      const server = new Server({ name: "broken-list", version: "1.0.0" }, {
        capabilities: { tools: {} },
      });
      server.setRequestHandler("tools/list", () => {
        if (listed++ < failures) throw new ProtocolError(-32603, "the tool index is down");
        return { tools: [{ name: "echo", inputSchema: { type: "object" } }] };
      });
      await server.connect(transport);
    },
    "/mcp",
    "/messages",
  );
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const path = new URL(request.url).pathname;
    if (path === "/mcp" && request.method !== "GET") {
      return new Response("Method Not Allowed", { status: 405, headers: { allow: "GET" } });
    }
    return await sse.handle(request) ?? new Response("Not Found", { status: 404 });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/mcp`,
    [Symbol.asyncDispose]: async () => {
      await sse.closeAll();
      await server.shutdown();
    },
  };
}

Deno.test("mcp test, list and tools: when tools/list fails after an SSE fallback, the fallback's warning is still said", async () => {
  await using server = sseServerFailingDiscovery();
  await using home = await tempHome();
  const config = writeConfig(
    home.home,
    [
      "mcp_servers:",
      "  remote:",
      `    url: ${yamlValue(server.url)}`,
      "    connect_timeout: 10",
      "",
    ]
      .join("\n"),
  );
  const fallback = "MCP server 'remote': Streamable HTTP was refused (HTTP 405); connected over " +
    `SSE instead. Set mcp_servers.remote.transport to sse in ${config} to skip the failed attempt.`;
  const error = "MCP server 'remote': tool discovery failed: the tool index is down";

  const test = await cli(home.home, ["mcp", "test", "remote"]);
  assert.equal(test.code, 1, test.stderr);
  assert.equal(test.stderr, `warning: ${fallback}\n${error}\n`);

  const testJson = await cliJson(home.home, ["mcp", "test", "remote", "--json"], 1);
  assert.equal(testJson.error, error);
  assert.deepEqual(testJson.warnings, [fallback]);

  const list = await cli(home.home, ["mcp", "list"]);
  assert.equal(list.stderr, `warning: ${fallback}\n`);
  const listJson = await cliJson(home.home, ["mcp", "list", "--json"]);
  assert.deepEqual(listJson.warnings, [fallback]);
  assert.deepEqual(listJson.servers[0].warnings, [fallback]);

  const tools = await cli(home.home, ["mcp", "tools"]);
  assert.equal(tools.stderr, `warning: ${fallback}\nerror: ${error}\n`);
  const toolsJson = await cliJson(home.home, ["mcp", "tools", "--json"]);
  assert.deepEqual(toolsJson.warnings, [fallback]);
});

Deno.test("a retry that connects after a failed discovery does not say the SSE fallback's warning again", async () => {
  await using server = sseServerFailingDiscovery(1);
  const events: McpEvent[] = [];
  let connected!: () => void;
  const reconnected = new Promise<void>((resolve) => connected = resolve);
  const manager = new McpManager({
    random: () => 0, // the first retry after 0.8 s
    onEvent: (event) => {
      events.push(event);
      if (event.type === "connected") connected();
    },
  });
  try {
    await manager.start([serverEntry("remote", { url: server.url, connect_timeout: 10 })]);
    assert.deepEqual(events.map((event) => event.type), ["warning", "failed"]);
    await reconnected;
    assert.equal(manager.servers()[0].status, "connected");
    assert.deepEqual(manager.tools().map((tool) => tool.name), ["mcp__remote__echo"]);
    // Before: warning, failed, warning (the same fallback notice again), connected.
    assert.deepEqual(events.map((event) => event.type), ["warning", "failed", "connected"]);
    assert.match(
      (events[0] as { message: string }).message,
      /^MCP server 'remote': Streamable HTTP was refused \(HTTP 405\); connected over SSE instead/,
    );
    assert.deepEqual(manager.servers()[0].warnings, [(events[0] as { message: string }).message]);
  } finally {
    await manager.shutdown();
  }
});
