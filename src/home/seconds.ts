/**
 * A wait in seconds as the gateway's log and the CLI both say it, so that `in 0.2 s` in
 * `logs/gateway.log` and in `agent webhook events` mean the same thing.
 *
 * @module
 */

/**
 * The seconds of a wait of `ms` milliseconds, for `in <seconds> s`: rounded to the nearest,
 * never up to a whole second; three significant digits below 100 s (`0.2`, `1.23`, `61.2`),
 * whole seconds from there (`120`, `3600`). A wait under a millisecond is `0.001`, never `0`;
 * no wait at all (`0` or less) is `0`. A number, not text, so a structured log keeps it a number.
 *
 * @param ms The wait in milliseconds.
 * @returns The wait in seconds, rounded as said.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { waitSeconds } from "./seconds.ts";
 * assert.equal(waitSeconds(200), 0.2);
 * assert.equal(waitSeconds(61_000), 61);
 * assert.equal(waitSeconds(89_766), 89.8);
 * assert.equal(waitSeconds(3_600_000), 3600);
 * assert.equal(waitSeconds(0.4), 0.001);
 * assert.equal(waitSeconds(0), 0);
 * ```
 */
export function waitSeconds(ms: number): number {
  // A log line must not throw: an odd wait is said as none, or as it is.
  if (!(ms > 0)) return 0;
  if (!Number.isFinite(ms)) return ms;
  const seconds = Math.max(1, Math.round(ms)) / 1000;
  return seconds < 100 ? Number(seconds.toPrecision(3)) : Math.round(seconds);
}
