/**
 * The rotating log file behind `logs/gateway.log`: lines are appended without an fsync and
 * written together once per turn of the event loop, so a busy gateway makes one `write` for many
 * records while a quiet one still has each line on disk a moment after it was logged.
 *
 * @module
 */
import { dirname } from "node:path";
import { concatBytes, ensurePrivateDir, PRIVATE_FILE_MODE, restrictFileMode } from "./files.ts";

/** Options of {@linkcode RotatingLogFile}. */
export interface RotatingLogFileOptions {
  /** Bytes before the file is rotated. */
  maxBytes: number;
  /** Rotated files kept (`<path>.1` newest … `<path>.<maxFiles>`). */
  maxFiles: number;
  /**
   * Told when a write fails (the lines of that write are dropped) or a rotation fails (the lines
   * go on in the current file). Default: a note on stderr, at most one a minute.
   */
  onError?: (error: unknown) => void;
  /**
   * Create the file, and its folder (0700), when the first line is written, not before: a
   * program that may log nothing leaves nothing behind. A file there already is opened at once
   * (so what is in the way is an error now); one that cannot be created later is told to
   * `onError`, and the lines are dropped. Default false: the file is created at once.
   */
  openOnFirstLine?: boolean;
}

/**
 * A log file that rotates by size and keeps its files 0600.
 *
 * Lines are buffered until the next timer turn (`setTimeout(0)`), or until {@linkcode flush} /
 * dispose; a line is never split across two files, and a file only grows past `maxBytes` when a
 * single line is longer than that. A file deleted or moved away while open (by hand, with its
 * folder, or by logrotate) is noticed at the next write, and a new one is started at `path`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RotatingLogFile } from "./log_file.ts";
 * const dir = await Deno.makeTempDir();
 * const file = new RotatingLogFile(`${dir}/app.log`, { maxBytes: 1024, maxFiles: 2 });
 * file.append('{"message":"hello"}\n');
 * file.close(); // writes what is buffered
 * assert.equal(Deno.readTextFileSync(`${dir}/app.log`), '{"message":"hello"}\n');
 * ```
 */
export class RotatingLogFile implements Disposable {
  readonly path: string;
  readonly #options: RotatingLogFileOptions;
  readonly #encoder = new TextEncoder();
  #file: Deno.FsFile | undefined;
  #size = 0;
  #pending: string[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  /** Which file `#file` is (device and inode), to notice when `path` no longer names it. */
  #identity: string | undefined;
  /** A failed write left part of a line behind that could not be cut off: start a new line. */
  #torn = false;

  constructor(path: string, options: RotatingLogFileOptions) {
    this.path = path;
    this.#options = options;
    if (!options.openOnFirstLine || exists(path)) this.#open();
  }

  /** Queues one line (which should end with a newline); it is written on the next turn. */
  append(line: string): void {
    if (this.#closed) return;
    this.#pending.push(line);
    this.#timer ??= setTimeout(() => {
      this.#timer = undefined;
      this.flush();
    }, 0);
  }

  /** Writes every queued line now. */
  flush(): void {
    if (this.#pending.length === 0 || this.#closed) return;
    const lines = this.#pending;
    this.#pending = [];
    try {
      const there = this.#file ? this.#atPath() : "same";
      if (there !== "same") {
        // Deleted, or moved away (rotated by another process, or logrotate): the lines would go
        // to a file nobody sees, or that is not the log any more. Only a deletion is a surprise.
        this.#file!.close();
        this.#file = undefined;
        if (there === "none") {
          this.#report(
            new Error(
              `${this.path} was deleted or moved away while it was open; a new one is started`,
            ),
          );
        }
      }
      if (!this.#file) {
        ensurePrivateDir(dirname(this.path));
        this.#open();
      }
      let chunk: Uint8Array[] = [];
      let chunkBytes = 0;
      let canRotate = true;
      for (const line of lines) {
        const bytes = this.#encoder.encode(line);
        if (canRotate && this.#size + chunkBytes + bytes.length > this.#options.maxBytes) {
          this.#write(chunk, chunkBytes);
          chunk = [];
          chunkBytes = 0;
          if (this.#size > 0) {
            try {
              this.#rotate();
            } catch (error) {
              // Keep the lines: they go on in the current file; the next flush tries again.
              canRotate = false;
              this.#report(error);
            }
          }
        }
        chunk.push(bytes);
        chunkBytes += bytes.length;
      }
      this.#write(chunk, chunkBytes);
    } catch (error) {
      this.#report(error);
    }
  }

  /** Writes what is queued and closes the file; later lines are dropped. */
  close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.flush();
    this.#closed = true;
    this.#file?.close();
    this.#file = undefined;
  }

  [Symbol.dispose](): void {
    this.close();
  }

  #report(error: unknown): void {
    (this.#options.onError ?? reportToStderr)(error);
  }

  #open(): void {
    this.#file = openForAppend(this.path);
    restrictFileMode(this.path);
    this.#opened();
  }

  /** Notes the size and identity of the file just opened. */
  #opened(): void {
    const info = this.#file!.statSync();
    this.#size = info.size;
    this.#identity = `${info.dev}:${info.ino}`;
  }

  /** What `path` names now: the open file, another one, or nothing. */
  #atPath(): "same" | "other" | "none" {
    try {
      const info = Deno.statSync(this.path);
      return `${info.dev}:${info.ino}` === this.#identity ? "same" : "other";
    } catch (error) {
      // Only a path that leads nowhere: one that cannot be looked at keeps the open file.
      return error instanceof Deno.errors.NotFound ? "none" : "same";
    }
  }

  #write(chunks: Uint8Array[], total: number): void {
    if (total === 0) return;
    let bytes = chunks.length === 1 ? chunks[0] : concatBytes(chunks, total);
    if (this.#torn) bytes = concatBytes([NEWLINE, bytes], bytes.length + 1);
    let written = 0;
    try {
      while (written < bytes.length) written += this.#file!.writeSync(bytes.subarray(written));
    } catch (error) {
      // A full disk took part of the lines: cut it off, so that no half line is left for the
      // next write to be glued to.
      if (written > 0) {
        try {
          this.#file!.truncateSync(this.#size);
          this.#torn = false;
        } catch {
          this.#size += written;
          this.#torn = true;
        }
      }
      throw error;
    }
    this.#size += bytes.length;
    this.#torn = false;
  }

  /** `<path>` → `<path>.1` → … → `<path>.<maxFiles>`; the oldest falls off. */
  #rotate(): void {
    this.#file!.close();
    this.#file = undefined;
    const { maxFiles } = this.#options;
    try {
      if (maxFiles <= 0) {
        Deno.removeSync(this.path);
      } else {
        for (let i = maxFiles - 1; i > 0; i--) {
          try {
            Deno.renameSync(`${this.path}.${i}`, `${this.path}.${i + 1}`);
          } catch (error) {
            if (!(error instanceof Deno.errors.NotFound)) throw error;
          }
        }
        Deno.renameSync(this.path, `${this.path}.1`);
      }
    } finally {
      // Also when a rename failed: go on appending to whatever file is there.
      this.#file = openForAppend(this.path);
      this.#opened();
    }
  }
}

const NEWLINE = new Uint8Array([0x0a]);

/** Whether `path` exists; an error other than "not found" (a file where a folder should be) throws. */
function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

function openForAppend(path: string): Deno.FsFile {
  return Deno.openSync(path, { append: true, create: true, mode: PRIVATE_FILE_MODE });
}

let lastReport = 0;

function reportToStderr(error: unknown): void {
  // At most one note a minute: a full disk must not turn every log line into a stderr line.
  const now = Date.now();
  if (now - lastReport < 60_000) return;
  lastReport = now;
  console.error(`agent: cannot write the log file: ${String(error)}`);
}
