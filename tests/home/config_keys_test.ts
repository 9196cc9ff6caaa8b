/**
 * Keys of `config.yaml` that nothing reads are reported (file, line, key, closest known key),
 * and every key the README documents is known.
 */
import assert from "node:assert/strict";
import { ConfigSource } from "../../src/home/config.ts";
import { unknownConfigKeys, unknownConfigKeyWarnings } from "../../src/home/config_keys.ts";

const FILE = "/h/config.yaml";

function unknownIn(text: string) {
  return unknownConfigKeys(ConfigSource.parse(FILE, text)).map(({ key, line }) => ({ key, line }));
}

Deno.test("unknownConfigKeys: misspelled sections and options at every level, with their lines", () => {
  const text = [
    "mcp_server:", //                 1
    "  fs: {command: x}", //          2
    "model:", //                      3
    "  default: gpt-4.1-mini", //     4
    "  temprature: 0.2", //           5
    "platforms:", //                  6
    "  webhook:", //                  7
    "    enabled: true", //           8
    "    extra:", //                  9
    "      prot: 9000", //            10
    "      rate_limit:", //           11
    "        request: 5", //          12
    "  telegram:", //                 13
    "    extra: {api_base_uri: x}", // 14
    "telemetry:", //                  15
    "  shared_metric: {enabled: true}", // 16
  ].join("\n");
  assert.deepEqual(unknownIn(text), [
    { key: "mcp_server", line: 1 },
    { key: "model.temprature", line: 5 },
    { key: "platforms.webhook.extra.prot", line: 10 },
    { key: "platforms.webhook.extra.rate_limit.request", line: 12 },
    { key: "platforms.telegram.extra.api_base_uri", line: 14 },
    { key: "telemetry.shared_metric", line: 16 },
  ]);
  assert.deepEqual(unknownConfigKeyWarnings(ConfigSource.parse(FILE, text)).slice(0, 2), [
    "/h/config.yaml:1: mcp_server: unknown key `mcp_server` is ignored; did you mean `mcp_servers`?",
    "/h/config.yaml:5: model.temprature: unknown key `temprature` is ignored; did you mean " +
    "`temperature`?",
  ]);
});

Deno.test("unknownConfigKeys: a key like nothing known is reported without a guess", () => {
  const [found] = unknownConfigKeys(ConfigSource.parse(FILE, "terminal:\n  shell: bash\n"));
  assert.deepEqual(found, {
    key: "terminal",
    line: 1,
    message: "unknown key `terminal` is ignored; remove it or check its spelling",
  });
});

Deno.test("unknownConfigKeys: a key read at another level names where it is read", () => {
  const text = [
    "platforms:", //                       1
    "  webhook:", //                       2
    "    enabled: true", //                3
    "    port: 9000", //                   4: extra left out
    "    routes: {ci: {secret: s}}", //    5
    "  telegram:", //                      6
    "    api_base_url: http://x", //       7: extra left out
    "model:", //                           8
    "  default: m", //                     9
    "  discord: {extra: {api_base_url: http://y}}", // 10: a platform under model
    "agent:", //                           11
    "  timeout_seconds: 5", //             12: read in two sections
    "api_base_url: http://z", //           13: read in five: no guess
  ].join("\n");
  assert.deepEqual(
    unknownConfigKeys(ConfigSource.parse(FILE, text)).map(({ key, message }) => [key, message]),
    [
      [
        "platforms.webhook.port",
        "unknown key `port` is not read here and is ignored; did you mean " +
        "`platforms.webhook.extra.port`?",
      ],
      [
        "platforms.webhook.routes",
        "unknown key `routes` is not read here and is ignored; did you mean " +
        "`platforms.webhook.extra.routes`?",
      ],
      [
        "platforms.telegram.api_base_url",
        "unknown key `api_base_url` is not read here and is ignored; did you mean " +
        "`platforms.telegram.extra.api_base_url`?",
      ],
      [
        "model.discord",
        "unknown key `discord` is not read here and is ignored; did you mean `platforms.discord`?",
      ],
      [
        "agent.timeout_seconds",
        "unknown key `timeout_seconds` is not read here and is ignored; did you mean " +
        "`model.timeout_seconds` or `approvals.timeout_seconds`?",
      ],
      ["api_base_url", "unknown key `api_base_url` is ignored; remove it or check its spelling"],
    ],
  );
});

Deno.test("unknownConfigKeys: a key named as a section it is written in is not sent to that section", () => {
  // `extra: {webhook: …}` is written inside `webhook` already: "did you mean
  // `platforms.webhook`?" says nothing; the sibling guess or the plain message does.
  const text = [
    "model:",
    "  model: gpt-4o",
    "platforms:",
    "  webhook:",
    "    extra:",
    "      webhook: {}",
    "telemetry:",
    "  shared_metrics:",
    "    telemetry: true",
  ].join("\n");
  assert.deepEqual(
    unknownConfigKeys(ConfigSource.parse(FILE, text)).map(({ key, message }) => [key, message]),
    [
      // `model.model` is a well-known alias (below): the model's name.
      ["model.model", "unknown key `model` is ignored; did you mean `default`?"],
      [
        "platforms.webhook.extra.webhook",
        "unknown key `webhook` is ignored; remove it or check its spelling",
      ],
      [
        "telemetry.shared_metrics.telemetry",
        "unknown key `telemetry` is ignored; remove it or check its spelling",
      ],
    ],
  );
});

Deno.test("unknownConfigKeys: what other tools call model.default and model.base_url is suggested as those", () => {
  const text = [
    "model:",
    "  model: gpt-4o", //           before: remove it or check its spelling
    "  Name: gpt-4o",
    "  api_base: http://localhost:11434/v1",
    "  api_base_url: http://x", //  before: remove it or check its spelling (read in 5 places)
    "  url: http://x",
    "  endpoint: http://x", //      before: did you mean `telemetry.shared_metrics.endpoint`?
    "agent:",
    "  url: http://x", //           an alias only in its section
  ].join("\n");
  assert.deepEqual(
    unknownConfigKeyWarnings(ConfigSource.parse(FILE, text)),
    [
      "/h/config.yaml:2: model.model: unknown key `model` is ignored; did you mean `default`?",
      "/h/config.yaml:3: model.Name: unknown key `Name` is ignored; did you mean `default`?",
      "/h/config.yaml:4: model.api_base: unknown key `api_base` is ignored; did you mean " +
      "`base_url`?",
      "/h/config.yaml:5: model.api_base_url: unknown key `api_base_url` is ignored; did you " +
      "mean `base_url`?",
      "/h/config.yaml:6: model.url: unknown key `url` is ignored; did you mean `base_url`?",
      "/h/config.yaml:7: model.endpoint: unknown key `endpoint` is ignored; did you mean " +
      "`base_url`?",
      "/h/config.yaml:9: agent.url: unknown key `url` is ignored; remove it or check its spelling",
    ],
  );
});

Deno.test("unknownConfigKeys: an API key written in the model section says to move it to .env", () => {
  for (const key of ["api_key", "apiKey", "api-key", "key"]) {
    const found = unknownConfigKeys(
      ConfigSource.parse(FILE, `model:\n  default: m\n  ${key}: sk-secret-123\n`),
    );
    assert.deepEqual(found, [{
      key: `model.${key}`,
      line: 3,
      message: `unknown key \`${key}\` is ignored: the API key is read from /h/.env, never from ` +
        "config.yaml; move it there as OPENAI_API_KEY=<key> (the variable of provider openai), " +
        "or name the variable that holds it with model.api_key_env",
    }]);
  }
});

Deno.test("unknownConfigKeys: an API key in the model section names the variable this model section reads", () => {
  const messageFor = (model: string) =>
    unknownConfigKeys(ConfigSource.parse(FILE, `model:\n  default: m\n${model}  api_key: sk-1\n`))
      .map((found) => found.message.replace(/^.*move it there as /, ""));
  assert.deepEqual(messageFor("  provider: OpenRouter\n"), [
    "OPENROUTER_API_KEY=<key> (the variable of provider openrouter), or name the variable that " +
    "holds it with model.api_key_env",
  ]);
  assert.deepEqual(messageFor("  base_url: http://10.0.0.5:8000/v1\n"), [
    "CUSTOM_API_KEY=<key> (the variable of provider custom), or name the variable that holds it " +
    "with model.api_key_env",
  ]);
  assert.deepEqual(messageFor("  provider: groq\n  api_key_env: MY_GROQ_KEY\n"), [
    "MY_GROQ_KEY=<key> (the variable model.api_key_env names)",
  ]);
});

Deno.test("unknownConfigKeys: names the user chooses (servers, routes) and scalar forms are not checked here", () => {
  const text = "mcp_servers:\n  anything_goes: {command: x}\nplatforms:\n  webhook:\n" +
    "    extra:\n      rate_limit: 30\n      routes:\n        my-route: {secret: s}\n";
  assert.deepEqual(unknownIn(text), []);
  assert.deepEqual(unknownIn(""), []);
  assert.deepEqual(unknownIn("# only a comment\n"), []);
});

Deno.test("unknownConfigKeys: every key the README's config examples use is known", () => {
  const readme = Deno.readTextFileSync(new URL("../../README.md", import.meta.url));
  const blocks = [...readme.matchAll(/```yaml\n([\s\S]*?)```/g)].map((match) => match[1]);
  assert(blocks.length >= 4, `found ${blocks.length} yaml blocks in README.md`);
  let checked = 0;
  for (const block of blocks) {
    assert.deepEqual(unknownIn(block), [], block);
    // Commented-out options (`# host: 127.0.0.1`) are documented keys as well, at the place
    // they stand: uncommented as written, each must be a known key there. A line that lists
    // alternatives (`a: …, b: …`) is not YAML once uncommented and is left out.
    const lines = block.split("\n");
    lines.forEach((line, index) => {
      const match = /^(\s*)# ([a-z_]+: .*)$/.exec(line);
      if (!match) return;
      const uncommented = lines.with(index, match[1] + match[2]).join("\n");
      let source;
      try {
        source = ConfigSource.parse(FILE, uncommented);
      } catch {
        return;
      }
      checked++;
      assert.deepEqual(unknownConfigKeys(source), [], `${line}\n---\n${uncommented}`);
    });
  }
  assert(checked >= 9, `only ${checked} commented-out options were checked`);
});
