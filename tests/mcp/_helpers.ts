/** Shared helpers of the MCP tests: config entries from YAML, the way users write them. */
import { ConfigSource } from "../../src/home/config.ts";
import { type McpServerConfig, parseMcpServers } from "../../src/mcp/config.ts";

/** Parses a `mcp_servers` YAML body (the part under `mcp_servers:`), failing on config errors. */
export function serversFromYaml(
  body: string,
  lookup: (name: string) => string | undefined = () => undefined,
) {
  const text = `mcp_servers:\n${body.replace(/^/gm, "  ")}\n`;
  const { servers, issues } = parseMcpServers(ConfigSource.parse("/test/config.yaml", text), {
    lookup,
    userHome: "/home/test",
    workspaceFolder: Deno.cwd(),
    pathSeparator: "/",
  });
  const errors = issues.filter((issue) => issue.severity === "error");
  if (errors.length > 0) throw new Error(`config errors: ${JSON.stringify(errors)}`);
  return servers;
}

/** One server entry built from fields (values are written as JSON, which YAML accepts). */
export function serverEntry(name: string, fields: Record<string, unknown>): McpServerConfig {
  const body = `${name}:\n` +
    Object.entries(fields).map(([key, value]) => `  ${key}: ${JSON.stringify(value)}`).join("\n");
  return serversFromYaml(body)[0];
}

/** Whether a process with `pid` is still running. */
export function isAlive(pid: number): boolean {
  try {
    Deno.kill(pid, "SIGCONT");
    return true;
  } catch {
    return false;
  }
}
