/**
 * Buckets for the durations, latencies and counts of the usage-metrics contract
 * (decisions.md §4, "Classification"). Raw numbers never leave this module: the
 * recording API stores only the bucket labels.
 *
 * @module
 */

import type {
  CountBucket,
  DurationBucket,
  ToolLatencyBucket,
  ToolRetryBucket,
} from "./contract.ts";

/** Upper bounds (exclusive, in ms) of every duration bucket but the last. */
const DURATION_LIMITS: ReadonlyArray<readonly [number, DurationBucket]> = [
  [1_000, "lt_1s"],
  [5_000, "1s_to_5s"],
  [30_000, "5s_to_30s"],
  [120_000, "30s_to_2m"],
  [600_000, "2m_to_10m"],
];

/** Upper bounds (exclusive, in ms) of every tool-latency bucket but the last. */
const TOOL_LATENCY_LIMITS: ReadonlyArray<readonly [number, ToolLatencyBucket]> = [
  [100, "lt_100ms"],
  [250, "100ms_to_250ms"],
  [500, "250ms_to_500ms"],
  [1_000, "500ms_to_1s"],
  [2_000, "1s_to_2s"],
  [5_000, "2s_to_5s"],
  [10_000, "5s_to_10s"],
  [30_000, "10s_to_30s"],
];

function isNonNegativeFinite(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0;
}

function isCount(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= 0;
}

function describe(value: unknown): string {
  return typeof value === "number" ? String(value) : `${typeof value} ${String(value)}`;
}

/**
 * Buckets a run's wall-clock duration: `<1000 lt_1s, <5000 1s_to_5s, <30000 5s_to_30s,
 * <120000 30s_to_2m, <600000 2m_to_10m`, anything longer `gte_10m`.
 *
 * @param ms The duration in milliseconds; a finite number `>= 0`.
 * @returns The duration bucket.
 * @throws {RangeError} If `ms` is negative, NaN or infinite (outside the contract).
 *
 * @example Usage
 * ```ts
 * import { durationBucket } from "./buckets.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(durationBucket(999), "lt_1s");
 * assert.equal(durationBucket(1_000), "1s_to_5s");
 * assert.equal(durationBucket(600_000), "gte_10m");
 * assert.throws(() => durationBucket(-1), RangeError);
 * ```
 */
export function durationBucket(ms: number): DurationBucket {
  if (!isNonNegativeFinite(ms)) {
    throw new RangeError(
      `Cannot bucket duration ${describe(ms)}: expected a finite number of milliseconds >= 0`,
    );
  }
  for (const [limit, bucket] of DURATION_LIMITS) {
    if (ms < limit) return bucket;
  }
  return "gte_10m";
}

/**
 * Buckets a small count (model calls, tool calls, retries, skill uses): `0`, `1`, `2`,
 * `3_to_5`, `6_to_10`, `gte_11`.
 *
 * @param n The count; an integer `>= 0`.
 * @returns The count bucket.
 * @throws {RangeError} If `n` is not an integer or is negative (outside the contract).
 *
 * @example Usage
 * ```ts
 * import { countBucket } from "./buckets.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(countBucket(0), "0");
 * assert.equal(countBucket(5), "3_to_5");
 * assert.equal(countBucket(11), "gte_11");
 * assert.throws(() => countBucket(1.5), RangeError);
 * ```
 */
export function countBucket(n: number): CountBucket {
  if (!isCount(n)) {
    throw new RangeError(`Cannot bucket count ${describe(n)}: expected an integer >= 0`);
  }
  if (n === 0) return "0";
  if (n === 1) return "1";
  if (n === 2) return "2";
  if (n <= 5) return "3_to_5";
  if (n <= 10) return "6_to_10";
  return "gte_11";
}

/**
 * Buckets one tool call's latency: `<100 lt_100ms`, `<250`, `<500`, `<1000`, `<2000`,
 * `<5000`, `<10000`, `<30000`, anything longer `gte_30s`. A missing or invalid latency
 * (undefined, null, NaN, negative, infinite) is `unknown`, never an error: a tool call is
 * still counted when its timing was lost.
 *
 * @param ms The latency in milliseconds, if known.
 * @returns The tool-latency bucket.
 *
 * @example Usage
 * ```ts
 * import { toolLatencyBucket } from "./buckets.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(toolLatencyBucket(99), "lt_100ms");
 * assert.equal(toolLatencyBucket(100), "100ms_to_250ms");
 * assert.equal(toolLatencyBucket(30_000), "gte_30s");
 * assert.equal(toolLatencyBucket(undefined), "unknown");
 * ```
 */
export function toolLatencyBucket(ms: number | null | undefined): ToolLatencyBucket {
  if (!isNonNegativeFinite(ms)) return "unknown";
  for (const [limit, bucket] of TOOL_LATENCY_LIMITS) {
    if (ms < limit) return bucket;
  }
  return "gte_30s";
}

/**
 * Buckets one tool call's retry count like {@linkcode countBucket}; a missing or invalid
 * count (undefined, null, NaN, negative, fractional, infinite) is `unknown`, never an error.
 *
 * @param n The number of retries, if known.
 * @returns The tool-retry bucket.
 *
 * @example Usage
 * ```ts
 * import { toolRetryBucket } from "./buckets.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(toolRetryBucket(0), "0");
 * assert.equal(toolRetryBucket(7), "6_to_10");
 * assert.equal(toolRetryBucket(null), "unknown");
 * ```
 */
export function toolRetryBucket(n: number | null | undefined): ToolRetryBucket {
  return isCount(n) ? countBucket(n) : "unknown";
}
