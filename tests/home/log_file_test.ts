import assert from "node:assert/strict";
import { join } from "node:path";
import { RotatingLogFile } from "../../src/home/log_file.ts";
import { modeOf, namesIn, withTempDir } from "./_helpers.ts";
import { bwrapWorks } from "../fixtures/bwrap.ts";

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

Deno.test("RotatingLogFile openOnFirstLine: nothing exists until a line is written", async () => {
  await withTempDir((dir) => {
    const folder = join(dir, "home", "logs");
    const path = join(folder, "app.log");
    const file = new RotatingLogFile(path, {
      maxBytes: 1 << 20,
      maxFiles: 2,
      openOnFirstLine: true,
    });
    file.flush();
    assert.deepEqual(namesIn(dir), [], "no folder, no file before the first line");
    file.append("first\n");
    file.flush();
    assert.equal(Deno.readTextFileSync(path), "first\n");
    assert.equal(modeOf(join(dir, "home")), 0o700);
    assert.equal(modeOf(folder), 0o700);
    assert.equal(modeOf(path), 0o600);
    file.close();
    const unused = new RotatingLogFile(join(dir, "other", "app.log"), {
      maxBytes: 1 << 20,
      maxFiles: 2,
      openOnFirstLine: true,
    });
    unused.close();
    assert.deepEqual(namesIn(dir), ["home"], "closed without a line: nothing was created");
  });
});

Deno.test("RotatingLogFile openOnFirstLine: what is there already is opened, or fails, at once", async () => {
  await withTempDir((dir) => {
    const path = join(dir, "app.log");
    Deno.writeTextFileSync(path, "old\n");
    Deno.chmodSync(path, 0o644);
    const options = { maxBytes: 1 << 20, maxFiles: 2, openOnFirstLine: true };
    new RotatingLogFile(path, options).close();
    assert.equal(modeOf(path), 0o600, "opened at once");
    Deno.mkdirSync(join(dir, "folder.log"));
    assert.throws(
      () => new RotatingLogFile(join(dir, "folder.log"), options),
      Deno.errors.IsADirectory,
    );
    // A file where the folder should be: the first line cannot be written, which is reported.
    Deno.writeTextFileSync(join(dir, "not-a-folder"), "");
    assert.throws(
      () => new RotatingLogFile(join(dir, "not-a-folder", "app.log"), options),
      Deno.errors.NotADirectory,
    );
    const errors: unknown[] = [];
    const later = new RotatingLogFile(join(dir, "gone", "app.log"), {
      ...options,
      onError: (error) => errors.push(error),
    });
    Deno.writeTextFileSync(join(dir, "gone"), "");
    later.append("dropped\n");
    later.close();
    assert.equal(errors.length, 1);
    assert.equal(Deno.readTextFileSync(join(dir, "gone")), "");
  });
});

Deno.test("RotatingLogFile: a log deleted while open, or its folder, is started again at its path, and that is reported; one rotated elsewhere is followed", async () => {
  await withTempDir((dir) => {
    const folder = join(dir, "logs");
    const path = join(folder, "app.log");
    Deno.mkdirSync(folder);
    const errors: unknown[] = [];
    const file = new RotatingLogFile(path, {
      maxBytes: 1 << 20,
      maxFiles: 2,
      onError: (error) => errors.push(error),
    });
    file.append("before\n");
    file.flush();
    Deno.removeSync(path);
    file.append("after the file was deleted\n");
    file.flush();
    assert.equal(Deno.readTextFileSync(path), "after the file was deleted\n");
    assert.equal(modeOf(path), 0o600);
    assert.match(
      String(errors[0]),
      /app\.log was deleted or moved away while it was open; a new one is started/,
    );
    Deno.removeSync(folder, { recursive: true });
    file.append("after the folder was deleted\n");
    file.flush();
    assert.equal(Deno.readTextFileSync(path), "after the folder was deleted\n");
    assert.equal(modeOf(folder), 0o700);
    // Moved away and replaced, as logrotate or another process's rotation does: followed quietly.
    Deno.renameSync(path, `${path}.1`);
    Deno.writeTextFileSync(path, "");
    file.append("after a rotation elsewhere\n");
    file.close();
    assert.equal(Deno.readTextFileSync(path), "after a rotation elsewhere\n");
    assert.equal(Deno.readTextFileSync(`${path}.1`), "after the folder was deleted\n");
    assert.equal(errors.length, 2);
  });
});

Deno.test({
  name: "RotatingLogFile: a full disk leaves no half line behind; once there is room again, " +
    "lines go on whole (needs bwrap)",
  ignore: !bwrapWorks,
  fn: async () => {
    await withTempDir(async (dir) => {
      // Run on a 64 KiB tmpfs of its own: fills it with lines until a write fails (part of a
      // line fits), frees the room a filler file took, and logs on.
      const script = join(dir, "fill.ts");
      Deno.writeTextFileSync(
        script,
        `import { RotatingLogFile } from ${
          JSON.stringify(new URL("../../src/home/log_file.ts", import.meta.url).href)
        };
        const disk = Deno.args[0];
        Deno.writeFileSync(disk + "/filler", new Uint8Array(16384));
        const errors = [];
        const file = new RotatingLogFile(disk + "/app.log", {
          maxBytes: 1 << 20, maxFiles: 1, onError: (error) => errors.push(String(error)),
        });
        const line = (n) => JSON.stringify({ n, text: "x".repeat(90 + (n % 7)) }) + "\\n";
        let n = 0;
        while (errors.length === 0 && n < 10000) { file.append(line(n++)); file.flush(); }
        Deno.removeSync(disk + "/filler");
        for (let i = 0; i < 5; i++) file.append(line(n++));
        file.close();
        console.log(JSON.stringify({ errors, text: Deno.readTextFileSync(disk + "/app.log") }));`,
      );
      const disk = join(dir, "disk");
      Deno.mkdirSync(disk);
      const output = await new Deno.Command("bwrap", {
        args: [
          ...["--dev-bind", "/", "/", "--size", "65536", "--tmpfs", disk, "--"],
          ...[Deno.execPath(), "run", "-A", "--no-check", script, disk],
        ],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stderr = new TextDecoder().decode(output.stderr);
      assert(output.success, stderr);
      const { errors, text } = JSON.parse(new TextDecoder().decode(output.stdout));
      assert.equal(errors.length, 1);
      assert.match(errors[0], /No space left on device/);
      assert(text.endsWith("\n"));
      const lines = text.split("\n").slice(0, -1);
      for (const line of lines) JSON.parse(line); // each one whole
      // The lines after the room came back are all there, after the last whole one before.
      const last = lines.slice(-6).map((line: string) => JSON.parse(line).n);
      assert.deepEqual(last.slice(1), [1, 2, 3, 4, 5].map((i) => last[0] + 1 + i));
      assert(lines.length > 100, `${lines.length} lines`);
    });
  },
});
