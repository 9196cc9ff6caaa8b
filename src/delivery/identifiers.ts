/**
 * Checks of the identifiers a delivery puts into a platform request (chat ids, channels,
 * repositories, issue numbers, projects). They often come from templates filled with webhook
 * payload values, so each is checked against the platform's own shape before it goes anywhere
 * near a URL: a value like `123/../../admin` is refused, never sent.
 *
 * @module
 */
import { shownValue } from "./_json.ts";

/** A checked value, or a message naming the field and the shape expected. */
export type Checked<T> = { ok: true; value: T } | { ok: false; error: string };

/** The largest issue, pull request or merge request number accepted (2^31). */
export const MAX_ITEM_NUMBER = 2 ** 31;

const TELEGRAM_CHAT_ID = /^-?\d{1,20}$/;
const TELEGRAM_USERNAME = /^@[A-Za-z0-9_]{5,32}$/;
const SLACK_CHANNEL_ID = /^[A-Z0-9]{6,20}$/;
const SLACK_CHANNEL_NAME = /^#[a-z0-9_-]{1,80}$/;
const DISCORD_SNOWFLAKE = /^\d{15,25}$/;
const GITHUB_REPO = /^([A-Za-z0-9_.-]{1,100})\/([A-Za-z0-9_.-]{1,100})$/;
const GITLAB_PATH = /^[A-Za-z0-9_.-]{1,255}(\/[A-Za-z0-9_.-]{1,255}){1,20}$/;
const POSITIVE_INTEGER = /^[1-9]\d{0,9}$/;

/**
 * Checks a Telegram chat: a numeric chat id (negative for groups and channels, such as
 * `-1001234567890`) or a public `@channelname`.
 *
 * @param value The value as configured or rendered (a string, or a number from YAML).
 * @param field What to name in the message, e.g. `deliver_extra.chat_id`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkTelegramChat } from "./identifiers.ts";
 * assert.deepEqual(checkTelegramChat(-1001234567890, "chat_id"), { ok: true, value: "-1001234567890" });
 * assert.deepEqual(checkTelegramChat(" @my_channel ", "chat_id"), { ok: true, value: "@my_channel" });
 * assert.equal(checkTelegramChat("123/../../x", "chat_id").ok, false);
 * ```
 */
export function checkTelegramChat(value: unknown, field: string): Checked<string> {
  return checkText(
    value,
    field,
    (text) => TELEGRAM_CHAT_ID.test(text) || TELEGRAM_USERNAME.test(text),
    "a Telegram chat id (an integer such as -1001234567890) or @channelname (5 to 32 letters, " +
      "digits or _)",
  );
}

/**
 * Checks a Slack channel: a conversation id (`C0123456789`, upper-case letters and digits) or a
 * `#channel-name`.
 *
 * @param value The value as configured or rendered.
 * @param field What to name in the message.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkSlackChannel } from "./identifiers.ts";
 * assert.deepEqual(checkSlackChannel("C0123456789", "chat_id"), { ok: true, value: "C0123456789" });
 * assert.deepEqual(checkSlackChannel("#deploys", "chat_id"), { ok: true, value: "#deploys" });
 * assert.equal(checkSlackChannel("deploys", "chat_id").ok, false);
 * ```
 */
export function checkSlackChannel(value: unknown, field: string): Checked<string> {
  return checkText(
    value,
    field,
    (text) => SLACK_CHANNEL_ID.test(text) || SLACK_CHANNEL_NAME.test(text),
    "a Slack channel id (6 to 20 upper-case letters and digits, such as C0123456789) or " +
      "#channel-name (lower-case letters, digits, - and _)",
  );
}

/**
 * Checks a Discord channel id: a snowflake of 15 to 25 digits. Write it in quotes in YAML; as a
 * number it is too large to be exact.
 *
 * @param value The value as configured or rendered.
 * @param field What to name in the message.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkDiscordChannel } from "./identifiers.ts";
 * assert.deepEqual(checkDiscordChannel("1100000000000000001", "chat_id"), {
 *   ok: true,
 *   value: "1100000000000000001",
 * });
 * assert.equal(checkDiscordChannel("123/../../x", "chat_id").ok, false);
 * ```
 */
export function checkDiscordChannel(value: unknown, field: string): Checked<string> {
  return checkText(
    value,
    field,
    (text) => DISCORD_SNOWFLAKE.test(text),
    "a Discord channel id (a snowflake of 15 to 25 digits, in quotes)",
  );
}

/**
 * Checks a GitHub repository `owner/name` (letters, digits, `_`, `.`, `-`; no `..`).
 *
 * @param value The value as configured or rendered.
 * @param field What to name in the message.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkGithubRepo } from "./identifiers.ts";
 * assert.deepEqual(checkGithubRepo("denoland/deno", "repo"), {
 *   ok: true,
 *   value: { owner: "denoland", name: "deno" },
 * });
 * assert.equal(checkGithubRepo("a/b/../../orgs", "repo").ok, false);
 * ```
 */
export function checkGithubRepo(
  value: unknown,
  field: string,
): Checked<{ owner: string; name: string }> {
  const checked = checkText(
    value,
    field,
    (text) => GITHUB_REPO.test(text) && !text.includes("..") && !/(^|\/)\.(\/|$)/.test(text),
    "a GitHub repository owner/name (letters, digits, _, . and -; no ..)",
  );
  if (!checked.ok) return checked;
  const [owner, name] = checked.value.split("/");
  return { ok: true, value: { owner, name } };
}

/**
 * Checks an issue, pull request or merge request number: a positive integer up to 2^31, as a
 * number or as decimal digits.
 *
 * @param value The value as configured or rendered.
 * @param field What to name in the message.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkItemNumber } from "./identifiers.ts";
 * assert.deepEqual(checkItemNumber("42", "number"), { ok: true, value: 42 });
 * assert.deepEqual(checkItemNumber(7, "number"), { ok: true, value: 7 });
 * for (const bad of [0, -1, 1.5, "1?x=y", 2 ** 31 + 1]) assert.equal(checkItemNumber(bad, "number").ok, false);
 * ```
 */
export function checkItemNumber(value: unknown, field: string): Checked<number> {
  const expected = `a positive integer up to ${MAX_ITEM_NUMBER}`;
  if (typeof value === "number") {
    return Number.isInteger(value) && value > 0 && value <= MAX_ITEM_NUMBER
      ? { ok: true, value }
      : refuse(field, value, expected);
  }
  const checked = checkText(
    value,
    field,
    (text) => POSITIVE_INTEGER.test(text) && Number(text) <= MAX_ITEM_NUMBER,
    expected,
  );
  return checked.ok ? { ok: true, value: Number(checked.value) } : checked;
}

/**
 * Checks a GitLab project: its path `group/subgroup/project` (segments of letters, digits, `_`,
 * `.`, `-`; no `..`) or its numeric id.
 *
 * @param value The value as configured or rendered.
 * @param field What to name in the message.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkGitlabProject } from "./identifiers.ts";
 * assert.deepEqual(checkGitlabProject("group/sub/app", "project"), { ok: true, value: "group/sub/app" });
 * assert.deepEqual(checkGitlabProject(278964, "project"), { ok: true, value: "278964" });
 * assert.equal(checkGitlabProject("group/../admin", "project").ok, false);
 * ```
 */
export function checkGitlabProject(value: unknown, field: string): Checked<string> {
  return checkText(
    value,
    field,
    (text) =>
      (POSITIVE_INTEGER.test(text) && Number(text) <= Number.MAX_SAFE_INTEGER) ||
      (GITLAB_PATH.test(text) && !text.includes("..") && !/(^|\/)\.(\/|$)/.test(text)),
    "a GitLab project path group/project (segments of letters, digits, _, . and -; no ..) or " +
      "a numeric project id",
  );
}

/** Reads `value` as trimmed text (integers from YAML allowed) and tests its shape. */
function checkText(
  value: unknown,
  field: string,
  valid: (text: string) => boolean,
  expected: string,
): Checked<string> {
  let text: string;
  if (typeof value === "string") text = value.trim();
  else if (typeof value === "number" && Number.isSafeInteger(value)) text = String(value);
  else if (typeof value === "number" && Number.isInteger(value)) {
    return {
      ok: false,
      error: `${field} is the number ${value}, too large to be exact; write it in quotes as ` +
        `${expected}`,
    };
  } else return refuse(field, value, expected);
  return valid(text) ? { ok: true, value: text } : refuse(field, value, expected);
}

function refuse(field: string, value: unknown, expected: string): { ok: false; error: string } {
  const shown = shownValue(value, 80);
  const unfilled = typeof value === "string" && /\{[A-Za-z0-9_.]+\}/.test(value)
    ? " (a template placeholder the payload did not fill)"
    : "";
  return { ok: false, error: `${field} is ${shown}${unfilled}; expected ${expected}` };
}
