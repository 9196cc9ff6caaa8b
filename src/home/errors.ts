/**
 * Errors of the configuration layer: each names the file, the key path (and line when known),
 * the problem and the fix.
 *
 * @module
 */

/** Where a configuration problem sits. */
export interface ConfigLocation {
  /** The file, e.g. `/home/ada/.agent/config.yaml`. */
  file: string;
  /** Dotted key path, e.g. `telemetry.shared_metrics.enabled`. */
  key?: string;
  /** 1-based line, when known. */
  line?: number;
  /** 1-based column, when known. */
  column?: number;
}

/**
 * A configuration file or value that cannot be used. The CLI prints it and exits with code 2.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ConfigError } from "./errors.ts";
 * const error = new ConfigError(
 *   { file: "/h/config.yaml", key: "telemetry.shared_metrics.enabled", line: 3 },
 *   "expected true or false, got \"maybe\"",
 *   "set it to true or false",
 * );
 * assert(error.message.includes("config.yaml:3"));
 * ```
 */
export class ConfigError extends Error {
  /** Where the problem is. */
  readonly location: ConfigLocation;
  /** What is wrong, without the location. */
  readonly problem: string;
  /** What the user should do. */
  readonly fix?: string;

  constructor(location: ConfigLocation, problem: string, fix?: string) {
    super(formatConfigMessage(location, problem, fix));
    this.name = "ConfigError";
    this.location = location;
    this.problem = problem;
    this.fix = fix;
  }
}

function formatConfigMessage(location: ConfigLocation, problem: string, fix?: string): string {
  let where = location.file;
  if (location.line !== undefined) {
    where += `:${location.line}`;
    if (location.column !== undefined) where += `:${location.column}`;
  }
  const key = location.key ? ` (key ${location.key})` : "";
  return `${where}${key}: ${problem}${fix ? `. Fix: ${fix}` : ""}`;
}
