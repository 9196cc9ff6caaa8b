/**
 * Delivery targets (decisions.md §6 "Targets"): where the answer of a run, or the rendered
 * prompt of a deliver-only route, is sent — the log, the code-host item the event came from, a
 * Telegram, Discord or Slack chat, or a GitHub or GitLab comment. Each platform is called through
 * its real HTTP API at a configurable base URL, with a timeout, the message split at the
 * platform's limit, and every identifier checked before it is used.
 *
 * @module
 */
import type { SecretSource } from "../home/secrets.ts";
import { DELIVERY_TARGETS, type DeliveryTargetName } from "../webhook/routes.ts";
import { postJson } from "./_http.ts";
import { isRecord, shownValue } from "./_json.ts";
import {
  DEFAULT_API_BASE_URLS,
  MESSAGE_LIMITS,
  type PlatformTarget,
  preparePlatformCall,
} from "./_platforms.ts";
import type { Checked } from "./identifiers.ts";
import { resolveOrigin } from "./origin.ts";
import { splitMessage } from "./split.ts";

export { MESSAGE_LIMITS, type PlatformTarget };

/** Target calls give up after this long (per HTTP request). */
export const DELIVERY_TIMEOUT_MS = 8000;

/** A final answer that is exactly this (after trimming) is not delivered. */
export const SILENT_ANSWER = "[SILENT]";

/** What a delivery needs from the running service; injectable for tests. */
export interface DeliveryContext {
  /**
   * Tokens and home channels: a `SecretScope` (`<home>/.env` first, then the environment). With
   * its `source`, a failure names the environment variable when the value came from there.
   */
  secrets: {
    get(name: string): string | undefined;
    source?(name: string): SecretSource | undefined;
  };
  /**
   * The `.env` file of the home (`config.paths.dotenv`), named where a failure says to set or
   * check a token or home channel. Default `<home>/.env`, literally.
   */
  dotenv?: string;
  /**
   * The API root of a platform target: `platforms.<target>.extra.api_base_url`, else
   * {@linkcode defaultApiBaseUrl}.
   */
  apiBaseUrl(target: PlatformTarget): string;
  /** Where the `log` target (and an unresolvable `origin`) writes the message. */
  log: (message: string, properties?: Record<string, unknown>) => void;
  /** Where warnings go. Default: `log` with `level: "warning"`. */
  warn?: (message: string, properties?: Record<string, unknown>) => void;
  /** HTTP client. Default the global `fetch`. */
  fetch?: typeof fetch;
  /** Timeout of each HTTP request in ms. Default {@linkcode DELIVERY_TIMEOUT_MS}. */
  timeoutMs?: number;
}

/** One message to deliver. */
export interface DeliveryRequest {
  target: DeliveryTargetName;
  message: string;
  /** The route's `deliver_extra`, already rendered against the payload. */
  extra: Record<string, unknown>;
  /** The event's payload; the `origin` target reads the code-host item from it. */
  payload: Record<string, unknown>;
  event: string;
  route: string;
  /** The sender's delivery id, named in log lines. */
  deliveryId?: string;
  /** Deliver-only: an unresolvable origin is a failure instead of a log line. */
  direct: boolean;
  /**
   * Parts of the split message an earlier attempt already delivered: they are not sent again
   * (a retry after part 3 of 5 failed starts at part 3). Default 0.
   */
  skipParts?: number;
  /**
   * Called after each part of a split message that went out, except the last, with the count of
   * parts delivered so far (skipped ones included), so that a caller can keep that progress
   * somewhere a crash does not erase.
   */
  onPartSent?: (partsSent: number) => void;
}

/** How a delivery went. */
export type DeliveryResult =
  | {
    ok: true;
    target: string;
    /** Messages sent by this call; 0 for a silent answer, and fewer when `skipParts` is set. */
    parts: number;
    /** Where it went (`telegram chat -100123`, `github_comment octo/app#7`), or `silent`. */
    detail?: string;
  }
  | {
    ok: false;
    target: string;
    /** Whether the same delivery may succeed later (timeout, 429, 5xx, unreachable). */
    retryable: boolean;
    /** What went wrong and what to fix; never holds a token. */
    error: string;
    /**
     * Parts delivered before the failure, when the message was split, counted from the first
     * (those skipped with `skipParts` included).
     */
    partsSent?: number;
    /** When the platform asked to wait before trying again. */
    retryAfterMs?: number;
  };

const PLATFORM_TARGETS = Object.keys(MESSAGE_LIMITS) as PlatformTarget[];
/** The variable (`<home>/.env` or the environment) holding each platform target's token. */
const TOKEN_VARIABLE: Record<PlatformTarget, string> = {
  telegram: "TELEGRAM_BOT_TOKEN",
  discord: "DISCORD_BOT_TOKEN",
  slack: "SLACK_BOT_TOKEN",
  github_comment: "GITHUB_TOKEN",
  gitlab_comment: "GITLAB_TOKEN",
};
const TOKEN_VARIABLES = Object.values(TOKEN_VARIABLE);

/**
 * What keeps every delivery to `target` from working because a token is not set, or `undefined`
 * when the token it needs is there (`log` needs none; `origin` needs `GITHUB_TOKEN` or
 * `GITLAB_TOKEN`, for the code host the event comes from). Said when a route is made and when the
 * gateway starts, so that the first event is not the first to tell.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { missingToken } from "./targets.ts";
 * const none = { get: () => undefined };
 * assert.equal(missingToken("telegram", none), "TELEGRAM_BOT_TOKEN is not set");
 * assert.equal(missingToken("log", none), undefined);
 * ```
 */
export function missingToken(
  target: DeliveryTargetName,
  secrets: DeliveryContext["secrets"],
): string | undefined {
  const set = (name: string) => Boolean(secrets.get(name)?.trim());
  if (target === "log") return undefined;
  if (target === "origin") {
    return set("GITHUB_TOKEN") || set("GITLAB_TOKEN")
      ? undefined
      : "neither GITHUB_TOKEN (for GitHub events) nor GITLAB_TOKEN (for GitLab events) is set";
  }
  const variable = TOKEN_VARIABLE[target];
  if (set(variable)) return undefined;
  // An empty line in .env hides the environment's value: "not set" would send the user there.
  const source = secrets.source?.(variable);
  if (source === ".env") {
    return `${variable} is empty in .env, which is read before the environment`;
  }
  if (source === "environment") return `the environment variable ${variable} is empty`;
  return `${variable} is not set`;
}

/**
 * The public API root of a platform target: `https://api.telegram.org`,
 * `https://slack.com/api`, `https://discord.com/api/v10`, `https://api.github.com`,
 * `https://gitlab.com/api/v4`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { defaultApiBaseUrl } from "./targets.ts";
 * assert.equal(defaultApiBaseUrl("gitlab_comment"), "https://gitlab.com/api/v4");
 * ```
 */
export function defaultApiBaseUrl(target: PlatformTarget): string {
  return DEFAULT_API_BASE_URLS[target];
}

/**
 * Whether a final answer is the silent marker `[SILENT]` (surrounding blanks ignored).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isSilentAnswer } from "./targets.ts";
 * assert.equal(isSilentAnswer(" [SILENT]\n"), true);
 * assert.equal(isSilentAnswer("[SILENT] but not quite"), false);
 * ```
 */
export function isSilentAnswer(message: string): boolean {
  return message.trim() === SILENT_ANSWER;
}

/**
 * Delivers a message to its target and says how it went; never throws.
 *
 * - `[SILENT]` is not delivered (`ok`, 0 parts, detail `silent`), and nothing is requested.
 * - `log` writes the message through `context.log`.
 * - `origin` comments on the GitHub issue or pull request, or GitLab issue or merge request, the
 *   payload is about; when there is none, the message is logged with a warning, or, for a
 *   deliver-only route (`direct`), the delivery fails.
 * - `telegram`, `discord`, `slack`: the bot token from `TELEGRAM_BOT_TOKEN`, `DISCORD_BOT_TOKEN`
 *   or `SLACK_BOT_TOKEN`; the chat from `deliver_extra.chat_id`, else `<PLATFORM>_HOME_CHANNEL`.
 * - `github_comment`: `GITHUB_TOKEN`, `deliver_extra.repo` (`owner/name`) and `number`.
 * - `gitlab_comment`: `GITLAB_TOKEN`, `deliver_extra.project` (path or id), `iid`, and `kind`
 *   (`issue`, the default, or `merge_request`).
 * - A comment (`github_comment`, `gitlab_comment`, `origin`) gets a space before every `/` that
 *   starts a line, so that no line is a GitLab quick action or a ChatOps command given as the bot.
 * - Discord messages ping nobody (`allowed_mentions`); Slack text has `&`, `<` and `>` escaped, so
 *   `<!channel>` is shown, not sent; Telegram text is sent without `parse_mode` (no markup).
 *
 * Identifiers are checked against each platform's shape before any request. A long message is
 * split with {@linkcode splitMessage} at the platform's limit ({@linkcode MESSAGE_LIMITS}); parts
 * are sent in order, and the first failure stops the rest (`partsSent` says how many went);
 * `skipParts` resumes after the parts an earlier attempt delivered, and `onPartSent` hears of each
 * part that went out.
 * Timeouts, lost connections, 429 and 5xx answers are `retryable`; other refusals are not. Tokens
 * are replaced by `[REDACTED]` in every text of the result and in warnings.
 *
 * @param request What to deliver, where.
 * @param context Secrets, API roots, the log, and (for tests) `fetch` and the timeout.
 * @returns The result.
 *
 * @example Log, and a Slack channel (a local stand-in for the Slack Web API)
 * ```ts
 * import assert from "node:assert/strict";
 * import { deliver } from "./targets.ts";
 *
 * const seen: unknown[] = [];
 * const slack = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
 *   seen.push(await request.json());
 *   return Response.json({ ok: true, channel: "C0123456789", ts: "1700000000.000100" });
 * });
 * const context = {
 *   secrets: { get: (name: string) => name === "SLACK_BOT_TOKEN" ? "xoxb-example" : undefined },
 *   apiBaseUrl: () => `http://127.0.0.1:${slack.addr.port}/api`,
 *   log: (message: string) => seen.push(message),
 * };
 * const base = { extra: {}, payload: {}, event: "push", route: "ci", direct: false };
 *
 * assert.deepEqual(await deliver({ ...base, target: "log", message: "Build passed" }, context), {
 *   ok: true,
 *   target: "log",
 *   parts: 1,
 *   detail: "log",
 * });
 * const result = await deliver(
 *   { ...base, target: "slack", message: "Build passed", extra: { chat_id: "C0123456789" } },
 *   context,
 * );
 * assert.deepEqual(result, { ok: true, target: "slack", parts: 1, detail: "slack channel C0123456789" });
 * assert.deepEqual(seen, ["Build passed", { channel: "C0123456789", text: "Build passed" }]);
 * await slack.shutdown();
 * ```
 */
export async function deliver(
  request: DeliveryRequest,
  context: DeliveryContext,
): Promise<DeliveryResult> {
  const target = String(request.target);
  if (isSilentAnswer(request.message)) return { ok: true, target, parts: 0, detail: "silent" };
  // Tokens are sent trimmed; any of them may turn up in a platform's error text.
  const tokens = TOKEN_VARIABLES.map((name) => context.secrets.get(name)?.trim())
    .filter((token): token is string => Boolean(token));
  const redact = (text: string) => tokens.reduce(withoutToken, text);
  const warn = context.warn ??
    ((message: string, properties?: Record<string, unknown>) =>
      context.log(message, { ...properties, level: "warning" }));
  const scoped: DeliveryContext = {
    ...context,
    warn: (message, properties) => warn(redact(message), properties),
  };
  let result: DeliveryResult;
  try {
    result = await deliverTo(request, scoped);
  } catch (error) {
    result = {
      ok: false,
      target,
      retryable: false,
      error: `delivery to ${target} failed unexpectedly: ${
        error instanceof Error ? error.message : String(error)
      }`,
    };
  }
  if (!result.ok) return { ...result, error: redact(result.error) };
  return result.detail === undefined ? result : { ...result, detail: redact(result.detail) };
}

async function deliverTo(
  request: DeliveryRequest,
  context: DeliveryContext,
): Promise<DeliveryResult> {
  const target = String(request.target);
  if (target === "log") {
    context.log(request.message, {
      target,
      route: request.route,
      event: request.event,
      ...(request.deliveryId === undefined ? {} : { delivery_id: request.deliveryId }),
    });
    return { ok: true, target, parts: 1, detail: "log" };
  }
  if (target === "origin") return await deliverToOrigin(request, context);
  if ((PLATFORM_TARGETS as string[]).includes(target)) {
    return await deliverToPlatform(
      target as PlatformTarget,
      request.extra,
      request,
      context,
      target,
    );
  }
  return {
    ok: false,
    target,
    retryable: false,
    error: `unknown delivery target ${shownValue(target, 40)}; use one of ${
      DELIVERY_TARGETS.join(", ")
    }`,
  };
}

async function deliverToOrigin(
  request: DeliveryRequest,
  context: DeliveryContext,
): Promise<DeliveryResult> {
  const origin = resolveOrigin(isRecord(request.payload) ? request.payload : {});
  const where = {
    target: "origin",
    route: request.route,
    event: request.event,
    ...(request.deliveryId === undefined ? {} : { delivery_id: request.deliveryId }),
  };
  if ("unresolved" in origin) {
    if (request.direct) {
      return {
        ok: false,
        target: "origin",
        retryable: false,
        error: `origin: ${origin.unresolved}; a deliver-only route to origin needs events about ` +
          "a GitHub issue or pull request, or a GitLab issue or merge request. Fix: give the " +
          "route another target",
      };
    }
    context.warn?.(
      `origin (route ${request.route}): ${origin.unresolved}; the message is written to the ` +
        "log instead",
      where,
    );
    context.log(request.message, where);
    return {
      ok: true,
      target: "origin",
      parts: 1,
      detail: `log (${origin.unresolved})`,
    };
  }
  const extra = origin.target === "github_comment"
    ? { repo: origin.repo, number: origin.number }
    : { project: origin.project, kind: origin.kind, iid: origin.iid };
  return await deliverToPlatform(origin.target, extra, request, context, "origin");
}

async function deliverToPlatform(
  platform: PlatformTarget,
  extra: Record<string, unknown>,
  request: DeliveryRequest,
  context: DeliveryContext,
  target: string,
): Promise<DeliveryResult> {
  const label = target === platform ? platform : `${target} → ${platform}`;
  const fail = (error: string, more: { retryable?: boolean; partsSent?: number } = {}) => ({
    ok: false as const,
    target,
    retryable: more.retryable ?? false,
    error: `${label}: ${error}`,
    ...(more.partsSent === undefined ? {} : { partsSent: more.partsSent }),
  });
  const base = parseApiBaseUrl(platform, context.apiBaseUrl(platform));
  if (!base.ok) return fail(base.error);
  const call = preparePlatformCall(platform, {
    extra: isRecord(extra) ? extra : {},
    secrets: context.secrets,
    dotenv: context.dotenv ?? "<home>/.env",
    base: base.value,
  });
  if ("ok" in call) return fail(call.error);
  // A part of blanks only (a very long run of spaces) would be refused as an empty message.
  const message = call.prepare ? call.prepare(request.message) : request.message;
  const parts = splitMessage(message, call.limit).filter((part) => part.trim() !== "");
  if (parts.length === 0) {
    return fail(`the message is empty; nothing was sent to ${call.destination}`);
  }
  const options = {
    fetch: context.fetch ?? fetch,
    timeoutMs: context.timeoutMs ?? DELIVERY_TIMEOUT_MS,
  };
  const skip = Number.isSafeInteger(request.skipParts) ? Math.max(0, request.skipParts!) : 0;
  for (let index = skip; index < parts.length; index++) {
    const answer = await postJson(call.request(parts[index]), call, options);
    const verdict = "status" in answer ? call.judge(answer) : answer;
    if (!verdict.ok) {
      const which = parts.length === 1
        ? ""
        : `part ${index + 1} of ${parts.length} not sent (${index} sent before it): `;
      return {
        ...fail(`${call.destination}: ${which}${verdict.error}`, {
          retryable: verdict.retryable,
          partsSent: index,
        }),
        ...(verdict.retryAfterMs === undefined ? {} : { retryAfterMs: verdict.retryAfterMs }),
      };
    }
    if (index + 1 < parts.length) request.onPartSent?.(index + 1);
  }
  return {
    ok: true,
    target,
    parts: Math.max(0, parts.length - skip),
    detail: `${platform} ${call.destination}`,
  };
}

/** The shortest start of a token that a cut value may end in and that is still redacted. */
const MIN_CUT_TOKEN = 4;

/**
 * `text` with `token` as `[REDACTED]`, also where a value shown cut ends in the token's start
 * (`"ghp_abc…`): the value was cut before the redaction, which cannot find the whole token there.
 */
function withoutToken(text: string, token: string): string {
  return text.replaceAll(token, "[REDACTED]").split("…")
    .map((part, index, parts) => index === parts.length - 1 ? part : withoutTokenStart(part, token))
    .join("…");
}

/** `part` with a start of `token` at its end as `[REDACTED]`. */
function withoutTokenStart(part: string, token: string): string {
  for (let length = Math.min(token.length - 1, part.length); length >= MIN_CUT_TOKEN; length--) {
    if (part.endsWith(token.slice(0, length))) return `${part.slice(0, -length)}[REDACTED]`;
  }
  return part;
}

/** The configured API root, checked: an absolute http(s) URL without credentials or query. */
function parseApiBaseUrl(target: PlatformTarget, raw: string): Checked<URL> {
  const problem = (why: string) => ({
    ok: false as const,
    error: `platforms.${target}.extra.api_base_url is ${shownValue(raw, 80)}, ${why}; expected ` +
      `an http(s) API root such as ${DEFAULT_API_BASE_URLS[target]}`,
  });
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return problem("not a URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return problem("not http(s)");
  if (url.username || url.password) return problem("with credentials in it");
  if (url.search || url.hash) return problem("with a query or fragment");
  return { ok: true, value: url };
}
