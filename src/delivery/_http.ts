/**
 * One JSON POST to a platform API with a timeout, and the failures every platform shares
 * (unreachable, timeout, redirect, 429, 5xx, refused token), in words that say what to fix.
 *
 * @module
 */
import { parseJson } from "./_json.ts";
import { collapseWhitespace, cut } from "../home/text.ts";
import { waitSeconds } from "../home/seconds.ts";

/** One request to a platform API. */
export interface ApiRequest {
  url: URL;
  headers: Record<string, string>;
  body: unknown;
}

/** A platform's answer, body read. */
export interface ApiAnswer {
  status: number;
  headers: Headers;
  text: string;
  /** The body parsed as JSON; `undefined` when it is not JSON. */
  data: unknown;
}

/** A call that did not deliver. */
export interface CallFailure {
  ok: false;
  retryable: boolean;
  error: string;
  retryAfterMs?: number;
}

/** How a call names the API and the settings to fix, for messages. */
export interface ApiNames {
  /** E.g. `the Telegram Bot API at https://api.telegram.org/`. */
  api: string;
  /** The config key of the API root, e.g. `platforms.telegram.extra.api_base_url`. */
  baseKey: string;
  /**
   * Where the token was read, for a fix: `TELEGRAM_BOT_TOKEN in <home>/.env`, or `the environment
   * variable TELEGRAM_BOT_TOKEN` when the process environment supplied it.
   */
  tokenSetting: string;
}

/**
 * The most of an answer's body that is read. The platforms answer a message with a few KB (a
 * GitLab note echoes up to 1 000 000 characters, which the cut leaves out); a body past this is
 * not read on, so that a wrong base URL cannot fill the memory within the timeout.
 */
const MAX_ANSWER_BYTES = 1024 * 1024;

/**
 * Sends `request` as JSON; answers with the response (its body read up to
 * {@linkcode MAX_ANSWER_BYTES}) or a failure. Never follows redirects.
 */
export async function postJson(
  request: ApiRequest,
  names: ApiNames,
  options: { fetch: typeof fetch; timeoutMs: number },
): Promise<ApiAnswer | CallFailure> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  try {
    const response = await options.fetch(request.url, {
      method: "POST",
      headers: request.headers,
      body: JSON.stringify(request.body),
      // Following a redirect would send the token wherever it points.
      redirect: "manual",
      signal: timeout,
    });
    const { text, whole } = await readAnswer(response, MAX_ANSWER_BYTES);
    return {
      status: response.status,
      headers: response.headers,
      text,
      // A cut answer is no JSON, even where the cut happens to leave some.
      data: whole ? parseJson(text) : undefined,
    };
  } catch (error) {
    if (timeout.aborted) {
      return {
        ok: false,
        retryable: true,
        error: `${names.api} did not answer within ${options.timeoutMs / 1000} s`,
      };
    }
    return {
      ok: false,
      retryable: true,
      error: `cannot reach ${names.api} (${collapseWhitespace(messageOf(error))}). Fix: check ` +
        `${names.baseKey}, or try again when the service is up`,
    };
  }
}

/**
 * The failure of a non-2xx answer: 429 and 5xx may succeed later, the rest will not.
 *
 * @param detail The platform's own error text, already extracted.
 * @param hint What to fix when the platform rejected the request (not for 401, 429, 5xx; for 403
 *   only with `forbiddenIsDestination`).
 * @param forbiddenIsDestination The platform answers 403 when the bot may not write to the chat
 *   (Telegram, Discord: a bad token is their 401), so the fix is `hint`, not the token.
 */
export function httpFailure(
  answer: ApiAnswer,
  detail: string,
  names: ApiNames,
  options: { retryAfterMs?: number; hint?: string; forbiddenIsDestination?: boolean } = {},
): CallFailure {
  const { status } = answer;
  const said = detail ? `: ${detail}` : "";
  if (status >= 300 && status < 400) {
    const location = answer.headers.get("location") ?? "?";
    return {
      ok: false,
      retryable: false,
      error: `${names.api} redirects (HTTP ${status} to ${location}); requests are not followed ` +
        `there. Fix: set ${names.baseKey} to the final API root`,
    };
  }
  if (status === 429) {
    const retryAfterMs = options.retryAfterMs ?? retryAfterFromHeaders(answer.headers);
    return rateLimited(`${names.api} rate-limited the request (HTTP 429${said})`, retryAfterMs);
  }
  if (status >= 500) {
    return {
      ok: false,
      retryable: true,
      error: `${names.api} failed (HTTP ${status}${said}); it may work when tried again`,
      ...withRetryAfter(retryAfterFromHeaders(answer.headers)),
    };
  }
  if (status === 401 || (status === 403 && !options.forbiddenIsDestination)) {
    return {
      ok: false,
      retryable: false,
      error: `${names.api} refused the token (HTTP ${status}${said}). Fix: check ` +
        names.tokenSetting,
    };
  }
  return {
    ok: false,
    retryable: false,
    error: `${names.api} rejected the request (HTTP ${status}${said})` +
      (options.hint ? `. Fix: ${options.hint}` : ""),
  };
}

/** A retryable rate-limit failure, saying when to try again if known. */
export function rateLimited(error: string, retryAfterMs: number | undefined): CallFailure {
  // Said as the gateway's log says the wait before the next try (89.766 s is 89.8 s in both).
  const when = retryAfterMs === undefined ? "" : `; retry after ${waitSeconds(retryAfterMs)} s`;
  return { ok: false, retryable: true, error: `${error}${when}`, ...withRetryAfter(retryAfterMs) };
}

/** `Retry-After` in seconds or as an HTTP date, in ms; `undefined` when absent or unreadable. */
export function retryAfterFromHeaders(
  headers: Headers,
  nowMs: number = Date.now(),
): number | undefined {
  const header = headers.get("retry-after")?.trim();
  if (!header) return undefined;
  const seconds = Number(header);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - nowMs;
  return Number.isFinite(ms) && ms >= 0 ? Math.round(ms) : undefined;
}

/** Seconds (possibly fractional, as Telegram and Discord send them) in ms, if valid. */
export function secondsToMs(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) && value >= 0
    ? Math.round(value * 1000)
    : undefined;
}

/** A platform's error text made short and one-line; HTML error pages say nothing useful. */
export function shortDetail(text: string): string {
  const line = collapseWhitespace(text);
  return line.startsWith("<") ? "" : cut(line, 300);
}

/** The body of `response` as text, up to `maxBytes`; the rest is not read (the body is cancelled). */
async function readAnswer(
  response: Response,
  maxBytes: number,
): Promise<{ text: string; whole: boolean }> {
  if (response.body === null) return { text: "", whole: true };
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let room = maxBytes;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { text: text + decoder.decode(), whole: true };
    if (value.byteLength > room) {
      text += decoder.decode(value.subarray(0, room));
      await reader.cancel();
      return { text, whole: false };
    }
    room -= value.byteLength;
    text += decoder.decode(value, { stream: true });
  }
}

function withRetryAfter(ms: number | undefined): { retryAfterMs?: number } {
  return ms === undefined ? {} : { retryAfterMs: ms };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
