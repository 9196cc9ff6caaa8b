/**
 * Commands and the shape of `config.yaml`: a CRLF file stays CRLF through every command that
 * edits it; `mcp rm` takes the entry's own comment with it; YAML merge keys (`<<: *defaults`)
 * work in `mcp_servers`; a `config.yaml` that is a folder is one line naming the path and the
 * fix; `.env` keeps `export` and inline comments through `gateway setup`.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { stdioCommand } from "../fixtures/mcp/spawn.ts";
import { cli, cliJson, type CliResult, tempHome } from "./_helpers.ts";
import { denoEnv, yamlValue } from "./_mcp_helpers.ts";

function expectCode(result: CliResult, code: number): void {
  assert.equal(result.code, code, `exit code\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
}

/** Every line break of `text` is CRLF. */
function assertCrlf(text: string, what: string): void {
  assert.doesNotMatch(text, /(?<!\r)\n/, `${what}: a line ends in LF only:\n${text}`);
}

Deno.test("a CRLF config.yaml stays CRLF through mcp add, mcp rm, metrics enable and gateway setup", async () => {
  await using h = await tempHome();
  const lines = [
    "# my agent",
    "model:",
    "  default: gpt-4o # keep me",
    "mcp_servers:",
    "  # the old one",
    "  old:",
    "    command: echo",
    "",
  ];
  Deno.writeTextFileSync(h.config, lines.join("\r\n"));
  const steps = [
    ["mcp", "add", "fs", "--command", "npx", "--arg", "-y", "--arg", "server"],
    ["mcp", "rm", "old"],
    ["metrics", "enable"],
    ["gateway", "setup", "--port", "9100", "--generate-secret", "--json"],
  ];
  for (const argv of steps) {
    const result = await cli(h.home, argv);
    expectCode(result, 0);
    const text = Deno.readTextFileSync(h.config);
    assertCrlf(text, argv.join(" "));
    for (const kept of ["# my agent\r\n", "  default: gpt-4o # keep me\r\n"]) {
      assert.ok(text.includes(kept), `${argv.join(" ")}: lost ${JSON.stringify(kept)}:\n${text}`);
    }
  }
  const text = Deno.readTextFileSync(h.config);
  assert.ok(!text.includes("the old one"), text);
  const config = parseYaml(text);
  assert.deepEqual(config.mcp_servers, { fs: { command: "npx", args: ["-y", "server"] } });
  assert.equal(config.telemetry.shared_metrics.enabled, true);
  assert.equal(config.platforms.webhook.extra.port, 9100);
});

Deno.test("mcp rm removes the entry's own comment lines, not the section's or the next entry's", async () => {
  await using h = await tempHome();
  const before = [
    "mcp_servers:",
    "  # servers I use",
    "",
    "  # files: my documents",
    "  files:",
    "    command: npx",
    "    # args: [--read-only]",
    "  # notes: the wiki",
    "  notes:",
    "    url: https://example.com/mcp",
    "",
  ];
  Deno.writeTextFileSync(h.config, before.join("\n"));
  expectCode(await cli(h.home, ["mcp", "rm", "files"]), 0);
  assert.equal(
    Deno.readTextFileSync(h.config),
    [...before.slice(0, 3), ...before.slice(7)].join("\n"),
  );
  const doc = await cliJson(h.home, ["mcp", "rm", "notes", "--json"]);
  assert.deepEqual(doc, { removed: "notes", warnings: [] });
  // The section's comment stays; the blank line that only separated it from entries goes.
  assert.equal(Deno.readTextFileSync(h.config), "mcp_servers:\n  # servers I use\n");
});

Deno.test("merge keys in mcp_servers: no `<<` warning, and the merged command and args are used", async () => {
  await using h = await tempHome();
  const echo = stdioCommand(["--tools", "echo"]);
  const add = stdioCommand(["--tools", "add"]);
  Deno.writeTextFileSync(
    h.config,
    [
      "x-fixture: &fixture",
      `  command: ${yamlValue(echo.command)}`,
      `  args: ${yamlValue(echo.args)}`,
      "mcp_servers:",
      "  merged:",
      "    <<: *fixture",
      "  overridden:",
      "    <<: *fixture",
      `    args: ${yamlValue(add.args)}`,
      "",
    ].join("\n"),
  );
  const env = denoEnv();
  const listed = await cli(h.home, ["mcp", "ls", "--json"], { env });
  expectCode(listed, 0);
  assert.equal(listed.stderr, "");
  const list = JSON.parse(listed.stdout);
  assert.deepEqual(list.issues, []);
  assert.deepEqual(list.servers.map((server: { name: string }) => server.name), [
    "merged",
    "overridden",
  ]);

  const merged = await cliJson(h.home, ["mcp", "test", "merged", "--json"], 0, { env });
  assert.equal(merged.ok, true);
  assert.deepEqual(merged.tools.map((tool: { name: string }) => tool.name), ["mcp__merged__echo"]);
  const overridden = await cliJson(h.home, ["mcp", "test", "overridden", "--json"], 0, { env });
  assert.deepEqual(
    overridden.tools.map((tool: { name: string }) => tool.name),
    ["mcp__overridden__add"],
  );
});

Deno.test("mcp rm of a server that only comes from a merge key says where it is written, writes nothing", async () => {
  await using h = await tempHome();
  const text = [
    "shared: &shared",
    "  wiki: {url: https://example.com/mcp}",
    "mcp_servers:",
    "  <<: *shared",
    "  files: {command: npx}",
    "",
  ].join("\n");
  Deno.writeTextFileSync(h.config, text);
  const result = await cli(h.home, ["mcp", "rm", "wiki"]);
  expectCode(result, 2);
  assert.equal(
    result.stderr,
    `agent: ${h.config}:2 (key mcp_servers.wiki): MCP server 'wiki' is merged into ` +
      "mcp_servers with `<<` from the mapping written here, so it cannot be removed from " +
      "mcp_servers alone; nothing was written. Fix: delete it here (every key that merges this " +
      "mapping loses it), or replace the `<<` in mcp_servers by the servers you want\n",
  );
  assert.equal(Deno.readTextFileSync(h.config), text);
});

Deno.test("a config.yaml that is a folder: one line naming the path and the fix, for reading and editing commands", async () => {
  await using h = await tempHome();
  const folder = join(h.home, "config.yaml");
  Deno.mkdirSync(folder);
  const commands = [
    ["metrics", "status"],
    ["mcp", "list"],
    ["webhook", "list"],
    ["mcp", "add", "fs", "--command", "npx"],
    ["mcp", "rm", "fs"],
    ["metrics", "enable"],
    ["gateway", "setup", "--port", "9100"],
  ];
  for (const argv of commands) {
    const result = await cli(h.home, argv);
    expectCode(result, 1);
    assert.equal(
      result.stderr,
      `agent: '${folder}' is a folder, not a file. Fix: move or ` +
        "delete that folder, then run the command again (config.yaml is created when needed)\n",
      argv.join(" "),
    );
  }
  const json = await cliJson(h.home, ["mcp", "add", "fs", "--command", "npx", "--json"], 1);
  assert.match(json.error.message, /is a folder, not a file\. Fix: /);
  assert.ok(Deno.statSync(folder).isDirectory);
  assert.deepEqual([...Deno.readDirSync(folder)], []);
});

Deno.test("gateway setup keeps `export` and inline comments in .env", async () => {
  await using h = await tempHome();
  const dotenv = join(h.home, ".env");
  const others = ["OTHER=1 # other's note", "# a comment line"];
  Deno.writeTextFileSync(
    dotenv,
    ["export WEBHOOK_SECRET=old-secret-0123456789  # from the vault", ...others, ""].join("\n"),
  );
  const secret = "a-new-secret-0123456789";
  expectCode(await cli(h.home, ["gateway", "setup", "--secret", secret, "--json"]), 0);
  assert.equal(
    Deno.readTextFileSync(dotenv),
    [`export WEBHOOK_SECRET=${secret} # from the vault`, ...others, ""].join("\n"),
  );
});

Deno.test("gateway setup and metrics enable edit a section merged in with `<<` without losing its other keys", async () => {
  await using h = await tempHome();
  const text = [
    "defaults: &defaults",
    "  enabled: false",
    "  extra:",
    "    port: 8644",
    "    rate_limit: {requests: 5, window_seconds: 60}",
    "metrics_defaults: &metrics",
    "  shared_metrics:",
    "    endpoint: https://metrics.example.com/v2",
    "platforms:",
    "  webhook:",
    "    <<: *defaults",
    "telemetry:",
    "  <<: *metrics",
    "",
  ].join("\n");
  Deno.writeTextFileSync(h.config, text);
  const setup = await cliJson(h.home, [
    "gateway",
    "setup",
    "--enable",
    "--port",
    "9100",
    "--generate-secret",
    "--json",
  ]);
  assert.ok(
    setup.warnings.some((warning: string) =>
      warning.startsWith("platforms.webhook.extra in config.yaml came from a merge key (<<)")
    ),
    JSON.stringify(setup.warnings),
  );
  expectCode(await cli(h.home, ["metrics", "enable"]), 0);
  const written = Deno.readTextFileSync(h.config);
  assert.ok(written.startsWith(text.split("platforms:")[0]), `the anchors changed:\n${written}`);
  const config = parseYaml(written, { merge: true });
  assert.deepEqual(config.platforms.webhook, {
    enabled: true,
    extra: { port: 9100, rate_limit: { requests: 5, window_seconds: 60 } },
  });
  assert.deepEqual(config.telemetry.shared_metrics, {
    endpoint: "https://metrics.example.com/v2",
    enabled: true,
  });
  const status = await cliJson(h.home, ["metrics", "status", "--json"]);
  assert.equal(status.enabled, true);
});
