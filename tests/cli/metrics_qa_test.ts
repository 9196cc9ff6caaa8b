/**
 * QA findings on the metrics commands: snake_case send outcomes in `--json`, exit 1 when a
 * package was not sent, every `validate` error with all four keys, consent reasons printed without
 * nested brackets, and a deleted outbox file reported instead of dropped in silence.
 */
import assert from "node:assert/strict";
import {
  cli,
  cliJson,
  enable,
  exportWithSendingOff,
  NOW,
  recordEvents,
  SAMPLE_EVENTS,
  startCollector,
  status,
  tempHome,
} from "./_helpers.ts";

/** Every object key in `value`, at any depth. */
function keysOf(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(keysOf);
  if (typeof value !== "object" || value === null) return [];
  return Object.entries(value).flatMap(([key, inner]) => [key, ...keysOf(inner)]);
}

const SNAKE_CASE = /^[a-z][a-z0-9_]*$/;

Deno.test("export --json and send --json print snake_case send outcomes", async () => {
  await using h = await tempHome();
  await using collector = startCollector(202);
  await enable(h.home, "--send", "--endpoint", collector.endpoint);
  recordEvents(h.home, SAMPLE_EVENTS);
  const exported = await cliJson(h.home, ["metrics", "export", "--json"]);
  const id = exported.packages[0].package_id;
  assert.deepEqual(exported.sent, [{ package_id: id, status: "sent", http_status: 202 }]);
  for (const key of keysOf(exported)) assert.match(key, SNAKE_CASE);

  // Packages exported while sending was off go out with `metrics send`.
  await using other = await tempHome();
  const [second] = await exportWithSendingOff(other.home);
  await enable(other.home, "--send", "--endpoint", collector.endpoint);
  const sent = await cliJson(other.home, ["metrics", "send", "--json"]);
  assert.deepEqual(sent, {
    sent: [{ package_id: second.package_id, status: "sent", http_status: 202 }],
    warnings: [],
  });
});

Deno.test("send exits 1 when the endpoint defers a package (429), and says when it is retried", async () => {
  await using h = await tempHome();
  await using collector = startCollector(429);
  const [{ package_id: id }] = await exportWithSendingOff(h.home);
  await enable(h.home, "--send", "--endpoint", collector.endpoint);

  const doc = await cliJson(h.home, ["metrics", "send", "--json"], 1);
  assert.equal(doc.sent.length, 1);
  // No Retry-After header: the sender waits its default minute.
  const { reason, ...rest } = doc.sent[0];
  assert.deepEqual(rest, {
    package_id: id,
    status: "deferred",
    retry_at: new Date(NOW + 60_000).toISOString(),
  });
  assert.match(reason, /HTTP 429/);
  for (const key of keysOf(doc)) assert.match(key, SNAKE_CASE);
  assert.equal((await status(h.home)).packages.pending, 1, "kept for the next send");

  const later = NOW + 61_000;
  const text = await cli(h.home, ["metrics", "send"], { now: later });
  assert.equal(text.code, 1, text.stdout + text.stderr);
  assert.match(text.stdout, new RegExp(`^Deferred ${id} until .+: HTTP 429`, "m"));
  assert.match(
    text.stderr,
    /^agent: 1 of 1 package not sent \(1 deferred: retried after the time shown, by `agent metrics send`/m,
  );
  assert.equal(collector.received.length, 2);

  // Nothing due is not a failure.
  const idle = await cli(h.home, ["metrics", "send"], { now: later });
  assert.equal(idle.code, 0, idle.stderr);
  assert.match(idle.stdout, /^Nothing due to send: 1 package waits; next attempt at .+: HTTP 429/);
});

Deno.test("export exits 1 when the endpoint rejects the package (400), and still reports it", async () => {
  await using h = await tempHome();
  await using collector = startCollector(400);
  await enable(h.home, "--send", "--endpoint", collector.endpoint);
  recordEvents(h.home, SAMPLE_EVENTS);
  const text = await cli(h.home, ["metrics", "export"]);
  assert.equal(text.code, 1, text.stdout + text.stderr);
  assert.match(text.stdout, /^Exported .+ counters\) to /m);
  assert.match(text.stdout, /^Rejected .+ by the endpoint \(HTTP 400\); it will not be retried$/m);
  assert.match(text.stderr, /^agent: 1 of 1 package not sent \(1 rejected: never sent again/m);

  recordEvents(h.home, [{ kind: "task_started", entrypoint: "api", surface: "api" }]);
  const doc = await cliJson(h.home, ["metrics", "export", "--json"], 1);
  assert.equal(doc.packages.length, 1);
  assert.deepEqual(doc.sent, [{
    package_id: doc.packages[0].package_id,
    status: "rejected",
    http_status: 400,
    reason: "the endpoint refused it (HTTP 400); it is not retried",
  }]);
  assert.deepEqual((await status(h.home)).packages, { pending: 0, sent: 0, rejected: 2 });
});

Deno.test("validate --json gives a broken-JSON error all four keys, value null", async () => {
  await using h = await tempHome();
  const broken = `${h.home}/broken.json`;
  Deno.writeTextFileSync(broken, "{broken");
  const fromFile = await cliJson(h.home, ["metrics", "validate", "--json", broken], 2);
  const fromStdin = await cliJson(h.home, ["metrics", "validate", "--json", "-"], 2, {
    stdin: "{broken",
  });
  for (const [doc, file] of [[fromFile, broken], [fromStdin, "-"]]) {
    assert.equal(doc.results[0].file, file);
    const [error] = doc.results[0].errors;
    assert.deepEqual(Object.keys(error).sort(), ["message", "pointer", "rule", "value"]);
    assert.deepEqual({ ...error, message: "" }, {
      pointer: "",
      rule: "json",
      message: "",
      value: null,
    });
    assert.match(error.message, /^not valid JSON: /);
  }
});

Deno.test("status prints what decided consent in one pair of brackets; JSON unchanged", async () => {
  await using h = await tempHome();
  const statusLine = async (env?: Record<string, string>) => {
    const result = await cli(h.home, ["metrics", "status"], { env });
    assert.equal(result.code, 0, result.stderr);
    return result.stdout.split("\n")[0];
  };
  assert.equal(await statusLine(), "Usage metrics: off (default: off until you opt in)");
  assert.equal((await status(h.home)).decided_by, "default (off until you opt in)");
  assert.equal(
    await statusLine({ AGENT_SHARED_METRICS: "false" }),
    "Usage metrics: off (AGENT_SHARED_METRICS=false in the environment)",
  );
  const preview = await cli(h.home, ["metrics", "preview"]);
  assert.equal(
    preview.stdout,
    "Nothing recorded: usage metrics are off (default: off until you opt in).\n",
  );
  // No store was ever made: there was no "last export" either.
  const exported = await cli(h.home, ["metrics", "export"]);
  assert.equal(
    exported.stdout,
    "Nothing to export: usage metrics are off (default: off until you opt in).\n",
  );

  const dnt = { DO_NOT_TRACK: "1" };
  const enabled = await cli(h.home, ["metrics", "enable"], { env: dnt });
  assert.match(
    enabled.stdout,
    /^Collection stays off for now \(DO_NOT_TRACK is set in the environment: forces usage metrics off\)\.$/m,
  );
  assert.equal(
    await statusLine(dnt),
    "Usage metrics: off (DO_NOT_TRACK is set in the environment: forces usage metrics off)",
  );
  assert.equal(
    (await status(h.home, dnt)).decided_by,
    "DO_NOT_TRACK is set in the environment (forces usage metrics off)",
  );
  const send = await cli(h.home, ["metrics", "send"], { env: dnt });
  assert.equal(send.code, 1);
  assert.equal(
    send.stderr,
    "agent: nothing is sent: usage metrics are off (DO_NOT_TRACK is set in the environment: forces usage metrics off)\n",
  );
  assert.equal(
    await statusLine(),
    `Usage metrics: collecting (telemetry.shared_metrics.enabled: true in ${h.config})`,
  );
  for (const line of [await statusLine(), await statusLine(dnt), send.stderr]) {
    assert.doesNotMatch(line, /\([^)]*\(/, "no bracket inside a bracket");
  }
});

Deno.test("send reports a deleted outbox file as rejected, names it, and exits 1", async () => {
  await using h = await tempHome();
  await using collector = startCollector(202);
  const [deleted, kept] = await exportWithSendingOff(h.home, 2);
  Deno.removeSync(deleted.path);
  await enable(h.home, "--send", "--endpoint", collector.endpoint);

  const text = await cli(h.home, ["metrics", "send"]);
  assert.equal(text.code, 1, text.stdout + text.stderr);
  assert.match(
    text.stdout,
    new RegExp(`^Not sent ${deleted.package_id}: the outbox file is missing$`, "m"),
  );
  assert.match(text.stdout, new RegExp(`^Sent ${kept.package_id}$`, "m"));
  assert.ok(text.stderr.includes(`agent: ${deleted.path}: not sent, the outbox file is missing.`));
  assert.match(text.stderr, /^agent: 1 of 2 packages not sent \(1 rejected/m);
  assert.equal(collector.received.length, 1);
  assert.deepEqual((await status(h.home)).packages, { pending: 0, sent: 1, rejected: 1 });
});

Deno.test("send --json lists a deleted outbox file as a rejected package with its reason", async () => {
  await using h = await tempHome();
  await using collector = startCollector(202);
  const [entry] = await exportWithSendingOff(h.home);
  Deno.removeSync(entry.path);
  await enable(h.home, "--send", "--endpoint", collector.endpoint);

  const doc = await cliJson(h.home, ["metrics", "send", "--json"], 1);
  assert.deepEqual(doc, {
    sent: [{
      package_id: entry.package_id,
      status: "rejected",
      http_status: null,
      file: entry.path,
      reason: "the outbox file is missing; it is not retried",
    }],
    warnings: [],
  });
  assert.equal(collector.received.length, 0);
  assert.deepEqual(await cliJson(h.home, ["metrics", "send", "--json"]), {
    sent: [],
    warnings: [],
  });
});
