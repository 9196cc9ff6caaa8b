/** `agent webhook list` shows a route that no secret covers as the gateway answers it: 403. */
import assert from "node:assert/strict";
import { cli, cliJson, tempHome } from "./_helpers.ts";

const CONFIG = "platforms:\n  webhook:\n    enabled: true\n    extra:\n      host: 127.0.0.1\n" +
  "      routes:\n        stripe:\n          prompt: paid\n" +
  "        github:\n          secret: static-secret-0123456789\n";

// deno-lint-ignore no-explicit-any
function statusOf(doc: any, name: string): { status: string; status_reason: string | null } {
  // deno-lint-ignore no-explicit-any
  const row = doc.subscriptions.find((row: any) => row.name === name);
  assert.ok(row, `no row ${name} in ${JSON.stringify(doc)}`);
  return row;
}

Deno.test("list: a static route with no secret and no global secret is no_secret (answered 403), not active", async () => {
  await using h = await tempHome();
  await Deno.writeTextFile(h.config, CONFIG);
  const doc = await cliJson(h.home, ["webhook", "list", "--json"]);
  const stripe = statusOf(doc, "stripe");
  assert.equal(stripe.status, "no_secret");
  assert.match(String(stripe.status_reason), /answered 403/);
  assert.equal(statusOf(doc, "github").status, "active", "a route with its own secret is served");

  const text = await cli(h.home, ["webhook", "list"]);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /^stripe \(static, config\.yaml\) \[no secret\]$/m);
  assert.match(text.stdout, /status: {2}no secret: requests are answered 403/);
});

Deno.test("list: the global secret, or INSECURE_NO_AUTH on a loopback host, makes such a route active", async () => {
  await using h = await tempHome();
  await Deno.writeTextFile(h.config, CONFIG);
  const global = await cliJson(h.home, ["webhook", "list", "--json"], 0, {
    env: { WEBHOOK_SECRET: "global-secret-0123456789" },
  });
  assert.equal(statusOf(global, "stripe").status, "active");
  const unsigned = await cliJson(h.home, ["webhook", "list", "--json"], 0, {
    env: { INSECURE_NO_AUTH: "true" },
  });
  assert.equal(statusOf(unsigned, "stripe").status, "active");
});
