/** `writeFileAtomic` through symbolic links: the target is replaced atomically, the link stays. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { writeFileAtomic } from "../../src/home/files.ts";
import { setDotenvValues } from "../../src/home/dotenv_edit.ts";
import { editConfigFile } from "../../src/home/config_edit.ts";
import { modeOf, namesIn, withTempDir } from "./_helpers.ts";

Deno.test("writeFileAtomic: a symlinked file writes its target and keeps the link", async () => {
  await withTempDir((dir) => {
    Deno.mkdirSync(join(dir, "dotfiles"));
    Deno.mkdirSync(join(dir, "home"));
    const target = join(dir, "dotfiles", "config.yaml");
    const link = join(dir, "home", "config.yaml");
    Deno.writeTextFileSync(target, "old\n");
    Deno.symlinkSync("../dotfiles/config.yaml", link); // relative, as `ln -s` makes it
    writeFileAtomic(link, "new\n");
    assert.ok(Deno.lstatSync(link).isSymlink, "the link is still a link");
    assert.equal(Deno.readLinkSync(link), "../dotfiles/config.yaml");
    assert.equal(Deno.readTextFileSync(target), "new\n");
    assert.equal(modeOf(target), 0o600);
    // No temp file is left in either folder.
    assert.deepEqual(namesIn(join(dir, "dotfiles")), ["config.yaml"]);
    assert.deepEqual(namesIn(join(dir, "home")), ["config.yaml"]);
  });
});

Deno.test("writeFileAtomic: a chain of links and a dangling link write the final target", async () => {
  await withTempDir((dir) => {
    const target = join(dir, "real.env");
    Deno.symlinkSync(join(dir, "middle"), join(dir, ".env"));
    Deno.symlinkSync("real.env", join(dir, "middle"));
    writeFileAtomic(join(dir, ".env"), "A=1\n"); // the target does not exist yet
    assert.equal(Deno.readTextFileSync(target), "A=1\n");
    assert.ok(Deno.lstatSync(join(dir, ".env")).isSymlink);
    assert.ok(Deno.lstatSync(join(dir, "middle")).isSymlink);
    assert.equal(modeOf(target), 0o600);
  });
});

Deno.test("writeFileAtomic: a loop of links is an error naming the file", async () => {
  await withTempDir((dir) => {
    Deno.symlinkSync(join(dir, "b"), join(dir, "a"));
    Deno.symlinkSync(join(dir, "a"), join(dir, "b"));
    assert.throws(
      () => writeFileAtomic(join(dir, "a"), "x"),
      new RegExp(`^Error: cannot write ${dir}/a: too many levels of symbolic links`),
    );
  });
});

Deno.test("setDotenvValues and editConfigFile keep symlinked .env and config.yaml links", async () => {
  await withTempDir((dir) => {
    Deno.mkdirSync(join(dir, "store"));
    Deno.writeTextFileSync(join(dir, "store", "env"), "A=1\n");
    Deno.writeTextFileSync(join(dir, "store", "yaml"), "# mine\na: 1\n");
    Deno.symlinkSync(join(dir, "store", "env"), join(dir, ".env"));
    Deno.symlinkSync(join(dir, "store", "yaml"), join(dir, "config.yaml"));
    setDotenvValues(join(dir, ".env"), { B: "2" });
    editConfigFile(join(dir, "config.yaml"), (doc) => void doc.set("b", 2));
    assert.ok(Deno.lstatSync(join(dir, ".env")).isSymlink);
    assert.ok(Deno.lstatSync(join(dir, "config.yaml")).isSymlink);
    assert.equal(Deno.readTextFileSync(join(dir, "store", "env")), "A=1\nB=2\n");
    assert.equal(Deno.readTextFileSync(join(dir, "store", "yaml")), "# mine\na: 1\nb: 2\n");
  });
});
