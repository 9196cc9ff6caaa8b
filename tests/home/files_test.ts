import assert from "node:assert/strict";
import { join } from "node:path";
import {
  ensurePrivateDir,
  PRIVATE_DIR_MODE,
  PRIVATE_FILE_MODE,
  readTextIfExists,
  restrictFileMode,
  withEditLock,
  writeFileAtomic,
} from "../../src/home/files.ts";
import { modeOf, namesIn, withTempDir } from "./_helpers.ts";

/** Temp files writeFileAtomic may leave behind (`.<name>.<uuid>.tmp`). */
function tempFilesIn(dir: string): string[] {
  return namesIn(dir).filter((name) => name.endsWith(".tmp"));
}

Deno.test("file mode constants", () => {
  assert.equal(PRIVATE_DIR_MODE, 0o700);
  assert.equal(PRIVATE_FILE_MODE, 0o600);
});

Deno.test("ensurePrivateDir: creates nested folders, each 0700", async () => {
  await withTempDir((dir) => {
    const nested = join(dir, "a", "b", "c");
    ensurePrivateDir(nested);
    for (const path of [join(dir, "a"), join(dir, "a", "b"), nested]) {
      assert.ok(Deno.statSync(path).isDirectory, path);
      assert.equal(modeOf(path), 0o700, path);
    }
  });
});

Deno.test("ensurePrivateDir: an existing folder is fine and keeps its mode", async () => {
  await withTempDir((dir) => {
    const existing = join(dir, "shared");
    Deno.mkdirSync(existing);
    Deno.chmodSync(existing, 0o755);
    Deno.writeTextFileSync(join(existing, "keep.txt"), "kept");
    ensurePrivateDir(existing);
    ensurePrivateDir(existing);
    assert.equal(modeOf(existing), 0o755);
    assert.equal(Deno.readTextFileSync(join(existing, "keep.txt")), "kept");
  });
});

Deno.test("ensurePrivateDir: a file in the way is an error", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "file");
    Deno.writeTextFileSync(file, "x");
    assert.throws(() => ensurePrivateDir(join(file, "sub")));
  });
});

Deno.test("writeFileAtomic: writes text, mode 0600 by default, no temp file left", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "state.json");
    writeFileAtomic(file, '{"ok":true}\n');
    assert.equal(Deno.readTextFileSync(file), '{"ok":true}\n');
    assert.equal(modeOf(file), 0o600);
    assert.deepEqual(namesIn(dir), ["state.json"]);
  });
});

Deno.test("writeFileAtomic: writes bytes exactly (incl. large and empty data)", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "blob.bin");
    const bytes = new Uint8Array(3 * 1024 * 1024 + 7);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31 + 7) & 0xff;
    writeFileAtomic(file, bytes);
    assert.deepEqual(Deno.readFileSync(file), bytes);

    writeFileAtomic(file, "");
    assert.equal(Deno.statSync(file).size, 0);

    writeFileAtomic(file, "héllo ✓\n");
    assert.equal(Deno.readTextFileSync(file), "héllo ✓\n");
    assert.deepEqual(tempFilesIn(dir), []);
  });
});

Deno.test("writeFileAtomic: a given mode is applied exactly (not masked by umask)", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "script.sh");
    writeFileAtomic(file, "#!/bin/sh\n", { mode: 0o640 });
    assert.equal(modeOf(file), 0o640);
    writeFileAtomic(file, "#!/bin/sh\necho\n", { mode: 0o666 });
    assert.equal(modeOf(file), 0o666);
    assert.equal(Deno.readTextFileSync(file), "#!/bin/sh\necho\n");
  });
});

Deno.test("writeFileAtomic: replaces an existing file (new content, not appended)", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "config.yaml");
    writeFileAtomic(file, "a: 1\nb: 2\nc: 3\n");
    writeFileAtomic(file, "a: 9\n");
    assert.equal(Deno.readTextFileSync(file), "a: 9\n");
    assert.deepEqual(namesIn(dir), ["config.yaml"]);
  });
});

Deno.test("writeFileAtomic: re-asserts 0600 on a file that was 0644", async () => {
  await withTempDir((dir) => {
    const file = join(dir, ".env");
    Deno.writeTextFileSync(file, "TOKEN=old\n");
    Deno.chmodSync(file, 0o644);
    assert.equal(modeOf(file), 0o644);
    writeFileAtomic(file, "TOKEN=new\n");
    assert.equal(modeOf(file), 0o600);
    assert.equal(Deno.readTextFileSync(file), "TOKEN=new\n");
  });
});

Deno.test("writeFileAtomic: replaces by rename (a reader's open handle keeps the old content)", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "subs.json");
    writeFileAtomic(file, "old content");
    const before = Deno.statSync(file).ino;
    const reader = Deno.openSync(file, { read: true });
    try {
      writeFileAtomic(file, "new content");
      const buf = new Uint8Array(64);
      const n = reader.readSync(buf) ?? 0;
      assert.equal(new TextDecoder().decode(buf.subarray(0, n)), "old content");
    } finally {
      reader.close();
    }
    assert.equal(Deno.readTextFileSync(file), "new content");
    if (before !== null) assert.notEqual(Deno.statSync(file).ino, before);
  });
});

Deno.test("writeFileAtomic: creates missing parent folders with mode 0700", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "mcp-tokens", "deep", "srv.json");
    writeFileAtomic(file, "{}");
    assert.equal(Deno.readTextFileSync(file), "{}");
    assert.equal(modeOf(join(dir, "mcp-tokens")), 0o700);
    assert.equal(modeOf(join(dir, "mcp-tokens", "deep")), 0o700);
    assert.equal(modeOf(file), 0o600);
  });
});

Deno.test("writeFileAtomic: rename fails (target is a folder) → throws, folder intact, no temp file", async () => {
  await withTempDir((dir) => {
    const target = join(dir, "config.yaml");
    Deno.mkdirSync(target);
    Deno.writeTextFileSync(join(target, "inside.txt"), "inside");
    const sibling = join(dir, ".env");
    Deno.writeTextFileSync(sibling, "KEEP=1\n");

    assert.throws(() => writeFileAtomic(target, "a: 1\n"), (error: Error) => {
      // The file the caller named, not the temporary sibling the rename started from.
      assert.ok(error instanceof Deno.errors.IsADirectory, String(error));
      assert.match(
        error.message,
        /^cannot write .*\/config\.yaml: Is a directory \(os error 21\)$/,
      );
      assert.doesNotMatch(error.message, /\.tmp/);
      return true;
    });

    assert.ok(Deno.statSync(target).isDirectory);
    assert.deepEqual(namesIn(target), ["inside.txt"]);
    assert.equal(Deno.readTextFileSync(join(target, "inside.txt")), "inside");
    assert.equal(Deno.readTextFileSync(sibling), "KEEP=1\n");
    assert.deepEqual(tempFilesIn(dir), []);
    assert.deepEqual(namesIn(dir), [".env", "config.yaml"]);
  });
});

/** Bytes whose second slice throws: a write that fails half-way (like a full disk). */
class FailingHalfWay extends Uint8Array {
  #calls = 0;
  override subarray(begin?: number, end?: number): Uint8Array<ArrayBuffer> {
    this.#calls += 1;
    if (this.#calls > 1) throw new Error("simulated ENOSPC");
    const stop = Math.min(end ?? this.length, Math.floor(this.length / 2));
    return new Uint8Array(this.buffer, this.byteOffset + (begin ?? 0), stop - (begin ?? 0));
  }
}

Deno.test("writeFileAtomic: a write failing half-way leaves the original file and no temp file", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "webhook_subscriptions.json");
    writeFileAtomic(file, '{"original":true}\n');
    const data = new FailingHalfWay(4096).fill(0x41);
    assert.throws(() => writeFileAtomic(file, data), /simulated ENOSPC/);
    assert.equal(Deno.readTextFileSync(file), '{"original":true}\n');
    assert.equal(modeOf(file), 0o600);
    assert.deepEqual(namesIn(dir), ["webhook_subscriptions.json"]);
  });
});

Deno.test("writeFileAtomic: a parent path that is a file → throws, nothing written", async () => {
  await withTempDir((dir) => {
    const blocker = join(dir, "logs");
    Deno.writeTextFileSync(blocker, "not a folder");
    assert.throws(() => writeFileAtomic(join(blocker, "gateway.log"), "x"));
    assert.equal(Deno.readTextFileSync(blocker), "not a folder");
    assert.deepEqual(namesIn(dir), ["logs"]);
  });
});

Deno.test("restrictFileMode: sets 0600 (or a given mode); a missing file is ignored", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "tokens.json");
    Deno.writeTextFileSync(file, "{}");
    Deno.chmodSync(file, 0o666);
    restrictFileMode(file);
    assert.equal(modeOf(file), 0o600);
    restrictFileMode(file, 0o400);
    assert.equal(modeOf(file), 0o400);
    restrictFileMode(join(dir, "missing.json"));
    assert.deepEqual(namesIn(dir), ["tokens.json"]);
  });
});

Deno.test("readTextIfExists: content, undefined when missing, other errors thrown", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "config.yaml");
    Deno.writeTextFileSync(file, "a: 1\n# ünïcode\n");
    assert.equal(readTextIfExists(file), "a: 1\n# ünïcode\n");
    Deno.writeTextFileSync(file, "");
    assert.equal(readTextIfExists(file), "");
    assert.equal(readTextIfExists(join(dir, "missing.yaml")), undefined);
    assert.equal(readTextIfExists(join(dir, "no", "such", "dir", "x")), undefined);
    // A folder where a file is expected is a real problem, not "missing".
    assert.throws(() => readTextIfExists(dir));
  });
});

Deno.test("withEditLock: other processes wait while it is held; a nested call runs at once; nothing is left", async () => {
  await withTempDir((dir) => {
    /** Exit code of another process trying to take the lock: 0 taken, 3 busy. */
    const otherProcessTries = () =>
      new Deno.Command(Deno.execPath(), {
        args: [
          "eval",
          `const lock = Deno.openSync(${JSON.stringify(dir)}, { read: true });` +
          "if (!lock.tryLockSync(true)) Deno.exit(3);",
        ],
      }).outputSync().code;
    const order: string[] = [];
    withEditLock(join(dir, "config.yaml"), () => {
      order.push("outer");
      assert.equal(otherProcessTries(), 3, "held while editing");
      withEditLock(join(dir, ".env"), () => order.push("inner"));
    });
    assert.deepEqual(order, ["outer", "inner"]);
    assert.equal(otherProcessTries(), 0, "released after");
    assert.deepEqual(namesIn(dir), [], "no lock file is left");
  });
});
