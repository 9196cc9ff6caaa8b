/**
 * The commented `config.yaml` a fresh `<home>` starts from, whichever command comes first:
 * `agent gateway run` writes it as it is, `agent gateway setup` with the user's choices applied.
 *
 * @module
 */
import { WEBHOOK_DEFAULTS } from "../webhook/settings.ts";

/** The port the starter `config.yaml` sets (the listener's default). */
export const STARTER_PORT: number = WEBHOOK_DEFAULTS.port;

/**
 * The starter `config.yaml`: the webhook platform enabled on {@linkcode STARTER_PORT}, every
 * interface, with comments explaining the keys and the `.env` variables that override them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parse } from "yaml";
 * import { STARTER_CONFIG } from "./starter_config.ts";
 * assert.deepEqual(parse(STARTER_CONFIG), {
 *   platforms: { webhook: { enabled: true, extra: { port: 8644 } } },
 * });
 * ```
 */
export const STARTER_CONFIG: string =
  `# agent configuration (created by \`agent gateway run\` or \`agent gateway setup\` on a fresh home).
# Reference: the README of the agent repository.

platforms:
  webhook:
    # The webhook listener of the gateway. WEBHOOK_ENABLED / WEBHOOK_PORT / WEBHOOK_SECRET in .env
    # (or the environment) override these keys one by one.
    enabled: true
    extra:
      port: ${STARTER_PORT}
      # host: 127.0.0.1   # leave out to listen on every interface, IPv4 and IPv6
      # The global secret is WEBHOOK_SECRET in .env; subscriptions have their own.

# The model agent runs use (OpenAI-compatible chat completions):
# model:
#   default: gpt-4.1-mini
#   provider: openai        # key: OPENAI_API_KEY in .env
`;
