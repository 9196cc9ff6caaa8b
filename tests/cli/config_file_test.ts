/**
 * Every command and `config.yaml`: commands that change it (or `.env`) take turns under the edit
 * lock of `<home>`, so that run at once each keeps its change (before, the last writer's copy of
 * the file won); a key nothing reads is warned about on stderr (before, silently ignored).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { installLink } from "../../src/mcp/deeplink.ts";
import { cli, parseOneJson, spawnCli, startCollector, tempHome, validPackage } from "./_helpers.ts";
import { startListener } from "./_listener.ts";

Deno.test("parallel mcp add and metrics enable processes keep every change to config.yaml", async () => {
  await using h = await tempHome();
  const names = Array.from({ length: 8 }, (_, i) => `s${i + 1}`);
  const results = await Promise.all([
    ...names.map((name) =>
      spawnCli(h.home, ["mcp", "add", name, "--url", `http://127.0.0.1:9/${name}`])
    ),
    spawnCli(h.home, ["metrics", "enable"]),
  ]);
  for (const result of results) assert.equal(result.code, 0, result.stderr);
  const config = parseYaml(Deno.readTextFileSync(join(h.home, "config.yaml")));
  assert.deepEqual(Object.keys(config.mcp_servers).sort(), names);
  assert.equal(config.telemetry.shared_metrics.enabled, true);
  assert(!Deno.readDirSync(h.home).some((entry) => entry.name.endsWith(".lock")), "no lock file");
});

Deno.test("a misspelled config key is a warning on stderr naming file, line, key and the likely fix; --json stdout stays one document", async () => {
  await using h = await tempHome();
  const file = join(h.home, "config.yaml");
  Deno.writeTextFileSync(file, "telemetry:\n  shared_metrics:\n    enabeld: true\n");
  const result = await cli(h.home, ["metrics", "status", "--json"]);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(parseOneJson(result.stdout).enabled, false); // the misspelled key did nothing
  assert.equal(
    result.stderr,
    `warning: ${file}:3: telemetry.shared_metrics.enabeld: unknown key \`enabeld\` is ignored; ` +
      "did you mean `enabled`?\n",
  );
  // A file that does not load is reported once, by the command itself.
  Deno.writeTextFileSync(file, "model: [\n");
  const broken = await cli(h.home, ["metrics", "status"]);
  assert.equal(broken.code, 2);
  assert.equal(broken.stderr.match(/invalid YAML/g)?.length, 1, broken.stderr);
  assert.doesNotMatch(broken.stderr, /warning:/);
});

Deno.test("every --json document with warnings starts them with the config file's, which stderr has once", async () => {
  await using h = await tempHome();
  await using collector = startCollector(202);
  await using listener = startListener(h.home);
  const file = join(h.home, "config.yaml");
  Deno.writeTextFileSync(file, "modle: x\nmcp_servers:\n  gone:\n    command: /no/such/server\n");
  Deno.writeTextFileSync(join(h.home, ".env"), "pasted-without-a-name\n");
  const fileWarnings = [
    `${file}:1: modle: unknown key \`modle\` is ignored; did you mean \`model\`?`,
    `${join(h.home, ".env")}:1: nothing is read from this line: it has no \`=\`; write it as ` +
    "NAME=value",
  ];
  const packageFile = join(h.home, "package.json");
  Deno.writeTextFileSync(packageFile, JSON.stringify(validPackage()));
  const plainHttp = "mcp.example.com is reached over plain http: nothing sent to it (headers " +
    "and tokens too) is encrypted; use its https:// URL if it has one";
  const notEnabled = "The webhook platform is not enabled. Enable it with `agent gateway setup " +
    `--enable\`, or set platforms.webhook.enabled: true in ${file}.`;
  const commands: {
    argv: string[];
    code: number;
    /** The command's own warnings after the config file's, each on stderr once too. */
    own?: string[];
    env?: Record<string, string>;
  }[] = [
    { argv: ["mcp", "list", "--json"], code: 0 },
    { argv: ["mcp", "tools", "--json"], code: 0 },
    { argv: ["mcp", "test", "gone", "--json"], code: 1 },
    { argv: ["mcp", "remove", "gone", "--json"], code: 0 },
    { argv: ["webhook", "list", "--json"], code: 0 },
    { argv: ["webhook", "subscribe", "hook", "--json"], code: 0, own: [notEnabled] },
    {
      argv: ["webhook", "test", "hook", "--json"],
      code: 0,
      env: { WEBHOOK_PORT: String(listener.port) },
    },
    { argv: ["webhook", "events", "--json"], code: 0 },
    { argv: ["webhook", "redeliver", "--failed", "--json"], code: 0 },
    { argv: ["webhook", "remove", "hook", "--json"], code: 0 },
    { argv: ["metrics", "status", "--json"], code: 0 },
    { argv: ["metrics", "enable", "--json"], code: 0 },
    { argv: ["metrics", "preview", "--json"], code: 0 },
    { argv: ["metrics", "export", "--json"], code: 0 },
    {
      argv: ["metrics", "enable", "--send", "--endpoint", collector.endpoint, "--json"],
      code: 0,
    },
    { argv: ["metrics", "send", "--json"], code: 0 },
    { argv: ["metrics", "disable", "--json"], code: 0 },
    { argv: ["metrics", "reset", "--yes", "--json"], code: 0 },
    { argv: ["metrics", "validate", packageFile, "--json"], code: 0 },
    { argv: ["gateway", "setup", "--json"], code: 0 },
    // Last: they add servers, which the commands above would connect to.
    {
      argv: ["mcp", "add", "added", "--url", "http://mcp.example.com/mcp", "--json"],
      code: 0,
      own: [plainHttp],
    },
    {
      argv: ["mcp", "install", "--yes", "--json", installLink("linked", { command: "npx" })],
      code: 0,
    },
    {
      argv: [
        "mcp",
        "install",
        "--yes",
        "--json",
        installLink("remote", { url: "http://mcp.example.com/mcp" }),
      ],
      code: 0,
      own: [plainHttp],
    },
    ...(Deno.build.os === "linux"
      ? [{
        argv: ["mcp", "install", "--register-handler", "--json"],
        code: 0,
        // The desktop entry goes to the test's home; no xdg-mime is found.
        env: { HOME: h.home, XDG_DATA_HOME: join(h.home, "data"), PATH: "" },
      }]
      : []),
  ];
  for (const { argv, code, own, env } of commands) {
    const label = `agent ${argv.join(" ")}`;
    const result = await cli(h.home, argv, { env });
    assert.equal(result.code, code, `${label}\n${result.stdout}\n${result.stderr}`);
    const warnings = parseOneJson(result.stdout).warnings as string[];
    assert.ok(Array.isArray(warnings), `${label}: no warnings list\n${result.stdout}`);
    assert.deepEqual(warnings.slice(0, 2), fileWarnings, label);
    if (own) assert.deepEqual(warnings.slice(2), own, label);
    for (const warning of [...fileWarnings, ...own ?? []]) {
      assert.equal(result.stderr.split(`warning: ${warning}\n`).length - 1, 1, label);
    }
  }
});

Deno.test("a config.yaml that is a folder is one line naming the path, no stack", async () => {
  // A home that is a file: see home_errors_test.ts.
  await using h = await tempHome();
  const folder = join(h.home, "config.yaml");
  Deno.mkdirSync(folder);
  for (const args of [["metrics", "status"], ["webhook", "list"], ["mcp", "list"]]) {
    const result = await cli(h.home, args);
    assert.equal(result.code, 1, result.stderr);
    assert.ok(
      result.stderr.startsWith(`agent: '${folder}' is a folder, not a file. Fix: `),
      result.stderr,
    );
    assert.equal(result.stderr.trim().split("\n").length, 1, result.stderr);
  }
});
