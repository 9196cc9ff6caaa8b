/**
 * `logs/mcp-stderr.log`: what stdio servers write to stderr, one line per line, prefixed with
 * the time and the server name, so a crash can be read after the fact. The file rotates by size
 * like `gateway.log` (`mcp-stderr.log.1` newest), so a chatty server cannot fill the disk.
 *
 * @module
 */
import { dirname } from "node:path";
import { ensurePrivateDir } from "../home/files.ts";
import { RotatingLogFile } from "../home/log_file.ts";

/** The longest unfinished line kept in memory; a longer one is written in pieces of this size. */
export const MAX_PARTIAL_LINE = 64 * 1024;

/** Rotation of `mcp-stderr.log`: the same defaults as `gateway.log`. */
export interface StderrLogRotation {
  /** Bytes before the file is rotated. Default 10 MiB. */
  maxBytes?: number;
  /** Rotated files kept (`mcp-stderr.log.1` …). Default 5. */
  maxFiles?: number;
}

/**
 * An append-only log file, opened on first write (mode 0600), rotated by size.
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
  readonly #rotation: Required<StderrLogRotation>;
  #file: RotatingLogFile | undefined;
  readonly #partial = new Map<string, string>();

  constructor(path: string, now: () => Date = () => new Date(), rotation: StderrLogRotation = {}) {
    this.path = path;
    this.#now = now;
    this.#rotation = {
      maxBytes: rotation.maxBytes ?? 10 * 1024 * 1024,
      maxFiles: rotation.maxFiles ?? 5,
    };
  }

  /**
   * Appends `text` from `server`; an unfinished last line waits for its end, up to
   * {@linkcode MAX_PARTIAL_LINE} characters (a server that never ends its line is written in pieces).
   */
  write(server: string, text: string): void {
    const lines = ((this.#partial.get(server) ?? "") + text).split("\n");
    let rest = lines.pop() ?? "";
    while (rest.length > MAX_PARTIAL_LINE) {
      // A piece never ends inside a surrogate pair: half an emoji would be written as U+FFFD.
      const high = rest.charCodeAt(MAX_PARTIAL_LINE - 1);
      const end = high >= 0xd800 && high <= 0xdbff ? MAX_PARTIAL_LINE - 1 : MAX_PARTIAL_LINE;
      lines.push(rest.slice(0, end));
      rest = rest.slice(end);
    }
    this.#partial.set(server, rest);
    if (lines.length === 0) return;
    const stamp = this.#now().toISOString();
    this.#append(lines.map((line) => `${stamp} [${server}] ${line}\n`));
  }

  /** Writes unfinished lines and closes the file. */
  close(): void {
    const stamp = this.#now().toISOString();
    const rest = [...this.#partial].filter(([, line]) => line !== "")
      .map(([server, line]) => `${stamp} [${server}] ${line}\n`);
    this.#partial.clear();
    if (rest.length > 0) this.#append(rest);
    this.#file?.close();
    this.#file = undefined;
  }

  [Symbol.dispose](): void {
    this.close();
  }

  #append(lines: string[]): void {
    if (!this.#file) {
      ensurePrivateDir(dirname(this.path));
      this.#file = new RotatingLogFile(this.path, this.#rotation);
    }
    for (const line of lines) this.#file.append(line);
    // Written at once, not on the next turn: a server's last words must be there after a crash.
    this.#file.flush();
  }
}
