/**
 * `agent mcp login <server>` against the local authorization server and protected MCP resource
 * (`tests/fixtures/oauth_server.ts`), the browser being a stand-in that follows the redirect
 * over HTTP; and what the other `agent mcp` commands say about OAuth servers.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { DEFAULT_CLIENT_METADATA_URL } from "../../src/mcp/oauth/mod.ts";
import { type OAuthServer, startOAuthServer, testBrowser } from "../fixtures/oauth_server.ts";
import { cli, cliJson, tempHome } from "./_helpers.ts";
import { writeConfig } from "./_mcp_helpers.ts";

function oauthConfig(server: OAuthServer, oauth = ""): string {
  return `mcp_servers:\n  api:\n    url: ${server.mcpUrl}\n    auth: oauth\n${oauth}`;
}

const mode = (path: string) => Deno.statSync(path).mode! & 0o777;

/** `agent mcp login api` in `home`, the browser following the redirect; it must succeed. */
async function logIn(home: string, browser: ReturnType<typeof testBrowser>): Promise<void> {
  const login = await cli(home, ["mcp", "login", "api"], { openBrowser: browser.open });
  await browser.settled();
  assert.equal(login.code, 0, login.stderr);
}

/**
 * After a login with the document, the authorization server refuses it at the next token
 * refresh, which `agent mcp test api` meets (exit 1) and records; returns that run and the record.
 */
async function refusedAtRefresh(home: string, server: OAuthServer) {
  server.options.rejectDocument = true;
  server.expireAccessTokens();
  const refusing = await cli(home, ["mcp", "test", "api"]);
  assert.equal(refusing.code, 1, refusing.stderr);
  const record = join(home, "mcp-tokens", "api.cimd-off");
  Deno.statSync(record);
  return { refusing, record };
}

Deno.test("agent mcp login --json: authorizes in the browser, stores 0600 tokens, connects once", async () => {
  await using h = await tempHome();
  await using server = startOAuthServer({ cimdSupported: true });
  const browser = testBrowser();
  writeConfig(h.home, oauthConfig(server));
  const result = await cli(h.home, ["mcp", "login", "api", "--json"], {
    openBrowser: browser.open,
  });
  await browser.settled();
  assert.equal(result.code, 0, result.stderr);
  const document = JSON.parse(result.stdout);
  const tokens = join(h.home, "mcp-tokens", "api.json");
  assert.deepEqual(
    { ...document, redirect_uri: undefined },
    {
      server: "api",
      logged_in: true,
      client: "cimd",
      redirect_uri: undefined,
      pinned_port: true,
      cimd_rejected: false,
      authorizations: 1,
      tokens_file: tokens,
      status: "connected",
      tools: 2,
      warnings: [],
    },
  );
  assert.match(document.redirect_uri, /^http:\/\/127\.0\.0\.1:2789[0-4]\/callback$/);
  assert.equal(browser.visits.length, 1);
  assert.ok(result.stderr.includes(browser.visits[0].url), "the URL is always printed");
  assert.equal(mode(join(h.home, "mcp-tokens")), 0o700);
  for (const file of ["api.json", "api.client.json", "api.meta.json"]) {
    assert.equal(mode(join(h.home, "mcp-tokens", file)), 0o600, file);
  }
  assert.equal(typeof JSON.parse(Deno.readTextFileSync(tokens)).expires_at, "number");

  // Later commands use the stored tokens, without a browser.
  const tools = await cliJson(h.home, ["mcp", "tools", "api", "--json"]);
  assert.deepEqual(tools.tools.map((tool: { name: string }) => tool.name).sort(), [
    "mcp__api__add",
    "mcp__api__echo",
  ]);
  assert.equal(browser.visits.length, 1);
});

Deno.test("agent mcp login: the entry's config warnings and the connection's (a tools.include entry that matches none) are in --json's warnings, as in mcp test, and on stderr once, with --json too", async () => {
  await using h = await tempHome();
  await using server = startOAuthServer({ cimdSupported: true });
  const browser = testBrowser();
  writeConfig(
    h.home,
    oauthConfig(server, "    timout: 30\n    tools:\n      include: [echo, nosuch]\n"),
  );
  const unmatched = "MCP server 'api': mcp_servers.api.tools.include entry 'nosuch' matches " +
    "none of the server's tools (names are case-sensitive)";
  const once = (result: { stderr: string }, warning: string, label: string) =>
    assert.equal(result.stderr.split(`warning: ${warning}\n`).length - 1, 1, label);
  const json = await cli(h.home, ["mcp", "login", "api", "--json"], { openBrowser: browser.open });
  await browser.settled();
  assert.equal(json.code, 0, json.stderr);
  const document = JSON.parse(json.stdout);
  assert.equal(document.tools, 1);
  assert.equal(document.warnings.length, 2, document.warnings);
  assert.match(document.warnings[0], /mcp_servers\.api\.timout: .*did you mean `timeout`/);
  assert.equal(document.warnings[1], unmatched);
  const test = await cli(h.home, ["mcp", "test", "api", "--json"]);
  assert.equal(test.code, 0, test.stderr);
  assert.deepEqual(JSON.parse(test.stdout).warnings, document.warnings, "as mcp test --json");

  const text = await cli(h.home, ["mcp", "login", "api"], { openBrowser: browser.open });
  await browser.settled();
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /Connected: 1 tool\.\n$/);
  for (const warning of document.warnings) {
    for (const [label, result] of Object.entries({ json, test, text })) {
      once(result, warning, `${label}: ${warning}\n--- stderr ---\n${result.stderr}`);
    }
  }
});

Deno.test("agent mcp login clears a recorded cimd-off, so the document is tried again", async () => {
  await using h = await tempHome();
  await using server = startOAuthServer({ cimdSupported: true });
  const browser = testBrowser();
  const file = writeConfig(h.home, `${oauthConfig(server)}    timout: 5\n`);
  const tokens = join(h.home, "mcp-tokens");
  Deno.mkdirSync(tokens, { recursive: true, mode: 0o700 });
  Deno.writeTextFileSync(join(tokens, "api.cimd-off"), "");
  Deno.writeTextFileSync(join(tokens, "api.client.json"), '{"client_id":"dcr-stale"}');
  const result = await cli(h.home, ["mcp", "login", "api"], { openBrowser: browser.open });
  await browser.settled();
  assert.equal(result.code, 0, result.stderr);
  assert.equal(
    result.stdout,
    `MCP server 'api': logged in with the client metadata document ${DEFAULT_CLIENT_METADATA_URL}; ` +
      `tokens are in ${join(tokens, "api.json")}.\nConnected: 2 tools.\n`,
  );
  assert.throws(() => Deno.statSync(join(tokens, "api.cimd-off")), Deno.errors.NotFound);
  assert.equal(server.authorizations[0].clientId, DEFAULT_CLIENT_METADATA_URL);
  // The entry's config warnings, as `mcp test` says them.
  const typo = `warning: ${file}:5: mcp_servers.api.timout: unknown key \`timout\` is ignored; ` +
    "did you mean `timeout`?\n";
  assert.equal(result.stderr.split(typo).length - 1, 1, result.stderr);
});

Deno.test("agent mcp login: a refused document is recorded, reported, and DCR finishes the login; the next login presents it again", async () => {
  await using h = await tempHome();
  await using server = startOAuthServer({ cimdSupported: true, rejectDocument: true });
  const browser = testBrowser();
  const file = writeConfig(h.home, `modle: x\n${oauthConfig(server)}    timout: 5\n`);
  const result = await cli(h.home, ["mcp", "login", "api", "--json"], {
    openBrowser: browser.open,
  });
  await browser.settled();
  assert.equal(result.code, 0, result.stderr);
  const document = JSON.parse(result.stdout);
  assert.equal(document.client, "dcr");
  assert.equal(document.cimd_rejected, true);
  assert.equal(document.pinned_port, false);
  assert.equal(document.status, "connected");
  const tokens = join(h.home, "mcp-tokens");
  const refused = `MCP server 'api': the authorization server refused the client metadata ` +
    `document ${DEFAULT_CLIENT_METADATA_URL} (invalid_client); recorded in ` +
    `${join(tokens, "api.cimd-off")}. Dynamic client registration is used for this server ` +
    "until `agent mcp login api` clears the record.";
  const fileWarning = `${file}:1: modle: unknown key \`modle\` is ignored; did you mean \`model\`?`;
  // The config file's first (on stderr once), then the entry's, then the login's (stderr once).
  assert.deepEqual(document.warnings, [
    fileWarning,
    `${file}:6: mcp_servers.api.timout: unknown key \`timout\` is ignored; did you mean \`timeout\`?`,
    refused,
  ]);
  for (const warning of [fileWarning, refused]) {
    assert.equal(result.stderr.split(`warning: ${warning}\n`).length - 1, 1, result.stderr);
  }
  Deno.statSync(join(tokens, "api.cimd-off"));

  // Once the document is fixed, the next login presents it again, on a pinned port.
  server.options.rejectDocument = false;
  const again = await cliJson(h.home, ["mcp", "login", "api", "--json"], 0, {
    openBrowser: browser.open,
  });
  await browser.settled();
  assert.equal(again.client, "cimd");
  assert.equal(again.pinned_port, true);
  assert.match(again.redirect_uri, /^http:\/\/127\.0\.0\.1:2789[0-4]\/callback$/);
  assert.equal(again.cimd_rejected, false);
  assert.equal(server.authorizations.at(-1)?.clientId, DEFAULT_CLIENT_METADATA_URL);
  assert.throws(() => Deno.statSync(join(tokens, "api.cimd-off")), Deno.errors.NotFound);
});

Deno.test("agent mcp login again, to a server without client metadata documents: a random port, not 27890-27894", async () => {
  await using h = await tempHome();
  await using server = startOAuthServer({ cimdSupported: false });
  const browser = testBrowser();
  writeConfig(h.home, oauthConfig(server));
  const login = () =>
    cliJson(h.home, ["mcp", "login", "api", "--json"], 0, { openBrowser: browser.open });
  const first = await login();
  await browser.settled();
  assert.equal(first.client, "dcr");
  const again = await login();
  await browser.settled();
  assert.equal(again.client, "dcr");
  assert.equal(again.pinned_port, false);
  assert.equal(
    again.pinning_obstacle,
    "the cached authorization-server metadata does not advertise client metadata documents",
  );
  const port = Number(new URL(again.redirect_uri).port);
  assert.ok(port < 27890 || port > 27894, again.redirect_uri);
  assert.deepEqual(server.registrations.at(-1)?.redirectUris, [again.redirect_uri]);
});

Deno.test("agent mcp test of an OAuth server that is not logged in names agent mcp login", async () => {
  await using h = await tempHome();
  await using server = startOAuthServer({ cimdSupported: true });
  writeConfig(h.home, oauthConfig(server));
  const result = await cli(h.home, ["mcp", "test", "api"]);
  assert.equal(result.code, 1);
  assert.match(result.stderr, /MCP server 'api': not logged in .*; run `agent mcp login api`/);
  assert.deepEqual(server.registrations, []);
  assert.deepEqual(server.authorizations, []);
});

Deno.test("agent mcp login of a server without auth: oauth is a usage error", async () => {
  await using h = await tempHome();
  writeConfig(h.home, "mcp_servers:\n  plain:\n    url: http://127.0.0.1:9/mcp\n");
  const result = await cli(h.home, ["mcp", "login", "plain"]);
  assert.equal(result.code, 2);
  assert.match(result.stderr, /MCP server 'plain' does not use OAuth; add `auth: oauth`/);
});

Deno.test("agent mcp login reports a login that did not finish (exit 1)", async () => {
  await using h = await tempHome();
  await using server = startOAuthServer({ cimdSupported: false });
  writeConfig(h.home, oauthConfig(server));
  // The user denies access: the authorization server redirects back with an error.
  const visits: Promise<unknown>[] = [];
  const result = await cli(h.home, ["mcp", "login", "api"], {
    openBrowser: (url) => {
      const target = new URL(url);
      const back = new URL(target.searchParams.get("redirect_uri")!);
      back.searchParams.set("error", "access_denied");
      back.searchParams.set("state", target.searchParams.get("state")!);
      visits.push(fetch(back).then((response) => response.body?.cancel()));
    },
  });
  await Promise.all(visits);
  assert.equal(result.code, 1);
  assert.match(result.stderr, /MCP server 'api': .*access_denied/);
  assert.equal(result.stdout, "");
});

Deno.test("mcp list, test and tools --json: a document refused at refresh is in warnings, and on stderr once", async () => {
  await using h = await tempHome();
  await using server = startOAuthServer({ cimdSupported: true });
  const browser = testBrowser();
  writeConfig(h.home, oauthConfig(server));
  await logIn(h.home, browser);
  // Each command starts from the logged-in records: the refusal discards them.
  const tokens = join(h.home, "mcp-tokens");
  const records = ["api.json", "api.client.json", "api.meta.json"].map((file) => {
    const path = join(tokens, file);
    return { path, text: Deno.readTextFileSync(path) };
  });
  server.options.rejectDocument = true;
  const refused = `MCP server 'api': the authorization server refused the client metadata ` +
    `document ${DEFAULT_CLIENT_METADATA_URL} (invalid_client); recorded in ` +
    `${join(tokens, "api.cimd-off")}. Dynamic client registration is used for this server ` +
    "until `agent mcp login api` clears the record.";
  for (const [argv, code] of [[["list"], 0], [["test", "api"], 1], [["tools"], 0]] as const) {
    for (const { path, text } of records) Deno.writeTextFileSync(path, text);
    server.expireAccessTokens();
    const result = await cli(h.home, ["mcp", ...argv, "--json"]);
    const label = `agent mcp ${argv.join(" ")} --json`;
    assert.equal(result.code, code, `${label}\n${result.stdout}\n${result.stderr}`);
    const warnings = JSON.parse(result.stdout).warnings as string[];
    assert.deepEqual(warnings.filter((w) => w.includes("client metadata")), [refused], label);
    assert.equal(result.stderr.split(`warning: ${refused}\n`).length - 1, 1, label);
    Deno.removeSync(join(tokens, "api.cimd-off")); // recorded, as the warning says
  }
});

Deno.test("mcp test after a recorded refusal of the document names it and the way out, not only that no client is stored", async () => {
  await using h = await tempHome();
  await using server = startOAuthServer({ cimdSupported: true });
  const browser = testBrowser();
  const config = writeConfig(h.home, oauthConfig(server));
  await logIn(h.home, browser);
  const { refusing, record } = await refusedAtRefresh(h.home, server);
  const error = "MCP server 'api': not logged in, as the authorization server refused the client " +
    `metadata document ${DEFAULT_CLIENT_METADATA_URL} (invalid_client; recorded in ${record}) ` +
    "and no OAuth client is stored. A new login tries the document again, then registers the " +
    `client dynamically (set mcp_servers.api.oauth.cimd to false in ${config} to register ` +
    "dynamically at once); run `agent mcp login api`";
  assert.equal(refusing.stderr.split("\n").at(-2), error, "the run that met the refusal");

  // A later run knows it from the record (before: "not logged in (no OAuth client is stored)").
  const later = await cli(h.home, ["mcp", "test", "api"]);
  assert.equal(later.code, 1);
  assert.equal(later.stderr, `${error}\n`);
  const json = await cliJson(h.home, ["mcp", "test", "api", "--json"], 1);
  assert.equal(json.error, error);

  // With cimd: false the record no longer matters: no client is stored, that is all.
  writeConfig(h.home, oauthConfig(server, "    oauth:\n      cimd: false\n"));
  const dcr = await cli(h.home, ["mcp", "test", "api"]);
  assert.equal(
    dcr.stderr,
    "MCP server 'api': not logged in (no OAuth client is stored); run `agent mcp login api`\n",
  );
});

Deno.test("mcp test after a recorded refusal, once the authorization server no longer advertises documents: a new login registers dynamically, and the error says so", async () => {
  await using h = await tempHome();
  await using server = startOAuthServer({ cimdSupported: true });
  const browser = testBrowser();
  writeConfig(h.home, oauthConfig(server));
  await logIn(h.home, browser);
  const { record } = await refusedAtRefresh(h.home, server);

  // The authorization server stops advertising client metadata documents; the next run discovers
  // its metadata anew (no cache) and caches that.
  server.options.cimdSupported = false;
  Deno.removeSync(join(h.home, "mcp-tokens", "api.meta.json"));
  const later = await cli(h.home, ["mcp", "test", "api"]);
  assert.equal(later.code, 1);
  // Before: "A new login tries the document again, then registers the client dynamically …".
  assert.equal(
    later.stderr,
    "MCP server 'api': not logged in, as the authorization server refused the client metadata " +
      `document ${DEFAULT_CLIENT_METADATA_URL} (invalid_client; recorded in ${record}) and no ` +
      "OAuth client is stored. A new login registers the client dynamically, as the cached " +
      "authorization-server metadata does not advertise client metadata documents; run " +
      "`agent mcp login api`\n",
  );
  assert.equal(
    JSON.parse(Deno.readTextFileSync(join(h.home, "mcp-tokens", "api.meta.json")))
      .authorizationServerMetadata.client_id_metadata_document_supported,
    false,
  );

  // And so it does.
  const again = await cli(h.home, ["mcp", "login", "api", "--json"], {
    openBrowser: browser.open,
  });
  await browser.settled();
  assert.equal(again.code, 0, again.stderr);
  const answer = JSON.parse(again.stdout);
  assert.deepEqual([answer.client, answer.pinned_port], ["dcr", false]);
  assert.equal(server.registrations.length, 1);
});
