/**
 * The recording API: facts in, counters in the store. Increments are summed in memory and
 * written in one transaction per flush (at 1 000 buffered events, after 500 ms, on close and on
 * process exit), so recording costs microseconds and two processes never lose each other's
 * counts. `client.active` bypasses the buffer: its latch must be decided against the store.
 *
 * Recording never throws for the store: a store another process holds (busy) or a damaged one
 * is reported once through `onWarning`, the counts stay in memory and the next flush tries again.
 * A write waits at most 250 ms for another process's lock (1 s for the last flush on close), so
 * a run is never held; counts that still cannot be written on close are kept in a file of the
 * store's folder (`unwritten/`), which the next process that records moves into the store. Only
 * when that file cannot be written either are they dropped, with a warning that says how many.
 *
 * @module
 */
import type { MetricsResource } from "./contract.ts";
import { counterRowOf, type MetricsEvent } from "./events.ts";
import { canonicalJson } from "./resource.ts";
import { type CounterIncrement, isBusyError, type MetricsStore } from "./store.ts";
import { importUnwritten, keepUnwritten } from "./unwritten.ts";

/** How long a recording write waits for another process's lock. */
export const RECORD_BUSY_TIMEOUT_MS = 250;
/** How long the last flush (on close) waits for another process's lock. */
const CLOSE_BUSY_TIMEOUT_MS = 1_000;

/** Records usage facts. The disabled recorder accepts every call and stores nothing. */
export interface MetricsRecorder {
  /** Whether facts are kept (consent given). */
  readonly enabled: boolean;
  /**
   * Counts one fact. Throws only when the fact is outside the contract (a programming error);
   * never for the store (see {@linkcode StoreRecorderOptions.onWarning}).
   */
  record(event: MetricsEvent): void;
  /**
   * Writes buffered counts to the store. Never throws; returns whether everything buffered is
   * now in the store (`false`: the store was busy or damaged, the counts stay buffered).
   */
  flush(): boolean;
  /**
   * Flushes and releases the store; counts that still cannot be written are kept in the store
   * folder's `unwritten/` for the next process (dropped only when that fails too).
   */
  close(): void;
}

/** Options of {@linkcode StoreRecorder}. */
export interface StoreRecorderOptions {
  /** Clock (ms since epoch). Default `Date.now`. */
  now?: () => number;
  /** Flush when this many events are buffered. Default 1 000. */
  maxBufferedEvents?: number;
  /** Flush this long after the first buffered event. Default 500 ms; 0 flushes on every event. */
  flushDelayMs?: number;
  /**
   * Told (once per kind of problem) when counts cannot be written: the store is busy or damaged,
   * or counts were dropped on close. Default: one `warning:` line on stderr.
   */
  onWarning?: (message: string) => void;
  /** How long a recording write waits for another process's lock. Default 250 ms. */
  busyTimeoutMs?: number;
  /** How long the last flush (on close) waits. Default 1 000 ms. */
  closeBusyTimeoutMs?: number;
  /**
   * Whether the user still consents, asked before each write (so at most every
   * `flushDelayMs`): when not, the buffered counts are dropped, not written, and facts are not
   * buffered until consent is back. Default: always.
   */
  consented?: () => boolean;
  /** That counts cannot be written was said already (the store could not be opened at start). */
  failureSaid?: boolean;
}

/** The default warning sink: one line on stderr. */
function warnOnStderr(message: string): void {
  console.error(`warning: ${message}`);
}

/**
 * A recorder over an open {@linkcode MetricsStore}.
 *
 * @example
 * ```ts
 * import { MetricsStore } from "./store.ts";
 * import { StoreRecorder } from "./recorder.ts";
 * const dir = await Deno.makeTempDir();
 * const store = MetricsStore.open(`${dir}/metrics.sqlite3`);
 * const recorder = new StoreRecorder(store, {
 *   agent_version: "0.1.0", architecture: "x86_64", install_method: "git", os_family: "linux",
 * });
 * recorder.record({ kind: "task_started", entrypoint: "interactive", surface: "cli" });
 * recorder.close();
 * ```
 *
 * @example A busy store is a warning, never an exception
 * ```ts
 * import assert from "node:assert/strict";
 * import { DatabaseSync } from "node:sqlite";
 * import { MetricsStore } from "./store.ts";
 * import { StoreRecorder } from "./recorder.ts";
 * const dir = await Deno.makeTempDir();
 * const store = MetricsStore.open(`${dir}/metrics.sqlite3`);
 * const warnings: string[] = [];
 * const recorder = new StoreRecorder(store, {
 *   agent_version: "0.1.0", architecture: "x86_64", install_method: "git", os_family: "linux",
 * }, { flushDelayMs: 0, busyTimeoutMs: 0, onWarning: (m) => warnings.push(m) });
 * const other = new DatabaseSync(`${dir}/metrics.sqlite3`);
 * other.exec("BEGIN EXCLUSIVE; UPDATE meta SET value = value");
 * recorder.record({ kind: "task_started", entrypoint: "interactive", surface: "cli" });
 * assert.match(warnings[0], /busy/);
 * other.exec("COMMIT");
 * assert(recorder.flush()); // the kept count is written now
 * recorder.close();
 * other.close();
 * ```
 */
export class StoreRecorder implements MetricsRecorder {
  readonly enabled = true;
  readonly #store: MetricsStore;
  readonly #resource: string;
  readonly #now: () => number;
  readonly #maxBuffered: number;
  readonly #flushDelayMs: number;
  readonly #warn: (message: string) => void;
  readonly #busyTimeoutMs: number;
  readonly #closeBusyTimeoutMs: number;
  readonly #consented: () => boolean;
  /** The last look at consent found it withdrawn: facts are dropped until it is back. */
  #withdrawn = false;
  readonly #pending = new Map<string, CounterIncrement>();
  /** `client.active` facts whose latch could not be decided yet (the store was busy). */
  readonly #pendingLatches: { nowMs: number; increment: Omit<CounterIncrement, "count"> }[] = [];
  readonly #warned = new Set<string>();
  #bufferedEvents = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** Why the last write failed (the close warning says it), if it did. */
  #lastFailure: unknown;
  /** After a failed write: the wait before the next try (doubles up to 8 s), else 0. */
  #retryDelayMs = 0;
  #closed = false;
  /** Whether the counts other processes left unwritten were moved into the store yet. */
  #adoptedUnwritten = false;
  readonly #onUnload = () => this.close();

  constructor(store: MetricsStore, resource: MetricsResource, options: StoreRecorderOptions = {}) {
    this.#store = store;
    this.#resource = canonicalJson(resource as unknown as Record<string, string>);
    this.#now = options.now ?? Date.now;
    this.#maxBuffered = options.maxBufferedEvents ?? 1000;
    this.#flushDelayMs = options.flushDelayMs ?? 500;
    this.#warn = options.onWarning ?? warnOnStderr;
    this.#busyTimeoutMs = options.busyTimeoutMs ?? RECORD_BUSY_TIMEOUT_MS;
    this.#closeBusyTimeoutMs = options.closeBusyTimeoutMs ?? CLOSE_BUSY_TIMEOUT_MS;
    this.#consented = options.consented ?? (() => true);
    if (options.failureSaid) this.#warned.add("failed").add("busy");
    globalThis.addEventListener("unload", this.#onUnload);
  }

  /** The store written to. */
  get store(): MetricsStore {
    return this.#store;
  }

  record(event: MetricsEvent): void {
    if (this.#closed) throw new Error("the metrics recorder is closed");
    const row = counterRowOf(event);
    // Only while withdrawn is consent asked at every fact; otherwise each write asks.
    if (this.#withdrawn && !this.#stillConsented()) return;
    const nowMs = this.#now();
    const day = utcDay(nowMs);
    const dimensions = canonicalJson(row.dimensions);
    if (event.kind === "client_active") {
      const increment = { day, name: row.name, resource: this.#resource, dimensions };
      this.#pendingLatches.push({ nowMs, increment });
      // Decided at once when the store is free; a busy store keeps it for the retry timer.
      if (this.#retryDelayMs > 0 || !this.#write(this.#busyTimeoutMs)) this.#armTimer();
      return;
    }
    const key = `${day}\u0000${row.name}\u0000${dimensions}`;
    const entry = this.#pending.get(key);
    if (entry) entry.count++;
    else {this.#pending.set(key, {
        day,
        name: row.name,
        resource: this.#resource,
        dimensions,
        count: 1,
      });}
    this.#bufferedEvents++;
    // While the store is failing only the retry timer writes: each try may wait for the lock.
    const due = this.#bufferedEvents >= this.#maxBuffered || this.#flushDelayMs === 0;
    if (due && this.#retryDelayMs === 0 && this.flush()) return;
    this.#armTimer();
  }

  flush(): boolean {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    return this.#write(this.#busyTimeoutMs);
  }

  close(): void {
    if (this.#closed) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#closed = true;
    globalThis.removeEventListener("unload", this.#onUnload);
    if (this.#write(this.#closeBusyTimeoutMs, false)) return;
    const lost = [...this.#pending.values()].reduce((sum, row) => sum + row.count, 0) +
      this.#pendingLatches.length;
    try {
      const file = keepUnwritten(this.#store.path, {
        counters: [...this.#pending.values()],
        latches: [...this.#pendingLatches],
      }, this.#now());
      const why = isBusyError(this.#lastFailure)
        ? "was busy when this process ended"
        : `could not be written when this process ended (${message(this.#lastFailure)})`;
      this.#warnOnce(
        "kept",
        `usage metrics: the store ${this.#store.path} ${why}: ${lost} ` +
          `count${lost === 1 ? " is" : "s are"} kept in ${file} and written to the store by the ` +
          "next agent process that records",
      );
      return;
    } catch { /* the folder cannot be written either: the counts are lost, said below */ }
    this.#pending.clear();
    this.#pendingLatches.length = 0;
    this.#bufferedEvents = 0;
    this.#warnOnce(
      "dropped",
      `usage metrics: ${lost} count${lost === 1 ? " was" : "s were"} dropped: the store ` +
        `${this.#store.path} could not be written before this process ended`,
    );
  }

  /** Whether the user still consents; remembers the answer for {@linkcode record}. */
  #stillConsented(): boolean {
    let consented: boolean;
    try {
      consented = this.#consented();
    } catch {
      consented = false; // consent that cannot be told is no consent
    }
    this.#withdrawn = !consented;
    return consented;
  }

  /**
   * Writes the latches and buffered counts; on failure keeps them and warns once. Without
   * consent (withdrawn since they were buffered) it drops them instead.
   */
  #write(busyTimeoutMs: number, warn = true): boolean {
    if (
      this.#pending.size === 0 && this.#pendingLatches.length === 0 && this.#adoptedUnwritten
    ) return true;
    if (!this.#stillConsented()) {
      this.#pending.clear();
      this.#pendingLatches.length = 0;
      this.#bufferedEvents = 0;
      this.#retryDelayMs = 0;
      return true;
    }
    try {
      this.#store.withBusyTimeout(busyTimeoutMs, () => {
        if (!this.#adoptedUnwritten) {
          importUnwritten(this.#store, this.#now());
          this.#adoptedUnwritten = true;
        }
        while (this.#pendingLatches.length > 0) {
          const { nowMs, increment } = this.#pendingLatches[0];
          this.#store.latchClientActive(nowMs, increment);
          this.#pendingLatches.shift();
        }
        if (this.#pending.size > 0) this.#store.addCounters([...this.#pending.values()]);
      });
      this.#pending.clear();
      this.#bufferedEvents = 0;
      this.#retryDelayMs = 0;
      return true;
    } catch (error) {
      this.#lastFailure = error;
      this.#retryDelayMs = Math.min(
        MAX_RETRY_DELAY_MS,
        this.#retryDelayMs === 0 ? FIRST_RETRY_DELAY_MS : this.#retryDelayMs * 2,
      );
      if (!warn) return false;
      if (isBusyError(error)) {
        this.#warnOnce(
          "busy",
          `usage metrics: the store ${this.#store.path} is busy (another agent process holds ` +
            "it); the counts are kept in memory and written when it is free",
        );
      } else {
        this.#warnOnce(
          "failed",
          `usage metrics: counts cannot be written${
            message(error).includes(this.#store.path) ? "" : ` to ${this.#store.path}`
          } (${message(error)}); they are kept in memory and written when the store works again`,
        );
      }
      return false;
    }
  }

  #armTimer(): void {
    if (this.#timer !== undefined || this.#closed) return;
    const timer = setTimeout(() => this.flush(), this.#retryDelayMs || this.#flushDelayMs);
    Deno.unrefTimer(timer);
    this.#timer = timer;
  }

  #warnOnce(kind: string, message: string): void {
    if (this.#warned.has(kind)) return;
    this.#warned.add(kind);
    try {
      this.#warn(message);
    } catch { /* a failing warning sink must not break recording either */ }
  }
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** After a failed write the timer tries again after 1 s, then 2, 4 and at most 8 s. */
const FIRST_RETRY_DELAY_MS = 1_000;
const MAX_RETRY_DELAY_MS = 8_000;

/**
 * The recorder used without consent: it checks nothing, keeps nothing and touches no file.
 */
export const disabledRecorder: MetricsRecorder = Object.freeze({
  enabled: false,
  record(): void {},
  flush(): boolean {
    return true;
  },
  close(): void {},
});

/**
 * The UTC day of a time, `YYYY-MM-DD`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { utcDay } from "./recorder.ts";
 * assert(utcDay(Date.UTC(2026, 10, 21, 23, 59)) === "2026-11-21");
 * ```
 */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}
