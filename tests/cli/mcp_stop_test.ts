/**
 * `agent mcp list | test | tools | call` stopped by SIGTERM, SIGHUP or Ctrl-C (SIGINT sent to the
 * agent alone, as `timeout` or a supervisor does): the command ends at once, says why, and leaves
 * no stdio server running.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { stringify } from "yaml";
import { stdioCommand } from "../fixtures/mcp/spawn.ts";
import { childEnv, MAIN, parseOneJson, processesWithEnv, REPO, tempHome } from "./_helpers.ts";
import { writeConfig } from "./_mcp_helpers.ts";

const WAIT_MS = 30_000;

/** Polls `ready` until it holds; fails after {@linkcode WAIT_MS} with `what`. */
async function until(ready: () => boolean, what: () => string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function readIfExists(file: string): string {
  try {
    return Deno.readTextFileSync(file);
  } catch {
    return "";
  }
}

Deno.test("agent mcp: a stop signal ends the command and shuts down the servers it started", async (t) => {
  await using home = await tempHome();
  const marker = `mcp-stop-${crypto.randomUUID()}`;
  const env = { AGENT_TEST_MARKER: marker };
  writeConfig(
    home.home,
    stringify({
      mcp_servers: {
        // Never answers `initialize`; its connect_timeout is far beyond this test.
        mute: { command: "sleep", args: ["300"], env, connect_timeout: 300 },
        // Connects; its tool `hang` never answers.
        stuck: { ...stdioCommand(["--tools", "hang"]), env },
      },
    }),
  );
  const children = () => processesWithEnv("AGENT_TEST_MARKER", marker);
  const stderrLog = join(home.home, "logs", "mcp-stderr.log");
  const cases = [
    { args: ["list"], signal: "SIGTERM", how: "SIGTERM" },
    { args: ["list", "--json"], signal: "SIGINT", how: "Ctrl-C" },
    { args: ["test", "mute"], signal: "SIGHUP", how: "SIGHUP" },
    { args: ["tools"], signal: "SIGTERM", how: "SIGTERM" },
    { args: ["call", "stuck", "hang"], signal: "SIGTERM", how: "SIGTERM", inCall: true },
    { args: ["call", "stuck", "hang", "--json"], signal: "SIGINT", how: "Ctrl-C", inCall: true },
  ] as const;
  for (const { args, signal, how, ...rest } of cases) {
    await t.step(`mcp ${args.join(" ")}, ${signal}`, async () => {
      const calls = readIfExists(stderrLog).split("hang called").length;
      const child = new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", MAIN, "mcp", ...args],
        cwd: REPO,
        env: childEnv(home.home),
        clearEnv: true,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const output = child.output();
      if ("inCall" in rest) {
        // The tool call is under way: the server logged it (to <home>/logs/mcp-stderr.log).
        await until(
          () => readIfExists(stderrLog).split("hang called").length > calls,
          () => "the call of hang",
        );
      } else {
        await until(() => children().length > 0, () => "a server process");
      }
      child.kill(signal);
      const { code, stdout, stderr } = await output;
      const err = new TextDecoder().decode(stderr);
      const out = new TextDecoder().decode(stdout);
      assert.equal(code, 1, err);
      const message = `stopped by ${how}; the MCP servers it started were shut down`;
      if ((args as readonly string[]).includes("--json")) {
        // --json: the error is the one document on stdout.
        assert.equal((parseOneJson(out).error as { message?: string })?.message, message);
        assert.equal(err, "");
      } else {
        assert.ok(err.split("\n").includes(`agent: ${message}`), err);
        assert.equal(out, "");
      }
      assert.deepEqual(children(), [], "no server process is left");
    });
  }
});
