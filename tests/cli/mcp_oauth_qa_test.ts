/**
 * The SDK's own `[mcp-sdk] …` console lines about OAuth (an `invalid_grant` refresh, a refused
 * client) do not reach the user beside our messages. Runs the real CLI as a subprocess, whose
 * stderr is the one the user reads.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { startOAuthServer } from "../fixtures/oauth_server.ts";
import { spawnCli, tempHome } from "./_helpers.ts";
import { loginApi } from "./_oauth_login.ts";

Deno.test("a refresh answered invalid_grant says 'log in again' once, without [mcp-sdk] lines", async () => {
  await using h = await tempHome();
  await using server = startOAuthServer({ cimdSupported: true });
  await loginApi(h.home, server);

  // An expired access token whose refresh token the authorization server no longer knows.
  const file = join(h.home, "mcp-tokens", "api.json");
  const tokens = JSON.parse(Deno.readTextFileSync(file));
  Deno.writeTextFileSync(
    file,
    JSON.stringify({ ...tokens, access_token: "expired", refresh_token: "revoked", expires_at: 1 }),
  );
  const result = await spawnCli(h.home, ["mcp", "test", "api"]);
  assert.equal(result.code, 1, result.stderr);
  assert.doesNotMatch(result.stderr, /\[mcp-sdk\]/);
  // One line, saying that the refresh failed and to log in again.
  assert.match(
    result.stderr,
    /^MCP server 'api': the OAuth token refresh failed, .*a new login is needed; run `agent mcp login api`\n$/,
  );
});
