/**
 * Every command that edits `config.yaml` changes only the lines of what it edits: over a set of
 * hand-written files (mixed flow padding, quoting, comments at line ends, blank lines, 4-space
 * indentation, anchors, folded values, CRLF) and over random files written in those styles, each
 * line outside the edited section stays byte for byte, and the data outside it stays the same.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { isMap, isNode, isScalar, parse, parseDocument } from "yaml";
import type { Node, Pair } from "yaml";
import { cli, tempHome } from "./_helpers.ts";

/** README.md's own example, with both flow paddings, quoted and plain values, end comments. */
const README_LIKE = `# Agent service configuration (see README.md for every section).
model:
  default: gpt-4o   # the one I pay for
  provider: "openai"

mcp_servers:
  everything: # stdio: the service starts it
    command: npx
    args: [-y, "@modelcontextprotocol/server-everything"]
    env: { LOG_LEVEL: info }
    tools:
      exclude: ["*long*"] # filters use the server's own tool names (globs allowed)
  api: # remote: Streamable HTTP
    url: https://api.example.com/mcp
    headers: { Authorization: "Bearer \${API_TOKEN}" } # from <home>/.env
    timeout: 120 # tool-call timeout, seconds

telemetry:
  shared_metrics: {enabled: false, send: false}
`;

/** Four-space indentation, unindented lists, single quotes, two blank lines, an anchor. */
const FOUR_SPACES = `model:
    default: 'gpt-4o'
    max_tokens: 0x400


mcp_servers:
    files: &files
        command: 'npx'
        args:
        - -y
        - '@modelcontextprotocol/server-filesystem'
        - ~/docs
        timeout: 60
    wiki: {url: 'https://wiki.example/mcp', headers: {X-Team: "\${TEAM}"}}
platforms:
    webhook:
        enabled: false
        extra: {port: 8644, host: 127.0.0.1}
telemetry:
    shared_metrics:
        enabled: true     # opted in
        send: false
`;

/** No servers or telemetry yet; padded flow, a block scalar, a folded plain value, escapes. */
const NO_SECTIONS = `# my home
model:
  default: "gpt-4o"
agent:
  system_prompt: |
    You are careful.
    Answer briefly.
  max_iterations: 20
platforms:
  webhook:
    enabled: true
    extra: { port: 8644, routes: { github: { events: [ push ], secret: "caf\\u00e9-1234567890abcdef" } } }   # public
approvals:
  gateway: this one is
    folded over lines
# the end
`;

/** Empty and commented-out sections, a document start, comments at several levels. */
const SPARSE = `---
mcp_servers: {}
telemetry:
  # shared_metrics: { enabled: true }
platforms:
  webhook:
    enabled: false   # later
    extra:
      port: 8644
      # host: 127.0.0.1
# servers above
logging: { level: info }
`;

/** A block server list whose first entry has its own comment lines. */
const COMMENTED_SERVERS = `mcp_servers:
  # files on this machine
  fs:
    command: npx
    args: [ -y, "@modelcontextprotocol/server-filesystem" ]   # padded
    # env: { A: b }

  remote: { url: "https://r.example/mcp" }
# trailing notes
telemetry:
  shared_metrics:
    enabled: false
    send: true
    endpoint: https://metrics.example/v2
`;

const FILES: Record<string, string> = {
  README_LIKE,
  FOUR_SPACES,
  NO_SECTIONS,
  SPARSE,
  COMMENTED_SERVERS,
};

/** A command that edits config.yaml, and the key paths it edits. */
interface EditCommand {
  name: string;
  argv: (servers: string[]) => string[] | undefined;
  /** The key paths it sets or deletes. */
  paths: (servers: string[]) => string[][];
  /** The key path of the entry it removes. */
  removes?: (servers: string[]) => string[];
  /** Checks that the edit was made: `data` is the file's data after the command. */
  applied: (data: Data, servers: string[]) => void;
}

// deno-lint-ignore no-explicit-any
type Data = any;

const INSTALL_JSON = JSON.stringify({
  mcpServers: { installed: { command: "npx", args: ["-y", "@scope/installed"] } },
});
const ENABLED = ["telemetry", "shared_metrics", "enabled"];
const SEND = ["telemetry", "shared_metrics", "send"];
const EXTRA = ["platforms", "webhook", "extra"];

const COMMANDS: EditCommand[] = [
  {
    name: "mcp add",
    argv: () => ["mcp", "add", "added", "--command", "npx", "--arg", "-y", "--arg", "@s/added"],
    paths: () => [["mcp_servers", "added"]],
    applied: (data) =>
      assert.deepEqual(data?.mcp_servers?.added, { command: "npx", args: ["-y", "@s/added"] }),
  },
  {
    name: "mcp install",
    argv: () => ["mcp", "install", "--yes", INSTALL_JSON],
    paths: () => [["mcp_servers", "installed"]],
    applied: (data) =>
      assert.deepEqual(data?.mcp_servers?.installed, {
        command: "npx",
        args: ["-y", "@scope/installed"],
      }),
  },
  {
    name: "mcp remove",
    argv: (servers) => servers.length > 0 ? ["mcp", "remove", servers[0]] : undefined,
    paths: () => [],
    removes: (servers) => ["mcp_servers", servers[0]],
    applied: (data, servers) =>
      assert.equal(Object.hasOwn(data?.mcp_servers ?? {}, servers[0]), false, "not removed"),
  },
  {
    name: "metrics enable",
    argv: () => ["metrics", "enable"],
    paths: () => [ENABLED],
    applied: (data) => assert.equal(data?.telemetry?.shared_metrics?.enabled, true),
  },
  {
    name: "metrics disable",
    argv: () => ["metrics", "disable"],
    paths: () => [ENABLED, SEND],
    applied: (data) => {
      assert.equal(data?.telemetry?.shared_metrics?.enabled, false);
      assert.notEqual(data?.telemetry?.shared_metrics?.send, true);
    },
  },
  {
    name: "gateway setup",
    argv: () => [
      "gateway",
      "setup",
      "--port",
      "9100",
      "--host",
      "127.0.0.1",
      "--secret",
      "s".repeat(32),
    ],
    paths: () => [
      ["platforms", "webhook", "enabled"],
      [...EXTRA, "port"],
      [...EXTRA, "host"],
      [...EXTRA, "secret"],
    ],
    // An explicit `enabled: false` is kept (setup without --enable): not checked here.
    applied: (data) => {
      assert.equal(data?.platforms?.webhook?.extra?.port, 9100);
      assert.equal(data?.platforms?.webhook?.extra?.host, "127.0.0.1");
    },
  },
];

/** The 0-based line of offset `at` in `text`. */
function lineAt(text: string, at: number): number {
  return text.slice(0, at).split("\n").length - 1;
}

/**
 * The section an edit of `path` rewrites: the entry on `path` under the deepest block mapping
 * the path goes through (a flow collection or a value on the way is rewritten whole).
 */
function sectionOf(text: string, path: string[]): string[] {
  let node: unknown = parseDocument(text).contents;
  for (let depth = 0; depth < path.length; depth++) {
    if (!isMap(node) || node.flow) return path.slice(0, Math.max(depth, 1));
    const next = node.get(path[depth], true);
    if (next === undefined) return path.slice(0, depth + 1);
    node = next;
  }
  return path;
}

/** The lines (0-based, inclusive) of the entry at `path` in `text`, when it is there. */
function linesOfEntry(text: string, path: string[]): [number, number] | undefined {
  const document = parseDocument(text);
  const parent = path.length === 1 ? document.contents : document.getIn(path.slice(0, -1), true);
  if (!isMap(parent)) return undefined;
  const pair = parent.items.find((item: Pair) =>
    isScalar(item.key) && String(item.key.value) === path[path.length - 1]
  );
  if (pair === undefined || !isNode(pair.key)) return undefined;
  const value = pair.value as Node | null;
  const end = isNode(value) && value.range ? value.range[1] : pair.key.range![1];
  return [lineAt(text, pair.key.range![0]), lineAt(text, Math.max(end - 1, pair.key.range![0]))];
}

/** Line pairs of a longest common subsequence of `a` and `b`. */
function commonLines(a: string[], b: string[]): [number, number][] {
  const length = a.map(() => new Array(b.length + 1).fill(0));
  length.push(new Array(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      length[i][j] = a[i] === b[j]
        ? length[i + 1][j + 1] + 1
        : Math.max(length[i + 1][j], length[i][j + 1]);
    }
  }
  const pairs: [number, number][] = [];
  for (let i = 0, j = 0; i < a.length && j < b.length;) {
    if (a[i] === b[j]) pairs.push([i++, j++]);
    else if (length[i + 1][j] >= length[i][j + 1]) i++;
    else j++;
  }
  return pairs;
}

/** Every line number from `from` to `to`, inclusive. */
function range([from, to]: [number, number]): number[] {
  return Array.from({ length: to - from + 1 }, (_, index) => from + index);
}

/** The data of `text` without the entries at `paths`. */
function dataWithout(text: string, paths: string[][]): unknown {
  const data = parse(text) ?? {};
  for (const path of paths) {
    let holder = data;
    for (const key of path.slice(0, -1)) holder = holder?.[key];
    if (holder && typeof holder === "object") delete holder[path[path.length - 1]];
    // A section left empty is written empty (null): the same to every reader.
    if (path.length === 2 && data[path[0]] === null) data[path[0]] = {};
  }
  return data;
}

/**
 * Checks that `after` differs from `before` (LF line ends) only in the lines of the sections
 * `command` edits, and that the data elsewhere is the same.
 */
function assertOnlySectionsChanged(
  before: string,
  after: string,
  command: EditCommand,
  servers: string[],
): void {
  const sections = command.paths(servers).map((path) => sectionOf(before, path));
  const mayGo = new Set<number>();
  const mayCome = new Set<number>();
  for (const section of sections) {
    const old = linesOfEntry(before, section);
    if (old) range(old).forEach((line) => mayGo.add(line));
    const now = linesOfEntry(after, section);
    if (now) range(now).forEach((line) => mayCome.add(line));
  }
  const oldLines = before.split("\n");
  const newLines = after.split("\n");
  if (command.removes) {
    const path = command.removes(servers);
    sections.push(path);
    const [first, last] = linesOfEntry(before, path)!;
    let from = first;
    while (from > 0 && /^\s*(#.*)?$/.test(oldLines[from - 1])) from--; // its comment, blanks
    // Its lines indented deeper (comments among its values) and the blank lines after it.
    const indent = oldLines[first].search(/\S/);
    let to = last;
    const inside = (line: string) => line.trim() === "" || line.search(/\S/) > indent;
    while (to + 1 < oldLines.length && inside(oldLines[to + 1])) to++;
    range([from, to]).forEach((line) => mayGo.add(line));
  }
  const pairs = commonLines(oldLines, newLines);
  const keptOld = new Set(pairs.map(([line]) => line));
  const keptNew = new Set(pairs.map(([, line]) => line));
  const context = `${command.name}, before:\n${before}\nafter:\n${after}`;
  oldLines.forEach((line, index) => {
    if (!keptOld.has(index) && !mayGo.has(index)) {
      assert.fail(`line ${index + 1} ${JSON.stringify(line)} changed or went (${context})`);
    }
  });
  newLines.forEach((line, index) => {
    if (!keptNew.has(index) && !mayCome.has(index)) {
      assert.fail(`line ${index + 1} ${JSON.stringify(line)} came outside the edit (${context})`);
    }
  });
  assert.deepEqual(dataWithout(after, sections), dataWithout(before, sections), context);
  command.applied(parse(after), servers);
}

/** The server names of `text`, in order. */
function serversOf(text: string): string[] {
  return Object.keys(parse(text)?.mcp_servers ?? {});
}

for (const [fileName, lfText] of Object.entries(FILES)) {
  for (const crlf of [false, true]) {
    for (const command of COMMANDS) {
      const servers = serversOf(lfText);
      const argv = command.argv(servers);
      if (argv === undefined) continue;
      Deno.test(`${command.name} on ${fileName}${crlf ? " (CRLF)" : ""}: only the lines it edits change`, async () => {
        await using h = await tempHome();
        const written = crlf ? lfText.replaceAll("\n", "\r\n") : lfText;
        Deno.writeTextFileSync(h.config, written);
        const result = await cli(h.home, argv);
        assert.equal(result.code, 0, `${argv.join(" ")}: ${result.stderr}`);
        const after = Deno.readTextFileSync(h.config);
        if (crlf) assert.doesNotMatch(after, /(?<!\r)\n/, "every line still ends in CRLF");
        assertOnlySectionsChanged(lfText, after.replaceAll("\r\n", "\n"), command, servers);
      });
    }
  }
}

Deno.test("metrics enable in a file that pads other flow collections keeps the edited one unpadded", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, README_LIKE);
  const result = await cli(h.home, ["metrics", "enable"]);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(
    Deno.readTextFileSync(h.config),
    README_LIKE.replace(
      "shared_metrics: {enabled: false, send: false}",
      "shared_metrics: {enabled: true, send: false}",
    ),
  );
});

Deno.test("mcp add to a file indented by four spaces writes the new entry at four spaces", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, FOUR_SPACES);
  const result = await cli(h.home, ["mcp", "add", "notes", "--url", "https://n.example/mcp"]);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(
    Deno.readTextFileSync(h.config),
    FOUR_SPACES.replace(
      "platforms:\n",
      "    notes:\n        url: https://n.example/mcp\nplatforms:\n",
    ),
  );
});

for (const command of [["add"], ["install"]] as const) {
  Deno.test(`mcp ${command[0]} into \`mcp_servers: {}\` writes the entry on lines of its own`, async () => {
    await using h = await tempHome();
    Deno.writeTextFileSync(h.config, "mcp_servers: {}   # none yet\nmodel: {provider: openai}\n");
    const args = command[0] === "add"
      ? ["mcp", "add", "notes", "--url", "https://n.example/mcp"]
      : ["mcp", "install", '{"notes": {"url": "https://n.example/mcp"}}', "--yes"];
    const result = await cli(h.home, args);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(
      Deno.readTextFileSync(h.config),
      "mcp_servers:\n  # none yet\n  notes:\n    url: https://n.example/mcp\n" +
        "model: {provider: openai}\n",
    );
  });
}

// ---------------------------------------------------------------------------------------------
// Random files in the styles people write

/** `key: value` of a flow mapping, padded or not. */
const flowMap = (entries: string[], padded: boolean) =>
  padded ? `{ ${entries.join(", ")} }` : `{${entries.join(", ")}}`;
const flowList = (items: string[], padded: boolean) =>
  padded ? `[ ${items.join(", ")} ]` : `[${items.join(", ")}]`;

/** A value written plain, single- or double-quoted. */
const quoted = (value: string) => fc.constantFrom(value, `'${value}'`, `"${value}"`);

/** Blanks and a comment at the end of a line, or nothing. */
const endComment = fc.oneof(
  fc.constant(""),
  fc.tuple(fc.integer({ min: 1, max: 4 }), fc.constantFrom("note", "keep me", "x: [1]"))
    .map(([gap, text]) => `${" ".repeat(gap)}# ${text}`),
);

/** Lines between sections: blank lines and comment lines. */
const between = fc.array(fc.constantFrom("", "# about the next part", "#"), { maxLength: 3 });

/** One server entry's lines at `indent` (one level), with the server's own key at that indent. */
function serverLines(name: string, unit: number) {
  const one = " ".repeat(unit);
  const two = one + one;
  return fc.oneof(
    fc.tuple(fc.boolean(), quoted("https://" + name + ".example/mcp"), endComment).map(
      ([padded, url, comment]) => [`${one}${name}: ${flowMap([`url: ${url}`], padded)}${comment}`],
    ),
    fc.tuple(
      fc.boolean(),
      fc.boolean(),
      quoted("scope-" + name),
      fc.constantFrom("flow", "block", "unindented"),
      endComment,
      endComment,
    ).map(([padArgs, padEnv, pkg, argsStyle, comment1, comment2]) => [
      `${one}${name}:${comment1}`,
      `${two}command: npx`,
      ...(argsStyle === "flow" ? [`${two}args: ${flowList(["-y", pkg], padArgs)}${comment2}`] : [
        `${two}args:`,
        ...["-y", pkg].map((arg) => `${argsStyle === "block" ? two + one : two}- ${arg}`),
      ]),
      `${two}env: ${flowMap(["LOG_LEVEL: info"], padEnv)}`,
    ]),
  );
}

/** A random config.yaml, and its server names. */
const randomConfig = fc.tuple(
  fc.constantFrom(2, 4),
  between,
  fc.tuple(quoted("gpt-4o"), endComment),
  fc.constantFrom("absent", "empty", "block"),
  fc.uniqueArray(fc.constantFrom("fs", "docs", "api"), { minLength: 1, maxLength: 3 }),
  between,
  fc.constantFrom("absent", "null", "flow", "flow-padded", "block"),
  fc.constantFrom("absent", "block", "flow"),
  fc.boolean(),
).chain((
  [unit, head, [model, modelComment], serversStyle, names, middle, telemetry, hooks, crlf],
) =>
  fc.tuple(...names.map((name) => serverLines(name, unit))).map((servers) => {
    const one = " ".repeat(unit);
    const lines = [...head, "model:", `${one}default: ${model}${modelComment}`];
    if (serversStyle === "empty") lines.push("mcp_servers: {}");
    if (serversStyle === "block") lines.push("mcp_servers:", ...servers.flat());
    lines.push(...middle);
    if (telemetry === "null") lines.push("telemetry:", `${one}# shared_metrics: {enabled: true}`);
    if (telemetry.startsWith("flow")) {
      lines.push(
        `telemetry: ${
          flowMap(
            [`shared_metrics: ${flowMap(["enabled: false"], telemetry === "flow-padded")}`],
            telemetry === "flow-padded",
          )
        }`,
      );
    }
    if (telemetry === "block") {
      lines.push("telemetry:", `${one}shared_metrics:`, `${one}${one}enabled: false   # off`);
    }
    if (hooks === "block") {
      lines.push("platforms:", `${one}webhook:`, `${one}${one}enabled: false`);
      lines.push(`${one}${one}extra:`, `${one}${one}${one}port: 8644`);
    }
    if (hooks === "flow") {
      lines.push("platforms: {webhook: {enabled: false, extra: { port: 8644 }}}");
    }
    const text = lines.join("\n") + "\n";
    return { text, crlf, servers: serversStyle === "block" ? names : [] };
  })
);

Deno.test("every editing command on random hand-written files changes only the lines it edits", async () => {
  await using h = await tempHome();
  await fc.assert(
    fc.asyncProperty(randomConfig, fc.constantFrom(...COMMANDS), async (file, command) => {
      const argv = command.argv(file.servers);
      if (argv === undefined) return;
      Deno.writeTextFileSync(h.config, file.crlf ? file.text.replaceAll("\n", "\r\n") : file.text);
      const result = await cli(h.home, argv);
      assert.equal(result.code, 0, `${argv.join(" ")}: ${result.stderr}\n${file.text}`);
      const after = Deno.readTextFileSync(h.config);
      if (file.crlf) assert.doesNotMatch(after, /(?<!\r)\n/, "every line still ends in CRLF");
      assertOnlySectionsChanged(file.text, after.replaceAll("\r\n", "\n"), command, file.servers);
    }),
    { numRuns: 150, seed: Number(Deno.env.get("FUZZ_SEED") ?? 20260310) },
  );
});
