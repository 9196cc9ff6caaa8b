/**
 * `buildToolset`: every tool left out or shadowed within one server is named in a warning, and
 * a tool without a name is never registered.
 */
import assert from "node:assert/strict";
import type { Tool } from "@modelcontextprotocol/client";
import { buildToolset } from "../../src/mcp/registry.ts";

const tools = (...names: string[]): Tool[] =>
  names.map((name) => ({ name, inputSchema: { type: "object" } }));
const config = { name: "srv", tools: { resources: true, prompts: true } } as never;

Deno.test("buildToolset: an empty name is refused with a warning", () => {
  const set = buildToolset(config, tools("", "ok"), {});
  assert.deepEqual(set.tools.map((tool) => tool.name), ["mcp__srv__ok"]);
  assert.deepEqual(set.warnings, [
    "MCP server 'srv': the server lists a tool with an empty name; it is not registered",
  ]);
});

Deno.test("buildToolset: a tool listed twice is registered once, with a warning", () => {
  const set = buildToolset(config, tools("dup", "dup", "dup"), {});
  assert.deepEqual(set.tools.map((tool) => tool.name), ["mcp__srv__dup"]);
  assert.deepEqual(set.warnings, [
    "MCP server 'srv': the server lists tool 'dup' 3 times; only the first is registered",
  ]);
  assert.deepEqual(set.dropped, []);
});

Deno.test("buildToolset: a native list_resources shadows the utility tool, with a warning", () => {
  const set = buildToolset(config, tools("list_resources"), { resources: {} });
  assert.deepEqual(
    set.tools.map((tool) => [tool.name, tool.kind]),
    [["mcp__srv__list_resources", "tool"], ["mcp__srv__read_resource", "utility"]],
  );
  assert.deepEqual(set.warnings, [
    "MCP server 'srv': its own tool 'list_resources' is registered as mcp__srv__list_resources, " +
    "so the utility tool list_resources is not registered",
  ]);
});

Deno.test("buildToolset: names that sanitise alike keep the first and say which was dropped", () => {
  const set = buildToolset(config, tools("a-b", "a.b"), {});
  assert.deepEqual(set.tools.map((tool) => tool.originalName), ["a-b"]);
  assert.equal(set.dropped.length, 1);
  assert.equal(set.dropped[0].originalName, "a.b");
  assert.deepEqual(set.warnings, [set.dropped[0].reason]);
  assert.match(set.dropped[0].reason, /tool 'a\.b' is not registered because tool 'a-b' already/);
});

Deno.test("buildToolset: tools left out by include/exclude are named with the key; patterns matching nothing are warned about", () => {
  const filtered = (tools: Record<string, unknown>) =>
    ({ name: "srv", tools: { resources: true, prompts: true, ...tools } }) as never;
  const included = buildToolset(
    filtered({ include: ["ECHO", "get-*"] }),
    tools("echo", "get-env", "add"),
    {},
  );
  assert.deepEqual(included.tools.map((tool) => tool.originalName), ["get-env"]);
  assert.deepEqual(included.dropped, [
    {
      originalName: "echo",
      reason: "MCP server 'srv': tool 'echo' is left out by mcp_servers.srv.tools.include",
    },
    {
      originalName: "add",
      reason: "MCP server 'srv': tool 'add' is left out by mcp_servers.srv.tools.include",
    },
  ]);
  assert.deepEqual(included.warnings, [
    "MCP server 'srv': mcp_servers.srv.tools.include entry 'ECHO' matches none of the " +
    "server's tools (names are case-sensitive)",
  ]);

  const excluded = buildToolset(
    filtered({ exclude: ["echo", "delete_all"] }),
    tools("echo", "add"),
    {},
  );
  assert.deepEqual(excluded.tools.map((tool) => tool.originalName), ["add"]);
  assert.deepEqual(excluded.dropped.map((tool) => tool.reason), [
    "MCP server 'srv': tool 'echo' is left out by mcp_servers.srv.tools.exclude",
  ]);
  assert.deepEqual(excluded.warnings, [
    "MCP server 'srv': mcp_servers.srv.tools.exclude entry 'delete_all' matches none of the " +
    "server's tools (names are case-sensitive)",
  ]);
});

Deno.test("buildToolset: a tool that runs only as a task is not registered, with a warning", () => {
  const listed: Tool[] = [
    { name: "research", inputSchema: { type: "object" }, execution: { taskSupport: "required" } },
    { name: "maybe", inputSchema: { type: "object" }, execution: { taskSupport: "optional" } },
    { name: "never", inputSchema: { type: "object" }, execution: { taskSupport: "forbidden" } },
  ];
  const reason = "MCP server 'srv': tool 'research' is not registered because it runs only as a " +
    "task (execution.taskSupport: required), and this client does not run MCP tasks";
  const set = buildToolset(config, listed, {});
  assert.deepEqual(set.tools.map((tool) => tool.name), ["mcp__srv__maybe", "mcp__srv__never"]);
  assert.deepEqual(set.warnings, [reason]);
  assert.deepEqual(set.dropped, [{ originalName: "research", reason }]);
  // Left out by tools.exclude: nothing to say.
  const excluded = buildToolset(
    { name: "srv", tools: { exclude: ["research"], resources: true, prompts: true } } as never,
    listed,
    {},
  );
  assert.deepEqual(excluded.warnings, []);
});
