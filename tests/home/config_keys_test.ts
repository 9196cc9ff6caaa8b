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
  for (const block of blocks) {
    assert.deepEqual(unknownIn(block), [], block);
    // Commented-out options (`# host: 127.0.0.1`) are documented keys as well; some blocks list
    // alternatives on one line, which is not YAML once uncommented.
    const uncommented = block.replace(/^(\s+)# ([a-z_]+: )/gm, "$1$2");
    let source;
    try {
      source = ConfigSource.parse(FILE, uncommented);
    } catch {
      continue;
    }
    assert.deepEqual(unknownConfigKeys(source), [], uncommented);
  }
  // The commented options at the start of a line belong to the model section of its block.
  const model = [
    "base_url",
    "api_key_env",
    "timeout_seconds",
    "max_retries",
    "temperature",
    "max_tokens",
  ].map((key) => `  ${key}: 1`).join("\n");
  assert.deepEqual(unknownIn(`model:\n${model}\nagent:\n  system_prompt: x\n`), []);
});
