/**
 * `agent mcp list|test|tools|call|add|remove` in-process against a temp `<home>` whose
 * config.yaml lists fixture servers, and once end to end as real subprocesses against the
 * reference server (`@modelcontextprotocol/server-everything`) over stdio and Streamable HTTP.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { type HttpFixture, startHttpFixture, stdioCommand } from "../fixtures/mcp/spawn.ts";
import { cli, cliJson, type CliResult, parseOneJson, spawnCli, tempHome } from "./_helpers.ts";
import {
  denoEnv,
  everythingStdio,
  startEverything,
  writeConfig,
  yamlValue,
} from "./_mcp_helpers.ts";

const LOCAL_ARGS = ["--tools", "echo,add,list-items.v2", "--resources", "--prompts"];

/** The config.yaml of most tests: five servers in every state, plus a comment and other keys. */
function fixtureConfig(remote: HttpFixture): string {
  const local = stdioCommand(LOCAL_ARGS);
  const off = stdioCommand(["--tools", "echo"]);
  return [
    "# my agent", // 1
    "model:", // 2
    "  default: gpt-4o # keep me", // 3
    "mcp_servers:", // 4
    "  # the local fixture", // 5
    "  local:", // 6
    `    command: ${yamlValue(local.command)}`, // 7
    `    args: ${yamlValue(local.args)}`, // 8
    "  remote:", // 9
    `    url: ${yamlValue(remote.url)}`, // 10
    "  broken:", // 11
    "    command: /nonexistent/agent-test-server", // 12
    "  invalid:", // 13
    "    command: deno", // 14
    "    timeout: soon", // 15
    "  off:", // 16
    `    command: ${yamlValue(off.command)}`, // 17
    `    args: ${yamlValue(off.args)}`, // 18
    "    enabled: false", // 19
    "",
  ].join("\n");
}

/** A temp home with {@linkcode fixtureConfig} and a running HTTP fixture. */
async function fixtureHome() {
  const home = await tempHome();
  let remote: HttpFixture | undefined;
  try {
    remote = await startHttpFixture(["--transport", "http", "--tools", "echo"]);
    const config = writeConfig(home.home, fixtureConfig(remote));
    return {
      home: home.home,
      config,
      remote,
      run: (argv: string[], env: Record<string, string> = {}) =>
        cli(home.home, argv, { env: denoEnv(env) }),
      json: (argv: string[], code = 0, env: Record<string, string> = {}) =>
        cliJson(home.home, argv, code, { env: denoEnv(env) }),
      [Symbol.asyncDispose]: async () => {
        await remote?.close();
        await home[Symbol.asyncDispose]();
      },
    };
  } catch (error) {
    await remote?.close();
    await home[Symbol.asyncDispose]();
    throw error;
  }
}

/** The rows of a text table: cells split on runs of two or more spaces. */
function tableRows(stdout: string): string[][] {
  return stdout.trimEnd().split("\n").map((line) => line.split(/ {2,}/));
}

function expectCode(result: CliResult, code: number): void {
  assert.equal(result.code, code, `exit code\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
}

// ---------------------------------------------------------------------------------------------
// list

Deno.test("mcp list: a table of every server with its status; broken and invalid ones say why", async () => {
  await using fx = await fixtureHome();
  const result = await fx.run(["mcp", "list"]);
  expectCode(result, 0);
  const [header, ...rows] = tableRows(result.stdout);
  assert.deepEqual(header, ["NAME", "TRANSPORT", "STATUS", "ERA", "TOOLS", "DETAIL"]);
  const byName = new Map(rows.map((row) => [row[0], row]));
  assert.deepEqual([...byName.keys()], ["local", "remote", "broken", "off", "invalid"]);
  // local: 3 tools + 4 utilities; remote: echo.
  assert.deepEqual(byName.get("local"), ["local", "stdio", "connected", "legacy", "7"]);
  assert.deepEqual(byName.get("remote"), ["remote", "http", "connected", "legacy", "1"]);
  assert.deepEqual(byName.get("broken")?.slice(0, 3), ["broken", "stdio", "failed"]);
  assert.match(
    byName.get("broken")!.at(-1)!,
    /^MCP server 'broken': cannot start command '\/nonexistent\/agent-test-server': not found/,
  );
  assert.deepEqual(byName.get("off")?.slice(0, 3), ["off", "stdio", "disabled"]);
  assert.equal(byName.get("invalid")?.[2], "invalid");
  assert.match(
    byName.get("invalid")!.at(-1)!,
    new RegExp(`^${fx.config}:15: mcp_servers\\.invalid\\.timeout: timeout must be a number`),
  );
  // The config issue is also reported on stderr, with its severity.
  assert.match(
    result.stderr,
    new RegExp(`error: ${fx.config}:15: mcp_servers\\.invalid\\.timeout`),
  );
});

Deno.test("mcp list --json: one document with servers, issues and warnings", async () => {
  await using fx = await fixtureHome();
  const doc = await fx.json(["mcp", "list", "--json"]);
  assert.deepEqual(Object.keys(doc), ["servers", "issues", "warnings"]);
  assert.deepEqual(doc.warnings, []);
  const byName = new Map(
    (doc.servers as Array<Record<string, unknown>>).map((server) => [server.name, server]),
  );
  const local = byName.get("local")!;
  assert.equal(local.status, "connected");
  assert.equal(local.transport, "stdio");
  assert.equal(local.era, "legacy");
  assert.equal(local.protocol_version, "2025-11-25");
  assert.equal(local.tool_count, 7);
  assert.equal(typeof local.connect_ms, "number");
  assert.deepEqual(local.warnings, []);
  assert.equal(byName.get("remote")?.transport, "http");
  assert.equal(byName.get("remote")?.status, "connected");
  assert.equal(byName.get("broken")?.status, "failed");
  assert.equal(byName.get("broken")?.tool_count, 0);
  assert.match(String(byName.get("broken")?.error), /^MCP server 'broken': cannot start command/);
  assert.equal(byName.get("off")?.status, "disabled");
  assert.equal(byName.get("invalid")?.status, "invalid");
  const errors = (doc.issues as Array<Record<string, unknown>>)
    .filter((issue) => issue.severity === "error");
  assert.deepEqual(errors.map(({ server, key, line }) => ({ server, key, line })), [
    { server: "invalid", key: "timeout", line: 15 },
  ]);
});

Deno.test({
  name: "mcp list: an invalid remote entry is listed with its http transport",
  fn: async () => {
    await using home = await tempHome();
    writeConfig(home.home, "mcp_servers:\n  remote:\n    url: ftp://x\n");
    const doc = await cliJson(home.home, ["mcp", "list", "--json"], 0, { env: denoEnv() });
    assert.equal(doc.servers[0].status, "invalid");
    assert.equal(doc.servers[0].transport, "http");
  },
});

Deno.test("mcp list on a fresh home says how to add a server", async () => {
  await using home = await tempHome();
  const result = await cli(home.home, ["mcp", "list"], { env: denoEnv() });
  expectCode(result, 0);
  assert.match(result.stdout, /^No MCP servers configured\. Add one with `agent mcp add`/);
  assert.ok(result.stdout.includes(home.config), result.stdout);
  const doc = await cliJson(home.home, ["mcp", "list", "--json"], 0, { env: denoEnv() });
  assert.deepEqual(doc, { servers: [], issues: [], warnings: [] });
});

// ---------------------------------------------------------------------------------------------
// test

Deno.test("mcp test <name>: era, protocol version, timings and tools", async () => {
  await using fx = await fixtureHome();
  const result = await fx.run(["mcp", "test", "local"]);
  expectCode(result, 0);
  const out = result.stdout;
  assert.match(out, /^MCP server 'local': connected over stdio\n/);
  assert.match(out, /\n {2}server: {4}agent-fixture 1\.0\.0\n/);
  assert.match(out, /\n {2}era: {7}legacy \(protocol 2025-11-25\)\n/);
  assert.match(out, /\n {2}timings: {3}connect \d+ ms, connect \+ discovery \d+ ms\n/);
  assert.match(out, /\n {2}tools: {5}7\n/);
  for (const tool of ["mcp__local__echo (read-only)", "mcp__local__list_items_v2 (read-only)"]) {
    assert.ok(out.includes(`    ${tool}\n`), `${tool} missing:\n${out}`);
  }
  assert.ok(!out.includes("enabled: false"));

  const doc = await fx.json(["mcp", "test", "remote", "--json"]);
  assert.equal(doc.ok, true);
  assert.equal(doc.name, "remote");
  assert.equal(doc.status, "connected");
  assert.equal(doc.transport, "http");
  assert.equal(doc.era, "legacy");
  assert.equal(doc.protocol_version, "2025-11-25");
  assert.equal(typeof doc.connect_ms, "number");
  assert.ok(doc.total_ms >= doc.connect_ms);
  assert.deepEqual(doc.tools, [{
    name: "mcp__remote__echo",
    server: "remote",
    original_name: "echo",
    kind: "tool",
    read_only: true,
    description: "Echo a message back",
    input_schema: {
      type: "object",
      properties: { message: { type: "string" } },
      required: ["message"],
    },
  }]);
});

Deno.test("mcp test: a failing server exits 1, an unknown one 2 listing the configured names", async () => {
  await using fx = await fixtureHome();
  const failing = await fx.run(["mcp", "test", "broken"]);
  expectCode(failing, 1);
  assert.match(failing.stderr, /^MCP server 'broken': cannot start command/);
  assert.equal(failing.stdout, "");

  const doc = await fx.json(["mcp", "test", "broken", "--json"], 1);
  assert.equal(doc.ok, false);
  assert.equal(doc.status, "failed");
  assert.match(doc.error, /^MCP server 'broken': /);
  assert.deepEqual(doc.tools, []);

  const unknown = await fx.run(["mcp", "test", "nope"]);
  expectCode(unknown, 2);
  assert.equal(
    unknown.stderr,
    `agent: no MCP server 'nope' in ${fx.config} (configured: local, remote, broken, invalid (invalid), off)\n`,
  );
  const unknownJson = await fx.json(["mcp", "test", "nope", "--json"], 2);
  assert.equal(unknownJson.error.exit_code, 2);
  assert.match(unknownJson.error.message, /^no MCP server 'nope'/);

  const invalid = await fx.run(["mcp", "test", "invalid"]);
  expectCode(invalid, 2);
  assert.match(invalid.stderr, new RegExp(`${fx.config}:15: mcp_servers\\.invalid\\.timeout`));
});

Deno.test("mcp test: a disabled server can still be tested and says it is disabled", async () => {
  await using fx = await fixtureHome();
  const result = await fx.run(["mcp", "test", "off"]);
  expectCode(result, 0);
  assert.match(result.stdout, /^MCP server 'off': connected over stdio\n/);
  assert.match(result.stdout, /enabled: false/);
  assert.ok(result.stdout.includes("    mcp__off__echo (read-only)\n"));
});

Deno.test({
  name: "mcp test --json: a disabled server's document says it is disabled",
  fn: async () => {
    await using fx = await fixtureHome();
    const doc = await fx.json(["mcp", "test", "off", "--json"]);
    assert.equal(doc.ok, true);
    assert.equal(doc.enabled, false);
  },
});

// ---------------------------------------------------------------------------------------------
// tools

Deno.test("mcp tools: registered names next to the servers' original names", async () => {
  await using fx = await fixtureHome();
  const result = await fx.run(["mcp", "tools"]);
  expectCode(result, 0);
  const [header, ...rows] = tableRows(result.stdout);
  assert.deepEqual(header, ["TOOL", "SERVER", "ORIGINAL NAME", "READ-ONLY"]);
  assert.deepEqual(rows, [
    ["mcp__local__echo", "local", "echo", "yes"],
    ["mcp__local__add", "local", "add", "yes"],
    ["mcp__local__list_items_v2", "local", "list-items.v2", "yes"],
    ["mcp__local__list_resources", "local", "list_resources", "yes"],
    ["mcp__local__read_resource", "local", "read_resource", "yes"],
    ["mcp__local__list_prompts", "local", "list_prompts", "yes"],
    ["mcp__local__get_prompt", "local", "get_prompt", "yes"],
    ["mcp__remote__echo", "remote", "echo", "yes"],
  ]);
  // The broken server is reported, the disabled one is not.
  assert.match(result.stderr, /MCP server 'broken': cannot start command/);
  assert.ok(!result.stderr.includes("'off'"), result.stderr);

  const all = await fx.json(["mcp", "tools", "--json"]);
  assert.equal(all.tools.length, 8);
  // The broken server, and the invalid entry (its config error).
  assert.deepEqual(
    all.errors.map((error: { server: string }) => error.server),
    ["broken", "invalid"],
  );
  const one = await fx.json(["mcp", "tools", "local", "--json"]);
  assert.deepEqual(Object.keys(one), ["tools", "errors", "warnings"]);
  assert.deepEqual(one.errors, []);
  assert.ok(one.tools.every((tool: { server: string }) => tool.server === "local"));
  assert.deepEqual(
    one.tools.find((tool: { original_name: string }) => tool.original_name === "list-items.v2"),
    {
      name: "mcp__local__list_items_v2",
      server: "local",
      original_name: "list-items.v2",
      kind: "tool",
      read_only: true,
      description: "A tool whose name has a dash and a dot",
      input_schema: { type: "object", properties: {} },
    },
  );
  // What a caller needs to call a tool: its description and the schema of its arguments.
  assert.deepEqual(
    one.tools.find((tool: { original_name: string }) => tool.original_name === "add"),
    {
      name: "mcp__local__add",
      server: "local",
      original_name: "add",
      kind: "tool",
      read_only: true,
      description: "Add two numbers",
      input_schema: {
        type: "object",
        properties: { a: { type: "number" }, b: { type: "number" } },
        required: ["a", "b"],
      },
    },
  );
});

// ---------------------------------------------------------------------------------------------
// call

Deno.test("mcp call: prints the text result; original or generated tool name", async () => {
  await using fx = await fixtureHome();
  for (const tool of ["echo", "mcp__local__echo"]) {
    const result = await fx.run(["mcp", "call", "local", tool, "--args", '{"message":"hi"}']);
    expectCode(result, 0);
    assert.equal(result.stdout, "Echo: hi\n");
  }
  const remote = await fx.run(["mcp", "call", "remote", "echo", "--args", '{"message":"far"}']);
  expectCode(remote, 0);
  assert.equal(remote.stdout, "Echo: far\n");
  const resource = await fx.run([
    "mcp",
    "call",
    "local",
    "read_resource",
    "--args",
    '{"uri":"note://hello"}',
  ]);
  expectCode(resource, 0);
  assert.equal(resource.stdout, "hello\n");

  const doc = await fx.json(["mcp", "call", "local", "add", "--args", '{"a":2,"b":40}', "--json"]);
  assert.deepEqual(doc, { content: [{ type: "text", text: "42" }] });
  // An integer beyond 2^53 goes as the number JSON.stringify writes (the check of --args keeps
  // it exact as a bigint, which the SDK could not send).
  const large = await fx.json([
    "mcp",
    "call",
    "local",
    "add",
    "--args",
    '{"a":12345678901234567890,"b":0}',
    "--json",
  ]);
  assert.deepEqual(large, { content: [{ type: "text", text: "12345678901234567000" }] });
});

Deno.test("mcp call: bad --args and unknown tools exit 2; a tool error result exits 1", async () => {
  await using fx = await fixtureHome();
  // Said as `webhook test --payload` says it: where and what, without V8's quote of the text.
  const example = `give a JSON object of the tool's arguments such as --args '{"message":"hi"}'`;
  for (
    const [args, message] of [
      [
        "{message:",
        `--args is not valid JSON (line 1, column 2: expected a property name in double quotes, ` +
        `or }); ${example}`,
      ],
      ["sk-TOPSECRET", `--args is not valid JSON (line 1, column 1: expected a value); ${example}`],
      // Said once what is expected (before: "is empty; expected a JSON object; give a JSON …").
      ["", `--args is empty; ${example}`],
      [" \n", `--args holds only whitespace; ${example}`],
      ["[1]", `--args is not a JSON object (got an array); ${example}`],
      ['"hi"', `--args is not a JSON object (got a string); ${example}`],
      ["null", `--args is not a JSON object (got null); ${example}`],
      ["3", `--args is not a JSON object (got a number); ${example}`],
      [
        '{"message":"a","message":"b"}',
        '--args has the key "message" twice in the object at $; each key may appear once per object',
      ],
      [
        "@args.json",
        '--args takes the JSON text itself, not a file name: to send a file, write --args "$(cat args.json)"',
      ],
    ]
  ) {
    const result = await fx.run(["mcp", "call", "local", "echo", "--args", args]);
    expectCode(result, 2);
    assert.equal(result.stderr, `agent: ${message}\n`, args);
  }
  const invalidJson = await fx.json(["mcp", "call", "local", "echo", "--args", "[", "--json"], 2);
  assert.equal(
    invalidJson.error.message,
    `--args is not valid JSON (line 1, column 2: expected a value (the text ends here)); ${example}`,
  );

  const unknown = await fx.run(["mcp", "call", "local", "nope"]);
  expectCode(unknown, 2);
  assert.equal(
    unknown.stderr,
    "agent: MCP server 'local' has no tool 'nope'. Its tools: echo, add, list-items.v2, " +
      "list_resources, read_resource, list_prompts, get_prompt\n",
  );

  const failing = await fx.run(["mcp", "call", "local", "add", "--args", '{"a":"x"}']);
  expectCode(failing, 1);
  assert.match(failing.stdout, /Invalid arguments for tool add/);
  assert.equal(
    failing.stderr,
    "MCP server 'local': tool 'add' reported an error\n" +
      "note: tool 'add' takes a (number, required), b (number, required). " +
      "In these --args, b is missing; a is a string, not a number\n",
  );
  // A failure with arguments that fit the schema has no note.
  const notFound = await fx.run([
    "mcp",
    "call",
    "local",
    "read_resource",
    "--args",
    '{"uri":"note://nope"}',
  ]);
  expectCode(notFound, 1);
  assert.doesNotMatch(notFound.stderr, /^note:/m);
  const failingJson = await fx.json(
    ["mcp", "call", "local", "add", "--args", '{"a":"x"}', "--json"],
    1,
  );
  assert.equal(failingJson.isError, true);
  assert.match(failingJson.content[0].text, /Invalid arguments for tool add/);

  const broken = await fx.run(["mcp", "call", "broken", "echo"]);
  expectCode(broken, 1);
  assert.match(broken.stderr, /^agent: MCP server 'broken': cannot start command/);
  const unknownServer = await fx.run(["mcp", "call", "nope", "echo"]);
  expectCode(unknownServer, 2);
});

// ---------------------------------------------------------------------------------------------
// add / remove

Deno.test("mcp add: stdio and http entries, comments and other keys kept", async () => {
  await using fx = await fixtureHome();
  const before = Deno.readTextFileSync(fx.config);
  const stdio = await fx.run([
    "mcp",
    "add",
    "files",
    "--command",
    "npx",
    "--arg",
    "-y",
    "--arg",
    "@modelcontextprotocol/server-filesystem",
    "--env",
    "ROOT=/tmp",
    "--env",
    "TOKEN=${FS_TOKEN}",
  ], { FS_TOKEN: "t0ken" });
  expectCode(stdio, 0);
  assert.equal(
    stdio.stdout,
    `Added MCP server 'files' to ${fx.config}. Check it with: agent mcp test files\n`,
  );
  assert.equal(stdio.stderr, "");

  const http = await fx.json([
    "mcp",
    "add",
    "api",
    "--url",
    "https://example.com/sse",
    "--header",
    "X-Api-Key=${API_KEY}",
    "--transport",
    "sse",
    "--json",
  ]);
  const entry = {
    url: "https://example.com/sse",
    headers: { "X-Api-Key": "${API_KEY}" },
    transport: "sse",
  };
  assert.deepEqual(http.added, "api");
  assert.deepEqual(http.entry, entry);
  // API_KEY is not set: a warning, not an error.
  assert.deepEqual(
    http.issues.map((issue: { key: string; severity: string }) => [issue.key, issue.severity]),
    [["headers.X-Api-Key", "warning"]],
  );

  const after = Deno.readTextFileSync(fx.config);
  assert.ok(after.startsWith(before.trimEnd()), `earlier lines changed:\n${after}`);
  for (const kept of ["# my agent", "  default: gpt-4o # keep me", "  # the local fixture"]) {
    assert.ok(after.includes(kept), `${kept} lost`);
  }
  const config = parse(after);
  assert.equal(config.model.default, "gpt-4o");
  assert.deepEqual(Object.keys(config.mcp_servers), [
    "local",
    "remote",
    "broken",
    "invalid",
    "off",
    "files",
    "api",
  ]);
  assert.deepEqual(config.mcp_servers.files, {
    command: "npx",
    args: ["-y", "@modelcontextprotocol/server-filesystem"],
    env: { ROOT: "/tmp", TOKEN: "${FS_TOKEN}" },
  });
  assert.deepEqual(config.mcp_servers.api, entry);
});

Deno.test("mcp add: refuses an existing name (1), an invalid name and neither/both of --command/--url (2)", async () => {
  await using fx = await fixtureHome();
  const before = Deno.readTextFileSync(fx.config);
  const existing = await fx.run(["mcp", "add", "local", "--command", "npx"]);
  expectCode(existing, 1);
  assert.match(
    existing.stderr,
    /^agent: MCP server 'local' already exists in .*config\.yaml; remove it first \(agent mcp remove local\)/,
  );
  const existingJson = await fx.json([
    "mcp",
    "add",
    "local",
    "--url",
    "https://x.test/mcp",
    "--json",
  ], 1);
  assert.match(existingJson.error.message, /already exists/);

  for (const name of ["has space", "a/b", "x".repeat(65), "ümlaut"]) {
    const result = await fx.run(["mcp", "add", name, "--command", "npx"]);
    expectCode(result, 2);
    assert.match(result.stderr, /must be 1 to 64 letters, digits, '\.', '_' or '-'/);
  }
  const badEnv = await fx.run(["mcp", "add", "new", "--command", "npx", "--env", "NO_EQUALS"]);
  expectCode(badEnv, 2);
  assert.match(badEnv.stderr, /--env takes NAME=VALUE, got 'NO_EQUALS'/);
  const neither = await fx.run(["mcp", "add", "new"]);
  expectCode(neither, 2);
  assert.match(neither.stderr, /give exactly one of --command or --url/);
  const both = await fx.run([
    "mcp",
    "add",
    "new",
    "--command",
    "npx",
    "--url",
    "https://x.test/mcp",
  ]);
  expectCode(both, 2);
  const bothJson = await fx.json(
    ["mcp", "add", "new", "--command", "npx", "--url", "https://x.test/mcp", "--json"],
    2,
  );
  assert.equal(bothJson.error.exit_code, 2);
  assert.equal(Deno.readTextFileSync(fx.config), before, "config.yaml changed");
});

Deno.test("mcp add on a fresh home creates config.yaml", async () => {
  await using home = await tempHome();
  const result = await cli(home.home, [
    "mcp",
    "add",
    "everything",
    "--command",
    "npx",
    "--arg",
    "-y",
  ], {
    env: denoEnv(),
  });
  expectCode(result, 0);
  const config = parse(Deno.readTextFileSync(home.config));
  assert.deepEqual(config.mcp_servers, { everything: { command: "npx", args: ["-y"] } });
});

Deno.test("mcp add: a plain http url off this machine is warned about, as mcp install's review does", async () => {
  await using home = await tempHome();
  const warning = "warning: mcp.example.com:8080 is reached over plain http: nothing sent to it " +
    "(headers and tokens too) is encrypted; use its https:// URL if it has one\n";
  const text = await cli(home.home, ["mcp", "add", "a", "--url", "http://mcp.example.com:8080/"]);
  expectCode(text, 0);
  assert.equal(text.stderr, warning);
  // The scheme in capitals is plain http too.
  const upper = await cli(home.home, ["mcp", "add", "b", "--url", "HTTP://MCP.example.com:8080"]);
  expectCode(upper, 0);
  assert.equal(upper.stderr, warning);
  const withJson = await cli(home.home, [
    ...["mcp", "add", "c", "--url", "http://mcp.example.com:8080/", "--json"],
  ]);
  expectCode(withJson, 0);
  assert.equal(withJson.stderr, warning);
  assert.deepEqual(parseOneJson(withJson.stdout).warnings, [warning.slice(9, -1)]);
  // A host name that starts like a loopback address is another machine's.
  const named = await cli(home.home, ["mcp", "add", "d", "--url", "http://127.0.0.1.example.com/"]);
  expectCode(named, 0);
  assert.match(named.stderr, /^warning: 127\.0\.0\.1\.example\.com is reached over plain http/);
  const quietUrls = [
    "https://mcp.example.com/",
    "http://127.0.0.2:9/",
    "http://localhost/",
    "http://[::1]:9/",
  ];
  for (const [i, url] of quietUrls.entries()) {
    const quiet = await cli(home.home, ["mcp", "add", `q${i}`, "--url", url, "--json"]);
    expectCode(quiet, 0);
    assert.equal(quiet.stderr, "", url);
    assert.deepEqual(parseOneJson(quiet.stdout).warnings, [], url);
  }
});

Deno.test("mcp remove / rm: removes only that entry and keeps comments; unknown exits 2", async () => {
  await using fx = await fixtureHome();
  const removed = await fx.run(["mcp", "remove", "broken"]);
  expectCode(removed, 0);
  assert.equal(removed.stdout, `Removed MCP server 'broken' from ${fx.config}.\n`);
  const doc = await fx.json(["mcp", "rm", "invalid", "--json"]);
  assert.deepEqual(doc, { removed: "invalid", warnings: [] });

  const text = Deno.readTextFileSync(fx.config);
  for (const kept of ["# my agent", "  default: gpt-4o # keep me", "  # the local fixture"]) {
    assert.ok(text.includes(kept), `${kept} lost:\n${text}`);
  }
  const config = parse(text);
  assert.deepEqual(Object.keys(config.mcp_servers), ["local", "remote", "off"]);
  assert.equal(config.mcp_servers.off.enabled, false);
  assert.equal(config.model.default, "gpt-4o");

  const unknown = await fx.run(["mcp", "remove", "broken"]);
  expectCode(unknown, 2);
  assert.equal(
    unknown.stderr,
    `agent: no MCP server 'broken' in ${fx.config} (configured: local, remote, off)\n`,
  );
  const unknownJson = await fx.json(["mcp", "rm", "nope", "--json"], 2);
  assert.equal(unknownJson.error.exit_code, 2);
  assert.equal(Deno.readTextFileSync(fx.config), text);
});

// ---------------------------------------------------------------------------------------------
// end to end

Deno.test("end to end: server-everything over stdio and Streamable HTTP through the real CLI", async () => {
  await using home = await tempHome();
  await using http = await startEverything("streamableHttp");
  const stdio = everythingStdio();
  writeConfig(
    home.home,
    [
      "mcp_servers:",
      "  everything:",
      `    command: ${yamlValue(stdio.command)}`,
      `    args: ${yamlValue(stdio.args)}`,
      "  everything-http:",
      `    url: ${yamlValue(http.url)}`,
      "",
    ].join("\n"),
  );

  const [list, listJson, tools, call, resource] = await Promise.all([
    spawnCli(home.home, ["mcp", "list"]),
    spawnCli(home.home, ["mcp", "list", "--json"]),
    spawnCli(home.home, ["mcp", "tools"]),
    spawnCli(home.home, ["mcp", "call", "everything", "echo", "--args", '{"message":"hi"}']),
    spawnCli(home.home, ["mcp", "call", "everything-http", "get-resource-reference"]),
  ]);

  expectCode(list, 0);
  const rows = tableRows(list.stdout);
  assert.deepEqual(rows[0], ["NAME", "TRANSPORT", "STATUS", "ERA", "TOOLS", "DETAIL"]);
  assert.deepEqual(rows.slice(1).map((row) => row.slice(0, 4)), [
    ["everything", "stdio", "connected", "legacy"],
    ["everything-http", "http", "connected", "legacy"],
  ]);

  expectCode(listJson, 0);
  const doc = parseOneJson(listJson.stdout) as {
    servers: Array<{ name: string; status: string; tool_count: number }>;
  };
  assert.deepEqual(doc.servers.map((server) => [server.name, server.status]), [
    ["everything", "connected"],
    ["everything-http", "connected"],
  ]);
  assert.ok(doc.servers.every((server) => server.tool_count > 4));

  expectCode(tools, 0);
  const toolRows = tableRows(tools.stdout).slice(1);
  const pairs = toolRows.map((row) => `${row[0]} ${row[2]}`);
  for (
    const pair of [
      "mcp__everything__echo echo",
      "mcp__everything__get_sum get-sum",
      "mcp__everything__list_resources list_resources",
      "mcp__everything_http__echo echo",
      "mcp__everything_http__get_sum get-sum",
    ]
  ) {
    assert.ok(pairs.includes(pair), `${pair} missing:\n${tools.stdout}`);
  }

  expectCode(call, 0);
  assert.equal(call.stdout, "Echo: hi\n");

  // An embedded resource shows its text, as the agent reads it.
  expectCode(resource, 0);
  assert.match(
    resource.stdout,
    /^Returning resource reference for Resource 1:\nResource 1: This is a plaintext resource created at .+\nYou can access this resource using the URI: \S+\n$/,
  );
});
