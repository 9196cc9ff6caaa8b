/**
 * Webhook routes: the static ones of `config.yaml` (`platforms.webhook.extra.routes`) and the
 * dynamic subscriptions of `<home>/webhook_subscriptions.json`, in one typed shape. A dynamic
 * subscription never replaces a static route of the same name.
 *
 * @module
 */
import { randomBytes } from "node:crypto";
import { isPlainObject, parseBoolish } from "../home/config.ts";
import { closestKey } from "../home/suggest.ts";
import { checkDeliverExtra, fileWording } from "./deliver_extra.ts";
import { standardWebhookSignature } from "./signatures.ts";

/** Where a message goes after a run (or directly, with `deliver_only`). */
export const DELIVERY_TARGETS = [
  "log",
  "origin",
  "telegram",
  "discord",
  "slack",
  "github_comment",
  "gitlab_comment",
] as const;

/** A delivery target name. */
export type DeliveryTargetName = typeof DELIVERY_TARGETS[number];

/** One route, static or dynamic, as the listener uses it. */
export interface Route {
  name: string;
  /** `static` from config.yaml, `dynamic` from webhook_subscriptions.json. */
  source: "static" | "dynamic";
  description: string;
  /** Accepted event names; empty accepts every event. */
  events: string[];
  /** The route's own secret; the global secret applies when absent. */
  secret?: string;
  /** Prompt template with `{dot.path}` placeholders; empty sends the whole payload. */
  prompt: string;
  skills: string[];
  deliver: DeliveryTargetName;
  /** Target details (`chat_id`, `repo`, `number`, …); string values are templates. */
  deliverExtra: Record<string, unknown>;
  /** Send the rendered prompt to the target with no agent run. */
  deliverOnly: boolean;
  /** A file under `<home>/scripts/` run before the prompt is rendered. */
  script?: string;
  enabled: boolean;
  /** Declarative filters as written (config routes; parsed by the filter module). */
  filters?: unknown;
  createdAt?: string;
}

/** A subscription record as stored in `webhook_subscriptions.json`. */
export interface SubscriptionRecord {
  description: string;
  events: string[];
  secret: string;
  prompt: string;
  skills: string[];
  deliver: string;
  created_at: string;
  deliver_only?: boolean;
  script?: string;
  deliver_extra?: Record<string, unknown>;
  enabled?: boolean;
  filters?: unknown;
}

const NAME = /^[a-z0-9][a-z0-9_-]*$/;
const MAX_NAME = 64;

/** The outcome of {@linkcode normaliseRouteName}: the name, or what is wrong with it. */
export type RouteNameResult = { ok: true; name: string } | { ok: false; error: string };

/** What a route name may be, for messages. */
export const ROUTE_NAME_RULE = `1 to ${MAX_NAME} lower-case letters, digits, '-' and '_', ` +
  "starting with a letter or digit";

/**
 * Normalises a subscription name: spaces trimmed, ASCII `A-Z` lower-cased, inner runs of spaces →
 * `-`. Nothing else is mapped: a non-ASCII look-alike (U+212A KELVIN SIGN for `K`), a tab, a line
 * break or a no-break space is refused, so two different spellings never land on one name.
 * Returns the name, or an error message saying what is allowed (and which characters are not).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { normaliseRouteName } from "./routes.ts";
 * assert.deepEqual(normaliseRouteName(" GitHub Issues "), { ok: true, name: "github-issues" });
 * assert.deepEqual(normaliseRouteName("invalid-hooks"), { ok: true, name: "invalid-hooks" });
 * assert.equal(normaliseRouteName("../x").ok, false);
 * assert.match((normaliseRouteName("\u212Aelvin") as { error: string }).error, /U\+212A/);
 * assert.equal(normaliseRouteName("a\tb").ok, false);
 * ```
 */
export function normaliseRouteName(raw: string): RouteNameResult {
  // ASCII only: String#toLowerCase would turn U+212A into `k`, and `\s` covers tabs and U+00A0.
  const name = raw.replace(/^ +| +$/g, "").replace(/[A-Z]/g, (letter) => letter.toLowerCase())
    .replace(/ +/g, "-");
  if (!isValidRouteName(name)) {
    const outside = [...new Set(Array.from(raw).filter((char) => !NAME_INPUT.test(char)))];
    return {
      ok: false,
      error: `invalid subscription name ${JSON.stringify(raw)}: use ${ROUTE_NAME_RULE} ` +
        "(ASCII only; A-Z are lower-cased and spaces become '-')" +
        (outside.length > 0 ? `; not allowed: ${outside.map(codePoint).join(", ")}` : ""),
    };
  }
  return { ok: true, name };
}

/** One character a name may be typed with: see {@linkcode normaliseRouteName}. */
const NAME_INPUT = /^[A-Za-z0-9 _-]$/;

/** `U+212A`: how a character is named in a message (it may be invisible or a look-alike). */
function codePoint(char: string): string {
  return `U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;
}

/** Whether {@linkcode normaliseRouteName} accepted the name. */
export function isValidRouteName(name: string): boolean {
  return NAME.test(name) && name.length <= MAX_NAME;
}

/**
 * A new webhook secret: 32 random bytes, base64url.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { generateSecret } from "./routes.ts";
 * assert(/^[A-Za-z0-9_-]{43}$/.test(generateSecret()));
 * ```
 */
export function generateSecret(): string {
  return randomBytes(32).toString("base64url");
}

/**
 * Checks a secret a user chose (a subscription's `--secret`, the global one of `gateway setup`):
 * 16 to 512 visible ASCII characters without a single quote (it must survive `.env` and shell
 * quoting), and a `whsec_` secret must be `whsec_` + base64, as Standard Webhooks senders sign
 * with its decoded bytes (an undecodable one would make every request fail with 401).
 *
 * @param value The secret as given.
 * @param generateHint How to have a secret generated instead, for the message of a short one.
 * @returns `true`, or what is wrong and what to use instead.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkSecret } from "./routes.ts";
 * assert.equal(checkSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), true);
 * assert.match(String(checkSecret("abc")), /at least 16 characters/);
 * assert.match(String(checkSecret("whsec_!!!notbase64!!!")), /base64/);
 * ```
 */
export function checkSecret(
  value: string,
  generateHint = "leave it out to have one generated",
): true | string {
  if (value.length < 16) return `use at least 16 characters (or ${generateHint})`;
  if (value.length > 512) return "use at most 512 characters";
  if (!/^[\x21-\x7e]+$/.test(value) || value.includes("'")) {
    return "use visible ASCII characters only: no spaces, line breaks or single quotes";
  }
  if (value.startsWith("whsec_")) {
    try {
      standardWebhookSignature(value, "check", 0, "");
    } catch {
      return "a whsec_ secret is whsec_ followed by base64 (A-Z, a-z, 0-9, + and /, padded " +
        "with =), as the sender shows it; copy it again from the sender, or use a secret " +
        "without the whsec_ prefix";
    }
  }
  return true;
}

/** A timestamp as the subscription file stores it: UTC `YYYY-MM-DDTHH:MM:SSZ`. */
export function createdAtNow(nowMs: number = Date.now()): string {
  return new Date(nowMs).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/**
 * Reads one route from its raw object (a subscription record or a static route of
 * `config.yaml`). Problems are returned as text naming `where`.
 */
export function routeFromRaw(
  name: string,
  raw: unknown,
  source: Route["source"],
  where: string,
): { route?: Route; problems: string[] } {
  const problems: string[] = [];
  if (!isPlainObject(raw)) {
    return { problems: [`${where}: expected a mapping of route settings`] };
  }
  // A misspelled key must not quietly widen the route: `evnts` would accept every event,
  // `filter` every payload.
  for (const key of Object.keys(raw)) {
    if ((ROUTE_KEYS as readonly string[]).includes(key)) continue;
    const suggestion = closestKey(key, ROUTE_KEYS);
    problems.push(
      `${where}.${key}: \`${key}\` is not a route setting; ` +
        (suggestion ? `did you mean \`${suggestion}\`?` : `use ${ROUTE_KEYS.join(", ")}`),
    );
  }
  const text = (key: string, fallback = ""): string => {
    const value = raw[key];
    if (value === undefined || value === null) return fallback;
    if (typeof value === "string") return value;
    problems.push(`${where}.${key}: expected a string`);
    return fallback;
  };
  const list = (key: string): string[] => {
    const value = raw[key];
    if (value === undefined || value === null) return [];
    if (typeof value === "string") return splitList(value);
    if (Array.isArray(value) && value.every((item) => typeof item === "string")) {
      return value.map((item) => item.trim()).filter(Boolean);
    }
    problems.push(`${where}.${key}: expected a list of strings`);
    return [];
  };
  // As every other switch of config.yaml: true/false, yes/no, on/off or 1/0, in any case.
  const flag = (key: string, fallback: boolean): boolean => {
    const value = raw[key];
    if (value === undefined || value === null) return fallback;
    const parsed = parseBoolish(value);
    if (parsed !== undefined) return parsed;
    problems.push(`${where}.${key}: expected true or false, got ${JSON.stringify(value)}`);
    return fallback;
  };
  const deliver = text("deliver", "log").trim().toLowerCase() || "log";
  if (!(DELIVERY_TARGETS as readonly string[]).includes(deliver)) {
    const meant = closestKey(deliver, DELIVERY_TARGETS);
    problems.push(
      `${where}.deliver: unknown delivery target '${deliver}' (` +
        (meant ? `did you mean '${meant}'? ` : "") + `use one of ${DELIVERY_TARGETS.join(", ")})`,
    );
  }
  const extra = raw.deliver_extra;
  if (extra !== undefined && extra !== null && !isPlainObject(extra)) {
    problems.push(`${where}.deliver_extra: expected a mapping such as {chat_id: "123"}`);
  } else if ((DELIVERY_TARGETS as readonly string[]).includes(deliver)) {
    // What `subscribe` refuses: a key the target ignores (`chatid` would send to the home
    // channel), a missing `number`, a literal id delivery would refuse.
    const words = fileWording(
      where,
      source === "static" ? "yaml" : "json",
      typeof raw.deliver === "string" && raw.deliver.trim() !== "",
    );
    const checked = checkDeliverExtra(
      deliver as DeliveryTargetName,
      isPlainObject(extra) ? extra : {},
      words,
    );
    problems.push(...checked.problems);
  }
  const secret = text("secret").trim() || undefined;
  const route: Route = {
    name,
    source,
    description: text("description", source === "dynamic" ? defaultDescription(name) : ""),
    events: list("events"),
    secret,
    prompt: text("prompt"),
    skills: list("skills"),
    deliver: deliver as DeliveryTargetName,
    deliverExtra: isPlainObject(extra) ? { ...extra } : {},
    deliverOnly: flag("deliver_only", false),
    script: text("script").trim() || undefined,
    enabled: flag("enabled", true),
    filters: raw.filters ?? undefined,
    createdAt: typeof raw.created_at === "string" ? raw.created_at : undefined,
  };
  if (route.deliverOnly && route.deliver === "log") {
    problems.push(`${where}: deliver_only needs a real target; 'log' is not one`);
  }
  return problems.length > 0 && !route ? { problems } : { route, problems };
}

/** The keys of a route (a subscription record or a static route), in the README's order. */
const ROUTE_KEYS = [
  "description",
  "events",
  "secret",
  "prompt",
  "skills",
  "deliver",
  "deliver_extra",
  "deliver_only",
  "script",
  "enabled",
  "filters",
  "created_at",
] as const;

/** The description a subscription gets when none is given. */
export function defaultDescription(name: string): string {
  return `Agent-created subscription: ${name}`;
}

/**
 * Whether a route with these `events` takes `event`: every event when the list is empty, else a
 * name in it, whatever its case (GitLab's are `Merge Request Hook`, GitHub's `push`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { takesEvent } from "./routes.ts";
 * assert.equal(takesEvent([], "push"), true);
 * assert.equal(takesEvent(["merge request hook"], "Merge Request Hook"), true);
 * assert.equal(takesEvent(["issues"], "test"), false);
 * ```
 */
export function takesEvent(events: readonly string[], event: string): boolean {
  if (events.length === 0 || events.includes(event)) return true;
  const wanted = event.toLowerCase();
  return events.some((name) => name.toLowerCase() === wanted);
}

/** Splits a comma-separated option value. */
export function splitList(value: string): string[] {
  return value.split(",").map((item) => item.trim()).filter(Boolean);
}
