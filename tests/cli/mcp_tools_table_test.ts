/**
 * `agent mcp tools`: a server's very long tool name is cut with `…` in the table, so the columns
 * stay aligned and a row stays readable; control and format characters in a name are shown as
 * escapes and wide characters take their two columns; `--json` keeps the exact name. The same
 * escapes apply where `mcp tools`, `mcp test` and `mcp call` quote tool names in warnings and
 * errors.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { stdioCommand } from "../fixtures/mcp/spawn.ts";
import { cli, cliJson, tempHome } from "./_helpers.ts";
import { denoEnv, writeConfig, yamlValue } from "./_mcp_helpers.ts";

/** A stdio server announcing exactly the tool names it is given (`odd_tools_stdio.ts`). */
const ODD_TOOLS = fileURLToPath(new URL("../fixtures/mcp/odd_tools_stdio.ts", import.meta.url));

/** `config.yaml` in `home` with one server, `odd`, announcing the tools called `names`. */
function configureOddTools(home: string, names: string[]): void {
  const { command, args } = stdioCommand(["--tools", JSON.stringify(names)], ODD_TOOLS);
  writeConfig(
    home,
    ["mcp_servers:", "  odd:", `    command: ${yamlValue(command)}`, `    args: ${yamlValue(args)}`]
      .join("\n") + "\n",
  );
}

Deno.test("mcp tools: a very long original name is cut with … in the table, whole in --json", async () => {
  await using home = await tempHome();
  const long = `very_long_${"x".repeat(190)}_end`;
  configureOddTools(home.home, ["short", long]);
  const env = denoEnv();
  const result = await cli(home.home, ["mcp", "tools"], { env });
  assert.equal(result.code, 0, result.stderr);
  const [header, ...rows] = result.stdout.trimEnd().split("\n");
  assert.equal(rows.length, 2, result.stdout);
  const longRow = rows.find((row) => row.includes("very_long_"))!;
  assert.ok(!longRow.includes(long), longRow);
  assert.ok(longRow.includes(`${long.slice(0, 63)}…`), longRow);
  // Every column starts where its heading does, and no row is longer than the cut allows.
  const readOnlyAt = header.indexOf("READ-ONLY");
  for (const row of rows) {
    assert.equal(row.slice(readOnlyAt), "no", row);
    assert.equal(row[readOnlyAt - 1], " ", row);
  }
  assert.ok(header.indexOf("ORIGINAL NAME") + 64 + 2 === readOnlyAt, header);

  const doc = await cliJson(home.home, ["mcp", "tools", "--json"], 0, { env });
  assert.deepEqual(
    doc.tools.map((tool: { original_name: string }) => tool.original_name),
    ["short", long],
  );
});

/**
 * The columns a terminal gives `text`, independently of the code under test: combining marks
 * none, CJK ideographs and emoji two, every other character one.
 */
function columns(text: string): number {
  let width = 0;
  for (const character of text) {
    if (/\p{M}/u.test(character)) continue;
    const code = character.codePointAt(0)!;
    width += (code >= 0x4e00 && code <= 0x9fff) || (code >= 0x1f300 && code <= 0x1faff) ? 2 : 1;
  }
  return width;
}

Deno.test("mcp tools: control and format characters in a tool's name are shown as escapes, wide ones keep the columns aligned, --json is exact", async () => {
  await using home = await tempHome();
  const odd = [
    "esc\u001b[31mred\u001b[0m",
    "cr\roverwrite",
    "tab\tbed",
    "nel\u0085x",
    "ls\u2028y",
    "bidi\u202eevil",
  ];
  const wide = ["工具名", "🔧wrench", "cafe\u0301"];
  const names = ["plain", ...odd, ...wide];
  configureOddTools(home.home, names);
  const env = denoEnv();
  const result = await cli(home.home, ["mcp", "tools"], { env });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stderr, "");
  // Nothing that could drive the terminal: no ESC, CR, TAB, NEL, line separator or bidi override.
  for (const character of ["\u001b", "\r", "\t", "\u0085", "\u2028", "\u202e"]) {
    assert.ok(!result.stdout.includes(character), JSON.stringify(result.stdout));
  }
  const [header, ...rows] = result.stdout.trimEnd().split("\n");
  assert.equal(rows.length, names.length, result.stdout);
  const shown = [
    "esc\\u{1b}[31mred\\u{1b}[0m",
    "cr\\u{d}overwrite",
    "tab\\u{9}bed",
    "nel\\u{85}x",
    "ls\\u{2028}y",
    "bidi\\u{202e}evil",
  ];
  const nameAt = header.indexOf("ORIGINAL NAME");
  const readOnlyAt = header.indexOf("READ-ONLY");
  for (const [i, row] of rows.entries()) {
    // Every column starts at its heading's column, counted as a terminal counts them.
    const cells = row.split(/ {2,}/);
    assert.equal(cells.length, 4, row);
    const nameStart = row.indexOf(`  ${cells[2]}  `) + 2;
    assert.equal(columns(row.slice(0, nameStart)), nameAt, row);
    assert.equal(columns(row.slice(0, row.lastIndexOf(`  ${cells[3]}`) + 2)), readOnlyAt, row);
    assert.equal(cells[2], ["plain", ...shown, ...wide][i], row);
  }

  const doc = await cliJson(home.home, ["mcp", "tools", "--json"], 0, { env });
  assert.deepEqual(
    doc.tools.map((tool: { original_name: string }) => tool.original_name),
    names,
  );
});

Deno.test("mcp tools, test and call: a server's tool names in warnings and in 'Its tools' are shown with escapes, --json is exact", async () => {
  await using home = await tempHome();
  // Listed twice (a duplicate), and two names that both become mcp__odd__clash_x (a clash).
  const dup = "dup\u001b[31m";
  const first = "clash\u001bx";
  const second = "clash\u202ex";
  const names = [dup, dup, first, second];
  // Every call reports an error (`isError`), said on stderr with the tool's name.
  const failing = JSON.stringify({ content: [{ type: "text", text: "no" }], isError: true });
  const { command, args } = stdioCommand(
    ["--tools", JSON.stringify(names), "--call-result", failing],
    ODD_TOOLS,
  );
  writeConfig(
    home.home,
    ["mcp_servers:", "  odd:", `    command: ${yamlValue(command)}`, `    args: ${yamlValue(args)}`]
      .join("\n") + "\n",
  );
  const env = denoEnv();
  const warnings = [
    "MCP server 'odd': tool 'clash\\u{202e}x' is not registered because tool 'clash\\u{1b}x' " +
    "already becomes mcp__odd__clash_x after sanitising; only the first is registered",
    "MCP server 'odd': the server lists tool 'dup\\u{1b}[31m' 2 times; only the first is registered",
  ];
  const inert = (text: string) => {
    for (const character of ["\u001b", "\u202e"]) {
      assert.ok(!text.includes(character), JSON.stringify(text));
    }
  };

  const tools = await cli(home.home, ["mcp", "tools"], { env });
  assert.equal(tools.code, 0, tools.stderr);
  inert(tools.stdout + tools.stderr);
  assert.equal(tools.stderr, warnings.map((warning) => `warning: ${warning}\n`).join(""));

  const test = await cli(home.home, ["mcp", "test", "odd"], { env });
  assert.equal(test.code, 0, test.stderr);
  inert(test.stdout + test.stderr);
  for (const warning of warnings) assert.ok(test.stdout.includes(`  warning:   ${warning}\n`));

  const call = await cli(home.home, ["mcp", "call", "odd", "nosuch"], { env });
  assert.equal(call.code, 2, call.stderr);
  inert(call.stdout + call.stderr);
  assert.match(
    call.stderr,
    /MCP server 'odd' has no tool 'nosuch'\. Its tools: dup\\u\{1b\}\[31m, clash\\u\{1b\}x\n/,
  );

  // A name that lost the clash, and a call that reported an error.
  const clashed = await cli(home.home, ["mcp", "call", "odd", second], { env });
  assert.equal(clashed.code, 1, clashed.stderr);
  inert(clashed.stdout + clashed.stderr);
  assert.equal(clashed.stderr, `agent: ${warnings[0]}\n`);
  const reported = await cli(home.home, ["mcp", "call", "odd", first], { env });
  assert.equal(reported.code, 1, reported.stderr);
  inert(reported.stdout + reported.stderr);
  assert.equal(reported.stdout, "no\n");
  assert.equal(reported.stderr, "MCP server 'odd': tool 'clash\\u{1b}x' reported an error\n");

  // JSON keeps the exact strings.
  const doc = await cliJson(home.home, ["mcp", "tools", "--json"], 0, { env });
  assert.deepEqual(doc.warnings, [
    `MCP server 'odd': tool '${second}' is not registered because tool '${first}' already ` +
    "becomes mcp__odd__clash_x after sanitising; only the first is registered",
    `MCP server 'odd': the server lists tool '${dup}' 2 times; only the first is registered`,
  ]);
  const failed = await cliJson(home.home, ["mcp", "call", "odd", "nosuch", "--json"], 2, { env });
  assert.equal(
    failed.error.message,
    `MCP server 'odd' has no tool 'nosuch'. Its tools: ${dup}, ${first}`,
  );
});
