/**
 * The MCP SDK's OAuth code reports what it does on `console.warn`, as lines starting with
 * `[mcp-sdk]` (an `invalid_grant` or `invalid_client` answer that makes it discard credentials and
 * retry, a refresh that falls back to a new authorization, a provider without
 * `discoveryState()`); it takes no logger. The provider reports the outcome in the user's terms
 * (`run agent mcp login <name>`), so these lines are dropped rather than printed beside it.
 * Every other console output, other `[mcp-sdk]` lines included, passes through untouched.
 *
 * @module
 */

/** The SDK's OAuth lines (`warnCredentialInvalidation`, `auth`, `readStoredCredential` …). */
const SDK_OAUTH_LINE =
  /^\[mcp-sdk\] (OAuth |Could not refresh OAuth|SEP-2352|OAuthClientProvider |Omitting `expectedIssuer`)/;

/** Marks a `warn` that already filters, so installing twice wraps once. */
const FILTERING: unique symbol = Symbol.for("agent.mcp.oauth.sdkConsoleFilter");

type Warn = ((...args: unknown[]) => void) & { [FILTERING]?: true };

/**
 * Makes `target.warn` (the global console by default) drop the SDK's OAuth lines; idempotent.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { quietSdkOAuthWarnings } from "./_sdk_console.ts";
 * const seen: unknown[][] = [];
 * const target = { warn: (...args: unknown[]) => void seen.push(args) };
 * quietSdkOAuthWarnings(target);
 * target.warn('[mcp-sdk] OAuth "invalid_grant" — invalidating the stored tokens and retrying authorization.');
 * target.warn("something else");
 * assert.deepEqual(seen, [["something else"]]);
 * ```
 */
export function quietSdkOAuthWarnings(
  target: { warn: (...args: unknown[]) => void } = console,
): void {
  const current = target.warn as Warn;
  if (current[FILTERING]) return;
  const filtered: Warn = (...args: unknown[]) => {
    if (typeof args[0] === "string" && SDK_OAUTH_LINE.test(args[0])) return;
    current.apply(target, args);
  };
  filtered[FILTERING] = true;
  target.warn = filtered;
}
