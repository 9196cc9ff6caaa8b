/**
 * `agent gateway setup` on unusual files: sections whose keys are all commented out, sections of
 * the wrong type, malformed variables in `.env` or the environment. A failing setup writes
 * nothing, neither config.yaml nor .env.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse } from "dotenv";
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

Deno.test("setup fills in a webhook section whose keys are all commented out, keeping the comments", async () => {
  await using h = await tempHome();
  const cases = [
    "platforms:\n  webhook:\n#    enabled: true\n",
    "platforms:\n  webhook: # later\n#    extra:\n#      port: 9000\nmodel:\n  default: x\n",
    "platforms:\n",
    "platforms: ~\n",
    "platforms:\n  webhook:\n    enabled: false\n    extra:\n    # host: 127.0.0.1\n",
  ];
  for (const yaml of cases) {
    Deno.writeTextFileSync(h.config, yaml);
    const run = await cli(h.home, ["gateway", "setup", "--port", "9100", "--json"]);
    assert.equal(run.code, 0, `${yaml}: ${run.stdout}${run.stderr}`);
    assert.equal(parseOneJson(run.stdout).port, 9100);
    const settings = settingsOf(h.home);
    // An explicit `enabled: false` is kept: only --enable turns the listener on.
    assert.equal(settings.enabled, !yaml.includes("enabled: false"), yaml);
    assert.equal(settings.port, 9100, yaml);
    const written = Deno.readTextFileSync(h.config);
    for (const comment of yaml.match(/#.*$/gm) ?? []) {
      assert.ok(written.includes(comment.slice(1).trim()), `${comment} kept in:\n${written}`);
    }
    if (yaml.includes("model:")) assert.match(written, /model:\n {2}default: x/);
  }
});

Deno.test("setup on a section of the wrong type exits 2 naming file, key and fix, and writes nothing", async () => {
  await using h = await tempHome();
  const cases: [string, string, number][] = [
    ["platforms: []\n", "platforms", 1],
    ["platforms:\n  webhook: [a]\n", "platforms.webhook", 2],
    ['platforms:\n  webhook:\n    extra: "str"\n', "platforms.webhook.extra", 3],
  ];
  for (const [yaml, key, line] of cases) {
    Deno.writeTextFileSync(h.config, yaml);
    const run = await cli(h.home, ["gateway", "setup"]);
    assert.equal(run.code, 2, `${yaml}: ${run.stderr}`);
    assert.ok(
      run.stderr.startsWith(`agent: ${h.config}:${line} (key ${key}): expected a mapping`),
      run.stderr,
    );
    assert.match(run.stderr, /Fix: write .* as a mapping/);
    assert.doesNotMatch(run.stderr, /Expected YAML collection|at .*\.ts:\d+/);
    const json = await cli(h.home, ["gateway", "setup", "--generate-secret", "--json"]);
    assert.equal(json.code, 2);
    const error = parseOneJson(json.stdout).error as Record<string, unknown>;
    assert.deepEqual([error.file, error.key, error.line], [h.config, key, line]);
    assert.equal(Deno.readTextFileSync(h.config), yaml);
    assert.throws(() => Deno.statSync(dotenvPath(h.home)), Deno.errors.NotFound);
  }
});

Deno.test({
  name: "setup rewrites a malformed WEBHOOK_PORT / WEBHOOK_ENABLED of .env and says so",
  // What it checks would also hold a "port 8644 is in use" warning.
  ignore: !DEFAULT_PORT_FREE,
  fn: async () => {
    await using h = await tempHome();
    Deno.writeTextFileSync(dotenvPath(h.home), "# mine\nWEBHOOK_PORT=abc\nWEBHOOK_ENABLED=maybe\n");
    const run = await cli(h.home, ["gateway", "setup", "--json"]);
    assert.equal(run.code, 0, run.stdout + run.stderr);
    const report = parseOneJson(run.stdout);
    assert.deepEqual(report.warnings, [
      `WEBHOOK_ENABLED=maybe in ${dotenvPath(h.home)} was not valid; replaced with true`,
      `WEBHOOK_PORT=abc in ${dotenvPath(h.home)} was not valid; replaced with 8644`,
    ]);
    const dotenv = parse(Deno.readTextFileSync(dotenvPath(h.home)));
    assert.equal(dotenv.WEBHOOK_PORT, "8644");
    assert.equal(dotenv.WEBHOOK_ENABLED, "true");
    assert.ok(Deno.readTextFileSync(dotenvPath(h.home)).startsWith("# mine\n"));
    assert.equal(settingsOf(h.home).port, 8644);
  },
});

Deno.test("setup blocked by a variable it does not own names .env or the environment, and writes nothing", async () => {
  await using h = await tempHome();
  const yaml = "platforms:\n  webhook:\n    enabled: false\n";
  Deno.writeTextFileSync(h.config, yaml);
  const text = "A=1\nINSECURE_NO_AUTH=maybe\n";
  Deno.writeTextFileSync(dotenvPath(h.home), text);
  const run = await cli(h.home, ["gateway", "setup", "--generate-secret"]);
  assert.equal(run.code, 2);
  assert.ok(
    run.stderr.startsWith(`agent: ${dotenvPath(h.home)}:2 (key INSECURE_NO_AUTH): `),
    run.stderr,
  );
  assert.match(run.stderr, /Fix: set INSECURE_NO_AUTH to true or false in .*\.env/);
  assert.equal(Deno.readTextFileSync(dotenvPath(h.home)), text);
  assert.equal(Deno.readTextFileSync(h.config), yaml);

  Deno.removeSync(dotenvPath(h.home));
  for (const name of ["WEBHOOK_PORT", "WEBHOOK_ENABLED", "INSECURE_NO_AUTH"]) {
    const fromEnv = await cli(h.home, ["gateway", "setup", "--json"], { env: { [name]: "maybe" } });
    assert.equal(fromEnv.code, 2, name);
    const error = parseOneJson(fromEnv.stdout).error as Record<string, unknown>;
    assert.deepEqual([error.file, error.key], ["the environment", name]);
    assert.match(String(error.message), new RegExp(`unset ${name}`));
    assert.equal(Deno.readTextFileSync(h.config), yaml);
    assert.throws(() => Deno.statSync(dotenvPath(h.home)), Deno.errors.NotFound);
  }
});

Deno.test("setup --secret refuses a whsec_ secret that is not base64", async () => {
  await using h = await tempHome();
  const run = await cli(h.home, ["gateway", "setup", "--secret", "whsec_!!!notbase64!!!"]);
  assert.equal(run.code, 2);
  assert.match(run.stderr, /--secret: a whsec_ secret is whsec_ followed by base64/);
  assert.throws(() => Deno.statSync(dotenvPath(h.home)), Deno.errors.NotFound);
  assert.throws(() => Deno.statSync(h.config), Deno.errors.NotFound);
  const ok = await cli(h.home, [
    "gateway",
    "setup",
    "--secret",
    "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  ]);
  assert.equal(ok.code, 0, ok.stderr);
});

Deno.test("setup that rewrites WEBHOOK_ENABLED or WEBHOOK_PORT in .env says it wrote .env too", async () => {
  await using h = await tempHome();
  const dotenv = dotenvPath(h.home);
  Deno.writeTextFileSync(h.config, "platforms:\n  webhook:\n    enabled: true\n");
  Deno.writeTextFileSync(dotenv, "WEBHOOK_ENABLED=no\nWEBHOOK_SECRET=a-global-secret-0123456789\n");
  const run = await cli(h.home, ["gateway", "setup", "--enable"]);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout.split("\n")[0], `Wrote ${h.config} and ${dotenv}.`);
  assert.match(run.stdout, /^ {2}secret: {3}unchanged$/m);
  assert.equal(parse(Deno.readTextFileSync(dotenv)).WEBHOOK_ENABLED, "true");
  const json = parseOneJson(
    (await cli(h.home, ["gateway", "setup", "--port", "9200", "--json"]))
      .stdout,
  );
  assert.deepEqual(json.written, [h.config, dotenv]);
  // Nothing for .env: only config.yaml is named.
  Deno.writeTextFileSync(dotenv, "WEBHOOK_SECRET=a-global-secret-0123456789\n");
  const plain = await cli(h.home, ["gateway", "setup", "--port", "9300"]);
  assert.equal(plain.code, 0, plain.stderr);
  assert.equal(plain.stdout.split("\n")[0], `Wrote ${h.config}.`);
  assert.deepEqual(
    parseOneJson((await cli(h.home, ["gateway", "setup", "--json"])).stdout).written,
    [h.config],
  );
});
