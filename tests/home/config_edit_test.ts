import assert from "node:assert/strict";
import { join } from "node:path";
import { ConfigSource } from "../../src/home/config.ts";
import { editConfigFile, NEW_CONFIG_HEADER } from "../../src/home/config_edit.ts";
import { ConfigError } from "../../src/home/errors.ts";
import { modeOf, namesIn, withTempDir } from "./_helpers.ts";

const ENABLED = ["telemetry", "shared_metrics", "enabled"];

const HAND_WRITTEN = `# Agent config, written by hand.
# Second header line.

model:
  default: gpt-4o # the model I pay for
  provider: openai

# Usage metrics: off until I decide.
telemetry:
  shared_metrics:
    enabled: false # not yet
    send: false
mcp_servers:
  # filesystem server
  fs:
    command: npx
    args:
      - "-y"
      - '@modelcontextprotocol/server-filesystem'
    enabled: yes
`;

Deno.test("editConfigFile: changing one value keeps everything else byte for byte", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "config.yaml");
    Deno.writeTextFileSync(file, HAND_WRITTEN);
    editConfigFile(file, (doc) => doc.setIn(ENABLED, true));
    const expected = HAND_WRITTEN.replace(
      "    enabled: false # not yet\n",
      "    enabled: true # not yet\n",
    );
    assert.notEqual(expected, HAND_WRITTEN);
    assert.equal(Deno.readTextFileSync(file), expected);
  });
});

Deno.test("editConfigFile: adding a key puts it after its siblings, the rest unchanged", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "config.yaml");
    Deno.writeTextFileSync(file, HAND_WRITTEN);
    editConfigFile(
      file,
      (doc) => doc.setIn(["telemetry", "shared_metrics", "endpoint"], "https://m.example/v2"),
    );
    const expected = HAND_WRITTEN.replace(
      "    send: false\n",
      "    send: false\n    endpoint: https://m.example/v2\n",
    );
    assert.equal(Deno.readTextFileSync(file), expected);
  });
});

Deno.test("editConfigFile: a missing section is appended at the end", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "config.yaml");
    Deno.writeTextFileSync(file, "# mine\nmodel:\n  default: x # keep\n");
    editConfigFile(file, (doc) => doc.setIn(ENABLED, true));
    assert.equal(
      Deno.readTextFileSync(file),
      "# mine\nmodel:\n  default: x # keep\ntelemetry:\n  shared_metrics:\n    enabled: true\n",
    );
  });
});

Deno.test("editConfigFile: deleting a key removes only that key", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "config.yaml");
    Deno.writeTextFileSync(file, "a: 1 # one\nb: 2\nc: 3 # three\n");
    editConfigFile(file, (doc) => {
      doc.deleteIn(["b"]);
    });
    assert.equal(Deno.readTextFileSync(file), "a: 1 # one\nc: 3 # three\n");
  });
});

Deno.test("editConfigFile: several edits in one call, key order kept", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "config.yaml");
    Deno.writeTextFileSync(file, "zeta: 1\nalpha: 2\nmid:\n  y: 1\n  x: 2\n");
    editConfigFile(file, (doc) => {
      doc.setIn(["mid", "x"], 3);
      doc.setIn(["alpha"], "two");
    });
    assert.equal(Deno.readTextFileSync(file), "zeta: 1\nalpha: two\nmid:\n  y: 1\n  x: 3\n");
  });
});

Deno.test("editConfigFile: a missing file is created with the header comment and the key", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "config.yaml");
    editConfigFile(file, (doc) => doc.setIn(ENABLED, true));
    const text = Deno.readTextFileSync(file);
    assert.ok(text.startsWith(NEW_CONFIG_HEADER), text);
    assert.equal(text, `${NEW_CONFIG_HEADER}\ntelemetry:\n  shared_metrics:\n    enabled: true\n`);
    assert.equal(ConfigSource.parse(file, text).get("telemetry.shared_metrics.enabled"), true);
    assert.equal(modeOf(file), 0o600);
    assert.deepEqual(namesIn(dir), ["config.yaml"]);
  });
});

Deno.test("editConfigFile: a missing home folder is created 0700", async () => {
  await withTempDir((dir) => {
    const home = join(dir, "agent-home");
    const file = join(home, "config.yaml");
    editConfigFile(file, (doc) => doc.setIn(["a"], 1));
    assert.equal(modeOf(home), 0o700);
    assert.equal(modeOf(file), 0o600);
    assert.equal(ConfigSource.read(file).get("a"), 1);
  });
});

Deno.test("editConfigFile: an empty existing file gets the key (no header is invented)", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "config.yaml");
    Deno.writeTextFileSync(file, "");
    editConfigFile(file, (doc) => doc.setIn(["a"], 1));
    assert.equal(Deno.readTextFileSync(file), "a: 1\n");
  });
});

Deno.test("editConfigFile: the written file is mode 0600, even if it was 0644", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "config.yaml");
    Deno.writeTextFileSync(file, "a: 1\n");
    Deno.chmodSync(file, 0o644);
    editConfigFile(file, (doc) => doc.setIn(["a"], 2));
    assert.equal(modeOf(file), 0o600);
    assert.equal(Deno.readTextFileSync(file), "a: 2\n");
    assert.deepEqual(namesIn(dir), ["config.yaml"], "no temp file left");
  });
});

Deno.test("editConfigFile: a broken file is refused and left byte for byte untouched", async () => {
  const broken = [
    "# hand written\nmodel:\n  default: a\n provider: b # wrong indent\n",
    "telemetry:\n\tshared_metrics: {}\n",
    "a: 1\na: 2\n",
    'a: "unclosed\n',
    "- a list\n- at the root\n",
    "just a scalar\n",
  ];
  await withTempDir((dir) => {
    const file = join(dir, "config.yaml");
    for (const text of broken) {
      const bytes = new TextEncoder().encode(text);
      Deno.writeFileSync(file, bytes);
      Deno.chmodSync(file, 0o644);
      const before = Deno.statSync(file);
      let called = false;
      assert.throws(
        () =>
          editConfigFile(file, (doc) => {
            called = true;
            doc.setIn(ENABLED, true);
          }),
        (error: unknown) => error instanceof ConfigError && error.location.file === file,
        JSON.stringify(text),
      );
      assert.equal(called, false, "the edit must not run on a broken file");
      assert.deepEqual(Deno.readFileSync(file), bytes, JSON.stringify(text));
      const after = Deno.statSync(file);
      assert.equal(after.ino, before.ino, "the file is not replaced");
      assert.equal(modeOf(file), 0o644, "not even its mode is touched");
      assert.deepEqual(namesIn(dir), ["config.yaml"]);
    }
  });
});

Deno.test("editConfigFile: an edit that throws leaves the file untouched", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "config.yaml");
    Deno.writeTextFileSync(file, HAND_WRITTEN);
    assert.throws(
      () =>
        editConfigFile(file, (doc) => {
          doc.setIn(ENABLED, true);
          throw new Error("changed my mind");
        }),
      /changed my mind/,
    );
    assert.equal(Deno.readTextFileSync(file), HAND_WRITTEN);
    assert.deepEqual(namesIn(dir), ["config.yaml"]);
  });
});

Deno.test("editConfigFile: a missing file with a throwing edit creates nothing", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "config.yaml");
    assert.throws(() =>
      editConfigFile(file, () => {
        throw new Error("no");
      })
    );
    assert.deepEqual(namesIn(dir), []);
  });
});

Deno.test({
  name: "editConfigFile: long unrelated lines are not re-wrapped",
  async fn() {
    await withTempDir((dir) => {
      const file = join(dir, "config.yaml");
      const original = [
        "a: 1",
        "prompt: this plain scalar is deliberately longer than eighty columns so that yaml folds it",
        'quoted: "this double quoted scalar is also deliberately longer than eighty columns, see?"',
        "",
      ].join("\n");
      Deno.writeTextFileSync(file, original);
      editConfigFile(file, (doc) => doc.setIn(["a"], 2));
      assert.equal(Deno.readTextFileSync(file), original.replace("a: 1", "a: 2"));
    });
  },
});

Deno.test({
  name: "editConfigFile: flow lists and unindented block lists are kept as written",
  async fn() {
    await withTempDir((dir) => {
      const file = join(dir, "config.yaml");
      const original = "a: 1\nargs: [-y, server]\nenv: {A: b}\ntags:\n- one\n- two\n";
      Deno.writeTextFileSync(file, original);
      editConfigFile(file, (doc) => doc.setIn(["a"], 2));
      assert.equal(Deno.readTextFileSync(file), original.replace("a: 1", "a: 2"));
    });
  },
});

Deno.test({
  name: "editConfigFile: a comment at the end of the file is not moved",
  async fn() {
    await withTempDir((dir) => {
      const file = join(dir, "config.yaml");
      const original = "a: 1\nmodel:\n  default: x\n# the end\n";
      Deno.writeTextFileSync(file, original);
      editConfigFile(file, (doc) => doc.setIn(["a"], 2));
      assert.equal(Deno.readTextFileSync(file), original.replace("a: 1", "a: 2"));
    });
  },
});

Deno.test("editConfigFile: padded flow collections stay padded", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "config.yaml");
    const original = "a: 1\nargs: [ -y, server ]\nenv: { A: b }\n";
    Deno.writeTextFileSync(file, original);
    editConfigFile(file, (doc) => doc.setIn(["a"], 2));
    assert.equal(Deno.readTextFileSync(file), original.replace("a: 1", "a: 2"));
  });
});
