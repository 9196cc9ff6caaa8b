/**
 * Usage metrics: opt-in, anonymous daily counters packaged as `agent.shared_metrics.v2`.
 *
 * Open with {@linkcode openUsageMetrics}: without consent it returns a disabled service that
 * records nothing and creates nothing on disk.
 *
 * @example Record a run's facts and preview today's package
 * ```ts
 * import assert from "node:assert/strict";
 * import { loadConfig } from "../home/config.ts";
 * import { openUsageMetrics } from "./mod.ts";
 * const home = await Deno.makeTempDir();
 * Deno.writeTextFileSync(`${home}/config.yaml`, "telemetry:\n  shared_metrics:\n    enabled: true\n");
 * const metrics = openUsageMetrics(loadConfig({ home, env: () => undefined }));
 * metrics.recorder.record({ kind: "task_started", entrypoint: "interactive", surface: "cli" });
 * const [pkg] = metrics.preview();
 * assert(pkg.metrics[0].name === "agent.task_run.started");
 * metrics.close();
 * ```
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { ResolvedConfig, TelemetrySettings } from "../home/config.ts";
import type { HomePaths } from "../home/paths.ts";
import type { MetricsPackage, MetricsResource, SkillProvenance } from "./contract.ts";
import { dirname } from "node:path";
import { ensurePrivateDir } from "../home/files.ts";
import { jsonSyntaxProblem } from "../home/json_syntax.ts";
import {
  DROPPED_UNSENT_REASON,
  type DroppedUnsent,
  outboxFile,
  packageDueDays,
  previewPackages,
  pruneExports,
  rejectedFile,
  writePackages,
} from "./packager.ts";
import {
  disabledRecorder,
  type MetricsRecorder,
  RECORD_BUSY_TIMEOUT_MS,
  StoreRecorder,
} from "./recorder.ts";
import { LiveConsent } from "./consent.ts";
import { currentResource } from "./resource.ts";
import { validateMetricsPackage } from "./schema.ts";
import { type SenderOptions, type SendOutcome, sendPackages } from "./sender.ts";
import {
  DEFAULT_BUSY_TIMEOUT_MS,
  isBusyError,
  MetricsStore,
  MetricsStoreBusyError,
  MetricsStoreDamagedError,
  MetricsStoreUnavailableError,
  type SendQueue,
} from "./store.ts";

export * from "./contract.ts";
export { MetricsContractError, type MetricsEvent, type ToolSource } from "./events.ts";
export type { MetricsRecorder } from "./recorder.ts";
export {
  type MetricsValidationError,
  type MetricsValidationResult,
  sharedMetricsSchema,
  validateMetricsPackage,
} from "./schema.ts";
export { type SendOutcome, validateEndpoint } from "./sender.ts";
export { type DroppedUnsent, droppedUnsentWarning, InvalidStoredCountsError } from "./packager.ts";
export {
  MetricsStoreBusyError,
  MetricsStoreDamagedError,
  MetricsStoreUnavailableError,
  type SenderClaim,
  type SendQueue,
  storeAccessFix,
} from "./store.ts";
export { escapeControls } from "./printable.ts";

/**
 * An outbox file that failed the v2 schema right before sending (edited or damaged on disk). It
 * was not sent: it was moved to `outbox/rejected/` and its package marked rejected, so later
 * sends skip it.
 */
export interface InvalidOutboxFile {
  packageId: string;
  status: "invalid";
  /** The outbox file that was checked. */
  file: string;
  /** Where it is now. */
  movedTo: string;
  /** The first schema error (it names the JSON pointer), or why it is not JSON. */
  reason: string;
}

/**
 * A due package whose outbox file cannot be read (deleted by hand, say). Nothing was sent: its
 * package is marked rejected, so later sends skip it.
 */
export interface UnreadableOutboxFile {
  packageId: string;
  status: "unreadable";
  /** The outbox file that should hold the package. */
  file: string;
  /** Why it cannot be read, such as "the outbox file is missing". */
  reason: string;
}

/** What happened to one due outbox package in {@linkcode UsageMetrics.sendDue}. */
export type OutboxSendOutcome = SendOutcome | InvalidOutboxFile | UnreadableOutboxFile;

/** Options of {@linkcode openUsageMetrics}; all injectable for tests. */
export interface UsageMetricsOptions {
  /** Clock (ms since epoch). Default `Date.now`. */
  now?: () => number;
  /** Resource tuple; default from this process ({@linkcode currentResource}). */
  resource?: MetricsResource;
  /** Recorder flush delay in ms (default 500; 0 writes every event at once). */
  flushDelayMs?: number;
  /**
   * What {@linkcode openUsageMetrics} does when the store cannot be opened. Default: warn once
   * per store file on stderr and go on without metrics, so recording never stops a run. The
   * CLI's metrics commands pass a function that throws instead.
   */
  onStoreUnavailable?: (error: MetricsStoreUnavailableError) => void;
  /**
   * Where the problems of recording go (each once): the store cannot be opened (when
   * `onStoreUnavailable` is not given), is busy or damaged while recording, counts dropped on
   * close. Default: one `warning:` line on stderr per problem and process. A session passes a
   * function that adds them to its runs' warnings (`agent run --json` shows them there).
   */
  onWarning?: (message: string) => void;
  /**
   * How long each store operation waits for another process's lock, in ms, opening the store
   * included. Default: 250 (recording must never hold an agent run or the gateway) for
   * {@linkcode openUsageMetrics} without `onStoreUnavailable`; 15 000 for the metrics commands
   * (`openUsageMetrics` with `onStoreUnavailable`, and {@linkcode openExistingUsageMetrics}).
   */
  busyTimeoutMs?: number;
  /**
   * For a long-running process (the gateway): a store that cannot be opened at start (busy,
   * damaged, a folder in its place) is tried again at every write instead of leaving the process
   * without metrics until it restarts; the counts are kept in memory meanwhile, and the problem
   * is said once. Ignored with `onStoreUnavailable`.
   */
  retryOpen?: boolean;
}

/** Warnings already printed in this process (warn once, not once per run). */
const WARNED = new Set<string>();

function warnOnStderrOnce(message: string): void {
  if (WARNED.has(message)) return;
  WARNED.add(message);
  console.error(`warning: ${message}`);
}

/** How long a sender's claim on a package lasts if it never reports an outcome (a crash). */
const SEND_CLAIM_MS = 15 * 60_000;

/** The usage-metrics service of one `<home>`. */
export class UsageMetrics {
  /** Where facts go; the disabled recorder when there is no consent. */
  readonly recorder: MetricsRecorder;
  readonly #paths: HomePaths;
  readonly #store: MetricsStore | undefined;
  readonly #now: () => number;
  readonly #warn: (message: string) => void;
  /** Consent as the files say it now; without a store it cannot matter and is never read again. */
  readonly #consent: LiveConsent | undefined;
  readonly #openedWith: TelemetrySettings;

  constructor(
    config: ResolvedConfig,
    store: MetricsStore | undefined,
    options: UsageMetricsOptions & { failureSaid?: boolean },
  ) {
    const settings = config.telemetry;
    this.#openedWith = settings;
    this.#paths = config.paths;
    this.#store = store;
    this.#now = options.now ?? Date.now;
    this.#warn = options.onWarning ?? warnOnStderrOnce;
    this.#consent = store ? new LiveConsent(config, this.#warn) : undefined;
    const consent = this.#consent;
    this.recorder = store && settings.enabled && !store.readOnly
      ? new StoreRecorder(store, options.resource ?? currentResource((n) => Deno.env.get(n)), {
        now: this.#now,
        flushDelayMs: options.flushDelayMs,
        onWarning: this.#warn,
        failureSaid: options.failureSaid,
        consented: () => consent?.current().enabled ?? false,
      })
      : disabledRecorder;
  }

  /**
   * Consent as `config.yaml` and `.env` say it now (re-read when they change): an opt-out while
   * this process runs stops its recording, packaging and sending at once.
   */
  get settings(): TelemetrySettings {
    return this.#consent?.current() ?? this.#openedWith;
  }

  /** The store file of this `<home>` (whether or not it exists). */
  get storePath(): string {
    return this.#paths.metricsDb;
  }

  /** Whether the store was opened read-only ({@linkcode openExistingUsageMetrics}'s `readOnly`). */
  get readOnly(): boolean {
    return this.#store?.readOnly ?? false;
  }

  /** Whether facts are being recorded (consent given, still given, and the store open). */
  get enabled(): boolean {
    return this.recorder.enabled && this.settings.enabled;
  }

  /** The packages an export would build now (today included); nothing is written. */
  preview(): MetricsPackage[] {
    if (!this.#store) return [];
    this.recorder.flush();
    return previewPackages(this.#store, { nowMs: this.#now(), includeToday: true });
  }

  /**
   * The automatic packaging run, for after a task ends and on shutdown: at most once per UTC
   * day, finished days only. Returns the packages written. It waits at most 250 ms for another
   * process's lock (then throws `MetricsStoreBusyError`; the next run packages instead).
   */
  packageDue(): MetricsPackage[] {
    const store = this.#store;
    // A collecting process whose user opted out since: the counts stay as they are.
    if (!store || (this.recorder.enabled && !this.settings.enabled)) return [];
    if (!store.usable()) return []; // said when the process started
    this.recorder.flush();
    return store.withBusyTimeout(
      RECORD_BUSY_TIMEOUT_MS,
      () => packageDueDays(store, this.#paths.metricsOutbox, this.#now()),
    );
  }

  /** Builds every pending delta (today included) into the outbox now, and prunes old exports. */
  exportNow(): { package: MetricsPackage; path: string }[] {
    if (!this.#store) return [];
    this.recorder.flush();
    const nowMs = this.#now();
    const outbox = this.#paths.metricsOutbox;
    const packages = writePackages(this.#store, { nowMs, includeToday: true, outbox });
    pruneExports(this.#store, outbox, nowMs);
    return packages.map((pkg) => ({ package: pkg, path: outboxFile(outbox, pkg.package_id) }));
  }

  /**
   * Sends the outbox packages that are due to the configured endpoint and records each outcome.
   * Every file is validated against the v2 schema right before sending; one that fails is not
   * sent but moved to `outbox/rejected/` and reported as `invalid`; one that cannot be read
   * (deleted by hand) is reported as `unreadable`. Both are marked rejected and never retried.
   * Does nothing unless `send` is on as `config.yaml` says now. Never throws for network or
   * HTTP failures.
   *
   * One sender at a time per package: the due packages are claimed in the store first, so a
   * second sender (another process, the gateway's hourly pass) finds them not due and sends
   * nothing ({@linkcode packagesBeingSent} tells why).
   */
  async sendDue(
    options: Omit<SenderOptions, "endpoint" | "now"> = {},
  ): Promise<OutboxSendOutcome[]> {
    const store = this.#store;
    const { send, endpoint } = this.settings;
    if (!store || !send || !endpoint || !store.usable()) return [];
    const due = store.claimDuePackages(this.#now(), SEND_CLAIM_MS);
    const unfinished = new Set(due.map((record) => record.packageId));
    try {
      return await this.#sendClaimed(store, endpoint, due, unfinished, options);
    } finally {
      // A pass that threw (or a store write that failed) leaves no package claimed for 15 min.
      try {
        store.releaseClaims(unfinished, this.#now());
      } catch { /* the lease ends on its own */ }
    }
  }

  /**
   * Who is sending packages right now (process, host, since when) and the unsent packages that
   * wait after a failed attempt, with when the first is due: what `agent metrics status` shows.
   * Empty without a store.
   */
  sendQueue(): SendQueue {
    return this.#store?.sendQueue(this.#now()) ??
      { sending: [], deferred: { packages: 0 }, due: 0 };
  }

  /**
   * The unsent packages the 30-day retention dropped (by this process or another) that nobody
   * has reported yet; taking them marks them reported, so each drop is said once. `undefined`
   * when there are none, or when the store is busy (they are reported later).
   */
  takeDroppedUnsent(): DroppedUnsent | undefined {
    const store = this.#store;
    // Said by a command that can mark them, or once the store can be opened.
    if (!store || store.readOnly || !store.usable()) return undefined;
    let days: DroppedUnsent["days"];
    try {
      days = store.withBusyTimeout(RECORD_BUSY_TIMEOUT_MS, () => store.takeDroppedUnsent());
    } catch (error) {
      if (isBusyError(error)) return undefined;
      throw error;
    }
    if (days.length === 0) return undefined;
    const packages = days.reduce((sum, entry) => sum + entry.packages, 0);
    return { packages, days, reason: DROPPED_UNSENT_REASON };
  }

  /** How many due packages another sender is sending right now (none without a store). */
  packagesBeingSent(): number {
    return this.#store?.packagesBeingSent(this.#now()) ?? 0;
  }

  async #sendClaimed(
    store: MetricsStore,
    endpoint: string,
    due: ReturnType<MetricsStore["duePackages"]>,
    unfinished: Set<string>,
    options: Omit<SenderOptions, "endpoint" | "now">,
  ): Promise<OutboxSendOutcome[]> {
    const outbox = this.#paths.metricsOutbox;
    const outgoing = [];
    const unsendable: (InvalidOutboxFile | UnreadableOutboxFile)[] = [];
    for (const record of due) {
      const file = outboxFile(outbox, record.packageId);
      let body: string;
      try {
        body = Deno.readTextFileSync(file);
      } catch (error) {
        const missing = error instanceof Deno.errors.NotFound;
        store.recordSendOutcome(record.packageId, {
          state: "rejected",
          detail: missing ? "outbox file missing" : "outbox file unreadable",
        }, this.#now());
        unfinished.delete(record.packageId);
        const reason = missing
          ? "the outbox file is missing"
          : `the outbox file cannot be read (${error instanceof Error ? error.message : error})`;
        unsendable.push({ packageId: record.packageId, status: "unreadable", file, reason });
        continue;
      }
      const reason = outboxFileProblem(body, record.packageId);
      if (reason === undefined) {
        outgoing.push({ packageId: record.packageId, body });
        continue;
      }
      const movedTo = rejectedFile(outbox, record.packageId);
      ensurePrivateDir(dirname(movedTo));
      Deno.renameSync(file, movedTo);
      store.recordSendOutcome(record.packageId, {
        state: "rejected",
        detail: "invalid outbox file, moved to outbox/rejected/",
      }, this.#now());
      unfinished.delete(record.packageId);
      unsendable.push({ packageId: record.packageId, status: "invalid", file, movedTo, reason });
    }
    if (outgoing.length === 0) return unsendable;
    const outcomes = await sendPackages(outgoing, { ...options, endpoint, now: this.#now });
    for (const outcome of outcomes) {
      const nowMs = this.#now();
      if (outcome.status === "sent") {
        store.recordSendOutcome(outcome.packageId, { state: "sent", detail: "sent" }, nowMs);
      } else if (outcome.status === "rejected") {
        store.recordSendOutcome(
          outcome.packageId,
          { state: "rejected", detail: `HTTP ${outcome.httpStatus}` },
          nowMs,
        );
      } else {
        store.recordSendOutcome(
          outcome.packageId,
          { state: "pending", nextAttemptAt: outcome.retryAt, detail: outcome.reason },
          nowMs,
        );
      }
      unfinished.delete(outcome.packageId);
    }
    return [...unsendable, ...outcomes];
  }

  /**
   * Records that a skill was loaded for a run. Its use count and whether its file changed since
   * the last use are kept in the store under a hash of the name (never the name itself).
   */
  recordSkillLoad(name: string, digest: string, provenance: SkillProvenance = "local"): void {
    const store = this.#store;
    if (!store || !this.enabled || !store.usable()) return;
    const key = `skill_use:${createHash("sha256").update(name).digest("hex")}`;
    let counted: { useCount: number; patched: boolean };
    try {
      counted = store.withBusyTimeout(RECORD_BUSY_TIMEOUT_MS, () =>
        store.transaction(() => {
          const previous = parseSkillUse(store.getMeta(key));
          const next = { uses: (previous?.uses ?? 0) + 1, digest };
          store.setMeta(key, JSON.stringify(next));
          return {
            useCount: next.uses,
            patched: previous !== undefined && previous.digest !== digest,
          };
        }));
    } catch (error) {
      // Never stop a run for metrics: the load is not counted, once said.
      this.#warn(
        `usage metrics: a skill load was not counted (${
          error instanceof Error ? error.message : String(error)
        })`,
      );
      return;
    }
    const { useCount, patched } = counted;
    this.recorder.record({
      kind: "skill_load",
      provenance,
      useCount,
      patchedSinceLastUse: patched,
    });
  }

  /** Store counts for `agent metrics status`, or `undefined` when there is no store. */
  summary(): ReturnType<MetricsStore["summary"]> & { installId: string } | undefined {
    if (!this.#store) return undefined;
    this.recorder.flush();
    return { ...this.#store.summary(), installId: this.#store.installId() };
  }

  /** Flushes buffered counts and closes the store. */
  close(): void {
    this.recorder.close();
    this.#store?.close();
  }
}

/** Why an outbox file must not be sent, or `undefined` when it is a valid package of `id`. */
function outboxFileProblem(body: string, packageId: string): string | undefined {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    // V8's message quotes the text around the error: the place and what was expected only.
    return `not valid JSON (${jsonSyntaxProblem(body)})`;
  }
  const result = validateMetricsPackage(value);
  if (!result.valid) {
    return result.errors[0].message.replace(/\.$/, "");
  }
  const id = (value as { package_id: string }).package_id;
  return id === packageId ? undefined : `/package_id: ${id} is not the file's package ${packageId}`;
}

function parseSkillUse(text: string | undefined): { uses: number; digest: string } | undefined {
  if (text === undefined) return undefined;
  try {
    const value = JSON.parse(text);
    if (Number.isInteger(value?.uses) && typeof value?.digest === "string") return value;
  } catch { /* a damaged record starts over */ }
  return undefined;
}

/**
 * Opens the usage-metrics service of `config`'s `<home>`. Without consent nothing is opened or
 * created and the recorder is disabled. A store that cannot be opened (a damaged file) also
 * gives a disabled service, after {@linkcode UsageMetricsOptions.onStoreUnavailable}.
 */
export function openUsageMetrics(
  config: ResolvedConfig,
  options: UsageMetricsOptions = {},
): UsageMetrics {
  let store: MetricsStore | undefined;
  let failureSaid = false;
  if (config.telemetry.enabled) {
    const busyTimeoutMs = options.busyTimeoutMs ??
      (options.onStoreUnavailable ? DEFAULT_BUSY_TIMEOUT_MS : RECORD_BUSY_TIMEOUT_MS);
    const warn = options.onWarning ?? warnOnStderrOnce;
    const onReopened = (message: string) => warn(`usage metrics: ${message}`);
    try {
      store = MetricsStore.open(config.paths.metricsDb, { busyTimeoutMs, onReopened });
    } catch (error) {
      const retry = options.retryOpen && !options.onStoreUnavailable && (
        error instanceof MetricsStoreBusyError || error instanceof MetricsStoreDamagedError ||
        error instanceof MetricsStoreUnavailableError
      );
      if (retry) {
        warn(
          `usage metrics are skipped until the store can be used (tried again at every write; ` +
            `counts are kept in memory meanwhile): ${error.message}`,
        );
        store = MetricsStore.openLater(config.paths.metricsDb, { busyTimeoutMs, onReopened });
        failureSaid = true;
      } else if (
        error instanceof MetricsStoreBusyError || error instanceof MetricsStoreDamagedError
      ) {
        // Busy while opening (a migration waiting for a lock) or damaged: run without metrics.
        (options.onWarning ?? warnOnStderrOnce)(`usage metrics are skipped: ${error.message}`);
      } else if (!(error instanceof MetricsStoreUnavailableError)) throw error;
      else if (options.onStoreUnavailable) options.onStoreUnavailable(error);
      else (options.onWarning ?? warnOnStderrOnce)(`usage metrics are skipped: ${error.message}`);
    }
  }
  return new UsageMetrics(config, store, { ...options, failureSaid });
}

/**
 * Opens an existing store regardless of consent (for status, preview and export of data already
 * collected), or returns `undefined` when none exists. Never creates one. Throws
 * {@linkcode MetricsStoreUnavailableError} when the file cannot be opened.
 */
export function openExistingUsageMetrics(
  config: ResolvedConfig,
  options: UsageMetricsOptions & {
    /** Open it for reading only (nothing is recorded, packaged or marked). */
    readOnly?: boolean;
  } = {},
): UsageMetrics | undefined {
  if (!MetricsStore.exists(config.paths.metricsDb)) return undefined;
  return new UsageMetrics(
    config,
    options.readOnly
      ? MetricsStore.openReadOnly(config.paths.metricsDb)
      : MetricsStore.open(config.paths.metricsDb, {
        busyTimeoutMs: options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS,
        onReopened: (message) =>
          (options.onWarning ?? warnOnStderrOnce)(`usage metrics: ${message}`),
      }),
    options,
  );
}
