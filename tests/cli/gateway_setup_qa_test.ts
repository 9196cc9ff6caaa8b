/**
 * `agent gateway setup` from a third QA pass: unset choices keep the value the gateway resolves
 * (config.yaml, `.env`, the environment), an explicit `enabled: false` is kept, multi-line `.env`
 * values, symlinked files, and a write that fails half-way.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse } from "dotenv";
import { writeSetupFiles } from "../../src/cli/gateway_setup.ts";
import { CliError } from "../../src/cli/io.ts";
import { loadConfig } from "../../src/home/config.ts";
import { setDotenvValues } from "../../src/home/dotenv_edit.ts";
import { readWebhookSettings } from "../../src/webhook/settings.ts";
import { cli, parseOneJson, scriptedPrompter, tempHome } from "./_helpers.ts";

function settingsOf(home: string) {
  return readWebhookSettings(loadConfig({ home, env: () => undefined }));
}

function dotenvPath(home: string): string {
  return join(home, ".env");
}

Deno.test("setup without --port keeps WEBHOOK_PORT of .env everywhere, and the wizard offers it", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(dotenvPath(h.home), "WEBHOOK_PORT=9999\n");
  const run = await cli(h.home, ["gateway", "setup", "--generate-secret"]);
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /port 9999/);
  assert.equal(parse(Deno.readTextFileSync(dotenvPath(h.home))).WEBHOOK_PORT, "9999");
  assert.match(Deno.readTextFileSync(h.config), /port: 9999/);
  assert.equal(settingsOf(h.home).port, 9999);

  const script = scriptedPrompter([true, "", "all", "keep"]);
  const wizard = await cli(h.home, ["gateway", "setup"], {
    stdinIsTerminal: true,
    prompter: script.prompter,
  });
  assert.equal(wizard.code, 0, wizard.stderr);
  assert.equal(settingsOf(h.home).port, 9999, "the suggested (default) port is 9999");
});

Deno.test("setup without --port adopts WEBHOOK_PORT of the environment (the gateway's port)", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, "platforms:\n  webhook:\n    extra:\n      port: 7000\n");
  const run = await cli(h.home, ["gateway", "setup", "--json"], { env: { WEBHOOK_PORT: "7500" } });
  assert.equal(run.code, 0, run.stderr);
  const report = parseOneJson(run.stdout);
  assert.equal(report.port, 7500);
  assert.deepEqual(report.warnings, []);
  assert.equal(settingsOf(h.home).port, 7500);
});

Deno.test("setup --port keeps an explicit enabled: false / WEBHOOK_ENABLED=false; a fresh setup enables", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, "platforms:\n  webhook:\n    enabled: false\n");
  const off = await cli(h.home, ["gateway", "setup", "--port", "9300", "--json"]);
  assert.equal(off.code, 0, off.stderr);
  assert.equal(parseOneJson(off.stdout).enabled, false);
  assert.match(Deno.readTextFileSync(h.config), /enabled: false/);
  assert.deepEqual([settingsOf(h.home).enabled, settingsOf(h.home).port], [false, 9300]);

  Deno.writeTextFileSync(h.config, "");
  Deno.writeTextFileSync(dotenvPath(h.home), "WEBHOOK_ENABLED=false\n");
  const offEnv = await cli(h.home, ["gateway", "setup", "--port", "9301"]);
  assert.equal(offEnv.code, 0, offEnv.stderr);
  assert.match(offEnv.stdout, /webhooks: disabled/);
  assert.equal(parse(Deno.readTextFileSync(dotenvPath(h.home))).WEBHOOK_ENABLED, "false");
  assert.equal(settingsOf(h.home).enabled, false);

  const on = await cli(h.home, ["gateway", "setup", "--enable"]);
  assert.equal(on.code, 0, on.stderr);
  assert.equal(parse(Deno.readTextFileSync(dotenvPath(h.home))).WEBHOOK_ENABLED, "true");
  assert.deepEqual([settingsOf(h.home).enabled, settingsOf(h.home).port], [true, 9301]);

  Deno.removeSync(dotenvPath(h.home));
  Deno.removeSync(h.config);
  const fresh = await cli(h.home, ["gateway", "setup", "--port", "9302"]);
  assert.equal(fresh.code, 0, fresh.stderr);
  assert.equal(settingsOf(h.home).enabled, true);
});

Deno.test("setup --help says unset choices keep the value the gateway reads", async () => {
  await using h = await tempHome();
  const run = await cli(h.home, ["gateway", "setup", "--help"]);
  const text = run.stdout + run.stderr;
  assert.match(text, /unset choices keep\s+their current value \(as the gateway reads it/);
  assert.match(text, /enabled unless config\.yaml, \.env or the environment disables it/);
  assert.doesNotMatch(text, /\(the default\)\n/);
});

Deno.test("setup --generate-secret replaces a quoted multi-line WEBHOOK_SECRET whole", async () => {
  await using h = await tempHome();
  const key = 'PRIVATE_KEY="-----BEGIN KEY-----\nMIIB\n-----END KEY-----"\n';
  Deno.writeTextFileSync(dotenvPath(h.home), `WEBHOOK_SECRET="abc\ndef"\n${key}`);
  const run = await cli(h.home, ["gateway", "setup", "--generate-secret"]);
  assert.equal(run.code, 0, run.stderr);
  const text = Deno.readTextFileSync(dotenvPath(h.home));
  assert.match(text, /^WEBHOOK_SECRET=[A-Za-z0-9_-]{43}\nPRIVATE_KEY=/);
  assert.ok(text.endsWith(`\n${key}`), text);
  assert.doesNotMatch(text, /def"/);
});

Deno.test("setup symlinked config.yaml and .env: the targets are written, the links stay", async () => {
  await using h = await tempHome();
  const store = join(h.home, "dotfiles");
  Deno.mkdirSync(store);
  Deno.writeTextFileSync(join(store, "config.yaml"), "# mine\n");
  Deno.writeTextFileSync(join(store, "env"), "A=1\n");
  Deno.symlinkSync(join(store, "config.yaml"), h.config);
  Deno.symlinkSync(join(store, "env"), dotenvPath(h.home));
  const run = await cli(h.home, ["gateway", "setup", "--port", "9400"]);
  assert.equal(run.code, 0, run.stderr);
  assert.ok(Deno.lstatSync(h.config).isSymlink);
  assert.ok(Deno.lstatSync(dotenvPath(h.home)).isSymlink);
  assert.match(Deno.readTextFileSync(join(store, "config.yaml")), /^# mine\n[\s\S]*port: 9400/);
  assert.match(Deno.readTextFileSync(join(store, "env")), /^A=1\nWEBHOOK_SECRET=/);
  assert.equal(settingsOf(h.home).port, 9400);
});

Deno.test("writeSetupFiles: a config.yaml that cannot be written is found before .env is touched", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(join(h.home, "blocker"), "");
  const config = join(h.home, "blocker", "config.yaml"); // its folder is a file
  const dotenv = dotenvPath(h.home);
  Deno.writeTextFileSync(dotenv, "A=1\n");
  assert.throws(
    () =>
      writeSetupFiles({
        config,
        dotenv,
        dotenvValues: { WEBHOOK_SECRET: "s".repeat(20) },
        edit: () => {},
        secret: "generated",
      }),
    (error: Error) => {
      assert.ok(error instanceof CliError);
      assert.match(error.message, new RegExp(`^cannot write ${config}: .*; nothing was changed`));
      assert.match(error.message, /Fix: make .* writable/);
      return true;
    },
  );
  assert.equal(Deno.readTextFileSync(dotenv), "A=1\n");
});

Deno.test("writeSetupFiles: config.yaml failing after .env says what .env now holds, not the secret", async () => {
  await using h = await tempHome();
  const dotenv = dotenvPath(h.home);
  const secret = "new-secret-0123456789";
  const failing = () => {
    throw new Error(`cannot write ${h.config}: No space left on device (os error 28)`);
  };
  assert.throws(
    () =>
      writeSetupFiles(
        {
          config: h.config,
          dotenv,
          dotenvValues: { WEBHOOK_SECRET: secret, WEBHOOK_PORT: "9300" },
          edit: () => {},
          secret: "generated",
        },
        { dotenv: setDotenvValues, config: failing },
      ),
    (error: Error) => {
      assert.ok(error instanceof CliError);
      assert.equal(
        error.message,
        `cannot write ${h.config}: No space left on device (os error 28). ${dotenv} was ` +
          "already updated: WEBHOOK_SECRET holds a newly generated secret (not shown), " +
          `WEBHOOK_PORT=9300; ${h.config} is unchanged. Fix: make ${h.config} writable, then ` +
          "run `agent gateway setup` again with the same options but without " +
          "--generate-secret/--secret (the new secret in .env is kept)",
      );
      assert.ok(!error.message.includes(secret));
      return true;
    },
  );
  assert.equal(parse(Deno.readTextFileSync(dotenv)).WEBHOOK_SECRET, secret);

  // After the wizard, the way back is its answers, not flags.
  assert.throws(
    () =>
      writeSetupFiles(
        {
          config: h.config,
          dotenv,
          dotenvValues: { WEBHOOK_SECRET: secret },
          edit: () => {},
          secret: "set",
          asked: "wizard",
        },
        { dotenv: setDotenvValues, config: failing },
      ),
    (error: Error) => {
      assert.ok(error instanceof CliError);
      assert.match(error.message, /WEBHOOK_SECRET holds the secret you entered \(not shown\)/);
      assert.match(
        error.message,
        /run `agent gateway setup` again with the same answers, but keep the current secret \(the new one, in \.env\)$/,
      );
      assert.doesNotMatch(error.message, /--/);
      return true;
    },
  );
});

Deno.test("writeSetupFiles: config.yaml failing with its own fix after .env: one fix, setup's", async () => {
  await using h = await tempHome();
  const dotenv = dotenvPath(h.home);
  const failing = () => {
    throw new Deno.errors.PermissionDenied(
      `cannot write ${h.config}: Permission denied (os error 13). Fix: make ${h.home} a folder ` +
        "this user can write (…), then run the command again",
    );
  };
  assert.throws(
    () =>
      writeSetupFiles(
        {
          config: h.config,
          dotenv,
          dotenvValues: { WEBHOOK_PORT: "9300" },
          edit: () => {},
          secret: "kept",
        },
        { dotenv: setDotenvValues, config: failing },
      ),
    (error: Error) => {
      assert.equal(
        error.message,
        `cannot write ${h.config}: Permission denied (os error 13). ${dotenv} was already ` +
          `updated: WEBHOOK_PORT=9300; ${h.config} is unchanged. Fix: make ${h.config} ` +
          "writable, then run `agent gateway setup` again with the same options",
      );
      return true;
    },
  );
});
