/**
 * `<home>/webhook_subscriptions.json`: the dynamic routes that `agent webhook subscribe` creates.
 * One JSON object keyed by subscription name. Written atomically with mode 0600 (it holds
 * secrets); a corrupt file is reported and never overwritten. Changes go through
 * {@linkcode updateSubscriptions}, which holds an exclusive lock on `<file>.lock` from the read to
 * the write, so two commands run at once cannot lose each other's record.
 *
 * @module
 */
import { isPlainObject } from "../home/config.ts";
import { jsonSyntaxProblem } from "../home/json_syntax.ts";
import {
  readTextIfExists,
  restrictFileMode,
  withEditLock,
  writeFileAtomic,
} from "../home/files.ts";
import { isValidRouteName, type Route, routeFromRaw, type SubscriptionRecord } from "./routes.ts";

/** The subscription file cannot be used as it is. */
export class SubscriptionFileError extends Error {
  readonly file: string;
  constructor(file: string, problem: string) {
    super(
      `${file}: ${problem}. Fix: correct or remove the file (it is never overwritten while broken)`,
    );
    this.name = "SubscriptionFileError";
    this.file = file;
  }
}

/**
 * Reads every record. A missing file is empty; a file that is not a JSON object of records is a
 * {@linkcode SubscriptionFileError}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readSubscriptions } from "./subscriptions.ts";
 * assert(Object.keys(readSubscriptions("/nonexistent/subs.json")).length === 0);
 * ```
 */
export function readSubscriptions(file: string): Record<string, SubscriptionRecord> {
  const text = readTextIfExists(file);
  if (text === undefined || text.trim() === "") return {};
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    // Not JSON.parse's message: it quotes the text around the error, and the file holds secrets.
    throw new SubscriptionFileError(file, `not valid JSON (${jsonSyntaxProblem(text)})`);
  }
  if (!isPlainObject(data)) {
    throw new SubscriptionFileError(file, "expected a JSON object keyed by subscription name");
  }
  for (const [name, record] of Object.entries(data)) {
    if (!isPlainObject(record)) {
      throw new SubscriptionFileError(file, `the entry '${name}' is not an object`);
    }
  }
  return data as Record<string, SubscriptionRecord>;
}

/** Writes every record atomically, mode 0600. */
export function writeSubscriptions(
  file: string,
  records: Record<string, SubscriptionRecord>,
): void {
  writeFileAtomic(file, JSON.stringify(records, null, 2) + "\n", { mode: 0o600 });
  restrictFileMode(file);
}

/**
 * Reads the records, lets `change` edit them, and writes them back, all under the edit lock
 * of its folder ({@linkcode withEditLock}): parallel `agent webhook subscribe` runs all keep their records.
 * When `change` throws, or the file is corrupt, nothing is written.
 *
 * @param file `<home>/webhook_subscriptions.json`.
 * @param change Edits the records in place; its result is returned.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readSubscriptions, updateSubscriptions } from "./subscriptions.ts";
 * const file = `${await Deno.makeTempDir()}/webhook_subscriptions.json`;
 * updateSubscriptions(file, (records) => {
 *   records.ci = {
 *     description: "CI",
 *     events: [],
 *     secret: "0123456789abcdef",
 *     prompt: "",
 *     skills: [],
 *     deliver: "log",
 *     created_at: "2026-03-10T12:00:00Z",
 *   };
 * });
 * assert.deepEqual(Object.keys(readSubscriptions(file)), ["ci"]);
 * ```
 */
export function updateSubscriptions<T>(
  file: string,
  change: (records: Record<string, SubscriptionRecord>) => T,
): T {
  return withEditLock(file, () => {
    const records = readSubscriptions(file);
    const result = change(records);
    writeSubscriptions(file, records);
    return result;
  });
}

/**
 * The dynamic routes of the file, with the problems of records that cannot be used (those are
 * left out; the others still work).
 */
export function dynamicRoutes(
  records: Record<string, SubscriptionRecord>,
  file: string,
): { routes: Route[]; problems: string[] } {
  const routes: Route[] = [];
  const problems: string[] = [];
  for (const [name, record] of Object.entries(records)) {
    if (!isValidRouteName(name)) {
      problems.push(`${file}: '${name}' is not a valid subscription name; it is ignored`);
      continue;
    }
    const parsed = routeFromRaw(name, record, "dynamic", `${file}: ${name}`);
    problems.push(...parsed.problems);
    if (parsed.route && parsed.problems.length === 0) routes.push(parsed.route);
  }
  return { routes, problems };
}
