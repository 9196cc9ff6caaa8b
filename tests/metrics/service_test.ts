import assert from "node:assert/strict";
import { loadConfig } from "../../src/home/config.ts";
import { openExistingUsageMetrics, openUsageMetrics } from "../../src/metrics/mod.ts";
import { listFiles, RESOURCE, TestClock } from "./_helpers.ts";

async function withHome(
  yaml: string,
  body: (home: string) => Promise<void> | void,
): Promise<void> {
  const home = await Deno.makeTempDir({ prefix: "metrics-home-" });
  try {
    Deno.writeTextFileSync(`${home}/config.yaml`, yaml);
    await body(home);
  } finally {
    await Deno.remove(home, { recursive: true });
  }
}

const noEnv = () => undefined;

Deno.test("without consent nothing is recorded and nothing is created", async () => {
  await withHome("telemetry:\n  shared_metrics:\n    enabled: false\n", (home) => {
    const metrics = openUsageMetrics(loadConfig({ home, env: noEnv }));
    assert.equal(metrics.enabled, false);
    metrics.recorder.record({ kind: "task_started", entrypoint: "api", surface: "api" });
    assert.deepEqual(metrics.preview(), []);
    assert.deepEqual(metrics.exportNow(), []);
    metrics.close();
    assert.deepEqual(listFiles(home), ["config.yaml"]);
    assert.equal(openExistingUsageMetrics(loadConfig({ home, env: noEnv })), undefined);
  });
});

Deno.test("DO_NOT_TRACK wins over config: nothing is created", async () => {
  await withHome("telemetry:\n  shared_metrics:\n    enabled: true\n", (home) => {
    const env = (name: string) => name === "DO_NOT_TRACK" ? "1" : undefined;
    const metrics = openUsageMetrics(loadConfig({ home, env }));
    metrics.recorder.record({ kind: "client_active" });
    metrics.close();
    assert.deepEqual(listFiles(home), ["config.yaml"]);
  });
});

Deno.test("an existing store opened without consent can be read but records nothing", async () => {
  await withHome("telemetry:\n  shared_metrics:\n    enabled: true\n", (home) => {
    const on = openUsageMetrics(loadConfig({ home, env: noEnv }), { resource: RESOURCE });
    on.recorder.record({ kind: "task_started", entrypoint: "api", surface: "api" });
    on.close();
    Deno.writeTextFileSync(
      `${home}/config.yaml`,
      "telemetry:\n  shared_metrics:\n    enabled: false\n",
    );
    const off = openExistingUsageMetrics(loadConfig({ home, env: noEnv }), { resource: RESOURCE })!;
    off.recorder.record({ kind: "task_started", entrypoint: "api", surface: "api" });
    assert.equal(off.preview()[0].metrics[0].value, 1);
    off.close();
  });
});

Deno.test("sendDue: deferred packages wait for their time, sent ones are not sent again", async () => {
  const received: string[] = [];
  const answers = [503, 503, 503, 202];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    received.push(await request.text());
    return new Response(null, { status: answers.shift() ?? 202 });
  });
  try {
    const endpoint = `http://127.0.0.1:${server.addr.port}/v2`;
    await withHome(
      `telemetry:\n  shared_metrics:\n    enabled: true\n    send: true\n    endpoint: ${endpoint}\n`,
      async (home) => {
        const clock = new TestClock("2026-11-21T10:00:00.000Z");
        const metrics = openUsageMetrics(loadConfig({ home, env: noEnv }), {
          now: clock.now,
          resource: RESOURCE,
        });
        const sleep = () => Promise.resolve();
        metrics.recorder.record({ kind: "task_started", entrypoint: "api", surface: "api" });
        const [built] = metrics.exportNow();
        const first = await metrics.sendDue({ sleep, random: () => 0.5 });
        assert.equal(first[0].status, "deferred");
        assert.equal(received.length, 3, "three tries in one pass");
        assert.deepEqual(await metrics.sendDue({ sleep }), [], "not due yet");
        assert.equal(received.length, 3);
        clock.advance(25_000);
        const second = await metrics.sendDue({ sleep });
        assert.deepEqual(second.map((o) => o.status), ["sent"]);
        assert.equal(received[3], Deno.readTextFileSync(built.path));
        assert.deepEqual(await metrics.sendDue({ sleep }), []);
        assert.deepEqual(metrics.summary()?.packages, { pending: 0, sent: 1, rejected: 0 });
        metrics.close();
      },
    );
  } finally {
    await server.shutdown();
  }
});

Deno.test("sendDue does nothing when sending is off", async () => {
  // An endpoint that would take the package: only `send: false` keeps it home.
  const received: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    received.push(await request.text());
    return new Response(null, { status: 202 });
  });
  try {
    const endpoint = `http://127.0.0.1:${server.addr.port}/v2`;
    await withHome(
      `telemetry:\n  shared_metrics:\n    enabled: true\n    send: false\n    endpoint: ${endpoint}\n`,
      async (home) => {
        const metrics = openUsageMetrics(loadConfig({ home, env: noEnv }), {
          resource: RESOURCE,
        });
        assert.equal(metrics.settings.endpoint, endpoint);
        metrics.recorder.record({ kind: "task_started", entrypoint: "api", surface: "api" });
        metrics.exportNow();
        assert.deepEqual(await metrics.sendDue(), []);
        assert.deepEqual(received, []);
        assert.deepEqual(metrics.summary()?.packages, { pending: 1, sent: 0, rejected: 0 });
        metrics.close();
      },
    );
  } finally {
    await server.shutdown();
  }
});
