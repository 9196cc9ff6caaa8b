/**
 * Prompt templates of webhook routes (SPEC.md "Prompt templates", decisions.md §6 "Templates"):
 * `{a.b.c}` inserts the payload field at that path, `{event_type}` the event name, `{__raw__}` the
 * whole payload. Without a template the whole payload goes into the prompt as a JSON code block.
 * `deliver_extra` string values are rendered the same way.
 *
 * @module
 */
import { stringifyJsonExact } from "../home/exact_json.ts";
import { codePointCount, cut } from "../home/text.ts";

/** An object or array inserted by a placeholder is cut to this many characters, `…` included. */
export const MAX_VALUE_CHARS = 2000;

/** `{__raw__}` is cut to this many characters, `…` included. */
export const MAX_RAW_CHARS = 4000;

/** The default prompt's payload JSON (no template) is cut to this many characters, `…` included. */
export const MAX_DEFAULT_PAYLOAD_CHARS = 20_000;

const PLACEHOLDER = /\{([A-Za-z0-9_.]+)\}/g;

/**
 * Renders a template against a payload, in one left-to-right pass: text inserted from the payload
 * is never scanned again, so a payload string holding `{event_type}` stays as it is.
 *
 * - `{event_type}` → the event name;
 * - `{__raw__}` → the whole payload as 2-space JSON, cut to {@linkcode MAX_RAW_CHARS}
 *   characters (code points), the last one `…`;
 * - `{a.b.c}` → the payload field at that path from the payload root; numeric segments index
 *   arrays (`{commits.0.id}`). Strings go in as they are; numbers, booleans and `null` as JSON
 *   (`42`, `true`, `null`); objects and arrays as 2-space JSON cut to
 *   {@linkcode MAX_VALUE_CHARS} characters, the last one `…`;
 * - a path that leads nowhere keeps its placeholder verbatim, and braces around anything but
 *   `[A-Za-z0-9_.]` (`{a-b}`, `{ a }`, `{"x":1}`) are plain text.
 *
 * Integers beyond 2^53 are exact when the payload holds them as `bigint`s, as payloads parsed by
 * the listener do; they are printed as their digits.
 *
 * @param template The route's `prompt` (or a `deliver_extra` value).
 * @param payload The request's JSON payload.
 * @param context The event name.
 * @returns The rendered text.
 *
 * @example
 * ```ts
 * import { renderTemplate } from "./templates.ts";
 * import assert from "node:assert/strict";
 *
 * const payload = { pull_request: { number: 7, title: "Fix {bug}" }, labels: ["ci"] };
 * assert.equal(
 *   renderTemplate("{event_type} #{pull_request.number}: {pull_request.title} {labels.0} {nope}", payload, {
 *     event: "pull_request",
 *   }),
 *   "pull_request #7: Fix {bug} ci {nope}",
 * );
 * ```
 */
export function renderTemplate(
  template: string,
  payload: unknown,
  context: { event: string },
): string {
  return template.replace(PLACEHOLDER, (placeholder: string, path: string) => {
    if (path === "event_type") return context.event;
    if (path === "__raw__") return cut(toJson(payload), MAX_RAW_CHARS);
    const value = resolvePath(payload, path);
    return value === undefined ? placeholder : formatValue(value);
  });
}

/**
 * The payload paths `template` names that `payload` does not have: their placeholders stay as
 * written when {@linkcode renderTemplate} renders it. Each once, in order; `{event_type}` and
 * `{__raw__}` always render.
 *
 * @param template A route's `prompt` (or a `deliver_extra` value).
 * @param payload The payload it is rendered against.
 * @returns The paths left unfilled.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { unfilledPlaceholders } from "./templates.ts";
 * const template = "#{issue.number}: {issue.title} ({event_type}, {issue.number})";
 * assert.deepEqual(unfilledPlaceholders(template, { issue: { title: "Crash" } }), [
 *   "issue.number",
 * ]);
 * ```
 */
export function unfilledPlaceholders(template: string, payload: unknown): string[] {
  const unfilled = new Set<string>();
  for (const [, path] of template.matchAll(PLACEHOLDER)) {
    if (path === "event_type" || path === "__raw__") continue;
    if (resolvePath(payload, path) === undefined) unfilled.add(path);
  }
  return [...unfilled];
}

/**
 * Renders the prompt of a route's event: its `prompt` template, or, when it has none (or only
 * blanks), {@linkcode defaultPrompt}. A template can still render blank for a payload (the
 * fields it names are empty): the caller decides what then (a direct delivery sends nothing, an
 * agent run takes the default prompt).
 *
 * @param route The route's name and `prompt`.
 * @param payload The request's JSON payload.
 * @param event The event name.
 * @returns The prompt for the agent run (or the message of a deliver-only route).
 *
 * @example
 * ```ts
 * import { renderPrompt } from "./templates.ts";
 * import assert from "node:assert/strict";
 *
 * const fence = "`".repeat(3);
 * assert.equal(
 *   renderPrompt({ name: "ci" }, { ok: true }, "push"),
 *   `Webhook event 'push' on route 'ci':\n\n${fence}json\n{\n  "ok": true\n}\n${fence}`,
 * );
 * assert.equal(renderPrompt({ name: "ci", prompt: "Build {ok}" }, { ok: true }, "push"), "Build true");
 * ```
 */
export function renderPrompt(
  route: { name: string; prompt?: string },
  payload: unknown,
  event: string,
): string {
  if (route.prompt !== undefined && route.prompt.trim() !== "") {
    return renderTemplate(route.prompt, payload, { event });
  }
  return defaultPrompt(route.name, payload, event);
}

/**
 * The prompt of a route without a template: `Webhook event '<event>' on route '<route>':` and the
 * payload as a JSON code block, cut to {@linkcode MAX_DEFAULT_PAYLOAD_CHARS} characters (the last
 * one `…`) with a note saying so. An agent run gets it too when its route's template renders
 * blank for the payload.
 *
 * @param route The route's name.
 * @param payload The request's JSON payload.
 * @param event The event name.
 * @returns The prompt.
 *
 * @example
 * ```ts
 * import { defaultPrompt } from "./templates.ts";
 * import assert from "node:assert/strict";
 *
 * const fence = "`".repeat(3);
 * assert.equal(
 *   defaultPrompt("ci", { ok: true }, "push"),
 *   `Webhook event 'push' on route 'ci':\n\n${fence}json\n{\n  "ok": true\n}\n${fence}`,
 * );
 * ```
 */
export function defaultPrompt(route: string, payload: unknown, event: string): string {
  const json = toJson(payload);
  const shown = cut(json, MAX_DEFAULT_PAYLOAD_CHARS);
  // A fence longer than any backtick run inside keeps the block closed whatever the payload holds.
  const longestRun = (shown.match(/`+/g) ?? []).reduce((max, run) => Math.max(max, run.length), 0);
  const fence = "`".repeat(Math.max(3, longestRun + 1));
  const note = shown === json
    ? ""
    : `\n\n(payload cut: the first ${MAX_DEFAULT_PAYLOAD_CHARS - 1} of ${
      codePointCount(json)
    } characters shown)`;
  return `Webhook event '${event}' on route '${route}':\n\n${fence}json\n${shown}\n${fence}${note}`;
}

/**
 * Renders the string values of a route's `deliver_extra` like a prompt template; other values are
 * kept as they are. The input is not changed.
 *
 * @param extra The route's `deliver_extra`.
 * @param payload The request's JSON payload.
 * @param event The event name.
 * @returns A new object with the rendered values.
 *
 * @example
 * ```ts
 * import { renderExtra } from "./templates.ts";
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(
 *   renderExtra({ repo: "{repository.full_name}", number: 3 }, { repository: { full_name: "o/r" } }, "push"),
 *   { repo: "o/r", number: 3 },
 * );
 * ```
 */
export function renderExtra(
  extra: Record<string, unknown>,
  payload: unknown,
  event: string,
): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(extra).map((
      [key, value],
    ) => [key, typeof value === "string" ? renderTemplate(value, payload, { event }) : value]),
  );
}

function resolvePath(root: unknown, path: string): unknown {
  let value = root;
  for (const segment of path.split(".")) {
    if (Array.isArray(value)) {
      if (!/^\d+$/.test(segment)) return undefined;
      value = value[Number(segment)];
    } else if (typeof value === "object" && value !== null) {
      if (!Object.hasOwn(value, segment)) return undefined;
      value = (value as Record<string, unknown>)[segment];
    } else {
      return undefined;
    }
  }
  return value;
}

function formatValue(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "object" && value !== null) return cut(toJson(value), MAX_VALUE_CHARS);
  return toJson(value);
}

/** 2-space JSON; `bigint`s print as their exact digits. */
function toJson(value: unknown): string {
  try {
    return stringifyJsonExact(value, 2);
  } catch {
    return String(value); // not JSON (a cycle): still say something
  }
}
