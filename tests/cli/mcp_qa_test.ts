/**
 * `agent mcp` fixes from a second QA pass: a stdio message over the SDK's 10 MiB read limit is
 * named as such, config warnings sit on each server of `mcp list --json`, invalid entries are
 * listed in "no such server" errors, `mcp tools <name>` fails when that server does, `mcp login`
 * of a stdio server says OAuth is for HTTP servers, and dropped or shadowed tools are warned of.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { stdioCommand } from "../fixtures/mcp/spawn.ts";
import { cli, cliJson, type CliResult, tempHome } from "./_helpers.ts";
import { denoEnv, freePort, writeConfig, yamlValue } from "./_mcp_helpers.ts";

/** A stdio server announcing exactly the tool names it is given (`odd_tools_stdio.ts`). */
const ODD_TOOLS = fileURLToPath(new URL("../fixtures/mcp/odd_tools_stdio.ts", import.meta.url));

function expectCode(result: CliResult, code: number): void {
  assert.equal(result.code, code, `exit code\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
}

/** A config entry running `odd_tools_stdio.ts` with `args`, as YAML lines under `name:`. */
function oddEntry(name: string, args: string[], extra: string[] = []): string[] {
  const { command, args: argv } = stdioCommand(args, ODD_TOOLS);
  return [
    `  ${JSON.stringify(name)}:`,
    `    command: ${yamlValue(command)}`,
    `    args: ${yamlValue(argv)}`,
    ...extra.map((line) => `    ${line}`),
  ];
}

Deno.test("mcp call: a result over the 10 MiB stdio limit is named as such, not as stray output", async () => {
  await using home = await tempHome();
  writeConfig(
    home.home,
    ["mcp_servers:", ...oddEntry("odd", ["--tools", '["huge"]']), ""].join("\n"),
  );
  const result = await cli(home.home, ["mcp", "call", "odd", "huge"], { env: denoEnv() });
  expectCode(result, 1);
  assert.match(
    result.stderr,
    /MCP server 'odd': a message from the server was larger than the 10 MiB stdio limit \(tool 'huge'\)/,
  );
  assert.doesNotMatch(result.stderr, /not JSON-RPC|AAAA|exited with code/);
});

Deno.test("mcp call: a result just under the limit, longer than one read, arrives whole", async () => {
  await using home = await tempHome();
  const bytes = 3 * 1024 * 1024;
  writeConfig(
    home.home,
    ["mcp_servers:", ...oddEntry("odd", ["--tools", '["huge"]', "--huge-bytes", String(bytes)]), ""]
      .join("\n"),
  );
  const result = await cli(home.home, ["mcp", "call", "odd", "huge"], { env: denoEnv() });
  expectCode(result, 0);
  assert.equal(result.stdout, `${"A".repeat(bytes)}\n`);
});

Deno.test("mcp list --json: each server's warnings hold its entry's config warnings", async () => {
  await using home = await tempHome();
  writeConfig(
    home.home,
    [
      "mcp_servers:",
      ...oddEntry("c", ["--tools", '["x"]'], ["trust: maybe", "header: { X: '1' }"]),
      "  a:",
      "    comand: foo",
      "",
    ].join("\n"),
  );
  const doc = await cliJson(home.home, ["mcp", "list", "--json"], 0, { env: denoEnv() });
  const byName = new Map(
    doc.servers.map((server: { name: string }) => [server.name, server]),
  ) as Map<string, { status: string; warnings: string[] }>;
  const c = byName.get("c")!;
  assert.equal(c.status, "connected");
  assert.ok(
    c.warnings.some((w) => /mcp_servers\.c\.trust: unknown trust/.test(w)),
    c.warnings.join("\n"),
  );
  assert.ok(
    c.warnings.some((w) => /mcp_servers\.c\.header: .*did you mean/.test(w)),
    c.warnings.join("\n"),
  );
  const a = byName.get("a")!;
  assert.equal(a.status, "invalid");
  assert.ok(
    a.warnings.some((w) => /mcp_servers\.a\.comand: .*did you mean/.test(w)),
    a.warnings.join("\n"),
  );
  // The same warnings as `mcp test --json` gives for the server.
  const tested = await cliJson(home.home, ["mcp", "test", "c", "--json"], 0, { env: denoEnv() });
  assert.deepEqual(c.warnings, tested.warnings);
});

Deno.test("an unknown server name lists every configured name, invalid entries marked", async () => {
  await using home = await tempHome();
  writeConfig(
    home.home,
    ["mcp_servers:", "  a:", "    comand: foo", "  c:", "    command: echo", ""].join("\n"),
  );
  for (
    const argv of [["mcp", "test", "zzz"], ["mcp", "login", "zzz"], ["mcp", "call", "zzz", "t"]]
  ) {
    const result = await cli(home.home, argv, { env: denoEnv() });
    expectCode(result, 2);
    assert.match(
      result.stderr,
      new RegExp(`no MCP server 'zzz' in ${home.config} \\(configured: a \\(invalid\\), c\\)`),
      argv.join(" "),
    );
  }
});

Deno.test("mcp tools <name>: a server that cannot be reached fails the command (exit 1)", async () => {
  await using home = await tempHome();
  const url = `http://127.0.0.1:${freePort()}/mcp`;
  writeConfig(home.home, `mcp_servers:\n  refused:\n    url: ${url}\n    connect_timeout: 5\n`);
  const result = await cli(home.home, ["mcp", "tools", "refused"], { env: denoEnv() });
  expectCode(result, 1);
  assert.match(result.stderr, /^agent: MCP server 'refused': /m);
  assert.doesNotMatch(result.stdout, /No tools registered/);
  const doc = await cliJson(home.home, ["mcp", "tools", "refused", "--json"], 1, {
    env: denoEnv(),
  });
  assert.deepEqual(doc.tools, []);
  assert.deepEqual(doc.errors.map((e: { server: string }) => e.server), ["refused"]);

  // A listing of every server reports the failure as a prefixed line and still succeeds.
  const all = await cli(home.home, ["mcp", "tools"], { env: denoEnv() });
  expectCode(all, 0);
  assert.match(all.stderr, /^error: MCP server 'refused': /m);
});

Deno.test("mcp login of a stdio server says OAuth is for HTTP servers, with or without auth: oauth", async () => {
  await using home = await tempHome();
  writeConfig(
    home.home,
    [
      "mcp_servers:",
      "  plain:",
      "    command: echo",
      "  oauthy:",
      "    command: echo",
      "    auth: oauth",
      "",
    ].join("\n"),
  );
  for (const name of ["plain", "oauthy"]) {
    const result = await cli(home.home, ["mcp", "login", name], { env: denoEnv() });
    expectCode(result, 2);
    assert.match(
      result.stderr,
      new RegExp(
        `OAuth applies to HTTP servers \\(with \`url\`\\) only; '${name}' is a local \\(stdio\\) server`,
      ),
    );
    assert.doesNotMatch(result.stderr, /add `auth: oauth`/);
  }
});

Deno.test("tools shadowed within a server or by another server are warned of, and counted right", async () => {
  await using home = await tempHome();
  writeConfig(
    home.home,
    [
      "mcp_servers:",
      ...oddEntry("odd", [
        "--resources",
        "--tools",
        JSON.stringify(["dup", "dup", "list_resources", "", "a-b", "a.b"]),
      ], ["tools: { resources: true }"]),
      ...oddEntry("my server", ["--tools", '["x","y"]']),
      ...oddEntry("my_server", ["--tools", '["x","y","z"]']),
      "",
    ].join("\n"),
  );
  const env = denoEnv();
  const text = await cli(home.home, ["mcp", "tools"], { env });
  expectCode(text, 0);
  for (
    const warning of [
      /warning: MCP server 'odd': the server lists tool 'dup' 2 times; only the first is registered/,
      /warning: MCP server 'odd': its own tool 'list_resources' is registered as mcp__odd__list_resources, so the utility tool list_resources is not registered/,
      /warning: MCP server 'odd': the server lists a tool with an empty name; it is not registered/,
      /warning: MCP server 'odd': tool 'a\.b' is not registered because tool 'a-b' already becomes mcp__odd__a_b/,
      /warning: MCP server 'my_server': tool 'x' is not available because MCP server 'my server' already registers mcp__my_server__x/,
    ]
  ) assert.match(text.stderr, warning);

  const doc = await cliJson(home.home, ["mcp", "tools", "--json"], 0, { env });
  const names = doc.tools.map((tool: { name: string }) => tool.name);
  assert.ok(!names.includes("mcp__odd__"), names);
  assert.deepEqual(
    doc.tools.filter((t: { server: string }) => t.server === "odd").map((t: { name: string }) =>
      t.name
    ),
    ["mcp__odd__dup", "mcp__odd__list_resources", "mcp__odd__a_b", "mcp__odd__read_resource"],
  );
  // Six about tools, and the config warning about the name "my server" (a space in it).
  assert.equal(doc.warnings.length, 7, doc.warnings);
  assert.match(doc.warnings[0], /mcp_servers\.my server: the server name "my server" is not/);

  const listed = await cliJson(home.home, ["mcp", "list", "--json"], 0, { env });
  for (const server of listed.servers) {
    const registered = doc.tools.filter((t: { server: string }) => t.server === server.name);
    assert.equal(server.tool_count, registered.length, server.name);
  }
  assert.equal(listed.servers.find((s: { name: string }) => s.name === "my_server").tool_count, 1);

  const dropped = await cli(home.home, ["mcp", "call", "odd", "a.b"], { env });
  expectCode(dropped, 1);
  assert.match(
    dropped.stderr,
    /agent: MCP server 'odd': tool 'a\.b' is not registered because tool 'a-b' already becomes mcp__odd__a_b after sanitising/,
  );
});

Deno.test("a stdio server printing JSON that is not JSON-RPC fails at once, not at connect_timeout", async () => {
  await using home = await tempHome();
  const script = `${home.home}/hello.ts`;
  Deno.writeTextFileSync(
    script,
    'console.log(\'{"hello":"world"}\');\nfor await (const _ of Deno.stdin.readable) { /* wait */ }\n',
  );
  writeConfig(
    home.home,
    [
      "mcp_servers:",
      "  hello:",
      `    command: ${yamlValue(Deno.execPath())}`,
      `    args: ${yamlValue(["run", "--quiet", script])}`,
      "    connect_timeout: 120",
      "",
    ].join("\n"),
  );
  const started = performance.now();
  const doc = await cliJson(home.home, ["mcp", "list", "--json"], 0, { env: denoEnv() });
  assert.ok(performance.now() - started < 60_000, "waited for connect_timeout");
  assert.equal(doc.servers[0].status, "failed");
  assert.equal(
    doc.servers[0].error,
    "MCP server 'hello': the connection closed during the handshake: the server printed JSON " +
      'that is not JSON-RPC on stdout before any MCP message: "{\\"hello\\":\\"world\\"}" ' +
      "(stdout must carry only MCP messages; a server logs to stderr)",
  );
});

Deno.test("mcp tools --json reports invalid entries and config warnings; a named listing only its own", async () => {
  await using home = await tempHome();
  const url = `http://127.0.0.1:${freePort()}/mcp`;
  writeConfig(
    home.home,
    [
      "mcp_servers:",
      "  refused:",
      `    url: ${url}`,
      "    timout: 3",
      "  inv:",
      "    url: ftp://x",
      "  other:",
      `    url: ${url}`,
      "    headrs: {}",
      "",
    ].join("\n"),
  );
  const doc = await cliJson(home.home, ["mcp", "tools", "--json"], 0, { env: denoEnv() });
  const errors = new Map<string, string>(
    doc.errors.map((e: { server: string; error: string }) => [e.server, e.error]),
  );
  assert.deepEqual([...errors.keys()].sort(), ["inv", "other", "refused"]);
  assert.match(
    errors.get("inv") ?? "",
    /mcp_servers\.inv\.url: url must be an http:\/\/ or https:\/\//,
  );
  assert.equal(doc.warnings.length, 2, JSON.stringify(doc.warnings));
  assert.match(doc.warnings[0], /mcp_servers\.refused\.timout: .*did you mean `timeout`/);
  assert.match(doc.warnings[1], /mcp_servers\.other\.headrs: /);

  const named = await cliJson(home.home, ["mcp", "tools", "refused", "--json"], 1, {
    env: denoEnv(),
  });
  assert.deepEqual(named.errors.map((e: { server: string }) => e.server), ["refused"]);
  assert.equal(named.warnings.length, 1, JSON.stringify(named.warnings));
  assert.match(named.warnings[0], /mcp_servers\.refused\.timout/);
  const text = await cli(home.home, ["mcp", "tools", "refused"], { env: denoEnv() });
  expectCode(text, 1);
  assert.match(text.stderr, /mcp_servers\.refused\.timout/);
  assert.doesNotMatch(text.stderr, /mcp_servers\.(inv|other)/);
});

Deno.test("mcp call of a tool left out by tools.exclude names the key, not 'the server has no tool'", async () => {
  await using home = await tempHome();
  const { command, args } = stdioCommand(["--tools", "echo,add"]);
  writeConfig(
    home.home,
    [
      "mcp_servers:",
      "  srv:",
      `    command: ${yamlValue(command)}`,
      `    args: ${yamlValue(args)}`,
      "    tools: { exclude: [echo, ehco] }",
      "",
    ].join("\n"),
  );
  const result = await cli(home.home, ["mcp", "call", "srv", "echo", "--args", '{"text":"x"}'], {
    env: denoEnv(),
  });
  expectCode(result, 1);
  assert.match(
    result.stderr,
    /^agent: MCP server 'srv': tool 'echo' is left out by mcp_servers\.srv\.tools\.exclude$/m,
  );
  const test = await cli(home.home, ["mcp", "test", "srv"], { env: denoEnv() });
  expectCode(test, 0);
  assert.match(
    test.stdout,
    /warning: +MCP server 'srv': mcp_servers\.srv\.tools\.exclude entry 'ehco' matches none of the server's tools/,
  );
});
