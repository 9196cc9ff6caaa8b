/**
 * Connects to one MCP server as its config entry says: the transport (stdio, Streamable HTTP,
 * SSE, with the initial-connect SSE fallback), the content-type preflight, and the protocol
 * negotiation of SPEC.md (`auto`, `stateless`, `legacy`). The wire protocol is the SDK's.
 *
 * @module
 */
import {
  Client,
  type ClientCapabilities,
  type ClientOptions,
  type CreateMessageRequestParams,
  type ElicitRequestParams,
  type ElicitResult,
  LOG_LEVEL_META_KEY,
  type LoggingLevel,
  type LoggingMessageNotificationParams,
  ProtocolError,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  SseError,
  StreamableHTTPClientTransport,
  type Tool,
  type Transport,
} from "@modelcontextprotocol/client";
import { isAbsolute, resolve } from "node:path";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import type { McpServerConfig, McpTransportKind } from "./config.ts";
import { elicitationCapability } from "./elicitation.ts";
import { samplingCapability, type SamplingResult } from "./sampling.ts";
import {
  answerProblem,
  entryFix,
  McpServerError,
  messageOf,
  NOT_JSON_RPC,
  quotedServerText,
  raiseTimeoutHint,
} from "./errors.ts";
import {
  type HttpAccess,
  httpAccessFor,
  httpStatusFailure,
  insecureWarning,
  jsonRpcRefusal,
  jsonRpcRefusalOf,
  preflight,
  redirectInUserTerms,
  unreachable,
  wrongScheme,
} from "./http.ts";
import { oauthFailure, type OAuthTransportFactory } from "./oauth/provider.ts";
import { SESSION_ENDED, WatchedStreamableHTTPClientTransport } from "./_streamable_http.ts";
import { DiagnosedStdioClientTransport } from "./_stdio.ts";
import { splitCommandLine } from "./command_line.ts";
import { DiagnosedSSEClientTransport } from "./_sse.ts";
import { StrayAnswers } from "./_stray_answers.ts";
import { InvalidTools } from "./_invalid_tools.ts";
import type { InvalidTool } from "./registry.ts";

/** The modern protocol revision (the 2026-07-28 era). */
const MODERN_PROTOCOL_VERSION = "2026-07-28";

/** Environment variables a stdio server inherits; everything else must be in its `env`. */
const INHERITED_ENV = ["PATH", "HOME", "USER", "LANG", "LC_ALL", "TERM", "SHELL", "TMPDIR"];

/** What connecting needs from the outside world. */
export interface ConnectOptions {
  /** Our client identity sent in the handshake. */
  clientInfo: { name: string; version: string };
  /** Reads the process environment (for the stdio child's minimal environment). */
  processEnv: (name: string) => string | undefined;
  /** Lists the process environment's names (for `XDG_*`). */
  processEnvNames?: () => string[];
  /** Receives the stderr output of stdio servers. */
  onStderr?: (server: string, text: string) => void;
  /**
   * The file {@linkcode onStderr} writes to (`<home>/logs/mcp-stderr.log`), named in the errors
   * of stdio servers; without it they name no file.
   */
  stderrLogPath?: string;
  /**
   * Receives the server's log messages (`notifications/message`). With it, a server that
   * declares the `logging` capability is asked for messages from {@linkcode serverLogLevel} up.
   */
  onServerLog?: (server: string, message: LoggingMessageNotificationParams) => void;
  /** The lowest level of log messages asked for (see {@linkcode onServerLog}). Default `info`. */
  serverLogLevel?: LoggingLevel;
  /** Called when the server says its tool list changed, with the new list. */
  onToolsChanged?: (tools: Tool[]) => void;
  /**
   * Called when the server said its tool list changed but listing it again failed, with the
   * reason in one line (the previous tools stay). Not called when the connection went away.
   */
  onToolsChangeFailed?: (reason: string) => void;
  /**
   * Answers the server's `elicitation/create` requests. The elicitation capability (form mode
   * only) is declared only with this handler and `elicitation.enabled`.
   */
  onElicitation?: (
    server: McpServerConfig,
    params: ElicitRequestParams,
    signal: AbortSignal,
  ) => Promise<ElicitResult>;
  /**
   * Answers the server's `sampling/createMessage` requests (a thrown `ProtocolError` is sent as
   * the error). The sampling capability is declared only with this handler and `sampling.enabled`.
   */
  onSampling?: (
    server: McpServerConfig,
    params: CreateMessageRequestParams,
    signal: AbortSignal,
  ) => Promise<SamplingResult>;
  /**
   * Supplies the OAuth provider of `auth: oauth` servers (`storedOAuth(<home>/mcp-tokens)`, or a
   * login's interactive one). Without it such a server fails, naming `agent mcp login`.
   */
  oauth?: OAuthTransportFactory;
  /** Aborts the connect. */
  signal?: AbortSignal;
}

/** One live connection to one server. */
export interface McpConnection {
  readonly config: McpServerConfig;
  readonly client: Client;
  /** The transport actually used (after an SSE fallback it is `sse`). */
  readonly transport: McpTransportKind;
  /** `legacy` (initialize handshake) or `modern` (2026-07-28 `server/discover`). */
  readonly era: "legacy" | "modern";
  /** The negotiated protocol version. */
  readonly protocolVersion: string | undefined;
  /** Milliseconds the connect took, preflight and fallbacks included. */
  readonly connectMs: number;
  /** Things the user should know (an SSE fallback, for instance). */
  readonly warnings: string[];
  /**
   * The `_meta` a request carries to ask for the server's log messages about it (a modern-era
   * server sends them only when the request says the level), or `undefined` when not asked for.
   */
  readonly logRequestMeta: Record<string, unknown> | undefined;
  /** The stdio child's pid. */
  readonly pid: number | undefined;
  /** Whether the connection was lost or closed. */
  readonly closed: boolean;
  /**
   * Whether it was lost because the server ended the Streamable HTTP session (HTTP 404 for its
   * session id); the next connection starts a new session.
   */
  readonly sessionEnded: boolean;
  /**
   * Why a stdio server went away, as a clause for an error message: its exit status and last
   * stderr lines, or stray stdout output (`undefined` when nothing is known or not stdio).
   */
  diagnosis(): string | undefined;
  /**
   * The last answer whose id none of our requests had, as a clause for a timeout's message (such
   * an answer is dropped, so its request waits for its timeout); `undefined` when none came.
   */
  strayAnswer(): string | undefined;
  /**
   * The entries of the latest `tools/list` answer (all its pages) that were left out because
   * they are not valid MCP tools; the tools the SDK returned are the valid rest.
   */
  invalidTools(): InvalidTool[];
  /** Calls `listener` once when the connection goes away (not on {@linkcode close}). */
  onLost(listener: (reason: string) => void): void;
  /** Closes the connection (and stops a stdio child: stdin, SIGTERM, SIGKILL). */
  close(): Promise<void>;
}

/**
 * Connects to `config`'s server within its `connect_timeout`. Failures are
 * {@linkcode McpServerError}s naming the server; a timeout never triggers a fallback.
 */
export async function connectServer(
  config: McpServerConfig,
  options: ConnectOptions,
): Promise<McpConnection> {
  const started = performance.now();
  const deadline = AbortSignal.timeout(config.connectTimeoutSeconds * 1000);
  const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
  const access = config.transport === "stdio" ? undefined : httpAccessFor(config);
  const insecure = insecureWarning(config);
  const warnings: string[] = insecure ? [insecure] : [];
  try {
    let eventStream = false;
    if (access && config.transport === "http" && !config.skipPreflight && config.auth !== "oauth") {
      ({ eventStream } = await withAbort(
        preflight(config, access, signal),
        signal,
        config,
        deadline,
      ));
    }
    let transportKind: McpTransportKind = config.transport;
    let attempt: Attempt;
    try {
      attempt = await negotiate(config, options, access, transportKind, signal, deadline);
    } catch (error) {
      // A config error (a TLS server's page for a plain HTTP request) is not SSE's to fix.
      const status = error instanceof McpServerError && error.cause instanceof SdkHttpError &&
          error.kind !== "config"
        ? error.cause.status
        : undefined;
      // A 400 whose JSON-RPC error rejects the legacy era is the era negotiation's: no SSE
      // fallback. A 404 is a refusal only where the URL was seen opening an event stream
      // (Express SSE servers).
      const refused = status !== undefined &&
        ([400, 405, 406, 411].includes(status) || (status === 404 && eventStream));
      if (transportKind !== "http" || !refused || isModernOnlyRejection(error)) throw error;
      warnings.push(
        `MCP server '${config.name}': Streamable HTTP was refused (HTTP ${status}); connected over SSE ` +
          `instead. Set mcp_servers.${config.name}.transport to sse${
            config.configFile === undefined ? "" : ` in ${config.configFile}`
          } to skip the failed attempt.`,
      );
      transportKind = "sse";
      try {
        attempt = await negotiate(config, options, access, transportKind, signal, deadline);
      } catch (fallbackError) {
        // A refusal in JSON-RPC came from a Streamable HTTP server: it is the story, not why the
        // SSE retry failed too (a "not an SSE endpoint" hint would be wrong here).
        const spokeJsonRpc = error instanceof McpServerError && jsonRpcRefusalOf(error.cause);
        if (spokeJsonRpc && !options.signal?.aborted) throw error;
        throw fallbackError;
      }
    }
    const logging = await askForLogMessages(config, options, attempt.client, signal);
    if (logging.warning) warnings.push(logging.warning);
    return liveConnection(
      config,
      attempt,
      transportKind,
      access,
      warnings,
      logging.requestMeta,
      performance.now() - started,
    );
  } catch (error) {
    access?.[Symbol.dispose]();
    throw await wrongScheme(config, error, signal) ?? error;
  }
}

interface Attempt {
  client: Client;
  transport: Transport;
  strays: StrayAnswers;
  invalidTools: InvalidTools;
}

/** Runs SPEC.md's negotiation table over fresh client + transport pairs. */
async function negotiate(
  config: McpServerConfig,
  options: ConnectOptions,
  access: HttpAccess | undefined,
  kind: McpTransportKind,
  signal: AbortSignal,
  deadline: AbortSignal,
): Promise<Attempt> {
  const legacy = () => attemptConnect(config, options, access, kind, "legacy", signal, deadline);
  const modern = () => attemptConnect(config, options, access, kind, "modern", signal, deadline);
  // The legacy SSE transport predates the modern era: only the handshake applies.
  if (config.protocol === "legacy" || kind === "sse") return await legacy();
  if (config.protocol === "stateless") {
    try {
      return await modern();
    } catch (error) {
      if (!isEraRejection(error)) throw error;
      return await legacy(); // the one legacy retry
    }
  }
  try {
    return await legacy();
  } catch (error) {
    if (!isModernOnlyRejection(error)) throw error;
    return await modern();
  }
}

async function attemptConnect(
  config: McpServerConfig,
  options: ConnectOptions,
  access: HttpAccess | undefined,
  kind: McpTransportKind,
  era: "legacy" | "modern",
  signal: AbortSignal,
  deadline: AbortSignal,
): Promise<Attempt> {
  const capabilities: ClientCapabilities = {};
  const { onElicitation, onSampling } = options;
  if (onElicitation && config.elicitation.enabled) {
    capabilities.elicitation = elicitationCapability();
  }
  if (onSampling && config.sampling.enabled) {
    capabilities.sampling = samplingCapability(config.sampling);
  }
  const clientOptions: ClientOptions = {
    capabilities,
    versionNegotiation: { mode: era === "modern" ? { pin: MODERN_PROTOCOL_VERSION } : "legacy" },
  };
  if (options.onToolsChanged) {
    const { onToolsChanged, onToolsChangeFailed } = options;
    clientOptions.listChanged = {
      tools: {
        debounceMs: 50,
        onChanged: (error, tools) => {
          if (error) {
            // A lost connection is reported as such; a refresh it cut short is no news.
            const lost = error instanceof SdkError && error.code === SdkErrorCode.ConnectionClosed;
            if (!lost) onToolsChangeFailed?.(refreshProblem(error));
          } else if (tools) onToolsChanged(tools);
        },
      },
    };
  }
  const client = new Client(options.clientInfo, clientOptions);
  if (onElicitation && capabilities.elicitation) {
    client.setRequestHandler(
      "elicitation/create",
      (request, ctx) => onElicitation(config, request.params, ctx.mcpReq.signal),
    );
  }
  if (onSampling && capabilities.sampling) {
    client.setRequestHandler(
      "sampling/createMessage",
      (request, ctx) => onSampling(config, request.params, ctx.mcpReq.signal),
    );
  }
  const { onServerLog } = options;
  if (onServerLog) {
    client.setNotificationHandler(
      "notifications/message",
      (notification) => onServerLog(config.name, notification.params),
    );
  }
  const transport = makeTransport(config, options, access, kind);
  const strays = new StrayAnswers();
  strays.watch(client, transport);
  try {
    await withAbort(
      client.connect(transport, { signal, timeout: config.connectTimeoutSeconds * 1000 }),
      signal,
      config,
      deadline,
    );
    // After connect: it wraps the `onmessage` that connect sets.
    const invalidTools = new InvalidTools();
    invalidTools.watch(transport);
    return { client, transport, strays, invalidTools };
  } catch (error) {
    // Read before closing: closing stops the child, which would be its exit status then.
    const diagnosis = transport instanceof DiagnosedStdioClientTransport
      ? transport.diagnosis()
      : undefined;
    await client.close().catch(() => {});
    await transport.close().catch(() => {});
    const handshake = era === "modern" ? "server/discover" : "initialize";
    const classified = classifyConnectError(
      config,
      error,
      deadline,
      diagnosis,
      transport,
      `the MCP handshake (${handshake})`,
    );
    const stray = classified.kind === "timeout" ? strays.clause() : undefined;
    // What came back (a stray answer, stray output, an exit) is the story; without it, a server
    // that starts slowly (npx fetching a package the first time) may just need longer.
    const more = stray !== undefined
      ? `; ${stray}`
      : classified.kind === "timeout" && !diagnosis
      ? raiseTimeoutHint(config, "connect_timeout", "the server")
      : undefined;
    const failure = more === undefined ? classified : new McpServerError(
      config.name,
      "timeout",
      `${classified.detail}${more}`,
      { cause: classified.cause ?? classified },
    );
    if (!diagnosis || failure.message.endsWith(diagnosis)) throw failure;
    throw new McpServerError(
      config.name,
      failure.kind,
      `${failure.message.replace(/^MCP server '[^']*': /, "")}: ${diagnosis}`,
      { cause: failure.cause ?? failure },
    );
  }
}

function makeTransport(
  config: McpServerConfig,
  options: ConnectOptions,
  access: HttpAccess | undefined,
  kind: McpTransportKind,
): Transport {
  if (kind === "stdio") {
    const env = childEnvironment(config, options);
    const transport = new DiagnosedStdioClientTransport({
      ...ownSessionLaunch(config.command!, config.args ?? [], env.PATH),
      env,
      stderr: "pipe",
    }, options.stderrLogPath);
    const onStderr = options.onStderr;
    if (onStderr) {
      // Streaming: a character split across two chunks is decoded once both have come.
      const decoder = new TextDecoder();
      transport.stderr?.on("data", (chunk: Uint8Array) => {
        const text = decoder.decode(chunk, { stream: true });
        if (text !== "") onStderr(config.name, text);
      });
      transport.stderr?.on("end", () => {
        const rest = decoder.decode(); // an unfinished character at the very end: U+FFFD
        if (rest !== "") onStderr(config.name, rest);
      });
    }
    return transport;
  }
  const url = new URL(config.url!);
  const http = config.auth === "oauth" ? oauthTransport(config, options, access!) : {
    fetch: access!.fetch,
  };
  if (kind === "sse") return new DiagnosedSSEClientTransport(url, http);
  return new WatchedStreamableHTTPClientTransport(url, http);
}

/** The `authProvider` and `fetch` of an `auth: oauth` server's transport. */
function oauthTransport(
  config: McpServerConfig,
  options: ConnectOptions,
  access: HttpAccess,
): ReturnType<OAuthTransportFactory> {
  if (!options.oauth) {
    throw new McpServerError(
      config.name,
      "auth",
      "auth: oauth needs OAuth token storage, and this MCP client was started without it " +
        "(the `oauth` option of the MCP manager, e.g. storedOAuth(<home>/mcp-tokens))",
    );
  }
  return options.oauth(config, access.fetch);
}

/**
 * Runs a stdio server in its own session (`setsid`, which execs in place: same pid), so the
 * Ctrl-C of a terminal session reaches the agent, which cancels a run, and not its servers.
 * Without `setsid`, or for a command that cannot be found, the command runs as it is (and a
 * missing command fails as before).
 */
function ownSessionLaunch(
  command: string,
  args: string[],
  path: string | undefined,
): { command: string; args: string[] } {
  const setsid = SETSID;
  const resolved = setsid ? resolveExecutable(command, path) : undefined;
  return setsid && resolved ? { command: setsid, args: [resolved, ...args] } : { command, args };
}

const SETSID = Deno.build.os === "windows"
  ? undefined
  : ["/usr/bin/setsid", "/bin/setsid"].find((candidate) => isExecutable(candidate));

function resolveExecutable(command: string, path: string | undefined): string | undefined {
  if (command.includes("/")) return isExecutable(command) ? command : undefined;
  for (const dir of (path ?? "").split(":")) {
    if (dir === "") continue;
    const candidate = `${dir}/${command}`;
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

function isExecutable(path: string): boolean {
  try {
    const info = Deno.statSync(path);
    return info.isFile && ((info.mode ?? 0o111) & 0o111) !== 0;
  } catch {
    return false;
  }
}

/**
 * Whether `error` is the SDK saying the connection is gone: closed while a request was out
 * (`ConnectionClosed`), or a request made after the transport was dropped but before the close
 * was reported, which the transports throw as `NotConnected` and the client's request funnel as
 * a plain `Error("Not connected")` (a call whose start awaits something, such as a modern-era
 * tool call, can land there when the close comes in between).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Client, SdkError, SdkErrorCode } from "@modelcontextprotocol/client";
 * import { isConnectionGone } from "./connect.ts";
 * const client = new Client({ name: "c", version: "1" });
 * const error = await client.callTool({ name: "echo" }).catch((error) => error);
 * assert(isConnectionGone(error));
 * assert(isConnectionGone(new SdkError(SdkErrorCode.NotConnected, "Not connected")));
 * assert(!isConnectionGone(new Error("Not connected to the database")));
 * ```
 */
export function isConnectionGone(error: unknown): boolean {
  if (error instanceof SdkError) {
    return error.code === SdkErrorCode.ConnectionClosed ||
      error.code === SdkErrorCode.NotConnected;
  }
  return error instanceof Error && error.constructor === Error && error.message === "Not connected";
}

/** The stdio child's environment: a minimal inherited set plus the entry's `env`. */
function childEnvironment(
  config: McpServerConfig,
  options: Pick<ConnectOptions, "processEnv" | "processEnvNames">,
): Record<string, string> {
  const env: Record<string, string> = {};
  const names = [
    ...INHERITED_ENV,
    ...(options.processEnvNames?.() ?? []).filter((name) => name.startsWith("XDG_")),
  ];
  for (const name of names) {
    const value = options.processEnv(name);
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...config.env };
}

/**
 * Asks a server that declares the `logging` capability for its log messages, when they have
 * somewhere to go: a legacy-era one with `logging/setLevel` once; a modern-era one, which logs
 * only about requests that say the level, through the `_meta` its tool calls and resource and
 * prompt requests carry. A refused `logging/setLevel` is a warning: the server works without it.
 */
async function askForLogMessages(
  config: McpServerConfig,
  options: ConnectOptions,
  client: Client,
  signal: AbortSignal,
): Promise<{ requestMeta?: Record<string, unknown>; warning?: string }> {
  if (!options.onServerLog || !client.getServerCapabilities()?.logging) return {};
  const level = options.serverLogLevel ?? "info";
  if (client.getProtocolEra() === "modern") return { requestMeta: { [LOG_LEVEL_META_KEY]: level } };
  try {
    await client.setLoggingLevel(level, { signal, timeout: config.connectTimeoutSeconds * 1000 });
    return {};
  } catch (error) {
    if (signal.aborted) throw error;
    return {
      warning: `MCP server '${config.name}': it declares logging, but refused logging/setLevel ` +
        `(${quotedServerText(messageOf(error))}); it sends the log messages it chooses`,
    };
  }
}

function liveConnection(
  config: McpServerConfig,
  attempt: Attempt,
  transport: McpTransportKind,
  access: HttpAccess | undefined,
  warnings: string[],
  logRequestMeta: Record<string, unknown> | undefined,
  connectMs: number,
): McpConnection {
  const { client } = attempt;
  const listeners: ((reason: string) => void)[] = [];
  let closed = false;
  let closing = false;
  let disposed = false;
  const dispose = () => {
    if (disposed) return;
    disposed = true;
    access?.[Symbol.dispose]();
  };
  client.onclose = () => {
    if (closed) return;
    closed = true;
    dispose();
    const reason = attempt.transport instanceof WatchedStreamableHTTPClientTransport
      ? attempt.transport.lostReason
      : undefined;
    if (!closing) {
      for (const listener of listeners) listener(reason ?? "the connection was closed");
    }
  };
  return {
    config,
    client,
    transport,
    era: client.getProtocolEra() === "modern" ? "modern" : "legacy",
    protocolVersion: client.getNegotiatedProtocolVersion(),
    connectMs,
    warnings,
    logRequestMeta,
    pid: attempt.transport instanceof StdioClientTransport
      ? attempt.transport.pid ?? undefined
      : undefined,
    get closed() {
      return closed;
    },
    get sessionEnded() {
      return attempt.transport instanceof WatchedStreamableHTTPClientTransport &&
        attempt.transport.lostReason === SESSION_ENDED;
    },
    diagnosis() {
      return attempt.transport instanceof DiagnosedStdioClientTransport
        ? attempt.transport.diagnosis()
        : undefined;
    },
    strayAnswer() {
      return attempt.strays.clause();
    },
    invalidTools() {
      return attempt.invalidTools.latest();
    },
    onLost(listener) {
      listeners.push(listener);
    },
    async close() {
      closing = true;
      if (attempt.transport instanceof StreamableHTTPClientTransport) {
        await attempt.transport.terminateSession().catch(() => {});
      }
      await client.close().catch(() => {});
      closed = true;
      dispose();
    },
  };
}

/** Why listing the tools again after `notifications/tools/list_changed` failed, in one line. */
function refreshProblem(error: Error): string {
  if (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout) {
    return "the server did not answer tools/list in time";
  }
  return answerProblem(error) ?? messageOf(error);
}

/** The legacy handshake was refused because the server only speaks the modern era. */
function isModernOnlyRejection(error: unknown): boolean {
  const cause = error instanceof McpServerError ? error.cause : error;
  if (cause instanceof ProtocolError && (cause.code === -32022 || cause.code === -32601)) {
    return true;
  }
  // Over HTTP the rejection arrives as an HTTP 400 whose body is the JSON-RPC error.
  return /unsupported protocol version|method not found|"code":\s*-32022/i.test(messageOf(cause));
}

/** The modern probe was refused in a way that means "try the legacy handshake". */
function isEraRejection(error: unknown): boolean {
  if (!(error instanceof McpServerError) || error.kind === "timeout") return false;
  const cause = error.cause;
  if (cause instanceof SdkError && cause.code === SdkErrorCode.EraNegotiationFailed) return true;
  return isModernOnlyRejection(cause) || (cause instanceof ProtocolError);
}

/**
 * For a `command` that is a whole command line (`npx -y pkg`): says so, and how the entry should
 * read (the executable in `command`, the rest in front of `args`).
 */
function commandLineFix(config: McpServerConfig): string | undefined {
  const words = splitCommandLine(config.command ?? "");
  if (!words || words.length < 2) return undefined;
  const args = `[${
    [...words.slice(1), ...config.args].map((arg) => JSON.stringify(arg)).join(", ")
  }]`;
  return "; that is a whole command line, but command names only the executable. " +
    entryFix(config, `set <command> to ${JSON.stringify(words[0])} and <args> to ${args}`);
}

/**
 * Why a relative `command` (`./server.sh`, `bin/server`) was not found, when the file is missing
 * from the folder the process runs in: the child is started there, so a gateway started elsewhere
 * (a service) looks in another place than the shell the user tried it in. `undefined` for any other
 * command, or when the file is there (then something else failed, such as its `#!` interpreter).
 */
function relativeCommandMissing(config: McpServerConfig): string | undefined {
  const command = config.command ?? "";
  if (!command.includes("/") || isAbsolute(command)) return undefined;
  let folder: string;
  try {
    folder = Deno.cwd();
  } catch {
    return undefined; // the folder itself is gone: nothing better to say than "not found"
  }
  const path = resolve(folder, command);
  try {
    Deno.statSync(path);
    return undefined;
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) return undefined;
  }
  return `${path} does not exist (a relative command is looked up from the folder the agent ` +
    `was started in, ${folder}). ` +
    entryFix(config, "set <command> to the executable's absolute path");
}

/** Turns whatever the SDK or the runtime threw into an error naming the server. */
function classifyConnectError(
  config: McpServerConfig,
  error: unknown,
  deadline?: AbortSignal,
  diagnosis?: string,
  transport?: Transport,
  handshake = "the MCP handshake (initialize)",
): McpServerError {
  if (error instanceof McpServerError) return error;
  const oauth = oauthFailure(config, error);
  if (oauth) return oauth;
  const name = config.name;
  if (
    deadline?.aborted || (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout)
  ) {
    return new McpServerError(
      name,
      "timeout",
      `no answer within connect_timeout (${config.connectTimeoutSeconds} s)`,
      { cause: error },
    );
  }
  if (error instanceof SdkHttpError) {
    const { status } = error;
    const body = error.data.text;
    // A redirect's story is in the SDK's message; any other answer's is in its body.
    const detail = status >= 300 && status < 400 || typeof body !== "string"
      ? error.message.replace(/^Error POSTing to endpoint: /, "")
      : body;
    return httpStatusFailure(config, status, detail, { cause: error }, handshake);
  }
  if (error instanceof ProtocolError) {
    // A JSON-RPC error answering the handshake: the server is there and said no, in its words.
    return new McpServerError(
      name,
      "protocol",
      `the server refused ${handshake}: ${
        quotedServerText(answerProblem(error) ?? error.message)
      } (JSON-RPC error ${error.code})`,
      { cause: error },
    );
  }
  if (transport instanceof DiagnosedSSEClientTransport) {
    const failure = sseFailure(config, error, transport, handshake);
    if (failure) return failure;
  }
  const text = messageOf(error);
  const code = (error as { code?: unknown })?.code;
  if (
    config.transport === "stdio" &&
    (code === "ENOENT" || /ENOENT|not found|No such file/i.test(text))
  ) {
    const whole = commandLineFix(config);
    const why = whole === undefined
      ? relativeCommandMissing(config) ?? "not found (check command and PATH)"
      : `not found${whole}`;
    return new McpServerError(
      name,
      "spawn",
      `cannot start command '${config.command}': ${why}`,
      { cause: error },
    );
  }
  if (code === "EACCES" || /EACCES|permission denied/i.test(text)) {
    return new McpServerError(
      name,
      "spawn",
      `cannot start command '${config.command}': permission denied`,
      {
        cause: error,
      },
    );
  }
  if (error instanceof TypeError && /fetch|connect|dns|refused|network/i.test(text)) {
    return unreachable(config, error);
  }
  if (error instanceof SdkError && error.code === SdkErrorCode.ConnectionClosed) {
    const log = transport instanceof DiagnosedStdioClientTransport
      ? transport.stderrLogPath
      : undefined;
    const where = diagnosis
      ? `: ${diagnosis}`
      : config.transport === "stdio"
      ? ` (the process closed its stdout${log ? `; see ${log}` : ""})`
      : "";
    return new McpServerError(
      name,
      "closed",
      `the connection closed during the handshake${where}`,
      {
        cause: error,
      },
    );
  }
  const problem = answerProblem(error);
  const notMcp = config.transport !== "stdio" && config.url !== undefined
    ? notMcpAnswer(config, error, problem)
    : undefined;
  if (notMcp) return notMcp;
  return new McpServerError(name, "protocol", `connect failed: ${problem ?? text}`, {
    cause: error,
  });
}

/**
 * An HTTP answer to the initialize request that no MCP endpoint gives: a 2xx of another content
 * type (a sign-in page, a proxy's page) or JSON that is not JSON-RPC (a health or REST endpoint).
 * The preflight catches most of them first; these got past it (`skip_preflight`, a HEAD that
 * said JSON).
 */
function notMcpAnswer(
  config: McpServerConfig,
  error: unknown,
  problem: string | undefined,
): McpServerError | undefined {
  const fix = "Check the url (it usually ends in /mcp, or /sse with transport: sse)";
  if (error instanceof SdkError && error.code === SdkErrorCode.ClientHttpUnexpectedContent) {
    const type = (error.data as { contentType?: unknown } | undefined)?.contentType;
    return new McpServerError(
      config.name,
      "not_mcp",
      `${config.url} answered the MCP initialize request with Content-Type '${
        typeof type === "string" && type !== "" ? type : "none"
      }', not an MCP endpoint (a sign-in page or a proxy in front of the server answers like ` +
        `this). ${fix}`,
      { cause: error },
    );
  }
  if (problem === NOT_JSON_RPC) {
    return new McpServerError(
      config.name,
      "not_mcp",
      `${config.url} answered the MCP initialize request with JSON that is not a JSON-RPC ` +
        `message, not an MCP endpoint. ${fix}`,
      { cause: error },
    );
  }
  return undefined;
}

/**
 * The SSE transport's errors worded as Streamable HTTP's: its event stream refused with a status
 * (`SseError` with a code), a failed POST of a message, or no answer at all.
 */
function sseFailure(
  config: McpServerConfig,
  error: unknown,
  transport: DiagnosedSSEClientTransport,
  handshake: string,
): McpServerError | undefined {
  const failure = transport.lastFailure;
  const posted = messageOf(error).match(/^Error POSTing to endpoint \(HTTP (\d+)\): ([\s\S]*)$/);
  const status = error instanceof SseError ? error.code : posted ? Number(posted[1]) : undefined;
  if (status !== undefined && status < 300) {
    // Answered, but not with an event stream (a web page, JSON …): not an SSE endpoint.
    return new McpServerError(
      config.name,
      "protocol",
      `${config.url} did not open an event stream (${
        messageOf(error).replace(/^SSE error: /, "")
      }); check the url (an SSE endpoint usually ends in /sse)`,
      { cause: error },
    );
  }
  if (status !== undefined) {
    const body = failure?.status === status
      ? failure.body
      : (posted?.[2] ?? messageOf(error).replace(/^SSE error: /, ""));
    // Only a Streamable HTTP endpoint answers the event-stream GET with a JSON-RPC error.
    const refusal = error instanceof SseError && failure?.status === status &&
        ![401, 403].includes(status)
      ? jsonRpcRefusal(status, failure.body)
      : undefined;
    if (refusal) {
      return new McpServerError(
        config.name,
        "config",
        `the server refused the SSE request: ${refusal}. An answer in JSON-RPC means ` +
          `${config.url} is a Streamable HTTP endpoint, not an SSE one. ${
            entryFix(
              config,
              `remove \`transport: sse\` from mcp_servers.${config.name} (Streamable HTTP is ` +
                "the default), or set <transport> to http",
            )
          }`,
        { cause: error },
      );
    }
    const detail = status >= 300 && status < 400
      ? redirectInUserTerms(messageOf(error).replace(/^SSE error: |^Error POSTing[^:]*: /, ""))
      : body;
    return httpStatusFailure(config, status, detail, { cause: error }, handshake);
  }
  if (error instanceof SseError && transport.lastNetworkError !== undefined) {
    return unreachable(config, transport.lastNetworkError);
  }
  if (error instanceof SseError && /redirect/i.test(error.message)) {
    return new McpServerError(
      config.name,
      "protocol",
      `${config.url}: ${redirectInUserTerms(error.message.replace(/^SSE error: /, ""))}`,
      { cause: error },
    );
  }
  return undefined;
}

/** Rejects as soon as `signal` aborts, even if `work` never settles. */
async function withAbort<T>(
  work: Promise<T>,
  signal: AbortSignal,
  config: McpServerConfig,
  deadline: AbortSignal,
): Promise<T> {
  if (signal.aborted) throw abortError(config, signal, deadline);
  let onAbort: () => void = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(abortError(config, signal, deadline));
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([work, aborted]);
  } finally {
    signal.removeEventListener("abort", onAbort);
    work.catch(() => {}); // the loser's rejection is already answered
  }
}

function abortError(
  config: McpServerConfig,
  signal: AbortSignal,
  deadline: AbortSignal,
): McpServerError {
  if (deadline.aborted) {
    return new McpServerError(
      config.name,
      "timeout",
      `no answer within connect_timeout (${config.connectTimeoutSeconds} s)`,
    );
  }
  return new McpServerError(
    config.name,
    "closed",
    `connect cancelled: ${messageOf(signal.reason)}`,
  );
}
