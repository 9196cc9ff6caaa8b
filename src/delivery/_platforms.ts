/**
 * How each platform's API is called: token and destination from the route and `.env`, checked;
 * the URL, headers and JSON body of one message part; and how the platform's answer reads.
 *
 * @module
 */
import type { SecretSource } from "../home/secrets.ts";
import { AGENT_VERSION, USER_AGENT } from "../version.ts";
import {
  type ApiAnswer,
  type ApiNames,
  type ApiRequest,
  type CallFailure,
  httpFailure,
  rateLimited,
  retryAfterFromHeaders,
  secondsToMs,
  shortDetail,
} from "./_http.ts";
import { isRecord } from "./_json.ts";
import {
  checkDiscordChannel,
  type Checked,
  checkGithubRepo,
  checkGitlabProject,
  checkItemNumber,
  checkSlackChannel,
  checkTelegramChat,
} from "./identifiers.ts";

/** The targets that call a platform API. */
export type PlatformTarget = "telegram" | "discord" | "slack" | "github_comment" | "gitlab_comment";

/** The longest message part each platform takes, in UTF-16 code units. */
export const MESSAGE_LIMITS: Readonly<Record<PlatformTarget, number>> = {
  telegram: 4096,
  discord: 2000,
  // chat.postMessage cuts text after 40 000 characters; Slack advises parts of at most 4000.
  slack: 4000,
  github_comment: 65536,
  gitlab_comment: 1_000_000,
};

/** The public API roots, used unless `platforms.<target>.extra.api_base_url` says otherwise. */
export const DEFAULT_API_BASE_URLS: Readonly<Record<PlatformTarget, string>> = {
  telegram: "https://api.telegram.org",
  slack: "https://slack.com/api",
  discord: "https://discord.com/api/v10",
  github_comment: "https://api.github.com",
  gitlab_comment: "https://gitlab.com/api/v4",
};

/** Where a platform target's messages go, ready to send parts. */
export interface PlatformCall extends ApiNames {
  /** Said in results, e.g. `chat -1001234` or `octo/app#12`. */
  destination: string;
  limit: number;
  /** The token, to keep out of every text. */
  token: string;
  /** What the whole message becomes before it is split, when the platform needs it changed. */
  prepare?(message: string): string;
  request(part: string): ApiRequest;
  /** Whether the answer means the part was delivered. */
  judge(answer: ApiAnswer): { ok: true } | CallFailure;
}

/** What a platform call is built from. */
export interface PlatformInput {
  /** The rendered `deliver_extra` (or the fields of a resolved origin). */
  extra: Record<string, unknown>;
  /**
   * Tokens and home channels; `source` (a `SecretScope` has it) tells a value of the process
   * environment from one of `.env`, so that a fix names where it was read.
   */
  secrets: {
    get(name: string): string | undefined;
    source?(name: string): SecretSource | undefined;
  };
  /** The `.env` file the tokens and home channels are set in, named where a message says so. */
  dotenv: string;
  /** The checked API root. */
  base: URL;
}

/** Builds the call of `target`, or says which setting keeps it from being made. */
export function preparePlatformCall(
  target: PlatformTarget,
  input: PlatformInput,
): PlatformCall | { ok: false; error: string } {
  return BUILDERS[target](input);
}

const JSON_HEADERS = {
  "content-type": "application/json",
  accept: "application/json",
  "user-agent": USER_AGENT,
};
type Built = PlatformCall | { ok: false; error: string };

const BUILDERS: Record<PlatformTarget, (input: PlatformInput) => Built> = {
  telegram(input) {
    const token = readToken(input, "TELEGRAM_BOT_TOKEN", {
      shape: /^\d{1,20}:[A-Za-z0-9_-]{1,200}$/,
      looksLike:
        "a Telegram bot token (digits, ':', then letters, digits, _ and -, as @BotFather " +
        "gives it)",
    });
    if (!token.ok) return token;
    const chat = destination(input, "TELEGRAM_HOME_CHANNEL", checkTelegramChat);
    if (!chat.ok) return chat;
    const names = namesOf(input, "telegram", "the Telegram Bot API", "TELEGRAM_BOT_TOKEN");
    // The token is part of the path (the Bot API's design); it was checked to be path-safe.
    const url = apiUrl(input.base, `bot${token.value}`, "sendMessage");
    return {
      ...names,
      destination: `chat ${chat.value}`,
      limit: MESSAGE_LIMITS.telegram,
      token: token.value,
      request: (part) => ({
        url,
        headers: JSON_HEADERS,
        body: { chat_id: chat.value, text: part },
      }),
      judge(answer) {
        const data = isRecord(answer.data) ? answer.data : {};
        if (answer.status === 200 && data.ok === true) return { ok: true };
        const parameters = isRecord(data.parameters) ? data.parameters : {};
        const detail = typeof data.description === "string"
          ? shortDetail(data.description)
          : shortDetail(answer.text);
        if (parameters.migrate_to_chat_id !== undefined) {
          return {
            ok: false,
            retryable: false,
            error: `${names.api} says the group became a supergroup (${detail}). Fix: set ` +
              `deliver_extra.chat_id to ${Number(parameters.migrate_to_chat_id)}`,
          };
        }
        if (answer.status >= 200 && answer.status < 300) return unexpectedAnswer(answer, names);
        return httpFailure(answer, detail, names, {
          retryAfterMs: secondsToMs(parameters.retry_after),
          hint: "check the chat id (deliver_extra.chat_id or TELEGRAM_HOME_CHANNEL), and that " +
            "the bot is a member of that chat (a user must have started a chat with it)",
          // "Forbidden: bot is not a member of the channel chat", "bot was blocked by the user".
          forbiddenIsDestination: true,
        });
      },
    };
  },

  slack(input) {
    const token = readToken(input, "SLACK_BOT_TOKEN");
    if (!token.ok) return token;
    const channel = destination(input, "SLACK_HOME_CHANNEL", checkSlackChannel);
    if (!channel.ok) return channel;
    const names = namesOf(input, "slack", "the Slack Web API", "SLACK_BOT_TOKEN");
    const url = apiUrl(input.base, "chat.postMessage");
    const headers = {
      ...JSON_HEADERS,
      // Without the charset Slack answers with a `missing_charset` warning.
      "content-type": "application/json; charset=utf-8",
      authorization: `Bearer ${token.value}`,
    };
    return {
      ...names,
      destination: `channel ${channel.value}`,
      limit: MESSAGE_LIMITS.slack,
      token: token.value,
      request: (part) => ({
        url,
        headers,
        body: { channel: channel.value, text: escapeSlackText(part) },
      }),
      judge(answer) {
        const data = isRecord(answer.data) ? answer.data : {};
        if (answer.status === 200 && data.ok === true) return { ok: true };
        if (answer.status !== 200) {
          const detail = typeof data.error === "string" ? data.error : shortDetail(answer.text);
          return httpFailure(answer, detail, names);
        }
        // Slack answers HTTP 200 with `ok: false` for almost every error.
        if (data.ok !== false) return unexpectedAnswer(answer, names);
        return slackFailure(typeof data.error === "string" ? data.error : "unknown_error", names);
      },
    };
  },

  discord(input) {
    const token = readToken(input, "DISCORD_BOT_TOKEN");
    if (!token.ok) return token;
    const channel = destination(input, "DISCORD_HOME_CHANNEL", checkDiscordChannel);
    if (!channel.ok) return channel;
    const names = namesOf(input, "discord", "the Discord API", "DISCORD_BOT_TOKEN");
    const url = apiUrl(input.base, "channels", channel.value, "messages");
    const headers = {
      ...JSON_HEADERS,
      authorization: `Bot ${token.value}`,
      // The format Discord asks bots to send.
      "user-agent": `DiscordBot (agent-service, ${AGENT_VERSION})`,
    };
    return {
      ...names,
      destination: `channel ${channel.value}`,
      limit: MESSAGE_LIMITS.discord,
      token: token.value,
      // No pings: text from a payload must not reach @everyone or any role or user.
      request: (part) => ({
        url,
        headers,
        body: { content: part, allowed_mentions: { parse: [] } },
      }),
      judge(answer) {
        if (answer.status >= 200 && answer.status < 300) return { ok: true };
        const data = isRecord(answer.data) ? answer.data : {};
        const detail = typeof data.message === "string"
          ? shortDetail(
            `${data.message}${typeof data.code === "number" ? ` (code ${data.code})` : ""}`,
          )
          : shortDetail(answer.text);
        return httpFailure(answer, detail, names, {
          retryAfterMs: answer.status === 429 ? discordRetryAfter(data, answer.headers) : undefined,
          hint: "check the channel id (deliver_extra.chat_id or DISCORD_HOME_CHANNEL), and that " +
            "the bot may send messages there (View Channel and Send Messages permissions)",
          // "Missing Access" (50001) and "Missing Permissions" (50013).
          forbiddenIsDestination: true,
        });
      },
    };
  },

  github_comment(input) {
    const { extra, base } = input;
    const token = readToken(input, "GITHUB_TOKEN");
    if (!token.ok) return token;
    const repo = checkGithubRepo(required(extra.repo), "deliver_extra.repo");
    if (!repo.ok) return repo;
    const number = checkItemNumber(required(extra.number), "deliver_extra.number");
    if (!number.ok) return number;
    const names = namesOf(input, "github_comment", "the GitHub API", "GITHUB_TOKEN");
    const { owner, name } = repo.value;
    const url = apiUrl(base, "repos", owner, name, "issues", String(number.value), "comments");
    const headers = {
      ...JSON_HEADERS,
      accept: "application/vnd.github+json",
      authorization: `Bearer ${token.value}`,
      "x-github-api-version": "2022-11-28",
    };
    return {
      ...names,
      destination: `${owner}/${name}#${number.value}`,
      limit: MESSAGE_LIMITS.github_comment,
      token: token.value,
      prepare: withoutSlashCommands,
      request: (part) => ({ url, headers, body: { body: withoutSlashCommands(part) } }),
      judge(answer) {
        if (answer.status >= 200 && answer.status < 300) return { ok: true };
        const data = isRecord(answer.data) ? answer.data : {};
        const detail = githubDetail(data, answer.text);
        // GitHub's advice: wait for `retry-after`, else until `x-ratelimit-reset` when no
        // requests remain, else (a secondary rate limit said only in the message) a minute.
        const exhausted = answer.headers.get("x-ratelimit-remaining") === "0";
        const limited = (answer.status === 403 || answer.status === 429) &&
          (answer.headers.has("retry-after") || exhausted || /rate limit/i.test(detail));
        if (limited) {
          return rateLimited(
            `${names.api} rate-limited the request (HTTP ${answer.status}: ${detail})`,
            retryAfterFromHeaders(answer.headers) ??
              (exhausted ? resetIn(answer.headers) : undefined) ?? GITHUB_RATE_LIMIT_WAIT_MS,
          );
        }
        return httpFailure(answer, detail, names, {
          hint: "check deliver_extra.repo and deliver_extra.number, and that GITHUB_TOKEN may " +
            "comment on issues of that repository",
        });
      },
    };
  },

  gitlab_comment(input) {
    const { extra, base } = input;
    const token = readToken(input, "GITLAB_TOKEN");
    if (!token.ok) return token;
    const project = checkGitlabProject(required(extra.project), "deliver_extra.project");
    if (!project.ok) return project;
    const iid = checkItemNumber(required(extra.iid), "deliver_extra.iid");
    if (!iid.ok) return iid;
    const kind = extra.kind ?? "issue";
    if (kind !== "issue" && kind !== "merge_request") {
      return {
        ok: false,
        error: `deliver_extra.kind is ${JSON.stringify(kind)}; expected "issue" or "merge_request"`,
      };
    }
    const names = namesOf(input, "gitlab_comment", "the GitLab API", "GITLAB_TOKEN");
    const items = kind === "issue" ? "issues" : "merge_requests";
    // A project path is one URL segment: `group/app` goes as `group%2Fapp`.
    const url = apiUrl(base, "projects", project.value, items, String(iid.value), "notes");
    const headers = { ...JSON_HEADERS, "private-token": token.value };
    return {
      ...names,
      destination: `${project.value}${kind === "issue" ? "#" : "!"}${iid.value}`,
      limit: MESSAGE_LIMITS.gitlab_comment,
      token: token.value,
      prepare: withoutSlashCommands,
      request: (part) => ({ url, headers, body: { body: withoutSlashCommands(part) } }),
      judge(answer) {
        if (answer.status >= 200 && answer.status < 300) return { ok: true };
        const data = isRecord(answer.data) ? answer.data : {};
        const said = data.message ?? data.error;
        const detail = said === undefined
          ? shortDetail(answer.text)
          : shortDetail(typeof said === "string" ? said : JSON.stringify(said));
        return httpFailure(answer, detail, names, {
          hint: "check deliver_extra.project, deliver_extra.kind and deliver_extra.iid, and that " +
            "GITLAB_TOKEN may comment there",
        });
      },
    };
  },
};

/** A 2xx answer that is not the platform's: the base URL points somewhere else. */
function unexpectedAnswer(answer: ApiAnswer, names: ApiNames): CallFailure {
  const said = shortDetail(answer.text);
  return {
    ok: false,
    retryable: false,
    error: `${names.api} answered HTTP ${answer.status} but not as that API does` +
      `${said ? ` (${said})` : ""}. Fix: check ${names.baseKey}`,
  };
}

const SLACK_RETRYABLE = new Set([
  "ratelimited",
  "rate_limited",
  "internal_error",
  "fatal_error",
  "service_unavailable",
  "request_timeout",
]);
const SLACK_TOKEN_ERRORS = new Set([
  "not_authed",
  "invalid_auth",
  "account_inactive",
  "token_revoked",
  "token_expired",
  "no_permission",
  "missing_scope",
  "not_allowed_token_type",
]);
const SLACK_CHANNEL_ERRORS = new Set([
  "channel_not_found",
  "not_in_channel",
  "is_archived",
  "restricted_action",
]);

function slackFailure(code: string, names: ApiNames): CallFailure {
  const said = `${names.api} refused the message (ok: false, error: ${shortDetail(code)})`;
  if (SLACK_RETRYABLE.has(code)) {
    return { ok: false, retryable: true, error: `${said}; it may work when tried again` };
  }
  const fix = SLACK_TOKEN_ERRORS.has(code)
    ? `check ${names.tokenSetting} (a bot token with the chat:write scope)`
    : SLACK_CHANNEL_ERRORS.has(code)
    ? "check the channel (deliver_extra.chat_id or SLACK_HOME_CHANNEL) and invite the bot to it"
    : undefined;
  return { ok: false, retryable: false, error: fix ? `${said}. Fix: ${fix}` : said };
}

/**
 * A comment's text with a space before every `/` that starts a line. GitLab runs the quick
 * actions of a note (`/merge`, `/close`, `/assign @x`, `/label`) with the token's rights, and
 * GitHub's ChatOps (Prow's `/approve`, `/lgtm`, workflows on `/deploy`) trusts the commenter,
 * the bot: a payload's text, or an answer it steered, must not give such commands. Both read a
 * command only at the very start of a line (GitLab after dropping `\r`); Markdown shows the line
 * as before.
 */
function withoutSlashCommands(text: string): string {
  return text.replace(/(^|\n)(\r*)\//g, "$1$2 /");
}

/** Slack reads `&`, `<` and `>` as markup (`<!channel>` pings everyone); plain text escapes them. */
function escapeSlackText(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

function githubDetail(data: Record<string, unknown>, text: string): string {
  if (typeof data.message !== "string") return shortDetail(text);
  const errors = Array.isArray(data.errors)
    ? data.errors.map((error) =>
      isRecord(error) && typeof error.message === "string" ? error.message : undefined
    ).filter((message) => message !== undefined)
    : [];
  return shortDetail([data.message, ...errors].join("; "));
}

/**
 * Discord's wait after a 429: `retry_after` in the body, else `Retry-After`, else
 * `X-RateLimit-Reset-After` (seconds, possibly fractional), which some 429s carry alone.
 */
function discordRetryAfter(data: Record<string, unknown>, headers: Headers): number | undefined {
  const resetAfter = headers.get("x-ratelimit-reset-after")?.trim();
  return secondsToMs(data.retry_after) ?? retryAfterFromHeaders(headers) ??
    (resetAfter ? secondsToMs(Number(resetAfter)) : undefined);
}

/** How long GitHub asks to wait after a rate limit that says no time ("at least one minute"). */
const GITHUB_RATE_LIMIT_WAIT_MS = 60_000;

/** GitHub's primary rate limit: `x-ratelimit-reset` is the epoch second it ends. */
function resetIn(headers: Headers, nowMs: number = Date.now()): number | undefined {
  const reset = Number(headers.get("x-ratelimit-reset"));
  return Number.isFinite(reset) && reset > 0 ? Math.max(0, reset * 1000 - nowMs) : undefined;
}

function namesOf(
  input: PlatformInput,
  target: PlatformTarget,
  api: string,
  tokenVariable: string,
): ApiNames {
  return {
    api: `${api} at ${input.base.href.replace(/\/$/, "")}`,
    baseKey: `platforms.${target}.extra.api_base_url`,
    tokenSetting: settingOf(input, tokenVariable),
  };
}

/** Where a token or home channel is looked up. */
type SecretPlace = Pick<PlatformInput, "secrets" | "dotenv">;

/** Whether the value of `variable` came from the process environment (not from `.env`). */
function fromEnvironment({ secrets }: SecretPlace, variable: string): boolean {
  return secrets.source?.(variable) === "environment";
}

/** `X in <home>/.env`, or `the environment variable X` when the value came from there. */
function settingOf(place: SecretPlace, variable: string): string {
  return fromEnvironment(place, variable)
    ? `the environment variable ${variable}`
    : `${variable} in ${place.dotenv}`;
}

/** The token of `variable`, trimmed; refused when missing or unusable in a header or path. */
function readToken(
  place: SecretPlace,
  variable: string,
  options: { shape?: RegExp; looksLike?: string } = {},
): Checked<string> {
  const { secrets, dotenv } = place;
  const token = secrets.get(variable)?.trim();
  if (!token) return { ok: false, error: tokenNotSet(place, variable) };
  const into = fromEnvironment(place, variable) ? `the environment variable ${variable}` : dotenv;
  if (!/^[\x21-\x7e]+$/.test(token)) {
    return {
      ok: false,
      error: `${variable} holds spaces, control or non-ASCII characters. Fix: copy the token ` +
        `again into ${into}`,
    };
  }
  if (options.shape && !options.shape.test(token)) {
    return {
      ok: false,
      error: `${variable} does not look like ${options.looksLike}. Fix: copy the token again ` +
        `into ${into}`,
    };
  }
  return { ok: true, value: token };
}

/**
 * Why a token is missing, and where to set it: not set anywhere (`.env` is the place for
 * secrets), set empty in `.env` (which hides the environment's), or set empty in the environment.
 */
function tokenNotSet(place: SecretPlace, variable: string): string {
  const restart = "then restart the gateway";
  const source = place.secrets.source?.(variable);
  if (source === ".env") {
    return `${variable} is empty in ${place.dotenv}, which is read before the environment. ` +
      `Fix: set ${variable}=<token> there, or remove the line to use the environment ` +
      `variable, ${restart}`;
  }
  if (source === "environment") {
    return `the environment variable ${variable} is empty. Fix: set it to the token, or add ` +
      `${variable}=<token> to ${place.dotenv}, ${restart}`;
  }
  return `${variable} is not set. Fix: add ${variable}=<token> to ${place.dotenv}, ${restart}`;
}

/**
 * The chat of a chat target: `deliver_extra.chat_id` when the route sets it, else the platform's
 * home channel. A `chat_id` that is set but renders empty (a template the payload filled with
 * nothing) is an error, never the home channel: a payload must not be able to pick where the
 * message goes.
 */
function destination(
  { extra, ...place }: PlatformInput,
  homeVariable: string,
  check: (value: unknown, field: string) => Checked<string>,
): Checked<string> {
  if (Object.hasOwn(extra, "chat_id")) {
    const given = extra.chat_id;
    if (given === undefined || given === null || (typeof given === "string" && !given.trim())) {
      return {
        ok: false,
        error:
          `deliver_extra.chat_id is empty (${
            given === undefined || given === null ? String(given) : JSON.stringify(given)
          }); a chat_id that is set is used as it is, and ${homeVariable} only applies when the ` +
          "route sets none. Fix: check the template and the payload field it reads, or remove " +
          "chat_id from the route to send to the home channel",
      };
    }
    return check(given, "deliver_extra.chat_id");
  }
  const home = place.secrets.get(homeVariable)?.trim();
  if (home) {
    const where = fromEnvironment(place, homeVariable) ? "the environment" : place.dotenv;
    return check(home, `${homeVariable} (in ${where})`);
  }
  return {
    ok: false,
    error: `no chat to send to. Fix: set deliver_extra.chat_id on the route (--deliver-chat-id) ` +
      `or ${homeVariable} in ${place.dotenv}`,
  };
}

/** Missing values show as `null` in messages, so "is null; expected …" reads right. */
function required(value: unknown): unknown {
  return value ?? null;
}

/**
 * `base` with `segments` appended, each percent-encoded as one path segment (`/` → `%2F`), so a
 * value can never climb out of its place in the path. `:` stays as it is (it is valid in a path).
 */
function apiUrl(base: URL, ...segments: string[]): URL {
  const url = new URL(base.href);
  const encoded = segments.map((segment) => {
    if (segment === "" || segment === "." || segment === "..") {
      throw new Error(`internal: refusing the URL path segment ${JSON.stringify(segment)}`);
    }
    return encodeURIComponent(segment).replaceAll("%3A", ":");
  });
  url.pathname = `${base.pathname.replace(/\/+$/, "")}/${encoded.join("/")}`;
  return url;
}
