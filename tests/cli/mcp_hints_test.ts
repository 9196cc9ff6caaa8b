/**
 * `agent mcp test` on the two common connection mistakes: the error (stderr, and `error` of
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

Deno.test("mcp test: transport: sse for a Streamable HTTP endpoint says to remove it from mcp_servers.<name>", async () => {
  await using home = await tempHome();
  await using server = await startHttpFixture([
    "--transport",
    "http",
    "--tools",
    "echo",
    "--require-header",
    `Authorization=Bearer ${SECRET}`,
  ]);
  Deno.writeTextFileSync(join(home.home, ".env"), `MCP_TOKEN=${SECRET}\n`);
  writeConfig(
    home.home,
    [
      "mcp_servers:",
      "  remote:",
      `    url: ${yamlValue(server.url)}`,
      "    transport: sse",
      "    headers: { Authorization: 'Bearer ${MCP_TOKEN}' }",
      "    connect_timeout: 8",
      "",
    ].join("\n"),
  );
  const message = "MCP server 'remote': the server refused the SSE request: \"Bad Request: No " +
    'valid session ID provided" (JSON-RPC error -32000, HTTP 400). An answer in JSON-RPC means ' +
    `${server.url} is a Streamable HTTP endpoint, not an SSE one. Fix: in ${home.config}, ` +
    "remove `transport: sse` from mcp_servers.remote (Streamable HTTP is the default), or set " +
    "mcp_servers.remote.transport to http";

  const text = await cli(home.home, ["mcp", "test", "remote"]);
  assert.equal(text.code, 1, text.stderr);
  assert.equal(text.stderr, `${message}\n`);
  const doc = await cliJson(home.home, ["mcp", "test", "remote", "--json"], 1);
  assert.equal(doc.ok, false);
  assert.equal(doc.error, message);
  assertNoSecret(text.stderr + JSON.stringify(doc));

  // The fix works: without `transport: sse` the same entry connects.
  writeConfig(
    home.home,
    Deno.readTextFileSync(home.config).replace("    transport: sse\n", ""),
  );
  const fixed = await cliJson(home.home, ["mcp", "test", "remote", "--json"], 0);
  assert.equal(fixed.ok, true);
  assert.equal(fixed.transport, "http");
});
