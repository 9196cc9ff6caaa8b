/**
 * `agent mcp` fixes from a QA pass: `add` refuses what it cannot write faithfully (a bad URL, an
 * `mcp_servers` that is not a mapping, options of the other server kind), `test` and `call` show
 * the config warnings, `ls` lists, a broken `mcp_servers` is a usage error, and a stdio server
 * that prints junk or crashes at start says so.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { GARBAGE_STDIO_FIXTURE, stdioCommand } from "../fixtures/mcp/spawn.ts";
import { cli, cliJson, type CliResult, parseOneJson, spawnCli, tempHome } from "./_helpers.ts";
import { denoEnv, stdioServerLines, writeConfig } from "./_mcp_helpers.ts";

function expectCode(result: CliResult, code: number): void {
  assert.equal(result.code, code, `exit code\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
}

/** Reads a file, or `undefined` when it does not exist. */
function readIfExists(file: string): string | undefined {
  try {
    return Deno.readTextFileSync(file);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
}

Deno.test("mcp add: a url that is not http(s) exits 2 naming --url, and writes nothing", async () => {
  await using home = await tempHome();
  for (const url of ["notaurl", "ftp://a"]) {
    const result = await cli(home.home, ["mcp", "add", "x", "--url", url]);
    expectCode(result, 2);
    assert.match(
      result.stderr,
      /not adding MCP server 'x': --url: mcp_servers\.x\.url: url must be/,
    );
    assert.match(result.stderr, /http:\/\/ or https:\/\//);
    assert.match(result.stderr, /nothing was written/);
    assert.equal(result.stdout, "");
    assert.equal(readIfExists(home.config), undefined, "no config.yaml was created");
  }
  const doc = await cliJson(home.home, ["mcp", "add", "x", "--url", "ftp://a", "--json"], 2);
  assert.match(doc.error.message, /--url: mcp_servers\.x\.url/);
  assert.equal(readIfExists(home.config), undefined);
});

Deno.test("mcp add: a header HTTP cannot carry exits 2 naming --header; nothing written", async () => {
  await using home = await tempHome();
  for (
    const [header, problem] of [
      ["Bad Name=v", /headers\.Bad Name: "Bad Name" is not a valid HTTP header name/],
      ["X-Two=first\nsecond", /headers\.X-Two: the value of header X-Two holds a line break/],
    ] as const
  ) {
    const result = await cli(home.home, [
      "mcp",
      "add",
      "x",
      "--url",
      "http://a/mcp",
      "--header",
      header,
    ]);
    expectCode(result, 2);
    assert.match(result.stderr, /not adding MCP server 'x': --header: mcp_servers\.x\./);
    assert.match(result.stderr, problem);
    assert.ok(!result.stderr.includes("second"), "the value is not quoted");
    assert.equal(readIfExists(home.config), undefined, "no config.yaml was created");
  }
});

Deno.test("mcp add: an mcp_servers that is not a mapping exits 2 naming file, line and fix; nothing written", async () => {
  await using home = await tempHome();
  for (const value of ["5 # five", "[a, b]"]) {
    const text = `# mine\nmodel:\n  default: gpt-4o\nmcp_servers: ${value}\n`;
    writeConfig(home.home, text);
    const result = await cli(home.home, ["mcp", "add", "foo", "--command", "echo"]);
    expectCode(result, 2);
    assert.match(
      result.stderr,
      new RegExp(
        `${home.config}:4: mcp_servers must be a mapping of server names to entries, got (5|a list)`,
      ),
    );
    assert.match(result.stderr, /replace it with `mcp_servers:`/);
    assert.equal(Deno.readTextFileSync(home.config), text, `config.yaml for ${value} unchanged`);
  }
});

Deno.test("mcp add: options of the other server kind exit 2 naming them; nothing written", async () => {
  await using home = await tempHome();
  const stdio = await cli(home.home, [
    "mcp",
    "add",
    "a",
    "--command",
    "echo",
    "--header",
    "X=1",
    "--transport",
    "sse",
  ]);
  expectCode(stdio, 2);
  assert.match(stdio.stderr, /--header and --transport apply to remote servers \(--url\) only/);
  const http = await cli(home.home, [
    "mcp",
    "add",
    "b",
    "--url",
    "https://example.com/mcp",
    "--env",
    "A=1",
    "--arg",
    "foo",
  ]);
  expectCode(http, 2);
  assert.match(http.stderr, /--arg and --env apply to local servers \(--command\) only/);
  assert.equal(readIfExists(home.config), undefined);
});

/** A stdio fixture entry with a `header:` typo and an unset `${MCP_TOKEN}`. */
function warnedConfig(home: string, command: { command: string; args: string[] }): string {
  return writeConfig(home, [
    "mcp_servers:",
    ...stdioServerLines("warned", command, [
      "env: { TOKEN: '${MCP_TOKEN}' }",
      "header: { X: '1' }",
    ]),
  ]);
}

Deno.test("mcp test and mcp call show the entry's config warnings, also when they fail", async () => {
  await using home = await tempHome();
  const config = warnedConfig(home.home, stdioCommand(["--tools", "echo"]));
  const env = denoEnv();
  const typo = new RegExp(`warning: ${config}:6: mcp_servers\\.warned\\.header: .*did you mean`);

  const tested = await cli(home.home, ["mcp", "test", "warned"], { env });
  expectCode(tested, 0);
  assert.match(tested.stderr, typo);
  assert.match(tested.stderr, /MCP_TOKEN/);
  const doc = await cliJson(home.home, ["mcp", "test", "warned", "--json"], 0, { env });
  assert.ok(doc.warnings.some((w: string) => /header: .*did you mean/.test(w)), doc.warnings);
  assert.ok(doc.warnings.some((w: string) => /MCP_TOKEN/.test(w)), doc.warnings);

  warnedConfig(home.home, { command: "/nonexistent/agent-test-server", args: [] });
  const failedTest = await cli(home.home, ["mcp", "test", "warned"], { env });
  expectCode(failedTest, 1);
  assert.match(failedTest.stderr, typo);
  const failedDoc = await cliJson(home.home, ["mcp", "test", "warned", "--json"], 1, { env });
  assert.ok(failedDoc.warnings.some((w: string) => /MCP_TOKEN/.test(w)), failedDoc.warnings);
  const failedCall = await cli(home.home, ["mcp", "call", "warned", "echo"], { env });
  expectCode(failedCall, 1);
  assert.match(failedCall.stderr, typo);
  assert.match(failedCall.stderr, /MCP_TOKEN/);
  assert.match(failedCall.stderr, /cannot start command/);
});

Deno.test("mcp test, tools and list --json: each warning once on stderr, as without --json, and in warnings", async () => {
  await using home = await tempHome();
  writeConfig(home.home, [
    "modle: x",
    "mcp_servers:",
    ...stdioServerLines("warned", stdioCommand(["--tools", "echo"]), [
      "header: { X: '1' }",
      "tools: { include: [echo, nosuch] }",
    ]),
  ]);
  const env = denoEnv();
  const lines = (warnings: string[]) => warnings.map((warning) => `warning: ${warning}\n`).join("");
  for (
    const argv of [["test", "warned"], ["tools", "warned"], ["tools"], ["list"]]
  ) {
    const label = `agent mcp ${argv.join(" ")} --json`;
    const json = await cli(home.home, ["mcp", ...argv, "--json"], { env });
    expectCode(json, 0);
    const warnings = parseOneJson(json.stdout).warnings as string[];
    assert.match(warnings[0], /:1: modle: unknown key/, label);
    assert.match(warnings[1], /mcp_servers\.warned\.header: .*did you mean/, label);
    // The connection's warning, also of `list` (on the server's row too), as `tools` says it.
    assert.match(warnings[2], /include entry 'nosuch' matches none/, label);
    assert.equal(warnings.length, 3, `${label}: ${warnings}`);
    assert.equal(json.stderr, lines(warnings), label);
    // `mcp test` without --json shows the connection's warnings in its report (stdout).
    if (argv[0] === "test") continue;
    const text = await cli(home.home, ["mcp", ...argv], { env });
    expectCode(text, 0);
    assert.equal(text.stderr, json.stderr, `${label}: as without --json`);
  }
});

Deno.test("mcp ls is mcp list", async () => {
  await using home = await tempHome();
  const listed = await cli(home.home, ["mcp", "ls"]);
  expectCode(listed, 0);
  assert.match(listed.stdout, /^No MCP servers configured/);
});

Deno.test("mcp list with an mcp_servers list exits 2 naming config.yaml and the line", async () => {
  await using home = await tempHome();
  writeConfig(home.home, "model:\n  default: gpt-4o\nmcp_servers: [a, b]\n");
  const listed = await cli(home.home, ["mcp", "list"]);
  expectCode(listed, 2);
  assert.equal(listed.stdout, "");
  assert.match(
    listed.stderr,
    new RegExp(`${home.config}:3: mcp_servers: mcp_servers must be a mapping of server names`),
  );
  const doc = await cliJson(home.home, ["mcp", "list", "--json"], 2);
  assert.match(doc.error.message, /mcp_servers must be a mapping/);
  expectCode(await cli(home.home, ["mcp", "tools"]), 2);
});

Deno.test("a stdio server printing junk or crashing at start says so: first junk line, exit code, stderr", async () => {
  await using home = await tempHome();
  const crasher = join(home.home, "crash.ts");
  Deno.writeTextFileSync(
    crasher,
    'console.error("starting up");\nconsole.error("Error: cannot open /nowhere/db");\nDeno.exit(3);\n',
  );
  writeConfig(home.home, [
    "mcp_servers:",
    ...stdioServerLines("junk", stdioCommand([], GARBAGE_STDIO_FIXTURE), ["connect_timeout: 2"]),
    ...stdioServerLines("crash", { command: Deno.execPath(), args: ["run", "--quiet", crasher] }),
  ]);
  const env = denoEnv();
  const junkTest = await cli(home.home, ["mcp", "test", "junk"], { env });
  expectCode(junkTest, 1);
  assert.match(
    junkTest.stderr,
    /MCP server 'junk': the connection closed during the handshake: the server printed JSON that is not JSON-RPC on stdout before any MCP message: "{\\"hello\\":\\"world\\"}"/,
  );

  const crashTest = await cli(home.home, ["mcp", "test", "crash"], { env });
  expectCode(crashTest, 1);
  assert.match(crashTest.stderr, /MCP server 'crash': .*the process exited with code 3/);
  assert.match(
    crashTest.stderr,
    /its last stderr lines: "starting up" \| "Error: cannot open \/nowhere\/db"/,
  );
  const log = Deno.readTextFileSync(join(home.home, "logs", "mcp-stderr.log"));
  assert.match(log, /\[crash\] Error: cannot open \/nowhere\/db/);
});

/** The object keys of a JSON value, at every depth, that are not snake_case. */
function camelKeys(value: unknown, path = ""): string[] {
  if (Array.isArray(value)) return value.flatMap((item, i) => camelKeys(item, `${path}[${i}]`));
  if (typeof value !== "object" || value === null) return [];
  return Object.entries(value).flatMap(([key, item]) => [
    ...(/^[a-z0-9_]+$/.test(key) ? [] : [`${path}.${key}`]),
    ...camelKeys(item, `${path}.${key}`),
  ]);
}

Deno.test("mcp list --json and mcp test --json use snake_case keys, like every other command", async () => {
  await using home = await tempHome();
  writeConfig(home.home, [
    "mcp_servers:",
    ...stdioServerLines("fx", stdioCommand(["--tools", "echo"])),
    "  bad:",
    "    comand: echo",
  ]);
  const env = denoEnv();
  const listed = await cliJson(home.home, ["mcp", "list", "--json"], 0, { env });
  assert.deepEqual(camelKeys(listed), []);
  const [fx, bad] = listed.servers;
  assert.equal(fx.status, "connected");
  assert.equal(typeof fx.protocol_version, "string");
  assert.equal(fx.server_info.name, "agent-fixture");
  assert.equal(typeof fx.connect_ms, "number");
  assert.equal(fx.tool_count, 1);
  assert.equal(bad.status, "invalid");
  assert.equal(bad.tool_count, 0);

  const tested = await cliJson(home.home, ["mcp", "test", "fx", "--json"], 0, { env });
  assert.deepEqual(camelKeys(tested), []);
  assert.equal(tested.ok, true);
  assert.equal(tested.protocol_version, fx.protocol_version);
  assert.equal(tested.server_info.name, "agent-fixture");
  assert.equal(tested.tool_count, 1);
  assert.ok(tested.total_ms >= tested.connect_ms, JSON.stringify(tested));
  assert.equal(tested.tools[0].original_name, "echo");

  // `mcp call --json` prints the MCP CallToolResult as the protocol names it, and says so.
  const help = await cli(home.home, ["mcp", "call", "--help"]);
  assert.match(help.stdout, /CallToolResult/);
  assert.match(help.stdout, /isError, structuredContent/);
});

Deno.test("mcp test and mcp call show an invalid entry's warnings (a misspelled command) before its error", async () => {
  await using home = await tempHome();
  const config = writeConfig(home.home, "mcp_servers:\n  fx:\n    comand: echo\n");
  const hint = new RegExp(
    `warning: ${config}:3: mcp_servers\\.fx\\.comand: unknown key \`comand\` is ignored; did you mean \`command\`\\?`,
  );
  for (
    const argv of [
      ["mcp", "test", "fx"],
      ["mcp", "test", "fx", "--json"],
      ["mcp", "call", "fx", "echo"],
      ["mcp", "call", "fx", "echo", "--json"],
    ]
  ) {
    const result = await cli(home.home, argv);
    expectCode(result, 2);
    assert.match(result.stderr, hint, argv.join(" "));
    if (argv.includes("--json")) {
      // The warnings go to stderr; stdout stays the one error document.
      const doc = parseOneJson(result.stdout) as { error: { message: string; exit_code: number } };
      assert.match(
        doc.error.message,
        /mcp_servers\.fx: the server has neither `command` nor `url`/,
      );
      assert.equal(doc.error.exit_code, 2);
    } else {
      assert.match(result.stderr, /agent: .*the server has neither `command` nor `url`/);
      assert.equal(result.stdout, "");
    }
  }
});

Deno.test("mcp add: an unknown --transport exits 2 naming the valid values; nothing written", async () => {
  await using home = await tempHome();
  const argv = ["mcp", "add", "t2", "--url", "https://x.example", "--transport", "bogus"];
  const result = await cli(home.home, argv);
  expectCode(result, 2);
  assert.match(
    result.stderr,
    /not adding MCP server 't2': --transport: mcp_servers\.t2\.transport: unknown transport "bogus"; use http \(Streamable HTTP, the default\) or sse/,
  );
  assert.match(result.stderr, /nothing was written/);
  assert.equal(result.stdout, "");
  assert.equal(readIfExists(home.config), undefined, "no config.yaml was created");
  const doc = await cliJson(home.home, [...argv, "--json"], 2);
  assert.match(doc.error.message, /unknown transport "bogus"; use http .* or sse/);
  assert.equal(readIfExists(home.config), undefined);

  // The values config.yaml accepts are still written as given.
  for (const [name, transport] of [["s", "sse"], ["h", "http"], ["sh", "streamable-http"]]) {
    const added = await cli(home.home, [
      "mcp",
      "add",
      name,
      "--url",
      "https://x.example",
      "--transport",
      transport,
    ]);
    expectCode(added, 0);
    assert.equal(added.stderr, "");
  }
  assert.ok(
    Deno.readTextFileSync(home.config).includes(
      "  s:\n    url: https://x.example\n    transport: sse\n",
    ),
  );
});

Deno.test("mcp remove of an unknown server exits 2, listing the configured names; nothing changed", async () => {
  await using home = await tempHome();
  const text = "mcp_servers:\n  a:\n    command: echo\n  broken:\n    comand: echo\n";
  writeConfig(home.home, text);
  const removed = await cli(home.home, ["mcp", "remove", "nope"]);
  expectCode(removed, 2);
  assert.equal(
    removed.stderr,
    `agent: no MCP server 'nope' in ${home.config} (configured: a, broken (invalid))\n`,
  );
  const doc = await cliJson(home.home, ["mcp", "rm", "nope", "--json"], 2);
  assert.equal(doc.error.exit_code, 2);
  assert.match(
    doc.error.message,
    /^no MCP server 'nope' in .* \(configured: a, broken \(invalid\)\)$/,
  );
  assert.equal(Deno.readTextFileSync(home.config), text);

  // The same message as the commands that connect.
  const tested = await cli(home.home, ["mcp", "test", "nope"]);
  expectCode(tested, 2);
  assert.match(
    tested.stderr,
    new RegExp(`no MCP server 'nope' in ${home.config} \\(configured: a, broken \\(invalid\\)\\)`),
  );

  // A fresh home has no names to list.
  await using fresh = await tempHome();
  const none = await cli(fresh.home, ["mcp", "remove", "nope"]);
  expectCode(none, 2);
  assert.equal(none.stderr, `agent: no MCP server 'nope' in ${fresh.config}\n`);
});

Deno.test("mcp test: a relative command that does not exist names the folder it was looked up in, the key and the fix", async () => {
  await using home = await tempHome();
  const started = await Deno.makeTempDir({ prefix: "agent-cwd-" });
  try {
    const config = writeConfig(home.home, "mcp_servers:\n  loc:\n    command: ./server.sh\n");
    const result = await spawnCli(home.home, ["mcp", "test", "loc"], { cwd: started });
    expectCode(result, 1);
    assert.match(
      result.stdout + result.stderr,
      new RegExp(
        escapeRegExp(
          `MCP server 'loc': cannot start command './server.sh': ${
            join(started, "server.sh")
          } does not exist (a relative command is looked up from the folder the agent was ` +
            `started in, ${started}). Fix: in ${config}, set mcp_servers.loc.command to the ` +
            "executable's absolute path",
        ),
      ),
    );
  } finally {
    await Deno.remove(started, { recursive: true });
  }
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
