/**
 * A `.env` line that gives no variable is named on stderr by every command (before its own
 * output), with file and line and without the line's text; a clean `.env` gives no warning.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { cli, tempHome } from "./_helpers.ts";

Deno.test("every command warns about a .env line that gives nothing, naming file and line only", async () => {
  await using h = await tempHome();
  const dotenv = join(h.home, ".env");
  Deno.writeTextFileSync(
    dotenv,
    "GITHUB_TOKEN=ghp_ok\nghp_pasted_without_a_name\nSLACK_TOKEN='xoxb-unclosed\n",
  );
  for (const args of [["mcp", "list"], ["webhook", "list", "--json"], ["metrics", "status"]]) {
    const result = await cli(h.home, args);
    const warnings = result.stderr.split("\n").filter((line) => line.startsWith("warning: "));
    assert.deepEqual(warnings, [
      `warning: ${dotenv}:2: nothing is read from this line: it has no \`=\`; write it as ` +
      "NAME=value",
      `warning: ${dotenv}:3: the value of SLACK_TOKEN starts with a ' quote but does not end ` +
      "with one, so the quote is read as part of the value; close the quote (with nothing but " +
      "a `# comment` after it) or remove it",
    ], `${args.join(" ")}: ${result.stderr}`);
    assert.doesNotMatch(result.stdout + result.stderr, /ghp_|xoxb/);
  }
  Deno.writeTextFileSync(dotenv, "# tokens\nGITHUB_TOKEN=ghp_ok\nSLACK_TOKEN='xoxb-closed'\n");
  const clean = await cli(h.home, ["mcp", "list"]);
  assert.doesNotMatch(clean.stderr, /warning:/);
});
