/**
 * `agent metrics enable` and `disable` repair what stands in the way of the key they set
 * (`telemetry.shared_metrics.enabled` holding "maybe" or a list, a section on its way holding a
 * scalar), say what they replaced, and keep every comment elsewhere; a config.yaml that is not
 * YAML is still refused, naming the file, the line, the key and the fix, and left as it was.
 */
import assert from "node:assert/strict";
import { cli, cliJson, status, tempHome } from "./_helpers.ts";

Deno.test("enable replaces enabled: maybe, says so quoting it, and keeps every comment", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(
    h.config,
    "# my settings\ntelemetry:\n  # consent\n  shared_metrics:\n    enabled: maybe # not sure\n" +
      "    send: false\nmodel:\n  default: gpt-4o # keep\n",
  );
  const result = await cli(h.home, ["metrics", "enable"]);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(
    result.stdout,
    `Replaced the invalid value of telemetry.shared_metrics.enabled (${h.config}:5): it was ` +
      '"maybe", not true or false.\n' +
      `Usage metrics enabled in ${h.config}.\nSending: off (local only).\n`,
  );
  assert.equal(result.stderr, "");
  assert.equal(
    Deno.readTextFileSync(h.config),
    "# my settings\ntelemetry:\n  # consent\n  shared_metrics:\n    enabled: true # not sure\n" +
      "    send: false\nmodel:\n  default: gpt-4o # keep\n",
  );
  assert.equal((await status(h.home)).enabled, true);

  // Once valid, nothing is replaced and nothing is said about it.
  const again = await cliJson(h.home, ["metrics", "enable", "--json"]);
  assert.deepEqual(again.replaced, []);
});

Deno.test("disable --json replaces a list in enabled and a bad send, listing both", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(
    h.config,
    "telemetry:\n  shared_metrics:\n    enabled: [1, 2]\n    send: sometimes\n" +
      "    endpoint: https://metrics.example.com/v2 # mine\n",
  );
  const doc = await cliJson(h.home, ["metrics", "disable", "--json"]);
  assert.deepEqual(doc.replaced, [
    { key: "telemetry.shared_metrics.enabled", line: 3, was: [1, 2], expected: "true or false" },
    { key: "telemetry.shared_metrics.send", line: 4, was: "sometimes", expected: "true or false" },
  ]);
  assert.equal(doc.enabled, false);
  assert.equal(
    Deno.readTextFileSync(h.config),
    "telemetry:\n  shared_metrics:\n    enabled: false\n    send: false\n" +
      "    endpoint: https://metrics.example.com/v2 # mine\n",
  );
});

for (
  const [label, before, key, line, was, after] of [
    [
      "shared_metrics: yes",
      "# top\ntelemetry:\n  shared_metrics: yes\n  other: 1 # kept\n",
      "telemetry.shared_metrics",
      3,
      "yes",
      "# top\ntelemetry:\n  shared_metrics:\n    enabled: true\n  other: 1 # kept\n",
    ],
    [
      "telemetry: false",
      "model:\n  default: x # kept\ntelemetry: false\n",
      "telemetry",
      3,
      false,
      "model:\n  default: x # kept\ntelemetry:\n  shared_metrics:\n    enabled: true\n",
    ],
    [
      "a block list in enabled",
      "telemetry:\n  shared_metrics:\n    enabled:\n      - a\n# end\n",
      "telemetry.shared_metrics.enabled",
      3,
      ["a"],
      "telemetry:\n  shared_metrics:\n    enabled: true\n# end\n",
    ],
  ] as const
) {
  Deno.test(`enable repairs ${label}; the next command has nothing to repair`, async () => {
    await using h = await tempHome();
    Deno.writeTextFileSync(h.config, before);
    const doc = await cliJson(h.home, ["metrics", "enable", "--json"]);
    const expected = key.endsWith(".enabled") ? "true or false" : "a mapping of settings";
    assert.deepEqual(doc.replaced, [{ key, line, was, expected }]);
    assert.equal(Deno.readTextFileSync(h.config), after);
    const text = await cli(h.home, ["metrics", "disable"]);
    assert.equal(text.code, 0, text.stderr);
    assert.doesNotMatch(text.stdout, /Replaced/, "repaired once");
  });
}

Deno.test("text output quotes a replaced list and section as written", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, "telemetry:\n  shared_metrics: [on]\n");
  const result = await cli(h.home, ["metrics", "disable"]);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(
    result.stdout.split("\n")[0],
    `Replaced the invalid value of telemetry.shared_metrics (${h.config}:2): it was the list ` +
      '["on"], not a mapping of settings.',
  );
});

Deno.test("enable --endpoint replaces a non-string endpoint without showing it", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(
    h.config,
    "telemetry:\n  shared_metrics:\n    enabled: true\n    endpoint: [https://u:SECRET@x.example]\n",
  );
  const endpoint = "https://metrics.example.com/v2";
  const result = await cli(h.home, ["metrics", "enable", "--send", "--endpoint", endpoint]);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(
    result.stdout.split("\n")[0],
    `Replaced the invalid value of telemetry.shared_metrics.endpoint (${h.config}:4): it was ` +
      "not a URL (not shown: it may hold credentials).",
  );
  assert.doesNotMatch(result.stdout + result.stderr, /SECRET/);
  assert.equal(
    Deno.readTextFileSync(h.config),
    `telemetry:\n  shared_metrics:\n    enabled: true\n    endpoint: ${endpoint}\n    send: true\n`,
  );
});

Deno.test("enable without --send keeps send as it is, so a bad send is refused, nothing written", async () => {
  await using h = await tempHome();
  const config = "telemetry:\n  shared_metrics:\n    enabled: maybe\n    send: perhaps\n";
  Deno.writeTextFileSync(h.config, config);
  const result = await cli(h.home, ["metrics", "enable"]);
  assert.equal(result.code, 2, result.stdout);
  assert.equal(
    result.stderr,
    `agent: ${h.config}:4 (key telemetry.shared_metrics.send): expected true or false, got ` +
      'string "perhaps". Fix: set it to true or false\n',
  );
  assert.equal(Deno.readTextFileSync(h.config), config);
});

Deno.test("disable with an endpoint that is not a string opts out and warns about its line", async () => {
  await using h = await tempHome();
  const endpoint = "    endpoint: [https://u:SECRET@x.example] # mine\n";
  Deno.writeTextFileSync(h.config, `telemetry:\n  shared_metrics:\n    enabled: true\n${endpoint}`);
  const warning = `warning: ${h.config}:4 (key telemetry.shared_metrics.endpoint): expected a ` +
    "string, got a list; not used while usage metrics are off. Fix: quote the value before " +
    "enabling them\n";
  const result = await cli(h.home, ["metrics", "disable"]);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout, `Usage metrics disabled in ${h.config}.\n`);
  assert.equal(result.stderr, warning);
  assert.equal(
    Deno.readTextFileSync(h.config),
    `telemetry:\n  shared_metrics:\n    enabled: false\n${endpoint}`,
  );
  const after = await cli(h.home, ["metrics", "status", "--json"]);
  assert.equal(after.code, 0, after.stderr);
  assert.equal(JSON.parse(after.stdout).enabled, false);
  // Opting in again needs the line fixed: enable without --endpoint refuses, naming it.
  const enable = await cli(h.home, ["metrics", "enable"]);
  assert.equal(enable.code, 2, enable.stdout);
  assert.match(enable.stderr, /:4 \(key telemetry\.shared_metrics\.endpoint\): expected a string/);
  assert.doesNotMatch(result.stderr + after.stderr + enable.stderr, /SECRET/);
});

Deno.test("a bad endpoint URL is a warning while metrics are off and an error while on", async () => {
  await using h = await tempHome();
  const write = (enabled: boolean) =>
    Deno.writeTextFileSync(
      h.config,
      `telemetry:\n  shared_metrics:\n    enabled: ${enabled}\n` +
        "    endpoint: http://u:SECRET@metrics.example.com/v2\n",
    );
  write(false);
  const off = await cli(h.home, ["metrics", "status", "--json"]);
  assert.equal(off.code, 0, off.stderr);
  const [warning] = JSON.parse(off.stdout).warnings;
  assert.match(
    warning,
    /:4 \(key telemetry\.shared_metrics\.endpoint\): .*user name or password.*; not used while usage metrics are off\. Fix: .* before enabling them$/,
  );
  write(true);
  const on = await cli(h.home, ["metrics", "status"]);
  assert.equal(on.code, 2, on.stdout);
  assert.match(
    on.stderr,
    /:4 \(key telemetry\.shared_metrics\.endpoint\): .*user name or password/,
  );
  write(false);
  const disable = await cli(h.home, ["metrics", "disable", "--json"]);
  assert.equal(disable.code, 0, disable.stderr);
  assert.equal(JSON.parse(disable.stdout).endpoint, null);
  assert.doesNotMatch(off.stdout + off.stderr + on.stderr + disable.stdout, /SECRET/);
});

Deno.test("a config.yaml that is not YAML is refused by enable and disable: file, line, key, fix", async () => {
  await using h = await tempHome();
  const broken = "# mine\ntelemetry:\n  shared_metrics:\n    enabled: [true\n";
  Deno.writeTextFileSync(h.config, broken);
  for (const command of ["enable", "disable"]) {
    const result = await cli(h.home, ["metrics", command]);
    assert.equal(result.code, 2, result.stdout);
    assert.equal(result.stdout, "");
    assert.match(
      result.stderr,
      new RegExp(
        `^agent: ${h.config}:5:1: invalid YAML: .+; nothing was changed\\. Fix: correct the YAML ` +
          `syntax at that line \\(check indentation, quotes and colons\\), then run ` +
          `\`agent metrics ${command}\` again to set telemetry\\.shared_metrics\\.enabled\\n$`,
      ),
    );
    const doc = await cliJson(h.home, ["metrics", command, "--json"], 2);
    assert.equal(doc.error.file, h.config);
    assert.equal(doc.error.line, 5);
    assert.equal(doc.error.exit_code, 2);
  }
  assert.equal(Deno.readTextFileSync(h.config), broken, "never rewritten");
});

Deno.test("enable --no-send goes back to collecting only: send false, endpoint and comments kept, and enable and status say how to send again", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, "# mine\n");
  assert.equal(
    (await cli(h.home, ["metrics", "enable", "--send", "--endpoint", "https://m.example/v2"])).code,
    0,
  );
  const result = await cli(h.home, ["metrics", "enable", "--no-send"]);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(
    result.stdout,
    `Usage metrics enabled in ${h.config}.\n` +
      "Sending: off (local only; `agent metrics enable --send` sends to https://m.example/v2).\n",
  );
  assert.equal(
    Deno.readTextFileSync(h.config),
    "# mine\n\ntelemetry:\n  shared_metrics:\n    enabled: true\n    send: false\n" +
      "    endpoint: https://m.example/v2\n",
  );
  const text = await cli(h.home, ["metrics", "status"]);
  assert.match(
    text.stdout,
    /^Sending: {7}off \(`agent metrics enable --send` sends to https:\/\/m\.example\/v2\)$/m,
  );
  const after = await status(h.home);
  assert.deepEqual([after.enabled, after.send, after.endpoint], [
    true,
    false,
    "https://m.example/v2",
  ]);
  assert.deepEqual(after.warnings, []);
});
