/**
 * Builds usage-metrics packages from the store's deltas: one package per UTC day and resource
 * tuple, rows sorted by (name, dimensions), written to `outbox/<package_id>.json` inside the
 * transaction that marks the deltas packaged. A crash after the file is written but before the
 * commit leaves an orphan file that the next packaging run deletes, so nothing is counted twice.
 *
 * @module
 */
import { join } from "node:path";
import { ensurePrivateDir, writeFileAtomic } from "../home/files.ts";
import {
  type MetricItem,
  type MetricName,
  type MetricsPackage,
  SCHEMA_VERSION,
} from "./contract.ts";
import { utcDay } from "./recorder.ts";
import { type MetricsValidationError, validateMetricsPackage } from "./schema.ts";
import { DAY_MS, type MetricsStore, MetricsStoreDamagedError, type PendingDelta } from "./store.ts";

/** Exported packages older than this are pruned. */
const RETENTION_DAYS = 30;

/** Unsent packages the retention dropped, reported once, by the first command that looks. */
export interface DroppedUnsent {
  /** How many packages, over all days. */
  packages: number;
  /** Per UTC day of their counts, oldest first. */
  days: { day: string; packages: number }[];
  /** Why, in the user's words. */
  reason: string;
}

/** Why the retention drops a package that was never sent. */
export const DROPPED_UNSENT_REASON = `older than ${RETENTION_DAYS} days, never sent`;

/**
 * The warning for dropped packages, as `what` (the count) and `why` (the reason and the days),
 * which read as one line joined by `: `.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { droppedUnsentWarning } from "./packager.ts";
 * const { what, why } = droppedUnsentWarning({
 *   packages: 3,
 *   days: [{ day: "2026-10-01", packages: 2 }, { day: "2026-10-02", packages: 1 }],
 *   reason: "older than 30 days, never sent",
 * });
 * assert.equal(
 *   `${what}: ${why}`,
 *   "usage metrics: dropped 3 unsent packages: older than 30 days, never sent " +
 *     "(2 for 2026-10-01, 1 for 2026-10-02)",
 * );
 * ```
 */
export function droppedUnsentWarning(dropped: DroppedUnsent): { what: string; why: string } {
  const { days } = dropped;
  const which = days.length <= 5
    ? days.map((entry) => `${entry.packages} for ${entry.day}`).join(", ")
    : `for ${days.length} days from ${days[0].day} to ${days[days.length - 1].day}`;
  return {
    what: `usage metrics: dropped ${dropped.packages} unsent package${
      dropped.packages === 1 ? "" : "s"
    }`,
    why: `${dropped.reason} (${which})`,
  };
}

/** Which deltas a packaging run takes. */
export interface PackagingOptions {
  /** Current time (ms since epoch). */
  nowMs: number;
  /** Include today's deltas (explicit export, preview); automatic runs take finished days only. */
  includeToday: boolean;
}

/**
 * A package built from the store does not validate against the v2 schema: the store holds a
 * counter this version never writes (changed by hand or by another program). Nothing was
 * written or marked packaged.
 */
export class InvalidStoredCountsError extends Error {
  /** The store file. */
  readonly store: string;
  /** The schema errors of the first package that failed. */
  readonly errors: MetricsValidationError[];

  constructor(store: string, errors: MetricsValidationError[]) {
    const first = errors[0];
    super(
      `the metrics store ${store} holds counts the agent.shared_metrics.v2 schema rejects ` +
        `(${first.message.replace(/\.$/, "")}); nothing was packaged, written or sent. ` +
        "Fix: run `agent metrics reset` to delete the store and start over",
    );
    this.name = "InvalidStoredCountsError";
    this.store = store;
    this.errors = errors;
  }
}

/**
 * The packages the pending deltas would make now, without writing anything. Throws
 * {@linkcode InvalidStoredCountsError} when one would not validate.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { MetricsStore } from "./store.ts";
 * import { previewPackages } from "./packager.ts";
 * const dir = await Deno.makeTempDir();
 * using store = MetricsStore.open(`${dir}/m.sqlite3`);
 * assert(previewPackages(store, { nowMs: Date.now(), includeToday: true }).length === 0);
 * ```
 */
export function previewPackages(store: MetricsStore, options: PackagingOptions): MetricsPackage[] {
  const installId = store.installId();
  return groupDeltas(store, options).map((group) =>
    checked(store, toPackage(store, group, installId, options.nowMs))
  );
}

/** Options of {@linkcode writePackages}. */
export interface WritePackagesOptions extends PackagingOptions {
  /** The outbox folder. */
  outbox: string;
  /** Called after each outbox file is written, before the commit (a seam for crash tests). */
  onOutboxFileWritten?: (path: string) => void;
}

/**
 * Packages every pending delta (see {@linkcode PackagingOptions.includeToday}) into outbox files
 * and marks it packaged, atomically. Returns the packages written. Every package is validated
 * before anything is written: when one fails ({@linkcode InvalidStoredCountsError}) no file is
 * written and nothing is marked packaged.
 */
export function writePackages(
  store: MetricsStore,
  options: WritePackagesOptions,
): MetricsPackage[] {
  ensureOutbox(store, options.outbox);
  const written: string[] = [];
  try {
    return store.transaction(() => {
      removeOrphanFiles(store, options.outbox);
      const installId = store.installId();
      const built = groupDeltas(store, options).map((group) => ({
        group,
        pkg: checked(store, toPackage(store, group, installId, options.nowMs)),
      }));
      const packages: MetricsPackage[] = [];
      for (const { group, pkg } of built) {
        const path = outboxFile(options.outbox, pkg.package_id);
        writeFileAtomic(path, JSON.stringify(pkg, null, 2) + "\n");
        written.push(path);
        options.onOutboxFileWritten?.(path);
        store.insertPackage({
          packageId: pkg.package_id,
          day: group.day,
          resource: group.resource,
          createdAt: options.nowMs,
        });
        store.markPackaged(group.day, group.resource);
        packages.push(pkg);
      }
      store.setMeta("last_packaging_day", utcDay(options.nowMs));
      return packages;
    });
  } catch (error) {
    for (const path of written) removeIfPresent(path);
    throw error;
  }
}

/** Creates the outbox folder; a file in its place is a damaged store (not "File exists"). */
function ensureOutbox(store: MetricsStore, outbox: string): void {
  try {
    ensurePrivateDir(outbox);
  } catch (error) {
    if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
    throw new MetricsStoreDamagedError(
      store.path,
      `its outbox ${outbox} is a file, not a folder`,
      { cause: error },
    );
  }
}

/**
 * The automatic run (after a task ends, on shutdown): at most once per UTC day, it packages every
 * finished day not yet packaged (catching up missed days) and prunes old exports.
 * Returns the packages written (none when it already ran today).
 */
export function packageDueDays(
  store: MetricsStore,
  outbox: string,
  nowMs: number,
): MetricsPackage[] {
  if (store.getMeta("last_packaging_day") === utcDay(nowMs)) return [];
  const packages = writePackages(store, { nowMs, includeToday: false, outbox });
  pruneExports(store, outbox, nowMs);
  return packages;
}

/**
 * Deletes packages (ledger rows and outbox files) created more than {@linkcode RETENTION_DAYS}
 * ago, and fully packaged counters of days before that. Unpackaged deltas are kept. The unsent
 * packages among them are noted in the store until one process reports them
 * (`UsageMetrics.takeDroppedUnsent`, {@linkcode droppedUnsentWarning}).
 */
export function pruneExports(store: MetricsStore, outbox: string, nowMs: number): string[] {
  const cutoff = nowMs - RETENTION_DAYS * DAY_MS;
  const removed = store.prune(cutoff, utcDay(cutoff));
  for (const id of removed) {
    removeIfPresent(outboxFile(outbox, id));
    removeIfPresent(rejectedFile(outbox, id));
  }
  return removed;
}

/** The outbox file of a package. */
export function outboxFile(outbox: string, packageId: string): string {
  return join(outbox, `${packageId}.json`);
}

/** Where an outbox file that failed validation before sending is moved: `outbox/rejected/`. */
export function rejectedFile(outbox: string, packageId: string): string {
  return join(outbox, "rejected", `${packageId}.json`);
}

interface DeltaGroup {
  day: string;
  resource: string;
  rows: PendingDelta[];
}

function groupDeltas(store: MetricsStore, options: PackagingOptions): DeltaGroup[] {
  const today = utcDay(options.nowMs);
  const deltas = store.pendingDeltas({ beforeDay: options.includeToday ? undefined : today });
  const groups: DeltaGroup[] = [];
  let current: DeltaGroup | undefined;
  for (const row of deltas) {
    if (!current || current.day !== row.day || current.resource !== row.resource) {
      current = { day: row.day, resource: row.resource, rows: [] };
      groups.push(current);
    }
    current.rows.push(row);
  }
  return groups;
}

function checked(store: MetricsStore, pkg: MetricsPackage): MetricsPackage {
  const result = validateMetricsPackage(pkg);
  if (!result.valid) throw new InvalidStoredCountsError(store.path, result.errors);
  return pkg;
}

function toPackage(
  store: MetricsStore,
  group: DeltaGroup,
  installId: string,
  nowMs: number,
): MetricsPackage {
  const start = Date.parse(`${group.day}T00:00:00Z`);
  const metrics: MetricItem[] = group.rows.map((row) => ({
    name: row.name as MetricName,
    type: "counter",
    dimensions: storedJson(
      store,
      row.dimensions,
      `the dimensions of ${row.name} on ${row.day} are`,
    ),
    value: Number(row.delta),
  }));
  return {
    schema_version: SCHEMA_VERSION,
    package_id: crypto.randomUUID(),
    install_id: installId,
    period_start: `${group.day}T00:00:00Z`,
    period_end: `${utcDay(start + DAY_MS)}T00:00:00Z`,
    generated_at: new Date(nowMs).toISOString(),
    resource: storedJson(store, group.resource, `the resource of ${group.day} is`),
    metrics,
  };
}

/** A JSON column of the store; text that is not JSON means the store was changed by hand. */
// deno-lint-ignore no-explicit-any
function storedJson(store: MetricsStore, text: string, what: string): any {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new MetricsStoreDamagedError(store.path, `${what} not JSON`, { cause: error });
  }
}

/** Outbox files (and temporaries) the ledger does not know come from an uncommitted run. */
function removeOrphanFiles(store: MetricsStore, outbox: string): void {
  const known = store.packageIds();
  for (const entry of Deno.readDirSync(outbox)) {
    if (!entry.isFile) continue;
    const isTemp = entry.name.startsWith(".") && entry.name.endsWith(".tmp");
    const id = entry.name.endsWith(".json") ? entry.name.slice(0, -5) : undefined;
    if (isTemp || (id !== undefined && !known.has(id))) removeIfPresent(join(outbox, entry.name));
  }
}

function removeIfPresent(path: string): void {
  try {
    Deno.removeSync(path);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
}
