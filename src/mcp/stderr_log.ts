/**
 * `logs/mcp-stderr.log`: what stdio servers write to stderr, one line per line, prefixed with
 * the time and the server name, so a crash can be read after the fact; and the log messages
 * (`notifications/message`) of every server, stdio or HTTP, one line each with its level and
 * logger. The file rotates by size like `gateway.log` (`mcp-stderr.log.1` newest), so a chatty
 * server cannot fill the disk.
 *
 * @module
 */
import { dirname } from "node:path";
import type { LoggingLevel, LoggingMessageNotificationParams } from "@modelcontextprotocol/client";
import { ensurePrivateDir } from "../home/files.ts";
import type { LogLevel } from "../home/log.ts";
import { RotatingLogFile } from "../home/log_file.ts";
import { visible } from "../home/text.ts";

/** The longest unfinished line kept in memory; a longer one is written in pieces of this size. */
export const MAX_PARTIAL_LINE = 64 * 1024;

/** The longest text of a server's log message written; the rest is counted, not written. */
export const MAX_LOG_MESSAGE = 16 * 1024;

/** The longest logger name of a log message written (a name, not a place for data). */
const MAX_LOGGER = 100;

/** Rotation of `mcp-stderr.log`: the same defaults as `gateway.log`. */
export interface StderrLogRotation {
  /** Bytes before the file is rotated. Default 10 MiB. */
  maxBytes?: number;
  /** Rotated files kept (`mcp-stderr.log.1` …). Default 5. */
  maxFiles?: number;
}

/**
 * The level of MCP log messages to ask servers for, from the agent's own log level
 * (`logging.level`, `AGENT_LOG_LEVEL`): the same, in MCP's names (`trace` is `debug`, `fatal` is
 * `critical`); `info` when none is set.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { serverLogLevel } from "./stderr_log.ts";
 * assert.equal(serverLogLevel(undefined), "info");
 * assert.equal(serverLogLevel("trace"), "debug");
 * assert.equal(serverLogLevel("fatal"), "critical");
 * ```
 */
export function serverLogLevel(level: LogLevel | undefined): LoggingLevel {
  switch (level) {
    case undefined:
      return "info";
    case "trace":
      return "debug";
    case "fatal":
      return "critical";
    default:
      return level;
  }
}

/**
 * An append-only log file, opened on first write (mode 0600), rotated by size.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { StderrLog } from "./stderr_log.ts";
 * const dir = await Deno.makeTempDir();
 * using log = new StderrLog(`${dir}/logs/mcp-stderr.log`);
 * log.write("fs", "starting\nready\n");
 * assert(Deno.readTextFileSync(`${dir}/logs/mcp-stderr.log`).includes("[fs] ready"));
 * ```
 */
export class StderrLog implements Disposable {
  readonly path: string;
  readonly #now: () => Date;
  readonly #rotation: Required<StderrLogRotation>;
  #file: RotatingLogFile | undefined;
  readonly #partial = new Map<string, string>();

  constructor(path: string, now: () => Date = () => new Date(), rotation: StderrLogRotation = {}) {
    this.path = path;
    this.#now = now;
    this.#rotation = {
      maxBytes: rotation.maxBytes ?? 10 * 1024 * 1024,
      maxFiles: rotation.maxFiles ?? 5,
    };
  }

  /**
   * Appends `text` from `server`; an unfinished last line waits for its end, up to
   * {@linkcode MAX_PARTIAL_LINE} characters (a server that never ends its line is written in pieces).
   */
  write(server: string, text: string): void {
    const lines = ((this.#partial.get(server) ?? "") + text).split("\n");
    let rest = lines.pop() ?? "";
    while (rest.length > MAX_PARTIAL_LINE) {
      // A piece never ends inside a surrogate pair: half an emoji would be written as U+FFFD.
      const high = rest.charCodeAt(MAX_PARTIAL_LINE - 1);
      const end = high >= 0xd800 && high <= 0xdbff ? MAX_PARTIAL_LINE - 1 : MAX_PARTIAL_LINE;
      lines.push(rest.slice(0, end));
      rest = rest.slice(end);
    }
    this.#partial.set(server, rest);
    if (lines.length === 0) return;
    const stamp = this.#now().toISOString();
    this.#append(lines.map((line) => `${stamp} [${server}] ${line}\n`));
  }

  /**
   * Appends one log message of `server` (`notifications/message`) as one line:
   * `<time> [<server>] <level> (<logger>): <text>`. Text that is not a string is written as JSON;
   * control characters (line breaks, escape sequences) are written as `\u{…}` escapes, and text
   * over {@linkcode MAX_LOG_MESSAGE} characters is cut, saying how much was left out.
   */
  message(server: string, message: LoggingMessageNotificationParams): void {
    const logger = typeof message.logger === "string" && message.logger !== ""
      ? ` (${shown(message.logger, MAX_LOGGER)})`
      : "";
    const text = shown(dataText(message.data), MAX_LOG_MESSAGE);
    const stamp = this.#now().toISOString();
    this.#append([`${stamp} [${server}] ${visible(String(message.level))}${logger}: ${text}\n`]);
  }

  /** Writes unfinished lines and closes the file. */
  close(): void {
    const stamp = this.#now().toISOString();
    const rest = [...this.#partial].filter(([, line]) => line !== "")
      .map(([server, line]) => `${stamp} [${server}] ${line}\n`);
    this.#partial.clear();
    if (rest.length > 0) this.#append(rest);
    this.#file?.close();
    this.#file = undefined;
  }

  [Symbol.dispose](): void {
    this.close();
  }

  #append(lines: string[]): void {
    if (!this.#file) {
      ensurePrivateDir(dirname(this.path));
      this.#file = new RotatingLogFile(this.path, this.#rotation);
    }
    for (const line of lines) this.#file.append(line);
    // Written at once, not on the next turn: a server's last words must be there after a crash.
    this.#file.flush();
  }
}

/** A log message's `data` as text: a string as it is, anything else as JSON. */
function dataText(data: unknown): string {
  if (typeof data === "string") return data;
  try {
    return JSON.stringify(data) ?? String(data);
  } catch {
    return String(data);
  }
}

/**
 * `text` with its control characters escaped ({@linkcode visible}), at most `max` characters of
 * it, then how many characters were left out.
 */
function shown(text: string, max: number): string {
  const escaped = text.length <= max ? visible(text) : undefined;
  if (escaped !== undefined && escaped.length <= max) return escaped;
  let out = "";
  let used = 0;
  for (const char of text) {
    const piece = visible(char);
    if (out.length + piece.length > max) break;
    out += piece;
    used += char.length;
  }
  return `${out} … (${text.length - used} more characters)`;
}
