/**
 * `agent gateway setup` from a second QA pass: YAML aliases in the webhook section, malformed
 * values of the keys setup overwrites, and a kept global secret that is weak or cut short by `#`.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadConfig } from "../../src/home/config.ts";
import { readWebhookSettings } from "../../src/webhook/settings.ts";
import { cli, parseOneJson, tempHome } from "./_helpers.ts";
import { portIsFree } from "./_mcp_helpers.ts";

/** Whether the default port is free: the tests of setup's defaults need it. */
const DEFAULT_PORT_FREE = portIsFree(8644);

function settingsOf(home: string) {
  return readWebhookSettings(loadConfig({ home, env: () => undefined }));
}

function dotenvPath(home: string): string {
  return join(home, ".env");
}

Deno.test("setup edits a webhook section that is a YAML alias, leaving the anchor alone", async () => {
  await using h = await tempHome();
  const cases: [string, string][] = [
    ["x: &d {port: 1111}\nplatforms:\n  webhook:\n    extra: *d\n", "platforms.webhook.extra"],
    ["x: &d {port: 1111}\nplatforms: {webhook: {extra: *d}}\n", "platforms.webhook.extra"],
    ["b: &b {enabled: false}\nplatforms:\n  webhook: *b\n", "platforms.webhook"],
  ];
  for (const [yaml, key] of cases) {
    Deno.writeTextFileSync(h.config, yaml);
    const run = await cli(h.home, ["gateway", "setup", "--port", "9100", "--json"]);
    assert.equal(run.code, 0, `${yaml}: ${run.stdout}${run.stderr}`);
    const report = parseOneJson(run.stdout);
    assert.match(String((report.warnings as string[])[0]), new RegExp(`^${key} .*an alias`));
    const settings = settingsOf(h.home);
    // `enabled: false` of the aliased mapping is the current state, and is kept.
    assert.deepEqual([settings.enabled, settings.port], [yaml.startsWith("x"), 9100], yaml);
    const config = loadConfig({ home: h.home, env: () => undefined });
    // The anchored mapping other keys may use is unchanged.
    assert.deepEqual(
      config.source.get(yaml.startsWith("x") ? "x" : "b"),
      yaml.startsWith("x") ? { port: 1111 } : { enabled: false },
    );
  }
});

Deno.test("setup refuses to edit a key whose anchor other keys alias, and writes nothing", async () => {
  await using h = await tempHome();
  const yaml = "platforms:\n  webhook:\n    extra: &d {port: 1111}\nother: *d\n";
  Deno.writeTextFileSync(h.config, yaml);
  const run = await cli(h.home, ["gateway", "setup", "--port", "9100"]);
  assert.equal(run.code, 2, run.stderr);
  // `other` is also warned about: nothing reads it.
  assert.ok(
    run.stderr.includes(
      `\nagent: ${h.config}:3 (key platforms.webhook.extra): it carries the anchor &d`,
    ),
    run.stderr,
  );
  assert.match(run.stderr, /Fix: move the anchor/);
  assert.doesNotMatch(run.stderr, /at .*\.(ts|js):\d+/);
  assert.equal(Deno.readTextFileSync(h.config), yaml);
  assert.throws(() => Deno.statSync(dotenvPath(h.home)), Deno.errors.NotFound);
});

Deno.test("setup overwrites malformed values of the keys it owns, with a warning", async () => {
  await using h = await tempHome();
  const yaml = 'platforms:\n  webhook:\n    enabled: "maybe"\n    extra:\n      port: 99999\n' +
    "      host: 127\n      secret: [1]\n";
  Deno.writeTextFileSync(h.config, yaml);
  const run = await cli(h.home, [
    "gateway",
    "setup",
    "--port",
    "18830",
    "--enable",
    "--host",
    "127.0.0.1",
    "--generate-secret",
    "--json",
  ]);
  assert.equal(run.code, 0, run.stdout + run.stderr);
  assert.deepEqual(parseOneJson(run.stdout).warnings, [
    `platforms.webhook.enabled in ${h.config}:3 was "maybe", which is not valid; replaced with true`,
    `platforms.webhook.extra.port in ${h.config}:5 was 99999, which is not valid; replaced with 18830`,
    `platforms.webhook.extra.host in ${h.config}:6 was 127, which is not valid; replaced with 127.0.0.1`,
    `platforms.webhook.extra.secret in ${h.config}:7 was [1], which is not valid; replaced with ` +
    `WEBHOOK_SECRET in ${dotenvPath(h.home)}`,
  ]);
  const settings = settingsOf(h.home);
  assert.deepEqual([settings.enabled, settings.port, settings.host], [true, 18830, "127.0.0.1"]);

  // A key setup does not write this time still stops it, and nothing is written.
  const kept = 'platforms:\n  webhook:\n    enabled: "maybe"\n    extra:\n      host: 127\n';
  Deno.writeTextFileSync(h.config, kept);
  const blocked = await cli(h.home, ["gateway", "setup", "--port", "18830"]);
  assert.equal(blocked.code, 2, blocked.stderr);
  assert.ok(
    blocked.stderr.startsWith(`agent: ${h.config}:5 (key platforms.webhook.extra.host)`),
    blocked.stderr,
  );
  assert.equal(Deno.readTextFileSync(h.config), kept);
});

Deno.test("setup replaces a port that is a list or a mapping, as it does a wrong number", async () => {
  await using h = await tempHome();
  // `[1]` reads as the text "1", but the gateway takes only a number or a string.
  for (const [value, shown] of [["[1]", "[1]"], ['["8644"]', '["8644"]'], ["{a: 1}", '{"a":1}']]) {
    Deno.writeTextFileSync(h.config, `platforms:\n  webhook:\n    extra:\n      port: ${value}\n`);
    const run = await cli(h.home, ["gateway", "setup", "--port", "18831", "--enable", "--json"]);
    assert.equal(run.code, 0, `${value}: ${run.stdout}${run.stderr}`);
    const warnings = parseOneJson(run.stdout).warnings as string[];
    assert.ok(
      warnings.includes(
        `platforms.webhook.extra.port in ${h.config}:4 was ${shown}, which is not valid; ` +
          "replaced with 18831",
      ),
      `${value}: ${warnings}`,
    );
    assert.equal(settingsOf(h.home).port, 18831);
  }
});

Deno.test({
  name: "setup warns about a kept secret that is weak or cut short by '#'",
  // What it checks would also hold a "port 8644 is in use" warning.
  ignore: !DEFAULT_PORT_FREE,
  fn: async () => {
    await using h = await tempHome();
    const cases: [string, RegExp[]][] = [
      ["WEBHOOK_SECRET=abcdefgh#ijklmnop1234\n", [
        /^WEBHOOK_SECRET in .*\.env:1 has a '#' after 8 characters: .* Fix: quote the value/,
        /^the kept global secret \(WEBHOOK_SECRET in .*\.env:1\) .* at least 16 characters\. Fix: `agent gateway setup --generate-secret` \(or `--secret <new>`\)/,
      ]],
      ["A=1\nWEBHOOK_SECRET=short\n", [
        /^the kept global secret \(WEBHOOK_SECRET in .*\.env:2\) breaks setup's secret rules: use at least 16/,
      ]],
      ['WEBHOOK_SECRET="abcdefgh#ijklmnop1234"\n', []],
      ["WEBHOOK_SECRET=abcdefghijklmnop1234 # note\n", []],
    ];
    for (const [text, expected] of cases) {
      Deno.writeTextFileSync(dotenvPath(h.home), text);
      const run = await cli(h.home, ["gateway", "setup", "--json"]);
      assert.equal(run.code, 0, run.stderr);
      const report = parseOneJson(run.stdout);
      assert.equal(report.secret, "kept");
      const warnings = report.warnings as string[];
      assert.equal(warnings.length, expected.length, `${text}: ${warnings}`);
      expected.forEach((pattern, i) => assert.match(warnings[i], pattern));
      for (const warning of warnings) assert.doesNotMatch(warning, /ijklmnop|short\b/);
      const plain = await cli(h.home, ["gateway", "setup"]);
      for (const pattern of expected) {
        assert.match(plain.stderr, new RegExp(`warning: ${pattern.source.slice(1)}`));
      }
    }
  },
});
