import assert from "node:assert/strict";
import {
  type AgentSettings,
  type ModelSettings,
  readAgentSettings,
  readModelSettings,
} from "../../src/agent/settings.ts";
import { ConfigSource } from "../../src/home/config.ts";
import { ConfigError } from "../../src/home/errors.ts";
import { SecretScope } from "../../src/home/secrets.ts";
import { configError } from "../home/_helpers.ts";

const FILE = "/h/config.yaml";
const DOTENV = "/h/.env";

/** A secret scope over fixed records; the real process environment is never read. */
function scope(dotenv: Record<string, string> = {}, env: Record<string, string> = {}) {
  return new SecretScope(dotenv, (name) => Object.hasOwn(env, name) ? env[name] : undefined);
}

function agentSettings(yaml: string, secrets: SecretScope = scope()): AgentSettings {
  return readAgentSettings({
    source: ConfigSource.parse(FILE, yaml),
    secrets,
    paths: { dotenv: DOTENV },
  });
}

function modelSettings(yaml: string, secrets: SecretScope = scope()): ModelSettings {
  return readModelSettings(ConfigSource.parse(FILE, yaml), secrets, DOTENV);
}

/** Asserts `error` is located at `key` on `line` and its message says so. */
function assertAt(error: ConfigError, key: string, line: number) {
  assert.equal(error.location.file, FILE);
  assert.equal(error.location.key, key);
  assert.equal(error.location.line, line);
  assert.ok(error.message.startsWith(`${FILE}:${line}`), error.message);
  assert.ok(error.message.includes(`(key ${key})`), error.message);
}

const OLLAMA = "model:\n  default: qwen2.5:7b\n  provider: ollama\n";

// --- defaults ------------------------------------------------------------------------------

Deno.test("readAgentSettings: defaults for everything not configured", () => {
  const settings = agentSettings(OLLAMA);

  assert.deepEqual(settings.limits, { maxIterations: 20, runTimeoutSeconds: 600 });
  assert.equal(settings.nonInteractiveApprovals, "deny");
  assert.equal(settings.approvalTimeoutSeconds, 60);
  assert.equal(settings.systemPrompt, undefined);
  assert.equal(settings.modelProblem, undefined);
  assert.deepEqual(settings.model, {
    model: "qwen2.5:7b",
    provider: "ollama",
    baseUrl: "http://127.0.0.1:11434/v1",
    apiKey: undefined,
    apiKeyVariable: "OLLAMA_API_KEY",
    apiKeySource: undefined,
    dotenvPath: DOTENV,
    timeoutSeconds: 120,
    maxRetries: 3,
    temperature: undefined,
    maxTokens: undefined,
  });
});

Deno.test("readAgentSettings: every configured value is read", () => {
  const settings = agentSettings(
    [
      "model:",
      "  default: ' my-model '",
      "  provider: custom",
      "  base_url: http://10.0.0.2:9000/v1",
      "  timeout_seconds: 30",
      "  max_retries: 0",
      "  temperature: 0",
      "  max_tokens: 512",
      "agent:",
      "  max_iterations: 5",
      "  run_timeout_seconds: 0",
      "  system_prompt: '  Answer in French.  '",
      "approvals:",
      "  gateway: ' ALLOW '",
      "  timeout_seconds: 15",
      "",
    ].join("\n"),
  );

  assert.deepEqual(settings.limits, { maxIterations: 5, runTimeoutSeconds: 0 });
  assert.equal(settings.systemPrompt, "Answer in French.");
  assert.equal(settings.nonInteractiveApprovals, "allow");
  assert.equal(settings.approvalTimeoutSeconds, 15);
  assert.equal(settings.model?.model, "my-model");
  assert.equal(settings.model?.timeoutSeconds, 30);
  assert.equal(settings.model?.maxRetries, 0);
  assert.equal(settings.model?.temperature, 0);
  assert.equal(settings.model?.maxTokens, 512);
});

Deno.test("readAgentSettings: a blank system prompt counts as none", () => {
  assert.equal(agentSettings(`${OLLAMA}agent:\n  system_prompt: '   '\n`).systemPrompt, undefined);
});

Deno.test("readAgentSettings: approvals.gateway deny is accepted", () => {
  assert.equal(agentSettings("approvals:\n  gateway: deny\n").nonInteractiveApprovals, "deny");
});

// --- no model ------------------------------------------------------------------------------

Deno.test("a model section that is not a mapping is a problem at `model` showing the mapping form", () => {
  for (
    const [yaml, got, fix] of [
      ["model: gpt-4o\n", 'got string "gpt-4o"', 'model: {default: "gpt-4o"}'],
      ["model: [a, b]\n", "got a list", "model: {default: <model id>"],
    ]
  ) {
    const problem = agentSettings(yaml).modelProblem;
    assert.ok(problem instanceof ConfigError, yaml);
    assert.equal(problem.location.key, "model");
    assert.equal(problem.location.line, 1);
    assert.ok(problem.message.includes(got), problem.message);
    assert.ok(problem.message.includes(fix), problem.message);
    assert.doesNotMatch(problem.message, /no model is configured/);
  }
});

Deno.test("no model.default: readAgentSettings does not throw, modelProblem says what to add", () => {
  for (const yaml of ["", "model:\n  provider: ollama\n", "model:\n  default: '   '\n"]) {
    const settings = agentSettings(yaml);

    assert.equal(settings.model, undefined, yaml);
    assert.ok(settings.modelProblem instanceof ConfigError, yaml);
    assert.equal(settings.modelProblem.location.key, "model.default");
    assert.match(settings.modelProblem.message, /no model is configured/);
    assert.match(settings.modelProblem.message, /model\.default/);
    assert.match(settings.modelProblem.message, /config\.yaml/);
    // The rest is still read.
    assert.deepEqual(settings.limits, { maxIterations: 20, runTimeoutSeconds: 600 });
  }
});

Deno.test("no model.default: readModelSettings throws the ConfigError", () => {
  const error = configError(() => modelSettings("agent:\n  max_iterations: 3\n"));

  assert.equal(error.location.key, "model.default");
  assert.match(error.message, /add `model:` with `default: <model id>`/);
});

// --- providers -----------------------------------------------------------------------------

Deno.test("provider table: known providers have their OpenAI-compatible base URL", () => {
  const keyed = scope({}, {
    OPENAI_API_KEY: "k",
    OPENROUTER_API_KEY: "k",
    GROQ_API_KEY: "k",
    DEEPSEEK_API_KEY: "k",
    GEMINI_API_KEY: "k",
  });
  const expected: Record<string, string> = {
    openai: "https://api.openai.com/v1",
    openrouter: "https://openrouter.ai/api/v1",
    groq: "https://api.groq.com/openai/v1",
    deepseek: "https://api.deepseek.com/v1",
    gemini: "https://generativelanguage.googleapis.com/v1beta/openai",
    ollama: "http://127.0.0.1:11434/v1",
    lmstudio: "http://127.0.0.1:1234/v1",
    llamacpp: "http://127.0.0.1:8080/v1",
    vllm: "http://127.0.0.1:8000/v1",
  };
  for (const [provider, baseUrl] of Object.entries(expected)) {
    const settings = modelSettings(`model:\n  default: m\n  provider: ${provider}\n`, keyed);
    assert.equal(settings.provider, provider);
    assert.equal(settings.baseUrl, baseUrl, provider);
  }
});

Deno.test("provider: case and spaces do not matter", () => {
  const settings = modelSettings(
    "model:\n  default: m\n  provider: ' OpenAI '\n",
    scope({ OPENAI_API_KEY: "k" }),
  );

  assert.equal(settings.provider, "openai");
  assert.equal(settings.baseUrl, "https://api.openai.com/v1");
});

Deno.test("base_url: trailing slashes are trimmed and it overrides the provider's URL", () => {
  const settings = modelSettings(
    "model:\n  default: m\n  provider: ollama\n  base_url: ' http://gpu-box:11434/v1/// '\n",
  );

  assert.equal(settings.baseUrl, "http://gpu-box:11434/v1");
});

Deno.test("provider defaults to custom when base_url is set (no key needed)", () => {
  const settings = modelSettings("model:\n  default: m\n  base_url: https://llm.example.com/v1\n");

  assert.equal(settings.provider, "custom");
  assert.equal(settings.apiKeyVariable, "CUSTOM_API_KEY");
  assert.equal(settings.apiKey, undefined);
});

Deno.test("provider defaults to openai when base_url is not set", () => {
  const settings = modelSettings("model:\n  default: m\n", scope({ OPENAI_API_KEY: "sk-1" }));

  assert.equal(settings.provider, "openai");
  assert.equal(settings.baseUrl, "https://api.openai.com/v1");
  assert.equal(settings.apiKey, "sk-1");
  assert.equal(settings.apiKeyVariable, "OPENAI_API_KEY");
});

Deno.test("an unknown provider without base_url → ConfigError at model.provider", () => {
  const error = configError(() => modelSettings("model:\n  default: m\n  provider: acme\n"));

  assertAt(error, "model.provider", 3);
  assert.match(error.message, /provider 'acme' has no known endpoint/);
  assert.match(error.message, /set model\.base_url/);
  assert.match(
    error.message,
    /\(the providers with a built-in endpoint: openai, openrouter, .*, vllm\)$/,
  );
  assert.doesNotMatch(error.message, /built-in endpoint: .*\b(local|custom)\b/);
});

Deno.test("a misspelt provider without base_url → the error names the provider meant", () => {
  const error = configError(() => modelSettings("model:\n  default: m\n  provider: opneai\n"));

  assertAt(error, "model.provider", 3);
  assert.match(
    error.message,
    /provider 'opneai' has no known endpoint\. Fix: set model\.provider to `openai` if that is what you meant, or set model\.base_url to /,
  );
});

Deno.test("an unknown provider with base_url works without a key, keyed by <PROVIDER>_API_KEY", () => {
  const yaml = "model:\n  default: m\n  provider: acme-ai\n  base_url: https://acme.example/v1\n";

  const keyless = modelSettings(yaml);
  const keyed = modelSettings(yaml, scope({ ACME_AI_API_KEY: "a-key" }));

  assert.equal(keyless.apiKey, undefined);
  assert.equal(keyless.apiKeyVariable, "ACME_AI_API_KEY");
  assert.equal(keyed.apiKey, "a-key");
});

Deno.test("custom:<name> providers are keyless and read CUSTOM_<NAME>_API_KEY", () => {
  const settings = modelSettings(
    "model:\n  default: m\n  provider: custom:work\n  base_url: https://work.example/v1\n",
    scope({ CUSTOM_WORK_API_KEY: "w" }),
  );

  assert.equal(settings.apiKeyVariable, "CUSTOM_WORK_API_KEY");
  assert.equal(settings.apiKey, "w");
});

// --- API keys ------------------------------------------------------------------------------

Deno.test("a provider needing a key without one → ConfigError naming the variable and .env", () => {
  const error = configError(() => modelSettings("model:\n  default: m\n  provider: openai\n"));

  assertAt(error, "model.provider", 3);
  assert.match(error.message, /provider 'openai' needs an API key and OPENAI_API_KEY is not set/);
  assert.match(error.message, /add OPENAI_API_KEY=<your key> to \/h\/\.env/);
  assert.match(error.message, /model\.api_key_env/);
});

Deno.test("missing key with the provider implied → located at model.default", () => {
  const error = configError(() => modelSettings("model:\n  default: m\n"));

  assertAt(error, "model.default", 2);
  assert.match(error.message, /OPENAI_API_KEY/);
});

Deno.test("missing key: readAgentSettings keeps it in modelProblem instead of throwing", () => {
  const settings = agentSettings("model:\n  default: m\n  provider: openrouter\n");

  assert.equal(settings.model, undefined);
  assert.ok(settings.modelProblem instanceof ConfigError);
  assert.match(settings.modelProblem.message, /OPENROUTER_API_KEY/);
  assert.match(settings.modelProblem.message, /\/h\/\.env/);
});

Deno.test("readAgentSettings without paths names <home>/.env", () => {
  const settings = readAgentSettings({
    source: ConfigSource.parse(FILE, "model:\n  default: m\n"),
    secrets: scope(),
  });

  assert.match(settings.modelProblem!.message, /to <home>\/\.env/);
});

Deno.test("a blank key counts as missing; a key is trimmed", () => {
  const yaml = "model:\n  default: m\n  provider: openai\n";

  configError(() => modelSettings(yaml, scope({ OPENAI_API_KEY: "   " })));
  assert.equal(modelSettings(yaml, scope({ OPENAI_API_KEY: " sk-x \n" })).apiKey, "sk-x");
});

Deno.test("the key in .env wins over the process environment", () => {
  const yaml = "model:\n  default: m\n  provider: openai\n";

  const both = modelSettings(
    yaml,
    scope({ OPENAI_API_KEY: "from-dotenv" }, { OPENAI_API_KEY: "from-env" }),
  );
  const envOnly = modelSettings(yaml, scope({}, { OPENAI_API_KEY: "from-env" }));

  assert.equal(both.apiKey, "from-dotenv");
  assert.equal(envOnly.apiKey, "from-env");
  // Where it was found, for the message when the endpoint refuses it.
  assert.equal(both.apiKeySource, ".env");
  assert.equal(envOnly.apiKeySource, "environment");
  assert.equal(both.dotenvPath, DOTENV);
  // A blank value is no key, wherever it is.
  assert.equal(modelSettings(OLLAMA, scope({ OLLAMA_API_KEY: " " })).apiKeySource, undefined);
});

Deno.test("model.api_key_env holding the key itself → ConfigError that does not echo it", () => {
  for (const provider of ["openai", "custom"]) {
    const error = configError(() =>
      modelSettings(
        `model:\n  default: m\n  provider: ${provider}\n  base_url: http://127.0.0.1:1/v1\n` +
          "  api_key_env: sk-proj-SECRET-0123\n",
      )
    );
    assertAt(error, "model.api_key_env", 5);
    assert.ok(!error.message.includes("SECRET"), error.message);
    assert.match(error.message, /not shown: it may be the key itself/);
    assert.ok(
      error.message.includes(`as ${provider.toUpperCase()}_API_KEY=<your key> and remove`),
      error.message,
    );
  }
});

Deno.test("model.api_key_env picks another variable", () => {
  const yaml = "model:\n  default: m\n  provider: openai\n  api_key_env: WORK_OPENAI_KEY\n";

  const settings = modelSettings(
    yaml,
    scope({ OPENAI_API_KEY: "not-this-one" }, { WORK_OPENAI_KEY: "work-key" }),
  );
  const error = configError(() => modelSettings(yaml, scope({ OPENAI_API_KEY: "not-this-one" })));

  assert.equal(settings.apiKeyVariable, "WORK_OPENAI_KEY");
  assert.equal(settings.apiKey, "work-key");
  assert.match(error.message, /WORK_OPENAI_KEY is not set/);
  assert.doesNotMatch(error.message, /OPENAI_API_KEY/);
});

Deno.test("keyless providers need no key: ollama, lmstudio, custom", () => {
  for (
    const yaml of [
      "model:\n  default: m\n  provider: ollama\n",
      "model:\n  default: m\n  provider: lmstudio\n",
      "model:\n  default: m\n  provider: custom\n  base_url: https://llm.example.com/v1\n",
    ]
  ) {
    const settings = modelSettings(yaml);
    assert.equal(settings.apiKey, undefined, yaml);
  }
});

Deno.test("a loopback base_url needs no key even for openai; a remote one does", () => {
  for (
    const base of ["http://localhost:8080/v1", "http://127.0.0.5:1234/v1", "http://[::1]:8000/v1"]
  ) {
    const settings = modelSettings(
      `model:\n  default: m\n  provider: openai\n  base_url: ${base}\n`,
    );
    assert.equal(settings.apiKey, undefined, base);
    assert.equal(settings.baseUrl, base);
  }
  const error = configError(() =>
    modelSettings(
      "model:\n  default: m\n  provider: openai\n  base_url: https://proxy.example/v1\n",
    )
  );
  assert.match(error.message, /OPENAI_API_KEY is not set/);
});

// --- invalid values ------------------------------------------------------------------------

const AGENT_LEVEL_INVALID: Array<[string, string, string, RegExp]> = [
  ["agent.max_iterations", "agent:\n  max_iterations: 0\n", "0", /from 1 to 10000, got 0/],
  ["agent.max_iterations", "agent:\n  max_iterations: 2.5\n", "2.5", /whole number, got 2\.5/],
  ["agent.max_iterations", "agent:\n  max_iterations: true\n", "true", /got true/],
  ["agent.run_timeout_seconds", 'agent:\n  run_timeout_seconds: "abc"\n', "abc", /got "abc"/],
  ["agent.run_timeout_seconds", "agent:\n  run_timeout_seconds: -1\n", "-1", /got -1/],
  ["approvals.gateway", "approvals:\n  gateway: maybe\n", "maybe", /expected deny or allow/],
  ["approvals.timeout_seconds", "approvals:\n  timeout_seconds: 0\n", "0", /from 1 to 86400/],
];

for (const [key, yaml, value, problem] of AGENT_LEVEL_INVALID) {
  Deno.test(`readAgentSettings: ${key}: ${value} → ConfigError naming the key and line`, () => {
    const error = configError(() => agentSettings(`${OLLAMA}${yaml}`));

    assertAt(error, key, 5);
    assert.match(error.message, problem);
    assert.ok(error.fix?.includes(key), error.fix);
  });
}

const MODEL_LEVEL_INVALID: Array<[string, string, RegExp]> = [
  ["model.max_retries", "max_retries: 11", /from 0 to 10, got 11/],
  ["model.max_retries", "max_retries: 1.5", /whole number/],
  ["model.timeout_seconds", "timeout_seconds: 0", /from 1 to 3600/],
  ["model.temperature", "temperature: 3", /from 0 to 2, got 3/],
  ["model.temperature", "temperature: [1]", /got \[1\]/],
  ["model.max_tokens", "max_tokens: 0", /from 1 to 1000000/],
  ["model.base_url", "base_url: ftp://x", /"ftp:\/\/x" is not an http\(s\) URL/],
  ["model.base_url", "base_url: not a url", /is not an http\(s\) URL/],
];

for (const [key, line, problem] of MODEL_LEVEL_INVALID) {
  Deno.test(`readModelSettings: ${line} → ConfigError naming ${key} and the line`, () => {
    const yaml = `${OLLAMA}  ${line}\n`;

    const error = configError(() => modelSettings(yaml));
    // readAgentSettings does not throw for model.* problems: they wait in modelProblem.
    const settings = agentSettings(yaml);

    assertAt(error, key, 4);
    assert.match(error.message, problem);
    assert.equal(settings.model, undefined);
    assert.equal(settings.modelProblem?.message, error.message);
  });
}

Deno.test("numeric strings are accepted as numbers", () => {
  const settings = agentSettings(
    [
      "model:",
      "  default: m",
      "  provider: ollama",
      "  max_retries: '0'",
      "  temperature: ' 0.5 '",
      "  timeout_seconds: '45'",
      "agent:",
      "  max_iterations: '7'",
      "  run_timeout_seconds: '90.5'",
      "approvals:",
      "  timeout_seconds: '30'",
      "",
    ].join("\n"),
  );

  assert.deepEqual(settings.limits, { maxIterations: 7, runTimeoutSeconds: 90.5 });
  assert.equal(settings.approvalTimeoutSeconds, 30);
  assert.equal(settings.model?.maxRetries, 0);
  assert.equal(settings.model?.temperature, 0.5);
  assert.equal(settings.model?.timeoutSeconds, 45);
});

Deno.test("an empty string is not a number", () => {
  const error = configError(() => agentSettings("agent:\n  max_iterations: ''\n"));

  assertAt(error, "agent.max_iterations", 2);
});

Deno.test("null values mean the default", () => {
  const settings = agentSettings(`${OLLAMA}  max_retries:\nagent:\n  max_iterations: ~\n`);

  assert.equal(settings.limits.maxIterations, 20);
  assert.equal(settings.model?.maxRetries, 3);
});

Deno.test("readAgentSettings: an agent or approvals section that is not a mapping is an error at it", () => {
  const model = "model:\n  default: m\n  base_url: http://127.0.0.1:1/v1\n";
  for (
    const [yaml, key, line] of [
      [`${model}agent: 5\n`, "agent", 4],
      [`${model}agent: [1, 2]\n`, "agent", 4],
      [`${model}approvals: yes\n`, "approvals", 4],
    ] as const
  ) {
    const error = configError(() => agentSettings(yaml));
    assert.deepEqual([error.location.key, error.location.line], [key, line], error.message);
    assert.match(error.message, /expected a mapping of settings/);
  }
});
