/**
 * Reported metrics bugs, through the CLI: invalid stored counts are never written or sent, outbox
 * files are validated before sending, the install id is described truthfully, a damaged store is
 * a clear error, a bad configured endpoint is a config error, and `validate` reports every file.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { MetricsStore } from "../../src/metrics/store.ts";
import {
  cli,
  cliJson,
  DAY,
  enable,
  exportWithSendingOff,
  filesIn,
  recordEvents,
  REPO,
  SAMPLE_EVENTS,
  startCollector,
  status,
  tempHome,
  validPackage,
} from "./_helpers.ts";

/** Adds a counter row the v2 schema rejects, as a hand-edited or foreign store would hold. */
function addBadCounter(metricsDir: string, name: string, dimensions: string): void {
  using store = MetricsStore.open(join(metricsDir, "metrics.sqlite3"));
  const resource = store.pendingDeltas({})[0].resource;
  store.addCounters([{ day: DAY, name, resource, dimensions, count: 1 }]);
}

const NO_STACK = /^\s+at /m;

for (
  const [label, name, dimensions] of [
    ["an unknown metric name", "agent.bogus.count", "{}"],
    [
      "a model route the schema refuses",
      "agent.model_route.count",
      '{"model":"SECRET-CANARY-Model/with path","provider":"openai"}',
    ],
  ]
) {
  Deno.test(`export with ${label} in the store writes, marks and sends nothing`, async () => {
    await using h = await tempHome();
    await using collector = startCollector(202);
    await enable(h.home, "--send", "--endpoint", collector.endpoint);
    recordEvents(h.home, SAMPLE_EVENTS);
    addBadCounter(h.metrics, name, dimensions);
    const before = await status(h.home);

    const result = await cli(h.home, ["metrics", "export"]);
    assert.equal(result.code, 1, result.stdout + result.stderr);
    assert.ok(result.stderr.includes(join(h.metrics, "metrics.sqlite3")), result.stderr);
    assert.match(result.stderr, /agent metrics reset/);
    assert.doesNotMatch(result.stderr, /internal error/);
    assert.doesNotMatch(result.stderr, NO_STACK);
    assert.deepEqual(filesIn(h.outbox).filter((f) => f.endsWith(".json")), []);
    const after = await status(h.home);
    assert.equal(after.pending_events, before.pending_events, "nothing marked packaged");
    assert.deepEqual(after.packages, { pending: 0, sent: 0, rejected: 0 });

    const send = await cli(h.home, ["metrics", "send"]);
    assert.equal(send.code, 0, send.stderr);
    assert.equal(collector.received.length, 0, "nothing is sent");

    const preview = await cli(h.home, ["metrics", "preview"]);
    assert.equal(preview.code, 1);
    assert.match(preview.stderr, /agent metrics reset/);
  });
}

for (
  const [label, content] of [["a foreign document", '{"prompt":"my private prompt text"}\n'], [
    "broken JSON",
    "{broken",
  ]]
) {
  Deno.test(`send refuses an outbox file holding ${label}, moves it aside, once`, async () => {
    await using h = await tempHome();
    await using collector = startCollector(202);
    const [first, second] = await exportWithSendingOff(h.home, 2);
    const tampered = first.path;
    const good = second.path;
    Deno.writeTextFileSync(tampered, content);
    await enable(h.home, "--send", "--endpoint", collector.endpoint);

    const result = await cli(h.home, ["metrics", "send"]);
    assert.equal(result.code, 1, result.stdout + result.stderr);
    assert.deepEqual(collector.received.map((r) => r.body), [Deno.readTextFileSync(good)]);
    assert.ok(result.stderr.includes(tampered), result.stderr);
    assert.match(result.stderr, /does not validate against agent\.shared_metrics\.v2 \(.+\)/);
    assert.match(result.stderr, /delete it/);
    const rejected = join(h.outbox, "rejected", `${first.package_id}.json`);
    assert.ok(result.stderr.includes(rejected), result.stderr);
    assert.equal(Deno.readTextFileSync(rejected), content, "kept for the user to look at");
    assert.deepEqual((await status(h.home)).packages, { pending: 0, sent: 1, rejected: 1 });

    const again = await cli(h.home, ["metrics", "send"]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stdout, "Nothing due to send.\n");
    assert.equal(collector.received.length, 1, "the invalid file stays out of later sends");
  });
}

Deno.test("status and README describe the install id as what it is: part of every package", async () => {
  await using h = await tempHome();
  await enable(h.home);
  recordEvents(h.home, SAMPLE_EVENTS);
  const text = await cli(h.home, ["metrics", "status"]);
  assert.doesNotMatch(text.stdout, /never sent/);
  const installId = (await status(h.home)).install_id;
  assert.match(text.stdout, new RegExp(`Install id: +${installId} \\(.*in every package\\)`));
  const exported = await cliJson(h.home, ["metrics", "export", "--json"]);
  const pkg = JSON.parse(Deno.readTextFileSync(exported.packages[0].path));
  assert.equal(pkg.install_id, installId);
  const readme = Deno.readTextFileSync(join(REPO, "README.md"));
  assert.doesNotMatch(readme, /install id[^\n]*\n?[^\n]*never sent/i);
});

Deno.test("a damaged metrics store is exit 1 naming the file and the fix, no stack", async () => {
  await using h = await tempHome();
  await enable(h.home);
  Deno.mkdirSync(h.metrics, { recursive: true });
  const db = join(h.metrics, "metrics.sqlite3");
  Deno.writeTextFileSync(db, "not sqlite");
  for (const command of ["status", "preview", "export"]) {
    const result = await cli(h.home, ["metrics", command]);
    assert.equal(result.code, 1, `${command}: ${result.stderr}`);
    assert.ok(result.stderr.includes(db), result.stderr);
    assert.match(result.stderr, /agent metrics reset/);
    assert.doesNotMatch(result.stderr, NO_STACK);
  }
  const reset = await cli(h.home, ["metrics", "reset", "--yes"]);
  assert.equal(reset.code, 0, reset.stderr);
});

Deno.test("a configured endpoint that enable would refuse is a config error (exit 2)", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(
    h.config,
    "telemetry:\n  shared_metrics:\n    enabled: true\n    send: true\n" +
      "    endpoint: http://metrics.example.org/v2\n",
  );
  for (const command of ["status", "preview", "export", "send"]) {
    const result = await cli(h.home, ["metrics", command]);
    assert.equal(result.code, 2, `${command}: ${result.stderr}`);
    assert.ok(
      result.stderr.includes(`${h.config}:5 (key telemetry.shared_metrics.endpoint)`),
      result.stderr,
    );
    assert.match(result.stderr, /Fix: /);
    assert.doesNotMatch(result.stderr, NO_STACK);
  }
  const doc = await cliJson(h.home, ["metrics", "status", "--json"], 2);
  assert.equal(doc.error.key, "telemetry.shared_metrics.endpoint");
  assert.equal(doc.error.line, 5);
  // A new endpoint given on the command line replaces the bad one.
  await enable(h.home, "--endpoint", "https://metrics.example.org/v2");
  assert.equal((await status(h.home)).endpoint, "https://metrics.example.org/v2");
});

Deno.test("validate reports every file, missing ones as errors, in one JSON shape", async () => {
  await using h = await tempHome();
  const good = join(h.home, "good.json");
  Deno.writeTextFileSync(good, JSON.stringify(validPackage()));
  const missing = join(h.home, "missing.json");

  const text = await cli(h.home, ["metrics", "validate", good, missing]);
  assert.equal(text.code, 2);
  assert.equal(text.stdout, `${good}: valid agent.shared_metrics.v2 package\n`);
  assert.match(text.stderr, new RegExp(`${missing}: no such file`));

  const one = await cliJson(h.home, ["metrics", "validate", "--json", good]);
  const two = await cliJson(h.home, ["metrics", "validate", "--json", good, missing], 2);
  assert.deepEqual(one, {
    valid: true,
    results: [{ file: good, valid: true, errors: [] }],
    warnings: [],
  });
  assert.deepEqual(Object.keys(two), ["valid", "results", "warnings"]);
  assert.equal(two.valid, false);
  assert.deepEqual(two.results[0], one.results[0]);
  assert.deepEqual(two.results[1], {
    file: missing,
    valid: false,
    errors: [{ pointer: "", rule: "file", message: two.results[1].errors[0].message, value: null }],
  });
  assert.match(two.results[1].errors[0].message, /no such file/);
});

Deno.test("enable and disable on a telemetry section that is not a mapping: null becomes one, a scalar or list is replaced and said so, an alias is exit 2 naming the key (no stack)", async () => {
  await using h = await tempHome();
  // A section whose keys are all commented out reads as null: it is filled in, comments kept.
  Deno.writeTextFileSync(h.config, "telemetry:\n  # shared_metrics: {enabled: false}\n");
  await enable(h.home);
  assert.equal((await status(h.home)).enabled, true);
  assert.match(Deno.readTextFileSync(h.config), /# shared_metrics: \{enabled: false\}/);
  for (
    const [yaml, key, line, was] of [
      ['telemetry: "x"\n', "telemetry", 1, '"x"'],
      ["telemetry:\n  shared_metrics: [1]\n", "telemetry.shared_metrics", 2, "the list [1]"],
    ] as const
  ) {
    for (const [command, value] of [["enable", true], ["disable", false]] as const) {
      Deno.writeTextFileSync(h.config, yaml);
      const result = await cli(h.home, ["metrics", command]);
      assert.equal(result.code, 0, `${command} on ${yaml}: ${result.stderr}`);
      assert.ok(
        result.stdout.startsWith(
          `Replaced the invalid value of ${key} (${h.config}:${line}): it was ${was}, not a ` +
            "mapping of settings.\n",
        ),
        result.stdout,
      );
      assert.equal(
        Deno.readTextFileSync(h.config),
        `telemetry:\n  shared_metrics:\n    enabled: ${value}\n`,
      );
    }
  }
  const alias = "base: &b {enabled: true}\ntelemetry:\n  shared_metrics: *b\n";
  Deno.writeTextFileSync(h.config, alias);
  for (const command of ["enable", "disable"]) {
    const result = await cli(h.home, ["metrics", command]);
    assert.equal(result.code, 2, `${command} on ${alias}: ${result.stderr}`);
    assert.ok(
      result.stderr.includes(`${h.config}:3 (key telemetry.shared_metrics): `),
      result.stderr,
    );
    assert.ok(result.stderr.includes("it is an alias (*b)"), result.stderr);
    assert.match(result.stderr, /Fix: write .* as a mapping/);
    assert.doesNotMatch(result.stderr, NO_STACK);
    assert.equal(Deno.readTextFileSync(h.config), alias, "nothing written");
  }
});

Deno.test("a consent section written as a scalar or list is exit 2 naming it; AGENT_SHARED_METRICS does not turn collection on behind it", async () => {
  await using h = await tempHome();
  const env = { AGENT_SHARED_METRICS: "true" };
  for (
    const [yaml, key, got] of [
      ["telemetry:\n  shared_metrics: false\n", "telemetry.shared_metrics", "got boolean false"],
      ["telemetry: false\n", "telemetry", "got boolean false"],
      ["telemetry: 5\n", "telemetry", "got number 5"],
      ["telemetry:\n  shared_metrics: [1]\n", "telemetry.shared_metrics", "got a list"],
    ] as const
  ) {
    Deno.writeTextFileSync(h.config, yaml);
    for (const args of [["metrics", "status"], ["metrics", "preview"], ["mcp", "list"]]) {
      const result = await cli(h.home, args, { env });
      assert.equal(result.code, 2, `${args.join(" ")} on ${yaml}: ${result.stderr}`);
      assert.ok(result.stderr.includes(`${h.config}:`), result.stderr);
      assert.ok(result.stderr.includes(`(key ${key}): expected a mapping`), result.stderr);
      assert.ok(result.stderr.includes(got), result.stderr);
      assert.doesNotMatch(result.stderr, NO_STACK);
    }
    assert.deepEqual(filesIn(join(h.home, "telemetry")), [], "nothing collected");
  }
});
