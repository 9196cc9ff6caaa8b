/**
 * The recording API: facts in, counters in the store. Increments are summed in memory and
 * written in one transaction per flush (at 1 000 buffered events, after 500 ms, on close and on
 * process exit), so recording costs microseconds and two processes never lose each other's
 * counts. `client.active` bypasses the buffer: its latch must be decided against the store.
 *
 * @module
 */
import type { MetricsResource } from "./contract.ts";
import { counterRowOf, type MetricsEvent } from "./events.ts";
import { canonicalJson } from "./resource.ts";
import type { CounterIncrement, MetricsStore } from "./store.ts";

/** Records usage facts. The disabled recorder accepts every call and stores nothing. */
export interface MetricsRecorder {
  /** Whether facts are kept (consent given). */
  readonly enabled: boolean;
  /** Counts one fact. Throws when the fact is outside the contract. */
  record(event: MetricsEvent): void;
  /** Writes buffered counts to the store. */
  flush(): void;
  /** Flushes and releases the store. */
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
 */
export class StoreRecorder implements MetricsRecorder {
  readonly enabled = true;
  readonly #store: MetricsStore;
  readonly #resource: string;
  readonly #now: () => number;
  readonly #maxBuffered: number;
  readonly #flushDelayMs: number;
  readonly #pending = new Map<string, CounterIncrement>();
  #bufferedEvents = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  readonly #onUnload = () => this.close();

  constructor(store: MetricsStore, resource: MetricsResource, options: StoreRecorderOptions = {}) {
    this.#store = store;
    this.#resource = canonicalJson(resource as unknown as Record<string, string>);
    this.#now = options.now ?? Date.now;
    this.#maxBuffered = options.maxBufferedEvents ?? 1000;
    this.#flushDelayMs = options.flushDelayMs ?? 500;
    globalThis.addEventListener("unload", this.#onUnload);
  }

  /** The store written to. */
  get store(): MetricsStore {
    return this.#store;
  }

  record(event: MetricsEvent): void {
    if (this.#closed) throw new Error("the metrics recorder is closed");
    const row = counterRowOf(event);
    const nowMs = this.#now();
    const day = utcDay(nowMs);
    const dimensions = canonicalJson(row.dimensions);
    if (event.kind === "client_active") {
      this.#store.latchClientActive(nowMs, {
        day,
        name: row.name,
        resource: this.#resource,
        dimensions,
      });
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
    if (this.#bufferedEvents >= this.#maxBuffered || this.#flushDelayMs === 0) this.flush();
    else if (this.#timer === undefined) {
      const timer = setTimeout(() => this.flush(), this.#flushDelayMs);
      Deno.unrefTimer(timer);
      this.#timer = timer;
    }
  }

  flush(): void {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (this.#pending.size === 0) return;
    const rows = [...this.#pending.values()];
    this.#store.addCounters(rows);
    this.#pending.clear();
    this.#bufferedEvents = 0;
  }

  close(): void {
    if (this.#closed) return;
    this.flush();
    this.#closed = true;
    globalThis.removeEventListener("unload", this.#onUnload);
  }
}

/**
 * The recorder used without consent: it checks nothing, keeps nothing and touches no file.
 */
export const disabledRecorder: MetricsRecorder = Object.freeze({
  enabled: false,
  record(): void {},
  flush(): void {},
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
