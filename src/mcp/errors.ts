/**
 * Errors of the MCP layer. Every one names the server it belongs to, so one broken server never
 * reads like a failure of the whole client.
 *
 * @module
 */

/** Why a server could not be used. */
export type McpFailureKind =
  | "config" // the entry or a file it names is unusable (missing cert file, bad command)
  | "spawn" // the stdio command could not be started
  | "unreachable" // nothing answered at the URL
  | "not_mcp" // something answered, but not an MCP endpoint
  | "auth" // the server refused our credentials
  | "tls" // certificate verification or mTLS failed
  | "timeout" // connect or call took longer than allowed
  | "protocol" // the server broke the protocol (garbage, crashed, unsupported era)
  | "closed" // the connection went away
  | "tool"; // the tool call itself failed on the server

/** Kinds retrying cannot fix: the server is parked at once (decisions.md §5). */
const PERMANENT: ReadonlySet<McpFailureKind> = new Set([
  "config",
  "spawn",
  "not_mcp",
  "auth",
  "tls",
]);

/**
 * A failure of one MCP server, with a message that starts with `MCP server '<name>'`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { McpServerError } from "./errors.ts";
 * const error = new McpServerError("fs", "config", "client_cert not found at '/x.pem'");
 * assert(error.message === "MCP server 'fs': client_cert not found at '/x.pem'");
 * assert(error.permanent);
 * ```
 */
export class McpServerError extends Error {
  /** The server's configured name. */
  readonly server: string;
  /** What went wrong. */
  readonly kind: McpFailureKind;

  constructor(server: string, kind: McpFailureKind, detail: string, options?: ErrorOptions) {
    super(`MCP server '${server}': ${detail}`, options);
    this.name = "McpServerError";
    this.server = server;
    this.kind = kind;
  }

  /** Whether reconnecting cannot help (auth, missing files, not an MCP endpoint …). */
  get permanent(): boolean {
    return PERMANENT.has(this.kind);
  }
}

/** The message of any thrown value, without a stack. */
export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
