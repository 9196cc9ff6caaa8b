/**
 * `agent gateway run` as a real process: warnings and errors of the start reach stderr (one
 * readable line each), not only `logs/gateway.log`, and info lines stay off stderr.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  type GatewayProcess,
  startGateway,
  subscribe,
  waitUntil,
  writeGatewayConfig,
} from "../e2e/_gateway.ts";
import { NEW_CONFIG_HEADER } from "../../src/home/config_edit.ts";
import { STARTER_CONFIG } from "../../src/gateway/starter_config.ts";
import {
  type EditLockHolder,
  editLockWaiters,
  holdEditLock,
} from "../fixtures/edit_lock_holder.ts";
import { cli, tempHome } from "./_helpers.ts";
import { freePort } from "./_mcp_helpers.ts";

Deno.test("gateway run: INSECURE_NO_AUTH on 127.0.0.1, a refused route, a misspelled key, a .env line that gives nothing and a usage-metrics setting that does nothing are warned about on stderr", async () => {
  await using h = await tempHome();
  const dotenv = join(h.home, ".env");
  Deno.writeTextFileSync(dotenv, "# secrets\nTELEGRAM TOKEN=123:abc-secret\n");
  writeGatewayConfig(h.home, {
    webhook: {
      host: "127.0.0.1",
      routes: {
        slow: { filters: [{ field: "title", regex: "(a+)+$" }] },
        outside: { script: "../outside.sh" },
        // Its problem holds braces: said as written, not read as a log placeholder.
        braces: { deliver_extra: "x" },
      },
      rate_limt: 5,
    },
  });
  Deno.writeTextFileSync(h.config, "telemetry:\n  shared_metrics:\n    send: true\n", {
    append: true,
  });
  const gateway = await startGateway(h.home, {
    WEBHOOK_PORT: String(freePort()),
    INSECURE_NO_AUTH: "true",
  });
  let stderr: string;
  try {
    await waitUntil(
      () => gateway.stderr().includes("INSECURE_NO_AUTH is on"),
      "the INSECURE_NO_AUTH warning on stderr",
    );
    // The refused route is not served, so the pathological payload cannot stall the gateway.
    const answer = await fetch(gateway.url("/webhooks/slow"), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ title: "a".repeat(28) + "!" }),
    });
    assert.equal(answer.status, 404, await answer.text());
    const health = await fetch(gateway.url("/health"));
    assert.equal(health.status, 200);
    await health.body?.cancel();
  } finally {
    stderr = (await gateway.stop()).stderr;
  }
  const lines = stderr.split("\n").filter((line) => line !== "");
  assert.ok(
    lines.includes(
      "warning: INSECURE_NO_AUTH is on: routes without a secret accept unsigned requests on " +
        "127.0.0.1",
    ),
    stderr,
  );
  assert.ok(
    lines.some((line) =>
      line.startsWith("warning: agent runs fail until the model is set up: ") &&
      line.includes("no model is configured. Fix:")
    ),
    stderr,
  );
  assert.ok(
    lines.some((line) =>
      line.startsWith("error: platforms.webhook.extra.routes.slow.filters[0]: regex") &&
      line.includes("Fix:")
    ),
    stderr,
  );
  assert.ok(
    lines.includes("error: route 'slow' is not served until its filters are fixed"),
    stderr,
  );
  assert.ok(
    lines.includes(
      "error: route outside: its events are refused (503) until its script can run: route " +
        `script "../outside.sh" points outside ${join(h.home, "scripts")}: only files under the ` +
        'scripts folder run; move it there and name it without ".."',
    ),
    stderr,
  );
  const braces = "(platforms.webhook.extra.routes.braces).deliver_extra: expected a mapping " +
    'such as {chat_id: "123"}';
  assert.equal(lines.filter((line) => line.endsWith(braces)).length, 1, stderr);
  const misspelled = `warning: ${join(h.home, "config.yaml")}:7: ` +
    "platforms.webhook.extra.rate_limt: unknown key `rate_limt` is ignored; did you mean " +
    "`rate_limit`?";
  assert.equal(lines.filter((line) => line === misspelled).length, 1, stderr);
  const ignoredLine = `warning: ${dotenv}:2: nothing is read from this line: the text before ` +
    "`=` is not a variable name (letters, digits, `_`, `.` and `-`, no spaces); write it as " +
    "NAME=value";
  assert.equal(lines.filter((line) => line === ignoredLine).length, 1, stderr);
  const sendOff = "warning: telemetry.shared_metrics.send is true but collection is off; " +
    "nothing is sent";
  assert.equal(lines.filter((line) => line === sendOff).length, 1, stderr);
  assert.doesNotMatch(stderr, /abc-secret/);
  // Only warnings and errors, as plain text: no info lines, no JSON.
  assert.doesNotMatch(stderr, /gateway listening on|gateway stopped|"level"|@timestamp/i);
  // The log file still gets everything.
  const log = Deno.readTextFileSync(join(h.home, "logs", "gateway.log"));
  assert.match(log, /INSECURE_NO_AUTH is on/);
  assert.match(log, /unknown key `rate_limt` is ignored/);
  assert.match(log, /\.env:2: nothing is read from this line/);
  assert.match(log, /telemetry\.shared_metrics\.send is true but collection is off/);
  assert.doesNotMatch(log, /abc-secret/);
  assert.match(log, /gateway listening on/);
  assert.ok(log.includes(JSON.stringify(braces).slice(1, -1)), log);
});

Deno.test("gateway run: sending usage metrics to an endpoint the sender refuses is warned about at start, on stderr and in the log, naming config.yaml's line, the key and the fix", async () => {
  await using h = await tempHome();
  writeGatewayConfig(h.home, { webhook: { host: "127.0.0.1" } });
  Deno.writeTextFileSync(
    h.config,
    "telemetry:\n  shared_metrics:\n    enabled: true\n    send: true\n" +
      "    endpoint: https://u:SECRET@metrics.example.com/v2\n",
    { append: true },
  );
  const line = Deno.readTextFileSync(h.config).split("\n").indexOf(
    "    endpoint: https://u:SECRET@metrics.example.com/v2",
  ) + 1;
  const gateway = await startGateway(h.home, { WEBHOOK_PORT: String(freePort()) });
  const { stderr } = await gateway.stop();
  const warning = `${h.config}:${line} (key telemetry.shared_metrics.endpoint): ` +
    "telemetry.shared_metrics.endpoint must not contain a user name or password; remove the " +
    '"user:password@" part (it must be an https:// URL, or http:// only to a loopback host ' +
    "(127.0.0.1, [::1], localhost)); nothing is sent. Fix: set it to an https:// URL (or " +
    "http:// to 127.0.0.1, [::1] or localhost), or run `agent metrics enable --endpoint <url>`";
  const lines = stderr.split("\n");
  assert.equal(lines.filter((l) => l === `warning: ${warning}`).length, 1, stderr);
  const log = Deno.readTextFileSync(join(h.home, "logs", "gateway.log"));
  assert.ok(log.includes(JSON.stringify(warning).slice(1, -1)), log);
  assert.doesNotMatch(stderr + log, /SECRET/);
});

Deno.test("gateway run: a subscription whose script cannot run is an error at start, as for a static route", async () => {
  await using h = await tempHome();
  writeGatewayConfig(h.home, { webhook: { host: "127.0.0.1" } });
  const env = { WEBHOOK_PORT: String(freePort()) };
  // A script not there yet is only a warning for subscribe; the gateway refuses its events.
  await subscribe(h.home, env, "later", ["--script", "later.sh"]);
  const gateway = await startGateway(h.home, env);
  const { stderr } = await gateway.stop();
  const lines = stderr.split("\n").filter((line) =>
    line.startsWith("error: route later: its events are refused (503) until its script can run: ")
  );
  assert.equal(lines.length, 1, stderr);
  assert.ok(
    lines[0].endsWith(
      `${join(h.home, "scripts")} does not exist: create it and put ` +
        '"later.sh" there',
    ),
    stderr,
  );
});

Deno.test("gateway run on a home whose config does not enable webhooks stops at once and writes nothing", async () => {
  await using h = await tempHome();
  const config = join(h.home, "config.yaml");
  Deno.writeTextFileSync(config, "# webhooks: later\n");
  const result = await cli(h.home, ["gateway", "run"]);
  assert.equal(result.code, 1, result.stderr);
  assert.equal(
    result.stderr,
    "agent: the webhook platform is not enabled. Enable it with `agent gateway setup --enable`, " +
      `or set platforms.webhook.enabled: true in ${config} (or WEBHOOK_ENABLED=true)\n`,
  );
  assert.deepEqual([...Deno.readDirSync(h.home)].map((entry) => entry.name), ["config.yaml"]);
  assert.equal(Deno.readTextFileSync(config), "# webhooks: later\n");
});

Deno.test("gateway run that cannot start names the misspelled keys that may be why", async () => {
  await using h = await tempHome();
  const config = join(h.home, "config.yaml");
  Deno.writeTextFileSync(config, "platforms:\n  webhook:\n    enabeld: true\n");
  const disabled = await cli(h.home, ["gateway", "run"]);
  assert.equal(disabled.code, 1, disabled.stderr);
  assert.equal(
    disabled.stderr,
    `warning: ${config}:3: platforms.webhook.enabeld: unknown key \`enabeld\` is ignored; did ` +
      "you mean `enabled`?\n" +
      "agent: the webhook platform is not enabled. Enable it with `agent gateway setup --enable`, " +
      `or set platforms.webhook.enabled: true in ${config} (or WEBHOOK_ENABLED=true)\n`,
  );
  // A config error of another key: the warnings come with it too, once.
  Deno.writeTextFileSync(
    config,
    "platforms:\n  webhook:\n    enabled: true\n    extra:\n      port: 0\n      hots: ::1\n",
  );
  const badPort = await cli(h.home, ["gateway", "run"]);
  assert.equal(badPort.code, 2, badPort.stderr);
  const lines = badPort.stderr.trimEnd().split("\n");
  assert.equal(lines.length, 2, badPort.stderr);
  assert.match(lines[0], /extra\.hots: unknown key `hots` is ignored; did you mean `host`\?$/);
  assert.match(lines[1], /^agent: .*key platforms\.webhook\.extra\.port.*expected a port number/);
  assert.deepEqual([...Deno.readDirSync(h.home)].map((entry) => entry.name), ["config.yaml"]);
});

Deno.test("gateway run disabled by WEBHOOK_ENABLED says where that variable is set, not to edit config.yaml; deleting it is offered only when config.yaml enables the platform", async () => {
  await using h = await tempHome();
  const config = join(h.home, "config.yaml");
  Deno.writeTextFileSync(config, "platforms:\n  webhook:\n    enabled: true\n");
  const dotenv = join(h.home, ".env");
  Deno.writeTextFileSync(dotenv, "# switches\nWEBHOOK_ENABLED=no\n");
  const fromDotenv = await cli(h.home, ["gateway", "run"]);
  assert.equal(fromDotenv.code, 1, fromDotenv.stderr);
  assert.equal(
    fromDotenv.stderr,
    `agent: the webhook platform is not enabled: WEBHOOK_ENABLED=no in ${dotenv}:2 turns it off ` +
      "(it overrides platforms.webhook.enabled of config.yaml). Fix: set WEBHOOK_ENABLED=true " +
      "there (`agent gateway setup --enable` does), or delete that line\n",
  );
  Deno.writeTextFileSync(dotenv, "");
  const fromEnv = await cli(h.home, ["gateway", "run"], { env: { WEBHOOK_ENABLED: "false" } });
  assert.equal(fromEnv.code, 1, fromEnv.stderr);
  assert.equal(
    fromEnv.stderr,
    "agent: the webhook platform is not enabled: WEBHOOK_ENABLED=false in the environment turns " +
      "it off (it overrides platforms.webhook.enabled of config.yaml). Fix: unset WEBHOOK_ENABLED " +
      "(`unset WEBHOOK_ENABLED`), or set it to true\n",
  );
  // Without `enabled: true` in config.yaml, the platform stays off once the variable is gone.
  Deno.writeTextFileSync(config, "platforms:\n  webhook:\n    extra:\n      port: 8644\n");
  Deno.writeTextFileSync(dotenv, "WEBHOOK_ENABLED=no\n");
  const keptOff = await cli(h.home, ["gateway", "run"]);
  assert.equal(keptOff.code, 1, keptOff.stderr);
  assert.match(
    keptOff.stderr,
    /\. Fix: set WEBHOOK_ENABLED=true there \(`agent gateway setup --enable` does\)\n$/,
  );
  Deno.writeTextFileSync(dotenv, "");
  const keptOffByEnv = await cli(h.home, ["gateway", "run"], { env: { WEBHOOK_ENABLED: "0" } });
  assert.equal(keptOffByEnv.code, 1, keptOffByEnv.stderr);
  assert.match(keptOffByEnv.stderr, /\. Fix: set WEBHOOK_ENABLED=true in the environment\n$/);
});

/**
 * Starts `gateway run` on `home` while `holder` holds the edit lock, checks that it waits for
 * the lock having written nothing, then releases the holder and returns the started gateway.
 * A failed check stops the gateway (if it started) before it is reported.
 */
async function startWhileLocked(home: string, holder: EditLockHolder): Promise<GatewayProcess> {
  let started = false;
  const starting = startGateway(home, { WEBHOOK_PORT: String(freePort()) }).finally(() => {
    started = true;
  });
  try {
    await waitUntil(
      () => started || editLockWaiters(home).length > 0,
      "gateway run to wait for the edit lock",
    );
    assert.ok(
      !started,
      "gateway run started without waiting for the edit lock another command held",
    );
    assert.deepEqual(
      [...Deno.readDirSync(home)].map((entry) => entry.name),
      [],
      "gateway run wrote while another command held the edit lock",
    );
    await holder.release();
  } catch (error) {
    await holder.release().catch(() => {});
    await (await starting.catch(() => undefined))?.stop();
    throw error;
  }
  return await starting;
}

Deno.test("gateway run on a fresh home that another command sets up meanwhile waits for its edit lock, keeps its config.yaml and creates, generates and claims nothing", async () => {
  await using h = await tempHome();
  // Another command editing config.yaml of the fresh home, held between its read and its write.
  await using holder = await holdEditLock(h.home, {
    set: { "platforms.webhook.enabled": true, "platforms.webhook.extra.host": "127.0.0.1" },
  });
  await using gateway = await startWhileLocked(h.home, holder);
  const config = Deno.readTextFileSync(join(h.home, "config.yaml"));
  assert.equal(
    config,
    `${NEW_CONFIG_HEADER}\nplatforms:\n  webhook:\n    enabled: true\n    extra:\n      host: 127.0.0.1\n`,
  );
  assert.doesNotMatch(gateway.stdout(), /Created|Generated/);
  // As on any home set up before: no global secret is generated.
  assert.deepEqual([...Deno.readDirSync(h.home)].map((entry) => entry.name).sort(), [
    "config.yaml",
    "gateway",
    "logs",
  ]);
  assert.match(gateway.stdout(), /^Gateway listening on http:\/\/127\.0\.0\.1:\d+\n/);
});

Deno.test("gateway run on a fresh home keeps a WEBHOOK_SECRET set meanwhile: it creates the starter config.yaml and generates no secret", async () => {
  await using h = await tempHome();
  const secret = "set-by-gateway-setup-meanwhile-0123456789";
  await using holder = await holdEditLock(h.home, { secret });
  await using gateway = await startWhileLocked(h.home, holder);
  assert.equal(Deno.readTextFileSync(join(h.home, "config.yaml")), STARTER_CONFIG);
  assert.equal(Deno.readTextFileSync(join(h.home, ".env")), `WEBHOOK_SECRET=${secret}\n`);
  assert.match(
    gateway.stdout(),
    /^Created .*config\.yaml \(webhook platform enabled on port 8644;/,
  );
  assert.doesNotMatch(gateway.stdout(), /Generated/);
  for (const file of ["config.yaml", ".env"]) {
    assert.equal(Deno.statSync(join(h.home, file)).mode! & 0o777, 0o600, file);
  }
});

Deno.test("gateway run on a fresh home with a WEBHOOK_PORT that is not a port says it created config.yaml, then stops on the variable", async () => {
  await using h = await tempHome();
  const result = await cli(h.home, ["gateway", "run"], { env: { WEBHOOK_PORT: "80a" } });
  assert.equal(result.code, 2, result.stderr);
  assert.equal(
    result.stdout,
    `Created ${h.config} (webhook platform enabled on port 8644).\n`,
  );
  assert.match(result.stderr, /WEBHOOK_PORT=80a is not a port/);
  assert.equal(Deno.readTextFileSync(h.config), STARTER_CONFIG);
  assert.deepEqual([...Deno.readDirSync(h.home)].map((entry) => entry.name), ["config.yaml"]);
});
