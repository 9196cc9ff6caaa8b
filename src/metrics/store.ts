/**
 * The usage-metrics store: counters summed per (UTC day, metric, resource, dimensions) in
 * `node:sqlite`, with the install id, the `client.active` latch and the package ledger.
 * Several processes may write at once (WAL, immediate transactions, busy timeout).
 *
 * @module
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { immediateTransaction, openPrivateDatabase, type StoreSchema } from "../home/sqlite.ts";

/** One day in milliseconds. */
export const DAY_MS = 86_400_000;

/** A counter increment ready for the store. */
export interface CounterIncrement {
  /** UTC day `YYYY-MM-DD`. */
  day: string;
  name: string;
  /** Canonical JSON of the resource tuple. */
  resource: string;
  /** Canonical JSON of the dimensions. */
  dimensions: string;
  count: number;
}

/** A not-yet-packaged delta of one counter. */
export interface PendingDelta {
  day: string;
  name: string;
  resource: string;
  dimensions: string;
  delta: number;
}

/** Delivery state of a built package. */
export type PackageState = "pending" | "sent" | "rejected";

/** A package in the ledger. */
export interface PackageRecord {
  packageId: string;
  day: string;
  createdAt: number;
  state: PackageState;
  attempts: number;
  nextAttemptAt: number;
}

const SCHEMA_VERSION = 1;

/** The store file exists but cannot be opened; the message names the file and the fix. */
export class MetricsStoreUnavailableError extends Error {
  /** The store file. */
  readonly path: string;

  constructor(path: string, cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(
      `the metrics store ${path} cannot be opened (${reason}). Fix: run \`agent metrics reset\` ` +
        "to delete it and start a new one, or move the file aside to keep it",
      { cause },
    );
    this.name = "MetricsStoreUnavailableError";
    this.path = path;
  }
}

/**
 * The store of one `<home>`. Open it only after consent: opening creates the database.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { MetricsStore } from "./store.ts";
 * const dir = await Deno.makeTempDir();
 * using store = MetricsStore.open(`${dir}/metrics.sqlite3`);
 * store.addCounters([{ day: "2026-11-21", name: "agent.task_run.started", resource: "{}", dimensions: "{}", count: 2 }]);
 * assert(store.pendingDeltas({ beforeDay: undefined })[0].delta === 2);
 * ```
 */
export class MetricsStore implements Disposable {
  /** The database file. */
  readonly path: string;
  readonly #db: DatabaseSync;
  readonly #upsert: StatementSync;

  private constructor(path: string, db: DatabaseSync) {
    this.path = path;
    this.#db = db;
    this.#upsert = db.prepare(
      `INSERT INTO counters (day, name, resource, dimensions, total) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (day, name, resource, dimensions) DO UPDATE SET total = total + excluded.total`,
    );
  }

  /**
   * Opens (creating when missing) the store at `path`; its folder is made 0700, files 0600.
   * Throws {@linkcode MetricsStoreUnavailableError} when the file cannot be used (damaged, not a
   * database, from a newer version, unreadable).
   */
  static open(path: string): MetricsStore {
    try {
      return new MetricsStore(path, openPrivateDatabase(path, SCHEMA));
    } catch (error) {
      throw new MetricsStoreUnavailableError(path, error);
    }
  }

  /** Whether a store exists at `path` (without creating one). */
  static exists(path: string): boolean {
    try {
      return Deno.statSync(path).isFile;
    } catch {
      return false;
    }
  }

  /** Runs `work` in an immediate (write-locked) transaction; rolls back if it throws. */
  transaction<T>(work: () => T): T {
    return immediateTransaction(this.#db, work);
  }

  /** Adds increments in one transaction. */
  addCounters(increments: Iterable<CounterIncrement>): void {
    this.transaction(() => {
      for (const row of increments) {
        this.#upsert.run(row.day, row.name, row.resource, row.dimensions, row.count);
      }
    });
  }

  /** The install id: a uuid4 created with the store and kept in it. */
  installId(): string {
    const id = this.getMeta("install_id");
    if (!id) {
      throw new Error(
        `the metrics store ${this.path} has no install id; run \`agent metrics reset\``,
      );
    }
    return id;
  }

  /**
   * Counts `agent.client.active` at most once per rolling 24 h for this store, across
   * processes. Returns whether it counted.
   */
  latchClientActive(nowMs: number, increment: Omit<CounterIncrement, "count">): boolean {
    return this.transaction(() => {
      const last = Number(this.getMeta("client_active_at") ?? Number.NaN);
      if (Number.isFinite(last) && Math.abs(nowMs - last) < DAY_MS) return false;
      this.#upsert.run(increment.day, increment.name, increment.resource, increment.dimensions, 1);
      this.setMeta("client_active_at", String(nowMs));
      return true;
    });
  }

  /** Deltas not yet packaged, ordered by day, resource, name, dimensions. */
  pendingDeltas(filter: { beforeDay?: string }): PendingDelta[] {
    const sql = `SELECT day, name, resource, dimensions, total - packaged AS delta FROM counters
      WHERE total > packaged ${filter.beforeDay ? "AND day < ?" : ""}
      ORDER BY day, resource, name, dimensions`;
    const statement = this.#db.prepare(sql);
    const rows = filter.beforeDay ? statement.all(filter.beforeDay) : statement.all();
    return rows as unknown as PendingDelta[];
  }

  /** Marks every delta of (day, resource) as packaged. Call inside {@linkcode transaction}. */
  markPackaged(day: string, resource: string): void {
    this.#db.prepare(
      "UPDATE counters SET packaged = total WHERE day = ? AND resource = ? AND total > packaged",
    ).run(day, resource);
  }

  /** Records a built package. Call inside {@linkcode transaction}. */
  insertPackage(
    record: { packageId: string; day: string; resource: string; createdAt: number },
  ): void {
    this.#db.prepare(
      "INSERT INTO packages (package_id, day, resource, created_at, state) VALUES (?, ?, ?, ?, 'pending')",
    ).run(record.packageId, record.day, record.resource, record.createdAt);
  }

  /** Every package id in the ledger. */
  packageIds(): Set<string> {
    const rows = this.#db.prepare("SELECT package_id FROM packages").all();
    return new Set(rows.map((row) => String(row.package_id)));
  }

  /** Packages waiting to be sent whose next attempt is due at `nowMs`. */
  duePackages(nowMs: number): PackageRecord[] {
    return this.#db.prepare(
      `SELECT package_id, day, created_at, state, attempts, next_attempt_at FROM packages
       WHERE state = 'pending' AND next_attempt_at <= ? ORDER BY created_at, package_id`,
    ).all(nowMs).map(toPackageRecord);
  }

  /** Records the outcome of a send attempt. */
  recordSendOutcome(
    packageId: string,
    outcome: { state: PackageState; nextAttemptAt?: number; detail: string },
    nowMs: number,
  ): void {
    this.#db.prepare(
      `UPDATE packages SET state = ?, attempts = attempts + 1, next_attempt_at = ?, last_result = ?,
       sent_at = CASE WHEN ? = 'sent' THEN ? ELSE sent_at END WHERE package_id = ?`,
    ).run(
      outcome.state,
      outcome.nextAttemptAt ?? 0,
      outcome.detail,
      outcome.state,
      nowMs,
      packageId,
    );
  }

  /**
   * Deletes ledger rows of packages created before `cutoffMs` and fully packaged counters of days
   * before `cutoffDay`; returns the package ids removed (their outbox files go too). Unpackaged
   * deltas are never deleted.
   */
  prune(cutoffMs: number, cutoffDay: string): string[] {
    return this.transaction(() => {
      const old = this.#db.prepare("SELECT package_id FROM packages WHERE created_at < ?").all(
        cutoffMs,
      )
        .map((row) => String(row.package_id));
      this.#db.prepare("DELETE FROM packages WHERE created_at < ?").run(cutoffMs);
      this.#db.prepare("DELETE FROM counters WHERE total = packaged AND day < ?").run(cutoffDay);
      return old;
    });
  }

  /** Counts for `agent metrics status`. */
  summary(): {
    pendingRows: number;
    pendingEvents: number;
    packages: Record<PackageState, number>;
  } {
    const pending = this.#db.prepare(
      "SELECT COUNT(*) AS rows, COALESCE(SUM(total - packaged), 0) AS events FROM counters WHERE total > packaged",
    ).get() as { rows: number; events: number };
    const packages: Record<PackageState, number> = { pending: 0, sent: 0, rejected: 0 };
    for (
      const row of this.#db.prepare("SELECT state, COUNT(*) AS n FROM packages GROUP BY state")
        .all()
    ) {
      packages[row.state as PackageState] = Number(row.n);
    }
    return { pendingRows: Number(pending.rows), pendingEvents: Number(pending.events), packages };
  }

  /** A value of the meta table. */
  getMeta(key: string): string | undefined {
    const row = this.#db.prepare("SELECT value FROM meta WHERE key = ?").get(key);
    return row === undefined ? undefined : String(row.value);
  }

  /** Sets a value of the meta table. */
  setMeta(key: string, value: string): void {
    this.#db.prepare(
      "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    ).run(key, value);
  }

  /** Closes the database. */
  close(): void {
    if (this.#db.isOpen) this.#db.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

function toPackageRecord(row: Record<string, unknown>): PackageRecord {
  return {
    packageId: String(row.package_id),
    day: String(row.day),
    createdAt: Number(row.created_at),
    state: row.state as PackageState,
    attempts: Number(row.attempts),
    nextAttemptAt: Number(row.next_attempt_at),
  };
}

const SCHEMA: StoreSchema = {
  version: SCHEMA_VERSION,
  what: "metrics store",
  fix: "run `agent metrics reset`",
  create(db) {
    db.exec(`
      CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
      CREATE TABLE IF NOT EXISTS counters (
        day TEXT NOT NULL,
        name TEXT NOT NULL,
        resource TEXT NOT NULL,
        dimensions TEXT NOT NULL,
        total INTEGER NOT NULL CHECK (total >= 0),
        packaged INTEGER NOT NULL DEFAULT 0 CHECK (packaged >= 0),
        PRIMARY KEY (day, name, resource, dimensions)
      ) STRICT, WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS packages (
        package_id TEXT PRIMARY KEY,
        day TEXT NOT NULL,
        resource TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('pending', 'sent', 'rejected')),
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER NOT NULL DEFAULT 0,
        sent_at INTEGER,
        last_result TEXT
      ) STRICT;
    `);
    db.prepare("INSERT OR IGNORE INTO meta (key, value) VALUES ('install_id', ?)").run(
      crypto.randomUUID(),
    );
  },
};
