/**
 * OAuth end to end against the local authorization server and protected MCP resource of
 * `tests/fixtures/oauth_server.ts`: the client metadata document accepted and refused, the
 * pinned and random callback ports, refresh (success and failure, interactive or not), tokens
 * across a restart, the login timeout, and `oauth.user_agent`.
 *
 * Every test uses five "pinned" ports of its own (see `testPins`), so test files running in
 * parallel never compete for 27890–27894; the document the fixture "fetches" declares exactly
 * those ports.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { McpServerConfig } from "../../../src/mcp/config.ts";
import { McpManager } from "../../../src/mcp/manager.ts";
import {
  DEFAULT_CLIENT_METADATA_URL,
  loginMcpServer,
  type LoginOptions,
  OAuthStore,
  openAuthorizedSession,
  storedOAuth,
} from "../../../src/mcp/oauth/mod.ts";
import { McpServerError } from "../../../src/mcp/errors.ts";
import { type OAuthServer, startOAuthServer, testBrowser } from "../../fixtures/oauth_server.ts";
import { serverEntry } from "../_helpers.ts";
import { CLIENT, freePorts, oauthServer, testPins } from "./_helpers.ts";

interface Setup extends AsyncDisposable {
  server: OAuthServer;
  tokenDir: string;
  pins: ReturnType<typeof testPins>;
  browser: ReturnType<typeof testBrowser>;
  printed: string[];
  warnings: string[];
  options(extra?: Partial<LoginOptions>): LoginOptions;
  store(name?: string): OAuthStore;
}

async function setup(fixture: Parameters<typeof startOAuthServer>[0] = {}): Promise<Setup> {
  const pins = testPins();
  const server = startOAuthServer({ documentRedirectUris: pins.documentUris, ...fixture });
  const root = await Deno.makeTempDir({ prefix: "agent-oauth-flow-" });
  const tokenDir = join(root, "mcp-tokens");
  const browser = testBrowser();
  const printed: string[] = [];
  const warnings: string[] = [];
  return {
    server,
    tokenDir,
    pins,
    browser,
    printed,
    warnings,
    options: (extra = {}) => ({
      ...CLIENT,
      tokenDir,
      print: (text) => printed.push(text),
      openBrowser: browser.open,
      ports: pins.pool,
      onWarning: (message) => warnings.push(message),
      ...extra,
    }),
    store: (name = "api") => new OAuthStore(tokenDir, name),
    [Symbol.asyncDispose]: async () => {
      await browser.settled();
      await server.close();
      await Deno.remove(root, { recursive: true });
    },
  };
}

function manager(tokenDir: string, warnings: string[] = []): McpManager {
  return new McpManager({
    reconnect: false,
    ...CLIENT,
    oauth: storedOAuth(tokenDir, { onWarning: (_, message) => warnings.push(message) }),
  });
}

/** Starts a manager (as the gateway does) on the stored records; the server must connect. */
async function assertConnects(tokenDir: string, config: McpServerConfig): Promise<void> {
  const gateway = manager(tokenDir);
  try {
    await gateway.start([config]);
    assert.equal(gateway.servers()[0].status, "connected", gateway.servers()[0].error);
  } finally {
    await gateway.shutdown();
  }
}

function portOf(uri: string): number {
  return Number(new URL(uri).port);
}

Deno.test("CIMD accepted: the document URL is the client_id, on a pinned port, no registration", async () => {
  await using t = await setup({ cimdSupported: true });
  const config = oauthServer("api", t.server.mcpUrl);
  const outcome = await loginMcpServer(config, t.options());
  assert.equal(outcome.client, "cimd");
  assert.equal(outcome.pinned, true);
  assert.equal(outcome.redirectUri, `http://127.0.0.1:${t.pins.ports[0]}/callback`);
  assert.equal(outcome.authorizations, 1);
  assert.equal(outcome.toolCount, 2);
  assert.equal(outcome.loggedIn, true);
  assert.deepEqual(t.server.registrations, [], "no dynamic client registration");
  assert.deepEqual(
    t.server.authorizations.map((a) => [a.clientId, a.redirected]),
    [[DEFAULT_CLIENT_METADATA_URL, true]],
  );
  assert.equal(t.store().readClient()?.client_id, DEFAULT_CLIENT_METADATA_URL);
  assert.ok(t.store().readTokens()?.refresh_token);
  assert.ok(t.store().readDiscovery()?.authorizationServerMetadata, "metadata cached");
  assert.deepEqual(t.pins.pool.held(), [], "the port is released after the redirect");
  assert.equal(t.browser.visits.length, 1);
  assert.match(
    t.printed.join(""),
    new RegExp(`Open this URL.*\\n\\n  http://127\\.0\\.0\\.1:`, "s"),
  );
  assert.match(t.printed.join(""), /Waiting up to 5 minutes/);
});

Deno.test("CIMD refused with invalid_client: <server>.cimd-off is written and DCR takes over", async () => {
  await using t = await setup({ cimdSupported: true, rejectDocument: true });
  const config = oauthServer("api", t.server.mcpUrl);
  const outcome = await loginMcpServer(config, t.options());
  assert.equal(outcome.cimdRejected, true);
  assert.equal(outcome.client, "dcr");
  assert.equal(outcome.pinned, false, "the second round is not pinned");
  assert.match(outcome.pinningObstacle ?? "", /refused the client metadata document before/);
  assert.ok(!t.pins.ports.includes(portOf(outcome.redirectUri)), "a random port");
  assert.equal(outcome.loggedIn, true);
  assert.equal(t.store().isCimdOff(), true);
  assert.equal(Deno.readTextFileSync(t.store().path("cimdOff")), "");
  assert.deepEqual(
    t.server.tokenRequests.map((request) => [request.clientId, request.status]),
    [[DEFAULT_CLIENT_METADATA_URL, 400], [t.server.registrations[0].clientId, 200]],
  );
  assert.equal(t.browser.visits.length, 2, "the user authorizes once more");
  assert.equal(t.warnings.length, 1);
  assert.match(t.warnings[0], /refused the client metadata document .*invalid_client.*cimd-off/);
  assert.match(t.printed.join(""), /Logging in again with dynamic client registration/);

  // From then on: DCR for this server (a login that does not clear the records).
  t.server.options.rejectDocument = false;
  t.store().remove("tokens", "client");
  const later = await loginMcpServer(config, t.options({ clear: false }));
  assert.equal(later.client, "dcr");
  assert.equal(later.pinned, false);
  assert.equal(t.server.registrations.length, 2);
});

Deno.test("a document refused at refresh (gateway): recorded, logged, and a login is asked for", async () => {
  await using t = await setup({ cimdSupported: true });
  const config = oauthServer("api", t.server.mcpUrl);
  await loginMcpServer(config, t.options());
  t.server.expireAccessTokens();
  t.server.options.rejectDocument = true;
  const warnings: string[] = [];
  const gateway = manager(t.tokenDir, warnings);
  try {
    await gateway.start([config]);
    const [state] = gateway.servers();
    assert.equal(state.status, "failed");
    assert.match(
      state.error ?? "",
      /refused the client metadata document.*run `agent mcp login api`/,
    );
  } finally {
    await gateway.shutdown();
  }
  assert.equal(t.store().isCimdOff(), true);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /invalid_client/);
  assert.equal(t.browser.visits.length, 1, "nobody was asked");
});

Deno.test("a login clears the cimd-off record, so a corrected document gets another attempt", async () => {
  await using t = await setup({ cimdSupported: true });
  const store = t.store();
  store.markCimdOff();
  store.writeClient(
    { client_id: "dcr-old", redirect_uris: ["http://127.0.0.1:1/callback"] } as never,
  );
  store.writeTokens({ access_token: "old", token_type: "Bearer" });
  const outcome = await loginMcpServer(oauthServer("api", t.server.mcpUrl), t.options());
  assert.equal(outcome.client, "cimd");
  assert.equal(outcome.pinned, true);
  assert.equal(store.isCimdOff(), false);
  assert.equal(store.readClient()?.client_id, DEFAULT_CLIENT_METADATA_URL);
});

Deno.test("DCR when the server does not advertise documents; the pinned port is kept for it", async () => {
  await using t = await setup({ cimdSupported: false });
  const outcome = await loginMcpServer(oauthServer("api", t.server.mcpUrl), t.options());
  assert.equal(outcome.client, "dcr");
  assert.equal(outcome.pinned, true, "chosen before the server's capabilities were known");
  assert.deepEqual(t.server.registrations[0].redirectUris, [outcome.redirectUri]);
  assert.equal(t.server.registrations[0].clientName, "agent");
  // Its cached metadata now says: no documents. A later login keeps a random port.
  t.store().remove("tokens", "client");
  const later = await loginMcpServer(
    oauthServer("api", t.server.mcpUrl),
    t.options({ clear: false }),
  );
  assert.equal(later.pinned, false);
  assert.match(later.pinningObstacle ?? "", /does not advertise client metadata documents/);
});

Deno.test("agent mcp login again, server without documents: the cleared metadata still gives a random port", async () => {
  await using t = await setup({ cimdSupported: false });
  const config = oauthServer("api", t.server.mcpUrl);
  const first = await loginMcpServer(config, t.options());
  assert.equal(first.pinned, true, "never reached before");
  const again = await loginMcpServer(config, t.options()); // clears the records, as the CLI does
  assert.equal(again.pinned, false);
  assert.equal(
    again.pinningObstacle,
    "the cached authorization-server metadata does not advertise client metadata documents",
  );
  assert.ok(!t.pins.ports.includes(portOf(again.redirectUri)), again.redirectUri);
  assert.equal(again.client, "dcr");
  assert.deepEqual(t.server.registrations.map((r) => r.redirectUris), [
    [first.redirectUri],
    [again.redirectUri],
  ]);
});

Deno.test("agent mcp login again, server that takes documents: pinned port and the document, even after a registration", async () => {
  await using t = await setup({ cimdSupported: true });
  const config = oauthServer("api", t.server.mcpUrl);
  // The first login found every pinned port busy, so it registered dynamically.
  const others = t.pins.ports.map((port) => Deno.listen({ hostname: "127.0.0.1", port }));
  try {
    assert.equal((await loginMcpServer(config, t.options())).client, "dcr");
  } finally {
    for (const other of others) other.close();
  }
  for (const round of ["after the registration", "after the document"]) {
    const again = await loginMcpServer(config, t.options());
    assert.equal(again.pinned, true, round);
    assert.equal(again.redirectUri, `http://127.0.0.1:${t.pins.ports[0]}/callback`, round);
    assert.equal(again.client, "cimd", round);
    assert.equal(t.server.authorizations.at(-1)?.clientId, DEFAULT_CLIENT_METADATA_URL, round);
  }
  assert.equal(t.server.registrations.length, 1, "only the first login registered");
});

Deno.test("agent mcp login after a refusal: the document is tried again on a pinned port", async () => {
  await using t = await setup({ cimdSupported: true, rejectDocument: true });
  const config = oauthServer("api", t.server.mcpUrl);
  const refused = await loginMcpServer(config, t.options());
  assert.equal(refused.client, "dcr");
  assert.equal(t.store().isCimdOff(), true);
  t.server.options.rejectDocument = false; // the document was fixed
  const again = await loginMcpServer(config, t.options());
  assert.equal(again.pinned, true);
  assert.equal(again.redirectUri, `http://127.0.0.1:${t.pins.ports[0]}/callback`);
  assert.equal(again.client, "cimd");
  assert.equal(again.cimdRejected, false);
  assert.equal(t.store().isCimdOff(), false);
  assert.deepEqual(t.server.tokenRequests.map((r) => [r.clientId, r.status]), [
    [DEFAULT_CLIENT_METADATA_URL, 400],
    [t.server.registrations[0].clientId, 200],
    [DEFAULT_CLIENT_METADATA_URL, 200],
  ]);
});

Deno.test("agent mcp login with a dynamic registration but no cached metadata: random port", async () => {
  await using t = await setup({ cimdSupported: true });
  t.store().writeClient(
    { client_id: "dcr-old", redirect_uris: ["http://127.0.0.1:1/callback"] } as never,
  );
  const outcome = await loginMcpServer(oauthServer("api", t.server.mcpUrl), t.options());
  assert.equal(outcome.pinned, false);
  assert.match(outcome.pinningObstacle ?? "", /dynamically registered client was stored/);
  assert.ok(!t.pins.ports.includes(portOf(outcome.redirectUri)), outcome.redirectUri);
  assert.equal(outcome.client, "dcr");
  assert.notEqual(t.store().readClient()?.client_id, "dcr-old", "a new registration");
});

Deno.test("all five pinned ports held by other sockets: random port and DCR", async () => {
  await using t = await setup({ cimdSupported: true });
  const others = t.pins.ports.map((port) => Deno.listen({ hostname: "127.0.0.1", port }));
  try {
    const outcome = await loginMcpServer(oauthServer("api", t.server.mcpUrl), t.options());
    assert.equal(outcome.pinned, false);
    assert.match(outcome.pinningObstacle ?? "", /all pinned callback ports .* are in use/);
    assert.ok(!t.pins.ports.includes(portOf(outcome.redirectUri)));
    assert.equal(outcome.client, "dcr", "the document is not presented on a random port");
    assert.ok(
      t.server.authorizations.every((a) => a.clientId !== DEFAULT_CLIENT_METADATA_URL),
    );
  } finally {
    for (const other of others) other.close();
  }
});

Deno.test("concurrent logins in one process get different pinned ports", async () => {
  await using t = await setup({ cimdSupported: true });
  const [a, b] = await Promise.all([
    loginMcpServer(oauthServer("a", t.server.mcpUrl), t.options()),
    loginMcpServer(oauthServer("b", t.server.mcpUrl), t.options()),
  ]);
  assert.ok(a.pinned && b.pinned);
  assert.notEqual(portOf(a.redirectUri), portOf(b.redirectUri));
  assert.deepEqual(
    [portOf(a.redirectUri), portOf(b.redirectUri)].sort(),
    t.pins.ports.slice(0, 2).sort(),
  );
  assert.equal(a.client, "cimd");
  assert.equal(b.client, "cimd");
});

Deno.test("each ineligibility condition gives a random port (and DCR)", async () => {
  const [fixedPort, uriPort] = freePorts(2);
  const cases: [string, Record<string, unknown>, Partial<LoginOptions>, RegExp][] = [
    ["cimd: false", { cimd: false }, {}, /cimd: false/],
    [
      "an invalid client_metadata_url",
      { client_metadata_url: "http://example.com/client.json" },
      {},
      /client_metadata_url must use https/,
    ],
    ["client_name", { client_name: "My agent" }, {}, /client_name/],
    [
      "token_endpoint_auth_method",
      { token_endpoint_auth_method: "client_secret_post" },
      {},
      /token_endpoint_auth_method/,
    ],
    ["redirect_port", { redirect_port: fixedPort }, {}, /redirect_port/],
    [
      "redirect_uri",
      { redirect_uri: `http://127.0.0.1:${uriPort}/oauth/done` },
      {},
      /redirect_uri/,
    ],
    ["a dashboard-driven login", {}, { driver: "dashboard" }, /dashboard/],
    ["a desktop-driven login", {}, { driver: "desktop" }, /desktop/],
  ];
  for (const [condition, oauth, extra, reason] of cases) {
    await using t = await setup({ cimdSupported: true });
    const outcome = await loginMcpServer(
      oauthServer("api", t.server.mcpUrl, oauth),
      t.options(extra),
    );
    assert.equal(outcome.pinned, false, condition);
    assert.match(outcome.pinningObstacle ?? "", reason, condition);
    assert.ok(!t.pins.ports.includes(portOf(outcome.redirectUri)), condition);
    assert.equal(outcome.client, "dcr", condition);
    assert.equal(outcome.loggedIn, true, condition);
    assert.deepEqual(t.pins.pool.held(), [], condition);
  }
});

Deno.test("redirect_port and redirect_uri fix the callback; client_name is registered", async () => {
  const [port] = freePorts(1);
  await using t = await setup({ cimdSupported: true });
  const outcome = await loginMcpServer(
    oauthServer("api", t.server.mcpUrl, {
      redirect_uri: `http://localhost:${port}/oauth/done`,
      client_name: "My agent",
    }),
    t.options(),
  );
  assert.equal(outcome.redirectUri, `http://localhost:${port}/oauth/done`);
  assert.deepEqual(t.server.registrations[0].redirectUris, [`http://localhost:${port}/oauth/done`]);
  assert.equal(t.server.registrations[0].clientName, "My agent");
});

Deno.test("a pre-registered client (client_id + client_secret) is used as is, on a random port", async () => {
  const [port] = freePorts(1);
  await using t = await setup({
    cimdSupported: true,
    clients: [{
      client_id: "pre-registered",
      client_secret: "s3cret",
      redirect_uris: [`http://127.0.0.1:${port}/callback`],
    }],
  });
  const outcome = await loginMcpServer(
    oauthServer("api", t.server.mcpUrl, {
      client_id: "pre-registered",
      client_secret: "s3cret",
      redirect_port: port,
    }),
    t.options(),
  );
  assert.equal(outcome.client, "pre_registered");
  assert.equal(outcome.pinned, false);
  assert.match(outcome.pinningObstacle ?? "", /client_id/);
  assert.deepEqual(t.server.registrations, []);
  assert.deepEqual(t.server.tokenRequests.map((r) => [r.clientId, r.status]), [[
    "pre-registered",
    200,
  ]]);
});

Deno.test("a stored client registration keeps its registered port (not pinned)", async () => {
  await using t = await setup({ cimdSupported: false });
  const config = oauthServer("api", t.server.mcpUrl, { cimd: false });
  const first = await loginMcpServer(config, t.options());
  t.store().remove("tokens");
  const again = await loginMcpServer(
    oauthServer("api", t.server.mcpUrl),
    t.options({ clear: false }),
  );
  assert.equal(again.pinned, false);
  assert.match(again.pinningObstacle ?? "", /client registration is stored/);
  assert.equal(
    again.redirectUri,
    first.redirectUri,
    "the registration is bound to its redirect URI",
  );
  assert.equal(t.server.registrations.length, 1, "no new registration");
});

Deno.test("tokens persist across a restart: a new manager on the same home connects and calls", async () => {
  await using t = await setup({ cimdSupported: true });
  const config = oauthServer("api", t.server.mcpUrl);
  await loginMcpServer(config, t.options());
  const tokenRequests = t.server.tokenRequests.length;
  const restarted = manager(t.tokenDir);
  try {
    await restarted.start([config]);
    assert.equal(restarted.servers()[0].status, "connected", restarted.servers()[0].error);
    const result = await restarted.callTool("mcp__api__echo", { message: "hi" });
    assert.deepEqual(result.content, [{ type: "text", text: "Echo: hi" }]);
  } finally {
    await restarted.shutdown();
  }
  assert.equal(t.server.tokenRequests.length, tokenRequests, "no token request was needed");
  assert.equal(t.browser.visits.length, 1, "no browser");
});

Deno.test("an expired token is refreshed without the user; the new tokens are stored", async () => {
  await using t = await setup({ cimdSupported: true, accessTokenTtl: 60 });
  const config = oauthServer("api", t.server.mcpUrl);
  await loginMcpServer(config, t.options());
  const before = t.store().readTokens()!;
  t.server.expireAccessTokens();
  const wellKnown = t.server.requests.filter((r) => r.path.startsWith("/.well-known")).length;
  const restarted = manager(t.tokenDir);
  try {
    await restarted.start([config]);
    assert.equal(restarted.servers()[0].status, "connected", restarted.servers()[0].error);
  } finally {
    await restarted.shutdown();
  }
  const after = t.store().readTokens()!;
  assert.notEqual(after.access_token, before.access_token);
  assert.notEqual(after.refresh_token, before.refresh_token, "the rotated refresh token is kept");
  assert.deepEqual(t.server.tokenRequests.map((r) => r.grantType), [
    "authorization_code",
    "refresh_token",
  ]);
  assert.equal(t.browser.visits.length, 1, "the user was not asked");
  assert.equal(t.server.authorizations.length, 1);
  assert.equal(
    t.server.requests.filter((r) => r.path.startsWith("/.well-known")).length,
    wellKnown,
    "the cached discovery state served the refresh after the restart",
  );
  assert.ok(t.store().tokenExpiry()! > Date.now());
});

Deno.test("a failed refresh in a non-interactive connect: tokens cleared, error names agent mcp login", async () => {
  await using t = await setup({ cimdSupported: true });
  const config = oauthServer("api", t.server.mcpUrl);
  await loginMcpServer(config, t.options());
  t.server.expireAccessTokens();
  t.server.revokeRefreshTokens();
  const gateway = manager(t.tokenDir);
  try {
    await gateway.start([config]);
    const [state] = gateway.servers();
    assert.equal(state.status, "failed");
    assert.match(state.error ?? "", /^MCP server 'api': the OAuth token refresh failed/);
    assert.match(state.error ?? "", /run `agent mcp login api`/);
  } finally {
    await gateway.shutdown();
  }
  assert.equal(t.store().readTokens(), undefined, "the refused tokens are gone");
  assert.equal(t.browser.visits.length, 1, "nobody was asked: no browser, no wait");
  assert.equal(t.server.authorizations.length, 1);
});

Deno.test("a failed refresh in a login asks the user again (re-authorization)", async () => {
  await using t = await setup({ cimdSupported: true });
  const config = oauthServer("api", t.server.mcpUrl);
  await loginMcpServer(config, t.options());
  t.server.expireAccessTokens();
  t.server.revokeRefreshTokens();
  const outcome = await loginMcpServer(config, t.options({ clear: false }));
  assert.equal(outcome.authorizations, 1, "the browser was opened again");
  assert.equal(outcome.client, "cimd");
  assert.deepEqual(t.server.tokenRequests.map((r) => [r.grantType, r.status]), [
    ["authorization_code", 200],
    ["refresh_token", 400],
    ["authorization_code", 200],
  ]);
  assert.equal(t.browser.visits.length, 2);
});

Deno.test("a connect not started by a login never blocks: no tokens means a clear error", async () => {
  await using t = await setup({ cimdSupported: true });
  const config = oauthServer("api", t.server.mcpUrl);
  const gateway = manager(t.tokenDir);
  const started = performance.now();
  try {
    await gateway.start([config]);
    const [state] = gateway.servers();
    assert.equal(state.status, "failed");
    assert.equal(
      state.error,
      "MCP server 'api': not logged in (no OAuth client is stored); run `agent mcp login api`",
    );
  } finally {
    await gateway.shutdown();
  }
  assert.ok(performance.now() - started < 5_000);
  assert.deepEqual(t.server.registrations, [], "nothing was registered behind the user's back");
  assert.deepEqual(t.server.authorizations, []);
  assert.deepEqual(t.browser.visits, []);
});

Deno.test("a parked server (reconnecting manager) says agent mcp login is needed", async () => {
  await using t = await setup({ cimdSupported: true });
  const gateway = new McpManager({ ...CLIENT, oauth: storedOAuth(t.tokenDir) });
  try {
    await gateway.start([oauthServer("api", t.server.mcpUrl)]);
    const [state] = gateway.servers();
    assert.equal(state.status, "parked", "an auth failure parks at once");
    assert.match(state.error ?? "", /agent mcp login api/);
  } finally {
    await gateway.shutdown();
  }
});

Deno.test("the login timeout names the document and points at cimd: false", async () => {
  await using t = await setup({ cimdSupported: true, documentUnfetchable: true });
  const waits: number[] = [];
  const config = oauthServer("api", t.server.mcpUrl);
  const error = await loginMcpServer(
    config,
    t.options({
      // The five minutes pass once the browser has seen the invalid-client page.
      wait: (ms) => {
        waits.push(ms);
        return t.browser.settled();
      },
    }),
  ).then(() => undefined, (error) => error);
  assert.ok(error instanceof McpServerError, String(error));
  assert.equal(error.kind, "auth");
  assert.deepEqual(waits, [300_000], "five minutes");
  assert.match(error.message, /^MCP server 'api': no authorization arrived within 5 minutes\./);
  assert.ok(error.message.includes(DEFAULT_CLIENT_METADATA_URL), error.message);
  assert.match(error.message, /`cimd: false` under mcp_servers\.api\.oauth/);
  assert.equal(t.browser.visits[0].authorizeStatus, 400, "the browser showed the error");
  assert.equal(t.browser.visits[0].callbackStatus, undefined, "no redirect");
  assert.deepEqual(t.pins.pool.held(), [], "the port is released");
});

Deno.test("the timeout of a DCR login does not mention the document", async () => {
  await using t = await setup({ cimdSupported: false });
  const config = oauthServer("api", t.server.mcpUrl);
  const error = await loginMcpServer(
    config,
    t.options({ openBrowser: () => {}, wait: () => Promise.resolve(), timeoutMs: 90_000 }),
  ).then(() => undefined, (error) => error);
  assert.ok(error instanceof McpServerError);
  assert.match(
    error.message,
    /no authorization arrived within 90 seconds\. Run `agent mcp login api` again/,
  );
  assert.ok(!error.message.includes("cimd"));
});

Deno.test("Ctrl-C cancels the wait for the redirect", async () => {
  await using t = await setup({ cimdSupported: true });
  const cancel = new AbortController();
  const error = await loginMcpServer(
    oauthServer("api", t.server.mcpUrl),
    t.options({
      openBrowser: () => cancel.abort(),
      signal: cancel.signal,
      wait: () => new Promise(() => {}),
    }),
  ).then(() => undefined, (error) => error);
  assert.ok(error instanceof McpServerError);
  assert.match(error.message, /the login was cancelled/);
  assert.deepEqual(t.pins.pool.held(), []);
});

Deno.test("oauth.user_agent is sent on token requests only (exchange and refresh)", async () => {
  await using t = await setup({ cimdSupported: false });
  const config = oauthServer("api", t.server.mcpUrl, { user_agent: "agent-test/9.9" });
  await loginMcpServer(config, t.options());
  t.server.expireAccessTokens();
  const restarted = manager(t.tokenDir);
  try {
    await restarted.start([config]);
    assert.equal(restarted.servers()[0].status, "connected");
  } finally {
    await restarted.shutdown();
  }
  const token = t.server.requests.filter((r) => r.path === "/token");
  assert.deepEqual(token.map((r) => [r.grantType, r.userAgent]), [
    ["authorization_code", "agent-test/9.9"],
    ["refresh_token", "agent-test/9.9"],
  ]);
  const others = t.server.requests.filter((r) => r.path !== "/token");
  assert.ok(others.some((r) => r.path === "/mcp"));
  assert.ok(others.some((r) => r.path.startsWith("/.well-known")));
  assert.ok(others.some((r) => r.path === "/register"));
  for (const request of others) {
    assert.notEqual(request.userAgent, "agent-test/9.9", `${request.method} ${request.path}`);
  }
});

Deno.test("an empty user_agent is ignored", async () => {
  await using t = await setup({ cimdSupported: true });
  await loginMcpServer(oauthServer("api", t.server.mcpUrl, { user_agent: "  " }), t.options());
  const token = t.server.requests.find((r) => r.path === "/token")!;
  assert.ok(token.userAgent && token.userAgent.trim() !== "");
});

Deno.test("the token refused in the middle of a session is refreshed, and the call goes through", async () => {
  await using t = await setup({ cimdSupported: true });
  const config = oauthServer("api", t.server.mcpUrl);
  await loginMcpServer(config, t.options());
  const session = manager(t.tokenDir);
  try {
    await session.start([config]);
    t.server.expireAccessTokens();
    const result = await session.callTool("mcp__api__add", { a: 2, b: 3 });
    assert.deepEqual(result.content, [{ type: "text", text: "5" }]);
  } finally {
    await session.shutdown();
  }
  assert.equal(t.server.tokenRequests.at(-1)?.grantType, "refresh_token");
});

Deno.test("parallel calls after expiry share one refresh (the rotated token is not lost)", async () => {
  await using t = await setup({ cimdSupported: true });
  const config = serverEntry("api", {
    url: t.server.mcpUrl,
    auth: "oauth",
    supports_parallel_tool_calls: true,
  });
  await loginMcpServer(config, t.options());
  const session = manager(t.tokenDir);
  try {
    await session.start([config]);
    t.server.expireAccessTokens();
    const results = await Promise.all(
      [1, 2, 3].map((a) => session.callTool("mcp__api__add", { a, b: 1 })),
    );
    assert.deepEqual(results.map((result) => result.content), [
      [{ type: "text", text: "2" }],
      [{ type: "text", text: "3" }],
      [{ type: "text", text: "4" }],
    ]);
  } finally {
    await session.shutdown();
  }
  const refreshes = t.server.tokenRequests.filter((r) => r.grantType === "refresh_token");
  assert.deepEqual(refreshes.map((r) => r.status), [200]);
  assert.ok(t.store().readTokens(), "the tokens are kept");
});

Deno.test("an authorized session completes a later authorization and retries the step", async () => {
  await using t = await setup({ cimdSupported: true });
  const config: McpServerConfig = oauthServer("api", t.server.mcpUrl);
  const session = await openAuthorizedSession(config, t.options());
  try {
    t.server.expireAccessTokens();
    t.server.revokeRefreshTokens();
    const result = await session.authorized(() =>
      session.connection.client.callTool({ name: "echo", arguments: { message: "again" } })
    );
    assert.deepEqual(result.content, [{ type: "text", text: "Echo: again" }]);
  } finally {
    await session.close();
  }
  assert.equal(t.browser.visits.length, 2);
  assert.deepEqual(t.pins.pool.held(), []);
});

Deno.test("a server without auth: oauth cannot log in", async () => {
  await using t = await setup();
  const config = oauthServer("api", t.server.mcpUrl);
  const plain = { ...config, auth: undefined, oauth: undefined };
  await assert.rejects(
    () => loginMcpServer(plain, t.options()),
    /MCP server 'api': does not use OAuth; add `auth: oauth`/,
  );
});

Deno.test("step-up without a browser (gateway, agent run): the error names the scope and agent mcp login, which then asks for it", async () => {
  await using t = await setup({
    cimdSupported: true,
    scopesSupported: ["read"],
    toolScopes: { add: "write" },
  });
  const config = oauthServer("api", t.server.mcpUrl);
  await loginMcpServer(config, t.options());
  const gateway = manager(t.tokenDir);
  try {
    await gateway.start([config]);
    await assert.rejects(
      () => gateway.callTool("mcp__api__add", { a: 1, b: 2 }),
      (error: Error) => {
        assert.equal(
          error.message,
          `MCP server 'api': the server needs the OAuth scope "write" (403 insufficient_scope), ` +
            "which the stored token does not grant; a new login asks for it; run `agent mcp login api`",
        );
        return true;
      },
    );
    assert.equal(gateway.servers()[0].status, "connected", "the other tools still work");
    const echo = await gateway.callTool("mcp__api__echo", { message: "hi" });
    assert.deepEqual(echo.content, [{ type: "text", text: "Echo: hi" }]);
  } finally {
    await gateway.shutdown();
  }
  assert.ok(t.store().readTokens(), "the tokens are kept");
  assert.equal(t.store().requiredScope(), "read write");
  assert.equal(t.browser.visits.length, 1, "nobody was asked");

  await loginMcpServer(config, t.options());
  assert.deepEqual(t.server.authorizations.map((a) => a.scope), ["read", "read write"]);
  assert.equal(t.store().requiredScope(), undefined, "the login cleared the record");
  const after = manager(t.tokenDir);
  try {
    await after.start([config]);
    const result = await after.callTool("mcp__api__add", { a: 1, b: 2 });
    assert.deepEqual(result.content, [{ type: "text", text: "3" }]);
  } finally {
    await after.shutdown();
  }
});

Deno.test("a recorded required scope survives a refresh until the next login", async () => {
  await using t = await setup({ cimdSupported: true, scopesSupported: ["read"] });
  const config = oauthServer("api", t.server.mcpUrl);
  await loginMcpServer(config, t.options());
  t.store().writeRequiredScope("read write");
  t.server.expireAccessTokens();
  await assertConnects(t.tokenDir, config);
  assert.equal(t.server.tokenRequests.at(-1)?.grantType, "refresh_token");
  assert.equal(t.store().requiredScope(), "read write");
  assert.equal(t.store().readTokens()?.scope, "read");
  assert.equal(
    (t.store().readTokens() as Record<string, unknown>).required_scope,
    undefined,
    "not handed to the SDK as a token field",
  );
});

for (
  const [label, methods, detail] of [
    [
      "no code_challenge_methods_supported",
      null,
      "does not declare PKCE support (no code_challenge_methods_supported in its metadata)",
    ],
    [
      "only plain",
      ["plain"],
      'does not support PKCE S256 (code_challenge_methods_supported: "plain")',
    ],
  ] as const
) {
  Deno.test(`an authorization server with ${label} is refused before any registration or redirect`, async () => {
    await using t = await setup({ cimdSupported: false, codeChallengeMethods: methods });
    const config = oauthServer("api", t.server.mcpUrl);
    await assert.rejects(
      () => loginMcpServer(config, t.options()),
      (error: Error) => {
        assert.equal(
          error.message,
          `MCP server 'api': the authorization server "${t.server.origin}" ${detail}; OAuth for ` +
            "MCP requires PKCE with S256, so no login is attempted. Ask the server's operator to enable it",
        );
        return true;
      },
    );
    assert.deepEqual(t.server.registrations, []);
    assert.deepEqual(t.server.authorizations, []);
    assert.deepEqual(t.browser.visits, []);
    assert.equal(t.store().readDiscovery(), undefined, "nothing cached");
  });
}

Deno.test("discovery variants log in, and every authorize, token and refresh request names the resource", async () => {
  const variants: Parameters<typeof startOAuthServer>[0][] = [
    { resourceMetadataAt: "path" },
    { resourceMetadataAt: "root" },
    { resourceMetadataAt: "header" },
    { authorizationServerPath: "/tenant" },
    { authorizationServerMetadata: "oidc" },
    { authorizationServerPath: "/tenant", authorizationServerMetadata: "oidc" },
  ];
  for (const variant of variants) {
    await using t = await setup({ cimdSupported: true, ...variant });
    const config = oauthServer("api", t.server.mcpUrl);
    const outcome = await loginMcpServer(config, t.options());
    assert.equal(outcome.loggedIn, true, JSON.stringify(variant));
    assert.equal(
      t.store().readDiscovery()?.authorizationServerMetadata?.issuer,
      t.server.authorizationServerUrl,
    );
    t.server.expireAccessTokens();
    await assertConnects(t.tokenDir, config);
    assert.deepEqual(t.server.authorizations.map((a) => a.resource), [t.server.mcpUrl]);
    assert.deepEqual(t.server.tokenRequests.map((r) => [r.grantType, r.resource]), [
      ["authorization_code", t.server.mcpUrl],
      ["refresh_token", t.server.mcpUrl],
    ], JSON.stringify(variant));
  }
});

Deno.test("an issuer that does not match the authorization server, or a resource that is not the server's, is refused", async () => {
  for (
    const [fixture, message] of [
      [{ issuer: "http://127.0.0.1:1" }, /Issuer mismatch in authorization server metadata/],
      [
        { resource: "http://127.0.0.1:1/mcp" },
        /Protected resource http:\/\/127\.0\.0\.1:1\/mcp does not match expected/,
      ],
    ] as const
  ) {
    await using t = await setup({ cimdSupported: true, ...fixture });
    await assert.rejects(
      () => loginMcpServer(oauthServer("api", t.server.mcpUrl), t.options()),
      message,
    );
    assert.deepEqual(t.server.authorizations, []);
    assert.deepEqual(t.server.tokenRequests, []);
  }
});

Deno.test("token records: no expires_in means no expiry; a refresh without a new refresh token keeps the old one", async () => {
  await using t = await setup({
    cimdSupported: true,
    expiresIn: false,
    rotateRefreshTokens: false,
  });
  const config = oauthServer("api", t.server.mcpUrl);
  await loginMcpServer(config, t.options());
  assert.equal(t.store().tokenExpiry(), undefined);
  assert.equal(t.store().readTokens()?.expires_in, undefined);
  const first = t.store().readTokens()!;
  t.server.revokeAccessTokens();
  await assertConnects(t.tokenDir, config);
  const after = t.store().readTokens()!;
  assert.notEqual(after.access_token, first.access_token);
  assert.equal(after.refresh_token, first.refresh_token);
});

Deno.test("a denied authorization says so and stores nothing", async () => {
  await using t = await setup({ cimdSupported: true, denyAuthorization: true });
  await assert.rejects(
    () => loginMcpServer(oauthServer("api", t.server.mcpUrl), t.options()),
    /^McpServerError: MCP server 'api': OAuth failed: "The user denied the request"; run `agent mcp login api`$/,
  );
  assert.equal(t.store().readTokens(), undefined);
  assert.deepEqual(t.server.tokenRequests, []);
});

Deno.test("a refresh answer without a scope keeps the granted scope (a later step-up adds to it)", async () => {
  await using t = await setup({
    cimdSupported: true,
    scopesSupported: ["read"],
    refreshScope: false,
  });
  const config = oauthServer("api", t.server.mcpUrl);
  await loginMcpServer(config, t.options());
  assert.equal(t.store().readTokens()?.scope, "read");
  const before = t.store().readTokens()!;
  t.server.expireAccessTokens();
  await assertConnects(t.tokenDir, config);
  const after = t.store().readTokens()!;
  assert.notEqual(after.access_token, before.access_token, "refreshed");
  assert.equal(after.scope, "read");
});

Deno.test("oauth.redirect_port held by another program: the login says which port and key", async () => {
  await using t = await setup({ cimdSupported: true });
  using other = Deno.listen({ hostname: "127.0.0.1", port: freePorts(1)[0] });
  const port = (other.addr as Deno.NetAddr).port;
  const config = oauthServer("api", t.server.mcpUrl, { redirect_port: port });
  await assert.rejects(
    () => loginMcpServer(config, t.options()),
    (error: Error) => {
      assert.equal(
        error.message,
        `MCP server 'api': the OAuth callback port ${port} (oauth.redirect_port) is in use; ` +
          "close the program using it or choose another port",
      );
      return true;
    },
  );
  assert.deepEqual(t.server.authorizations, []);
});
