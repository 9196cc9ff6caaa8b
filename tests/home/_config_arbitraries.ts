/**
 * fast-check arbitraries of wrong (and now and then right) `config.yaml` and `.env` texts, for
 * the property tests of configuration loading: random values at the real keys, and YAML text
 * with anchors, aliases, tags and repeated keys.
 *
 * @module
 */
import fc from "fast-check";
import { stringify } from "yaml";

/** Strings a careless or hostile config holds: YAML look-alikes, references, control chars. */
const trickyString = fc.constantFrom(
  "",
  " ",
  "NaN",
  ".nan",
  "-.inf",
  "Infinity",
  "1e309",
  "-0",
  "0x1F",
  "0o17",
  "99999999999999999999999",
  "~",
  "null",
  "yes",
  "off",
  "${HOME}",
  "${env:HOME}",
  "${MISSING}",
  "${",
  "$${X}",
  "${workspaceFolder}/x",
  "\u0000",
  "a\u0007b\u001bc",
  "\u202e\u200b",
  "\ud800",
  "__proto__",
  "constructor",
  "toString",
  "http://",
  "https://user:pw@127.0.0.1:1/x",
  "http://[::1",
  "127.0.0.1",
  "::1",
  "0.0.0.0",
  "ümlaut-ключ-鍵",
);

const controlString = fc.string({
  unit: fc.integer({ min: 0, max: 0x9f }).map((code) => String.fromCharCode(code)),
  maxLength: 12,
});

const longString = fc.constantFrom(2_000, 70_000).map((length) => "x".repeat(length));

/** A wrong scalar of any type. */
export const junkScalar: fc.Arbitrary<unknown> = fc.oneof(
  trickyString,
  controlString,
  fc.string({ unit: "binary", maxLength: 10 }),
  fc.string({ unit: "grapheme", maxLength: 8 }),
  fc.integer(),
  fc.constantFrom(0, -1, 1, 65_535, 65_536, 2 ** 31, 2 ** 53 + 1, 1e308, -1e308, 5e-324),
  fc.double(),
  fc.bigInt({ min: -(2n ** 90n), max: 2n ** 90n }),
  fc.boolean(),
  fc.constant(null),
  longString,
);

/** Keys of mappings: real names, tricky names and random text (non-ASCII included). */
const junkKey: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom("fs", "github", "a.b", "", " ", "<<", "__proto__", "constructor", "名前"),
  trickyString,
  fc.string({ unit: "grapheme", maxLength: 6 }),
);

/** Any wrong value: scalars, lists and mappings nested a few levels deep. */
export const junk: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    junkScalar,
    fc.array(tie("value"), { maxLength: 3 }),
    fc.dictionary(junkKey, tie("value"), { maxKeys: 3 }),
  ),
})).value;

/** A value at a known key: a plausible one (so parsing goes deeper) or junk. */
function either(...plausible: unknown[]): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...plausible) },
    { weight: 1, arbitrary: junk },
  );
}

/** A section: junk, or a mapping holding some of `fields`. */
function section(fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 1, arbitrary: junk },
    { weight: 6, arbitrary: fc.record(fields, { requiredKeys: [] }) },
  );
}

function named(entry: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 1, arbitrary: junk },
    { weight: 5, arbitrary: fc.dictionary(junkKey, entry, { minKeys: 1, maxKeys: 3 }) },
  );
}

/** Plausible values of `command` and `url`: none of them starts or reaches a real server. */
export interface ServerPlaces {
  commands: string[];
  urls: string[];
}

const mcpServer = (places: ServerPlaces) =>
  section({
    command: either(...places.commands),
    args: either(["-y", "pkg"], [], "--flag"),
    env: either({ TOKEN: "${TOKEN}" }, {}),
    url: either(...places.urls, "${URL}"),
    headers: either({ Authorization: "Bearer ${TOKEN}" }, {}),
    transport: either("http", "sse", "streamable-http", "stdio"),
    timeout: either(30, 0, "60"),
    connect_timeout: either(10),
    keepalive_interval: either(30),
    enabled: either(true, false, "no"),
    protocol: either("auto", "stateless", "legacy"),
    lifecycle: either({ idle_timeout_seconds: 60 }),
    oauth: section({
      client_id: either("id"),
      client_secret: either("${SECRET}"),
      redirect_port: either(8765),
      token_endpoint_auth_method: either("none", "client_secret_basic"),
      client_metadata_url: either("https://c.example/client.json"),
    }),
    tools: section({
      include: either(["read_*"], "read"),
      exclude: either(["write"]),
      resources: either(true),
      prompts: either(false),
    }),
    sampling: section({ enabled: either(true), max_tokens_cap: either(100), allowed_models: junk }),
    elicitation: section({ enabled: either(true), timeout: either(30) }),
    trust: junk,
    auth: junk,
    client_cert: junk,
    ssl_verify: either(false),
  });

const webhookRoute = section({
  secret: either("s3cret"),
  events: either(["push"], "push, pull_request"),
  prompt: either("Summarise {{payload}}"),
  deliver: either("log", "telegram", "github_comment"),
  deliver_extra: either({ chat_id: "1" }),
  deliver_only: either(false, true),
  enabled: either(true),
  filters: junk,
  script: either("x.ts"),
});

/**
 * A whole configuration: random values at the real keys of `config.yaml`, with servers at
 * `places`.
 */
export function configValue(places: ServerPlaces): fc.Arbitrary<Record<string, unknown>> {
  return fc.record({
    model: section({
      default: either("gpt-4o"),
      provider: either("openai", "ollama", "nonsense"),
      base_url: either("http://127.0.0.1:11434/v1"),
      api_key_env: either("OPENAI_API_KEY"),
    }),
    platforms: section({
      webhook: section({
        enabled: either(true, false),
        extra: section({
          port: either(8644, 0, 70_000, "8644"),
          host: either("127.0.0.1", "::1", "0.0.0.0"),
          secret: either("s3cret"),
          routes: named(webhookRoute),
          rate_limit: either(30, { requests: 5, window_seconds: 60 }),
          max_body_bytes: either(1024),
          script_sandbox: either("auto", "off"),
          body_timeout_seconds: either(30),
          delivery_attempts: either(3),
        }),
      }),
    }),
    mcp_servers: named(mcpServer(places)),
    telemetry: section({
      shared_metrics: section({
        enabled: either(true, false),
        send: either(true, false),
        endpoint: either("https://m.example/v2", "http://127.0.0.1:9/v2"),
      }),
    }),
    logging: section({ level: either("debug", "info", "loud") }),
    approvals: section({ gateway: either("deny", "allow"), timeout_seconds: either(60) }),
    agent: section({ max_iterations: either(20), run_timeout_seconds: either(600) }),
  }, { requiredKeys: [] });
}

/** YAML text of {@linkcode configValue}, written by the YAML library (its quoting, its tags). */
export function configYaml(places: ServerPlaces): fc.Arbitrary<string> {
  // BigInts are written as plain integers; the reader sees them as (possibly huge) numbers.
  return configValue(places).map((value) => stringify(value, { lineWidth: 0 }));
}

/** Lines of hand-written YAML with the features that surprise: anchors, tags, repeated keys. */
const yamlLine = fc.constantFrom(
  "mcp_servers:",
  "  fs:",
  "    command: npx",
  "    args: &args [-y, pkg]",
  "    args: *args",
  "    env: *missing",
  "    <<: *base",
  "    <<: [*base, *args]",
  "    <<: 3",
  "  gh: &base {url: 'https://mcp.example/mcp'}",
  "  gh2: *base",
  "  loop: &loop [*loop]",
  "  bin: !!binary aGVsbG8=",
  "  t: !!timestamp 2001-12-14",
  "  s: !!set {a, b}",
  "  o: !!omap [a: 1, b: 2]",
  "  p: !!pairs [a: 1]",
  "  f: !!float nan",
  "  i: !!int 0x1F",
  "  u: !custom thing",
  "  n: !!null ''",
  "  m: !!map {}",
  "  q: !!str",
  "platforms:",
  "  webhook:",
  "    extra:",
  "      port: !!str 8644",
  "      port: .inf",
  "      host: !!binary AAAA",
  "      routes:",
  "        gh: {secret: *args}",
  "        ? [complex, key]",
  "        : value",
  "telemetry: &t",
  "  shared_metrics: {enabled: *t}",
  "telemetry:",
  "  shared_metrics:",
  "    enabled: !!bool maybe",
  "    endpoint: !!binary aHR0cHM6Ly9tLmV4YW1wbGU=",
  "model: [a, b",
  "model: 'unclosed",
  'model: "esc \\x00 \\u0007"',
  "---",
  "...",
  "%YAML 1.2",
  "%TAG ! tag:example.com,2000:",
  "&anchor",
  "*anchor",
  "? ",
  "- item",
  "\t- tab",
  "# comment",
  "",
);

/** Random YAML text from {@linkcode yamlLine}s, now and then with a random character inserted. */
export const yamlText: fc.Arbitrary<string> = fc.tuple(
  fc.array(yamlLine, { maxLength: 12 }),
  fc.option(fc.tuple(fc.nat(), fc.string({ unit: "binary", minLength: 1, maxLength: 3 }))),
).map(([lines, insert]) => {
  const text = lines.join("\n") + "\n";
  if (!insert) return text;
  const at = insert[0] % (text.length + 1);
  return text.slice(0, at) + insert[1] + text.slice(at);
});

/** Any `config.yaml` text of the two kinds above. */
export function anyConfigText(places: ServerPlaces): fc.Arbitrary<string> {
  return fc.oneof(configYaml(places), yamlText);
}

/** A `.env` text: assignments with odd names, quotes, exports and control characters. */
export const dotenvText: fc.Arbitrary<string> = fc.array(
  fc.oneof(
    fc.constantFrom(
      "WEBHOOK_PORT=abc",
      "WEBHOOK_PORT=99999",
      "WEBHOOK_PORT=8644",
      "WEBHOOK_ENABLED=maybe",
      "WEBHOOK_SECRET=",
      "INSECURE_NO_AUTH=perhaps",
      "AGENT_SHARED_METRICS=sure",
      "DO_NOT_TRACK=0",
      "AGENT_LOG_LEVEL=loud",
      "TOKEN='unclosed",
      'TOKEN="a\\nb"',
      "export TOKEN=x",
      "=novalue",
      "KEY WITH SPACE=1",
      "TOKEN=`back`",
      "# comment",
    ),
    fc.tuple(junkKey, fc.string({ unit: "binary", maxLength: 8 })).map(([k, v]) => `${k}=${v}`),
    controlString,
  ),
  { maxLength: 5 },
).map((lines) => lines.join("\n"));
