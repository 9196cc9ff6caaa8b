/**
 * QA round 2 on the metrics commands: a locked or damaged store is one line naming the file (no
 * stack trace), an agent run never stops for a locked store, one sender at a time, only 400, 413
 * and 422 are permanent, `validate` refuses stdin twice, devices and huge files and prints no
 * control characters, `--out` is checked before anything is exported, and clearer messages.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { startFakeModel } from "../fixtures/fake_model.ts";
import { loadConfig, openUsageMetrics } from "../../mod.ts";
import {
  cli,
  cliJson,
  enable,
  exportWithSendingOff,
  recordEvents,
  SAMPLE_EVENTS,
  spawnCli,
  startCollector,
  status,
  tempHome,
  validPackage,
} from "./_helpers.ts";

/** Another connection holding the store's write lock (the QA report's `lock.ts`). */
function lock(path: string): Disposable {
  const db = new DatabaseSync(path);
  db.exec("BEGIN EXCLUSIVE; UPDATE meta SET value = value");
  return {
    [Symbol.dispose]() {
      db.exec("COMMIT");
      db.close();
    },
  };
}

/** A one-line CLI error: `agent: …`, no stack frame. */
function assertOneLine(stderr: string, pattern: RegExp): void {
  assert.match(stderr, pattern);
  assert.doesNotMatch(stderr, /^\s+at /m, `a stack trace:\n${stderr}`);
  assert.equal(stderr.trim().split("\n").length, 1, stderr);
}

// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]|\r/;

/** A fake model answering "the answer", and `config` pointing at it with metrics enabled. */
async function modelWithMetrics(config: string) {
  const model = await startFakeModel({ fallback: { content: "the answer" } });
  Deno.writeTextFileSync(
    config,
    `model:\n  default: test-model\n  base_url: ${model.baseUrl}\n` +
      "telemetry:\n  shared_metrics:\n    enabled: true\n",
  );
  return model;
}

Deno.test("agent run with a locked metrics store answers (exit 0) instead of failing", async () => {
  await using h = await tempHome();
  await using _model = await modelWithMetrics(h.config);
  recordEvents(h.home, [{ kind: "task_started", entrypoint: "api", surface: "api" }]);
  using _held = lock(join(h.metrics, "metrics.sqlite3"));
  const run = await cli(h.home, ["run", "hi", "--json"]);
  assert.equal(run.code, 0, run.stdout + run.stderr);
  assert.equal(JSON.parse(run.stdout).answer, "the answer");
});

Deno.test("a locked store: export is one line saying busy, exit 1", async () => {
  await using h = await tempHome();
  await enable(h.home);
  recordEvents(h.home, SAMPLE_EVENTS);
  const db = join(h.metrics, "metrics.sqlite3");
  using _held = lock(db);
  const result = await cli(h.home, ["metrics", "export"]);
  assert.equal(result.code, 1);
  assertOneLine(
    result.stderr,
    new RegExp(
      `^agent: the metrics store ${db} is busy: another agent process holds it; try again`,
    ),
  );
});

Deno.test("a damaged store: status, preview and export are one line naming the file and the fix", async (t) => {
  const cases: [string, string, string[]][] = [
    [
      "dimensions not JSON",
      "UPDATE counters SET dimensions = '{not json' WHERE name = 'agent.client.active'",
      ["preview", "export"],
    ],
    ["a total beyond 2^53", "UPDATE counters SET total = 9007199254740993", [
      "status",
      "preview",
      "export",
    ]],
    ["no install id", "DELETE FROM meta", ["status", "preview", "export"]],
    ["no packages table", "DROP TABLE packages", ["status", "export"]],
  ];
  for (const [name, sql, commands] of cases) {
    await t.step(name, async () => {
      await using h = await tempHome();
      await enable(h.home);
      recordEvents(h.home, SAMPLE_EVENTS);
      const db = join(h.metrics, "metrics.sqlite3");
      const editor = new DatabaseSync(db);
      editor.exec(sql);
      editor.close();
      for (const command of commands) {
        const result = await cli(h.home, ["metrics", command]);
        assert.equal(result.code, 1, `${command}: ${result.stderr}`);
        assertOneLine(
          result.stderr,
          new RegExp(
            `^agent: the metrics store ${db} is damaged \\(.+\\)\\. Fix: run \`agent metrics reset\``,
          ),
        );
      }
    });
  }
});

Deno.test("telemetry/shared_metrics as a file: status and export report it (exit 1)", async () => {
  await using h = await tempHome();
  await enable(h.home);
  Deno.mkdirSync(join(h.home, "telemetry"));
  Deno.writeTextFileSync(h.metrics, "not a folder");
  for (const command of ["status", "export"]) {
    const result = await cli(h.home, ["metrics", command]);
    assert.equal(result.code, 1, `${command}: ${result.stdout}`);
    assertOneLine(result.stderr, /cannot be opened \(.*shared_metrics is a file, not a folder\)/);
  }
});

Deno.test("metrics.sqlite3 as a folder: status, preview and export report it (exit 1), not 'no store'", async () => {
  await using h = await tempHome();
  await enable(h.home);
  const db = join(h.metrics, "metrics.sqlite3");
  Deno.mkdirSync(db, { recursive: true });
  for (const command of ["status", "preview", "export"]) {
    const result = await cli(h.home, ["metrics", command]);
    assert.equal(result.code, 1, `${command}: ${result.stdout}`);
    assertOneLine(
      result.stderr,
      new RegExp(
        `^agent: the metrics store ${db} cannot be opened \\(it is a folder, not a file\\)`,
      ),
    );
  }
  // An agent run goes on without metrics, saying why in the same words.
  const config = loadConfig({ home: h.home, env: () => undefined });
  const warnings: string[] = [];
  openUsageMetrics(config, { onWarning: (message) => warnings.push(message) }).close();
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /metrics\.sqlite3 cannot be opened \(it is a folder, not a file\)/);
});

Deno.test("outbox as a file: export is one line naming it and the fix (exit 1), nothing packaged", async () => {
  await using h = await tempHome();
  await enable(h.home);
  recordEvents(h.home, SAMPLE_EVENTS);
  Deno.writeTextFileSync(h.outbox, "not a folder"); // the store is there, its outbox is not yet
  const result = await cli(h.home, ["metrics", "export"]);
  assert.equal(result.code, 1, result.stdout);
  assertOneLine(
    result.stderr,
    new RegExp(
      `^agent: the metrics store ${join(h.metrics, "metrics.sqlite3")} is damaged \\(its outbox ` +
        `${h.outbox} is a file, not a folder\\)\\. Fix: run \`agent metrics reset\``,
    ),
  );
  assert.equal((await status(h.home)).packages.pending, 0);
});

Deno.test("two `metrics send` at once post each package once; the second says why it skipped", async () => {
  await using h = await tempHome();
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let arrived!: () => void;
  const firstPost = new Promise<void>((resolve) => (arrived = resolve));
  let posts = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    await request.arrayBuffer();
    if (++posts === 1) {
      arrived();
      await held;
    }
    return new Response(null, { status: 202 });
  });
  try {
    await enable(h.home, "--send", "--endpoint", `http://127.0.0.1:${server.addr.port}/v2`);
    recordEvents(h.home, SAMPLE_EVENTS);
    // The first sender (export sends what it built) is held mid-post by the collector …
    // (real clock: the claim's lease is compared with the other process's clock)
    const first = cli(h.home, ["metrics", "export", "--json"], { now: Date.now() });
    await firstPost;
    // … while a second sender runs in another process.
    const second = await spawnCli(h.home, ["metrics", "send", "--json"]);
    assert.equal(second.code, 0, second.stderr);
    assert.deepEqual(JSON.parse(second.stdout), {
      sent: [],
      being_sent_elsewhere: 1,
      warnings: [],
    });
    const text = await spawnCli(h.home, ["metrics", "send"]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^Nothing sent: another agent process is sending 1 package now/);
    release();
    const done = await first;
    assert.equal(done.code, 0, done.stderr);
    assert.equal(JSON.parse(done.stdout).sent[0].status, "sent");
  } finally {
    release();
    await server.shutdown();
  }
  assert.equal(posts, 1, "the package was posted once");
});

Deno.test("404 from a wrong path is retried later, not a permanent rejection", async () => {
  await using h = await tempHome();
  await using collector = startCollector(404);
  await enable(h.home, "--send", "--endpoint", collector.endpoint);
  recordEvents(h.home, SAMPLE_EVENTS);
  const doc = await cliJson(h.home, ["metrics", "export", "--json"], 1);
  assert.equal(doc.sent[0].status, "deferred");
  assert.match(
    doc.sent[0].reason,
    /^HTTP 404 \(after 3 tries\); retried like a server error \(only 400, 413 and 422 are permanent; check telemetry\.shared_metrics\.endpoint if it persists\)$/,
  );
  assert.deepEqual((await status(h.home)).packages, { pending: 1, sent: 0, rejected: 0 });
});

Deno.test("send: `send: true` without an endpoint says the endpoint is missing", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(
    h.config,
    "telemetry:\n  shared_metrics:\n    enabled: true\n    send: true\n",
  );
  const result = await cli(h.home, ["metrics", "send"]);
  assert.equal(result.code, 1);
  assertOneLine(
    result.stderr,
    /^agent: sending is on but telemetry\.shared_metrics\.endpoint is not set in .*config\.yaml.*--endpoint <url>/,
  );
});

Deno.test("validate - - is a usage error (exit 2) and reads nothing", async () => {
  await using h = await tempHome();
  const result = await cli(h.home, ["metrics", "validate", "-", "-"], { stdin: "{}" });
  assert.equal(result.code, 2);
  assertOneLine(result.stderr, /^agent: validate: - \(stdin\) is named more than once/);
  assert.equal(result.fake.stdinReads(), 0);
});

Deno.test("validate prints no control characters from a hostile file; --json keeps the values", async () => {
  await using h = await tempHome();
  const file = join(h.home, "hostile.json");
  const key = "x\u001b[2J\u001b[31mFAKE: valid\rZ\u009b\u007f";
  Deno.writeTextFileSync(file, JSON.stringify({ ...validPackage(), [key]: 1 }));
  const text = await cli(h.home, ["metrics", "validate", file]);
  assert.equal(text.code, 2);
  assert.doesNotMatch(text.stdout + text.stderr, CONTROL);
  assert.ok(
    text.stdout.includes("x\\u001b[2J\\u001b[31mFAKE: valid\\rZ\\u009b\\u007f"),
    text.stdout,
  );
  const doc = await cliJson(h.home, ["metrics", "validate", "--json", file], 2);
  assert.ok(JSON.stringify(doc).includes(JSON.stringify(key).slice(1, -1)));
});

Deno.test("send: an edited outbox file's reason is printed without control characters", async () => {
  await using h = await tempHome();
  await using collector = startCollector(202);
  const [{ path }] = await exportWithSendingOff(h.home);
  const pkg = JSON.parse(Deno.readTextFileSync(path));
  Deno.writeTextFileSync(path, JSON.stringify({ ...pkg, ["\u001b[2Jevil\r"]: 1 }));
  await enable(h.home, "--send", "--endpoint", collector.endpoint);
  const result = await cli(h.home, ["metrics", "send"]);
  assert.equal(result.code, 1);
  assert.match(result.stderr, /\\u001b\[2Jevil\\r/);
  assert.doesNotMatch(result.stdout + result.stderr, CONTROL);
});

Deno.test("validate refuses devices and files over 16 MiB before reading them", async () => {
  await using h = await tempHome();
  const huge = join(h.home, "huge.json");
  using file = Deno.openSync(huge, { write: true, create: true });
  file.truncateSync(17 * 1024 * 1024); // sparse: nothing is written
  const big = await cli(h.home, ["metrics", "validate", huge]);
  assert.equal(big.code, 2);
  assertOneLine(
    big.stderr,
    /huge\.json: is 17825792 bytes, more than the 16 MiB a package file may have/,
  );
  if (Deno.build.os !== "windows") {
    const device = await cli(h.home, ["metrics", "validate", "/dev/zero"]);
    assert.equal(device.code, 2);
    assertOneLine(device.stderr, /\/dev\/zero: is not a regular file/);
  }
});

Deno.test("export --out to a folder that cannot be written: exit 2, nothing exported", async () => {
  if (Deno.build.os !== "linux") return;
  await using h = await tempHome();
  await enable(h.home);
  recordEvents(h.home, SAMPLE_EVENTS);
  // procfs: a folder even root cannot create files in.
  const result = await cli(h.home, ["metrics", "export", "--out", "/proc/self"]);
  assert.equal(result.code, 2, result.stdout + result.stderr);
  assertOneLine(result.stderr, /--out \/proc\/self: cannot write there .*nothing was exported/);
  const again = await cliJson(h.home, ["metrics", "export", "--json"]);
  assert.equal(again.packages.length, 1, "the counts are still there to export");
});

Deno.test("export --out <new folder> leaves no folder behind when nothing is copied", async (t) => {
  await using h = await tempHome();
  await enable(h.home);
  const out = join(h.home, "exports", "nested");
  await t.step("nothing to export", async () => {
    const result = await cli(h.home, ["metrics", "export", "--out", out]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^Nothing to export/);
    assert.equal(exists(join(h.home, "exports")), false, "no empty folder made");
  });
  await t.step("a damaged store", async () => {
    Deno.mkdirSync(h.metrics, { recursive: true });
    Deno.writeTextFileSync(join(h.metrics, "metrics.sqlite3"), "not a database ".repeat(50));
    const result = await cli(h.home, ["metrics", "export", "--out", out]);
    assert.equal(result.code, 1, result.stdout);
    assertOneLine(result.stderr, /metrics\.sqlite3 cannot be opened \(file is not a database\)/);
    assert.equal(exists(join(h.home, "exports")), false, "no empty folder made");
  });
  await t.step("a folder that was there stays", async () => {
    Deno.mkdirSync(out, { recursive: true });
    const result = await cli(h.home, ["metrics", "export", "--out", out]);
    assert.equal(result.code, 1, result.stdout);
    assert.equal(exists(out), true);
  });
});

function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

Deno.test("agent run --json with a damaged metrics store lists the store's warning once in warnings, and once on stderr", async () => {
  await using h = await tempHome();
  await using _model = await modelWithMetrics(h.config);
  Deno.mkdirSync(h.metrics, { recursive: true });
  Deno.writeTextFileSync(join(h.metrics, "metrics.sqlite3"), "this is not a database ".repeat(50));
  const run = await cli(h.home, ["run", "hi", "--json"]);
  assert.equal(run.code, 0, run.stdout + run.stderr);
  const doc = JSON.parse(run.stdout);
  assert.equal(doc.answer, "the answer");
  const skipped = (doc.warnings as string[]).filter((w) => /usage metrics are skipped/.test(w));
  assert.equal(skipped.length, 1, JSON.stringify(doc.warnings));
  // On stderr too, once, as without --json.
  assert.equal(run.stderr.split(`warning: ${skipped[0]}\n`).length - 1, 1, run.stderr);

  const text = await cli(h.home, ["run", "hi"]);
  assert.equal(text.code, 0, text.stderr);
  assert.equal(text.stderr.match(/usage metrics are skipped/g)?.length, 1, text.stderr);
});
