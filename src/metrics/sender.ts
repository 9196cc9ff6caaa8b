/**
 * Sends already-built usage-metrics packages to the configured endpoint
 * (`telemetry.shared_metrics.endpoint`, decisions.md §4) and reports one outcome per package.
 *
 * The sender knows nothing about the store: the caller reads packages from the outbox, hands them
 * over, and records the outcomes. It never logs, and never puts package content into an outcome.
 *
 * Status handling:
 * - any 2xx (202 is what the collector answers; 200, 201, 204 are accepted too) → `sent`;
 * - 400, 413 and 422 → `rejected` (permanent, never retried);
 * - any other 4xx but 429 (404 from a wrong path, 401/403 from an auth outage, 408) → retried
 *   like a 5xx: a misconfigured or briefly failing endpoint must not discard every package;
 * - 429 → this package and all remaining ones `deferred` until `Retry-After` (the pass stops);
 * - 5xx, network errors and timeouts → up to 3 tries with backoff 1 s, 5 s (±20 % jitter), then
 *   `deferred` for 25 s (±20 %); the pass stops and the remaining packages are deferred too,
 *   because an endpoint that failed three times in a row will not take the next package either;
 * - 3xx → redirects are not followed (they could lead off https or off loopback), so the package
 *   and the remaining ones are `deferred` for 60 s with a reason that names the redirect.
 *
 * @module
 */
import { ENDPOINT_KEY, validateEndpoint } from "../home/metrics_endpoint.ts";
import { waitSeconds } from "../home/seconds.ts";
import { USER_AGENT } from "../version.ts";

// Part of the sender's API: the endpoint it refuses, checked here before any request.
export { validateEndpoint };

/** A package from the outbox, ready to send. */
export interface OutgoingPackage {
  /** The package's `package_id`; only used to label the outcome. */
  packageId: string;
  /** The JSON text exactly as in the outbox file; sent byte for byte (UTF-8), maybe gzipped. */
  body: string;
}

/**
 * What happened to one package in a pass.
 *
 * - `sent`: the endpoint accepted it (any 2xx); the caller may mark it exported.
 * - `rejected`: the endpoint refused it for good (400, 413, 422); never send it again.
 * - `deferred`: try again at `retryAt` (ms since the epoch, same clock as `SenderOptions.now`).
 */
export type SendOutcome =
  | { packageId: string; status: "sent"; httpStatus?: number }
  | { packageId: string; status: "rejected"; httpStatus: number }
  | { packageId: string; status: "deferred"; retryAt: number; reason: string };

/** How {@linkcode sendPackages} reaches the endpoint. Everything but `endpoint` is optional. */
export interface SenderOptions {
  /** The configured endpoint; must pass {@linkcode validateEndpoint}. */
  endpoint: string;
  /** The fetch to use (tests inject one); default `globalThis.fetch`. */
  fetch?: typeof fetch;
  /** Clock in ms since the epoch, used for `retryAt`; default `Date.now`. */
  now?: () => number;
  /** Waits between tries; must resolve (or reject) promptly when `signal` aborts. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Source of backoff jitter in [0, 1); default `Math.random`. */
  random?: () => number;
  /** Aborting stops the pass promptly; the in-flight and remaining packages become `deferred`. */
  signal?: AbortSignal;
  /** Per-request limit until the response headers arrive, in ms; default 10 000. */
  requestTimeoutMs?: number;
  /** Value of the `User-Agent` header; default {@linkcode USER_AGENT}. */
  userAgent?: string;
}

/** Bodies larger than this many UTF-8 bytes are gzip-compressed. */
const GZIP_THRESHOLD_BYTES = 4096;
/** Waits before the 2nd and 3rd try, then the deferral after the 3rd failed try. */
const BACKOFF_MS = [1_000, 5_000, 25_000] as const;
const MAX_TRIES = 3;
const JITTER = 0.2;
const DEFAULT_RETRY_AFTER_MS = 60_000;
/** A bogus or hostile `Retry-After` must not silence metrics for longer than a day. */
const MAX_RETRY_AFTER_MS = 24 * 60 * 60 * 1_000;
const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
/** The answers that refuse a package for good; every other 4xx but 429 is retried. */
const PERMANENT_STATUSES: ReadonlySet<number> = new Set([400, 413, 422]);

/**
 * Sends packages to the endpoint one at a time, in order, and returns one outcome per package in
 * the same order. Bodies over 4096 UTF-8 bytes go gzip-compressed (`Content-Encoding: gzip`).
 *
 * It never throws for HTTP or network failures — those become `rejected` or `deferred` outcomes —
 * and throws only for programmer errors: an endpoint that fails {@linkcode validateEndpoint}
 * (`TypeError`) or a non-positive `requestTimeoutMs` (`RangeError`).
 *
 * @example Usage
 * ```ts
 * import { sendPackages } from "./sender.ts";
 * import assert from "node:assert/strict";
 *
 * const outcomes = await sendPackages(
 *   [{ packageId: "p1", body: '{"schema_version":"agent.shared_metrics.v2"}' }],
 *   {
 *     endpoint: "https://metrics.example.com/v2/packages",
 *     // A stand-in collector; leave `fetch` out to use the network.
 *     fetch: () => Promise.resolve(new Response(null, { status: 202 })),
 *   },
 * );
 * assert.deepEqual(outcomes, [{ packageId: "p1", status: "sent", httpStatus: 202 }]);
 * ```
 *
 * @param packages The packages to send, in order.
 * @param options Endpoint and injectable clock, sleep, jitter, fetch and abort signal.
 * @returns One outcome per package, in the order given.
 */
export async function sendPackages(
  packages: Iterable<OutgoingPackage>,
  options: SenderOptions,
): Promise<SendOutcome[]> {
  const checked = validateEndpoint(options.endpoint);
  if (!checked.ok) throw new TypeError(checked.reason);
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  if (!(Number.isFinite(requestTimeoutMs) && requestTimeoutMs > 0)) {
    throw new RangeError(
      `requestTimeoutMs must be a positive number of milliseconds, got ${requestTimeoutMs}`,
    );
  }
  const pass: Pass = {
    url: checked.url,
    fetch: options.fetch ?? globalThis.fetch,
    now: options.now ?? Date.now,
    sleep: options.sleep ?? abortableSleep,
    random: options.random ?? Math.random,
    signal: options.signal,
    requestTimeoutMs,
    userAgent: options.userAgent ?? USER_AGENT,
  };

  const queue = [...packages];
  const outcomes: SendOutcome[] = [];
  for (let i = 0; i < queue.length; i++) {
    if (pass.signal?.aborted) {
      const retryAt = pass.now();
      for (const rest of queue.slice(i)) {
        outcomes.push(deferred(rest.packageId, retryAt, "not attempted: the pass was aborted"));
      }
      break;
    }
    const { outcome, stopReason } = await sendOne(queue[i], pass);
    outcomes.push(outcome);
    if (stopReason !== undefined && outcome.status === "deferred") {
      for (const rest of queue.slice(i + 1)) {
        outcomes.push(deferred(rest.packageId, outcome.retryAt, `not attempted: ${stopReason}`));
      }
      break;
    }
  }
  return outcomes;
}

interface Pass {
  url: URL;
  fetch: typeof fetch;
  now: () => number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  random: () => number;
  signal: AbortSignal | undefined;
  requestTimeoutMs: number;
  userAgent: string;
}

/** The outcome of one package; `stopReason` set means the rest of the pass is deferred too. */
interface PackageResult {
  outcome: SendOutcome;
  stopReason?: string;
}

async function sendOne(pkg: OutgoingPackage, pass: Pass): Promise<PackageResult> {
  const { packageId } = pkg;
  const request = await encodeRequest(pkg.body, pass.userAgent);
  for (let tryNumber = 1;; tryNumber++) {
    const answer = await attempt(request, pass);
    let transient: string;
    /** What follows the reason and its tries: why a 4xx other than 400, 413, 422 is retried. */
    let note = "";
    switch (answer.kind) {
      case "aborted":
        return aborted(packageId, pass);
      case "timeout":
        transient = `no response within ${pass.requestTimeoutMs} ms`;
        break;
      case "network":
        transient = `network error: ${answer.message}`;
        break;
      case "status": {
        const { status } = answer;
        if (status >= 200 && status < 300) {
          return { outcome: { packageId, status: "sent", httpStatus: status } };
        }
        if (status === 429) {
          const now = pass.now();
          const wait = retryAfter(answer.retryAfter, now);
          return {
            outcome: deferred(packageId, now + wait.ms, `HTTP 429: ${wait.reason}`),
            stopReason: "the endpoint answered HTTP 429 (too many requests)",
          };
        }
        if (status >= 300 && status < 400) {
          return {
            outcome: deferred(
              packageId,
              pass.now() + DEFAULT_RETRY_AFTER_MS,
              `HTTP ${status}: redirects are not followed; set ${ENDPOINT_KEY} to the final URL`,
            ),
            stopReason: `the endpoint answered a redirect (HTTP ${status})`,
          };
        }
        if (PERMANENT_STATUSES.has(status)) {
          return { outcome: { packageId, status: "rejected", httpStatus: status } };
        }
        transient = `HTTP ${status}`;
        if (status >= 400 && status < 500) {
          note = `; retried like a server error (only 400, 413 and 422 are permanent; check ` +
            `${ENDPOINT_KEY} if it persists)`;
        }
      }
    }
    if (tryNumber >= MAX_TRIES) {
      return {
        outcome: deferred(
          packageId,
          pass.now() + jittered(BACKOFF_MS[MAX_TRIES - 1], pass.random),
          `${transient} (after ${MAX_TRIES} tries)${note}`,
        ),
        stopReason: `the endpoint is unavailable (${transient})`,
      };
    }
    try {
      await pass.sleep(jittered(BACKOFF_MS[tryNumber - 1], pass.random), pass.signal);
    } catch (error) {
      if (!pass.signal?.aborted) throw error;
    }
    if (pass.signal?.aborted) return aborted(packageId, pass);
  }
}

function aborted(packageId: string, pass: Pass): PackageResult {
  return {
    outcome: deferred(packageId, pass.now(), "aborted before the endpoint answered"),
    stopReason: "the pass was aborted",
  };
}

function deferred(packageId: string, retryAt: number, reason: string): SendOutcome {
  return { packageId, status: "deferred", retryAt, reason };
}

interface EncodedRequest {
  body: Uint8Array<ArrayBuffer>;
  headers: Headers;
}

async function encodeRequest(text: string, userAgent: string): Promise<EncodedRequest> {
  const headers = new Headers({ "Content-Type": "application/json", "User-Agent": userAgent });
  const bytes = new TextEncoder().encode(text);
  if (bytes.byteLength <= GZIP_THRESHOLD_BYTES) return { body: bytes, headers };
  headers.set("Content-Encoding", "gzip");
  return { body: await gzip(bytes), headers };
}

async function gzip(bytes: Uint8Array<ArrayBuffer>): Promise<Uint8Array<ArrayBuffer>> {
  const stream = new Blob([bytes]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

type Answer =
  | { kind: "status"; status: number; retryAfter: string | null }
  | { kind: "timeout" }
  | { kind: "aborted" }
  | { kind: "network"; message: string };

/** One POST; the response body is always cancelled so no connection or stream leaks. */
async function attempt(request: EncodedRequest, pass: Pass): Promise<Answer> {
  if (pass.signal?.aborted) return { kind: "aborted" };
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), pass.requestTimeoutMs);
  const signal = pass.signal ? AbortSignal.any([pass.signal, timeout.signal]) : timeout.signal;
  const send = pass.fetch; // called unbound: some fetch implementations reject a foreign `this`
  try {
    const response = await send(pass.url, {
      method: "POST",
      headers: request.headers,
      body: request.body,
      redirect: "manual",
      signal,
    });
    await response.body?.cancel().catch(() => {});
    return {
      kind: "status",
      status: response.status,
      retryAfter: response.headers.get("Retry-After"),
    };
  } catch (error) {
    if (pass.signal?.aborted) return { kind: "aborted" };
    if (timeout.signal.aborted) return { kind: "timeout" };
    return { kind: "network", message: describeError(error) };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * An error with its causes: `fetch` says only "fetch failed"; what failed (connection refused to
 * 127.0.0.1:59999, a TLS or DNS error) is in its `cause`.
 */
function describeError(error: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = error, depth = 0; e !== undefined && depth < 5; depth++) {
    const text = e instanceof Error ? e.message || e.name : String(e);
    if (!parts.some((part) => part.includes(text))) parts.push(text);
    e = e instanceof Error ? e.cause : undefined;
  }
  return parts.join(": ");
}

/**
 * `Retry-After` as a wait in ms and the sentence saying so: delta-seconds or an HTTP-date;
 * missing or not understood → 60 s; a date in the past → 0; capped at one day.
 */
function retryAfter(header: string | null, now: number): { ms: number; reason: string } {
  const value = header?.trim() ?? "";
  let asked: number | undefined;
  if (/^\d+$/.test(value)) asked = Number(value) * 1000;
  else {
    const at = parseHttpDate(value);
    if (at !== undefined) asked = Math.max(0, at - now);
  }
  const seconds = (ms: number) => `${waitSeconds(ms)} s`;
  if (asked === undefined) {
    const heard = value === ""
      ? "the endpoint sent no Retry-After"
      : `the endpoint's Retry-After "${value.slice(0, 64)}" was not understood`;
    return {
      ms: DEFAULT_RETRY_AFTER_MS,
      reason: `${heard}; waiting the default ${seconds(DEFAULT_RETRY_AFTER_MS)}`,
    };
  }
  if (asked > MAX_RETRY_AFTER_MS) {
    return {
      ms: MAX_RETRY_AFTER_MS,
      reason: `the endpoint asked to wait ${
        /^\d+$/.test(value) ? `${value} s` : seconds(asked)
      }; waiting the maximum of ${seconds(MAX_RETRY_AFTER_MS)}`,
    };
  }
  return { ms: asked, reason: `the endpoint asked to wait ${seconds(asked)}` };
}

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
/** IMF-fixdate, RFC 850 and asctime (RFC 9110 §5.6.7); `Date.parse` alone is far too lenient. */
const HTTP_DATE_FORMS = [
  /^[a-z]{3}, (?<d>\d{2}) (?<m>[a-z]{3}) (?<y>\d{4}) (?<t>\d{2}:\d{2}:\d{2}) gmt$/i,
  /^[a-z]{6,9}, (?<d>\d{2})-(?<m>[a-z]{3})-(?<y>\d{2}) (?<t>\d{2}:\d{2}:\d{2}) gmt$/i,
  /^[a-z]{3} (?<m>[a-z]{3}) {1,2}(?<d>\d{1,2}) (?<t>\d{2}:\d{2}:\d{2}) (?<y>\d{4})$/i,
];

function parseHttpDate(value: string): number | undefined {
  for (const form of HTTP_DATE_FORMS) {
    const groups = form.exec(value)?.groups;
    if (!groups) continue;
    const month = MONTHS.indexOf(groups.m.toLowerCase());
    let year = Number(groups.y);
    // RFC 850 two-digit years: RFC 9110 says to read them as at most 50 years ahead.
    if (groups.y.length === 2) year += year < 70 ? 2000 : 1900;
    const [h, min, sec] = groups.t.split(":").map(Number);
    const day = Number(groups.d);
    if (month < 0 || day < 1 || day > 31 || h > 23 || min > 59 || sec > 60) return undefined;
    return Date.UTC(year, month, day, h, min, sec);
  }
  return undefined;
}

/** `ms` scaled by a factor in [0.8, 1.2] drawn from `random`, rounded to whole ms. */
function jittered(ms: number, random: () => number): number {
  const r = Math.min(1, Math.max(0, random()));
  return Math.round(ms * (1 + JITTER * (2 * r - 1)));
}

/** Waits `ms`, or less when `signal` aborts (then resolves; the caller checks the signal). */
function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const onAbort = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
