/**
 * The gateway's workers: take accepted events from the inbox, run the agent on each prompt,
 * deliver the answer to the route's target, and retry a failed delivery with backoff. A final
 * answer that is exactly `[SILENT]` is not delivered. A run that ends without an answer (failed,
 * or with an empty one) delivers a notice saying so. A delivery that keeps failing is logged
 * with the event id and marked failed.
 *
 * @module
 */
import { isEmptyAnswer, RunCancelled, type RunResult } from "../agent/run.ts";
import { waitSeconds } from "../home/seconds.ts";
import { WEBHOOK_DEFAULTS } from "../webhook/settings.ts";
import {
  EMPTY_ANSWER,
  type Inbox,
  type InboxEvent,
  MAX_RUN_ATTEMPTS,
  noAnswerNotice,
} from "./inbox.ts";

/** The longest wait before a delivery retry, whatever a platform's Retry-After says. */
const MAX_RETRY_WAIT_MS = 60 * 60_000;
/**
 * How often an idle pool looks at the inbox anyway: `agent webhook redeliver` requeues events
 * from another process, which cannot wake this one.
 */
export const IDLE_POLL_MS = 5_000;

/** Why a run that completed has no answer to deliver, in the inbox and the log. */
const EMPTY_ANSWER_ERROR = "the model gave an empty answer (no text and no tool calls); " +
  "try another model (model.default in config.yaml) or a clearer prompt for the route";

/**
 * The first wait before the pool tries the inbox again after a write to it failed (a full disk, a
 * file that cannot be written); it doubles with each failure, up to {@linkcode STORE_RETRY_MAX_MS}.
 */
export const STORE_RETRY_BASE_MS = 1_000;
/** The longest wait between two tries of an inbox that cannot be written. */
const STORE_RETRY_MAX_MS = 30_000;

/** Runs the agent for one event. */
export type EventRunner = (event: InboxEvent, signal: AbortSignal) => Promise<RunResult>;

/**
 * Delivers one answer, skipping the `event.partsSent` parts of it that earlier attempts
 * delivered, and calling `onPartSent` with the count so far (skipped parts included) after each
 * part that goes out; `retryable` failures are tried again later.
 */
export type EventDeliverer = (
  event: InboxEvent,
  message: string,
  onPartSent: (partsSent: number) => void,
) => Promise<DeliverySuccess | DeliveryFailure>;

/** A delivered answer. */
export interface DeliverySuccess {
  ok: true;
  /** Where it went (`telegram chat -100123`), for the log. */
  detail?: string;
  /** Messages sent by this attempt (0 for a silent answer). */
  parts?: number;
}

/** A failed delivery attempt. */
export interface DeliveryFailure {
  ok: false;
  retryable: boolean;
  error: string;
  /** Parts of the split answer delivered so far, counted from the first (earlier tries too). */
  partsSent?: number;
  /** How long the platform asked to wait before the next try. */
  retryAfterMs?: number;
}

/** How long {@linkcode WorkerPool.stop} lets runs under way finish before aborting them. */
export const STOP_GRACE_MS = 30_000;

/** Options of {@linkcode WorkerPool}. */
export interface WorkerPoolOptions {
  inbox: Inbox;
  run: EventRunner;
  deliver: EventDeliverer;
  /** Events processed (run, then delivered) at once. Default 2. */
  concurrency?: number;
  /** Delivery tries before giving up. Default 5. */
  maxDeliveryAttempts?: number;
  /**
   * First retry delay in ms (doubling), or longer when the platform asked for a longer wait.
   * Default 5 000.
   */
  retryBaseMs?: number;
  /** How often an idle pool looks for events requeued by another process. Default 5 000. */
  idlePollMs?: number;
  /**
   * The first wait, in ms, before an inbox write that failed is tried again (doubling, up to 30 s).
   * Default {@linkcode STORE_RETRY_BASE_MS}.
   */
  storeRetryBaseMs?: number;
  now?: () => number;
  log(
    level: "info" | "warning" | "error",
    message: string,
    properties?: Record<string, unknown>,
  ): void;
}

/**
 * Processes the inbox until stopped.
 *
 * @example
 * ```ts ignore
 * const pool = new WorkerPool({ inbox, run, deliver, log });
 * pool.start();
 * pool.wake(); // after an event was enqueued
 * await pool.stop(); // drains the events under way
 * ```
 */
export class WorkerPool {
  readonly #o: Required<Omit<WorkerPoolOptions, "log">> & Pick<WorkerPoolOptions, "log">;
  readonly #abort = new AbortController();
  #active = 0;
  #running = new Set<Promise<void>>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;
  /** While writes to the inbox fail: how many so far, and when it is tried again. */
  #storeFailure: { failures: number; waitMs: number; retryAt: number } | undefined;

  constructor(options: WorkerPoolOptions) {
    // `?? default` rather than a spread: an option given as `undefined` gets its default too.
    this.#o = {
      ...options,
      concurrency: options.concurrency ?? WEBHOOK_DEFAULTS.concurrentRuns,
      maxDeliveryAttempts: options.maxDeliveryAttempts ?? 5,
      retryBaseMs: options.retryBaseMs ?? 5_000,
      idlePollMs: options.idlePollMs ?? IDLE_POLL_MS,
      storeRetryBaseMs: options.storeRetryBaseMs ?? STORE_RETRY_BASE_MS,
      now: options.now ?? Date.now,
    };
  }

  /** Requeues what a crash left running, then starts taking events. */
  start(): void {
    const { requeued, abandoned, freedClaims } = this.#o.inbox.recover(this.#o.now());
    if (freedClaims > 0) {
      this.#o.log(
        "info",
        "freed {count} delivery ids whose request was not answered before a restart " +
          "(the senders' retries are served)",
        { count: freedClaims },
      );
    }
    if (requeued > 0) {
      this.#o.log(
        "info",
        `requeued {count} ${requeued === 1 ? "event" : "events"} whose run did not finish ` +
          "before a restart",
        { count: requeued },
      );
    }
    for (const { id, deliveryId } of abandoned) {
      this.#o.log(
        "error",
        "event {id} (delivery {delivery_id}): its run was interrupted by a crash or kill of " +
          "the gateway too often; it is not run again (a notice is delivered instead)",
        { id, delivery_id: deliveryId },
      );
    }
    this.wake();
  }

  /** Looks for due events now (call after an enqueue). */
  wake(): void {
    // All busy: the worker that finishes first wakes the pool again.
    if (this.#stopped || this.#active >= this.#o.concurrency) return;
    // The inbox cannot be written: no event is taken before the next try (else a full disk turns
    // into a loop taking the same event again and again).
    if (this.#storeFailure && this.#o.now() < this.#storeFailure.retryAt) return this.#schedule();
    while (this.#active < this.#o.concurrency) {
      let event: InboxEvent | undefined;
      try {
        event = this.#o.inbox.take(this.#o.now());
      } catch (error) {
        this.#storeFailed(error);
        break;
      }
      if (!event) break;
      this.#active++;
      const work = this.#process(event).finally(() => {
        this.#active--;
        this.#running.delete(work);
        this.wake();
      });
      this.#running.add(work);
    }
    this.#schedule();
  }

  /** Events being processed now. */
  get active(): number {
    return this.#active;
  }

  /**
   * Stops taking events and waits for those under way. After `graceMs` their runs are aborted
   * (a shutdown: they go back to the queue, not counted as interrupted, and run again after a
   * restart).
   */
  async stop(graceMs: number = STOP_GRACE_MS): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    const grace = setTimeout(() => this.abortRuns(), graceMs);
    await Promise.allSettled([...this.#running]);
    clearTimeout(grace);
  }

  /**
   * Aborts the runs under way now, without waiting for the grace of {@linkcode stop} (a second
   * Ctrl-C): they go back to the queue and run again after a restart.
   */
  abortRuns(): void {
    // Before stop() too (a second Ctrl-C while requests drain): no event is taken any more, or
    // each queued one would be started and cut off at once, its model call wasted.
    this.#stopped = true;
    clearTimeout(this.#timer);
    // A shutdown, not a user's Ctrl-C: the run ends (and is counted) as system_aborted.
    this.#abort.abort(new RunCancelled("system", "stopped by the gateway's shutdown"));
  }

  #schedule(): void {
    clearTimeout(this.#timer);
    if (this.#stopped) return;
    let due: number;
    try {
      due = this.#storeFailure?.retryAt ?? this.#o.inbox.nextDueAt() ?? Infinity;
    } catch {
      due = Infinity; // an inbox that cannot be read: looked at again after the idle poll
    }
    const delay = Math.min(Math.max(0, due - this.#o.now()), this.#o.idlePollMs);
    this.#timer = setTimeout(() => this.wake(), delay);
  }

  async #process(event: InboxEvent): Promise<void> {
    const { inbox, log } = this.#o;
    try {
      // take() marked it; act on it only once that is committed. When that fails, nothing of it
      // was written: the event waits in the inbox, and is taken again once it can be written.
      try {
        await inbox.durable();
      } catch (error) {
        this.#storeFailed(error);
        return;
      }
      this.#storeWorks();
      let current = event;
      if (current.state === "running") {
        const result = await this.#o.run(current, this.#abort.signal);
        if (this.#abort.signal.aborted) {
          // A clean stop: the process outlived this run, so it does not count as one of the
          // interruptions that guard against runs bringing the gateway down.
          const interrupted = inbox.putBack(current.id, this.#o.now()) ?? current.runAttempts;
          await inbox.durable();
          log(
            "warning",
            "event {id} (delivery {delivery_id}) on {route}: run stopped by the gateway's " +
              "shutdown; it is queued again, and the next `agent gateway run` runs it from the " +
              "start. A stop is not counted as an interruption: only crashes or kills of the " +
              "gateway during its run are, and after {max} of them it is not run again " +
              "({interrupted} so far)",
            {
              id: current.id,
              delivery_id: current.deliveryId,
              route: current.route,
              interrupted,
              max: MAX_RUN_ATTEMPTS,
            },
          );
          return;
        }
        const silent = result.answer.trim() === "[SILENT]";
        const failed = result.endReason !== "completed";
        // Not sent as it is: the platforms refuse an empty message, and nobody would learn why.
        const empty = isEmptyAnswer(result);
        const error = failed ? result.error : empty ? EMPTY_ANSWER_ERROR : undefined;
        // Kept apart from `completed`, so that a redelivery knows it sends the notice.
        const endReason = empty ? EMPTY_ANSWER : result.endReason;
        // The notice may land somewhere public (an issue comment): the error itself, which can
        // name endpoints and settings, goes to the log only.
        const message = failed || empty ? noAnswerNotice(current, endReason) : result.answer;
        // Committed before anything is sent: a restart must not run it again after delivery.
        // While the inbox cannot be written, the outcome waits here (the run is not lost).
        const stored = await this.#persist(() =>
          inbox.finishRun(current.id, {
            answer: message,
            endReason,
            error,
            deliver: !silent,
          }, this.#o.now())
        );
        if (!stored) return this.#unrecorded(current, "its run ended", "runs it again");
        log(
          failed || empty ? "warning" : "info",
          // Said with the way back: the notice went out, and a plain redeliver sends it again.
          failed
            ? "event {id} (delivery {delivery_id}) on {route}: run {endReason}: {error}; a " +
              "notice saying so is delivered instead. Once the cause is fixed, " +
              "`agent webhook redeliver {id} --rerun` runs the agent on it again"
            : empty
            ? "event {id} (delivery {delivery_id}) on {route}: run {endReason}, but {error}; a " +
              "notice saying so is delivered instead. " +
              "`agent webhook redeliver {id} --rerun` runs the agent on it again"
            : silent
            ? "event {id} (delivery {delivery_id}) on {route}: run {endReason}; the answer is " +
              "[SILENT], so nothing is delivered"
            : "event {id} (delivery {delivery_id}) on {route}: run {endReason}",
          {
            id: current.id,
            delivery_id: current.deliveryId,
            route: current.route,
            endReason: result.endReason,
            ...(failed || empty ? { error: error ?? "no answer" } : {}),
          },
        );
        if (silent) return;
        current = { ...current, state: "delivering", answer: message };
      }
      await this.#deliver(current);
    } catch (error) {
      log("error", "event {id} (delivery {delivery_id}) on {route}: {error}", {
        id: event.id,
        delivery_id: event.deliveryId,
        route: event.route,
        error: String(error),
      });
    }
  }

  /**
   * Makes `write` and commits it; while the inbox cannot be written, tries again (the failed
   * commit left nothing of it) after the pool's wait. False when the pool's runs were aborted (a
   * stop) before it could be written.
   */
  async #persist(write: () => void): Promise<boolean> {
    for (;;) {
      try {
        write();
        await this.#o.inbox.durable();
        this.#storeWorks();
        return true;
      } catch (error) {
        this.#storeFailed(error);
      }
      const signal = this.#abort.signal;
      if (signal.aborted) return false;
      const waitMs = Math.max(0, this.#storeFailure!.retryAt - this.#o.now());
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, waitMs);
        signal.addEventListener("abort", done, { once: true });
        function done() {
          clearTimeout(timer);
          signal.removeEventListener("abort", done);
          resolve();
        }
      });
    }
  }

  /** Says that what became of `event` could not be recorded before the stop, and what follows. */
  #unrecorded(event: InboxEvent, happened: string, next: string): void {
    this.#o.log(
      "error",
      `event {id} (delivery {delivery_id}) on {route}: ${happened}, but the inbox could not ` +
        `record it before the gateway stopped; the next start ${next}`,
      { id: event.id, delivery_id: event.deliveryId, route: event.route },
    );
  }

  /**
   * A write to the inbox failed (nothing of it was written): said at the first failure of a
   * streak; no event is taken before the next try, which waits longer after each failure.
   */
  #storeFailed(error: unknown): void {
    const now = this.#o.now();
    const failing = this.#storeFailure;
    if (failing) {
      failing.failures++;
      failing.waitMs = Math.min(failing.waitMs * 2, STORE_RETRY_MAX_MS);
      failing.retryAt = now + failing.waitMs;
      return;
    }
    const waitMs = this.#o.storeRetryBaseMs;
    this.#storeFailure = { failures: 1, waitMs, retryAt: now + waitMs };
    this.#o.log(
      "error",
      "the inbox {path} cannot be written ({error}): events are not taken, and the outcomes of " +
        "runs and deliveries wait to be recorded, until it can (tried again every {max_seconds} " +
        "s at most). Is its disk full?",
      {
        path: this.#o.inbox.path,
        error: String(error),
        max_seconds: Math.max(STORE_RETRY_MAX_MS, waitMs) / 1000,
      },
    );
  }

  /** A write to the inbox succeeded: a streak of failures is over, and said to be. */
  #storeWorks(): void {
    const failing = this.#storeFailure;
    if (!failing) return;
    this.#storeFailure = undefined;
    this.#o.log(
      "info",
      "the inbox {path} can be written again (after {failures} failed writes); events are taken " +
        "again",
      { path: this.#o.inbox.path, failures: failing.failures },
    );
    this.wake();
  }

  async #deliver(event: InboxEvent): Promise<void> {
    const { inbox, log } = this.#o;
    const result = await this.#o.deliver(
      event,
      event.answer ?? "",
      (partsSent) => {
        try {
          inbox.recordParts(event.id, partsSent);
        } catch (error) {
          this.#storeFailed(error); // the delivery goes on; a retry may send this part again
        }
      },
    );
    const attempt = event.deliveryAttempts + 1;
    if (result.ok) {
      // Only the parts before the last are recorded as they go (where a retry resumes); the
      // count `agent webhook events` shows must hold the last one too. Recorded before the
      // event's lease runs out, or it would be delivered again.
      const stored = await this.#persist(() => {
        inbox.recordParts(event.id, event.partsSent + (result.parts ?? 1));
        inbox.recordDelivery(event.id, { ok: true }, this.#o.now());
      });
      if (!stored) return this.#unrecorded(event, "delivered", "delivers it again");
      log(
        "info",
        "event {id} (delivery {delivery_id}) on {route}: delivered to {where} ({parts} " +
          "message(s) in this attempt)",
        {
          id: event.id,
          delivery_id: event.deliveryId,
          route: event.route,
          where: result.detail ?? event.plan.deliver,
          parts: result.parts ?? 1,
        },
      );
      return;
    }
    const giveUp = !result.retryable || attempt >= this.#o.maxDeliveryAttempts;
    const backoff = this.#o.retryBaseMs * 2 ** (attempt - 1);
    const waitMs = giveUp
      ? undefined
      : Math.round(Math.min(Math.max(backoff, result.retryAfterMs ?? 0), MAX_RETRY_WAIT_MS));
    const retryAt = waitMs === undefined ? undefined : this.#o.now() + waitMs;
    // Not recorded (the gateway stopped first): the next start tries this delivery again.
    await this.#persist(() =>
      inbox.recordDelivery(event.id, {
        ok: false,
        error: result.error,
        retryAt,
        partsSent: result.partsSent,
      }, this.#o.now())
    );
    if (giveUp) {
      log(
        "error",
        "event {id} (delivery {delivery_id}) on {route}: delivery to {target} failed for good " +
          `after {attempts} ${attempt === 1 ? "attempt" : "attempts"}: {error}. Once that is ` +
          "fixed, `agent webhook redeliver {id}` sends it again",
        {
          id: event.id,
          delivery_id: event.deliveryId,
          route: event.route,
          target: event.plan.deliver,
          attempts: attempt,
          error: result.error,
        },
      );
    } else {
      log(
        "warning",
        "event {id} (delivery {delivery_id}) on {route}: delivery attempt {attempt} of " +
          "{max} failed ({error}); the next one in {wait_seconds} s (once the cause is fixed, " +
          "`agent webhook redeliver {id}` makes it due now)",
        {
          id: event.id,
          delivery_id: event.deliveryId,
          route: event.route,
          error: result.error,
          attempt,
          max: this.#o.maxDeliveryAttempts,
          // The wait itself (0.2 with delivery_retry_seconds: 0.2), not rounded up to 1 s; said
          // as `agent webhook events` says the time left.
          wait_seconds: waitSeconds(waitMs!),
        },
      );
    }
  }
}
