/**
 * Counts a process could not write before it ended (another process held the store) are kept in
 * `<store folder>/unwritten/<id>.json` (0600) instead of being dropped, and the next process that
 * records moves them into the store: each file exactly once (its id is recorded in the store in
 * the same transaction), and only rows the v2 schema accepts (a file edited by hand cannot make
 * every later package invalid).
 *
 * @module
 */
import { basename, dirname, join } from "node:path";
import { writeFileAtomic } from "../home/files.ts";
import { SCHEMA_VERSION } from "./contract.ts";
import { canonicalJson } from "./resource.ts";
import { validateMetricsPackage } from "./schema.ts";
import type { CounterIncrement, MetricsStore } from "./store.ts";

/** A `client.active` fact whose latch was not decided yet. */
export interface UnwrittenLatch {
  nowMs: number;
  increment: Omit<CounterIncrement, "count">;
}

/** What a process could not write. */
export interface UnwrittenCounts {
  counters: CounterIncrement[];
  latches: UnwrittenLatch[];
}

/** Meta keys of the files already moved into the store: `unwritten:<id>` → ms when. */
const IMPORTED_PREFIX = "unwritten:";
/** How long an imported file's id is remembered (a copy older than that is not expected). */
const REMEMBER_MS = 30 * 86_400_000;
const FILE_NAME = /^([0-9a-f-]{36})\.json$/;

/** The folder of unwritten counts of the store at `storePath`. */
function unwrittenFolder(storePath: string): string {
  return join(dirname(storePath), "unwritten");
}

/**
 * Writes `counts` to a new file of the unwritten folder (atomically, 0600) and returns its path.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { MetricsStore } from "./store.ts";
 * import { importUnwritten, keepUnwritten } from "./unwritten.ts";
 * const dir = await Deno.makeTempDir();
 * const counts = {
 *   counters: [{
 *     day: "2026-11-21", name: "agent.task_run.started",
 *     resource: '{"agent_version":"0.1.0","architecture":"x86_64","install_method":"git","os_family":"linux"}',
 *     dimensions: '{"entrypoint":"api","execution_surface":"api"}', count: 2,
 *   }],
 *   latches: [],
 * };
 * keepUnwritten(`${dir}/metrics.sqlite3`, counts, Date.UTC(2026, 10, 21));
 * using store = MetricsStore.open(`${dir}/metrics.sqlite3`);
 * assert.equal(importUnwritten(store, Date.UTC(2026, 10, 21)), 1);
 * assert.equal(store.pendingDeltas({})[0].delta, 2);
 * ```
 */
export function keepUnwritten(storePath: string, counts: UnwrittenCounts, nowMs: number): string {
  const id = crypto.randomUUID();
  const file = join(unwrittenFolder(storePath), `${id}.json`);
  writeFileAtomic(
    file,
    JSON.stringify({ version: 1, written_at: nowMs, ...counts }) + "\n",
  );
  return file;
}

/**
 * Moves every file of the unwritten folder into `store`, one transaction per file; returns how
 * many files were moved. A file whose id the store already has (a process stopped between the
 * commit and the delete) is only deleted; a file that is not JSON of this shape is deleted; rows
 * the schema refuses are skipped. Throws `MetricsStoreBusyError` when the store is busy (the
 * files stay for the next try).
 */
export function importUnwritten(store: MetricsStore, nowMs: number): number {
  const folder = unwrittenFolder(store.path);
  let names: string[];
  try {
    names = [...Deno.readDirSync(folder)].filter((e) => e.isFile && FILE_NAME.test(e.name))
      .map((e) => e.name).sort();
  } catch {
    return 0; // no folder: nothing was ever left unwritten
  }
  let moved = 0;
  for (const name of names) {
    const file = join(folder, name);
    const id = FILE_NAME.exec(basename(file))![1];
    let counts: UnwrittenCounts | undefined;
    try {
      counts = parseUnwritten(Deno.readTextFileSync(file));
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) continue; // another process moved it
      counts = undefined;
    }
    if (counts) {
      const parsed = counts;
      const done = store.transaction(() => {
        if (store.getMeta(IMPORTED_PREFIX + id) !== undefined) return false;
        for (const latch of parsed.latches) store.latchClientActive(latch.nowMs, latch.increment);
        if (parsed.counters.length > 0) store.addCounters(parsed.counters);
        store.setMeta(IMPORTED_PREFIX + id, String(nowMs));
        for (const { key, value } of store.metaWithPrefix(IMPORTED_PREFIX)) {
          if (Number(value) < nowMs - REMEMBER_MS) store.deleteMeta(key);
        }
        return true;
      });
      if (done) moved++;
    }
    try {
      Deno.removeSync(file);
    } catch { /* removed by another process already */ }
  }
  return moved;
}

/** The counts of a file, keeping only rows that are valid counters of the v2 schema. */
function parseUnwritten(text: string): UnwrittenCounts | undefined {
  let value: { counters?: unknown; latches?: unknown };
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const counters = Array.isArray(value.counters)
    ? value.counters.filter((row): row is CounterIncrement =>
      validRow(row, row?.count, Number.isSafeInteger(row?.count) && row.count > 0)
    )
    : [];
  const latches = Array.isArray(value.latches)
    ? value.latches.filter((latch): latch is UnwrittenLatch =>
      Number.isSafeInteger(latch?.nowMs) && validRow(latch?.increment, 1, true)
    )
    : [];
  return { counters, latches };
}

/** Whether a stored row is a counter the v2 schema accepts, written in canonical form. */
function validRow(row: unknown, count: unknown, countOk: boolean): boolean {
  if (!countOk || typeof row !== "object" || row === null) return false;
  const { day, name, resource, dimensions } = row as Record<string, unknown>;
  if (typeof day !== "string" || !/^\d{4}-\d{2}-\d{2}$/.test(day)) return false;
  if (typeof name !== "string" || typeof resource !== "string") return false;
  if (typeof dimensions !== "string") return false;
  let parsedResource: Record<string, string>;
  let parsedDimensions: Record<string, string>;
  try {
    parsedResource = JSON.parse(resource);
    parsedDimensions = JSON.parse(dimensions);
  } catch {
    return false;
  }
  const start = `${day}T00:00:00Z`;
  if (Number.isNaN(Date.parse(start))) return false;
  const sample = {
    schema_version: SCHEMA_VERSION,
    package_id: "00000000-0000-4000-8000-000000000000",
    install_id: "00000000-0000-4000-8000-000000000000",
    period_start: start,
    period_end: start,
    generated_at: start,
    resource: parsedResource,
    metrics: [{ name, type: "counter", dimensions: parsedDimensions, value: count }],
  };
  return validateMetricsPackage(sample).valid &&
    canonicalJson(parsedResource) === resource && canonicalJson(parsedDimensions) === dimensions;
}
