/**
 * `agent mcp` as a new user meets it: the mistakes people make when they copy a server's setup
 * from its README, and what the commands answer.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { cli, cliJson, type CliResult, tempHome } from "./_helpers.ts";

function expectCode(result: CliResult, code: number): void {
  assert.equal(result.code, code, `exit code\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
}

/** Whether `file` exists. */
function exists(file: string): boolean {
  try {
    Deno.statSync(file);
    return true;
  } catch {
    return false;
  }
}

Deno.test("mcp add: a whole command line in --command exits 2 with the --arg form to run; nothing written", async () => {
  await using home = await tempHome();
  const result = await cli(home.home, [
    "mcp",
    "add",
    "fs",
    "--command",
    "npx -y @modelcontextprotocol/server-filesystem '/tmp/my dir'",
    "--arg",
    "--verbose",
    "--env",
    "LOG=debug",
  ]);
  expectCode(result, 2);
  assert.equal(
    result.stderr,
    "agent: --command \"npx -y @modelcontextprotocol/server-filesystem '/tmp/my dir'\" is a whole " +
      "command line, but --command takes only the executable; each argument goes in its own " +
      "--arg. Nothing was written. Run instead: agent mcp add fs --command npx --arg -y --arg " +
      "@modelcontextprotocol/server-filesystem --arg '/tmp/my dir' --arg --verbose --env " +
      "LOG=debug\n",
  );
  assert.equal(exists(home.config), false);
  const doc = await cliJson(home.home, ["mcp", "add", "fs", "--command", "npx -y x", "--json"], 2);
  assert.match(
    doc.error.message,
    /Run instead: agent mcp add fs --command npx --arg -y --arg x --json$/,
  );
  assert.equal(exists(home.config), false);

  // An executable whose path holds a space is taken as written.
  const spaced = join(home.home, "my tools");
  Deno.mkdirSync(spaced);
  Deno.writeTextFileSync(join(spaced, "server"), "#!/bin/sh\n", { mode: 0o755 });
  const added = await cli(home.home, ["mcp", "add", "local", "--command", join(spaced, "server")]);
  expectCode(added, 0);
  assert.match(Deno.readTextFileSync(home.config), /command: .*my tools\/server/);
});
