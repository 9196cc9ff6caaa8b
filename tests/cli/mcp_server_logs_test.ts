/**
 * Where a server's own output goes: `agent mcp test` names `<home>/logs/mcp-stderr.log` for a
 * stdio server's stderr and for the log messages of a server that sends them, and `agent mcp
 * call` writes those messages there, from `logging.level` up.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { startHttpFixture, stdioCommand } from "../fixtures/mcp/spawn.ts";
import { cli, tempHome } from "./_helpers.ts";
import { denoEnv, stdioServerLines, writeConfig } from "./_mcp_helpers.ts";

Deno.test("mcp test names mcp-stderr.log for stderr and log messages; an HTTP server without logging gets no line", async () => {
  await using home = await tempHome();
  await using http = await startHttpFixture(["--transport", "http", "--tools", "echo"]);
  writeConfig(home.home, [
    "mcp_servers:",
    ...stdioServerLines("local", stdioCommand(["--tools", "log"])),
    ...stdioServerLines("quiet", stdioCommand(["--tools", "echo"])),
    "  remote:",
    `    url: ${http.url}`,
  ]);
  const log = join(home.home, "logs", "mcp-stderr.log");
  const test = (name: string) => cli(home.home, ["mcp", "test", name], { env: denoEnv() });
  const local = await test("local");
  assert.equal(local.code, 0, local.stderr);
  assert.match(local.stdout, new RegExp(`^  logs: +stderr and log messages in ${log}$`, "m"));
  const quiet = await test("quiet");
  assert.match(quiet.stdout, new RegExp(`^  logs: +stderr in ${log}$`, "m"));
  const remote = await test("remote");
  assert.equal(remote.code, 0, remote.stderr);
  assert.doesNotMatch(remote.stdout, /logs:/);
});

Deno.test("mcp call: the server's log messages are in mcp-stderr.log, from logging.level up", async () => {
  await using home = await tempHome();
  const server = ["mcp_servers:", ...stdioServerLines("local", stdioCommand(["--tools", "log"]))];
  const log = join(home.home, "logs", "mcp-stderr.log");
  const call = async () => {
    const args = { level: "notice", message: "cache\nwarm", logger: "cache" };
    const result = await cli(
      home.home,
      ["mcp", "call", "local", "log", "--args", JSON.stringify(args)],
      { env: denoEnv() },
    );
    assert.equal(result.code, 0, result.stderr);
    const text = Deno.readTextFileSync(log);
    Deno.removeSync(log);
    return text.split("\n").filter((line) => !line.includes("] fixture: ")).map((line) =>
      line.replace(/^\S+ /, "")
    );
  };
  writeConfig(home.home, server);
  assert.deepEqual(await call(), ["[local] notice (cache): cache\\u{a}warm", ""]);
  writeConfig(home.home, ["logging:", "  level: debug", ...server]);
  assert.deepEqual(await call(), [
    "[local] debug (cache): a debug message",
    "[local] notice (cache): cache\\u{a}warm",
    "",
  ]);
});
