/**
 * The MCP client: `mcp_servers` of `config.yaml` → connections → agent tools named
 * `mcp__<server>__<tool>`.
 *
 * @module
 */
import { homedir } from "node:os";
import { sep } from "node:path";
import type { ResolvedConfig } from "../home/config.ts";
import { type McpServersResult, parseMcpServers } from "./config.ts";

export {
  formatIssue,
  type McpConfigIssue,
  type McpServerConfig,
  type McpServersResult,
  type McpTransportKind,
  type OAuthSettings,
  parseMcpServers,
  SERVER_NAME_PATTERN,
} from "./config.ts";
export { connectServer, type McpConnection } from "./connect.ts";
export { McpServerError } from "./errors.ts";
export {
  loginMcpServer,
  type LoginOptions,
  type LoginOutcome,
  OAuthLoginRequired,
  storedOAuth,
} from "./oauth/mod.ts";
export {
  type McpEvent,
  McpManager,
  type McpManagerOptions,
  PARKED_RETRY_TEXT,
  type ReloadReport,
  type ServerState,
  type ServerStatus,
  type ToolCallOptions,
  type ToolProgress,
} from "./manager.ts";
export type { RegisteredTool } from "./registry.ts";
export { serverLogLevel, StderrLog } from "./stderr_log.ts";

/**
 * Reads `mcp_servers` of a resolved configuration, substituting `${...}` references from the
 * secret scope (`.env` first, then the process environment).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { loadConfig } from "../home/config.ts";
 * import { loadMcpServers } from "./mod.ts";
 * const home = await Deno.makeTempDir();
 * Deno.writeTextFileSync(`${home}/config.yaml`, "mcp_servers:\n  fs:\n    command: npx\n");
 * const { servers } = loadMcpServers(loadConfig({ home, env: () => undefined }));
 * assert(servers[0].name === "fs" && servers[0].transport === "stdio");
 * ```
 */
export function loadMcpServers(
  config: ResolvedConfig,
  workspaceFolder: string = Deno.cwd(),
): McpServersResult {
  return parseMcpServers(config.source, {
    lookup: (name) => config.secrets.get(name),
    userHome: homedir(),
    workspaceFolder,
    pathSeparator: sep,
    secretsFile: config.paths.dotenv,
  });
}
