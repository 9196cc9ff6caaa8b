/**
 * The metrics store when its files fail while a process (the gateway, `agent chat`) has it open:
 * deleted, replaced by a folder or by something that is not a store. Counts must never go to a
 * file nobody reads, and a broken store must cost only one warning.
 */
import assert from "node:assert/strict";
import { loadConfig } from "../../src/home/config.ts";
import { openUsageMetrics, type UsageMetrics } from "../../src/metrics/mod.ts";
import { MetricsFlusher } from "../../src/metrics/flusher.ts";
import { MetricsStore } from "../../src/metrics/store.ts";
import { listFiles, TestClock } from "./_helpers.ts";
import { bwrapWorks } from "../fixtures/bwrap.ts";

const started = { kind: "task_started", entrypoint: "interactive", surface: "cli" } as const;

async function collectingHome(): Promise<string> {
  const home = await Deno.makeTempDir({ prefix: "metrics-resources-" });
  Deno.writeTextFileSync(
    `${home}/config.yaml`,
    "telemetry:\n  shared_metrics:\n    enabled: true\n",
  );
  return home;
}

/** Deletes the store at `path` with its -wal and -shm, as a user cleaning up by hand would. */
function removeStoreFiles(path: string): void {
  for (const suffix of ["", "-wal", "-shm"]) Deno.removeSync(`${path}${suffix}`);
}

function open(home: string, warnings: string[]): UsageMetrics {
  return openUsageMetrics(loadConfig({ home, env: () => undefined }), {
    flushDelayMs: 0,
    onWarning: (message) => warnings.push(message),
  });
}

/** The started runs the store at `path` holds now (opened anew, as the next process would). */
function startedRuns(path: string): number {
  using store = MetricsStore.open(path);
  return store.pendingDeltas({}).reduce((sum, row) => sum + row.delta, 0);
}

for (
  const [what, remove] of [
    ["its file", (dir: string) => {
      removeStoreFiles(`${dir}/metrics.sqlite3`);
    }],
    ["its folder", (dir: string) => Deno.removeSync(dir, { recursive: true })],
  ] as const
) {
  Deno.test(`a store deleted while open (${what}) gets the later counts in a new store, said once`, async () => {
    const home = await collectingHome();
    const warnings: string[] = [];
    const metrics = open(home, warnings);
    const path = metrics.storePath;
    const dir = `${home}/telemetry/shared_metrics`;
    metrics.recorder.record(started);
    remove(dir);
    metrics.recorder.record(started);
    metrics.recorder.record(started);
    metrics.close();

    // Before, they went into the deleted file: no store was left, nothing said.
    assert.equal(startedRuns(path), 2);
    assert.equal(warnings.length, 1, warnings.join("\n"));
    assert.match(warnings[0], /metrics\.sqlite3 was deleted while this process ran; a new store/);
    await Deno.remove(home, { recursive: true });
  });
}

Deno.test("a store deleted while open packages into the new store's ledger, not the old one's", async () => {
  const home = await collectingHome();
  const warnings: string[] = [];
  const metrics = open(home, warnings);
  metrics.recorder.record(started);
  Deno.removeSync(`${home}/telemetry`, { recursive: true });
  metrics.recorder.record(started);
  const [exported] = metrics.exportNow();
  metrics.close();

  // The next process knows the package (it would otherwise delete the file as an orphan).
  using store = MetricsStore.open(metrics.storePath);
  assert.deepEqual([...store.packageIds()], [exported.package.package_id]);
  assert.equal(exported.package.metrics[0].value, 1);
  await Deno.remove(home, { recursive: true });
});

Deno.test("only the -wal deleted while open: what it held is kept in the store", async () => {
  const home = await collectingHome();
  const warnings: string[] = [];
  const metrics = open(home, warnings);
  const path = metrics.storePath;
  metrics.recorder.record(started);
  Deno.removeSync(`${path}-wal`);
  metrics.recorder.record(started);
  // Another process opens the store now: it must see both counts.
  assert.equal(startedRuns(path), 2);
  metrics.close();
  assert.equal(startedRuns(path), 2);
  await Deno.remove(home, { recursive: true });
});

for (
  const [what, replace, reason] of [
    ["a folder", (path: string) => Deno.mkdirSync(path), /it is a folder/],
    [
      "random bytes",
      (path: string) => Deno.writeFileSync(path, crypto.getRandomValues(new Uint8Array(8192))),
      /not a database/,
    ],
  ] as const
) {
  Deno.test(`a store replaced by ${what} while open: said once, counts kept, written once it is back`, async () => {
    const home = await collectingHome();
    const warnings: string[] = [];
    const metrics = open(home, warnings);
    const path = metrics.storePath;
    metrics.recorder.record(started);
    removeStoreFiles(path);
    replace(path);
    for (let i = 0; i < 5; i++) metrics.recorder.record(started);
    assert.equal(metrics.recorder.flush(), false);
    assert.equal(warnings.length, 1, warnings.join("\n"));
    assert.match(warnings[0], reason);
    assert.match(warnings[0], /metrics\.sqlite3/);
    assert.match(warnings[0], /agent metrics reset/);

    // The user deletes what took its place: the kept counts go to a new store.
    Deno.removeSync(path, { recursive: true });
    assert.equal(metrics.recorder.flush(), true);
    metrics.close();
    assert.equal(startedRuns(path), 5);
    assert.deepEqual(listFiles(`${home}/telemetry/shared_metrics/unwritten`), []);
    await Deno.remove(home, { recursive: true });
  });
}

Deno.test("counts kept on close after a failure that is not a lock say why, not 'busy'", async () => {
  const home = await collectingHome();
  const warnings: string[] = [];
  const metrics = open(home, warnings);
  const path = metrics.storePath;
  metrics.recorder.record(started);
  removeStoreFiles(path);
  Deno.mkdirSync(path);
  metrics.recorder.record(started);
  metrics.close();

  assert.equal(warnings.length, 2, warnings.join("\n"));
  assert.doesNotMatch(warnings[1], /busy/);
  assert.match(warnings[1], /could not be written when this process ended \(.*it is a folder/);
  assert.match(warnings[1], /1 count is kept in .*unwritten/);
  await Deno.remove(home, { recursive: true });
});

Deno.test({
  name: "a full disk while recording: one warning naming the store and the disk, nothing thrown, " +
    "every count written once when there is room (needs bwrap)",
  ignore: !bwrapWorks,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "metrics-full-" });
    const disk = `${dir}/disk`;
    Deno.mkdirSync(disk);
    const script = `${dir}/fill.ts`;
    const module = (path: string) => JSON.stringify(new URL(path, import.meta.url).href);
    Deno.writeTextFileSync(
      script,
      `import { loadConfig } from ${module("../../src/home/config.ts")};
      import { openUsageMetrics } from ${module("../../src/metrics/mod.ts")};
      const disk = Deno.args[0];
      const home = disk + "/home";
      Deno.mkdirSync(home);
      Deno.writeTextFileSync(home + "/config.yaml", "telemetry:\\n  shared_metrics:\\n    enabled: true\\n");
      const warnings = [];
      const metrics = openUsageMetrics(loadConfig({ home, env: () => undefined }), {
        flushDelayMs: 0, onWarning: (message) => warnings.push(message),
      });
      const started = { kind: "task_started", entrypoint: "interactive", surface: "cli" };
      metrics.recorder.record(started);
      const fillers = [];
      try {
        for (;;) {
          const file = disk + "/filler" + fillers.length;
          fillers.push(file);
          Deno.writeFileSync(file, new Uint8Array(4096));
        }
      } catch { /* full */ }
      for (let i = 0; i < 20; i++) {
        metrics.recorder.record({ kind: "model_call", model: "m" + i, provider: "openai", outcome: "success" });
      }
      const whileFull = metrics.recorder.flush();
      for (const file of fillers) try { Deno.removeSync(file); } catch { /* not written */ }
      const afterRoom = metrics.recorder.flush();
      const packages = metrics.exportNow().map((entry) => entry.package);
      metrics.close();
      console.log(JSON.stringify({ whileFull, afterRoom, warnings, packages }));`,
    );
    const config = new URL("../../deno.json", import.meta.url).pathname;
    const output = await new Deno.Command("bwrap", {
      args: [
        ...["--dev-bind", "/", "/", "--size", "262144", "--tmpfs", disk, "--"],
        ...[Deno.execPath(), "run", "-A", "--no-check", "--config", config, script, disk],
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assert(output.success, stderr);
    const { whileFull, afterRoom, warnings, packages } = JSON.parse(
      new TextDecoder().decode(output.stdout),
    );
    assert.equal(whileFull, false);
    assert.equal(afterRoom, true);
    assert.equal(warnings.length, 1, warnings.join("\n"));
    // SQLite's own reason, not "cannot rollback - no transaction is active", and the file.
    assert.match(
      warnings[0],
      /counts cannot be written to \S+metrics\.sqlite3 \(database or disk is full\)/,
    );
    const sums: Record<string, number> = {};
    for (const pkg of packages) {
      for (const item of pkg.metrics) sums[item.name] = (sums[item.name] ?? 0) + item.value;
    }
    assert.deepEqual(sums, {
      "agent.task_run.started": 1,
      "agent.model_call.count": 20,
    });
    await Deno.remove(dir, { recursive: true });
  },
});

Deno.test("a packaging failure that recurs at every run is said once per store, again after it worked", async () => {
  const home = await collectingHome();
  const clock = new TestClock("2026-11-20T10:00:00.000Z");
  const metrics = openUsageMetrics(loadConfig({ home, env: () => undefined }), {
    now: clock.now,
    flushDelayMs: 0,
    onWarning: () => {},
  });
  const said: string[] = [];
  // A session's flusher and its gateway's, on the same metrics.
  const flushers = [0, 1].map(() =>
    new MetricsFlusher(metrics, (what, error) => said.push(`${what}: ${error}`))
  );
  const outbox = `${home}/telemetry/shared_metrics/outbox`;
  metrics.recorder.record(started);
  Deno.writeTextFileSync(outbox, "not a folder");
  clock.set("2026-11-21T10:00:00.000Z");
  for (let run = 0; run < 5; run++) for (const flusher of flushers) flusher.flush();
  assert.equal(said.length, 1, said.join("\n"));
  assert.match(said[0], /^packaging usage metrics failed: .*outbox .* is a file/);
  assert.match(said[0], /not said again until it works/);

  Deno.removeSync(outbox);
  flushers[0].flush();
  assert.equal(listFiles(outbox).length, 1);
  metrics.recorder.record(started);
  Deno.removeSync(outbox, { recursive: true });
  Deno.writeTextFileSync(outbox, "not a folder");
  clock.set("2026-11-22T10:00:00.000Z");
  for (const flusher of flushers) flusher.flush();
  assert.equal(said.length, 2, said.join("\n"));
  metrics.close();
  await Deno.remove(home, { recursive: true });
});

for (
  const [what, block, reason] of [
    ["a folder", (path: string) => Deno.mkdirSync(path, { recursive: true }), /it is a folder/],
    [
      "random bytes",
      (path: string) => {
        Deno.mkdirSync(path.slice(0, path.lastIndexOf("/")), { recursive: true });
        Deno.writeFileSync(path, crypto.getRandomValues(new Uint8Array(8192)));
      },
      /not a database/,
    ],
  ] as const
) {
  Deno.test(`the gateway's metrics on a store that is ${what} at start: said once, used once it is fixed`, async () => {
    const home = await collectingHome();
    const path = `${home}/telemetry/shared_metrics/metrics.sqlite3`;
    block(path);
    const clock = new TestClock("2026-11-20T10:00:00.000Z");
    const warnings: string[] = [];
    const metrics = openUsageMetrics(loadConfig({ home, env: () => undefined }), {
      now: clock.now,
      flushDelayMs: 0,
      onWarning: (message) => warnings.push(message),
      retryOpen: true,
    });
    const said: string[] = [];
    const flusher = new MetricsFlusher(metrics, (w, error) => said.push(`${w}: ${error}`));
    for (let i = 0; i < 3; i++) metrics.recorder.record(started);
    clock.set("2026-11-21T10:00:00.000Z");
    flusher.flush();
    assert.equal(metrics.recorder.flush(), false);
    assert.deepEqual(said, []);
    assert.equal(warnings.length, 1, warnings.join("\n"));
    assert.match(warnings[0], /usage metrics are skipped until the store can be used/);
    assert.match(warnings[0], reason);
    assert.match(warnings[0], /metrics\.sqlite3/);

    // Fixed (`agent metrics reset`, or moved aside): the kept counts go to the new store.
    Deno.removeSync(path, { recursive: true });
    assert.equal(metrics.recorder.flush(), true);
    assert.equal(warnings.length, 2, warnings.join("\n"));
    assert.match(warnings[1], /metrics\.sqlite3 can be used now/);
    flusher.flush();
    const outbox = `${home}/telemetry/shared_metrics/outbox`;
    assert.equal(listFiles(outbox).length, 1);
    metrics.close();
    assert.deepEqual(said, []);
    const [file] = listFiles(outbox);
    const pkg = JSON.parse(Deno.readTextFileSync(`${outbox}/${file}`));
    assert.equal(pkg.metrics[0].value, 3);
    await Deno.remove(home, { recursive: true });
  });
}

/**
 * A home collecting metrics that are sent to a local endpoint which holds every request until
 * `release()`, with a test clock on 2026-11-20.
 */
async function hangingEndpoint() {
  const hang = Promise.withResolvers<void>();
  const seen = { requests: 0 };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async () => {
    seen.requests++;
    await hang.promise;
    return new Response(null, { status: 202 });
  });
  const home = await collectingHome();
  Deno.writeTextFileSync(
    `${home}/config.yaml`,
    "telemetry:\n  shared_metrics:\n    enabled: true\n    send: true\n" +
      `    endpoint: http://127.0.0.1:${server.addr.port}/v2\n`,
  );
  const clock = new TestClock("2026-11-20T10:00:00.000Z");
  const metrics = openUsageMetrics(loadConfig({ home, env: () => undefined }), {
    now: clock.now,
    flushDelayMs: 0,
    onWarning: () => {},
  });
  return {
    seen,
    clock,
    metrics,
    release: () => hang.resolve(),
    async close() {
      hang.resolve();
      metrics.close();
      await server.shutdown();
      await Deno.remove(home, { recursive: true });
    },
  };
}

Deno.test("a slow endpoint: flushes after every run while a send hangs queue one more pass, not one per run", async () => {
  const { seen, clock, metrics, release, close } = await hangingEndpoint();
  let passes = 0;
  const sendDue = metrics.sendDue.bind(metrics);
  metrics.sendDue = (options) => {
    passes++;
    return sendDue(options);
  };
  const flusher = new MetricsFlusher(metrics, () => {});
  metrics.recorder.record(started);
  clock.set("2026-11-21T10:00:00.000Z");
  flusher.flush();
  while (seen.requests === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  for (let run = 0; run < 50; run++) flusher.flush(); // runs end while the send hangs
  release();
  await flusher.settle(5_000);
  assert.equal(passes, 2);
  assert.equal(seen.requests, 1);
  await close();
});

Deno.test("a gateway stop does not wait for a hanging send its session's flusher started", async () => {
  const { seen, clock, metrics, close } = await hangingEndpoint();
  const session = new MetricsFlusher(metrics, () => {});
  const gateway = new MetricsFlusher(metrics, () => {});
  metrics.recorder.record(started);
  clock.set("2026-11-21T10:00:00.000Z");
  session.flush(); // after a run
  while (seen.requests === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  const start = performance.now();
  await gateway.settle(0); // the gateway stops
  // Before, it waited for the request's 10 s timeout, and the retries after it.
  assert(performance.now() - start < 3_000, `waited ${performance.now() - start} ms`);
  await close();
});
