/**
 * A stdio server whose process exits while connecting (a shell wrapper that fails, a missing
 * binary behind `sh -c exec`): `agent mcp test | list | tools` report the exit at once, with the
 * last stderr lines and the absolute path of this home's `logs/mcp-stderr.log`, also when a
 * child of the wrapper keeps its pipes open (that child is stopped, not left running).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { stringify } from "yaml";
import {
  cli,
  type CliResult,
  parseOneJson,
  processesWithEnv,
  type TempHome,
  tempHome,
} from "./_helpers.ts";
import { denoEnv, writeConfig } from "./_mcp_helpers.ts";

function expectCode(result: CliResult, code: number): void {
  assert.equal(result.code, code, `exit code\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
}

/** The scripts of stdio servers that exit at start. */
const EXITING = {
  exits: "echo 'cannot open /nowhere/db' >&2; exit 3",
  missing: "exec some-missing-binary-agent-test",
  // The shell exits; its background child holds stdout and stderr open.
  forks: "echo 'forking' >&2; sleep 300 & exit 3",
  // The same with exit 0, and a child that ignores SIGTERM.
  stubborn: "trap '' TERM; sleep 300 & exit 0",
};

/**
 * A temp home whose config.yaml has the servers `names` of {@linkcode EXITING}, their processes
 * marked with `AGENT_TEST_MARKER=<marker>`; `log` is the home's mcp-stderr.log. Their
 * connect_timeout is far beyond what a passing run takes, so waiting for it shows as "no answer
 * within connect_timeout" in the message.
 */
async function homeWithExiting(
  ...names: (keyof typeof EXITING)[]
): Promise<TempHome & { marker: string; log: string }> {
  const home = await tempHome();
  const marker = `mcp-exit-${crypto.randomUUID()}`;
  const entry = (script: string) => ({
    command: "sh",
    args: ["-c", script],
    env: { AGENT_TEST_MARKER: marker },
    connect_timeout: 30,
  });
  const servers = Object.fromEntries(names.map((name) => [name, entry(EXITING[name])]));
  writeConfig(home.home, stringify({ mcp_servers: servers }));
  return { ...home, marker, log: join(home.home, "logs", "mcp-stderr.log") };
}

Deno.test("mcp test: a stdio wrapper that exits names the exit, its stderr and the log file of this home", async () => {
  await using home = await homeWithExiting("exits", "missing");
  const { log } = home;
  const expected: Record<string, string> = {
    exits: `the process exited with code 3; its last stderr lines: "cannot open /nowhere/db"`,
    missing: "the process exited with code 127; its last stderr lines: " +
      `"sh: 1: exec: some-missing-binary-agent-test: not found"`,
  };
  for (const [name, diagnosis] of Object.entries(expected)) {
    const result = await cli(home.home, ["mcp", "test", name], { env: denoEnv() });
    expectCode(result, 1);
    // The shell names itself by its path (`/usr/bin/sh: 1: …`) or as `sh`.
    assert.equal(
      result.stderr.replace(/"[^"]*\/sh: /, '"sh: '),
      `MCP server '${name}': the connection closed during the handshake: ${diagnosis} ` +
        `(all of it in ${log})\n`,
    );
    assert.equal(result.stdout, "");
  }
  assert.match(Deno.readTextFileSync(log), /\[exits\] cannot open \/nowhere\/db/);
});

Deno.test("mcp test: a wrapper that exits while its child holds the pipes fails at once and leaves no child", async () => {
  await using home = await homeWithExiting("forks", "stubborn");
  const { log, marker } = home;
  const expected: Record<string, string> = {
    forks: `the process exited with code 3; its last stderr lines: "forking" (all of it in ${log})`,
    stubborn: "the process exited with code 0; it wrote nothing to stderr",
  };
  try {
    for (const [name, diagnosis] of Object.entries(expected)) {
      const result = await cli(home.home, ["mcp", "test", name], { env: denoEnv() });
      const left = processesWithEnv("AGENT_TEST_MARKER", marker);
      expectCode(result, 1);
      assert.equal(
        result.stderr,
        `MCP server '${name}': the connection closed during the handshake: ${diagnosis}\n`,
      );
      assert.deepEqual(left, [], `${name}: no child is left running`);
    }
  } finally {
    // What a failing run left behind is not left to run on.
    for (const pid of processesWithEnv("AGENT_TEST_MARKER", marker)) Deno.kill(pid, "SIGKILL");
  }
});

Deno.test("mcp list and mcp tools name this home's mcp-stderr.log for a stdio server that exited", async () => {
  await using home = await homeWithExiting("exits");
  const message = "MCP server 'exits': the connection closed during the handshake: the process " +
    `exited with code 3; its last stderr lines: "cannot open /nowhere/db" (all of it in ${home.log})`;
  const env = denoEnv();

  const list = await cli(home.home, ["mcp", "list", "--json"], { env });
  const servers = parseOneJson(list.stdout).servers as { name: string; error?: string }[];
  assert.deepEqual(servers.map((server) => [server.name, server.error]), [["exits", message]]);

  const tools = await cli(home.home, ["mcp", "tools"], { env });
  assert.ok(tools.stderr.split("\n").includes(`error: ${message}`), tools.stderr);
});
