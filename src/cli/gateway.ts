/**
 * `agent gateway run`: starts the gateway and runs until SIGINT/SIGTERM, then drains. On a fresh
 * `<home>` it first writes a commented `config.yaml` with the webhook platform enabled and a
 * generated global secret in `.env`. Everything is logged to `logs/gateway.log`; warnings and
 * errors are also printed on stderr, one line each.
 *
 * @module
 */
import type { Command } from "@commander-js/extra-typings";
import { loadConfig, type ResolvedConfig } from "../home/config.ts";
import { closeLogging, configuredLogLevel, configureLogging } from "../home/log.ts";
import { Gateway, GatewayBusyError } from "../gateway/gateway.ts";
import { STOP_GRACE_MS } from "../gateway/worker.ts";
import { STARTER_PORT } from "../gateway/starter_config.ts";
import { generateGlobalSecret, writeStarterConfig } from "../gateway/fresh_home.ts";
import {
  bindFailure,
  disabledByVariable,
  readWebhookSettings,
  webhookBaseUrl,
  type WebhookSettings,
} from "../webhook/settings.ts";
import { addGatewaySetupCommand } from "./gateway_setup.ts";
import { CliError, type CliIo, logUnwritable, warnAboutUnknownKeys } from "./io.ts";

/** Adds `gateway run` and `gateway setup` to `program`. */
export function addGatewayCommands(program: Command, io: CliIo): void {
  const gateway = program.command("gateway").description(
    "run the webhook gateway, or set it up",
  );
  addGatewaySetupCommand(gateway, io);
  gateway.command("run").description(
    "start the gateway: webhook listener, agent workers, MCP servers (Ctrl-C stops it)",
  ).addHelpText(
    "after",
    "\nOn a fresh home this writes a starter config.yaml (webhooks enabled, port 8644) and a\n" +
      "generated WEBHOOK_SECRET in .env. Restart the gateway after changing config.yaml;\n" +
      "subscriptions (agent webhook subscribe) are picked up without a restart.",
  ).action(async () => {
    let prepared;
    try {
      prepared = prepareRun(io);
    } catch (error) {
      // A misspelled key is often the cause (`enabeld: true`, `prot:`): said with the error.
      warnAboutUnknownKeys(io);
      throw error;
    }
    const { config, settings, level } = prepared;
    // Warnings and errors (no secret for a route, INSECURE_NO_AUTH, no model …) also on stderr:
    // someone starting the gateway at a terminal should not have to read the log to see them.
    try {
      await configureLogging(config.paths, {
        level,
        console: (line) => io.err(line),
      });
    } catch (error) {
      throw logUnwritable(config, error);
    }
    // From now on: a signal while the MCP servers connect stops the start (no stdio server is
    // left behind); one after the start, or once it is listening, stops it with the drain.
    using stop = stopSignals(io);
    const starting = new AbortController();
    stop.signalled.then(() => starting.abort(new StartStopped()));
    try {
      let gateway: Gateway;
      try {
        gateway = await Gateway.start({ config, env: io.env, signal: starting.signal });
      } catch (error) {
        if (error instanceof StartStopped) {
          io.out("Stopped while connecting to the MCP servers; the gateway did not start.\n");
          return;
        }
        if (error instanceof GatewayBusyError) throw new CliError(error.message);
        if (error instanceof Deno.errors.AddrInUse) {
          // Not by this home's gateway: its lock was taken before the bind.
          throw new CliError(
            `${settings.host ? `${settings.host} ` : ""}port ${settings.port} is in use by ` +
              "another program (perhaps a gateway of another home). Fix: stop it, or " +
              `${portFix(config, "to a free port")}`,
          );
        }
        const bindProblem = bindError(error, settings, config);
        if (bindProblem) throw bindProblem;
        throw error;
      }
      const where = webhookBaseUrl(settings);
      io.out(
        `Gateway listening on ${gateway.addresses.join(", ")}` +
          `${settings.host ? "" : " (IPv4 and IPv6)"}\n` +
          `  health:   ${where}/health\n  webhooks: ${where}/webhooks/<name>\n` +
          `  log:      ${config.paths.gatewayLog}\n` +
          "Press Ctrl-C to stop.\n",
      );
      await stop.signalled;
      io.out(
        "Stopping: finishing requests and agent runs under way (runs get at most " +
          `${STOP_GRACE_MS / 1000} s; press Ctrl-C again to stop them now: they run again at ` +
          "the next start) …\n",
      );
      using again = stopSignals(io);
      again.signalled.then(() => {
        io.out("Stopping the agent runs under way now; they run again at the next start.\n");
        gateway.hurry();
      });
      await gateway.stop();
      io.out("Gateway stopped.\n");
    } finally {
      await closeLogging();
    }
  });
}

/**
 * The configuration `gateway run` starts with: on a fresh home (no `config.yaml`), a starter
 * `config.yaml`, and a global secret generated when none is set once the platform is known to be
 * enabled. On a home set up before, a missing global secret stays missing: a static route without
 * its own secret then answers 403 with a startup error naming it, rather than taking a secret no
 * sender knows. A `config.yaml` or `WEBHOOK_SECRET` another command writes meanwhile is kept and
 * used; only what this process wrote is reported.
 */
function prepareRun(io: CliIo): Startable {
  const starter = writeStarterConfig(loadConfig({ env: io.env }), io.env);
  if (starter.created) io.out(createdMessage(starter.config));
  // Before anything is written to .env: a gateway that does not start changes nothing.
  const startable = checkStartable(starter.config, io);
  if (!starter.created) return startable;
  const secret = generateGlobalSecret(starter.config, io.env);
  if (secret.generated) {
    io.out(`Generated a global webhook secret: WEBHOOK_SECRET in ${secret.config.paths.dotenv}.\n`);
  }
  return checkStartable(secret.config, io);
}

/** A configuration the gateway can start with, its webhook settings and log level. */
interface Startable {
  config: ResolvedConfig;
  settings: WebhookSettings;
  level: ReturnType<typeof configuredLogLevel>;
}

/** `config` with what the gateway needs of it, or the error that stops it from starting. */
function checkStartable(config: ResolvedConfig, io: CliIo): Startable {
  const settings = readWebhookSettings(config);
  if (!settings.enabled) {
    const byVariable = disabledByVariable(config);
    if (byVariable) {
      throw new CliError(
        `the webhook platform is not enabled: ${byVariable.problem}. Fix: ${byVariable.fix}`,
      );
    }
    const why = settings.enabledBy.startsWith("default") ? "" : ` (${settings.enabledBy})`;
    // The fix `agent webhook list` and `subscribe` give too: setup also writes the port and secret.
    throw new CliError(
      `the webhook platform is not enabled${why}. Enable it with \`agent gateway setup ` +
        `--enable\`, or set platforms.webhook.enabled: true in ${config.paths.config} (or ` +
        "WEBHOOK_ENABLED=true)",
    );
  }
  return { config, settings, level: configuredLogLevel(config.source, io.env) };
}

/**
 * `Created <config.yaml> (…)`, naming the port WEBHOOK_PORT (environment or an existing .env)
 * sets instead of the file's. Said even when the settings do not read: the file was written.
 */
function createdMessage(config: ResolvedConfig): string {
  let port = "";
  try {
    const settings = readWebhookSettings(config);
    if (settings.port !== STARTER_PORT) port = `; WEBHOOK_PORT sets port ${settings.port} instead`;
  } catch {
    // the error is reported when the gateway reads its settings, right after
  }
  return `Created ${config.paths.config} (webhook platform enabled on port ${STARTER_PORT}${port}).\n`;
}

/**
 * A failed bind as an error naming the setting to change: an address that is not this machine's
 * or does not resolve (`platforms.webhook.extra.host`), a port the user may not bind (below 1024
 * without privileges). `undefined` for anything else.
 */
function bindError(
  error: unknown,
  settings: { host?: string; port: number },
  config: ResolvedConfig,
): CliError | undefined {
  const file = config.paths.config;
  const message = error instanceof Error ? error.message.split("\n")[0] : String(error);
  const where = `${settings.host ?? "every interface"} port ${settings.port}`;
  const failure = bindFailure(error, settings.host);
  if (failure === "denied") {
    return new CliError(
      `cannot listen on ${where}: ${message}. Ports below 1024 need privileges: ` +
        `${portFix(config, "to 1024 or above")}`,
    );
  }
  if (failure === "not_local") {
    return new CliError(
      `cannot listen on ${where}: ${message}. Set platforms.webhook.extra.host in ${file} to an ` +
        "address of this machine (e.g. 127.0.0.1), or remove it to listen on every interface",
    );
  }
  return undefined;
}

/**
 * How to change the gateway's port to `value` ("to a free port"), where the port comes from: `WEBHOOK_PORT` (in `.env` or the
 * environment) overrides `platforms.webhook.extra.port`, so changing the key alone would not do.
 */
function portFix(config: ResolvedConfig, value: string): string {
  if (config.secrets.get("WEBHOOK_PORT")?.trim()) {
    const where = config.secrets.source("WEBHOOK_PORT") === ".env"
      ? config.paths.dotenv
      : "the environment";
    return `set WEBHOOK_PORT in ${where} ${value} (it overrides platforms.webhook.extra.port)`;
  }
  return `set platforms.webhook.extra.port in ${config.paths.config} ${value}`;
}

/** A signal came while the gateway was starting. */
class StartStopped extends Error {
  override name = "StartStopped";
}

/**
 * Listens for Ctrl-C, SIGTERM and SIGHUP from now on: `signalled` resolves at the first one.
 * Disposing stops listening.
 */
function stopSignals(io: CliIo): { signalled: Promise<void> } & Disposable {
  let stopInterrupt: (() => void) | undefined;
  let stopTerminate: (() => void) | undefined;
  const dispose = () => {
    stopInterrupt?.();
    stopTerminate?.();
  };
  const signalled = new Promise<void>((resolve) => {
    const done = () => {
      dispose();
      resolve();
    };
    stopInterrupt = io.onInterrupt?.(done);
    stopTerminate = io.onTerminate?.(done);
  });
  return { signalled, [Symbol.dispose]: dispose };
}
