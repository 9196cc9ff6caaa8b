/**
 * Structured logging to `<home>/logs/gateway.log` (JSON lines, rotated by size).
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
} from "@logtape/logtape";
import { ensurePrivateDir } from "./files.ts";
import { RotatingLogFile } from "./log_file.ts";
import type { HomePaths } from "./paths.ts";

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
}

/**
 * Sends every `agent.*` logger to the rotating `logs/gateway.log` (0600). Lines reach the file
 * on the next turn of the event loop, without an fsync; call {@linkcode closeLogging} before the
 * process exits so the last ones are written.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { closeLogging, configureLogging, logger } from "./log.ts";
 * import { homePaths } from "./paths.ts";
 * const paths = homePaths(await Deno.makeTempDir());
 * await configureLogging(paths, { level: "debug" });
 * logger("example").info("hello {who}", { who: "log" });
 * await closeLogging();
 * assert(Deno.readTextFileSync(paths.gatewayLog).includes("hello"));
 * ```
 */
export async function configureLogging(
  paths: HomePaths,
  options: LoggingOptions = {},
): Promise<void> {
  ensurePrivateDir(paths.logs);
  const file = new RotatingLogFile(paths.gatewayLog, {
    maxBytes: options.maxBytes ?? 10 * 1024 * 1024,
    maxFiles: options.maxFiles ?? 5,
  });
  const format = getJsonLinesFormatter();
  const sink: Sink & Disposable = Object.assign(
    (record: LogRecord) => file.append(format(record)),
    { [Symbol.dispose]: () => file.close() },
  );
  await configure({
    reset: true,
    sinks: { file: sink },
    loggers: [
      { category: ["agent"], sinks: ["file"], lowestLevel: options.level ?? "info" },
      { category: ["logtape", "meta"], sinks: ["file"], lowestLevel: "warning" },
    ],
  });
}

/** Flushes and closes the log sinks. */
export async function closeLogging(): Promise<void> {
  await dispose();
}

/**
 * The logger of one part of the service, e.g. `logger("metrics")` → category `agent.metrics`.
 * Before {@linkcode configureLogging} it discards records.
 */
export function logger(...category: string[]): Logger {
  return getLogger(["agent", ...category]);
}
