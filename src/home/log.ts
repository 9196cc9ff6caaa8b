/**
 * Structured logging to `<home>/logs/gateway.log` (JSON lines, rotated by size), and optionally
 * warnings and errors as readable lines on the console.
 *
 * @module
 */
import {
  configure,
  dispose,
  getJsonLinesFormatter,
  getLogger,
  type Logger,
  type LogLevel,
  type LogRecord,
  type Sink,
  withFilter,
} from "@logtape/logtape";
import type { ConfigSource } from "./config.ts";
import { ensurePrivateDir } from "./files.ts";
import { RotatingLogFile } from "./log_file.ts";
import type { HomePaths } from "./paths.ts";
import { listInWords } from "./text.ts";

/** A level of a log line, as LogTape names it: `trace`, `debug`, `info`, `warning`, `error` or `fatal`. */
export type { LogLevel };

/** The levels `logging.level` and `AGENT_LOG_LEVEL` take, lowest first. */
const LOG_LEVELS = ["trace", "debug", "info", "warning", "error", "fatal"] as const;

/**
 * The log level asked for: `AGENT_LOG_LEVEL`, else `logging.level` of `config.yaml` (any case),
 * else `undefined` (the default, `info`). An unknown level is a `ConfigError` at `logging.level`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ConfigSource } from "./config.ts";
 * import { configuredLogLevel } from "./log.ts";
 * const source = ConfigSource.parse("/h/config.yaml", "logging:\n  level: DEBUG\n");
 * assert.equal(configuredLogLevel(source, () => undefined), "debug");
 * assert.equal(configuredLogLevel(source, () => "warning"), "warning");
 * assert.throws(() => configuredLogLevel(source, () => "loud"), /unknown log level "loud"/);
 * ```
 */
export function configuredLogLevel(
  source: ConfigSource,
  env: (name: string) => string | undefined,
): LogLevel | undefined {
  const key = "logging.level";
  const raw = env("AGENT_LOG_LEVEL") ?? source.string(key);
  const level = raw?.trim().toLowerCase();
  if (level === undefined || level === "") return undefined;
  if (!(LOG_LEVELS as readonly string[]).includes(level)) {
    throw source.error(
      key,
      `unknown log level ${JSON.stringify(raw)}`,
      `use one of ${LOG_LEVELS.join(", ")} (AGENT_LOG_LEVEL takes the same)`,
    );
  }
  return level as LogLevel;
}

/**
 * Whether a log written at `level` ({@linkcode configuredLogLevel}'s answer: `undefined` is the
 * default, `info`) holds the lines of `lineLevel`: those of that level and above.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { logWrites } from "./log.ts";
 * assert(logWrites(undefined, "warning"));
 * assert(logWrites("warning", "error"));
 * assert(!logWrites("error", "warning"));
 * ```
 */
export function logWrites(level: LogLevel | undefined, lineLevel: LogLevel): boolean {
  return LOG_LEVELS.indexOf(lineLevel) >= LOG_LEVELS.indexOf(level ?? "info");
}

/** Rotation policy of `gateway.log`. */
export interface LogRotation {
  /** Bytes before the file is rotated. Default 10 MiB. */
  maxBytes?: number;
  /** Rotated files kept (`gateway.log.1` …). Default 5. */
  maxFiles?: number;
}

/** Options of {@linkcode configureLogging}. */
export interface LoggingOptions extends LogRotation {
  /** Lowest level written. Default `info`. */
  level?: LogLevel;
  /**
   * Also hears every warning and error, as one readable line each (`warning: <message>\n`), e.g.
   * to show them on stderr. Default: the file only.
   */
  console?: (line: string) => void;
  /**
   * Create `logs/` and `gateway.log` with the first line written, not at once: a command that
   * logs nothing (one that fails before doing anything, a run with nothing to report) leaves no
   * empty log and no new folder behind. A `gateway.log` there already is opened at once, so one
   * that cannot be written is still an error here. Default false.
   */
  openOnFirstLine?: boolean;
}

/**
 * Sends every `agent.*` logger to the rotating `logs/gateway.log` (0600). Lines reach the file
 * on the next turn of the event loop, without an fsync; call {@linkcode closeLogging} before the
 * process exits so the last ones are written. With `options.console`, warnings and errors are
 * also passed to it at once, one line each: the message with its values in plain text, and
 * control characters escaped so a value from a payload cannot move the cursor or add lines.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { closeLogging, configureLogging, logger } from "./log.ts";
 * import { homePaths } from "./paths.ts";
 * const paths = homePaths(await Deno.makeTempDir());
 * const shown: string[] = [];
 * await configureLogging(paths, { level: "debug", console: (line) => shown.push(line) });
 * logger("example").info("hello {who}", { who: "log" });
 * logger("example").warn("route {route} has no secret", { route: "ci" });
 * await closeLogging();
 * assert(Deno.readTextFileSync(paths.gatewayLog).includes("hello"));
 * assert.deepEqual(shown, ["warning: route ci has no secret\n"]);
 * ```
 */
export async function configureLogging(
  paths: HomePaths,
  options: LoggingOptions = {},
): Promise<void> {
  if (!options.openOnFirstLine) ensurePrivateDir(paths.logs);
  const file = new RotatingLogFile(paths.gatewayLog, {
    maxBytes: options.maxBytes ?? 10 * 1024 * 1024,
    maxFiles: options.maxFiles ?? 5,
    openOnFirstLine: options.openOnFirstLine,
  });
  const format = getJsonLinesFormatter();
  const sink: Sink & Disposable = Object.assign(
    (record: LogRecord) => file.append(format(withListsWritten(record))),
    { [Symbol.dispose]: () => file.close() },
  );
  const show = options.console;
  const sinks: Record<"file" | "console", Sink> = {
    file: sink,
    console: show ? withFilter((record) => show(consoleLine(record)), "warning") : () => {},
  };
  const used: ("file" | "console")[] = show ? ["file", "console"] : ["file"];
  await configure({
    reset: true,
    sinks,
    loggers: [
      { category: ["agent"], sinks: used, lowestLevel: options.level ?? "info" },
      { category: ["logtape", "meta"], sinks: used, lowestLevel: "warning" },
    ],
  });
}

/** `warning: <message>` or `error: <message>`, on one line. */
function consoleLine(record: LogRecord): string {
  const text = record.message.map((part, index) => index % 2 === 0 ? part : plain(part)).join("");
  const level = record.level === "warning" ? "warning" : "error";
  return `${level}: ${oneLine(text)}\n`;
}

function plain(value: unknown): string {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return listed(value, plain);
  if (value instanceof Error) return value.message;
  if (value === undefined || typeof value === "function" || typeof value === "symbol") {
    return String(value);
  }
  try {
    return JSON.stringify(value, (_key, item) => typeof item === "bigint" ? String(item) : item);
  } catch {
    return String(value); // a cycle
  }
}

/**
 * The record with each list value of its message written into the text around it, its items
 * quoted as the file's formatter quotes a value (`"a", "b" and "c"`), so that a message reads
 * `gateway listening on "http://[::]:8644"`, not `on ["http://[::]:8644"]`. The properties keep
 * the list.
 */
function withListsWritten(record: LogRecord): LogRecord {
  const parts = record.message;
  if (!parts.some((part, index) => index % 2 === 1 && Array.isArray(part))) return record;
  const message: unknown[] = [parts[0]];
  for (let index = 1; index < parts.length; index += 2) {
    const value = parts[index];
    if (Array.isArray(value)) {
      message[message.length - 1] += listed(value, quoted) + parts[index + 1];
    } else {
      message.push(value, parts[index + 1]);
    }
  }
  return { ...record, message };
}

/** A value as the file's formatter writes one into a message: JSON, a bigint as its digits. */
function quoted(value: unknown): string {
  try {
    return JSON.stringify(value, (_key, item) => typeof item === "bigint" ? String(item) : item) ??
      String(value);
  } catch {
    return String(value); // a cycle
  }
}

/** A list in words, each item written by `item`: `a`, `a and b`, `a, b and c`; `(none)`. */
function listed(items: readonly unknown[], item: (value: unknown) => string): string {
  return items.length === 0 ? "(none)" : listInWords(items.map(item));
}

/**
 * Line breaks, other control characters and the characters that reorder or hide text (bidi
 * overrides, zero-width ones, line and paragraph separators) as escapes (`\n`, `\u001b`,
 * `\u202e`): a payload's text quoted in a warning cannot drive or disguise the terminal.
 */
function oneLine(text: string): string {
  return text.replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, (char) => {
    if (char === "\n") return "\\n";
    if (char === "\r") return "\\r";
    if (char === "\t") return "\\t";
    const code = char.codePointAt(0)!;
    return code > 0xffff ? `\\u{${code.toString(16)}}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}

/** Flushes and closes the log sinks. */
export async function closeLogging(): Promise<void> {
  await dispose();
}

/**
 * `text` as a message template that LogTape writes as it is: a text made elsewhere (a config
 * warning's `{chat_id: "123"}`) would otherwise be read as placeholders and written `undefined`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { literalMessage } from "./log.ts";
 * assert.equal(literalMessage('such as {chat_id: "123"}'), 'such as {{chat_id: "123"}}');
 * ```
 */
export function literalMessage(text: string): string {
  return text.replace(/[{}]/g, "$&$&");
}

/**
 * The logger of one part of the service, e.g. `logger("metrics")` → category `agent.metrics`.
 * Before {@linkcode configureLogging} it discards records.
 */
export function logger(...category: string[]): Logger {
  return getLogger(["agent", ...category]);
}
