/**
 * The gateway's housekeeping: usage metrics are flushed at start (and hourly), runs or not; the
 * inbox forgets expired delivery-id claims on every round.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { Gateway, GatewayBusyError, type GatewayOptions } from "../../src/gateway/gateway.ts";
import { lockGatewayHome, runningGateway } from "../../src/gateway/home_lock.ts";
import { Inbox } from "../../src/gateway/inbox.ts";
import { loadConfig } from "../../src/home/config.ts";
import { closeLogging, configureLogging } from "../../src/home/log.ts";
import { AGENT_VERSION } from "../../src/version.ts";
import { findSandbox } from "../../src/webhook/scripts.ts";
import { record } from "../webhook/_records.ts";
import {
  countersOf,
  enable,
  recordEvents,
  SAMPLE_COUNTERS,
  SAMPLE_EVENTS,
  startCollector,
  tempHome,
} from "../cli/_helpers.ts";
import {
  configText,
  DENO_CONFIG,
  denoEnv,
  freePort,
  modelLines,
  stdioServerLines,
} from "../cli/_mcp_helpers.ts";
import { postGithub } from "../e2e/_gateway.ts";
import { startFakePlatform } from "../fixtures/fake_platforms.ts";
import { startHangingModel } from "../agent/_run_helpers.ts";

/** A gateway section on 127.0.0.1 and a free port, appended to `yaml`. */
function gatewayYaml(yaml = ""): string {
  return `${yaml}platforms:\n  webhook:\n    enabled: true\n    extra:\n      host: 127.0.0.1\n      port: ${freePort()}\n`;
}

/** The environment of a gateway on `home`: the home and a global secret. */
function gatewayEnv(home: string): (name: string) => string | undefined {
  return (name) => ({ AGENT_HOME: home, WEBHOOK_SECRET: "s" })[name];
}

/**
 * Starts a gateway on `home` (environment `env`, default {@linkcode gatewayEnv}) with its console
 * lines caught, runs `body` against it (with the lines so far), stops it and returns the lines
 * it printed.
 */
async function consoleOfGateway(
  home: string,
  body: (gateway: Gateway, shown: string[]) => Promise<void> = () => Promise.resolve(),
  env: (name: string) => string | undefined = gatewayEnv(home),
  options: Pick<GatewayOptions, "lockCheckIntervalMs"> = {},
): Promise<string[]> {
  const config = loadConfig({ env });
  const shown: string[] = [];
  await configureLogging(config.paths, { console: (line) => shown.push(line) });
  try {
    const gateway = await Gateway.start({ config, env, ...options });
    try {
      await body(gateway, shown);
    } finally {
      await gateway.stop();
    }
  } finally {
    await closeLogging();
  }
  return shown;
}

/** The raw answer to `GET path` on `address` (`http://host:port`), over a connection of its own. */
async function rawGet(address: string, path: string): Promise<string> {
  const url = new URL(address);
  using conn = await Deno.connect({ hostname: url.hostname, port: Number(url.port) });
  const request = `GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\nConnection: close\r\n\r\n`;
  await conn.write(new TextEncoder().encode(request));
  let answer = "";
  const buffer = new Uint8Array(4096);
  for (let n = await conn.read(buffer); n !== null; n = await conn.read(buffer)) {
    answer += new TextDecoder().decode(buffer.subarray(0, n));
  }
  return answer;
}

/** The delivery ids of the events in the inbox file at `path`, in order, read afresh from disk. */
function deliveryIdsOnDisk(path: string): string[] {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const rows = db.prepare("SELECT delivery_id FROM events ORDER BY id").all();
    return rows.map((row) => String(row.delivery_id));
  } finally {
    db.close();
  }
}

/** The text of `file`, or "" while it does not exist. */
function readIfAny(file: string): string {
  try {
    return Deno.readTextFileSync(file);
  } catch {
    return "";
  }
}

/** A gateway (see {@linkcode gatewayYaml}) whose model nothing answers, with `servers`. */
function mcpGatewayYaml(servers: string[]): string {
  return gatewayYaml(
    configText([...modelLines("http://127.0.0.1:9/v1", "m"), "mcp_servers:", ...servers]),
  );
}

/** A static route `ci` whose events are agent runs, to follow {@linkcode gatewayYaml}. */
const AGENT_ROUTE = "      routes:\n        ci: {}\n";

/** The secret of route `alert` (see {@linkcode alertRouteYaml}). */
const ALERT_SECRET = "route-secret-0123456789abcdef";

/** A gateway whose route `alert` delivers straight to Slack channel C0123456789, then `more`. */
function alertRouteYaml(more = ""): string {
  return gatewayYaml() +
    `      routes:\n        alert:\n          secret: ${ALERT_SECRET}\n          deliver: slack\n` +
    "          deliver_only: true\n          prompt: 'Build {status}'\n" +
    "          deliver_extra:\n            chat_id: C0123456789\n" + more;
}

/**
 * Runs a gateway on `home` (environment `env`), posts a push to route `alert` that fails to be
 * delivered (HTTP 502), and returns the console lines about the direct delivery.
 */
async function failedAlertDelivery(
  home: string,
  env?: (name: string) => string | undefined,
): Promise<string[]> {
  const shown = await consoleOfGateway(home, async (gateway) => {
    const answer = await postGithub(
      { url: (path) => `${gateway.addresses[0]}${path}` },
      { name: "alert", secret: ALERT_SECRET },
      "push",
      "d-1",
      { status: "passed" },
    );
    assert.equal(answer.status, 502);
  }, env);
  return shown.filter((line) => line.includes("direct delivery"));
}

Deno.test("a quiet gateway packages finished days and sends them at start (send: true)", async () => {
  await using h = await tempHome();
  await using collector = startCollector(202);
  await enable(h.home, "--send", "--endpoint", collector.endpoint);
  recordEvents(h.home, SAMPLE_EVENTS); // a day long past: due for packaging
  const config = Deno.readTextFileSync(h.config);
  Deno.writeTextFileSync(h.config, gatewayYaml(config));
  const env = gatewayEnv(h.home);
  const gateway = await Gateway.start({ config: loadConfig({ env }), env });
  try {
    const deadline = Date.now() + 10_000;
    while (collector.received.length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    await gateway.stop();
  }
  assert.equal(collector.received.length, 1, "one package sent without any run");
  assert.equal(collector.received[0].userAgent, `agent-service/${AGENT_VERSION}`);
  const sent = JSON.parse(collector.received[0].body);
  assert.deepEqual(countersOf([sent]), SAMPLE_COUNTERS);
  const outbox = [...Deno.readDirSync(join(h.metrics, "outbox"))].map((entry) => entry.name);
  assert.equal(outbox.length, 1, "the package stays in the outbox, recorded as sent");
});

Deno.test("housekeeping runs again on its interval: a claim that expired after the start is pruned", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, gatewayYaml());
  const env = gatewayEnv(h.home);
  const config = loadConfig({ env });
  const gateway = await Gateway.start({ config, env, housekeepingIntervalMs: 50 });
  const db = new DatabaseSync(config.paths.gatewayInbox);
  try {
    // Written after the round at start: only a later round can remove them. The gateway runs in
    // this thread, so a busy wait here would block its commit: retry after yielding instead.
    for (;;) {
      try {
        db.exec(
          `INSERT INTO claims (route, delivery_id, expires_at)
           VALUES ('r', 'expired', 1), ('r', 'live', ${Date.now() + 3_600_000})`,
        );
        break;
      } catch (error) {
        if (!/locked|busy/i.test(String(error))) throw error;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    }
    const left = () =>
      (db.prepare("SELECT delivery_id FROM claims ORDER BY delivery_id").all() as {
        delivery_id: string;
      }[]).map((row) => row.delivery_id);
    const deadline = Date.now() + 10_000;
    while (left().includes("expired") && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.deepEqual(left(), ["live"]);
  } finally {
    db.close();
    await gateway.stop();
  }
});

Deno.test("the start's prune of a large inbox goes on in chunks while requests are answered", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, gatewayYaml());
  const env = gatewayEnv(h.home);
  const config = loadConfig({ env });
  const old = Date.now() - 30 * 86_400_000;
  const events = 50_000;
  {
    Inbox.open(config.paths.gatewayInbox).close();
    const db = new DatabaseSync(config.paths.gatewayInbox);
    db.exec("BEGIN");
    const insert = db.prepare(
      `INSERT INTO events (id, route, event, delivery_id, payload, prompt, plan, state,
         created_at, updated_at, next_attempt_at)
       VALUES (?, 'r', 'e', ?, '{}', 'p', '{"deliver":"log","deliverExtra":{},"skills":[]}',
         'done', ?, ?, ?)`,
    );
    for (let i = 0; i < events; i++) insert.run(`e${i}`, `d${i}`, old, old, old);
    db.exec("COMMIT");
    db.close();
  }
  const shown: string[] = [];
  await configureLogging(config.paths, { console: (line) => shown.push(line) });
  try {
    const gateway = await Gateway.start({ config, env });
    const db = new DatabaseSync(config.paths.gatewayInbox, { readOnly: true });
    try {
      const left = () => (db.prepare("SELECT COUNT(*) AS n FROM events").get() as { n: number }).n;
      // Over a bare connection: fetch's first request sets up its client, which takes longer.
      const answer = await rawGet(gateway.addresses[0], "/health");
      assert.match(answer, /^HTTP\/1\.1 200 /);
      const whenAnswered = left();
      assert.ok(
        whenAnswered > 0 && whenAnswered < events,
        `answered while the prune was under way (${whenAnswered} of ${events} events left)`,
      );
      const deadline = Date.now() + 10_000;
      while (left() > 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.equal(left(), 0);
    } finally {
      db.close();
      await gateway.stop();
    }
  } finally {
    await closeLogging();
  }
  assert.deepEqual(shown.filter((line) => line.includes("prun")), []);
});

Deno.test("a second gateway on the same home refuses to start while the first runs; after its stop it may", async () => {
  await using h = await tempHome();
  const env = gatewayEnv(h.home);
  Deno.writeTextFileSync(h.config, gatewayYaml());
  const first = await Gateway.start({ config: loadConfig({ env }), env });
  try {
    // Another port, so only the home is shared: it would take the first one's runs as crashed.
    Deno.writeTextFileSync(h.config, gatewayYaml());
    const second = Gateway.start({ config: loadConfig({ env }), env });
    await assert.rejects(second, (error) => {
      assert.ok(error instanceof GatewayBusyError);
      assert.equal(
        error.message,
        "another gateway is running on this home (it holds the lock " +
          `${join(h.home, "gateway", "inbox.sqlite3.lock")}). Stop it first, or give this one a ` +
          "home of its own (AGENT_HOME)",
      );
      return true;
    });
  } finally {
    await first.stop();
  }
  const again = await Gateway.start({ config: loadConfig({ env }), env });
  await again.stop();
});

Deno.test("a gateway starting while `agent webhook events` looks at its lock waits for that instead of refusing", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, gatewayYaml());
  const env = gatewayEnv(h.home);
  const config = loadConfig({ env });
  Deno.mkdirSync(join(h.home, "gateway"));
  // What gatewayRunning() does for a moment: the lock taken shared.
  const probe = Deno.openSync(config.paths.gatewayLock, { read: true, create: true, write: true });
  assert.ok(probe.tryLockSync(false));
  // No model is configured: the start reaches the lock before its first await.
  const starting = Gateway.start({ config, env });
  probe.close();
  const gateway = await starting;
  await gateway.stop();
});

Deno.test("a second gateway on the same home is refused before it starts any MCP server", async () => {
  await using h = await tempHome();
  const starts = join(h.home, "starts.log");
  const server = new URL("../fixtures/mcp/server.ts", import.meta.url).pathname;
  const launch =
    `echo started >> '${starts}'; exec deno run -A --config '${DENO_CONFIG}' '${server}'`;
  const notes = stdioServerLines("notes", { command: "sh", args: ["-c", launch] });
  Deno.writeTextFileSync(h.config, mcpGatewayYaml(notes));
  const vars = denoEnv({ AGENT_HOME: h.home, WEBHOOK_SECRET: "s" });
  const env = (name: string) => vars[name];
  const first = await Gateway.start({ config: loadConfig({ env }), env });
  try {
    assert.equal(Deno.readTextFileSync(starts), "started\n", "the first gateway started it");
    Deno.writeTextFileSync(h.config, mcpGatewayYaml(notes)); // another port: only the home is shared
    await assert.rejects(Gateway.start({ config: loadConfig({ env }), env }), GatewayBusyError);
    assert.equal(Deno.readTextFileSync(starts), "started\n", "the second one started nothing");
  } finally {
    await first.stop();
  }
});

Deno.test("a stdio MCP server that exits at start is logged naming this home's mcp-stderr.log", async () => {
  await using h = await tempHome();
  const exits = { command: "sh", args: ["-c", "echo boom >&2; exit 3"] };
  Deno.writeTextFileSync(h.config, mcpGatewayYaml(stdioServerLines("exits", exits)));
  await consoleOfGateway(h.home);
  const log = Deno.readTextFileSync(join(h.home, "logs", "gateway.log"));
  const errors = log.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line))
    .filter((record) => record.properties?.server === "exits" && record.properties.error)
    .map((record) => record.properties.error);
  assert.ok(errors.length > 0, log);
  for (const error of errors) {
    assert.equal(
      error,
      "MCP server 'exits': the connection closed during the handshake: the process exited " +
        'with code 3; its last stderr lines: "boom" (all of it in ' +
        `${join(h.home, "logs", "mcp-stderr.log")})`,
    );
  }
});

Deno.test("a stdio MCP server that fails at start says why on the console, not only in the log", async () => {
  await using h = await tempHome();
  const exits = { command: "sh", args: ["-c", "printf 'bad\\033[2J key\\n' >&2; exit 3"] };
  Deno.writeTextFileSync(h.config, mcpGatewayYaml(stdioServerLines("exits", exits)));
  const shown = await consoleOfGateway(h.home);
  const mcp = shown.filter((line) => line.includes("exits"));
  assert.ok(mcp.length > 0, shown.join(""));
  // Before: "warning: MCP server exits: failed", the reason only in gateway.log. The server's
  // stderr is quoted with its escape character escaped.
  assert.equal(
    mcp[0].replace(/retrying in [\d.]+ s/, "retrying in N s"),
    "warning: MCP server 'exits': the connection closed during the handshake: the process " +
      'exited with code 3; its last stderr lines: "bad\\u001b[2J key" (all of it in ' +
      `${join(h.home, "logs", "mcp-stderr.log")}); retrying in N s\n`,
  );
});

Deno.test("an MCP server whose connection is lost is said on the console as the failures are", async () => {
  await using h = await tempHome();
  const server = new URL("../fixtures/mcp/server.ts", import.meta.url).pathname;
  const trigger = join(h.home, "lose-it");
  // The server runs until the test creates the trigger file, then its process is killed.
  // (A job sh starts in the background reads /dev/null unless given its stdin explicitly.)
  const launch = `exec 3<&0; deno run -A --config '${DENO_CONFIG}' '${server}' <&3 & ` +
    `while [ ! -e '${trigger}' ]; do sleep 0.05; done; kill $!; wait`;
  const notes = stdioServerLines("notes", { command: "sh", args: ["-c", launch] });
  Deno.writeTextFileSync(h.config, mcpGatewayYaml(notes));
  const vars = denoEnv({ AGENT_HOME: h.home, WEBHOOK_SECRET: "s" });
  const log = join(h.home, "logs", "gateway.log");
  const shown = await consoleOfGateway(h.home, async () => {
    Deno.writeTextFileSync(trigger, "");
    for (const deadline = Date.now() + 30_000; !readIfAny(log).includes("was lost");) {
      if (Date.now() > deadline) throw new Error(`no "lost" line in ${readIfAny(log)}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }, (name) => vars[name]);
  const lost = shown.filter((line) => line.includes("lost"));
  // Before: "MCP server notes: the connection was lost (…)", unlike "MCP server 'notes': …".
  assert.match(lost[0], /^warning: MCP server 'notes': the connection was lost \(.+\)\n$/);
});

Deno.test("an MCP server's warnings are said on the gateway's console", async () => {
  await using h = await tempHome();
  const server = new URL("../fixtures/mcp/server.ts", import.meta.url).pathname;
  const notes = { command: "deno", args: ["run", "-A", "--config", DENO_CONFIG, server] };
  Deno.writeTextFileSync(
    h.config,
    mcpGatewayYaml(stdioServerLines("notes", notes, ["tools:", "  include: [nope]"])),
  );
  const vars = denoEnv({ AGENT_HOME: h.home, WEBHOOK_SECRET: "s" });
  const shown = await consoleOfGateway(h.home, undefined, (name) => vars[name]);
  // Before: logged at info as "MCP server notes: warning", the warning itself not said.
  assert.deepEqual(shown.filter((line) => line.includes("notes")), [
    "warning: MCP server 'notes': mcp_servers.notes.tools.include entry 'nope' matches none of " +
    "the server's tools (names are case-sensitive)\n",
  ]);
});

/** `mcp_servers` entries with a config error (`broken`) and a misspelled key (`typo`, `lines`). */
function faultyServerLines(lines: string[] = []): string[] {
  return [
    "  broken:",
    "    args: [x]",
    ...stdioServerLines("typo", { command: "true", args: [] }, ["comand: x", ...lines]),
  ];
}

/** The console lines of a gateway on `home` that name MCP servers or `mcp_servers`. */
function mcpLines(shown: string[]): string[] {
  return shown.filter((line) => /MCP server|mcp_servers/.test(line));
}

Deno.test("a gateway without a model reports the MCP config problems at start, and that its servers are not started", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(
    h.config,
    gatewayYaml(configText(["mcp_servers:", ...faultyServerLines()])) + AGENT_ROUTE,
  );
  const shown = await consoleOfGateway(h.home);
  // Before: only "agent runs fail until the model is set up", the servers not named.
  assert.deepEqual(mcpLines(shown), [
    `error: ${h.config}:2: mcp_servers.broken: the server has neither \`command\` nor \`url\`; ` +
    "add `command:` for a local (stdio) server or `url:` for a remote (HTTP) one\n",
    `warning: ${h.config}:7: mcp_servers.typo.comand: unknown key \`comand\` is ignored; did you ` +
    "mean `command`?\n",
    "warning: the MCP servers are not started until the model is set up (only agent runs use " +
    "them); `agent mcp list` connects them and says what fails\n",
  ]);
  const log = Deno.readTextFileSync(join(h.home, "logs", "gateway.log"));
  assert.match(log, /"level":"ERROR","message":"[^"]*mcp_servers\.broken: the server has neither/);
  assert.match(log, /"level":"WARN","message":"[^"]*mcp_servers\.typo\.comand: unknown key/);
});

Deno.test("a gateway with a model reports the MCP config problems at start too", async () => {
  await using h = await tempHome();
  // `typo` disabled: nothing connects, only the config is read.
  Deno.writeTextFileSync(h.config, mcpGatewayYaml(faultyServerLines(["enabled: false"])));
  const shown = await consoleOfGateway(h.home);
  assert.deepEqual(mcpLines(shown).map((line) => line.replace(/:\d+: /, ":N: ")), [
    `error: ${h.config}:N: mcp_servers.broken: the server has neither \`command\` nor \`url\`; ` +
    "add `command:` for a local (stdio) server or `url:` for a remote (HTTP) one\n",
    `warning: ${h.config}:N: mcp_servers.typo.comand: unknown key \`comand\` is ignored; did you ` +
    "mean `command`?\n",
  ]);
});

Deno.test("a gateway whose model lacks its API key warns about that, not that no model is configured", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(
    h.config,
    gatewayYaml("model:\n  default: gpt-4.1-mini\n  provider: openai\n") + AGENT_ROUTE,
  );
  const shown = await consoleOfGateway(h.home);
  const model = shown.filter((line) => line.includes("model"));
  assert.deepEqual(model, [
    `warning: agent runs fail until the model is set up: ${h.config}:3 (key model.provider): ` +
    "provider 'openai' needs an API key and OPENAI_API_KEY is not set. Fix: add " +
    `OPENAI_API_KEY=<your key> to ${join(h.home, ".env")} (or set model.api_key_env to the ` +
    "variable that holds it)\n",
  ]);
});

/** The console lines of a gateway that say agent runs (or their MCP servers) need the model. */
function noModelLines(shown: string[]): string[] {
  return shown.filter((line) => line.includes("until the model is set up"));
}

Deno.test("a gateway without a model does not warn that agent runs fail when every route is deliver-only, static or subscribed", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(
    h.config,
    gatewayYaml(
      configText(["mcp_servers:", ...stdioServerLines("notes", { command: "true", args: [] })]),
    ) +
      "      routes:\n        alert:\n          secret: s0123456789abcdef\n" +
      "          deliver: slack\n          deliver_only: true\n",
  );
  Deno.writeTextFileSync(
    join(h.home, "webhook_subscriptions.json"),
    JSON.stringify({ page: record({ deliver: "discord", deliver_only: true }) }),
  );
  assert.deepEqual(noModelLines(await consoleOfGateway(h.home)), []);
});

Deno.test("a gateway without a model warns once when a route runs the agent: a subscription at start, or the first one added while it runs", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, gatewayYaml());
  const file = join(h.home, "webhook_subscriptions.json");
  const warning = /^warning: agent runs fail until the model is set up: .*no model is configured/;
  // A subscription that runs the agent, there at start.
  Deno.writeTextFileSync(file, JSON.stringify({ ci: record() }));
  const atStart = noModelLines(await consoleOfGateway(h.home));
  assert.equal(atStart.length, 1, atStart.join(""));
  assert.match(atStart[0], warning);

  // Deliver-only at start; agent routes subscribed later are said on the reload of the first.
  Deno.writeTextFileSync(
    file,
    JSON.stringify({ page: record({ deliver_only: true, deliver: "slack" }) }),
  );
  const later = noModelLines(
    await consoleOfGateway(h.home, async (gateway, shown) => {
      const post = async (name: string) => {
        const answer = await fetch(`${gateway.addresses[0]}/webhooks/${name}`, {
          method: "POST",
          body: "{}",
        });
        await answer.body?.cancel();
        return answer.status;
      };
      assert.equal(await post("page"), 401);
      assert.deepEqual(noModelLines(shown), [], "not said while every route is deliver-only");
      const records = JSON.parse(Deno.readTextFileSync(file));
      records.ci = record();
      Deno.writeTextFileSync(file, JSON.stringify(records));
      assert.equal(await post("ci"), 401, "the reload served ci");
      assert.equal(noModelLines(shown).length, 1, "said on the reload that added ci");
      records.gh = record();
      Deno.writeTextFileSync(file, JSON.stringify(records, null, 2));
      assert.equal(await post("gh"), 401, "the reload served gh");
    }),
  );
  assert.equal(later.length, 1, later.join(""));
  assert.match(later[0], warning);
});

Deno.test("concurrent_runs sets how many agent runs the gateway has under way at once", async () => {
  await using h = await tempHome();
  await using model = startHangingModel();
  Deno.writeTextFileSync(
    h.config,
    gatewayYaml(configText(modelLines(model.baseUrl, "m"))) + "      concurrent_runs: 3\n" +
      AGENT_ROUTE,
  );
  await consoleOfGateway(h.home, async (gateway) => {
    for (let i = 0; i < 5; i++) {
      const answer = await postGithub(
        { url: (path) => `${gateway.addresses[0]}${path}` },
        { name: "ci", secret: "s" },
        "push",
        `d-${i}`,
        {},
      );
      assert.equal(answer.status, 202);
    }
    const started = Date.now();
    while (model.requests.length < 3 && Date.now() - started < 10_000) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // Time for a fourth run to start, were the limit not kept.
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(model.requests.length, 3, "three runs at once, two events queued");
    // The runs end (499) before the stop, so that it need not wait for them.
    await model.close();
  });
});

Deno.test("a delivery that fails for a token not set names this home's .env file, not <home>/.env", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, alertRouteYaml());
  assert.deepEqual(await failedAlertDelivery(h.home), [
    "warning: route alert: direct delivery d-1 to slack failed: slack: SLACK_BOT_TOKEN is not " +
    `set. Fix: add SLACK_BOT_TOKEN=<token> to ${join(h.home, ".env")}, then restart the gateway\n`,
  ]);
});

Deno.test("a delivery whose token from the process environment is refused names the environment variable, not .env", async () => {
  await using h = await tempHome();
  await using slack = await startFakePlatform("slack");
  Deno.writeTextFileSync(
    h.config,
    alertRouteYaml(`  slack:\n    extra:\n      api_base_url: ${slack.baseUrl}\n`),
  );
  const vars: Record<string, string> = {
    AGENT_HOME: h.home,
    WEBHOOK_SECRET: "s",
    SLACK_BOT_TOKEN: "xoxb-1111111111-2222222222-revokedToken0000",
  };
  assert.deepEqual(await failedAlertDelivery(h.home, (name) => vars[name]), [
    `warning: route alert: direct delivery d-1 to slack failed: slack: channel C0123456789: ` +
    `the Slack Web API at ${slack.baseUrl} refused the message (ok: false, error: invalid_auth). ` +
    "Fix: check the environment variable SLACK_BOT_TOKEN (a bot token with the chat:write " +
    "scope)\n",
  ]);
});

Deno.test("the lock tells the port of the running gateway, never the one a gateway before it had", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, gatewayYaml());
  const env = gatewayEnv(h.home);
  const config = loadConfig({ env });
  const gateway = await Gateway.start({ config, env });
  const port = Number(new URL(gateway.addresses[0]).port);
  try {
    assert.deepEqual(runningGateway(config.paths.gatewayLock), {
      running: true,
      hostname: "127.0.0.1",
      port,
    });
  } finally {
    await gateway.stop();
  }
  assert.deepEqual(runningGateway(config.paths.gatewayLock), { running: false });
  // A gateway starting (locked, not listening yet) has no port to tell, not the last one's.
  const lock = await lockGatewayHome(config.paths.gatewayLock);
  try {
    assert.deepEqual(runningGateway(config.paths.gatewayLock), { running: true });
  } finally {
    lock.close();
  }
});

/** A home whose `scripts/quiet.sh` reads the payload and prints nothing, and a PATH of bash only. */
function quietScriptHome(home: string): { env: (name: string) => string | undefined } {
  Deno.mkdirSync(join(home, "scripts"));
  Deno.writeTextFileSync(join(home, "scripts", "quiet.sh"), "cat >/dev/null\n");
  const bin = join(home, "bin");
  Deno.mkdirSync(bin);
  Deno.symlinkSync("/bin/bash", join(bin, "bash"));
  return { env: (name) => ({ AGENT_HOME: home, WEBHOOK_SECRET: "s", PATH: bin })[name] };
}

/** Posts a push to route `name` (secret `secret`) of `gateway`, which its script ignores. */
async function postIgnored(gateway: Gateway, name: string, secret: string, id: string) {
  const answer = await postGithub(
    { url: (path) => `${gateway.addresses[0]}${path}` },
    { name, secret },
    "push",
    id,
    { ref: "main" },
  );
  assert.deepEqual([answer.status, answer.json], [200, { status: "ignored", reason: "script" }]);
}

Deno.test("script_sandbox auto without bubblewrap warns once, at start, that scripts run bare", async () => {
  await using h = await tempHome();
  const { env } = quietScriptHome(h.home);
  Deno.writeTextFileSync(
    h.config,
    gatewayYaml() +
      `      routes:\n        quiet:\n          secret: ${ALERT_SECRET}\n          script: quiet.sh\n`,
  );
  const shown = await consoleOfGateway(h.home, async (gateway) => {
    await postIgnored(gateway, "quiet", ALERT_SECRET, "d-1");
    await postIgnored(gateway, "quiet", ALERT_SECRET, "d-2");
  }, env);
  assert.deepEqual(shown.filter((line) => line.includes("script_sandbox")), [
    "warning: script_sandbox is auto but bwrap (bubblewrap) is not on PATH: bash and python " +
    "route scripts run without a sandbox, able to read and change all the gateway can " +
    `(${join(h.home, ".env")} included) and to use the network (.ts/.js scripts keep Deno's ` +
    "lack of permissions). Fix: install bubblewrap (apt-get install bubblewrap), or set " +
    "platforms.webhook.extra.script_sandbox to bwrap to refuse to run scripts without it (or to " +
    "off to run them so without this warning)\n",
  ]);
});

Deno.test("script_sandbox auto without bubblewrap warns before the first script of a subscription made after the start", async () => {
  await using h = await tempHome();
  const { env } = quietScriptHome(h.home);
  Deno.writeTextFileSync(h.config, gatewayYaml());
  const secret = "sub-secret-0123456789abcdef";
  const shown = await consoleOfGateway(h.home, async (gateway) => {
    Deno.writeTextFileSync(
      join(h.home, "webhook_subscriptions.json"),
      JSON.stringify({ later: record({ secret, script: "quiet.sh" }) }),
    );
    await postIgnored(gateway, "later", secret, "d-1");
    await postIgnored(gateway, "later", secret, "d-2");
  }, env);
  const warnings = shown.filter((line) => line.includes("script_sandbox"));
  assert.equal(warnings.length, 1, warnings.join(""));
  assert.match(warnings[0], /^warning: script_sandbox is auto but bwrap \(bubblewrap\) is not on/);
});

Deno.test({
  name:
    "script_sandbox auto with a working bubblewrap says nothing about it; bwrap without one is an error at start",
  ignore: "error" in await findSandbox(),
  fn: async () => {
    await using h = await tempHome();
    const { env: bare } = quietScriptHome(h.home);
    const route = `      routes:\n        quiet:\n          secret: ${ALERT_SECRET}\n` +
      "          script: quiet.sh\n";
    Deno.writeTextFileSync(h.config, gatewayYaml() + route);
    const withBwrap = (name: string) => name === "PATH" ? Deno.env.get("PATH") : bare(name);
    const shown = await consoleOfGateway(h.home, async (gateway) => {
      await postIgnored(gateway, "quiet", ALERT_SECRET, "d-1");
    }, withBwrap);
    assert.deepEqual(shown.filter((line) => line.includes("script_sandbox")), []);
    Deno.writeTextFileSync(
      h.config,
      gatewayYaml() + "      script_sandbox: bwrap\n" + route,
    );
    const refused = await consoleOfGateway(h.home, undefined, bare);
    assert.deepEqual(refused.filter((line) => line.includes("script_sandbox")), [
      "error: script_sandbox is bwrap but bwrap (bubblewrap) is not on PATH: install it " +
      "(apt-get install bubblewrap) or set script_sandbox to auto or off; until then the events " +
      "of routes with a script are refused (503)\n",
    ]);
  },
});

Deno.test("a gateway whose inbox folder is deleted while it runs puts it back, lock included, and goes on accepting", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, gatewayYaml() + AGENT_ROUTE);
  const env = gatewayEnv(h.home);
  const config = loadConfig({ env });
  const post = (gateway: Gateway, id: string) =>
    postGithub(
      { url: (path) => `${gateway.addresses[0]}${path}` },
      { name: "ci", secret: "s" },
      "push",
      id,
      { ref: "main" },
    );
  const shown = await consoleOfGateway(
    h.home,
    async (gateway, lines) => {
      assert.equal((await post(gateway, "d-1")).status, 202);
      Deno.removeSync(join(h.home, "gateway"), { recursive: true });
      assert.equal((await post(gateway, "d-2")).status, 202);
      // Put back at the next look (every 50 ms here), with the event taken meanwhile.
      const started = Date.now();
      while (!lines.some((line) => line.includes("was deleted while the gateway ran"))) {
        assert.ok(Date.now() - started < 10_000, "the inbox was not put back");
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.deepEqual(deliveryIdsOnDisk(config.paths.gatewayInbox), ["d-1", "d-2"]);
      // Another gateway on this home is still refused.
      await assert.rejects(() => Gateway.start({ config, env }), GatewayBusyError);
    },
    env,
    { lockCheckIntervalMs: 50 },
  );
  assert(
    shown.some((line) => /^warning: the inbox .* was deleted while the gateway ran/.test(line)),
    shown.join(""),
  );
});

Deno.test("a gateway whose inbox is deleted after its last look puts it back when it stops", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, gatewayYaml() + AGENT_ROUTE);
  const config = loadConfig({ env: gatewayEnv(h.home) });
  await consoleOfGateway(
    h.home,
    async (gateway) => {
      for (const id of ["d-1", "d-2"]) {
        const answer = await postGithub(
          { url: (path) => `${gateway.addresses[0]}${path}` },
          { name: "ci", secret: "s" },
          "push",
          id,
          {},
        );
        assert.equal(answer.status, 202);
        if (id === "d-1") Deno.removeSync(join(h.home, "gateway"), { recursive: true });
      }
    },
    gatewayEnv(h.home),
    { lockCheckIntervalMs: 3_600_000 },
  );
  assert.deepEqual(deliveryIdsOnDisk(config.paths.gatewayInbox), ["d-1", "d-2"]);
});

Deno.test("a gateway whose lock file is deleted while it runs takes it again: no second gateway starts on its home", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, gatewayYaml());
  const env = gatewayEnv(h.home);
  const config = loadConfig({ env });
  const shown: string[] = [];
  await configureLogging(config.paths, { console: (line) => shown.push(line) });
  try {
    const gateway = await Gateway.start({ config, env, lockCheckIntervalMs: 10 });
    try {
      const port = Number(new URL(gateway.addresses[0]).port);
      Deno.removeSync(config.paths.gatewayLock);
      const deadline = Date.now() + 10_000;
      while (!runningGateway(config.paths.gatewayLock).running) {
        assert(Date.now() < deadline, "the lock was not taken again");
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      assert.deepEqual(runningGateway(config.paths.gatewayLock), {
        running: true,
        hostname: "127.0.0.1",
        port,
      });
      await assert.rejects(() => Gateway.start({ config, env }), GatewayBusyError);
      assert(
        shown.some((line) => /^warning: the lock .* was deleted while the gateway ran/.test(line)),
      );
    } finally {
      await gateway.stop();
    }
  } finally {
    await closeLogging();
  }
  assert.deepEqual(runningGateway(config.paths.gatewayLock), { running: false });
});

Deno.test("a quiet gateway whose inbox folder is deleted puts it back, with the events it held, within seconds", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, gatewayYaml() + AGENT_ROUTE);
  const env = gatewayEnv(h.home);
  const config = loadConfig({ env });
  await configureLogging(config.paths, { console: () => {} });
  try {
    const gateway = await Gateway.start({ config, env, lockCheckIntervalMs: 10 });
    try {
      const answer = await postGithub(
        { url: (path) => `${gateway.addresses[0]}${path}` },
        { name: "ci", secret: "s" },
        "push",
        "d-1",
        { ref: "main" },
      );
      assert.equal(answer.status, 202);
      Deno.removeSync(join(h.home, "gateway"), { recursive: true });
      const deadline = Date.now() + 10_000;
      const held = () => {
        try {
          return deliveryIdsOnDisk(config.paths.gatewayInbox);
        } catch {
          return [];
        }
      };
      while (held().length === 0 || !runningGateway(config.paths.gatewayLock).running) {
        assert(Date.now() < deadline, "the inbox was not put back");
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      assert.deepEqual(held(), ["d-1"]);
    } finally {
      await gateway.stop();
    }
  } finally {
    await closeLogging();
  }
});
