/**
 * Consent: `metrics status`, `enable`, `disable`, DO_NOT_TRACK, and broken configuration.
 */
import assert from "node:assert/strict";
import { parseDocument } from "yaml";
import { cli, cliJson, filesIn, parseOneJson, spawnCli, status, tempHome } from "./_helpers.ts";

const COMMENTED_CONFIG = `# My agent config — keep this comment
model:
  default: openai/gpt-4o # the model I like
  provider: openrouter

# MCP servers below
mcp_servers:
  files:
    command: npx
    args:
      - -y
      - server-files # pinned
    env: {DEBUG: "1"}
    tags: [fs, local]
`;

function configValue(file: string, ...path: string[]): unknown {
  return parseDocument(Deno.readTextFileSync(file)).getIn(path);
}

Deno.test("status on a fresh home reports off and creates nothing", async () => {
  await using h = await tempHome();
  const human = await cli(h.home, ["metrics", "status"]);
  assert.equal(human.code, 0, human.stderr);
  assert.match(human.stdout, /^Usage metrics: off \(default/m);
  assert.match(human.stdout, /^Sending: +off/m);
  assert.match(human.stdout, /\(not created\)/);
  assert.doesNotMatch(human.stdout, /Install id/);

  const json = await status(h.home);
  assert.equal(json.enabled, false);
  assert.equal(json.send, false);
  assert.equal(json.endpoint, null);
  assert.equal(json.store_exists, false);
  assert.equal(json.install_id, null);
  assert.equal(json.pending_counters, 0);
  assert.deepEqual(json.packages, { pending: 0, sent: 0, rejected: 0 });
  assert.equal(json.store, `${h.home}/telemetry/shared_metrics/metrics.sqlite3`);

  // preview and export without consent create nothing either.
  const preview = await cli(h.home, ["metrics", "preview"]);
  assert.equal(preview.code, 0);
  assert.match(preview.stdout, /Nothing recorded: usage metrics are off/);
  const exported = await cli(h.home, ["metrics", "export"]);
  assert.equal(exported.code, 0);
  assert.match(exported.stdout, /Nothing to export/);
  assert.deepEqual(filesIn(h.home), [], "nothing may be created before consent");
});

Deno.test("enable writes enabled: true and keeps existing comments and keys", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, COMMENTED_CONFIG);
  const result = await cli(h.home, ["metrics", "enable"]);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /Usage metrics enabled in .*config\.yaml/);
  assert.match(result.stdout, /Sending: off \(local only\)/);

  const text = Deno.readTextFileSync(h.config);
  assert.ok(text.startsWith(COMMENTED_CONFIG.trimEnd()), `original content kept:\n${text}`);
  assert.ok(text.includes("# My agent config — keep this comment"));
  assert.ok(text.includes("default: openai/gpt-4o # the model I like"));
  assert.ok(text.includes("# MCP servers below"));
  assert.equal(configValue(h.config, "telemetry", "shared_metrics", "enabled"), true);
  assert.equal(configValue(h.config, "model", "provider"), "openrouter");
  assert.deepEqual(
    (configValue(h.config, "mcp_servers", "files", "args") as { toJSON(): unknown }).toJSON(),
    ["-y", "server-files"],
  );
  assert.equal(configValue(h.config, "telemetry", "shared_metrics", "send"), undefined);

  const json = await status(h.home);
  assert.equal(json.enabled, true);
  assert.match(json.decided_by, /telemetry\.shared_metrics\.enabled: true/);
  assert.equal(json.send, false);
  // Consent alone does not create the store: it is created when something is recorded.
  assert.equal(json.store_exists, false);
});

Deno.test("enable on a home without config.yaml creates it with the key", async () => {
  await using h = await tempHome();
  const json = await cliJson(h.home, ["metrics", "enable", "--json"]);
  assert.equal(json.enabled, true);
  assert.equal(json.send, false);
  assert.equal(json.config, h.config);
  assert.equal(configValue(h.config, "telemetry", "shared_metrics", "enabled"), true);
  assert.deepEqual(filesIn(h.home), ["config.yaml"]);
  const mode = Deno.statSync(h.config).mode;
  if (mode !== null) assert.equal(mode & 0o077, 0, "config.yaml is not group/world accessible");
});

Deno.test("enable --send without an endpoint is a usage error and leaves config alone", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, COMMENTED_CONFIG);
  const result = await cli(h.home, ["metrics", "enable", "--send"]);
  assert.equal(result.code, 2);
  assert.match(result.stderr, /--send needs an endpoint/);
  assert.match(result.stderr, /--endpoint/);
  assert.equal(Deno.readTextFileSync(h.config), COMMENTED_CONFIG);
});

for (
  const endpoint of [
    "http://10.0.0.1/x",
    "http://metrics.example/v2",
    "ftp://metrics.example/v2",
    "https://user:pw@metrics.example/v2",
    "not a url",
  ]
) {
  Deno.test(`enable --send --endpoint ${endpoint} is refused (exit 2), config unchanged`, async () => {
    await using h = await tempHome();
    Deno.writeTextFileSync(h.config, COMMENTED_CONFIG);
    const result = await cli(h.home, ["metrics", "enable", "--send", "--endpoint", endpoint]);
    assert.equal(result.code, 2, result.stdout + result.stderr);
    assert.match(result.stderr, /--endpoint: .*telemetry\.shared_metrics\.endpoint/);
    assert.match(result.stderr, /https:\/\/ URL, or http:\/\/ only to a loopback host/);
    assert.doesNotMatch(result.stderr, /pw@/, "credentials are never repeated");
    assert.equal(Deno.readTextFileSync(h.config), COMMENTED_CONFIG);
  });
}

Deno.test("enable --send --endpoint https://… turns sending on; status shows it", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, COMMENTED_CONFIG);
  const endpoint = "https://metrics.example/v2";
  const result = await cli(h.home, ["metrics", "enable", "--send", "--endpoint", endpoint]);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /Sending: on, to https:\/\/metrics\.example\/v2/);
  assert.equal(configValue(h.config, "telemetry", "shared_metrics", "send"), true);
  assert.equal(configValue(h.config, "telemetry", "shared_metrics", "endpoint"), endpoint);
  assert.ok(Deno.readTextFileSync(h.config).includes("# MCP servers below"));

  const json = await status(h.home);
  assert.equal(json.enabled, true);
  assert.equal(json.send, true);
  assert.equal(json.endpoint, endpoint);
  assert.deepEqual(json.warnings, []);
});

Deno.test("enable --send --endpoint http://127.0.0.1 (loopback) is accepted", async () => {
  await using h = await tempHome();
  const json = await cliJson(h.home, [
    "metrics",
    "enable",
    "--send",
    "--endpoint",
    "http://127.0.0.1:9/ingest",
    "--json",
  ]);
  assert.equal(json.send, true);
  assert.equal(json.endpoint, "http://127.0.0.1:9/ingest");
});

Deno.test("disable sets enabled (and send) false, keeping the endpoint and comments", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, COMMENTED_CONFIG);
  await cli(h.home, ["metrics", "enable", "--send", "--endpoint", "https://metrics.example/v2"]);
  const result = await cli(h.home, ["metrics", "disable"]);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /Usage metrics disabled in .*config\.yaml/);
  assert.equal(configValue(h.config, "telemetry", "shared_metrics", "enabled"), false);
  assert.equal(configValue(h.config, "telemetry", "shared_metrics", "send"), false);
  assert.equal(
    configValue(h.config, "telemetry", "shared_metrics", "endpoint"),
    "https://metrics.example/v2",
  );
  assert.ok(Deno.readTextFileSync(h.config).includes("# the model I like"));

  const json = await status(h.home);
  assert.equal(json.enabled, false);
  assert.equal(json.send, false);
  assert.match(json.decided_by, /enabled: false/);
});

Deno.test("disable --json on a fresh home records the opt-out", async () => {
  await using h = await tempHome();
  const json = await cliJson(h.home, ["metrics", "disable", "--json"]);
  assert.equal(json.enabled, false);
  assert.equal(configValue(h.config, "telemetry", "shared_metrics", "enabled"), false);
  assert.equal(configValue(h.config, "telemetry", "shared_metrics", "send"), undefined);
});

Deno.test("DO_NOT_TRACK=1 forces off even after enable, and status names it", async () => {
  await using h = await tempHome();
  const env = { DO_NOT_TRACK: "1" };
  const enabled = await cli(h.home, ["metrics", "enable"], { env });
  assert.equal(enabled.code, 0, enabled.stderr);
  assert.equal(configValue(h.config, "telemetry", "shared_metrics", "enabled"), true);
  assert.match(enabled.stdout, /DO_NOT_TRACK/);

  const human = await cli(h.home, ["metrics", "status"], { env });
  assert.equal(human.code, 0);
  assert.match(human.stdout, /^Usage metrics: off \(DO_NOT_TRACK/m);

  const json = await status(h.home, env);
  assert.equal(json.enabled, false);
  assert.match(json.decided_by, /DO_NOT_TRACK/);

  // Without DO_NOT_TRACK the config decides again.
  assert.equal((await status(h.home)).enabled, true);
  // DO_NOT_TRACK=0 does not force anything.
  assert.equal((await status(h.home, { DO_NOT_TRACK: "0" })).enabled, true);
});

Deno.test({
  name: "enable under DO_NOT_TRACK does not claim config.yaml disables metrics",
  fn: async () => {
    await using h = await tempHome();
    const result = await cli(h.home, ["metrics", "enable"], { env: { DO_NOT_TRACK: "1" } });
    assert.equal(result.code, 0);
    assert.doesNotMatch(result.stdout, /disabled in .*config\.yaml/);
    assert.match(result.stdout, /DO_NOT_TRACK/);
  },
});

Deno.test("enable --send reuses an endpoint already in config.yaml", async () => {
  await using h = await tempHome();
  await cli(h.home, ["metrics", "enable", "--endpoint", "https://metrics.example/v2"]);
  assert.equal((await status(h.home)).send, false, "--endpoint alone does not turn sending on");
  const result = await cli(h.home, ["metrics", "enable", "--send"]);
  assert.equal(result.code, 0, result.stderr);
  const json = await status(h.home);
  assert.equal(json.send, true);
  assert.equal(json.endpoint, "https://metrics.example/v2");
});

Deno.test("AGENT_SHARED_METRICS is a default below the config key", async () => {
  await using h = await tempHome();
  const byEnv = await status(h.home, { AGENT_SHARED_METRICS: "true" });
  assert.equal(byEnv.enabled, true);
  assert.match(byEnv.decided_by, /AGENT_SHARED_METRICS=true/);
  assert.deepEqual(filesIn(h.home), [], "status still creates nothing");

  await cli(h.home, ["metrics", "disable"]);
  assert.equal((await status(h.home, { AGENT_SHARED_METRICS: "true" })).enabled, false);

  const bogus = await status(h.home, { AGENT_SHARED_METRICS: "perhaps" });
  assert.equal(bogus.enabled, false);
});

Deno.test("DO_NOT_TRACK in either the environment or .env forces off; status says where", async () => {
  await using h = await tempHome();
  await cli(h.home, ["metrics", "enable"]);
  Deno.writeTextFileSync(`${h.home}/.env`, "DO_NOT_TRACK=0\n");
  const env = await status(h.home, { DO_NOT_TRACK: "1" });
  assert.equal(env.enabled, false, ".env's DO_NOT_TRACK=0 must not undo the environment's");
  assert.equal(env.decided_by, "DO_NOT_TRACK is set in the environment (forces usage metrics off)");

  Deno.writeTextFileSync(`${h.home}/.env`, "DO_NOT_TRACK=1\n");
  const dotenv = await status(h.home, { DO_NOT_TRACK: "0" });
  assert.equal(dotenv.enabled, false);
  assert.equal(
    dotenv.decided_by,
    `DO_NOT_TRACK is set in ${h.home}/.env (forces usage metrics off)`,
  );
  assert.deepEqual(filesIn(`${h.home}/telemetry`), [], "nothing is created");
});

Deno.test("AGENT_SHARED_METRICS: the environment beats .env; status names the source", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(`${h.home}/.env`, "AGENT_SHARED_METRICS=true\n");
  const operator = await status(h.home, { AGENT_SHARED_METRICS: "false" });
  assert.equal(operator.enabled, false);
  assert.equal(operator.decided_by, "AGENT_SHARED_METRICS=false in the environment");

  const dotenv = await status(h.home);
  assert.equal(dotenv.enabled, true);
  assert.equal(dotenv.decided_by, `AGENT_SHARED_METRICS=true in ${h.home}/.env`);
  const human = await cli(h.home, ["metrics", "status"]);
  assert.match(
    human.stdout,
    /^Usage metrics: collecting \(AGENT_SHARED_METRICS=true in .*\.env\)/m,
  );
});

// ---------------------------------------------------------------------------------------------
// Broken configuration

const BROKEN_YAML = "telemetry: [\n";
const METRICS_COMMANDS_WITH_CONFIG = [
  ["metrics", "status"],
  ["metrics", "enable"],
  ["metrics", "disable"],
  ["metrics", "preview"],
  ["metrics", "export"],
  ["metrics", "send"],
  ["metrics", "reset", "--yes"],
];

Deno.test("a broken config.yaml makes every metrics command exit 2 naming the file", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, BROKEN_YAML);
  for (const argv of METRICS_COMMANDS_WITH_CONFIG) {
    const result = await cli(h.home, argv);
    assert.equal(result.code, 2, `${argv.join(" ")}: ${result.stderr}`);
    assert.ok(result.stderr.includes(h.config), `${argv.join(" ")} names the file`);
    assert.match(result.stderr, /invalid YAML/);
    assert.match(result.stderr, /Fix: /);
    assert.doesNotMatch(result.stderr, /^\s+at /m, "no stack trace for a config error");
    assert.equal(result.stdout, "");
  }
  assert.equal(Deno.readTextFileSync(h.config), BROKEN_YAML, "a broken file is never rewritten");
  assert.deepEqual(filesIn(h.home), ["config.yaml"]);
});

Deno.test("a broken config.yaml with --json prints one error document (file, exit code)", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, BROKEN_YAML);
  for (const argv of METRICS_COMMANDS_WITH_CONFIG) {
    const doc = await cliJson(h.home, [...argv, "--json"], 2);
    assert.deepEqual(Object.keys(doc), ["error"]);
    assert.equal(typeof doc.error.message, "string");
    assert.ok(doc.error.message.includes(h.config));
    assert.equal(doc.error.file, h.config);
    assert.equal(doc.error.exit_code, 2);
  }
});

Deno.test({
  name: "a YAML syntax error names the line of config.yaml (text and --json)",
  fn: async () => {
    await using h = await tempHome();
    Deno.writeTextFileSync(h.config, "# fine\nmodel:\n  default: x\n" + BROKEN_YAML);
    const text = await cli(h.home, ["metrics", "status"]);
    assert.equal(text.code, 2);
    assert.match(text.stderr, new RegExp(`${h.config}:[45]\\b`));
    const doc = await cliJson(h.home, ["metrics", "status", "--json"], 2);
    assert.ok(doc.error.line === 4 || doc.error.line === 5, `line: ${doc.error.line}`);
  },
});

Deno.test("enabled: maybe is exit 2 naming the key and its line; enable replaces it", async () => {
  await using h = await tempHome();
  const config = "# header\ntelemetry:\n  shared_metrics:\n    enabled: maybe\n";
  Deno.writeTextFileSync(h.config, config);
  const text = await cli(h.home, ["metrics", "status"]);
  assert.equal(text.code, 2);
  assert.ok(text.stderr.includes(`${h.config}:4`), text.stderr);
  assert.match(text.stderr, /telemetry\.shared_metrics\.enabled/);
  assert.match(text.stderr, /expected true or false, got string "maybe"/);

  const doc = await cliJson(h.home, ["metrics", "preview", "--json"], 2);
  assert.equal(doc.error.file, h.config);
  assert.equal(doc.error.key, "telemetry.shared_metrics.enabled");
  assert.equal(doc.error.line, 4);
  assert.equal(doc.error.exit_code, 2);

  // enable replaces it (metrics_consent_test.ts covers how it says so).
  const enable = await cli(h.home, ["metrics", "enable"]);
  assert.equal(enable.code, 0, enable.stderr);
  assert.equal(Deno.readTextFileSync(h.config), config.replace("maybe", "true"));
});

Deno.test("a non-string endpoint in config.yaml is exit 2 naming the key", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(
    h.config,
    "telemetry:\n  shared_metrics:\n    enabled: true\n    endpoint: [a, b]\n",
  );
  const doc = await cliJson(h.home, ["metrics", "status", "--json"], 2);
  assert.equal(doc.error.key, "telemetry.shared_metrics.endpoint");
});

Deno.test("e2e: consent round trip and a broken config through the real CLI", async () => {
  await using h = await tempHome();
  const fresh = await spawnCli(h.home, ["metrics", "status", "--json"]);
  assert.equal(fresh.code, 0, fresh.stderr);
  assert.equal(parseOneJson(fresh.stdout).enabled, false);
  assert.deepEqual(filesIn(h.home), []);

  const enable = await spawnCli(h.home, ["metrics", "enable"]);
  assert.equal(enable.code, 0, enable.stderr);
  const after = await spawnCli(h.home, ["metrics", "status", "--json"]);
  assert.equal(parseOneJson(after.stdout).enabled, true);

  const dnt = await spawnCli(h.home, ["metrics", "status"], { env: { DO_NOT_TRACK: "1" } });
  assert.equal(dnt.code, 0, dnt.stderr);
  assert.match(dnt.stdout, /off \(DO_NOT_TRACK/);

  Deno.writeTextFileSync(h.config, BROKEN_YAML);
  const broken = await spawnCli(h.home, ["metrics", "status", "--json"]);
  assert.equal(broken.code, 2);
  const doc = parseOneJson(broken.stdout) as { error: { file: string } };
  assert.equal(doc.error.file, h.config);
});
