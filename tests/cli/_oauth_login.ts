/**
 * A home logged in to the fake OAuth server's MCP endpoint, for CLI tests of what happens to its
 * stored tokens afterwards.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type OAuthServer, type TestBrowser, testBrowser } from "../fixtures/oauth_server.ts";
import { cli } from "./_helpers.ts";
import { writeConfig } from "./_mcp_helpers.ts";

/**
 * Declares `server` as the OAuth MCP server `api` in `home`'s config.yaml and logs in to it with
 * `agent mcp login api`, which must succeed; returns the browser that answered, for later logins.
 */
export async function loginApi(home: string, server: OAuthServer): Promise<TestBrowser> {
  const browser = testBrowser();
  writeConfig(home, `mcp_servers:\n  api:\n    url: ${server.mcpUrl}\n    auth: oauth\n`);
  const login = await cli(home, ["mcp", "login", "api"], { openBrowser: browser.open });
  await browser.settled();
  assert.equal(login.code, 0, login.stderr);
  return browser;
}
