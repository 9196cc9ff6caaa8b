/**
 * Usage-metrics benchmark (`deno task bench`). Prints:
 * - record() throughput (events/s) through the real recorder and SQLite store;
 * - the time to build and write one package of 10 000 distinct rows;
 * - validateMetricsPackage throughput against a bare compiled Ajv validator on the same
 *   packages, in the same process (ratio).
 * Targets (issue 2): record ≥ 50 000 events/s, package < 250 ms, validation ratio ≥ 0.9.
 * Exits 1 when a target is missed.
 */
import { Ajv2020 } from "ajv/dist/2020";
import ajvFormats from "ajv-formats";
import type { MetricsEvent } from "../../src/metrics/events.ts";
import { previewPackages, writePackages } from "../../src/metrics/packager.ts";
import { StoreRecorder } from "../../src/metrics/recorder.ts";
import { sharedMetricsSchema, validateMetricsPackage } from "../../src/metrics/schema.ts";
import { MetricsStore } from "../../src/metrics/store.ts";
import type { MetricsPackage, MetricsResource } from "../../src/metrics/contract.ts";

const RESOURCE: MetricsResource = {
  agent_version: "0.1.0",
  architecture: "x86_64",
  install_method: "git",
  os_family: "linux",
};
const dir = await Deno.makeTempDir({ prefix: "metrics-bench-" });
const results: { name: string; value: string; target: string; ok: boolean }[] = [];

try {
  benchRecord();
  benchPackage();
  benchValidation();
} finally {
  await Deno.remove(dir, { recursive: true });
}

console.log("\nmetric                                   value              target");
for (const r of results) {
  console.log(
    `${r.name.padEnd(40)} ${r.value.padEnd(18)} ${r.target.padEnd(12)} ${r.ok ? "ok" : "MISSED"}`,
  );
}
if (results.some((r) => !r.ok)) Deno.exit(1);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** A realistic mix of the facts one agent run produces. */
function runEvents(i: number): MetricsEvent[] {
  return [
    { kind: "task_started", entrypoint: "interactive", surface: "cli" },
    {
      kind: "model_call",
      model: ["gpt-4o", "anthropic/claude-sonnet-4.5", "qwen3:32b"][i % 3],
      provider: "openrouter",
      baseUrl: "https://openrouter.ai/api/v1",
      outcome: "success",
    },
    { kind: "model_route", model: "gpt-4o", provider: "openrouter" },
    {
      kind: "tool_call",
      source: { kind: "mcp" },
      latencyMs: (i * 37) % 4000,
      outcome: "success",
      approval: "not_required",
      retries: 0,
    },
    { kind: "tool_approval", attributedToToolCall: true, outcome: "approved" },
    { kind: "skill_load", provenance: "local", useCount: 1 + (i % 12) },
    {
      kind: "task_finished",
      entrypoint: "interactive",
      surface: "cli",
      durationMs: (i * 101) % 200_000,
      endReason: "completed",
      modelCalls: 1 + (i % 4),
      toolCalls: i % 7,
      retries: 0,
    },
  ];
}

function benchRecord(): void {
  const store = MetricsStore.open(`${dir}/record.sqlite3`);
  const batches = Array.from({ length: 64 }, (_, i) => runEvents(i));
  const rates: number[] = [];
  for (let round = 0; round < 5; round++) {
    const recorder = new StoreRecorder(store, RESOURCE);
    let events = 0;
    const start = performance.now();
    for (let i = 0; i < 30_000; i++) {
      for (const event of batches[i & 63]) {
        recorder.record(event);
        events++;
      }
    }
    recorder.close(); // the final flush is part of the cost
    rates.push(events / ((performance.now() - start) / 1000));
  }
  store.close();
  const rate = median(rates);
  results.push({
    name: "record() throughput",
    value: `${Math.round(rate).toLocaleString("en")} events/s`,
    target: ">= 50,000",
    ok: rate >= 50_000,
  });
}

function benchPackage(): void {
  const times: number[] = [];
  for (let round = 0; round < 5; round++) {
    const store = MetricsStore.open(`${dir}/package-${round}.sqlite3`);
    const nowMs = Date.parse("2026-11-21T12:00:00Z");
    const recorder = new StoreRecorder(store, RESOURCE, { now: () => nowMs });
    for (let i = 0; i < 10_000; i++) {
      recorder.record({ kind: "model_route", model: `model-${i}`, provider: "openai" });
    }
    recorder.close();
    const start = performance.now();
    const [pkg] = writePackages(store, {
      outbox: `${dir}/outbox-${round}`,
      nowMs,
      includeToday: true,
    });
    times.push(performance.now() - start);
    if (pkg.metrics.length !== 10_000) {
      throw new Error(`expected 10 000 rows, got ${pkg.metrics.length}`);
    }
    store.close();
  }
  const ms = median(times);
  results.push({
    name: "package of 10 000 rows (build + write)",
    value: `${ms.toFixed(1)} ms`,
    target: "< 250 ms",
    ok: ms < 250,
  });
}

function benchValidation(): void {
  const store = MetricsStore.open(`${dir}/validate.sqlite3`);
  const nowMs = Date.parse("2026-11-21T12:00:00Z");
  const recorder = new StoreRecorder(store, RESOURCE, { now: () => nowMs });
  for (let i = 0; i < 200; i++) for (const event of runEvents(i)) recorder.record(event);
  recorder.record({ kind: "client_active" });
  recorder.close();
  const [sample] = previewPackages(store, { nowMs, includeToday: true });
  store.close();
  const packages: MetricsPackage[] = Array.from({ length: 200 }, () => structuredClone(sample));
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  ajvFormats.default(ajv);
  const bare = ajv.compile(sharedMetricsSchema);
  for (const pkg of packages) {
    if (!bare(pkg) || !validateMetricsPackage(pkg).valid) {
      throw new Error("sample package is invalid");
    }
  }
  const ours: number[] = [];
  const baseline: number[] = [];
  const iterations = 50;
  for (let round = 0; round < 15; round++) {
    // Alternate which goes first so neither benefits from warm-up order.
    const pair = round % 2 === 0 ? [runBare, runOurs] : [runOurs, runBare];
    for (const run of pair) run();
  }
  function runBare(): void {
    const start = performance.now();
    for (let k = 0; k < iterations; k++) for (const pkg of packages) bare(pkg);
    baseline.push((iterations * packages.length) / ((performance.now() - start) / 1000));
  }
  function runOurs(): void {
    const start = performance.now();
    for (let k = 0; k < iterations; k++) for (const pkg of packages) validateMetricsPackage(pkg);
    ours.push((iterations * packages.length) / ((performance.now() - start) / 1000));
  }
  const ratio = median(ours) / median(baseline);
  console.log(
    `validation: ours ${Math.round(median(ours)).toLocaleString("en")} packages/s, ` +
      `bare Ajv ${Math.round(median(baseline)).toLocaleString("en")} packages/s ` +
      `(${sample.metrics.length} rows per package)`,
  );
  results.push({
    name: "validation throughput vs bare Ajv",
    value: `${ratio.toFixed(3)}x`,
    target: ">= 0.9",
    ok: ratio >= 0.9,
  });
}
