/**
 * The embedded SQLite stores of `<home>` (usage metrics, gateway inbox) open the same way:
 * private folder and files, WAL, a busy timeout for other processes, and write transactions
 * that take the lock up front.
 *
 * @module
 */
import { dirname } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { ensurePrivateDir, restrictFileMode } from "./files.ts";

/** The schema of one store: its version (`PRAGMA user_version`) and how to create it. */
export interface StoreSchema {
  /** The version this code writes. */
  version: number;
  /** The store's name in the user's words, for the "newer version" error. */
  what: string;
  /** What to do about a file from a newer version, besides upgrading. */
  fix?: string;
  /** Creates the tables (runs inside a write transaction, only when the file is older). */
  create(db: DatabaseSync): void;
}

/** Options of {@linkcode openPrivateDatabase}. */
export interface OpenDatabaseOptions {
  /**
   * How long any statement waits for another process's lock, in ms, from the first statement on
   * (switching to WAL and creating the schema included). Default 15 000.
   */
  busyTimeoutMs?: number;
}

/**
 * Opens (creating when missing) the database at `path`, creates its schema when the file is
 * older, refuses a file written by a newer version, and keeps its folder 0700 and its files
 * 0600. The busy timeout applies from opening on, so a caller that must not wait long (a
 * recording agent run) is not held while another process holds the file. WAL with `synchronous = NORMAL`: a commit survives a crash or `kill -9` of the process
 * (not a power cut).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openPrivateDatabase } from "./sqlite.ts";
 * const dir = await Deno.makeTempDir();
 * const db = openPrivateDatabase(`${dir}/s/x.sqlite3`, {
 *   version: 1,
 *   what: "example store",
 *   create: (db) => db.exec("CREATE TABLE t (a)"),
 * });
 * assert.equal(Deno.statSync(`${dir}/s/x.sqlite3`).mode! & 0o777, 0o600);
 * db.close();
 * ```
 */
export function openPrivateDatabase(
  path: string,
  schema: StoreSchema,
  options: OpenDatabaseOptions = {},
): DatabaseSync {
  const busyTimeoutMs = Math.max(0, Math.floor(options.busyTimeoutMs ?? 15_000));
  ensurePrivateDir(dirname(path));
  const db = new DatabaseSync(path);
  try {
    db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`);
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = NORMAL");
    migrate(db, schema);
  } catch (error) {
    db.close();
    throw error;
  }
  for (const suffix of ["", "-wal", "-shm"]) restrictFileMode(path + suffix);
  return db;
}

/**
 * Runs `work` in an immediate (write-locked) transaction; rolls back if it throws.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DatabaseSync } from "node:sqlite";
 * import { immediateTransaction } from "./sqlite.ts";
 * const db = new DatabaseSync(":memory:");
 * db.exec("CREATE TABLE t (a)");
 * assert.throws(() => immediateTransaction(db, () => {
 *   db.exec("INSERT INTO t VALUES (1)");
 *   throw new Error("no");
 * }));
 * assert.equal((db.prepare("SELECT COUNT(*) AS n FROM t").get() as { n: number }).n, 0);
 * ```
 */
export function immediateTransaction<T>(db: DatabaseSync, work: () => T): T {
  db.exec("BEGIN IMMEDIATE");
  try {
    const result = work();
    db.exec("COMMIT");
    return result;
  } catch (error) {
    // SQLite rolls back by itself after some errors (a full disk): a ROLLBACK then would fail
    // with "no transaction is active" and hide what went wrong.
    if (db.isTransaction) db.exec("ROLLBACK");
    throw error;
  }
}

function migrate(db: DatabaseSync, schema: StoreSchema): void {
  const { user_version: version } = db.prepare("PRAGMA user_version").get() as {
    user_version: number;
  };
  if (version > schema.version) {
    throw new Error(
      `the ${schema.what} was written by a newer version of agent (version ${version}); ` +
        `upgrade agent${schema.fix ? ` or ${schema.fix}` : ""}`,
    );
  }
  if (version === schema.version) return;
  immediateTransaction(db, () => {
    schema.create(db);
    db.exec(`PRAGMA user_version = ${schema.version}`);
  });
}

/**
 * Which file is at `path`, as `dev:ino`; `undefined` when there is none, or it cannot be looked
 * at.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fileIdentity } from "./sqlite.ts";
 * const file = await Deno.makeTempFile();
 * assert.equal(fileIdentity(file), fileIdentity(file));
 * assert.equal(fileIdentity(`${file}.missing`), undefined);
 * ```
 */
export function fileIdentity(path: string): string | undefined {
  try {
    const info = Deno.statSync(path);
    return `${info.dev}:${info.ino}`;
  } catch {
    return undefined;
  }
}

/**
 * The files a connection opened at `path` writes (the database and its `-wal`), remembered so that
 * a process holding it open for long (the gateway) notices when they are deleted or replaced at
 * their path: its writes would otherwise go on into files no later process reads.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DatabaseFiles } from "./sqlite.ts";
 * const file = await Deno.makeTempFile();
 * const files = new DatabaseFiles(file);
 * assert.ok(files.inPlace());
 * Deno.removeSync(file);
 * assert.ok(!files.inPlace());
 * ```
 */
export class DatabaseFiles {
  readonly path: string;
  #file: string | undefined;
  #wal: string | undefined;

  constructor(path: string) {
    this.path = path;
    this.#file = fileIdentity(path);
    this.#wal = fileIdentity(`${path}-wal`);
  }

  /** Remembers the files now at the path (after the database was opened again). */
  remember(): void {
    this.#file = fileIdentity(this.path);
    this.#wal = fileIdentity(`${this.path}-wal`);
  }

  /** The database file remembered, as {@linkcode fileIdentity} gives it. */
  get file(): string | undefined {
    return this.#file;
  }

  /** Whether the database file at the path is still the one remembered (its `-wal` aside). */
  fileInPlace(): boolean {
    return fileIdentity(this.path) === this.#file;
  }

  /**
   * Whether the database file and its `-wal` at the path are still the ones remembered. A `-wal`
   * that appeared since is remembered (SQLite creates it at the first write).
   */
  inPlace(): boolean {
    if (!this.fileInPlace()) return false;
    const wal = fileIdentity(`${this.path}-wal`);
    if (wal === undefined) return this.#wal === undefined;
    this.#wal ??= wal;
    return wal === this.#wal;
  }
}
