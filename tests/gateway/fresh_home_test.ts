/**
 * What `gateway run` writes on a fresh home, when another command writes the same files between
 * the look that found them missing and the write: what it wrote is kept and used.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { generateGlobalSecret, writeStarterConfig } from "../../src/gateway/fresh_home.ts";
import { STARTER_CONFIG } from "../../src/gateway/starter_config.ts";
import { loadConfig } from "../../src/home/config.ts";
import { editConfigFile } from "../../src/home/config_edit.ts";
import { setDotenvValues } from "../../src/home/dotenv_edit.ts";
import { readWebhookSettings } from "../../src/webhook/settings.ts";
import { tempHome } from "../cli/_helpers.ts";

const noEnv = () => undefined;

Deno.test("writeStarterConfig keeps a config.yaml written after the home was found fresh, and returns it", async () => {
  await using h = await tempHome();
  const fresh = loadConfig({ home: h.home, env: noEnv });
  editConfigFile(h.config, (doc) => doc.setIn(["platforms", "webhook", "enabled"], false));
  const written = Deno.readTextFileSync(h.config);
  const starter = writeStarterConfig(fresh, noEnv);
  assert.equal(starter.created, false);
  assert.equal(Deno.readTextFileSync(h.config), written);
  assert.equal(
    readWebhookSettings(starter.config).enabled,
    false,
    "the file on disk, not the one expected",
  );
});

Deno.test("writeStarterConfig on a fresh home writes the starter, 0600, and returns it as read back", async () => {
  await using h = await tempHome();
  const starter = writeStarterConfig(loadConfig({ home: h.home, env: noEnv }), noEnv);
  assert.equal(starter.created, true);
  assert.equal(Deno.readTextFileSync(h.config), STARTER_CONFIG);
  assert.equal(Deno.statSync(h.config).mode! & 0o777, 0o600);
  assert.equal(readWebhookSettings(starter.config).enabled, true);
  assert.deepEqual([...Deno.readDirSync(h.home)].map((entry) => entry.name), ["config.yaml"]);
});

Deno.test("generateGlobalSecret keeps a WEBHOOK_SECRET set after the starter was written, and returns it", async () => {
  await using h = await tempHome();
  const dotenv = join(h.home, ".env");
  const { config } = writeStarterConfig(loadConfig({ home: h.home, env: noEnv }), noEnv);
  setDotenvValues(dotenv, { WEBHOOK_SECRET: "chosen-in-gateway-setup" });
  const secret = generateGlobalSecret(config, noEnv);
  assert.equal(secret.generated, false);
  assert.equal(Deno.readTextFileSync(dotenv), "WEBHOOK_SECRET=chosen-in-gateway-setup\n");
  assert.equal(readWebhookSettings(secret.config).secret, "chosen-in-gateway-setup");
});

Deno.test("generateGlobalSecret reads config.yaml again: a secret or a disabled platform set meanwhile generates none", async () => {
  await using h = await tempHome();
  const dotenv = join(h.home, ".env");
  const { config } = writeStarterConfig(loadConfig({ home: h.home, env: noEnv }), noEnv);
  editConfigFile(h.config, (doc) => doc.setIn(["platforms", "webhook", "extra", "secret"], "s3"));
  assert.equal(generateGlobalSecret(config, noEnv).generated, false);
  editConfigFile(h.config, (doc) => {
    doc.deleteIn(["platforms", "webhook", "extra", "secret"]);
    doc.setIn(["platforms", "webhook", "enabled"], false);
  });
  assert.equal(generateGlobalSecret(config, noEnv).generated, false);
  assert.throws(() => Deno.statSync(dotenv), Deno.errors.NotFound);
  // Enabled again and no secret anywhere: generated, 0600, other lines kept.
  editConfigFile(h.config, (doc) => doc.setIn(["platforms", "webhook", "enabled"], true));
  Deno.writeTextFileSync(dotenv, "# keys\nOPENAI_API_KEY=sk-1\n");
  const secret = generateGlobalSecret(config, noEnv);
  assert.equal(secret.generated, true);
  assert.match(
    Deno.readTextFileSync(dotenv),
    /^# keys\nOPENAI_API_KEY=sk-1\nWEBHOOK_SECRET=[A-Za-z0-9_-]{43}\n$/,
  );
  assert.equal(Deno.statSync(dotenv).mode! & 0o777, 0o600);
  assert.match(readWebhookSettings(secret.config).secret ?? "", /^[A-Za-z0-9_-]{43}$/);
});
