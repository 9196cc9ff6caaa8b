/**
 * `logs/mcp-stderr.log`: what stdio servers write to stderr, one line per line, prefixed with
 * the time and the server name, so a crash can be read after the fact.
 *
 * @module
 */
import { dirname } from "node:path";
import { ensurePrivateDir, PRIVATE_FILE_MODE } from "../home/files.ts";

/**
 * An append-only log file, opened on first write (mode 0600).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { StderrLog } from "./stderr_log.ts";
 * const dir = await Deno.makeTempDir();
 * using log = new StderrLog(`${dir}/logs/mcp-stderr.log`);
 * log.write("fs", "starting\nready\n");
 * assert(Deno.readTextFileSync(`${dir}/logs/mcp-stderr.log`).includes("[fs] ready"));
 * ```
 */
export class StderrLog implements Disposable {
  readonly path: string;
  readonly #now: () => Date;
  #file: Deno.FsFile | undefined;
  readonly #partial = new Map<string, string>();
  readonly #encoder = new TextEncoder();

  constructor(path: string, now: () => Date = () => new Date()) {
    this.path = path;
    this.#now = now;
  }

  /** Appends `text` from `server`; an unfinished last line waits for its end. */
  write(server: string, text: string): void {
    const lines = ((this.#partial.get(server) ?? "") + text).split("\n");
    this.#partial.set(server, lines.pop() ?? "");
    if (lines.length === 0) return;
    const stamp = this.#now().toISOString();
    this.#append(lines.map((line) => `${stamp} [${server}] ${line}\n`).join(""));
  }

  /** Writes unfinished lines and closes the file. */
  close(): void {
    const stamp = this.#now().toISOString();
    for (const [server, rest] of this.#partial) {
      if (rest) this.#append(`${stamp} [${server}] ${rest}\n`);
    }
    this.#partial.clear();
    this.#file?.close();
    this.#file = undefined;
  }

  [Symbol.dispose](): void {
    this.close();
  }

  #append(text: string): void {
    if (!this.#file) {
      ensurePrivateDir(dirname(this.path));
      this.#file = Deno.openSync(this.path, {
        append: true,
        create: true,
        mode: PRIVATE_FILE_MODE,
      });
    }
    const bytes = this.#encoder.encode(text);
    let written = 0;
    while (written < bytes.length) written += this.#file.writeSync(bytes.subarray(written));
  }
}
