/**
 * `agent gateway setup`: from flags, without a terminal, and as a wizard (scripted questions
 * in-process, and the real prompts in a pseudo-terminal). What it writes to config.yaml and .env,
 * and every bad flag or answer.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse } from "dotenv";
import { listenProblemText } from "../../src/cli/gateway_setup.ts";
import { STARTER_CONFIG } from "../../src/gateway/starter_config.ts";
import { Gateway } from "../../src/gateway/gateway.ts";
import { loadConfig } from "../../src/home/config.ts";
import { readWebhookSettings } from "../../src/webhook/settings.ts";
import { cli, CTRL_C, parseOneJson, scriptedPrompter, tempHome } from "./_helpers.ts";
import { freePort, portIsFree } from "./_mcp_helpers.ts";
import { Terminal } from "./_terminal.ts";

/** Whether the default port is free: the tests of setup's defaults need it. */
const DEFAULT_PORT_FREE = portIsFree(8644);

const COMMENTED = `# my agent
platforms:
  webhook:
    enabled: false # turned off for now
    extra:
      port: 8700
      rate_limit: 100 # per minute
model:
  default: gpt-4.1-mini
`;

/** The webhook settings as the gateway would read them from `home` (no process env). */
function settingsOf(home: string, env: Record<string, string> = {}) {
  return readWebhookSettings(loadConfig({ env: (name) => ({ AGENT_HOME: home, ...env })[name] }));
}

function dotenvOf(home: string): Record<string, string> {
  return parse(Deno.readTextFileSync(join(home, ".env")));
}

function mode(path: string): number {
  return Deno.statSync(path).mode! & 0o777;
}

Deno.test({
  name:
    "setup without a terminal or flags: enables on 8644, generates a secret (0600), says what is next",
  // What it checks would also hold a "port 8644 is in use" warning.
  ignore: !DEFAULT_PORT_FREE,
  fn: async () => {
    await using h = await tempHome();
    const run = await cli(h.home, ["gateway", "setup"]);
    assert.equal(run.code, 0, run.stderr);
    const settings = settingsOf(h.home);
    assert.equal(settings.enabled, true);
    assert.equal(settings.port, 8644);
    assert.equal(settings.host, undefined);
    const secret = dotenvOf(h.home).WEBHOOK_SECRET;
    assert.match(secret, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(settings.secret, secret);
    assert.equal(mode(join(h.home, ".env")), 0o600);
    assert.equal(mode(h.config), 0o600);
    assert.match(run.stdout, /webhooks: enabled/);
    assert.match(run.stdout, /every interface, IPv4 and IPv6, port 8644/);
    assert.match(run.stdout, /secret: +generated: WEBHOOK_SECRET in .*\.env/);
    assert.match(run.stdout, /agent gateway run/);
    assert.ok(!run.stdout.includes(secret), "the secret is not printed");
    assert.equal(run.stderr, "");
  },
});

Deno.test("setup on a fresh home writes the commented starter of gateway run, with the choices applied; an existing file is only edited", async () => {
  await using h = await tempHome();
  // The defaults are the starter's values: the file is the starter, byte for byte.
  const defaults = await cli(h.home, ["gateway", "setup"]);
  assert.equal(defaults.code, 0, defaults.stderr);
  assert.equal(Deno.readTextFileSync(h.config), STARTER_CONFIG);
  assert.equal(mode(h.config), 0o600);

  Deno.removeSync(h.config);
  const chosen = await cli(h.home, ["gateway", "setup", "--port", "9100", "--host", "127.0.0.1"]);
  assert.equal(chosen.code, 0, chosen.stderr);
  const port = "      port: 8644\n";
  assert.ok(STARTER_CONFIG.includes(port));
  assert.equal(
    Deno.readTextFileSync(h.config),
    STARTER_CONFIG.replace(port, "      port: 9100\n      host: 127.0.0.1\n"),
  );

  Deno.removeSync(h.config);
  const off = await cli(h.home, ["gateway", "setup", "--disable"]);
  assert.equal(off.code, 0, off.stderr);
  assert.equal(
    Deno.readTextFileSync(h.config),
    STARTER_CONFIG.replace("    enabled: true\n", "    enabled: false\n"),
  );

  // Not fresh: an existing file, even an empty one, gets the choices and nothing else.
  Deno.writeTextFileSync(h.config, "");
  const empty = await cli(h.home, ["gateway", "setup", "--enable"]);
  assert.equal(empty.code, 0, empty.stderr);
  assert.equal(
    Deno.readTextFileSync(h.config),
    "platforms:\n  webhook:\n    enabled: true\n    extra:\n      port: 8644\n",
  );
});

Deno.test("setup --json from flags keeps the file's comments and other keys", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, COMMENTED);
  const run = await cli(h.home, [
    "gateway",
    "setup",
    "--enable",
    "--port",
    "9001",
    "--host",
    "127.0.0.1",
    "--secret",
    "correct horse battery".replaceAll(" ", "-"),
    "--json",
  ]);
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(parseOneJson(run.stdout), {
    config: h.config,
    dotenv: join(h.home, ".env"),
    enabled: true,
    port: 9001,
    host: "127.0.0.1",
    base_url: "http://127.0.0.1:9001",
    secret: "set",
    written: [h.config, join(h.home, ".env")],
    warnings: [],
  });
  const text = Deno.readTextFileSync(h.config);
  for (const kept of ["# my agent", "# per minute", "rate_limit: 100", "default: gpt-4.1-mini"]) {
    assert.ok(text.includes(kept), `${kept} kept:\n${text}`);
  }
  const settings = settingsOf(h.home);
  assert.equal(settings.rateLimit.requests, 100);
  assert.equal(settings.secret, "correct-horse-battery");
});

Deno.test("setup keeps the current port, host and secret unless told; --generate-secret replaces it", async () => {
  await using h = await tempHome();
  // A host to keep (COMMENTED has none, which would read the same when dropped).
  Deno.writeTextFileSync(
    h.config,
    COMMENTED.replace("      port: 8700\n", "      port: 8700\n      host: 127.0.0.1\n"),
  );
  Deno.writeTextFileSync(
    join(h.home, ".env"),
    "# keys\nOPENAI_API_KEY=sk-test\nWEBHOOK_SECRET=old-secret-0123456789\n",
  );
  const keep = await cli(h.home, ["gateway", "setup", "--enable", "--json"]);
  assert.equal(keep.code, 0, keep.stderr);
  assert.equal(parseOneJson(keep.stdout).secret, "kept");
  assert.equal(settingsOf(h.home).port, 8700);
  assert.equal(settingsOf(h.home).host, "127.0.0.1");
  assert.equal(dotenvOf(h.home).WEBHOOK_SECRET, "old-secret-0123456789");

  const renew = await cli(h.home, ["gateway", "setup", "--generate-secret", "--all-interfaces"]);
  assert.equal(renew.code, 0, renew.stderr);
  const env = Deno.readTextFileSync(join(h.home, ".env"));
  assert.match(env, /^# keys\nOPENAI_API_KEY=sk-test\nWEBHOOK_SECRET=[A-Za-z0-9_-]{43}\n$/);
  assert.equal(settingsOf(h.home).host, undefined);
});

Deno.test("setup --disable turns the listener off; the gateway then refuses to start", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, "platforms:\n  webhook:\n    enabled: true\n");
  const run = await cli(h.home, ["gateway", "setup", "--disable"]);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(settingsOf(h.home).enabled, false);
  assert.match(run.stdout, /webhooks: disabled/);
  assert.doesNotMatch(run.stdout, /Next:/);
  const start = await cli(h.home, ["gateway", "run"]);
  assert.equal(start.code, 1);
  assert.match(start.stderr, /not enabled \(platforms\.webhook\.enabled in .*config\.yaml\)/);
});

Deno.test("setup refuses contradicting flags and bad values with exit 2, and writes nothing", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, COMMENTED);
  const cases: [string[], RegExp][] = [
    [["--enable", "--disable"], /--enable and --disable contradict: choose one\n/],
    [["--host", "::1", "--all-interfaces"], /--host and --all-interfaces contradict/],
    [["--secret", "a-long-enough-secret", "--generate-secret"], /--secret and --generate-secret/],
    [["--port", "0"], /--port: '0' is not a port: use a whole number from 1 to 65535/],
    [["--port", "65536"], /--port: '65536' is not a port/],
    [["--port", "80a"], /--port: '80a' is not a port/],
    [["--port", "-1"], /--port: '-1' is not a port/],
    [["--host", "bad host!"], /--host: 'bad host!' is not an IP address or host name/],
    [["--host", "-leading.example"], /is not an IP address or host name/],
    [["--host", "999.1.1.1"], /--host: '999\.1\.1\.1' is not an IP address or host name/],
    [["--host", "10.0.0"], /is not an IP address or host name/],
    [["--secret", "short"], /--secret: use at least 16 characters/],
    [["--secret", "has a space in it ok"], /visible ASCII characters only/],
    [["--secret", "it's-sixteen-chars"], /no spaces, line breaks or single quotes/],
    [["--secret", "x".repeat(513)], /at most 512 characters/],
  ];
  for (const [flags, message] of cases) {
    const run = await cli(h.home, ["gateway", "setup", ...flags]);
    assert.equal(run.code, 2, `${flags.join(" ")}: ${run.stderr}`);
    assert.match(run.stderr, message, flags.join(" "));
  }
  assert.equal(Deno.readTextFileSync(h.config), COMMENTED);
  assert.throws(() => Deno.statSync(join(h.home, ".env")), Deno.errors.NotFound);
});

Deno.test("setup on a broken config.yaml names the file and line and leaves it alone", async () => {
  await using h = await tempHome();
  const broken = "platforms:\n  webhook:\n    enabled: true\n   port: [\n";
  Deno.writeTextFileSync(h.config, broken);
  const run = await cli(h.home, ["gateway", "setup", "--port", "9000"]);
  assert.equal(run.code, 2);
  assert.match(run.stderr, /config\.yaml:\d+/);
  assert.equal(Deno.readTextFileSync(h.config), broken);
});

Deno.test("setup moves a secret out of config.yaml into .env", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(
    h.config,
    "platforms:\n  webhook:\n    enabled: true\n    extra:\n      secret: from-config-0123456789\n",
  );
  const run = await cli(h.home, ["gateway", "setup", "--json"]);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(parseOneJson(run.stdout).secret, "moved to .env");
  assert.doesNotMatch(Deno.readTextFileSync(h.config), /secret/);
  assert.equal(dotenvOf(h.home).WEBHOOK_SECRET, "from-config-0123456789");
  assert.equal(settingsOf(h.home).secret, "from-config-0123456789");
});

Deno.test("setup updates WEBHOOK_PORT/ENABLED in .env and warns about ones in the environment (on stderr, --json too)", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(join(h.home, ".env"), "WEBHOOK_PORT=7000\nWEBHOOK_ENABLED=false\n");
  const fromDotenv = await cli(h.home, [
    "gateway",
    "setup",
    "--enable",
    "--port",
    "7100",
    "--json",
  ]);
  assert.equal(fromDotenv.code, 0, fromDotenv.stderr);
  assert.deepEqual(parseOneJson(fromDotenv.stdout).warnings, []);
  const env = dotenvOf(h.home);
  assert.equal(env.WEBHOOK_PORT, "7100");
  assert.equal(env.WEBHOOK_ENABLED, "true");
  assert.equal(settingsOf(h.home).port, 7100);

  const shadowed = await cli(h.home, ["gateway", "setup", "--port", "7200"], {
    env: { WEBHOOK_ENABLED: "false" },
  });
  assert.equal(shadowed.code, 0, shadowed.stderr);
  // .env (WEBHOOK_ENABLED=true, kept in step) wins over the environment: nothing is shadowed.
  assert.equal(shadowed.stderr, "");
  assert.equal(settingsOf(h.home, { WEBHOOK_ENABLED: "false" }).enabled, true);

  Deno.writeTextFileSync(join(h.home, ".env"), "WEBHOOK_SECRET=0123456789abcdef\n");
  const overridden = await cli(
    h.home,
    ["gateway", "setup", "--enable", "--port", "7300", "--json"],
    {
      env: { WEBHOOK_PORT: "7400", WEBHOOK_ENABLED: "no" },
    },
  );
  assert.equal(overridden.code, 0, overridden.stderr);
  const report = parseOneJson(overridden.stdout);
  assert.equal(report.port, 7400);
  assert.equal(report.enabled, false);
  assert.deepEqual(report.warnings, [
    "WEBHOOK_ENABLED=no in the environment overrides platforms.webhook.enabled; unset it for this to apply",
    "WEBHOOK_PORT=7400 in the environment overrides platforms.webhook.extra.port; unset it for this to apply",
  ]);
  // On stderr too, once each, as without --json.
  assert.equal(
    overridden.stderr,
    (report.warnings as string[]).map((warning) => `warning: ${warning}\n`).join(""),
  );
  assert.equal(settingsOf(h.home).port, 7300, "config.yaml has the chosen port");
});

Deno.test("setup tries the address: a port in use or an address not of this machine is a warning", async () => {
  await using h = await tempHome();
  using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (taken.addr as Deno.NetAddr).port;
  const inUse = await cli(h.home, [
    "gateway",
    "setup",
    "--host",
    "127.0.0.1",
    "--port",
    String(port),
    "--json",
  ]);
  assert.equal(inUse.code, 0, inUse.stderr);
  assert.deepEqual(parseOneJson(inUse.stdout).warnings, [
    `127.0.0.1 port ${port} is in use by another program (this home's gateway is not ` +
    "running); choose a free port (--port)",
  ]);
  assert.equal(settingsOf(h.home).port, port, "written all the same");

  // 192.0.2.1 (TEST-NET-1) is no address of this machine.
  const foreign = await cli(h.home, ["gateway", "setup", "--host", "192.0.2.1"]);
  assert.equal(foreign.code, 0, foreign.stderr);
  assert.match(
    foreign.stderr,
    /^warning: 192\.0\.2\.1 is not an address of this machine, so the gateway cannot listen on it; choose one of its addresses \(--host\), or --all-interfaces$/m,
  );

  // A disabled listener is not tried.
  const disabled = await cli(h.home, ["gateway", "setup", "--disable", "--json"]);
  assert.equal(disabled.code, 0, disabled.stderr);
  assert.deepEqual(parseOneJson(disabled.stdout).warnings, []);
});

Deno.test("wizard: explains exposure, re-asks bad answers, writes the choices", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, COMMENTED);
  const script = scriptedPrompter([
    true, // enable
    "99999", // bad port
    "", // default: the current 8700
    "address",
    "not a host!",
    "[::1]",
    "enter",
    "too-short",
    "wizard-secret-0123456789",
  ]);
  const run = await cli(h.home, ["gateway", "setup"], {
    stdinIsTerminal: true,
    prompter: script.prompter,
  });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(script.left(), 0);
  assert.match(run.stdout, /accepts HTTP POSTs from anyone who can reach its port/);
  assert.match(run.stdout, /reverse proxy or tunnel/);
  assert.deepEqual(script.rejected, [
    "'99999' is not a port: use a whole number from 1 to 65535",
    "'not a host!' is not an IP address or host name (e.g. 127.0.0.1, ::1, 192.168.1.20)",
    "use at least 16 characters (or let setup generate one with --generate-secret)",
  ]);
  const settings = settingsOf(h.home);
  assert.deepEqual([settings.enabled, settings.port, settings.host], [true, 8700, "::1"]);
  assert.equal(settings.secret, "wizard-secret-0123456789");
  assert.ok(Deno.readTextFileSync(h.config).includes("# turned off for now"));
});

Deno.test("wizard: 'this machine only' binds 127.0.0.1; an existing secret is offered to keep", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(join(h.home, ".env"), "WEBHOOK_SECRET=existing-0123456789\n");
  const script = scriptedPrompter([true, "8650", "local", "keep"]);
  const run = await cli(h.home, ["gateway", "setup"], {
    stdinIsTerminal: true,
    prompter: script.prompter,
  });
  assert.equal(run.code, 0, run.stderr);
  const settings = settingsOf(h.home);
  assert.deepEqual([settings.port, settings.host, settings.secret], [
    8650,
    "127.0.0.1",
    "existing-0123456789",
  ]);
  assert.match(run.stdout, /secret: +unchanged/);
});

Deno.test("wizard: declining disables without further questions; Ctrl-C changes nothing", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, "platforms:\n  webhook:\n    enabled: true\n");
  const decline = scriptedPrompter([false]);
  const off = await cli(h.home, ["gateway", "setup"], {
    stdinIsTerminal: true,
    prompter: decline.prompter,
  });
  assert.equal(off.code, 0, off.stderr);
  assert.deepEqual(decline.asked, ["Enable the webhook listener?"]);
  assert.equal(settingsOf(h.home).enabled, false);

  const before = Deno.readTextFileSync(h.config);
  const cancel = scriptedPrompter([true, "9000", CTRL_C]);
  const cancelled = await cli(h.home, ["gateway", "setup"], {
    stdinIsTerminal: true,
    prompter: cancel.prompter,
  });
  assert.equal(cancelled.code, 1);
  assert.match(cancelled.stderr, /setup cancelled; nothing was changed/);
  assert.equal(Deno.readTextFileSync(h.config), before);
  assert.throws(() => Deno.statSync(join(h.home, ".env")), Deno.errors.NotFound);
});

Deno.test("wizard: an address of another machine is asked again; Enter keeps a listener that is off", async () => {
  await using h = await tempHome();
  const script = scriptedPrompter([
    "", // Enter: a fresh home is enabled
    "8651",
    "address",
    "192.0.2.1", // TEST-NET-1: no address of this machine
    "127.0.0.1",
    "generate",
  ]);
  const run = await cli(h.home, ["gateway", "setup"], {
    stdinIsTerminal: true,
    prompter: script.prompter,
  });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(script.left(), 0);
  assert.deepEqual(script.rejected, [
    "192.0.2.1 is not an address of this machine, so the gateway cannot listen on it; enter one " +
    "of its addresses, or choose every interface",
  ]);
  assert.deepEqual(
    [settingsOf(h.home).enabled, settingsOf(h.home).port, settingsOf(h.home).host],
    [true, 8651, "127.0.0.1"],
  );
  // A fresh home: the answers are applied to the commented starter, as with flags.
  assert.equal(
    Deno.readTextFileSync(h.config),
    STARTER_CONFIG.replace("      port: 8644\n", "      port: 8651\n      host: 127.0.0.1\n"),
  );

  // Turned off on purpose: Enter at the first question keeps it off, and asks nothing more.
  Deno.writeTextFileSync(h.config, "platforms:\n  webhook:\n    enabled: false\n");
  const keep = scriptedPrompter([""]);
  const kept = await cli(h.home, ["gateway", "setup"], {
    stdinIsTerminal: true,
    prompter: keep.prompter,
  });
  assert.equal(kept.code, 0, kept.stderr);
  assert.deepEqual(keep.asked, ["Enable the webhook listener?"]);
  assert.equal(settingsOf(h.home).enabled, false);
});

Deno.test("setup: a port in use is this home's running gateway (restart it) or another program (choose another port)", async () => {
  await using h = await tempHome();
  const env = { WEBHOOK_SECRET: "global-secret-0123456789" };
  const gatewayPort = freePort();
  Deno.writeTextFileSync(
    h.config,
    `platforms:\n  webhook:\n    enabled: true\n    extra:\n      host: 127.0.0.1\n      port: ${gatewayPort}\n`,
  );
  const config = loadConfig({ env: (name) => ({ AGENT_HOME: h.home, ...env })[name] });
  const gateway = await Gateway.start({ config, env: () => undefined });
  using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const otherPort = (taken.addr as Deno.NetAddr).port;
  const warningsFor = async (port: number) => {
    const run = await cli(
      h.home,
      ["gateway", "setup", "--host", "127.0.0.1", "--port", String(port), "--json"],
      { env },
    );
    assert.equal(run.code, 0, run.stderr);
    return parseOneJson(run.stdout).warnings;
  };
  try {
    assert.deepEqual(await warningsFor(gatewayPort), [
      `127.0.0.1 port ${gatewayPort} is in use by this home's gateway, which is running: restart ` +
      "it to apply these settings",
    ]);
    assert.deepEqual(await warningsFor(otherPort), [
      `127.0.0.1 port ${otherPort} is in use by another program (this home's gateway is running ` +
      `on port ${gatewayPort}); choose a free port (--port), then restart the gateway to apply ` +
      "these settings",
    ]);
  } finally {
    await gateway.stop();
  }
});

Deno.test("wizard: a port in use is warned about after writing, with the wizard's way to change it", async () => {
  await using h = await tempHome();
  using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (taken.addr as Deno.NetAddr).port;
  const script = scriptedPrompter([true, String(port), "local", "generate"]);
  const run = await cli(h.home, ["gateway", "setup"], {
    stdinIsTerminal: true,
    prompter: script.prompter,
  });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(script.left(), 0);
  // The answer is written, and the warning names no flag.
  assert.match(
    run.stderr,
    new RegExp(
      `^warning: 127\\.0\\.0\\.1 port ${port} is in use by another program \\(this home's ` +
        "gateway is not running\\); run `agent gateway setup` again and choose a free port$",
      "m",
    ),
  );
  assert.doesNotMatch(run.stderr, /--port/);
  assert.equal(settingsOf(h.home).port, port);
});

Deno.test("wizard at a real terminal: the prompts take keys and Enter", async () => {
  await using h = await tempHome();
  const terminal = new Terminal(h.home, ["gateway", "setup"]);
  try {
    let at = await terminal.waitFor(/Enable the webhook listener\?/);
    await terminal.type("\r");
    at = await terminal.waitFor(/Port to listen on/, at);
    await terminal.type("9123\r");
    at = await terminal.waitFor(/Who may connect\?/, at);
    await terminal.type("\x1b[A\r"); // up from "Every interface" to "This machine only"
    at = await terminal.waitFor(/Global webhook secret/, at);
    await terminal.type("\r"); // generate
    await terminal.waitFor(/Next: start it/, at);
    const status = await terminal.exit();
    assert.equal(status.code, 0, terminal.screen);
  } finally {
    terminal.kill();
  }
  const settings = settingsOf(h.home);
  assert.deepEqual([settings.enabled, settings.port, settings.host], [true, 9123, "127.0.0.1"]);
  assert.match(settings.secret ?? "", /^[A-Za-z0-9_-]{43}$/);
});

Deno.test("gateway setup: each listen warning says how to choose again, by flag or by running the wizard again", () => {
  const inUse = new Deno.errors.AddrInUse("Address already in use (os error 98)");
  const denied = new Deno.errors.PermissionDenied("Permission denied (os error 13)");
  const foreign = new Deno.errors.AddrNotAvailable("Cannot assign requested address (os error 99)");
  const cases = [
    {
      error: inUse,
      settings: { port: 8644 },
      flags: /otherwise choose a free port \(--port\)$/,
      wizard: /otherwise run `agent gateway setup` again and choose a free port$/,
    },
    {
      error: denied,
      settings: { port: 443 },
      flags: /ports below 1024 need privileges; choose 1024 or above \(--port\)$/,
      wizard:
        /ports below 1024 need privileges; run `agent gateway setup` again and choose 1024 or above$/,
    },
    {
      error: foreign,
      settings: { host: "192.0.2.7", port: 8644 },
      flags:
        /^192\.0\.2\.7 is not an address of this machine.*choose one of its addresses \(--host\), or --all-interfaces$/,
      wizard:
        /^192\.0\.2\.7 is not an address of this machine.*run `agent gateway setup` again and choose one of its addresses, or every interface$/,
    },
  ];
  for (const { error, settings, flags, wizard } of cases) {
    const byFlags = listenProblemText(error, settings, "flags");
    const byWizard = listenProblemText(error, settings, "wizard");
    assert.match(byFlags, flags);
    assert.match(byWizard, wizard);
    assert.doesNotMatch(byWizard, /--/, "the wizard's user typed no flags");
  }
});
