/**
 * The `model`, `agent` and `approvals` sections of `config.yaml`, read once into typed settings
 * with errors that name the file, key and fix.
 *
 * @module
 */
import {
  type ConfigSource,
  integerAt,
  isPlainObject,
  numberAt,
  type ResolvedConfig,
} from "../home/config.ts";
import { ConfigError } from "../home/errors.ts";
import { isLoopbackHost } from "../home/loopback.ts";
import { closestKey } from "../home/suggest.ts";
import type { SecretScope, SecretSource } from "../home/secrets.ts";

/** Where the model is and how to reach it. */
export interface ModelSettings {
  /** Model id sent to the endpoint, e.g. `gpt-4.1-mini` or `qwen2.5:7b`. */
  model: string;
  /** Provider name as configured (lower case), e.g. `openai`, `openrouter`, `ollama`, `custom`. */
  provider: string;
  /** Base URL of the OpenAI-compatible API, without `/chat/completions`. */
  baseUrl: string;
  /** The API key, when one was found. */
  apiKey?: string;
  /** The variable the key is read from (`<PROVIDER>_API_KEY` or `model.api_key_env`). */
  apiKeyVariable: string;
  /** Where the key was found, when it was: `<home>/.env` or the process environment. */
  apiKeySource?: SecretSource;
  /** The `.env` file keys are read from, for messages. */
  dotenvPath?: string;
  /** Seconds one model request may take. */
  timeoutSeconds: number;
  /** Retries of a request answered 429/5xx or not answered at all. */
  maxRetries: number;
  /** Optional sampling temperature. */
  temperature?: number;
  /** Optional cap on the answer's tokens. */
  maxTokens?: number;
}

/** Limits of one run. */
export interface RunLimits {
  /** Model calls one run may make (`agent.max_iterations`, default 20). */
  maxIterations: number;
  /** Wall-clock limit of one run in seconds (`agent.run_timeout_seconds`, default 600; 0 = none). */
  runTimeoutSeconds: number;
}

/** How approvals are answered where nobody can be asked. */
export type ApprovalPolicy = "deny" | "allow";

/** The agent's settings as a whole. */
export interface AgentSettings {
  /** `undefined` when `model.default` is not set (a run then fails with a clear error). */
  model?: ModelSettings;
  /** Why `model` is missing, when it is. */
  modelProblem?: ConfigError;
  limits: RunLimits;
  /** Extra system prompt text (`agent.system_prompt`). */
  systemPrompt?: string;
  /** `approvals.gateway`: the answer for approvals in non-interactive runs (default `deny`). */
  nonInteractiveApprovals: ApprovalPolicy;
  /** `approvals.timeout_seconds`: how long an interactive approval prompt waits (default 60). */
  approvalTimeoutSeconds: number;
}

interface ProviderDefaults {
  baseUrl?: string;
  /** The provider's API refuses requests without a key. */
  needsKey: boolean;
}

/** Known providers: their OpenAI-compatible base URL and whether they need a key. */
const PROVIDERS: Record<string, ProviderDefaults> = {
  openai: { baseUrl: "https://api.openai.com/v1", needsKey: true },
  openrouter: { baseUrl: "https://openrouter.ai/api/v1", needsKey: true },
  anthropic: { baseUrl: "https://api.anthropic.com/v1", needsKey: true },
  google: { baseUrl: "https://generativelanguage.googleapis.com/v1beta/openai", needsKey: true },
  gemini: { baseUrl: "https://generativelanguage.googleapis.com/v1beta/openai", needsKey: true },
  deepseek: { baseUrl: "https://api.deepseek.com/v1", needsKey: true },
  mistral: { baseUrl: "https://api.mistral.ai/v1", needsKey: true },
  xai: { baseUrl: "https://api.x.ai/v1", needsKey: true },
  groq: { baseUrl: "https://api.groq.com/openai/v1", needsKey: true },
  together: { baseUrl: "https://api.together.xyz/v1", needsKey: true },
  nous: { baseUrl: "https://inference-api.nousresearch.com/v1", needsKey: true },
  huggingface: { baseUrl: "https://router.huggingface.co/v1", needsKey: true },
  ollama: { baseUrl: "http://127.0.0.1:11434/v1", needsKey: false },
  lmstudio: { baseUrl: "http://127.0.0.1:1234/v1", needsKey: false },
  llamacpp: { baseUrl: "http://127.0.0.1:8080/v1", needsKey: false },
  mlx: { baseUrl: "http://127.0.0.1:8080/v1", needsKey: false },
  vllm: { baseUrl: "http://127.0.0.1:8000/v1", needsKey: false },
  local: { needsKey: false },
  custom: { needsKey: false },
};

const DEFAULTS = {
  timeoutSeconds: 120,
  maxRetries: 3,
  maxIterations: 20,
  runTimeoutSeconds: 600,
  approvalTimeoutSeconds: 60,
};

/**
 * Reads the agent's settings from a resolved configuration. Malformed values are
 * {@linkcode ConfigError}s; a missing model is not (commands that need none still work) but is
 * kept in `modelProblem` for the run that needs it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ConfigSource } from "../home/config.ts";
 * import { SecretScope } from "../home/secrets.ts";
 * import { readAgentSettings } from "./settings.ts";
 * const source = ConfigSource.parse(
 *   "/h/config.yaml",
 *   "model:\n  default: qwen2.5:7b\n  provider: ollama\n",
 * );
 * const settings = readAgentSettings({ source, secrets: new SecretScope({}, () => undefined) });
 * assert(settings.model?.baseUrl === "http://127.0.0.1:11434/v1");
 * assert(settings.limits.maxIterations === 20);
 * ```
 */
export function readAgentSettings(
  config: Pick<ResolvedConfig, "source" | "secrets"> & { paths?: { dotenv: string } },
): AgentSettings {
  const { source, secrets } = config;
  const dotenv = config.paths?.dotenv ?? "<home>/.env";
  const limits: RunLimits = {
    maxIterations: integerAt(source, "agent.max_iterations", 1, 10_000) ??
      DEFAULTS.maxIterations,
    runTimeoutSeconds: numberAt(source, "agent.run_timeout_seconds", 0, 86_400) ??
      DEFAULTS.runTimeoutSeconds,
  };
  const policy = source.string("approvals.gateway")?.trim().toLowerCase();
  if (policy !== undefined && policy !== "deny" && policy !== "allow") {
    throw source.error(
      "approvals.gateway",
      `expected deny or allow, got ${JSON.stringify(policy)}`,
      "set approvals.gateway to deny (the default) or allow",
    );
  }
  let model: ModelSettings | undefined;
  let modelProblem: ConfigError | undefined;
  try {
    model = readModelSettings(source, secrets, dotenv);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    modelProblem = error;
  }
  return {
    model,
    modelProblem,
    limits,
    systemPrompt: source.string("agent.system_prompt")?.trim() || undefined,
    nonInteractiveApprovals: (policy as ApprovalPolicy | undefined) ?? "deny",
    approvalTimeoutSeconds: numberAt(source, "approvals.timeout_seconds", 1, 86_400) ??
      DEFAULTS.approvalTimeoutSeconds,
  };
}

/**
 * Reads `model.*`. Throws a {@linkcode ConfigError} when no model is configured, the provider
 * has no known endpoint and no `model.base_url` is given, or a provider that needs a key has
 * none in `.env` or the environment.
 */
export function readModelSettings(
  source: ConfigSource,
  secrets: SecretScope,
  dotenv = "<home>/.env",
): ModelSettings {
  const section = source.get("model");
  if (section !== undefined && section !== null && !isPlainObject(section)) {
    throw source.error(
      "model",
      `expected a mapping of model settings, got ${
        Array.isArray(section) ? "a list" : `${typeof section} ${JSON.stringify(section)}`
      }`,
      typeof section === "string"
        ? `write it as \`model: {default: ${JSON.stringify(section)}}\` (and provider/base_url)`
        : "write it as `model: {default: <model id>, provider: <provider>}`",
    );
  }
  const model = source.string("model.default")?.trim();
  if (!model) {
    throw source.error(
      "model.default",
      "no model is configured",
      "add `model:` with `default: <model id>` (and `provider:` / `base_url:`) to config.yaml, " +
        "e.g. `model: {default: gpt-4.1-mini, provider: openai}`",
    );
  }
  const rawProvider = source.string("model.provider")?.trim().toLowerCase();
  const configuredBase = source.string("model.base_url")?.trim();
  const provider = rawProvider || (configuredBase ? "custom" : "openai");
  const known = PROVIDERS[provider] ?? (provider.startsWith("custom:") ? PROVIDERS.custom : {
    needsKey: false,
  });
  const baseUrl = (configuredBase || known.baseUrl)?.replace(/\/+$/, "");
  if (!baseUrl) {
    // A misspelt known provider (`opneai`) is far more likely than a custom endpoint.
    const builtIn = Object.keys(PROVIDERS).filter((name) => PROVIDERS[name].baseUrl);
    const meant = PROVIDERS[provider] ? undefined : closestKey(provider, builtIn);
    throw source.error(
      configuredBase === undefined ? "model.provider" : "model.base_url",
      `provider '${provider}' has no known endpoint`,
      (meant ? `set model.provider to \`${meant}\` if that is what you meant, or ` : "") +
        "set model.base_url to the OpenAI-compatible API root, e.g. http://127.0.0.1:8080/v1" +
        (meant ? "" : ` (the providers with a built-in endpoint: ${builtIn.join(", ")})`),
    );
  }
  let parsed: URL;
  try {
    parsed = new URL(baseUrl);
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new TypeError();
  } catch {
    throw source.error(
      "model.base_url",
      `${JSON.stringify(baseUrl)} is not an http(s) URL`,
      "set model.base_url to the API root, e.g. https://api.openai.com/v1",
    );
  }
  const defaultVariable = `${provider.replace(/[^A-Za-z0-9]/g, "_").toUpperCase()}_API_KEY`;
  const configuredVariable = source.string("model.api_key_env")?.trim();
  if (configuredVariable && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(configuredVariable)) {
    // Most often the key itself pasted there: never echo it.
    throw source.error(
      "model.api_key_env",
      "expected the name of the variable that holds the API key (letters, digits and _), " +
        "got something else (not shown: it may be the key itself)",
      `put the key in ${dotenv} as ${defaultVariable}=<your key> and remove ` +
        "model.api_key_env, or set it to the variable's name",
    );
  }
  const apiKeyVariable = configuredVariable || defaultVariable;
  const apiKey = secrets.get(apiKeyVariable)?.trim() || undefined;
  if (!apiKey && known.needsKey && !isLoopbackHost(parsed.hostname)) {
    throw source.error(
      rawProvider ? "model.provider" : "model.default",
      `provider '${provider}' needs an API key and ${apiKeyVariable} is not set`,
      `add ${apiKeyVariable}=<your key> to ${dotenv} (or set model.api_key_env to the variable ` +
        "that holds it)",
    );
  }
  return {
    model,
    provider,
    baseUrl,
    apiKey,
    apiKeyVariable,
    apiKeySource: apiKey ? secrets.source(apiKeyVariable) : undefined,
    dotenvPath: dotenv,
    timeoutSeconds: numberAt(source, "model.timeout_seconds", 1, 3600) ?? DEFAULTS.timeoutSeconds,
    maxRetries: integerAt(source, "model.max_retries", 0, 10) ?? DEFAULTS.maxRetries,
    temperature: numberAt(source, "model.temperature", 0, 2),
    maxTokens: integerAt(source, "model.max_tokens", 1, 1_000_000),
  };
}
