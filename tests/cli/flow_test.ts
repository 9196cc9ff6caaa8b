/**
 * The "Done when" flow: enable, record through the library API, preview, export, status.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  loadConfig,
  type MetricsPackage,
  openUsageMetrics,
  validateMetricsPackage,
} from "../../mod.ts";
import {
  cli,
  cliJson,
  countersOf,
  DAY,
  enable,
  filesIn,
  MOD_URL,
  NOW,
  parseOneJson,
  recordEvents,
  REPO,
  SAMPLE_COUNTERS,
  SAMPLE_EVENTS,
  spawnCli,
  spawnDeno,
  status,
  tempHome,
} from "./_helpers.ts";

Deno.test("preview --json shows exactly the recorded counters, summed, and writes nothing", async () => {
  await using h = await tempHome();
  await enable(h.home);
  recordEvents(h.home, SAMPLE_EVENTS);

  const before = await status(h.home);
  assert.equal(before.store_exists, true);
  assert.match(before.install_id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-/);
  assert.equal(before.pending_counters, Object.keys(SAMPLE_COUNTERS).length);
  assert.equal(
    before.pending_events,
    Object.values(SAMPLE_COUNTERS).reduce((a, b) => a + b, 0),
  );

  const doc = await cliJson(h.home, ["metrics", "preview", "--json"]);
  assert.deepEqual(Object.keys(doc), ["packages", "warnings"]);
  const packages = doc.packages as MetricsPackage[];
  assert.equal(packages.length, 1);
  const [pkg] = packages;
  assert.deepEqual(countersOf(packages), SAMPLE_COUNTERS);
  assert.equal(pkg.schema_version, "agent.shared_metrics.v2");
  assert.equal(pkg.install_id, before.install_id);
  assert.equal(pkg.period_start, `${DAY}T00:00:00Z`);
  assert.equal(pkg.period_end, "2026-03-11T00:00:00Z");
  assert.equal(pkg.generated_at, new Date(NOW).toISOString());
  assert.deepEqual(validateMetricsPackage(pkg), { valid: true });
  // Rows are sorted by name (then dimensions).
  const names = pkg.metrics.map((item) => item.name);
  assert.deepEqual(names, [...names].sort());

  // Nothing written: no outbox files, and the pending counts are unchanged.
  assert.deepEqual(filesIn(h.outbox), []);
  const after = await status(h.home);
  assert.equal(after.pending_counters, before.pending_counters);
  assert.equal(after.pending_events, before.pending_events);
  assert.deepEqual(after.packages, { pending: 0, sent: 0, rejected: 0 });

  // A second preview shows the same counters (with a fresh package id each time is fine).
  const again = await cliJson(h.home, ["metrics", "preview", "--json"]);
  assert.deepEqual(countersOf(again.packages), SAMPLE_COUNTERS);
});

Deno.test("preview (human) lists every counter name with its value", async () => {
  await using h = await tempHome();
  await enable(h.home);
  recordEvents(h.home, SAMPLE_EVENTS);
  const result = await cli(h.home, ["metrics", "preview"]);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, new RegExp(`^Package for ${DAY} \\(.*\\): 7 counters$`, "m"));
  for (
    const name of [
      "agent.client.active",
      "agent.task_run.started",
      "agent.model_call.count",
      "agent.model_route.count",
      "agent.tool_call.count",
      "agent.skill.lifecycle.count",
    ]
  ) {
    assert.match(result.stdout, new RegExp(`^  ${name.replaceAll(".", "\\.")}\\b`, "m"));
  }
  assert.match(
    result.stdout,
    /^ {2}agent\.model_call\.count \{.*model_family=gpt.*\} 3$/m,
  );
  assert.match(
    result.stdout,
    /^ {2}agent\.task_run\.started \{entrypoint=interactive, execution_surface=cli\} 2$/m,
  );
  assert.match(result.stdout, /^ {2}agent\.client\.active 1$/m);
  assert.deepEqual(filesIn(h.outbox), []);
});

Deno.test("preview with consent but nothing recorded says so", async () => {
  await using h = await tempHome();
  await enable(h.home);
  const result = await cli(h.home, ["metrics", "preview"]);
  assert.equal(result.code, 0);
  assert.match(result.stdout, /Nothing recorded/);
  const doc = await cliJson(h.home, ["metrics", "preview", "--json"]);
  assert.deepEqual(doc, { packages: [], warnings: [] });
});

Deno.test("recording sums across separate library sessions", async () => {
  await using h = await tempHome();
  await enable(h.home);
  recordEvents(h.home, SAMPLE_EVENTS);
  recordEvents(h.home, SAMPLE_EVENTS, NOW + 60_000);
  const doc = await cliJson(h.home, ["metrics", "preview", "--json"]);
  const expected = Object.fromEntries(
    Object.entries(SAMPLE_COUNTERS).map(([key, value]) => [
      key,
      key.startsWith("agent.client.active") ? 1 : value * 2,
    ]),
  );
  assert.deepEqual(countersOf(doc.packages), expected);
});

Deno.test("export --json writes valid outbox files; status shows 0 pending; re-export is empty", async () => {
  await using h = await tempHome();
  await enable(h.home);
  recordEvents(h.home, SAMPLE_EVENTS);

  const doc = await cliJson(h.home, ["metrics", "export", "--json"]);
  assert.deepEqual(Object.keys(doc).sort(), ["packages", "sent", "warnings"]);
  assert.deepEqual(doc.sent, [], "sending is off: nothing is sent");
  assert.equal(doc.packages.length, 1);
  const [entry] = doc.packages;
  assert.equal(entry.day, DAY);
  assert.equal(entry.metrics, Object.keys(SAMPLE_COUNTERS).length);
  assert.equal(entry.path, join(h.outbox, `${entry.package_id}.json`));
  assert.equal(entry.copy, undefined);

  assert.deepEqual(filesIn(h.outbox), [`${entry.package_id}.json`]);
  const written = JSON.parse(Deno.readTextFileSync(entry.path));
  assert.deepEqual(validateMetricsPackage(written), { valid: true });
  assert.equal(written.package_id, entry.package_id);
  assert.deepEqual(countersOf([written]), SAMPLE_COUNTERS);
  const mode = Deno.statSync(entry.path).mode;
  if (mode !== null) assert.equal(mode & 0o077, 0, "outbox files are 0600");

  const after = await status(h.home);
  assert.equal(after.pending_counters, 0);
  assert.equal(after.pending_events, 0);
  assert.deepEqual(after.packages, { pending: 1, sent: 0, rejected: 0 });
  const human = await cli(h.home, ["metrics", "status"]);
  assert.match(human.stdout, /^Pending: +0 events in 0 counters$/m);
  assert.match(human.stdout, /^Exported: +1 package \(0 sent, 1 unsent, 0 rejected\)$/m);

  const second = await cliJson(h.home, ["metrics", "export", "--json"]);
  assert.deepEqual(second, { packages: [], sent: [], warnings: [] });
  assert.deepEqual(filesIn(h.outbox), [`${entry.package_id}.json`]);
  const text = await cli(h.home, ["metrics", "export"]);
  assert.equal(text.code, 0);
  assert.match(text.stdout, /Nothing to export/);

  // Preview after export shows nothing new.
  assert.deepEqual(await cliJson(h.home, ["metrics", "preview", "--json"]), {
    packages: [],
    warnings: [],
  });

  // New events after the export make a new delta package with only the new counts.
  recordEvents(h.home, [{ kind: "task_started", entrypoint: "api", surface: "api" }]);
  const third = await cliJson(h.home, ["metrics", "export", "--json"]);
  assert.equal(third.packages.length, 1);
  const delta = JSON.parse(Deno.readTextFileSync(third.packages[0].path));
  assert.deepEqual(countersOf([delta]), {
    'agent.task_run.started|{"entrypoint":"api","execution_surface":"api"}': 1,
  });
  assert.equal((await status(h.home)).packages.pending, 2);
});

Deno.test("export (human) names the package, day, counters and path", async () => {
  await using h = await tempHome();
  await enable(h.home);
  recordEvents(h.home, SAMPLE_EVENTS);
  const result = await cli(h.home, ["metrics", "export"]);
  assert.equal(result.code, 0, result.stderr);
  const [file] = filesIn(h.outbox);
  const id = file.replace(/\.json$/, "");
  assert.equal(
    result.stdout,
    `Exported ${id} (${DAY}, 7 counters) to ${join(h.outbox, file)}\n`,
  );
});

Deno.test("status, preview and export say '1 event', '1 counter' for one of each, and the plural for more", async () => {
  await using h = await tempHome();
  await enable(h.home);
  recordEvents(h.home, [{ kind: "task_started", entrypoint: "api", surface: "api" }]);
  const one = await cli(h.home, ["metrics", "status"]);
  assert.match(one.stdout, /^Pending: +1 event in 1 counter$/m);
  recordEvents(h.home, [{ kind: "task_started", entrypoint: "api", surface: "api" }]);
  const two = await cli(h.home, ["metrics", "status"]);
  assert.match(two.stdout, /^Pending: +2 events in 1 counter$/m);
  const preview = await cli(h.home, ["metrics", "preview"]);
  assert.match(preview.stdout, new RegExp(`^Package for ${DAY} \\(.*\\): 1 counter$`, "m"));
  const exported = await cli(h.home, ["metrics", "export"]);
  assert.equal(exported.code, 0, exported.stderr);
  const [file] = filesIn(h.outbox);
  assert.equal(
    exported.stdout,
    `Exported ${file.replace(/\.json$/, "")} (${DAY}, 1 counter) to ${join(h.outbox, file)}\n`,
  );
});

Deno.test("export --out <dir> copies the new packages there", async () => {
  await using h = await tempHome();
  await enable(h.home);
  recordEvents(h.home, SAMPLE_EVENTS);
  // Events of an earlier day make a second package.
  recordEvents(
    h.home,
    [{ kind: "skill_lifecycle", action: "installed", provenance: "installed" }],
    NOW - 86_400_000,
  );
  const out = join(h.home, "exports", "nested");

  const doc = await cliJson(h.home, ["metrics", "export", "--out", out, "--json"]);
  assert.equal(doc.packages.length, 2);
  assert.deepEqual(doc.packages.map((p: { day: string }) => p.day).sort(), ["2026-03-09", DAY]);
  const ids = doc.packages.map((p: { package_id: string }) => `${p.package_id}.json`).sort();
  assert.deepEqual(filesIn(out), ids);
  assert.deepEqual(filesIn(h.outbox), ids);
  for (const entry of doc.packages) {
    assert.equal(entry.copy, join(out, `${entry.package_id}.json`));
    const copy = Deno.readTextFileSync(entry.copy);
    assert.equal(copy, Deno.readTextFileSync(entry.path), "the copy is byte-identical");
    assert.deepEqual(validateMetricsPackage(JSON.parse(copy)), { valid: true });
  }

  // A second export copies nothing new.
  const again = await cliJson(h.home, ["metrics", "export", "--out", out, "--json"]);
  assert.deepEqual(again.packages, []);
  assert.deepEqual(filesIn(out), ids);
});

Deno.test({
  name: "export --out <an existing file> is refused before anything is exported",
  fn: async () => {
    await using h = await tempHome();
    await enable(h.home);
    recordEvents(h.home, SAMPLE_EVENTS);
    const notAFolder = join(h.home, "a-file");
    Deno.writeTextFileSync(notAFolder, "");
    const before = await status(h.home);
    const result = await cli(h.home, ["metrics", "export", "--out", notAFolder]);
    assert.equal(result.code, 2, result.stderr);
    assert.ok(result.stderr.includes(notAFolder), result.stderr);
    assert.doesNotMatch(result.stderr, /^\s+at /m, "no stack trace");
    const after = await status(h.home);
    assert.equal(after.pending_counters, before.pending_counters, "nothing was exported");
    assert.deepEqual(filesIn(h.outbox), []);
  },
});

Deno.test("export of data collected before disable still works; collection stops", async () => {
  await using h = await tempHome();
  await enable(h.home);
  recordEvents(h.home, SAMPLE_EVENTS);
  await cli(h.home, ["metrics", "disable"]);
  // A disabled library session records nothing.
  const metrics = openUsageMetrics(loadConfig({ home: h.home, env: () => undefined }), {
    now: () => NOW,
  });
  assert.equal(metrics.enabled, false);
  metrics.recorder.record({ kind: "task_started", entrypoint: "api", surface: "api" });
  metrics.close();

  const doc = await cliJson(h.home, ["metrics", "export", "--json"]);
  assert.equal(doc.packages.length, 1);
  assert.deepEqual(
    countersOf([JSON.parse(Deno.readTextFileSync(doc.packages[0].path))]),
    SAMPLE_COUNTERS,
  );
});

Deno.test("e2e: a separate program records through mod.ts, the real CLI previews and exports", async () => {
  await using h = await tempHome();
  const enabled = await spawnCli(h.home, ["metrics", "enable"]);
  assert.equal(enabled.code, 0, enabled.stderr);

  const script = join(h.home, "record.ts");
  Deno.writeTextFileSync(
    script,
    `import { loadConfig, openUsageMetrics } from ${JSON.stringify(MOD_URL)};
const metrics = openUsageMetrics(loadConfig(), { now: () => ${NOW} });
if (!metrics.enabled) throw new Error("not enabled");
const events = JSON.parse(Deno.args[0]);
for (const event of events) metrics.recorder.record(event);
metrics.close();
console.log("recorded", events.length);
`,
  );
  const recorded = await spawnDeno(
    ["run", "-A", "--config", join(REPO, "deno.json"), script, JSON.stringify(SAMPLE_EVENTS)],
    h.home,
  );
  assert.equal(recorded.code, 0, recorded.stderr);
  assert.equal(recorded.stdout.trim(), `recorded ${SAMPLE_EVENTS.length}`);

  const preview = await spawnCli(h.home, ["metrics", "preview", "--json"]);
  assert.equal(preview.code, 0, preview.stderr);
  const doc = parseOneJson(preview.stdout) as { packages: MetricsPackage[] };
  assert.equal(doc.packages.length, 1);
  assert.deepEqual(countersOf(doc.packages), SAMPLE_COUNTERS);
  assert.deepEqual(validateMetricsPackage(doc.packages[0]), { valid: true });
  assert.deepEqual(filesIn(h.outbox), [], "preview writes nothing");

  const exported = await spawnCli(h.home, ["metrics", "export", "--json"]);
  assert.equal(exported.code, 0, exported.stderr);
  const [entry] = (parseOneJson(exported.stdout) as { packages: { path: string }[] }).packages;
  const file = JSON.parse(Deno.readTextFileSync(entry.path));
  assert.deepEqual(validateMetricsPackage(file), { valid: true });
  assert.deepEqual(countersOf([file]), SAMPLE_COUNTERS);

  const after = await spawnCli(h.home, ["metrics", "status", "--json"]);
  const summary = parseOneJson(after.stdout) as { pending_counters: number; packages: unknown };
  assert.equal(summary.pending_counters, 0);
  assert.deepEqual(summary.packages, { pending: 1, sent: 0, rejected: 0 });
});
