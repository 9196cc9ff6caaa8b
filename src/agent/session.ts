/**
 * An agent session: the configured model, the MCP servers, the approval surface and the usage
 * metrics of one `<home>`, ready to run prompts. `agent run` opens one for a single run,
 * `agent chat` for a conversation, the gateway for its workers.
 *
 * @module
 */
import { join } from "node:path";
import { loadConfig, type ResolvedConfig } from "../home/config.ts";
import { configuredLogLevel, literalMessage, logger } from "../home/log.ts";
import type { EnvReader } from "../home/paths.ts";
import { waitSeconds } from "../home/seconds.ts";
import {
  loadMcpServers,
  type McpConfigIssue,
  type McpEvent,
  McpManager,
  type McpServersResult,
  PARKED_RETRY_TEXT,
  type ReloadReport,
  serverLogLevel,
  StderrLog,
} from "../mcp/mod.ts";
import { elicitationHandler, type ElicitationOutcome } from "../mcp/elicitation.ts";
import { storedOAuth } from "../mcp/oauth/mod.ts";
import { type SamplingModel, type SamplingOutcome, SamplingResponder } from "../mcp/sampling.ts";
import type { ExecutionSurface, TaskEntrypoint } from "../metrics/contract.ts";
import { MetricsFlusher } from "../metrics/flusher.ts";
import { openUsageMetrics, type UsageMetrics } from "../metrics/mod.ts";
import { AGENT_VERSION } from "../version.ts";
import { type ApprovalSurface, PolicyApprovals } from "./approvals.ts";
import { type ChatMessage, ModelClient, type ModelClientOptions } from "./model.ts";
import { buildSystemPrompt } from "./prompt.ts";
import { type RunEvent, runLoop, type RunResult } from "./run.ts";
import { type AgentSettings, readAgentSettings } from "./settings.ts";
import { loadSkills, type SkillLoad } from "./skills.ts";

/** How to open an {@linkcode AgentSession}. */
export interface AgentSessionOptions {
  /** The resolved configuration of `<home>`. */
  config: ResolvedConfig;
  /** How runs of this session start, for the metrics. */
  entrypoint: TaskEntrypoint;
  surface: ExecutionSurface;
  /**
   * Who answers approvals and fills in MCP elicitation forms. Default: the `approvals.gateway`
   * policy (deny unless `allow`), which declines every form.
   */
  approvals?: ApprovalSurface;
  /**
   * A running MCP manager to share (the gateway's); default the session starts its own. A shared
   * manager answers elicitation and sampling as its creator set it up, not through this session.
   */
  manager?: McpManager;
  /** Usage metrics to share; default the session opens `<home>`'s (disabled without consent). */
  metrics?: UsageMetrics;
  /** Options of the model client (tests shorten retries). */
  model?: ModelClientOptions;
  /** Process environment for stdio MCP servers and for re-reading the config. */
  env?: EnvReader;
  /** `${workspaceFolder}` of MCP entries. Default the working directory. */
  workspaceFolder?: string;
  /**
   * `mcp_servers` as the caller already read them (the gateway, which reports their problems
   * before the session opens); read from the configuration when not given.
   */
  mcpServers?: McpServersResult;
  /**
   * Stops {@linkcode AgentSession.open} while it connects to the MCP servers: what it started is
   * shut down (stdio children too) and `open` rejects with the signal's reason.
   */
  signal?: AbortSignal;
  /** Retry MCP servers that fail, in the background. Default true. */
  reconnect?: boolean;
  /** MCP connection events (connected, lost, …). */
  onMcpEvent?: (event: McpEvent) => void;
}

/** Per-run choices. */
export interface RunRequestOptions {
  /** Skills to load from `<home>/skills/<name>/SKILL.md`. */
  skills?: readonly string[];
  /** Earlier turns (chat). */
  history?: readonly ChatMessage[];
  /** Aborting cancels the run (see `RunCancelled`). */
  signal?: AbortSignal;
  /** Progress of the run. */
  onEvent?: (event: RunEvent) => void;
  /**
   * Told which skills were loaded and which were not (with a warning each) before the run
   * starts. Those warnings are then left out of the result's `warnings`: a conversation says them
   * once, not at every turn.
   */
  onSkills?: (load: SkillLoad) => void;
}

/** What a reload of `mcp_servers` did. */
export interface McpReload {
  report: ReloadReport;
  /** Problems in the new `mcp_servers` (entries with errors are left out). */
  issues: McpConfigIssue[];
}

const SEND_GRACE_MS = 3_000;

/**
 * A configured agent, ready to run prompts.
 *
 * @example
 * ```ts ignore
 * const session = await AgentSession.open({
 *   config: loadConfig(),
 *   entrypoint: "interactive",
 *   surface: "cli",
 * });
 * const result = await session.run("What is in my notes?");
 * console.log(result.answer);
 * await session.close();
 * ```
 */
export class AgentSession {
  readonly settings: AgentSettings;
  readonly manager: McpManager;
  readonly metrics: UsageMetrics;
  readonly model: ModelClient;
  /** Problems found in `mcp_servers` when the session opened or last reloaded. */
  mcpIssues: McpConfigIssue[];
  #config: ResolvedConfig;
  readonly #options: AgentSessionOptions;
  readonly #approvals: ApprovalSurface;
  readonly #ownsManager: boolean;
  readonly #ownsMetrics: boolean;
  readonly #stderr: StderrLog | undefined;
  readonly #redact: (text: string) => string;
  readonly #flusher: MetricsFlusher;
  /** Warnings of the usage metrics (a busy or damaged store) not yet passed on. */
  #metricsWarnings: string[] = [];
  #closed = false;

  private constructor(
    options: AgentSessionOptions,
    settings: AgentSettings,
    model: ModelClient,
    manager: McpManager | undefined,
    issues: McpConfigIssue[],
  ) {
    this.#options = options;
    this.#config = options.config;
    this.settings = settings;
    this.model = model;
    this.mcpIssues = issues;
    this.#approvals = options.approvals ?? new PolicyApprovals(settings.nonInteractiveApprovals);
    this.#ownsManager = manager === undefined;
    if (manager) {
      this.manager = manager;
    } else {
      const stderr = new StderrLog(join(options.config.paths.logs, "mcp-stderr.log"));
      this.#stderr = stderr;
      const sampling = new SamplingResponder({
        model: samplingModel(model, options),
        defaultModel: model.settings.model,
        onOutcome: (outcome) => this.#sampled(outcome),
      });
      this.manager = new McpManager({
        reconnect: options.reconnect ?? true,
        clientInfo: { name: "agent", version: AGENT_VERSION },
        processEnv: options.env,
        onStderr: (server, text) => stderr.write(server, text),
        stderrLogPath: stderr.path,
        onServerLog: (server, message) => stderr.message(server, message),
        // The commands that open a session have checked logging.level already.
        serverLogLevel: serverLogLevel(
          configuredLogLevel(options.config.source, options.env ?? ((name) => Deno.env.get(name))),
        ),
        onEvent: (event) => {
          logMcpEvent(event);
          options.onMcpEvent?.(event);
        },
        onElicitation: elicitationHandler(this.#approvals, logElicitation),
        onSampling: (server, params, signal) => sampling.respond(server, params, signal),
        oauth: storedOAuth(options.config.paths.mcpTokens, {
          onWarning: (server, message) => {
            const event: McpEvent = { type: "warning", server, message };
            logMcpEvent(event);
            options.onMcpEvent?.(event);
          },
        }),
      });
    }
    this.#ownsMetrics = options.metrics === undefined;
    // Its warnings join the next run's result (`agent run --json` lists them), else the log.
    this.metrics = options.metrics ??
      openUsageMetrics(options.config, {
        onWarning: (message) => this.#metricsWarnings.push(message),
      });
    this.#flusher = new MetricsFlusher(
      this.metrics,
      (what, error) => log.warn("{what}: {error}", { what, error: String(error) }),
      // Unsent packages dropped by the retention are said where the user looks: `agent metrics`
      // commands (stderr) and the gateway (its log).
      { reportDropped: false },
    );
    this.#redact = redactor(options.config, settings);
  }

  /**
   * Reads the settings, checks that a model is configured, and (unless a manager is shared)
   * connects the MCP servers. Throws a `ConfigError` for an unusable configuration.
   */
  static async open(options: AgentSessionOptions): Promise<AgentSession> {
    const settings = readAgentSettings(options.config);
    if (!settings.model) throw settings.modelProblem!;
    const model = new ModelClient(settings.model, {
      configFile: options.config.paths.config,
      ...options.model,
    });
    let issues: McpConfigIssue[] = [];
    let servers: ReturnType<typeof loadMcpServers>["servers"] = [];
    if (!options.manager) {
      ({ servers, issues } = options.mcpServers ??
        loadMcpServers(options.config, options.workspaceFolder));
    }
    const session = new AgentSession(options, settings, model, options.manager, issues);
    if (!options.manager) await session.manager.start(servers, { signal: options.signal });
    if (options.signal?.aborted) {
      await session.close();
      throw options.signal.reason;
    }
    return session;
  }

  /** Runs one prompt. Never throws for model or tool failures: they are the result's end reason. */
  async run(prompt: string, options: RunRequestOptions = {}): Promise<RunResult> {
    if (this.#closed) throw new Error("the agent session is closed");
    const loaded = loadSkills(this.#config.paths.skills, options.skills ?? []);
    const { skills } = loaded;
    for (const skill of skills) {
      try {
        this.metrics.recordSkillLoad(skill.name, skill.digest);
      } catch (error) {
        log.warn("could not count a skill load: {error}", { error: String(error) });
      }
    }
    options.onSkills?.(loaded);
    const metricsWarnings = this.#takeMetricsWarnings();
    for (const warning of [...loaded.warnings, ...metricsWarnings]) {
      log.warn(literalMessage(warning));
    }
    const warnings = [...(options.onSkills ? [] : loaded.warnings), ...metricsWarnings];
    const before = warnings.length;
    const result = await runLoop({
      systemPrompt: buildSystemPrompt({ extra: this.settings.systemPrompt, skills }),
      prompt,
      history: options.history,
      model: this.model,
      tools: this.manager,
      approvals: this.#approvals,
      limits: this.settings.limits,
      entrypoint: this.#options.entrypoint,
      surface: this.#options.surface,
      metrics: this.metrics.recorder,
      signal: options.signal,
      onEvent: options.onEvent,
      log: runLog,
      redact: this.#redact,
      warnings,
    });
    this.#afterRun();
    const late = this.#takeMetricsWarnings();
    result.warnings.push(...late);
    // The loop's own (an answer cut off or empty) and the late ones: the gateway has only the log.
    for (const warning of result.warnings.slice(before)) log.warn(literalMessage(warning));
    return result;
  }

  #takeMetricsWarnings(): string[] {
    return this.#metricsWarnings.splice(0);
  }

  /**
   * Re-reads `config.yaml` and `.env` and applies `mcp_servers` through the manager's diff:
   * removed servers close, added ones connect, changed ones reconnect. When `signal` aborts,
   * servers still connecting are stopped and left as before (`report.cancelled`).
   */
  async reloadMcp(options: { signal?: AbortSignal } = {}): Promise<McpReload> {
    this.#config = loadConfig({ env: this.#options.env, home: this.#config.paths.home });
    const { servers, issues } = loadMcpServers(this.#config, this.#options.workspaceFolder);
    this.mcpIssues = issues;
    const report = await this.manager.reload(servers, options);
    log.info(
      "MCP servers reloaded: {added} added, {removed} removed, {reconnected} reconnected, " +
        "{cancelled} cancelled",
      {
        added: report.added.length,
        removed: report.removed.length,
        reconnected: report.reconnected.length,
        cancelled: report.cancelled.length,
        tools: report.toolCount,
      },
    );
    return { report, issues };
  }

  /** Packages due metrics, lets a send under way finish briefly, closes what it opened. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#flusher.settle(SEND_GRACE_MS);
    if (this.#ownsManager) await this.manager.shutdown();
    this.#stderr?.close();
    if (this.#ownsMetrics) {
      this.#flusher.packageDue();
      this.metrics.close();
    }
    for (const warning of this.#takeMetricsWarnings()) log.warn(literalMessage(warning));
  }

  /** After a task: automatic packaging (at most once per UTC day) and sending what is due. */
  #afterRun(): void {
    this.#flusher.flush();
  }

  /** Logs a sampling request's end; one the model answered or failed is a model call. */
  #sampled(outcome: SamplingOutcome): void {
    const level = outcome.outcome === "served" ? "info" : "warn";
    logger("mcp")[level]("MCP server {server}: sampling {outcome}", { ...outcome });
    if (outcome.outcome === "refused" || outcome.model === undefined) return;
    const { provider, baseUrl } = this.model.settings;
    const model = outcome.model;
    try {
      this.metrics.recorder.record({
        kind: "model_call",
        model,
        provider,
        baseUrl,
        outcome: outcome.outcome === "served"
          ? "success"
          : outcome.outcome === "cancelled"
          ? "cancelled"
          : "failed",
      });
      this.metrics.recorder.record({ kind: "model_route", model, provider });
    } catch (error) {
      log.warn("could not count a sampling model call: {error}", { error: String(error) });
    }
  }
}

const log = logger("session");
const runLog = logger("run");

/**
 * One line per event that says what happened and why (the error, the reason): the console shows
 * the message alone, so the reason must be in it, not only in the properties.
 */
function logMcpEvent(event: McpEvent): void {
  const mcpLog = logger("mcp");
  // An error and a warning are texts made elsewhere that name the server (`MCP server 'x': …`):
  // written as they are, not quoted as a value.
  switch (event.type) {
    case "failed": {
      const retry = event.retryInMs === undefined
        ? ""
        : `; retrying in ${waitSeconds(event.retryInMs)} s`;
      mcpLog.warn(literalMessage(`${event.error}${retry}`), { ...event });
      return;
    }
    case "parked":
      mcpLog.warn(
        literalMessage(
          `${event.error}; its tools are withdrawn and it is retried ${PARKED_RETRY_TEXT}`,
        ),
        { ...event },
      );
      return;
    case "lost":
      mcpLog.warn(
        literalMessage(`MCP server '${event.server}': the connection was lost (${event.reason})`),
        { ...event },
      );
      return;
    case "warning":
      mcpLog.warn(literalMessage(event.message), { ...event });
      return;
    case "connected":
      mcpLog.info("MCP server {server}: connected ({era} era, {tools} tools, {ms} ms)", {
        ...event,
      });
      return;
    case "recycled":
      mcpLog.info("MCP server {server}: stopped ({reason}); the next call starts it again", {
        ...event,
      });
      return;
    case "tools_changed":
      mcpLog.info("MCP server {server}: its tool list changed ({tools} tools)", { ...event });
      return;
  }
}

function logElicitation(outcome: ElicitationOutcome): void {
  const level = outcome.reason === "answered" || outcome.reason === "url_mode" ? "info" : "warn";
  logger("mcp")[level]("MCP server {server}: elicitation {action} ({reason})", { ...outcome });
}

/**
 * Serves sampling requests with the configured model's endpoint and key: the model id, token cap,
 * temperature and timeout of each request replace the configured ones.
 */
function samplingModel(model: ModelClient, options: AgentSessionOptions): SamplingModel {
  return (request, signal) => {
    const client = new ModelClient({
      ...model.settings,
      model: request.model,
      maxTokens: request.maxTokens,
      timeoutSeconds: request.timeoutSeconds,
      ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
    }, { configFile: options.config.paths.config, ...options.model });
    return client.complete(request.messages, request.tools, { signal });
  };
}

/** Removes the API key and every `.env` value from text before it is logged. */
function redactor(config: ResolvedConfig, settings: AgentSettings): (text: string) => string {
  const secrets = new Set<string>();
  if (settings.model?.apiKey) secrets.add(settings.model.apiKey);
  for (const name of config.secrets.dotenvNames()) {
    const value = config.secrets.get(name);
    if (value && value.length >= 6) secrets.add(value);
  }
  const ordered = [...secrets].sort((a, b) => b.length - a.length);
  return (text) => {
    let out = text;
    for (const secret of ordered) out = out.split(secret).join("[REDACTED]");
    return out;
  };
}
