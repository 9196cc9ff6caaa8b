/**
 * The MCP connection manager: one slot per configured server, connected in parallel, with
 * keepalive, reconnect with backoff, parking, stdio idle/lifetime recycling, per-server call
 * concurrency, and a reload that diffs configurations. It is the engine behind `/reload-mcp`.
 *
 * @module
 */
import {
  type CallToolResult,
  ProtocolError,
  type ResourceTemplateType,
  SdkError,
  SdkErrorCode,
  type Tool,
} from "@modelcontextprotocol/client";
import type { McpServerConfig, McpTransportKind } from "./config.ts";
import {
  type ConnectOptions,
  connectServer,
  isConnectionGone,
  type McpConnection,
} from "./connect.ts";
import { answerProblem, McpServerError, messageOf, raiseTimeoutHint } from "./errors.ts";
import { jsonRpcErrorOf, jsonRpcRefusalOf } from "./http.ts";
import { maskSubstitutions } from "./substitute.ts";
import { OVERSIZED_MESSAGE } from "./_stdio.ts";
import { oauthFailure } from "./oauth/provider.ts";
import { buildToolset, type DroppedTool, type RegisteredTool } from "./registry.ts";

/** Where a server stands. */
export type ServerStatus =
  | "disabled" // `enabled: false`: never connected
  | "connecting"
  | "connected"
  | "idle" // a recycled stdio server: tools stay, the next call respawns it
  | "reconnecting" // lost or failed, retrying with backoff
  | "parked" // failed repeatedly (or permanently): tools withdrawn, retried every 5 minutes
  | "failed" // failed, and this manager does not retry (one-shot commands)
  | "stopped";

/** A snapshot of one server for listings. */
export interface ServerState {
  name: string;
  status: ServerStatus;
  /** Configured transport, or the one actually used once connected. */
  transport: McpTransportKind;
  era?: "legacy" | "modern";
  protocolVersion?: string;
  serverInfo?: { name: string; version: string };
  connectMs?: number;
  /** Tools this server contributes to {@linkcode McpManager.tools}. */
  toolCount: number;
  error?: string;
  warnings: string[];
  /** Tools the server announced that are not registered, each with the warning saying why. */
  dropped?: DroppedTool[];
  pid?: number;
  /** Whether the connected server declares the `logging` capability (sends log messages). */
  logging?: boolean;
}

/** What a reload changed. */
export interface ReloadReport {
  added: string[];
  removed: string[];
  /** Servers whose entry changed and were connected again. */
  reconnected: string[];
  unchanged: string[];
  /** Servers that could not be connected, with the reason. */
  failed: { name: string; error: string }[];
  /**
   * Added or changed servers still connecting when the reload was cancelled: their connect was
   * stopped and they are as before it (a new one is not there, a changed one keeps its old
   * connection), so the next reload tries them again. Not in `added` or `reconnected`.
   */
  cancelled: string[];
  /** Registered tools after the reload. */
  toolCount: number;
}

/** Options of {@linkcode McpManager}. */
export interface McpManagerOptions {
  clientInfo?: { name: string; version: string };
  /** Reads the process environment (for stdio children). Default `Deno.env.get`. */
  processEnv?: (name: string) => string | undefined;
  /** Lists process environment names. Default `Object.keys(Deno.env.toObject())`. */
  processEnvNames?: () => string[];
  /** Receives stdio servers' stderr. */
  onStderr?: (server: string, text: string) => void;
  /** The file {@linkcode onStderr} writes to, named in errors (see `ConnectOptions.stderrLogPath`). */
  stderrLogPath?: string;
  /** Receives servers' log messages (see `ConnectOptions.onServerLog`). */
  onServerLog?: ConnectOptions["onServerLog"];
  /** The lowest level of log messages asked for. Default `info`. */
  serverLogLevel?: ConnectOptions["serverLogLevel"];
  /** Retry failed servers in the background (long-running sessions). Default true. */
  reconnect?: boolean;
  /** Called when something worth logging happens. */
  onEvent?: (event: McpEvent) => void;
  /** Jitter source. Default `Math.random`. */
  random?: () => number;
  /** Answers servers' elicitation requests (see `ConnectOptions.onElicitation`). */
  onElicitation?: ConnectOptions["onElicitation"];
  /** Answers servers' sampling requests (see `ConnectOptions.onSampling`). */
  onSampling?: ConnectOptions["onSampling"];
  /** OAuth of `auth: oauth` servers, e.g. `storedOAuth(<home>/mcp-tokens)` (see `ConnectOptions.oauth`). */
  oauth?: ConnectOptions["oauth"];
}

/** Options of {@linkcode McpManager.callTool}. */
export interface ToolCallOptions {
  /** Aborting cancels the call (the server is sent `notifications/cancelled`). */
  signal?: AbortSignal;
  /** Called when a read-only call is retried after a dropped session. */
  onRetry?: () => void;
  /**
   * Called with each `notifications/progress` the server sends about this call (its
   * `progress`, and `total` and `message` when given). Without it no progress is asked for.
   */
  onProgress?: (progress: ToolProgress) => void;
}

/** One progress report of a tool call, as the server sent it. */
export interface ToolProgress {
  progress: number;
  total?: number;
  message?: string;
}

/** Something worth logging or showing. */
export type McpEvent =
  | { type: "connected"; server: string; tools: number; era: string; ms: number }
  | { type: "failed"; server: string; error: string; retryInMs?: number }
  | { type: "parked"; server: string; error: string }
  | { type: "lost"; server: string; reason: string }
  | { type: "recycled"; server: string; reason: "idle" | "lifetime" }
  | { type: "tools_changed"; server: string; tools: number }
  | { type: "warning"; server: string; message: string };

type ResolvedOptions =
  & McpManagerOptions
  & Required<
    Pick<
      McpManagerOptions,
      "clientInfo" | "processEnv" | "processEnvNames" | "reconnect" | "random"
    >
  >;

const INITIAL_TRIES = 3;
const PARKED_RETRY_MS = 300_000;
/** How often a parked server is tried again, in words: "every 5 minutes". */
export const PARKED_RETRY_TEXT = `every ${PARKED_RETRY_MS / 60_000} minutes`;
const MAX_BACKOFF_MS = 60_000;

/**
 * Connects and serves the configured MCP servers.
 *
 * @example
 * ```ts ignore
 * const manager = new McpManager({ reconnect: false });
 * await manager.start(servers);
 * const result = await manager.callTool("mcp__everything__echo", { message: "hi" });
 * await manager.shutdown();
 * ```
 */
export class McpManager {
  readonly #options: ResolvedOptions;
  readonly #slots = new Map<string, ServerSlot>();
  readonly #listeners = new Set<() => void>();
  readonly #warnedCollisions = new Set<string>();

  constructor(options: McpManagerOptions = {}) {
    this.#options = {
      clientInfo: { name: "agent", version: "0.0.0" },
      processEnv: (name) => Deno.env.get(name),
      processEnvNames: () => Object.keys(Deno.env.toObject()),
      reconnect: true,
      random: Math.random,
      // An option given as `undefined` keeps its default.
      ...Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)),
    };
  }

  /**
   * Connects every enabled server in parallel; resolves when each has connected or failed once.
   * When `signal` aborts first, every server is shut down (stdio children included) and it
   * resolves once they are.
   */
  async start(
    configs: readonly McpServerConfig[],
    options: { signal?: AbortSignal } = {},
  ): Promise<void> {
    const slots = configs.map((config) => this.#addSlot(config));
    const started = Promise.all(slots.map((slot) => slot.start()));
    if (options.signal && await abortedFirst(started, options.signal)) await this.shutdown();
    await started;
  }

  /** The servers, in configuration order. */
  servers(): ServerState[] {
    const collisions = this.#collisions();
    return [...this.#slots.values()].map((slot) => {
      const state = slot.state();
      for (const collision of collisions) {
        if (collision.server !== slot.config.name) continue;
        state.warnings.push(collision.message);
        state.dropped!.push({
          originalName: collision.tool.originalName,
          reason: collision.message,
        });
        state.toolCount--;
      }
      return state;
    });
  }

  /**
   * Every registered tool of every available server. When two servers produce the same name
   * (`a-b` and `a_b` both sanitise to `a_b`), the first server in configuration order keeps it.
   */
  tools(): RegisteredTool[] {
    const seen = new Set<string>();
    return [...this.#slots.values()].flatMap((slot) => slot.availableTools())
      .filter((tool) => !seen.has(tool.name) && seen.add(tool.name));
  }

  /** Subscribes to changes of the tool list; returns the unsubscribe function. */
  onToolsChanged(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Calls a registered tool by its generated name. Errors are {@linkcode McpServerError}s naming
   * the server; a tool that reports an error itself returns a result with `isError: true`.
   */
  async callTool(
    name: string,
    args: Record<string, unknown> = {},
    options: ToolCallOptions = {},
  ): Promise<CallToolResult> {
    for (const slot of this.#slots.values()) {
      const tool = slot.findTool(name);
      if (tool) return await slot.call(tool, args, options); // the first server wins
    }
    for (const slot of this.#slots.values()) {
      if (slot.owns(name)) throw slot.unavailableError();
    }
    throw new Error(`no MCP tool named '${name}' is registered`);
  }

  /**
   * Applies a new configuration: removed servers are closed, added ones connected, changed ones
   * connected anew before the old connection is dropped, unchanged ones left alone. When
   * `signal` aborts, the servers still connecting are stopped and left as they were (see
   * {@linkcode ReloadReport.cancelled}); what is done already stays done.
   */
  async reload(
    configs: readonly McpServerConfig[],
    options: { signal?: AbortSignal } = {},
  ): Promise<ReloadReport> {
    const report: ReloadReport = {
      added: [],
      removed: [],
      reconnected: [],
      unchanged: [],
      failed: [],
      cancelled: [],
      toolCount: 0,
    };
    const next = new Map(configs.map((config) => [config.name, config]));
    const work: Promise<void>[] = [];
    for (const [name, slot] of this.#slots) {
      if (!next.has(name)) {
        report.removed.push(name);
        this.#slots.delete(name);
        work.push(slot.stop());
      }
    }
    /** Connects of this reload, by server name: under way, applied once landed, or cancelled. */
    const starting = new Map<string, ReloadStart>();
    for (const config of configs) {
      const current = this.#slots.get(config.name);
      if (current && current.config.fingerprint === config.fingerprint) {
        report.unchanged.push(config.name);
        continue;
      }
      const slot = this.#newSlot(config);
      if (!current) this.#slots.set(config.name, slot);
      (current ? report.reconnected : report.added).push(config.name);
      const start: ReloadStart = { slot, current, state: "connecting" };
      starting.set(config.name, start);
      work.push(
        slot.start().then(async () => {
          if (start.state === "cancelled") return;
          start.state = "applied";
          if (current) {
            // Make before break: the new connection serves calls before the old one goes.
            this.#slots.set(config.name, slot);
            await current.stop();
          }
          if (["failed", "parked", "reconnecting"].includes(slot.status)) {
            report.failed.push({ name: config.name, error: slot.errorText() ?? "unknown error" });
          }
          this.#notify();
        }),
      );
    }
    const done = Promise.all(work);
    if (options.signal && await abortedFirst(done, options.signal)) {
      const stopping: Promise<void>[] = [];
      for (const [name, start] of starting) {
        if (start.state !== "connecting") continue;
        start.state = "cancelled";
        report.cancelled.push(name);
        const listed = start.current ? report.reconnected : report.added;
        listed.splice(listed.indexOf(name), 1);
        if (!start.current) this.#slots.delete(name);
        stopping.push(start.slot.stop());
      }
      await Promise.all(stopping);
    }
    await done;
    // Keep configuration order for listings.
    const ordered = configs.filter((config) => this.#slots.has(config.name))
      .map((config) => [config.name, this.#slots.get(config.name)!] as const);
    this.#slots.clear();
    for (const [name, slot] of ordered) this.#slots.set(name, slot);
    report.toolCount = this.tools().length;
    this.#notify();
    return report;
  }

  /** Closes every connection and stops every stdio child. */
  async shutdown(): Promise<void> {
    const slots = [...this.#slots.values()];
    this.#slots.clear();
    await Promise.all(slots.map((slot) => slot.stop()));
  }

  #addSlot(config: McpServerConfig): ServerSlot {
    const slot = this.#newSlot(config);
    this.#slots.set(config.name, slot);
    return slot;
  }

  #newSlot(config: McpServerConfig): ServerSlot {
    return new ServerSlot(config, this.#options, () => this.#notify());
  }

  #notify(): void {
    for (const collision of this.#collisions()) {
      if (this.#warnedCollisions.has(collision.message)) continue;
      this.#warnedCollisions.add(collision.message);
      this.#options.onEvent?.({
        type: "warning",
        server: collision.server,
        message: collision.message,
      });
    }
    for (const listener of this.#listeners) listener();
  }

  /** Tools of a later server whose generated name an earlier server already registers. */
  #collisions(): { server: string; tool: RegisteredTool; message: string }[] {
    const owner = new Map<string, string>();
    const found: { server: string; tool: RegisteredTool; message: string }[] = [];
    for (const slot of this.#slots.values()) {
      for (const tool of slot.availableTools()) {
        const first = owner.get(tool.name);
        if (first === undefined) owner.set(tool.name, slot.config.name);
        else if (first !== slot.config.name) {
          found.push({
            server: slot.config.name,
            tool,
            message:
              `MCP server '${slot.config.name}': tool '${tool.originalName}' is not available ` +
              `because MCP server '${first}' already registers ${tool.name}; rename one of the servers`,
          });
        }
      }
    }
    return found;
  }
}

/** The runtime of one server. */
class ServerSlot {
  readonly config: McpServerConfig;
  status: ServerStatus;
  readonly #options: ResolvedOptions;
  readonly #notify: () => void;
  #connection: McpConnection | undefined;
  #connecting: Promise<McpConnection> | undefined;
  #tools: RegisteredTool[] = [];
  #warnings: string[] = [];
  #dropped: DroppedTool[] = [];
  /** Why the last refresh after `notifications/tools/list_changed` failed; gone once one works. */
  #refreshWarning: string | undefined;
  #error: McpServerError | undefined;
  #failures = 0;
  #inflight = 0;
  #chain: Promise<unknown> = Promise.resolve();
  #recycleWhenIdle: "idle" | "lifetime" | undefined;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #keepaliveTimer: ReturnType<typeof setInterval> | undefined;
  #idleTimer: ReturnType<typeof setTimeout> | undefined;
  #lifetimeTimer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;
  readonly #abort = new AbortController();

  constructor(config: McpServerConfig, options: ResolvedOptions, notify: () => void) {
    this.config = config;
    this.#options = options;
    this.#notify = notify;
    this.status = config.enabled ? "connecting" : "disabled";
  }

  /** First connect; never throws (the failure is in the state). */
  async start(): Promise<void> {
    if (this.status === "disabled") return;
    await this.#connect().catch(() => {});
  }

  state(): ServerState {
    const connection = this.#connection;
    return {
      name: this.config.name,
      status: this.status,
      transport: connection?.transport ?? this.config.transport,
      era: connection?.era,
      protocolVersion: connection?.protocolVersion,
      serverInfo: connection?.client.getServerVersion(),
      connectMs: connection ? Math.round(connection.connectMs) : undefined,
      toolCount: this.availableTools().length,
      error: this.errorText(),
      warnings: [...this.#warnings, ...(this.#refreshWarning ? [this.#refreshWarning] : [])],
      dropped: [...this.#dropped],
      pid: connection?.pid,
      logging: connection
        ? connection.client.getServerCapabilities()?.logging !== undefined
        : undefined,
    };
  }

  errorText(): string | undefined {
    return this.#error?.message;
  }

  /** Tools the agent may call now (none while parked, failed, stopped or disabled). */
  availableTools(): RegisteredTool[] {
    return ["connected", "idle", "reconnecting", "connecting"].includes(this.status)
      ? this.#tools
      : [];
  }

  findTool(name: string): RegisteredTool | undefined {
    return this.availableTools().find((tool) => tool.name === name);
  }

  /** Whether `name` would belong to this server (to explain why it is unavailable). */
  owns(name: string): boolean {
    return this.#tools.some((tool) => tool.name === name);
  }

  unavailableError(): McpServerError {
    const reason = this.#error
      ? `: ${this.#error.message.replace(/^MCP server '[^']*': /, "")}`
      : "";
    const retry = this.status === "parked" ? ` (it is retried ${PARKED_RETRY_TEXT})` : "";
    return new McpServerError(this.config.name, "closed", `is ${this.status}${reason}${retry}`);
  }

  async call(
    tool: RegisteredTool,
    args: Record<string, unknown>,
    { signal, onRetry, onProgress }: ToolCallOptions,
  ): Promise<CallToolResult> {
    const run = () => this.#callOnce(tool, args, signal, onRetry, onProgress);
    if (this.config.supportsParallelToolCalls) return await run();
    const result = this.#chain.then(run, run);
    this.#chain = result.catch(() => {});
    return await result;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.status = this.status === "disabled" ? "disabled" : "stopped";
    this.#abort.abort(new Error("the server was removed or shut down"));
    this.#clearTimers();
    const connecting = this.#connecting;
    const connection = this.#connection;
    this.#connection = undefined;
    await connection?.close();
    // A connect still under way is closed when it lands.
    await connecting?.then((late) => late.close(), () => {});
  }

  async #callOnce(
    tool: RegisteredTool,
    args: Record<string, unknown>,
    signal: AbortSignal | undefined,
    /** Set while a retry is still allowed; called when the retry is made. */
    onRetry: (() => void) | undefined | false,
    onProgress: ToolCallOptions["onProgress"],
  ): Promise<CallToolResult> {
    if (this.#stopped) {
      throw new McpServerError(this.config.name, "closed", "was removed or shut down");
    }
    const connection = await this.#ensureConnected();
    this.#inflight++;
    this.#clearIdleTimer();
    const timeoutMs = this.config.timeoutSeconds * 1000;
    try {
      if (tool.kind === "utility") {
        return await this.#utility(connection, tool.originalName, args, timeoutMs, signal);
      }
      // With onprogress the request carries a progressToken, so the server may report progress.
      const meta = connection.logRequestMeta;
      return await connection.client.callTool(
        { name: tool.originalName, arguments: args, ...(meta ? { _meta: meta } : {}) },
        { timeout: timeoutMs, signal, ...(onProgress ? { onprogress: onProgress } : {}) },
      ) as CallToolResult;
    } catch (error) {
      const failure = this.#callError(tool, error, signal, connection)
        .masked(this.config.substitutions);
      // The transport was dropped before its close was reported: the connection is lost now, so
      // a retry or the next call connects anew instead of using it again.
      if (failure.kind === "closed" && isConnectionGone(error) && !connection.closed) {
        this.#lost(connection, "the connection was closed");
      }
      // A dropped session may be retried for a read-only tool only: a write may have happened.
      if (
        failure.kind === "closed" && tool.readOnly && onRetry !== false && !this.#stopped &&
        !signal?.aborted
      ) {
        onRetry?.();
        return await this.#callOnce(tool, args, signal, false, onProgress);
      }
      throw failure;
    } finally {
      this.#inflight--;
      this.#afterActivity();
    }
  }

  #callError(
    tool: RegisteredTool,
    error: unknown,
    signal: AbortSignal | undefined,
    connection: McpConnection,
  ): McpServerError {
    const name = this.config.name;
    if (error instanceof McpServerError) return error;
    const oauth = oauthFailure(this.config, error);
    if (oauth) return oauth;
    // The SDK reports the caller's abort like a timeout; the signal tells them apart.
    if (signal?.aborted) {
      return new McpServerError(name, "closed", `tool '${tool.originalName}' was cancelled`, {
        cause: error,
      });
    }
    if (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout) {
      const stray = connection.strayAnswer();
      return new McpServerError(
        name,
        "timeout",
        `tool '${tool.originalName}' did not answer within timeout (${this.config.timeoutSeconds} s)${
          stray ? `; ${stray}` : raiseTimeoutHint(this.config, "timeout", "the tool")
        }`,
        { cause: error },
      );
    }
    if (connection.sessionEnded) {
      // The spec's way to say a session is over (HTTP 404 for its id): the next call starts anew.
      const retry = tool.readOnly ? "" : "; not retried because the tool may have side effects";
      return new McpServerError(
        name,
        "closed",
        `the server ended the MCP session during tool '${tool.originalName}' (HTTP 404 for its ` +
          `session id)${retry}; the next call starts a new session`,
        { cause: error },
      );
    }
    if (isConnectionGone(error)) {
      // The transport closes on the child's `close`, after its `exit`: the status is known here.
      const diagnosis = connection.diagnosis();
      if (diagnosis?.startsWith(OVERSIZED_MESSAGE)) {
        // Not "closed": a retry would get the same answer, over the same limit.
        return new McpServerError(
          name,
          "protocol",
          `${diagnosis} (tool '${tool.originalName}'), so the connection was closed`,
          { cause: error },
        );
      }
      const log = this.config.transport === "stdio" ? this.#options.stderrLogPath : undefined;
      const why = diagnosis
        ? `: ${diagnosis}`
        : ` (the server may have crashed${log ? `; see ${log}` : ""})`;
      const retry = tool.readOnly ? "" : "; not retried because the tool may have side effects";
      return new McpServerError(
        name,
        "closed",
        `the connection was lost during tool '${tool.originalName}'${why}${retry}`,
        { cause: error },
      );
    }
    if (error instanceof TypeError && /fetch failed|connection/i.test(error.message)) {
      const retry = tool.readOnly ? "" : "; not retried because the tool may have side effects";
      return new McpServerError(
        name,
        "closed",
        `the connection to ${this.config.url} was lost during tool '${tool.originalName}'${retry}`,
        { cause: error },
      );
    }
    if (error instanceof ProtocolError) {
      return new McpServerError(
        name,
        "tool",
        `tool '${tool.originalName}' failed: ${answerProblem(error) ?? error.message}`,
        { cause: error },
      );
    }
    // The same answer with an HTTP error status (2025-era Streamable HTTP): the SDK's error
    // holds the raw body.
    const refusal = jsonRpcRefusalOf(error);
    if (refusal) {
      return new McpServerError(
        name,
        "tool",
        `tool '${tool.originalName}' failed: the server refused the call: ${refusal}`,
        { cause: error },
      );
    }
    return new McpServerError(
      name,
      "protocol",
      `tool '${tool.originalName}' failed: ${answerProblem(error) ?? messageOf(error)}`,
      {
        cause: error,
      },
    );
  }

  async #utility(
    connection: McpConnection,
    utility: string,
    args: Record<string, unknown>,
    timeout: number,
    signal: AbortSignal | undefined,
  ): Promise<CallToolResult> {
    const client = connection.client;
    const options = { timeout, signal };
    // The logLevel `_meta` (modern era) asks for the server's log messages about these too.
    const meta = connection.logRequestMeta ? { _meta: connection.logRequestMeta } : undefined;
    const text = (value: unknown): CallToolResult => ({
      content: [{
        type: "text",
        text: typeof value === "string" ? value : JSON.stringify(value, null, 2),
      }],
    });
    switch (utility) {
      case "list_resources": {
        // Every page (the SDK walks nextCursor), then the templates: the uris a model can build.
        const listed = text((await client.listResources(meta, options)).resources);
        const templates = await this.#resourceTemplates(connection, meta, options);
        if (templates.length === 0) return listed;
        listed.content.push({
          type: "text",
          text: "Resource templates: read_resource also takes a uri made from a uriTemplate " +
            `below, each {variable} filled in:\n${JSON.stringify(templates, null, 2)}`,
        });
        return listed;
      }
      case "read_resource": {
        if (typeof args.uri !== "string") return invalidArgs("read_resource needs a string `uri`");
        const result = await client.readResource({ uri: args.uri, ...meta }, options);
        return {
          content: result.contents.map((item) =>
            "text" in item && typeof item.text === "string"
              ? { type: "text" as const, text: item.text }
              : {
                type: "text" as const,
                text: `[binary resource ${item.uri}, ${item.mimeType ?? "unknown type"}]`,
              }
          ),
        };
      }
      case "list_prompts":
        return text((await client.listPrompts(meta, options)).prompts);
      case "get_prompt": {
        if (typeof args.name !== "string") return invalidArgs("get_prompt needs a string `name`");
        const promptArgs = args.arguments && typeof args.arguments === "object"
          ? Object.fromEntries(Object.entries(args.arguments).map(([k, v]) => [k, String(v)]))
          : undefined;
        return text(
          await client.getPrompt({ name: args.name, arguments: promptArgs, ...meta }, options),
        );
      }
      default:
        return invalidArgs(`unknown utility tool ${utility}`);
    }
  }

  /** The server's resource templates; none when it has no `resources/templates/list`. */
  async #resourceTemplates(
    connection: McpConnection,
    meta: { _meta: Record<string, unknown> } | undefined,
    options: { timeout: number; signal: AbortSignal | undefined },
  ): Promise<ResourceTemplateType[]> {
    try {
      const listed = await connection.client.listResourceTemplates(meta, options);
      return listed.resourceTemplates;
    } catch (error) {
      // Templates are optional: a server without the method lists its resources all the same.
      const code = error instanceof ProtocolError ? error.code : jsonRpcErrorOf(error)?.code;
      if (code === METHOD_NOT_FOUND) return [];
      throw error;
    }
  }

  async #ensureConnected(): Promise<McpConnection> {
    const connection = this.#connection;
    if (connection && !connection.closed) return connection;
    if (this.status === "parked" || this.status === "failed") {
      // An explicit call is a good moment to try again.
      this.#clearRetryTimer();
    }
    return await this.#connect();
  }

  /** Single-flight connect (discovery included). */
  #connect(): Promise<McpConnection> {
    if (this.#connecting) return this.#connecting;
    const connecting = this.#doConnect().finally(() => {
      if (this.#connecting === connecting) this.#connecting = undefined;
    });
    this.#connecting = connecting;
    return connecting;
  }

  async #doConnect(): Promise<McpConnection> {
    if (this.status !== "idle") this.status = "connecting";
    let connection: McpConnection | undefined;
    try {
      connection = await connectServer(this.config, {
        clientInfo: this.#options.clientInfo,
        processEnv: this.#options.processEnv,
        processEnvNames: this.#options.processEnvNames,
        onStderr: this.#options.onStderr,
        stderrLogPath: this.#options.stderrLogPath,
        onServerLog: this.#options.onServerLog,
        serverLogLevel: this.#options.serverLogLevel,
        onToolsChanged: (tools) => this.#toolsChanged(tools),
        onToolsChangeFailed: (reason) => this.#toolsChangeFailed(reason),
        onElicitation: this.#options.onElicitation,
        onSampling: this.#options.onSampling,
        oauth: this.#options.oauth,
        signal: this.#abort.signal,
      });
      const capabilities = connection.client.getServerCapabilities();
      const tools = capabilities?.tools
        ? (await connection.client.listTools(undefined, {
          timeout: this.config.connectTimeoutSeconds * 1000,
          signal: this.#abort.signal,
        })).tools
        : [];
      if (this.#stopped) {
        throw new McpServerError(this.config.name, "closed", "was removed or shut down");
      }
      const toolset = buildToolset(this.config, tools, capabilities, connection.invalidTools());
      this.#keepWarnings(this.#warningsOf(connection, toolset.warnings));
      this.#tools = toolset.tools;
      this.#dropped = toolset.dropped;
      this.#refreshWarning = undefined;
      this.#connection = connection;
      this.#error = undefined;
      this.#failures = 0;
      this.status = "connected";
      connection.onLost((reason) => this.#lost(connection!, reason));
      this.#startTimers(connection);
      this.#emit({
        type: "connected",
        server: this.config.name,
        tools: this.#tools.length,
        era: connection.era,
        ms: Math.round(connection.connectMs),
      });
      this.#notify();
      return connection;
    } catch (error) {
      await connection?.close();
      // Connected, then discovery failed: what the connection had to say (an SSE fallback) is
      // still said with the failure, once (not again on each retry).
      if (connection) this.#keepWarnings(this.#warningsOf(connection, []));
      const oversized = connection?.diagnosis()?.startsWith(OVERSIZED_MESSAGE)
        ? connection.diagnosis()
        : undefined;
      const timedOut = error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout;
      const stray = connection?.strayAnswer();
      const refusal = jsonRpcRefusalOf(error);
      const problem = oversized ??
        (refusal ? `the server refused tools/list: ${refusal}` : answerProblem(error)) ??
        messageOf(error);
      const failure = (error instanceof McpServerError ? error : timedOut
        ? new McpServerError(
          this.config.name,
          "timeout",
          `no answer to tools/list within connect_timeout (${this.config.connectTimeoutSeconds} s)${
            stray ? `; ${stray}` : raiseTimeoutHint(this.config, "connect_timeout", "the server")
          }`,
          { cause: error },
        )
        : oauthFailure(this.config, error) ?? new McpServerError(
          this.config.name,
          "protocol",
          `tool discovery failed: ${problem}`,
          {
            cause: error,
          },
        )).masked(this.config.substitutions);
      this.#failed(failure);
      throw failure;
    }
  }

  #failed(error: McpServerError): void {
    this.#error = error;
    this.#failures++;
    if (this.#stopped) return;
    if (!this.#options.reconnect) {
      this.status = "failed";
      this.#emit({ type: "failed", server: this.config.name, error: error.message });
      this.#notify();
      return;
    }
    if (error.permanent || this.#failures >= INITIAL_TRIES) {
      this.status = "parked";
      this.#emit({ type: "parked", server: this.config.name, error: error.message });
      this.#scheduleRetry(PARKED_RETRY_MS);
    } else {
      this.status = "reconnecting";
      const delay = this.#backoff(this.#failures);
      this.#emit({
        type: "failed",
        server: this.config.name,
        error: error.message,
        retryInMs: delay,
      });
      this.#scheduleRetry(delay);
    }
    this.#notify();
  }

  #lost(connection: McpConnection, lostReason: string): void {
    if (this.#connection !== connection || this.#stopped) return;
    const reason = maskSubstitutions(lostReason, this.config.substitutions);
    this.#connection = undefined;
    this.#clearTimers();
    this.#emit({ type: "lost", server: this.config.name, reason });
    if (!this.#options.reconnect) {
      this.status = "failed";
      this.#error = new McpServerError(this.config.name, "closed", reason);
      this.#notify();
      return;
    }
    this.status = "reconnecting";
    this.#scheduleRetry(this.#backoff(1));
  }

  #backoff(failures: number): number {
    const base = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (failures - 1));
    return Math.round(base * (0.8 + 0.4 * this.#options.random()));
  }

  #scheduleRetry(delayMs: number): void {
    this.#clearRetryTimer();
    const timer = setTimeout(() => {
      this.#retryTimer = undefined;
      if (!this.#stopped) this.#connect().catch(() => {});
    }, delayMs);
    Deno.unrefTimer(timer);
    this.#retryTimer = timer;
  }

  #toolsChanged(tools: Tool[]): void {
    const connection = this.#connection;
    if (!connection) return;
    const toolset = buildToolset(
      this.config,
      tools,
      connection.client.getServerCapabilities(),
      connection.invalidTools(),
    );
    this.#keepWarnings(this.#warningsOf(connection, toolset.warnings));
    this.#tools = toolset.tools;
    this.#dropped = toolset.dropped;
    this.#refreshWarning = undefined;
    this.#emit({ type: "tools_changed", server: this.config.name, tools: this.#tools.length });
    this.#notify();
  }

  /** Listing the tools again after `notifications/tools/list_changed` failed: the old ones stay. */
  #toolsChangeFailed(reason: string): void {
    if (!this.#connection || this.#stopped) return;
    const message = maskSubstitutions(
      `MCP server '${this.config.name}': its tool list changed, but listing it again failed, so ` +
        `its previous tools stay registered: ${reason}`,
      this.config.substitutions,
    );
    // Listed with the server's warnings (mcp list, status) until a refresh works.
    this.#refreshWarning = message;
    this.#emit({ type: "warning", server: this.config.name, message });
  }

  /**
   * Makes `warnings` the server's warnings and emits those it did not have: a warning is said
   * once, not again at each connect (a retry after a failed discovery, a reconnect), unless it
   * went away in between or changed.
   */
  #keepWarnings(warnings: string[]): void {
    const known = new Set(this.#warnings);
    this.#warnings = warnings;
    for (const message of warnings.filter((message) => !known.has(message))) {
      this.#emit({ type: "warning", server: this.config.name, message });
    }
  }

  /** The warnings of `connection` and of its toolset, substituted values masked. */
  #warningsOf(connection: McpConnection, toolsetWarnings: readonly string[]): string[] {
    return [...connection.warnings, ...toolsetWarnings]
      .map((warning) => maskSubstitutions(warning, this.config.substitutions));
  }

  #startTimers(connection: McpConnection): void {
    this.#clearTimers();
    const interval = this.config.keepaliveIntervalSeconds;
    if (interval !== null) {
      const timer = setInterval(() => this.#keepalive(connection), interval * 1000);
      Deno.unrefTimer(timer);
      this.#keepaliveTimer = timer;
    }
    if (this.config.transport === "stdio" && this.config.maxLifetimeSeconds > 0) {
      const timer = setTimeout(
        () => this.#recycle("lifetime"),
        this.config.maxLifetimeSeconds * 1000,
      );
      Deno.unrefTimer(timer);
      this.#lifetimeTimer = timer;
    }
    this.#afterActivity();
  }

  async #keepalive(connection: McpConnection): Promise<void> {
    if (this.#connection !== connection || connection.closed) return;
    const timeout = Math.min(30_000, this.config.connectTimeoutSeconds * 1000);
    try {
      await connection.client.ping({ timeout });
    } catch (error) {
      // Gone already (a session the server ended, a stream that broke): that loss is reported.
      if (this.#connection !== connection || connection.closed) return;
      let failure = error;
      if (pingUnsupported(error)) {
        // No ping on this server (decisions.md): listing its tools proves liveness as well.
        try {
          await connection.client.listTools(undefined, { timeout });
          return;
        } catch (listError) {
          if (this.#connection !== connection || connection.closed) return;
          failure = listError;
        }
      }
      await connection.close();
      this.#lost(connection, `keepalive failed: ${messageOf(failure)}`);
    }
  }

  #afterActivity(): void {
    if (this.#inflight > 0) return;
    if (this.#recycleWhenIdle) {
      const reason = this.#recycleWhenIdle;
      this.#recycleWhenIdle = undefined;
      this.#recycle(reason);
      return;
    }
    this.#clearIdleTimer();
    if (
      this.config.transport === "stdio" && this.config.idleTimeoutSeconds > 0 && this.#connection
    ) {
      const timer = setTimeout(() => this.#recycle("idle"), this.config.idleTimeoutSeconds * 1000);
      Deno.unrefTimer(timer);
      this.#idleTimer = timer;
    }
  }

  /** Stops the stdio child; tools stay registered and the next call spawns it again. */
  #recycle(reason: "idle" | "lifetime"): void {
    if (this.#inflight > 0) {
      this.#recycleWhenIdle = reason;
      return;
    }
    const connection = this.#connection;
    if (!connection || this.#stopped) return;
    this.#connection = undefined;
    this.#clearTimers();
    this.status = "idle";
    this.#emit({ type: "recycled", server: this.config.name, reason });
    connection.close().catch(() => {});
  }

  #clearIdleTimer(): void {
    if (this.#idleTimer !== undefined) clearTimeout(this.#idleTimer);
    this.#idleTimer = undefined;
  }

  #clearRetryTimer(): void {
    if (this.#retryTimer !== undefined) clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
  }

  #clearTimers(): void {
    this.#clearIdleTimer();
    this.#clearRetryTimer();
    if (this.#keepaliveTimer !== undefined) clearInterval(this.#keepaliveTimer);
    if (this.#lifetimeTimer !== undefined) clearTimeout(this.#lifetimeTimer);
    this.#keepaliveTimer = undefined;
    this.#lifetimeTimer = undefined;
  }

  #emit(event: McpEvent): void {
    this.#options.onEvent?.(event);
  }
}

/**
 * Whether the keepalive ping was refused as a method the server does not have (JSON-RPC -32601),
 * in a JSON-RPC error response or, over Streamable HTTP, in the body of an HTTP 4xx.
 */
function pingUnsupported(error: unknown): boolean {
  const code = error instanceof ProtocolError ? error.code : jsonRpcErrorOf(error)?.code;
  return code === METHOD_NOT_FOUND;
}

/** JSON-RPC's code for a method the server does not have. */
const METHOD_NOT_FOUND = -32601;

function invalidArgs(message: string): CallToolResult {
  return { content: [{ type: "text", text: message }], isError: true };
}

/** A connect of one reload: the new slot, the one it replaces, and how far it got. */
interface ReloadStart {
  slot: ServerSlot;
  current?: ServerSlot;
  state: "connecting" | "applied" | "cancelled";
}

/** Whether `signal` aborts before `work` settles (`work` is not stopped: it goes on). */
function abortedFirst(work: Promise<unknown>, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onAbort = () => resolve(true);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(() => resolve(false), () => resolve(false))
      .finally(() => signal.removeEventListener("abort", onAbort));
  });
}
