/**
 * `parseInstallSnippet`: the JSON other MCP clients use (as servers' READMEs print it) read as
 * one `mcp_servers` entry, translated, and checked like an install link's entry.
 */
import assert from "node:assert/strict";
import { InstallLinkError } from "../../src/mcp/deeplink.ts";
import { looksLikeJson, parseInstallSnippet } from "../../src/mcp/snippet.ts";

const FILESYSTEM = {
  command: "npx",
  args: ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"],
};

function refused(text: string, problem: string, message: RegExp, name?: string): void {
  assert.throws(
    () => parseInstallSnippet(text, name),
    (error) => {
      assert.ok(error instanceof InstallLinkError, String(error));
      assert.equal(error.problem, problem, error.message);
      assert.match(error.message, message);
      return true;
    },
  );
}

Deno.test("looksLikeJson: an object, or an entry without its braces; never a link", () => {
  assert.ok(looksLikeJson('{"mcpServers": {}}'));
  assert.ok(looksLikeJson('\n  "fetch": {"command": "uvx"}'));
  assert.ok(!looksLikeJson("agent://mcp/install?name=a&config=e30"));
  assert.ok(!looksLikeJson(""));
});

Deno.test("every client's shape gives the same entry, named by its key", () => {
  const shapes: [string, string][] = [
    [JSON.stringify({ mcpServers: { filesystem: FILESYSTEM } }), "mcpServers.filesystem"],
    [JSON.stringify({ servers: { filesystem: FILESYSTEM }, inputs: [] }), "servers.filesystem"],
    [JSON.stringify({ mcp: { servers: { filesystem: FILESYSTEM } } }), "mcp.servers.filesystem"],
    [JSON.stringify({ filesystem: FILESYSTEM }), "filesystem"],
    [`"filesystem": ${JSON.stringify(FILESYSTEM)},`, "filesystem"],
    [JSON.stringify({ name: "filesystem", ...FILESYSTEM }), ""],
  ];
  for (const [text, path] of shapes) {
    const snippet = parseInstallSnippet(text);
    assert.equal(snippet.name, "filesystem", text);
    assert.equal(snippet.path, path, text);
    assert.deepEqual(snippet.entry, FILESYSTEM, text);
    assert.equal(snippet.transport, "stdio");
    assert.deepEqual(snippet.commandLine, ["npx", ...FILESYSTEM.args]);
    assert.deepEqual(snippet.changes, []);
  }
  // An entry without a name takes the caller's (--name).
  assert.equal(parseInstallSnippet(JSON.stringify(FILESYSTEM), "fs").name, "fs");
});

Deno.test("JSONC: comments and trailing commas are read; // inside a string is kept", () => {
  const snippet = parseInstallSnippet(`{
    // VS Code's .vscode/mcp.json
    "servers": {
      /* the remote one */
      "github": {
        "type": "http",
        "url": "https://api.example.com/mcp/", // its endpoint
        "headers": { "X-Path": "a//b /* not a comment */" },
      },
    },
  }`);
  assert.deepEqual(snippet.entry, {
    url: "https://api.example.com/mcp/",
    headers: { "X-Path": "a//b /* not a comment */" },
  });
});

Deno.test("translation: type, serverUrl, disabled and ${input:…} become this client's keys", () => {
  const sse = parseInstallSnippet(
    JSON.stringify({ mcpServers: { old: { type: "sse", url: "https://a.example/sse" } } }),
  );
  assert.deepEqual(sse.entry, { url: "https://a.example/sse", transport: "sse" });
  assert.equal(sse.transport, "sse");
  for (const type of ["http", "streamable-http", "streamableHttp", "STDIO"]) {
    const key = type === "STDIO" ? "command" : "url";
    const value = type === "STDIO" ? "uvx" : "https://a.example/mcp";
    const snippet = parseInstallSnippet(
      JSON.stringify({ mcpServers: { s: { type, [key]: value } } }),
    );
    assert.deepEqual(snippet.entry, { [key]: value }, type);
  }
  const windsurf = parseInstallSnippet(
    JSON.stringify({ mcpServers: { w: { serverUrl: "https://w.example/mcp", disabled: true } } }),
  );
  assert.deepEqual(windsurf.entry, { url: "https://w.example/mcp", enabled: false });
  const enabled = parseInstallSnippet(JSON.stringify({ x: { command: "uvx", disabled: false } }));
  assert.deepEqual(enabled.entry, { command: "uvx" });

  const vscode = parseInstallSnippet(JSON.stringify({
    servers: {
      gh: {
        url: "https://gh.example/mcp",
        headers: { Authorization: "Bearer ${input:github-token}" },
      },
    },
  }));
  assert.deepEqual(vscode.entry.headers, { Authorization: "Bearer ${GITHUB_TOKEN}" });
  assert.deepEqual(vscode.variables, ["GITHUB_TOKEN"]);
  assert.deepEqual(vscode.changes, [
    "${input:github-token} (a VS Code input) is read as the variable ${GITHUB_TOKEN}",
  ]);
});

Deno.test("keys other clients use are left out, each named with what to do instead", () => {
  const snippet = parseInstallSnippet(JSON.stringify({
    mcpServers: {
      fetch: {
        command: "uvx",
        args: ["mcp-server-fetch"],
        cwd: "/srv",
        autoApprove: ["fetch"],
        heders: {},
        timeout: 60,
      },
    },
  }));
  assert.deepEqual(snippet.entry, { command: "uvx", args: ["mcp-server-fetch"], timeout: 60 });
  assert.deepEqual(snippet.changes, [
    "left out `cwd` (the server starts in the directory the agent runs in; give absolute paths " +
    "in args), `autoApprove` (which calls are asked about is set by trust: full or untrusted), " +
    "`heders` (did you mean `headers`?): not keys of a server entry here",
  ]);
});

Deno.test("broken JSON: the line and column of the text as pasted (comments and all) and what was expected, never a quote of it", () => {
  const example = /; it must be a JSON object such as \{"url": "https:\/\/…"\}/;
  const refusedAs = (text: string, problem: string) =>
    refused(text, "json", new RegExp(`^${problem.replace(/[()]/g, "\\$&")}${example.source}`));
  // V8 would quote the text around the error: the token in env.
  refusedAs(
    '{"mcpServers": {"gh": {"command": "npx", "env": {"TOKEN": ghp_SECRET}}}}',
    "the text is not valid JSON (line 1, column 59: expected a value)",
  );
  // Comments and a trailing comma are taken out without moving what follows them.
  refusedAs(
    '{\n  // from the README\n  "gh": {"url": "https://a", /* pinned */ "headers": {"A": b}},\n}',
    "the text is not valid JSON (line 3, column 60: expected a value)",
  );
  refusedAs(
    '/* a\nb */ {"gh": {"url": "https://a",}, "x" 1}',
    "the text is not valid JSON (line 2, column 40: expected a colon after the property name)",
  );
  // An entry pasted without its braces is read with them: the place is said so.
  refusedAs(
    '"gh": {"url": https}',
    "the text with { } around it is not valid JSON (line 1, column 16: expected a value)",
  );
});

Deno.test("refused: no server, several, no name, a bad name, an unknown or contradictory type, broken JSON, an invalid entry", () => {
  refused("{}", "no_server", /^the JSON holds no server/);
  refused('{"mcpServers": {}}', "no_server", /^the JSON's mcpServers holds no server/);
  refused('{"version": 1}', "no_server", /^the JSON holds no MCP server; paste the server's entry/);
  refused(
    JSON.stringify({ mcpServers: { a: FILESYSTEM, b: { url: "https://b.example" } } }),
    "several_servers",
    /^the JSON holds 2 servers \(a, b\); install one at a time/,
  );
  refused(JSON.stringify(FILESYSTEM), "name", /without a name; give it one with --name <name>$/);
  refused(JSON.stringify({ "a b": FILESYSTEM }), "name", /the server name "a b" cannot be used/);
  refused(
    JSON.stringify({ mcpServers: { a: { type: "websocket", url: "wss://a" } } }),
    "invalid_entry",
    /^mcpServers\.a\.type is "websocket"; a server here is a local command/,
  );
  refused(
    JSON.stringify({ mcpServers: { a: { type: "stdio", serverUrl: "https://a" } } }),
    "type_contradicts",
    /^mcpServers\.a\.type is "stdio" \(a local command\) but mcpServers\.a\.serverUrl is set .*remove "type" .* or remove "serverUrl"/,
  );
  refused(
    JSON.stringify({ a: { type: "sse", command: "x" } }),
    "type_contradicts",
    /^a\.type is "sse" \(a remote server\) but a\.command is set and no url/,
  );
  refused('{"mcpServers": {"a": {"command": "x"}}', "json", /^the text is not valid JSON/);
  refused('{"a": {"command": "x"}, "a": {}}', "duplicate_key", /the key "a" more than once/);
  refused(
    JSON.stringify({ mcpServers: { a: { command: "x", url: "https://a" } } }),
    "url_and_command",
    /^mcpServers\.a has both url and command/,
  );
  refused(
    JSON.stringify({ mcpServers: { a: { command: "x", timeout: "soon" } } }),
    "invalid_entry",
    /^mcpServers\.a is not a valid server entry: timeout: timeout must be a number/,
  );
  refused(
    JSON.stringify({ command: 5 }),
    "type",
    /^the entry\.command must be a string/,
    "x",
  );
  refused(`{"a": {"command": "${"x".repeat(33_000)}"}}`, "too_large", /over the limit of 32768/);
});
