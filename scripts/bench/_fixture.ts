/**
 * The stdio MCP fixture server the benchmarks talk to, as parsed `mcp_servers` entries.
 *
 * @module
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ConfigSource } from "../../src/home/config.ts";
import { type McpServerConfig, parseMcpServers } from "../../src/mcp/config.ts";

/** The repository root. */
export const ROOT: string = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** `deno` arguments that run the fixture server over stdio with `tools`. */
export function fixtureArgs(tools: string): string[] {
  return [
    "run",
    "-A",
    "--quiet",
    "--config",
    join(ROOT, "deno.json"),
    join(ROOT, "tests", "fixtures", "mcp", "server.ts"),
    "--transport",
    "stdio",
    "--tools",
    tools,
  ];
}

/** Parses `mcp_servers` entries (`name` → command, args, extra YAML lines) as a user would. */
export function serversFrom(
  entries: { name: string; command: string; args: string[]; extra?: string }[],
): McpServerConfig[] {
  const yaml = entries.map((entry) =>
    `  ${entry.name}:\n    command: ${JSON.stringify(entry.command)}\n` +
    `    args: ${JSON.stringify(entry.args)}\n${entry.extra ?? ""}`
  ).join("");
  return parseMcpServers(ConfigSource.parse("bench.yaml", `mcp_servers:\n${yaml}`), {
    lookup: () => undefined,
    userHome: "/",
    workspaceFolder: ROOT,
    pathSeparator: "/",
  }).servers;
}
