/**
 * Times as the CLI says them: in UTC, named as such, with how far away they are. Pure functions
 * of the time and the clock's now, so tests pass a fixed clock.
 *
 * @module
 */
import { waitSeconds } from "../home/seconds.ts";

/**
 * A moment of today (UTC) as `12:01:05 UTC`; of another day as `2026-11-20 23:59:10 UTC`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { clockTime } from "./time_words.ts";
 * const now = Date.parse("2026-11-21T12:04:00Z");
 * assert.equal(clockTime(Date.parse("2026-11-21T12:01:05Z"), now), "12:01:05 UTC");
 * assert.equal(clockTime(Date.parse("2026-11-20T23:59:10Z"), now), "2026-11-20 23:59:10 UTC");
 * ```
 */
export function clockTime(ms: number, nowMs: number): string {
  const iso = new Date(ms).toISOString();
  const sameDay = iso.slice(0, 10) === new Date(nowMs).toISOString().slice(0, 10);
  return `${sameDay ? "" : `${iso.slice(0, 10)} `}${iso.slice(11, 19)} UTC`;
}

/**
 * A time to come, to the minute with how long until then: `2026-11-21 12:30 UTC (in 14 min)`;
 * one already past is `due now`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { comingTime } from "./time_words.ts";
 * const now = Date.parse("2026-11-21T12:16:00Z");
 * assert.equal(comingTime(Date.parse("2026-11-21T12:30:00Z"), now), "2026-11-21 12:30 UTC (in 14 min)");
 * assert.equal(comingTime(now - 1, now), "due now");
 * ```
 */
export function comingTime(ms: number, nowMs: number): string {
  if (ms <= nowMs) return "due now";
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC (in ${duration(ms - nowMs)})`;
}

/**
 * A length of time in the unit that reads best, rounded to the nearest, never up: under a minute
 * in seconds as the gateway's log and `agent webhook events` say a wait ({@linkcode waitSeconds}:
 * `0.2 s`, `44.2 s`), then `14 min`, `5 h`, `3 days`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { duration } from "./time_words.ts";
 * assert.equal(duration(200), "0.2 s");
 * assert.equal(duration(44_200), "44.2 s");
 * assert.equal(duration(14 * 60_000 + 20_000), "14 min");
 * assert.equal(duration(5 * 3_600_000), "5 h");
 * assert.equal(duration(3 * 86_400_000), "3 days");
 * ```
 */
export function duration(ms: number): string {
  const seconds = waitSeconds(ms);
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.round(ms / 60_000);
  if (minutes < 120) return `${minutes} min`;
  const hours = Math.round(ms / 3_600_000);
  if (hours < 48) return `${hours} h`;
  const days = Math.round(ms / 86_400_000);
  return `${days} day${days === 1 ? "" : "s"}`;
}
