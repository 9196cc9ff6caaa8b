/**
 * The usage-metrics store: counters summed per (UTC day, metric, resource, dimensions) in
 * `node:sqlite`, with the install id, the `client.active` latch and the package ledger.
 * Several processes may write at once (WAL, immediate transactions, busy timeout).
 *
 * @module
 */
import { hostname } from "node:os";
import { dirname } from "node:path";
import process from "node:process";
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { pathToFileURL } from "node:url";
import {
  DatabaseFiles,
  fileIdentity,
  immediateTransaction,
  openPrivateDatabase,
  type StoreSchema,
} from "../home/sqlite.ts";

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

/** A sender process that holds claims on packages right now. */
export interface SenderClaim {
  /** Its host name (spaces as `_`); absent in the claims of older versions. */
  host?: string;
  /** Whether `host` is this machine. */
  thisHost: boolean;
  /** Its process id; absent in the claims of older versions. */
  pid?: number;
  /** When it claimed its first package (ms since the epoch); absent in older claims. */
  since?: number;
  /** How many packages it is sending. */
  packages: number;
}

/** The unsent packages in the user's terms: who sends now, and what waits until when. */
export interface SendQueue {
  /** Live senders (claims of a process known to be gone are due, not listed). */
  sending: SenderClaim[];
  /** Unsent packages waiting after a failed attempt or a `Retry-After`, not due yet. */
  deferred: {
    packages: number;
    /** When the first of them is due (ms since the epoch). */
    nextAttemptAt?: number;
    /** Why that one waits, as its last attempt ended (`HTTP 503 (after 3 tries)`). */
    reason?: string;
  };
  /** Unsent packages the next send pass takes (never tried, or their wait is over). */
  due: number;
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
/**
 * `last_result` of a package a sender has claimed: `sending` alone (older versions),
 * `sending <host> <pid>`, or `sending <host> <pid> <since-ms>`, so a claim whose process is gone
 * can be taken over at once and `agent metrics status` can say who sends since when.
 */
const SENDING = "sending";

/** How long a write waits for another process's lock by default (CLI commands). */
export const DEFAULT_BUSY_TIMEOUT_MS = 15_000;

/** The fix of a damaged store, shared by the errors that name it. */
const RESET_FIX = "Fix: run `agent metrics reset` to delete it and start a new one, or move the " +
  "file aside to keep it";

/**
 * The fix of a store folder this user may not read or write (made by `sudo agent …`, on a
 * read-only file system): deleting it would lose the counts, and could not work either.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { storeAccessFix } from "./store.ts";
 * assert.match(storeAccessFix("/h/telemetry/shared_metrics"), /^Fix: make \/h\/telemetry\/shared_metrics /);
 * ```
 */
export function storeAccessFix(folder: string): string {
  return `Fix: make ${folder} and the files in it readable and writable by this user (check ` +
    "their owner and mode, and that the file system is not read-only; files created with sudo " +
    "belong to root)";
}

/**
 * Whether `error` says this process may not read or write a file (permissions, a read-only file
 * system), rather than that the file is damaged.
 */
function isAccessProblem(error: unknown): boolean {
  if (error instanceof Deno.errors.PermissionDenied || error instanceof Deno.errors.NotCapable) {
    return true;
  }
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  return code === "EACCES" || code === "EPERM" || code === "EROFS" ||
    /readonly database|unable to open database file/i.test(error.message);
}

/** The store file exists but cannot be opened; the message names the file and the fix. */
export class MetricsStoreUnavailableError extends Error {
  /** The store file. */
  readonly path: string;
  /** This user may not write it (permissions, a read-only file system); it may still be read. */
  readonly accessDenied: boolean;

  constructor(path: string, cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    const accessDenied = isAccessProblem(cause);
    const fix = accessDenied
      ? `${storeAccessFix(dirname(path))}; the counts in it are kept`
      : RESET_FIX;
    super(`the metrics store ${path} cannot be opened (${reason}). ${fix}`, { cause });
    this.name = "MetricsStoreUnavailableError";
    this.path = path;
    this.accessDenied = accessDenied;
  }
}

/**
 * The store opened but its content is not what this version writes (a table or the install id
 * deleted, a count too large, changed by hand or by another program). The message names the
 * file and the fix.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { MetricsStoreDamagedError } from "./store.ts";
 * const error = new MetricsStoreDamagedError("/h/metrics.sqlite3", "it has no install id");
 * assert.match(error.message, /metrics\.sqlite3 is damaged \(it has no install id\).*metrics reset/);
 * ```
 */
export class MetricsStoreDamagedError extends Error {
  /** The store file. */
  readonly path: string;

  constructor(path: string, reason: string, options?: ErrorOptions) {
    super(`the metrics store ${path} is damaged (${reason}). ${RESET_FIX}`, options);
    this.name = "MetricsStoreDamagedError";
    this.path = path;
  }
}

/**
 * Another process held the store's write lock for longer than this process was willing to wait.
 * Nothing was changed; trying again later works.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { MetricsStoreBusyError } from "./store.ts";
 * assert.match(new MetricsStoreBusyError("/h/m.sqlite3").message, /busy: another agent process/);
 * ```
 */
export class MetricsStoreBusyError extends Error {
  /** The store file. */
  readonly path: string;

  constructor(path: string, options?: ErrorOptions) {
    super(
      `the metrics store ${path} is busy: another agent process holds it; try again`,
      options,
    );
    this.name = "MetricsStoreBusyError";
    this.path = path;
  }
}

/**
 * Whether `error` is SQLite's "the database is locked by someone else" (SQLITE_BUSY/LOCKED).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isBusyError } from "./store.ts";
 * assert(isBusyError(new Error("database is locked")));
 * assert(!isBusyError(new Error("no such table: packages")));
 * ```
 */
export function isBusyError(error: unknown): boolean {
  if (error instanceof MetricsStoreBusyError) return true;
  if (!(error instanceof Error)) return false;
  const code = (error as { errcode?: unknown }).errcode;
  return code === 5 || code === 6 || /database (table )?is locked|SQLITE_BUSY/i.test(error.message);
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
  #db: DatabaseSync;
  #upsert: StatementSync;
  readonly #busyTimeoutMs: number;
  #inTransaction = false;
  /** Opened with {@linkcode openReadOnly}: every write throws. */
  readonly readOnly: boolean;
  /** The files the open connection writes, to notice them deleted or replaced. */
  #files: DatabaseFiles;
  /** Made by {@linkcode MetricsStore.openLater} and not opened yet. */
  #unopened = false;
  /** Told when the store was deleted or replaced while open and the file now there is used. */
  #onReopened: ((message: string) => void) | undefined;

  private constructor(path: string, db: DatabaseSync, busyTimeoutMs: number, readOnly = false) {
    this.path = path;
    this.readOnly = readOnly;
    this.#db = db;
    this.#busyTimeoutMs = busyTimeoutMs;
    this.#upsert = prepareUpsert(db);
    this.#files = new DatabaseFiles(path);
  }

  /**
   * Opens (creating when missing) the store at `path`; its folder is made 0700, files 0600.
   * Throws {@linkcode MetricsStoreUnavailableError} when the file cannot be used (damaged, not a
   * database, from a newer version, unreadable), {@linkcode MetricsStoreBusyError} when another
   * process held it longer than `busyTimeoutMs`.
   *
   * `busyTimeoutMs` is how long every statement waits for another process's lock, opening
   * included (default {@linkcode DEFAULT_BUSY_TIMEOUT_MS}); {@linkcode withBusyTimeout} changes
   * it for one piece of work.
   */
  static open(
    path: string,
    options: {
      busyTimeoutMs?: number;
      /**
       * Told, with a sentence naming the file, when the store was deleted (by hand,
       * `agent metrics reset`) or replaced while open and this store goes on with the file now
       * at `path` (a new one, when none is there).
       */
      onReopened?: (message: string) => void;
    } = {},
  ): MetricsStore {
    const busyTimeoutMs = Math.max(0, Math.floor(options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS));
    const store = new MetricsStore(path, openStoreDatabase(path, busyTimeoutMs), busyTimeoutMs);
    store.#onReopened = options.onReopened;
    return store;
  }

  /**
   * A store that could not be opened now (busy, damaged, a folder in its place) but is tried
   * again before every write, for a long-running process (the gateway): until it opens, every
   * write throws why, and reads see an empty store. Once it opens, `onReopened` is told.
   */
  static openLater(
    path: string,
    options: { busyTimeoutMs?: number; onReopened?: (message: string) => void } = {},
  ): MetricsStore {
    const busyTimeoutMs = Math.max(0, Math.floor(options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS));
    const placeholder = new DatabaseSync(":memory:");
    SCHEMA.create(placeholder);
    const store = new MetricsStore(path, placeholder, busyTimeoutMs);
    store.#unopened = true;
    store.#onReopened = options.onReopened;
    return store;
  }

  /**
   * Opens the existing store at `path` for reading only, for a store this user may not write
   * (made with sudo, on a read-only file system), where {@linkcode open} fails. It is read as
   * the file holds it: counts still in a `-wal` file that could not be merged are not seen.
   * Throws {@linkcode MetricsStoreUnavailableError} when it cannot be read either.
   */
  static openReadOnly(path: string): MetricsStore {
    const folderProblem = notAFolder(dirname(path)) ?? notAFile(path);
    if (folderProblem) throw new MetricsStoreUnavailableError(path, folderProblem);
    let db: DatabaseSync;
    try {
      // immutable: SQLite would otherwise need to create the -shm file to read a WAL database.
      const url = pathToFileURL(path);
      url.search = "immutable=1";
      db = new DatabaseSync(url, { readOnly: true });
    } catch (error) {
      throw new MetricsStoreUnavailableError(path, error);
    }
    try {
      const { user_version: version } = db.prepare("PRAGMA user_version").get() as {
        user_version: number;
      };
      if (version !== SCHEMA_VERSION) {
        throw new Error(
          version > SCHEMA_VERSION
            ? `it was written by a newer version of agent (version ${version}); upgrade agent`
            : `it has schema version ${version}, which only a writable store can be updated from`,
        );
      }
      return new MetricsStore(path, db, 0, true);
    } catch (error) {
      db.close();
      throw new MetricsStoreUnavailableError(path, error);
    }
  }

  /**
   * Whether a store exists at `path` (without creating one). A path that cannot hold a store (its
   * folder is a file, say) throws {@linkcode MetricsStoreUnavailableError}: reporting "no store"
   * would hide why nothing is ever recorded.
   */
  static exists(path: string): boolean {
    const folderProblem = notAFolder(dirname(path));
    if (folderProblem) throw new MetricsStoreUnavailableError(path, folderProblem);
    try {
      Deno.statSync(path);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return false;
      throw new MetricsStoreUnavailableError(path, error);
    }
    // A folder in its place is not "no store": the store could never be created there.
    const fileProblem = notAFile(path);
    if (fileProblem) throw new MetricsStoreUnavailableError(path, fileProblem);
    return true;
  }

  /**
   * Whether the store is open: a store {@linkcode openLater} has not opened yet is tried now
   * (false while it still cannot be opened; the caller has said why already).
   */
  usable(): boolean {
    if (!this.#unopened) return true;
    try {
      this.#followPath();
      return true;
    } catch {
      return false;
    }
  }

  /** How long a statement waits for another process's lock, unless {@linkcode withBusyTimeout}. */
  get busyTimeoutMs(): number {
    return this.#busyTimeoutMs;
  }

  /**
   * Runs `work` waiting at most `ms` for another process's lock (instead of the store's
   * {@linkcode busyTimeoutMs}): recording and automatic packaging must not hold a run.
   */
  withBusyTimeout<T>(ms: number, work: () => T): T {
    if (!this.#inTransaction) this.#followPath();
    this.#db.exec(`PRAGMA busy_timeout = ${Math.max(0, Math.floor(ms))}`);
    try {
      return work();
    } finally {
      if (this.#db.isOpen) this.#db.exec(`PRAGMA busy_timeout = ${this.#busyTimeoutMs}`);
    }
  }

  /**
   * Runs `work` in an immediate (write-locked) transaction; rolls back if it throws. A lock held
   * too long by another process throws {@linkcode MetricsStoreBusyError}; content this version
   * does not write throws {@linkcode MetricsStoreDamagedError}.
   */
  transaction<T>(work: () => T): T {
    // Nested calls join the transaction under way (they commit or roll back with it).
    if (this.#inTransaction) return work();
    this.#followPath();
    return this.#guard(() =>
      immediateTransaction(this.#db, () => {
        this.#inTransaction = true;
        try {
          return work();
        } finally {
          this.#inTransaction = false;
        }
      })
    );
  }

  /**
   * Before a write: a store deleted while open (the file, its -wal or its folder; by hand or by
   * `agent metrics reset`) would take every later count into a file nobody reads. The file now
   * at the path is used instead (a new store when there is none, as after a reset); one that
   * cannot be opened (a folder, not a database) throws, naming it, until it can.
   */
  #followPath(): void {
    if (this.readOnly || !this.#db.isOpen) return;
    const unopened = this.#unopened;
    if (!unopened && this.#files.fileInPlace()) {
      if (this.#files.inPlace()) return;
      // Only the -wal went: what it held is still readable here, so it goes into the file.
      try {
        this.#db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
      } catch { /* what it held is lost; the store file is used as it is */ }
    }
    const gone = fileIdentity(this.path) === undefined;
    const db = openStoreDatabase(this.path, this.#busyTimeoutMs);
    this.#db.close();
    this.#db = db;
    this.#upsert = prepareUpsert(db);
    this.#files.remember();
    this.#unopened = false;
    this.#onReopened?.(
      unopened
        ? `the metrics store ${this.path} can be used now; counts are written to it again`
        : gone
        ? `the metrics store ${this.path} was deleted while this process ran; a new store was ` +
          "started there (the counts the deleted one held are gone)"
        : `the metrics store ${this.path} was replaced while this process ran; counts go to ` +
          "the file now there",
    );
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
    if (!id) throw new MetricsStoreDamagedError(this.path, "it has no install id");
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
    return this.#guard(() => {
      const sql = `SELECT day, name, resource, dimensions, total - packaged AS delta FROM counters
        WHERE total > packaged ${filter.beforeDay ? "AND day < ?" : ""}
        ORDER BY day, resource, name, dimensions`;
      const statement = this.#db.prepare(sql);
      const rows = filter.beforeDay ? statement.all(filter.beforeDay) : statement.all();
      return rows as unknown as PendingDelta[];
    });
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
    return this.#guard(() => {
      const rows = this.#db.prepare("SELECT package_id FROM packages").all();
      return new Set(rows.map((row) => String(row.package_id)));
    });
  }

  /** Packages waiting to be sent whose next attempt is due at `nowMs`, oldest day first. */
  duePackages(nowMs: number): PackageRecord[] {
    return this.#guard(() =>
      this.#db.prepare(
        `SELECT package_id, day, created_at, state, attempts, next_attempt_at FROM packages
         WHERE state = 'pending' AND next_attempt_at <= ? ORDER BY day, created_at, package_id`,
      ).all(nowMs).map(toPackageRecord)
    );
  }

  /**
   * Claims the packages due at `nowMs` for one sender: in one write transaction they are marked
   * as being sent by this process and not due again for `leaseMs`, so a second sender (another
   * process, the gateway's hourly pass) does not post them too. Recording an outcome ends the
   * claim. A claim whose process is gone (killed by a signal, crashed) is taken over at once;
   * one whose process cannot be checked (another host, no permission) lasts until the lease ends.
   */
  claimDuePackages(nowMs: number, leaseMs: number): PackageRecord[] {
    return this.transaction(() => {
      const due = [...this.duePackages(nowMs), ...this.#abandonedClaims(nowMs)];
      const claim = this.#db.prepare(
        "UPDATE packages SET next_attempt_at = ?, last_result = ? WHERE package_id = ?",
      );
      const mark = `${CLAIM_MARK} ${nowMs}`;
      for (const record of due) claim.run(nowMs + leaseMs, mark, record.packageId);
      // Oldest day first: one export packages several days at once, and a pass a 429 or an
      // outage cuts short should have delivered the oldest counts.
      return due.sort((a, b) =>
        a.day.localeCompare(b.day) || a.createdAt - b.createdAt ||
        (a.packageId < b.packageId ? -1 : 1)
      );
    });
  }

  /** Makes claimed packages that got no outcome due again at `nowMs`. */
  releaseClaims(packageIds: Iterable<string>, nowMs: number): void {
    const ids = [...packageIds];
    if (ids.length === 0) return;
    this.transaction(() => {
      // This process's marks, with or without the claim's time.
      const release = this.#db.prepare(
        `UPDATE packages SET next_attempt_at = ?, last_result = NULL
         WHERE package_id = ? AND state = 'pending'
         AND (last_result = ? OR substr(last_result, 1, ?) = ?)`,
      );
      const prefix = `${CLAIM_MARK} `;
      for (const id of ids) release.run(nowMs, id, CLAIM_MARK, prefix.length, prefix);
    });
  }

  /**
   * How many packages another sender has claimed and not finished at `nowMs` (claims of a
   * process that is gone do not count: the next sender takes them over).
   */
  packagesBeingSent(nowMs: number): number {
    return this.#guard(() =>
      this.#claims(nowMs).filter((claim) => claimOwnerAlive(claim.owner) !== false).length
    );
  }

  /**
   * Who is sending right now (live claims, one entry per process, earliest claim first) and the
   * unsent packages that wait, not due before a later time, for `agent metrics status`.
   */
  sendQueue(nowMs: number): SendQueue {
    return this.#guard(() => {
      const senders = new Map<string, SenderClaim>();
      for (const claim of this.#claims(nowMs)) {
        if (claimOwnerAlive(claim.owner) === false) continue;
        const { host, pid, since } = parseClaimMark(claim.owner);
        const key = `${host} ${pid}`;
        const sender = senders.get(key) ??
          { host, thisHost: host === THIS_HOST, pid, since, packages: 0 };
        sender.packages++;
        if (since !== undefined && (sender.since === undefined || since < sender.since)) {
          sender.since = since;
        }
        senders.set(key, sender);
      }
      const waiting = this.#db.prepare(
        `SELECT next_attempt_at, last_result FROM packages
         WHERE state = 'pending' AND next_attempt_at > ?
         AND (last_result IS NULL
           OR (last_result <> '${SENDING}' AND last_result NOT LIKE '${SENDING} %'))
         ORDER BY next_attempt_at, day, created_at, package_id`,
      ).all(nowMs);
      const next = waiting[0];
      const { due } = this.#db.prepare(
        "SELECT COUNT(*) AS due FROM packages WHERE state = 'pending' AND next_attempt_at <= ?",
      ).get(nowMs) as { due: number };
      return {
        due: Number(due) + this.#abandonedClaims(nowMs).length,
        sending: [...senders.values()].sort((a, b) => (a.since ?? 0) - (b.since ?? 0)),
        deferred: {
          packages: waiting.length,
          nextAttemptAt: next === undefined ? undefined : Number(next.next_attempt_at),
          reason: next?.last_result == null ? undefined : String(next.last_result),
        },
      };
    });
  }

  /** Pending packages claimed until after `nowMs`, with the claim's mark. */
  #claims(nowMs: number): (PackageRecord & { owner: string })[] {
    return this.#db.prepare(
      `SELECT package_id, day, created_at, state, attempts, next_attempt_at, last_result
       FROM packages WHERE state = 'pending' AND next_attempt_at > ?
       AND (last_result = '${SENDING}' OR last_result LIKE '${SENDING} %')`,
    ).all(nowMs).map((row) => ({ ...toPackageRecord(row), owner: String(row.last_result) }));
  }

  /** Claimed packages whose sender process is known to be gone. */
  #abandonedClaims(nowMs: number): PackageRecord[] {
    return this.#claims(nowMs).filter((claim) => claimOwnerAlive(claim.owner) === false)
      .map(({ owner: _, ...record }) => record);
  }

  /** Records the outcome of a send attempt. */
  recordSendOutcome(
    packageId: string,
    outcome: { state: PackageState; nextAttemptAt?: number; detail: string },
    nowMs: number,
  ): void {
    this.#guard(() =>
      this.#db.prepare(
        `UPDATE packages SET state = ?, attempts = attempts + 1, next_attempt_at = ?,
         last_result = ?, sent_at = CASE WHEN ? = 'sent' THEN ? ELSE sent_at END
         WHERE package_id = ?`,
      ).run(
        outcome.state,
        outcome.nextAttemptAt ?? 0,
        outcome.detail,
        outcome.state,
        nowMs,
        packageId,
      )
    );
  }

  /**
   * Deletes ledger rows of packages created before `cutoffMs` and fully packaged counters of days
   * before `cutoffDay`; returns the package ids removed (their outbox files go too). Unpackaged
   * deltas are never deleted. The unsent ones among the packages are noted, per day, in the same
   * transaction, until {@linkcode takeDroppedUnsent} reports them.
   */
  prune(cutoffMs: number, cutoffDay: string): string[] {
    return this.transaction(() => {
      const old = this.#db.prepare(
        "SELECT package_id, day, state FROM packages WHERE created_at < ?",
      ).all(cutoffMs);
      const dropped = parseDroppedUnsent(this.getMeta(DROPPED_UNSENT));
      const before = JSON.stringify(dropped);
      for (const row of old) {
        if (row.state !== "pending") continue;
        const day = String(row.day);
        dropped[day] = (dropped[day] ?? 0) + 1;
      }
      if (JSON.stringify(dropped) !== before) {
        this.setMeta(DROPPED_UNSENT, JSON.stringify(dropped));
      }
      this.#db.prepare("DELETE FROM packages WHERE created_at < ?").run(cutoffMs);
      this.#db.prepare("DELETE FROM counters WHERE total = packaged AND day < ?").run(cutoffDay);
      return old.map((row) => String(row.package_id));
    });
  }

  /**
   * The unsent packages {@linkcode prune} dropped and nobody has reported yet, per day of their
   * counts (oldest first); taking them marks them reported, for every process.
   */
  takeDroppedUnsent(): { day: string; packages: number }[] {
    if (this.getMeta(DROPPED_UNSENT) === undefined) return [];
    return this.transaction(() => {
      const dropped = parseDroppedUnsent(this.getMeta(DROPPED_UNSENT));
      this.deleteMeta(DROPPED_UNSENT);
      return Object.keys(dropped).sort().map((day) => ({ day, packages: dropped[day] }));
    });
  }

  /** Counts for `agent metrics status`. */
  summary(): {
    pendingRows: number;
    pendingEvents: number;
    packages: Record<PackageState, number>;
  } {
    return this.#guard(() => this.#summary());
  }

  #summary(): {
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
    return this.#guard(() => {
      const row = this.#db.prepare("SELECT value FROM meta WHERE key = ?").get(key);
      return row === undefined ? undefined : String(row.value);
    });
  }

  /** Deletes a value of the meta table. */
  deleteMeta(key: string): void {
    this.#guard(() => this.#db.prepare("DELETE FROM meta WHERE key = ?").run(key));
  }

  /** The meta keys that start with `prefix`, with their values. */
  metaWithPrefix(prefix: string): { key: string; value: string }[] {
    return this.#guard(() =>
      this.#db.prepare("SELECT key, value FROM meta WHERE substr(key, 1, ?) = ?").all(
        prefix.length,
        prefix,
      ).map((row) => ({ key: String(row.key), value: String(row.value) }))
    );
  }

  /** Sets a value of the meta table. */
  setMeta(key: string, value: string): void {
    this.#guard(() =>
      this.#db.prepare(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      ).run(key, value)
    );
  }

  /**
   * SQLite's errors in the user's words: a lock held by another process is
   * {@linkcode MetricsStoreBusyError}; a missing table or column, a number too large for
   * JavaScript or a corrupt page is {@linkcode MetricsStoreDamagedError}. Errors already
   * translated pass through.
   */
  #guard<T>(work: () => T): T {
    try {
      return work();
    } catch (error) {
      if (
        error instanceof MetricsStoreBusyError || error instanceof MetricsStoreDamagedError ||
        !(error instanceof Error)
      ) throw error;
      if (isBusyError(error)) throw new MetricsStoreBusyError(this.path, { cause: error });
      if (isDamage(error)) {
        throw new MetricsStoreDamagedError(this.path, describe(error), { cause: error });
      }
      throw error;
    }
  }

  /** Closes the database. */
  close(): void {
    if (this.#db.isOpen) this.#db.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** Meta key of the unsent packages pruned and not reported yet: `{"<day>": count}`. */
const DROPPED_UNSENT = "dropped_unsent";

/** The note under {@linkcode DROPPED_UNSENT}; one that is not what this version writes is empty. */
function parseDroppedUnsent(text: string | undefined): Record<string, number> {
  if (text === undefined) return {};
  try {
    const value = JSON.parse(text);
    if (typeof value !== "object" || value === null || Array.isArray(value)) return {};
    return Object.fromEntries(
      Object.entries(value).filter(([day, count]) =>
        /^\d{4}-\d\d-\d\d$/.test(day) && Number.isSafeInteger(count) && (count as number) > 0
      ),
    ) as Record<string, number>;
  } catch {
    return {};
  }
}

/** This machine's name as claim marks write it (spaces as `_`). */
const THIS_HOST = hostname().replace(/\s/g, "_");

/** This process's claim mark: `sending <host> <pid>`, followed by the claim's time. */
const CLAIM_MARK = `${SENDING} ${THIS_HOST} ${Deno.pid}`;

/** The host, pid and claim time of a claim mark; each absent when the mark does not hold it. */
function parseClaimMark(mark: string): { host?: string; pid?: number; since?: number } {
  const [, host, pidText, sinceText] = mark.split(" ");
  const pid = Number(pidText);
  const since = Number(sinceText);
  return {
    host: host || undefined,
    pid: Number.isSafeInteger(pid) && pid > 0 ? pid : undefined,
    since: sinceText !== undefined && Number.isSafeInteger(since) && since > 0 ? since : undefined,
  };
}

/**
 * Whether the process that made a claim still runs: `false` only when it is known to be gone
 * (same host, no such process); `undefined` when it cannot be told (an older version's mark,
 * another host, no permission to ask), so the claim lasts until its lease ends.
 */
function claimOwnerAlive(mark: string): boolean | undefined {
  const { host, pid } = parseClaimMark(mark);
  if (host === undefined || pid === undefined) return undefined;
  if (host !== THIS_HOST) return undefined;
  if (pid === Deno.pid) return true;
  try {
    process.kill(pid, 0); // signal 0: only asks whether the process exists
    return true;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === "ESRCH") return false;
    return code === "EPERM" ? true : undefined;
  }
}

/** SQLite errors that mean the file's content is not what this version wrote. */
function isDamage(error: Error): boolean {
  if (error instanceof RangeError) return true; // an integer beyond 2^53 written by hand
  const code = (error as { code?: unknown }).code;
  return code === "ERR_SQLITE_ERROR" &&
    /no such (table|column)|malformed|not a database|datatype mismatch|constraint failed/i.test(
      error.message,
    );
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Opens the database of {@linkcode MetricsStore.open}, its errors in the user's words: a folder
 * or a file that is not a store is {@linkcode MetricsStoreUnavailableError}, a lock held too
 * long {@linkcode MetricsStoreBusyError}.
 */
function openStoreDatabase(path: string, busyTimeoutMs: number): DatabaseSync {
  const folderProblem = notAFolder(dirname(path)) ?? notAFile(path);
  if (folderProblem) throw new MetricsStoreUnavailableError(path, folderProblem);
  let db: DatabaseSync;
  try {
    db = openPrivateDatabase(path, SCHEMA, { busyTimeoutMs });
  } catch (error) {
    if (isBusyError(error)) throw new MetricsStoreBusyError(path, { cause: error });
    throw new MetricsStoreUnavailableError(path, error);
  }
  try {
    prepareUpsert(db);
  } catch (error) {
    db.close();
    throw new MetricsStoreDamagedError(path, describe(error), { cause: error });
  }
  return db;
}

function prepareUpsert(db: DatabaseSync): StatementSync {
  return db.prepare(
    `INSERT INTO counters (day, name, resource, dimensions, total) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (day, name, resource, dimensions) DO UPDATE SET total = total + excluded.total`,
  );
}

/** Why `folder` cannot hold the store (it exists and is not a folder), or `undefined`. */
function notAFolder(folder: string): string | undefined {
  try {
    if (!Deno.statSync(folder).isDirectory) return `${folder} is a file, not a folder`;
  } catch (error) {
    if (error instanceof Deno.errors.NotADirectory) {
      return `a parent of ${folder} is a file, not a folder`;
    }
  }
  return undefined;
}

/** Why `path` cannot be the store file (a folder, a pipe), or `undefined` (a file, or none). */
function notAFile(path: string): string | undefined {
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(path);
  } catch {
    return undefined; // missing (it is created), or a problem opening reports better
  }
  if (info.isFile) return undefined;
  return info.isDirectory ? "it is a folder, not a file" : "it is not a regular file";
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
