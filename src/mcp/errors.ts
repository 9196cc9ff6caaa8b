/**
 * Errors of the MCP layer. Every one names the server it belongs to, so one broken server never
 * reads like a failure of the whole client.
 *
 * @module
 */

import { collapseWhitespace, cut, visible } from "../home/text.ts";
import type { McpServerConfig } from "./config.ts";
import { maskSubstitutions, type Substitution } from "./substitute.ts";

/** Why a server could not be used. */
export type McpFailureKind =
  | "config" // the entry or a file it names is unusable (missing cert file, bad command)
  | "spawn" // the stdio command could not be started
  | "unreachable" // nothing answered at the URL
  | "not_mcp" // something answered, but not an MCP endpoint
  | "auth" // the server refused our credentials
  | "tls" // certificate verification or mTLS failed
  | "timeout" // connect or call took longer than allowed
  | "protocol" // the server broke the protocol (garbage, crashed, unsupported era)
  | "closed" // the connection went away
  | "tool"; // the tool call itself failed on the server

/** Kinds retrying cannot fix: the server is parked at once (decisions.md §5). */
const PERMANENT: ReadonlySet<McpFailureKind> = new Set([
  "config",
  "spawn",
  "not_mcp",
  "auth",
  "tls",
]);

/**
 * A failure of one MCP server, with a message that starts with `MCP server '<name>'`. Its detail
 * quotes a server's words (a tool's error, a stderr line), so every character that could hide or
 * reorder text on a terminal is written as an escape ({@linkcode visible}), wherever it came from.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { McpServerError } from "./errors.ts";
 * const error = new McpServerError("fs", "config", "client_cert not found at '/x.pem'");
 * assert(error.message === "MCP server 'fs': client_cert not found at '/x.pem'");
 * assert(error.permanent);
 * ```
 */
export class McpServerError extends Error {
  /** The server's configured name. */
  readonly server: string;
  /** What went wrong. */
  readonly kind: McpFailureKind;
  /** The message without its `MCP server '<name>': ` start. */
  readonly detail: string;

  constructor(server: string, kind: McpFailureKind, detail: string, options?: ErrorOptions) {
    const shown = visible(detail);
    super(`MCP server '${server}': ${shown}`, options);
    this.name = "McpServerError";
    this.server = server;
    this.kind = kind;
    this.detail = shown;
  }

  /**
   * This error with the values substituted into the server's entry written back as their
   * placeholders ({@linkcode maskSubstitutions}); itself when it quotes none.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { McpServerError } from "./errors.ts";
   * const error = new McpServerError("api", "unreachable", "cannot reach https://x/?t=s3cret");
   * const masked = error.masked([{ value: "s3cret", placeholder: "${TOKEN}" }]);
   * assert.equal(masked.message, "MCP server 'api': cannot reach https://x/?t=${TOKEN}");
   * assert.equal(masked.kind, "unreachable");
   * ```
   */
  masked(substitutions: readonly Substitution[] | undefined): McpServerError {
    // The detail shows a value's invisible characters as escapes: its shown form is masked too.
    const shown = (substitutions ?? []).map((s) => ({ ...s, value: visible(s.value) }));
    const detail = maskSubstitutions(this.detail, [...(substitutions ?? []), ...shown]);
    return detail === this.detail
      ? this
      : new McpServerError(this.server, this.kind, detail, { cause: this.cause });
  }

  /** Whether reconnecting cannot help (auth, missing files, not an MCP endpoint …). */
  get permanent(): boolean {
    return PERMANENT.has(this.kind);
  }
}

/**
 * The `Fix: …` end of a message that says what to change in a server's entry: `change` with every
 * `<key>` written as `mcp_servers.<server>.<key>`, in the file the entry was read from when that
 * is known.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { entryFix } from "./errors.ts";
 * assert.equal(
 *   entryFix({ name: "api", configFile: "/h/config.yaml" }, "remove <transport>"),
 *   "Fix: in /h/config.yaml, remove mcp_servers.api.transport",
 * );
 * assert.equal(entryFix({ name: "api" }, "remove <transport>"), "Fix: remove mcp_servers.api.transport");
 * ```
 */
export function entryFix(
  config: Pick<McpServerConfig, "name" | "configFile">,
  change: string,
): string {
  const keyed = change.replace(
    /<([a-z_]+)>/g,
    (_, key: string) => `mcp_servers.${config.name}.${key}`,
  );
  return config.configFile === undefined
    ? `Fix: ${keyed}`
    : `Fix: in ${config.configFile}, ${keyed}`;
}

/**
 * The end of a timeout's message that says which setting gives it longer: `; if <what> needs
 * longer, raise mcp_servers.<server>.<key> in <file>` (the file left out when unknown).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { raiseTimeoutHint } from "./errors.ts";
 * assert.equal(
 *   raiseTimeoutHint({ name: "api", configFile: "/h/config.yaml" }, "timeout", "the tool"),
 *   "; if the tool needs longer, raise mcp_servers.api.timeout in /h/config.yaml",
 * );
 * ```
 */
export function raiseTimeoutHint(
  config: Pick<McpServerConfig, "name" | "configFile">,
  key: "timeout" | "connect_timeout",
  what: string,
): string {
  const file = config.configFile === undefined ? "" : ` in ${config.configFile}`;
  return `; if ${what} needs longer, raise mcp_servers.${config.name}.${key}${file}`;
}

/**
 * The messages of `error` and of its causes, outermost first, joined by `: `.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { causeChainText } from "./errors.ts";
 * const error = new TypeError("fetch failed", { cause: new Error("connection refused") });
 * assert.equal(causeChainText(error), "fetch failed: connection refused");
 * ```
 */
export function causeChainText(error: unknown): string {
  const messages: string[] = [];
  let current = error;
  for (let depth = 0; current !== undefined && current !== null && depth < 8; depth++) {
    messages.push(messageOf(current));
    current = current instanceof Error ? current.cause : undefined;
  }
  return messages.join(": ");
}

/** The message of any thrown value, without a stack. */
export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}

/** How many characters of a server's own words {@linkcode quotedServerText} quotes. */
const SERVER_TEXT_SHOWN = 200;

/**
 * Words a server sent (an OAuth `error_description`, a stderr line …) quoted for an error
 * message: cut to `max` characters (the last one `…`), so a server cannot flood the message, then
 * in JSON quotes, so where they end is plain and a line break or control character is escaped,
 * and with the characters JSON leaves as they are but a terminal hides or obeys (bidi overrides,
 * zero-width characters, U+2028/2029) written as `\u{…}` escapes ({@linkcode visible}). Cut
 * before escaping, so a cut never splits an escape.
 *
 * @param text The server's words.
 * @param max The most characters of `text` shown, `…` included; 200 unless told.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { quotedServerText } from "./errors.ts";
 * assert.equal(quotedServerText('token "t1" expired\n'), '"token \\"t1\\" expired\\n"');
 * assert.equal(quotedServerText("x".repeat(5000)), `"${"x".repeat(199)}…"`);
 * assert.equal(quotedServerText("evil\u202Etxt.exe"), '"evil\\u{202e}txt.exe"');
 * ```
 */
export function quotedServerText(text: string, max = SERVER_TEXT_SHOWN): string {
  return visible(JSON.stringify(cut(text, max)));
}

/** How many characters of an HTTP answer's body an error message quotes. */
const BODY_SHOWN = 200;

const ENTITIES: Record<string, string> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
  nbsp: " ",
};

/**
 * An HTTP answer's body as one short line for an error message: an HTML page becomes its text
 * (the `<head>` is dropped unless nothing else is left), a JSON error its `message`, whitespace
 * is collapsed, the result is cut to 200 characters (the last one `…`) and then characters that
 * could hide or reorder text on a terminal are written as escapes ({@linkcode visible}).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bodySummary } from "./errors.ts";
 * const page = "<!DOCTYPE html>\n<html>\n<head><title>Error</title></head>\n" +
 *   "<body>\n<pre>Cannot POST /sse</pre>\n</body>\n</html>\n";
 * assert.equal(bodySummary(page), "Cannot POST /sse");
 * assert.equal(bodySummary('{"error":{"code":-32000,"message":"No session"}}'), "No session");
 * assert.equal(bodySummary("x".repeat(500)), `${"x".repeat(199)}…`);
 * assert.equal(bodySummary("Denied\u202E"), "Denied\\u{202e}");
 * ```
 */
export function bodySummary(body: string): string {
  let text = body.trim();
  if (/^\s*[{[]/.test(text)) text = jsonMessage(text) ?? text;
  else if (/<(?:!doctype|html|head|body|title|p|div|pre|h\d)\b/i.test(text)) text = htmlText(text);
  return visible(cut(collapseWhitespace(text), BODY_SHOWN));
}

/** The `message` of a JSON error body (`{error: {message}}`, `{error: "…"}`, `{message}`). */
function jsonMessage(text: string): string | undefined {
  try {
    const value = JSON.parse(text);
    const error = value?.error;
    const message = typeof error === "string"
      ? error
      : typeof error?.message === "string"
      ? error.message
      : value?.message;
    return typeof message === "string" && message.trim() !== "" ? message : undefined;
  } catch {
    return undefined;
  }
}

function htmlText(html: string): string {
  const withoutCode = html.replace(/<(script|style)\b[\s\S]*?<\/\1\s*>/gi, " ")
    .replace(/<!--[\s\S]*?-->/g, " ");
  const strip = (part: string) =>
    part.replace(/<[^>]*>/g, " ")
      .replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (entity, name: string) => {
        if (name.startsWith("#")) {
          const code = name[1] === "x" || name[1] === "X"
            ? parseInt(name.slice(2), 16)
            : parseInt(name.slice(1), 10);
          return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : entity;
        }
        return ENTITIES[name.toLowerCase()] ?? entity;
      })
      .trim();
  const body = strip(withoutCode.replace(/<head\b[\s\S]*?<\/head\s*>/i, " "));
  return body !== "" ? body : strip(withoutCode);
}

/** How many validation issues {@linkcode answerProblem} names before "and N more". */
const ISSUES_SHOWN = 3;

/** One issue of a schema validation, as the SDK's validator (zod) reports it. */
export interface ValidationIssue {
  code?: string;
  path?: readonly (PropertyKey | { key: PropertyKey })[];
  message?: string;
  errors?: ValidationIssue[][];
}

/** What {@linkcode answerProblem} says of a message that is not a JSON-RPC message at all. */
export const NOT_JSON_RPC = "the server sent JSON that is not a JSON-RPC message";

/**
 * What is wrong with a server's answer that the SDK refused as invalid, in one line, or
 * `undefined` when `error` is not such a refusal. The SDK puts its validator's issue list into
 * the message as pretty-printed JSON (dozens of lines for one missing field), and servers built on
 * it quote the same list in their errors (`Invalid tools/call result: [...]`); this names each
 * issue by its path instead (`tools[0].inputSchema.type: expected "object"`), the first three,
 * and a message that is not a JSON-RPC message at all as just that.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { answerProblem } from "./errors.ts";
 * const issues = [{
 *   code: "invalid_value",
 *   path: ["tools", 0, "inputSchema", "type"],
 *   message: 'Invalid input: expected "object"',
 * }];
 * const error = new Error(`Invalid result for tools/list: ${JSON.stringify(issues, null, 2)}`);
 * assert.equal(
 *   answerProblem(error),
 *   `the server's answer to tools/list is not valid MCP: tools[0].inputSchema.type: expected "object"`,
 * );
 * assert.equal(
 *   answerProblem(new Error(`Invalid tools/call result: ${JSON.stringify(issues)}`)),
 *   `Invalid tools/call result: tools[0].inputSchema.type: expected "object"`,
 * );
 * assert.equal(answerProblem(new Error("fetch failed")), undefined);
 * ```
 */
export function answerProblem(error: unknown): string | undefined {
  const text = messageOf(error).trim();
  const start = text.startsWith("[") ? 0 : text.indexOf(": [") + 2;
  if (start === 1) return undefined;
  let issues: ValidationIssue[];
  try {
    issues = JSON.parse(text.slice(start));
  } catch {
    return undefined;
  }
  if (!Array.isArray(issues) || issues.length === 0 || !issues.every(isIssue)) return undefined;
  const prefix = start === 0 ? undefined : text.slice(0, start - 2);
  if (prefix === undefined && issues.length === 1 && isMessageUnion(issues[0])) {
    return NOT_JSON_RPC;
  }
  const method = prefix?.match(/^Invalid result for (\S+)$/)?.[1];
  // The SDK's own refusal of an answer; any other prefix (a server quoting its validator) stays.
  const what = prefix === undefined
    ? "a message of the server is not valid MCP"
    : method !== undefined
    ? `the server's answer to ${method} is not valid MCP`
    : prefix;
  return `${what}: ${validationIssues(issues)}`;
}

/**
 * A validator's issue list in one line: each issue by its path, the first three, then
 * "(and N more)". The issues are zod's, or the same shape through Standard Schema (the SDK's
 * `specTypeSchemas`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { validationIssues } from "./errors.ts";
 * assert.equal(
 *   validationIssues([
 *     { path: ["inputSchema", "type"], message: 'Invalid input: expected "object"' },
 *     { path: ["icons", 0], message: "Invalid input: expected object, received number" },
 *   ]),
 *   'inputSchema.type: expected "object"; icons[0]: expected object, received number',
 * );
 * ```
 */
export function validationIssues(issues: readonly ValidationIssue[]): string {
  const shown = issues.slice(0, ISSUES_SHOWN).map(issueText).join("; ");
  const more = issues.length > ISSUES_SHOWN ? ` (and ${issues.length - ISSUES_SHOWN} more)` : "";
  return `${shown}${more}`;
}

function isIssue(value: unknown): value is ValidationIssue {
  return typeof value === "object" && value !== null &&
    typeof (value as ValidationIssue).message === "string" &&
    Array.isArray((value as ValidationIssue).path);
}

/** The union of request, notification, result and error a JSON-RPC message must be one of. */
function isMessageUnion(issue: ValidationIssue): boolean {
  return issue.code === "invalid_union" && issue.path?.length === 0 &&
    JSON.stringify(issue.errors ?? []).includes('"jsonrpc"');
}

function issueText(issue: ValidationIssue): string {
  const path = (issue.path ?? []).map((segment, index) => {
    // A Standard Schema path segment may be an object holding the key.
    const part = typeof segment === "object" ? segment.key : segment;
    return typeof part === "number" ? `[${part}]` : index === 0 ? String(part) : `.${String(part)}`;
  }).join("");
  const message = (issue.message ?? "").replace(/^Invalid input: /, "");
  const said = issue.code === "invalid_union" ? "matches none of the allowed shapes" : message;
  return path === "" ? said : `${path}: ${said}`;
}
