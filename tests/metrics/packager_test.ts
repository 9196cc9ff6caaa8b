import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import {
  outboxFile,
  packageDueDays,
  previewPackages,
  pruneExports,
  writePackages,
} from "../../src/metrics/packager.ts";
import { StoreRecorder } from "../../src/metrics/recorder.ts";
import { validateMetricsPackage } from "../../src/metrics/schema.ts";
import type { MetricsPackage } from "../../src/metrics/contract.ts";
import { listFiles, RESOURCE, sumByName, tempStore, TestClock } from "./_helpers.ts";

const WRITER = fileURLToPath(new URL("../fixtures/metrics_writer.ts", import.meta.url));
const DAY = 86_400_000;

function readOutbox(outbox: string): MetricsPackage[] {
  return listFiles(outbox).filter((name) => name.endsWith(".json")).map((name) =>
    JSON.parse(Deno.readTextFileSync(`${outbox}/${name}`))
  );
}

Deno.test("a package is one UTC day and resource: periods, ids, sorted rows, deltas", async () => {
  await using t = await tempStore();
  const clock = new TestClock("2026-11-20T08:00:00.000Z");
  const recorder = new StoreRecorder(t.store, RESOURCE, { now: clock.now });
  recorder.record({
    kind: "tool_call",
    source: { kind: "mcp" },
    latencyMs: 50,
    outcome: "success",
    approval: "not_required",
    retries: 0,
  });
  recorder.record({ kind: "task_started", entrypoint: "interactive", surface: "cli" });
  recorder.record({ kind: "task_started", entrypoint: "api", surface: "api" });
  recorder.record({ kind: "task_started", entrypoint: "interactive", surface: "cli" });
  recorder.record({ kind: "client_active" });
  recorder.close();
  clock.set("2026-11-21T09:30:00.000Z");
  const [pkg, ...rest] = writePackages(t.store, {
    outbox: t.outbox,
    nowMs: clock.ms,
    includeToday: false,
  });
  assert.equal(rest.length, 0);
  assert.deepEqual(validateMetricsPackage(pkg), { valid: true });
  assert.equal(pkg.period_start, "2026-11-20T00:00:00Z");
  assert.equal(pkg.period_end, "2026-11-21T00:00:00Z");
  assert.equal(pkg.generated_at, "2026-11-21T09:30:00.000Z");
  assert.equal(pkg.install_id, t.store.installId());
  assert.notEqual(pkg.package_id, pkg.install_id);
  assert.deepEqual(pkg.resource, RESOURCE);
  assert.deepEqual(pkg.metrics.map((m) => [m.name, m.value]), [
    ["agent.client.active", 1],
    ["agent.task_run.started", 1],
    ["agent.task_run.started", 2],
    ["agent.tool_call.count", 1],
  ]);
  assert.deepEqual(pkg.metrics[1].dimensions, { entrypoint: "api", execution_surface: "api" });
  const onDisk = JSON.parse(Deno.readTextFileSync(outboxFile(t.outbox, pkg.package_id)));
  assert.deepEqual(onDisk, pkg);
  assert.equal(Deno.statSync(outboxFile(t.outbox, pkg.package_id)).mode! & 0o777, 0o600);
});

Deno.test("deltas: a second package holds only what was recorded since the first", async () => {
  await using t = await tempStore();
  const clock = new TestClock("2026-11-21T08:00:00.000Z");
  const recorder = new StoreRecorder(t.store, RESOURCE, { now: clock.now, flushDelayMs: 0 });
  for (let i = 0; i < 3; i++) {
    recorder.record({ kind: "model_route", model: "gpt-4o", provider: "openai" });
  }
  const first = writePackages(t.store, { outbox: t.outbox, nowMs: clock.ms, includeToday: true });
  assert.equal(first[0].metrics[0].value, 3);
  assert.deepEqual(
    writePackages(t.store, { outbox: t.outbox, nowMs: clock.ms, includeToday: true }),
    [],
  );
  for (let i = 0; i < 2; i++) {
    recorder.record({ kind: "model_route", model: "gpt-4o", provider: "openai" });
  }
  const second = writePackages(t.store, { outbox: t.outbox, nowMs: clock.ms, includeToday: true });
  assert.equal(second[0].metrics[0].value, 2);
  assert.equal(second[0].period_start, first[0].period_start);
  assert.notEqual(second[0].package_id, first[0].package_id);
  recorder.close();
  assert.equal(sumByName(readOutbox(t.outbox))["agent.model_route.count"], 5);
});

Deno.test("automatic packaging: finished days only, at most once per UTC day, catching up", async () => {
  await using t = await tempStore();
  const clock = new TestClock("2026-11-17T12:00:00.000Z");
  const recorder = new StoreRecorder(t.store, RESOURCE, { now: clock.now, flushDelayMs: 0 });
  for (const day of ["2026-11-17", "2026-11-18", "2026-11-20"]) {
    clock.set(`${day}T12:00:00.000Z`);
    recorder.record({ kind: "task_started", entrypoint: "batch", surface: "batch" });
  }
  clock.set("2026-11-21T00:10:00.000Z");
  recorder.record({ kind: "task_started", entrypoint: "batch", surface: "batch" }); // today
  const caughtUp = packageDueDays(t.store, t.outbox, clock.ms);
  assert.deepEqual(caughtUp.map((p) => p.period_start.slice(0, 10)), [
    "2026-11-17",
    "2026-11-18",
    "2026-11-20",
  ]);
  clock.set("2026-11-21T23:00:00.000Z");
  recorder.record({ kind: "task_started", entrypoint: "batch", surface: "batch" });
  // A count of a finished day that came late (another process's): due, but not before tomorrow.
  clock.set("2026-11-20T23:59:00.000Z");
  recorder.record({ kind: "task_started", entrypoint: "batch", surface: "batch" });
  clock.set("2026-11-21T23:00:00.000Z");
  assert.deepEqual(packageDueDays(t.store, t.outbox, clock.ms), [], "already ran today");
  clock.set("2026-11-22T00:00:01.000Z");
  const next = packageDueDays(t.store, t.outbox, clock.ms);
  assert.deepEqual(next.map((p) => [p.period_start.slice(0, 10), p.metrics[0].value]), [
    ["2026-11-20", 1],
    ["2026-11-21", 2],
  ]);
  recorder.close();
});

Deno.test("a change of resource tuple makes a separate package for the same day", async () => {
  await using t = await tempStore();
  const clock = new TestClock("2026-11-21T08:00:00.000Z");
  const a = new StoreRecorder(t.store, RESOURCE, { now: clock.now });
  const b = new StoreRecorder(t.store, { ...RESOURCE, agent_version: "0.2.0" }, { now: clock.now });
  a.record({ kind: "task_started", entrypoint: "api", surface: "api" });
  b.record({ kind: "task_started", entrypoint: "api", surface: "api" });
  a.close();
  b.close();
  const packages = previewPackages(t.store, { nowMs: clock.ms, includeToday: true });
  assert.deepEqual(packages.map((p) => p.resource.agent_version).sort(), ["0.1.0", "0.2.0"]);
});

Deno.test("preview writes nothing and marks nothing", async () => {
  await using t = await tempStore();
  const clock = new TestClock("2026-11-21T08:00:00.000Z");
  const recorder = new StoreRecorder(t.store, RESOURCE, { now: clock.now, flushDelayMs: 0 });
  recorder.record({ kind: "skill_lifecycle", action: "installed", provenance: "installed" });
  const preview = previewPackages(t.store, { nowMs: clock.ms, includeToday: true });
  assert.equal(preview.length, 1);
  assert.deepEqual(listFiles(t.outbox), []);
  assert.equal(t.store.pendingDeltas({})[0].delta, 1);
  assert.equal(previewPackages(t.store, { nowMs: clock.ms, includeToday: false }).length, 0);
  recorder.close();
});

Deno.test("a failed outbox write rolls back: nothing marked, no file, next run packages once", async () => {
  await using t = await tempStore();
  const clock = new TestClock("2026-11-21T08:00:00.000Z");
  const recorder = new StoreRecorder(t.store, RESOURCE, { now: clock.now, flushDelayMs: 0 });
  for (let i = 0; i < 4; i++) {
    recorder.record({ kind: "task_started", entrypoint: "api", surface: "api" });
  }
  recorder.close();
  assert.throws(
    () =>
      writePackages(t.store, {
        outbox: t.outbox,
        nowMs: clock.ms,
        includeToday: true,
        onOutboxFileWritten: () => {
          throw new Error("disk full");
        },
      }),
    /disk full/,
  );
  assert.deepEqual(listFiles(t.outbox), []);
  assert.equal(t.store.pendingDeltas({})[0].delta, 4);
  writePackages(t.store, { outbox: t.outbox, nowMs: clock.ms, includeToday: true });
  assert.equal(sumByName(readOutbox(t.outbox))["agent.task_run.started"], 4);
});

Deno.test("a process killed between outbox write and commit never double counts", async () => {
  await using t = await tempStore();
  const clock = new TestClock("2026-11-21T08:00:00.000Z");
  const recorder = new StoreRecorder(t.store, RESOURCE, { now: clock.now, flushDelayMs: 0 });
  for (let i = 0; i < 7; i++) {
    recorder.record({ kind: "task_started", entrypoint: "api", surface: "api" });
  }
  recorder.close();
  const crashed = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", WRITER, t.store.path, "crash-while-packaging", t.outbox, String(clock.ms)],
    stdout: "null",
    stderr: "piped",
  }).output();
  assert.equal(crashed.code, 9, new TextDecoder().decode(crashed.stderr));
  assert.equal(readOutbox(t.outbox).length, 1, "the crashed run left its file behind");
  assert.equal(t.store.pendingDeltas({})[0].delta, 7, "but did not commit the mark");
  writePackages(t.store, { outbox: t.outbox, nowMs: clock.ms, includeToday: true });
  const packages = readOutbox(t.outbox);
  assert.equal(packages.length, 1, "the orphan is removed");
  assert.equal(sumByName(packages)["agent.task_run.started"], 7);
  assert.ok(t.store.packageIds().has(packages[0].package_id));
});

Deno.test("exports older than 30 days are pruned; unpackaged data never", async () => {
  await using t = await tempStore();
  const clock = new TestClock("2026-10-01T08:00:00.000Z");
  const recorder = new StoreRecorder(t.store, RESOURCE, { now: clock.now, flushDelayMs: 0 });
  recorder.record({ kind: "task_started", entrypoint: "api", surface: "api" });
  const [old] = writePackages(t.store, { outbox: t.outbox, nowMs: clock.ms, includeToday: true });
  clock.set("2026-10-02T08:00:00.000Z");
  recorder.record({ kind: "task_started", entrypoint: "batch", surface: "batch" }); // exported on 10-20
  clock.set("2026-10-20T08:00:00.000Z");
  recorder.record({ kind: "task_started", entrypoint: "api", surface: "api" });
  const [recent] = writePackages(t.store, {
    outbox: t.outbox,
    nowMs: clock.ms,
    includeToday: true,
  }).filter((p) => p.period_start.startsWith("2026-10-20"));
  recorder.close();
  clock.ms = Date.parse("2026-10-01T08:00:00.000Z") + 30 * DAY + 1;
  const removed = pruneExports(t.store, t.outbox, clock.ms);
  assert.deepEqual(removed, [old.package_id]);
  assert.ok(!listFiles(t.outbox).includes(`${old.package_id}.json`));
  assert.ok(listFiles(t.outbox).includes(`${recent.package_id}.json`));
  assert.equal(t.store.packageIds().has(old.package_id), false);
});

Deno.test("pruning keeps unpackaged counters however old they are", async () => {
  await using t = await tempStore();
  const clock = new TestClock("2026-01-01T08:00:00.000Z");
  const recorder = new StoreRecorder(t.store, RESOURCE, { now: clock.now, flushDelayMs: 0 });
  recorder.record({ kind: "task_started", entrypoint: "api", surface: "api" });
  recorder.close();
  pruneExports(t.store, t.outbox, Date.parse("2026-11-21T00:00:00Z"));
  assert.equal(t.store.pendingDeltas({})[0].delta, 1);
});
