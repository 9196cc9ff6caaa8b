/**
 * An opt-out while a process runs (the gateway, `agent chat`): `agent metrics disable` stops its
 * recording, packaging and sending at once, not at its next start.
 */
import assert from "node:assert/strict";
import { loadConfig } from "../../src/home/config.ts";
import { openExistingUsageMetrics, openUsageMetrics } from "../../src/metrics/mod.ts";
import { cli, tempHome } from "../cli/_helpers.ts";
import { RESOURCE, sumByName, TestClock } from "./_helpers.ts";

const noEnv = () => undefined;
const STARTED = {
  kind: "task_started",
  entrypoint: "gateway_message",
  surface: "gateway",
} as const;

/** A loopback collector that counts the packages posted to it. */
function collector(): { endpoint: string; received: string[] } & AsyncDisposable {
  const received: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    received.push(await request.text());
    return new Response(null, { status: 202 });
  });
  return {
    endpoint: `http://127.0.0.1:${server.addr.port}/v2`,
    received,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

/** What the store holds after the process: counts packaged or not, per metric name. */
/** The usage-metrics service of `home` as a long-running process opens it (writes at once). */
function openService(
  home: string,
  options: Parameters<typeof openUsageMetrics>[1] = {},
): ReturnType<typeof openUsageMetrics> {
  return openUsageMetrics(loadConfig({ home, env: noEnv }), {
    resource: RESOURCE,
    flushDelayMs: 0,
    ...options,
  });
}

function collected(home: string): Record<string, number> {
  const metrics = openExistingUsageMetrics(loadConfig({ home, env: noEnv }), { readOnly: true });
  assert(metrics, "the store exists");
  try {
    return sumByName(metrics.preview());
  } finally {
    metrics.close();
  }
}

Deno.test("`metrics disable` stops a running process's recording, packaging and sending at once", async () => {
  await using h = await tempHome();
  await using server = collector();
  assert.equal(
    (await cli(h.home, ["metrics", "enable", "--send", "--endpoint", server.endpoint]))
      .code,
    0,
  );
  const clock = new TestClock("2026-11-21T10:00:00.000Z");
  // The gateway's service, opened while consent was given.
  const metrics = openService(h.home, {
    now: clock.now,
  });
  metrics.recorder.record(STARTED);
  const [built] = metrics.exportNow(); // one package waits in the outbox, not sent yet

  const disable = await cli(h.home, ["metrics", "disable"]);
  assert.equal(disable.code, 0, disable.stderr);
  assert.equal(
    disable.stdout,
    `Usage metrics disabled in ${h.config}.\n` +
      "Nothing more is recorded or sent, also by a gateway or chat already running.\n" +
      `What was collected stays in ${h.metrics}/metrics.sqlite3 and its outbox, unsent; ` +
      "`agent metrics reset` deletes it.\n",
  );
  assert.equal(metrics.enabled, false);
  assert.equal(metrics.settings.send, false);
  metrics.recorder.record(STARTED);
  metrics.recorder.record({ kind: "client_active" });
  assert.deepEqual(await metrics.sendDue({ sleep: () => Promise.resolve() }), []);
  assert.deepEqual(server.received, [], "nothing is sent after the opt-out");
  clock.advance(86_400_000); // the next day: automatic packaging would run
  assert.deepEqual(metrics.packageDue(), []);
  metrics.close();

  // What was collected before is kept as it was (reset deletes it); nothing was added.
  assert.deepEqual(collected(h.home), {});
  assert.deepEqual(
    openExistingUsageMetrics(loadConfig({ home: h.home, env: noEnv }))!.summary()
      ?.packages,
    { pending: 1, sent: 0, rejected: 0 },
  );
  assert(Deno.statSync(built.path).isFile);
});

Deno.test("counts buffered before an opt-out are dropped, not written on the next flush or close", async () => {
  await using h = await tempHome();
  assert.equal((await cli(h.home, ["metrics", "enable"])).code, 0);
  const metrics = openService(h.home, {
    flushDelayMs: 60_000,
  });
  metrics.recorder.record(STARTED);
  metrics.recorder.flush();
  metrics.recorder.record(STARTED); // buffered, not written yet
  assert.equal((await cli(h.home, ["metrics", "disable"])).code, 0);
  metrics.close();
  assert.deepEqual(collected(h.home), { "agent.task_run.started": 1 });
});

Deno.test("opting in again while the process runs resumes counting", async () => {
  await using h = await tempHome();
  assert.equal((await cli(h.home, ["metrics", "enable"])).code, 0);
  const metrics = openService(h.home);
  metrics.recorder.record(STARTED);
  assert.equal((await cli(h.home, ["metrics", "disable"])).code, 0);
  metrics.recorder.record(STARTED);
  assert.equal((await cli(h.home, ["metrics", "enable"])).code, 0);
  assert.equal(metrics.enabled, true);
  metrics.recorder.record(STARTED);
  metrics.close();
  assert.deepEqual(collected(h.home), { "agent.task_run.started": 2 });
});

Deno.test("DO_NOT_TRACK=1 added to .env while the process runs stops its counting", async () => {
  await using h = await tempHome();
  assert.equal((await cli(h.home, ["metrics", "enable"])).code, 0);
  const metrics = openService(h.home);
  metrics.recorder.record(STARTED);
  Deno.writeTextFileSync(`${h.home}/.env`, "DO_NOT_TRACK=1\n");
  metrics.recorder.record(STARTED);
  assert.equal(metrics.enabled, false);
  assert.match(metrics.settings.decidedBy, /DO_NOT_TRACK/);
  metrics.close();
  assert.deepEqual(collected(h.home), { "agent.task_run.started": 1 });
});

Deno.test("a config.yaml broken while the process runs pauses counting, said once, until fixed", async () => {
  await using h = await tempHome();
  assert.equal((await cli(h.home, ["metrics", "enable"])).code, 0);
  const good = Deno.readTextFileSync(h.config);
  const warnings: string[] = [];
  const metrics = openService(h.home, {
    onWarning: (message) => warnings.push(message),
  });
  Deno.writeTextFileSync(h.config, `${good}  : [\n`);
  metrics.recorder.record(STARTED);
  metrics.recorder.record(STARTED);
  assert.equal(warnings.length, 1, warnings.join("\n"));
  assert.match(warnings[0], /usage metrics are paused: .*config\.yaml/);
  Deno.writeTextFileSync(h.config, good);
  metrics.recorder.record(STARTED);
  metrics.close();
  assert.deepEqual(collected(h.home), { "agent.task_run.started": 1 });
});
