/**
 * `config.yaml` edits keep the layout of inline comments: the YAML library prints every
 * `value   # note` as `value # note` and moves a note on a section's key line under the key;
 * the blanks before a note are the user's, on the lines an edit leaves alone and, where the new
 * value leaves room, on the line it changes.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import fc from "fast-check";
import { parse } from "yaml";
import { editConfigFile, prepareSections } from "../../src/home/config_edit.ts";
import { cli, tempHome } from "../cli/_helpers.ts";
import { withTempDir } from "./_helpers.ts";

/** Writes `text` to a fresh `config.yaml`, sets each `[path, value]` in it, returns the file. */
async function edited(text: string, ...sets: [(string | number)[], unknown][]): Promise<string> {
  return await withTempDir((dir) => {
    const file = join(dir, "config.yaml");
    Deno.writeTextFileSync(file, text);
    editConfigFile(file, (doc, source) => {
      for (const [path, value] of sets) {
        // As the commands do: a section that is empty so far (null) becomes a mapping.
        prepareSections(doc, source, path.slice(0, -1).map(String));
        doc.setIn(path, value);
      }
    });
    return Deno.readTextFileSync(file);
  });
}

/** A file with notes after values, keys, list items, flow collections and quoted `#`. */
const COMMENTED = [
  "version: 1",
  "model:",
  "  default: gpt-4o      # the model",
  '  base_url: "http://x#y"   # a quoted # is no comment',
  "platforms:   # every platform",
  "  webhook:   # the listener",
  "    enabled: false    # off for now",
  "    extra:",
  "      port: 8644   # public port",
  "      host: 127.0.0.1\t# a tab before",
  "      routes:",
  "        - a    # first",
  "        - b  # second",
  "      list: [1, 2]   # flow",
  "      map: {a: 1}     # flow map",
  "      empty:      # nothing yet",
  "      script: |   # kept as written",
  "        echo hi   # shell, not YAML",
  "",
].join("\n");

Deno.test("editConfigFile: inline comments on lines the edit leaves alone keep their spacing", async () => {
  const after = await edited(COMMENTED, [["version"], 2]);
  assert.equal(after, COMMENTED.replace("version: 1", "version: 2"));
});

Deno.test("editConfigFile: a changed value keeps its aligned comment's column when it fits, else one space", async () => {
  const after = await edited(
    COMMENTED,
    [["platforms", "webhook", "extra", "port"], 9000],
    [["platforms", "webhook", "enabled"], true],
    [["model", "default"], "a-model-name-longer-than-the-gap"],
  );
  assert.equal(
    after,
    COMMENTED
      .replace("port: 8644   # public port", "port: 9000   # public port")
      .replace("enabled: false    # off for now", "enabled: true     # off for now")
      .replace(
        "default: gpt-4o      # the model",
        "default: a-model-name-longer-than-the-gap # the model",
      ),
  );
  // A comment one space after its value was not aligned: it stays one space after the new one.
  const single = "a: 12345 # note\nb: 1\n";
  assert.equal(await edited(single, [["a"], 1]), "a: 1 # note\nb: 1\n");
});

Deno.test("editConfigFile: a comment on a section's key line stays on it, also when the section gets its first key", async () => {
  const text = "platforms:   # all of them\n  webhook:   # the listener\n    extra:   # settings\n";
  const after = await edited(text, [["platforms", "webhook", "extra", "port"], 9000]);
  assert.equal(
    after,
    "platforms:   # all of them\n  webhook:   # the listener\n    extra:   # settings\n" +
      "      port: 9000\n",
  );
  assert.deepEqual(parse(after), { platforms: { webhook: { extra: { port: 9000 } } } });
  // With comment lines of its own under the key too: they stay under it.
  const below = "a:   # on the key\n  # under the key\n  b: 1\n";
  assert.equal(await edited(below, [["a", "b"], 2]), below.replace("b: 1", "b: 2"));
});

Deno.test("editConfigFile: a CRLF file keeps its inline comments' spacing", async () => {
  const text = "a: 1\r\nb:   # key\r\n  c: 2     # value\r\n";
  assert.equal(await edited(text, [["a"], 3]), text.replace("a: 1", "a: 3"));
});

Deno.test("gateway setup keeps the spacing before the comments of the keys it writes and of the others", async () => {
  await using h = await tempHome();
  const text = [
    "# my gateway",
    "platforms:",
    "  webhook:      # the listener",
    "    enabled: false   # until it is ready",
    "    extra:",
    "      port: 8644     # public port",
    "      host: 0.0.0.0  # every interface",
    "      rate_limit: 30    # per minute",
    "",
  ].join("\n");
  Deno.writeTextFileSync(h.config, text);
  const setup = await cli(h.home, [
    "gateway",
    "setup",
    "--enable",
    "--port",
    "9000",
    "--host",
    "127.0.0.1",
  ]);
  assert.equal(setup.code, 0, setup.stderr);
  assert.equal(
    Deno.readTextFileSync(h.config),
    text
      .replace("enabled: false   #", "enabled: true    #")
      .replace("port: 8644     #", "port: 9000     #")
      .replace("host: 0.0.0.0  #", "host: 127.0.0.1 #"),
  );
});

/** One line of a generated file: a section key or a leaf, with an optional note. */
interface GeneratedLine {
  indent: number;
  key: string;
  /** Absent on a section's key line. */
  value?: number | string;
  note?: { gap: string; text: string };
}

const note = fc.option(
  fc.record({
    gap: fc.constantFrom(" ", "  ", "   ", "      ", "\t", " \t"),
    text: fc.constantFrom("# note", "#tight", "# port: 1", "#  wide  note"),
  }),
  { nil: undefined },
);
const leafValue = fc.oneof(
  fc.integer({ min: 0, max: 99999 }),
  fc.constantFrom("on", "x y", "h.example"),
);

/** A file of sections (two levels) and leaves, each line with or without a note. */
const generatedFile = fc.array(
  fc.record({
    note,
    leaves: fc.array(fc.record({ value: leafValue, note }), { minLength: 1, maxLength: 3 }),
    inner: fc.array(
      fc.record({
        note,
        leaves: fc.array(fc.record({ value: leafValue, note }), { minLength: 1, maxLength: 3 }),
      }),
      { maxLength: 2 },
    ),
  }),
  { minLength: 1, maxLength: 3 },
).map((sections) => {
  const lines: GeneratedLine[] = [];
  sections.forEach((section, s) => {
    lines.push({ indent: 0, key: `s${s}`, note: section.note });
    section.leaves.forEach((leaf, l) =>
      lines.push({ indent: 2, key: `k${l}`, value: leaf.value, note: leaf.note })
    );
    section.inner.forEach((inner, i) => {
      lines.push({ indent: 2, key: `n${i}`, note: inner.note });
      inner.leaves.forEach((leaf, l) =>
        lines.push({ indent: 4, key: `k${l}`, value: leaf.value, note: leaf.note })
      );
    });
  });
  return lines;
});

function lineText(line: GeneratedLine): string {
  const code = `${" ".repeat(line.indent)}${line.key}:` +
    (line.value === undefined ? "" : ` ${line.value}`);
  return line.note ? `${code}${line.note.gap}${line.note.text}` : code;
}

/** The path of the key on `lines[index]`, from the sections above it. */
function pathOf(lines: GeneratedLine[], index: number): string[] {
  const path = [lines[index].key];
  let indent = lines[index].indent;
  for (let at = index - 1; at >= 0 && indent > 0; at--) {
    if (lines[at].indent < indent) {
      path.unshift(lines[at].key);
      indent = lines[at].indent;
    }
  }
  return path;
}

Deno.test("editConfigFile (property): setting one value changes that line only, its note kept at its column when it fits", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "config.yaml");
    fc.assert(
      fc.property(generatedFile, fc.nat(), fc.integer({ min: 0, max: 9_999_999 }), (
        lines,
        pick,
        value,
      ) => {
        const leaves = lines.flatMap((line, index) => line.value === undefined ? [] : [index]);
        const index = leaves[pick % leaves.length];
        const text = lines.map((line) => `${lineText(line)}\n`).join("");
        Deno.writeTextFileSync(file, text);
        editConfigFile(file, (doc) => doc.setIn(pathOf(lines, index), value));

        const old = lines[index];
        const code = `${" ".repeat(old.indent)}${old.key}: ${value}`;
        let changed = code;
        if (old.note) {
          const column = lineText(old).length - old.note.text.length;
          const aligned = old.note.gap.length > 1 && code.length < column;
          changed += (aligned ? " ".repeat(column - code.length) : " ") + old.note.text;
        }
        const expected = lines.map((line, at) => `${at === index ? changed : lineText(line)}\n`);
        assert.equal(Deno.readTextFileSync(file), expected.join(""));
      }),
      { numRuns: 300, seed: 17 },
    );
  });
});
