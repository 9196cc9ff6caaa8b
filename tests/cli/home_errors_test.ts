/**
 * A `<home>` the CLI cannot use: `AGENT_HOME` naming a file, a home on a read-only file system.
 * The user gets one line naming the file and the problem, never a stack trace.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { childEnv, cli, MAIN, REPO, tempHome } from "./_helpers.ts";

Deno.test("AGENT_HOME naming a file: one line saying it is not a folder, exit 1", async () => {
  await using h = await tempHome();
  const file = join(h.home, "not-a-folder");
  await Deno.writeTextFile(file, "x");
  for (const args of [["metrics", "status"], ["webhook", "list"], ["mcp", "list"]]) {
    const result = await cli(file, args);
    assert.equal(result.code, 1, args.join(" "));
    assert.equal(
      result.stderr,
      `agent: <home> ${file} is not a folder: set AGENT_HOME to a folder (it is created when ` +
        "missing), or unset it to use ~/.agent\n",
    );
  }
  const json = await cli(file, ["metrics", "status", "--json"]);
  assert.match(JSON.parse(json.stdout).error.message, /is not a folder/);
});

Deno.test("AGENT_HOME under a file: one line naming the file in the way, exit 1", async () => {
  await using h = await tempHome();
  const file = join(h.home, "not-a-folder");
  await Deno.writeTextFile(file, "x");
  for (const home of [join(file, "home"), join(file, "a", "b")]) {
    for (const args of [["metrics", "status"], ["webhook", "subscribe", "x"], ["gateway", "run"]]) {
      const result = await cli(home, args);
      assert.equal(result.code, 1, args.join(" "));
      assert.equal(
        result.stderr,
        `agent: <home> ${home} cannot be created: ${file} is a file, not a folder. Set ` +
          "AGENT_HOME to a folder (it is created when missing), or unset it to use ~/.agent\n",
      );
    }
  }
  assert.equal(Deno.readTextFileSync(file), "x");
});

/** Whether bubblewrap can mount a folder read-only here (it needs user namespaces). */
async function canMountReadOnly(dir: string): Promise<boolean> {
  try {
    const { success } = await new Deno.Command("bwrap", {
      args: ["--bind", "/", "/", "--ro-bind", dir, dir, "--dev", "/dev", "true"],
      stdout: "null",
      stderr: "null",
    }).output();
    return success;
  } catch {
    return false;
  }
}

const probe = await Deno.makeTempDir();
const READ_ONLY = await canMountReadOnly(probe);
await Deno.remove(probe);
if (!READ_ONLY) console.log("home_errors_test: skipping: bubblewrap cannot mount read-only here");

Deno.test({
  name: "a read-only <home>: the write names the real file, no stack trace",
  ignore: !READ_ONLY,
  fn: async () => {
    await using h = await tempHome();
    await Deno.writeTextFile(h.config, "# mine\n");
    const run = async (args: string[]) => {
      const output = await new Deno.Command("bwrap", {
        args: [
          ...["--bind", "/", "/", "--ro-bind", h.home, h.home, "--dev", "/dev", "--proc", "/proc"],
          ...[Deno.execPath(), "run", "-A", "--quiet", "--config", join(REPO, "deno.json")],
          ...[MAIN, ...args],
        ],
        env: childEnv(h.home),
        clearEnv: true,
        stdout: "piped",
        stderr: "piped",
      }).output();
      const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
      return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
    };
    const text = await run(["metrics", "enable"]);
    assert.equal(text.code, 1, text.stderr);
    assert.equal(
      text.stderr,
      `agent: cannot write ${h.config}: Read-only file system (os error 30)\n`,
    );
    const json = await run(["metrics", "enable", "--json"]);
    assert.equal(json.code, 1);
    assert.equal(
      JSON.parse(json.stdout).error.message,
      `cannot write ${h.config}: Read-only file system (os error 30)`,
    );
    assert.equal(await Deno.readTextFile(h.config), "# mine\n");
  },
});
