/**
 * QA round 2, at the library level: a store another process holds (busy) never throws into a
 * run or out of a timer, store content this version does not write is a one-line error naming
 * the file, and two senders never post the same package.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { loadConfig } from "../../src/home/config.ts";
import {
  MetricsStoreBusyError,
  MetricsStoreDamagedError,
  MetricsStoreUnavailableError,
  openUsageMetrics,
} from "../../src/metrics/mod.ts";
import { previewPackages, writePackages } from "../../src/metrics/packager.ts";
import { StoreRecorder } from "../../src/metrics/recorder.ts";
import { MetricsStore } from "../../src/metrics/store.ts";
import { RESOURCE, tempStore, TestClock } from "./_helpers.ts";

const STARTED = { kind: "task_started", entrypoint: "interactive", surface: "cli" } as const;

/** Another connection holding the write lock, as `lock.ts` of the QA report does. */
function lock(path: string): Disposable & { release(): void } {
  const db = new DatabaseSync(path);
  db.exec("BEGIN EXCLUSIVE; UPDATE meta SET value = value");
  let held = true;
  const release = () => {
    if (held) db.exec("COMMIT");
    held = false;
  };
  return {
    release,
    [Symbol.dispose]() {
      release();
      db.close();
    },
  };
}

/** Resolves when `count` warnings were given; the warnings so far. */
function warnings() {
  const seen: string[] = [];
  let wake: (() => void) | undefined;
  return {
    seen,
    onWarning: (message: string) => {
      seen.push(message);
      wake?.();
    },
    /** Resolves once the recorder's timer has tried again (it warns only once, so: polls). */
    next: () => new Promise<void>((resolve) => (wake = resolve)),
  };
}

Deno.test("a busy store: record() never throws, warns once, keeps the counts for later", async () => {
  await using t = await tempStore();
  const clock = new TestClock("2026-11-21T10:00:00.000Z");
  const w = warnings();
  const recorder = new StoreRecorder(t.store, RESOURCE, {
    now: clock.now,
    flushDelayMs: 0,
    busyTimeoutMs: 0,
    onWarning: w.onWarning,
  });
  {
    using _held = lock(t.store.path);
    // Run.execute's first two calls: the latch goes to the store at once, the count right after.
    recorder.record({ kind: "client_active" });
    recorder.record(STARTED);
    recorder.record(STARTED);
    assert.equal(w.seen.length, 1, `one warning, got ${w.seen.join(" | ")}`);
    assert.match(w.seen[0], /is busy \(another agent process holds it\).*kept in memory/);
    assert.ok(w.seen[0].includes(t.store.path));
  }
  assert.equal(recorder.flush(), true, "written once the store is free");
  const counts = Object.fromEntries(t.store.pendingDeltas({}).map((d) => [d.name, d.delta]));
  assert.deepEqual(counts, { "agent.client.active": 1, "agent.task_run.started": 2 });
  recorder.close();
});

/** A recorder that gives up at once on a busy store, at close too, warning through `onWarning`. */
function busyRecorder(
  store: ConstructorParameters<typeof StoreRecorder>[0],
  onWarning: (message: string) => void,
): StoreRecorder {
  return new StoreRecorder(store, RESOURCE, {
    flushDelayMs: 60_000,
    busyTimeoutMs: 0,
    closeBusyTimeoutMs: 0,
    onWarning,
  });
}

Deno.test("a busy store on close: the counts are kept in unwritten/ and the next recorder writes them", async () => {
  await using t = await tempStore();
  const w = warnings();
  const recorder = busyRecorder(t.store, w.onWarning);
  using held = lock(t.store.path);
  recorder.record(STARTED);
  recorder.record(STARTED);
  recorder.close(); // must not throw
  assert.equal(w.seen.length, 1);
  assert.match(w.seen[0], /was busy when this process ended: 2 counts are kept in .*unwritten/);
  held.release();
  assert.deepEqual(t.store.pendingDeltas({}), []);
  const next = new StoreRecorder(t.store, RESOURCE, { flushDelayMs: 60_000 });
  assert.equal(next.flush(), true);
  next.close();
  assert.deepEqual(t.store.pendingDeltas({}).map((d) => [d.name, d.delta]), [
    ["agent.task_run.started", 2],
  ]);
});

Deno.test("a busy store on close and no folder to keep the counts in: dropped, saying how many", async () => {
  await using t = await tempStore();
  Deno.writeTextFileSync(`${t.dir}/unwritten`, "a file where the folder would be");
  const w = warnings();
  const recorder = busyRecorder(t.store, w.onWarning);
  using held = lock(t.store.path);
  recorder.record(STARTED);
  recorder.record(STARTED);
  recorder.close();
  assert.equal(w.seen.length, 1);
  assert.match(w.seen[0], /2 counts were dropped: the store .* could not be written/);
  held.release();
  assert.deepEqual(t.store.pendingDeltas({}), []);
});

Deno.test("the delayed flush timer never throws uncaught on a busy store; it tries again", async () => {
  await using t = await tempStore();
  const w = warnings();
  const recorder = new StoreRecorder(t.store, RESOURCE, {
    flushDelayMs: 1,
    busyTimeoutMs: 0,
    onWarning: w.onWarning,
  });
  recorder.record(STARTED); // the timer is armed (unref'd: keep the test's event loop alive)
  const keepAlive = setTimeout(() => {}, 60_000);
  const held = lock(t.store.path);
  const warned = w.next();
  await warned; // the timer ran against the lock: an uncaught throw would fail this test
  clearTimeout(keepAlive);
  assert.match(w.seen[0], /is busy/);
  held[Symbol.dispose]();
  recorder.close();
  assert.equal(t.store.pendingDeltas({})[0].delta, 1, "kept and written on close");
});

Deno.test("openUsageMetrics: a library user's recorder survives a locked store", async () => {
  const home = await Deno.makeTempDir();
  try {
    Deno.writeTextFileSync(
      `${home}/config.yaml`,
      "telemetry:\n  shared_metrics:\n    enabled: true\n",
    );
    const w = warnings();
    const metrics = openUsageMetrics(loadConfig({ home, env: () => undefined }), {
      flushDelayMs: 1,
      onWarning: w.onWarning,
    });
    metrics.recorder.record(STARTED);
    assert.equal(metrics.recorder.flush(), true);
    assert.ok(metrics.enabled);
    const held = lock(`${home}/telemetry/shared_metrics/metrics.sqlite3`);
    const warned = w.next();
    const keepAlive = setTimeout(() => {}, 60_000);
    metrics.recorder.record(STARTED);
    await warned; // the timer's flush warned instead of throwing uncaught
    clearTimeout(keepAlive);
    held[Symbol.dispose]();
    metrics.close();
    assert.equal(w.seen.length, 1);
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("store content this version does not write is MetricsStoreDamagedError naming the file", async (t) => {
  // The last column: whether preview (which reads no package ledger) fails too.
  const cases: [string, string, RegExp, boolean][] = [
    ["dimensions not JSON", "UPDATE counters SET dimensions = '{not json'", /are not JSON/, true],
    ["a total beyond 2^53", "UPDATE counters SET total = 9007199254740993", /too large/, true],
    ["no install id", "DELETE FROM meta", /no install id/, true],
    ["a table dropped", "DROP TABLE packages", /no such table: packages/, false],
  ];
  for (const [name, sql, reason, previewFails] of cases) {
    await t.step(name, async () => {
      await using s = await tempStore();
      s.store.addCounters([{
        day: "2026-11-21",
        name: "agent.task_run.started",
        resource: JSON.stringify(RESOURCE),
        dimensions: '{"entrypoint":"interactive","execution_surface":"cli"}',
        count: 1,
      }]);
      const editor = new DatabaseSync(s.store.path);
      editor.exec(sql);
      editor.close();
      const nowMs = Date.parse("2026-11-21T12:00:00Z");
      for (
        const work of [
          () => writePackages(s.store, { outbox: s.outbox, nowMs, includeToday: true }),
          ...(previewFails ? [() => previewPackages(s.store, { nowMs, includeToday: true })] : []),
        ]
      ) {
        assert.throws(work, (error: unknown) => {
          assert.ok(error instanceof MetricsStoreDamagedError, String(error));
          assert.ok(error.message.includes(s.store.path));
          assert.match(error.message, reason);
          assert.match(error.message, /Fix: run `agent metrics reset`/);
          return true;
        });
      }
    });
  }
});

Deno.test("a write under another process's lock is MetricsStoreBusyError, not a raw SQLite error", async () => {
  await using s = await tempStore();
  using _held = lock(s.store.path);
  assert.throws(
    () =>
      s.store.withBusyTimeout(
        0,
        () => writePackages(s.store, { outbox: s.outbox, nowMs: Date.now(), includeToday: true }),
      ),
    (error: unknown) =>
      error instanceof MetricsStoreBusyError &&
      error.message ===
        `the metrics store ${s.store.path} is busy: another agent process holds it; try again`,
  );
});

Deno.test("a store folder that is a file is reported, not taken for 'no store'", async () => {
  const dir = await Deno.makeTempDir();
  try {
    Deno.writeTextFileSync(`${dir}/shared_metrics`, "x");
    const path = `${dir}/shared_metrics/metrics.sqlite3`;
    for (const work of [() => MetricsStore.exists(path), () => MetricsStore.open(path)]) {
      assert.throws(work, (error: unknown) =>
        error instanceof MetricsStoreUnavailableError &&
        error.message.includes(`${dir}/shared_metrics is a file, not a folder`));
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("two senders at once post each package once (claims in the store)", async () => {
  const home = await Deno.makeTempDir();
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let firstArrived!: () => void;
  const arrived = new Promise<void>((resolve) => (firstArrived = resolve));
  const posts: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const body = await request.json();
    posts.push(body.package_id);
    if (posts.length === 1) {
      firstArrived();
      await held; // the first sender is mid-pass while the second one runs
    }
    return new Response(null, { status: 202 });
  });
  try {
    const endpoint = `http://127.0.0.1:${server.addr.port}/v2`;
    Deno.writeTextFileSync(
      `${home}/config.yaml`,
      `telemetry:\n  shared_metrics:\n    enabled: true\n    send: true\n    endpoint: ${endpoint}\n`,
    );
    const config = () => loadConfig({ home, env: () => undefined });
    const first = openUsageMetrics(config());
    first.recorder.record(STARTED);
    const built = first.exportNow();
    assert.equal(built.length, 1);
    const second = openUsageMetrics(config()); // its own connection, like another process

    const firstPass = first.sendDue();
    await arrived;
    assert.deepEqual(await second.sendDue(), [], "the second sender finds nothing due");
    assert.equal(second.packagesBeingSent(), 1, "and can say why");
    release();
    const outcomes = await firstPass;
    assert.deepEqual(outcomes.map((o) => o.status), ["sent"]);
    assert.deepEqual(posts, [built[0].package.package_id], "posted exactly once");
    assert.equal(second.packagesBeingSent(), 0);
    assert.deepEqual(second.summary()?.packages, { pending: 0, sent: 1, rejected: 0 });
    first.close();
    second.close();
  } finally {
    release();
    await server.shutdown();
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("a sender that fails mid-pass releases its claims: the packages are due again", async () => {
  const home = await Deno.makeTempDir();
  try {
    Deno.writeTextFileSync(
      `${home}/config.yaml`,
      "telemetry:\n  shared_metrics:\n    enabled: true\n    send: true\n" +
        "    endpoint: http://127.0.0.1:9/v2\n",
    );
    const metrics = openUsageMetrics(loadConfig({ home, env: () => undefined }));
    metrics.recorder.record(STARTED);
    metrics.exportNow();
    await assert.rejects(
      metrics.sendDue({ requestTimeoutMs: -1 }), // a programming error: sendPackages throws
      RangeError,
    );
    assert.equal(metrics.packagesBeingSent(), 0);
    assert.deepEqual(metrics.summary()?.packages, { pending: 1, sent: 0, rejected: 0 });
    metrics.close();
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});
