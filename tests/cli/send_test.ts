/**
 * `agent metrics send` (and the send that follows `export`) against a loopback collector.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { validateMetricsPackage } from "../../mod.ts";
import {
  cli,
  cliJson,
  enable,
  exportWithSendingOff,
  filesIn,
  NOW,
  recordEvents,
  SAMPLE_EVENTS,
  startCollector,
  status,
  tempHome,
} from "./_helpers.ts";

Deno.test("send with sending off is exit 1 and says how to turn it on", async () => {
  await using h = await tempHome();
  const fresh = await cli(h.home, ["metrics", "send"]);
  assert.equal(fresh.code, 1);
  assert.match(fresh.stderr, /usage metrics are off/);
  assert.match(fresh.stderr, /agent metrics enable --send --endpoint <url>/);
  assert.deepEqual(filesIn(h.home), [], "a refused send creates nothing");

  await enable(h.home);
  recordEvents(h.home, SAMPLE_EVENTS);
  const collecting = await cli(h.home, ["metrics", "send", "--json"]);
  assert.equal(collecting.code, 1);
  const doc = JSON.parse(collecting.stdout);
  assert.match(doc.error.message, /enable --send --endpoint/);
  assert.equal(doc.error.exit_code, 1);
});

Deno.test("export with send on POSTs the exact package JSON; status shows it sent", async () => {
  await using h = await tempHome();
  await using collector = startCollector(202);
  await enable(h.home, "--send", "--endpoint", collector.endpoint);
  recordEvents(h.home, SAMPLE_EVENTS);

  const doc = await cliJson(h.home, ["metrics", "export", "--json"]);
  assert.equal(doc.packages.length, 1);
  const [entry] = doc.packages;
  assert.deepEqual(doc.sent, [{ package_id: entry.package_id, status: "sent", http_status: 202 }]);

  assert.equal(collector.received.length, 1);
  const [request] = collector.received;
  assert.equal(request.method, "POST");
  assert.match(request.contentType ?? "", /^application\/json/);
  // The version `agent --version` prints, not the runtime's default (`Deno/2.x`).
  const version = (await cli(h.home, ["--version"])).stdout.trim();
  assert.match(version, /^\d+\.\d+\.\d+/);
  assert.equal(request.userAgent, `agent-service/${version}`);
  assert.equal(request.body, Deno.readTextFileSync(entry.path), "body is the outbox file");
  assert.deepEqual(validateMetricsPackage(JSON.parse(request.body)), { valid: true });

  const after = await status(h.home);
  assert.deepEqual(after.packages, { pending: 0, sent: 1, rejected: 0 });

  // Nothing is due any more: a send posts nothing.
  const again = await cli(h.home, ["metrics", "send"]);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stdout, "Nothing due to send.\n");
  assert.equal(collector.received.length, 1);
});

Deno.test("send posts packages exported while sending was off", async () => {
  await using h = await tempHome();
  await using collector = startCollector(202);
  await enable(h.home);
  recordEvents(h.home, SAMPLE_EVENTS);
  recordEvents(h.home, [{ kind: "client_active" }], Date.UTC(2026, 2, 8, 9));
  const exported = await cliJson(h.home, ["metrics", "export", "--json"]);
  assert.equal(exported.packages.length, 2);
  assert.deepEqual(exported.sent, []);
  assert.equal(collector.received.length, 0);
  assert.equal((await status(h.home)).packages.pending, 2);

  await enable(h.home, "--send", "--endpoint", collector.endpoint);
  const text = await cli(h.home, ["metrics", "send"]);
  assert.equal(text.code, 0, text.stderr);
  const ids = exported.packages.map((p: { package_id: string }) => p.package_id);
  for (const id of ids) assert.match(text.stdout, new RegExp(`^Sent ${id}$`, "m"));

  assert.equal(collector.received.length, 2);
  const version = (await cli(h.home, ["--version"])).stdout.trim();
  assert.deepEqual(collector.received.map((r) => r.userAgent), [
    `agent-service/${version}`,
    `agent-service/${version}`,
  ]);
  const bodies = new Set(collector.received.map((r) => r.body));
  for (const entry of exported.packages) {
    assert.ok(bodies.has(Deno.readTextFileSync(entry.path)), `${entry.package_id} sent as is`);
  }
  assert.deepEqual((await status(h.home)).packages, { pending: 0, sent: 2, rejected: 0 });
});

Deno.test("send --json lists the outcomes", async () => {
  await using h = await tempHome();
  await using collector = startCollector(200);
  const [exported] = await exportWithSendingOff(h.home);
  await enable(h.home, "--send", "--endpoint", collector.endpoint);
  const doc = await cliJson(h.home, ["metrics", "send", "--json"]);
  assert.deepEqual(doc, {
    sent: [{ package_id: exported.package_id, status: "sent", http_status: 200 }],
    warnings: [],
  });
  assert.deepEqual(await cliJson(h.home, ["metrics", "send", "--json"]), {
    sent: [],
    warnings: [],
  });
});

Deno.test("an endpoint answering 400 rejects the package, and it is not retried", async () => {
  await using h = await tempHome();
  await using collector = startCollector(400);
  await enable(h.home, "--send", "--endpoint", collector.endpoint);
  recordEvents(h.home, SAMPLE_EVENTS);

  const result = await cli(h.home, ["metrics", "export"]);
  assert.equal(result.code, 1, result.stderr);
  const [file] = filesIn(join(h.metrics, "outbox"));
  const id = file.replace(/\.json$/, "");
  assert.match(
    result.stdout,
    new RegExp(`^Rejected ${id} by the endpoint \\(HTTP 400\\); it will not be retried$`, "m"),
  );
  assert.equal(collector.received.length, 1);
  assert.deepEqual((await status(h.home)).packages, { pending: 0, sent: 0, rejected: 1 });

  const again = await cli(h.home, ["metrics", "send"]);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stdout, "Nothing due to send.\n");
  assert.equal(collector.received.length, 1, "a rejected package is never sent again");
  const human = await cli(h.home, ["metrics", "status"]);
  assert.match(human.stdout, /^Exported: +1 package \(0 sent, 0 unsent, 1 rejected\)$/m);
});

Deno.test("send to an endpoint that is down defers the package (exit 1, kept pending)", async () => {
  await using h = await tempHome();
  // A port that was just free: nothing listens there any more.
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  await enable(h.home);
  recordEvents(h.home, [{ kind: "task_started", entrypoint: "api", surface: "api" }]);
  await cliJson(h.home, ["metrics", "export", "--json"]);
  await enable(h.home, "--send", "--endpoint", `http://127.0.0.1:${port}/v2`);
  // Slow on purpose (~6 s): the sender backs off 1 s and 5 s between its 3 tries, and the CLI
  // has no seam for the sleep. Backoff itself is tested in tests/metrics/sender_test.ts.
  const started = performance.now();
  const doc = await cliJson(h.home, ["metrics", "send", "--json"], 1);
  assert.equal(doc.sent.length, 1);
  assert.equal(doc.sent[0].status, "deferred");
  assert.match(doc.sent[0].reason, /network error/);
  assert.equal((await status(h.home)).packages.pending, 1);
  assert.ok(performance.now() - started < 15_000);
});

Deno.test("send with nothing due says what waits, until when and why (text and --json)", async () => {
  await using h = await tempHome();
  await using collector = startCollector(429);
  await enable(h.home, "--send", "--endpoint", collector.endpoint);
  recordEvents(h.home, SAMPLE_EVENTS);
  const exported = await cli(h.home, ["metrics", "export"]);
  assert.equal(exported.code, 1, exported.stderr);
  assert.equal(collector.received.length, 1);

  const text = await cli(h.home, ["metrics", "send"]);
  assert.equal(text.code, 0, text.stderr);
  const reason = "HTTP 429: the endpoint sent no Retry-After; waiting the default 60 s";
  assert.equal(
    text.stdout,
    `Nothing due to send: 1 package waits; next attempt at 2026-03-10 12:01 UTC (in 1 min); ` +
      `last attempt: ${reason}.\n`,
  );
  const doc = await cliJson(h.home, ["metrics", "send", "--json"]);
  assert.deepEqual(doc, {
    sent: [],
    deferred: { packages: 1, next_attempt_at: "2026-03-10T12:01:00.000Z", reason },
    warnings: [],
  });
  assert.equal(collector.received.length, 1, "nothing is posted before the wait is over");
});

Deno.test("one export of several days sends them oldest day first", async () => {
  await using h = await tempHome();
  await using collector = startCollector(202);
  await enable(h.home, "--send", "--endpoint", collector.endpoint);
  // Six days packaged by one export: they share created_at, and their ids are random.
  const days = [1, 2, 3, 4, 5, 6].map((back) => NOW - back * 86_400_000).reverse();
  for (const at of days) recordEvents(h.home, [{ kind: "client_active" }], at);
  const doc = await cliJson(h.home, ["metrics", "export", "--json"]);
  assert.equal(doc.sent.length, 6);
  const sentDays = collector.received.map((r) => JSON.parse(r.body).period_start.slice(0, 10));
  assert.deepEqual(sentDays, days.map((at) => new Date(at).toISOString().slice(0, 10)));
});

Deno.test("send with sending off and an endpoint set says `enable --send`, naming that endpoint", async () => {
  await using h = await tempHome();
  await enable(h.home, "--endpoint", "https://metrics.example/v2");
  const off = await cli(h.home, ["metrics", "send"]);
  assert.equal(off.code, 1);
  assert.equal(
    off.stderr,
    "agent: sending is off: run `agent metrics enable --send` to turn it on; packages go to " +
      "https://metrics.example/v2\n",
  );

  assert.equal((await cli(h.home, ["metrics", "disable"])).code, 0);
  const disabled = await cli(h.home, ["metrics", "send"]);
  assert.equal(disabled.code, 1);
  assert.match(
    disabled.stderr,
    /usage metrics are off \(.+\); run `agent metrics enable --send` to turn them on; packages go to https:\/\/metrics\.example\/v2\n$/,
  );
});
