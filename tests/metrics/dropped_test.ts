/**
 * The 30-day retention notes the unsent packages it drops, per day, in the store, in the same
 * transaction; the note is taken (reported) once, by whichever process looks first. Agent runs'
 * flushers leave it for the metrics commands and the gateway.
 */
import assert from "node:assert/strict";
import { loadConfig } from "../../src/home/config.ts";
import { MetricsFlusher } from "../../src/metrics/flusher.ts";
import { openUsageMetrics } from "../../src/metrics/mod.ts";
import { pruneExports, writePackages } from "../../src/metrics/packager.ts";
import { StoreRecorder } from "../../src/metrics/recorder.ts";
import { DAY_MS } from "../../src/metrics/store.ts";
import { RESOURCE, tempStore, TestClock } from "./_helpers.ts";

Deno.test("prune notes only unsent packages, per day, adds up over prunes, and is taken once", async () => {
  await using t = await tempStore();
  const clock = new TestClock("2026-10-01T08:00:00.000Z");
  const recorder = new StoreRecorder(t.store, RESOURCE, { now: clock.now, flushDelayMs: 0 });
  const exportAt = (iso: string) => {
    clock.set(iso);
    recorder.record({ kind: "task_started", entrypoint: "api", surface: "api" });
    return writePackages(t.store, { outbox: t.outbox, nowMs: clock.ms, includeToday: true })[0];
  };
  const sent = exportAt("2026-10-01T08:00:00.000Z");
  t.store.recordSendOutcome(sent.package_id, { state: "sent", detail: "sent" }, clock.ms);
  const rejected = exportAt("2026-10-02T08:00:00.000Z");
  t.store.recordSendOutcome(rejected.package_id, { state: "rejected", detail: "HTTP 400" }, 0);
  exportAt("2026-10-03T08:00:00.000Z");
  exportAt("2026-10-04T08:00:00.000Z");
  recorder.close();

  assert.equal(pruneExports(t.store, t.outbox, Date.parse("2026-11-03T07:00:00Z")).length, 3);
  assert.equal(pruneExports(t.store, t.outbox, Date.parse("2026-11-04T09:00:00Z")).length, 1);
  assert.deepEqual(t.store.takeDroppedUnsent(), [
    { day: "2026-10-03", packages: 1 },
    { day: "2026-10-04", packages: 1 },
  ]);
  assert.deepEqual(t.store.takeDroppedUnsent(), [], "taken once");
  pruneExports(t.store, t.outbox, Date.parse("2026-12-04T09:00:00Z"));
  assert.deepEqual(t.store.takeDroppedUnsent(), [], "nothing new dropped");
});

Deno.test("a damaged note is dropped, not reported as garbage", async () => {
  await using t = await tempStore();
  t.store.setMeta("dropped_unsent", '{"2026-10-03": 2, "x": 1, "2026-10-04": "many"');
  assert.deepEqual(t.store.takeDroppedUnsent(), []);
  t.store.setMeta("dropped_unsent", '{"2026-10-03": 2, "x": 1, "2026-10-04": "many"}');
  assert.deepEqual(t.store.takeDroppedUnsent(), [{ day: "2026-10-03", packages: 2 }]);
});

Deno.test("the flusher reports dropped packages once; an agent run's (reportDropped: false) leaves them", async () => {
  const home = await Deno.makeTempDir({ prefix: "metrics-home-" });
  try {
    Deno.writeTextFileSync(
      `${home}/config.yaml`,
      "telemetry:\n  shared_metrics:\n    enabled: true\n",
    );
    const clock = new TestClock("2026-10-01T08:00:00.000Z");
    const metrics = openUsageMetrics(loadConfig({ home, env: () => undefined }), {
      now: clock.now,
      resource: RESOURCE,
      flushDelayMs: 0,
    });
    metrics.recorder.record({ kind: "task_started", entrypoint: "api", surface: "api" });
    metrics.exportNow();
    clock.ms += 31 * DAY_MS;

    const warnings: string[] = [];
    const warn = (what: string, why: unknown) => warnings.push(`${what}: ${why}`);
    new MetricsFlusher(metrics, warn, { reportDropped: false }).flush();
    assert.deepEqual(warnings, [], "an agent run says nothing");
    assert.deepEqual(metrics.summary()?.packages, { pending: 0, sent: 0, rejected: 0 });

    const flusher = new MetricsFlusher(metrics, warn);
    flusher.flush();
    flusher.packageDue();
    await flusher.settle(0);
    metrics.close();
    assert.deepEqual(warnings, [
      "usage metrics: dropped 1 unsent package: older than 30 days, never sent (1 for 2026-10-01)",
    ]);
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});
