/**
 * What `agent gateway run` writes on a fresh `<home>`: the starter `config.yaml` and a generated
 * global webhook secret in `.env`. Both are written under the edit lock every writer of those
 * files takes, and only after looking again under it, so that an `agent gateway setup`,
 * `mcp add` or `metrics enable` run at the same moment neither loses its change nor has the
 * gateway start from a file it did not write.
 *
 * @module
 */
import { loadConfig, type ResolvedConfig } from "../home/config.ts";
import { setDotenvValues } from "../home/dotenv_edit.ts";
import { readTextIfExists, withEditLock, writeFileAtomic } from "../home/files.ts";
import type { EnvReader } from "../home/paths.ts";
import { generateSecret } from "../webhook/routes.ts";
import { acceptsUnsigned, readWebhookSettings } from "../webhook/settings.ts";
import { STARTER_CONFIG } from "./starter_config.ts";

/** What {@linkcode writeStarterConfig} did. */
export interface StarterWritten {
  /** Whether this call wrote `config.yaml` (false: the home had one, or got one meanwhile). */
  created: boolean;
  /** The configuration as read under the lock, after the write. */
  config: ResolvedConfig;
}

/**
 * Writes {@linkcode STARTER_CONFIG} to `config.yaml` (atomically, mode 0600) when the home has
 * none. Under the edit lock it looks again: a `config.yaml` another command wrote since `config`
 * was loaded is kept, and the home is one set up before (`created: false`). A home that has a
 * `config.yaml` is not locked at all.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { loadConfig } from "../home/config.ts";
 * import { writeStarterConfig } from "./fresh_home.ts";
 * import { STARTER_CONFIG } from "./starter_config.ts";
 * const home = await Deno.makeTempDir();
 * const env = () => undefined;
 * const config = loadConfig({ home, env });
 * assert.equal(writeStarterConfig(config, env).created, true);
 * assert.equal(Deno.readTextFileSync(`${home}/config.yaml`), STARTER_CONFIG);
 * // Found missing before, but written by someone else since: kept.
 * Deno.writeTextFileSync(`${home}/config.yaml`, "# mine\n");
 * assert.equal(writeStarterConfig(config, env).created, false);
 * assert.equal(Deno.readTextFileSync(`${home}/config.yaml`), "# mine\n");
 * ```
 */
export function writeStarterConfig(config: ResolvedConfig, env: EnvReader): StarterWritten {
  const file = config.paths.config;
  if (readTextIfExists(file) !== undefined) return { created: false, config };
  return withEditLock(file, () => {
    if (readTextIfExists(file) !== undefined) {
      return { created: false, config: loadConfig({ home: config.paths.home, env }) };
    }
    writeFileAtomic(file, STARTER_CONFIG, { mode: 0o600 });
    return { created: true, config: loadConfig({ home: config.paths.home, env }) };
  });
}

/** What {@linkcode generateGlobalSecret} did. */
export interface SecretGenerated {
  /** Whether this call wrote `WEBHOOK_SECRET` to `.env`. */
  generated: boolean;
  /** The configuration as read under the lock, after the write. */
  config: ResolvedConfig;
}

/**
 * Generates `WEBHOOK_SECRET` in `.env` (mode 0600, other lines kept) when the webhook platform is
 * enabled and no global secret is set anywhere (a generated one would override
 * `platforms.webhook.extra.secret`), unless `INSECURE_NO_AUTH` asks for secretless routes. The
 * decision is taken under the edit lock of `.env` and `config.yaml`, on both files read again:
 * a secret another command set since `config` was loaded is never overwritten.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { loadConfig } from "../home/config.ts";
 * import { generateGlobalSecret, writeStarterConfig } from "./fresh_home.ts";
 * const home = await Deno.makeTempDir();
 * const env = () => undefined;
 * const { config } = writeStarterConfig(loadConfig({ home, env }), env);
 * assert.equal(generateGlobalSecret(config, env).generated, true);
 * assert.match(Deno.readTextFileSync(`${home}/.env`), /^WEBHOOK_SECRET=[A-Za-z0-9_-]{43}\n$/);
 * assert.equal(generateGlobalSecret(config, env).generated, false); // set now: kept
 * ```
 */
export function generateGlobalSecret(config: ResolvedConfig, env: EnvReader): SecretGenerated {
  const { paths } = config;
  const load = () => loadConfig({ home: paths.home, env });
  // The same lock in practice (one folder), but each file's own, as their other writers take.
  return withEditLock(paths.config, () =>
    withEditLock(paths.dotenv, () => {
      const current = load();
      const settings = readWebhookSettings(current);
      if (!settings.enabled || settings.secret || acceptsUnsigned(settings)) {
        return { generated: false, config: current };
      }
      setDotenvValues(paths.dotenv, { WEBHOOK_SECRET: generateSecret() });
      return { generated: true, config: load() };
    }));
}
