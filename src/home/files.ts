/**
 * Safe file writes: private folders, atomic replacement, private modes for secrets.
 *
 * @module
 */
import { basename, dirname, join, resolve } from "node:path";

/** Mode of every folder the service creates under `<home>`. */
export const PRIVATE_DIR_MODE = 0o700;
/** Mode of every file that holds secrets or private state. */
export const PRIVATE_FILE_MODE = 0o600;

/**
 * Creates `path` and its missing parents with mode 0700. Existing folders keep their mode.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ensurePrivateDir } from "./files.ts";
 * const dir = await Deno.makeTempDir();
 * ensurePrivateDir(`${dir}/a/b`);
 * assert(Deno.statSync(`${dir}/a/b`).isDirectory);
 * ```
 */
export function ensurePrivateDir(path: string): void {
  Deno.mkdirSync(path, { recursive: true, mode: PRIVATE_DIR_MODE });
}

/** Options of {@linkcode writeFileAtomic}. */
export interface AtomicWriteOptions {
  /** File mode, re-asserted after the write. Default 0600. */
  mode?: number;
}

/**
 * Writes `data` to `path` atomically: a temporary file in the same folder is written and
 * fsynced, then renamed over `path`, and the folder is fsynced. A reader sees the old content or
 * the new one, never a part; a crash leaves at most a stray `.tmp` file, never a torn target
 * (the next {@linkcode withEditLock} of the file deletes it).
 * When `path` is a symbolic link (a `config.yaml` kept in a dotfiles repository, say), the file
 * it points to is written that way (temporary file in the target's folder) and the link stays.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { writeFileAtomic } from "./files.ts";
 * const dir = await Deno.makeTempDir();
 * writeFileAtomic(`${dir}/state.json`, '{"ok":true}\n');
 * assert(Deno.readTextFileSync(`${dir}/state.json`) === '{"ok":true}\n');
 * ```
 */
export function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  options: AtomicWriteOptions = {},
): void {
  const mode = options.mode ?? PRIVATE_FILE_MODE;
  const target = linkTarget(path);
  const dir = dirname(target);
  try {
    ensurePrivateDir(dir);
  } catch (error) {
    throw cannotWrite(path, error, dir);
  }
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const tmp = join(dir, `.${basename(target)}.${crypto.randomUUID()}.tmp`);
  let file;
  try {
    file = Deno.openSync(tmp, { write: true, createNew: true, mode });
  } catch (error) {
    throw cannotWrite(path, error, dir);
  }
  try {
    let written = 0;
    while (written < bytes.length) written += file.writeSync(bytes.subarray(written));
    file.syncSync();
  } catch (error) {
    file.close();
    Deno.removeSync(tmp);
    throw cannotWrite(path, error, dir);
  }
  file.close();
  try {
    Deno.chmodSync(tmp, mode);
    Deno.renameSync(tmp, target);
  } catch (error) {
    try {
      Deno.removeSync(tmp);
    } catch { /* already gone */ }
    throw cannotWrite(path, error, dir);
  }
  syncDir(dir);
}

/**
 * The file `path` stands for: `path` itself, or, following a chain of symbolic links (a link
 * whose target is missing too), the final target. A loop of links is an error naming `path`.
 */
function linkTarget(path: string): string {
  let current = path;
  for (let hops = 0; hops < 40; hops++) {
    let link: string;
    try {
      if (!Deno.lstatSync(current).isSymlink) return current;
      link = Deno.readLinkSync(current);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return current;
      throw cannotWrite(path, error, closedFolderAbove(current));
    }
    current = resolve(dirname(current), link);
  }
  throw new Error(
    `cannot write ${path}: too many levels of symbolic links. Fix: point the link at a file`,
  );
}

/**
 * The error of a failed atomic write, naming the file the user knows rather than its temporary
 * sibling, and, when the folder it is written in refuses it, that folder and the fix:
 * `cannot write <path>: Read-only file system (os error 30). Fix: …`. It keeps the class (a
 * `Deno.errors` kind), `code` and `cause` of the original. `dir` is the folder written in.
 */
function cannotWrite(path: string, error: unknown, dir: string): unknown {
  if (!(error instanceof Error)) return error;
  // Deno's messages end with the operation and its path (": open '/x/.y.tmp'"): drop them.
  const reason = error.message.replace(/: [a-z_]+ '[^']*'( -> '[^']*')?$/, "");
  const code = (error as { code?: unknown }).code;
  const fix = writeFix(error, code, dir);
  const message = `cannot write ${path}: ${reason}${fix ? `. Fix: ${fix}` : ""}`;
  const Kind = error.constructor as new (message: string, options?: ErrorOptions) => Error;
  let wrapped: Error;
  try {
    wrapped = new Kind(message, { cause: error });
  } catch {
    wrapped = new Error(message, { cause: error });
  }
  if (code !== undefined) Object.assign(wrapped, { code });
  return wrapped;
}

/**
 * What to do when the folder `dir` (or, when it is missing, the folder it is created in) refuses
 * a write: its access, or its read-only file system. Other failures (a full disk) say it all.
 */
function writeFix(error: Error, code: unknown, dir: string): string | undefined {
  let folder = dir;
  while (!exists(folder) && dirname(folder) !== folder) folder = dirname(folder);
  if (error instanceof Deno.errors.PermissionDenied) {
    const created = folder === dir ? "" : `, so that ${dir} can be created in it`;
    return `make ${folder} a folder this user can write${created} (check its owner and mode; ` +
      "folders created with sudo belong to root), then run the command again";
  }
  if (code === "EROFS") {
    return `${folder} is on a read-only file system: remount it read-write, or set AGENT_HOME ` +
      "to a folder on a writable one, then run the command again";
  }
  return undefined;
}

/** Whether `path` exists (a path this user may not look at counts as existing). */
function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch (error) {
    return !(error instanceof Deno.errors.NotFound);
  }
}

/**
 * Runs `work` while holding an exclusive lock on the folder of `file`, so that read-modify-write
 * edits of `file` by several processes (two `agent` commands at once, say) take turns instead of
 * one overwriting the other's change. The lock is `flock` on the folder itself: no lock file is
 * left behind, and a process killed while holding it releases it. Within one process a nested
 * call for the same folder runs at once (it already holds the lock). Readers need no lock when
 * every write is an atomic rename ({@linkcode writeFileAtomic}). The temporary files of `file`
 * that a writer killed mid-write left are deleted once the lock is held.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { withEditLock } from "./files.ts";
 * const dir = await Deno.makeTempDir();
 * assert.equal(withEditLock(`${dir}/config.yaml`, () => 42), 42);
 * assert.deepEqual([...Deno.readDirSync(dir)], []); // nothing written
 * ```
 */
export function withEditLock<T>(file: string, work: () => T): T {
  const dir = dirname(file);
  if (lockedFolders.has(dir)) {
    removeLeftTemps(file);
    return work();
  }
  let lock;
  try {
    ensurePrivateDir(dir);
    lock = Deno.openSync(dir, { read: true });
  } catch (error) {
    throw cannotWrite(file, error, dir);
  }
  try {
    lock.lockSync(true);
    lockedFolders.add(dir);
    try {
      removeLeftTemps(file);
      return work();
    } finally {
      lockedFolders.delete(dir);
    }
  } finally {
    lock.close(); // closing releases the lock
  }
}

/** The name a temporary file of {@linkcode writeFileAtomic} has after `.<target name>.`. */
const TEMP_NAME_END = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.tmp$/;

/**
 * Deletes the temporary files of {@linkcode writeFileAtomic} for `file` (`.<name>.<uuid>.tmp`
 * beside the file it stands for) that a process killed in the middle of a write left. Called
 * under the edit lock, which every writer of such a file holds: none is being written now.
 */
function removeLeftTemps(file: string): void {
  let target: string;
  let names: string[];
  try {
    target = linkTarget(file);
    names = [...Deno.readDirSync(dirname(target))].filter((entry) => entry.isFile)
      .map((entry) => entry.name);
  } catch {
    return; // no folder yet, or a link loop: the write reports it
  }
  const prefix = `.${basename(target)}.`;
  for (const name of names) {
    if (!name.startsWith(prefix) || !TEMP_NAME_END.test(name.slice(prefix.length))) continue;
    try {
      Deno.removeSync(join(dirname(target), name));
    } catch { /* gone already, or not ours to delete: it is only clutter */ }
  }
}

/** Folders this process holds the edit lock of. */
const lockedFolders = new Set<string>();

/**
 * Re-asserts mode 0600 on `path` if it exists (secrets must stay private even when another tool
 * rewrote the file).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { restrictFileMode } from "./files.ts";
 * const file = await Deno.makeTempFile();
 * restrictFileMode(file);
 * assert((Deno.statSync(file).mode! & 0o777) === 0o600);
 * ```
 */
export function restrictFileMode(path: string, mode: number = PRIVATE_FILE_MODE): void {
  try {
    Deno.chmodSync(path, mode);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
}

/**
 * Reads a text file, or returns `undefined` when it does not exist. A folder or another thing
 * that is not a regular file (a named pipe would wait for a writer forever) is an error of one
 * line naming the path and the fix; a file that cannot be read keeps its `Deno.errors` class and
 * gets the fix added.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readTextIfExists } from "./files.ts";
 * assert(readTextIfExists("/nonexistent/file") === undefined);
 * const dir = await Deno.makeTempDir();
 * assert.throws(() => readTextIfExists(dir), Deno.errors.IsADirectory);
 * ```
 */
export function readTextIfExists(path: string): string | undefined {
  let info;
  try {
    info = Deno.statSync(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    // Looking at a file needs no permission on it: a folder above it is closed.
    if (error instanceof Deno.errors.PermissionDenied) throw closedFolder(path, error);
    throw error;
  }
  if (!info.isFile && !info.isDirectory) throw notARegularFile(path, info);
  try {
    return Deno.readTextFileSync(path); // a folder throws IsADirectory
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    if (error instanceof Deno.errors.IsADirectory) throw isAFolder(path, error);
    if (error instanceof Deno.errors.PermissionDenied) throw cannotRead(path, error);
    throw error;
  }
}

/** Deno's reason without the operation and path it appends (": readfile '/x'"). */
function reasonOf(error: Error): string {
  return error.message.replace(/: [a-z_]+ '[^']*'$/, "");
}

/** The fix's ending: the files read this way are optional, and written when needed. */
function runAgain(path: string): string {
  return `then run the command again (${basename(path)} is created when needed)`;
}

/** A folder where a file is read: what it is and the fix (Deno's reason would say it twice). */
function isAFolder(path: string, error: Error): Error {
  return new Deno.errors.IsADirectory(
    `'${path}' is a folder, not a file. Fix: move or delete that folder, ${runAgain(path)}`,
    { cause: error },
  );
}

/** A named pipe, socket or device where a file is read (a pipe would wait forever): `EINVAL`. */
function notARegularFile(path: string, info: Deno.FileInfo): Error {
  const kind = info.isFifo
    ? "a named pipe"
    : info.isSocket
    ? "a socket"
    : info.isBlockDevice || info.isCharDevice
    ? "a device"
    : "something else";
  return Object.assign(
    new Error(
      `'${path}' is not a regular file (it is ${kind}). Fix: replace it by a file or delete it, ${
        runAgain(path)
      }`,
    ),
    { code: "EINVAL" },
  );
}

/** A file that exists but cannot be read: Deno's reason, the path and the fix. */
function cannotRead(path: string, error: Error): Error {
  return new Deno.errors.PermissionDenied(
    `${reasonOf(error)}: cannot read '${path}'. Fix: make it readable by this user ` +
      `(chmod u+r '${path}'), then run the command again`,
    { cause: error },
  );
}

/**
 * A file that cannot even be looked at because this user may not open a folder above it (a
 * `<home>` of mode 000, or another user's): Deno's reason, the path and that folder to fix, since
 * `chmod` on the file itself would not help.
 */
function closedFolder(path: string, error: Error): Error {
  const folder = closedFolderAbove(path);
  return new Deno.errors.PermissionDenied(
    `${reasonOf(error)}: cannot read '${path}': this user may not open the folder ` +
      `'${folder}'. Fix: give this user access to it (chmod u+rwx '${folder}' if it is theirs; ` +
      "otherwise check its owner and mode: folders created with sudo belong to root), then run " +
      "the command again",
    { cause: error },
  );
}

/** The first folder from the root down to `path` whose entries this user may not look at. */
function closedFolderAbove(path: string): string {
  const chain: string[] = [];
  for (let at = resolve(path); dirname(at) !== at; at = dirname(at)) chain.unshift(at);
  for (const at of chain) {
    try {
      Deno.statSync(at);
    } catch (error) {
      if (error instanceof Deno.errors.PermissionDenied) return dirname(at);
    }
  }
  return dirname(resolve(path));
}

function syncDir(dir: string): void {
  if (Deno.build.os === "windows") return;
  try {
    const handle = Deno.openSync(dir, { read: true });
    try {
      handle.syncSync();
    } finally {
      handle.close();
    }
  } catch {
    // Some filesystems refuse fsync on folders; the rename itself is still atomic.
  }
}

/**
 * Joins byte chunks into one array of `total` bytes (the sum of their lengths).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { concatBytes } from "./files.ts";
 * const joined = concatBytes([new Uint8Array([1, 2]), new Uint8Array([3])], 3);
 * assert.deepEqual(joined, new Uint8Array([1, 2, 3]));
 * ```
 */
export function concatBytes(chunks: readonly Uint8Array[], total: number): Uint8Array {
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

/**
 * What `path` looks like now, as a string that changes whenever its content may have: its
 * modification and change times, size and inode (an atomic rewrite is a new file, a same-second
 * edit changes the change time), or the name of the error when it cannot be looked at
 * (`NotFound`). For files re-read only when they changed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fileStamp } from "./files.ts";
 * const file = await Deno.makeTempFile();
 * const before = fileStamp(file);
 * Deno.writeTextFileSync(file, "changed");
 * assert.notEqual(fileStamp(file), before);
 * assert.equal(fileStamp(`${file}.missing`), "NotFound");
 * ```
 */
export function fileStamp(path: string): string {
  try {
    const info = Deno.statSync(path);
    return `${info.mtime?.getTime()}:${info.ctime?.getTime()}:${info.size}:${info.ino}`;
  } catch (error) {
    return error instanceof Error ? error.name : "error";
  }
}
