/**
 * Unsent packages older than 30 days are no longer dropped in silence: whichever command prunes
 * them, or first looks after another process did (`metrics status`, `send`, `export`, the
 * gateway's flush), says once how many were dropped, for which days and why: a warning on stderr
 * (and `dropped_unsent` in `--json`), a warning line in the gateway's log.
 */
import assert from "node:assert/strict";
import { Gateway } from "../../src/gateway/gateway.ts";
import { loadConfig } from "../../src/home/config.ts";
import { closeLogging, configureLogging } from "../../src/home/log.ts";
import { openUsageMetrics } from "../../src/metrics/mod.ts";
import { freePort } from "./_mcp_helpers.ts";
import {
  cli,
  cliJson,
  enable,
  NOW,
  recordEvents,
  startCollector,
  status,
  tempHome,
} from "./_helpers.ts";

const DAY_MS = 86_400_000;
const TASK = { kind: "task_started", entrypoint: "api", surface: "api" } as const;

/**
 * At `now - 42 days` one package that is sent; at `now - 40 days` two packages (of the 41st and
 * 40th day before `now`) exported while sending is off; at `now - 25 days` one more, unsent
 * but recent. Returns the endpoint's collector (answering 202).
 */
async function oldPackages(home: string, now: number) {
  const collector = startCollector(202);
  await enable(home, "--send", "--endpoint", collector.endpoint);
  recordEvents(home, [TASK], now - 42 * DAY_MS);
  const sent = await cliJson(home, ["metrics", "export", "--json"], 0, { now: now - 42 * DAY_MS });
  assert.equal(sent.sent[0].status, "sent");
  assert.equal((await cli(home, ["metrics", "disable"])).code, 0);
  await enable(home);
  recordEvents(home, [TASK], now - 41 * DAY_MS);
  recordEvents(home, [TASK], now - 40 * DAY_MS);
  const unsent = await cliJson(home, ["metrics", "export", "--json"], 0, {
    now: now - 40 * DAY_MS,
  });
  assert.equal(unsent.packages.length, 2);
  recordEvents(home, [TASK], now - 25 * DAY_MS);
  await cliJson(home, ["metrics", "export", "--json"], 0, { now: now - 25 * DAY_MS });
  return collector;
}

const WARNING = "warning: usage metrics: dropped 2 unsent packages: older than 30 days, never " +
  "sent (1 for 2026-01-28, 1 for 2026-01-29)\n";

const DROPPED = {
  packages: 2,
  reason: "older than 30 days, never sent",
  days: [{ day: "2026-01-28", packages: 1 }, { day: "2026-01-29", packages: 1 }],
};

Deno.test("export prunes unsent packages older than 30 days and says so once, on stderr", async () => {
  await using h = await tempHome();
  await using _collector = await oldPackages(h.home, NOW);
  assert.deepEqual((await status(h.home)).packages, { pending: 3, sent: 1, rejected: 0 });

  const result = await cli(h.home, ["metrics", "export"]);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stderr, WARNING, "the sent package goes without a word");
  assert.deepEqual((await status(h.home)).packages, { pending: 1, sent: 0, rejected: 0 });

  for (const argv of [["metrics", "export"], ["metrics", "status"]]) {
    const again = await cli(h.home, argv);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stderr, "", `${argv.join(" ")} does not say it again`);
  }
});

Deno.test("export --json lists the dropped packages in dropped_unsent, and warns on stderr and in warnings", async () => {
  await using h = await tempHome();
  await using _collector = await oldPackages(h.home, NOW);
  const result = await cli(h.home, ["metrics", "export", "--json"]);
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(JSON.parse(result.stdout), {
    packages: [],
    sent: [],
    dropped_unsent: DROPPED,
    warnings: [WARNING.replace(/^warning: /, "").trimEnd()],
  });
  assert.equal(result.stderr, WARNING);
  const again = await cliJson(h.home, ["metrics", "export", "--json"]);
  assert.deepEqual(again, { packages: [], sent: [], warnings: [] });
});

Deno.test("status reports a prune an agent run made, once (text, then nothing in --json)", async () => {
  await using h = await tempHome();
  await using _collector = await oldPackages(h.home, NOW);
  // An agent run's automatic packaging prunes, and leaves the report to the next command.
  const metrics = openUsageMetrics(loadConfig({ home: h.home, env: () => undefined }), {
    now: () => NOW,
  });
  metrics.packageDue();
  metrics.close();

  const text = await cli(h.home, ["metrics", "status"]);
  assert.equal(text.code, 0, text.stderr);
  assert.equal(text.stderr, WARNING);
  const doc = await status(h.home);
  assert.equal(doc.dropped_unsent, undefined, "reported once");
  assert.deepEqual(doc.packages, { pending: 1, sent: 0, rejected: 0 });
});

Deno.test("status --json and send --json carry dropped_unsent when they are the first to see it", async () => {
  for (const command of ["status", "send"]) {
    await using h = await tempHome();
    await using collector = await oldPackages(h.home, NOW);
    await enable(h.home, "--send", "--endpoint", collector.endpoint);
    const metrics = openUsageMetrics(loadConfig({ home: h.home, env: () => undefined }), {
      now: () => NOW,
    });
    metrics.packageDue();
    metrics.close();

    const result = await cli(h.home, ["metrics", command, "--json"]);
    assert.equal(result.code, 0, result.stderr);
    const doc = JSON.parse(result.stdout);
    assert.deepEqual(doc.dropped_unsent, DROPPED, command);
    assert.deepEqual(doc.warnings, [WARNING.replace(/^warning: /, "").trimEnd()], command);
    assert.equal(result.stderr, WARNING, command);
    const again = await cli(h.home, ["metrics", command, "--json"]);
    assert.equal(JSON.parse(again.stdout).dropped_unsent, undefined, `${command}: once`);
    assert.equal(again.stderr, "");
  }
});

Deno.test("the gateway's flush logs the dropped packages once, as a warning line", async () => {
  await using h = await tempHome();
  const now = Date.now(); // the gateway's clock: the packages are 40 days older than it
  await using _collector = await oldPackages(h.home, now);
  const config = Deno.readTextFileSync(h.config);
  Deno.writeTextFileSync(
    h.config,
    `${config}platforms:\n  webhook:\n    enabled: true\n    extra:\n      host: 127.0.0.1\n      port: ${freePort()}\n`,
  );
  const env = (name: string) => ({ AGENT_HOME: h.home, WEBHOOK_SECRET: "s" })[name];
  const shown: string[] = [];
  const resolved = loadConfig({ env });
  await configureLogging(resolved.paths, { console: (line) => shown.push(line) });
  try {
    for (let start = 0; start < 2; start++) {
      const gateway = await Gateway.start({ config: loadConfig({ env }), env });
      await gateway.stop();
    }
  } finally {
    await closeLogging();
  }
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  const line = "warning: usage metrics: dropped 2 unsent packages: older than 30 days, never " +
    `sent (1 for ${day(now - 41 * DAY_MS)}, 1 for ${day(now - 40 * DAY_MS)})\n`;
  assert.deepEqual(shown.filter((entry) => entry.includes("dropped")), [line]);
  const log = Deno.readTextFileSync(resolved.paths.gatewayLog);
  assert.equal(log.split("\n").filter((entry) => entry.includes("dropped 2 unsent")).length, 1);
});
