/**
 * `config.yaml` with YAML merge keys (`<<: *defaults`): the merged keys are read and checked as if
 * written in place, and located at the line where they are written. A `config.yaml` (or `.env`)
 * that is a folder is one clear error naming the path and the fix.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ConfigSource, loadConfig } from "../../src/home/config.ts";
import { unknownConfigKeys } from "../../src/home/config_keys.ts";
import { ConfigError } from "../../src/home/errors.ts";
import { readTextIfExists } from "../../src/home/files.ts";
import { envOf, withTempDir } from "./_helpers.ts";

const MERGED = [
  "defaults: &defaults", // 1
  "  command: npx", // 2
  "  args: [-y, server]", // 3
  "  timeout: 30", // 4
  "mcp_servers:", // 5
  "  fs:", // 6
  "    <<: *defaults", // 7
  "    timeout: 60", // 8
  "model:", // 9
  "  <<: [*model, *other]", // 10
  "",
].join("\n");

Deno.test("ConfigSource.parse: merge keys are applied; own keys win", () => {
  const text = "model_defaults: &model {default: gpt-4o, temperature: 0.2}\n" +
    "other: &other {max_tokens: 100, default: ignored}\n" + MERGED;
  const source = ConfigSource.parse("/h/config.yaml", text);
  assert.deepEqual(source.get("mcp_servers.fs"), {
    command: "npx",
    args: ["-y", "server"],
    timeout: 60,
  });
  assert.deepEqual(source.get("model"), { default: "gpt-4o", temperature: 0.2, max_tokens: 100 });
});

Deno.test("ConfigSource.lineOf: a merged key is at the line where the anchor writes it", () => {
  const source = ConfigSource.parse("/h/config.yaml", MERGED.replace(/\nmodel:[^]*$/, "\n"));
  assert.equal(source.lineOf("mcp_servers.fs.command"), 2);
  assert.equal(source.lineOf("mcp_servers.fs.args.1"), 3);
  assert.equal(source.lineOf("mcp_servers.fs.timeout"), 8); // its own key, not the anchor's
});

Deno.test("unknownConfigKeys: no `<<` warning; a merged misspelling is reported at its line", () => {
  const text = "base: &base\n  temprature: 0.2\nmodel:\n  <<: *base\n  default: gpt-4o\n";
  const found = unknownConfigKeys(ConfigSource.parse("/h/config.yaml", text));
  assert.deepEqual(found.map(({ key, line }) => ({ key, line })), [
    { key: "model.temprature", line: 2 },
  ]);
});

Deno.test("unknownConfigKeys: a key only there to hold an anchor other keys use is not reported", () => {
  const text =
    "x-defaults: &d\n  command: npx\nunused: &u {a: 1}\nmcp_servers:\n  a:\n    <<: *d\n";
  const found = unknownConfigKeys(ConfigSource.parse("/h/config.yaml", text));
  assert.deepEqual(found.map(({ key }) => key), ["unused"]);
});

Deno.test("ConfigSource.parse: a merge key that names no mapping is a ConfigError at its line", () => {
  const cases: [string, number][] = [
    ["a: 1\nmodel:\n  <<: 5\n", 3],
    ["list: &l [1]\nmodel:\n  default: x\n  <<: *l\n", 4],
    ["model:\n  <<: [5]\n", 2],
  ];
  for (const [text, line] of cases) {
    assert.throws(() => ConfigSource.parse("/h/config.yaml", text), (error) => {
      assert.ok(error instanceof ConfigError, String(error));
      assert.equal(error.location.line, line, error.message);
      assert.match(error.message, /merge key `<<`/);
      assert.match(error.message, /Fix: /);
      return true;
    }, text);
  }
});

Deno.test("ConfigSource.parse: an alias without its anchor, or inside it, is a ConfigError at its line", () => {
  for (
    const text of [
      "model:\n  default: *nope\n",
      "model:\n  <<: *nope\n",
      "model: &nope\n  x: *nope\n",
    ]
  ) {
    assert.throws(() => ConfigSource.parse("/h/config.yaml", text), (error) => {
      assert.ok(error instanceof ConfigError, String(error));
      assert.equal(error.location.line, 2, error.message);
      assert.match(error.message, /\*nope/);
      assert.match(error.message, /Fix: /);
      return true;
    }, text);
  }
});

Deno.test("loadConfig: a config.yaml that is a folder is one line naming the path and the fix", async () => {
  await withTempDir((home) => {
    const folder = join(home, "config.yaml");
    Deno.mkdirSync(folder);
    assert.throws(() => loadConfig({ home, env: envOf() }), (error) => {
      assert.ok(error instanceof Deno.errors.IsADirectory, String(error));
      assert.ok(error.message.includes(`'${folder}' is a folder, not a file`), error.message);
      assert.match(error.message, /Fix: move or delete that folder/);
      assert.equal(error.message.split("\n").length, 1);
      return true;
    });
  });
});

Deno.test("readTextIfExists: a folder or a named pipe is refused naming the path; missing is undefined", async () => {
  await withTempDir((dir) => {
    assert.equal(readTextIfExists(join(dir, "missing")), undefined);
    assert.throws(() => readTextIfExists(dir), /is a folder, not a file\. Fix: /);
    if (Deno.build.os === "windows") return;
    const fifo = join(dir, "fifo");
    const made = new Deno.Command("mkfifo", { args: [fifo] }).outputSync();
    assert.ok(made.success);
    // Reading a named pipe would wait for a writer forever.
    assert.throws(() => readTextIfExists(fifo), (error) => {
      assert.ok(error instanceof Error);
      assert.ok(error.message.includes(`'${fifo}' is not a regular file`), error.message);
      assert.match(error.message, /Fix: /);
      return true;
    });
  });
});
