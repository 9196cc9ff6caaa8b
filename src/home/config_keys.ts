/**
 * The keys of `config.yaml` this service reads, so that a misspelled one (`mcp_server:`,
 * `model.temprature`) is reported instead of silently ignored.
 *
 * @module
 */
import { dirname, join } from "node:path";
import { isNode, visit } from "yaml";
import { type ConfigSource, isPlainObject } from "./config.ts";
import { closestKey, unknownKeyMessage } from "./suggest.ts";

/**
 * A mapping's known keys: each is a leaf (`true`, any value), a mapping checked in turn, or
 * `"free"`, a mapping whose keys are names the user chooses (servers, routes) and which is
 * checked where it is read.
 */
interface KeyTree {
  readonly [key: string]: true | "free" | KeyTree;
}

const PLATFORM_TARGET: KeyTree = { extra: { api_base_url: true } };

/** Every key read from `config.yaml`, in the order the README documents them. */
const KNOWN_KEYS: KeyTree = {
  mcp_servers: "free",
  model: {
    default: true,
    provider: true,
    base_url: true,
    api_key_env: true,
    temperature: true,
    max_tokens: true,
    max_retries: true,
    timeout_seconds: true,
  },
  agent: { max_iterations: true, run_timeout_seconds: true, system_prompt: true },
  approvals: { gateway: true, timeout_seconds: true },
  platforms: {
    webhook: {
      enabled: true,
      extra: {
        port: true,
        host: true,
        secret: true,
        rate_limit: { requests: true, window_seconds: true },
        max_body_bytes: true,
        body_timeout_seconds: true,
        script_timeout_seconds: true,
        script_sandbox: true,
        idempotency_ttl_seconds: true,
        concurrent_runs: true,
        delivery_attempts: true,
        delivery_retry_seconds: true,
        routes: "free",
      },
    },
    telegram: PLATFORM_TARGET,
    discord: PLATFORM_TARGET,
    slack: PLATFORM_TARGET,
    github_comment: PLATFORM_TARGET,
    gitlab_comment: PLATFORM_TARGET,
  },
  telemetry: { shared_metrics: { enabled: true, send: true, endpoint: true } },
  logging: { level: true },
};

/**
 * Keys other tools use for what a section of ours calls otherwise, which no spelling distance
 * finds: `model: {model: gpt-4o}` or `model.name` means `model.default`, `model.api_base` (as
 * LiteLLM names it) or `model.url` means `model.base_url`.
 */
const WELL_KNOWN_ALIASES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  model: {
    model: "default",
    name: "default",
    model_name: "default",
    api_base: "base_url",
    api_base_url: "base_url",
    url: "base_url",
    endpoint: "base_url",
  },
};

/**
 * Unknown keys whose "did you mean" would mislead: an API key written into `config.yaml` is not
 * what `model.api_key_env` takes (that names a variable), and it belongs in `.env`.
 */
const API_KEY_IN_CONFIG = /^(api[_-]?key|key)$/i;

function apiKeyMessage(key: string, configFile: string, model: Record<string, unknown>): string {
  const start = `unknown key \`${key}\` is ignored: the API key is read from ` +
    `${join(dirname(configFile), ".env")}, never from config.yaml; move it there as `;
  const named = typeof model.api_key_env === "string" ? model.api_key_env.trim() : "";
  if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(named)) {
    return `${start}${named}=<key> (the variable model.api_key_env names)`;
  }
  // The variable the model settings read: `<PROVIDER>_API_KEY` of the provider in effect.
  const written = typeof model.provider === "string" ? model.provider.trim().toLowerCase() : "";
  const baseUrl = typeof model.base_url === "string" ? model.base_url.trim() : "";
  const provider = written || (baseUrl ? "custom" : "openai");
  const variable = `${provider.replace(/[^A-Za-z0-9]/g, "_").toUpperCase()}_API_KEY`;
  return `${start}${variable}=<key> (the variable of provider ${provider}), or name the ` +
    "variable that holds it with model.api_key_env";
}

/**
 * For a key written at the wrong level (`platforms.webhook.port` for `...extra.port`, a platform
 * under `model`), where it is read: the known paths ending in `key` that share the most leading
 * sections with where it was written, when at most two do. `undefined` when there is none, or
 * when a sibling is a likely misspelling (that guess is better). A section the key is written in
 * (`model` of `model: {model: …}`) is no such place: the key is inside it already.
 */
function misplacedKeyMessage(
  key: string,
  path: readonly string[],
  siblings: readonly string[],
): string | undefined {
  if (closestKey(key, siblings) !== undefined) return undefined;
  const found: string[][] = [];
  const walk = (tree: KeyTree, at: string[]) => {
    for (const [name, child] of Object.entries(tree)) {
      const candidate = [...at, name];
      const enclosing = candidate.length <= path.length &&
        candidate.every((section, index) => section === path[index]);
      if (name === key && !enclosing) found.push(candidate);
      if (typeof child === "object") walk(child, candidate);
    }
  };
  walk(KNOWN_KEYS, []);
  const shared = (candidate: string[]) => {
    let count = 0;
    while (count < path.length && candidate[count] === path[count]) count++;
    return count;
  };
  const most = Math.max(-1, ...found.map(shared));
  const best = found.filter((candidate) => shared(candidate) === most);
  if (best.length === 0 || best.length > 2) return undefined;
  return `unknown key \`${key}\` is not read here and is ignored; did you mean ` +
    `${best.map((candidate) => `\`${candidate.join(".")}\``).join(" or ")}?`;
}

/** A key of `config.yaml` that nothing reads. */
export interface UnknownConfigKey {
  /** Dotted path of the key, e.g. `model.temprature`. */
  key: string;
  /** 1-based line of the key in the file. */
  line?: number;
  /** What is wrong, with the closest known key when there is one. */
  message: string;
}

/**
 * The keys of `source` that no part of the service reads, at every level it knows (the entries
 * of `mcp_servers` and of `routes` are checked where they are read). Nothing is refused: an
 * unknown key is ignored, and this says so. Keys merged in with `<<` are checked as if written in
 * place; a key whose value carries an anchor that an alias uses (`x-defaults: &defaults`) is not
 * reported: it is read through the alias.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ConfigSource } from "./config.ts";
 * import { unknownConfigKeys } from "./config_keys.ts";
 * const source = ConfigSource.parse("/h/config.yaml", "mcp_server:\n  fs: {command: x}\n");
 * assert.deepEqual(unknownConfigKeys(source), [{
 *   key: "mcp_server",
 *   line: 1,
 *   message: "unknown key `mcp_server` is ignored; did you mean `mcp_servers`?",
 * }]);
 * ```
 */
export function unknownConfigKeys(source: ConfigSource): UnknownConfigKey[] {
  const found: UnknownConfigKey[] = [];
  const aliased = new Set<string>();
  visit(source.document, { Alias: (_key, node) => void aliased.add(node.source) });
  const holdsUsedAnchor = (keyPath: string) => {
    const node = source.nodeOf(keyPath);
    return isNode(node) && node.anchor !== undefined && aliased.has(node.anchor);
  };
  const check = (value: Record<string, unknown>, known: KeyTree, path: string[]) => {
    for (const [key, child] of Object.entries(value)) {
      const keyPath = [...path, key].join(".");
      const expected = Object.hasOwn(known, key) ? known[key] : undefined;
      if (expected === undefined) {
        if (holdsUsedAnchor(keyPath)) continue;
        const section = path.join(".");
        const alias = Object.hasOwn(WELL_KNOWN_ALIASES, section)
          ? WELL_KNOWN_ALIASES[section][key.toLowerCase()]
          : undefined;
        found.push({
          key: keyPath,
          line: source.lineOf(keyPath),
          message: section === "model" && API_KEY_IN_CONFIG.test(key)
            ? apiKeyMessage(key, source.file, value)
            : alias !== undefined
            ? unknownKeyMessage(key, Object.keys(known), alias)
            : misplacedKeyMessage(key, path, Object.keys(known)) ??
              unknownKeyMessage(key, Object.keys(known)),
        });
      } else if (typeof expected === "object" && isPlainObject(child)) {
        check(child, expected, [...path, key]);
      }
    }
  };
  check(source.data, KNOWN_KEYS, []);
  return found;
}

/**
 * {@linkcode unknownConfigKeys} as warning lines: `<file>:<line>: <key>: <message>`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ConfigSource } from "./config.ts";
 * import { unknownConfigKeyWarnings } from "./config_keys.ts";
 * const source = ConfigSource.parse("/h/config.yaml", "model:\n  temprature: 0.2\n");
 * assert.deepEqual(unknownConfigKeyWarnings(source), [
 *   "/h/config.yaml:2: model.temprature: unknown key `temprature` is ignored; did you mean `temperature`?",
 * ]);
 * ```
 */
export function unknownConfigKeyWarnings(source: ConfigSource): string[] {
  return unknownConfigKeys(source).map(({ key, line, message }) =>
    `${source.file}${line === undefined ? "" : `:${line}`}: ${key}: ${message}`
  );
}
