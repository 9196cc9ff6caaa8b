/**
 * The gateway: the webhook listener, the durable inbox and its workers, the MCP servers and the
 * agent session they run with, delivery, and the usage metrics, started and stopped together.
 *
 * @module
 */
import { PolicyApprovals } from "../agent/approvals.ts";
import type { RunResult } from "../agent/run.ts";
import { AgentSession } from "../agent/session.ts";
import { readAgentSettings } from "../agent/settings.ts";
import { defaultApiBaseUrl, deliver, type DeliveryContext, missingToken } from "../delivery/mod.ts";
import type { ResolvedConfig } from "../home/config.ts";
import { homeChannelOf } from "../webhook/deliver_extra.ts";
import type { DeliveryTargetName } from "../webhook/routes.ts";
import { unknownConfigKeyWarnings } from "../home/config_keys.ts";
import { literalMessage, logger } from "../home/log.ts";
import type { EnvReader } from "../home/paths.ts";
import { formatIssue, loadMcpServers } from "../mcp/mod.ts";
import { MetricsFlusher } from "../metrics/flusher.ts";
import { openUsageMetrics, type UsageMetrics } from "../metrics/mod.ts";
import { createWebhookApp, type ScriptVerdict } from "../webhook/listener.ts";
import { RouteTable } from "../webhook/route_table.ts";
import { checkSecret, type Route } from "../webhook/routes.ts";
import {
  findSandbox,
  resolveScript,
  runRouteScript,
  unsandboxedScriptsWarning,
} from "../webhook/scripts.ts";
import {
  acceptsUnsigned,
  noSecretFix,
  readWebhookSettings,
  type WebhookSettings,
} from "../webhook/settings.ts";
import { defaultPrompt } from "../webhook/templates.ts";
import { lockGatewayHome, recordGatewayAddress } from "./home_lock.ts";
import { LOW_OPEN_FILE_LIMIT, processOpenFileLimit } from "./file_limit.ts";
import { Inbox, type InboxEvent } from "./inbox.ts";
import { type ListenerEvent, ResilientServer } from "./listen.ts";
import { WorkerPool } from "./worker.ts";

/** How to start a {@linkcode Gateway}. */
export interface GatewayOptions {
  config: ResolvedConfig;
  /** Process environment (stdio MCP servers, script PATH). Default `Deno.env.get`. */
  env?: EnvReader;
  /** How often the inbox is pruned and the usage metrics flushed, in ms. Default hourly. */
  housekeepingIntervalMs?: number;
  /**
   * How often the gateway looks whether its home's lock file and inbox are still there, in ms.
   * Default 5 s.
   */
  lockCheckIntervalMs?: number;
  /**
   * Stops the start while the MCP servers connect: what was started is shut down (stdio
   * children too) and `start` rejects with the signal's reason.
   */
  signal?: AbortSignal;
}

export { GatewayBusyError } from "./home_lock.ts";

const log = logger("gateway");
const mcpLog = logger("mcp");

/** How long finished events stay in the inbox (for inspection). */
const FINISHED_EVENTS_KEPT_MS = 7 * 24 * 3_600_000;
/** How often the inbox is pruned and the usage metrics flushed, unless told otherwise. */
const HOUSEKEEPING_INTERVAL_MS = 3_600_000;
/** How often the lock file is looked at (a stat), unless told otherwise. */
const LOCK_CHECK_INTERVAL_MS = 5_000;

/**
 * A running gateway.
 *
 * @example
 * ```ts ignore
 * const gateway = await Gateway.start({ config: loadConfig() });
 * console.log(gateway.addresses);
 * await gateway.stop(); // drains in-flight requests and runs
 * ```
 */
export class Gateway {
  readonly settings: WebhookSettings;
  /** Where it listens, e.g. `http://[::]:8644` (dual-stack) or `http://127.0.0.1:8644`. */
  readonly addresses: string[];
  readonly #server: ResilientServer;
  readonly #pool: WorkerPool;
  readonly #session: AgentSession | undefined;
  readonly #inbox: Inbox;
  #lock: Deno.FsFile;
  /** A new lock being taken (see `#checkLock`). */
  #relocking: Promise<void> | undefined;
  /** Why the lock could not be taken again, once said. */
  #lockTakenBy: string | undefined;
  #lockTimer: ReturnType<typeof setInterval> | undefined;
  /** What keeps the inbox from being put back, once said. */
  #inboxProblem: string | undefined;
  readonly #metrics: UsageMetrics;
  #stopped: Promise<void> | undefined;
  #pruneTimer: ReturnType<typeof setInterval> | undefined;
  /** The prune under way (it goes in chunks, between requests), if any. */
  #pruning: Promise<void> | undefined;
  readonly #flusher: MetricsFlusher;

  private constructor(parts: {
    settings: WebhookSettings;
    server: ResilientServer;
    pool: WorkerPool;
    session: AgentSession | undefined;
    inbox: Inbox;
    lock: Deno.FsFile;
    metrics: UsageMetrics;
  }) {
    this.settings = parts.settings;
    this.#server = parts.server;
    this.#pool = parts.pool;
    this.#session = parts.session;
    this.#inbox = parts.inbox;
    this.#lock = parts.lock;
    this.#metrics = parts.metrics;
    this.#flusher = new MetricsFlusher(
      parts.metrics,
      (what, error) => log.warn("{what}: {error}", { what, error: String(error) }),
    );
    const { hostname, port } = parts.server.addr;
    this.addresses = [`http://${hostname.includes(":") ? `[${hostname}]` : hostname}:${port}`];
  }

  /** Starts everything; throws a `ConfigError` for an unusable configuration. */
  static async start(options: GatewayOptions): Promise<Gateway> {
    const { config } = options;
    const env = options.env ?? ((name: string) => Deno.env.get(name));
    const settings = readWebhookSettings(config);
    const agent = readAgentSettings(config);
    // Texts, not templates: `{chat_id: "123"}` in one is not a placeholder.
    for (const warning of unknownConfigKeyWarnings(config.source)) {
      log.warn(literalMessage(warning));
    }
    for (const warning of config.dotenvWarnings) log.warn(literalMessage(warning));
    // The usage-metrics settings too: the gateway records and sends by them.
    for (const warning of config.telemetry.warnings) log.warn(literalMessage(warning));
    for (const problem of settings.routeProblems) log.error(literalMessage(problem));
    for (const route of settings.routes) {
      if (!route.secret && !settings.secret && !acceptsUnsigned(settings)) {
        log.error(
          "route {route} has no secret and no global secret is set; it answers 403. Fix: {fix}",
          { route: route.name, fix: noSecretFix(config.source, route.name) },
        );
      }
    }
    // Served all the same (senders may already sign with them), but said at every start.
    const secrets: [string, string | undefined, string][] = [
      [
        "the global webhook secret (WEBHOOK_SECRET or platforms.webhook.extra.secret)",
        settings.secret,
        "run `agent gateway setup --generate-secret`",
      ],
      ...settings.routes.map((route): [string, string | undefined, string] => [
        `the secret of static route ${route.name}`,
        route.secret,
        "generate one, e.g. `openssl rand -hex 32`",
      ]),
    ];
    for (const [what, secret, hint] of secrets) {
      const problem = secret === undefined ? true : checkSecret(secret, hint);
      if (problem !== true) log.warn(`${what} is weak: {problem}`, { problem });
    }
    // Before anything starts (MCP servers, a writer thread): a second gateway on this home stops
    // here, and `agent webhook events` knows from the first moment that a gateway serves it.
    const lock = await lockGatewayHome(config.paths.gatewayLock);
    let metrics: UsageMetrics;
    try {
      metrics = openUsageMetrics(config, {
        onWarning: (message) => log.warn("{message}", { message }),
        retryOpen: true,
      });
    } catch (error) {
      lock.close();
      throw error;
    }
    // Said before the servers connect, and without a model too (its servers are not started
    // then): the problems `agent mcp list` reports, found at start, not at the first event. The
    // session connects the servers read here.
    const mcp = loadMcpServers(config);
    for (const issue of mcp.issues) {
      const text = literalMessage(formatIssue(issue, config.paths.config));
      if (issue.severity === "error") mcpLog.error(text);
      else mcpLog.warn(text);
    }
    // Without a model, direct-delivery routes still work; agent runs end with the reason.
    let session: AgentSession | undefined;
    try {
      session = agent.model
        ? await AgentSession.open({
          config,
          entrypoint: "gateway_message",
          surface: "gateway",
          approvals: new PolicyApprovals(agent.nonInteractiveApprovals),
          metrics,
          env,
          mcpServers: mcp,
          signal: options.signal,
        })
        : undefined;
    } catch (error) {
      metrics.close();
      lock.close();
      throw error;
    }
    // Said once, when a served route runs the agent: at start, or on the reload that adds the
    // first such subscription. Deliver-only routes need no model.
    let noModelSaid = false;
    const sayNoModel = () => {
      if (session || noModelSaid) return;
      noModelSaid = true;
      // The problem says what is wrong: no model, or one without its API key or endpoint.
      log.warn("agent runs fail until the model is set up: {problem}", {
        problem: agent.modelProblem?.message,
      });
      if (mcp.servers.some((server) => server.enabled)) {
        // Only agent runs use them: whether they connect is checked on demand.
        mcpLog.warn(
          "the MCP servers are not started until the model is set up (only agent runs use " +
            "them); `agent mcp list` connects them and says what fails",
        );
      }
    };
    let inbox: Inbox;
    // Once the gateway runs: takes its home's lock again (its file went with the folder).
    let relock = () => {};
    try {
      // Events are committed on a thread of their own, while this one serves requests.
      inbox = Inbox.open(config.paths.gatewayInbox, {
        writerThread: true,
        onWriterError: (error) =>
          log.error("the inbox writer thread stopped ({error}); events are stored without it", {
            error: String(error),
          }),
        onRestored: (events) => {
          log.warn(
            "the inbox {path} was deleted while the gateway ran; it is put back with the " +
              "{events} events the gateway still had open, and used on",
            { path: config.paths.gatewayInbox, events },
          );
          relock();
        },
      });
    } catch (error) {
      lock.close();
      await session?.close();
      metrics.close();
      throw error;
    }
    const delivery: DeliveryContext = {
      secrets: config.secrets,
      dotenv: config.paths.dotenv,
      apiBaseUrl: (target) =>
        config.source.string(`platforms.${target}.extra.api_base_url`)?.trim() ||
        defaultApiBaseUrl(target),
      log: (message, properties) =>
        logger("delivery").info("{message}", { message, ...properties }),
      warn: (message, properties) =>
        logger("delivery").warn("{message}", { message, ...properties }),
    };
    const pool = new WorkerPool({
      inbox,
      concurrency: settings.concurrentRuns,
      maxDeliveryAttempts: settings.deliveryAttempts,
      retryBaseMs: settings.deliveryRetrySeconds * 1000,
      run: (event, signal) =>
        session
          ? session.run(promptOf(event), { skills: event.plan.skills, signal })
          : Promise.resolve(noModel(agent.modelProblem?.message ?? "no model is configured")),
      deliver: async (event, message, onPartSent) => {
        const result = await deliver({
          target: event.plan.deliver as never,
          message,
          extra: event.plan.deliverExtra,
          payload: event.payload,
          event: event.event,
          route: event.route,
          deliveryId: event.deliveryId,
          direct: false,
          skipParts: event.partsSent,
          onPartSent,
        }, delivery);
        return result.ok ? { ok: true, detail: result.detail, parts: result.parts } : result;
      },
      log: (level, message, properties) => logAt(level, message, properties),
    });
    const routes = new RouteTable({
      file: config.paths.subscriptions,
      staticRoutes: settings.routes,
      report: (problem) => log.error("{problem}", { problem }),
      warn: (warning) => log.warn("{warning}", { warning }),
      changed: ({ added, removed, served }) => {
        log.info(
          // Lists of names, written `added: "ci" and "gh"; removed: (none)` (never a route name).
          "{file} changed: subscriptions served: {served}; added: {added}; removed: {removed}",
          { file: config.paths.subscriptions, served, added, removed },
        );
        if (added.some((name) => runsAgent(routes.get(name)))) sayNoModel();
      },
    });
    if (routes.all().some(runsAgent)) sayNoModel();
    // Said once: at start when a route has a script, else before the first script runs (a
    // subscription made later).
    let sandboxSaid = false;
    const saySandbox = async (atStart: boolean) => {
      if (sandboxSaid) return;
      sandboxSaid = true;
      if (settings.scriptSandbox === "auto") {
        const warning = await unsandboxedScriptsWarning(config.paths.dotenv, env);
        if (warning) log.warn(literalMessage(warning));
      } else if (settings.scriptSandbox === "bwrap" && atStart) {
        const found = await findSandbox(env);
        if ("error" in found) {
          log.error(
            literalMessage(
              `script_sandbox is bwrap but ${found.error}; until then the events of routes ` +
                "with a script are refused (503)",
            ),
          );
        }
      }
    };
    if (routes.all().some((route) => route.script && route.enabled)) await saySandbox(true);
    // Read once, at start, for static routes and subscriptions alike: said now rather than by
    // the first event's failed delivery or refused script.
    for (const route of routes.all()) {
      const script = route.script && route.enabled
        ? resolveScript(config.paths.scripts, route.script)
        : {};
      if ("error" in script) {
        // Checked again on each event: a script put in place later is run without a restart.
        log.error("route {route}: its events are refused (503) until its script can run: {error}", {
          route: route.name,
          error: script.error,
        });
      }
      const missing = missingToken(route.deliver, config.secrets) ??
        noHomeChannel(route.deliver, route.deliverExtra, config.secrets);
      if (!missing) continue;
      log.warn(
        `route {route} delivers to {target}, but ${missing}: its deliveries fail until it is ` +
          "added to {dotenv} and the gateway is restarted",
        { route: route.name, target: route.deliver, dotenv: config.paths.dotenv },
      );
    }
    const app = createWebhookApp({
      settings,
      routes,
      inbox,
      now: Date.now,
      runScript: async (route, payload, event, deliveryId): Promise<ScriptVerdict> => {
        await saySandbox(false);
        const outcome = await runRouteScript({
          scriptsDir: config.paths.scripts,
          script: route.script!,
          payload,
          event,
          deliveryId,
          route: route.name,
          timeoutMs: settings.scriptTimeoutSeconds * 1000,
          sandbox: settings.scriptSandbox,
          env,
        });
        return outcome;
      },
      deliverDirect: async (route, message, extra, payload, event, skipParts, onPartSent) => {
        const result = await deliver({
          target: route.deliver,
          message,
          extra,
          payload,
          event,
          route: route.name,
          direct: true,
          skipParts,
          onPartSent,
        }, delivery);
        return result.ok
          ? { ok: true, detail: result.detail }
          : { ok: false, error: result.error, partsSent: result.partsSent };
      },
      onAccepted: () => pool.wake(),
      log: logAt,
      stopping: () => server?.stopping ?? false,
    });
    let server: ResilientServer | undefined;
    try {
      server = new ResilientServer(
        // No host: "::" with IPv4 mapped, so both 127.0.0.1 and ::1 reach it.
        { hostname: settings.host ?? "::", port: settings.port },
        app.fetch,
        listenerLog(),
      );
    } catch (error) {
      inbox.close();
      lock.close();
      await session?.close();
      metrics.close();
      throw error;
    }
    try {
      recordGatewayAddress(lock, server.addr);
    } catch (error) {
      // Only `agent gateway setup` reads it, to tell whether a port in use is this gateway.
      log.warn("could not record the gateway's port in {lock}: {error}", {
        lock: config.paths.gatewayLock,
        error: String(error),
      });
    }
    pool.start();
    const gateway = new Gateway({ settings, server, pool, session, inbox, lock, metrics });
    relock = () => gateway.#checkLock(config.paths.gatewayLock);
    gateway.#lockTimer = setInterval(
      () => gateway.#checkFiles(config.paths.gatewayLock),
      options.lockCheckIntervalMs ?? LOCK_CHECK_INTERVAL_MS,
    );
    Deno.unrefTimer(gateway.#lockTimer);
    gateway.#housekeeping();
    const timer = setInterval(
      () => gateway.#housekeeping(),
      options.housekeepingIntervalMs ?? HOUSEKEEPING_INTERVAL_MS,
    );
    Deno.unrefTimer(timer);
    gateway.#pruneTimer = timer;
    log.info("gateway listening on {addresses}", { addresses: gateway.addresses });
    lowFileLimit(settings.host, server.addr.port, processOpenFileLimit());
    if (acceptsUnsigned(settings)) {
      log.warn(
        "INSECURE_NO_AUTH is on: routes without a secret accept unsigned requests on {host}",
        { host: settings.host },
      );
    } else if (settings.insecureNoAuth) {
      log.warn(
        "INSECURE_NO_AUTH is ignored: it applies only when platforms.webhook.extra.host is " +
          "127.0.0.1, ::1 or localhost (it is {host}); every route still needs a secret",
        { host: settings.host ?? "every interface" },
      );
    }
    return gateway;
  }

  /**
   * Every few seconds: the inbox and the lock are still where they were, or put back (the inbox
   * with all it held); a problem that stays is said once.
   */
  #checkFiles(lockPath: string): void {
    this.#checkLock(lockPath);
    this.#inbox.keepInPlace().then(() => this.#inboxProblem = undefined, (error) => {
      const said = String(error);
      if (this.#inboxProblem === said) return;
      this.#inboxProblem = said;
      log.error("{error}", { error: said });
    });
  }

  /**
   * Takes the home's lock again when its file is gone (deleted, alone or with the inbox's
   * folder): else a second gateway could start on this home. Says so once when another gateway
   * took it meanwhile.
   */
  #checkLock(path: string): void {
    if (this.#relocking || this.#stopped) return;
    try {
      const held = this.#lock.statSync();
      const there = Deno.statSync(path);
      if (held.dev === there.dev && held.ino === there.ino) return;
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) return; // cannot tell: looked at again later
    }
    this.#relocking = lockGatewayHome(path).then((lock) => {
      if (this.#stopped) return lock.close();
      this.#lock.close();
      this.#lock = lock;
      this.#lockTakenBy = undefined;
      recordGatewayAddress(lock, this.#server.addr);
      log.warn(
        "the lock {lock} was deleted while the gateway ran; it is taken again, so that no " +
          "other gateway starts on this home",
        { lock: path },
      );
    }, (error) => {
      const said = String(error);
      if (this.#lockTakenBy === said) return;
      this.#lockTakenBy = said;
      log.error(
        "the lock {lock} was deleted while the gateway ran, and cannot be taken again: {error}. " +
          "Two gateways on one home run and deliver events twice: stop one of them",
        { lock: path, error: said },
      );
    }).finally(() => this.#relocking = undefined);
  }

  /** Stops accepting, drains requests and runs under way, then closes everything (once). */
  stop(): Promise<void> {
    this.#stopped ??= (async () => {
      clearInterval(this.#pruneTimer);
      clearInterval(this.#lockTimer);
      await this.#server.shutdown();
      await this.#flusher.settle(0); // a send under way is retried by the next start
      await this.#pool.stop();
      await this.#session?.close();
      // An inbox deleted since the last look is put back with what it holds, for the next start.
      await this.#inbox.keepInPlace().catch((error) =>
        log.error("{error}", { error: String(error) })
      );
      this.#inbox.close();
      await this.#pruning; // ends at its next chunk now that the inbox is closed
      await this.#relocking;
      this.#lock.close();
      this.#flusher.packageDue();
      this.#metrics.close();
      log.info("gateway stopped");
    })();
    return this.#stopped;
  }

  /**
   * During {@linkcode stop}: aborts the agent runs under way instead of waiting for them (they
   * run again at the next start). Requests being answered still finish.
   */
  hurry(): void {
    this.#pool.abortRuns();
  }

  /**
   * Hourly, and at start: forgets expired delivery-id claims and events finished more than a week
   * ago (in chunks, between requests; none starts while the last one is under way), and flushes
   * the usage metrics (packages finished days; sends them when `send: true`), so a quiet gateway
   * still reports.
   */
  #housekeeping(): void {
    this.#pruning ??= this.#inbox.prune(Date.now(), FINISHED_EVENTS_KEPT_MS).then(
      () => {},
      (error) => log.warn("pruning the inbox failed: {error}", { error: String(error) }),
    ).finally(() => this.#pruning = undefined);
    this.#flusher.flush();
  }

  /** Resolves when the server has stopped. */
  get finished(): Promise<void> {
    return this.#server.finished;
  }
}

/**
 * Warns when the open-file limit is low and other machines can reach the listener: that many idle
 * connections stop it until they are closed (Deno's HTTP server has no idle or header timeout).
 */
function lowFileLimit(host: string | undefined, port: number, limit: number | undefined): void {
  const loopback = host === "127.0.0.1" || host === "::1" || host === "localhost";
  if (limit === undefined || limit >= LOW_OPEN_FILE_LIMIT || loopback) return;
  log.warn(
    "the open-file limit of the gateway is {limit} (`ulimit -n`): about that many idle " +
      "connections, from anyone who can reach port {port}, stop the listener until they are " +
      "closed. Fix: raise the hard limit before starting (`ulimit -Hn 65536`, or " +
      "LimitNOFILE=65536 in a systemd unit; Deno raises the soft limit to it), or set " +
      "platforms.webhook.extra.host to 127.0.0.1 behind a proxy that limits connections",
    { limit, port },
  );
}

/**
 * What is missing when a chat route names no chat and its `<PLATFORM>_HOME_CHANNEL` is not set
 * either (`deliver_extra.chat_id` is not given and TELEGRAM_HOME_CHANNEL is not set).
 */
function noHomeChannel(
  deliver: DeliveryTargetName,
  extra: Record<string, unknown>,
  secrets: { get(name: string): string | undefined },
): string | undefined {
  const variable = homeChannelOf(deliver, extra);
  if (variable === undefined || secrets.get(variable)?.trim()) return undefined;
  return `deliver_extra.chat_id is not given and ${variable} is not set`;
}

/** How often a listener that keeps failing is logged again. */
const LISTENER_LOG_INTERVAL_MS = 60_000;

/**
 * Logs the listener's failures: the first of a streak, then at most once a minute with how many
 * more there were, so a gateway out of file descriptors does not flood its log.
 */
function listenerLog(): (event: ListenerEvent) => void {
  let loggedAt = -Infinity;
  let unlogged = 0;
  return (event) => {
    if (event.type === "unclosed") {
      log.warn(
        "stopped without waiting for connections still open after their answer ({waited_ms} ms " +
          "after the last one): a sender that does not read its answer, or one refused a body " +
          "(413, 408) that neither sends the rest (Deno's HTTP server reads it before it closes " +
          "the connection) nor closes",
        { waited_ms: event.waitedMs },
      );
      return;
    }
    if (event.type === "listening") {
      if (unlogged === 0) {
        log.info("gateway listening again after {failures} failure(s)", {
          failures: event.failures,
        });
      }
      return;
    }
    const now = performance.now();
    if (event.failures > 1 && now - loggedAt < LISTENER_LOG_INTERVAL_MS) {
      unlogged++;
      return;
    }
    loggedAt = now;
    const error = String(event.error);
    const properties = { error, retry_ms: event.retryInMs, unlogged };
    if (/too many open files|os error 24/i.test(error)) {
      log.error(
        "the listener stopped accepting connections: the process is out of file descriptors " +
          "({error}), probably from too many open connections; raise `ulimit -n` or put a proxy " +
          "with connection limits in front. Listening again in {retry_ms} ms " +
          "({unlogged} more failures since the last line)",
        properties,
      );
    } else {
      log.error(
        "the listener stopped accepting connections: {error}. Listening again in {retry_ms} ms " +
          "({unlogged} more failures since the last line)",
        properties,
      );
    }
    unlogged = 0;
  };
}

/**
 * The prompt an event runs on. Older versions stored the blank render of a template as it was:
 * such an event (still queued after an upgrade, or run again by `agent webhook redeliver
 * --rerun`) gets the default prompt, as the listener now gives it.
 */
function promptOf(event: InboxEvent): string {
  if (event.prompt.trim() !== "") return event.prompt;
  log.warn(
    "event {id} (delivery {delivery_id}) on {route}: its stored prompt is blank (the route's " +
      "template rendered blank, and an older version kept that); the agent runs on the default " +
      "prompt (the event and its payload)",
    { id: event.id, delivery_id: event.deliveryId, route: event.route },
  );
  return defaultPrompt(event.route, event.payload, event.event);
}

/** Whether an event of `route` is an agent run (else it is delivered directly, or not served). */
function runsAgent(route: Route | undefined): boolean {
  return route !== undefined && !route.deliverOnly;
}

function noModel(problem: string): RunResult {
  return {
    answer: "",
    endReason: "failed",
    error: problem,
    toolCalls: [],
    modelCalls: 0,
    retries: 0,
    messages: [],
    timings: { totalMs: 0, modelMs: 0, toolMs: 0 },
    warnings: [],
  };
}

function logAt(
  level: "info" | "warning" | "error",
  message: string,
  properties?: Record<string, unknown>,
): void {
  if (level === "error") log.error(message, properties ?? {});
  else if (level === "warning") log.warn(message, properties ?? {});
  else log.info(message, properties ?? {});
}
