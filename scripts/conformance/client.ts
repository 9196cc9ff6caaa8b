/**
 * The MCP conformance suite's client under test: `client.ts <server-url>`, scenario from
 * `MCP_CONFORMANCE_SCENARIO`. It goes through the project's own stack — a config entry parsed
 * like `config.yaml`, and the connection manager — never the SDK directly.
 */
import { ConfigSource } from "../../src/home/config.ts";
import { parseMcpServers } from "../../src/mcp/config.ts";
import { acceptDefaults, elicitationHandler } from "../../src/mcp/elicitation.ts";
import { McpManager } from "../../src/mcp/manager.ts";
import { AGENT_VERSION } from "../../src/version.ts";
import { runAuthScenario } from "./_auth.ts";

const url = Deno.args[0];
const scenario = Deno.env.get("MCP_CONFORMANCE_SCENARIO") ?? "";
if (!url) {
  console.error("usage: client.ts <server-url>  (MCP_CONFORMANCE_SCENARIO names the scenario)");
  Deno.exit(2);
}
// OAuth scenarios log in through the project's own provider (scripts/conformance/_auth.ts).
if (scenario.startsWith("auth/")) Deno.exit(await runAuthScenario(url, scenario));

const yaml = `mcp_servers:\n  conformance:\n    url: ${
  JSON.stringify(url)
}\n    connect_timeout: 20\n    timeout: 20\n`;
const { servers, issues } = parseMcpServers(ConfigSource.parse("conformance.yaml", yaml), {
  lookup: () => undefined,
  userHome: "/",
  workspaceFolder: Deno.cwd(),
  pathSeparator: "/",
});
for (const issue of issues) console.error(`${issue.severity}: ${issue.message}`);

const manager = new McpManager({
  reconnect: false,
  clientInfo: { name: "agent-conformance-client", version: AGENT_VERSION },
  // SEP-1034: nobody is at the keyboard, so forms are accepted with the schema's defaults.
  onElicitation: scenario === "elicitation-sep1034-client-defaults"
    ? elicitationHandler(
      acceptDefaults,
      (outcome) => console.log(`elicitation: ${outcome.action} (${outcome.reason})`),
    )
    : undefined,
});
let failed = false;
try {
  await manager.start(servers);
  const [server] = manager.servers();
  console.log(`connected: ${server.status} (${server.era ?? "-"} ${server.protocolVersion ?? ""})`);
  if (server.status !== "connected") throw new Error(server.error ?? "not connected");
  console.log(`tools: ${manager.tools().map((tool) => tool.originalName).join(", ")}`);
  const calls: Record<string, [string, Record<string, unknown>]> = {
    tools_call: ["add_numbers", { a: 5, b: 3 }],
    "sse-retry": ["test_reconnection", {}],
    "elicitation-sep1034-client-defaults": ["test_client_elicitation_defaults", {}],
  };
  const call = calls[scenario];
  if (call) {
    const tool = manager.tools().find((t) => t.originalName === call[0]);
    if (!tool) throw new Error(`the server offers no tool ${call[0]}`);
    const result = await manager.callTool(tool.name, call[1]);
    console.log(`result: ${JSON.stringify(result.content)}`);
  }
} catch (error) {
  failed = true;
  console.error(`conformance client: ${error instanceof Error ? error.message : error}`);
} finally {
  await manager.shutdown();
}
Deno.exit(failed ? 1 : 0);
