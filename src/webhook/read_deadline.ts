/**
 * Deadlines for reading request bodies. Deno's HTTP server has no read timeout: a sender whose
 * body stops arriving (a stalled client, or a `Content-Length` larger than what it sends) would
 * keep its request, and what it sent of its body, forever.
 *
 * @module
 */

/** What {@linkcode ReadDeadlines.within} gives for a read that did not end in time. */
export const LATE: unique symbol = Symbol("late");

interface Pending {
  /** When it expires, on the `performance.now()` clock. */
  due: number;
  expire(): void;
}

/**
 * Reads that must end within one same time, kept by a single timer: a timer per read would cost
 * more than reading a small body does. The timer is armed for the oldest read's deadline, and keeps
 * the process alive only while a read is under way.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { LATE, ReadDeadlines } from "./read_deadline.ts";
 * const deadlines = new ReadDeadlines(20);
 * assert.equal(await deadlines.within(Promise.resolve("body")), "body");
 * let stopped = false;
 * const never = new Promise<string>(() => {});
 * assert.equal(await deadlines.within(never, () => stopped = true), LATE);
 * assert(stopped);
 * ```
 */
export class ReadDeadlines {
  readonly #ms: number;
  /** Reads under way, oldest first: with one length for all, that is the order they expire in. */
  readonly #pending = new Set<Pending>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** Whether the timer keeps the process alive: only while a read is under way. */
  #referenced = false;

  /** Reads must end within `ms` milliseconds of their start. */
  constructor(ms: number) {
    this.#ms = ms;
  }

  /**
   * What `read` settles with, or {@linkcode LATE} once it has taken longer than the deadline;
   * `onLate` is then called, to stop the read (whatever it settles with later is dropped).
   */
  within<T>(read: Promise<T>, onLate?: () => void): Promise<T | typeof LATE> {
    return new Promise((resolve, reject) => {
      const pending: Pending = {
        due: performance.now() + this.#ms,
        expire: () => {
          resolve(LATE);
          onLate?.();
        },
      };
      this.#add(pending);
      read.then((value) => {
        this.#delete(pending);
        resolve(value);
      }, (error) => {
        this.#delete(pending);
        reject(error);
      });
    });
  }

  #add(pending: Pending): void {
    this.#pending.add(pending);
    if (this.#timer === undefined) {
      this.#arm(pending.due);
    } else if (!this.#referenced) {
      Deno.refTimer(this.#timer);
      this.#referenced = true;
    }
  }

  #delete(pending: Pending): void {
    if (!this.#pending.delete(pending) || this.#pending.size > 0) return;
    // Kept set for the next read (cheaper than setting it again), but no reason to stay alive.
    if (this.#timer !== undefined && this.#referenced) Deno.unrefTimer(this.#timer);
    this.#referenced = false;
  }

  #arm(due: number): void {
    this.#timer = setTimeout(() => this.#expire(), Math.max(0, due - performance.now()));
    this.#referenced = true;
  }

  /** Ends the reads past their deadline; the timer is set again for the next one, if any. */
  #expire(): void {
    this.#timer = undefined;
    const now = performance.now();
    for (const pending of this.#pending) {
      if (pending.due > now) {
        this.#arm(pending.due);
        return;
      }
      this.#pending.delete(pending);
      pending.expire();
    }
    this.#referenced = false;
  }
}
