import assert from "node:assert/strict";
import { ConfigSource } from "../../src/home/config.ts";
import type { ConfigError } from "../../src/home/errors.ts";
import { SecretScope } from "../../src/home/secrets.ts";
import type { Route } from "../../src/webhook/routes.ts";
import {
  readWebhookSettings,
  routeUrl,
  WEBHOOK_DEFAULTS,
  webhookBaseUrl,
  type WebhookSettings,
} from "../../src/webhook/settings.ts";
import { configError } from "../home/_helpers.ts";

const FILE = "/h/config.yaml";
const ENABLED = "platforms.webhook.enabled";
const EXTRA = "platforms.webhook.extra";

/** Reads the settings of `yaml` with `.env` values `dotenv` over the process env `env`. */
function settingsOf(
  yaml: string,
  dotenv: Record<string, string> = {},
  env: Record<string, string> = {},
): WebhookSettings {
  const source = ConfigSource.parse(FILE, yaml);
  const secrets = new SecretScope(
    { ...dotenv },
    (name) => Object.hasOwn(env, name) ? env[name] : undefined,
  );
  return readWebhookSettings({ source, secrets });
}

/**
 * `platforms.webhook.extra` holding `lines` (each indented under `extra:`); the first of them is
 * on line 4.
 */
function extraYaml(...lines: string[]): string {
  return `platforms:\n  webhook:\n    extra:\n${lines.map((line) => `      ${line}\n`).join("")}`;
}

/** `platforms.webhook.enabled: <value>`, on line 3. */
function enabledYaml(value: string): string {
  return `platforms:\n  webhook:\n    enabled: ${value}\n`;
}

/**
 * Asserts that `error` is located at `key` (and `line`) of FILE, says `problem` and gives a fix,
 * and that its message carries all of them.
 */
function assertConfigError(
  error: ConfigError,
  expected: {
    key: string;
    line: number | undefined;
    problem: string | RegExp;
    fix: string | RegExp;
    /** Default: FILE (config.yaml). */
    file?: string;
  },
): void {
  const file = expected.file ?? FILE;
  assert.equal(error.name, "ConfigError");
  assert.deepEqual(error.location, { file, key: expected.key, line: expected.line });
  if (typeof expected.problem === "string") assert.equal(error.problem, expected.problem);
  else assert.match(error.problem, expected.problem);
  assert.ok(error.fix, "a fix is given");
  if (typeof expected.fix === "string") assert.equal(error.fix, expected.fix);
  else assert.match(error.fix, expected.fix);
  const where = expected.line === undefined ? file : `${file}:${expected.line}`;
  assert.ok(
    error.message.startsWith(`${where} (key ${expected.key}): ${error.problem}. Fix: `),
    error.message,
  );
  assert.ok(error.message.endsWith(error.fix), error.message);
}

/** The settings every field of which is a default. */
const DEFAULT_SETTINGS: WebhookSettings = {
  enabled: false,
  enabledBy: "default (off)",
  port: 8644,
  host: undefined,
  secret: undefined,
  rateLimit: { requests: 30, windowSeconds: 60 },
  maxBodyBytes: 1_048_576,
  bodyTimeoutSeconds: 30,
  scriptTimeoutSeconds: 30,
  idempotencyTtlSeconds: 86_400,
  concurrentRuns: 2,
  deliveryAttempts: 5,
  deliveryRetrySeconds: 5,
  scriptSandbox: "auto",
  insecureNoAuth: false,
  routes: [],
  routeProblems: [],
};

// --- defaults ------------------------------------------------------------------------------

Deno.test("WEBHOOK_DEFAULTS: the values of decisions.md §6", () => {
  assert.deepEqual(WEBHOOK_DEFAULTS, {
    port: 8644,
    rateLimit: { requests: 30, windowSeconds: 60 },
    maxBodyBytes: 1024 * 1024,
    bodyTimeoutSeconds: 30,
    scriptTimeoutSeconds: 30,
    idempotencyTtlSeconds: 86_400,
    concurrentRuns: 2,
    deliveryAttempts: 5,
    deliveryRetrySeconds: 5,
  });
});

Deno.test("readWebhookSettings: every default when the section is absent, empty or null", () => {
  for (
    const yaml of [
      "",
      "# nothing here\n",
      "model:\n  default: gpt-4o\n",
      "platforms:\n",
      "platforms:\n  telegram:\n    enabled: true\n",
      "platforms:\n  webhook:\n",
      "platforms:\n  webhook: {}\n",
      "platforms:\n  webhook:\n    extra:\n",
      "platforms:\n  webhook:\n    extra: {}\n",
      extraYaml(
        "port:",
        "host:",
        "secret:",
        "rate_limit:",
        "max_body_bytes: ~",
        "body_timeout_seconds:",
        "script_timeout_seconds: null",
        "idempotency_ttl_seconds:",
        "concurrent_runs:",
        "delivery_attempts:",
        "delivery_retry_seconds:",
        "script_sandbox:",
        "routes:",
      ),
    ]
  ) {
    assert.deepEqual(settingsOf(yaml), DEFAULT_SETTINGS, JSON.stringify(yaml));
  }
});

Deno.test("readWebhookSettings: the defaults are copies (changing one result leaves the next alone)", () => {
  const first = settingsOf("");
  first.rateLimit.requests = 1;
  first.routes.push({} as Route);
  assert.deepEqual(settingsOf(""), DEFAULT_SETTINGS);
  assert.deepEqual(WEBHOOK_DEFAULTS.rateLimit, { requests: 30, windowSeconds: 60 });
});

Deno.test("readWebhookSettings: only the four webhook variables are read from the scope", () => {
  const asked: string[] = [];
  const source = ConfigSource.parse(FILE, extraYaml("port: 9000", "secret: s"));
  readWebhookSettings({
    source,
    secrets: new SecretScope({}, (name) => {
      asked.push(name);
      return undefined;
    }),
  });
  assert.deepEqual(
    [...new Set(asked)].sort(),
    ["INSECURE_NO_AUTH", "WEBHOOK_ENABLED", "WEBHOOK_PORT", "WEBHOOK_SECRET"],
  );
});

// --- config.yaml ---------------------------------------------------------------------------

Deno.test("readWebhookSettings: every key read from config.yaml", () => {
  const yaml = [
    "platforms:",
    "  webhook:",
    "    enabled: true",
    "    extra:",
    "      port: 9001",
    '      host: " 127.0.0.1 "',
    '      secret: " s3cret "',
    "      rate_limit: 10",
    "      max_body_bytes: 2048",
    "      body_timeout_seconds: 2.5",
    "      script_timeout_seconds: 7",
    "      idempotency_ttl_seconds: 3600",
    "      concurrent_runs: 8",
    "      delivery_attempts: 2",
    "      delivery_retry_seconds: 0.25",
    "      script_sandbox: off",
    "",
  ].join("\n");
  assert.deepEqual(settingsOf(yaml), {
    enabled: true,
    enabledBy: `${ENABLED} in ${FILE}`,
    port: 9001,
    host: "127.0.0.1",
    secret: "s3cret",
    rateLimit: { requests: 10, windowSeconds: 60 },
    maxBodyBytes: 2048,
    bodyTimeoutSeconds: 2.5,
    scriptTimeoutSeconds: 7,
    idempotencyTtlSeconds: 3600,
    concurrentRuns: 8,
    deliveryAttempts: 2,
    deliveryRetrySeconds: 0.25,
    scriptSandbox: "off",
    insecureNoAuth: false,
    routes: [],
    routeProblems: [],
  });
});

Deno.test("readWebhookSettings: platforms.webhook.enabled forms; enabledBy names key and file", () => {
  const cases: [string, boolean][] = [
    ["true", true],
    ["yes", true],
    ["On", true],
    ["1", true],
    ['"true"', true],
    ["false", false],
    ["no", false],
    ["OFF", false],
    ["0", false],
  ];
  for (const [value, expected] of cases) {
    const settings = settingsOf(enabledYaml(value));
    assert.equal(settings.enabled, expected, value);
    assert.equal(settings.enabledBy, "platforms.webhook.enabled in /h/config.yaml", value);
  }
});

Deno.test("readWebhookSettings: a blank platforms.webhook.enabled is the default, and says so", () => {
  // The key is there but holds nothing: `false` comes from the default, not from the file.
  for (const value of ["", "~", "null"]) {
    const settings = settingsOf(enabledYaml(value));
    assert.equal(settings.enabled, false, JSON.stringify(value));
    assert.equal(settings.enabledBy, "default (off)", JSON.stringify(value));
  }
});

Deno.test("readWebhookSettings: each extra key on its own, others stay at their defaults", () => {
  const cases: [string, Partial<WebhookSettings>][] = [
    ["port: 1", { port: 1 }],
    ["port: 65535", { port: 65_535 }],
    ['port: "9100"', { port: 9100 }],
    ["host: 0.0.0.0", { host: "0.0.0.0" }],
    ['host: "::"', { host: "::" }],
    ['host: "   "', {}],
    ["secret: abc", { secret: "abc" }],
    ['secret: "  "', {}],
    ["rate_limit: 1", { rateLimit: { requests: 1, windowSeconds: 60 } }],
    ["rate_limit: {requests: 100, window_seconds: 10}", {
      rateLimit: { requests: 100, windowSeconds: 10 },
    }],
    ["rate_limit: {requests: 5}", { rateLimit: { requests: 5, windowSeconds: 60 } }],
    ["rate_limit: {window_seconds: 1}", { rateLimit: { requests: 30, windowSeconds: 1 } }],
    ["rate_limit: {}", {}],
    ["max_body_bytes: 1", { maxBodyBytes: 1 }],
    ['max_body_bytes: "4096"', { maxBodyBytes: 4096 }],
    ["body_timeout_seconds: 0.5", { bodyTimeoutSeconds: 0.5 }],
    ["body_timeout_seconds: 120", { bodyTimeoutSeconds: 120 }],
    ["script_timeout_seconds: 120", { scriptTimeoutSeconds: 120 }],
    ["idempotency_ttl_seconds: 60", { idempotencyTtlSeconds: 60 }],
    ["concurrent_runs: 1", { concurrentRuns: 1 }],
    ["concurrent_runs: 64", { concurrentRuns: 64 }],
    ["delivery_attempts: 1", { deliveryAttempts: 1 }],
    ["delivery_retry_seconds: 0.25", { deliveryRetrySeconds: 0.25 }],
    ["delivery_retry_seconds: 30", { deliveryRetrySeconds: 30 }],
    ['delivery_retry_seconds: "0.5"', { deliveryRetrySeconds: 0.5 }],
    ["script_sandbox: auto", { scriptSandbox: "auto" }],
    ["script_sandbox: bwrap", { scriptSandbox: "bwrap" }],
    ['script_sandbox: " BWRAP "', { scriptSandbox: "bwrap" }],
    ["script_sandbox: Off", { scriptSandbox: "off" }],
  ];
  for (const [line, changed] of cases) {
    assert.deepEqual(settingsOf(extraYaml(line)), { ...DEFAULT_SETTINGS, ...changed }, line);
  }
});

Deno.test("readWebhookSettings: a quoted rate_limit number is read as that number", () => {
  for (const value of ['"30"', "' 45 '"]) {
    const settings = settingsOf(extraYaml(`rate_limit: ${value}`));
    assert.deepEqual(settings.rateLimit, {
      requests: Number(value.replace(/['"]/g, "")),
      windowSeconds: 60,
    });
  }
  assertConfigError(configError(() => settingsOf(extraYaml('rate_limit: "0"'))), {
    key: `${EXTRA}.rate_limit`,
    line: 4,
    problem: 'expected a whole number ≥ 1, got "0"',
    fix: `set ${EXTRA}.rate_limit to a whole number ≥ 1, e.g. 30, or remove it for the default`,
  });
});

Deno.test("readWebhookSettings: rate_limit in block form", () => {
  const settings = settingsOf(extraYaml("rate_limit:", "  requests: 7", "  window_seconds: 3600"));
  assert.deepEqual(settings.rateLimit, { requests: 7, windowSeconds: 3600 });
});

// --- environment ---------------------------------------------------------------------------

Deno.test("readWebhookSettings: WEBHOOK_ENABLED forms override config.yaml", () => {
  const cases: [string, boolean][] = [
    ["true", true],
    ["TRUE", true],
    ["1", true],
    ["yes", true],
    [" Yes ", true],
    ["on", true],
    ["false", false],
    ["False", false],
    ["0", false],
    ["no", false],
    ["NO", false],
    ["off", false],
  ];
  for (const [value, expected] of cases) {
    for (const configured of ["", enabledYaml(String(!expected))]) {
      const settings = settingsOf(configured, {}, { WEBHOOK_ENABLED: value });
      assert.equal(settings.enabled, expected, `${value} over ${JSON.stringify(configured)}`);
      assert.equal(settings.enabledBy, "WEBHOOK_ENABLED", value);
    }
    const fromDotenv = settingsOf("", { WEBHOOK_ENABLED: value });
    assert.equal(fromDotenv.enabled, expected, `.env ${value}`);
    assert.equal(fromDotenv.enabledBy, "WEBHOOK_ENABLED");
  }
});

Deno.test("readWebhookSettings: WEBHOOK_PORT overrides extra.port", () => {
  assert.equal(settingsOf("", {}, { WEBHOOK_PORT: "9000" }).port, 9000);
  assert.equal(settingsOf(extraYaml("port: 9001"), {}, { WEBHOOK_PORT: "9002" }).port, 9002);
  assert.equal(settingsOf(extraYaml("port: 9001"), { WEBHOOK_PORT: " 1 " }).port, 1);
  assert.equal(settingsOf("", { WEBHOOK_PORT: "65535" }).port, 65_535);
});

Deno.test("readWebhookSettings: WEBHOOK_SECRET wins over extra.secret", () => {
  assert.equal(settingsOf("", {}, { WEBHOOK_SECRET: "from-env" }).secret, "from-env");
  assert.equal(
    settingsOf(extraYaml("secret: from-config"), {}, { WEBHOOK_SECRET: "from-env" }).secret,
    "from-env",
  );
  assert.equal(
    settingsOf(extraYaml("secret: from-config"), { WEBHOOK_SECRET: " from-dotenv " }).secret,
    "from-dotenv",
  );
  assert.equal(settingsOf(extraYaml("secret: from-config")).secret, "from-config");
});

Deno.test("readWebhookSettings: each variable applies on its own", () => {
  const yaml = [
    "platforms:",
    "  webhook:",
    "    enabled: true",
    "    extra:",
    "      port: 9001",
    "      secret: from-config",
    "",
  ].join("\n");
  const configured = { enabled: true, port: 9001, secret: "from-config" };
  const cases: [Record<string, string>, Partial<WebhookSettings>][] = [
    [{}, {}],
    [{ WEBHOOK_ENABLED: "false" }, { enabled: false, enabledBy: "WEBHOOK_ENABLED" }],
    [{ WEBHOOK_PORT: "9100" }, { port: 9100 }],
    [{ WEBHOOK_SECRET: "from-env" }, { secret: "from-env" }],
    [{ INSECURE_NO_AUTH: "true" }, { insecureNoAuth: true }],
  ];
  for (const [env, changed] of cases) {
    const settings = settingsOf(yaml, {}, env);
    assert.deepEqual(
      settings,
      {
        ...DEFAULT_SETTINGS,
        ...configured,
        enabledBy: `${ENABLED} in ${FILE}`,
        ...changed,
      },
      JSON.stringify(env),
    );
  }
});

Deno.test("readWebhookSettings: .env wins over the process environment", () => {
  const settings = settingsOf(
    "",
    { WEBHOOK_ENABLED: "yes", WEBHOOK_PORT: "9000", WEBHOOK_SECRET: "dot", INSECURE_NO_AUTH: "1" },
    { WEBHOOK_ENABLED: "no", WEBHOOK_PORT: "9999", WEBHOOK_SECRET: "env", INSECURE_NO_AUTH: "0" },
  );
  assert.equal(settings.enabled, true);
  assert.equal(settings.port, 9000);
  assert.equal(settings.secret, "dot");
  assert.equal(settings.insecureNoAuth, true);
  // A variable missing from .env still comes from the process environment.
  assert.equal(settingsOf("", { WEBHOOK_SECRET: "dot" }, { WEBHOOK_PORT: "9999" }).port, 9999);
});

/** Every webhook variable set to `value`. */
function allOf(value: string): Record<string, string> {
  return {
    WEBHOOK_ENABLED: value,
    WEBHOOK_PORT: value,
    WEBHOOK_SECRET: value,
    INSECURE_NO_AUTH: value,
  };
}

Deno.test("readWebhookSettings: empty or whitespace-only variables are ignored", () => {
  const yaml = [
    "platforms:",
    "  webhook:",
    "    enabled: true",
    "    extra:",
    "      port: 9001",
    "      secret: from-config",
    "",
  ].join("\n");
  for (const blank of ["", " ", "\t \n"]) {
    for (const [dotenv, env] of [[{}, allOf(blank)], [allOf(blank), {}]]) {
      const settings = settingsOf(yaml, dotenv, env);
      assert.equal(settings.enabled, true, JSON.stringify(blank));
      assert.equal(settings.enabledBy, `${ENABLED} in ${FILE}`);
      assert.equal(settings.port, 9001);
      assert.equal(settings.secret, "from-config");
      assert.equal(settings.insecureNoAuth, false);
    }
    assert.equal(settingsOf("", {}, allOf(blank)).secret, undefined);
    assert.equal(settingsOf("", {}, allOf(blank)).enabledBy, "default (off)");
  }
});

Deno.test("readWebhookSettings: INSECURE_NO_AUTH is on only for a true-like value", () => {
  for (const value of ["true", "1", "yes", "on", " TRUE "]) {
    assert.equal(settingsOf("", {}, { INSECURE_NO_AUTH: value }).insecureNoAuth, true, value);
    assert.equal(settingsOf("", { INSECURE_NO_AUTH: value }).insecureNoAuth, true, value);
  }
  for (const value of ["false", "0", "no", "off", ""]) {
    assert.equal(settingsOf("", {}, { INSECURE_NO_AUTH: value }).insecureNoAuth, false, value);
  }
  assert.equal(settingsOf("").insecureNoAuth, false);
});

Deno.test("readWebhookSettings: an INSECURE_NO_AUTH that is not a boolean names .env or the environment", () => {
  for (const value of ["maybe", "2", "ture"]) {
    const problem = `INSECURE_NO_AUTH=${value} is not true or false (it lets routes without a ` +
      "secret accept unsigned requests when host is loopback)";
    assertConfigError(configError(() => settingsOf("", { INSECURE_NO_AUTH: value })), {
      file: "<home>/.env",
      key: "INSECURE_NO_AUTH",
      line: undefined,
      problem,
      fix: "set INSECURE_NO_AUTH to true or false in <home>/.env, or delete that line",
    });
    assertConfigError(configError(() => settingsOf("", {}, { INSECURE_NO_AUTH: value })), {
      file: "the environment",
      key: "INSECURE_NO_AUTH",
      line: undefined,
      problem,
      fix: "set INSECURE_NO_AUTH to true or false in the environment, or unset it " +
        "(`unset INSECURE_NO_AUTH`)",
    });
  }
});

// --- malformed values ----------------------------------------------------------------------

Deno.test("readWebhookSettings: WEBHOOK_ENABLED=maybe names where it was set, never config.yaml", () => {
  const problem = "WEBHOOK_ENABLED=maybe is not true or false (it overrides " +
    "platforms.webhook.enabled of config.yaml)";
  const error = configError(() =>
    settingsOf(enabledYaml("true"), {}, { WEBHOOK_ENABLED: "maybe" })
  );
  assertConfigError(error, {
    file: "the environment",
    key: "WEBHOOK_ENABLED",
    line: undefined,
    problem,
    fix: "set WEBHOOK_ENABLED to true or false in the environment, or unset it " +
      "(`unset WEBHOOK_ENABLED`)",
  });
  assert.equal(
    error.message,
    `the environment (key WEBHOOK_ENABLED): ${problem}. Fix: set WEBHOOK_ENABLED to true or ` +
      "false in the environment, or unset it (`unset WEBHOOK_ENABLED`)",
  );
  const fromDotenv = configError(() =>
    settingsOf(enabledYaml("true"), { WEBHOOK_ENABLED: " maybe " })
  );
  assertConfigError(fromDotenv, {
    file: "<home>/.env",
    key: "WEBHOOK_ENABLED",
    line: undefined,
    problem,
    fix: "set WEBHOOK_ENABLED to true or false in <home>/.env, or delete that line " +
      "(`agent gateway setup` also rewrites it)",
  });
});

Deno.test("readWebhookSettings: a malformed variable of .env names the file and its line", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const dotenv = `${dir}/.env`;
    const text = "# mine\nWEBHOOK_PORT=9000\nINSECURE_NO_AUTH=maybe\nexport WEBHOOK_PORT=abc\n";
    Deno.writeTextFileSync(dotenv, text);
    const read = (name: string) => () =>
      readWebhookSettings({
        source: ConfigSource.parse(FILE, enabledYaml("true")),
        secrets: SecretScope.fromText(text, (n) => n === name ? "true" : undefined),
        paths: { dotenv },
      });
    // The last assignment is the one dotenv keeps, so that is the line named.
    assertConfigError(configError(read("")), {
      file: dotenv,
      key: "WEBHOOK_PORT",
      line: 4,
      problem: "WEBHOOK_PORT=abc is not a port (it overrides platforms.webhook.extra.port of " +
        "config.yaml)",
      fix: `set WEBHOOK_PORT to a port from 1 to 65535 in ${dotenv}, or delete that line ` +
        "(`agent gateway setup` also rewrites it)",
    });
    Deno.writeTextFileSync(dotenv, "INSECURE_NO_AUTH=maybe\n");
    const error = configError(() =>
      readWebhookSettings({
        source: ConfigSource.parse(FILE, ""),
        secrets: SecretScope.fromText("INSECURE_NO_AUTH=maybe\n", () => undefined),
        paths: { dotenv },
      })
    );
    assert.match(error.message, new RegExp(`^${dotenv}:1 \\(key INSECURE_NO_AUTH\\): `));
    assert.doesNotMatch(error.message, /config\.yaml/);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("readWebhookSettings: a malformed platforms.webhook.enabled is a ConfigError", () => {
  for (const value of ["maybe", "2", "[true]"]) {
    assertConfigError(configError(() => settingsOf(enabledYaml(value))), {
      key: ENABLED,
      line: 3,
      problem: /^expected true or false, got /,
      fix: "set it to true or false",
    });
  }
});

Deno.test("readWebhookSettings: a malformed WEBHOOK_PORT names the variable, its source and the range", () => {
  for (const value of ["0", "70000", "65536", "abc", "-1", "80.5", "80 80"]) {
    for (const yaml of ["", extraYaml("port: 9001")]) {
      const error = configError(() => settingsOf(yaml, {}, { WEBHOOK_PORT: value }));
      assertConfigError(error, {
        file: "the environment",
        key: "WEBHOOK_PORT",
        line: undefined,
        problem: `WEBHOOK_PORT=${value} is not a port (it overrides ${EXTRA}.port of config.yaml)`,
        fix: "set WEBHOOK_PORT to a port from 1 to 65535 in the environment, or unset it " +
          "(`unset WEBHOOK_PORT`)",
      });
    }
  }
});

Deno.test("readWebhookSettings: platforms, platforms.webhook or extra that is not a mapping is a ConfigError", () => {
  const cases: [string, string, number, string][] = [
    ["platforms: []\n", "platforms", 1, "a list"],
    ['platforms: "x"\n', "platforms", 1, 'string "x"'],
    ["platforms:\n  webhook: [1]\n", "platforms.webhook", 2, "a list"],
    ['platforms:\n  webhook:\n    extra: "str"\n', EXTRA, 3, 'string "str"'],
    ["platforms:\n  webhook:\n    extra: 5\n", EXTRA, 3, "number 5"],
  ];
  for (const [yaml, key, line, got] of cases) {
    assertConfigError(configError(() => settingsOf(yaml)), {
      key,
      line,
      problem: `expected a mapping of settings, got ${got}`,
      fix: /^write it as a mapping, with its keys indented below it \(e\.g\. `.+`\), or delete it$/,
    });
  }
  // A section whose keys are all commented out is null: the defaults apply.
  for (const yaml of ["platforms:\n", "platforms:\n  webhook:\n#    enabled: true\n"]) {
    assert.equal(settingsOf(yaml).port, WEBHOOK_DEFAULTS.port);
  }
});

Deno.test("readWebhookSettings: a malformed extra.port names the key, line and range", () => {
  const cases: [string, string][] = [
    ['"x"', '"x"'],
    ["0", "0"],
    ["65536", "65536"],
    ["1.5", "1.5"],
    ["-80", "-80"],
    ['""', '""'],
    ["true", "true"],
    ["{a: 1}", '{"a":1}'],
    ["[80, 81]", "[80,81]"],
  ];
  for (const [value, shown] of cases) {
    const error = configError(() => settingsOf(extraYaml(`port: ${value}`)));
    assertConfigError(error, {
      key: `${EXTRA}.port`,
      line: 4,
      problem: `expected a port number, got ${shown}`,
      fix: "use 1 to 65535",
    });
  }
});

Deno.test("readWebhookSettings: a one-item list is not a port", () => {
  // `port: [8000]` is a list; it must not be read as port 8000 (String([8000]) === "8000").
  const error = configError(() => settingsOf(extraYaml("port: [8000]")));
  assertConfigError(error, {
    key: `${EXTRA}.port`,
    line: 4,
    problem: /^expected a port number, got /,
    fix: "use 1 to 65535",
  });
});

Deno.test("readWebhookSettings: a malformed extra.rate_limit names the key, line and fix", () => {
  for (const value of ['"fast"', '""', '"30 per minute"', "true", "[30]"]) {
    assertConfigError(configError(() => settingsOf(extraYaml(`rate_limit: ${value}`))), {
      key: `${EXTRA}.rate_limit`,
      line: 4,
      problem: "expected a number of requests per minute, or {requests, window_seconds}",
      fix: "e.g. rate_limit: 30",
    });
  }
  for (const [value, shown] of [["0", "0"], ["-5", "-5"]]) {
    assertConfigError(configError(() => settingsOf(extraYaml(`rate_limit: ${value}`))), {
      key: `${EXTRA}.rate_limit`,
      line: 4,
      problem: `expected a whole number ≥ 1, got ${shown}`,
      fix: `set ${EXTRA}.rate_limit to a whole number ≥ 1, e.g. 30, or remove it for the default`,
    });
  }
  assertConfigError(configError(() => settingsOf(extraYaml("rate_limit: 1.5"))), {
    key: `${EXTRA}.rate_limit`,
    line: 4,
    problem: "expected a whole number, got 1.5",
    fix: `set ${EXTRA}.rate_limit to a whole number ≥ 1, e.g. 30`,
  });
});

Deno.test("readWebhookSettings: malformed rate_limit.requests / window_seconds name their line", () => {
  const cases: [string[], string, number, string][] = [
    [["rate_limit:", "  requests: 0"], "requests", 5, "expected a whole number ≥ 1, got 0"],
    [
      ["rate_limit:", "  requests: 10", "  window_seconds: -1"],
      "window_seconds",
      6,
      "expected a whole number from 1 to 86400, got -1",
    ],
    [["rate_limit:", "  requests: many"], "requests", 5, 'expected a whole number ≥ 1, got "many"'],
    [
      ["rate_limit:", "  window_seconds: 0.5"],
      "window_seconds",
      5,
      "expected a whole number from 1 to 86400, got 0.5",
    ],
    [
      ["rate_limit:", "  window_seconds: 86401"],
      "window_seconds",
      5,
      "expected a whole number from 1 to 86400, got 86401",
    ],
    [["rate_limit:", "  requests:"], "requests", 5, "a value is needed"],
  ];
  for (const [lines, field, line, problem] of cases) {
    assertConfigError(configError(() => settingsOf(extraYaml(...lines))), {
      key: `${EXTRA}.rate_limit.${field}`,
      line,
      problem,
      fix: /./,
    });
  }
  // The flow form points at the rate_limit line.
  assertConfigError(configError(() => settingsOf(extraYaml("rate_limit: {requests: 0}"))), {
    key: `${EXTRA}.rate_limit.requests`,
    line: 4,
    problem: "expected a whole number ≥ 1, got 0",
    fix: `set ${EXTRA}.rate_limit.requests to a whole number ≥ 1, e.g. 30, or remove it for the ` +
      "default",
  });
  assertConfigError(configError(() => settingsOf(extraYaml("rate_limit: {window_seconds: -1}"))), {
    key: `${EXTRA}.rate_limit.window_seconds`,
    line: 4,
    problem: "expected a whole number from 1 to 86400, got -1",
    fix: `set ${EXTRA}.rate_limit.window_seconds to a whole number from 1 to 86400, e.g. 60, or ` +
      "remove it for the default",
  });
});

Deno.test("readWebhookSettings: malformed whole-number keys name the key, line, range and a fix with an example", () => {
  const keys: [string, string, number][] = [
    ["max_body_bytes", "≥ 1", 1_048_576],
    ["script_timeout_seconds", "from 1 to 86400", 30],
    ["idempotency_ttl_seconds", "from 1 to 31536000", 86_400],
    ["concurrent_runs", "from 1 to 64", 2],
    ["delivery_attempts", "≥ 1", 5],
  ];
  const values: [string, string][] = [
    ["0", "0"],
    ["-3", "-3"],
    ['"1MB"', '"1MB"'],
    ['""', '""'],
    ["true", "true"],
    ["[1]", "[1]"],
    ["{a: 1}", '{"a":1}'],
    [".inf", "Infinity"],
  ];
  for (const [key, range, example] of keys) {
    const fix = `set ${EXTRA}.${key} to a whole number ${range}, e.g. ${example}`;
    for (const [value, shown] of values) {
      const error = configError(() => settingsOf(extraYaml(`${key}: ${value}`)));
      assertConfigError(error, {
        key: `${EXTRA}.${key}`,
        line: 4,
        problem: `expected a whole number ${range}, got ${shown}`,
        fix: `${fix}, or remove it for the default`,
      });
    }
    assertConfigError(configError(() => settingsOf(extraYaml(`${key}: 1.5`))), {
      key: `${EXTRA}.${key}`,
      line: 4,
      problem: "expected a whole number, got 1.5",
      fix,
    });
  }
});

Deno.test("readWebhookSettings: malformed delivery_retry_seconds and body_timeout_seconds name the key, line, range and a fix with an example", () => {
  const cases: [string, string][] = [
    ["0", "0"],
    ["-1", "-1"],
    ["-0.5", "-0.5"],
    ['"soon"', '"soon"'],
    ['""', '""'],
    ['"  "', '"  "'],
    ["true", "true"],
    ["[5]", "[5]"],
    [".inf", "Infinity"], // Infinity is not a wait either
  ];
  for (const [key, example] of [["delivery_retry_seconds", 5], ["body_timeout_seconds", 30]]) {
    for (const [value, shown] of cases) {
      const error = configError(() => settingsOf(extraYaml(`${key}: ${value}`)));
      assertConfigError(error, {
        key: `${EXTRA}.${key}`,
        line: 4,
        problem: `expected a number from 0.001 to 86400, got ${shown}`,
        fix: `set ${EXTRA}.${key} to a number from 0.001 to 86400, e.g. ${example}, or remove ` +
          "it for the default",
      });
    }
  }
});

// Timers hold a signed 32-bit count of ms: past 2 147 483 s one fires after 1 ms, so a script
// would be killed at once and a body deadline would spin. The agent's own waits stop at a day.
Deno.test("readWebhookSettings: a duration beyond a day is a config error naming the line, key, range and fix", () => {
  const cases: [string, string, number, string][] = [
    ["script_timeout_seconds", "2200000", 30, "a whole number from 1 to 86400"],
    ["body_timeout_seconds", "3000000", 30, "a number from 0.001 to 86400"],
    ["body_timeout_seconds", "86400.5", 30, "a number from 0.001 to 86400"],
    ["delivery_retry_seconds", "2147484", 5, "a number from 0.001 to 86400"],
    ["idempotency_ttl_seconds", "31536001", 86_400, "a whole number from 1 to 31536000"],
  ];
  for (const [key, value, example, expected] of cases) {
    const error = configError(() => settingsOf(extraYaml("port: 8644", `${key}: ${value}`)));
    assertConfigError(error, {
      key: `${EXTRA}.${key}`,
      line: 5,
      problem: `expected ${expected}, got ${value}`,
      fix: `set ${EXTRA}.${key} to ${expected}, e.g. ${example}, or remove it for the default`,
    });
    assert.match(error.message, new RegExp(`^${FILE}:5 \\(key ${EXTRA}\\.${key}\\): `));
  }
  // The longest allowed waits are read as written.
  const longest = settingsOf(extraYaml(
    "script_timeout_seconds: 86400",
    "body_timeout_seconds: 86400",
    "delivery_retry_seconds: 86400",
    "idempotency_ttl_seconds: 31536000",
    "rate_limit: {window_seconds: 86400}",
  ));
  assert.equal(longest.scriptTimeoutSeconds, 86_400);
  assert.equal(longest.bodyTimeoutSeconds, 86_400);
  assert.equal(longest.deliveryRetrySeconds, 86_400);
  assert.equal(longest.idempotencyTtlSeconds, 31_536_000);
  assert.equal(longest.rateLimit.windowSeconds, 86_400);
});

Deno.test("readWebhookSettings: a malformed script_sandbox names the key, line and choices", () => {
  for (const [value, shown] of [["docker", "docker"], ['" Docker "', "docker"], ['""', ""]]) {
    assertConfigError(configError(() => settingsOf(extraYaml(`script_sandbox: ${value}`))), {
      key: `${EXTRA}.script_sandbox`,
      line: 4,
      problem: `unknown value '${shown}'`,
      fix: "use auto, bwrap or off",
    });
  }
  assertConfigError(configError(() => settingsOf(extraYaml("script_sandbox: true"))), {
    key: `${EXTRA}.script_sandbox`,
    line: 4,
    problem: "expected a string, got boolean true",
    fix: "quote the value",
  });
});

Deno.test("readWebhookSettings: a host or secret that is not a string is a ConfigError", () => {
  for (
    const [key, value, problem] of [
      ["host", "8080", "expected a string, got number 8080"],
      ["host", "[a]", "expected a string, got a list"],
      [
        "host",
        "1.2345678901234567890e30",
        "expected a string, got number 1.2345678901234567890e30",
      ],
      ["secret", "123456", "expected a string, got a number (not shown: the key holds a secret)"],
      ["secret", "true", "expected a string, got a boolean (not shown: the key holds a secret)"],
      ["secret", "{a: b}", "expected a string, got a mapping"],
    ]
  ) {
    assertConfigError(configError(() => settingsOf(extraYaml(`${key}: ${value}`))), {
      key: `${EXTRA}.${key}`,
      line: 4,
      problem,
      fix: "quote the value",
    });
  }
});

Deno.test("readWebhookSettings: routes that are not a mapping are a ConfigError", () => {
  for (const value of ['"x"', "[a, b]", "5", "true"]) {
    assertConfigError(configError(() => settingsOf(extraYaml(`routes: ${value}`))), {
      key: `${EXTRA}.routes`,
      line: 4,
      problem: "expected a mapping of route name to settings",
      fix: "write each route as a name with its settings under it, e.g. " +
        '`routes: {deploy: {events: [push], prompt: "Deploy {ref}"}}`',
    });
  }
});

// --- static routes -------------------------------------------------------------------------

Deno.test("readWebhookSettings: a valid static route becomes a Route", () => {
  const settings = settingsOf(extraYaml(
    "routes:",
    "  github:",
    "    description: GitHub pull requests",
    '    events: [pull_request, " push "]',
    '    secret: " route-secret "',
    '    prompt: "PR {pull_request.title} by {sender.login}"',
    '    skills: "review, triage"',
    "    deliver: Telegram",
    '    deliver_extra: {chat_id: "123"}',
    "    deliver_only: true",
    '    script: " check.sh "',
    "    enabled: false",
    "    filters:",
    "      - field: action",
    "        equals: opened",
  ));
  assert.deepEqual(settings.routeProblems, []);
  assert.deepEqual(settings.routes, [
    {
      name: "github",
      source: "static",
      description: "GitHub pull requests",
      events: ["pull_request", "push"],
      secret: "route-secret",
      prompt: "PR {pull_request.title} by {sender.login}",
      skills: ["review", "triage"],
      deliver: "telegram",
      deliverExtra: { chat_id: "123" },
      deliverOnly: true,
      script: "check.sh",
      enabled: false,
      filters: [{ field: "action", equals: "opened" }],
      createdAt: undefined,
    },
  ]);
});

Deno.test("readWebhookSettings: a bare static route gets the route defaults", () => {
  const settings = settingsOf(extraYaml("routes:", "  ping: {}", "  pong:", '    deliver: ""'));
  assert.deepEqual(settings.routeProblems, []);
  const bare: Omit<Route, "name"> = {
    source: "static",
    description: "",
    events: [],
    secret: undefined,
    prompt: "",
    skills: [],
    deliver: "log",
    deliverExtra: {},
    deliverOnly: false,
    script: undefined,
    enabled: true,
    filters: undefined,
    createdAt: undefined,
  };
  assert.deepEqual(settings.routes, [{ name: "ping", ...bare }, { name: "pong", ...bare }]);
});

Deno.test("readWebhookSettings: invalid static routes are left out and listed with file:line and key", () => {
  const settings = settingsOf(extraYaml(
    "routes:", // line 4
    "  good:", // 5
    "    deliver: log",
    "  fax:", // 7
    "    deliver: fax",
    "  typed:", // 9
    "    events: 5",
    '    deliver_only: "maybe"',
    "  loggy:", // 12
    "    deliver_only: true",
    "  scalar: hello", // 14
    "  extra:", // 15
    "    deliver: slack",
    "    deliver_extra: [1]",
  ));
  assert.deepEqual(settings.routes.map((route) => route.name), ["good"]);
  const problems = settings.routeProblems;
  const expected: [number, string, string, RegExp][] = [
    [7, "fax", "deliver", /unknown delivery target 'fax' \(use one of log, origin, telegram/],
    [9, "typed", "events", /expected a list of strings/],
    [9, "typed", "deliver_only", /expected true or false, got "maybe"/],
    [12, "loggy", "", /deliver_only needs a real target; 'log' is not one/],
    [14, "scalar", "", /expected a mapping of route settings/],
    [15, "extra", "deliver_extra", /expected a mapping such as \{chat_id: "123"\}/],
  ];
  assert.equal(problems.length, expected.length, problems.join("\n"));
  for (const [i, [line, name, field, text]] of expected.entries()) {
    const problem = problems[i];
    assert.ok(problem.startsWith(`${FILE}:${line} `), problem);
    assert.ok(problem.includes(`${EXTRA}.routes.${name}`), problem);
    if (field) assert.ok(problem.includes(field), problem);
    assert.match(problem, text);
  }
  // One bad route does not make the others fail, nor the settings.
  assert.equal(settings.port, WEBHOOK_DEFAULTS.port);
});

Deno.test("readWebhookSettings: a misspelt static route target names the one likely meant", () => {
  const settings = settingsOf(extraYaml("routes:", "  a:", "    deliver: telegrm"));
  assert.equal(settings.routeProblems.length, 1);
  assert.match(
    settings.routeProblems[0],
    /deliver: unknown delivery target 'telegrm' \(did you mean 'telegram'\? use one of log, /,
  );
});

Deno.test("readWebhookSettings: route switches take yes/no, on/off and 1/0 like every other switch", () => {
  const settings = settingsOf(extraYaml(
    "routes:",
    "  a:",
    "    deliver: slack",
    "    deliver_only: yes", // YAML 1.2 reads this as the string "yes"
    "    enabled: Off",
    "  b:",
    '    enabled: "1"',
    "    deliver_only: 0",
  ));
  assert.deepEqual(settings.routeProblems, []);
  assert.deepEqual(
    settings.routes.map(({ name, deliverOnly, enabled }) => ({ name, deliverOnly, enabled })),
    [
      { name: "a", deliverOnly: true, enabled: false },
      { name: "b", deliverOnly: false, enabled: true },
    ],
  );
});

Deno.test("readWebhookSettings: a static route name that breaks the subscription name rule is not served", () => {
  const settings = settingsOf(extraYaml(
    "routes:", // line 4
    "  ok-1_x: {}", // 5
    '  "My Route": {}', // 6
    "  Deploy: {}", // 7
    '  "a/b": {}', // 8
    "  _hidden: {}", // 9
  ));
  assert.deepEqual(settings.routes.map((route) => route.name), ["ok-1_x"]);
  const expected: [number, string, string][] = [
    [6, "My Route", " (e.g. my-route)"],
    [7, "Deploy", " (e.g. deploy)"],
    [8, "a/b", ""],
    [9, "_hidden", ""],
  ];
  assert.equal(settings.routeProblems.length, expected.length, settings.routeProblems.join("\n"));
  for (const [i, [line, name, example]] of expected.entries()) {
    assert.equal(
      settings.routeProblems[i],
      `${FILE}:${line} (${EXTRA}.routes.${name}): route name ${JSON.stringify(name)} is not ` +
        "valid, so the route is not served. Fix: rename the key to 1 to 64 lower-case letters, " +
        `digits, '-' and '_', starting with a letter or digit${example}, and restart the gateway`,
    );
  }
});

Deno.test("readWebhookSettings: static routes keep their order and are found by name", () => {
  const settings = settingsOf(extraYaml("routes:", "  b: {}", "  a: {prompt: hi}", "  c: {}"));
  assert.deepEqual(settings.routes.map((route) => route.name), ["b", "a", "c"]);
  assert.equal(settings.routes[1].prompt, "hi");
});

// --- URLs ----------------------------------------------------------------------------------

Deno.test("webhookBaseUrl: no host or a wildcard address → localhost", () => {
  for (const host of [undefined, "", "0.0.0.0", "::"]) {
    assert.equal(webhookBaseUrl({ host, port: 8644 }), "http://localhost:8644", String(host));
  }
  assert.equal(webhookBaseUrl({ port: 9000 }), "http://localhost:9000");
});

Deno.test("webhookBaseUrl: a named host or IPv4 address as given", () => {
  assert.equal(webhookBaseUrl({ host: "127.0.0.1", port: 80 }), "http://127.0.0.1:80");
  assert.equal(
    webhookBaseUrl({ host: "hooks.example.com", port: 443 }),
    "http://hooks.example.com:443",
  );
  assert.equal(webhookBaseUrl({ host: "localhost", port: 1 }), "http://localhost:1");
});

Deno.test("webhookBaseUrl: an IPv6 address is bracketed", () => {
  assert.equal(webhookBaseUrl({ host: "::1", port: 8644 }), "http://[::1]:8644");
  assert.equal(webhookBaseUrl({ host: "fe80::1", port: 9000 }), "http://[fe80::1]:9000");
  assert.equal(
    webhookBaseUrl({ host: "2001:db8::42", port: 65_535 }),
    "http://[2001:db8::42]:65535",
  );
  // The result is a URL the platform can parse, with the host intact.
  assert.equal(
    new URL(webhookBaseUrl({ host: "2001:db8::42", port: 8644 })).hostname,
    "[2001:db8::42]",
  );
});

Deno.test("routeUrl: <base>/webhooks/<name>", () => {
  assert.equal(routeUrl({ port: 8644 }, "github"), "http://localhost:8644/webhooks/github");
  assert.equal(
    routeUrl({ host: "::1", port: 9000 }, "ci_deploy"),
    "http://[::1]:9000/webhooks/ci_deploy",
  );
  assert.equal(
    routeUrl({ host: "10.0.0.5", port: 8080 }, "a-b"),
    "http://10.0.0.5:8080/webhooks/a-b",
  );
});

Deno.test("routeUrl: from resolved settings (config host and WEBHOOK_PORT)", () => {
  const settings = settingsOf(extraYaml('host: "::1"', "port: 9001"), { WEBHOOK_PORT: "9100" });
  assert.equal(routeUrl(settings, "github"), "http://[::1]:9100/webhooks/github");
  assert.equal(routeUrl(settingsOf(""), "x"), "http://localhost:8644/webhooks/x");
  assert.equal(
    routeUrl(settingsOf(extraYaml("host: 0.0.0.0", "port: 7000")), "x"),
    "http://localhost:7000/webhooks/x",
  );
});

Deno.test("readWebhookSettings: a misspelled route key keeps the route from being served, naming the key it meant", () => {
  const settings = settingsOf(extraYaml(
    "routes:",
    "  stripe:",
    "    secret: static-secret-0123456789",
    "    evnts: [payment_intent.succeeded]",
    "    filter: {field: type, equals: x}",
    "    colour: blue",
    "  ok:",
    "    secret: static-secret-0123456789",
    "    events: [push]",
  ));
  assert.deepEqual(settings.routes.map((route) => route.name), ["ok"]);
  const where = `${FILE}:5 (${EXTRA}.routes.stripe)`;
  assert.deepEqual(settings.routeProblems, [
    `${where}.evnts: \`evnts\` is not a route setting; did you mean \`events\`?`,
    `${where}.filter: \`filter\` is not a route setting; did you mean \`filters\`?`,
    `${where}.colour: \`colour\` is not a route setting; use description, events, secret, ` +
    "prompt, skills, deliver, deliver_extra, deliver_only, script, enabled, filters, created_at",
  ]);
});

Deno.test("readWebhookSettings: a static route's deliver_extra is checked as subscribe checks it; such a route is not served, as one with a misspelled key", () => {
  const settings = settingsOf(extraYaml(
    "routes:", // line 4
    "  tg:", // 5
    "    deliver: telegram",
    "    deliver_extra: {chatid: 123}",
    "  gh:", // 8
    "    deliver: github_comment",
    "    deliver_extra: {repo: octo/app}",
    "  gl:", // 11
    "    deliver: gitlab_comment",
    '    deliver_extra: {project: "a/../b", iid: 0, kind: pr}',
    "  quiet:", // 14
    "    deliver_extra: {chat_id: '-100123'}",
    "  empty:", // 16
    "    deliver: slack",
    '    deliver_extra: {chat_id: " "}',
    "  good-tg:",
    "    deliver: telegram",
    "    deliver_extra: {chat_id: -1001234567890}",
    "  good-gh:",
    "    deliver: github_comment",
    '    deliver_extra: {repo: "{repository.full_name}", number: "{issue.number}"}',
    "  good-gl:",
    "    deliver: gitlab_comment",
    "    deliver_extra: {project: group/app, iid: 7, kind: merge_request}",
    "  home:",
    "    deliver: discord",
  ));
  assert.deepEqual(settings.routes.map((route) => route.name), [
    "good-tg",
    "good-gh",
    "good-gl",
    "home",
  ]);
  const at = (line: number, name: string) => `${FILE}:${line} (${EXTRA}.routes.${name})`;
  assert.deepEqual(settings.routeProblems, [
    `${at(5, "tg")}.deliver_extra.chatid: deliver: telegram does not use the key 'chatid'; it ` +
    "reads only chat_id. Fix: did you mean chat_id?",
    `${at(8, "gh")}.deliver_extra: deliver: github_comment needs deliver_extra.number (a value, ` +
    'or a template such as number: "{issue.number}"); to answer on the item the event came ' +
    "from, use deliver: origin",
    `${at(11, "gl")}.deliver_extra.project: deliver_extra.project is "a/../b"; expected a GitLab ` +
    "project path group/project (segments of letters, digits, _, . and -; no ..) or a numeric " +
    'project id. Fix: a valid value, or a template such as project: "{project.path_with_namespace}"',
    `${at(11, "gl")}.deliver_extra.iid: deliver_extra.iid is 0; expected a positive integer up ` +
    'to 2147483648. Fix: a valid value, or a template such as iid: "{object_attributes.iid}"',
    `${at(11, "gl")}.deliver_extra.kind: "pr" is not a GitLab item kind. Fix: kind: issue (the ` +
    "default) or kind: merge_request",
    `${at(14, "quiet")}.deliver_extra.chat_id: without deliver, events go to the log, which does ` +
    "not use a chat id; it reads none. Fix: set deliver: telegram or deliver: discord or " +
    "deliver: slack, or leave it out",
    `${at(16, "empty")}.deliver_extra.chat_id is empty. Fix: give the chat, or leave it out to ` +
    "use SLACK_HOME_CHANNEL",
  ]);
});
