/**
 * Where everything lives under `<home>` (`$AGENT_HOME`, else `~/.agent`).
 *
 * @module
 */
import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";

/** Reads one environment variable; injectable so callers and tests need no globals. */
export type EnvReader = (name: string) => string | undefined;

/** Absolute paths of every file and folder the service keeps under `<home>`. */
export interface HomePaths {
  /** The home folder itself. */
  home: string;
  /** `config.yaml`: the user's configuration. */
  config: string;
  /** `.env`: the user's secrets (`KEY=value`). */
  dotenv: string;
  /** `webhook_subscriptions.json`: dynamic webhook routes. */
  subscriptions: string;
  /** `scripts/`: webhook route scripts. */
  scripts: string;
  /** `skills/`: one folder per skill with a `SKILL.md`. */
  skills: string;
  /** `mcp-tokens/`: OAuth records per MCP server. */
  mcpTokens: string;
  /** `logs/`: log files. */
  logs: string;
  /** `logs/gateway.log`: the structured log. */
  gatewayLog: string;
  /** `telemetry/shared_metrics/`: the usage-metrics store folder. */
  metrics: string;
  /** `telemetry/shared_metrics/metrics.sqlite3`: the usage-metrics store. */
  metricsDb: string;
  /** `telemetry/shared_metrics/outbox/`: built usage-metrics packages. */
  metricsOutbox: string;
  /** `gateway/inbox.sqlite3`: the gateway's durable event queue. */
  gatewayInbox: string;
  /** `gateway/inbox.sqlite3.lock`: held by the gateway serving this home, while it runs. */
  gatewayLock: string;
  /** `chat_history`: `agent chat`'s messages, for Up/Down recall in later sessions. */
  chatHistory: string;
}

/**
 * Resolves `<home>`: `$AGENT_HOME` when set and non-empty (a leading `~` is expanded, a relative
 * path is taken from `cwd`), else `~/.agent`.
 *
 * @example Resolve from an explicit environment
 * ```ts
 * import assert from "node:assert/strict";
 * import { resolveHome } from "./paths.ts";
 * const home = resolveHome((name) => name === "AGENT_HOME" ? "/srv/agent" : undefined);
 * assert(home === "/srv/agent");
 * ```
 */
export function resolveHome(
  env: EnvReader,
  userHome: string = homedir(),
  cwd: string = Deno.cwd(),
): string {
  const configured = env("AGENT_HOME")?.trim();
  if (!configured) return join(userHome, ".agent");
  const expanded = expandTilde(configured, userHome);
  return isAbsolute(expanded) ? resolve(expanded) : resolve(cwd, expanded);
}

/**
 * Expands a leading `~` or `~/` to the user's home folder; other paths are returned unchanged.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { expandTilde } from "./paths.ts";
 * assert(expandTilde("~/certs/a.pem", "/home/ada") === "/home/ada/certs/a.pem");
 * ```
 */
export function expandTilde(path: string, userHome: string = homedir()): string {
  if (path === "~") return userHome;
  if (path.startsWith("~/")) return join(userHome, path.slice(2));
  return path;
}

/**
 * Lists the paths of everything under `home`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { homePaths } from "./paths.ts";
 * assert(homePaths("/h").config === "/h/config.yaml");
 * ```
 */
export function homePaths(home: string): HomePaths {
  const metrics = join(home, "telemetry", "shared_metrics");
  return {
    home,
    config: join(home, "config.yaml"),
    dotenv: join(home, ".env"),
    subscriptions: join(home, "webhook_subscriptions.json"),
    scripts: join(home, "scripts"),
    skills: join(home, "skills"),
    mcpTokens: join(home, "mcp-tokens"),
    logs: join(home, "logs"),
    gatewayLog: join(home, "logs", "gateway.log"),
    metrics,
    metricsDb: join(metrics, "metrics.sqlite3"),
    metricsOutbox: join(metrics, "outbox"),
    gatewayInbox: join(home, "gateway", "inbox.sqlite3"),
    gatewayLock: join(home, "gateway", "inbox.sqlite3.lock"),
    chatHistory: join(home, "chat_history"),
  };
}
