/**
 * A server's setup as MCP servers' READMEs print it, for `agent mcp install`: the JSON of another
 * MCP client, turned into one entry of `mcp_servers`. Read shapes:
 *
 * - `{"mcpServers": {"<name>": {…}}}` (Claude Desktop, Cursor, Claude Code, Windsurf, Cline);
 * - `{"servers": {"<name>": {…}}}` (VS Code `mcp.json`) and `{"mcp": {"servers": {…}}}` (VS Code
 *   settings);
 * - `{"<name>": {…}}`, or `"<name>": {…}` without the braces around it;
 * - one entry `{"command": …}` / `{"url": …}`, named by its `name` key (VS Code's `--add-mcp`)
 *   or by the caller.
 *
 * The JSON may hold comments and trailing commas (VS Code's JSONC). Exactly one server is read.
 * Its entry is translated: `type` (`stdio`, `http`, `streamable-http`, `sse`) becomes
 * `transport`, `serverUrl`/`httpUrl` become `url`, `disabled: true` becomes `enabled: false`,
 * `${input:<id>}` (a VS Code prompt) becomes `${<ID>}` (a variable of `<home>/.env`), and keys
 * other clients use that mean nothing here are left out, each named in a warning. A `type` that
 * contradicts the entry (`stdio` with a url, `http` or `sse` with only a command) is refused,
 * naming both keys. The result then
 * passes the checks of an install link's entry ({@linkcode checkInstallEntry}).
 *
 * @module
 */
import { isPlainObject } from "../home/config.ts";
import { closestKey } from "../home/suggest.ts";
import { ENTRY_KEYS, SERVER_NAME_PATTERN } from "./config.ts";
import {
  checkInstallEntry,
  type InstallEntry,
  InstallLinkError,
  MAX_CONFIG_BYTES,
  parseJsonObject,
  visible,
} from "./deeplink.ts";

/** What {@linkcode parseInstallSnippet} found: the entry to install, and what it changed. */
export interface InstallSnippet extends InstallEntry {
  /** Where the entry was in the JSON, e.g. `mcpServers.github` (the JSON itself: `""`). */
  path: string;
  /** What the translation left out or rewrote, one sentence each. */
  changes: string[];
}

/**
 * Whether `text` is meant as JSON rather than a link: it starts with `{`, or with `"` (an entry
 * pasted without the braces around it).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { looksLikeJson } from "./snippet.ts";
 * assert.ok(looksLikeJson(' {"mcpServers": {}}'));
 * assert.ok(!looksLikeJson("agent://mcp/install?name=a&config=e30"));
 * ```
 */
export function looksLikeJson(text: string): boolean {
  return /^\s*[{"]/.test(text);
}

/** Keys of other MCP clients that have no meaning here, and what to do instead. */
const FOREIGN_KEYS: Record<string, string> = {
  cwd: "the server starts in the directory the agent runs in; give absolute paths in args",
  envFile: "put its variables in <home>/.env and refer to them as ${NAME} in env",
  autoApprove: "which calls are asked about is set by trust: full or untrusted",
  alwaysAllow: "which calls are asked about is set by trust: full or untrusted",
  disabledTools: "leave tools out with tools.exclude",
};

/** `type` values meaning Streamable HTTP, and those meaning stdio. */
const HTTP_TYPES = ["http", "streamable-http", "streamablehttp", "streamable_http"];

/**
 * Reads one server from the JSON of another MCP client (see the module documentation).
 *
 * @param text The JSON as pasted.
 * @param fallbackName The name for an entry that carries none (`--name`).
 * @returns The entry to install, checked like an install link's.
 * @throws {InstallLinkError} For JSON that is not one usable server.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseInstallSnippet } from "./snippet.ts";
 * const snippet = parseInstallSnippet(`{
 *   "mcpServers": {
 *     "github": { "type": "http", "url": "https://api.example.com/mcp/" },
 *   },
 * }`);
 * assert.equal(snippet.name, "github");
 * assert.deepEqual(snippet.entry, { url: "https://api.example.com/mcp/" });
 * ```
 */
export function parseInstallSnippet(text: string, fallbackName?: string): InstallSnippet {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length > MAX_CONFIG_BYTES) {
    throw new InstallLinkError(
      "too_large",
      `the JSON is ${bytes.length} bytes, over the limit of ${MAX_CONFIG_BYTES} bytes (32 KB); paste only the entry of the server to install`,
    );
  }
  // An entry pasted without the braces around it: a syntax error's place is said in the text
  // with them.
  const braced = !text.trim().startsWith('"');
  const json = withoutComments(braced ? text : `{${text}}`);
  const root = parseJsonObject(
    new TextEncoder().encode(json),
    braced ? "the text" : "the text with { } around it",
  );
  const found = findServer(root, fallbackName);
  const changes: string[] = [];
  const entry = translate(found.entry, found.path, changes);
  return {
    ...checkInstallEntry(found.name, entry, found.path || "the entry"),
    path: found.path,
    changes,
  };
}

/** The one server in `root`: its name, entry and place. */
function findServer(
  root: Record<string, unknown>,
  fallbackName: string | undefined,
): { name: string; entry: Record<string, unknown>; path: string } {
  const vscodeSettings = isPlainObject(root.mcp) ? root.mcp.servers : undefined;
  const [servers, prefix] = isPlainObject(root.mcpServers)
    ? [root.mcpServers, "mcpServers."]
    : isPlainObject(root.servers)
    ? [root.servers, "servers."]
    : isPlainObject(vscodeSettings)
    ? [vscodeSettings, "mcp.servers."]
    : isEntry(root)
    ? [undefined, ""]
    : Object.values(root).every(isPlainObject)
    ? [root, ""]
    : [undefined, undefined];
  if (prefix === undefined) {
    throw new InstallLinkError(
      "no_server",
      'the JSON holds no MCP server; paste the server\'s entry as its README shows it, such as {"mcpServers": {"<name>": {"command": "npx", "args": […]}}}',
    );
  }
  if (servers === undefined) {
    const { name, ...entry } = root;
    const named = typeof name === "string" && name !== "" ? name : fallbackName;
    if (named === undefined) {
      throw new InstallLinkError(
        "name",
        "the JSON is one server entry without a name; give it one with --name <name>",
      );
    }
    checkName(named);
    return { name: named, entry: typeof name === "string" ? entry : root, path: "" };
  }
  const names = Object.keys(servers);
  if (names.length !== 1) {
    throw new InstallLinkError(
      names.length === 0 ? "no_server" : "several_servers",
      names.length === 0
        ? `the JSON${
          prefix ? `'s ${prefix.slice(0, -1)}` : ""
        } holds no server; paste the entry of the server to install`
        : `the JSON holds ${names.length} servers (${
          names.map((name) => visible(name)).join(", ")
        }); install one at a time: paste only the entry of the one you want`,
    );
  }
  const [name] = names;
  const entry = servers[name];
  if (!isPlainObject(entry)) {
    throw new InstallLinkError(
      "not_an_object",
      `${prefix}${visible(name)} must be a JSON object with "command" or "url"`,
    );
  }
  // The JSON's name is checked even when --name replaces it: it is shown in the review.
  checkName(name);
  return { name, entry, path: `${prefix}${name}` };
}

/** Whether `value` looks like one server entry rather than a mapping of them. */
function isEntry(value: Record<string, unknown>): boolean {
  return ["command", "url", "serverUrl", "httpUrl", "type"].some((key) =>
    Object.hasOwn(value, key)
  );
}

function checkName(name: string): void {
  if (!SERVER_NAME_PATTERN.test(name)) {
    throw new InstallLinkError(
      "name",
      `the server name ${
        visible(JSON.stringify(name))
      } cannot be used here; give another with --name <name> (1 to 64 letters, digits, '.', '_' or '-')`,
    );
  }
}

/** The entry in this client's keys; what is left out or rewritten is said in `changes`. */
function translate(
  source: Record<string, unknown>,
  path: string,
  warnings: string[],
): Record<string, unknown> {
  const at = (key: string) => (path ? `${path}.${key}` : key);
  const entry: Record<string, unknown> = {};
  const leftOut: string[] = [];
  let transport: string | undefined;
  for (const [key, value] of Object.entries(source)) {
    if (key === "type") {
      const type = typeof value === "string" ? value.trim().toLowerCase() : value;
      if (type === "sse") transport = "sse";
      else if (type !== "stdio" && !HTTP_TYPES.includes(String(type))) {
        throw new InstallLinkError(
          "invalid_entry",
          `${at("type")} is ${
            visible(JSON.stringify(value))
          }; a server here is a local command (stdio), or a url over Streamable HTTP ("http") or SSE ("sse")`,
        );
      }
    } else if ((key === "serverUrl" || key === "httpUrl") && !Object.hasOwn(source, "url")) {
      entry.url = value;
    } else if (key === "disabled" && typeof value === "boolean") {
      if (value) entry.enabled = false;
    } else if ((ENTRY_KEYS as readonly string[]).includes(key)) {
      entry[key] = inputsAsVariables(value, warnings);
    } else {
      const hint = FOREIGN_KEYS[key];
      const suggestion = hint === undefined ? closestKey(key, ENTRY_KEYS) : undefined;
      leftOut.push(
        `\`${visible(key)}\`${
          hint ? ` (${hint})` : suggestion ? ` (did you mean \`${suggestion}\`?)` : ""
        }`,
      );
    }
  }
  refuseContradictoryType(source, at);
  // After url, where a person writes it.
  if (transport !== undefined && entry.transport === undefined) entry.transport = transport;
  if (leftOut.length > 0) {
    warnings.push(
      `left out ${leftOut.join(", ")}: ${
        leftOut.length === 1 ? "not a key" : "not keys"
      } of a server entry here`,
    );
  }
  return entry;
}

/**
 * Refuses an entry whose `type` says the opposite of its other keys: `"stdio"` with a url (it
 * would be installed as a remote server), or an HTTP or SSE type with a command and no url (it
 * would be installed as a local one). The message names both keys and which to remove.
 */
function refuseContradictoryType(
  source: Record<string, unknown>,
  at: (key: string) => string,
): void {
  if (!Object.hasOwn(source, "type")) return;
  const written = visible(JSON.stringify(source.type));
  const type = typeof source.type === "string" ? source.type.trim().toLowerCase() : "";
  const urlKey = ["url", "serverUrl", "httpUrl"].find((key) => Object.hasOwn(source, key));
  if (type === "stdio" && urlKey !== undefined) {
    throw new InstallLinkError(
      "type_contradicts",
      `${at("type")} is ${written} (a local command) but ${at(urlKey)} is set (a remote ` +
        `server), so the entry contradicts itself; remove "type" to ` +
        `install the remote server at the url, or remove "${urlKey}" and give a "command"`,
    );
  }
  const remote = type === "sse" || HTTP_TYPES.includes(type);
  if (remote && urlKey === undefined && Object.hasOwn(source, "command")) {
    throw new InstallLinkError(
      "type_contradicts",
      `${at("type")} is ${written} (a remote server) but ${at("command")} is set and no url ` +
        `(a local command), so the entry contradicts itself; remove ` +
        `"type" to run the command, or remove "command" and give a "url"`,
    );
  }
}

/**
 * `${input:<id>}` (VS Code asks for it when the server starts) as `${<ID>}`, a variable read
 * from `<home>/.env`: letters and digits upper-cased, anything else `_`.
 */
function inputsAsVariables(value: unknown, warnings: string[]): unknown {
  if (typeof value === "string") {
    return value.replace(/\$\{\s*input:([^}]*)\}/g, (placeholder, id: string) => {
      const name = id.trim().toUpperCase().replace(/[^A-Z0-9_]/g, "_").replace(/^(?=\d)/, "_");
      const message = visible(
        `${placeholder} (a VS Code input) is read as the variable \${${name}}`,
      );
      if (!warnings.includes(message)) warnings.push(message);
      return `\${${name}}`;
    });
  }
  if (Array.isArray(value)) return value.map((item) => inputsAsVariables(item, warnings));
  if (isPlainObject(value)) {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, inputsAsVariables(item, warnings)]),
    );
  }
  return value;
}

/**
 * `text` without `//` and `/* … *\/` comments and without commas before `}` or `]` (JSONC, as
 * VS Code writes it). Strings are kept as they are. What is left out becomes spaces (line breaks
 * stay), so a syntax error's line and column are those of `text`.
 */
function withoutComments(text: string): string {
  let out = "";
  /** A comma and what follows it up to the next value: kept unless a `}` or `]` comes. */
  let pendingComma = "";
  const put = (part: string) => {
    if (pendingComma) pendingComma += part;
    else out += part;
  };
  const blank = (part: string) => part.replace(/[^\n]/g, " ");
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === '"') {
      let end = i + 1;
      while (end < text.length && text[end] !== '"') end += text[end] === "\\" ? 2 : 1;
      out += pendingComma + text.slice(i, end + 1);
      pendingComma = "";
      i = end;
    } else if (char === "/" && text[i + 1] === "/") {
      const end = text.indexOf("\n", i);
      put(blank(text.slice(i, end < 0 ? text.length : end)));
      i = end < 0 ? text.length : end - 1;
    } else if (char === "/" && text[i + 1] === "*") {
      const end = text.indexOf("*/", i + 2);
      put(blank(text.slice(i, end < 0 ? text.length : end + 2)));
      i = end < 0 ? text.length : end + 1;
    } else if (char === ",") {
      out += pendingComma;
      pendingComma = ",";
    } else if (/\s/.test(char)) {
      put(char);
    } else {
      if (char !== "}" && char !== "]") out += pendingComma;
      else out += blank(pendingComma);
      pendingComma = "";
      out += char;
    }
  }
  return out + pendingComma;
}
