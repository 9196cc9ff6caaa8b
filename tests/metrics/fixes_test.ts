/**
 * Reported metrics bugs, at the library level: the packager validates before it writes (also on
 * the automatic path the gateway and agent runs take), a damaged store never stops a run, and the
 * background flusher reports an outbox file it refused to send.
 */
import assert from "node:assert/strict";
import { loadConfig } from "../../src/home/config.ts";
import { MetricsFlusher } from "../../src/metrics/flusher.ts";
import {
  InvalidStoredCountsError,
  type MetricsStoreUnavailableError,
  openUsageMetrics,
  type UsageMetrics,
} from "../../src/metrics/mod.ts";
import { packageDueDays, writePackages } from "../../src/metrics/packager.ts";
import { StoreRecorder } from "../../src/metrics/recorder.ts";
import { listFiles, RESOURCE, tempStore, TestClock } from "./_helpers.ts";

const noEnv = () => undefined;

Deno.test("a package that would not validate is never written or marked, on any path", async () => {
  await using t = await tempStore();
  const clock = new TestClock("2026-11-20T08:00:00.000Z");
  const recorder = new StoreRecorder(t.store, RESOURCE, { now: clock.now });
  recorder.record({ kind: "task_started", entrypoint: "interactive", surface: "cli" });
  recorder.close();
  const [good] = t.store.pendingDeltas({});
  t.store.addCounters([{ ...good, name: "agent.bogus.count", dimensions: "{}", count: 1 }]);
  const before = t.store.pendingDeltas({});
  clock.set("2026-11-21T09:00:00.000Z");

  assert.throws(
    () => writePackages(t.store, { outbox: t.outbox, nowMs: clock.ms, includeToday: true }),
    (error: unknown) =>
      error instanceof InvalidStoredCountsError && error.store === t.store.path &&
      /agent metrics reset/.test(error.message),
  );
  // The automatic run (after a task, gateway flush) follows the same rule.
  assert.throws(() => packageDueDays(t.store, t.outbox, clock.ms), InvalidStoredCountsError);
  assert.deepEqual(listFiles(t.outbox), []);
  assert.deepEqual(t.store.pendingDeltas({}), before);
  assert.deepEqual(t.store.packageIds(), new Set());
  assert.equal(t.store.getMeta("last_packaging_day"), undefined);
});

Deno.test("a damaged store degrades openUsageMetrics to a disabled service and reports it", async () => {
  const home = await Deno.makeTempDir({ prefix: "metrics-home-" });
  try {
    Deno.writeTextFileSync(
      `${home}/config.yaml`,
      "telemetry:\n  shared_metrics:\n    enabled: true\n",
    );
    Deno.mkdirSync(`${home}/telemetry/shared_metrics`, { recursive: true });
    Deno.writeTextFileSync(`${home}/telemetry/shared_metrics/metrics.sqlite3`, "not sqlite");
    const problems: MetricsStoreUnavailableError[] = [];
    const metrics = openUsageMetrics(loadConfig({ home, env: noEnv }), {
      onStoreUnavailable: (error) => problems.push(error),
    });
    assert.equal(metrics.enabled, false);
    metrics.recorder.record({ kind: "task_started", entrypoint: "interactive", surface: "cli" });
    metrics.recordSkillLoad("a-skill", "digest");
    assert.deepEqual(metrics.packageDue(), []);
    assert.deepEqual(await metrics.sendDue(), []);
    metrics.close();
    assert.equal(problems.length, 1);
    assert.match(problems[0].message, /metrics\.sqlite3 cannot be opened .*agent metrics reset/);
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

/** Usage metrics on `home` with sending on (to a closed port) and a test clock. */
function openSending(home: string) {
  Deno.writeTextFileSync(
    `${home}/config.yaml`,
    "telemetry:\n  shared_metrics:\n    enabled: true\n    send: true\n" +
      "    endpoint: http://127.0.0.1:9/v2\n",
  );
  const clock = new TestClock("2026-11-20T08:00:00.000Z");
  const metrics = openUsageMetrics(loadConfig({ home, env: noEnv }), {
    now: clock.now,
    resource: RESOURCE,
    flushDelayMs: 0,
  });
  return { clock, metrics };
}

/** Flushes `metrics` once through a MetricsFlusher, then closes it; returns the warnings given. */
async function flushWarnings(metrics: UsageMetrics): Promise<string[]> {
  const warnings: string[] = [];
  const flusher = new MetricsFlusher(metrics, (what, error) => warnings.push(`${what}: ${error}`));
  flusher.flush();
  await flusher.settle(1_000);
  metrics.close();
  return warnings;
}

/**
 * Exports one package in a fresh home with sending on, overwrites its outbox file with `text`
 * (edited or damaged on disk), flushes once and returns the file, the warnings and the home's
 * outbox listing afterwards.
 */
async function flushDamagedOutboxFile(text: string) {
  const home = await Deno.makeTempDir({ prefix: "metrics-home-" });
  try {
    const { clock, metrics } = openSending(home);
    metrics.recorder.record({ kind: "task_started", entrypoint: "interactive", surface: "cli" });
    clock.set("2026-11-21T09:00:00.000Z");
    const [{ path }] = metrics.exportNow();
    Deno.writeTextFileSync(path, text);
    const warnings = await flushWarnings(metrics);
    return { path, warnings, outbox: listFiles(`${home}/telemetry/shared_metrics/outbox`) };
  } finally {
    await Deno.remove(home, { recursive: true });
  }
}

Deno.test("the background flusher warns about an outbox file it refused to send", async () => {
  const { path, warnings, outbox } = await flushDamagedOutboxFile(
    '{"prompt":"my private prompt text"}',
  );
  assert.equal(warnings.length, 1, warnings.join("\n"));
  assert.ok(warnings[0].includes(path), warnings[0]);
  assert.match(warnings[0], /was not sent.*does not validate.*rejected/);
  assert.deepEqual(outbox, ["rejected"]);
});

Deno.test("an outbox file that is not JSON is refused saying where, never quoting its text", async () => {
  const { warnings, outbox } = await flushDamagedOutboxFile(
    '{"version": 2,\n "note": my private prompt text}',
  );
  assert.equal(warnings.length, 1, warnings.join("\n"));
  assert.ok(
    warnings[0].includes("not valid JSON (line 2, column 10: expected a value)"),
    warnings[0],
  );
  assert.doesNotMatch(warnings[0], /private/);
  assert.deepEqual(outbox, ["rejected"]);
});

Deno.test("a deleted outbox file is reported by sendDue and warned about by the flusher", async () => {
  const home = await Deno.makeTempDir({ prefix: "metrics-home-" });
  try {
    const { metrics } = openSending(home);
    const exportOne = () => {
      metrics.recorder.record({ kind: "task_started", entrypoint: "api", surface: "api" });
      const [{ package: pkg, path }] = metrics.exportNow();
      Deno.removeSync(path);
      return { packageId: pkg.package_id, path };
    };
    const first = exportOne();
    assert.deepEqual(await metrics.sendDue(), [{
      packageId: first.packageId,
      status: "unreadable",
      file: first.path,
      reason: "the outbox file is missing",
    }]);
    assert.deepEqual(metrics.summary()?.packages, { pending: 0, sent: 0, rejected: 1 });

    const second = exportOne();
    const warnings = await flushWarnings(metrics);
    assert.deepEqual(warnings, [
      `usage-metrics package ${second.path} was not sent: the outbox file is missing; ` +
      "its package is marked rejected and is never sent",
    ]);
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});
