/**
 * Parses `mcp_servers` from `config.yaml` into typed server entries (SPEC "MCP server entry",
 * decisions.md §5 "Config semantics", "Substitution", "Lifecycle", "HTTP").
 *
 * Parsing never throws for a bad entry: every problem becomes an {@linkcode McpConfigIssue}
 * (error or warning) that names the server, the key, the line, what is wrong and the fix. A
 * server with any error is left out of the result; the other servers are kept.
 *
 * Lines come from {@linkcode ConfigSource.lineOf}, which addresses keys by dotted path. A server
 * name (or a nested key such as a header name) that contains a dot cannot be addressed that way,
 * so such issues point at the nearest addressable parent, or carry no line when the server name
 * itself contains a dot.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { type ConfigSource, isPlainObject, parseBoolish } from "../home/config.ts";
import { expandTilde } from "../home/paths.ts";
import { unknownKeyMessage } from "../home/suggest.ts";
import {
  maskSubstitutions,
  substituteDeep,
  type Substitution,
  type SubstitutionContext,
  unresolvedPlaceholders,
  variableSubstitutions,
} from "./substitute.ts";
import { sanitizeNamePart } from "./names.ts";
import { clientMetadataUrlProblem, DEFAULT_CLIENT_METADATA_URL } from "./oauth/metadata_url.ts";

/** How a server is reached: a local subprocess, Streamable HTTP, or legacy SSE. */
export type McpTransportKind = "stdio" | "http" | "sse";

/** Protocol negotiation mode (SPEC "States and transitions", decisions.md §5 "Negotiation"). */
export type ProtocolMode = "auto" | "stateless" | "legacy";

/** An mTLS client certificate; paths are `~`-expanded but not checked (that happens at connect). */
export interface ClientCertificate {
  /** PEM certificate (holding the key too when `key` is absent). */
  cert: string;
  /** PEM private key, when it is in a separate file. */
  key?: string;
  /** Password of an encrypted key. */
  password?: string;
}

/** The `tools` mapping of a server entry. */
export interface ToolFilter {
  /** Allowlist of server-native tool names or globs; absent = everything. */
  include?: string[];
  /** Denylist of server-native tool names or globs. */
  exclude?: string[];
  /** Whether `list_resources` / `read_resource` may be registered (default true). */
  resources: boolean;
  /** Whether `list_prompts` / `get_prompt` may be registered (default true). */
  prompts: boolean;
}

/** One `mcp_servers.<name>` entry, substituted, validated and with every default filled in. */
export interface McpServerConfig {
  /** The key as written in `config.yaml`. */
  name: string;
  /** The file the entry was read from, named where an error says what to change in it. */
  configFile?: string;
  /** `url` → `http` (or `sse` with `transport: sse`); otherwise `command` → `stdio`. */
  transport: McpTransportKind;
  /** Executable of a stdio server. */
  command?: string;
  /** Arguments of a stdio server (numbers stringified). */
  args: string[];
  /** Environment added for a stdio server (values stringified). */
  env: Record<string, string>;
  /** Endpoint of an HTTP/SSE server. */
  url?: string;
  /** Headers sent on every request to an HTTP/SSE server (values stringified). */
  headers: Record<string, string>;
  /** `true` = system CAs, `false` = no verification, a string = PEM CA bundle path (`~` expanded). */
  sslVerify: boolean | string;
  /** mTLS client certificate. */
  clientCert?: ClientCertificate;
  /** `false` = skipped entirely (default true). */
  enabled: boolean;
  /** Tool-call timeout (default 300). */
  timeoutSeconds: number;
  /** Initial connection timeout (default 60). */
  connectTimeoutSeconds: number;
  /** Negotiation mode (default `auto`). */
  protocol: ProtocolMode;
  /** Whether this server's tools may run concurrently (default false). */
  supportsParallelToolCalls: boolean;
  /** Skip the HTTP content-type preflight (default false). */
  skipPreflight: boolean;
  /** Ping cadence, `max(5, keepalive_interval)`; default 180 for HTTP/SSE, `null` (off) for stdio. */
  keepaliveIntervalSeconds: number | null;
  /** Stdio: recycle the child after this idle time; 0 disables (default). */
  idleTimeoutSeconds: number;
  /** Stdio: recycle the child after this age; 0 disables (default). */
  maxLifetimeSeconds: number;
  /** Tool filtering and utility-tool switches. */
  tools: ToolFilter;
  /** `oauth` enables OAuth 2.1 with PKCE (HTTP only). */
  auth?: "oauth";
  /** The `oauth` settings; present only with `auth: oauth`. */
  oauth?: OAuthSettings;
  /** Server-initiated model requests (decisions.md §5 "Sampling keys"). */
  sampling: SamplingSettings;
  /** Elicitation policy (defaults: enabled, 300 s). */
  elicitation: ElicitationSettings;
  /** `full` (default) or `untrusted`; an unrecognised value is `untrusted`. */
  trust: "full" | "untrusted";
  /**
   * `sha256:<hex>` of the canonical JSON (sorted keys) of the substituted entry: equal entries
   * have equal fingerprints, any changed value (a rotated secret too) changes it. Hashed so the
   * fingerprint can be logged or compared without carrying secrets.
   */
  fingerprint: string;
  /**
   * The variables substituted into the entry, written back as their placeholders in every message
   * about this server ({@linkcode maskSubstitutions}): a secret in a `url` or header is never
   * shown. Absent: none.
   */
  substitutions?: readonly Substitution[];
}

/** How a token endpoint authenticates a client (`oauth.token_endpoint_auth_method`). */
export type TokenEndpointAuthMethod = "none" | "client_secret_basic" | "client_secret_post";

/** The `oauth` mapping of an `auth: oauth` server (SPEC "MCP HTTP servers" 3–7). */
export interface OAuthSettings {
  /** The client metadata document URL (the `client_id` under CIMD); default the published one. */
  clientMetadataUrl: string;
  /** Why `clientMetadataUrl` is unusable (then dynamic client registration is used). */
  clientMetadataUrlProblem?: string;
  /** `false` forces dynamic client registration (default true). */
  cimd: boolean;
  /** User-Agent of token-endpoint requests (code exchange and refresh) only. */
  userAgent?: string;
  /** A pre-registered client id. */
  clientId?: string;
  /** The pre-registered client's secret. */
  clientSecret?: string;
  /** The client name sent with dynamic client registration (default `agent`). */
  clientName?: string;
  /** How the client authenticates at the token endpoint (default `none`). */
  tokenEndpointAuthMethod?: TokenEndpointAuthMethod;
  /** A fixed loopback redirect URI, `http://127.0.0.1:<port>/<path>` or with `localhost`. */
  redirectUri?: string;
  /** A fixed callback port (`http://127.0.0.1:<port>/callback`). */
  redirectPort?: number;
}

/** The `elicitation` mapping of a server entry (SPEC "MCP server entry"). */
export interface ElicitationSettings {
  /** `false` = the elicitation capability is not declared to this server (default true). */
  enabled: boolean;
  /** Seconds a form may stay unanswered before the request is cancelled (default 300). */
  timeoutSeconds: number;
}

/** The `sampling` mapping of a server entry (decisions.md §5 "Sampling keys"). */
export interface SamplingSettings {
  /** `false` = the sampling capability is not declared to this server (default true). */
  enabled: boolean;
  /** Model id for this server's requests instead of `model.default`; must be allowed. */
  model?: string;
  /** The most tokens one request may ask for; larger requests are cut to it (default 4096). */
  maxTokensCap: number;
  /** Seconds one request may take at the model (default 30). */
  timeoutSeconds: number;
  /** Requests served per rolling minute; more are refused (default 10). */
  maxRpm: number;
  /** Tool-use rounds one sampling conversation may take; 0 = tools never offered (default 5). */
  maxToolRounds: number;
  /** Models the server may ask for by hint; empty = hints are ignored (default `[]`). */
  allowedModels: string[];
}

/** One problem found in `mcp_servers`. */
export interface McpConfigIssue {
  /** The server name as written (`""` for a problem with `mcp_servers` itself). */
  server: string;
  /** Dotted key path inside the entry (`""` for the entry itself), e.g. `tools.include`. */
  key: string;
  /** Errors drop the server; warnings only inform. */
  severity: "error" | "warning";
  /** What is wrong and how to fix it. */
  message: string;
  /** 1-based line in `config.yaml`, when it can be located. */
  line?: number;
}

/** The servers that parsed without error, and every issue found. */
export interface McpServersResult {
  /** Valid servers (enabled or not), in file order. */
  servers: McpServerConfig[];
  /** Errors and warnings, in file order per server. */
  issues: McpConfigIssue[];
}

const DEFAULT_TIMEOUT_SECONDS = 300;
const DEFAULT_CONNECT_TIMEOUT_SECONDS = 60;
const DEFAULT_HTTP_KEEPALIVE_SECONDS = 180;
const MIN_KEEPALIVE_SECONDS = 5;
const DEFAULT_ELICITATION_TIMEOUT_SECONDS = 300;
const SAMPLING_DEFAULTS = {
  maxTokensCap: 4096,
  timeoutSeconds: 30,
  maxRpm: 10,
  maxToolRounds: 5,
} as const;

/** Every key a server entry may carry, in SPEC order (suggestion ties resolve in this order). */
export const ENTRY_KEYS = [
  "command",
  "args",
  "env",
  "url",
  "headers",
  "ssl_verify",
  "client_cert",
  "client_key",
  "enabled",
  "timeout",
  "connect_timeout",
  "protocol",
  "supports_parallel_tool_calls",
  "skip_preflight",
  "transport",
  "keepalive_interval",
  "idle_timeout_seconds",
  "max_lifetime_seconds",
  "lifecycle",
  "tools",
  "auth",
  "oauth",
  "sampling",
  "elicitation",
  "trust",
] as const;
const STDIO_ONLY_KEYS: ReadonlySet<string> = new Set([
  "args",
  "env",
  "idle_timeout_seconds",
  "max_lifetime_seconds",
  "lifecycle",
]);
const HTTP_ONLY_KEYS: ReadonlySet<string> = new Set([
  "headers",
  "ssl_verify",
  "client_cert",
  "client_key",
  "skip_preflight",
  "transport",
  "auth",
  "oauth",
]);
const TOOLS_KEYS = ["include", "exclude", "resources", "prompts"] as const;
const LIFECYCLE_KEYS = ["idle_timeout_seconds", "max_lifetime_seconds"] as const;
const ELICITATION_KEYS = ["enabled", "timeout"] as const;
const OAUTH_KEYS = [
  "client_metadata_url",
  "cimd",
  "user_agent",
  "client_id",
  "client_secret",
  "client_name",
  "token_endpoint_auth_method",
  "redirect_uri",
  "redirect_port",
] as const;
const TOKEN_ENDPOINT_AUTH_METHODS: readonly TokenEndpointAuthMethod[] = [
  "none",
  "client_secret_basic",
  "client_secret_post",
];
const SAMPLING_KEYS = [
  "enabled",
  "model",
  "max_tokens_cap",
  "timeout",
  "max_rpm",
  "max_tool_rounds",
  "allowed_models",
] as const;
const PROTOCOLS: readonly ProtocolMode[] = ["auto", "stateless", "legacy"];
/** A server name `agent mcp add` and install links accept (SPEC Limits: 1 to 64 letters, digits, `.`, `_`, `-`). */
export const SERVER_NAME_PATTERN: RegExp = /^[A-Za-z0-9._-]{1,64}$/;

/** `transport` values that mean the default, Streamable HTTP. */
const STREAMABLE_HTTP_NAMES = ["http", "streamable-http", "streamable_http", "streamablehttp"];
const DECIMAL = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$/i;

/**
 * Parses `mcp_servers` from `source`. Each entry is substituted ({@linkcode substituteDeep}
 * with `context`), then validated and typed. Missing or `null` `mcp_servers` means no servers.
 * Nothing is read from the process: the environment, home and workspace come from `context`.
 *
 * @param source The parsed `config.yaml`.
 * @param context Where `${...}` references resolve.
 * @returns The valid servers and every issue found.
 *
 * @example Usage
 * ```ts
 * import { ConfigSource } from "../home/config.ts";
 * import { parseMcpServers } from "./config.ts";
 * import assert from "node:assert/strict";
 *
 * const source = ConfigSource.parse(
 *   "/h/config.yaml",
 *   [
 *     "mcp_servers:",
 *     "  github:",
 *     "    url: https://mcp.example.com/mcp",
 *     "    headers: { Authorization: 'Bearer ${GITHUB_TOKEN}' }",
 *     "  files:",
 *     "    comand: npx",
 *   ].join("\n"),
 * );
 * const context = {
 *   lookup: (name: string) => name === "GITHUB_TOKEN" ? "t0ken" : undefined,
 *   userHome: "/home/ada",
 *   workspaceFolder: "/work",
 *   pathSeparator: "/",
 * };
 * const { servers, issues } = parseMcpServers(source, context);
 * assert.equal(servers.length, 1);
 * assert.equal(servers[0].transport, "http");
 * assert.equal(servers[0].headers.Authorization, "Bearer t0ken");
 * assert.ok(issues.some((issue) => issue.message.includes("did you mean `command`?")));
 * ```
 */
export function parseMcpServers(
  source: ConfigSource,
  context: SubstitutionContext,
): McpServersResult {
  const raw = source.get("mcp_servers");
  if (raw === undefined || raw === null) return { servers: [], issues: [] };
  if (!isPlainObject(raw)) {
    return {
      servers: [],
      issues: [withLine({
        server: "",
        key: "",
        severity: "error",
        message: `mcp_servers must be a mapping of server names to server entries, got ${
          describe(raw)
        }; write \`mcp_servers:\` followed by indented \`<name>:\` entries`,
      }, source.lineOf("mcp_servers"))],
    };
  }
  const servers: McpServerConfig[] = [];
  const issues: McpConfigIssue[] = [];
  for (const [name, entry] of Object.entries(raw)) {
    const parsed = parseEntry(source, context, name, entry);
    issues.push(...parsed.issues);
    if (parsed.server) servers.push(parsed.server);
  }
  return { servers, issues };
}

/**
 * Formats an issue for a person: `<file>:<line>: mcp_servers.<server>.<key>: <message>` (the
 * line, server and key are left out when absent).
 *
 * @param issue The issue to format.
 * @param file The configuration file it was found in.
 * @returns One line of text.
 *
 * @example Usage
 * ```ts
 * import { formatIssue } from "./config.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(
 *   formatIssue(
 *     { server: "db", key: "timeout", severity: "error", message: "timeout must be ...", line: 4 },
 *     "/h/config.yaml",
 *   ),
 *   "/h/config.yaml:4: mcp_servers.db.timeout: timeout must be ...",
 * );
 * ```
 */
export function formatIssue(issue: McpConfigIssue, file: string): string {
  const location = issue.line === undefined ? file : `${file}:${issue.line}`;
  const path = ["mcp_servers", issue.server, issue.key].filter((part) => part !== "").join(".");
  return `${location}: ${path}: ${issue.message}`;
}

// ---------------------------------------------------------------------------------------------
// One entry

/** Collects the issues of one server, each located by its key path. */
class IssueList {
  readonly issues: McpConfigIssue[] = [];
  #errors = 0;

  constructor(
    readonly source: ConfigSource,
    readonly server: string,
    readonly substitutions: readonly Substitution[],
  ) {}

  get hasErrors(): boolean {
    return this.#errors > 0;
  }

  hasErrorAt(path: readonly string[]): boolean {
    const key = path.join(".");
    return this.issues.some((issue) => issue.severity === "error" && issue.key === key);
  }

  error(path: readonly string[], message: string): void {
    this.#errors++;
    this.#add("error", path, message);
  }

  warn(path: readonly string[], message: string): void {
    this.#add("warning", path, message);
  }

  #add(severity: McpConfigIssue["severity"], path: readonly string[], message: string): void {
    const issue = {
      server: this.server,
      key: path.join("."),
      severity,
      message: maskSubstitutions(message, this.substitutions),
    };
    this.issues.push(withLine(issue, lineFor(this.source, this.server, path)));
  }
}

function parseEntry(
  source: ConfigSource,
  context: SubstitutionContext,
  name: string,
  raw: unknown,
): { server?: McpServerConfig; issues: McpConfigIssue[] } {
  const substitutions = variableSubstitutions(raw, context);
  const issues = new IssueList(source, name, substitutions);
  if (name.trim() === "") {
    issues.error([], "a server needs a name: write one such as `files:` for this entry");
    return { issues: issues.issues };
  }
  if (!SERVER_NAME_PATTERN.test(name)) {
    issues.warn(
      [],
      `the server name ${
        JSON.stringify(name)
      } is not 1 to 64 letters, digits, '.', '_' or '-' (what \`agent mcp add\` accepts): its ` +
        `tools are registered as mcp__${sanitizeNamePart(name)}__<tool>; rename it`,
    );
  }
  if (!isPlainObject(raw)) {
    issues.error(
      [],
      `a server entry must be a mapping with \`command:\` (local server) or \`url:\` (remote server), got ${
        describe(raw)
      }`,
    );
    return { issues: issues.issues };
  }
  const entry = substituteDeep(raw, context);
  const read = new EntryReader(entry, issues, context.userHome, secretsFileOf(context));

  const hasUrl = read.isSet("url");
  const hasCommand = read.isSet("command");
  const kind = hasUrl ? "http" : hasCommand ? "stdio" : undefined;
  if (!kind) {
    issues.error(
      [],
      "the server has neither `command` nor `url`; add `command:` for a local (stdio) server or `url:` for a remote (HTTP) one",
    );
  }
  const applies = (key: string) =>
    !(kind === "http" && STDIO_ONLY_KEYS.has(key)) &&
    !(kind === "stdio" && HTTP_ONLY_KEYS.has(key));

  for (const key of Object.keys(entry)) {
    if (!(ENTRY_KEYS as readonly string[]).includes(key)) {
      issues.warn([key], unknownKeyMessage(key, ENTRY_KEYS));
    } else if (!applies(key) && read.isSet(key)) {
      issues.warn(
        [key],
        kind === "http"
          ? `${key} applies to stdio servers (with \`command\`) only; this server uses \`url\`, so it is ignored; remove it`
          : `${key} applies to HTTP servers (with \`url\`) only; this server uses \`command\`, so it is ignored; remove it`,
      );
    }
  }

  let command: string | undefined;
  if (hasCommand && hasUrl) {
    issues.warn(
      ["command"],
      "both url and command are set; url wins (HTTP) and command is ignored; remove the one you do not mean",
    );
  } else if (hasCommand) {
    command = read.command();
  }
  const url = hasUrl ? read.url() : undefined;
  const transport: McpTransportKind = kind === "http" ? read.httpTransport() : "stdio";
  const auth = applies("auth") ? read.auth() : undefined;
  const clientCert = applies("client_cert") ? read.clientCert() : undefined;
  const oauth = applies("oauth") && auth === "oauth" ? read.oauth() : undefined;
  if (kind === "http" && read.isSet("oauth") && !auth) {
    issues.warn(
      ["oauth"],
      "oauth settings are used only with `auth: oauth`; add `auth: oauth` or remove the oauth mapping",
    );
  }

  const server: McpServerConfig = {
    name,
    configFile: source.file,
    transport,
    ...(command === undefined ? {} : { command }),
    args: applies("args") ? read.args() : [],
    env: applies("env") ? read.scalarMapping("env") : {},
    ...(url === undefined ? {} : { url }),
    headers: applies("headers") ? read.scalarMapping("headers") : {},
    sslVerify: applies("ssl_verify") ? read.sslVerify() : true,
    ...(clientCert === undefined ? {} : { clientCert }),
    enabled: read.boolean(["enabled"], true),
    timeoutSeconds: read.seconds(["timeout"], { positive: true }) ?? DEFAULT_TIMEOUT_SECONDS,
    connectTimeoutSeconds: read.seconds(["connect_timeout"], { positive: true }) ??
      DEFAULT_CONNECT_TIMEOUT_SECONDS,
    protocol: read.protocol(),
    supportsParallelToolCalls: read.boolean(["supports_parallel_tool_calls"], false),
    skipPreflight: applies("skip_preflight") ? read.boolean(["skip_preflight"], false) : false,
    keepaliveIntervalSeconds: read.keepalive(kind !== "stdio"),
    ...read.lifecycle(applies("lifecycle")),
    tools: read.tools(),
    ...(auth === undefined ? {} : { auth }),
    ...(oauth === undefined ? {} : { oauth }),
    sampling: read.sampling(),
    elicitation: read.elicitation(),
    trust: read.trust(),
    fingerprint: fingerprintOf(entry),
    ...(substitutions.length === 0 ? {} : { substitutions }),
  };

  const staticAuthorization = Object.keys(server.headers).find((name) =>
    name.toLowerCase() === "authorization"
  );
  if (auth === "oauth" && staticAuthorization !== undefined) {
    issues.warn(
      ["headers", staticAuthorization],
      `headers.${staticAuthorization} and auth: oauth are both set; once logged in, the OAuth ` +
        `access token is the Authorization header and this one is not sent. Remove ` +
        `headers.${staticAuthorization} to use OAuth, or auth: oauth to use the static token`,
    );
  }

  // Unset variables are reported for the keys in use, on the raw text as written.
  if (server.enabled) {
    for (const [key, value] of Object.entries(raw)) {
      const used = (ENTRY_KEYS as readonly string[]).includes(key) && applies(key) &&
        !(key === "command" && hasUrl);
      if (used) reportUnresolved(value, [key], context, issues);
    }
  }

  return issues.hasErrors ? { issues: issues.issues } : { server, issues: issues.issues };
}

/** An HTTP header name (RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * Why `name: value` cannot be sent as an HTTP header, or `undefined`. The value is not quoted:
 * it is often a secret.
 */
function headerProblem(name: string, value: string): string | undefined {
  if (!HEADER_NAME.test(name)) {
    return `${
      JSON.stringify(name)
    } is not a valid HTTP header name: use letters, digits and !#$%&'*+-.^_\`|~ only (no spaces or colons)`;
  }
  if (/[\r\n]/.test(value)) {
    return `the value of header ${name} holds a line break, which a header cannot carry; write it on one line (check the variable in .env too)`;
  }
  if (value.includes("\0")) return `the value of header ${name} holds a NUL character`;
  const wide = [...value].find((char) => char.codePointAt(0)! > 0xff);
  if (wide) {
    return `the value of header ${name} holds ${
      JSON.stringify(wide)
    }, which a header cannot carry (only Latin-1 characters); percent-encode it or leave it out`;
  }
  return undefined;
}

/** Typed reads of one substituted entry; problems go to `issues`. */
class EntryReader {
  constructor(
    readonly entry: Record<string, unknown>,
    readonly issues: IssueList,
    readonly userHome: string,
    /** The `.env` file a message tells the user to set a variable in. */
    readonly secretsFile: string,
  ) {}

  /** The value at `path` (own keys only), or `undefined`. */
  get(path: readonly string[]): unknown {
    let node: unknown = this.entry;
    for (const segment of path) {
      if (!isPlainObject(node) || !Object.hasOwn(node, segment)) return undefined;
      node = node[segment];
    }
    return node;
  }

  /** Whether `key` holds a value; `null` (an empty YAML value) counts as not set. */
  isSet(key: string): boolean {
    const value = this.get([key]);
    return value !== undefined && value !== null;
  }

  command(): string | undefined {
    const value = this.get(["command"]);
    if (typeof value === "string" && value.trim() !== "") return value.trim();
    this.issues.error(
      ["command"],
      `command must be a non-empty string naming the executable, got ${describe(value)}`,
    );
    return undefined;
  }

  url(): string | undefined {
    const value = this.get(["url"]);
    const text = typeof value === "string" ? value.trim() : undefined;
    let valid = false;
    if (text !== undefined) {
      try {
        const parsed = new URL(text);
        // An unset `${VAR}` in the host still parses (as the host name "${var}"), but no
        // request can reach it: it is the same mistake as one in the port.
        valid = (parsed.protocol === "http:" || parsed.protocol === "https:") &&
          !/[${}]/.test(parsed.hostname);
      } catch {
        valid = false;
      }
    }
    if (valid) return text;
    this.issues.error(
      ["url"],
      `url must be an http:// or https:// URL, got ${describe(value)}${
        unresolvedHint(value, this.secretsFile)
      }`,
    );
    return undefined;
  }

  httpTransport(): "http" | "sse" {
    const value = this.get(["transport"]);
    if (value === undefined || value === null) return "http";
    const text = typeof value === "string" ? value.trim().toLowerCase() : undefined;
    if (text === "sse") return "sse";
    if (text !== undefined && STREAMABLE_HTTP_NAMES.includes(text)) return "http";
    this.issues.warn(
      ["transport"],
      `unknown transport ${
        describe(value)
      }; using Streamable HTTP (set \`transport: sse\` for an SSE server, or remove the key)`,
    );
    return "http";
  }

  auth(): "oauth" | undefined {
    const value = this.get(["auth"]);
    if (value === undefined || value === null) return undefined;
    if (typeof value === "string" && value.trim().toLowerCase() === "oauth") return "oauth";
    this.issues.error(
      ["auth"],
      `auth must be "oauth" or left out, got ${
        describe(value)
      }; static credentials such as bearer tokens go in \`headers\``,
    );
    return undefined;
  }

  args(): string[] {
    const value = this.get(["args"]);
    if (value === undefined || value === null) return [];
    if (!Array.isArray(value)) {
      this.issues.error(
        ["args"],
        `args must be a list of strings, got ${describe(value)}; write args: ["--flag", "value"]`,
      );
      return [];
    }
    const args: string[] = [];
    value.forEach((item, index) => {
      if (typeof item === "string") args.push(item);
      else if (typeof item === "number" && Number.isFinite(item)) args.push(String(item));
      else {
        this.issues.error(
          ["args", String(index)],
          `args items must be strings or numbers, got ${describe(item)}; quote the item`,
        );
      }
    });
    return args;
  }

  scalarMapping(key: "env" | "headers"): Record<string, string> {
    const value = this.get([key]);
    if (value === undefined || value === null) return {};
    const example = key === "env" ? "NAME: value" : "Header-Name: value";
    if (!isPlainObject(value)) {
      this.issues.error(
        [key],
        `${key} must be a mapping of ${example} pairs, got ${describe(value)}`,
      );
      return {};
    }
    const pairs: [string, string][] = [];
    for (const [name, item] of Object.entries(value)) {
      if (typeof item === "string") pairs.push([name, item]);
      else if (
        (typeof item === "number" && Number.isFinite(item)) || typeof item === "boolean"
      ) {
        pairs.push([name, String(item)]);
      } else {
        this.issues.error(
          [key, name],
          `${key} values must be strings, numbers or booleans, got ${
            describe(item)
          }; quote the value (write "" for an empty one)`,
        );
      }
    }
    if (key === "headers") {
      for (const [name, item] of pairs) {
        const problem = headerProblem(name, item);
        if (problem) this.issues.error([key, name], problem);
      }
    }
    // `fromEntries` defines own properties, so a `__proto__` name stays a plain key.
    return Object.fromEntries(pairs);
  }

  sslVerify(): boolean | string {
    const value = this.get(["ssl_verify"]);
    if (value === undefined || value === null) return true;
    const flag = parseBoolish(value);
    if (flag !== undefined) return flag;
    if (typeof value === "string" && value.trim() !== "") {
      return this.#path(value);
    }
    this.issues.error(
      ["ssl_verify"],
      `ssl_verify must be true, false or the path to a PEM CA bundle, got ${describe(value)}`,
    );
    return true;
  }

  clientCert(): ClientCertificate | undefined {
    const value = this.get(["client_cert"]);
    const key = this.get(["client_key"]);
    const hasKey = key !== undefined && key !== null;
    if (value === undefined || value === null) {
      if (hasKey) {
        this.issues.warn(
          ["client_key"],
          "client_key is ignored without client_cert; add client_cert: <path to the PEM certificate>",
        );
      }
      return undefined;
    }
    if (typeof value === "string" && value.trim() !== "") {
      const cert: ClientCertificate = { cert: this.#path(value) };
      if (!hasKey) return cert;
      if (typeof key === "string" && key.trim() !== "") return { ...cert, key: this.#path(key) };
      this.issues.error(
        ["client_key"],
        `client_key must be the path to a PEM private key, got ${describe(key)}`,
      );
      return undefined;
    }
    const usage =
      "client_cert must be a path, or a list [cert, key] or [cert, key, password] of strings";
    if (!Array.isArray(value)) {
      this.issues.error(["client_cert"], `${usage}, got ${describe(value)}`);
      return undefined;
    }
    if (value.length < 2 || value.length > 3) {
      this.issues.error(["client_cert"], `${usage}, got a list of ${value.length} item(s)`);
      return undefined;
    }
    const bad = value.findIndex((item) => typeof item !== "string" || item.trim() === "");
    if (bad >= 0) {
      this.issues.error(
        ["client_cert", String(bad)],
        `${usage}, got ${describe(value[bad])} at position ${bad + 1}; quote it`,
      );
      return undefined;
    }
    if (hasKey) {
      this.issues.warn(
        ["client_key"],
        "client_key is ignored because client_cert is a list that already names the key; remove client_key",
      );
    }
    const [cert, keyPath, password] = value as string[];
    return {
      cert: this.#path(cert),
      key: this.#path(keyPath),
      ...(password === undefined ? {} : { password }),
    };
  }

  boolean(path: readonly string[], fallback: boolean): boolean {
    const value = this.get(path);
    if (value === undefined || value === null) return fallback;
    const flag = parseBoolish(value);
    if (flag !== undefined) return flag;
    this.issues.error(
      path,
      `${path.join(".")} must be true or false, got ${describe(value)}`,
    );
    return fallback;
  }

  /** A number of seconds ≥ 0 (> 0 when `positive`); numeric strings count. Unset → `undefined`. */
  seconds(
    path: readonly string[],
    rule: { positive?: boolean; note?: string } = {},
  ): number | undefined {
    const value = this.get(path);
    if (value === undefined || value === null) return undefined;
    const number = toNumber(value);
    if (number !== undefined && (rule.positive ? number > 0 : number >= 0)) return number;
    const inSeconds = secondsOfDuration(value);
    this.issues.error(
      path,
      `${path.join(".")} must be a number of seconds ${rule.positive ? "> 0" : ">= 0"}${
        rule.note ? ` (${rule.note})` : ""
      }, got ${describe(value)}${
        inSeconds === undefined
          ? ""
          : `; write the seconds without a unit: ${path.at(-1)}: ${inSeconds}`
      }`,
    );
    return undefined;
  }

  protocol(): ProtocolMode {
    const value = this.get(["protocol"]);
    if (value === undefined || value === null) return "auto";
    const text = typeof value === "string" ? value.trim().toLowerCase() : undefined;
    const mode = PROTOCOLS.find((candidate) => candidate === text);
    if (mode) return mode;
    this.issues.warn(
      ["protocol"],
      `unknown protocol ${describe(value)}; using auto (valid values: ${PROTOCOLS.join(", ")})`,
    );
    return "auto";
  }

  keepalive(isRemote: boolean): number | null {
    const seconds = this.seconds(["keepalive_interval"], { note: "floored at 5" });
    if (seconds !== undefined) return Math.max(MIN_KEEPALIVE_SECONDS, seconds);
    return isRemote ? DEFAULT_HTTP_KEEPALIVE_SECONDS : null;
  }

  lifecycle(applies: boolean): { idleTimeoutSeconds: number; maxLifetimeSeconds: number } {
    const result = { idleTimeoutSeconds: 0, maxLifetimeSeconds: 0 };
    if (!applies) return result;
    const lifecycle = this.mapping(["lifecycle"]);
    for (const key of Object.keys(lifecycle)) {
      if (!(LIFECYCLE_KEYS as readonly string[]).includes(key)) {
        this.issues.warn(["lifecycle", key], unknownKeyMessage(key, LIFECYCLE_KEYS));
      }
    }
    const note = "0 disables";
    for (const key of LIFECYCLE_KEYS) {
      const topLevel = this.isSet(key);
      const nested = Object.hasOwn(lifecycle, key) && lifecycle[key] !== null;
      if (topLevel && nested) {
        this.issues.warn(
          ["lifecycle", key],
          `${key} is set both at the top level and under lifecycle; the top-level value wins; remove one`,
        );
      }
      const path = topLevel || !nested ? [key] : ["lifecycle", key];
      const seconds = this.seconds(path, { note }) ?? 0;
      if (key === "idle_timeout_seconds") result.idleTimeoutSeconds = seconds;
      else result.maxLifetimeSeconds = seconds;
    }
    return result;
  }

  tools(): ToolFilter {
    const tools = this.mapping(["tools"]);
    for (const key of Object.keys(tools)) {
      if (!(TOOLS_KEYS as readonly string[]).includes(key)) {
        this.issues.warn(["tools", key], unknownKeyMessage(key, TOOLS_KEYS));
      }
    }
    const include = this.#nameList("include");
    const exclude = this.#nameList("exclude");
    if (include !== undefined && exclude !== undefined) {
      this.issues.warn(
        ["tools", "exclude"],
        "exclude is ignored when include is set (include lists every tool that is kept); " +
          "leave the excluded tools out of include instead, and remove exclude",
      );
    }
    return {
      ...(include === undefined ? {} : { include }),
      ...(exclude === undefined ? {} : { exclude }),
      resources: this.boolean(["tools", "resources"], true),
      prompts: this.boolean(["tools", "prompts"], true),
    };
  }

  elicitation(): ElicitationSettings {
    const elicitation = this.mapping(["elicitation"]);
    for (const key of Object.keys(elicitation)) {
      if (!(ELICITATION_KEYS as readonly string[]).includes(key)) {
        this.issues.warn(["elicitation", key], unknownKeyMessage(key, ELICITATION_KEYS));
      }
    }
    return {
      enabled: this.boolean(["elicitation", "enabled"], true),
      timeoutSeconds: this.seconds(["elicitation", "timeout"], { positive: true }) ??
        DEFAULT_ELICITATION_TIMEOUT_SECONDS,
    };
  }

  sampling(): SamplingSettings {
    const sampling = this.mapping(["sampling"]);
    for (const key of Object.keys(sampling)) {
      if (!(SAMPLING_KEYS as readonly string[]).includes(key)) {
        this.issues.warn(["sampling", key], unknownKeyMessage(key, SAMPLING_KEYS));
      }
    }
    const allowedModels = this.#modelList(["sampling", "allowed_models"]);
    const model = this.#modelName(["sampling", "model"]);
    if (model !== undefined && allowedModels.length > 0 && !allowedModels.includes(model)) {
      this.issues.error(
        ["sampling", "model"],
        `sampling.model ${JSON.stringify(model)} is not in sampling.allowed_models (${
          allowedModels.join(", ")
        }); add it there or choose one of them`,
      );
    }
    return {
      enabled: this.boolean(["sampling", "enabled"], true),
      ...(model === undefined ? {} : { model }),
      maxTokensCap: this.#count(["sampling", "max_tokens_cap"], 1) ??
        SAMPLING_DEFAULTS.maxTokensCap,
      timeoutSeconds: this.seconds(["sampling", "timeout"], { positive: true }) ??
        SAMPLING_DEFAULTS.timeoutSeconds,
      maxRpm: this.#count(["sampling", "max_rpm"], 1, "use enabled: false to turn sampling off") ??
        SAMPLING_DEFAULTS.maxRpm,
      maxToolRounds: this.#count(["sampling", "max_tool_rounds"], 0, "0 never offers tools") ??
        SAMPLING_DEFAULTS.maxToolRounds,
      allowedModels,
    };
  }

  /** The `oauth` mapping of an `auth: oauth` server, typed; each bad value is an issue. */
  oauth(): OAuthSettings {
    const oauth = this.mapping(["oauth"]);
    for (const key of Object.keys(oauth)) {
      if (!(OAUTH_KEYS as readonly string[]).includes(key)) {
        this.issues.warn(["oauth", key], unknownKeyMessage(key, OAUTH_KEYS));
      }
    }
    const settings: OAuthSettings = {
      clientMetadataUrl: DEFAULT_CLIENT_METADATA_URL,
      cimd: this.boolean(["oauth", "cimd"], true),
    };
    const url = this.#oauthText("client_metadata_url", "an https URL");
    if (url !== undefined) {
      settings.clientMetadataUrl = url;
      const problem = clientMetadataUrlProblem(url);
      if (problem !== undefined) {
        settings.clientMetadataUrlProblem = problem;
        this.issues.warn(
          ["oauth", "client_metadata_url"],
          `oauth.client_metadata_url ${problem} (got ${
            JSON.stringify(url)
          }), so it cannot be a client_id; dynamic client registration is used instead. Use an https URL with a path, without #fragment, user@ or . / .. segments`,
        );
      }
    }
    // An empty or null user_agent is ignored (the HTTP library's default stays).
    const userAgent = this.get(["oauth", "user_agent"]);
    if (typeof userAgent === "string") {
      if (userAgent.trim() !== "") settings.userAgent = userAgent.trim();
    } else if (userAgent !== undefined && userAgent !== null) {
      this.issues.error(
        ["oauth", "user_agent"],
        `oauth.user_agent must be a string such as "my-agent/1.0", got ${
          describe(userAgent)
        }; quote it`,
      );
    }
    const clientId = this.#oauthText("client_id", "the client id the authorization server issued");
    if (clientId !== undefined) settings.clientId = clientId;
    const clientSecret = this.#oauthText("client_secret", "the pre-registered client's secret");
    if (clientSecret !== undefined) {
      if (clientId === undefined) {
        this.issues.warn(
          ["oauth", "client_secret"],
          "oauth.client_secret is used only with a pre-registered oauth.client_id, so it is ignored; add client_id or remove client_secret",
        );
      } else settings.clientSecret = clientSecret;
    }
    const clientName = this.#oauthText("client_name", "a name such as my-agent");
    if (clientName !== undefined) settings.clientName = clientName;
    const method = this.#oauthText(
      "token_endpoint_auth_method",
      TOKEN_ENDPOINT_AUTH_METHODS.join(", "),
    );
    if (method !== undefined) {
      const known = TOKEN_ENDPOINT_AUTH_METHODS.find((candidate) => candidate === method);
      if (known) settings.tokenEndpointAuthMethod = known;
      else {
        this.issues.error(
          ["oauth", "token_endpoint_auth_method"],
          `oauth.token_endpoint_auth_method must be one of ${
            TOKEN_ENDPOINT_AUTH_METHODS.join(", ")
          }, got ${JSON.stringify(method)}`,
        );
      }
    }
    const redirectUri = this.#oauthText("redirect_uri", "http://127.0.0.1:<port>/callback");
    if (redirectUri !== undefined) {
      const problem = loopbackRedirectProblem(redirectUri);
      if (problem === undefined) settings.redirectUri = redirectUri;
      else {
        this.issues.error(
          ["oauth", "redirect_uri"],
          `oauth.redirect_uri ${problem}, got ${
            JSON.stringify(redirectUri)
          }; the callback listener runs on this machine, so write http://127.0.0.1:<port>/callback (or localhost)`,
        );
      }
    }
    const port = this.get(["oauth", "redirect_port"]);
    if (port !== undefined && port !== null) {
      const number = toNumber(port);
      if (number !== undefined && Number.isInteger(number) && number >= 1 && number <= 65535) {
        if (settings.redirectUri === undefined) settings.redirectPort = number;
        else {
          this.issues.warn(
            ["oauth", "redirect_port"],
            "oauth.redirect_port is ignored because oauth.redirect_uri names the port; remove one of them",
          );
        }
      } else {
        this.issues.error(
          ["oauth", "redirect_port"],
          `oauth.redirect_port must be a port number from 1 to 65535, got ${describe(port)}`,
        );
      }
    }
    return settings;
  }

  /** A non-empty string under `oauth` (trimmed); unset or null → `undefined`; else an error. */
  #oauthText(key: (typeof OAUTH_KEYS)[number], expected: string): string | undefined {
    const path = ["oauth", key];
    const value = this.get(path);
    if (value === undefined || value === null) return undefined;
    if (typeof value === "string" && value.trim() !== "") return value.trim();
    this.issues.error(
      path,
      `oauth.${key} must be a non-empty string (${expected}), got ${describe(value)}${
        unresolvedHint(value, this.secretsFile)
      }`,
    );
    return undefined;
  }

  trust(): "full" | "untrusted" {
    const value = this.get(["trust"]);
    if (value === undefined || value === null) return "full";
    const text = typeof value === "string" ? value.trim().toLowerCase() : undefined;
    if (text === "full" || text === "untrusted") return text;
    this.issues.warn(
      ["trust"],
      `unknown trust ${
        describe(value)
      }; treated as untrusted (write calls need approval); set it to full or untrusted`,
    );
    return "untrusted";
  }

  /** A mapping kept as given; unset → `{}`; another type is an error. */
  mapping(path: readonly string[]): Record<string, unknown> {
    const value = this.get(path);
    if (value === undefined || value === null) return {};
    if (isPlainObject(value)) return value;
    this.issues.error(
      path,
      `${path.join(".")} must be a mapping of keys, got ${describe(value)}`,
    );
    return {};
  }

  #nameList(key: "include" | "exclude"): string[] | undefined {
    const path = ["tools", key];
    const value = this.get(path);
    if (value === undefined || value === null) return undefined;
    if (typeof value === "string") return [value];
    if (!Array.isArray(value)) {
      this.issues.error(
        path,
        `tools.${key} must be a tool name or a list of tool names, got ${describe(value)}`,
      );
      return undefined;
    }
    const names: string[] = [];
    value.forEach((item, index) => {
      if (typeof item === "string") names.push(item);
      else {
        this.issues.error(
          [...path, String(index)],
          `tools.${key} items must be tool names (strings), got ${describe(item)}; quote the item`,
        );
      }
    });
    return names;
  }

  /** A whole number ≥ `min`; numeric strings count. Unset → `undefined`. */
  #count(path: readonly string[], min: number, note?: string): number | undefined {
    const value = this.get(path);
    if (value === undefined || value === null) return undefined;
    const number = toNumber(value);
    if (number !== undefined && Number.isInteger(number) && number >= min) return number;
    this.issues.error(
      path,
      `${path.join(".")} must be a whole number >= ${min}${note ? ` (${note})` : ""}, got ${
        describe(value)
      }`,
    );
    return undefined;
  }

  /** A non-empty model id (trimmed). Unset → `undefined`. */
  #modelName(path: readonly string[]): string | undefined {
    const value = this.get(path);
    if (value === undefined || value === null) return undefined;
    if (typeof value === "string" && value.trim() !== "") return value.trim();
    this.issues.error(
      path,
      `${path.join(".")} must be a model id such as gpt-4.1-mini, got ${describe(value)}`,
    );
    return undefined;
  }

  /** A model id or a list of them (trimmed). Unset → `[]`. */
  #modelList(path: readonly string[]): string[] {
    const value = this.get(path);
    if (value === undefined || value === null) return [];
    if (typeof value === "string" && value.trim() !== "") return [value.trim()];
    if (!Array.isArray(value)) {
      this.issues.error(
        path,
        `${path.join(".")} must be a list of model ids, got ${describe(value)}; write ${
          path.at(-1)
        }: [gpt-4.1-mini, gpt-4.1]`,
      );
      return [];
    }
    const models: string[] = [];
    value.forEach((item, index) => {
      if (typeof item === "string" && item.trim() !== "") models.push(item.trim());
      else {
        this.issues.error(
          [...path, String(index)],
          `${path.join(".")} items must be model ids (non-empty strings), got ${
            describe(item)
          }; quote the item`,
        );
      }
    });
    return models;
  }

  #path(path: string): string {
    return expandTilde(path.trim(), this.userHome);
  }
}

// ---------------------------------------------------------------------------------------------
// Helpers

function withLine(issue: McpConfigIssue, line: number | undefined): McpConfigIssue {
  return line === undefined ? issue : { ...issue, line };
}

/**
 * The line of `mcp_servers.<server>.<path>`, else of its nearest addressable parent. Dotted
 * segments cannot be addressed by {@linkcode ConfigSource.lineOf}: the path is cut before the
 * first one, and a dotted server name gets no line at all (it could resolve to another server).
 */
function lineFor(
  source: ConfigSource,
  server: string,
  path: readonly string[],
): number | undefined {
  if (server.includes(".")) return undefined;
  const cut = path.findIndex((segment) => segment.includes("."));
  const usable = cut < 0 ? path : path.slice(0, cut);
  for (let length = usable.length; length >= 0; length--) {
    const line = source.lineOf(["mcp_servers", server, ...usable.slice(0, length)].join("."));
    if (line !== undefined) return line;
  }
  return undefined;
}

/** Why `uri` cannot be the OAuth redirect URI the local listener receives, or `undefined`. */
function loopbackRedirectProblem(uri: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(uri);
  } catch {
    return "is not a URL";
  }
  if (parsed.protocol !== "http:") return "must be an http:// loopback URL";
  if (!["127.0.0.1", "localhost"].includes(parsed.hostname)) {
    return "must point at 127.0.0.1 or localhost";
  }
  if (parsed.port === "") return "must name its port";
  if (parsed.search !== "" || parsed.hash !== "") return "must not have a query or fragment";
  return undefined;
}

function toNumber(value: unknown): number | undefined {
  if (typeof value === "number") return Number.isFinite(value) ? value : undefined;
  if (typeof value !== "string" || !DECIMAL.test(value.trim())) return undefined;
  const number = Number(value.trim());
  return Number.isFinite(number) ? number : undefined;
}

/** Seconds per unit of a duration written with one (`30s`, `2 min`, `1h`, `500ms`). */
const DURATION_UNITS: [RegExp, number][] = [
  [/^ms$/, 0.001],
  [/^(s|secs?|seconds?)$/, 1],
  [/^(m|mins?|minutes?)$/, 60],
  [/^(h|hrs?|hours?)$/, 3600],
];

/** `30s` → 30, `2m` → 120: the seconds of a duration written with a unit, else `undefined`. */
function secondsOfDuration(value: unknown): number | undefined {
  if (typeof value !== "string") return undefined;
  const match = value.trim().toLowerCase().match(/^(\d+(?:\.\d+)?)\s*([a-z]+)$/);
  const unit = match && DURATION_UNITS.find(([pattern]) => pattern.test(match[2]));
  if (!match || !unit) return undefined;
  const seconds = Number(match[1]) * unit[1];
  return seconds > 0 ? Number(seconds.toFixed(3)) : undefined;
}

function describe(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  if (typeof value === "string") return JSON.stringify(value);
  return String(value);
}

/** The `.env` file messages name: the context's, else the words `<home>/.env`. */
function secretsFileOf(context: SubstitutionContext): string {
  return context.secretsFile ?? "<home>/.env";
}

/** A hint for a value that still holds a `${...}` placeholder after substitution. */
function unresolvedHint(value: unknown, secretsFile: string): string {
  if (typeof value !== "string") return "";
  const placeholder = value.match(/\$\{([^}]+)\}/);
  if (!placeholder) return "";
  const shell = shellDefault(placeholder[0], secretsFile);
  if (shell) return ` (it still contains ${placeholder[0]}: ${shell})`;
  const name = placeholder[1].trim().replace(/^env:/, "").trim();
  return ` (it still contains ${
    placeholder[0]
  }: set ${name} in ${secretsFile} or the process environment)`;
}

/**
 * What to say about a shell-style `${VAR:-default}` (or `-`, `=`, `?`, `+`) placeholder, which
 * substitution does not support: its name is not a variable anyone could set.
 */
function shellDefault(placeholder: string, secretsFile: string): string | undefined {
  const match = placeholder.slice(2, -1).trim().replace(/^env:/, "").trim()
    .match(/^([A-Za-z_][A-Za-z0-9_]*)\s*(:?[-=?+])/);
  if (!match) return undefined;
  const [, name, operator] = match;
  return `\`\${VAR${operator}default}\` defaults are not supported, so it is kept as written; ` +
    `write the value itself, or write \${${name}} and set ${name} in ${secretsFile}`;
}

function reportUnresolved(
  value: unknown,
  path: string[],
  context: SubstitutionContext,
  issues: IssueList,
): void {
  if (typeof value === "string") {
    // An error at the same key already shows the value; a second message would be noise.
    if (issues.hasErrorAt(path)) return;
    const file = secretsFileOf(context);
    for (const placeholder of unresolvedPlaceholders(value, context)) {
      const shell = shellDefault(placeholder, file);
      issues.warn(
        path,
        shell
          ? `${placeholder}: ${shell}`
          : `${placeholder} is not set (or empty) in ${file} or the process environment, so it is kept as written; add it to ${file}`,
      );
    }
  } else if (Array.isArray(value)) {
    value.forEach((item, index) =>
      reportUnresolved(item, [...path, String(index)], context, issues)
    );
  } else if (isPlainObject(value)) {
    for (const [key, item] of Object.entries(value)) {
      reportUnresolved(item, [...path, key], context, issues);
    }
  }
}

/** `sha256:<hex>` of the canonical JSON of `entry` (sorted keys at every level). */
function fingerprintOf(entry: Record<string, unknown>): string {
  return `sha256:${createHash("sha256").update(canonicalJson(entry)).digest("hex")}`;
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (isPlainObject(value)) {
    const keys = Object.keys(value).sort();
    return `{${
      keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key])}`).join(",")
    }}`;
  }
  return JSON.stringify(value) ?? "null";
}
