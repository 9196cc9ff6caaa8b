/**
 * `agent mcp test` on common connection mistakes: the error (stderr, and `error` of
 * `--json`) names config.yaml, the entry's key and the fix, with substituted secrets shown as
 * their placeholders.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { startHttpFixture } from "../fixtures/mcp/spawn.ts";
import { cli, cliJson, tempHome } from "./_helpers.ts";
import { writeConfig, yamlValue } from "./_mcp_helpers.ts";

const SECRET = "s3cret-value-42";

function assertNoSecret(text: string): void {
  assert.ok(!text.includes(SECRET), `the secret shows in: ${text}`);
}

Deno.test("mcp test: https:// to a plain HTTP server says to make mcp_servers.<name>.url start with http://", async () => {
  await using home = await tempHome();
  await using server = await startHttpFixture(["--transport", "http", "--tools", "echo"]);
  Deno.writeTextFileSync(join(home.home, ".env"), `MCP_KEY=${SECRET}\n`);
  const url = `${server.url.replace(/^http:/, "https:")}?key=\${MCP_KEY}`;
  writeConfig(
    home.home,
    ["mcp_servers:", "  local:", `    url: ${yamlValue(url)}`, "    connect_timeout: 8", ""]
      .join("\n"),
  );
  const message = `MCP server 'local': cannot reach ${url}: the server at that address answers ` +
    "plain HTTP, not HTTPS (the TLS handshake failed: received corrupt message of type " +
    `InvalidContentType). Fix: in ${home.config}, make mcp_servers.local.url start with http:// ` +
    "instead of https://";

  const text = await cli(home.home, ["mcp", "test", "local"]);
  assert.equal(text.code, 1, text.stderr);
  assert.equal(text.stderr, `${message}\n`);
  assert.equal(text.stdout, "");
  const doc = await cliJson(home.home, ["mcp", "test", "local", "--json"], 1);
  assert.equal(doc.ok, false);
  assert.equal(doc.error, message);
  assertNoSecret(text.stderr + JSON.stringify(doc));
});
