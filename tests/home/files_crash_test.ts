/**
 * A writer killed with SIGKILL in the middle of rewriting a `<home>` file (a real process,
 * writing in a loop): the file is the old or the new version, never a torn one, and the temporary
 * files such kills leave are deleted by the next edit of that file (before, they accumulated).
 */
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { editConfigFile } from "../../src/home/config_edit.ts";
import { setDotenvValues } from "../../src/home/dotenv_edit.ts";
import { updateSubscriptions } from "../../src/webhook/subscriptions.ts";
import { modeOf, namesIn, withTempDir } from "./_helpers.ts";

const FILES_URL = new URL("../../src/home/files.ts", import.meta.url).href;

/** `config.yaml` of round `n`: a long comment (so a write takes a while), then `round: n`. */
function version(n: number): string {
  return `# ${"x".repeat(4 * 1024 * 1024)}\nround: ${n}\n`;
}

/** Starts a process rewriting `file` in a loop as the real writers do (round 1, 2, ...). */
function startWriter(file: string): Deno.ChildProcess {
  const code = `import { withEditLock, writeFileAtomic } from ${JSON.stringify(FILES_URL)};
    const file = ${JSON.stringify(file)};
    const comment = "# " + "x".repeat(4 * 1024 * 1024) + "\\n";
    for (let n = 1; ; n++) {
      withEditLock(file, () => writeFileAtomic(file, comment + "round: " + n + "\\n"));
    }`;
  return new Deno.Command(Deno.execPath(), {
    args: ["eval", code],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
}

const temps = (dir: string) => namesIn(dir).filter((name) => name.endsWith(".tmp"));

/**
 * Starts a writer of `file` and kills it with SIGKILL as soon as a new temporary file shows
 * beside it: in the middle of a write.
 */
async function killMidWrite(file: string): Promise<void> {
  const dir = dirname(file);
  const before = new Set(temps(dir));
  const child = startWriter(file);
  const deadline = Date.now() + 30_000;
  while (temps(dir).every((name) => before.has(name))) {
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      await child.status;
      assert.fail(`no temporary file showed in 30 s: ${await new Response(child.stderr).text()}`);
    }
  }
  child.kill("SIGKILL");
  assert.equal((await child.status).signal, "SIGKILL");
  await child.stderr.cancel();
}

Deno.test("a config.yaml writer killed with SIGKILL mid-write leaves a whole version, and its temporary files go with the next edit", async () => {
  await withTempDir(async (home) => {
    const file = join(home, "config.yaml");
    Deno.writeTextFileSync(file, version(0), { mode: 0o600 });
    for (let kill = 1; kill <= 3; kill++) {
      await killMidWrite(file);
      const text = Deno.readTextFileSync(file);
      const round = /\nround: (\d+)\n$/.exec(text)?.[1];
      assert.ok(round !== undefined && text === version(Number(round)), "a torn config.yaml");
      assert.equal(modeOf(file), 0o600);
    }
    // One more as a kill leaves it, whatever the timing above; an unrelated file and another
    // file's temporary file stay.
    const left = `.config.yaml.${crypto.randomUUID()}.tmp`;
    Deno.writeTextFileSync(join(home, left), "# xxx");
    const otherFiles = [".env.0b6f5d0e-3c2a-4a55-9a0e-2f1f8f0d3b11.tmp", "notes.tmp"];
    for (const name of otherFiles) Deno.writeTextFileSync(join(home, name), "mine");
    editConfigFile(file, (doc) => void doc.set("edited", true));
    assert.deepEqual(temps(home), otherFiles.sort());
    assert.match(Deno.readTextFileSync(file), /\nround: \d+\nedited: true\n$/);
  });
});

Deno.test("the next edit of .env, webhook_subscriptions.json or a symlinked config.yaml deletes their left temporary files", async () => {
  await withTempDir((dir) => {
    const home = join(dir, "home");
    const dotfiles = join(dir, "dotfiles");
    Deno.mkdirSync(home);
    Deno.mkdirSync(dotfiles);
    Deno.writeTextFileSync(join(dotfiles, "config.yaml"), "# mine\n");
    Deno.symlinkSync(join(dotfiles, "config.yaml"), join(home, "config.yaml"));
    const leave = (folder: string, name: string) =>
      Deno.writeTextFileSync(join(folder, `.${name}.${crypto.randomUUID()}.tmp`), "torn");
    leave(home, ".env");
    leave(home, "webhook_subscriptions.json");
    leave(dotfiles, "config.yaml");

    setDotenvValues(join(home, ".env"), { A: "1" });
    assert.deepEqual(temps(home).length, 1, "only the .env ones");
    updateSubscriptions(join(home, "webhook_subscriptions.json"), () => {});
    editConfigFile(join(home, "config.yaml"), (doc) => void doc.set("a", 1));
    assert.deepEqual(temps(home), []);
    assert.deepEqual(namesIn(dotfiles), ["config.yaml"]);
    assert.ok(Deno.lstatSync(join(home, "config.yaml")).isSymlink);
  });
});
