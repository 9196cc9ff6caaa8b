/**
 * A secret from `.env` substituted into an MCP server's `url` or headers is never shown: every
 * message about the server (config issues, connect failures, the CLI's output, the log) names
 * the placeholder it came from instead.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ConfigSource } from "../../src/home/config.ts";
import { parseMcpServers } from "../../src/mcp/config.ts";
import { type McpEvent, McpManager } from "../../src/mcp/manager.ts";
import { variableSubstitutions } from "../../src/mcp/substitute.ts";
import { parseOneJson, spawnCli, tempHome } from "../cli/_helpers.ts";
import { freePort } from "../cli/_mcp_helpers.ts";
import { startFakeModel } from "../fixtures/fake_model.ts";

/** Has a space and a `+`, so a URL holds it percent-encoded: both forms must be masked. */
const SECRET = "s3cret tok+en";
const ENCODED = "s3cret%20tok+en";

function parse(body: string, variables: Record<string, string>) {
  return parseMcpServers(
    ConfigSource.parse("/h/config.yaml", `mcp_servers:\n${body.replace(/^/gm, "  ")}\n`),
    {
      lookup: (name) => variables[name],
      userHome: "/home/test",
      workspaceFolder: "/work",
      pathSeparator: "/",
    },
  );
}

function assertMasked(text: string, placeholder = "${API_TOKEN}"): void {
  assert.ok(text.includes(placeholder), `no ${placeholder} in: ${text}`);
  assert.ok(!text.includes("s3cret"), `the secret shows in: ${text}`);
}

async function failedState(body: string, variables: Record<string, string>) {
  const { servers, issues } = parse(body, variables);
  assert.deepEqual(issues, []);
  const events: McpEvent[] = [];
  const manager = new McpManager({ reconnect: false, onEvent: (event) => events.push(event) });
  try {
    await manager.start(servers);
    const [state] = manager.servers();
    assert.equal(state.status, "failed");
    return { error: state.error ?? "", events };
  } finally {
    await manager.shutdown();
  }
}

Deno.test("substitutions: the values of variables only, longest first, short ones left", () => {
  const context = {
    lookup: (name: string) =>
      ({ LONG: "a-long-secret", SHORT: "abcd", TINY: "on", EMPTY: "" } as Record<string, string>)[
        name
      ],
    userHome: "/home/test",
    workspaceFolder: "/work",
    pathSeparator: "/",
  };
  assert.deepEqual(
    variableSubstitutions({
      url: "https://x/${SHORT}/${ env:LONG }?v=${TINY}&e=${EMPTY}&u=${UNSET}",
      args: ["${userHome}", "${LONG}"],
      headers: { "${SHORT}": "x" },
    }, context),
    [
      { value: "a-long-secret", placeholder: "${ env:LONG }" },
      { value: "abcd", placeholder: "${SHORT}" },
    ],
  );
});

Deno.test("config issues name the placeholder, not the value, also percent-encoded", () => {
  const { issues } = parse(
    [
      "a:",
      '  url: "ftp://x/?t=${API_TOKEN}"',
      "b:",
      '  url: "http://x/mcp"',
      '  headers: { Authorization: "Bearer ${API_TOKEN}", X-Line: "${LINES}" }',
    ].join("\n"),
    { API_TOKEN: SECRET, LINES: "first-secret-line\nsecond" },
  );
  assert.equal(issues.length, 2, JSON.stringify(issues));
  assert.equal(issues[0].key, "url");
  assertMasked(issues[0].message);
  assert.equal(issues[1].key, "headers.X-Line");
  assert.match(issues[1].message, /holds a line break/);
  assert.ok(!issues[1].message.includes("first-secret-line"), issues[1].message);
});

Deno.test("header names and values HTTP cannot carry are config errors naming the header", () => {
  const { servers, issues } = parse(
    [
      "a:",
      '  url: "http://x/mcp"',
      '  headers: { "Bad Name": v, "X-Nul": "a\\u0000b", X-Euro: "5 €", X-Latin: "café" }',
    ].join("\n"),
    {},
  );
  assert.deepEqual(servers, []);
  assert.deepEqual(
    issues.map((issue) => [issue.key, issue.severity]),
    [["headers.Bad Name", "error"], ["headers.X-Nul", "error"], ["headers.X-Euro", "error"]],
  );
  assert.match(issues[0].message, /"Bad Name" is not a valid HTTP header name/);
  assert.match(issues[1].message, /NUL/);
  assert.match(issues[2].message, /holds "€".*only Latin-1/);
});

Deno.test("a refused connect names the placeholder in the error and the events", async () => {
  const url = `http://127.0.0.1:${freePort()}/mcp?token=\${API_TOKEN}`;
  const { error, events } = await failedState(
    `leak:\n  url: "${url}"\n  headers: { Authorization: "Bearer \${API_TOKEN}" }`,
    { API_TOKEN: SECRET },
  );
  assert.match(error, /cannot reach/);
  assertMasked(error);
  assert.ok(!error.includes(ENCODED), error);
  const failed = events.filter((event) => event.type === "failed");
  assert.equal(failed.length, 1);
  for (const event of failed) assertMasked(JSON.stringify(event));
});

Deno.test("an HTML page at the url: the preflight error names the placeholder", async () => {
  await using page = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () =>
      new Response("<html><body>login</body></html>", { headers: { "content-type": "text/html" } }),
  );
  const { error } = await failedState(
    `site:\n  url: "http://127.0.0.1:${page.addr.port}/mcp?token=\${API_TOKEN}"`,
    { API_TOKEN: SECRET },
  );
  assert.match(error, /text\/html/);
  assertMasked(error);
});

Deno.test("agent mcp list --json and agent run: neither the output nor the log shows the secret", async () => {
  await using home = await tempHome();
  await using model = await startFakeModel({ fallback: { content: "done" } });
  Deno.writeTextFileSync(join(home.home, ".env"), `API_TOKEN=${SECRET}\n`);
  Deno.writeTextFileSync(
    join(home.home, "config.yaml"),
    [
      `model: { default: test-model, base_url: "${model.baseUrl}" }`,
      "mcp_servers:",
      `  leak: { url: "http://127.0.0.1:${freePort()}/mcp?token=\${API_TOKEN}" }`,
    ].join("\n"),
  );

  const list = await spawnCli(home.home, ["mcp", "list", "--json"]);
  assert.equal(list.code, 0, list.stderr);
  // deno-lint-ignore no-explicit-any
  const [server] = (parseOneJson(list.stdout) as any).servers;
  assert.equal(server.status, "failed");
  assertMasked(server.error);
  assert.ok(!list.stderr.includes("s3cret"), list.stderr);

  const run = await spawnCli(home.home, ["run", "hi", "--json"]);
  assert.equal(run.code, 0, run.stderr);
  // deno-lint-ignore no-explicit-any
  const { answer, warnings } = parseOneJson(run.stdout) as any;
  assert.equal(answer, "done");
  assertMasked(warnings.join("\n"));
  const log = Deno.readTextFileSync(join(home.home, "logs", "gateway.log"));
  assertMasked(log);
  assert.ok(!log.includes(ENCODED), log);
});
