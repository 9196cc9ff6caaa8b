/**
 * Checks of a route's `deliver_extra` against its delivery target, shared by `agent webhook
 * subscribe` (its options) and by the routes read from files (static routes of `config.yaml`,
 * records of the subscriptions file), so that a key the target would ignore or a literal value
 * delivery would refuse is said the same way wherever it was written.
 *
 * @module
 */
import { closestKey } from "../home/suggest.ts";
import {
  checkDiscordChannel,
  type Checked,
  checkGithubRepo,
  checkGitlabProject,
  checkItemNumber,
  checkSlackChannel,
  checkTelegramChat,
} from "../delivery/identifiers.ts";
import type { DeliveryTargetName } from "./routes.ts";

/**
 * The `deliver_extra` keys each target reads (see `src/delivery/`); any other key would be
 * ignored. `origin` takes the item to comment on from the payload, so it reads none.
 */
export const DELIVER_EXTRA_KEYS: Readonly<Record<DeliveryTargetName, readonly string[]>> = {
  log: [],
  origin: [],
  telegram: ["chat_id"],
  discord: ["chat_id"],
  slack: ["chat_id"],
  github_comment: ["repo", "number"],
  gitlab_comment: ["project", "iid", "kind"],
};

/**
 * How the messages of {@linkcode checkDeliverExtra} name what the user wrote: options of
 * `subscribe` (`--deliver-extra repo`), or keys of a file ({@linkcode fileWording}).
 */
export interface DeliverExtraWording {
  /** Where the value of `key` was given: `--deliver-chat-id`, `<route>.deliver_extra.repo`. */
  key(key: string): string;
  /** The setting of the target: `--deliver` or `deliver`. */
  target: string;
  /** The target set to `name`: `--deliver slack`, `deliver: slack`. */
  targetIs(name: string): string;
  /** How a fix says to set the target: `add` (an option), `set` (a key). */
  targetVerb: string;
  /** Whether the target was given (else events go to the log, the default). */
  targetGiven: boolean;
  /** What a problem about `deliver_extra` as a whole starts with: `""`, `<route>.deliver_extra: `. */
  whole: string;
  /** How to add `key`: `--deliver-extra repo=…`, `deliver_extra.repo`. */
  add(key: string): string;
  /** `key` set to `value` as the user would write it: `number={issue.number}`. */
  assignment(key: string, value: string): string;
}

/**
 * The wording of a route read from a file: `where` names the route (file, and line or record),
 * keys are `<where>.deliver_extra.<key>`, examples in the file's syntax.
 *
 * @param where The route as the other route problems name it.
 * @param syntax `yaml` for config.yaml, `json` for the subscriptions file.
 * @param targetGiven Whether the route sets `deliver`.
 */
export function fileWording(
  where: string,
  syntax: "yaml" | "json",
  targetGiven: boolean,
): DeliverExtraWording {
  return {
    key: (key) => `${where}.deliver_extra.${key}`,
    target: "deliver",
    targetIs: (name) => syntax === "yaml" ? `deliver: ${name}` : `"deliver": "${name}"`,
    targetVerb: "set",
    targetGiven,
    whole: `${where}.deliver_extra: `,
    add: (key) => `deliver_extra.${key}`,
    assignment: (key, value) =>
      syntax === "yaml"
        ? `${key}: ${/^[A-Za-z0-9_.-]+$/.test(value) ? value : JSON.stringify(value)}`
        : `${JSON.stringify(key)}: ${JSON.stringify(value)}`,
  };
}

/** What {@linkcode checkDeliverExtra} found. */
export interface DeliverExtraCheck {
  /** What delivery would ignore or refuse: each with its fix. */
  problems: string[];
  /**
   * The variable that gives the chat when a chat target has no `chat_id`
   * (`TELEGRAM_HOME_CHANNEL`): deliveries fail while it is unset.
   */
  homeChannel?: string;
}

/**
 * The variable a chat target (telegram, discord, slack) sends to when `extra` names no chat
 * (`TELEGRAM_HOME_CHANNEL`); `undefined` for other targets, or when `extra` has a `chat_id`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { homeChannelOf } from "./deliver_extra.ts";
 * assert.equal(homeChannelOf("slack", {}), "SLACK_HOME_CHANNEL");
 * assert.equal(homeChannelOf("slack", { chat_id: "C1" }), undefined);
 * assert.equal(homeChannelOf("log", {}), undefined);
 * ```
 */
export function homeChannelOf(
  deliver: DeliveryTargetName,
  extra: Record<string, unknown>,
): string | undefined {
  const chat = CHAT_TARGETS[deliver];
  return chat && extra.chat_id === undefined ? chat[1] : undefined;
}

/** A `deliver_extra` value holding a `{a.b}` placeholder is checked after rendering instead. */
const PLACEHOLDER = /\{[A-Za-z0-9_.]+\}/;

/** The chat targets: their check and home-channel variable. */
const CHAT_TARGETS: Partial<
  Record<DeliveryTargetName, [(value: unknown, field: string) => Checked<unknown>, string]>
> = {
  telegram: [checkTelegramChat, "TELEGRAM_HOME_CHANNEL"],
  discord: [checkDiscordChannel, "DISCORD_HOME_CHANNEL"],
  slack: [checkSlackChannel, "SLACK_HOME_CHANNEL"],
};

/** The keys a code-host target cannot work without, with their check and a template example. */
const REQUIRED_KEYS: Partial<
  Record<
    DeliveryTargetName,
    [string, (value: unknown, field: string) => Checked<unknown>, string][]
  >
> = {
  github_comment: [
    ["repo", checkGithubRepo, "{repository.full_name}"],
    ["number", checkItemNumber, "{issue.number}"],
  ],
  gitlab_comment: [
    ["project", checkGitlabProject, "{project.path_with_namespace}"],
    ["iid", checkItemNumber, "{object_attributes.iid}"],
  ],
};

/**
 * Checks `deliver_extra` as delivery will use it: a key the target does not read is a problem (it
 * would be ignored without a word: `chatid` would send to the home channel), a key the target
 * needs is one when missing, and literal values get the checks delivery applies, so a value that
 * can never work is found now rather than by every event; templated values are checked after
 * each payload fills them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkDeliverExtra, fileWording } from "./deliver_extra.ts";
 * const words = fileWording("config.yaml:5 (routes.tg)", "yaml", true);
 * const { problems } = checkDeliverExtra("telegram", { chatid: 123 }, words);
 * assert.match(problems[0], /deliver_extra\.chatid: .*did you mean chat_id\?/);
 * assert.deepEqual(checkDeliverExtra("telegram", { chat_id: "{chat.id}" }, words).problems, []);
 * ```
 */
export function checkDeliverExtra(
  deliver: DeliveryTargetName,
  extra: Record<string, unknown>,
  words: DeliverExtraWording,
): DeliverExtraCheck {
  const problems: string[] = [];
  let homeChannel: string | undefined;
  const known = DELIVER_EXTRA_KEYS[deliver];
  for (const key of Object.keys(extra)) {
    if (known.includes(key)) continue;
    const reads = known.length > 0
      ? `it reads only ${known.join(", ")}`
      : deliver === "origin"
      ? "it reads none (it answers on the item the event is about)"
      : "it reads none";
    const target = words.targetGiven
      ? words.targetIs(deliver)
      : `without ${words.target}, events go to the log, which`;
    const users = (Object.keys(DELIVER_EXTRA_KEYS) as DeliveryTargetName[])
      .filter((name) => DELIVER_EXTRA_KEYS[name].includes(key));
    const meant = closestKey(key, known);
    const fix = users.length > 0
      ? `${words.targetVerb} ${users.map(words.targetIs).join(" or ")}, or leave it out`
      : meant
      ? `did you mean ${meant}?`
      : "leave it out";
    problems.push(
      `${words.key(key)}: ${target} does not use ${
        key === "chat_id" ? "a chat id" : `the key '${key}'`
      }; ${reads}. Fix: ${fix}`,
    );
  }
  const literal = (value: unknown) => !(typeof value === "string" && PLACEHOLDER.test(value));
  const chat = CHAT_TARGETS[deliver];
  if (chat) {
    const [check, homeVariable] = chat;
    const given = extra.chat_id;
    // Set but empty is refused by delivery, never the home channel: see `src/delivery/`.
    if (given === null || (typeof given === "string" && given.trim() === "")) {
      problems.push(
        `${words.key("chat_id")} is empty. Fix: give the chat, or leave it out to use ` +
          homeVariable,
      );
    } else if (given !== undefined && literal(given)) {
      const checked = check(given, "deliver_extra.chat_id");
      if (!checked.ok) {
        problems.push(
          `${words.key("chat_id")}: ${checked.error}. Fix: the chat as ${deliver} shows it, or ` +
            `leave it out to use ${homeVariable}`,
        );
      }
    } else if (given === undefined) {
      homeChannel = homeChannelOf(deliver, extra);
    }
  }
  for (const [key, check, template] of REQUIRED_KEYS[deliver] ?? []) {
    const value = extra[key];
    if (value === undefined || value === null) {
      problems.push(
        `${words.whole}${words.targetIs(deliver)} needs ${words.add(key)} (a value, or a ` +
          `template such as ${words.assignment(key, template)}); to answer on the item the ` +
          `event came from, use ${words.targetIs("origin")}`,
      );
    } else if (literal(value)) {
      const checked = check(value, `deliver_extra.${key}`);
      if (!checked.ok) {
        problems.push(
          `${words.key(key)}: ${checked.error}. Fix: a valid value, or a template such as ` +
            words.assignment(key, template),
        );
      }
    }
  }
  const kind = extra.kind;
  if (deliver === "gitlab_comment" && kind !== undefined && kind !== null && literal(kind)) {
    if (kind !== "issue" && kind !== "merge_request") {
      problems.push(
        `${words.key("kind")}: ${JSON.stringify(kind)} is not a GitLab item kind. Fix: ` +
          `${words.assignment("kind", "issue")} (the default) or ` +
          words.assignment("kind", "merge_request"),
      );
    }
  }
  return { problems, homeChannel };
}
