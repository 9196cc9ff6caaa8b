/**
 * Two processes sharing `<home>/mcp-tokens/<server>.json` (the gateway and an `agent mcp`
 * command, say) refresh expired tokens without losing them: the second one waits for the first
 * one's refresh and uses the tokens it stored. Before, it presented the same refresh token, the
 * authorization server (which rotates refresh tokens) answered `invalid_grant`, and that process
 * deleted the token file the first one had just written: a new login was needed. A refresh that
 * is refused deletes the tokens it presented only, under the same lock: not those another process
 * stored after the refusal.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { startOAuthServer } from "../fixtures/oauth_server.ts";
import { editLockWaiters } from "../fixtures/edit_lock_holder.ts";
import { waitUntil } from "../e2e/_gateway.ts";
import { cli, spawnCli, tempHome } from "./_helpers.ts";
import { loginApi } from "./_oauth_login.ts";

Deno.test("two processes refreshing the same expired OAuth tokens at once both connect, and the rotated tokens are kept", async () => {
  await using h = await tempHome();
  await using server = startOAuthServer({ cimdSupported: true });
  await loginApi(h.home, server);
  server.expireAccessTokens();

  // Each refresh request is held at the token endpoint (its refresh token still unused).
  const held: (() => void)[] = [];
  server.options.beforeToken = (grantType) =>
    grantType === "refresh_token" ? new Promise<void>((resolve) => held.push(resolve)) : undefined;
  const first = spawnCli(h.home, ["mcp", "test", "api"]);
  await waitUntil(() => held.length === 1, "the first process's refresh request");
  let secondEnded = false;
  const second = spawnCli(h.home, ["mcp", "test", "api"]).finally(() => secondEnded = true);
  await waitUntil(
    () =>
      secondEnded || held.length === 2 || editLockWaiters(join(h.home, "mcp-tokens")).length > 0,
    "the second process to refresh too, or to wait for the first one's refresh",
  );
  server.options.beforeToken = undefined;
  held[0](); // the first refresh is answered with new tokens (and a new refresh token) ...
  const one = await first;
  for (const release of held.slice(1)) release(); // ... before a second one, if any, is
  const two = await second;

  assert.equal(one.code, 0, one.stderr);
  assert.equal(two.code, 0, two.stderr);
  const refreshes = server.tokenRequests.filter((r) => r.grantType === "refresh_token");
  assert.deepEqual(refreshes.map((r) => r.status), [200], "one refresh, the rotated token unused");
  const file = join(h.home, "mcp-tokens", "api.json");
  assert.ok(Deno.statSync(file).isFile, "the tokens are kept");
  assert.equal(Deno.statSync(file).mode! & 0o777, 0o600);
  // They work: a third command connects without a token request.
  const third = await spawnCli(h.home, ["mcp", "test", "api"]);
  assert.equal(third.code, 0, third.stderr);
  assert.equal(server.tokenRequests.filter((r) => r.grantType === "refresh_token").length, 1);
});

Deno.test("mcp login while the gateway refreshes the same tokens: the login's tokens are kept, not the old grant's", async () => {
  await using h = await tempHome();
  await using server = startOAuthServer({ cimdSupported: true });
  const browser = await loginApi(h.home, server);
  server.expireAccessTokens();

  // Another process's refresh of the first login's grant is held at the token endpoint.
  let release!: () => void;
  const held = new Promise<void>((resolve) => release = resolve);
  let refreshing = false;
  server.options.beforeToken = (grantType) => {
    if (grantType !== "refresh_token") return undefined;
    refreshing = true;
    return held;
  };
  const other = spawnCli(h.home, ["mcp", "test", "api"]);
  await waitUntil(() => refreshing, "the other process's refresh request");
  // A new login meanwhile: it clears the records once that refresh is over (under its lock).
  let loginEnded = false;
  const login = cli(h.home, ["mcp", "login", "api"], { openBrowser: browser.open })
    .finally(() => loginEnded = true);
  await waitUntil(
    () => loginEnded || editLockWaiters(join(h.home, "mcp-tokens")).length > 0,
    "the login to wait for the refresh or to end",
  );
  release(); // the refresh is answered: the old grant's new tokens
  const [second, refreshed] = await Promise.all([login, other]);
  await browser.settled();

  assert.equal(second.code, 0, second.stderr);
  // The other process connected with the old grant's tokens, or found them cleared by the login.
  if (refreshed.code !== 0) assert.match(refreshed.stderr, /run `agent mcp login api`\n/);
  const codes = server.tokenRequests.filter((r) => r.grantType === "authorization_code");
  assert.equal(codes.length, 2);
  const stored = JSON.parse(Deno.readTextFileSync(join(h.home, "mcp-tokens", "api.json")));
  assert.equal(stored.access_token, codes[1].accessToken, "the second login's tokens");
  // They work: the next command connects without a token request.
  const requests = server.tokenRequests.length;
  const next = await spawnCli(h.home, ["mcp", "test", "api"]);
  assert.equal(next.code, 0, next.stderr);
  assert.equal(server.tokenRequests.length, requests);
});

Deno.test("a refused refresh deletes only the tokens it presented: a login's, stored meanwhile by another process, are kept", async () => {
  await using h = await tempHome();
  await using server = startOAuthServer({ cimdSupported: true });
  const browser = await loginApi(h.home, server);
  server.expireAccessTokens();
  server.revokeRefreshTokens(); // the stored grant's refresh is refused: invalid_grant

  // The refusal's status reaches the other process (its refresh, and the records' lock, are
  // over), its body is held: the SDK has not yet read the error and invalidated the tokens.
  let release!: () => void;
  const held = new Promise<void>((resolve) => release = resolve);
  let refused = false;
  server.options.beforeErrorBody = (grantType) => {
    if (grantType !== "refresh_token") return undefined;
    refused = true;
    return held;
  };
  const other = spawnCli(h.home, ["mcp", "test", "api"]);
  await waitUntil(() => refused, "the other process's refresh to be refused");
  server.options.beforeErrorBody = undefined;
  // A new login meanwhile, to its end: the file holds its tokens.
  const login = await cli(h.home, ["mcp", "login", "api"], { openBrowser: browser.open });
  await browser.settled();
  assert.equal(login.code, 0, login.stderr);
  release(); // the other process reads `invalid_grant` for the old grant's refresh token
  const refreshed = await other;

  const file = join(h.home, "mcp-tokens", "api.json");
  assert.ok(existsSync(file), "the login's tokens are not deleted");
  // The other process found the login's grant and used it (refreshing it, as the SDK does).
  assert.equal(refreshed.code, 0, refreshed.stderr);
  const codes = server.tokenRequests.filter((r) => r.grantType === "authorization_code");
  assert.equal(codes.length, 2);
  const stored = JSON.parse(Deno.readTextFileSync(file));
  assert.equal(stored.access_token, server.tokenRequests.at(-1)!.accessToken);
  // They work: the next command connects without a token request.
  const requests = server.tokenRequests.length;
  const next = await spawnCli(h.home, ["mcp", "test", "api"]);
  assert.equal(next.code, 0, next.stderr);
  assert.equal(server.tokenRequests.length, requests);
});
