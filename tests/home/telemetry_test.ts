import assert from "node:assert/strict";
import { join } from "node:path";
import {
  ConfigSource,
  loadConfig,
  resolveTelemetry,
  type TelemetrySettings,
} from "../../src/home/config.ts";
import { ConfigError } from "../../src/home/errors.ts";
import { SecretScope } from "../../src/home/secrets.ts";
import { envOf, namesIn, withTempDir } from "./_helpers.ts";

const FILE = "/h/config.yaml";
const ENDPOINT = "https://metrics.example/v2/packages";

/** `telemetry.shared_metrics` with the given keys (omitted keys are absent). */
function yaml(keys: { enabled?: string; send?: string; endpoint?: string } = {}): string {
  const lines = Object.entries(keys).map(([key, value]) => `    ${key}: ${value}`);
  return lines.length ? `telemetry:\n  shared_metrics:\n${lines.join("\n")}\n` : "";
}

function resolve(
  configYaml: string,
  env: Record<string, string> = {},
  dotenv: Record<string, string> = {},
): TelemetrySettings {
  return resolveTelemetry(
    ConfigSource.parse(FILE, configYaml),
    new SecretScope(dotenv, envOf(env)),
  );
}

Deno.test("telemetry: default off, decided by the default", () => {
  const t = resolve("");
  assert.deepEqual(t, {
    enabled: false,
    send: false,
    endpoint: undefined,
    decidedBy: t.decidedBy,
    warnings: [],
  });
  assert.match(t.decidedBy, /^default/);
});

Deno.test("telemetry: unrelated config and env keep the default off", () => {
  const t = resolve("model:\n  default: x\ntelemetry: {}\n", { HOME: "/root", CI: "true" });
  assert.equal(t.enabled, false);
  assert.match(t.decidedBy, /^default/);
});

Deno.test("telemetry: config enabled true / false decides", () => {
  const on = resolve(yaml({ enabled: "true" }));
  assert.equal(on.enabled, true);
  assert.equal(on.decidedBy, `telemetry.shared_metrics.enabled: true in ${FILE}`);
  assert.deepEqual(on.warnings, []);

  const off = resolve(yaml({ enabled: "false" }));
  assert.equal(off.enabled, false);
  assert.equal(off.decidedBy, `telemetry.shared_metrics.enabled: false in ${FILE}`);

  assert.equal(resolve(yaml({ enabled: "yes" })).enabled, true);
  assert.equal(resolve(yaml({ enabled: "Off" })).enabled, false);
});

Deno.test("telemetry: AGENT_SHARED_METRICS applies when the config key is absent", () => {
  for (const value of ["true", "TRUE", "1", "yes", "on"]) {
    const t = resolve("", { AGENT_SHARED_METRICS: value });
    assert.equal(t.enabled, true, value);
    assert.equal(t.decidedBy, `AGENT_SHARED_METRICS=${value} in the environment`);
    assert.deepEqual(t.warnings, []);
  }
  for (const value of ["false", "0", "no", "Off"]) {
    const t = resolve("", { AGENT_SHARED_METRICS: value });
    assert.equal(t.enabled, false, value);
    assert.equal(t.decidedBy, `AGENT_SHARED_METRICS=${value} in the environment`);
    assert.deepEqual(t.warnings, []);
  }
});

Deno.test("telemetry: a null config key counts as absent (AGENT_SHARED_METRICS applies)", () => {
  for (const value of ["", "null", "~"]) {
    const t = resolve(yaml({ enabled: value }), { AGENT_SHARED_METRICS: "true" });
    assert.equal(t.enabled, true, JSON.stringify(value));
    assert.match(t.decidedBy, /^AGENT_SHARED_METRICS=/);
  }
});

Deno.test("telemetry: the config key wins over AGENT_SHARED_METRICS", () => {
  const off = resolve(yaml({ enabled: "false" }), { AGENT_SHARED_METRICS: "true" });
  assert.equal(off.enabled, false);
  assert.match(off.decidedBy, /^telemetry\.shared_metrics\.enabled: false/);

  const on = resolve(yaml({ enabled: "true" }), { AGENT_SHARED_METRICS: "false" });
  assert.equal(on.enabled, true);
  assert.match(on.decidedBy, /^telemetry\.shared_metrics\.enabled: true/);

  // Even an invalid operator default is irrelevant (and not warned about) once the key decides.
  const decided = resolve(yaml({ enabled: "true" }), { AGENT_SHARED_METRICS: "sure" });
  assert.equal(decided.enabled, true);
  assert.deepEqual(decided.warnings, []);
});

Deno.test("telemetry: invalid AGENT_SHARED_METRICS → warning and off", () => {
  for (const value of ["sure", "maybe", "2", "enabled"]) {
    const t = resolve("", { AGENT_SHARED_METRICS: value });
    assert.equal(t.enabled, false, JSON.stringify(value));
    assert.match(t.decidedBy, /^default/);
    assert.equal(t.warnings.length, 1, JSON.stringify(value));
    assert.match(t.warnings[0], /AGENT_SHARED_METRICS/);
    assert.ok(t.warnings[0].includes(`=${value} `), t.warnings[0]);
  }
});

Deno.test("telemetry: DO_NOT_TRACK=1 / true forces off even when config or env say on", () => {
  for (const dnt of ["1", "true", "TRUE", " 1 ", "yes"]) {
    const byConfig = resolve(yaml({ enabled: "true", send: "true", endpoint: ENDPOINT }), {
      DO_NOT_TRACK: dnt,
    });
    assert.equal(byConfig.enabled, false, dnt);
    assert.equal(byConfig.send, false, dnt);
    assert.match(byConfig.decidedBy, /DO_NOT_TRACK/);

    const byEnv = resolve("", { DO_NOT_TRACK: dnt, AGENT_SHARED_METRICS: "true" });
    assert.equal(byEnv.enabled, false, dnt);
    assert.match(byEnv.decidedBy, /DO_NOT_TRACK/);
  }
});

Deno.test("telemetry: DO_NOT_TRACK=0 / false / empty does not force off", () => {
  for (const dnt of ["0", "false", "False", "", "  "]) {
    const t = resolve(yaml({ enabled: "true" }), { DO_NOT_TRACK: dnt });
    assert.equal(t.enabled, true, JSON.stringify(dnt));
    assert.match(t.decidedBy, /^telemetry\.shared_metrics\.enabled: true/);

    const byEnv = resolve("", { DO_NOT_TRACK: dnt, AGENT_SHARED_METRICS: "1" });
    assert.equal(byEnv.enabled, true, JSON.stringify(dnt));
  }
});

Deno.test("telemetry: DO_NOT_TRACK and AGENT_SHARED_METRICS are read from .env too", () => {
  const dnt = resolve(yaml({ enabled: "true" }), {}, { DO_NOT_TRACK: "1" });
  assert.equal(dnt.enabled, false);
  assert.match(dnt.decidedBy, /DO_NOT_TRACK/);

  const operator = resolve("", {}, { AGENT_SHARED_METRICS: "true" });
  assert.equal(operator.enabled, true);
  assert.match(operator.decidedBy, /^AGENT_SHARED_METRICS=true in .*\.env$/);

  // Unlike secrets, the operator's environment wins over .env for the consent default …
  const envWins = resolve("", { AGENT_SHARED_METRICS: "false" }, {
    AGENT_SHARED_METRICS: "true",
  });
  assert.equal(envWins.enabled, false);
  assert.equal(envWins.decidedBy, "AGENT_SHARED_METRICS=false in the environment");
  // … and DO_NOT_TRACK set in either place forces off: DO_NOT_TRACK=0 in .env undoes nothing.
  const dntEnv = resolve(yaml({ enabled: "true" }), { DO_NOT_TRACK: "1" }, { DO_NOT_TRACK: "0" });
  assert.equal(dntEnv.enabled, false);
  assert.match(dntEnv.decidedBy, /^DO_NOT_TRACK is set in the environment/);
});

Deno.test("telemetry: send with enabled and an endpoint → send true, no warnings", () => {
  const t = resolve(yaml({ enabled: "true", send: "true", endpoint: ENDPOINT }));
  assert.equal(t.enabled, true);
  assert.equal(t.send, true);
  assert.equal(t.endpoint, ENDPOINT);
  assert.deepEqual(t.warnings, []);
});

Deno.test("telemetry: send is off unless configured", () => {
  const t = resolve(yaml({ enabled: "true", endpoint: ENDPOINT }));
  assert.equal(t.send, false);
  assert.equal(t.endpoint, ENDPOINT);
  assert.deepEqual(t.warnings, []);
  assert.equal(resolve(yaml({ enabled: "true", send: "false", endpoint: ENDPOINT })).send, false);
});

Deno.test("telemetry: send: true without enabled → send false + warning", () => {
  for (
    const config of [
      yaml({ send: "true", endpoint: ENDPOINT }),
      yaml({ enabled: "false", send: "true", endpoint: ENDPOINT }),
    ]
  ) {
    const t = resolve(config);
    assert.equal(t.enabled, false);
    assert.equal(t.send, false);
    assert.equal(t.warnings.length, 1, t.warnings.join("; "));
    assert.match(t.warnings[0], /telemetry\.shared_metrics\.send/);
  }
  const forcedOff = resolve(yaml({ enabled: "true", send: "true", endpoint: ENDPOINT }), {
    DO_NOT_TRACK: "1",
  });
  assert.equal(forcedOff.send, false);
  assert.equal(forcedOff.warnings.length, 1);
  assert.match(forcedOff.warnings[0], /send/);
});

Deno.test("telemetry: send without an endpoint → send false + warning naming the endpoint key", () => {
  for (const endpoint of [undefined, '""', '"   "', "null"]) {
    const t = resolve(
      yaml({ enabled: "true", send: "true", ...(endpoint === undefined ? {} : { endpoint }) }),
    );
    assert.equal(t.enabled, true, String(endpoint));
    assert.equal(t.send, false, String(endpoint));
    assert.equal(t.endpoint, undefined, String(endpoint));
    assert.equal(t.warnings.length, 1, String(endpoint));
    assert.match(t.warnings[0], /telemetry\.shared_metrics\.endpoint/);
  }
});

Deno.test("telemetry: send to an endpoint the sender refuses → send false + a warning with line, key and fix", () => {
  const key = "telemetry.shared_metrics.endpoint";
  const rule = "it must be an https:// URL, or http:// only to a loopback host (127.0.0.1, " +
    "[::1], localhost)";
  const fix =
    ". Fix: set it to an https:// URL (or http:// to 127.0.0.1, [::1] or localhost), or " +
    "run `agent metrics enable --endpoint <url>`";
  const cases: [string, string][] = [
    [
      "http://metrics.example/v2",
      `${key} uses http:// to "metrics.example", which is not a loopback host; ${rule}`,
    ],
    ["ftp://metrics.example/v2", `${key} uses the unsupported scheme "ftp:"; ${rule}`],
    [
      "https://u:SECRET@metrics.example/v2",
      `${key} must not contain a user name or password; remove the "user:password@" part ` +
      `(${rule})`,
    ],
    ['"not a url"', `${key} is not a valid URL; ${rule}`],
  ];
  for (const [endpoint, problem] of cases) {
    const t = resolve(yaml({ enabled: "true", send: "true", endpoint }));
    assert.equal(t.enabled, true, endpoint);
    assert.equal(t.send, false, endpoint);
    assert.deepEqual(t.warnings, [`${FILE}:5 (key ${key}): ${problem}; nothing is sent${fix}`]);
    // Collecting only, sending off: the endpoint is not used, and not warned about here.
    assert.deepEqual(resolve(yaml({ enabled: "true", endpoint })).warnings, [], endpoint);
  }
});

Deno.test("telemetry: the endpoint is trimmed", () => {
  const t = resolve(yaml({ enabled: "true", send: "true", endpoint: `"  ${ENDPOINT}  "` }));
  assert.equal(t.endpoint, ENDPOINT);
  assert.equal(t.send, true);
});

Deno.test("telemetry: the endpoint comes from config.yaml only, never from env or .env", () => {
  const fromEnv = "https://env.example/collect";
  // Every variable except the two consent switches answers with an endpoint-like value.
  const everything = (name: string) =>
    name === "DO_NOT_TRACK" || name === "AGENT_SHARED_METRICS" ? undefined : fromEnv;
  const dotenv = {
    AGENT_SHARED_METRICS_ENDPOINT: fromEnv,
    TELEMETRY_SHARED_METRICS_ENDPOINT: fromEnv,
    SHARED_METRICS_ENDPOINT: fromEnv,
    "telemetry.shared_metrics.endpoint": fromEnv,
  };
  const t = resolveTelemetry(
    ConfigSource.parse(FILE, yaml({ enabled: "true", send: "true" })),
    new SecretScope(dotenv, everything),
  );
  assert.equal(t.endpoint, undefined);
  assert.equal(t.send, false);
  assert.ok(!JSON.stringify(t).includes("env.example"));

  const configured = resolveTelemetry(
    ConfigSource.parse(FILE, yaml({ enabled: "true", send: "true", endpoint: ENDPOINT })),
    new SecretScope(dotenv, everything),
  );
  assert.equal(configured.endpoint, ENDPOINT);
  assert.equal(configured.send, true);
});

Deno.test("telemetry: invalid consent values in config.yaml → ConfigError with key and line", () => {
  const cases: Array<[string, string, number]> = [
    [yaml({ enabled: "maybe" }), "telemetry.shared_metrics.enabled", 3],
    [yaml({ enabled: "true", send: "sometimes" }), "telemetry.shared_metrics.send", 4],
    [yaml({ enabled: "true", endpoint: "42" }), "telemetry.shared_metrics.endpoint", 4],
  ];
  for (const [text, key, line] of cases) {
    try {
      resolve(text);
      assert.fail(`expected a ConfigError for ${key}`);
    } catch (error) {
      assert.ok(error instanceof ConfigError, String(error));
      assert.equal(error.location.key, key);
      assert.equal(error.location.line, line);
      assert.equal(error.location.file, FILE);
    }
  }
});

Deno.test("loadConfig: telemetry precedence end to end (files on disk, injected env)", async () => {
  await withTempDir((home) => {
    const config = join(home, "config.yaml");
    const dotenv = join(home, ".env");

    assert.equal(
      loadConfig({ home, env: envOf({ AGENT_SHARED_METRICS: "true" }) }).telemetry.enabled,
      true,
    );

    Deno.writeTextFileSync(config, yaml({ enabled: "false" }));
    const keyWins = loadConfig({ home, env: envOf({ AGENT_SHARED_METRICS: "true" }) }).telemetry;
    assert.equal(keyWins.enabled, false);
    assert.equal(keyWins.decidedBy, `telemetry.shared_metrics.enabled: false in ${config}`);

    Deno.writeTextFileSync(config, yaml({ enabled: "true", send: "true", endpoint: ENDPOINT }));
    const on = loadConfig({ home, env: envOf() }).telemetry;
    assert.deepEqual([on.enabled, on.send, on.endpoint], [true, true, ENDPOINT]);

    Deno.writeTextFileSync(dotenv, "# opt out everywhere\nDO_NOT_TRACK=1\n");
    const off = loadConfig({ home, env: envOf() }).telemetry;
    assert.deepEqual([off.enabled, off.send], [false, false]);
    assert.match(off.decidedBy, /DO_NOT_TRACK/);

    Deno.writeTextFileSync(dotenv, "DO_NOT_TRACK=0\n");
    assert.equal(loadConfig({ home, env: envOf() }).telemetry.enabled, true);

    Deno.removeSync(dotenv);
    assert.equal(
      loadConfig({ home, env: envOf({ DO_NOT_TRACK: "true" }) }).telemetry.enabled,
      false,
    );

    // Consent checks create nothing (no install id, no store) before or after consent.
    assert.deepEqual(namesIn(home), ["config.yaml"]);
  });
});
