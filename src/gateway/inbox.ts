/**
 * The gateway's durable inbox, `<home>/gateway/inbox.sqlite3`: every event accepted for an agent
 * run (answered 202 only after it is committed here), its state through run and delivery, and the
 * per-route delivery-id claims that make a redelivered event a duplicate.
 *
 * States: `queued` → `running` → `delivering` → `done`, or `failed` when delivery gave up. After
 * a crash, a restarted gateway puts `running` events back in the queue (their run never
 * finished) and resumes `delivering` ones without running them again, so each accepted event is
 * run to a delivered answer once.
 *
 * Writes are grouped: the first write of a turn of the event loop opens a transaction that every
 * later write of the same turn joins, and it is committed once the turn's I/O callbacks have run
 * (`setImmediate`), or at once by {@linkcode Inbox.commit}. A busy gateway thus commits once for
 * many requests. Reads on this connection see the writes at once; {@linkcode Inbox.durable}
 * resolves when they are committed, and nothing the inbox holds may be answered or acted on
 * before that. The gateway's intake ({@linkcode Inbox.accept}) can run on a writer thread of its
 * own instead (inbox_writer.ts), grouped the same way.
 *
 * @module
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { parseJsonExact, stringifyJsonExact } from "../home/exact_json.ts";
import { dirname } from "node:path";
import { ensurePrivateDir } from "../home/files.ts";
import { DatabaseFiles, openPrivateDatabase, type StoreSchema } from "../home/sqlite.ts";

/** Where an event stands. */
export type EventState = "queued" | "running" | "delivering" | "done" | "failed";

/** What the listener commits for an agent run. */
export interface NewEvent {
  route: string;
  event: string;
  deliveryId: string;
  /** The payload after the route script. */
  payload: Record<string, unknown>;
  /**
   * The payload as JSON text, when the caller has it (the request body's own text, as parsed
   * into `payload`): spares writing it out again. Otherwise `payload` is serialized.
   */
  payloadJson?: string;
  /** The rendered prompt. */
  prompt: string;
  /** What delivery needs later, frozen at acceptance (target, extra, skills). */
  plan: DeliveryPlan;
}

/** The route settings an accepted event keeps, so later edits of the route do not change it. */
export interface DeliveryPlan {
  deliver: string;
  deliverExtra: Record<string, unknown>;
  skills: string[];
}

/** An event as stored. */
export interface InboxEvent extends NewEvent {
  id: string;
  state: EventState;
  runAttempts: number;
  deliveryAttempts: number;
  /**
   * Parts of a split answer already delivered by earlier attempts; a retry sends the rest only.
   */
  partsSent: number;
  answer?: string;
  endReason?: string;
  error?: string;
  createdAt: number;
  nextAttemptAt: number;
}

const SCHEMA_VERSION = 5;
/** The states of the `events_waiting` index. */
const WAITING = "state IN ('queued', 'delivering')";
/**
 * The states of the `events_by_state` index: those not waiting (running, done, failed), so that
 * the intake's insert (queued) does not write it. Said with NOT IN: an IN list of three values
 * would build a temporary table on every insert, to decide.
 */
const NOT_WAITING = "state NOT IN ('queued', 'delivering')";
/** The states of the `events_finished` index (what {@linkcode Inbox.prune} deletes). */
const FINISHED = "state IN ('done', 'failed')";
const STATES: readonly EventState[] = ["queued", "running", "delivering", "done", "failed"];

/**
 * The SQL condition for events in `state`, written so that a partial index serves it: SQLite
 * uses a partial index only for a query that repeats the index's own condition, so `state = 'done'`
 * alone would read the whole table.
 */
function inState(state: EventState): string {
  if (!STATES.includes(state)) throw new Error(`unknown event state '${state}'`);
  const index = state === "queued" || state === "delivering" ? WAITING : NOT_WAITING;
  return `${index} AND state = '${state}'`;
}

/**
 * The query of {@linkcode Inbox.list} for events in `state` (any state when undefined); its
 * parameters are the route (or null) and the limit. Exported for the test that checks the plan.
 */
export function listSql(state: EventState | undefined): string {
  // Left alone, SQLite reads waiting events newest first along the id index, to spare a sort:
  // through the whole table when fewer than the limit are waiting.
  const waiting = state === "queued" || state === "delivering";
  return `SELECT ${SUMMARY_COLUMNS} FROM events${waiting ? " INDEXED BY events_waiting" : ""}
    WHERE ${state ? inState(state) : "TRUE"} AND (?1 IS NULL OR route = ?1)
    ORDER BY id DESC LIMIT ?2`;
}

/** The query of {@linkcode Inbox.counts}: each half read from one partial index. */
export const COUNTS_SQL = `SELECT state, COUNT(*) AS n FROM events WHERE ${WAITING} GROUP BY state
  UNION ALL SELECT state, COUNT(*) AS n FROM events WHERE ${NOT_WAITING} GROUP BY state`;

/**
 * One chunk of {@linkcode Inbox.prune}: up to ?2 events finished before ?1, found by the
 * `events_finished` index (exported for the test that checks the plan).
 */
export const PRUNE_EVENTS_SQL = `DELETE FROM events WHERE id IN (
    SELECT id FROM events WHERE ${FINISHED} AND updated_at < ?1 LIMIT ?2)`;

/** Rows one transaction of {@linkcode Inbox.prune} deletes (events) or looks at (claims). */
const PRUNE_CHUNK_ROWS = 1000;
/**
 * The query of `take()`: the oldest due event. Served by the `events_waiting` index, in its
 * order, so it never sorts the queue (exported for the test that checks the plan).
 */
export const NEXT_DUE_SQL =
  `SELECT * FROM events WHERE state IN ('queued', 'delivering') AND next_attempt_at <= ?
   ORDER BY next_attempt_at, created_at LIMIT 1`;
/**
 * What {@linkcode Inbox.accept} did with an event: committed it (with its claim), or found its
 * delivery id claimed already, by a request answered or committed before (`duplicate`) or by one
 * still being served (`held`: a route script or a direct delivery is deciding its outcome).
 */
export type Acceptance =
  | { kind: "accepted"; id: string }
  | { kind: "duplicate" }
  | { kind: "held" };

/** Takes a claim, or takes over an expired one; no change when a live claim exists. */
const CLAIM_SQL = `INSERT INTO claims (route, delivery_id, expires_at, held) VALUES (?, ?, ?, ?)
  ON CONFLICT (route, delivery_id) DO UPDATE SET expires_at = excluded.expires_at,
    held = excluded.held
  WHERE claims.expires_at <= ?`;
const HELD_SQL = "SELECT held FROM claims WHERE route = ? AND delivery_id = ?";
const INSERT_EVENT_SQL = `INSERT INTO events (id, route, event, delivery_id, payload, prompt,
    plan, state, created_at, updated_at, next_attempt_at)
  VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?)`;

/**
 * An event on its way to {@linkcode admit}, as plain data that can cross to the writer thread.
 * Exported for inbox_writer.ts only.
 */
export interface AdmitRow {
  id: string;
  route: string;
  event: string;
  deliveryId: string;
  payload: string;
  prompt: string;
  plan: string;
  nowMs: number;
  expiresAt: number;
}

/** The statements {@linkcode admit} runs. Exported for inbox_writer.ts only. */
export interface AdmitStatements {
  claim: StatementSync;
  held: StatementSync;
  insert: StatementSync;
}

/** Prepares the statements of {@linkcode admit} on `db`. Exported for inbox_writer.ts only. */
export function admitStatements(db: DatabaseSync): AdmitStatements {
  return {
    claim: db.prepare(CLAIM_SQL),
    held: db.prepare(HELD_SQL),
    insert: db.prepare(INSERT_EVENT_SQL),
  };
}

/**
 * Claims `row`'s delivery id and inserts its event, inside the caller's open transaction; or, when
 * the id is claimed already, says by whom. The one definition of acceptance, for the main
 * connection and the writer thread alike. Exported for inbox_writer.ts only.
 */
export function admit(statements: AdmitStatements, row: AdmitRow): Acceptance {
  const claimed = statements.claim.run(row.route, row.deliveryId, row.expiresAt, 0, row.nowMs);
  if (Number(claimed.changes) === 0) {
    const claim = statements.held.get(row.route, row.deliveryId) as { held: number } | undefined;
    return { kind: claim?.held === 1 ? "held" : "duplicate" };
  }
  insertEvent(statements, row);
  return { kind: "accepted", id: row.id };
}

/** Inserts `row`'s event, queued. */
function insertEvent(statements: AdmitStatements, row: AdmitRow): void {
  const { id, route, event, deliveryId, payload, prompt, plan, nowMs } = row;
  statements.insert.run(id, route, event, deliveryId, payload, prompt, plan, nowMs, nowMs, nowMs);
}

/** An event as `agent webhook events` shows it: where it stands, without its payload. */
export interface EventSummary {
  id: string;
  route: string;
  event: string;
  deliveryId: string;
  /** The delivery target frozen at acceptance. */
  deliver: string;
  state: EventState;
  runAttempts: number;
  deliveryAttempts: number;
  partsSent: number;
  endReason?: string;
  error?: string;
  createdAt: number;
  updatedAt: number;
  /** When a queued event or a delivery retry is due. */
  nextAttemptAt: number;
  /**
   * A `delivering` event a gateway's worker took (its delivery under way, or cut off by the
   * gateway's end), as opposed to one waiting for its retry.
   */
  leased: boolean;
}

/**
 * The end reason an event keeps when its run completed with an empty answer (no text and no tool
 * calls): what is delivered is then {@linkcode noAnswerNotice}, as for a run that failed.
 */
export const EMPTY_ANSWER = "empty_answer";

/**
 * The notice delivered in place of the answer of a run that ended without one. It may land
 * somewhere public (an issue comment), so it names the end reason only, not the error.
 *
 * @param event The event.
 * @param endReason How the run ended (`failed`, `timed_out`, {@linkcode EMPTY_ANSWER}, …).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { EMPTY_ANSWER, noAnswerNotice } from "./inbox.ts";
 * assert.equal(
 *   noAnswerNotice({ route: "ci", event: "push", deliveryId: "d-1" }, EMPTY_ANSWER),
 *   "The agent run for ci (push, delivery d-1) ended without an answer: the model's answer " +
 *     "was empty. The gateway log has the details.",
 * );
 * ```
 */
export function noAnswerNotice(
  event: { route: string; event: string; deliveryId: string },
  endReason: string,
): string {
  const why = endReason === EMPTY_ANSWER ? "the model's answer was empty" : endReason;
  return `The agent run for ${event.route} (${event.event}, delivery ${event.deliveryId}) ended ` +
    `without an answer: ${why}. The gateway log has the details.`;
}

/**
 * What {@linkcode Inbox.requeue} did: requeued (and how), or why not. A requeued delivery of a
 * run that ended without an answer names its end reason in `noAnswer` (`failed`,
 * {@linkcode EMPTY_ANSWER}, …): what goes out is {@linkcode noAnswerNotice}. A delivery that was
 * waiting for its retry, made due now, says when that retry was due in `retryWasDueAt`.
 *
 * Refusals: `pending`, queued or running; `leased`, a gateway's worker holds its delivery (under
 * way, or cut off by that gateway's end); `due`, a delivery due already that no worker took yet;
 * `silent`, a `[SILENT]` answer, nothing to deliver.
 */
export type RequeueResult =
  | { ok: true; state: "queued" }
  | { ok: true; state: "delivering"; noAnswer?: string; retryWasDueAt?: number }
  | { ok: false; problem: "unknown" }
  | { ok: false; problem: "pending" | "leased" | "due" | "silent"; state: EventState };

/** The columns an {@linkcode EventSummary} is read from (no payload, prompt or answer). */
const SUMMARY_COLUMNS = "id, route, event, delivery_id, plan, state, run_attempts, " +
  "delivery_attempts, parts_sent, end_reason, error, created_at, updated_at, next_attempt_at, " +
  "leased";

/** What {@linkcode Inbox.recover} did. */
export interface Recovery {
  /** Runs put back in the queue. */
  requeued: number;
  /** Events whose run was interrupted too often: their notice is delivered instead. */
  abandoned: { id: string; deliveryId: string }[];
  /**
   * Delivery ids whose request the dead process had not answered (a script or a direct delivery
   * was under way): no longer claimed, so the sender's retry is served.
   */
  freedClaims: number;
}

/**
 * Runs interrupted this often (the gateway crashed or was killed while they ran) are not started
 * again. A run a clean stop cuts off is not counted ({@linkcode Inbox.putBack}).
 */
export const MAX_RUN_ATTEMPTS = 3;
/** A delivery taken by a worker is not handed out again for this long (unless after a restart). */
const DELIVERY_LEASE_MS = 10 * 60_000;

/**
 * The inbox database.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Inbox } from "./inbox.ts";
 * const dir = await Deno.makeTempDir();
 * using inbox = Inbox.open(`${dir}/inbox.sqlite3`);
 * assert(inbox.claim("github", "d-1", 0, 60_000));
 * assert(!inbox.claim("github", "d-1", 1, 60_000)); // a redelivery is a duplicate
 * const id = inbox.enqueue({
 *   route: "github", event: "issues", deliveryId: "d-1", payload: {}, prompt: "hi",
 *   plan: { deliver: "log", deliverExtra: {}, skills: [] },
 * }, 0);
 * await inbox.durable(); // committed: now it may be answered 202
 * assert.equal(inbox.take(0)?.id, id);
 * ```
 */
export class Inbox implements Disposable {
  readonly path: string;
  #db: DatabaseSync;
  #admit: AdmitStatements;
  /** Prepared statements by SQL: preparing per call costs time and native memory. */
  #statements = new Map<string, StatementSync>();
  /** The files the open database writes, to notice them deleted or replaced. */
  #files: DatabaseFiles;
  /** How the writer thread was asked for, to start it again after a restore. */
  #writerOptions: { onWriterError?: (error: unknown) => void } | undefined;
  /** Told after an inbox deleted while open was put back. */
  #onRestored: ((events: number) => void) | undefined;
  /** The restore of a deleted inbox under way (see {@linkcode Inbox.keepInPlace}). */
  #restoring: Promise<void> | undefined;
  /** Why events are refused: another file took the inbox's place while it was open. */
  #displaced: string | undefined;
  /** The transaction open for this turn's writes, and who waits for its commit. */
  #batch: Batch | undefined;
  /** The thread that commits {@linkcode Inbox.accept}'s events, when one was asked for. */
  #writer: WriterThread | undefined;

  private constructor(path: string, db: DatabaseSync) {
    this.path = path;
    this.#db = db;
    this.#admit = admitStatements(db);
    this.#files = new DatabaseFiles(path);
  }

  /**
   * Opens (creating when missing) the inbox; folder 0700, files 0600.
   *
   * With `writerThread`, {@linkcode Inbox.accept} hands its events to a worker thread with its own
   * connection to the file, which claims, inserts and commits them while this thread goes on
   * serving requests (the gateway's intake). Should that thread fail, `onWriterError` is told once
   * and `accept` goes on, on this thread's connection.
   *
   * An inbox deleted while open (the file, its -wal or its folder) is put back by
   * {@linkcode Inbox.keepInPlace}, with everything the open connection holds; `onRestored` is then
   * told how many events it holds. One replaced by another file is left alone, and from then on
   * `accept` rejects until the inbox is opened again.
   */
  static open(
    path: string,
    options: {
      writerThread?: boolean;
      onWriterError?: (error: unknown) => void;
      onRestored?: (events: number) => void;
    } = {},
  ): Inbox {
    const inbox = new Inbox(path, openPrivateDatabase(path, SCHEMA));
    inbox.#onRestored = options.onRestored;
    if (options.writerThread) {
      inbox.#writerOptions = { onWriterError: options.onWriterError };
      inbox.#startWriter();
    }
    return inbox;
  }

  #startWriter(): void {
    const onWriterError = this.#writerOptions?.onWriterError;
    this.#writer = new WriterThread(this.path, (error, unsent) => {
      this.#writer = undefined;
      onWriterError?.(error);
      for (const waiter of unsent) {
        this.#acceptHere(waiter.row).then(waiter.resolve, waiter.reject);
      }
    });
  }

  /**
   * Claims `deliveryId` for `route` until `nowMs + ttlMs`. False when a live claim exists (the
   * event is a duplicate); an expired claim is taken over.
   *
   * A claim whose outcome is decided later than this turn's commit (a route script or a direct
   * delivery runs first) is taken `held`: it still makes every other request with that id a
   * duplicate, but if the process dies before {@linkcode Inbox.settle} or
   * {@linkcode Inbox.release}, {@linkcode Inbox.recover} frees it, since the sender never got a
   * 2xx and will retry. A claim taken in the same turn as the event it guards is enqueued shares
   * that event's commit and need not be held.
   */
  claim(
    route: string,
    deliveryId: string,
    nowMs: number,
    ttlMs: number,
    held = false,
  ): boolean {
    const result = this.#write(() =>
      this.#admit.claim.run(route, deliveryId, nowMs + ttlMs, held ? 1 : 0, nowMs)
    );
    return Number(result.changes) > 0;
  }

  /** Whether the claim of `deliveryId` is held: its request is still being served. */
  isHeld(route: string, deliveryId: string): boolean {
    const row = this.#admit.held.get(route, deliveryId) as { held: number } | undefined;
    return row?.held === 1;
  }

  /**
   * The request of a claim is answered for good (its event ignored, or its message delivered
   * whole): the claim is kept until it expires, no longer held, and without delivery progress.
   */
  settle(route: string, deliveryId: string): void {
    this.#write(() =>
      this.#sql(
        `UPDATE claims SET held = 0, parts_sent = 0, message_key = NULL
         WHERE route = ? AND delivery_id = ? AND (held = 1 OR message_key IS NOT NULL)`,
      ).run(route, deliveryId)
    );
  }

  /**
   * While a held claim's direct delivery is under way: `partsSent` parts of the message
   * `messageKey` went out. Should the process die now, the sender's retry resumes after them.
   */
  recordDirectParts(
    route: string,
    deliveryId: string,
    progress: { messageKey: string; partsSent: number },
  ): void {
    this.#write(() =>
      this.#sql(
        `UPDATE claims SET parts_sent = ?, message_key = ?
         WHERE route = ? AND delivery_id = ? AND held = 1`,
      ).run(progress.partsSent, progress.messageKey, route, deliveryId)
    );
  }

  /**
   * Gives a claim up (a direct delivery failed, so the sender's retry must go through). With
   * `progress`, the claim is kept as free to take from `progress.atMs`, remembering which message
   * (by `messageKey`) had how many parts delivered, so that the retry can resume after them
   * ({@linkcode Inbox.partsDelivered}). {@linkcode Inbox.prune} keeps that progress as long as
   * finished events, so a sender retrying days later (as Stripe-like senders do) still resumes.
   */
  release(
    route: string,
    deliveryId: string,
    progress?: { messageKey: string; partsSent: number; atMs: number },
  ): void {
    if (!progress || progress.partsSent <= 0) {
      this.#write(() =>
        this.#sql("DELETE FROM claims WHERE route = ? AND delivery_id = ?").run(route, deliveryId)
      );
      return;
    }
    this.#write(() =>
      this.#sql(
        `UPDATE claims SET expires_at = ?, parts_sent = ?, message_key = ?, held = 0
         WHERE route = ? AND delivery_id = ?`,
      ).run(progress.atMs, progress.partsSent, progress.messageKey, route, deliveryId)
    );
  }

  /**
   * Parts of this exact message (`messageKey`) an earlier direct delivery of the same claim got
   * out before failing; 0 when none, or when the message is not the same one.
   */
  partsDelivered(route: string, deliveryId: string, messageKey: string): number {
    const row = this.#sql(
      "SELECT parts_sent, message_key FROM claims WHERE route = ? AND delivery_id = ?",
    ).get(route, deliveryId) as { parts_sent: number; message_key: string | null } | undefined;
    return row && row.message_key === messageKey ? row.parts_sent : 0;
  }

  /**
   * Adds an accepted event whose delivery id this request claimed already (committed with this
   * turn's writes, see `durable`); returns its id.
   */
  enqueue(event: NewEvent, nowMs: number): string {
    const row = admitRow(event, nowMs, 0);
    this.#write(() => insertEvent(this.#admit, row));
    return row.id;
  }

  /**
   * Claims the event's delivery id for its route until `nowMs + ttlMs` and adds the event, both
   * in one transaction; resolves once that is committed (the event may then be answered 202).
   * When the id is claimed already, nothing is written: `duplicate` once the claim found is
   * committed, `held` while its request is still being served. Rejects when the commit failed
   * (then neither the claim nor the event was written).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Inbox } from "./inbox.ts";
   * const dir = await Deno.makeTempDir();
   * using inbox = Inbox.open(`${dir}/inbox.sqlite3`);
   * const event = {
   *   route: "github", event: "issues", deliveryId: "d-1", payload: {}, prompt: "hi",
   *   plan: { deliver: "log", deliverExtra: {}, skills: [] },
   * };
   * const first = await inbox.accept(event, 0, 60_000);
   * assert.equal(first.kind, "accepted");
   * assert.deepEqual(await inbox.accept(event, 1, 60_000), { kind: "duplicate" });
   * ```
   */
  accept(event: NewEvent, nowMs: number, ttlMs: number): Promise<Acceptance> {
    const row = admitRow(event, nowMs, ttlMs);
    if (this.#displaced) return Promise.reject(new Error(this.#displaced));
    // Not looked at here (two stats an event): an event taken into a deleted inbox is in what
    // keepInPlace copies back.
    if (this.#restoring) {
      return this.#restoring.then(() =>
        this.#writer ? this.#writer.accept(row) : this.#acceptHere(row)
      );
    }
    return this.#writer ? this.#writer.accept(row) : this.#acceptHere(row);
  }

  /**
   * Puts the inbox back when it was deleted while open (the gateway calls it every few seconds
   * and before it stops), with everything the open connection holds, events accepted since the
   * deletion included: else the next start would find them gone. Resolves at once when it is in
   * place; rejects when it cannot be put back (another file took its place: from then on
   * {@linkcode Inbox.accept} rejects too).
   */
  keepInPlace(): Promise<void> {
    if (this.#displaced) return Promise.reject(new Error(this.#displaced));
    if (!this.#restoring && (!this.#db.isOpen || this.#files.inPlace())) return Promise.resolve();
    return this.#restore();
  }

  /**
   * Puts back an inbox deleted while open (the file, its -wal, or the whole folder): a copy of
   * everything the open connection sees, in a new file at {@linkcode Inbox.path}, which is then
   * used. Refused when another file has taken its place (that is someone's; the gateway does not
   * overwrite it).
   */
  #restore(): Promise<void> {
    this.#restoring ??= (async () => {
      if (!this.#db.isOpen) throw new Error("the inbox is closed");
      let problem = this.#unrestorable();
      if (problem) throw new Error(problem);
      // The writer thread's connection is to the deleted file too: it finishes what it was
      // handed, and a new one is started on the restored file.
      await this.#writer?.idle();
      this.#writer?.close();
      this.#writer = undefined;
      if (!this.#db.isOpen) throw new Error("the inbox is closed");
      problem = this.#unrestorable();
      if (problem) throw new Error(problem);
      // From here to the reopen nothing awaits: no write can slip in between.
      this.commit();
      const copy = `${this.path}.restore`;
      ensurePrivateDir(dirname(this.path));
      removeIfThere(copy);
      this.#db.exec(`VACUUM INTO '${copy.replaceAll("'", "''")}'`);
      this.#db.close();
      for (const suffix of ["-wal", "-shm"]) removeIfThere(this.path + suffix);
      Deno.renameSync(copy, this.path);
      this.#db = openPrivateDatabase(this.path, SCHEMA);
      this.#admit = admitStatements(this.#db);
      this.#statements = new Map();
      this.#files.remember();
      if (this.#writerOptions) this.#startWriter();
      const { n } = this.#sql("SELECT COUNT(*) AS n FROM events").get() as { n: number };
      this.#onRestored?.(n);
    })().finally(() => this.#restoring = undefined);
    return this.#restoring;
  }

  /** Why the inbox cannot be put back where it was, if it cannot. */
  #unrestorable(): string | undefined {
    let now: string | undefined;
    try {
      const info = Deno.statSync(this.path);
      now = `${info.dev}:${info.ino}`;
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) {
        return `the inbox ${this.path} cannot be looked at (${error}); fix that, or restart ` +
          "the gateway";
      }
    }
    if (now !== undefined && now !== this.#files.file) {
      // For good: events taken now would be in a file no start reads.
      return this.#displaced = `the inbox ${this.path} was replaced by another file while the ` +
        "gateway ran; " +
        "events are refused until the gateway is restarted (it then uses the new file, and " +
        "the events the old one held are lost)";
    }
    return undefined;
  }

  /** {@linkcode Inbox.accept} on this thread's connection. */
  #acceptHere(row: AdmitRow): Promise<Acceptance> {
    let result: Acceptance;
    try {
      // A savepoint: an insert that fails must not leave its claim in this turn's commit.
      result = this.#atomic(() => admit(this.#admit, row));
    } catch (error) {
      return Promise.reject(error);
    }
    return this.durable().then(() => result);
  }

  /**
   * After a restart: runs that never finished go back to the queue, deliveries that were under
   * way (leased by a worker of the dead process) are due now, and held claims (requests the dead
   * process never answered) are freed, keeping how far a direct delivery got. A delivery waiting for its
   * retry keeps its time. A run already interrupted {@linkcode MAX_RUN_ATTEMPTS} times (an event
   * whose run brings the process down would otherwise do so after every restart) is not run
   * again: its answer becomes a notice saying so, to be delivered. A run a clean stop cut off is not among
   * them: it was put back in the queue ({@linkcode Inbox.putBack}).
   */
  recover(nowMs: number): Recovery {
    return this.#atomic(() => {
      const abandoned = this.#sql(
        `UPDATE events SET state = 'delivering', end_reason = 'interrupted', answer =
           'The agent run for ' || route || ' (' || event || ', delivery ' || delivery_id ||
           ') was interrupted ' ||
           run_attempts || ' times by a crash or kill of the gateway; it is not run again.',
           error = 'the run was interrupted ' || run_attempts || ' times',
           next_attempt_at = ?, leased = 0, updated_at = ?
         WHERE ${inState("running")} AND run_attempts >= ? RETURNING id, delivery_id`,
      ).all(nowMs, nowMs, MAX_RUN_ATTEMPTS) as { id: string; delivery_id: string }[];
      const requeued = this.#sql(
        `UPDATE events SET state = 'queued', next_attempt_at = ?, updated_at = ?
         WHERE ${inState("running")}`,
      ).run(nowMs, nowMs);
      this.#sql(
        `UPDATE events SET next_attempt_at = ?, leased = 0
         WHERE ${inState("delivering")} AND leased = 1`,
      ).run(nowMs);
      // Requests the dead process never answered: their senders retry, and must be served.
      const freed = this.#sql("DELETE FROM claims WHERE held = 1 AND message_key IS NULL").run();
      const resumable = this.#sql(
        "UPDATE claims SET held = 0, expires_at = ? WHERE held = 1",
      ).run(nowMs);
      return {
        requeued: Number(requeued.changes),
        abandoned: abandoned.map((row) => ({ id: row.id, deliveryId: row.delivery_id })),
        freedClaims: Number(freed.changes) + Number(resumable.changes),
      };
    });
  }

  /**
   * The next event due (queued or delivering, oldest first), marked `running` when it still needs
   * its run. `undefined` when nothing is due.
   */
  take(nowMs: number): InboxEvent | undefined {
    return this.#atomic(() => {
      const row = this.#sql(NEXT_DUE_SQL).get(nowMs) as Record<string, unknown> | undefined;
      if (!row) return undefined;
      if (row.state === "queued") {
        this.#sql(
          `UPDATE events SET state = 'running', run_attempts = run_attempts + 1, updated_at = ?
           WHERE id = ?`,
        ).run(nowMs, row.id as string);
        row.state = "running";
        row.run_attempts = Number(row.run_attempts) + 1;
      } else {
        // Being delivered now: not due again unless this process dies (see recover).
        this.#sql("UPDATE events SET next_attempt_at = ?, leased = 1 WHERE id = ?").run(
          nowMs + DELIVERY_LEASE_MS,
          row.id as string,
        );
      }
      return toEvent(row);
    });
  }

  /**
   * A run cut off by a clean stop of the gateway (its grace ran out, or a second Ctrl-C): back in
   * the queue where it was, and the run taken by {@linkcode Inbox.take} is not counted. The process
   * survived that run, so it is no run that brings the gateway down, which is what
   * {@linkcode MAX_RUN_ATTEMPTS} is for; a crash or kill during a run leaves it `running` and
   * counted. Returns the runs of the event interrupted so far (by crashes or kills), or
   * `undefined` when it was not running.
   */
  putBack(id: string, nowMs: number): number | undefined {
    const row = this.#write(() =>
      this.#sql(
        `UPDATE events SET state = 'queued', run_attempts = MAX(run_attempts - 1, 0),
           updated_at = ? WHERE id = ? AND state = 'running' RETURNING run_attempts`,
      ).get(nowMs, id)
    ) as { run_attempts: number } | undefined;
    return row?.run_attempts;
  }

  /** When the next event falls due, or `undefined` when none is waiting. */
  nextDueAt(): number | undefined {
    const row = this.#sql(
      "SELECT MIN(next_attempt_at) AS due FROM events WHERE state IN ('queued', 'delivering')",
    ).get() as { due: number | null };
    return row.due ?? undefined;
  }

  /** Stores the run's outcome; the event moves on to delivery (or `done` when nothing is sent). */
  finishRun(
    id: string,
    outcome: { answer: string; endReason: string; error?: string; deliver: boolean },
    nowMs: number,
  ): void {
    this.#write(() =>
      this.#sql(
        `UPDATE events SET state = ?, answer = ?, end_reason = ?, error = ?, updated_at = ?,
           next_attempt_at = ?, leased = ? WHERE id = ?`,
      ).run(
        outcome.deliver ? "delivering" : "done",
        outcome.answer,
        outcome.endReason,
        outcome.error ?? null,
        nowMs,
        // The worker that ran the event delivers it now: lease it as take() does, or another
        // worker woken meanwhile would deliver it a second time.
        outcome.deliver ? nowMs + DELIVERY_LEASE_MS : nowMs,
        outcome.deliver ? 1 : 0,
        id,
      )
    );
  }

  /**
   * While a delivery is under way: `partsSent` parts of the split answer (from the first) went
   * out. Should the process die now, the delivery resumes after them.
   */
  recordParts(id: string, partsSent: number): void {
    this.#write(() =>
      this.#sql("UPDATE events SET parts_sent = MAX(parts_sent, ?) WHERE id = ?").run(partsSent, id)
    );
  }

  /**
   * Records one delivery attempt: `done` on success, else `delivering` again at `retryAt`, or
   * `failed` when `retryAt` is undefined (no more tries). `partsSent` counts the parts of a split
   * answer delivered so far (from the first), so that the retry starts after them.
   */
  recordDelivery(
    id: string,
    outcome: { ok: true } | { ok: false; error: string; retryAt?: number; partsSent?: number },
    nowMs: number,
  ): void {
    if (outcome.ok) {
      this.#write(() =>
        this.#sql(
          `UPDATE events SET state = 'done', delivery_attempts = delivery_attempts + 1,
             leased = 0, updated_at = ? WHERE id = ?`,
        ).run(nowMs, id)
      );
      return;
    }
    this.#write(() =>
      this.#sql(
        `UPDATE events SET state = ?, delivery_attempts = delivery_attempts + 1, error = ?,
           next_attempt_at = ?, parts_sent = MAX(parts_sent, ?), leased = 0, updated_at = ?
         WHERE id = ?`,
      ).run(
        outcome.retryAt === undefined ? "failed" : "delivering",
        outcome.error,
        outcome.retryAt ?? nowMs,
        outcome.partsSent ?? 0,
        nowMs,
        id,
      )
    );
  }

  /** One event by id. */
  get(id: string): InboxEvent | undefined {
    const row = this.#sql("SELECT * FROM events WHERE id = ?").get(id) as
      | Record<string, unknown>
      | undefined;
    return row ? toEvent(row) : undefined;
  }

  /**
   * Events, newest first, optionally of one `state` and `route`; at most `limit`. What the gateway
   * keeps: finished events go after a week (see {@linkcode Inbox.prune}).
   */
  list(filter: { state?: EventState; route?: string; limit: number }): EventSummary[] {
    const rows = this.#sql(listSql(filter.state)).all(filter.route ?? null, filter.limit);
    return (rows as Record<string, unknown>[]).map(toSummary);
  }

  /** The events whose id or delivery id is `key` (one delivery id may reach several routes). */
  find(key: string): EventSummary[] {
    const rows = this.#sql(
      `SELECT ${SUMMARY_COLUMNS} FROM events
       WHERE id = ?1 OR delivery_id = ?1 ORDER BY id`,
    ).all(key) as Record<string, unknown>[];
    return rows.map(toSummary);
  }

  /**
   * Puts a finished event back in the queue: its answer is delivered again (`failed`: the parts
   * not sent yet; `done`: all of it), or, with `rerun`, the agent runs its prompt again and the
   * new answer is delivered. A delivery waiting for its retry (after a failed attempt) is taken
   * as a failed one: due now, the parts already sent skipped (the cause of the failure was fixed,
   * and nobody wants to wait out the backoff). Its delivery (and run) attempts start again from
   * zero. An event still queued or running is left alone, and so is a delivery a worker holds or
   * one due already, and a `done` event that has nothing to deliver (its answer was `[SILENT]`)
   * unless `rerun`. An empty answer kept by an older version is replaced by the notice of a run
   * without an answer.
   */
  requeue(id: string, options: { rerun: boolean }, nowMs: number): RequeueResult {
    return this.#atomic(() => {
      const row = this.#sql(
        `SELECT state, delivery_attempts, answer, end_reason, route, event, delivery_id, leased,
           next_attempt_at FROM events WHERE id = ?`,
      ).get(id) as
        | {
          state: EventState;
          delivery_attempts: number;
          answer: string | null;
          end_reason: string | null;
          route: string;
          event: string;
          delivery_id: string;
          leased: number;
          next_attempt_at: number;
        }
        | undefined;
      if (!row) return { ok: false, problem: "unknown" };
      // A worker took it (leased) or will at its time: only the second can be hurried.
      const waiting = row.state === "delivering" && row.leased === 0;
      if (row.state === "delivering" && !waiting) {
        return { ok: false, problem: "leased", state: row.state };
      }
      if (waiting && !options.rerun && row.next_attempt_at <= nowMs) {
        return { ok: false, problem: "due", state: row.state };
      }
      if (row.state !== "done" && row.state !== "failed" && !waiting) {
        return { ok: false, problem: "pending", state: row.state };
      }
      if (options.rerun) {
        this.#sql(
          `UPDATE events SET state = 'queued', answer = NULL, end_reason = NULL, error = NULL,
             run_attempts = 0, delivery_attempts = 0, parts_sent = 0, leased = 0,
             next_attempt_at = ?, updated_at = ? WHERE id = ?`,
        ).run(nowMs, nowMs, id);
        return { ok: true, state: "queued" };
      }
      // A done event delivered nothing when its run said [SILENT] (no attempt was made).
      if (row.state === "done" && Number(row.delivery_attempts) === 0) {
        return { ok: false, problem: "silent", state: row.state };
      }
      let endReason = row.end_reason;
      // Older versions kept an empty answer as it was (which every platform refuses): it is now
      // the notice, and says why.
      if (endReason === "completed" && (row.answer ?? "").trim() === "") {
        endReason = EMPTY_ANSWER;
        this.#sql("UPDATE events SET answer = ?, end_reason = ? WHERE id = ?").run(
          noAnswerNotice({ ...row, deliveryId: row.delivery_id }, EMPTY_ANSWER),
          endReason,
          id,
        );
      }
      this.#sql(
        `UPDATE events SET state = 'delivering', delivery_attempts = 0, leased = 0,
           parts_sent = CASE WHEN state = 'done' THEN 0 ELSE parts_sent END,
           next_attempt_at = ?, updated_at = ? WHERE id = ?`,
      ).run(nowMs, nowMs, id);
      return {
        ok: true,
        state: "delivering",
        ...(endReason === null || endReason === "completed" ? {} : { noAnswer: endReason }),
        ...(waiting ? { retryWasDueAt: row.next_attempt_at } : {}),
      };
    });
  }

  /** Counts per state. */
  counts(): Record<EventState, number> {
    const counts: Record<EventState, number> = {
      queued: 0,
      running: 0,
      delivering: 0,
      done: 0,
      failed: 0,
    };
    const rows = this.#sql(COUNTS_SQL).all();
    for (const row of rows as { state: EventState; n: number }[]) counts[row.state] = row.n;
    return counts;
  }

  /**
   * Deletes expired claims and finished events older than `keepMs`. A claim holding the progress
   * of a failed direct delivery is kept until `keepMs` after it expired.
   *
   * It goes in chunks of `chunkRows` rows, each one write of its turn (committed with that turn's
   * other writes), and waits between chunks until the chunk is committed, the writer thread has
   * committed what it was handed meanwhile, and the event loop has had a turn: a large prune
   * never holds up requests for long, and a stop in the middle leaves only whole chunks done.
   * Ends early, with what it did so far, once the inbox is closed.
   */
  async prune(
    nowMs: number,
    keepMs: number,
    options: { chunkRows?: number } = {},
  ): Promise<{ claims: number; events: number; chunks: number }> {
    const chunkRows = Math.max(1, Math.floor(options.chunkRows ?? PRUNE_CHUNK_ROWS));
    const done = { claims: 0, events: 0, chunks: 0 };
    // Claims have no index by expiry (the intake would have to keep it up): they are walked in
    // key order, chunkRows at a time, from after the last key of the chunk before.
    let after: ClaimKey | undefined;
    let more = true;
    while (more && this.#db.isOpen) {
      const chunk = this.#atomic(() => this.#pruneClaims(after, chunkRows, nowMs, keepMs));
      done.claims += chunk.deleted;
      done.chunks++;
      after = chunk.last;
      more = chunk.last !== undefined;
      await this.#pause();
    }
    more = true;
    while (more && this.#db.isOpen) {
      const deleted = this.#atomic(() =>
        Number(this.#sql(PRUNE_EVENTS_SQL).run(nowMs - keepMs, chunkRows).changes)
      );
      done.events += deleted;
      done.chunks++;
      more = deleted === chunkRows;
      await this.#pause();
    }
    return done;
  }

  /**
   * Deletes the expired claims among the `chunkRows` claims after `after` (from the first when
   * undefined); returns how many, and the last key looked at unless the walk reached the end.
   */
  #pruneClaims(
    after: ClaimKey | undefined,
    chunkRows: number,
    nowMs: number,
    keepMs: number,
  ): { deleted: number; last?: ClaimKey } {
    const from = after ? "(route, delivery_id) > (?, ?)" : "TRUE";
    const fromArgs = after ? [after.route, after.delivery_id] : [];
    const last = this.#sql(
      `SELECT route, delivery_id FROM claims WHERE ${from}
       ORDER BY route, delivery_id LIMIT 1 OFFSET ?`,
    ).get(...fromArgs, chunkRows - 1) as ClaimKey | undefined;
    const to = last ? "AND (route, delivery_id) <= (?, ?)" : "";
    const toArgs = last ? [last.route, last.delivery_id] : [];
    const deleted = this.#sql(
      `DELETE FROM claims WHERE ${from} ${to}
         AND expires_at <= ? AND (message_key IS NULL OR expires_at < ?)`,
    ).run(...fromArgs, ...toArgs, nowMs, nowMs - keepMs).changes;
    return { deleted: Number(deleted), last };
  }

  /**
   * Between two chunks of a prune: this turn's writes committed, the writer thread's events
   * committed (it waits for the file's lock, and would lose the race for it to the next chunk),
   * and one turn of the event loop for the requests waiting.
   */
  async #pause(): Promise<void> {
    await this.durable();
    await this.#writer?.idle();
    // A timer: Deno runs a chain of setImmediate (or MessageChannel) callbacks without reading
    // the sockets in between, so requests would wait for the whole prune.
    await new Promise((resolve) => setTimeout(resolve, 0));
  }

  /**
   * Resolves once every write made so far is committed; rejects when their commit failed (then
   * none of them happened).
   */
  durable(): Promise<void> {
    return this.#batch?.committed ?? Promise.resolve();
  }

  /** Commits this turn's writes now (otherwise done once the turn's I/O callbacks have run). */
  commit(): void {
    const batch = this.#batch;
    if (!batch) return;
    this.#batch = undefined;
    clearImmediate(batch.timer);
    try {
      this.#db.exec("COMMIT");
      batch.resolve();
    } catch (error) {
      try {
        if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      } catch { /* the connection is unusable; the next write reports it */ }
      batch.reject(error);
    }
  }

  /**
   * Commits what is pending and closes the database. Events handed to the writer thread and not
   * committed yet are given up: their `accept` rejects.
   */
  close(): void {
    this.#writer?.close();
    this.#writer = undefined;
    if (!this.#db.isOpen) return;
    this.commit();
    this.#db.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }

  #sql(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (!statement) this.#statements.set(sql, statement = this.#db.prepare(sql));
    return statement;
  }

  /** Runs one write statement inside this turn's transaction, opening it when needed. */
  #write<T>(work: () => T): T {
    if (!this.#batch) this.#begin();
    return work();
  }

  /** Several writes that happen together or not at all, inside this turn's transaction. */
  #atomic<T>(work: () => T): T {
    if (!this.#batch) this.#begin();
    this.#db.exec("SAVEPOINT step");
    try {
      const result = work();
      this.#db.exec("RELEASE step");
      return result;
    } catch (error) {
      this.#db.exec("ROLLBACK TO step");
      this.#db.exec("RELEASE step");
      throw error;
    }
  }

  #begin(): void {
    this.#db.exec("BEGIN IMMEDIATE");
    let resolve!: () => void;
    let reject!: (error: unknown) => void;
    const committed = new Promise<void>((yes, no) => {
      resolve = yes;
      reject = no;
    });
    // Nobody may be waiting (a worker's write): a failed commit is then not unhandled.
    committed.catch(() => {});
    this.#batch = { committed, resolve, reject, timer: setImmediate(() => this.commit()) };
  }
}

function removeIfThere(path: string): void {
  try {
    Deno.removeSync(path);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
}

/** A claim's key, as {@linkcode Inbox.prune} walks them. */
interface ClaimKey {
  route: string;
  delivery_id: string;
}

interface Batch {
  committed: Promise<void>;
  resolve(): void;
  reject(error: unknown): void;
  timer: ReturnType<typeof setImmediate>;
}

/** `event` as the plain row {@linkcode admit} writes, with a new id. */
function admitRow(event: NewEvent, nowMs: number, ttlMs: number): AdmitRow {
  return {
    id: timeOrderedId(nowMs),
    route: event.route,
    event: event.event,
    deliveryId: event.deliveryId,
    payload: event.payloadJson ?? stringifyJsonExact(event.payload),
    prompt: event.prompt,
    plan: JSON.stringify(event.plan),
    nowMs,
    expiresAt: nowMs + ttlMs,
  };
}

/** What the inbox thread sends the writer thread. Exported for inbox_writer.ts only. */
export type WriterRequest =
  | { kind: "open"; path: string }
  | { kind: "admit"; seq: number; rows: AdmitRow[] };

/** What the writer thread answers. Exported for inbox_writer.ts only. */
export type WriterReply =
  | { kind: "admitted"; seq: number; results: Acceptance[] }
  | { kind: "failed"; seq: number; error: string }
  | { kind: "broken"; error: string };

interface Waiter {
  row: AdmitRow;
  resolve(result: Acceptance): void;
  reject(error: unknown): void;
}

/**
 * The writer thread, seen from the inbox (started with the first event): the events accepted in
 * one turn of the event loop go to it as one message, and it commits them in one transaction on
 * its own connection (WAL lets this thread's connection read meanwhile; SQLite's lock and busy
 * timeout order the two connections' writes). When the thread cannot go on, `onBroken` is called
 * once, and the events it had not answered are rejected: the outcome of their commit is unknown,
 * so their senders must retry, and a retry of one that was committed is a duplicate. Those not sent yet (or all,
 * when the thread could not even open the inbox) are handed to `onBroken`, to be accepted
 * another way.
 */
class WriterThread {
  readonly #path: string;
  #worker: Worker | undefined;
  readonly #onBroken: (error: unknown, unsent: Waiter[]) => void;
  /** Accepted in this turn, not sent yet. */
  #queued: Waiter[] = [];
  /** Sent, by message number, waiting for the commit. */
  readonly #sent = new Map<number, Waiter[]>();
  #seq = 0;
  #broken = false;
  /** Who waits in {@linkcode WriterThread.idle}, and for the answer to which message. */
  #idleWaiters: { seq: number; resolve(): void }[] = [];

  constructor(path: string, onBroken: (error: unknown, unsent: Waiter[]) => void) {
    this.#path = path;
    this.#onBroken = onBroken;
  }

  /** The thread, started with the first event. */
  #thread(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(new URL("./inbox_writer.ts", import.meta.url), { type: "module" });
    worker.onmessage = (message: MessageEvent<WriterReply>) => this.#reply(message.data);
    worker.onerror = (event) => {
      event.preventDefault();
      this.#break(new Error(`the inbox writer thread failed: ${event.message}`));
    };
    worker.onmessageerror = () => {
      this.#break(new Error("the inbox writer thread sent a message that cannot be read"));
    };
    worker.postMessage({ kind: "open", path: this.#path } satisfies WriterRequest);
    return this.#worker = worker;
  }

  accept(row: AdmitRow): Promise<Acceptance> {
    if (this.#broken) return Promise.reject(new Error("the inbox writer thread has stopped"));
    return new Promise((resolve, reject) => {
      if (this.#queued.push({ row, resolve, reject }) === 1) setImmediate(() => this.#flush());
    });
  }

  /**
   * Resolves once every event handed over so far is answered (committed or failed), or the
   * thread has stopped.
   */
  idle(): Promise<void> {
    const seq = this.#seq + (this.#queued.length > 0 ? 1 : 0);
    if (this.#answeredUpTo(seq)) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push({ seq, resolve }));
  }

  #answeredUpTo(seq: number): boolean {
    if (this.#broken) return true;
    if (this.#seq < seq) return false;
    for (const sent of this.#sent.keys()) if (sent <= seq) return false;
    return true;
  }

  #wakeIdle(): void {
    const waiting = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const waiter of waiting) {
      if (this.#answeredUpTo(waiter.seq)) waiter.resolve();
      else this.#idleWaiters.push(waiter);
    }
  }

  /** Stops the thread; what it had not answered is rejected. */
  close(): void {
    if (this.#broken) return;
    this.#broken = true;
    this.#worker?.terminate();
    this.#rejectAll(new Error("the inbox was closed before the event was committed"));
  }

  #flush(): void {
    const waiters = this.#queued;
    this.#queued = [];
    if (waiters.length === 0 || this.#broken) return;
    const seq = ++this.#seq;
    this.#sent.set(seq, waiters);
    const request: WriterRequest = { kind: "admit", seq, rows: waiters.map((w) => w.row) };
    this.#thread().postMessage(request);
  }

  #reply(reply: WriterReply): void {
    if (reply.kind === "broken") {
      // It could not open the inbox, so it has written nothing of what it was sent.
      this.#break(new Error(reply.error), true);
      return;
    }
    const waiters = this.#sent.get(reply.seq);
    if (!waiters) return;
    this.#sent.delete(reply.seq);
    if (reply.kind === "failed") {
      const error = new Error(reply.error);
      for (const waiter of waiters) waiter.reject(error);
    } else {
      waiters.forEach((waiter, index) => waiter.resolve(reply.results[index]));
    }
    this.#wakeIdle();
  }

  /**
   * The thread cannot go on. What it was not sent, or (`wroteNothing`) what it certainly did not
   * write, goes to `onBroken`; the rest is rejected.
   */
  #break(error: Error, wroteNothing = false): void {
    if (this.#broken) return;
    this.#broken = true;
    this.#worker?.terminate();
    const unsent = wroteNothing ? [...this.#sent.values()].flat() : [];
    if (wroteNothing) this.#sent.clear();
    unsent.push(...this.#queued);
    this.#queued = [];
    this.#rejectAll(error);
    this.#onBroken(error, unsent);
  }

  #rejectAll(error: Error): void {
    for (const waiters of this.#sent.values()) for (const waiter of waiters) waiter.reject(error);
    this.#sent.clear();
    for (const waiter of this.#queued) waiter.reject(error);
    this.#queued = [];
    this.#wakeIdle();
  }
}

let lastIdMs = 0;
let idCounter = 0;

/**
 * A UUID version 7 (RFC 9562): the millisecond time first, then a 12-bit counter for ids of the
 * same millisecond, then 62 random bits. New events therefore go to the end of the id index
 * instead of a random page of it, which keeps a commit to few pages.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { timeOrderedId } from "./inbox.ts";
 * const [a, b] = [timeOrderedId(1_700_000_000_000), timeOrderedId(1_700_000_000_000)];
 * assert.match(a, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
 * assert(a < b);
 * ```
 */
export function timeOrderedId(nowMs: number): string {
  let ms = Math.max(Math.floor(nowMs), 0);
  if (ms <= lastIdMs) {
    ms = lastIdMs;
    if (++idCounter > 0xfff) { // 4096 ids in one millisecond: borrow the next one
      ms = ++lastIdMs;
      idCounter = 0;
    }
  } else {
    lastIdMs = ms;
    idCounter = 0;
  }
  const random = crypto.getRandomValues(ID_RANDOM);
  random[0] = (random[0] & 0x3f) | 0x80; // the RFC 9562 variant
  const time = ms.toString(16).padStart(12, "0").slice(-12);
  const counter = idCounter.toString(16).padStart(3, "0");
  const hex = (from: number, to: number) => {
    let text = "";
    for (let i = from; i < to; i++) text += HEX[random[i]];
    return text;
  };
  return `${time.slice(0, 8)}-${time.slice(8)}-7${counter}-${hex(0, 2)}-${hex(2, 8)}`;
}

/** Reused for the random bits of each id (filled anew every time). */
const ID_RANDOM = new Uint8Array(8);
const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, "0"));

function toSummary(row: Record<string, unknown>): EventSummary {
  let deliver = "";
  try {
    deliver = String(JSON.parse(String(row.plan)).deliver ?? "");
  } catch { /* written by this code: always JSON */ }
  return {
    ...progressOf(row),
    deliver,
    updatedAt: Number(row.updated_at),
    leased: Number(row.leased) === 1,
  };
}

/** What an event and its summary both tell: which event it is and how far it got. */
function progressOf(row: Record<string, unknown>) {
  return {
    id: String(row.id),
    route: String(row.route),
    event: String(row.event),
    deliveryId: String(row.delivery_id),
    state: row.state as EventState,
    runAttempts: Number(row.run_attempts),
    deliveryAttempts: Number(row.delivery_attempts),
    partsSent: Number(row.parts_sent),
    endReason: row.end_reason === null ? undefined : String(row.end_reason),
    error: row.error === null ? undefined : String(row.error),
    createdAt: Number(row.created_at),
    nextAttemptAt: Number(row.next_attempt_at),
  };
}

function toEvent(row: Record<string, unknown>): InboxEvent {
  return {
    ...progressOf(row),
    payload: parseJsonExact(String(row.payload)) as Record<string, unknown>,
    prompt: String(row.prompt),
    plan: JSON.parse(String(row.plan)),
    answer: row.answer === null ? undefined : String(row.answer),
  };
}

const SCHEMA: StoreSchema = {
  version: SCHEMA_VERSION,
  what: "gateway inbox",
  create(db) {
    db.exec(`
      CREATE TABLE IF NOT EXISTS events (
        id TEXT PRIMARY KEY,
        route TEXT NOT NULL,
        event TEXT NOT NULL,
        delivery_id TEXT NOT NULL,
        payload TEXT NOT NULL,
        prompt TEXT NOT NULL,
        plan TEXT NOT NULL,
        state TEXT NOT NULL
          CHECK (state IN ('queued', 'running', 'delivering', 'done', 'failed')),
        run_attempts INTEGER NOT NULL DEFAULT 0,
        delivery_attempts INTEGER NOT NULL DEFAULT 0,
        parts_sent INTEGER NOT NULL DEFAULT 0,
        leased INTEGER NOT NULL DEFAULT 0,
        answer TEXT,
        end_reason TEXT,
        error TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        next_attempt_at INTEGER NOT NULL
      ) STRICT;
      -- Version 2: the waiting events in take() order, so that taking one never sorts the queue.
      DROP INDEX IF EXISTS events_due;
      CREATE INDEX IF NOT EXISTS events_waiting ON events (next_attempt_at, created_at)
        WHERE state IN ('queued', 'delivering');
      CREATE TABLE IF NOT EXISTS claims (
        route TEXT NOT NULL,
        delivery_id TEXT NOT NULL,
        expires_at INTEGER NOT NULL,
        parts_sent INTEGER NOT NULL DEFAULT 0,
        message_key TEXT,
        held INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (route, delivery_id)
      ) STRICT, WITHOUT ROWID;
    `);
    // Version 3: how much of a split answer went out, and which deliveries a worker holds.
    const columnsOf = (table: string) =>
      new Set(
        (db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map((c) => c.name),
      );
    const columns = columnsOf("events");
    if (!columns.has("parts_sent")) {
      db.exec("ALTER TABLE events ADD COLUMN parts_sent INTEGER NOT NULL DEFAULT 0");
    }
    if (!columns.has("leased")) {
      db.exec("ALTER TABLE events ADD COLUMN leased INTEGER NOT NULL DEFAULT 0");
      // Older versions told a held delivery from a waiting retry by nothing: as they did, a
      // restart makes every delivery due at once.
      db.exec("UPDATE events SET leased = 1 WHERE state = 'delivering'");
    }
    const claimColumns = columnsOf("claims");
    if (!claimColumns.has("parts_sent")) {
      db.exec(`ALTER TABLE claims ADD COLUMN parts_sent INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE claims ADD COLUMN message_key TEXT;`);
    }
    // Version 4: claims whose request was not answered yet.
    if (!claimColumns.has("held")) {
      db.exec("ALTER TABLE claims ADD COLUMN held INTEGER NOT NULL DEFAULT 0");
    }
    // Version 5: events by state, and finished events by age, for listing and pruning a large
    // inbox. Neither holds queued events, so the intake's insert does not write them.
    db.exec(`
      CREATE INDEX IF NOT EXISTS events_by_state ON events (state, id) WHERE ${NOT_WAITING};
      CREATE INDEX IF NOT EXISTS events_finished ON events (updated_at) WHERE ${FINISHED};
    `);
  },
};
