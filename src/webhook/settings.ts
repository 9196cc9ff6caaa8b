/**
 * The webhook platform's settings, resolved the same way for the CLI and the gateway:
 * `platforms.webhook.*` of `config.yaml`, each overridden on its own by its environment variable
 * (`WEBHOOK_ENABLED`, `WEBHOOK_PORT`, `WEBHOOK_SECRET`, read from `.env` first).
 *
 * @module
 */
import {
  type ConfigSource,
  integerAt,
  isPlainObject,
  MAX_TIMER_SECONDS,
  numberAt,
  parseBoolish,
  type ResolvedConfig,
} from "../home/config.ts";
import { ConfigError } from "../home/errors.ts";
import { readTextIfExists } from "../home/files.ts";
import type { HomePaths } from "../home/paths.ts";
import {
  isValidRouteName,
  normaliseRouteName,
  type Route,
  ROUTE_NAME_RULE,
  routeFromRaw,
} from "./routes.ts";

/** The webhook platform as configured. */
export interface WebhookSettings {
  enabled: boolean;
  /** Which setting decided `enabled`. */
  enabledBy: string;
  port: number;
  /** Bind address; `undefined` = dual-stack on every interface. */
  host?: string;
  /** The global secret, used by routes without their own. */
  secret?: string;
  /** Requests per route per window, counted after authentication. */
  rateLimit: { requests: number; windowSeconds: number };
  maxBodyBytes: number;
  /** How long a request's body may take to arrive in full (408 after), in seconds. */
  bodyTimeoutSeconds: number;
  scriptTimeoutSeconds: number;
  idempotencyTtlSeconds: number;
  /** Events the gateway runs the agent for (and delivers) at once; the others wait queued. */
  concurrentRuns: number;
  /** Tries at delivering an agent run's answer before giving up. */
  deliveryAttempts: number;
  /** Wait before the first delivery retry (doubling each time), in seconds. */
  deliveryRetrySeconds: number;
  scriptSandbox: "auto" | "bwrap" | "off";
  /** Accept unsigned requests (only honoured when `host` is a loopback address). */
  insecureNoAuth: boolean;
  /** Static routes of `config.yaml`. */
  routes: Route[];
  /** Problems of static routes (those routes are left out). */
  routeProblems: string[];
}

/** Defaults of decisions.md §6. */
export const WEBHOOK_DEFAULTS = {
  port: 8644,
  rateLimit: { requests: 30, windowSeconds: 60 },
  maxBodyBytes: 1024 * 1024,
  bodyTimeoutSeconds: 30,
  scriptTimeoutSeconds: 30,
  idempotencyTtlSeconds: 86_400,
  concurrentRuns: 2,
  deliveryAttempts: 5,
  deliveryRetrySeconds: 5,
} as const;

const BASE = "platforms.webhook";
const EXTRA = `${BASE}.extra`;

/** What {@linkcode readWebhookSettings} reads: `config.yaml`, and `.env` over the environment. */
export type WebhookConfig = Pick<ResolvedConfig, "source" | "secrets"> & {
  /** Where `.env` is, to name it (and the line) in the error of a malformed variable. */
  paths?: Pick<HomePaths, "dotenv">;
  /**
   * Keys of `config.yaml` about to be overwritten (by `agent gateway setup`): read as absent, so
   * a malformed value there does not stop the run that replaces it.
   */
  replacing?: readonly string[];
};

/**
 * Resolves the webhook settings. Malformed values are `ConfigError`s naming the key and fix; a
 * malformed variable (`WEBHOOK_PORT=abc`) names where it was set: `<home>/.env` and its line, or
 * the environment.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ConfigSource } from "../home/config.ts";
 * import { SecretScope } from "../home/secrets.ts";
 * import { readWebhookSettings } from "./settings.ts";
 * const source = ConfigSource.parse("/h/config.yaml", "platforms:\n  webhook:\n    enabled: true\n");
 * const secrets = new SecretScope({ WEBHOOK_PORT: "9000" }, () => undefined);
 * const settings = readWebhookSettings({ source, secrets });
 * assert(settings.enabled && settings.port === 9000);
 * ```
 */
export function readWebhookSettings(config: WebhookConfig): WebhookSettings {
  const { source: file, secrets } = config;
  const replacing = new Set(config.replacing ?? []);
  // Only the getters that read one key are wrapped; sections are checked on the file itself.
  const source = replacing.size === 0 ? file : withoutKeys(file, replacing);
  checkSections(file);
  const envEnabled = envBoolean(
    config,
    "WEBHOOK_ENABLED",
    `(it overrides ${BASE}.enabled of config.yaml)`,
    true,
  );
  let enabled = source.boolean(`${BASE}.enabled`) ?? false;
  let enabledBy = source.boolean(`${BASE}.enabled`) === undefined
    ? "default (off)"
    : `${BASE}.enabled in ${source.file}`;
  if (envEnabled !== undefined) {
    enabled = envEnabled;
    enabledBy = "WEBHOOK_ENABLED";
  }
  const envPort = secrets.get("WEBHOOK_PORT")?.trim();
  const port = envPort
    ? portFrom(
      envPort,
      () =>
        variableError(
          config,
          "WEBHOOK_PORT",
          `WEBHOOK_PORT=${envPort} is not a port (it overrides ${EXTRA}.port of config.yaml)`,
          "a port from 1 to 65535",
          true,
        ),
    )
    : portAt(source, `${EXTRA}.port`) ?? WEBHOOK_DEFAULTS.port;
  const host = source.string(`${EXTRA}.host`)?.trim() || undefined;
  const secret = secrets.get("WEBHOOK_SECRET")?.trim() ||
    source.string(`${EXTRA}.secret`)?.trim() ||
    undefined;
  const rate = source.get(`${EXTRA}.rate_limit`);
  const rateLimit: WebhookSettings["rateLimit"] = { ...WEBHOOK_DEFAULTS.rateLimit };
  // A quoted number ("30") counts, as it does for every other number of this section.
  if (typeof rate === "number" || (typeof rate === "string" && /^\s*\d+\s*$/.test(rate))) {
    rateLimit.requests = needed(source, `${EXTRA}.rate_limit`, COUNT, 30);
  } else if (isPlainObject(rate)) {
    if (rate.requests !== undefined) {
      rateLimit.requests = needed(source, `${EXTRA}.rate_limit.requests`, COUNT, 30);
    }
    if (rate.window_seconds !== undefined) {
      rateLimit.windowSeconds = needed(
        source,
        `${EXTRA}.rate_limit.window_seconds`,
        MAX_TIMER_SECONDS,
        60,
      );
    }
  } else if (rate !== undefined && rate !== null) {
    throw source.error(
      `${EXTRA}.rate_limit`,
      "expected a number of requests per minute, or {requests, window_seconds}",
      "e.g. rate_limit: 30",
    );
  }
  const sandbox = source.string(`${EXTRA}.script_sandbox`)?.trim().toLowerCase() ?? "auto";
  if (!["auto", "bwrap", "off"].includes(sandbox)) {
    throw source.error(
      `${EXTRA}.script_sandbox`,
      `unknown value '${sandbox}'`,
      "use auto, bwrap or off",
    );
  }
  const { routes, problems } = staticRoutes(source);
  return {
    enabled,
    enabledBy,
    port,
    host,
    secret,
    rateLimit,
    maxBodyBytes: integerAt(source, `${EXTRA}.max_body_bytes`, 1, COUNT, 1_048_576) ??
      WEBHOOK_DEFAULTS.maxBodyBytes,
    // Both feed a timer, which fires at once past 2 147 483 s: capped as the agent's waits are.
    bodyTimeoutSeconds: seconds(source, `${EXTRA}.body_timeout_seconds`, MAX_TIMER_SECONDS, 30) ??
      WEBHOOK_DEFAULTS.bodyTimeoutSeconds,
    scriptTimeoutSeconds:
      integerAt(source, `${EXTRA}.script_timeout_seconds`, 1, MAX_TIMER_SECONDS, 30) ??
        WEBHOOK_DEFAULTS.scriptTimeoutSeconds,
    // Not a timer (a claim's expiry in the inbox), but seconds × 1000 must stay a finite date.
    idempotencyTtlSeconds:
      integerAt(source, `${EXTRA}.idempotency_ttl_seconds`, 1, MAX_TTL_SECONDS, 86_400) ??
        WEBHOOK_DEFAULTS.idempotencyTtlSeconds,
    concurrentRuns: integerAt(source, `${EXTRA}.concurrent_runs`, 1, MAX_CONCURRENT_RUNS, 2) ??
      WEBHOOK_DEFAULTS.concurrentRuns,
    deliveryAttempts: integerAt(source, `${EXTRA}.delivery_attempts`, 1, COUNT, 5) ??
      WEBHOOK_DEFAULTS.deliveryAttempts,
    deliveryRetrySeconds:
      seconds(source, `${EXTRA}.delivery_retry_seconds`, MAX_TIMER_SECONDS, 5) ??
        WEBHOOK_DEFAULTS.deliveryRetrySeconds,
    scriptSandbox: sandbox as WebhookSettings["scriptSandbox"],
    // A typo must not quietly leave a test setup signed, or quietly open a real one.
    insecureNoAuth: envBoolean(
      config,
      "INSECURE_NO_AUTH",
      "(it lets routes without a secret accept unsigned requests when host is loopback)",
      false,
    ) ?? false,
    routes,
    routeProblems: problems,
  };
}

/** Why the listener could not bind, by the setting the user changes to fix it. */
export type BindFailure = "in_use" | "denied" | "not_local";

/**
 * Classifies an error from binding the listener on `host`: the port in use, a port this user may
 * not bind, or an address that is not this machine's or does not resolve. `undefined` for any
 * other error.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bindFailure } from "./settings.ts";
 * assert.equal(bindFailure(new Deno.errors.AddrInUse("in use"), undefined), "in_use");
 * assert.equal(bindFailure(new Error("failed to lookup address information"), "nohost"), "not_local");
 * assert.equal(bindFailure(new Error("other"), undefined), undefined);
 * ```
 */
export function bindFailure(error: unknown, host: string | undefined): BindFailure | undefined {
  if (error instanceof Deno.errors.AddrInUse) return "in_use";
  if (error instanceof Deno.errors.PermissionDenied) return "denied";
  const message = error instanceof Error ? error.message : String(error);
  const notLocal = error instanceof Deno.errors.AddrNotAvailable ||
    /lookup address|Name or service not known|nodename nor servname|os error 99/i.test(message);
  return host !== undefined && notLocal ? "not_local" : undefined;
}

/**
 * The base URL routes are reached at: `http://<host or localhost>:<port>`, IPv6 bracketed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { webhookBaseUrl } from "./settings.ts";
 * assert(webhookBaseUrl({ port: 8644 }) === "http://localhost:8644");
 * assert(webhookBaseUrl({ host: "::1", port: 80 }) === "http://[::1]:80");
 * assert(webhookBaseUrl({ host: "fe80::1%eth0", port: 80 }) === "http://[fe80::1%25eth0]:80");
 * ```
 */
export function webhookBaseUrl(settings: { host?: string; port: number }): string {
  const host = !settings.host || settings.host === "0.0.0.0" || settings.host === "::"
    ? "localhost"
    : settings.host;
  // An IPv6 zone (`fe80::1%eth0`) is written `%25` in a URL (RFC 6874).
  const shown = host.includes(":") ? `[${host.replace("%", "%25")}]` : host;
  return `http://${shown}:${settings.port}`;
}

/**
 * Whether routes without any secret accept unsigned requests: only with `INSECURE_NO_AUTH` on
 * and `host` set to a loopback address (`127.0.0.1`, `::1`, `localhost`), never when bound to
 * every interface.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { acceptsUnsigned } from "./settings.ts";
 * assert(acceptsUnsigned({ insecureNoAuth: true, host: "127.0.0.1" }));
 * assert(!acceptsUnsigned({ insecureNoAuth: true, host: undefined }));
 * ```
 */
export function acceptsUnsigned(settings: { insecureNoAuth: boolean; host?: string }): boolean {
  const host = settings.host;
  // Not home's isLoopbackHost (a URL's host, 127.0.0.0/8): the bind address as written, and only
  // the three the spec and the gateway's warning name turn signatures off.
  return settings.insecureNoAuth &&
    (host === "127.0.0.1" || host === "::1" || host === "localhost");
}

/**
 * How to give a static route without a secret one (the gateway answers it 403): the key to add,
 * where in `config.yaml` (file and line), or a global secret; the gateway's start and
 * `agent webhook test` say the same.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ConfigSource } from "../home/config.ts";
 * import { noSecretFix } from "./settings.ts";
 * const source = ConfigSource.parse(
 *   "/h/config.yaml",
 *   "platforms:\n  webhook:\n    extra:\n      routes:\n        ci: {deliver: log}\n",
 * );
 * assert.equal(
 *   noSecretFix(source, "ci"),
 *   "add `secret: <secret>` to platforms.webhook.extra.routes.ci (/h/config.yaml:5), or set a " +
 *     "global secret with `agent gateway setup --generate-secret`; then restart the gateway",
 * );
 * ```
 */
export function noSecretFix(source: Pick<ConfigSource, "file" | "lineOf">, name: string): string {
  const key = `platforms.webhook.extra.routes.${name}`;
  const line = source.lineOf(key);
  return `add \`secret: <secret>\` to ${key} (${source.file}${
    line === undefined ? "" : `:${line}`
  }), ` +
    "or set a global secret with `agent gateway setup --generate-secret`; then restart the gateway";
}

/** The URL of one route. */
export function routeUrl(settings: { host?: string; port: number }, name: string): string {
  return `${webhookBaseUrl(settings)}/webhooks/${name}`;
}

/**
 * How `WEBHOOK_ENABLED` keeps the webhook platform off (it overrides `platforms.webhook.enabled`
 * of config.yaml), named where it is set (`.env` and its line, or the environment), and how to
 * turn the platform on there; `undefined` when the variable does not turn it off. Deleting or
 * unsetting the variable is offered only when config.yaml enables the platform: else, it stays off.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ConfigSource } from "../home/config.ts";
 * import { SecretScope } from "../home/secrets.ts";
 * import { disabledByVariable } from "./settings.ts";
 * const source = ConfigSource.parse("/h/config.yaml", "platforms:\n  webhook:\n    enabled: true\n");
 * const secrets = new SecretScope({}, (name) => name === "WEBHOOK_ENABLED" ? "no" : undefined);
 * assert.deepEqual(disabledByVariable({ source, secrets, paths: { dotenv: "/h/.env" } }), {
 *   problem: "WEBHOOK_ENABLED=no in the environment turns it off (it overrides " +
 *     "platforms.webhook.enabled of config.yaml)",
 *   fix: "unset WEBHOOK_ENABLED (`unset WEBHOOK_ENABLED`), or set it to true",
 * });
 * ```
 */
export function disabledByVariable(
  config: WebhookConfig & { paths: Pick<HomePaths, "dotenv"> },
): { problem: string; fix: string } | undefined {
  const value = config.secrets.get("WEBHOOK_ENABLED")?.trim();
  if (!value || parseBoolish(value) !== false) return undefined;
  const overrides = `(it overrides ${BASE}.enabled of config.yaml)`;
  // Without the variable, config.yaml decides, and the platform is off unless it says true.
  const fileEnables = config.source.boolean(`${BASE}.enabled`) === true;
  if (config.secrets.source("WEBHOOK_ENABLED") === ".env") {
    const file = config.paths.dotenv;
    const text = readTextIfExists(file);
    const line = text === undefined ? undefined : dotenvLineOf(text, "WEBHOOK_ENABLED");
    return {
      problem: `WEBHOOK_ENABLED=${value} in ${file}${line === undefined ? "" : `:${line}`} ` +
        `turns it off ${overrides}`,
      fix: "set WEBHOOK_ENABLED=true there (`agent gateway setup --enable` does)" +
        (fileEnables ? ", or delete that line" : ""),
    };
  }
  return {
    problem: `WEBHOOK_ENABLED=${value} in the environment turns it off ${overrides}`,
    fix: fileEnables
      ? "unset WEBHOOK_ENABLED (`unset WEBHOOK_ENABLED`), or set it to true"
      : "set WEBHOOK_ENABLED=true in the environment",
  };
}

/** `source`, except that the keys of `replacing` read as absent. */
function withoutKeys(source: ConfigSource, replacing: ReadonlySet<string>): ConfigSource {
  return new Proxy(source, {
    get(target, property) {
      if (property === "get") {
        return (key: string) => replacing.has(key) ? undefined : target.get(key);
      }
      if (property === "boolean" || property === "string") {
        return (key: string) =>
          replacing.has(key) ? undefined : target[property as "boolean" | "string"](key);
      }
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

function staticRoutes(source: ConfigSource): { routes: Route[]; problems: string[] } {
  const raw = source.get(`${EXTRA}.routes`);
  if (raw === undefined || raw === null) return { routes: [], problems: [] };
  if (!isPlainObject(raw)) {
    throw source.error(
      `${EXTRA}.routes`,
      "expected a mapping of route name to settings",
      "write each route as a name with its settings under it, e.g. " +
        '`routes: {deploy: {events: [push], prompt: "Deploy {ref}"}}`',
    );
  }
  const routes: Route[] = [];
  const problems: string[] = [];
  for (const [name, value] of Object.entries(raw)) {
    const key = `${EXTRA}.routes.${name}`;
    const where = `${source.file}:${source.lineOf(key) ?? "?"} (${key})`;
    if (!isValidRouteName(name)) {
      // The name is the URL path segment: one that breaks the rule would be served at an
      // escaped URL no sender is given (`/webhooks/My%20Route`).
      const suggestion = normaliseRouteName(name);
      problems.push(
        `${where}: route name ${JSON.stringify(name)} is not valid, so the route is not ` +
          `served. Fix: rename the key to ${ROUTE_NAME_RULE}` +
          (suggestion.ok ? ` (e.g. ${suggestion.name})` : "") + ", and restart the gateway",
      );
      continue;
    }
    const parsed = routeFromRaw(name, value, "static", where);
    problems.push(...parsed.problems);
    if (parsed.route && parsed.problems.length === 0) routes.push(parsed.route);
  }
  return { routes, problems };
}

/**
 * A boolean variable of `.env` or the environment: `undefined` when unset or blank; a value that
 * is not a boolean is a ConfigError naming where it was set.
 */
function envBoolean(
  config: WebhookConfig,
  name: string,
  role: string,
  setupRewrites: boolean,
): boolean | undefined {
  const value = config.secrets.get(name)?.trim();
  if (!value) return undefined;
  const parsed = parseBoolish(value);
  if (parsed === undefined) {
    throw variableError(
      config,
      name,
      `${name}=${value} is not true or false ${role}`,
      "true or false",
      setupRewrites,
    );
  }
  return parsed;
}

/**
 * The error of a malformed variable, located where its value came from: the line of
 * `<home>/.env` (which wins over the environment), else the environment.
 */
function variableError(
  config: WebhookConfig,
  name: string,
  problem: string,
  expected: string,
  setupRewrites: boolean,
): ConfigError {
  if (config.secrets.source(name) === ".env") {
    const file = config.paths?.dotenv ?? "<home>/.env";
    const text = config.paths ? readTextIfExists(config.paths.dotenv) : undefined;
    return new ConfigError(
      { file, key: name, line: text === undefined ? undefined : dotenvLineOf(text, name) },
      problem,
      `set ${name} to ${expected} in ${file}, or delete that line` +
        (setupRewrites ? " (`agent gateway setup` also rewrites it)" : ""),
    );
  }
  return new ConfigError(
    { file: "the environment", key: name, line: undefined },
    problem,
    `set ${name} to ${expected} in the environment, or unset it (\`unset ${name}\`)`,
  );
}

/** The 1-based line of the last assignment of `name` in dotenv text (the one that counts). */
export function dotenvLineOf(text: string, name: string): number | undefined {
  const assignment = new RegExp(`^\\s*(?:export\\s+)?${name}(?:\\s*=|:\\s)`);
  let found: number | undefined;
  text.split(/\r?\n/).forEach((line, index) => {
    if (assignment.test(line)) found = index + 1;
  });
  return found;
}

/**
 * `platforms`, `platforms.webhook` and its `extra` must be mappings (or empty: a key whose
 * children are all commented out is null). A list or a string there would silently hide every
 * setting below it.
 */
function checkSections(source: ConfigSource): void {
  const sections: [string, string][] = [
    ["platforms", "webhook:"],
    [BASE, "enabled: true"],
    [EXTRA, "port: 8644"],
  ];
  for (const [key, example] of sections) {
    const value = source.get(key);
    if (value === undefined || value === null) return;
    if (!isPlainObject(value)) {
      throw source.error(
        key,
        `expected a mapping of settings, got ${
          Array.isArray(value) ? "a list" : `${typeof value} ${JSON.stringify(value)}`
        }`,
        `write it as a mapping, with its keys indented below it (e.g. \`${example}\`), or ` +
          "delete it",
      );
    }
  }
}

function portFrom(text: string, error: () => ConfigError): number {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port < 1 || port > 65_535) throw error();
  return port;
}

function portAt(source: ConfigSource, key: string): number | undefined {
  const value = source.get(key);
  if (value === undefined || value === null) return undefined;
  return portFrom(
    typeof value === "number" || typeof value === "string" ? String(value).trim() : "",
    () =>
      source.error(key, `expected a port number, got ${JSON.stringify(value)}`, "use 1 to 65535"),
  );
}

/** No upper limit on a count (requests, bytes, attempts). */
const COUNT = Infinity;
/**
 * The most runs at once: each holds a model request and its tool calls; past this many, a model
 * server or an MCP server is the limit, not the gateway.
 */
const MAX_CONCURRENT_RUNS = 64;

/** The longest a delivery id is remembered: a year. */
const MAX_TTL_SECONDS = 365 * 86_400;

/** The shortest wait a seconds setting may ask for: a timer's resolution, 1 ms. */
const MIN_SECONDS = 0.001;

/** A whole number from 1 to `max` under a key that is present, so null is not "the default". */
function needed(source: ConfigSource, key: string, max: number, example: number): number {
  const value = integerAt(source, key, 1, max, example);
  if (value === undefined) {
    throw source.error(key, "a value is needed", `set it to a whole number, e.g. ${example}`);
  }
  return value;
}

/** A wait in seconds, fractions allowed (0.5), from 1 ms to `max`. */
function seconds(
  source: ConfigSource,
  key: string,
  max: number,
  example: number,
): number | undefined {
  return numberAt(source, key, MIN_SECONDS, max, example);
}
