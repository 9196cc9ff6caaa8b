/** Shared helpers of the MCP tests: config entries from YAML, the way users write them. */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { ConfigSource } from "../../src/home/config.ts";
import {
  type McpServerConfig,
  parseMcpServers,
  type SamplingSettings,
} from "../../src/mcp/config.ts";
import { connectServer, type McpConnection } from "../../src/mcp/connect.ts";
import { McpServerError } from "../../src/mcp/errors.ts";

const CONFORMANCE_RUNNER = fileURLToPath(
  new URL("../../scripts/conformance/run.ts", import.meta.url),
);

/** The `sampling` settings of an entry that sets none (the spec's defaults, written out). */
export const SAMPLING_DEFAULTS: SamplingSettings = {
  enabled: true,
  maxTokensCap: 4096,
  timeoutSeconds: 30,
  maxRpm: 10,
  maxToolRounds: 5,
  allowedModels: [],
};

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

/**
 * Parses a stdio server `s` (`command: npx`) with the lines of `body` under it; issues are
 * returned, not thrown.
 */
export function parseServerS(body: string[]) {
  const text = ["mcp_servers:", "  s:", "    command: npx", ...body.map((l) => `    ${l}`)]
    .join("\n");
  return parseMcpServers(ConfigSource.parse("/h/config.yaml", text), {
    lookup: () => undefined,
    userHome: "/home/test",
    workspaceFolder: "/work",
    pathSeparator: "/",
  });
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

/** The client side of a test connection. */
export const CLIENT = {
  clientInfo: { name: "agent-test", version: "0" },
  processEnv: (name: string) => Deno.env.get(name),
};

/**
 * Connects `config` expecting failure; returns the error (an McpServerError naming the server)
 * and the time taken.
 */
export async function failure(
  config: McpServerConfig,
): Promise<{ error: McpServerError; ms: number }> {
  const started = performance.now();
  let connection: McpConnection | undefined;
  try {
    connection = await connectServer(config, CLIENT);
  } catch (error) {
    assert.ok(error instanceof McpServerError, `not an McpServerError: ${error}`);
    assert.equal(error.server, config.name);
    assert.ok(
      error.message.startsWith(`MCP server '${config.name}': `),
      `message does not name the server: ${error.message}`,
    );
    return { error, ms: performance.now() - started };
  }
  await connection.close();
  assert.fail(`MCP server '${config.name}' connected but should not have`);
}

/**
 * Runs the MCP conformance suite's client `scenarios` (scripts/conformance/run.ts) and asserts it
 * exits 0; returns its stdout, and `detail` (stdout and stderr) for failure messages.
 */
export async function runConformance(
  scenarios: string[],
): Promise<{ text: string; detail: string }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CONFORMANCE_RUNNER, ...scenarios],
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(output.stdout);
  const detail = `${text}\n${new TextDecoder().decode(output.stderr)}`;
  assert.equal(output.code, 0, detail);
  return { text, detail };
}
