/**
 * `<home>/webhook_subscriptions.json`: the dynamic routes that `agent webhook subscribe` creates.
 * One JSON object keyed by subscription name. Written atomically with mode 0600 (it holds
 * secrets); a corrupt file (one that repeats a name included) is reported and never overwritten.
 * Changes go through {@linkcode updateSubscriptions}, which holds the edit lock of its folder
 * from the read to the write, so two commands run at once cannot lose each other's record.
 *
 * @module
 */
import { isPlainObject } from "../home/config.ts";
import { jsonSyntaxProblem } from "../home/json_syntax.ts";
import { jsonAmbiguityAt } from "./request.ts";
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
  constructor(file: string, problem: string, fix = CORRECT_BY_HAND) {
    super(`${file}: ${problem}. Fix: ${fix} (it is never overwritten while broken)`);
    this.name = "SubscriptionFileError";
    this.file = file;
  }
}

/**
 * The fix of a file that is not JSON, or not an object. Not "remove the file": it holds every
 * subscription and its secret, which the senders are set up with.
 */
const CORRECT_BY_HAND = "correct the file by hand there; do not delete it, it holds every " +
  "subscription and its secret";

/**
 * The records of the file by name. A record is whatever the file holds under its name: one that
 * is not a valid subscription (not even an object) is still a record, reported by
 * {@linkcode dynamicRoutes} and shown as invalid, while the others are used.
 */
export type SubscriptionRecords = Record<string, SubscriptionRecord | unknown>;

/**
 * Reads every record. A missing file is empty; a file that is not a JSON object, or that repeats
 * a key (`JSON.parse` would keep the last: a rewrite would lose the other record and its secret
 * for good), is a {@linkcode SubscriptionFileError}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readSubscriptions } from "./subscriptions.ts";
 * assert(Object.keys(readSubscriptions("/nonexistent/subs.json")).length === 0);
 * ```
 */
export function readSubscriptions(file: string): SubscriptionRecords {
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
  const ambiguity = jsonAmbiguityAt(text, data, "the file");
  if (ambiguity) {
    const { problem, line, repeated } = ambiguity;
    throw new SubscriptionFileError(
      file,
      `line ${line}: ${problem}`,
      repeated
        ? `keep one of the two ${JSON.stringify(repeated.key)} keys (lines ${repeated.firstLine} ` +
          `and ${line}): ${
            repeated.path === "$"
              ? "rename the other record to a new subscription name, or delete it"
              : "delete the other"
          }`
        : undefined,
    );
  }
  return data;
}

/** Writes every record atomically, mode 0600. */
export function writeSubscriptions(file: string, records: SubscriptionRecords): void {
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
  change: (records: SubscriptionRecords) => T,
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
  records: SubscriptionRecords,
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
