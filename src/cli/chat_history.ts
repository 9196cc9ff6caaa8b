/**
 * `agent chat`'s messages kept across sessions for Up/Down recall: `<home>/chat_history`, one JSON
 * string per line (a multi-line message stays one entry), mode 0600 as it holds what was typed.
 * A message typed with a leading space is not written (as shells do with `ignorespace`), so a
 * one-off secret need not end up in the file; it is still recalled within its session.
 * Appends and the cut-back (an atomic rewrite) take the edit lock of `<home>`, so several
 * `agent chat`s at once lose no line.
 *
 * @module
 */
import { dirname } from "node:path";
import {
  PRIVATE_FILE_MODE,
  readTextIfExists,
  withEditLock,
  writeFileAtomic,
} from "../home/files.ts";
import { HISTORY_LIMIT, type HistoryStore } from "./line_editor.ts";

/**
 * The history file of `agent chat`. What cannot be read or written is reported once through
 * `warn`, and the session goes on with the history it has in memory.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ChatHistoryFile } from "./chat_history.ts";
 * const file = `${await Deno.makeTempDir()}/chat_history`;
 * const history = new ChatHistoryFile(file, () => {});
 * history.add("first");
 * history.add("two\nlines");
 * history.add(" not kept: it starts with a space");
 * assert.deepEqual(new ChatHistoryFile(file, () => {}).load(), ["first", "two\nlines"]);
 * ```
 */
export class ChatHistoryFile implements HistoryStore {
  readonly #path: string;
  readonly #warn: (message: string) => void;
  readonly #limit: number;
  #warned = false;
  /** The file ends in a torn line (a crash mid-write): the next entry starts a new line. */
  #torn = false;

  /** Reads back at most `limit` entries, and cuts the file back to them once it has twice that. */
  constructor(path: string, warn: (message: string) => void, limit = HISTORY_LIMIT) {
    this.#path = path;
    this.#warn = warn;
    this.#limit = limit;
  }

  load(): string[] {
    let entries: string[] | undefined;
    try {
      entries = this.#read();
    } catch (error) {
      this.#problem("cannot be read", error);
      return [];
    }
    if (entries === undefined) return [];
    if (entries.length >= 2 * this.#limit) {
      try {
        // Read again under the edit lock, which add() takes too: no line appended by another
        // `agent chat` between this read and the rename is lost.
        entries = this.#locked(() => {
          const now = this.#read() ?? [];
          const kept = now.slice(-this.#limit);
          writeFileAtomic(this.#path, kept.map((entry) => `${JSON.stringify(entry)}\n`).join(""));
          this.#torn = false;
          return now;
        });
      } catch (error) {
        this.#problem("cannot be cut back", error);
      }
    }
    return entries.slice(-this.#limit);
  }

  add(text: string): void {
    if (text.trim() === "" || /^[ \t]/.test(text)) return;
    try {
      this.#locked(() => {
        const line = `${this.#torn ? "\n" : ""}${JSON.stringify(text)}\n`;
        Deno.writeTextFileSync(this.#path, line, {
          append: true,
          mode: PRIVATE_FILE_MODE,
        });
      });
      this.#torn = false;
    } catch (error) {
      this.#problem("cannot be written", error);
    }
  }

  /** The entries of the file, `undefined` when there is none; notes whether it ends torn. */
  #read(): string[] | undefined {
    const text = readTextIfExists(this.#path);
    if (text === undefined) return undefined;
    this.#torn = text !== "" && !text.endsWith("\n");
    const entries: string[] = [];
    for (const line of text.split("\n")) {
      const entry = parseEntry(line);
      // A line torn by a crash or edited by hand is skipped, not the whole history.
      if (entry !== undefined) entries.push(entry);
    }
    return entries;
  }

  /** Runs `work` under the edit lock of the file's folder (`<home>`), which is not created. */
  #locked<T>(work: () => T): T {
    Deno.statSync(dirname(this.#path));
    return withEditLock(this.#path, work);
  }

  #problem(what: string, error: unknown): void {
    if (this.#warned) return;
    this.#warned = true;
    const reason = error instanceof Error ? error.message : String(error);
    this.#warn(
      `${this.#path} ${what} (${reason}); messages are recalled in this session only`,
    );
  }
}

function parseEntry(line: string): string | undefined {
  if (line === "") return undefined;
  try {
    const entry = JSON.parse(line);
    return typeof entry === "string" && entry.trim() !== "" ? entry : undefined;
  } catch {
    return undefined;
  }
}
