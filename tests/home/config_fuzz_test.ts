/**
 * Property tests of configuration loading: a wrong `config.yaml`, `.env` or subscription file
 * gets a clear answer naming the file, never a crash (a TypeError, a RangeError, a stack).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import fc from "fast-check";
import { readAgentSettings, readModelSettings } from "../../src/agent/settings.ts";
import { loadConfig, type ResolvedConfig } from "../../src/home/config.ts";
import { dotenvWarnings } from "../../src/home/dotenv_lines.ts";
import { ConfigError } from "../../src/home/errors.ts";
import { configuredLogLevel } from "../../src/home/log.ts";
import { formatIssue } from "../../src/mcp/config.ts";
import { loadMcpServers } from "../../src/mcp/mod.ts";
import { readWebhookSettings } from "../../src/webhook/settings.ts";
import {
  dynamicRoutes,
  readSubscriptions,
  SubscriptionFileError,
} from "../../src/webhook/subscriptions.ts";
import { anyConfigText, dotenvText, junk } from "./_config_arbitraries.ts";
import { collectWarnings, envOf, withTempDir } from "./_helpers.ts";

/** Nothing is connected here: any command and URL will do. */
const PLACES = {
  commands: ["npx", "node server.js", "/bin/true"],
  urls: ["https://mcp.example/mcp", "http://127.0.0.1:1/mcp"],
};

/** Text that says the message was built from a value it did not expect. */
const GARBLED = /\[object Object\]|\bundefined\b|function \w*\(/;

/** Runs `read`; anything thrown must be a ConfigError naming one of `files`. */
function answersClearly<T>(files: string[], read: () => T): T | undefined {
  try {
    return read();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    assert.ok(
      files.includes(error.location.file) && error.message.startsWith(error.location.file),
      `the error does not name ${files.join(" or ")}: ${error.message}`,
    );
    assert.doesNotMatch(error.problem, GARBLED);
    return undefined;
  }
}

/** Every reader of a loaded configuration, as the CLI and the gateway call them. */
function readEverything(config: ResolvedConfig): void {
  const files = [config.paths.config, config.paths.dotenv];
  const { issues } = loadMcpServers(config, "/work/project");
  for (const issue of issues) {
    assert.ok(issue.message.length > 0, "an MCP issue without a message");
    assert.doesNotMatch(issue.message, GARBLED);
    assert.ok(formatIssue(issue, config.paths.config).startsWith(config.paths.config));
  }
  answersClearly(files, () => readWebhookSettings(config));
  answersClearly(files, () => readAgentSettings(config));
  answersClearly(files, () => readModelSettings(config.source, config.secrets, files[1]));
  answersClearly(files, () => configuredLogLevel(config.source, () => undefined));
}

Deno.test("fuzz: any config.yaml and .env load to settings or to a ConfigError naming the file", async () => {
  // A library's own warning on stderr ("(node:…) Warning: …") is not an answer to the user.
  using printed = collectWarnings();
  await withTempDir((home) => {
    const configFile = join(home, "config.yaml");
    const dotenvFile = join(home, ".env");
    fc.assert(
      fc.property(anyConfigText(PLACES), dotenvText, (yaml, dotenv) => {
        Deno.writeTextFileSync(configFile, yaml);
        Deno.writeTextFileSync(dotenvFile, dotenv);
        const config = answersClearly(
          [configFile],
          () => loadConfig({ home, env: envOf({}) }),
        );
        if (config) {
          assert.ok(Array.isArray(dotenvWarnings(dotenvFile, dotenv)));
          readEverything(config);
        }
        assert.deepEqual(printed.warnings.splice(0), [], "a warning was printed to stderr");
      }),
      { numRuns: 400, seed: fuzzSeed() },
    );
  });
});

/** Subscription file texts: JSON of random values, with keys repeated and bytes cut. */
const subscriptionText = fc.oneof(
  junk.map((value) => JSON.stringify(value, (_key, v) => typeof v === "bigint" ? Number(v) : v)),
  fc.dictionary(fc.string({ maxLength: 6 }), junk, { maxKeys: 3 }).map((records) =>
    JSON.stringify(records, (_key, v) => typeof v === "bigint" ? String(v) : v, 2)
  ),
  fc.tuple(fc.string({ maxLength: 6 }), fc.json()).map(([name, value]) =>
    `{"${name}": ${value}, "${name}": ${value}}`
  ),
  fc.tuple(fc.json(), fc.nat()).map(([text, cut]) => text.slice(0, cut % (text.length + 1))),
  fc.string({ unit: "binary", maxLength: 20 }),
);

Deno.test("fuzz: any webhook_subscriptions.json reads to routes or a SubscriptionFileError naming it", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "webhook_subscriptions.json");
    fc.assert(
      fc.property(subscriptionText, (text) => {
        Deno.writeTextFileSync(file, text);
        let records;
        try {
          records = readSubscriptions(file);
        } catch (error) {
          if (!(error instanceof SubscriptionFileError)) throw error;
          assert.ok(error.message.startsWith(`${file}: `), error.message);
          assert.doesNotMatch(error.message, GARBLED);
          return;
        }
        for (const problem of dynamicRoutes(records, file).problems) {
          assert.ok(problem.startsWith(`${file}: `), problem);
        }
      }),
      { numRuns: 300, seed: fuzzSeed() },
    );
  });
});

/** A fixed seed keeps the test deterministic; `FUZZ_SEED=<n>` explores other inputs. */
function fuzzSeed(): number {
  return Number(Deno.env.get("FUZZ_SEED") ?? 20260310);
}
