/**
 * Shared helpers of the elicitation and sampling tests: config entries that run the
 * `client_requests.ts` fixture over stdio, a manager that proves its children are gone on
 * disposal, and readers for the fixture's answers.
 *
 * @module
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import type { CallToolResult } from "@modelcontextprotocol/client";
import type { McpServerConfig } from "../../src/mcp/config.ts";
import { McpManager, type McpManagerOptions } from "../../src/mcp/manager.ts";
import { configText, stdioServerLines } from "../cli/_mcp_helpers.ts";
import { stdioCommand } from "../fixtures/mcp/spawn.ts";
import { isAlive, serverEntry } from "./_helpers.ts";

/** The fixture whose tools make elicitation and sampling requests of the client. */
export const CLIENT_REQUESTS_FIXTURE: string = fileURLToPath(
  new URL("../fixtures/mcp/client_requests.ts", import.meta.url),
);

/** `env` for the fixture's child: where Deno keeps its cache, when that is set. */
export function childEnv(): Record<string, string> {
  const dir = Deno.env.get("DENO_DIR");
  return dir === undefined ? {} : { DENO_DIR: dir };
}

/** A stdio entry of the fixture, plus entry fields (`elicitation`, `sampling`, …). */
export function requestsServer(
  name: string,
  fields: Record<string, unknown> = {},
): McpServerConfig {
  return serverEntry(name, {
    ...stdioCommand([], CLIENT_REQUESTS_FIXTURE),
    env: childEnv(),
    ...fields,
  });
}

/** The same entry as `config.yaml` lines under `mcp_servers:` (for session tests). */
export function requestsServerYaml(name: string, lines: string[] = []): string {
  const server = stdioCommand([], CLIENT_REQUESTS_FIXTURE);
  return configText(
    stdioServerLines(name, server, [`env: ${JSON.stringify(childEnv())}`, ...lines]),
  );
}

/** A manager over `servers` that checks on disposal that no child survived. */
export async function startManager(
  servers: McpServerConfig[],
  options: McpManagerOptions = {},
): Promise<McpManager & AsyncDisposable> {
  const manager = new McpManager({ reconnect: false, ...options });
  const pids: number[] = [];
  const dispose = async () => {
    await manager.shutdown();
    for (const pid of pids) assert.ok(!isAlive(pid), `the fixture child ${pid} was left running`);
  };
  try {
    await manager.start(servers);
    for (const state of manager.servers()) {
      assert.equal(state.status, "connected", state.error);
      if (state.pid !== undefined) pids.push(state.pid);
    }
  } catch (error) {
    await dispose();
    throw error;
  }
  return Object.assign(manager, { [Symbol.asyncDispose]: dispose });
}

/** The text of a tool result. */
export function resultText(result: CallToolResult): string {
  return result.content.map((block) => block.type === "text" ? block.text : "").join("");
}

/** The JSON a fixture tool answered; fails when the tool reported an error. */
export function resultJson(result: CallToolResult): Record<string, unknown> {
  assert.ok(!result.isError, `the tool failed: ${resultText(result)}`);
  return JSON.parse(resultText(result));
}

/** Calls a fixture tool of `server` through the manager. */
export async function call(
  manager: McpManager,
  server: string,
  tool: string,
  args: Record<string, unknown> = {},
): Promise<CallToolResult> {
  return await manager.callTool(`mcp__${server}__${tool}`, args);
}
