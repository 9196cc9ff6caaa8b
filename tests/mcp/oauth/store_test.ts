/** The OAuth records of a server under `<home>/mcp-tokens/`: names, modes, contents. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { OAuthStore, recordStem } from "../../../src/mcp/oauth/mod.ts";

async function tempDir(): Promise<{ dir: string } & AsyncDisposable> {
  const root = await Deno.makeTempDir({ prefix: "agent-oauth-store-" });
  return {
    dir: join(root, "mcp-tokens"),
    [Symbol.asyncDispose]: () => Deno.remove(root, { recursive: true }),
  };
}

const mode = (path: string) => Deno.statSync(path).mode! & 0o777;

Deno.test("records are <server>.json, .client.json, .meta.json, .cimd-off in a 0700 folder, files 0600", async () => {
  await using temp = await tempDir();
  const store = new OAuthStore(temp.dir, "github", () => 1_700_000_000_000);
  store.writeTokens({
    access_token: "a",
    token_type: "Bearer",
    expires_in: 3600,
    refresh_token: "r",
  });
  store.writeClient({ client_id: "c", redirect_uris: ["http://127.0.0.1:1/callback"] } as never);
  store.writeDiscovery({ authorizationServerUrl: "https://as.example.com" });
  store.markCimdOff();
  assert.deepEqual([...Deno.readDirSync(temp.dir)].map((entry) => entry.name).sort(), [
    "github.cimd-off",
    "github.client.json",
    "github.json",
    "github.meta.json",
  ]);
  assert.equal(mode(temp.dir), 0o700);
  for (const entry of Deno.readDirSync(temp.dir)) {
    assert.equal(mode(join(temp.dir, entry.name)), 0o600, entry.name);
  }
  assert.equal(Deno.readTextFileSync(store.path("cimdOff")), "", "the marker is empty");
  const saved = JSON.parse(Deno.readTextFileSync(store.path("tokens")));
  assert.equal(saved.expires_at, 1_700_000_000 + 3600, "absolute expiry, epoch seconds");
  assert.equal(saved.refresh_token, "r");
  store.clear();
  assert.deepEqual([...Deno.readDirSync(temp.dir)], []);
});

Deno.test("expires_in is what is left of expires_at when the tokens are read later", async () => {
  await using temp = await tempDir();
  let now = 1_000_000_000_000;
  const store = new OAuthStore(temp.dir, "api", () => now);
  store.writeTokens({ access_token: "a", token_type: "Bearer", expires_in: 600 });
  now += 400_000;
  assert.equal(store.readTokens()?.expires_in, 200);
  assert.equal(store.tokenExpiry(), 1_000_000_000_000 + 600_000);
  now += 1_000_000;
  assert.equal(store.readTokens()?.expires_in, 0, "never negative");
  assert.equal("expires_at" in store.readTokens()!, false, "expires_at stays on disk");
});

Deno.test("a folder that already exists is tightened to 0700 on write", async () => {
  await using temp = await tempDir();
  Deno.mkdirSync(temp.dir, { mode: 0o755 });
  Deno.chmodSync(temp.dir, 0o755);
  new OAuthStore(temp.dir, "api").writeClient({ client_id: "c" });
  assert.equal(mode(temp.dir), 0o700);
});

Deno.test("malformed or missing files read as absent", async () => {
  await using temp = await tempDir();
  const store = new OAuthStore(temp.dir, "api");
  assert.equal(store.readTokens(), undefined);
  assert.equal(store.isCimdOff(), false);
  Deno.mkdirSync(temp.dir, { recursive: true });
  Deno.writeTextFileSync(store.path("tokens"), "{not json");
  Deno.writeTextFileSync(store.path("client"), "[]");
  Deno.writeTextFileSync(store.path("meta"), '{"unrelated": true}');
  assert.equal(store.readTokens(), undefined);
  assert.equal(store.readClient(), undefined);
  assert.equal(store.readDiscovery(), undefined);
  store.remove("tokens", "client", "meta", "cimdOff");
});

Deno.test("a bare authorization-server metadata document is read as discovery state", async () => {
  await using temp = await tempDir();
  const store = new OAuthStore(temp.dir, "api");
  Deno.mkdirSync(temp.dir, { recursive: true });
  Deno.writeTextFileSync(
    store.path("meta"),
    JSON.stringify({
      issuer: "https://as.example.com",
      token_endpoint: "https://as.example.com/t",
    }),
  );
  assert.equal(store.readDiscovery()?.authorizationServerUrl, "https://as.example.com");
  assert.equal(
    store.readDiscovery()?.authorizationServerMetadata?.token_endpoint,
    "https://as.example.com/t",
  );
});

Deno.test("record names never leave the folder and never collide", () => {
  assert.equal(recordStem("my_api-2"), "my_api-2");
  for (const name of ["../x", "a/b", "a.b", ".", "", "x".repeat(300)]) {
    const stem = recordStem(name);
    assert.match(stem, /^[A-Za-z0-9_-]+$/, name);
    assert.ok(stem.length <= 120, name);
  }
  assert.notEqual(recordStem("a.b"), recordStem("a_b"));
  assert.notEqual(recordStem("a/b"), recordStem("a.b"));
});
