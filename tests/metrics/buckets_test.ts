import assert from "node:assert/strict";
import fc from "fast-check";
import {
  countBucket,
  durationBucket,
  toolLatencyBucket,
  toolRetryBucket,
} from "../../src/metrics/buckets.ts";
import {
  COUNT_BUCKETS,
  DURATION_BUCKETS,
  TOOL_LATENCY_BUCKETS,
  TOOL_RETRY_BUCKETS,
} from "../../src/metrics/contract.ts";

const INVALID_NUMBERS = [-1, -0.001, Number.NaN, Infinity, -Infinity, Number.MIN_SAFE_INTEGER];

Deno.test("durationBucket: every edge of every bucket", () => {
  const cases: Array<[number, string]> = [
    [0, "lt_1s"],
    [999, "lt_1s"],
    [999.999, "lt_1s"],
    [1_000, "1s_to_5s"],
    [4_999, "1s_to_5s"],
    [5_000, "5s_to_30s"],
    [29_999, "5s_to_30s"],
    [30_000, "30s_to_2m"],
    [119_999, "30s_to_2m"],
    [120_000, "2m_to_10m"],
    [599_999, "2m_to_10m"],
    [600_000, "gte_10m"],
    [Number.MAX_VALUE, "gte_10m"],
  ];
  for (const [ms, expected] of cases) {
    assert.equal(durationBucket(ms), expected, `durationBucket(${ms})`);
  }
});

Deno.test("durationBucket: -0 is lt_1s", () => {
  assert.equal(durationBucket(-0), "lt_1s");
});

Deno.test("durationBucket: negative, NaN and infinite input throw a RangeError naming it", () => {
  for (const ms of INVALID_NUMBERS) {
    assert.throws(
      () => durationBucket(ms),
      (error: unknown) =>
        error instanceof RangeError && error.message.includes(String(ms)) &&
        error.message.includes("expected a finite number of milliseconds >= 0"),
      `durationBucket(${ms})`,
    );
  }
});

Deno.test("durationBucket: a non-number from untyped callers throws a RangeError", () => {
  assert.throws(() => durationBucket("5" as unknown as number), RangeError);
  assert.throws(() => durationBucket(null as unknown as number), RangeError);
});

Deno.test("countBucket: every edge of every bucket", () => {
  const cases: Array<[number, string]> = [
    [0, "0"],
    [1, "1"],
    [2, "2"],
    [3, "3_to_5"],
    [5, "3_to_5"],
    [6, "6_to_10"],
    [10, "6_to_10"],
    [11, "gte_11"],
    [Number.MAX_SAFE_INTEGER, "gte_11"],
  ];
  for (const [n, expected] of cases) {
    assert.equal(countBucket(n), expected, `countBucket(${n})`);
  }
});

Deno.test("countBucket: fractional, negative, NaN and infinite input throw a RangeError", () => {
  for (const n of [...INVALID_NUMBERS, 0.5, 2.5, 10.000001]) {
    assert.throws(
      () => countBucket(n),
      (error: unknown) =>
        error instanceof RangeError && error.message.includes(String(n)) &&
        error.message.includes("expected an integer >= 0"),
      `countBucket(${n})`,
    );
  }
});

Deno.test("toolLatencyBucket: every edge of every bucket", () => {
  const cases: Array<[number, string]> = [
    [0, "lt_100ms"],
    [99, "lt_100ms"],
    [99.9, "lt_100ms"],
    [100, "100ms_to_250ms"],
    [249, "100ms_to_250ms"],
    [250, "250ms_to_500ms"],
    [499, "250ms_to_500ms"],
    [500, "500ms_to_1s"],
    [999, "500ms_to_1s"],
    [1_000, "1s_to_2s"],
    [1_999, "1s_to_2s"],
    [2_000, "2s_to_5s"],
    [4_999, "2s_to_5s"],
    [5_000, "5s_to_10s"],
    [9_999, "5s_to_10s"],
    [10_000, "10s_to_30s"],
    [29_999, "10s_to_30s"],
    [30_000, "gte_30s"],
    [Number.MAX_VALUE, "gte_30s"],
  ];
  for (const [ms, expected] of cases) {
    assert.equal(toolLatencyBucket(ms), expected, `toolLatencyBucket(${ms})`);
  }
});

Deno.test("toolLatencyBucket: missing or invalid latency is unknown, not an error", () => {
  for (const ms of [undefined, null, ...INVALID_NUMBERS]) {
    assert.equal(toolLatencyBucket(ms), "unknown", `toolLatencyBucket(${ms})`);
  }
  assert.equal(toolLatencyBucket("5" as unknown as number), "unknown");
});

Deno.test("toolRetryBucket: agrees with countBucket on valid counts", () => {
  for (const n of [0, 1, 2, 3, 5, 6, 10, 11, 1_000]) {
    assert.equal(toolRetryBucket(n), countBucket(n), `toolRetryBucket(${n})`);
  }
});

Deno.test("toolRetryBucket: missing or invalid count is unknown, not an error", () => {
  for (const n of [undefined, null, 1.5, ...INVALID_NUMBERS]) {
    assert.equal(toolRetryBucket(n), "unknown", `toolRetryBucket(${n})`);
  }
});

// Property tests: monotone in the input, and always a member of the contract tuple.

const durationMs = fc.double({ min: 0, max: 1e9, noNaN: true });
const latencyMs = fc.double({ min: 0, max: 1e6, noNaN: true });
const count = fc.nat({ max: 1_000 });

function assertMonotone<T extends string>(
  order: readonly T[],
  arbitrary: fc.Arbitrary<number>,
  bucket: (value: number) => T,
): void {
  fc.assert(
    fc.property(arbitrary, arbitrary, (x, y) => {
      const [low, high] = x <= y ? [x, y] : [y, x];
      return order.indexOf(bucket(low)) <= order.indexOf(bucket(high));
    }),
  );
}

Deno.test("property: durationBucket is monotone and always in DURATION_BUCKETS", () => {
  assertMonotone(DURATION_BUCKETS, durationMs, durationBucket);
  fc.assert(fc.property(durationMs, (ms) => DURATION_BUCKETS.includes(durationBucket(ms))));
});

Deno.test("property: countBucket is monotone and always in COUNT_BUCKETS", () => {
  assertMonotone(COUNT_BUCKETS, count, countBucket);
  fc.assert(fc.property(count, (n) => COUNT_BUCKETS.includes(countBucket(n))));
});

Deno.test("property: toolLatencyBucket is monotone, never unknown for valid input", () => {
  const ordered: readonly string[] = TOOL_LATENCY_BUCKETS.filter((bucket) => bucket !== "unknown");
  assertMonotone(ordered, latencyMs, toolLatencyBucket);
  fc.assert(fc.property(latencyMs, (ms) => ordered.includes(toolLatencyBucket(ms))));
});

Deno.test("property: bucketing never sees the raw number's precision", () => {
  // Only the bucket is recorded, so nearby values inside one bucket are indistinguishable.
  fc.assert(
    fc.property(latencyMs, (ms) => toolLatencyBucket(ms) === toolLatencyBucket(Math.floor(ms))),
  );
  fc.assert(
    fc.property(durationMs, (ms) => durationBucket(ms) === durationBucket(Math.floor(ms))),
  );
});

Deno.test("property: toolLatencyBucket and toolRetryBucket never throw and stay in contract", () => {
  const anything = fc.oneof(
    fc.double(),
    fc.integer(),
    fc.constant(undefined),
    fc.constant(null),
  );
  fc.assert(
    fc.property(anything, (value) =>
      TOOL_LATENCY_BUCKETS.includes(toolLatencyBucket(value)) &&
      TOOL_RETRY_BUCKETS.includes(toolRetryBucket(value))),
  );
});

Deno.test("property: durationBucket throws RangeError exactly for invalid input", () => {
  fc.assert(
    fc.property(fc.double(), (ms) => {
      const valid = Number.isFinite(ms) && ms >= 0;
      try {
        durationBucket(ms);
        return valid;
      } catch (error) {
        return !valid && error instanceof RangeError;
      }
    }),
  );
});

Deno.test("property: countBucket throws RangeError exactly for invalid input", () => {
  fc.assert(
    fc.property(fc.oneof(fc.double(), fc.integer()), (n) => {
      const valid = Number.isInteger(n) && n >= 0;
      try {
        countBucket(n);
        return valid;
      } catch (error) {
        return !valid && error instanceof RangeError;
      }
    }),
  );
});
