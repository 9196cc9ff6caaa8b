/**
 * `config.yaml` edits keep the file's line-end style (CRLF stays CRLF, new lines too), and
 * removing an entry takes its own leading comment with it, never the comment of the next entry
 * or of the section.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse } from "yaml";
import { editConfigFile, removeConfigEntry } from "../../src/home/config_edit.ts";
import { ConfigError } from "../../src/home/errors.ts";
import { withTempDir } from "./_helpers.ts";

const crlf = (lines: string[]) => lines.join("\r\n") + "\r\n";

/** Every line break of `text` is CRLF. */
function assertCrlf(text: string): void {
  assert.doesNotMatch(text, /(?<!\r)\n/, `a line ends in LF only:\n${JSON.stringify(text)}`);
}

Deno.test("editConfigFile: a CRLF file stays CRLF, the new lines too, comments kept", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "config.yaml");
    const lines = [
      "# my agent",
      "model:",
      "  default: gpt-4o # keep",
      "telemetry:",
      "  # later",
      "  shared_metrics:",
      "    enabled: false",
    ];
    Deno.writeTextFileSync(file, crlf(lines));
    editConfigFile(file, (doc) => {
      doc.setIn(["telemetry", "shared_metrics", "enabled"], true);
      doc.setIn(["mcp_servers", "fs"], doc.createNode({ command: "npx", args: ["-y", "x"] }));
    });
    const text = Deno.readTextFileSync(file);
    assertCrlf(text);
    assert.equal(
      text,
      crlf([
        ...lines.slice(0, 6),
        "    enabled: true",
        "mcp_servers:",
        "  fs:",
        "    command: npx",
        "    args:",
        "      - -y",
        "      - x",
      ]),
    );
  });
});

Deno.test("editConfigFile: an LF file stays LF", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "config.yaml");
    Deno.writeTextFileSync(file, "# mine\nmodel:\n  default: gpt-4o\n");
    editConfigFile(file, (doc) => doc.setIn(["model", "provider"], "openai"));
    assert.equal(
      Deno.readTextFileSync(file),
      "# mine\nmodel:\n  default: gpt-4o\n  provider: openai\n",
    );
  });
});

Deno.test("removeConfigEntry: a CRLF file stays CRLF", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "config.yaml");
    Deno.writeTextFileSync(
      file,
      crlf(["mcp_servers:", "  # a", "  a:", "    command: x", "  b: {command: y} # b", "x: 1"]),
    );
    assert.equal(removeConfigEntry(file, ["mcp_servers", "a"]), true);
    assert.equal(
      Deno.readTextFileSync(file),
      crlf(["mcp_servers:", "  b: {command: y} # b", "x: 1"]),
    );
  });
});

const SERVERS = [
  "# my agent", //
  "mcp_servers: # the servers",
  "  # servers I use",
  "",
  "  # first: the files server",
  "  # (two lines)",
  "  first:",
  "    command: a",
  "    # an arg I may add later",
  "  # second: notes",
  "  second:",
  "    command: b",
  "",
  "  # third",
  "  third: {command: c} # inline",
  "# model settings",
  "model:",
  "  default: gpt-4o",
  "",
];

/** Writes {@linkcode SERVERS}, removes `name`, returns the text. */
function removeFrom(dir: string, name: string, lines: string[] = SERVERS): string {
  const file = join(dir, "config.yaml");
  Deno.writeTextFileSync(file, lines.join("\n"));
  assert.equal(removeConfigEntry(file, ["mcp_servers", name]), true);
  const text = Deno.readTextFileSync(file);
  const servers = parse(text).mcp_servers;
  assert.ok(!(name in servers), `${name} still there:\n${text}`);
  return text;
}

Deno.test("removeConfigEntry: the first entry goes with its comment; the section's and the next entry's stay", async () => {
  await withTempDir((dir) => {
    assert.equal(
      removeFrom(dir, "first"),
      [
        "# my agent",
        "mcp_servers: # the servers",
        "  # servers I use",
        "",
        "  # second: notes",
        "  second:",
        "    command: b",
        "",
        "  # third",
        "  third: {command: c} # inline",
        "# model settings",
        "model:",
        "  default: gpt-4o",
        "",
      ].join("\n"),
    );
  });
});

Deno.test("removeConfigEntry: a middle entry goes with its comment; blank-line spacing kept", async () => {
  await withTempDir((dir) => {
    assert.equal(
      removeFrom(dir, "second"),
      [
        ...SERVERS.slice(0, 9),
        "",
        "  # third",
        "  third: {command: c} # inline",
        ...SERVERS.slice(15),
      ].join("\n"),
    );
  });
});

Deno.test("removeConfigEntry: the last entry goes with its comment and inline comment; the next section's comment stays", async () => {
  await withTempDir((dir) => {
    assert.equal(
      removeFrom(dir, "third"),
      [...SERVERS.slice(0, 12), ...SERVERS.slice(15)].join("\n"),
    );
  });
});

Deno.test("removeConfigEntry: a comment separated by a blank line is not the entry's", async () => {
  await withTempDir((dir) => {
    const lines = [
      "mcp_servers:",
      "  a: 1",
      "  # about a, or the section",
      "",
      "  b: 2",
      "  c: 3",
      "",
    ];
    assert.equal(
      removeFrom(dir, "b", lines),
      ["mcp_servers:", "  a: 1", "  # about a, or the section", "", "  c: 3", ""].join("\n"),
    );
  });
});

Deno.test("removeConfigEntry: a flow mapping entry is removed too; a missing one is false", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "config.yaml");
    Deno.writeTextFileSync(file, "# mine\nmcp_servers: {a: {command: x}, b: {command: y}}\n");
    assert.equal(removeConfigEntry(file, ["mcp_servers", "a"]), true);
    const text = Deno.readTextFileSync(file);
    assert.deepEqual(parse(text), { mcp_servers: { b: { command: "y" } } });
    assert.ok(text.startsWith("# mine\n"));
    assert.equal(removeConfigEntry(file, ["mcp_servers", "nope"]), false);
    assert.equal(Deno.readTextFileSync(file), text);
  });
});

Deno.test("removeConfigEntry: an entry whose anchor other keys use is refused, the file untouched", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "config.yaml");
    const text = "mcp_servers:\n  base: &base\n    command: npx\n  other:\n    <<: *base\n";
    Deno.writeTextFileSync(file, text);
    assert.throws(() => removeConfigEntry(file, ["mcp_servers", "base"]), (error) => {
      assert.ok(error instanceof ConfigError, String(error));
      assert.equal(error.location.line, 2);
      assert.match(error.message, /defines the anchor &base that other keys use \(\*base\)/);
      assert.match(error.message, /Fix: /);
      return true;
    });
    assert.equal(Deno.readTextFileSync(file), text);
    // Once nothing uses it, it goes.
    assert.equal(removeConfigEntry(file, ["mcp_servers", "other"]), true);
    assert.equal(removeConfigEntry(file, ["mcp_servers", "base"]), true);
    assert.equal(Deno.readTextFileSync(file), "mcp_servers:\n");
  });
});
