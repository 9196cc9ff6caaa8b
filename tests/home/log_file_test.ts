import assert from "node:assert/strict";
import { join } from "node:path";
import { RotatingLogFile } from "../../src/home/log_file.ts";
import { modeOf, namesIn, withTempDir } from "./_helpers.ts";

const nextTurn = () => new Promise((resolve) => setTimeout(resolve, 0));

Deno.test("RotatingLogFile: lines of one turn are written together on the next turn", async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, "app.log");
    using file = new RotatingLogFile(path, { maxBytes: 1 << 20, maxFiles: 2 });
    file.append("a\n");
    file.append("b\n");
    assert.equal(Deno.readTextFileSync(path), "", "nothing is written while the turn lasts");
    await nextTurn();
    assert.equal(Deno.readTextFileSync(path), "a\nb\n");
    file.append("c\n");
    file.flush();
    assert.equal(Deno.readTextFileSync(path), "a\nb\nc\n", "flush writes at once");
  });
});

Deno.test("RotatingLogFile: appends to an existing file and makes it 0600", async () => {
  await withTempDir((dir) => {
    const path = join(dir, "app.log");
    Deno.writeTextFileSync(path, "old\n");
    Deno.chmodSync(path, 0o644);
    const file = new RotatingLogFile(path, { maxBytes: 1 << 20, maxFiles: 2 });
    assert.equal(modeOf(path), 0o600);
    file.append("new\n");
    file.close();
    file.append("dropped after close\n");
    file.flush();
    assert.equal(Deno.readTextFileSync(path), "old\nnew\n");
  });
});

Deno.test("RotatingLogFile: a batch is split across files at the size limit, in order", async () => {
  await withTempDir((dir) => {
    const path = join(dir, "app.log");
    const file = new RotatingLogFile(path, { maxBytes: 10, maxFiles: 3 });
    for (const line of ["1111\n", "2222\n", "3333\n", "4444\n", "5555\n"]) file.append(line);
    file.close();
    assert.deepEqual(namesIn(dir), ["app.log", "app.log.1", "app.log.2"]);
    assert.equal(Deno.readTextFileSync(`${path}.2`), "1111\n2222\n");
    assert.equal(Deno.readTextFileSync(`${path}.1`), "3333\n4444\n");
    assert.equal(Deno.readTextFileSync(path), "5555\n");
    for (const name of namesIn(dir)) assert.equal(modeOf(join(dir, name)), 0o600, name);
  });
});

Deno.test("RotatingLogFile: the oldest file falls off; a line longer than the limit is kept whole", async () => {
  await withTempDir((dir) => {
    const path = join(dir, "app.log");
    const file = new RotatingLogFile(path, { maxBytes: 6, maxFiles: 1 });
    file.append("one\n");
    file.append("two\n");
    file.append("a line longer than six bytes\n");
    file.append("three\n");
    file.close();
    assert.deepEqual(namesIn(dir), ["app.log", "app.log.1"]);
    assert.equal(Deno.readTextFileSync(`${path}.1`), "a line longer than six bytes\n");
    assert.equal(Deno.readTextFileSync(path), "three\n");
  });
});

Deno.test("RotatingLogFile: a failed rotation is reported and the lines go on in the current file", async () => {
  await withTempDir((dir) => {
    const path = join(dir, "app.log");
    // A non-empty folder where the rotated file must go: the rename fails.
    Deno.mkdirSync(`${path}.1/blocker`, { recursive: true });
    const errors: unknown[] = [];
    const file = new RotatingLogFile(path, {
      maxBytes: 5,
      maxFiles: 1,
      onError: (error) => errors.push(error),
    });
    file.append("aaaa\n");
    file.flush();
    file.append("bbbb\n"); // needs a rotation, which fails: the line goes on in app.log
    file.flush();
    assert.equal(errors.length, 1);
    file.append("cccc\n");
    file.close();
    assert.equal(errors.length, 2, "each flush tries the rotation again");
    assert.equal(Deno.readTextFileSync(path), "aaaa\nbbbb\ncccc\n", "no line was lost");
    Deno.removeSync(`${path}.1`, { recursive: true });
    const again = new RotatingLogFile(path, { maxBytes: 5, maxFiles: 1 });
    again.append("dddd\n");
    again.close();
    assert.equal(Deno.readTextFileSync(`${path}.1`), "aaaa\nbbbb\ncccc\n");
    assert.equal(Deno.readTextFileSync(path), "dddd\n");
  });
});
