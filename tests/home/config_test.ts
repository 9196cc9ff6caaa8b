import assert from "node:assert/strict";
import { join } from "node:path";
import { ConfigSource, isPlainObject, loadConfig, parseBoolish } from "../../src/home/config.ts";
import { ConfigError } from "../../src/home/errors.ts";
import {
  collectWarnings,
  configError,
  envOf,
  escapeRegExp,
  namesIn,
  withTempDir,
} from "./_helpers.ts";

const FILE = "/h/config.yaml";
const ENABLED = "telemetry.shared_metrics.enabled";

/** `enabled: <value>` under telemetry.shared_metrics, at line 3. */
function enabledYaml(value: string): string {
  return `telemetry:\n  shared_metrics:\n    enabled: ${value}\n`;
}

// --- ConfigError ---------------------------------------------------------------------------

Deno.test("ConfigError: message names file, line, column, key, problem and fix", () => {
  const error = new ConfigError(
    { file: FILE, key: ENABLED, line: 3, column: 14 },
    'expected true or false, got string "maybe"',
    "set it to true or false",
  );
  assert.ok(error instanceof Error);
  assert.equal(error.name, "ConfigError");
  assert.equal(
    error.message,
    `/h/config.yaml:3:14 (key ${ENABLED}): expected true or false, got string "maybe". Fix: set it to true or false`,
  );
  assert.deepEqual(error.location, { file: FILE, key: ENABLED, line: 3, column: 14 });
  assert.equal(error.problem, 'expected true or false, got string "maybe"');
  assert.equal(error.fix, "set it to true or false");
});

Deno.test("ConfigError: optional parts are left out of the message", () => {
  assert.equal(new ConfigError({ file: FILE }, "broken").message, "/h/config.yaml: broken");
  assert.equal(
    new ConfigError({ file: FILE, line: 7 }, "broken").message,
    "/h/config.yaml:7: broken",
  );
  // A column without a line means nothing to a reader.
  assert.equal(
    new ConfigError({ file: FILE, column: 4 }, "broken").message,
    "/h/config.yaml: broken",
  );
  assert.equal(
    new ConfigError({ file: FILE, key: "a.b" }, "broken", "fix it").message,
    "/h/config.yaml (key a.b): broken. Fix: fix it",
  );
});

// --- parsing -------------------------------------------------------------------------------

Deno.test("ConfigSource.parse: empty, blank and comment-only text → empty mapping", () => {
  for (const text of ["", "\n\n", "# only a comment\n", "---\n", "   \n# x\n"]) {
    const source = ConfigSource.parse(FILE, text);
    assert.deepEqual(source.data, {}, JSON.stringify(text));
    assert.equal(source.file, FILE);
    assert.equal(source.get(ENABLED), undefined);
  }
});

Deno.test("ConfigSource.parse: nested data and dotted get()", () => {
  const source = ConfigSource.parse(
    FILE,
    "model:\n  default: gpt-4o\n  max: 3\nmcp_servers:\n  fs:\n    args: [a, b]\n    env: {}\n",
  );
  assert.equal(source.get("model.default"), "gpt-4o");
  assert.equal(source.get("model.max"), 3);
  assert.deepEqual(source.get("mcp_servers.fs.args"), ["a", "b"]);
  assert.deepEqual(source.get("mcp_servers.fs.env"), {});
  assert.deepEqual(source.get("model"), { default: "gpt-4o", max: 3 });
  assert.equal(source.get("model.missing"), undefined);
  assert.equal(source.get("nope.deeper"), undefined);
  assert.equal(ConfigSource.parse(FILE, "telemetry:\n").get("telemetry.shared_metrics"), undefined);
});

Deno.test("ConfigSource.get: a scalar or list where a section is expected is an error at it", () => {
  const source = ConfigSource.parse(
    FILE,
    "model:\n  default: gpt-4o\nmcp_servers:\n  fs:\n    args: [a, b]\ntelemetry: false\n",
  );
  const cases = [
    ["model.default.deeper", "model.default", 2, 'got string "gpt-4o"', "`deeper: …`"],
    ["mcp_servers.fs.args.0", "mcp_servers.fs.args", 5, "got a list", "`0: …`"],
    [
      "telemetry.shared_metrics.enabled",
      "telemetry",
      6,
      "got boolean false",
      "`shared_metrics: …`",
    ],
  ] as const;
  for (const [path, key, line, got, example] of cases) {
    let error: unknown;
    try {
      source.get(path);
    } catch (caught) {
      error = caught;
    }
    assert.ok(error instanceof ConfigError, `${path}: ${error}`);
    assert.deepEqual([error.location.key, error.location.line], [key, line]);
    assert.ok(error.message.includes(`expected a mapping of settings, ${got}`), error.message);
    assert.ok(error.message.includes(`write ${key} as a mapping`), error.message);
    assert.ok(error.message.includes(example), error.message);
  }
});

Deno.test("ConfigSource.get: inherited object keys are not configuration", () => {
  const source = ConfigSource.parse(FILE, "model:\n  default: x\n");
  for (
    const path of [
      "constructor",
      "toString",
      "model.constructor",
      "__proto__",
      "model.hasOwnProperty",
    ]
  ) {
    assert.equal(source.get(path), undefined, path);
  }
});

Deno.test("ConfigSource.read: a missing file is an empty configuration", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "config.yaml");
    const source = ConfigSource.read(file);
    assert.deepEqual(source.data, {});
    assert.equal(source.file, file);
    assert.deepEqual(namesIn(dir), []);
  });
});

Deno.test("ConfigSource.read: reads the file", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "config.yaml");
    Deno.writeTextFileSync(file, enabledYaml("true"));
    assert.equal(ConfigSource.read(file).get(ENABLED), true);
  });
});

const BROKEN: Array<{ name: string; text: string; line: number; problem: RegExp }> = [
  {
    name: "bad indentation (a sibling key dedented)",
    text: "model:\n  default: a\n  provider: b\n provider2: c\n",
    line: 4,
    problem: /same column|indent/i,
  },
  {
    name: "tab indentation",
    text: "telemetry:\n  a: 1\nmodel:\n\tdefault: x\n",
    line: 4,
    problem: /tab/i,
  },
  {
    name: "duplicate top-level key",
    text: "model:\n  default: a\ntelemetry: {}\nmodel:\n  default: b\n",
    line: 4,
    problem: /is written twice/,
  },
  {
    name: "duplicate nested key",
    text: "telemetry:\n  shared_metrics:\n    enabled: true\n    enabled: false\n",
    line: 4,
    problem: /is written twice/,
  },
];

Deno.test("ConfigSource.parse: broken YAML → ConfigError naming the file and the problem", () => {
  const cases = [...BROKEN, {
    name: "unclosed quote",
    text: 'a: 1\nb: "open\nc: 2\n',
    line: 2,
    problem: /quote/i,
  }];
  for (const { name, text, problem } of cases) {
    const error = configError(() => ConfigSource.parse(FILE, text));
    assert.equal(error.location.file, FILE, name);
    assert.ok(error.message.startsWith(FILE), `${name}: ${error.message}`);
    assert.match(error.problem, /^invalid YAML: /, name);
    assert.match(error.problem, problem, name);
    assert.ok(error.fix, name);
  }
});

Deno.test({
  name: "ConfigSource.parse: broken YAML → ConfigError with the 1-based line",
  fn() {
    for (const { name, text, line } of BROKEN) {
      const error = configError(() => ConfigSource.parse(FILE, text));
      assert.equal(error.location.line, line, `${name}: ${error.message}`);
      assert.match(
        error.message,
        new RegExp(`^${escapeRegExp(FILE)}:${line}(:\\d+)?: invalid YAML`),
        name,
      );
    }
  },
});

Deno.test("ConfigSource.parse: a key written twice is named by its path, with both lines", () => {
  const cases: Array<[string, string, number]> = [
    ["model:\n  default: a\ntelemetry: {}\nmodel:\n  default: b\n", "model", 1],
    ["mcp_servers:\n  fs:\n    command: x\n  'fs':\n    command: y\n", "mcp_servers.fs", 2],
    [
      "routes:\n  - name: a\n  - name: b\n    deliver: log\n    deliver: slack\n",
      "routes[1].deliver",
      4,
    ],
    ["a: {b: 1, c: 2, b: 3}\n", "a.b", 1],
  ];
  for (const [text, path, firstLine] of cases) {
    const error = configError(() => ConfigSource.parse(FILE, text));
    const line = error.location.line!;
    assert.equal(
      error.problem,
      `invalid YAML: the key \`${path}\` is written twice (lines ${firstLine} and ${line}); ` +
        "YAML allows a key once per mapping",
      text,
    );
    assert.ok(line > firstLine || text.startsWith("a: {"), text);
    assert.equal(
      error.fix,
      "keep one of the two (merge their settings into it) and delete the other",
    );
  }
});

Deno.test({
  name: "ConfigSource.parse: unclosed quote → ConfigError at the line of the opening quote",
  fn() {
    const error = configError(() => ConfigSource.parse(FILE, 'a: 1\nb: "open\nc: 2\n'));
    assert.equal(error.location.line, 2, error.message);
    assert.match(error.message, new RegExp(`^${escapeRegExp(FILE)}:2(:\\d+)?: `));
  },
});

Deno.test("ConfigSource.parse: several YAML documents → ConfigError at the `---` line, in user words", () => {
  const cases: Array<[string, number]> = [
    ["a: 1\n---\nb: 2\n", 2],
    ["---\na: 1\n---\nb: 2\n", 3],
    ["a: 1\n---\n", 2],
  ];
  for (const [text, line] of cases) {
    const error = configError(() => ConfigSource.parse(FILE, text));
    assert.equal(error.location.line, line, error.message);
    assert.ok(error.message.startsWith(`${FILE}:${line}:1: invalid YAML: `), error.message);
    assert.match(error.problem, /second YAML document; config\.yaml must hold one/);
    assert.match(error.fix ?? "", /remove the `---` line/);
    assert.doesNotMatch(error.message, /parseAllDocuments/);
  }
  // A single document may start with `---`.
  assert.equal(ConfigSource.parse(FILE, "---\na: 1\n").get("a"), 1);
});

Deno.test("ConfigSource.parse: a root that is a list or a scalar → ConfigError at line 1", () => {
  const cases: Array<[string, RegExp]> = [
    ["- a\n- b\n", /a list/],
    ["hello\n", /string "hello"/],
    ["42\n", /number 42/],
    ["true\n", /boolean true/],
    ["[1, 2]\n", /a list/],
  ];
  for (const [text, got] of cases) {
    const error = configError(() => ConfigSource.parse(FILE, text));
    assert.equal(error.location.file, FILE);
    assert.equal(error.location.line, 1);
    assert.match(error.problem, /top level must be a mapping/);
    assert.match(error.problem, got);
    assert.ok(error.message.startsWith(`${FILE}:1`), error.message);
  }
});

// Found by tests/home/config_fuzz_test.ts: the YAML library turned such a key into text and
// printed "(node:…) Warning: Keys with collection values will be stringified …" to stderr.
Deno.test("ConfigSource.parse: a list or mapping used as a key → ConfigError at its line, no warning", () => {
  const cases: Array<[string, number, string]> = [
    ["mcp_servers:\n  fs:\n    command: npx\n  ? [complex, key]\n  : value\n", 4, "a list"],
    ["platforms:\n  webhook:\n    {extra: }: 3\n", 3, "a mapping"],
    ["list: &l [x]\nmodel:\n  *l : gpt\n", 3, "a list"],
  ];
  using printed = collectWarnings();
  for (const [text, line, kind] of cases) {
    const error = configError(() => ConfigSource.parse(FILE, text));
    assert.equal(
      error.message,
      `${FILE}:${line}: ${kind} is used as a key, where a name is expected. Fix: write a ` +
        "plain name as the key (in quotes if it holds `[`, `{`, `?` or `:`)",
    );
  }
  assert.deepEqual(printed.warnings, []);
});

// --- typed readers -------------------------------------------------------------------------

Deno.test("ConfigSource.boolean: accepts true/false/yes/no/on/off/1/0 in any case", () => {
  const truthy = [
    "true",
    "True",
    "TRUE",
    "yes",
    "Yes",
    "YES",
    "on",
    "On",
    "ON",
    "1",
    '"1"',
    '"true"',
    "'Yes'",
    "' on '",
    '"tRuE"',
  ];
  const falsy = [
    "false",
    "False",
    "FALSE",
    "no",
    "No",
    "NO",
    "off",
    "Off",
    "OFF",
    "0",
    '"0"',
    "'false'",
    '"nO"',
  ];
  for (const value of truthy) {
    assert.equal(ConfigSource.parse(FILE, enabledYaml(value)).boolean(ENABLED), true, value);
  }
  for (const value of falsy) {
    assert.equal(ConfigSource.parse(FILE, enabledYaml(value)).boolean(ENABLED), false, value);
  }
});

Deno.test("ConfigSource.boolean: missing or null → undefined", () => {
  for (const value of ["", "null", "~", "Null"]) {
    assert.equal(ConfigSource.parse(FILE, enabledYaml(value)).boolean(ENABLED), undefined, value);
  }
  assert.equal(ConfigSource.parse(FILE, "").boolean(ENABLED), undefined);
  assert.equal(ConfigSource.parse(FILE, "telemetry: {}\n").boolean(ENABLED), undefined);
});

Deno.test('ConfigSource.boolean: "maybe" → ConfigError naming the key path and its line', () => {
  const text =
    "# usage metrics\ntelemetry:\n  shared_metrics:\n\n    send: false\n    enabled: maybe\n";
  const source = ConfigSource.parse(FILE, text);
  const error = configError(() => source.boolean(ENABLED));
  assert.equal(error.location.file, FILE);
  assert.equal(error.location.key, ENABLED);
  assert.equal(error.location.line, 6);
  assert.ok(error.message.startsWith(`${FILE}:6 (key ${ENABLED}): `), error.message);
  assert.match(error.problem, /maybe/);
  assert.match(error.fix ?? "", /true or false/);
});

Deno.test("ConfigSource.boolean: other values are rejected too", () => {
  for (const value of ["maybe", "2", "-1", "0.5", '""', "y", "n", "enable", "{a: 1}"]) {
    const source = ConfigSource.parse(FILE, enabledYaml(value));
    const error = configError(() => source.boolean(ENABLED));
    assert.equal(error.location.key, ENABLED, value);
    assert.equal(error.location.line, 3, value);
  }
  const list = ConfigSource.parse(FILE, enabledYaml("[true]"));
  assert.equal(configError(() => list.boolean(ENABLED)).location.key, ENABLED);
});

Deno.test("ConfigSource.string: strings, missing/null → undefined, other types → ConfigError", () => {
  const source = ConfigSource.parse(
    FILE,
    [
      "telemetry:",
      "  shared_metrics:",
      "    endpoint: https://m.example/v2",
      "    quoted: '42'",
      "    empty: ''",
      "    nothing:",
      "    number: 42",
      "    long: 123456789012345678901234567",
      "    api_token: 1234567890123",
      "    flag: true",
      "    map: {url: x}",
      "",
    ].join("\n"),
  );
  assert.equal(source.string("telemetry.shared_metrics.endpoint"), "https://m.example/v2");
  assert.equal(source.string("telemetry.shared_metrics.quoted"), "42");
  assert.equal(source.string("telemetry.shared_metrics.empty"), "");
  assert.equal(source.string("telemetry.shared_metrics.nothing"), undefined);
  assert.equal(source.string("telemetry.shared_metrics.absent"), undefined);

  const cases: Array<[string, number, RegExp]> = [
    ["number", 7, /expected a string, got number 42/],
    // As written, not as read back: 1.2345678901234568e+26 is not what the file says.
    ["long", 8, /expected a string, got number 123456789012345678901234567$/],
    ["api_token", 9, /expected a string, got a number \(not shown: the key holds a secret\)$/],
    ["flag", 10, /expected a string, got boolean true/],
    ["map", 11, /expected a string, got a mapping/],
  ];
  for (const [key, line, problem] of cases) {
    const keyPath = `telemetry.shared_metrics.${key}`;
    const error = configError(() => source.string(keyPath));
    assert.equal(error.location.key, keyPath);
    assert.equal(error.location.line, line, key);
    assert.match(error.problem, problem);
    assert.ok(error.message.startsWith(`${FILE}:${line} (key ${keyPath})`), error.message);
  }
  const list = ConfigSource.parse(FILE, "endpoint: [a, b]\n");
  assert.match(configError(() => list.string("endpoint")).problem, /got a list/);
});

Deno.test("ConfigSource.lineOf: 1-based lines of scalar values", () => {
  const source = ConfigSource.parse(
    FILE,
    [
      "# header",
      "",
      "model:",
      "  default: gpt-4o # comment",
      "  provider: openai",
      "telemetry:",
      "  # nested comment",
      "  shared_metrics:",
      "    enabled: true",
      "    inline: {a: 1}",
      "    empty:",
      "top: 1",
      "",
    ].join("\n"),
  );
  assert.equal(source.lineOf("model.default"), 4);
  assert.equal(source.lineOf("model.provider"), 5);
  assert.equal(source.lineOf(ENABLED), 9);
  assert.equal(source.lineOf("telemetry.shared_metrics.inline"), 10);
  assert.equal(source.lineOf("telemetry.shared_metrics.inline.a"), 10);
  assert.equal(source.lineOf("top"), 12);
  assert.equal(source.lineOf("missing"), undefined);
  assert.equal(source.lineOf("model.missing"), undefined);
  assert.equal(source.lineOf("model.default.deeper"), undefined);
  assert.equal(ConfigSource.parse(FILE, "").lineOf("a"), undefined);
});

Deno.test({
  name: "ConfigSource.lineOf: a list value has a line too",
  fn() {
    const source = ConfigSource.parse(FILE, "a: 1\nendpoint: [a, b]\nargs:\n  - x\n");
    assert.equal(source.lineOf("endpoint"), 2);
    assert.equal(configError(() => source.string("endpoint")).location.line, 2);
    assert.notEqual(source.lineOf("args"), undefined);
  },
});

Deno.test({
  name: "ConfigSource.lineOf: a block mapping points at its key's line",
  fn() {
    const source = ConfigSource.parse(FILE, "mcp_servers:\n  fs:\n    command: npx\n");
    assert.equal(source.lineOf("mcp_servers"), 1);
    assert.equal(source.lineOf("mcp_servers.fs"), 2);
    assert.equal(configError(() => source.string("mcp_servers.fs")).location.line, 2);
  },
});

Deno.test("ConfigSource.error: a ConfigError at the key's line", () => {
  const source = ConfigSource.parse(FILE, "a: 1\nb: two\n");
  const error = source.error("b", "not allowed", "remove it");
  assert.ok(error instanceof ConfigError);
  assert.deepEqual(error.location, { file: FILE, key: "b", line: 2 });
  assert.equal(error.message, `${FILE}:2 (key b): not allowed. Fix: remove it`);
  assert.equal(source.error("zzz", "unknown").location.line, undefined);
});

Deno.test("parseBoolish: booleans, 1/0 and boolean words; everything else undefined", () => {
  assert.equal(parseBoolish(true), true);
  assert.equal(parseBoolish(false), false);
  assert.equal(parseBoolish(1), true);
  assert.equal(parseBoolish(0), false);
  for (const text of ["true", "TRUE", " yes ", "On", "1"]) {
    assert.equal(parseBoolish(text), true, text);
  }
  for (const text of ["false", "False", "NO", " off", "0"]) {
    assert.equal(parseBoolish(text), false, text);
  }
  for (const value of ["maybe", "", " ", "2", "t", "f", 2, -1, 0.5, null, undefined, [], {}, NaN]) {
    assert.equal(parseBoolish(value), undefined, String(value));
  }
});

Deno.test("isPlainObject", () => {
  assert.equal(isPlainObject({}), true);
  assert.equal(isPlainObject({ a: 1 }), true);
  for (const value of [null, undefined, [], "x", 1, true]) {
    assert.equal(isPlainObject(value), false);
  }
});

// --- loadConfig ----------------------------------------------------------------------------

Deno.test("loadConfig: an empty home gives defaults and creates nothing on disk", async () => {
  await withTempDir((home) => {
    const config = loadConfig({ home, env: envOf() });
    assert.equal(config.paths.home, home);
    assert.equal(config.paths.config, join(home, "config.yaml"));
    assert.deepEqual(config.source.data, {});
    assert.equal(config.source.file, join(home, "config.yaml"));
    assert.deepEqual(config.secrets.dotenvNames(), []);
    assert.equal(config.telemetry.enabled, false);
    assert.equal(config.telemetry.send, false);
    assert.equal(config.telemetry.endpoint, undefined);
    assert.deepEqual(config.telemetry.warnings, []);
    assert.match(config.telemetry.decidedBy, /default/);
    assert.deepEqual(namesIn(home), [], "loadConfig must not create files or folders");
  });
});

Deno.test("loadConfig: a home that does not exist is not created", async () => {
  await withTempDir((dir) => {
    const home = join(dir, "not-yet");
    const config = loadConfig({ home, env: envOf() });
    assert.equal(config.telemetry.enabled, false);
    assert.deepEqual(namesIn(dir), []);
  });
});

Deno.test("loadConfig: home from the injected env's AGENT_HOME", async () => {
  await withTempDir((home) => {
    Deno.writeTextFileSync(join(home, "config.yaml"), "model:\n  default: x\n");
    Deno.writeTextFileSync(join(home, ".env"), "OPENAI_API_KEY=sk-test\n");
    const config = loadConfig({ env: envOf({ AGENT_HOME: home }) });
    assert.equal(config.paths.home, home);
    assert.equal(config.source.get("model.default"), "x");
    assert.equal(config.secrets.get("OPENAI_API_KEY"), "sk-test");
    assert.equal(config.secrets.source("OPENAI_API_KEY"), ".env");
  });
});

Deno.test("loadConfig: reads config.yaml and .env; .env wins over the env reader", async () => {
  await withTempDir((home) => {
    Deno.writeTextFileSync(join(home, "config.yaml"), enabledYaml("true"));
    Deno.writeTextFileSync(join(home, ".env"), "TOKEN=dotenv\n");
    const config = loadConfig({ home, env: envOf({ TOKEN: "env", ONLY_ENV: "e" }) });
    assert.equal(config.telemetry.enabled, true);
    assert.equal(config.secrets.get("TOKEN"), "dotenv");
    assert.equal(config.secrets.get("ONLY_ENV"), "e");
    assert.deepEqual(namesIn(home), [".env", "config.yaml"]);
  });
});

Deno.test("loadConfig: a broken config.yaml → ConfigError naming the real file", async () => {
  await withTempDir((home) => {
    const file = join(home, "config.yaml");
    const text = "telemetry:\n  shared_metrics:\n\tenabled: true\n";
    Deno.writeTextFileSync(file, text);
    const error = configError(() => loadConfig({ home, env: envOf() }));
    assert.equal(error.location.file, file);
    assert.ok(error.message.startsWith(file), error.message);
    assert.match(error.problem, /tab/i);
    assert.equal(Deno.readTextFileSync(file), text, "the file is left as it was");
  });
});

Deno.test("loadConfig: an invalid boolean → ConfigError with key path and line", async () => {
  await withTempDir((home) => {
    const file = join(home, "config.yaml");
    Deno.writeTextFileSync(file, "# mine\n" + enabledYaml("maybe"));
    const error = configError(() => loadConfig({ home, env: envOf() }));
    assert.equal(error.location.file, file);
    assert.equal(error.location.key, ENABLED);
    assert.equal(error.location.line, 4);
    assert.ok(error.message.startsWith(`${file}:4 (key ${ENABLED})`), error.message);
  });
});
