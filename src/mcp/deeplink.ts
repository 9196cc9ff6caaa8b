/**
 * The install deep link `agent://mcp/install?name=<name>&config=<config>` (SPEC "Install deep
 * link", decisions.md §5 last paragraph): parsing, every validation rule, and the text a person
 * reviews before confirming.
 *
 * A link is untrusted input (anyone can publish one), so {@linkcode parseInstallLink} refuses
 * anything it is not sure about, with a message that says what is wrong and how to fix it:
 *
 * - the link is `agent://mcp/install?…` exactly (scheme and host in any case), without user,
 *   port or `#fragment`, with exactly one `name` and one `config` parameter and nothing else;
 *   `+` in the query is a literal `+` (standard base64), never a space;
 * - `name` matches `^[A-Za-z0-9._-]{1,64}$`;
 * - `config` is base64url or standard base64 (one alphabet, `=` padding optional), at most
 *   32 KB (32768 bytes) once decoded, strict UTF-8 (no byte order mark), JSON without duplicate
 *   keys, nested at most 32 levels, and a JSON object;
 * - the object has a string `url` (http or https) or a non-empty string `command`, not both;
 * - the entry passes the same `mcp_servers` validation as `config.yaml` ({@linkcode
 *   parseMcpServers}); its warnings (unknown keys, …) are returned for the review.
 *
 * @module
 */
import { Document } from "yaml";
import { ConfigSource, isPlainObject } from "../home/config.ts";
import { cut, visible } from "../home/text.ts";
import { firstInvalidUtf8 } from "../home/utf8.ts";
import { jsonSyntaxProblem } from "../home/json_syntax.ts";
import {
  type McpConfigIssue,
  type McpTransportKind,
  parseMcpServers,
  SERVER_NAME_PATTERN,
} from "./config.ts";
import { type SubstitutionContext, unresolvedPlaceholders } from "./substitute.ts";

/** Re-exported: the rule every MCP message uses to show a server's words inert on a terminal. */
export { visible };

/** The fixed start of every install link. */
const INSTALL_LINK_PREFIX = "agent://mcp/install";
/** The largest decoded `config`: 32 KB. */
export const MAX_CONFIG_BYTES = 32 * 1024;
/** The deepest nesting of the decoded JSON (the entry itself is level 1). */
const MAX_CONFIG_DEPTH = 32;

const SHAPE = "agent://mcp/install?name=<server name>&config=<server entry as base64url JSON>";
const NAME_RULE = "use 1 to 64 letters, digits, '.', '_' or '-'";
const PARAMETERS = ["name", "config"] as const;

/** Which rule an install link broke. */
export type InstallLinkProblem =
  | "not_a_link" // not a URL at all
  | "scheme" // not agent://
  | "host" // not agent://mcp (or with user/port)
  | "path" // not /install
  | "fragment" // a #fragment
  | "missing_parameter"
  | "duplicate_parameter"
  | "unknown_parameter"
  | "encoding" // broken %-encoding in the query
  | "name"
  | "base64"
  | "too_large"
  | "utf8"
  | "json"
  | "duplicate_key"
  | "too_deep"
  | "not_an_object"
  | "type" // url or command is not a string
  | "url"
  | "url_scheme"
  | "url_and_command"
  | "type_contradicts" // JSON of another client: its `type` says stdio with a url, or http without
  | "no_url_or_command"
  | "empty_command"
  | "invalid_entry" // the mcp_servers validation found errors
  | "no_server" // JSON of another client (snippet.ts) that holds no server
  | "several_servers"; // JSON of another client that holds more than one

/**
 * An install link that must not be installed. The message says what is wrong and how to fix
 * it; `problem` says which rule was broken.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { InstallLinkError, parseInstallLink } from "./deeplink.ts";
 * assert.throws(
 *   () => parseInstallLink("agent://mcp/install?name=a%20b&config=e30"),
 *   (error) => error instanceof InstallLinkError && error.problem === "name",
 * );
 * ```
 */
export class InstallLinkError extends Error {
  /** The rule the link broke. */
  readonly problem: InstallLinkProblem;
  constructor(problem: InstallLinkProblem, message: string) {
    super(message);
    this.name = "InstallLinkError";
    this.problem = problem;
  }
}

/** A server entry checked for installing: what the review shows and config.yaml receives. */
export interface InstallEntry {
  /** The server name the link (or JSON) asks for. */
  name: string;
  /** The decoded server entry, exactly as it will be written under `mcp_servers.<name>`. */
  entry: Record<string, unknown>;
  /** `stdio` (a local command), `http` or `sse`. */
  transport: McpTransportKind;
  /** For a stdio entry: the command and its arguments as written (this runs on this machine). */
  commandLine?: string[];
  /** The variables the entry reads with `${NAME}` (from `<home>/.env`, then the environment). */
  variables: string[];
  /** Warnings of the `mcp_servers` validation, each `key: message`. */
  warnings: string[];
}

/** A valid install link, decoded. */
export interface InstallRequest extends InstallEntry {
  /** The alphabet `config` was written in. */
  encoding: "base64url" | "base64";
  /** Size of the decoded `config` in bytes. */
  bytes: number;
}

/**
 * Parses and validates an install link. Pure: nothing is read or written, and `${NAME}`
 * references are validated as written (never resolved, so no secret ends up in a message).
 *
 * @param link The whole link, e.g. `agent://mcp/install?name=fs&config=eyJjb21tYW5kIjoibnB4In0`.
 * @returns The decoded request.
 * @throws {InstallLinkError} For every broken rule (see the module documentation).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseInstallLink } from "./deeplink.ts";
 * const config = btoa(JSON.stringify({ url: "https://mcp.example.com/mcp" }));
 * const request = parseInstallLink(`agent://mcp/install?name=example&config=${config}`);
 * assert.equal(request.name, "example");
 * assert.equal(request.transport, "http");
 * assert.deepEqual(request.entry, { url: "https://mcp.example.com/mcp" });
 * ```
 */
export function parseInstallLink(link: string): InstallRequest {
  const params = readLink(link);
  const name = params.name;
  if (!SERVER_NAME_PATTERN.test(name)) {
    throw new InstallLinkError(
      "name",
      name === ""
        ? `the name parameter is empty; ${NAME_RULE}`
        : `name ${quote(name)} is not a valid server name; ${NAME_RULE}`,
    );
  }
  const { bytes, encoding } = decodeBase64(params.config);
  const entry = parseJsonObject(bytes, "config");
  return { ...checkInstallEntry(name, entry), encoding, bytes: bytes.length };
}

/**
 * Checks a decoded server entry as an install link's `config` is checked: a string `url`
 * (http/https) or a non-empty `command`, not both, then the `mcp_servers` validation of
 * `config.yaml` (`${NAME}` references checked as written, never resolved).
 *
 * @param name The server name (not checked here).
 * @param entry The entry as it will be written under `mcp_servers.<name>`.
 * @param label How messages name the entry (`config` for a link's parameter); its keys are
 *   named `<label>.<key>`.
 * @throws {InstallLinkError} For a rule the entry breaks.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkInstallEntry } from "./deeplink.ts";
 * const checked = checkInstallEntry("fs", { command: "npx", args: ["-y", "server-fs"] });
 * assert.deepEqual(checked.commandLine, ["npx", "-y", "server-fs"]);
 * assert.throws(() => checkInstallEntry("x", { url: 1 }, "mcpServers.x"), /mcpServers\.x\.url must be a string/);
 * ```
 */
export function checkInstallEntry(
  name: string,
  entry: Record<string, unknown>,
  label = "config",
): InstallEntry {
  checkUrlOrCommand(entry, label);
  const { transport, warnings } = validateEntry(name, entry, label);
  const command = entry.command;
  return {
    name,
    entry,
    transport,
    ...(transport === "stdio"
      ? { commandLine: [String(command).trim(), ...argsOf(entry.args)] }
      : {}),
    variables: variablesOf(entry),
    warnings,
  };
}

/**
 * Builds an install link for `entry` (base64url, no padding), the inverse of
 * {@linkcode parseInstallLink}. The entry is not validated.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { installLink, parseInstallLink } from "./deeplink.ts";
 * const link = installLink("fs", { command: "npx", args: ["-y", "server-filesystem", "/tmp"] });
 * assert(link.startsWith("agent://mcp/install?name=fs&config="));
 * assert.deepEqual(parseInstallLink(link).commandLine, ["npx", "-y", "server-filesystem", "/tmp"]);
 * ```
 */
export function installLink(name: string, entry: Record<string, unknown>): string {
  const config = new TextEncoder().encode(JSON.stringify(entry)).toBase64({
    alphabet: "base64url",
    omitPadding: true,
  });
  return `${INSTALL_LINK_PREFIX}?name=${encodeURIComponent(name)}&config=${config}`;
}

// ---------------------------------------------------------------------------------------------
// The link

function readLink(link: string): { name: string; config: string } {
  let url: URL;
  try {
    url = new URL(link);
  } catch {
    throw new InstallLinkError(
      "not_a_link",
      `${quote(link)} is not a link; it must look like ${SHAPE}`,
    );
  }
  if (url.protocol !== "agent:") {
    throw new InstallLinkError(
      "scheme",
      `the link starts with ${
        quote(url.protocol + "//")
      }, not agent://; it must look like ${SHAPE}`,
    );
  }
  if (url.host.toLowerCase() !== "mcp" || url.username !== "" || url.password !== "") {
    const at = url.username || url.password ? `${url.username}…@${url.host}` : url.host;
    throw new InstallLinkError(
      "host",
      `the link goes to ${quote(`agent://${at}`)}, not agent://mcp; it must look like ${SHAPE}`,
    );
  }
  if (url.pathname !== "/install") {
    throw new InstallLinkError(
      "path",
      `the link asks for ${
        quote(url.pathname || "/")
      } instead of /install; it must look like ${SHAPE}`,
    );
  }
  if (url.hash !== "") {
    throw new InstallLinkError(
      "fragment",
      `the link ends with a fragment (${
        quote(url.hash)
      }) that install links do not use; remove everything from the #`,
    );
  }
  const found = new Map<string, string[]>();
  for (const part of url.search.slice(1).split("&")) {
    if (part === "") continue;
    const at = part.indexOf("=");
    const key = decodeComponent(at < 0 ? part : part.slice(0, at), "a parameter name");
    const value = decodeComponent(at < 0 ? "" : part.slice(at + 1), `the ${quote(key)} parameter`);
    if (!(PARAMETERS as readonly string[]).includes(key)) {
      throw new InstallLinkError(
        "unknown_parameter",
        `the link has an unknown parameter ${
          quote(key)
        }; install links take only name and config: remove it`,
      );
    }
    found.set(key, [...found.get(key) ?? [], value]);
  }
  const values: Record<string, string> = {};
  for (const key of PARAMETERS) {
    const given = found.get(key) ?? [];
    if (given.length === 0) {
      throw new InstallLinkError(
        "missing_parameter",
        key === "name"
          ? `the link has no name parameter; add name=<server name> (${NAME_RULE.slice(4)})`
          : "the link has no config parameter; add config=<the server entry as base64url-encoded JSON>",
      );
    }
    if (given.length > 1) {
      throw new InstallLinkError(
        "duplicate_parameter",
        `the link has ${given.length} ${key} parameters; give ${key} exactly once`,
      );
    }
    values[key] = given[0];
  }
  return { name: values.name, config: values.config };
}

/** `%xx`-decodes one query component; `+` stays `+` (base64 uses it). */
function decodeComponent(text: string, what: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new InstallLinkError(
      "encoding",
      `${what} has broken %-encoding (${
        quote(cut(text, 40))
      }); encode it with encodeURIComponent, or use base64url, which needs no encoding`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// config: base64 → bytes → UTF-8 → JSON → object

const URL_ONLY = /[-_]/;
const STANDARD_ONLY = /[+/]/;

function decodeBase64(text: string): { bytes: Uint8Array; encoding: "base64url" | "base64" } {
  if (text === "") {
    throw new InstallLinkError(
      "base64",
      "the config parameter is empty; set config=<the server entry as base64url-encoded JSON>",
    );
  }
  const bad = /[^A-Za-z0-9+/_=-]/.exec(text);
  if (bad) {
    const hint = bad[0] === " "
      ? "; a '+' of standard base64 may have been turned into a space: write it as %2B, or use base64url"
      : "; encode the JSON with base64url (A-Z, a-z, 0-9, '-', '_')";
    throw new InstallLinkError(
      "base64",
      `config is not base64: character ${quote(bad[0])} at position ${bad.index + 1}${hint}`,
    );
  }
  if (URL_ONLY.test(text) && STANDARD_ONLY.test(text)) {
    throw new InstallLinkError(
      "base64",
      "config mixes base64url ('-', '_') and standard base64 ('+', '/') characters; encode it with one alphabet",
    );
  }
  const body = text.replace(/=+$/, "");
  const padding = text.length - body.length;
  if (body.includes("=") || padding > 2 || (padding > 0 && text.length % 4 !== 0)) {
    throw new InstallLinkError(
      "base64",
      "config has misplaced '=' padding; '=' may only end the value, making its length a multiple of 4 (or leave the padding out)",
    );
  }
  if (body.length % 4 === 1) {
    throw new InstallLinkError(
      "base64",
      `config is not valid base64: its ${body.length} characters end in the middle of a byte; the link was probably cut off, copy all of it`,
    );
  }
  const size = Math.floor(body.length * 3 / 4);
  if (size > MAX_CONFIG_BYTES) {
    throw new InstallLinkError(
      "too_large",
      `config decodes to ${size} bytes, over the limit of ${MAX_CONFIG_BYTES} bytes (32 KB); a server entry needs far less, so check the link`,
    );
  }
  const encoding = STANDARD_ONLY.test(text) ? "base64" : "base64url";
  const bytes = Uint8Array.fromBase64(body, {
    alphabet: encoding === "base64" ? "base64" : "base64url",
    lastChunkHandling: "loose",
  });
  return { bytes, encoding };
}

/**
 * Reads UTF-8 JSON `bytes` that must hold one object: strict UTF-8 without a byte order mark, no
 * duplicate key, at most {@linkcode MAX_CONFIG_DEPTH} levels. Messages name it `label`.
 *
 * @throws {InstallLinkError} For each broken rule.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseJsonObject } from "./deeplink.ts";
 * const bytes = new TextEncoder().encode('{"a": 1, "a": 2}');
 * assert.throws(() => parseJsonObject(bytes, "the JSON"), /the JSON has the key "a" more than once/);
 * ```
 */
export function parseJsonObject(bytes: Uint8Array, label: string): Record<string, unknown> {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new InstallLinkError(
      "utf8",
      `${label} is not valid UTF-8 (at byte ${
        (firstInvalidUtf8(bytes) ?? bytes.length) + 1
      }); encode the JSON text as UTF-8 before base64`,
    );
  }
  if (text.startsWith("\uFEFF")) {
    throw new InstallLinkError(
      "json",
      `${label} starts with a byte order mark (U+FEFF), which JSON does not allow; encode the JSON without it`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // V8's message quotes the text around the error, and an entry's env holds tokens.
    throw new InstallLinkError(
      "json",
      `${label} is not valid JSON (${
        jsonSyntaxProblem(text)
      }); it must be a JSON object such as {"url": "https://…"} or {"command": "npx", "args": […]}`,
    );
  }
  const scan = scanJson(text);
  if (scan.depth > MAX_CONFIG_DEPTH) {
    throw new InstallLinkError(
      "too_deep",
      `${label} is nested more than ${MAX_CONFIG_DEPTH} levels deep; a server entry needs a few levels at most`,
    );
  }
  if (scan.duplicate) {
    const where = scan.duplicate.pointer === "" ? "" : ` (in ${scan.duplicate.pointer})`;
    throw new InstallLinkError(
      "duplicate_key",
      `${label} has the key ${quote(scan.duplicate.key)} more than once${where}; keep exactly one`,
    );
  }
  if (!isPlainObject(value)) {
    throw new InstallLinkError(
      "not_an_object",
      `${label} must be a JSON object such as {"url": "https://…"} or {"command": "npx", "args": […]}, got ${
        describe(value)
      }`,
    );
  }
  return value;
}

interface Frame {
  keys?: Set<string>; // an object: its keys so far; an array: undefined
  expectKey: boolean;
  key: string;
  index: number;
}

/**
 * Finds the first duplicate key (JSON.parse silently keeps the last one, so a reviewer could be
 * shown one value while another was meant) and the nesting depth. `text` is valid JSON.
 */
function scanJson(text: string): { depth: number; duplicate?: { key: string; pointer: string } } {
  const stack: Frame[] = [];
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === "\\" ? 2 : 1;
      const top = stack.at(-1);
      if (top?.keys && top.expectKey) {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        if (top.keys.has(key)) return { depth, duplicate: { key, pointer: pointerOf(stack) } };
        top.keys.add(key);
        top.key = key;
        top.expectKey = false;
      }
      i = end;
    } else if (char === "{" || char === "[") {
      stack.push({
        keys: char === "{" ? new Set() : undefined,
        expectKey: true,
        key: "",
        index: 0,
      });
      depth = Math.max(depth, stack.length);
      if (depth > MAX_CONFIG_DEPTH) return { depth };
    } else if (char === "}" || char === "]") {
      stack.pop();
    } else if (char === ",") {
      const top = stack.at(-1)!;
      if (top.keys) top.expectKey = true;
      else top.index++;
    }
  }
  return { depth };
}

/** The JSON pointer of the innermost frame's container. */
function pointerOf(stack: Frame[]): string {
  return stack.slice(0, -1).map((frame) =>
    "/" +
    (frame.keys ? frame.key.replaceAll("~", "~0").replaceAll("/", "~1") : String(frame.index))
  ).join("");
}

// ---------------------------------------------------------------------------------------------
// The entry

function checkUrlOrCommand(entry: Record<string, unknown>, label: string): void {
  const hasUrl = Object.hasOwn(entry, "url");
  const hasCommand = Object.hasOwn(entry, "command");
  if (hasUrl && hasCommand) {
    throw new InstallLinkError(
      "url_and_command",
      `${label} has both url and command; an entry is either a remote server (url) or a local one (command): remove one`,
    );
  }
  if (!hasUrl && !hasCommand) {
    throw new InstallLinkError(
      "no_url_or_command",
      `${label} has neither url nor command; add "url" for a remote (HTTP) server or "command" for a local (stdio) one`,
    );
  }
  if (hasCommand) {
    const command = entry.command;
    if (typeof command !== "string") {
      throw new InstallLinkError(
        "type",
        `${label}.command must be a string naming the executable, got ${
          describe(command)
        }; put its arguments in "args"`,
      );
    }
    if (command.trim() === "") {
      throw new InstallLinkError(
        "empty_command",
        `${label}.command is empty; set it to the executable to run, e.g. "npx"`,
      );
    }
    return;
  }
  const url = entry.url;
  if (typeof url !== "string") {
    throw new InstallLinkError(
      "type",
      `${label}.url must be a string (an http:// or https:// URL), got ${describe(url)}`,
    );
  }
  let protocol: string;
  try {
    protocol = new URL(url.trim()).protocol;
  } catch {
    throw new InstallLinkError(
      "url",
      `${label}.url ${quote(url)} is not a URL; use an http:// or https:// URL`,
    );
  }
  if (protocol !== "http:" && protocol !== "https:") {
    throw new InstallLinkError(
      "url_scheme",
      `${label}.url must use http or https, got ${quote(protocol)}; use an http:// or https:// URL`,
    );
  }
}

/** Runs the entry through the `mcp_servers` validation of `config.yaml`, as it will be written. */
function validateEntry(
  name: string,
  entry: Record<string, unknown>,
  label: string,
): { transport: McpTransportKind; warnings: string[] } {
  const file = "the install link";
  const text = new Document({ mcp_servers: { [name]: entry } }).toString({ lineWidth: 0 });
  const context: SubstitutionContext = {
    // Every variable "resolves" to its own placeholder: values are checked as written.
    lookup: (variable) => `\${${variable}}`,
    userHome: "~",
    workspaceFolder: ".",
    pathSeparator: "/",
  };
  const { servers, issues } = parseMcpServers(ConfigSource.parse(file, text), context);
  const describeIssue = (issue: McpConfigIssue) =>
    `${issue.key === "" ? "" : `${issue.key}: `}${issue.message}`;
  const errors = issues.filter((issue) => issue.severity === "error");
  if (errors.length > 0 || servers.length === 0) {
    throw new InstallLinkError(
      "invalid_entry",
      `${label} is not a valid server entry: ${errors.map(describeIssue).join("; ")}`,
    );
  }
  return {
    transport: servers[0].transport,
    warnings: issues.filter((issue) => issue.severity === "warning").map(describeIssue),
  };
}

function argsOf(args: unknown): string[] {
  return Array.isArray(args) ? args.map(String) : [];
}

/** Variable names referenced by `${NAME}` / `${env:NAME}` in any string value (never keys). */
function variablesOf(value: unknown, found: string[] = []): string[] {
  if (typeof value === "string") {
    const none: SubstitutionContext = {
      lookup: () => undefined,
      userHome: "",
      workspaceFolder: "",
      pathSeparator: "/",
    };
    for (const placeholder of unresolvedPlaceholders(value, none)) {
      const name = placeholder.slice(2, -1).trim().replace(/^env:/, "").trim();
      if (name !== "" && !found.includes(name)) found.push(name);
    }
  } else if (Array.isArray(value)) {
    for (const item of value) variablesOf(item, found);
  } else if (isPlainObject(value)) {
    for (const item of Object.values(value)) variablesOf(item, found);
  }
  return found;
}

// ---------------------------------------------------------------------------------------------
// Review text

/** Mapping keys whose values are credentials, under `headers` and `env`. */
const SECRET_NAME = /auth|token|key|secret|pass|cookie|session|credential|signature/i;

/**
 * The entry as indented YAML-like lines for a person to review before installing:
 * - characters that could hide or disguise text on a terminal (control characters, bidi
 *   overrides, zero-width characters) are shown as `\u{…}` escapes, in keys and values;
 * - credentials written literally (not as `${VAR}`) are masked: values of `headers` and `env`
 *   whose name looks secret (Authorization, *TOKEN*, *KEY*, …), `oauth.client_secret` and the
 *   password of `client_cert` (an auth scheme such as `Bearer` stays visible).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { renderEntry } from "./deeplink.ts";
 * const text = renderEntry({
 *   url: "https://mcp.example.com/mcp",
 *   headers: { Authorization: "Bearer abc123", "X-Team": "${TEAM}" },
 * });
 * assert.equal(
 *   text,
 *   [
 *     "url: https://mcp.example.com/mcp",
 *     "headers:",
 *     "  Authorization: Bearer <hidden, 6 characters>",
 *     "  X-Team: ${TEAM}",
 *     "",
 *   ].join("\n"),
 * );
 * ```
 */
export function renderEntry(entry: Record<string, unknown>): string {
  const lines: string[] = [];
  renderInto(lines, entry, [], "");
  return lines.map((line) => line + "\n").join("");
}

function renderInto(lines: string[], value: unknown, path: string[], indent: string): void {
  if (Array.isArray(value)) {
    value.forEach((item, index) => {
      const itemPath = [...path, String(index)];
      if (isComposite(item)) {
        lines.push(`${indent}-`);
        renderInto(lines, item, itemPath, indent + "  ");
      } else lines.push(`${indent}- ${scalar(masked(itemPath, item))}`);
    });
    return;
  }
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
    const itemPath = [...path, key];
    if (isComposite(item)) {
      lines.push(`${indent}${plainOrQuoted(key)}:`);
      renderInto(lines, item, itemPath, indent + "  ");
    } else lines.push(`${indent}${plainOrQuoted(key)}: ${scalar(masked(itemPath, item))}`);
  }
}

/** A non-empty list or mapping (empty ones print inline as `[]` / `{}`). */
function isComposite(value: unknown): boolean {
  return (Array.isArray(value) && value.length > 0) ||
    (isPlainObject(value) && Object.keys(value).length > 0);
}

/** A marker standing for a hidden value (never quoted). */
class Hidden {
  constructor(readonly text: string) {}
}

function masked(path: string[], value: unknown): unknown {
  if (typeof value !== "string" || value.includes("${")) return value;
  const [section, name] = path;
  const secret = (path.length === 2 && (section === "headers" || section === "env") &&
    SECRET_NAME.test(name)) ||
    (path.length === 2 && section === "oauth" && name === "client_secret") ||
    (path.length === 2 && section === "client_cert" && name === "2");
  if (!secret || value === "") return value;
  const scheme = /^(Bearer|Basic|Token|Bot)\s+/i.exec(value)?.[0] ?? "";
  const hidden = value.length - scheme.length;
  return new Hidden(
    `${visible(scheme)}<hidden, ${hidden} character${hidden === 1 ? "" : "s"}>`,
  );
}

function scalar(value: unknown): string {
  if (value instanceof Hidden) return value.text;
  if (typeof value === "string") return plainOrQuoted(value);
  if (Array.isArray(value)) return "[]";
  if (isPlainObject(value)) return "{}";
  return String(value);
}

/** Plain when unambiguous printable ASCII, else a JSON string with invisible characters escaped. */
function plainOrQuoted(text: string): string {
  const plain = /^(?:[A-Za-z0-9_./~$@%+=(]|-(?=\S))[\x20-\x7e]*$/.test(text) &&
    !/\s$|: | #/.test(text) &&
    !/^(true|false|null|yes|no|on|off|~|[-+]?[\d.]+(e[-+]?\d+)?)$/i.test(text);
  return plain ? text : visible(JSON.stringify(text));
}

/**
 * A command line as a person would type it in a POSIX shell (single quotes where needed), with
 * {@linkcode visible} escapes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { renderCommandLine } from "./deeplink.ts";
 * assert.equal(renderCommandLine(["npx", "-y", "my server", "it's"]), "npx -y 'my server' 'it'\\''s'");
 * ```
 */
export function renderCommandLine(argv: readonly string[]): string {
  return argv.map((arg) =>
    /^[A-Za-z0-9_./:@%+=,-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`
  ).map(visible).join(" ");
}

// ---------------------------------------------------------------------------------------------
// Helpers

/** A value for a message: JSON-quoted, invisible characters escaped, cut to 80 characters. */
function quote(text: string): string {
  return visible(JSON.stringify(cut(text, 80)));
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "an object";
  if (typeof value === "string") return `the string ${quote(value)}`;
  return `${typeof value} ${JSON.stringify(value)}`;
}
