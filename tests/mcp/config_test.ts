import assert from "node:assert/strict";
import { ConfigSource } from "../../src/home/config.ts";
import { SecretScope } from "../../src/home/secrets.ts";
import {
  formatIssue,
  type McpConfigIssue,
  type McpServerConfig,
  type McpServersResult,
  parseMcpServers,
} from "../../src/mcp/config.ts";
import type { SubstitutionContext } from "../../src/mcp/substitute.ts";
import { DEFAULT_CLIENT_METADATA_URL } from "../../src/mcp/oauth/metadata_url.ts";
import { SAMPLING_DEFAULTS } from "./_helpers.ts";

const FILE = "/h/config.yaml";

function contextOf(vars: Record<string, string> = {}): SubstitutionContext {
  return {
    lookup: (name) => Object.hasOwn(vars, name) ? vars[name] : undefined,
    userHome: "/home/ada",
    workspaceFolder: "/work/project",
    pathSeparator: "/",
  };
}

/** Parses YAML given as lines (line 1 is the first argument). */
function parse(lines: string[], vars: Record<string, string> = {}): McpServersResult {
  return parseMcpServers(ConfigSource.parse(FILE, lines.join("\n") + "\n"), contextOf(vars));
}

/** `mcp_servers:` at line 1, one server `name` at line 2, its keys from line 3 on. */
function one(name: string, keys: string[], vars: Record<string, string> = {}): McpServersResult {
  return parse(["mcp_servers:", `  ${name}:`, ...keys.map((key) => `    ${key}`)], vars);
}

function serverOf(result: McpServersResult, name: string): McpServerConfig {
  const server = result.servers.find((candidate) => candidate.name === name);
  assert.ok(server, `server ${name} missing; issues: ${JSON.stringify(result.issues)}`);
  return server;
}

/** The single issue for `server`/`key`; fails when there is none or more than one. */
function issueAt(result: McpServersResult, server: string, key: string): McpConfigIssue {
  const found = result.issues.filter((issue) => issue.server === server && issue.key === key);
  assert.equal(
    found.length,
    1,
    `expected one issue at ${server}.${key}: ${JSON.stringify(result.issues)}`,
  );
  return found[0];
}

function assertIssue(
  result: McpServersResult,
  expected: { server: string; key: string; severity: "error" | "warning"; line?: number },
  ...fragments: (string | RegExp)[]
): McpConfigIssue {
  const issue = issueAt(result, expected.server, expected.key);
  assert.equal(issue.severity, expected.severity, issue.message);
  assert.equal(issue.line, expected.line, issue.message);
  for (const fragment of fragments) {
    if (typeof fragment === "string") {
      assert.ok(issue.message.includes(fragment), `"${issue.message}" lacks "${fragment}"`);
    } else {
      assert.match(issue.message, fragment);
    }
  }
  return issue;
}

type Fragment = string | RegExp;

/** An issue expected on server `s` (the one most tests write with {@linkcode one}). */
interface ExpectedIssue {
  key: string;
  severity: "error" | "warning";
  line?: number;
  fragments: Fragment[];
}

/** An error of server `s` at `key` and `line` whose message holds every fragment. */
function errorAt(key: string, line: number | undefined, ...fragments: Fragment[]): ExpectedIssue {
  return { key, severity: "error", line, fragments };
}

/** A warning of server `s` at `key` and `line` whose message holds every fragment. */
function warningAt(key: string, line: number | undefined, ...fragments: Fragment[]): ExpectedIssue {
  return { key, severity: "warning", line, fragments };
}

/** {@linkcode assertIssue} for each expected issue of server `s`; returns the last issue found. */
function assertIssues(result: McpServersResult, ...expected: ExpectedIssue[]): McpConfigIssue {
  const found = expected.map(({ fragments, ...where }) =>
    assertIssue(result, { server: "s", ...where }, ...fragments)
  );
  return found[found.length - 1];
}

/** Server `s` written as `keys` is left out of the servers, with each expected issue. */
function assertRefused(keys: string[], ...expected: ExpectedIssue[]): McpServersResult {
  const result = one("s", keys);
  assert.deepEqual(result.servers, [], keys.join("; "));
  assertIssues(result, ...expected);
  return result;
}

function assertNoIssues(result: McpServersResult): void {
  assert.deepEqual(result.issues, []);
}

/** The server without its fingerprint, for whole-value comparisons. */
function withoutFingerprint(server: McpServerConfig): Omit<McpServerConfig, "fingerprint"> {
  const { fingerprint: _, ...rest } = server;
  return rest;
}

// --- mcp_servers itself ----------------------------------------------------------------------

Deno.test("parseMcpServers: no mcp_servers, null or empty mapping → no servers, no issues", () => {
  assert.deepEqual(parse(["model: x"]), { servers: [], issues: [] });
  assert.deepEqual(parse([""]), { servers: [], issues: [] });
  assert.deepEqual(parse(["mcp_servers:"]), { servers: [], issues: [] });
  assert.deepEqual(parse(["mcp_servers: {}"]), { servers: [], issues: [] });
});

Deno.test("parseMcpServers: mcp_servers that is not a mapping is one error at its line", () => {
  for (const value of ["[a, b]", "5", '"text"']) {
    const result = parse(["model: x", `mcp_servers: ${value}`]);
    assert.deepEqual(result.servers, []);
    assert.equal(result.issues.length, 1);
    assertIssue(
      result,
      { server: "", key: "", severity: "error", line: 2 },
      "mcp_servers must be a mapping of server names",
      "`<name>:`",
    );
    assert.match(formatIssue(result.issues[0], FILE), /^\/h\/config\.yaml:2: mcp_servers: /);
  }
});

Deno.test("parseMcpServers: an entry that is not a mapping is an error; other servers stay", () => {
  const result = parse([
    "mcp_servers:",
    "  broken: npx server",
    "  listed:",
    "    - command",
    "  good:",
    "    command: npx",
  ]);
  assert.deepEqual(result.servers.map((server) => server.name), ["good"]);
  assertIssue(
    result,
    { server: "broken", key: "", severity: "error", line: 2 },
    "must be a mapping with `command:`",
    'got "npx server"',
  );
  assertIssue(result, { server: "listed", key: "", severity: "error", line: 3 }, "got a list");
});

Deno.test("parseMcpServers: servers keep file order and their names as written", () => {
  const result = parse([
    "mcp_servers:",
    "  zeta:",
    "    command: a",
    "  My-API.v2:",
    "    url: https://x.example/mcp",
    "  alpha:",
    "    command: b",
  ]);
  assert.deepEqual(result.servers.map((server) => server.name), ["zeta", "My-API.v2", "alpha"]);
  assertNoIssues(result);
});

// --- defaults --------------------------------------------------------------------------------

/** The defaults of a stdio and an HTTP entry alike (all but name, transport and keepalive). */
const SHARED_DEFAULTS = {
  configFile: FILE,
  args: [],
  env: {},
  headers: {},
  sslVerify: true,
  enabled: true,
  timeoutSeconds: 300,
  connectTimeoutSeconds: 60,
  protocol: "auto",
  supportsParallelToolCalls: false,
  skipPreflight: false,
  idleTimeoutSeconds: 0,
  maxLifetimeSeconds: 0,
  tools: { resources: true, prompts: true },
  sampling: SAMPLING_DEFAULTS,
  elicitation: { enabled: true, timeoutSeconds: 300 },
  trust: "full",
};

Deno.test("parseMcpServers: a stdio entry gets every default", () => {
  const result = one("files", ["command: npx"]);
  assertNoIssues(result);
  assert.deepEqual(withoutFingerprint(serverOf(result, "files")), {
    ...SHARED_DEFAULTS,
    name: "files",
    transport: "stdio",
    command: "npx",
    keepaliveIntervalSeconds: null,
  });
});

Deno.test("parseMcpServers: an HTTP entry gets every default (keepalive 180)", () => {
  const result = one("remote", ["url: https://mcp.example.com/mcp"]);
  assertNoIssues(result);
  assert.deepEqual(withoutFingerprint(serverOf(result, "remote")), {
    ...SHARED_DEFAULTS,
    name: "remote",
    transport: "http",
    url: "https://mcp.example.com/mcp",
    keepaliveIntervalSeconds: 180,
  });
});

Deno.test("parseMcpServers: null values mean 'not set' and take the default", () => {
  const result = one("files", [
    "command: npx",
    "args:",
    "env:",
    "enabled:",
    "timeout:",
    "keepalive_interval:",
    "tools:",
    "trust:",
    "protocol:",
  ]);
  assertNoIssues(result);
  const server = serverOf(result, "files");
  assert.deepEqual(server.args, []);
  assert.equal(server.enabled, true);
  assert.equal(server.timeoutSeconds, 300);
  assert.equal(server.keepaliveIntervalSeconds, null);
  assert.equal(server.trust, "full");
  assert.equal(server.protocol, "auto");
});

// --- every key set ---------------------------------------------------------------------------

Deno.test("parseMcpServers: a stdio entry with every applicable key", () => {
  const result = one("files", [
    "command: ' npx '",
    "args: [-y, '@mcp/files', 8080, 1.5]",
    "env: { ROOT: /data, DEBUG: true, PORT: 9000 }",
    "enabled: yes",
    "timeout: 45",
    "connect_timeout: '12.5'",
    "protocol: legacy",
    "supports_parallel_tool_calls: on",
    "keepalive_interval: 30",
    "idle_timeout_seconds: 600",
    "max_lifetime_seconds: 3600",
    "tools:",
    "  include: [read_*, list_dir]",
    "  resources: off",
    "  prompts: 0",
    "sampling: { enabled: true, max_tokens_cap: 1000, allowed_models: [a, b] }",
    "elicitation: { enabled: no, timeout: 60 }",
    "trust: untrusted",
  ]);
  assertNoIssues(result);
  assert.deepEqual(withoutFingerprint(serverOf(result, "files")), {
    name: "files",
    configFile: FILE,
    transport: "stdio",
    command: "npx",
    args: ["-y", "@mcp/files", "8080", "1.5"],
    env: { ROOT: "/data", DEBUG: "true", PORT: "9000" },
    headers: {},
    sslVerify: true,
    enabled: true,
    timeoutSeconds: 45,
    connectTimeoutSeconds: 12.5,
    protocol: "legacy",
    supportsParallelToolCalls: true,
    skipPreflight: false,
    keepaliveIntervalSeconds: 30,
    idleTimeoutSeconds: 600,
    maxLifetimeSeconds: 3600,
    tools: {
      include: ["read_*", "list_dir"],
      resources: false,
      prompts: false,
    },
    sampling: {
      enabled: true,
      maxTokensCap: 1000,
      timeoutSeconds: 30,
      maxRpm: 10,
      maxToolRounds: 5,
      allowedModels: ["a", "b"],
    },
    elicitation: { enabled: false, timeoutSeconds: 60 },
    trust: "untrusted",
  });
});

Deno.test("parseMcpServers: an HTTP entry with every applicable key", () => {
  const result = one("remote", [
    "url: ' https://mcp.example.com/mcp '",
    "headers: { X-Api-Key: Bearer abc, X-Retry: 3 }",
    "ssl_verify: ~/ca/bundle.pem",
    "client_cert: ~/certs/client.pem",
    "client_key: ~/certs/client.key",
    "enabled: true",
    "timeout: 10",
    "connect_timeout: 5",
    "protocol: stateless",
    "supports_parallel_tool_calls: true",
    "skip_preflight: yes",
    "transport: sse",
    "keepalive_interval: 60",
    "tools: { include: search }",
    "auth: oauth",
    "oauth: { cimd: false, user_agent: agent/1.0, redirect_port: 8123 }",
    "sampling: { enabled: false }",
    "elicitation: { timeout: '90' }",
    "trust: full",
  ]);
  assertNoIssues(result);
  assert.deepEqual(withoutFingerprint(serverOf(result, "remote")), {
    name: "remote",
    configFile: FILE,
    transport: "sse",
    args: [],
    env: {},
    url: "https://mcp.example.com/mcp",
    headers: { "X-Api-Key": "Bearer abc", "X-Retry": "3" },
    sslVerify: "/home/ada/ca/bundle.pem",
    clientCert: { cert: "/home/ada/certs/client.pem", key: "/home/ada/certs/client.key" },
    enabled: true,
    timeoutSeconds: 10,
    connectTimeoutSeconds: 5,
    protocol: "stateless",
    supportsParallelToolCalls: true,
    skipPreflight: true,
    keepaliveIntervalSeconds: 60,
    idleTimeoutSeconds: 0,
    maxLifetimeSeconds: 0,
    tools: { include: ["search"], resources: true, prompts: true },
    auth: "oauth",
    oauth: {
      clientMetadataUrl: DEFAULT_CLIENT_METADATA_URL,
      cimd: false,
      userAgent: "agent/1.0",
      redirectPort: 8123,
    },
    sampling: {
      enabled: false,
      maxTokensCap: 4096,
      timeoutSeconds: 30,
      maxRpm: 10,
      maxToolRounds: 5,
      allowedModels: [],
    },
    elicitation: { enabled: true, timeoutSeconds: 90 },
    trust: "full",
  });
});

// --- enabled and booleans --------------------------------------------------------------------

Deno.test("parseMcpServers: enabled is boolish; disabled servers are still listed", () => {
  for (
    const [text, expected] of [
      ["true", true],
      ["1", true],
      ["yes", true],
      ["on", true],
      ["'ON'", true],
      ["'True'", true],
      ["false", false],
      ["0", false],
      ["no", false],
      ["off", false],
      ["'Off'", false],
    ] as const
  ) {
    const result = one("s", ["command: npx", `enabled: ${text}`]);
    assertNoIssues(result);
    assert.equal(serverOf(result, "s").enabled, expected, `enabled: ${text}`);
  }
});

Deno.test("parseMcpServers: a non-boolean boolean key is an error naming key and value", () => {
  for (const key of ["enabled", "supports_parallel_tool_calls"]) {
    assertRefused(
      ["command: npx", `${key}: maybe`],
      errorAt(key, 4, `${key} must be true or false, got "maybe"`),
    );
  }
  const preflight = one("s", ["url: https://x.example", "skip_preflight: 2"]);
  assertIssues(
    preflight,
    errorAt("skip_preflight", 4, "skip_preflight must be true or false, got 2"),
  );
});

// --- url / command ---------------------------------------------------------------------------

Deno.test("parseMcpServers: url and command both set → warning, url wins (HTTP)", () => {
  const result = one("both", ["url: https://x.example/mcp", "command: npx", "args: [a]"]);
  const server = serverOf(result, "both");
  assert.equal(server.transport, "http");
  assert.equal(server.url, "https://x.example/mcp");
  assert.equal(server.command, undefined);
  assert.deepEqual(server.args, []);
  assertIssue(
    result,
    { server: "both", key: "command", severity: "warning", line: 4 },
    "both url and command",
    "url wins",
  );
  assertIssue(result, { server: "both", key: "args", severity: "warning", line: 5 }, "ignored");
  assert.equal(result.issues.length, 2);
});

Deno.test("parseMcpServers: neither url nor command → error naming the fix", () => {
  const result = one("empty", ["timeout: 5"]);
  assert.deepEqual(result.servers, []);
  assertIssue(
    result,
    { server: "empty", key: "", severity: "error", line: 2 },
    "neither `command` nor `url`",
    "add `command:` for a local",
    "`url:` for a remote",
  );
});

Deno.test("parseMcpServers: command must be a non-empty string", () => {
  for (const value of ["''", "'  '", "[npx]", "5"]) {
    assertRefused(
      [`command: ${value}`],
      errorAt("command", 3, "command must be a non-empty string naming the executable"),
    );
  }
});

Deno.test("parseMcpServers: url must be http(s) and parse", () => {
  for (
    const [value, shown] of [
      ["ftp://x.example/mcp", '"ftp://x.example/mcp"'],
      ["not a url", '"not a url"'],
      ["'file:///etc/passwd'", '"file:///etc/passwd"'],
      ["''", '""'],
      ["8080", "8080"],
      ["[https://x.example]", "a list"],
    ]
  ) {
    assertRefused(
      [`url: ${value}`],
      errorAt("url", 3, `url must be an http:// or https:// URL, got ${shown}`),
    );
  }
  for (const good of ["http://127.0.0.1:8000/mcp", "HTTPS://X.example"]) {
    assertNoIssues(one("s", [`url: ${good}`]));
  }
});

Deno.test("parseMcpServers: a url with an unset variable says which variable to set", () => {
  const result = one("s", ["url: ${MCP_URL}"]);
  const issue = assertIssues(
    result,
    errorAt("url", 3, 'got "${MCP_URL}"', "set MCP_URL in <home>/.env"),
  );
  assert.equal(
    formatIssue(issue, FILE),
    `/h/config.yaml:3: mcp_servers.s.url: ${issue.message}`,
  );
  // The error already names the variable: no second, unset-variable warning for the same key.
  assert.equal(result.issues.length, 1);
});

// --- transport, protocol, trust, auth --------------------------------------------------------

Deno.test("parseMcpServers: transport sse selects SSE; http names are the default", () => {
  assert.equal(
    serverOf(one("s", ["url: https://x.example", "transport: sse"]), "s").transport,
    "sse",
  );
  assert.equal(
    serverOf(one("s", ["url: https://x.example", "transport: SSE"]), "s").transport,
    "sse",
  );
  for (const name of ["http", "streamable-http", "streamable_http", "Streamable-HTTP"]) {
    const result = one("s", ["url: https://x.example", `transport: ${name}`]);
    assertNoIssues(result);
    assert.equal(serverOf(result, "s").transport, "http");
  }
});

Deno.test("parseMcpServers: an unknown transport warns and uses Streamable HTTP", () => {
  for (const [value, shown] of [["websocket", '"websocket"'], ["3", "3"]]) {
    const result = one("s", ["url: https://x.example", `transport: ${value}`]);
    assert.equal(serverOf(result, "s").transport, "http");
    assertIssues(result, warningAt("transport", 4, `unknown transport ${shown}`, "transport: sse"));
  }
});

Deno.test("parseMcpServers: protocol auto/stateless/legacy; unknown → auto with a warning", () => {
  for (const mode of ["auto", "stateless", "legacy"] as const) {
    const result = one("s", ["command: npx", `protocol: ${mode}`]);
    assertNoIssues(result);
    assert.equal(serverOf(result, "s").protocol, mode);
  }
  const result = one("s", ["command: npx", "protocol: modern"]);
  assert.equal(serverOf(result, "s").protocol, "auto");
  assertIssues(
    result,
    warningAt("protocol", 4, 'unknown protocol "modern"; using auto', "auto, stateless, legacy"),
  );
});

Deno.test("parseMcpServers: trust full/untrusted; anything else → untrusted with a warning", () => {
  assert.equal(serverOf(one("s", ["command: npx", "trust: full"]), "s").trust, "full");
  assert.equal(serverOf(one("s", ["command: npx", "trust: untrusted"]), "s").trust, "untrusted");
  for (
    const [value, shown] of [["partial", '"partial"'], ["false", "false"], ["[full]", "a list"]]
  ) {
    const result = one("s", ["command: npx", `trust: ${value}`]);
    assert.equal(serverOf(result, "s").trust, "untrusted");
    assertIssues(result, warningAt("trust", 4, `unknown trust ${shown}; treated as untrusted`));
  }
});

Deno.test("parseMcpServers: auth must be oauth", () => {
  assertRefused(
    ["url: https://x.example", "auth: basic"],
    errorAt("auth", 4, 'auth must be "oauth"', 'got "basic"', "`headers`"),
  );
});

Deno.test("parseMcpServers: oauth settings without auth: oauth warn; oauth must be a mapping", () => {
  const unused = one("s", ["url: https://x.example", "oauth: { cimd: false }"]);
  assert.equal(serverOf(unused, "s").oauth, undefined, "no settings without auth: oauth");
  assertIssues(unused, warningAt("oauth", 4, "add `auth: oauth`"));
  assertRefused(
    ["url: https://x.example", "auth: oauth", "oauth: true"],
    errorAt("oauth", 5, "oauth must be a mapping of keys, got true"),
  );
});

Deno.test("parseMcpServers: sampling must be a mapping", () => {
  const bad = one("s", ["command: npx", "sampling: [a]"]);
  assertIssues(bad, errorAt("sampling", 4, "sampling must be a mapping of keys, got a list"));
});

// --- numbers ---------------------------------------------------------------------------------

Deno.test("parseMcpServers: timeout and connect_timeout must be numbers > 0", () => {
  for (const key of ["timeout", "connect_timeout"]) {
    for (
      const [value, shown] of [
        ["soon", '"soon"'],
        ["0", "0"],
        ["-5", "-5"],
        [".inf", "Infinity"],
        ["''", '""'],
        ["[1]", "a list"],
        ["'0x10'", '"0x10"'],
      ]
    ) {
      assertRefused(
        ["command: npx", `${key}: ${value}`],
        errorAt(key, 4, `${key} must be a number of seconds > 0, got ${shown}`),
      );
    }
  }
  const strings = one("s", ["command: npx", "timeout: ' 45 '", "connect_timeout: '1e2'"]);
  assertNoIssues(strings);
  assert.equal(serverOf(strings, "s").timeoutSeconds, 45);
  assert.equal(serverOf(strings, "s").connectTimeoutSeconds, 100);
});

Deno.test("parseMcpServers: the timeout message matches the documented example", () => {
  const result = one("db", ["command: npx", "timeout: soon"]);
  assert.equal(
    formatIssue(issueAt(result, "db", "timeout"), FILE),
    '/h/config.yaml:4: mcp_servers.db.timeout: timeout must be a number of seconds > 0, got "soon"',
  );
});

Deno.test("parseMcpServers: seconds written with a unit (30s, 2 min, 1h, 500ms) say the number to write", () => {
  const result = one("db", [
    "command: npx",
    "timeout: 30s",
    "connect_timeout: 2 min",
    "keepalive_interval: 1H",
    "lifecycle:",
    "  idle_timeout_seconds: 1500ms",
    "max_lifetime_seconds: 3 parsecs",
  ]);
  const message = (key: string) => issueAt(result, "db", key).message;
  assert.equal(
    message("timeout"),
    'timeout must be a number of seconds > 0, got "30s"; write the seconds without a unit: timeout: 30',
  );
  assert.match(
    message("connect_timeout"),
    /got "2 min"; write the seconds without a unit: connect_timeout: 120$/,
  );
  assert.match(
    message("keepalive_interval"),
    /got "1H"; write the seconds without a unit: keepalive_interval: 3600$/,
  );
  assert.match(
    message("lifecycle.idle_timeout_seconds"),
    /got "1500ms"; write the seconds without a unit: idle_timeout_seconds: 1\.5$/,
  );
  // A unit this does not know is only refused.
  assert.match(message("max_lifetime_seconds"), /got "3 parsecs"$/);
});

Deno.test("parseMcpServers: keepalive_interval is floored at 5; default 180 for HTTP, off for stdio", () => {
  const keepalive = (transport: string, value?: string) => {
    const keys = [transport, ...(value === undefined ? [] : [`keepalive_interval: ${value}`])];
    const result = one("s", keys);
    assertNoIssues(result);
    return serverOf(result, "s").keepaliveIntervalSeconds;
  };
  const http = "url: https://x.example";
  const sse = "url: https://x.example\n    transport: sse";
  const stdio = "command: npx";
  assert.equal(keepalive(http), 180);
  assert.equal(keepalive(sse), 180);
  assert.equal(keepalive(stdio), null);
  assert.equal(keepalive(http, "1"), 5);
  assert.equal(keepalive(http, "0"), 5);
  assert.equal(keepalive(http, "5"), 5);
  assert.equal(keepalive(http, "'30'"), 30);
  assert.equal(keepalive(stdio, "2"), 5);
  assert.equal(keepalive(stdio, "90"), 90);
});

Deno.test("parseMcpServers: a bad keepalive_interval is an error", () => {
  assertRefused(
    ["url: https://x.example", "keepalive_interval: -1"],
    errorAt(
      "keepalive_interval",
      4,
      "keepalive_interval must be a number of seconds >= 0 (floored at 5), got -1",
    ),
  );
});

Deno.test("parseMcpServers: idle and lifetime at top level or under lifecycle; 0 disables", () => {
  const top = one("s", ["command: npx", "idle_timeout_seconds: 0", "max_lifetime_seconds: '7200'"]);
  assertNoIssues(top);
  assert.equal(serverOf(top, "s").idleTimeoutSeconds, 0);
  assert.equal(serverOf(top, "s").maxLifetimeSeconds, 7200);

  const nested = one("s", [
    "command: npx",
    "lifecycle:",
    "  idle_timeout_seconds: 300",
    "  max_lifetime_seconds: 86400",
  ]);
  assertNoIssues(nested);
  assert.equal(serverOf(nested, "s").idleTimeoutSeconds, 300);
  assert.equal(serverOf(nested, "s").maxLifetimeSeconds, 86400);
});

Deno.test("parseMcpServers: the top-level lifecycle value wins over the nested one, with a warning", () => {
  const result = one("s", [
    "command: npx",
    "idle_timeout_seconds: 10",
    "lifecycle:",
    "  idle_timeout_seconds: 20",
    "  max_lifetime_seconds: 30",
  ]);
  const server = serverOf(result, "s");
  assert.equal(server.idleTimeoutSeconds, 10);
  assert.equal(server.maxLifetimeSeconds, 30);
  assertIssues(
    result,
    warningAt(
      "lifecycle.idle_timeout_seconds",
      6,
      "set both at the top level and under lifecycle; the top-level value wins",
    ),
  );
  assert.equal(result.issues.length, 1);
});

Deno.test("parseMcpServers: bad lifecycle values are errors with the nested key and line", () => {
  assertRefused(
    [
      "command: npx",
      "max_lifetime_seconds: forever",
      "lifecycle:",
      "  idle_timeout_seconds: -1",
    ],
    errorAt(
      "max_lifetime_seconds",
      4,
      'max_lifetime_seconds must be a number of seconds >= 0 (0 disables), got "forever"',
    ),
    errorAt(
      "lifecycle.idle_timeout_seconds",
      6,
      "lifecycle.idle_timeout_seconds must be a number of seconds >= 0 (0 disables), got -1",
    ),
  );
  const notMapping = one("s", ["command: npx", "lifecycle: 60"]);
  assertIssues(notMapping, errorAt("lifecycle", 4, "lifecycle must be a mapping of keys, got 60"));
});

// --- args, env, headers ----------------------------------------------------------------------

Deno.test("parseMcpServers: args must be a list; numbers are stringified", () => {
  assertRefused(
    ["command: npx", "args: --port 80"],
    errorAt(
      "args",
      4,
      'args must be a list of strings, got "--port 80"',
      'args: ["--flag", "value"]',
    ),
  );
});

Deno.test("parseMcpServers: a bad args item is an error at the item's line", () => {
  assertRefused(
    ["command: npx", "args:", "  - ok", "  - { a: 1 }", "  - true"],
    errorAt("args.1", 6, "args items must be strings or numbers, got a mapping"),
    errorAt("args.2", 7, "got true; quote the item"),
  );
});

Deno.test("parseMcpServers: env and headers are mappings of scalars, stringified", () => {
  const stdio = one("s", ["command: npx", "env: { A: 1, B: false, C: text, D: '' }"]);
  assertNoIssues(stdio);
  assert.deepEqual(serverOf(stdio, "s").env, { A: "1", B: "false", C: "text", D: "" });
  const http = one("s", ["url: https://x.example", "headers: { X-N: 2.5, X-B: true }"]);
  assertNoIssues(http);
  assert.deepEqual(serverOf(http, "s").headers, { "X-N": "2.5", "X-B": "true" });
});

Deno.test("parseMcpServers: env/headers that are not mappings, or hold non-scalars, are errors", () => {
  const env = one("s", ["command: npx", "env: [A=1]"]);
  assertIssues(env, errorAt("env", 4, "env must be a mapping of NAME: value pairs, got a list"));
  assertRefused(
    ["url: https://x.example", "headers:", "  Good: yes", "  Empty:", "  List: [a]"],
    errorAt(
      "headers.Empty",
      6,
      "headers values must be strings, numbers or booleans, got null",
      'write "" for an empty one',
    ),
    errorAt("headers.List", 7, "got a list"),
  );
  const notMapping = one("s", ["url: https://x.example", "headers: Bearer x"]);
  assertIssues(
    notMapping,
    errorAt("headers", 4, 'headers must be a mapping of Header-Name: value pairs, got "Bearer x"'),
  );
});

// --- TLS -------------------------------------------------------------------------------------

Deno.test("parseMcpServers: ssl_verify is boolish or a CA bundle path (~ expanded)", () => {
  const cases: [string, boolean | string][] = [
    ["true", true],
    ["false", false],
    ["no", false],
    ["'off'", false],
    ["1", true],
    ["~/ca.pem", "/home/ada/ca.pem"],
    ["/etc/ssl/ca.pem", "/etc/ssl/ca.pem"],
    ["missing/relative.pem", "missing/relative.pem"],
  ];
  for (const [value, expected] of cases) {
    const result = one("s", ["url: https://x.example", `ssl_verify: ${value}`]);
    assertNoIssues(result);
    assert.equal(serverOf(result, "s").sslVerify, expected, `ssl_verify: ${value}`);
  }
  for (const [value, shown] of [["''", '""'], ["5", "5"], ["[a]", "a list"]]) {
    const result = one("s", ["url: https://x.example", `ssl_verify: ${value}`]);
    assertIssues(
      result,
      errorAt(
        "ssl_verify",
        4,
        `ssl_verify must be true, false or the path to a PEM CA bundle, got ${shown}`,
      ),
    );
  }
});

Deno.test("parseMcpServers: client_cert as a string, with client_key, or a list of 2 or 3", () => {
  const cert = (keys: string[]) => {
    const result = one("s", ["url: https://x.example", ...keys]);
    assertNoIssues(result);
    return serverOf(result, "s").clientCert;
  };
  assert.deepEqual(cert(["client_cert: ~/c.pem"]), { cert: "/home/ada/c.pem" });
  assert.deepEqual(cert(["client_cert: '~'", "client_key: ~/k.pem"]), {
    cert: "/home/ada",
    key: "/home/ada/k.pem",
  });
  assert.deepEqual(cert(["client_cert: [~/c.pem, /abs/k.pem]"]), {
    cert: "/home/ada/c.pem",
    key: "/abs/k.pem",
  });
  assert.deepEqual(cert(["client_cert: [~/c.pem, ~/k.pem, ' p4ss ']"]), {
    cert: "/home/ada/c.pem",
    key: "/home/ada/k.pem",
    password: " p4ss ",
  });
  // Files are not checked here: that fails at connect time.
  assert.deepEqual(cert(["client_cert: /does/not/exist.pem"]), { cert: "/does/not/exist.pem" });
  assert.equal(cert([]), undefined);
});

Deno.test("parseMcpServers: bad client_cert shapes are errors", () => {
  for (
    const [value, fragment, key, line] of [
      ["[only.pem]", "got a list of 1 item(s)", "client_cert", 4],
      ["[a, b, c, d]", "got a list of 4 item(s)", "client_cert", 4],
      ["5", "got 5", "client_cert", 4],
      ["''", 'got ""', "client_cert", 4],
      ["[a, 1234]", "got 1234 at position 2; quote it", "client_cert.1", 4],
    ] as const
  ) {
    assertRefused(
      ["url: https://x.example", `client_cert: ${value}`],
      errorAt(
        key,
        line,
        "client_cert must be a path, or a list [cert, key] or [cert, key, password]",
        fragment,
      ),
    );
  }
  const badKey = one("s", ["url: https://x.example", "client_cert: c.pem", "client_key: [k]"]);
  assertIssues(
    badKey,
    errorAt("client_key", 5, "client_key must be the path to a PEM private key, got a list"),
  );
});

Deno.test("parseMcpServers: client_key is ignored with a list client_cert or without client_cert", () => {
  const list = one("s", ["url: https://x.example", "client_cert: [c, k]", "client_key: other"]);
  assert.deepEqual(serverOf(list, "s").clientCert, { cert: "c", key: "k" });
  assertIssues(
    list,
    warningAt("client_key", 5, "client_key is ignored because client_cert is a list"),
  );
  const alone = one("s", ["url: https://x.example", "client_key: k.pem"]);
  assert.equal(serverOf(alone, "s").clientCert, undefined);
  assertIssues(alone, warningAt("client_key", 4, "client_key is ignored without client_cert"));
});

// --- tools, elicitation ----------------------------------------------------------------------

Deno.test("parseMcpServers: tools include/exclude take a name or a list; include: [] is kept", () => {
  const result = one("s", ["command: npx", "tools: { include: [], exclude: 'write_*' }"]);
  // Both set: exclude is kept as written but does nothing, and a warning says so.
  assertIssues(result, warningAt("tools.exclude", 4, "exclude is ignored when include is set"));
  assert.equal(result.issues.length, 1);
  assert.deepEqual(serverOf(result, "s").tools, {
    include: [],
    exclude: ["write_*"],
    resources: true,
    prompts: true,
  });
});

Deno.test("parseMcpServers: bad tools values are errors with their keys", () => {
  assertRefused(
    [
      "command: npx",
      "tools:",
      "  include: 5",
      "  exclude: [ok, [nested]]",
      "  resources: sometimes",
    ],
    errorAt("tools.include", 5, "tools.include must be a tool name or a list of tool names, got 5"),
    errorAt("tools.exclude.1", 6, "tools.exclude items must be tool names (strings), got a list"),
    errorAt("tools.resources", 7, 'tools.resources must be true or false, got "sometimes"'),
  );
  const notMapping = one("s", ["command: npx", "tools: [a]"]);
  assertIssues(notMapping, errorAt("tools", 4, "tools must be a mapping of keys, got a list"));
});

Deno.test("parseMcpServers: elicitation values are checked; unknown keys warn", () => {
  assertRefused(
    [
      "command: npx",
      "elicitation:",
      "  enabled: perhaps",
      "  timeout: 0",
      "  timout: 5",
    ],
    errorAt("elicitation.enabled", 5, 'elicitation.enabled must be true or false, got "perhaps"'),
    errorAt("elicitation.timeout", 6, "elicitation.timeout must be a number of seconds > 0, got 0"),
    warningAt("elicitation.timout", 7, "did you mean `timeout`?"),
  );
});

// --- keys that do not apply, unknown keys ----------------------------------------------------

Deno.test("parseMcpServers: stdio-only keys on an HTTP server warn and are ignored", () => {
  const result = one("s", [
    "url: https://x.example",
    "args: [a]",
    "env: { A: 1 }",
    "idle_timeout_seconds: 5",
    "max_lifetime_seconds: nope",
    "lifecycle: { idle_timeout_seconds: 5 }",
  ]);
  const server = serverOf(result, "s");
  assert.deepEqual(server.args, []);
  assert.deepEqual(server.env, {});
  assert.equal(server.idleTimeoutSeconds, 0);
  assert.equal(server.maxLifetimeSeconds, 0);
  const keys = ["args", "env", "idle_timeout_seconds", "max_lifetime_seconds", "lifecycle"];
  keys.forEach((key, index) => {
    assertIssues(result, warningAt(key, 4 + index, `${key} applies to stdio servers`, "ignored"));
  });
  assert.equal(result.issues.length, keys.length, "ignored values are not validated");
});

Deno.test("parseMcpServers: HTTP-only keys on a stdio server warn and are ignored", () => {
  const result = one("s", [
    "command: npx",
    "headers: { A: b }",
    "ssl_verify: false",
    "client_cert: c.pem",
    "client_key: k.pem",
    "skip_preflight: true",
    "transport: sse",
    "auth: basic",
    "oauth: 5",
  ]);
  const server = serverOf(result, "s");
  assert.equal(server.transport, "stdio");
  assert.deepEqual(server.headers, {});
  assert.equal(server.sslVerify, true);
  assert.equal(server.clientCert, undefined);
  assert.equal(server.skipPreflight, false);
  assert.equal(server.auth, undefined);
  assert.equal(server.oauth, undefined);
  const keys = [
    "headers",
    "ssl_verify",
    "client_cert",
    "client_key",
    "skip_preflight",
    "transport",
    "auth",
    "oauth",
  ];
  keys.forEach((key, index) => {
    assertIssues(result, warningAt(key, 4 + index, `${key} applies to HTTP servers`, "ignored"));
  });
  assert.equal(result.issues.length, keys.length, "ignored values are not validated");
});

Deno.test("parseMcpServers: unknown keys warn with the closest valid key", () => {
  const cases: [string, string | undefined][] = [
    ["comand", "command"],
    ["Command", "command"],
    ["timout", "timeout"],
    ["ssl-verify", "ssl_verify"],
    ["enable", "enabled"],
    ["keepalive", "keepalive_interval"],
    ["idle_timeout", "idle_timeout_seconds"],
    ["supports_parallel", "supports_parallel_tool_calls"],
    ["tool", "tools"],
    ["zzzzzzzz", undefined],
    ["foo", undefined],
    ["x", undefined],
  ];
  for (const [key, suggestion] of cases) {
    const result = one("s", ["command: npx", `${key}: 1`]);
    serverOf(result, "s"); // a warning only: the server stays
    const issue = assertIssues(result, warningAt(key, 4, `unknown key \`${key}\` is ignored`));
    if (suggestion) {
      assert.ok(issue.message.endsWith(`did you mean \`${suggestion}\`?`), issue.message);
    } else assert.ok(!issue.message.includes("did you mean"), issue.message);
  }
});

Deno.test("parseMcpServers: unknown keys inside tools and lifecycle warn too", () => {
  const result = one("s", [
    "command: npx",
    "tools: { includes: [a], prompt: false }",
    "lifecycle: { max_lifetime: 5 }",
  ]);
  assertIssues(
    result,
    warningAt("tools.includes", 4, "did you mean `include`?"),
    warningAt("tools.prompt", 4, "did you mean `prompts`?"),
    warningAt("lifecycle.max_lifetime", 5, "did you mean `max_lifetime_seconds`?"),
  );
});

// --- substitution in entries -----------------------------------------------------------------

Deno.test("parseMcpServers: values are substituted before typing", () => {
  const result = one("s", [
    "url: https://${HOST}/mcp",
    "enabled: ${ON}",
    "timeout: ${T}",
    "transport: ${KIND}",
    "headers: { Authorization: 'Bearer ${TOKEN}' }",
    "ssl_verify: ${userHome}/ca.pem",
    "tools: { include: ['${PREFIX}_*', get], exclude: '${PREFIX}_delete' }",
  ], { HOST: "mcp.example.com", ON: "no", T: "12", KIND: "sse", TOKEN: "abc", PREFIX: "db" });
  assert.deepEqual(result.issues.map((issue) => issue.key), ["tools.exclude"]); // include wins
  const server = serverOf(result, "s");
  assert.equal(server.url, "https://mcp.example.com/mcp");
  assert.equal(server.enabled, false);
  assert.equal(server.timeoutSeconds, 12);
  assert.equal(server.transport, "sse");
  assert.deepEqual(server.headers, { Authorization: "Bearer abc" });
  assert.equal(server.sslVerify, "/home/ada/ca.pem");
  assert.deepEqual(server.tools.include, ["db_*", "get"]);
  assert.deepEqual(server.tools.exclude, ["db_delete"]);
});

Deno.test("parseMcpServers: stdio args and env are substituted; env keys are not", () => {
  const result = one("s", [
    "command: ${workspaceFolder}${/}bin${pathSeparator}server",
    "args: ['--root=${workspaceFolder}', '${workspaceFolderBasename}', '${env:MODE}', 3]",
    "env: { API_KEY: '${ API_KEY }', '${API_KEY}': same, HOME_DIR: '${userHome}' }",
  ], { API_KEY: "k-1", MODE: "fast" });
  assertNoIssues(result);
  const server = serverOf(result, "s");
  assert.equal(server.command, "/work/project/bin/server");
  assert.deepEqual(server.args, ["--root=/work/project", "project", "fast", "3"]);
  assert.deepEqual(server.env, { API_KEY: "k-1", "${API_KEY}": "same", HOME_DIR: "/home/ada" });
});

Deno.test("parseMcpServers: client cert paths are substituted then ~-expanded", () => {
  const result = one("s", [
    "url: https://x.example",
    "client_cert: ['${CERT_DIR}/c.pem', '~/k.pem', '${CERT_PASS}']",
  ], { CERT_DIR: "~/certs", CERT_PASS: "pw" });
  assertNoIssues(result);
  assert.deepEqual(serverOf(result, "s").clientCert, {
    cert: "/home/ada/certs/c.pem",
    key: "/home/ada/k.pem",
    password: "pw",
  });
});

Deno.test("parseMcpServers: .env wins over the process environment", () => {
  const processEnv: Record<string, string> = { TOKEN: "from-process" };
  const scope = SecretScope.fromText("TOKEN=from-dotenv\n", (name) => processEnv[name]);
  const source = ConfigSource.parse(
    FILE,
    "mcp_servers:\n  s:\n    url: https://x.example\n    headers: { Authorization: 'Bearer ${TOKEN}' }\n",
  );
  const result = parseMcpServers(source, { ...contextOf(), lookup: scope.get.bind(scope) });
  assert.equal(serverOf(result, "s").headers.Authorization, "Bearer from-dotenv");
});

Deno.test("parseMcpServers: unset or empty variables keep the placeholder and warn where written", () => {
  const result = one("s", [
    "url: https://x.example",
    "headers:",
    "  Authorization: Bearer ${ TOKEN }",
    "  X-Empty: ${EMPTY}",
    "tools: { include: [a, '${NOPE}'] }",
  ], { EMPTY: "" });
  const server = serverOf(result, "s");
  assert.deepEqual(server.headers, { Authorization: "Bearer ${ TOKEN }", "X-Empty": "${EMPTY}" });
  assertIssues(
    result,
    warningAt(
      "headers.Authorization",
      5,
      "${ TOKEN } is not set (or empty) in <home>/.env or the process environment",
    ),
    warningAt("headers.X-Empty", 6, "${EMPTY}"),
    warningAt("tools.include.1", 7, "${NOPE}"),
  );
  assert.equal(result.issues.length, 3);
});

Deno.test("parseMcpServers: unset variables are not reported for disabled servers or ignored keys", () => {
  const disabled = one("s", ["command: npx", "enabled: false", "env: { K: '${UNSET}' }"]);
  assertNoIssues(disabled);
  assert.equal(serverOf(disabled, "s").enabled, false);
  const ignored = one("s", ["url: https://x.example", "command: ${UNSET}", "args: ['${UNSET}']"]);
  assert.deepEqual(ignored.issues.map((issue) => issue.key).sort(), ["args", "command"]);
  assert.ok(ignored.issues.every((issue) => !issue.message.includes("not set")));
});

// --- isolation, lines, formatting ------------------------------------------------------------

Deno.test("parseMcpServers: a bad server does not drop good ones", () => {
  const result = parse([
    "mcp_servers:",
    "  first:",
    "    command: npx",
    "  bad:",
    "    command: npx",
    "    timeout: soon",
    "    args: 5",
    "  last:",
    "    url: https://x.example",
  ]);
  assert.deepEqual(result.servers.map((server) => server.name), ["first", "last"]);
  assert.deepEqual(
    result.issues.map((issue) => [issue.server, issue.key, issue.severity, issue.line]),
    [["bad", "args", "error", 7], ["bad", "timeout", "error", 6]],
  );
});

Deno.test("parseMcpServers: a warning alone keeps the server", () => {
  const result = one("s", ["command: npx", "trust: sometimes", "comand: x"]);
  assert.equal(result.servers.length, 1);
  assert.equal(result.issues.length, 2);
  assert.ok(result.issues.every((issue) => issue.severity === "warning"));
});

Deno.test("parseMcpServers: a dotted server name has no line (lineOf cannot address it)", () => {
  const result = parse([
    "mcp_servers:",
    "  api:",
    "    command: npx",
    "  api.v2:",
    "    command: npx",
    "    timeout: soon",
  ]);
  const issue = issueAt(result, "api.v2", "timeout");
  assert.equal(issue.line, undefined);
  assert.equal(
    formatIssue(issue, FILE),
    '/h/config.yaml: mcp_servers.api.v2.timeout: timeout must be a number of seconds > 0, got "soon"',
  );
});

Deno.test("parseMcpServers: a dotted nested key points at its nearest addressable parent", () => {
  const result = one("s", ["url: https://x.example", "headers:", "  X.Trace: [a]"]);
  assertIssues(result, errorAt("headers.X.Trace", 4, "got a list"));
});

Deno.test("formatIssue: file, line, key path and message; absent parts are left out", () => {
  const issue: McpConfigIssue = {
    server: "db",
    key: "tools.include",
    severity: "error",
    message: "bad",
    line: 9,
  };
  assert.equal(formatIssue(issue, FILE), "/h/config.yaml:9: mcp_servers.db.tools.include: bad");
  assert.equal(
    formatIssue({ ...issue, line: undefined }, FILE),
    "/h/config.yaml: mcp_servers.db.tools.include: bad",
  );
  assert.equal(formatIssue({ ...issue, key: "" }, FILE), "/h/config.yaml:9: mcp_servers.db: bad");
  assert.equal(
    formatIssue({ server: "", key: "", severity: "error", message: "bad", line: 1 }, FILE),
    "/h/config.yaml:1: mcp_servers: bad",
  );
});

// --- fingerprint -----------------------------------------------------------------------------

Deno.test("fingerprint: equal entries are equal, whatever the key order or server name", () => {
  const result = parse([
    "mcp_servers:",
    "  a:",
    "    command: npx",
    "    args: [x, y]",
    "    env: { A: '1', B: '2' }",
    "  b:",
    "    env: { B: '2', A: '1' }",
    "    args: [x, y]",
    "    command: npx",
  ]);
  const [a, b] = result.servers;
  assert.match(a.fingerprint, /^sha256:[0-9a-f]{64}$/);
  assert.equal(a.fingerprint, b.fingerprint);
  // Stable across parses.
  assert.equal(
    serverOf(one("a", ["command: npx", "args: [x, y]", "env: { A: '1', B: '2' }"]), "a")
      .fingerprint,
    a.fingerprint,
  );
});

Deno.test("fingerprint: any changed value changes it", () => {
  const base = ["command: npx", "args: [x, y]", "env: { A: '1' }", "timeout: 30"];
  const fingerprint = (keys: string[]) => serverOf(one("s", keys), "s").fingerprint;
  const reference = fingerprint(base);
  const variants = [
    ["command: uvx", "args: [x, y]", "env: { A: '1' }", "timeout: 30"],
    ["command: npx", "args: [y, x]", "env: { A: '1' }", "timeout: 30"],
    ["command: npx", "args: [x, y]", "env: { A: '2' }", "timeout: 30"],
    ["command: npx", "args: [x, y]", "env: { A: '1' }", "timeout: 31"],
    ["command: npx", "args: [x, y]", "env: { A: '1' }", "timeout: '30'"],
    [...base, "enabled: false"],
    [...base, "tools: { exclude: [a] }"],
  ];
  const seen = new Set([reference]);
  for (const variant of variants) {
    const changed = fingerprint(variant);
    assert.notEqual(changed, reference, variant.join("; "));
    seen.add(changed);
  }
  assert.equal(seen.size, variants.length + 1);
});

Deno.test("fingerprint: a rotated secret changes it, and the secret is not in it", () => {
  const keys = ["url: https://x.example", "headers: { Authorization: 'Bearer ${TOKEN}' }"];
  const first = serverOf(one("s", keys, { TOKEN: "secret-one" }), "s").fingerprint;
  const again = serverOf(one("s", keys, { TOKEN: "secret-one" }), "s").fingerprint;
  const rotated = serverOf(one("s", keys, { TOKEN: "secret-two" }), "s").fingerprint;
  assert.equal(first, again);
  assert.notEqual(first, rotated);
  assert.ok(!first.includes("secret-one"));
});

Deno.test("parseMcpServers: reads nothing from the process (context only)", () => {
  // A variable that exists in the real environment is invisible without the lookup.
  const result = one("s", ["command: npx", "env: { P: '${PATH}' }"]);
  assert.equal(serverOf(result, "s").env.P, "${PATH}");
});

Deno.test("parseMcpServers: an empty server name is an error; one agent mcp add would refuse is warned about", () => {
  const result = parse([
    "mcp_servers:",
    '  "": { command: npx }',
    '  "my api/ü": { command: npx }',
    `  ${"x".repeat(65)}: { command: npx }`,
    "  fine.name_2-x: { command: npx }",
  ]);
  assert.deepEqual(result.servers.map((server) => server.name), [
    "my api/ü",
    "x".repeat(65),
    "fine.name_2-x",
  ]);
  assertIssue(
    result,
    { server: "", key: "", severity: "error", line: 2 },
    "a server needs a name",
  );
  assertIssue(
    result,
    { server: "my api/ü", key: "", severity: "warning", line: 3 },
    `the server name "my api/ü" is not 1 to 64 letters, digits, '.', '_' or '-'`,
    "its tools are registered as mcp__my_api____<tool>; rename it",
  );
  assertIssue(
    result,
    { server: "x".repeat(65), key: "", severity: "warning", line: 4 },
    "rename it",
  );
  assert.equal(result.issues.length, 3);
});
