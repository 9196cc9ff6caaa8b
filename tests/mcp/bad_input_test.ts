/**
 * Broken servers and broken entries: each failure is one clear error scoped to its server
 * (`MCP server '<name>': …`), the other servers of the same manager keep working, and nothing
 * waits past its timeout.
 */
import assert from "node:assert/strict";
import { ConfigSource } from "../../src/home/config.ts";
import { formatIssue, parseMcpServers } from "../../src/mcp/config.ts";
import { connectServer } from "../../src/mcp/connect.ts";
import { type McpFailureKind, McpServerError } from "../../src/mcp/errors.ts";
import { McpManager } from "../../src/mcp/manager.ts";
import { freePort } from "../cli/_mcp_helpers.ts";
import {
  GARBAGE_STDIO_FIXTURE,
  type HttpFixture,
  MISC_FIXTURE,
  SILENT_STDIO_FIXTURE,
  startHttpFixture,
  stdioCommand,
} from "../fixtures/mcp/spawn.ts";
import { serverEntry, serversFromYaml } from "./_helpers.ts";

const CLIENT = {
  clientInfo: { name: "agent-test", version: "0" },
  processEnv: (name: string) => Deno.env.get(name),
};

/**
 * Slack on top of a timeout for a loaded machine (the suite runs with --parallel): far below the
 * 60 s default connect_timeout, so a failure that waited for the default still fails the test.
 */
const SLACK_MS = 8_000;

function textOf(result: { content?: unknown }): string {
  const content = (result.content ?? []) as Array<{ type: string; text?: string }>;
  return content.map((block) => block.text ?? "").join("");
}

/** The misc peers every test here may use. */
interface Peers extends AsyncDisposable {
  html: HttpFixture;
  garbage: HttpFixture;
  silent: HttpFixture;
}

async function startPeers(): Promise<Peers> {
  const started = await Promise.allSettled(
    ["html", "garbage-http", "silent"].map((kind) =>
      startHttpFixture(["--kind", kind], { fixture: MISC_FIXTURE })
    ),
  );
  const fixtures = started.flatMap((result) => result.status === "fulfilled" ? [result.value] : []);
  const close = async () => void await Promise.all(fixtures.map((fixture) => fixture.close()));
  const failed = started.find((result) => result.status === "rejected");
  if (failed) {
    await close();
    throw failed.reason;
  }
  const [html, garbage, silent] = fixtures;
  return { html, garbage, silent, [Symbol.asyncDispose]: close };
}

/** One broken entry and what its failure must look like. */
interface BrokenCase {
  name: string;
  fields: Record<string, unknown>;
  kind: McpFailureKind | McpFailureKind[];
  /** The whole message, or a pattern it must match. */
  message: string | RegExp;
  /** Upper bound of the failure's wait (the timeout it must not pass). */
  withinMs: number;
}

function brokenCases(peers: Peers, deadPort: number): BrokenCase[] {
  const fast = 10; // connect_timeout for cases that must fail long before it
  return [
    {
      name: "no-such-command",
      fields: { command: "/nonexistent/agent-test-server", connect_timeout: fast },
      kind: "spawn",
      message:
        "MCP server 'no-such-command': cannot start command '/nonexistent/agent-test-server': not found (check command and PATH)",
      withinMs: SLACK_MS,
    },
    {
      // A whole command line in `command` (the most common stdio mistake): the fix is spelled out.
      name: "command-line",
      fields: {
        command: "/nonexistent/agent-test-server -y '/tmp/my dir'",
        args: ["--verbose"],
        connect_timeout: fast,
      },
      kind: "spawn",
      message: "MCP server 'command-line': cannot start command " +
        "'/nonexistent/agent-test-server -y '/tmp/my dir'': not found; that is a whole command " +
        "line, but command names only the executable. Fix: in /test/config.yaml, set " +
        'mcp_servers.command-line.command to "/nonexistent/agent-test-server" and ' +
        'mcp_servers.command-line.args to ["-y", "/tmp/my dir", "--verbose"]',
      withinMs: SLACK_MS,
    },
    {
      name: "nobody-listens",
      fields: { url: `http://127.0.0.1:${deadPort}/mcp`, connect_timeout: fast },
      kind: "unreachable",
      message: new RegExp(
        `^MCP server 'nobody-listens': cannot reach http://127\\.0\\.0\\.1:${deadPort}/mcp: .*` +
          `Connection refused.*\\(is the server running and the url right\\?\\)$`,
      ),
      withinMs: SLACK_MS,
    },
    {
      name: "web-page",
      fields: { url: peers.html.url, connect_timeout: fast },
      kind: "not_mcp",
      message: `MCP server 'web-page': ${peers.html.url} answered with Content-Type 'text/html', ` +
        "not an MCP endpoint. Check the url (it usually ends in /mcp, or /sse with transport: sse); " +
        "if it is a valid Streamable HTTP endpoint, set skip_preflight: true",
      withinMs: SLACK_MS,
    },
    {
      name: "web-page-no-preflight",
      fields: { url: peers.html.url, connect_timeout: fast, skip_preflight: true },
      kind: "not_mcp",
      message: new RegExp(
        `^MCP server 'web-page-no-preflight': ${peers.html.url} answered the MCP initialize request ` +
          "with Content-Type 'text/html; charset=utf-8', not an MCP endpoint",
      ),
      withinMs: SLACK_MS,
    },
    {
      name: "web-page-sse",
      fields: { url: peers.html.url, connect_timeout: fast, transport: "sse" },
      kind: "protocol",
      message: /^MCP server 'web-page-sse': .*text\/event-stream/,
      withinMs: SLACK_MS,
    },
    {
      name: "garbage-http",
      fields: { url: peers.garbage.url, connect_timeout: fast },
      kind: "protocol",
      message: /^MCP server 'garbage-http': connect failed: .*JSON/,
      withinMs: SLACK_MS,
    },
    {
      name: "silent-http",
      fields: { url: peers.silent.url, connect_timeout: 1 },
      kind: "timeout",
      // Nothing came back: the message says which setting gives the server longer.
      message: "MCP server 'silent-http': no answer within connect_timeout (1 s); if the server " +
        "needs longer, raise mcp_servers.silent-http.connect_timeout in /test/config.yaml",
      withinMs: 1_000 + SLACK_MS,
    },
    {
      name: "garbage-stdio",
      fields: { ...stdioCommand([], GARBAGE_STDIO_FIXTURE), connect_timeout: 2 },
      // The text banner is skipped; the JSON that is not JSON-RPC closes at once (no timeout).
      kind: "closed",
      message: "MCP server 'garbage-stdio': the connection closed during the handshake: the " +
        'server printed JSON that is not JSON-RPC on stdout before any MCP message: "{\\"hello\\":' +
        '\\"world\\"}" (stdout must carry only MCP messages; a server logs to stderr)',
      withinMs: SLACK_MS,
    },
    {
      name: "silent-stdio",
      fields: { ...stdioCommand([], SILENT_STDIO_FIXTURE), connect_timeout: 2 },
      kind: "timeout",
      message: "MCP server 'silent-stdio': no answer within connect_timeout (2 s); if the " +
        "server needs longer, raise mcp_servers.silent-stdio.connect_timeout in /test/config.yaml",
      withinMs: 2_000 + SLACK_MS,
    },
    {
      name: "exits-at-once",
      fields: { ...stdioCommand(["--tools", "nope"]), connect_timeout: fast },
      kind: "closed",
      message: new RegExp(
        // No stderrLogPath in CLIENT: no file is named (the CLI's and the gateway's name theirs).
        "^MCP server 'exits-at-once': the connection closed during the handshake: the process " +
          "exited with code 2; its last stderr lines: .*unknown tool 'nope'[^\"]*\"$",
      ),
      withinMs: SLACK_MS,
    },
    {
      name: "certless",
      fields: { url: peers.html.url, client_cert: "/nonexistent/agent-test/client.pem" },
      kind: "config",
      message:
        "MCP server 'certless': client_cert not found at '/nonexistent/agent-test/client.pem'",
      withinMs: SLACK_MS,
    },
    {
      name: "tilde-cert",
      fields: { url: peers.html.url, client_cert: "~/no-such-dir/client.pem" },
      kind: "config",
      message:
        "MCP server 'tilde-cert': client_cert not found at '/home/test/no-such-dir/client.pem'",
      withinMs: SLACK_MS,
    },
    {
      name: "keyless",
      fields: {
        url: peers.html.url,
        client_cert: [MISC_FIXTURE, "/nonexistent/agent-test/client.key"],
      },
      kind: "config",
      message: "MCP server 'keyless': client_key not found at '/nonexistent/agent-test/client.key'",
      withinMs: SLACK_MS,
    },
    {
      name: "ca-less",
      fields: { url: peers.html.url, ssl_verify: "/nonexistent/agent-test/ca.pem" },
      kind: "config",
      message: "MCP server 'ca-less': ssl_verify not found at '/nonexistent/agent-test/ca.pem'",
      withinMs: SLACK_MS,
    },
  ];
}

function checkMessage(actual: string, expected: string | RegExp): void {
  if (typeof expected === "string") assert.equal(actual, expected);
  else assert.match(actual, expected);
}

Deno.test("each broken server fails with one clear error, within its timeout", async (t) => {
  await using peers = await startPeers();
  for (const broken of brokenCases(peers, freePort())) {
    await t.step(broken.name, async () => {
      const config = serverEntry(broken.name, broken.fields);
      const started = performance.now();
      const error = await connectServer(config, CLIENT).then(
        async (connection) => {
          await connection.close();
          assert.fail(`${broken.name} connected`);
        },
        (error: unknown) => error,
      );
      const ms = performance.now() - started;
      assert.ok(error instanceof McpServerError, `not an McpServerError: ${error}`);
      assert.equal(error.server, broken.name);
      const kinds = [broken.kind].flat();
      assert.ok(kinds.includes(error.kind), `kind ${error.kind}: ${error.message}`);
      checkMessage(error.message, broken.message);
      assert.ok(ms < broken.withinMs, `${broken.name} took ${Math.round(ms)} ms`);
    });
  }
});

Deno.test("broken servers next to working ones: the working ones connect and answer", async () => {
  await using peers = await startPeers();
  await using goodHttp = await startHttpFixture(["--transport", "http", "--tools", "echo"]);
  const cases = brokenCases(peers, freePort());
  const configs = [
    serverEntry("good-stdio", stdioCommand(["--tools", "echo"])),
    ...cases.map((broken) => serverEntry(broken.name, broken.fields)),
    serverEntry("good-http", { url: goodHttp.url }),
  ];
  const manager = new McpManager({ reconnect: false, clientInfo: CLIENT.clientInfo });
  try {
    const started = performance.now();
    await manager.start(configs);
    const ms = performance.now() - started;
    assert.ok(ms < 2_000 + SLACK_MS, `start took ${Math.round(ms)} ms`);

    const states = new Map(manager.servers().map((state) => [state.name, state]));
    assert.deepEqual([...states.keys()], configs.map((config) => config.name));
    for (const broken of cases) {
      const state = states.get(broken.name)!;
      assert.equal(state.status, "failed", broken.name);
      assert.equal(state.toolCount, 0);
      checkMessage(state.error ?? "", broken.message);
    }
    for (const name of ["good-stdio", "good-http"]) {
      assert.equal(states.get(name)?.status, "connected", states.get(name)?.error);
    }
    assert.deepEqual(manager.tools().map((tool) => tool.name), [
      "mcp__good_stdio__echo",
      "mcp__good_http__echo",
    ]);
    for (const tool of ["mcp__good_stdio__echo", "mcp__good_http__echo"]) {
      assert.equal(textOf(await manager.callTool(tool, { message: "ok" })), "Echo: ok");
    }
  } finally {
    await manager.shutdown();
  }
});

Deno.test("malformed entries are config issues naming server, key and line; the manager never sees them", async () => {
  const { command, args } = stdioCommand(["--tools", "echo"]);
  const text = [
    "mcp_servers:", // 1
    "  good:", // 2
    `    command: ${JSON.stringify(command)}`, // 3
    `    args: ${JSON.stringify(args)}`, // 4
    "  bad-args:", // 5
    "    command: deno", // 6
    "    args: {a: 1}", // 7
    "  bad-timeout:", // 8
    "    command: deno", // 9
    "    timeout: soon", // 10
    "  bad-url:", // 11
    "    url: ftp://x", // 12
    "  bad-cert:", // 13
    "    url: https://example.com/mcp", // 14
    "    client_cert: [only-one.pem]", // 15
    "",
  ].join("\n");
  const { servers, issues } = parseMcpServers(ConfigSource.parse("/test/config.yaml", text), {
    lookup: () => undefined,
    userHome: "/home/test",
    workspaceFolder: "/work",
    pathSeparator: "/",
  });
  assert.deepEqual(servers.map((server) => server.name), ["good"]);
  const errors = issues.filter((issue) => issue.severity === "error")
    .map(({ server, key, line }) => ({ server, key, line }));
  assert.deepEqual(errors, [
    { server: "bad-args", key: "args", line: 7 },
    { server: "bad-timeout", key: "timeout", line: 10 },
    { server: "bad-url", key: "url", line: 12 },
    { server: "bad-cert", key: "client_cert", line: 15 },
  ]);
  const formatted = issues.filter((issue) => issue.severity === "error")
    .map((issue) => formatIssue(issue, "/test/config.yaml"));
  assert.match(
    formatted[0],
    /^\/test\/config\.yaml:7: mcp_servers\.bad-args\.args: args must be a list/,
  );
  assert.match(
    formatted[1],
    /^\/test\/config\.yaml:10: mcp_servers\.bad-timeout\.timeout: timeout must be a number of seconds > 0, got "soon"/,
  );
  assert.match(
    formatted[2],
    /^\/test\/config\.yaml:12: mcp_servers\.bad-url\.url: url must be an http:\/\/ or https:\/\/ URL, got "ftp:\/\/x"/,
  );
  assert.match(formatted[3], /client_cert must be a path, or a list \[cert, key\]/);

  const manager = new McpManager({ reconnect: false, clientInfo: CLIENT.clientInfo });
  try {
    await manager.start(servers);
    assert.deepEqual(manager.servers().map((state) => [state.name, state.status]), [
      ["good", "connected"],
    ]);
    assert.deepEqual(manager.tools().map((tool) => tool.name), ["mcp__good__echo"]);
  } finally {
    await manager.shutdown();
  }
});

Deno.test("a server that crashes or hangs mid-call fails that call only", async (t) => {
  await using crashyHttp = await startHttpFixture([
    "--transport",
    "http",
    "--tools",
    "echo,crash",
  ]);
  const stdio = (name: string, tools: string, extra = "") => {
    const { command, args } = stdioCommand(["--tools", tools]);
    return `${name}:\n  command: ${JSON.stringify(command)}\n  args: ${
      JSON.stringify(args)
    }\n${extra}`;
  };
  const configs = serversFromYaml(
    stdio("good", "echo") + stdio("crashy", "echo,crash") +
      stdio("hangs", "echo,hang", "  timeout: 1\n") +
      `crashy-http:\n  url: ${JSON.stringify(crashyHttp.url)}\n  timeout: 20`,
  );
  const manager = new McpManager({
    reconnect: false,
    clientInfo: CLIENT.clientInfo,
    stderrLogPath: "/test/logs/mcp-stderr.log",
  });
  const stillWorks = async () => {
    const result = await manager.callTool("mcp__good__echo", { message: "still here" });
    assert.equal(textOf(result), "Echo: still here");
  };
  try {
    await manager.start(configs);
    for (const state of manager.servers()) {
      assert.equal(state.status, "connected", `${state.name}: ${state.error}`);
    }

    await t.step(
      "stdio crash: the connection is lost with the exit code and last stderr lines, the call is not replayed",
      async () => {
        const started = performance.now();
        const error = await manager.callTool("mcp__crashy__crash").then(
          () => assert.fail("crash answered"),
          (error: unknown) => error,
        );
        assert.ok(error instanceof McpServerError, String(error));
        assert.equal(error.server, "crashy");
        assert.equal(error.kind, "closed");
        assert.equal(
          error.message,
          "MCP server 'crashy': the connection was lost during tool 'crash': the process exited " +
            'with code 1; its last stderr lines: "fixture: serving era dual over stdio" | ' +
            '"fixture: crash tool called, exiting with code 1" (all of it in /test/logs/mcp-stderr.log); ' +
            "not retried because the tool may have side effects",
        );
        assert.ok(performance.now() - started < SLACK_MS);
        const crashy = manager.servers().find((state) => state.name === "crashy")!;
        assert.equal(crashy.status, "failed");
        assert.match(crashy.error ?? "", /^MCP server 'crashy': /);
        await stillWorks();
      },
    );

    await t.step("HTTP crash: the call fails naming server and tool", async () => {
      const error = await manager.callTool("mcp__crashy_http__crash").then(
        () => assert.fail("crash answered"),
        (error: unknown) => error,
      );
      assert.ok(error instanceof McpServerError, String(error));
      assert.equal(error.server, "crashy-http");
      assert.match(error.message, /^MCP server 'crashy-http': .*'crash'/);
      assert.equal(error.kind, "closed", error.message);
      assert.match(error.message, /not retried because the tool may have side effects/);
      assert.equal((await crashyHttp.process.status).code, 1);
      await stillWorks();
    });

    await t.step("hang: the call times out at `timeout`, the server stays usable", async () => {
      const started = performance.now();
      const error = await manager.callTool("mcp__hangs__hang").then(
        () => assert.fail("hang answered"),
        (error: unknown) => error,
      );
      const ms = performance.now() - started;
      assert.ok(error instanceof McpServerError, String(error));
      assert.equal(error.kind, "timeout");
      assert.equal(
        error.message,
        "MCP server 'hangs': tool 'hang' did not answer within timeout (1 s); if the tool " +
          "needs longer, raise mcp_servers.hangs.timeout in /test/config.yaml",
      );
      assert.ok(ms >= 900 && ms < 1_000 + SLACK_MS, `took ${Math.round(ms)} ms`);
      const echo = await manager.callTool("mcp__hangs__echo", { message: "after" });
      assert.equal(textOf(echo), "Echo: after");
      await stillWorks();
    });
  } finally {
    await manager.shutdown();
  }
});

Deno.test("a malformed url or command never reaches the manager, even with good siblings", () => {
  // The same entries, one key at a time: each is dropped alone.
  for (
    const [key, value] of [
      ["args", "{a: 1}"],
      ["timeout", "soon"],
      ["connect_timeout", "-1"],
      ["env", "[1, 2]"],
    ] as const
  ) {
    const text =
      `mcp_servers:\n  ok:\n    command: deno\n  broken:\n    command: deno\n    ${key}: ${value}\n`;
    const { servers, issues } = parseMcpServers(ConfigSource.parse("/c.yaml", text), {
      lookup: () => undefined,
      userHome: "/home/test",
      workspaceFolder: "/work",
      pathSeparator: "/",
    });
    assert.deepEqual(servers.map((server) => server.name), ["ok"], key);
    const error = issues.find((issue) => issue.severity === "error");
    assert.deepEqual(
      error && { server: error.server, key: error.key, line: error.line },
      { server: "broken", key, line: 6 },
    );
  }
});
