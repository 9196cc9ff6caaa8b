/**
 * Loads `<home>/config.yaml` and `<home>/.env` into one resolved, typed configuration.
 *
 * @module
 */
import { dirname, join } from "node:path";
import {
  isAlias,
  isMap,
  isNode,
  isPair,
  isScalar,
  isSeq,
  LineCounter,
  parseDocument,
  visit,
} from "yaml";
import type { Document, Node, Pair, YAMLMap } from "yaml";
import { dotenvWarnings } from "./dotenv_lines.ts";
import { ConfigError } from "./errors.ts";
import { readTextIfExists } from "./files.ts";
import { ENDPOINT_KEY, validateEndpoint } from "./metrics_endpoint.ts";
import { firstInvalidUtf8 } from "./utf8.ts";
import { type EnvReader, type HomePaths, homePaths, resolveHome } from "./paths.ts";
import { SecretScope } from "./secrets.ts";

/** A parsed `config.yaml` with the positions of its keys, for error messages. */
export class ConfigSource {
  /** The file path (it may not exist: then the source is empty). */
  readonly file: string;
  /** The YAML document (empty when the file does not exist). */
  readonly document: Document;
  /** The plain data of the document (`{}` when empty). */
  readonly data: Record<string, unknown>;
  readonly #lines: LineCounter;

  private constructor(
    file: string,
    document: Document,
    data: Record<string, unknown>,
    lines: LineCounter,
  ) {
    this.file = file;
    this.document = document;
    this.data = data;
    this.#lines = lines;
  }

  /**
   * Parses YAML text. A syntax error, an alias without its anchor, a merge key (`<<`) that names
   * no mapping, or a root that is not a mapping, is a {@linkcode ConfigError} naming the file,
   * line and problem. Merge keys (`<<: *defaults`) are applied: the merged keys read as if
   * written in place, and the keys written in place win.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ConfigSource } from "./config.ts";
   * const source = ConfigSource.parse("/h/config.yaml", "telemetry:\n  shared_metrics:\n    enabled: true\n");
   * assert(source.get("telemetry.shared_metrics.enabled") === true);
   * const merged = ConfigSource.parse("/h/config.yaml", "d: &d {command: npx}\nmcp_servers:\n  fs:\n    <<: *d\n");
   * assert.deepEqual(merged.get("mcp_servers.fs"), { command: "npx" });
   * assert.equal(merged.lineOf("mcp_servers.fs.command"), 1);
   * ```
   */
  static parse(file: string, text: string): ConfigSource {
    const lines = new LineCounter();
    const document = parseDocument(text, { lineCounter: lines, prettyErrors: false, merge: true });
    const first = document.errors[0];
    if (first) {
      const pos = lines.linePos(errorOffset(text, first.code, first.message, first.pos[0]));
      const at = { file, line: pos.line, column: pos.col };
      if (first.code === "MULTIPLE_DOCS") {
        // The parser's own text ("use YAML.parseAllDocuments()") speaks to programmers.
        const name = file.split(/[\\/]/).at(-1);
        throw new ConfigError(
          at,
          `invalid YAML: a \`---\` line starts a second YAML document; ${name} must hold one`,
          `remove the \`---\` line and keep all keys in one document`,
        );
      }
      const repeated = first.code === "DUPLICATE_KEY"
        ? repeatedKey(document, first.pos[0])
        : undefined;
      if (repeated) {
        const earlier = lines.linePos(repeated.firstOffset).line;
        throw new ConfigError(
          at,
          `invalid YAML: the key \`${repeated.path}\` is written twice (lines ${earlier} and ${pos.line}); ` +
            "YAML allows a key once per mapping",
          `keep one of the two (merge their settings into it) and delete the other`,
        );
      }
      throw new ConfigError(
        at,
        `invalid YAML: ${firstLine(first.message)}`,
        "correct the YAML syntax at that line (check indentation, quotes and colons)",
      );
    }
    const aliasProblem = checkAliases(document);
    if (aliasProblem) {
      throw new ConfigError(
        { file, line: lines.linePos(aliasProblem.offset).line },
        aliasProblem.problem,
        aliasProblem.fix,
      );
    }
    const listKey = collectionKey(document);
    if (listKey) {
      throw new ConfigError(
        { file, line: lines.linePos(listKey.offset).line },
        `a ${listKey.kind} is used as a key, where a name is expected`,
        "write a plain name as the key (in quotes if it holds `[`, `{`, `?` or `:`)",
      );
    }
    let data: unknown;
    try {
      data = document.toJS() ?? {};
    } catch (error) {
      // checkAliases finds what the YAML library refuses; this is for anything it did not foresee.
      throw new ConfigError(
        { file },
        `invalid YAML: ${firstLine(error instanceof Error ? error.message : String(error))}`,
        "correct the YAML (check its anchors `&name`, aliases `*name` and merge keys `<<`)",
      );
    }
    if (!isPlainObject(data)) {
      throw new ConfigError(
        { file, line: 1 },
        `the top level must be a mapping of keys, got ${describe(data)}`,
        "start the file with keys such as `mcp_servers:` or `telemetry:`",
      );
    }
    return new ConfigSource(file, document, data, lines);
  }

  /** Reads `file`; a missing file is an empty configuration. */
  static read(file: string): ConfigSource {
    return ConfigSource.parse(file, readUtf8IfExists(file) ?? "");
  }

  /**
   * The value at a dotted key path, or `undefined` when it is missing or a section on the way is
   * empty (null). A section on the way that holds a scalar or a list (`telemetry: false`) is a
   * {@linkcode ConfigError} at that section: its keys would otherwise be silently ignored.
   */
  get(keyPath: string): unknown {
    const segments = keyPath.split(".");
    let node: unknown = this.data;
    for (const [index, segment] of segments.entries()) {
      if (node === null || node === undefined) return undefined;
      if (!isPlainObject(node)) {
        const section = segments.slice(0, index).join(".");
        throw this.error(
          section,
          `expected a mapping of settings, got ${describe(node)}`,
          `write ${section} as a mapping of its settings, with its keys indented below it ` +
            `(such as \`${segment}: …\`)`,
        );
      }
      if (!Object.hasOwn(node, segment)) return undefined;
      node = node[segment];
    }
    return node;
  }

  /**
   * The 1-based line of `keyPath` in the file: the line of its key (for a list index, of the
   * item), or `undefined` when the path is not in the file. A key merged in with `<<` is at the
   * line where the mapping it comes from writes it.
   */
  lineOf(keyPath: string): number | undefined {
    const offset = this.#find(keyPath)?.offset;
    return offset === undefined ? undefined : this.#lines.linePos(offset).line;
  }

  /**
   * The YAML node of the value at `keyPath` (found like {@linkcode ConfigSource.lineOf}), or
   * `undefined` when the path is not in the file. It may carry an anchor (`node.anchor`).
   */
  nodeOf(keyPath: string): unknown {
    return this.#find(keyPath)?.node;
  }

  #find(keyPath: string): { node: unknown; offset?: number } | undefined {
    let node: unknown = this.document.contents;
    let offset: number | undefined;
    for (const segment of keyPath.split(".")) {
      if (isAlias(node)) node = node.resolve(this.document);
      if (isMap(node)) {
        const pair = findPair(this.document, node, segment);
        if (!pair) return undefined;
        offset = isNode(pair.key) ? pair.key.range?.[0] : undefined;
        node = pair.value;
      } else if (isSeq(node) && /^\d+$/.test(segment)) {
        node = node.items[Number(segment)];
        offset = isNode(node) ? node.range?.[0] : undefined;
      } else {
        return undefined;
      }
    }
    return { node, offset };
  }

  /** A {@linkcode ConfigError} located at `keyPath`. */
  error(keyPath: string, problem: string, fix?: string): ConfigError {
    return new ConfigError(
      { file: this.file, key: keyPath, line: this.lineOf(keyPath) },
      problem,
      fix,
    );
  }

  /**
   * Reads a boolean. Accepts YAML booleans and the strings `true/1/yes/on`, `false/0/no/off`
   * (any case); anything else is a {@linkcode ConfigError}. Missing or null → `undefined`.
   */
  boolean(keyPath: string): boolean | undefined {
    const value = this.get(keyPath);
    if (value === undefined || value === null) return undefined;
    const parsed = parseBoolish(value);
    if (parsed === undefined) {
      throw this.error(
        keyPath,
        `expected true or false, got ${describe(value)}`,
        "set it to true or false",
      );
    }
    return parsed;
  }

  /** Reads a string. Missing or null → `undefined`; another type is a {@linkcode ConfigError}. */
  string(keyPath: string): string | undefined {
    const value = this.get(keyPath);
    if (value === undefined || value === null) return undefined;
    if (typeof value !== "string") {
      // As written: a long number read as one is rounded (1.2345678901234568e+26), and a secret
      // or id shown so is not the one in the file.
      // A secret's value is not repeated into a terminal or a CI log.
      const node = this.nodeOf(keyPath);
      const written = SECRET_KEY.test(keyPath.split(".").at(-1)!) && typeof value !== "object"
        ? `a ${typeof value} (not shown: the key holds a secret)`
        : isScalar(node) && typeof node.source === "string" && typeof value !== "object"
        ? `${typeof value} ${node.source}`
        : describe(value);
      throw this.error(keyPath, `expected a string, got ${written}`, "quote the value");
    }
    return value;
  }
}

/**
 * Parses a boolean-like value: booleans, `1`/`0`, and `true/yes/on`, `false/no/off` strings
 * (any case). Anything else → `undefined`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseBoolish } from "./config.ts";
 * assert(parseBoolish("Yes") === true && parseBoolish("off") === false);
 * assert(parseBoolish("maybe") === undefined);
 * ```
 */
export function parseBoolish(value: unknown): boolean | undefined {
  if (typeof value === "boolean") return value;
  if (value === 1 || value === 0) return value === 1;
  if (typeof value !== "string") return undefined;
  const text = value.trim().toLowerCase();
  if (["true", "1", "yes", "on"].includes(text)) return true;
  if (["false", "0", "no", "off"].includes(text)) return false;
  return undefined;
}

/**
 * The longest wait a duration setting that feeds a timer may ask for: one day. Timers hold a
 * signed 32-bit count of milliseconds; past 2 147 483 s they fire after 1 ms instead.
 */
export const MAX_TIMER_SECONDS = 86_400;

/**
 * Reads a number from `min` to `max` (`Infinity`: no upper limit); a quoted number counts.
 * Missing or null → `undefined`; anything else is a {@linkcode ConfigError} naming the key, the
 * allowed range and a fix (with `example` as a value to copy, when given).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ConfigSource, numberAt } from "./config.ts";
 * const source = ConfigSource.parse("/h/config.yaml", "agent:\n  run_timeout_seconds: 3000000\n");
 * assert.throws(
 *   () => numberAt(source, "agent.run_timeout_seconds", 0, 86_400, 600),
 *   /config\.yaml:2 .*expected a number from 0 to 86400, got 3000000\. Fix: set .* e\.g\. 600/,
 * );
 * assert.equal(numberAt(source, "agent.missing", 0, 86_400), undefined);
 * ```
 */
export function numberAt(
  source: ConfigSource,
  key: string,
  min: number,
  max: number,
  example?: number,
): number | undefined {
  return boundedNumber(source, key, min, max, example, false);
}

/**
 * Reads a whole number from `min` to `max` (`Infinity`: no upper limit), as
 * {@linkcode numberAt} does.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ConfigSource, integerAt } from "./config.ts";
 * const source = ConfigSource.parse("/h/config.yaml", "n: 2.5\nm: \"7\"\n");
 * assert.throws(() => integerAt(source, "n", 1, Infinity, 30), /expected a whole number, got 2\.5/);
 * assert.equal(integerAt(source, "m", 1, Infinity), 7);
 * ```
 */
export function integerAt(
  source: ConfigSource,
  key: string,
  min: number,
  max: number,
  example?: number,
): number | undefined {
  return boundedNumber(source, key, min, max, example, true);
}

function boundedNumber(
  source: ConfigSource,
  key: string,
  min: number,
  max: number,
  example: number | undefined,
  whole: boolean,
): number | undefined {
  const value = source.get(key);
  if (value === undefined || value === null) return undefined;
  const number = typeof value === "string" && value.trim() !== "" ? Number(value) : value;
  const kind = whole ? "a whole number" : "a number";
  const range = max === Infinity ? `≥ ${min}` : `from ${min} to ${max}`;
  const fix = `set ${key} to ${kind} ${range}${example === undefined ? "" : `, e.g. ${example}`}`;
  if (typeof number !== "number" || !Number.isFinite(number) || number < min || number > max) {
    throw source.error(
      key,
      // JSON.stringify shows .inf as null.
      `expected ${kind} ${range}, got ${
        typeof value === "number" ? String(value) : JSON.stringify(value)
      }`,
      `${fix}, or remove it for the default`,
    );
  }
  if (whole && !Number.isInteger(number)) {
    throw source.error(key, `expected a whole number, got ${number}`, fix);
  }
  return number;
}

/** Whether usage metrics are collected and sent, and why. */
export interface TelemetrySettings {
  /** Collect counters locally. */
  enabled: boolean;
  /** Send packages to `endpoint` (only when enabled and an endpoint the sender accepts is set). */
  send: boolean;
  /** Where packages are sent; only ever from `config.yaml`. */
  endpoint?: string;
  /** Which setting decided `enabled`, in the user's words. */
  decidedBy: string;
  /** Settings that were ignored, with the reason. */
  warnings: string[];
}

/** The configuration of one `<home>`, resolved. */
export interface ResolvedConfig {
  /** Paths under `<home>`. */
  paths: HomePaths;
  /** `config.yaml`, parsed. */
  source: ConfigSource;
  /** `.env` first, then the process environment. */
  secrets: SecretScope;
  /** Usage-metrics consent. */
  telemetry: TelemetrySettings;
  /**
   * Lines of `.env` that dotenv reads nothing from, or reads otherwise than written, as
   * `<file>:<line>: <problem>` (see {@linkcode dotenvWarnings}).
   */
  dotenvWarnings: string[];
}

/** Inputs of {@linkcode loadConfig}; all injectable for tests. */
export interface LoadConfigOptions {
  /** Process environment reader. Default `Deno.env.get`. */
  env?: EnvReader;
  /** `<home>`; default from `$AGENT_HOME` / `~/.agent`. */
  home?: string;
}

/**
 * Loads `<home>/config.yaml` and `<home>/.env`. Nothing is created or written. A broken
 * `config.yaml` throws a {@linkcode ConfigError} naming file, line and problem.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { loadConfig } from "./config.ts";
 * const home = await Deno.makeTempDir();
 * Deno.writeTextFileSync(`${home}/config.yaml`, "telemetry:\n  shared_metrics:\n    enabled: true\n");
 * const config = loadConfig({ home, env: () => undefined });
 * assert(config.telemetry.enabled);
 * ```
 */
export function loadConfig(options: LoadConfigOptions = {}): ResolvedConfig {
  const env = options.env ?? ((name: string) => Deno.env.get(name));
  const paths = homePaths(options.home ?? resolveHome(env));
  assertFolder(paths.home);
  const source = ConfigSource.read(paths.config);
  const dotenvText = readUtf8IfExists(paths.dotenv);
  const secrets = SecretScope.fromText(dotenvText, env);
  return {
    paths,
    source,
    secrets,
    telemetry: resolveTelemetry(source, secrets),
    dotenvWarnings: dotenvWarnings(paths.dotenv, dotenvText),
  };
}

/**
 * The text of `file` (as {@linkcode readTextIfExists}), refused with a {@linkcode ConfigError}
 * naming the line and column of the first byte that is not UTF-8: decoding it anyway would turn a
 * value (a secret in `.env`) into one that is silently wrong.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readUtf8IfExists } from "./config.ts";
 * const file = await Deno.makeTempFile();
 * Deno.writeFileSync(file, new Uint8Array([0x61, 0x0a, 0x63, 0x61, 0x66, 0xe9, 0x0a]));
 * assert.throws(() => readUtf8IfExists(file), /:2:4: .*not UTF-8 text: the byte 0xE9/);
 * Deno.writeTextFileSync(file, "café\n");
 * assert.equal(readUtf8IfExists(file), "café\n");
 * ```
 */
export function readUtf8IfExists(file: string): string | undefined {
  const text = readTextIfExists(file);
  // A lossy decode leaves U+FFFD; only then are the bytes looked at again.
  if (text === undefined || !text.includes("\uFFFD")) return text;
  const bytes = Deno.readFileSync(file);
  if ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff)) {
    throw new ConfigError(
      { file, line: 1 },
      "the file is UTF-16 text, not UTF-8",
      "save it as UTF-8 (most editors offer the encoding when saving)",
    );
  }
  const at = firstInvalidUtf8(bytes);
  if (at === undefined) return text; // a U+FFFD written as such
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < at; i++) {
    if (bytes[i] === 0x0a) {
      line++;
      lineStart = i + 1;
    }
  }
  const column = new TextDecoder().decode(bytes.subarray(lineStart, at)).length + 1;
  const byte = bytes[at].toString(16).toUpperCase().padStart(2, "0");
  throw new ConfigError(
    { file, line, column },
    `the file is not UTF-8 text: the byte 0x${byte} there is not valid UTF-8 (Latin-1 or ` +
      "Windows-1252 text?)",
    "save the file as UTF-8 (most editors offer the encoding when saving)",
  );
}

/** A `<home>` that exists but is not a folder (`AGENT_HOME` names a file) is refused. */
function assertFolder(home: string): void {
  let info;
  try {
    info = Deno.statSync(home);
  } catch (error) {
    // Missing: created when first written, unless a folder above it is a file. Unreadable:
    // reported by the first read.
    if (error instanceof Deno.errors.NotADirectory) throw underFile(home);
    return;
  }
  if (!info.isDirectory) {
    throw new Deno.errors.NotADirectory(
      `<home> ${home} is not a folder: set AGENT_HOME to a folder (it is created when missing), ` +
        "or unset it to use ~/.agent",
    );
  }
}

/** The error for a `<home>` that cannot be created because a folder above it is a file. */
function underFile(home: string): Error {
  let above = dirname(home);
  for (let next = dirname(above); next !== above; above = next, next = dirname(above)) {
    try {
      if (!Deno.statSync(above).isDirectory) break;
    } catch {
      // not there either: look further up
    }
  }
  return new Deno.errors.NotADirectory(
    `<home> ${home} cannot be created: ${above} is a file, not a folder. Set AGENT_HOME to a ` +
      "folder (it is created when missing), or unset it to use ~/.agent",
  );
}

/** The warning of `telemetry.shared_metrics.send: true` while collection is off. */
export const SEND_WHILE_OFF_WARNING =
  "telemetry.shared_metrics.send is true but collection is off; nothing is sent";
/** The warning of `telemetry.shared_metrics.send: true` without an endpoint. */
export const SEND_WITHOUT_ENDPOINT_WARNING =
  "telemetry.shared_metrics.send is true but telemetry.shared_metrics.endpoint is not set; " +
  "nothing is sent";

/**
 * Resolves usage-metrics consent. Order: `DO_NOT_TRACK` (set and not `0`/`false`) forces off;
 * then `telemetry.shared_metrics.enabled` in `config.yaml`; then `AGENT_SHARED_METRICS`; else
 * off. `send` needs `enabled` and an endpoint the sender accepts (else it is off, with a warning);
 * `endpoint` is read from `config.yaml` only.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ConfigSource, resolveTelemetry } from "./config.ts";
 * import { SecretScope } from "./secrets.ts";
 * const source = ConfigSource.parse("/h/config.yaml", "");
 * const scope = new SecretScope({}, (name) => name === "AGENT_SHARED_METRICS" ? "true" : undefined);
 * assert(resolveTelemetry(source, scope).enabled);
 * ```
 */
export function resolveTelemetry(source: ConfigSource, scope: SecretScope): TelemetrySettings {
  const warnings: string[] = [];
  const configured = source.boolean("telemetry.shared_metrics.enabled");
  const sendConfigured = source.boolean("telemetry.shared_metrics.send") ?? false;
  const dotenvFile = join(dirname(source.file), ".env");
  // DO_NOT_TRACK set in either place forces off: a `DO_NOT_TRACK=0` in .env must not undo it.
  const dnt = scope.both("DO_NOT_TRACK");
  const tracking = (value: string | undefined) => {
    const text = value?.trim().toLowerCase();
    return !!text && text !== "0" && text !== "false";
  };
  // The operator's environment beats .env for the default.
  const shared = scope.both("AGENT_SHARED_METRICS");
  const operatorDefault = shared.environment ?? shared.dotenv;
  const operatorSource = shared.environment !== undefined
    ? "in the environment"
    : `in ${dotenvFile}`;
  let enabled: boolean;
  let decidedBy: string;
  if (tracking(dnt.environment) || tracking(dnt.dotenv)) {
    enabled = false;
    const where = tracking(dnt.environment) ? "in the environment" : `in ${dotenvFile}`;
    decidedBy = `DO_NOT_TRACK is set ${where} (forces usage metrics off)`;
  } else if (configured !== undefined) {
    enabled = configured;
    decidedBy = `telemetry.shared_metrics.enabled: ${configured} in ${source.file}`;
  } else {
    const parsed = operatorDefault === undefined ? undefined : parseBoolish(operatorDefault);
    if (operatorDefault !== undefined && parsed === undefined) {
      warnings.push(
        `AGENT_SHARED_METRICS=${operatorDefault} ${operatorSource} is not true or false; ignored`,
      );
    }
    enabled = parsed ?? false;
    decidedBy = parsed === undefined
      ? "default (off until you opt in)"
      : `AGENT_SHARED_METRICS=${operatorDefault} ${operatorSource}`;
  }
  const endpoint = metricsEndpoint(source, enabled, warnings);
  let send = enabled && sendConfigured;
  if (sendConfigured && !enabled) {
    warnings.push(SEND_WHILE_OFF_WARNING);
  }
  if (send && !endpoint) {
    warnings.push(SEND_WITHOUT_ENDPOINT_WARNING);
    send = false;
  }
  // Said up front, not at each failed send; a run or the gateway goes on, collecting only.
  const refused = send && endpoint ? endpointRefusal(source, endpoint) : undefined;
  if (refused) {
    warnings.push(
      new ConfigError(refused.location, `${refused.problem}; nothing is sent`, refused.fix).message,
    );
    send = false;
  }
  return { enabled, send, endpoint, decidedBy, warnings };
}

/**
 * `telemetry.shared_metrics.endpoint` of `source`, trimmed, checked as every sender checks it
 * (https, or http to loopback only, no credentials); `undefined` when none is set.
 *
 * @throws {ConfigError} naming config.yaml, line and key, and the fix, for a value that is not a
 * string or an endpoint the sender refuses.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ConfigSource, checkedMetricsEndpoint } from "./config.ts";
 * const source = (endpoint: string) =>
 *   ConfigSource.parse("/h/config.yaml", `telemetry:\n  shared_metrics:\n    endpoint: ${endpoint}\n`);
 * assert.equal(checkedMetricsEndpoint(source("https://m.example/v2")), "https://m.example/v2");
 * assert.throws(() => checkedMetricsEndpoint(source("http://m.example/v2")), /not a loopback host/);
 * ```
 */
export function checkedMetricsEndpoint(source: ConfigSource): string | undefined {
  const endpoint = source.string(ENDPOINT_KEY)?.trim() || undefined;
  const refused = endpoint === undefined ? undefined : endpointRefusal(source, endpoint);
  if (refused) throw refused;
  return endpoint;
}

/** The error naming `endpoint` (the trimmed key of `source`) when the sender would refuse it. */
function endpointRefusal(source: ConfigSource, endpoint: string): ConfigError | undefined {
  const checked = validateEndpoint(endpoint);
  if (checked.ok) return undefined;
  return source.error(
    ENDPOINT_KEY,
    checked.reason.replace(/\.$/, ""),
    "set it to an https:// URL (or http:// to 127.0.0.1, [::1] or localhost), or run " +
      "`agent metrics enable --endpoint <url>`",
  );
}

/**
 * `telemetry.shared_metrics.endpoint`, trimmed. A value that is not a string stops every command
 * while usage metrics are on; while they are off it is not used, so it is only a warning: opting
 * out (`agent metrics disable`) never waits for that line to be fixed.
 */
function metricsEndpoint(
  source: ConfigSource,
  enabled: boolean,
  warnings: string[],
): string | undefined {
  try {
    return source.string(ENDPOINT_KEY)?.trim() || undefined;
  } catch (error) {
    if (enabled || !(error instanceof ConfigError)) throw error;
    warnings.push(unusedWhileOff(error));
    return undefined;
  }
}

/** The warning for a bad usage-metrics setting that is not used because metrics are off. */
export function unusedWhileOff(error: ConfigError): string {
  return new ConfigError(
    error.location,
    `${error.problem}; not used while usage metrics are off`,
    error.fix && `${error.fix} before enabling them`,
  ).message;
}

/** Whether `key` is a merge key (`<<`, unquoted) of a document parsed with `merge: true`. */
function isMergeKey(key: unknown): boolean {
  return isScalar(key) && typeof key.value === "symbol" && key.value.description === "<<";
}

/**
 * The pair of `map` whose key is `segment`: written in the map, else (as `<<` merges it) in the
 * mappings its merge keys name, earlier ones first.
 */
function findPair(
  document: Document,
  map: YAMLMap,
  segment: string,
  seen = new Set<YAMLMap>(),
): Pair | undefined {
  if (seen.has(map)) return undefined; // a merge that names its own mapping
  seen.add(map);
  const own = map.items.find((item) => isNode(item.key) && item.key.toJSON() === segment);
  if (own) return own;
  for (const item of map.items) {
    if (!isMergeKey(item.key)) continue;
    for (const source of mergeSources(document, item.value)) {
      const found = isMap(source) ? findPair(document, source, segment, seen) : undefined;
      if (found) return found;
    }
  }
  return undefined;
}

/** The nodes a merge key's value names: one alias or mapping, or a list of them; resolved. */
function mergeSources(document: Document, value: unknown): unknown[] {
  const items = isSeq(value) ? value.items : [value];
  return items.map((item) => isAlias(item) ? item.resolve(document) : item);
}

/** A problem with anchors, aliases or merge keys, at an offset of the text. */
interface AliasProblem {
  offset: number;
  problem: string;
  fix: string;
}

/**
 * The first alias without an anchor before it, or merge key (`<<`) whose value is not a mapping
 * (or an alias of one, or a list of those): the YAML library would throw without a line.
 */
function checkAliases(document: Document): AliasProblem | undefined {
  const anchors = new Set<string>();
  let found: AliasProblem | undefined;
  visit(document, (_key, node) => {
    if (isAlias(node)) {
      const offset = node.range?.[0] ?? 0;
      const target = anchors.has(node.source) ? node.resolve(document) : undefined;
      const range = isNode(target) ? target.range : undefined;
      if (target !== undefined && !(range && range[0] <= offset && offset < range[2])) return;
      found = target === undefined
        ? {
          offset,
          problem: `the alias *${node.source} has no anchor &${node.source} before it`,
          fix: `add \`&${node.source}\` to the value it should repeat (above this line), or ` +
            "write the value out here",
        }
        : {
          offset,
          problem: `the alias *${node.source} is inside the value it repeats (&${node.source}), ` +
            "so it would repeat forever",
          fix: `move the alias out of the value anchored &${node.source}`,
        };
      return visit.BREAK;
    }
    if (isNode(node) && node.anchor) anchors.add(node.anchor);
    if (isPair(node) && isMergeKey(node.key)) {
      const items = isSeq(node.value) ? node.value.items : [node.value];
      const bad = items.find((item) => {
        const source = isAlias(item) ? item.resolve(document) : item;
        // an alias without its anchor is reported when the visit reaches it
        return !isMap(source) && !(isAlias(item) && source === undefined);
      });
      if (bad === undefined) return;
      found = {
        offset: (node.key as Node).range?.[0] ?? 0,
        problem: `the merge key \`<<\` must name a mapping to merge in (\`<<: *defaults\`) or ` +
          `a list of them, got ${describeNode(document, bad)}`,
        fix: "point it at the anchor of a mapping (`&defaults` on a mapping above it), or " +
          "write the keys out instead",
      };
      return visit.BREAK;
    }
  });
  return found;
}

/**
 * The first key that is a list or mapping (`? [a, b]`): the YAML library would turn it into text
 * and print a warning of its own to stderr.
 */
function collectionKey(document: Document): { offset: number; kind: string } | undefined {
  let found: { offset: number; kind: string } | undefined;
  visit(document, {
    Pair(_key, pair) {
      const key = isAlias(pair.key) ? pair.key.resolve(document) : pair.key;
      if (!isMap(key) && !isSeq(key)) return undefined;
      const offset = (pair.key as Node).range?.[0] ?? 0;
      found = { offset, kind: isMap(key) ? "mapping" : "list" };
      return visit.BREAK;
    },
  });
  return found;
}

function describeNode(document: Document, node: unknown): string {
  if (isSeq(node)) return "a list";
  if (isAlias(node)) {
    return `the alias *${node.source} of ${describeNode(document, node.resolve(document))}`;
  }
  return describe(isScalar(node) ? node.value : node ?? null);
}

/** Whether `value` is a plain object (a YAML/JSON mapping). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The last segment of a key whose value is a secret. */
const SECRET_KEY = /secret|token|password|api_key/i;

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  return `${typeof value} ${JSON.stringify(value)}`;
}

/**
 * Where to point for a YAML error. The parser reports an unclosed quote at the end of the file;
 * the user needs the line where the quote was opened.
 */
function errorOffset(text: string, code: string, message: string, offset: number): number {
  if (code !== "MISSING_CHAR") return offset;
  const quote = message.includes('"quote') ? '"' : message.includes("'quote") ? "'" : undefined;
  if (!quote) return offset;
  const opening = text.lastIndexOf(quote, Math.min(offset, text.length) - 1);
  return opening >= 0 ? opening : offset;
}

/**
 * The dotted path (`mcp_servers.fs`, `routes[2].name`) of the key written again at `offset`, and
 * where its first writing is, when the document's mapping holding it can be found.
 */
function repeatedKey(
  document: Document,
  offset: number,
): { path: string; firstOffset: number } | undefined {
  let found: { path: string; firstOffset: number } | undefined;
  visit(document, {
    Pair(_index, pair, ancestors) {
      if (!isNode(pair.key) || pair.key.range?.[0] !== offset) return undefined;
      const map = ancestors.at(-1);
      if (!isMap(map)) return visit.BREAK;
      const key = keyText(pair.key);
      const first = map.items.find((other) =>
        other !== pair && isNode(other.key) && keyText(other.key) === key
      );
      const firstOffset = isNode(first?.key) ? first.key.range?.[0] : undefined;
      if (key === undefined || firstOffset === undefined) return visit.BREAK;
      found = { path: pathText([...ancestors, pair]), firstOffset };
      return visit.BREAK;
    },
  });
  return found;
}

/** A key as text, when it is a scalar (a mapping used as a key is not named). */
function keyText(key: Node): string | undefined {
  return isScalar(key) ? String(key.value) : undefined;
}

/** `a.b[0].c` for a chain of ancestors from the document down to a pair. */
function pathText(chain: readonly unknown[]): string {
  let path = "";
  chain.forEach((node, index) => {
    if (isPair(node)) {
      const key = isNode(node.key) ? keyText(node.key) : String(node.key);
      path += path === "" ? `${key}` : `.${key}`;
    } else if (isSeq(node)) {
      const item = chain[index + 1];
      path += `[${node.items.indexOf(item as never)}]`;
    }
  });
  return path;
}

function firstLine(text: string): string {
  return text.split("\n")[0].replace(/ at line \d+, column \d+:?$/, "");
}
