import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { StoreRecorder, utcDay } from "../../src/metrics/recorder.ts";
import { MetricsStore } from "../../src/metrics/store.ts";
import { RESOURCE, tempStore, TestClock } from "./_helpers.ts";

const WRITER = fileURLToPath(new URL("../fixtures/metrics_writer.ts", import.meta.url));
const HOUR = 3_600_000;

Deno.test("recorder sums identical facts into one counter per UTC day", async () => {
  await using t = await tempStore();
  const clock = new TestClock("2026-11-21T23:59:59.000Z");
  const recorder = new StoreRecorder(t.store, RESOURCE, { now: clock.now });
  for (let i = 0; i < 3; i++) {
    recorder.record({ kind: "task_started", entrypoint: "interactive", surface: "cli" });
  }
  clock.set("2026-11-22T00:00:00.000Z");
  recorder.record({ kind: "task_started", entrypoint: "interactive", surface: "cli" });
  recorder.close();
  const deltas = t.store.pendingDeltas({});
  assert.deepEqual(deltas.map((d) => [d.day, d.name, d.dimensions, d.delta]), [
    [
      "2026-11-21",
      "agent.task_run.started",
      '{"entrypoint":"interactive","execution_surface":"cli"}',
      3,
    ],
    [
      "2026-11-22",
      "agent.task_run.started",
      '{"entrypoint":"interactive","execution_surface":"cli"}',
      1,
    ],
  ]);
  assert.equal(
    deltas[0].resource,
    '{"agent_version":"0.1.0","architecture":"x86_64","install_method":"git","os_family":"linux"}',
  );
});

Deno.test("recorder buffers until the threshold, then writes one batch", async () => {
  await using t = await tempStore();
  const recorder = new StoreRecorder(t.store, RESOURCE, {
    maxBufferedEvents: 5,
    flushDelayMs: 60_000,
  });
  for (let i = 0; i < 4; i++) {
    recorder.record({ kind: "skill_lifecycle", action: "created", provenance: "local" });
  }
  assert.equal(t.store.pendingDeltas({}).length, 0, "nothing written before the threshold");
  recorder.record({ kind: "skill_lifecycle", action: "created", provenance: "local" });
  assert.equal(t.store.pendingDeltas({})[0].delta, 5);
  recorder.close();
});

Deno.test("recorder flushes on its timer", async () => {
  await using t = await tempStore();
  const recorder = new StoreRecorder(t.store, RESOURCE, { flushDelayMs: 10 });
  recorder.record({ kind: "tool_approval", attributedToToolCall: true, outcome: "approved" });
  assert.equal(t.store.pendingDeltas({}).length, 0);
  const deadline = Date.now() + 5_000;
  while (t.store.pendingDeltas({}).length === 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  assert.equal(t.store.pendingDeltas({})[0]?.delta, 1);
  recorder.close();
});

Deno.test("a rejected fact changes nothing and the recorder keeps working", async () => {
  await using t = await tempStore();
  const recorder = new StoreRecorder(t.store, RESOURCE, { flushDelayMs: 0 });
  assert.throws(() =>
    recorder.record({ kind: "task_started", entrypoint: "nope" as "api", surface: "cli" })
  );
  recorder.record({ kind: "task_started", entrypoint: "api", surface: "cli" });
  assert.equal(t.store.pendingDeltas({}).length, 1);
  recorder.close();
  assert.throws(() => recorder.record({ kind: "client_active" }), /closed/);
});

Deno.test("client.active latch: at most one per rolling 24 h", async () => {
  await using t = await tempStore();
  const clock = new TestClock("2026-11-21T10:00:00.000Z");
  const recorder = new StoreRecorder(t.store, RESOURCE, { now: clock.now });
  recorder.record({ kind: "client_active" });
  recorder.record({ kind: "client_active" });
  clock.advance(24 * HOUR - 1); // next UTC day, but inside the 24 h window
  recorder.record({ kind: "client_active" });
  clock.advance(1); // exactly 24 h later
  recorder.record({ kind: "client_active" });
  clock.advance(HOUR);
  recorder.record({ kind: "client_active" });
  recorder.close();
  const active = t.store.pendingDeltas({}).filter((d) => d.name === "agent.client.active");
  assert.deepEqual(active.map((d) => [d.day, d.delta, d.dimensions]), [
    ["2026-11-21", 1, "{}"],
    ["2026-11-22", 1, "{}"],
  ]);
});

Deno.test("client.active latch holds across two recorders on one store", async () => {
  await using t = await tempStore();
  const clock = new TestClock("2026-11-21T10:00:00.000Z");
  const second = MetricsStore.open(t.store.path);
  const a = new StoreRecorder(t.store, RESOURCE, { now: clock.now });
  const b = new StoreRecorder(second, RESOURCE, { now: clock.now });
  a.record({ kind: "client_active" });
  b.record({ kind: "client_active" });
  a.close();
  b.close();
  second.close();
  assert.equal(t.store.pendingDeltas({}).length, 1);
  assert.equal(t.store.pendingDeltas({})[0].delta, 1);
});

Deno.test("client.active latch holds across real processes starting together", async () => {
  await using t = await tempStore();
  const now = String(Date.parse("2026-11-21T10:00:00Z"));
  const children = Array.from({ length: 4 }, () =>
    new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", WRITER, t.store.path, "latch", now],
      stdout: "null",
      stderr: "piped",
    }).output());
  for (const result of await Promise.all(children)) {
    assert.equal(result.code, 0, new TextDecoder().decode(result.stderr));
  }
  const active = t.store.pendingDeltas({}).filter((d) => d.name === "agent.client.active");
  assert.equal(active.length, 1);
  assert.equal(active[0].delta, 1);
});

Deno.test("two processes recording at once lose nothing", async () => {
  await using t = await tempStore();
  const perProcess = 3_000;
  const children = [0, 1].map(() =>
    new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", WRITER, t.store.path, "record", String(perProcess)],
      stdout: "null",
      stderr: "piped",
    }).output()
  );
  // This process records too, interleaved with the children.
  const recorder = new StoreRecorder(t.store, RESOURCE, { maxBufferedEvents: 10 });
  for (let i = 0; i < perProcess; i++) {
    recorder.record({ kind: "task_started", entrypoint: "interactive", surface: "cli" });
    if (i % 50 === 0) await new Promise((resolve) => setTimeout(resolve, 0));
  }
  recorder.close();
  for (const result of await Promise.all(children)) {
    assert.equal(result.code, 0, new TextDecoder().decode(result.stderr));
  }
  const total = t.store.pendingDeltas({}).reduce((sum, d) => sum + d.delta, 0);
  assert.equal(total, 3 * perProcess);
});

Deno.test("buffered counts are written when the process exits without closing", async () => {
  await using t = await tempStore();
  const result = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", WRITER, t.store.path, "record-then-exit", "42"],
    stdout: "null",
    stderr: "piped",
  }).output();
  assert.equal(result.code, 0, new TextDecoder().decode(result.stderr));
  assert.equal(t.store.pendingDeltas({})[0]?.delta, 42);
});

Deno.test("counts survive a restart: buffered facts are written on close", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/metrics.sqlite3`;
    const store = MetricsStore.open(path);
    const recorder = new StoreRecorder(store, RESOURCE, { flushDelayMs: 60_000 });
    recorder.record({ kind: "model_route", model: "gpt-4o", provider: "openai" });
    recorder.close();
    const installId = store.installId();
    store.close();
    using reopened = MetricsStore.open(path);
    assert.equal(reopened.pendingDeltas({})[0].delta, 1);
    assert.equal(reopened.installId(), installId, "install id is kept");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("store files are private: folder 0700, database 0600", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/telemetry/shared_metrics/metrics.sqlite3`;
    using store = MetricsStore.open(path);
    assert.equal(Deno.statSync(`${dir}/telemetry/shared_metrics`).mode! & 0o777, 0o700);
    assert.equal(Deno.statSync(path).mode! & 0o777, 0o600);
    assert.match(
      store.installId(),
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("utcDay uses UTC, not local time", () => {
  assert.equal(utcDay(Date.parse("2026-11-21T23:59:59.999Z")), "2026-11-21");
  assert.equal(utcDay(Date.parse("2026-11-22T00:00:00.000Z")), "2026-11-22");
});
