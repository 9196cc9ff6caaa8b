/**
 * Messages about `${...}` placeholders that stay as written: an unset variable in the host of
 * `url` is a validation error like one in the port, and shell-style `${VAR:-default}` defaults
 * are named as unsupported instead of as an impossible variable to set.
 */
import assert from "node:assert/strict";
import { ConfigSource } from "../../src/home/config.ts";
import { type McpServersResult, parseMcpServers } from "../../src/mcp/config.ts";

function parse(keys: string[], vars: Record<string, string> = {}): McpServersResult {
  const text = ["mcp_servers:", "  api:", ...keys.map((key) => `    ${key}`)].join("\n") + "\n";
  return parseMcpServers(ConfigSource.parse("/h/config.yaml", text), {
    lookup: (name) => Object.hasOwn(vars, name) ? vars[name] : undefined,
    userHome: "/home/ada",
    workspaceFolder: "/work",
    pathSeparator: "/",
  });
}

Deno.test("an unset ${VAR} in the host of url is the same validation error as one in the port", () => {
  const cases = [
    ["http://${MCP_HOST}/mcp", "${MCP_HOST}", "MCP_HOST"],
    ["https://${env:MCP_HOST}:8443/mcp", "${env:MCP_HOST}", "MCP_HOST"],
    ["http://${SUB}.example.com/mcp", "${SUB}", "SUB"],
    ["http://127.0.0.1:${PORT_X}/mcp", "${PORT_X}", "PORT_X"],
  ];
  for (const [url, placeholder, name] of cases) {
    const result = parse([`url: "${url}"`]);
    assert.deepEqual(result.servers, [], url);
    assert.deepEqual(result.issues, [{
      server: "api",
      key: "url",
      severity: "error",
      line: 3,
      message: `url must be an http:// or https:// URL, got ${JSON.stringify(url)} (it still ` +
        `contains ${placeholder}: set ${name} in <home>/.env or the process environment)`,
    }]);
  }
  // Set, the same entries are fine.
  const set = parse(['url: "http://${MCP_HOST}/mcp"'], { MCP_HOST: "127.0.0.1:3002" });
  assert.equal(set.servers[0]?.url, "http://127.0.0.1:3002/mcp");
  assert.deepEqual(set.issues, []);
});

Deno.test("${VAR:-default} is reported as unsupported shell syntax, naming the real variable", () => {
  const result = parse([
    "command: server",
    "env:",
    '  PRECISION: "${PREC:-default}"',
    '  LEVEL: "${ env:LOG_LEVEL:=info }"',
    '  PLAIN: "${UNSET_ONE}"',
  ]);
  assert.equal(result.servers.length, 1);
  assert.deepEqual(result.issues.map((issue) => [issue.key, issue.severity, issue.message]), [
    [
      "env.PRECISION",
      "warning",
      "${PREC:-default}: `${VAR:-default}` defaults are not supported, so it is kept as written; " +
      "write the value itself, or write ${PREC} and set PREC in <home>/.env",
    ],
    [
      "env.LEVEL",
      "warning",
      "${ env:LOG_LEVEL:=info }: `${VAR:=default}` defaults are not supported, so it is kept as " +
      "written; write the value itself, or write ${LOG_LEVEL} and set LOG_LEVEL in <home>/.env",
    ],
    [
      "env.PLAIN",
      "warning",
      "${UNSET_ONE} is not set (or empty) in <home>/.env or the process environment, so it is " +
      "kept as written; add it to <home>/.env",
    ],
  ]);
  // In the url it is an error, with the same advice.
  const url = parse(['url: "http://${HOST:-localhost}/mcp"']);
  assert.equal(url.issues.length, 1);
  assert.match(
    url.issues[0].message,
    /\(it still contains \$\{HOST:-localhost\}: `\$\{VAR:-default\}` defaults are not supported.*write \$\{HOST\} and set HOST in <home>\/\.env\)$/,
  );
});
