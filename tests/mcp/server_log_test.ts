/**
 * A server's log messages (`notifications/message`) are written to `logs/mcp-stderr.log`, next
 * to what stdio servers write to stderr: one line each with level and logger, escaped, bounded.
 * Servers that declare `logging` are asked for `info` and up (`logging/setLevel` in the legacy
 * era, the logLevel `_meta` of each tool call in the modern era), over stdio and HTTP alike.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { McpManager } from "../../src/mcp/manager.ts";
import { MAX_LOG_MESSAGE, serverLogLevel, StderrLog } from "../../src/mcp/stderr_log.ts";
import { denoRunArgs, startHttpFixture, stdioCommand } from "../fixtures/mcp/spawn.ts";
import { serverEntry } from "./_helpers.ts";
import { everythingStdio, startEverything } from "../cli/_mcp_helpers.ts";

const NOW = () => new Date("2026-01-02T03:04:05.000Z");

/** Calls the fixture's `log` tool of `entry` through a manager whose log is `<tmp>/logs/...`. */
function logThrough(
  entry: Record<string, unknown>,
  args: Record<string, unknown>,
  level?: Parameters<typeof serverLogLevel>[0],
): Promise<string> {
  return logsOf(entry, async (manager) => {
    const result = await manager.callTool("mcp__logs__log", args);
    assert.deepEqual(result.content, [{ type: "text", text: "logged" }]);
  }, level);
}

/** The log messages written while `calls` uses server `logs` (`entry`) through a manager. */
async function logsOf(
  entry: Record<string, unknown>,
  calls: (manager: McpManager) => Promise<void>,
  level?: Parameters<typeof serverLogLevel>[0],
): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "mcp-server-log-" });
  const log = new StderrLog(join(dir, "logs", "mcp-stderr.log"), NOW);
  const manager = new McpManager({
    reconnect: false,
    onStderr: (server, text) => log.write(server, text),
    onServerLog: (server, message) => log.message(server, message),
    serverLogLevel: level === undefined ? undefined : serverLogLevel(level),
  });
  try {
    await manager.start([serverEntry("logs", { connect_timeout: 30, ...entry })]);
    const [state] = manager.servers();
    assert.equal(state.status, "connected", state.error);
    assert.deepEqual(state.warnings, []);
    await calls(manager);
  } finally {
    await manager.shutdown();
    log.close();
  }
  // The log messages, without the fixture's stderr lines.
  const text = Deno.readTextFileSync(join(dir, "logs", "mcp-stderr.log"))
    .split(/(?<=\n)/).filter((line) => !line.includes("] fixture: ")).join("");
  await Deno.remove(dir, { recursive: true });
  return text;
}

const ARGS = { level: "warning", message: "disk\x1b[2J almost\nfull", logger: "db" };
const LINE = "2026-01-02T03:04:05.000Z [logs] warning (db): disk\\u{1b}[2J almost\\u{a}full\n";

for (const era of ["legacy", "modern"] as const) {
  Deno.test(`a stdio server's log message (${era} era) is one escaped line of mcp-stderr.log; debug is not asked for`, async () => {
    const text = await logThrough({
      ...stdioCommand(["--era", era, "--tools", "log"]),
      protocol: era === "modern" ? "stateless" : "legacy",
    }, ARGS);
    assert.equal(text, LINE);
  });

  Deno.test(`an HTTP server's log message (${era} era) goes to mcp-stderr.log too`, async () => {
    await using server = await startHttpFixture([
      "--transport",
      "http",
      "--era",
      era,
      "--tools",
      "log",
    ]);
    const text = await logThrough({
      url: server.url,
      protocol: era === "modern" ? "stateless" : "legacy",
    }, ARGS);
    assert.equal(text, LINE);
  });
}

Deno.test("modern era: reading a resource and getting a prompt carry the logLevel _meta too", async () => {
  const text = await logsOf({
    ...stdioCommand(["--era", "modern", "--tools", "log", "--resources", "--prompts"]),
    protocol: "stateless",
  }, async (manager) => {
    const read = await manager.callTool("mcp__logs__read_resource", { uri: "note://hello" });
    assert.deepEqual(read.content, [{ type: "text", text: "hello" }]);
    const prompt = await manager.callTool("mcp__logs__get_prompt", {
      name: "greet",
      arguments: { name: "Ada" },
    });
    assert.match(JSON.stringify(prompt.content), /Hello, Ada!/);
  });
  assert.equal(
    text,
    "2026-01-02T03:04:05.000Z [logs] info: read note://hello\n" +
      "2026-01-02T03:04:05.000Z [logs] info: got prompt greet(Ada)\n",
  );
});

Deno.test("logging.level debug (or trace) asks servers for their debug messages too", async () => {
  const text = await logThrough(
    { ...stdioCommand(["--era", "legacy", "--tools", "log"]), protocol: "legacy" },
    { level: "error", message: { code: 7 } },
    "trace",
  );
  assert.equal(
    text,
    "2026-01-02T03:04:05.000Z [logs] debug: a debug message\n" +
      '2026-01-02T03:04:05.000Z [logs] error: {"code":7}\n',
  );
});

Deno.test("a huge log message is cut, saying how much was left out; the logger name too", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcp-server-log-" });
  const path = join(dir, "logs", "mcp-stderr.log");
  using log = new StderrLog(path, NOW);
  log.message("big", { level: "info", logger: "l".repeat(300), data: "x".repeat(1_000_000) });
  // Escapes count: a message of control characters is cut by its written length.
  log.message("ctl", { level: "info", data: "\x07".repeat(MAX_LOG_MESSAGE) });
  log.close();
  const [big, ctl, end] = Deno.readTextFileSync(path).split("\n");
  assert.equal(end, "");
  assert.equal(
    big,
    `2026-01-02T03:04:05.000Z [big] info (${"l".repeat(100)} … (200 more characters)): ` +
      `${"x".repeat(MAX_LOG_MESSAGE)} … (${1_000_000 - MAX_LOG_MESSAGE} more characters)`,
  );
  const kept = Math.floor(MAX_LOG_MESSAGE / "\\u{7}".length);
  assert.equal(
    ctl,
    `2026-01-02T03:04:05.000Z [ctl] info: ${"\\u{7}".repeat(kept)} … ` +
      `(${MAX_LOG_MESSAGE - kept} more characters)`,
  );
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a server that declares logging but refuses logging/setLevel connects, with a warning", async () => {
  const odd = fileURLToPath(new URL("../fixtures/mcp/odd_tools_stdio.ts", import.meta.url));
  const manager = new McpManager({ reconnect: false, onServerLog: () => {} });
  try {
    await manager.start([serverEntry("picky", {
      command: Deno.execPath(),
      args: denoRunArgs(odd, ["--tools", '["echo"]', "--logging-refused", "no levels\x1b[2J here"]),
      connect_timeout: 30,
    })]);
    const [state] = manager.servers();
    assert.equal(state.status, "connected", state.error);
    assert.deepEqual(state.warnings, [
      "MCP server 'picky': it declares logging, but refused logging/setLevel " +
      '("no levels\\u001b[2J here"); it sends the log messages it chooses',
    ]);
    assert.equal(manager.tools().length, 1);
  } finally {
    await manager.shutdown();
  }
});

/**
 * server-everything's toggle-simulated-logging sends a message of a random level at once and then
 * every 5 s: with `debug` asked for, each level is sent, so the first one is awaited here.
 */
async function everythingLogs(entry: Record<string, unknown>): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "mcp-server-log-" });
  const path = join(dir, "logs", "mcp-stderr.log");
  const log = new StderrLog(path, NOW);
  let logged!: () => void;
  const first = new Promise<void>((resolve) => logged = resolve);
  const manager = new McpManager({
    reconnect: false,
    onServerLog: (server, message) => {
      log.message(server, message);
      logged();
    },
    serverLogLevel: "debug",
  });
  try {
    await manager.start([serverEntry("everything", { connect_timeout: 60, ...entry })]);
    assert.equal(manager.servers()[0].logging, true);
    const tool = "mcp__everything__toggle_simulated_logging";
    await manager.callTool(tool, {});
    await first;
    await manager.callTool(tool, {}); // stops it
  } finally {
    await manager.shutdown();
    log.close();
  }
  const text = Deno.readTextFileSync(path);
  await Deno.remove(dir, { recursive: true });
  return text;
}

const EVERYTHING_LINE =
  /^2026-01-02T03:04:05\.000Z \[everything\] (debug|info|notice|warning|error|critical|alert|emergency): \w+[- ]level[- ]message/im;

Deno.test("server-everything over stdio: its simulated log messages are in mcp-stderr.log", async () => {
  assert.match(await everythingLogs(everythingStdio()), EVERYTHING_LINE);
});

Deno.test("server-everything over Streamable HTTP: its simulated log messages are in mcp-stderr.log", async () => {
  await using server = await startEverything("streamableHttp");
  assert.match(await everythingLogs({ url: server.url }), EVERYTHING_LINE);
});
