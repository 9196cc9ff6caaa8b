/** The `oauth` mapping of an `auth: oauth` server, parsed into typed settings. */
import assert from "node:assert/strict";
import { ConfigSource } from "../../../src/home/config.ts";
import { type McpServersResult, parseMcpServers } from "../../../src/mcp/config.ts";
import { DEFAULT_CLIENT_METADATA_URL } from "../../../src/mcp/oauth/mod.ts";

function parse(lines: string[], lookup: (name: string) => string | undefined = () => undefined) {
  const text = ["mcp_servers:", "  api:", ...lines.map((line) => `    ${line}`)].join("\n");
  return parseMcpServers(ConfigSource.parse("/h/config.yaml", text), {
    lookup,
    userHome: "/home/ada",
    workspaceFolder: "/work",
    pathSeparator: "/",
  });
}

function issueAt(result: McpServersResult, key: string) {
  return result.issues.find((issue) => issue.key === key);
}

Deno.test("auth: oauth without an oauth mapping gets the defaults", () => {
  const result = parse(["url: https://mcp.example.com/mcp", "auth: oauth"]);
  assert.deepEqual(result.issues, []);
  assert.deepEqual(result.servers[0].oauth, {
    clientMetadataUrl: DEFAULT_CLIENT_METADATA_URL,
    cimd: true,
  });
});

Deno.test("every oauth key is typed", () => {
  const result = parse([
    "url: https://mcp.example.com/mcp",
    "auth: oauth",
    "oauth:",
    "  client_metadata_url: https://me.example.com/oauth/client.json",
    "  cimd: 'no'",
    "  user_agent: ' my-agent/1.0 '",
    "  client_id: ${CLIENT_ID}",
    "  client_secret: s3cret",
    "  client_name: My agent",
    "  token_endpoint_auth_method: client_secret_basic",
    "  redirect_uri: http://localhost:8765/oauth/callback",
  ], (name) => name === "CLIENT_ID" ? "the-id" : undefined);
  assert.deepEqual(result.issues, []);
  assert.deepEqual(result.servers[0].oauth, {
    clientMetadataUrl: "https://me.example.com/oauth/client.json",
    cimd: false,
    userAgent: "my-agent/1.0",
    clientId: "the-id",
    clientSecret: "s3cret",
    clientName: "My agent",
    tokenEndpointAuthMethod: "client_secret_basic",
    redirectUri: "http://localhost:8765/oauth/callback",
  });
  const port = parse(["url: https://x.example", "auth: oauth", "oauth: { redirect_port: '8123' }"]);
  assert.equal(port.servers[0].oauth?.redirectPort, 8123);
});

Deno.test("an empty or null user_agent is ignored", () => {
  for (const value of ["''", "'   '", "null", ""]) {
    const result = parse([
      "url: https://x.example",
      "auth: oauth",
      `oauth: { user_agent: ${value} }`,
    ]);
    assert.deepEqual(result.issues, [], value);
    assert.equal(result.servers[0].oauth?.userAgent, undefined, value);
  }
});

Deno.test("an unusable client_metadata_url warns, names the key, and means DCR", () => {
  const result = parse([
    "url: https://x.example",
    "auth: oauth",
    "oauth: { client_metadata_url: 'https://me.example.com/a/../client.json' }",
  ]);
  const issue = issueAt(result, "oauth.client_metadata_url")!;
  assert.equal(issue.severity, "warning");
  assert.equal(issue.line, 5);
  assert.match(issue.message, /\. or \.\. path segments/);
  assert.match(issue.message, /dynamic client registration is used instead/);
  assert.equal(
    result.servers[0].oauth?.clientMetadataUrlProblem,
    "must not contain . or .. path segments",
  );
});

Deno.test("each bad oauth value is an error naming its key; the server is dropped", () => {
  const cases: [string, string, RegExp][] = [
    ["cimd: maybe", "oauth.cimd", /oauth\.cimd must be true or false/],
    ["user_agent: [a]", "oauth.user_agent", /oauth\.user_agent must be a string/],
    ["client_id: ''", "oauth.client_id", /oauth\.client_id must be a non-empty string/],
    ["client_metadata_url: 5", "oauth.client_metadata_url", /must be a non-empty string/],
    [
      "token_endpoint_auth_method: private_key_jwt",
      "oauth.token_endpoint_auth_method",
      /must be one of none, client_secret_basic, client_secret_post/,
    ],
    ["redirect_uri: 'https://example.com/cb'", "oauth.redirect_uri", /http:\/\/ loopback/],
    ["redirect_uri: 'http://10.0.0.1:80/cb'", "oauth.redirect_uri", /127\.0\.0\.1 or localhost/],
    ["redirect_uri: 'http://127.0.0.1/cb'", "oauth.redirect_uri", /must name its port/],
    ["redirect_port: 0", "oauth.redirect_port", /port number from 1 to 65535/],
    ["redirect_port: 70000", "oauth.redirect_port", /port number from 1 to 65535/],
    ["redirect_port: 1.5", "oauth.redirect_port", /port number from 1 to 65535/],
  ];
  for (const [line, key, message] of cases) {
    const result = parse(["url: https://x.example", "auth: oauth", "oauth:", `  ${line}`]);
    const issue = issueAt(result, key);
    assert.ok(issue, `${line}: no issue at ${key} (${JSON.stringify(result.issues)})`);
    assert.equal(issue.severity, "error", line);
    assert.equal(issue.line, 6, line);
    assert.match(issue.message, message, line);
    assert.deepEqual(result.servers, [], line);
  }
});

Deno.test("unknown oauth keys warn with the closest valid key", () => {
  const result = parse([
    "url: https://x.example",
    "auth: oauth",
    "oauth: { user_agnet: x, cimd: true }",
  ]);
  const issue = issueAt(result, "oauth.user_agnet")!;
  assert.equal(issue.severity, "warning");
  assert.match(issue.message, /did you mean `user_agent`\?/);
});

Deno.test("client_secret without client_id is ignored with a warning; redirect_port loses to redirect_uri", () => {
  const result = parse([
    "url: https://x.example",
    "auth: oauth",
    "oauth: { client_secret: s, redirect_uri: 'http://127.0.0.1:9000/callback', redirect_port: 9001 }",
  ]);
  assert.equal(issueAt(result, "oauth.client_secret")?.severity, "warning");
  assert.equal(issueAt(result, "oauth.redirect_port")?.severity, "warning");
  assert.equal(result.servers[0].oauth?.clientSecret, undefined);
  assert.equal(result.servers[0].oauth?.redirectPort, undefined);
  assert.equal(result.servers[0].oauth?.redirectUri, "http://127.0.0.1:9000/callback");
});

Deno.test("without auth: oauth there are no oauth settings", () => {
  const result = parse(["url: https://x.example", "oauth: { cimd: false }"]);
  assert.equal(result.servers[0].oauth, undefined);
  assert.equal(issueAt(result, "oauth")?.severity, "warning");
});

Deno.test("a static Authorization header with auth: oauth warns that the token replaces it", () => {
  for (const name of ["Authorization", "authorization"]) {
    const result = parse([
      "url: https://x.example/mcp",
      "auth: oauth",
      `headers: { ${name}: "Bearer static", X-Team: t }`,
    ]);
    assert.deepEqual(
      result.issues.map((issue) => [issue.severity, issue.key, issue.message]),
      [[
        "warning",
        `headers.${name}`,
        `headers.${name} and auth: oauth are both set; once logged in, the OAuth access token ` +
        `is the Authorization header and this one is not sent. Remove headers.${name} to use ` +
        "OAuth, or auth: oauth to use the static token",
      ]],
    );
    assert.equal(result.servers[0].headers[name], "Bearer static");
  }
  assert.deepEqual(
    parse(["url: https://x.example/mcp", 'headers: { Authorization: "Bearer static" }']).issues,
    [],
  );
});
