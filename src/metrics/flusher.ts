/**
 * Packaging and sending for long-running processes (after each agent run, hourly in the
 * gateway): one send at a time, in the background, never throwing.
 *
 * @module
 */
import { droppedUnsentWarning } from "./packager.ts";
import type { UsageMetrics } from "./mod.ts";
import { escapeControls } from "./printable.ts";
import { isBusyError } from "./store.ts";

/** The sends under way, per metrics store. */
const SENDING = new WeakMap<UsageMetrics, Promise<unknown>>();
/**
 * The failures said and not over yet, per metrics store (its session's and its gateway's
 * flushers share them): one that recurs at every run (a full disk) is said once, not per run.
 */
const FAILING = new WeakMap<UsageMetrics, Set<string>>();
/** The abort controllers of every flusher of a store: settling one stops all their sends. */
const ABORTS = new WeakMap<UsageMetrics, Set<AbortController>>();
/** The stores with a send pass queued behind the one under way (one is enough). */
const QUEUED = new WeakSet<UsageMetrics>();

/**
 * Flushes a {@linkcode UsageMetrics} in the background; problems go to `warn` as sentences (an
 * error is passed as its message, never with its class name).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { loadConfig } from "../home/config.ts";
 * import { openUsageMetrics } from "./mod.ts";
 * import { MetricsFlusher } from "./flusher.ts";
 * const home = await Deno.makeTempDir();
 * const metrics = openUsageMetrics(loadConfig({ home, env: () => undefined }));
 * const problems: string[] = [];
 * const flusher = new MetricsFlusher(metrics, (what) => problems.push(what));
 * flusher.flush(); // no consent: nothing to do
 * await flusher.settle(0);
 * assert.deepEqual(problems, []);
 * metrics.close();
 * ```
 */
export class MetricsFlusher {
  readonly #metrics: UsageMetrics;
  readonly #warn: (what: string, error: unknown) => void;
  readonly #reportDropped: boolean;
  readonly #abort = new AbortController();

  /**
   * `options.reportDropped` (default true): after packaging, unsent packages the 30-day retention
   * dropped (here or in another process) and not reported yet go to `warn`, once; false leaves
   * them to the next process that reports them (the gateway, `agent metrics status`).
   */
  constructor(
    metrics: UsageMetrics,
    warn: (what: string, error: unknown) => void,
    options: { reportDropped?: boolean } = {},
  ) {
    this.#metrics = metrics;
    this.#warn = warn;
    this.#reportDropped = options.reportDropped ?? true;
    const aborts = ABORTS.get(metrics) ?? new Set();
    ABORTS.set(metrics, aborts.add(this.#abort));
  }

  /** Packages finished days now (at most once a UTC day); with `send: true` queues a send. */
  flush(): void {
    if (!this.#metrics.enabled) return;
    this.packageDue();
    if (!this.#metrics.settings.send) return;
    // One chain per store: a session and its gateway flushing the same metrics never send the
    // same package twice at once. A pass that waits to start takes everything due when it
    // starts, so one is enough: with a slow endpoint, a pass per run would pile up without end.
    if (QUEUED.has(this.#metrics)) return;
    QUEUED.add(this.#metrics);
    const previous = SENDING.get(this.#metrics) ?? Promise.resolve();
    SENDING.set(
      this.#metrics,
      previous.then(() => {
        QUEUED.delete(this.#metrics);
        return this.#metrics.sendDue({ signal: this.#abort.signal }).then((outcomes) => {
          for (const outcome of outcomes) {
            if (outcome.status === "invalid") {
              this.#warn(
                `usage-metrics package ${outcome.file} was not sent`,
                `it does not validate (${escapeControls(outcome.reason)}); it was moved to ` +
                  `${outcome.movedTo}` +
                  " and is never sent; delete it once you have looked at it",
              );
            } else if (outcome.status === "unreadable") {
              this.#warn(
                `usage-metrics package ${outcome.file} was not sent`,
                `${
                  escapeControls(outcome.reason)
                }; its package is marked rejected and is never sent`,
              );
            }
          }
          this.#over(NOT_SENT, SEND_FAILED);
        }).catch((error) =>
          isBusyError(error)
            ? this.#fail(
              NOT_SENT,
              `the store ${this.#metrics.storePath} is busy (another agent process holds it); ${LATER}`,
              false,
            )
            : this.#fail(SEND_FAILED, message(error))
        );
      }),
    );
  }

  /** Packages finished days now (pruning old packages), and reports unsent ones dropped. */
  packageDue(): void {
    try {
      this.#metrics.packageDue();
      this.#over(PACKAGING_FAILED);
    } catch (error) {
      this.#fail(PACKAGING_FAILED, message(error));
    }
    if (!this.#reportDropped) return;
    try {
      const dropped = this.#metrics.takeDroppedUnsent();
      this.#over(READING_FAILED);
      if (dropped) {
        const { what, why } = droppedUnsentWarning(dropped);
        this.#warn(what, why);
      }
    } catch (error) {
      this.#fail(READING_FAILED, message(error));
    }
  }

  /** Says a failure, unless it was said and has not been over since. */
  #fail(what: string, why: string, retried = true): void {
    const failing = FAILING.get(this.#metrics) ?? new Set();
    FAILING.set(this.#metrics, failing);
    if (failing.has(what)) return;
    failing.add(what);
    this.#warn(what, retried ? `${why}; ${RETRIED}` : why);
  }

  /** These failures are over: the next one is said again. */
  #over(...whats: string[]): void {
    for (const what of whats) FAILING.get(this.#metrics)?.delete(what);
  }

  /** Waits for the sends under way, aborting them after `graceMs` (they are retried later). */
  async settle(graceMs: number): Promise<void> {
    // Also the sends another flusher of this store queued (a gateway's session's, after a run):
    // else a stop would wait for them for as long as a slow endpoint takes.
    const grace = setTimeout(() => {
      for (const abort of ABORTS.get(this.#metrics) ?? []) abort.abort();
    }, graceMs);
    await SENDING.get(this.#metrics);
    clearTimeout(grace);
  }
}

const PACKAGING_FAILED = "packaging usage metrics failed";
const READING_FAILED = "reading the usage-metrics store failed";
const SEND_FAILED = "sending usage metrics failed";
const NOT_SENT = "usage metrics were not sent";
/** Added to a failure the flusher says once. */
const RETRIED = "it is tried again later (after each agent run, and hourly in the gateway) and " +
  "not said again until it works";

/** What happens to packages a busy store kept from being sent. */
const LATER = "they are sent by a later agent run, the gateway or `agent metrics send`";

/** An error as the sentence it carries (`String(error)` would start with its class name). */
function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
