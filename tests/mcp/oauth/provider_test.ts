/**
 * The provider's own policies, without a server: the token-request fetch (User-Agent, the
 * cimd-off record), client identity, the non-interactive refusals, and error classification.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  OAuthError,
  OAuthErrorCode,
  parseErrorResponse,
  SdkErrorCode,
  SdkHttpError,
  UnauthorizedError,
} from "@modelcontextprotocol/client";
import type { OAuthSettings } from "../../../src/mcp/config.ts";
import {
  type AuthorizationDriver,
  McpOAuthProvider,
  oauthFailure,
  OAuthLoginRequired,
  OAuthStore,
} from "../../../src/mcp/oauth/mod.ts";
import { waitUntil } from "../../e2e/_gateway.ts";
import { editLockWaiters } from "../../fixtures/edit_lock_holder.ts";

const DOCUMENT = "https://example.com/oauth/client.json";

async function provider(
  settings: Partial<OAuthSettings> = {},
  driver?: AuthorizationDriver,
): Promise<
  { provider: McpOAuthProvider; store: OAuthStore; warnings: string[] } & AsyncDisposable
> {
  const root = await Deno.makeTempDir({ prefix: "agent-oauth-provider-" });
  const store = new OAuthStore(join(root, "mcp-tokens"), "api");
  const warnings: string[] = [];
  return {
    provider: new McpOAuthProvider(
      { name: "api", oauth: { clientMetadataUrl: DOCUMENT, cimd: true, ...settings } },
      store,
      { driver, onWarning: (message) => warnings.push(message) },
    ),
    store,
    warnings,
    [Symbol.asyncDispose]: () => Deno.remove(root, { recursive: true }),
  };
}

/** A base fetch that records what it was given and answers `answer`. */
function recorder(answer: () => Response) {
  const seen: { url: string; headers: Headers }[] = [];
  const fetch = (input: string | URL | Request, init?: RequestInit) => {
    seen.push({ url: String(input), headers: new Headers(init?.headers) });
    return Promise.resolve(answer());
  };
  return { seen, fetch };
}

const tokenBody = (clientId: string) =>
  new URLSearchParams({ grant_type: "authorization_code", code: "c", client_id: clientId });

Deno.test("fetchFor sets oauth.user_agent on token requests only", async () => {
  await using p = await provider({ userAgent: "agent/2.0" });
  const base = recorder(() => Response.json({ access_token: "a", token_type: "Bearer" }));
  const fetch = p.provider.fetchFor(base.fetch);
  await fetch("https://as.example.com/token", { method: "POST", body: tokenBody("c") });
  await fetch("https://as.example.com/.well-known/oauth-authorization-server");
  await fetch("https://as.example.com/register", { method: "POST", body: "{}" });
  await fetch("https://mcp.example.com/mcp", {
    method: "POST",
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
  });
  assert.deepEqual(base.seen.map((request) => request.headers.get("user-agent")), [
    "agent/2.0",
    null,
    null,
    null,
  ]);
});

Deno.test("fetchFor records cimd-off for 400/401 invalid_client answered to the document URL only", async () => {
  const cases: [string, number, string, boolean][] = [
    ["400 invalid_client for the document", 400, DOCUMENT, true],
    ["401 invalid_client for the document", 401, DOCUMENT, true],
    ["500 for the document", 500, DOCUMENT, false],
    ["invalid_client for a registered client", 400, "dcr-1", false],
  ];
  for (const [label, status, clientId, expected] of cases) {
    await using p = await provider();
    const base = recorder(() => Response.json({ error: "invalid_client" }, { status }));
    await p.provider.fetchFor(base.fetch)("https://as.example.com/token", {
      method: "POST",
      body: tokenBody(clientId),
    });
    assert.equal(p.store.isCimdOff(), expected, label);
    assert.equal(p.provider.cimdRejected, expected, label);
    assert.equal(p.warnings.length, expected ? 1 : 0, label);
  }
  await using p = await provider();
  const base = recorder(() => Response.json({ error: "invalid_grant" }, { status: 400 }));
  await p.provider.fetchFor(base.fetch)("https://as.example.com/token", {
    method: "POST",
    body: tokenBody(DOCUMENT),
  });
  assert.equal(p.store.isCimdOff(), false, "another error code");
});

Deno.test("concurrent refreshes with one refresh token reach the token endpoint once", async () => {
  await using p = await provider();
  p.store.writeTokens({ access_token: "a0", token_type: "Bearer", refresh_token: "r1" });
  let calls = 0;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => release = resolve);
  const base = async () => {
    calls++;
    await gate;
    return Response.json({ access_token: `a${calls}`, token_type: "Bearer", refresh_token: "r2" });
  };
  const fetch = p.provider.fetchFor(base);
  const refresh = (token: string) =>
    fetch("https://as.example.com/token", {
      method: "POST",
      body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: token }),
    }).then((response) => response.json());
  const both = Promise.all([refresh("r1"), refresh("r1")]);
  release();
  const [first, second] = await both;
  assert.equal(calls, 1, "the rotated refresh token is not presented twice");
  assert.deepEqual(second, first);
  await refresh("r2");
  assert.equal(calls, 2, "a new refresh token is a new refresh");
});

Deno.test("a refresh is answered with the stored tokens when another process rotated them; its own answer is stored at once", async () => {
  await using p = await provider();
  p.store.writeTokens({ access_token: "a2", token_type: "Bearer", refresh_token: "r2" });
  const base = recorder(() =>
    Response.json({ access_token: "a3", token_type: "Bearer", expires_in: 60, refresh_token: "r3" })
  );
  const fetch = p.provider.fetchFor(base.fetch);
  const refresh = (token: string) =>
    fetch("https://as.example.com/token", {
      method: "POST",
      body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: token }),
    }).then((response) => response.json());
  // r1 was read before another process refreshed it into r2: r1 is not presented (it is used).
  assert.deepEqual(await refresh("r1"), {
    access_token: "a2",
    token_type: "Bearer",
    refresh_token: "r2",
  });
  assert.equal(base.seen.length, 0);
  // r2 is the stored one: refreshed, and the answer stored before the SDK gets it.
  assert.equal((await refresh("r2")).access_token, "a3");
  assert.equal(base.seen.length, 1);
  const { expires_in: _left, ...stored } = p.store.readTokens()!;
  assert.deepEqual(stored, { access_token: "a3", token_type: "Bearer", refresh_token: "r3" });
});

Deno.test("a refresh that finds the tokens removed (a login cleared them) refreshes nothing and writes nothing", async () => {
  await using p = await provider();
  p.store.writeTokens({ access_token: "a1", token_type: "Bearer", refresh_token: "r1" });
  const base = recorder(() =>
    Response.json({ access_token: "a2", token_type: "Bearer", refresh_token: "r2" })
  );
  // r1 was read; then `agent mcp login` in another process cleared the records.
  p.store.clear();
  await assert.rejects(
    p.provider.fetchFor(base.fetch)("https://as.example.com/token", {
      method: "POST",
      body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: "r1" }),
    }),
    OAuthLoginRequired,
  );
  assert.equal(base.seen.length, 0, "the old grant is not refreshed");
  assert.equal(p.store.readTokens(), undefined);
  // What the SDK does next (a new authorization) says why.
  assert.throws(
    () => p.provider.redirectToAuthorization(new URL("https://as.example.com/authorize")),
    /^OAuthLoginRequired: not logged in, as its stored OAuth tokens were removed while they were being refreshed \(by a new login, say\); run `agent mcp login api`/,
  );
});

Deno.test("a refresh that finds a login's tokens (without a refresh token) takes them, not the old grant's", async () => {
  await using p = await provider();
  p.store.writeTokens({ access_token: "login", token_type: "Bearer" });
  const base = recorder(() =>
    Response.json({ access_token: "a2", token_type: "Bearer", refresh_token: "r2" })
  );
  const answer = await p.provider.fetchFor(base.fetch)("https://as.example.com/token", {
    method: "POST",
    body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: "r1" }),
  });
  assert.deepEqual(await answer.json(), { access_token: "login", token_type: "Bearer" });
  assert.equal(base.seen.length, 0);
  assert.equal(p.store.readTokens()?.access_token, "login");
});

Deno.test("saveTokens: a login's tokens are written; without a login only tokens the file still holds", async () => {
  await using p = await provider();
  p.store.writeTokens({ access_token: "a2", token_type: "Bearer", refresh_token: "r2" });
  // The SDK saving a refresh's answer (already stored) or adding the issuer: written.
  await p.provider.saveTokens({
    access_token: "a2",
    token_type: "Bearer",
    refresh_token: "r2",
    issuer: "https://as.example.com",
  });
  assert.equal(p.store.readTokens()?.issuer, "https://as.example.com");
  // A login cleared the file (or replaced the tokens) since: the old grant's stay out.
  p.store.clear();
  await p.provider.saveTokens({ access_token: "a2", token_type: "Bearer", refresh_token: "r2" });
  assert.equal(p.store.readTokens(), undefined);
  p.store.writeTokens({ access_token: "login", token_type: "Bearer", refresh_token: "r9" });
  await p.provider.saveTokens({ access_token: "a2", token_type: "Bearer", refresh_token: "r2" });
  assert.equal(p.store.readTokens()?.access_token, "login");

  const driver: AuthorizationDriver = {
    redirectUrl: "http://127.0.0.1:1/callback",
    clientMetadataUrl: undefined,
    state: () => "s",
    authorize: () => {},
  };
  await using l = await provider({}, driver);
  await l.provider.saveTokens({ access_token: "new", token_type: "Bearer", refresh_token: "r" });
  assert.equal(l.store.readTokens()?.access_token, "new", "a login writes its tokens");
});

Deno.test("a Basic-authenticated token request names its client too", async () => {
  await using p = await provider();
  const base = recorder(() => Response.json({ error: "invalid_client" }, { status: 401 }));
  await p.provider.fetchFor(base.fetch)("https://as.example.com/token", {
    method: "POST",
    headers: { authorization: `Basic ${btoa(`${encodeURIComponent(DOCUMENT)}:x`)}` },
    body: new URLSearchParams({ grant_type: "authorization_code", code: "c" }),
  });
  assert.equal(p.store.isCimdOff(), true);
});

Deno.test("without a login, missing records refuse with the agent mcp login hint", async () => {
  await using p = await provider();
  assert.throws(() => p.provider.clientInformation(), OAuthLoginRequired);
  assert.throws(
    () => p.provider.redirectToAuthorization(new URL("https://as.example.com/authorize")),
    /^OAuthLoginRequired: not logged in \(no OAuth tokens are stored\); run `agent mcp login api`/,
  );
  p.store.writeTokens({ access_token: "a", token_type: "Bearer" });
  assert.throws(
    () => p.provider.redirectToAuthorization(new URL("https://as.example.com/authorize")),
    /stored OAuth tokens were refused and could not be refreshed/,
  );
  await p.provider.invalidateCredentials("tokens");
  assert.equal(p.store.readTokens(), undefined);
  assert.throws(
    () => p.provider.redirectToAuthorization(new URL("https://as.example.com/authorize")),
    /the OAuth token refresh failed/,
  );
  assert.equal(p.provider.clientMetadataUrl, undefined, "no document without a login");
});

Deno.test("a pre-registered client comes from the settings, stamped with the issuer", async () => {
  await using p = await provider({
    clientId: "pre",
    clientSecret: "s",
    tokenEndpointAuthMethod: "client_secret_post",
  });
  assert.deepEqual(p.provider.clientInformation({ issuer: "https://as.example.com" }), {
    client_id: "pre",
    client_secret: "s",
    token_endpoint_auth_method: "client_secret_post",
    issuer: "https://as.example.com",
  });
});

Deno.test("a stored document identity is used only by a login that presents the document", async () => {
  const driver = (clientMetadataUrl: string | undefined): AuthorizationDriver => ({
    redirectUrl: "http://127.0.0.1:1/callback",
    clientMetadataUrl,
    state: () => "s",
    authorize: () => {},
  });
  await using pinned = await provider({}, driver(DOCUMENT));
  pinned.store.writeClient({ client_id: DOCUMENT });
  assert.equal(pinned.provider.clientInformation()?.client_id, DOCUMENT);
  assert.equal(pinned.provider.clientMetadataUrl, DOCUMENT);
  await using random = await provider({}, driver(undefined));
  random.store.writeClient({ client_id: DOCUMENT });
  assert.equal(random.provider.clientInformation(), undefined, "registers instead");
  assert.deepEqual(random.provider.clientMetadata, {
    client_name: "agent",
    redirect_uris: ["http://127.0.0.1:1/callback"],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
  });
});

Deno.test("invalidateCredentials removes the matching records; cimd-off survives", async () => {
  await using p = await provider();
  const fill = () => {
    p.store.writeTokens({ access_token: "a", token_type: "Bearer" });
    p.store.writeClient({ client_id: "c" });
    p.store.writeDiscovery({ authorizationServerUrl: "https://as.example.com" });
    p.store.markCimdOff();
  };
  fill();
  await p.provider.invalidateCredentials("client");
  assert.equal(p.store.readClient(), undefined);
  assert.ok(p.store.readTokens());
  await p.provider.invalidateCredentials("discovery");
  assert.equal(p.store.readDiscovery(), undefined);
  fill();
  await p.provider.invalidateCredentials("all");
  assert.equal(p.store.readTokens(), undefined);
  assert.equal(p.store.readClient(), undefined);
  assert.equal(p.store.readDiscovery(), undefined);
  assert.equal(p.store.isCimdOff(), true);
  p.provider.saveCodeVerifier("v");
  await p.provider.invalidateCredentials("verifier");
  assert.throws(() => p.provider.codeVerifier(), /no PKCE code verifier/);
});

Deno.test("invalidateCredentials waits for the records' lock, then keeps a client and tokens stored in place of the refused ones", async () => {
  await using p = await provider();
  const refuse = async () => {
    // The token endpoint refuses the stored client's refresh (as after a reset on its side).
    const base = recorder(() => Response.json({ error: "invalid_client" }, { status: 401 }));
    const answer = await p.provider.fetchFor(base.fetch)("https://as.example.com/token", {
      method: "POST",
      body: new URLSearchParams({
        grant_type: "refresh_token",
        refresh_token: "r1",
        client_id: "dcr-1",
      }),
    });
    await answer.body?.cancel();
  };
  // What the SDK does on invalid_client (and, for the tokens, on invalid_grant).
  const invalidate = async () => {
    await p.provider.invalidateCredentials("client");
    await p.provider.invalidateCredentials("tokens");
  };
  p.store.writeClient({ client_id: "dcr-1" });
  p.store.writeTokens({ access_token: "a1", token_type: "Bearer", refresh_token: "r1" });
  await refuse();

  // Another process (here another store on the same folder) holds the lock, to log in again.
  const other = new OAuthStore(p.store.dir, "api");
  let holding!: () => void;
  const held = new Promise<void>((resolve) => holding = resolve);
  let done!: () => void;
  const login = other.withLock(async () => {
    holding();
    await new Promise<void>((resolve) => done = resolve);
    other.writeClient({ client_id: "dcr-2" });
    other.writeTokens({ access_token: "a2", token_type: "Bearer", refresh_token: "r2" });
  });
  await held;
  const invalidated = invalidate();
  assert.equal(p.store.readClient()?.client_id, "dcr-1", "nothing is deleted under another's lock");
  await waitUntil(
    () => editLockWaiters(p.store.dir).includes(Deno.pid),
    "invalidateCredentials to wait for the lock",
  );
  assert.equal(p.store.readTokens()?.access_token, "a1");
  done();
  await login;
  await invalidated;
  assert.equal(p.store.readClient()?.client_id, "dcr-2", "the login's client is kept");
  assert.equal(p.store.readTokens()?.access_token, "a2", "the login's tokens are kept");

  // Still the refused ones: deleted, and the next authorization says why.
  p.store.writeClient({ client_id: "dcr-1" });
  p.store.writeTokens({ access_token: "a1", token_type: "Bearer", refresh_token: "r1" });
  await refuse();
  await invalidate();
  assert.equal(p.store.readClient(), undefined);
  assert.equal(p.store.readTokens(), undefined);
  assert.throws(
    () => p.provider.redirectToAuthorization(new URL("https://as.example.com/authorize")),
    /the OAuth token refresh failed, so the stored tokens were discarded/,
  );
});

Deno.test("oauthFailure quotes a server's error_description and cuts a long one", async () => {
  const config = { name: "api", auth: "oauth" as const };
  // What the SDK makes of a 401 whose JSON body carries an error_description.
  const answer = (description: string) =>
    parseErrorResponse(
      new Response(JSON.stringify({ error: "invalid_token", error_description: description }), {
        status: 401,
        headers: { "content-type": "application/json" },
      }),
    );
  const said = oauthFailure(config, await answer('token "t1" expired\nlog in again'));
  assert.equal(
    said?.message,
    `MCP server 'api': OAuth failed: "token \\"t1\\" expired\\nlog in again"; ` +
      "run `agent mcp login api`",
  );
  const flood = oauthFailure(config, await answer("A".repeat(100_000)));
  assert.equal(
    flood?.message,
    `MCP server 'api': OAuth failed: "${"A".repeat(199)}…"; run \`agent mcp login api\``,
  );
});

Deno.test("oauthFailure turns OAuth failures into auth errors naming agent mcp login", () => {
  const config = { name: "api", auth: "oauth" as const };
  const cases: [unknown, RegExp][] = [
    [
      new OAuthLoginRequired("api", "not logged in"),
      /^MCP server 'api': not logged in; run `agent mcp login api`$/,
    ],
    [new UnauthorizedError(), /asks for an OAuth login; run `agent mcp login api`/],
    [
      new OAuthError(OAuthErrorCode.InvalidGrant, "refresh token revoked"),
      /OAuth failed: "refresh token revoked"; run `agent mcp login api`/,
    ],
    [
      new SdkHttpError(SdkErrorCode.ClientHttpAuthentication, "401", { status: 401 }),
      /refused the OAuth token \(HTTP 401\); run `agent mcp login api`/,
    ],
  ];
  for (const [error, message] of cases) {
    const failure = oauthFailure(config, error);
    assert.equal(failure?.kind, "auth");
    assert.match(failure!.message, /^MCP server 'api': /);
    assert.match(failure!.message, message);
  }
  assert.equal(oauthFailure(config, new TypeError("fetch failed")), undefined);
  assert.equal(
    oauthFailure({ name: "api" }, new UnauthorizedError()),
    undefined,
    "only auth: oauth servers",
  );
});
