/**
 * `agent mcp tools`: a server's very long tool name is cut with `…` in the table, so the columns
 * stay aligned and a row stays readable; `--json` keeps the whole name.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { stdioCommand } from "../fixtures/mcp/spawn.ts";
import { cli, cliJson, tempHome } from "./_helpers.ts";
import { denoEnv, writeConfig, yamlValue } from "./_mcp_helpers.ts";

/** A stdio server announcing exactly the tool names it is given (`odd_tools_stdio.ts`). */
const ODD_TOOLS = fileURLToPath(new URL("../fixtures/mcp/odd_tools_stdio.ts", import.meta.url));

Deno.test("mcp tools: a very long original name is cut with … in the table, whole in --json", async () => {
  await using home = await tempHome();
  const long = `very_long_${"x".repeat(190)}_end`;
  const { command, args } = stdioCommand(["--tools", JSON.stringify(["short", long])], ODD_TOOLS);
  writeConfig(
    home.home,
    ["mcp_servers:", "  odd:", `    command: ${yamlValue(command)}`, `    args: ${yamlValue(args)}`]
      .join("\n") + "\n",
  );
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
