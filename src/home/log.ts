/**
 * Structured logging to `<home>/logs/gateway.log` (JSON lines, rotated by size).
 *
 * @module
 */
import { getRotatingFileSink } from "@logtape/file";
import {
  configure,
  dispose,
  getJsonLinesFormatter,
  getLogger,
  type Logger,
  type LogLevel,
  type Sink,
} from "@logtape/logtape";
import { ensurePrivateDir, restrictFileMode } from "./files.ts";
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
 * Sends every `agent.*` logger to the rotating `logs/gateway.log`. Call {@linkcode closeLogging}
 * before the process exits so buffered lines are written.
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
  const sink = privateFileSink(
    paths.gatewayLog,
    getRotatingFileSink(paths.gatewayLog, {
      maxSize: options.maxBytes ?? 10 * 1024 * 1024,
      maxFiles: options.maxFiles ?? 5,
      formatter: getJsonLinesFormatter(),
      bufferSize: 0,
    }),
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

/**
 * Keeps the log file 0600: the rotating sink creates a fresh file (new inode) at each rotation
 * with the default mode, so the mode is re-asserted whenever the inode changes.
 */
function privateFileSink(path: string, inner: Sink & Disposable): Sink & Disposable {
  restrictFileMode(path);
  let inode = Deno.statSync(path).ino;
  const sink = (record: Parameters<Sink>[0]) => {
    inner(record);
    const current = Deno.statSync(path).ino;
    if (current !== inode) {
      restrictFileMode(path);
      inode = current;
    }
  };
  return Object.assign(sink, { [Symbol.dispose]: () => inner[Symbol.dispose]() });
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
