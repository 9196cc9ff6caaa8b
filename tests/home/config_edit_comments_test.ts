/**
 * `config.yaml` edits keep every comment at the level it was written at: the YAML library hands
 * a whole comment block after the last nested mapping to that mapping, which would print it
 * indented inside it (a `# model:` block at column 0 coming back under
 * `platforms.webhook.extra`).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse } from "yaml";
import { editConfigFile, removeConfigEntry } from "../../src/home/config_edit.ts";
import { cli, tempHome } from "../cli/_helpers.ts";
import { withTempDir } from "./_helpers.ts";

/** Writes `text` to a fresh `config.yaml`, sets `path` to `value` in it, and returns the file. */
async function edited(
  text: string,
  path: (string | number)[],
  value: unknown,
): Promise<string> {
  return await withTempDir((dir) => {
    const file = join(dir, "config.yaml");
    Deno.writeTextFileSync(file, text);
    editConfigFile(file, (doc) => doc.setIn(path, value));
    return Deno.readTextFileSync(file);
  });
}

/** `text` with its lines `# ` uncommented from `from` on: what a user does to enable a block. */
function uncommentFrom(text: string, from: string): string {
  const start = text.indexOf(from);
  assert.ok(start >= 0, `no ${JSON.stringify(from)} in:\n${text}`);
  return text.slice(0, start) + text.slice(start).replace(/^# ?/gm, "");
}

Deno.test("editConfigFile: a column-0 comment block after nested mappings stays at the top level", async () => {
  const text = "platforms:\n  webhook:\n    extra:\n      port: 8644\n      # host: 127.0.0.1\n" +
    "\n# model:\n#   default: gpt-4.1-mini\n";
  const after = await edited(text, ["platforms", "webhook", "extra", "port"], 9000);
  assert.equal(after, text.replace("port: 8644", "port: 9000"));
  const model = parse(uncommentFrom(after, "# model:"));
  assert.deepEqual(model.model, { default: "gpt-4.1-mini" });
  assert.deepEqual(model.platforms.webhook.extra, { port: 9000 });
});

Deno.test("editConfigFile: a trailing block with no blank line before it keeps its spacing", async () => {
  const text = "a:\n  b:\n    c: 1\n    # about c\n# top one\n# top two\n";
  assert.equal(await edited(text, ["a", "b", "c"], 2), text.replace("c: 1", "c: 2"));
});

Deno.test("editConfigFile: each line of a trailing block keeps its own level", async () => {
  const text = "a:\n  b:\n    c: 1\n    # under b\n\n  # under a\n\n# top\n";
  assert.equal(await edited(text, ["a", "b", "c"], 2), text.replace("c: 1", "c: 2"));
});

Deno.test("editConfigFile: a comment before the next top-level key stays before it", async () => {
  const text = "a:\n  b:\n    c: 1\n    # about c\n# about d\nd: 2\n";
  assert.equal(await edited(text, ["d"], 3), text.replace("d: 2", "d: 3"));
  const afterEmpty = "a:\n# about d\nd: 2\n"; // `a` is empty: the comment is no part of it
  assert.equal(await edited(afterEmpty, ["d"], 3), afterEmpty.replace("d: 2", "d: 3"));
});

Deno.test("editConfigFile: a comment before the next nested key stays before it", async () => {
  const text = "a:\n  b:\n    c: 1\n    # about c\n  # about e\n  e: 2\nf: 3\n";
  assert.equal(await edited(text, ["f"], 4), text.replace("f: 3", "f: 4"));
});

Deno.test("editConfigFile: a comment indented under a nested key stays indented", async () => {
  const text = "z: 1\na:\n  b:\n    c: 1\n    # still under b\n";
  assert.equal(await edited(text, ["z"], 2), text.replace("z: 1", "z: 2"));
  const empty = "z: 1\na:\n  b:\n    # c: 1\n# top\n";
  assert.equal(await edited(empty, ["z"], 2), empty.replace("z: 1", "z: 2"));
  // One line under an empty value stays there: on the key's line, `# c: 1` would read `b: c: 1`
  // once uncommented.
  const one = "z: 1\na:\n  b:\n    # c: 1\n";
  assert.equal(await edited(one, ["z"], 2), one.replace("z: 1", "z: 2"));
});

Deno.test("editConfigFile: comments between top-level keys stay where they were", async () => {
  const text = "# head\n\na:\n  b: 1\n\n# about c\nc:\n  d: 1 # inline\n  # under c\n# tail\n";
  assert.equal(await edited(text, ["a", "b"], 2), text.replace("b: 1", "b: 2"));
});

Deno.test("editConfigFile: lists keep trailing comments at their levels too", async () => {
  const text = "a:\n  - b: 1\n    # under b\n  # under a\n# top\n";
  assert.equal(await edited(text, ["a", 0, "b"], 2), text.replace("b: 1", "b: 2"));
});

Deno.test("editConfigFile: a file without a trailing newline keeps its top-level tail", async () => {
  const text = "a:\n  b: 1\n  # under a\n# top";
  const after = await edited(text, ["a", "b"], 2);
  assert.equal(after.trimEnd(), text.replace("b: 1", "b: 2"));
});

Deno.test("editConfigFile: a CRLF file keeps its top-level tail", async () => {
  const text = "a:\r\n  b: 1\r\n  # under a\r\n# top\r\n";
  assert.equal(await edited(text, ["a", "b"], 2), text.replace("b: 1", "b: 2"));
});

Deno.test("editConfigFile: a new top-level key goes before the top-level tail, not into a section", async () => {
  const text = "a:\n  b: 1\n  # under a\n\n# model:\n#   default: m\n";
  const after = await edited(text, ["telemetry", "send"], false);
  assert.equal(
    after,
    "a:\n  b: 1\n  # under a\ntelemetry:\n  send: false\n\n# model:\n#   default: m\n",
  );
  assert.deepEqual(parse(uncommentFrom(after, "# model:")).model, { default: "m" });
});

Deno.test("removeConfigEntry: the top-level tail after the removed section's last entry stays", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "config.yaml");
    const text =
      "mcp_servers: {fs: {command: npx}}\nx:\n  y: 1\n  # under x\n\n# model:\n#   default: m\n";
    Deno.writeTextFileSync(file, text);
    assert.ok(removeConfigEntry(file, ["mcp_servers", "fs"]));
    assert.equal(Deno.readTextFileSync(file), text.replace("{fs: {command: npx}}", "{}"));
  });
});

Deno.test("gateway setup and metrics enable keep the starter file's closing comments at the top level", async () => {
  await using h = await tempHome();
  // The starter file is written before the gateway finds the platform disabled and stops.
  const run = await cli(h.home, ["gateway", "run"], { env: { WEBHOOK_ENABLED: "false" } });
  assert.equal(run.code, 1, run.stderr);
  const starter = Deno.readTextFileSync(h.config);
  assert.match(
    starter,
    /^# model:$/m,
    `the starter file has no closing # model: block:\n${starter}`,
  );

  const setup = await cli(h.home, ["gateway", "setup", "--port", "18750"]);
  assert.equal(setup.code, 0, setup.stderr);
  const afterSetup = Deno.readTextFileSync(h.config);
  assert.equal(afterSetup, starter.replace("port: 8644", "port: 18750"));

  const enable = await cli(h.home, ["metrics", "enable"]);
  assert.equal(enable.code, 0, enable.stderr);
  const afterEnable = Deno.readTextFileSync(h.config);
  const tail = starter.slice(starter.lastIndexOf("\n\n"));
  assert.ok(afterEnable.endsWith(tail), `the closing block moved:\n${afterEnable}`);
  const uncommented = parse(uncommentFrom(afterEnable, "# model:"));
  assert.equal(uncommented.model.default, "gpt-4.1-mini");
  assert.equal(uncommented.platforms.webhook.extra.model, undefined);
  assert.equal(uncommented.telemetry.shared_metrics.enabled, true);
});
