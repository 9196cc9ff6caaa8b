/**
 * `agent metrics reset`: confirmation rules and what is deleted.
 */
import assert from "node:assert/strict";
import {
  cli,
  cliJson,
  enable,
  exists,
  filesIn,
  recordEvents,
  SAMPLE_EVENTS,
  spawnCli,
  status,
  tempHome,
} from "./_helpers.ts";

async function homeWithData() {
  const h = await tempHome();
  await enable(h.home);
  recordEvents(h.home, SAMPLE_EVENTS);
  const exported = await cli(h.home, ["metrics", "export"]);
  assert.equal(exported.code, 0, exported.stderr);
  assert.equal(filesIn(h.outbox).length, 1);
  return h;
}

Deno.test("reset without --yes when stdin is not a terminal is exit 2; nothing deleted", async () => {
  await using h = await homeWithData();
  const result = await cli(h.home, ["metrics", "reset"], { stdinIsTerminal: false });
  assert.equal(result.code, 2);
  assert.match(result.stderr, /pass --yes/);
  assert.deepEqual(result.fake.questions, [], "no prompt without a terminal");
  assert.ok(exists(h.metrics));
  assert.equal(filesIn(h.outbox).length, 1);
  assert.equal((await status(h.home)).store_exists, true);
});

Deno.test("reset --yes deletes telemetry/shared_metrics and nothing else", async () => {
  await using h = await homeWithData();
  const installId = (await status(h.home)).install_id;
  const result = await cli(h.home, ["metrics", "reset", "--yes"]);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, new RegExp(`^Deleted ${h.metrics}\\.`, "m"));
  assert.ok(!exists(h.metrics));
  assert.ok(exists(h.config), "config.yaml is kept");
  assert.deepEqual(filesIn(h.home).sort(), ["config.yaml", "telemetry"]);

  const after = await status(h.home);
  assert.equal(after.store_exists, false);
  assert.equal(after.enabled, true, "consent is config, not data: it stays");

  // Recording again creates a new store with a new install id.
  recordEvents(h.home, [{ kind: "client_active" }]);
  const fresh = await status(h.home);
  assert.notEqual(fresh.install_id, installId);
  assert.equal(fresh.pending_events, 1, "the client.active latch was reset too");
});

Deno.test("reset says whether collection is still on: a new store follows, or only after enable", async () => {
  await using h = await homeWithData();
  const on = await cli(h.home, ["metrics", "reset", "--yes"]);
  assert.equal(on.code, 0, on.stderr);
  assert.equal(
    on.stdout,
    `Deleted ${h.metrics}. Collection is still on (telemetry.shared_metrics.enabled: true in ` +
      `${h.config}): the next agent run starts a new store with a new install id; run ` +
      "`agent metrics disable` to stop collecting.\n",
  );

  recordEvents(h.home, SAMPLE_EVENTS);
  assert.equal((await cli(h.home, ["metrics", "disable"])).code, 0);
  const off = await cli(h.home, ["metrics", "reset", "--yes"]);
  assert.equal(off.code, 0, off.stderr);
  assert.equal(
    off.stdout,
    `Deleted ${h.metrics}. A new install id is created if collection is enabled again.\n`,
  );
});

Deno.test("reset -y --json reports what it deleted", async () => {
  await using h = await homeWithData();
  const doc = await cliJson(h.home, ["metrics", "reset", "-y", "--json"]);
  assert.deepEqual(doc, { deleted: true, path: h.metrics, warnings: [] });
  assert.ok(!exists(h.metrics));
});

Deno.test("interactive reset: answering no is exit 1 and deletes nothing", async () => {
  await using h = await homeWithData();
  const result = await cli(h.home, ["metrics", "reset"], {
    stdinIsTerminal: true,
    confirms: [false],
  });
  assert.equal(result.code, 1);
  assert.equal(result.fake.questions.length, 1);
  assert.ok(result.fake.questions[0].includes(h.metrics), "the question names the folder");
  assert.match(result.stderr, /cancelled; nothing was deleted/);
  assert.ok(exists(h.metrics));
  assert.equal(filesIn(h.outbox).length, 1);
});

Deno.test("interactive reset: answering yes deletes the store", async () => {
  await using h = await homeWithData();
  const result = await cli(h.home, ["metrics", "reset"], {
    stdinIsTerminal: true,
    confirms: [true],
  });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.fake.questions.length, 1);
  assert.ok(!exists(h.metrics));
});

Deno.test("interactive reset --yes does not ask", async () => {
  await using h = await homeWithData();
  const result = await cli(h.home, ["metrics", "reset", "--yes"], { stdinIsTerminal: true });
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(result.fake.questions, []);
  assert.ok(!exists(h.metrics));
});

Deno.test("reset when nothing exists is exit 0 'Nothing to delete' and asks nothing", async () => {
  await using h = await tempHome();
  const result = await cli(h.home, ["metrics", "reset"], { stdinIsTerminal: true });
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /^Nothing to delete: .* does not exist\.$/m);
  assert.ok(result.stdout.includes(h.metrics));
  assert.deepEqual(result.fake.questions, []);
  const doc = await cliJson(h.home, ["metrics", "reset", "--json"]);
  assert.deepEqual(doc, { deleted: false, path: h.metrics, warnings: [] });
  assert.deepEqual(filesIn(h.home), []);
});

Deno.test("e2e: reset without --yes and a closed stdin refuses; --yes deletes", async () => {
  await using h = await homeWithData();
  const refused = await spawnCli(h.home, ["metrics", "reset"]);
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /pass --yes/);
  assert.ok(exists(h.metrics));

  const done = await spawnCli(h.home, ["metrics", "reset", "--yes"]);
  assert.equal(done.code, 0, done.stderr);
  assert.ok(!exists(h.metrics));
});
