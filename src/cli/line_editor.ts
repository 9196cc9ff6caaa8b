/**
 * A line editor for the interactive commands at a terminal: the terminal is put in raw mode while
 * a line is read, so the line can be edited (arrows, Home/End, Ctrl-A/E/U/K/W, Alt-B/F/D/Enter),
 * earlier lines recalled (Up/Down, which first move between the lines of a line of several), and
 * a multi-line paste (bracketed paste) arrives as one message; lines have no length limit. Wide
 * characters, emoji and lines longer than the terminal is wide are drawn where the terminal puts
 * them. A line taller than the terminal is shown
 * through a window of rows that follows the cursor, so editing it never scrolls what was shown
 * before (or copies of the line) off the screen; once read, the whole line is written out.
 *
 * Ctrl-C clears a line that holds text and, on an empty line, calls `interrupt` (what Ctrl-C does
 * between reads); Ctrl-D on an empty line is the end of input (`null`). Ctrl-Z stops the program
 * as it does outside raw mode, when the terminal can (`suspend`); once continued, the line is
 * drawn again as it was. When the terminal is resized (`onResize`), the line is drawn again at the
 * new width.
 *
 * @module
 */
import stringWidth from "fast-string-width";
import { cut } from "../home/text.ts";
import { type Key, KeyDecoder } from "./keys.ts";

/** The terminal the editor works on. */
export interface EditorTerminal {
  /** The next decoded input, `null` at its end; rejects when `signal` aborts, losing nothing. */
  read(signal?: AbortSignal): Promise<string | null>;
  /** The next input if it has arrived already, without waiting; `undefined` when none has. */
  ready?(): Promise<string | undefined>;
  write(text: string): void;
  setRaw(raw: boolean): void;
  /** The terminal's width in columns (0 when unknown). */
  columns(): number;
  /** The terminal's height in rows (0 when unknown). */
  rows?(): number;
  /**
   * Stops the program, as Ctrl-Z does in cooked mode (SIGTSTP), returning once the
   * shell continues it; returns at once where there is no job control. Called in cooked mode.
   */
  suspend?(): void;
  /** Calls `listener` whenever the terminal's size changes (SIGWINCH); returns its removal. */
  onResize?(listener: () => void): () => void;
  /** Stops reading. */
  close(): Promise<void>;
}

/** Where a {@linkcode LineEditor} keeps the lines it remembers beyond itself (a file). */
export interface HistoryStore {
  /** Lines remembered before, oldest first. */
  load(): string[];
  /** Keeps `text`, a line just remembered (as typed). */
  add(text: string): void;
}

/** Options of one {@linkcode LineEditor.readLine}. */
export interface ReadLineOptions {
  /** Stops the read: the line typed so far is dropped and the call rejects with the reason. */
  signal?: AbortSignal;
  /** Whether the line is kept for Up/Down recall (default true; answers to questions are not). */
  remember?: boolean;
}

const SEGMENTER = new Intl.Segmenter(undefined, { granularity: "grapheme" });
/** Zero-width spaces, joiners, direction marks and the BOM: terminals give them no column. */
const ZERO_WIDTH = /^[\u200b-\u200f\u2060-\u2064\ufeff]+$/;

/** The columns a character takes on a terminal. */
function widthOf(character: string): number {
  return ZERO_WIDTH.test(character) ? 0 : stringWidth(character);
}

/**
 * A run of printable ASCII characters long enough to be laid out without segmenting it (from
 * `lastIndex`); shorter ones (the spaces between words of other scripts) are not worth a stop.
 */
const ASCII_RUN = /[ -~]{16,}/y;
/** Where the next such run starts (from `lastIndex`). */
const NEXT_ASCII_RUN = /[ -~]{16}/g;
/** Width assumed when the terminal does not tell. */
const DEFAULT_COLUMNS = 80;
/** Lines kept for recall; the oldest go first. */
export const HISTORY_LIMIT = 500;
/** Characters of a dropped late answer shown in the note saying so. */
const MAX_SHOWN_LATE = 40;
const TAB = "    ";
const BRACKETED_PASTE_ON = "\x1b[?2004h";
const BRACKETED_PASTE_OFF = "\x1b[?2004l";

/**
 * Reads lines from a terminal with editing and history.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { LineEditor } from "./line_editor.ts";
 * const input = ["hllo", "\x1b[D\x1b[D\x1b[De", "\r"];
 * const editor = new LineEditor({
 *   read: () => Promise.resolve(input.shift() ?? null),
 *   write: () => {},
 *   setRaw: () => {},
 *   columns: () => 80,
 *   close: () => Promise.resolve(),
 * });
 * assert.equal(await editor.readLine("you> "), "hello");
 * assert.equal(await editor.readLine("you> "), null);
 * ```
 */
export class LineEditor {
  readonly #terminal: EditorTerminal;
  readonly #interrupt: () => void;
  readonly #decoder = new KeyDecoder();
  /** Keys read past the end of the previous line (type-ahead). */
  readonly #queue: Key[] = [];
  readonly #history: string[] = [];
  /** Rows from the first row drawn (the prompt's, unless windowed) to the cursor, as last drawn. */
  #cursorRow = 0;
  /** The first row of the line's layout that was drawn: above 0 only for a line in a window. */
  #top = 0;
  /** The last read ended without an answer (a timeout, a cancelled run, another question). */
  #abandoned = false;

  /** Where remembered lines are kept beyond this editor, when anywhere. */
  readonly #store: HistoryStore | undefined;

  constructor(
    terminal: EditorTerminal,
    options: { interrupt?: () => void; history?: HistoryStore } = {},
  ) {
    this.#terminal = terminal;
    this.#interrupt = options.interrupt ?? (() => {});
    this.#store = options.history;
    if (this.#store) this.#history.push(...this.#store.load().slice(-HISTORY_LIMIT));
  }

  /** Lines kept for recall, oldest first. */
  get history(): readonly string[] {
    return this.#history;
  }

  /** Shows `prompt` and reads one line; `null` at the end of input (Ctrl-D on an empty line). */
  async readLine(question: string, options: ReadLineOptions = {}): Promise<string | null> {
    const { signal, remember = true } = options;
    signal?.throwIfAborted();
    const terminal = this.#terminal;
    if (this.#abandoned) {
      this.#abandoned = false;
      await this.#dropLateAnswer();
    }
    // Lines before the last one of a question are written once; only the last is redrawn.
    const lastBreak = question.lastIndexOf("\n");
    const prompt = question.slice(lastBreak + 1);
    if (lastBreak >= 0) {
      terminal.write(`${question.slice(0, lastBreak).replace(/\r?\n/g, "\r\n")}\r\n`);
    }
    const line = new EditBuffer();
    let recalled = this.#history.length;
    let draft = "";
    // Typing at the end of a long line, or a paste read by read, lays out only what was added.
    const cache: LayoutCache = {};
    const draw = () => this.#draw(prompt, line, { cache });
    const finish = (ending: string) => {
      line.cursor = line.text.length;
      // The whole line, also one taller than the screen: it stays in the scrollback as sent.
      // A last row filled exactly left the cursor at the next row's start already.
      const { filled } = this.#draw(prompt, line, { whole: true, cache });
      terminal.write(filled && ending.startsWith("\r\n") ? ending.slice(2) : ending);
      this.#cursorRow = 0;
    };
    terminal.setRaw(true);
    terminal.write(BRACKETED_PASTE_ON);
    this.#cursorRow = 0;
    this.#top = 0;
    // Terminals rewrap what they show to their new width (xterm and the Linux console, which do
    // not, keep the rows): the cursor is then where the new width puts it, and the line is drawn
    // again from there. Of a line in a window, the rows above the cursor are at most the screen's
    // (the cursor cannot go above its top row); too many only clears a row more.
    const stopResize = terminal.onResize?.(() => {
      const columns = terminal.columns() || DEFAULT_COLUMNS;
      const row = layout(prompt, line.text, line.cursor, columns).cursor.row;
      const screen = terminal.rows?.() ?? 0;
      this.#cursorRow = screen > 0 ? Math.min(row, screen - 1) : row;
      draw();
    });
    try {
      draw();
      while (true) {
        const key = this.#queue.shift() ?? await this.#nextKey(signal);
        if (key === null) {
          // The input ended: what was typed is the last line.
          finish("\r\n");
          return line.text === "" ? null : line.text;
        }
        switch (key.kind) {
          case "enter":
            finish("\r\n");
            if (remember) this.#remember(line.text);
            return line.text;
          case "eof":
            if (line.text === "") {
              finish("\r\n");
              return null;
            }
            line.deleteForward();
            break;
          case "interrupt":
            finish("^C\r\n");
            if (line.text === "") {
              this.#interrupt();
              // What Ctrl-C stops (a run waiting on this answer) may abort the read a few
              // promise turns later: then the prompt is not drawn again.
              await new Promise((resolve) => setTimeout(resolve, 0));
              signal?.throwIfAborted();
            }
            line.set("");
            recalled = this.#history.length;
            break;
          case "up":
          case "down": {
            // In a message of several lines, Up and Down go from line to line first.
            if (line.moveLine(key.kind === "up" ? -1 : 1)) break;
            const to = recalled + (key.kind === "up" ? -1 : 1);
            if (to < 0 || to > this.#history.length) break;
            if (recalled === this.#history.length) draft = line.text;
            recalled = to;
            line.set(to === this.#history.length ? draft : this.#history[to]);
            break;
          }
          case "clearScreen":
            terminal.write("\x1b[H\x1b[2J");
            this.#cursorRow = 0;
            break;
          case "suspend": {
            if (!terminal.suspend) break;
            // Below the whole line, in the mode the shell expects; drawn anew when continued.
            const cursor = line.cursor;
            finish(`\r\n${BRACKETED_PASTE_OFF}`);
            line.cursor = cursor;
            terminal.setRaw(false);
            terminal.suspend();
            terminal.setRaw(true);
            terminal.write(BRACKETED_PASTE_ON);
            break;
          }
          default:
            line.apply(key);
        }
        if (this.#queue.length === 0) draw();
      }
    } catch (error) {
      // What was typed stays on the screen as it is: whoever stopped the read (a timeout,
      // SIGTERM, another question) may have written below it already, and goes on from there.
      this.#cursorRow = 0;
      this.#abandoned = true;
      throw error;
    } finally {
      stopResize?.();
      terminal.write(BRACKETED_PASTE_OFF);
      terminal.setRaw(false);
    }
  }

  async #nextKey(signal?: AbortSignal): Promise<Key | null> {
    while (this.#queue.length === 0) {
      const input = await this.#terminal.read(signal);
      if (input === null) return null;
      this.#queue.push(...this.#decoder.push(input));
    }
    return this.#queue.shift()!;
  }

  /**
   * After a read that ended without an answer: what was typed since, before this read, up to
   * its first Enter, is dropped, with a note saying so. It is most likely the answer to the
   * question that ended (a "y" typed just after an approval timed out), and sent to the next
   * question it would answer that one instead. What follows the Enter stays type-ahead.
   */
  async #dropLateAnswer(): Promise<void> {
    for (let input; (input = await this.#terminal.ready?.()) !== undefined;) {
      this.#queue.push(...this.#decoder.push(input));
    }
    const enter = this.#queue.findIndex((key) => key.kind === "enter");
    if (enter < 0) return;
    const late = this.#queue.splice(0, enter + 1)
      .map((key) => key.kind === "text" || key.kind === "paste" ? key.text : "")
      .join("");
    if (late.trim() === "") return;
    const shown = cut(late, MAX_SHOWN_LATE);
    this.#terminal.write(
      `(dropped ${JSON.stringify(shown)}, typed after the previous question had ended)\r\n`,
    );
  }

  #remember(text: string): void {
    if (text.trim() === "" || this.#history.at(-1) === text) return;
    this.#history.push(text);
    if (this.#history.length > HISTORY_LIMIT) this.#history.shift();
    this.#store?.add(text);
  }

  /**
   * Redraws the prompt and the line from the first row drawn before, the cursor where it belongs.
   * A line taller than the screen less one row is drawn through a window of that many rows which
   * holds the cursor and moves only as far as it must; `whole` draws all of it.
   */
  #draw(
    prompt: string,
    line: EditBuffer,
    options: { whole?: boolean; cache?: LayoutCache } = {},
  ): Layout {
    const columns = this.#terminal.columns() || DEFAULT_COLUMNS;
    const shown = layout(prompt, line.text, line.cursor, columns, options.cache);
    const rows = shown.rows.length;
    // One row of what was shown before stays in view; an unknown height never windows.
    const screen = this.#terminal.rows?.() ?? 0;
    const height = options.whole || screen === 0 ? rows : Math.max(screen - 1, 1);
    const cursorRow = shown.cursor.row;
    const top = rows <= height
      ? 0
      : Math.min(Math.max(this.#top, cursorRow - height + 1), cursorRow, rows - height);
    const bottom = Math.min(rows, top + height) - 1;
    let out = this.#cursorRow > 0 ? `\x1b[${this.#cursorRow}A` : "";
    out += `\r\x1b[J${shown.text.slice(shown.rows[top].start, shown.rows[bottom].end)}`;
    const up = bottom - cursorRow;
    if (up > 0) out += `\x1b[${up}A`;
    out += "\r";
    if (shown.cursor.column > 0) out += `\x1b[${shown.cursor.column}C`;
    this.#terminal.write(out);
    this.#top = top;
    this.#cursorRow = cursorRow - top;
    return shown;
  }
}

/** A position on the screen, relative to the prompt's first row. */
export interface ScreenPosition {
  row: number;
  column: number;
}

/** How a prompt and a line are drawn: see {@linkcode layout}. */
export interface Layout {
  /** What to write: line breaks as `\r\n` plus the prompt's indent, tabs as spaces. */
  text: string;
  cursor: ScreenPosition;
  end: ScreenPosition;
  /** Whether the last row was filled exactly, so `text` ends with `\r\n` to the next row. */
  filled: boolean;
  /**
   * Where each row's characters are in `text`, from the first row to the end's: `start` is after
   * the line break before the row (when any), `end` before the one after it. Writing a slice
   * from one row's `start` to another's `end` draws those rows and leaves the cursor on the last.
   */
  rows: Array<{ start: number; end: number }>;
}

/**
 * How a prompt and a line are drawn on a terminal `columns` wide: the text to write (line breaks
 * as `\r\n` followed by an indent as wide as the prompt, tabs as spaces) and where the end and the
 * cursor land. A character that does not fit on a row goes to the next one, as terminals wrap;
 * the end is never left in the last column (a row filled exactly is followed by `\r\n`).
 * With `cache`, a layout of the same line with text added at its end lays out only what was
 * added (see {@linkcode LayoutCache}).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { layout } from "./line_editor.ts";
 * const shown = layout("> ", "abcdef", 3, 4);
 * // Two full rows: the end goes to the start of a third.
 * assert.equal(shown.text, "> abcdef\r\n");
 * assert.deepEqual(shown.cursor, { row: 1, column: 1 });
 * assert.deepEqual(shown.end, { row: 2, column: 0 });
 * assert.equal(layout("> ", "abcdefg", 7, 4).text, "> abcdefg");
 * ```
 */
export function layout(
  prompt: string,
  text: string,
  cursor: number,
  columns: number,
  cache?: LayoutCache,
): Layout {
  let row = 0;
  let column = 0;
  let out = "";
  let cursorAt: ScreenPosition | undefined;
  let rows = [{ start: 0, end: 0 }];
  /** Ends the row at `end`, the next row starting at `start` (after a line break, when any). */
  const nextRow = (end: number, start: number) => {
    rows[row].end = end;
    rows.push({ start, end: start });
    row++;
    column = 0;
  };
  /** Goes to the next row when a character `width` wide does not fit, as the terminal will. */
  const wrapFor = (width: number) => {
    if (width === 0 || column + width <= columns) return;
    if (column < columns) out += " ".repeat(columns - column);
    nextRow(out.length, out.length);
  };
  const put = (shown: string, width: number) => {
    wrapFor(width);
    out += shown;
    column += width;
  };
  const normalized = (): ScreenPosition =>
    column >= columns ? { row: row + 1, column: 0 } : { row, column };
  let index = 0;
  let indent: string;
  const saved = cache?.checkpoint;
  if (
    saved?.prompt === prompt && saved.columns === columns && cursor >= saved.prefix.length &&
    text.startsWith(saved.prefix)
  ) {
    // The same line with text added at its end: go on from before its last character, which
    // what was added may combine with.
    ({ row, column, out, indent } = saved);
    rows = saved.rows.slice(0, row + 1);
    rows[row] = { ...rows[row] };
    index = saved.prefix.length;
  } else {
    for (const { segment } of SEGMENTER.segment(prompt)) put(segment, widthOf(segment));
    indent = " ".repeat(Math.min(column, Math.max(columns - 1, 0)));
  }
  let checkpoint: LayoutCheckpoint | undefined;
  /** Lays out the character `segment` at `index`. */
  const character = (segment: string) => {
    if (cache && index + segment.length === text.length) {
      checkpoint = {
        prompt,
        columns,
        prefix: text.slice(0, index),
        row,
        column,
        out,
        rows,
        indent,
      };
    }
    const lineBreak = segment === "\n" || segment === "\r\n";
    const [shown, width] = lineBreak
      ? [segment, 0]
      : segment === "\t"
      ? [TAB, TAB.length]
      : [segment, widthOf(segment)];
    wrapFor(width);
    if (index === cursor) cursorAt = normalized();
    index += segment.length;
    if (lineBreak) {
      const end = out.length;
      out += "\r\n";
      nextRow(end, out.length);
      out += indent;
      column = indent.length;
      return;
    }
    put(shown, width);
  };
  /** Lays out the `length` characters at `index`, printable ASCII: one column each. */
  const asciiRun = (length: number) => {
    for (const end = index + length; index < end;) {
      wrapFor(1);
      const take = Math.min(end - index, columns - column);
      if (cursor >= index && cursor < index + take) {
        cursorAt = { row, column: column + cursor - index };
      }
      out += text.slice(index, index + take);
      column += take;
      index += take;
    }
  };
  // Segmenting a long text into characters is slow (a huge paste without bracketed paste is
  // drawn once per read): runs of printable ASCII, one character per code unit, skip it.
  while (index < text.length) {
    ASCII_RUN.lastIndex = index;
    let length = ASCII_RUN.exec(text)?.[0].length ?? 0;
    // A character after the run that is not ASCII may combine with its last one (an accent);
    // the text's last character is kept for `character`, which takes the checkpoint before it.
    const next = index + length;
    if (length > 0 && (next === text.length || text.charCodeAt(next) > 0x7f)) length--;
    if (length > 0) {
      asciiRun(length);
      continue;
    }
    NEXT_ASCII_RUN.lastIndex = index + 1;
    const end = NEXT_ASCII_RUN.exec(text)?.index ?? text.length;
    for (const { segment } of SEGMENTER.segment(text.slice(index, end))) character(segment);
  }
  if (cursorAt === undefined) cursorAt = normalized();
  const filled = column >= columns;
  if (filled) {
    const end = out.length;
    out += "\r\n";
    nextRow(end, out.length);
  }
  rows[row].end = out.length;
  if (cache) cache.checkpoint = checkpoint;
  return { text: out, cursor: cursorAt, end: { row, column }, filled, rows };
}

/**
 * Where a {@linkcode layout} stood before the last character of its text, for the next layout of
 * the same line to start there.
 */
export interface LayoutCheckpoint {
  prompt: string;
  columns: number;
  /** The text before the last character. */
  prefix: string;
  row: number;
  column: number;
  /** What was to be written so far. */
  out: string;
  /** The rows so far (of which the layout went on to change the last and add more). */
  rows: Array<{ start: number; end: number }>;
  indent: string;
}

/**
 * What {@linkcode layout} keeps between the layouts of one line: when the next text is the last
 * one with more added at its end (typing at the end, a paste arriving read by read) and the
 * cursor is in what was added, the layout goes on from where the last one ended rather than
 * from the prompt.
 */
export interface LayoutCache {
  checkpoint?: LayoutCheckpoint;
}

/** The line being edited: its text and the cursor, an offset at a character boundary. */
export class EditBuffer {
  text = "";
  cursor = 0;
  /** The column Up/Down aim for, while nothing else moved the cursor (past shorter lines). */
  #goal: { column: number; text: string; cursor: number } | undefined;

  /** Replaces the text; the cursor goes to its end. */
  set(text: string): void {
    this.text = text;
    this.cursor = text.length;
  }

  insert(text: string): void {
    this.text = this.text.slice(0, this.cursor) + text + this.text.slice(this.cursor);
    this.cursor += text.length;
  }

  deleteForward(): void {
    this.#remove(this.cursor, nextBoundary(this.text, this.cursor));
  }

  /**
   * Moves the cursor to the line above (`-1`) or below (`1`) in a text of several lines, at the
   * same column or at that line's end when it is shorter; false when there is no such line. The
   * column is the one of the first of several such moves in a row, so a shorter line on the way
   * does not pull the cursor to the left.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { EditBuffer } from "./line_editor.ts";
   * const line = new EditBuffer();
   * line.set("one\nlonger line");
   * assert.equal(line.moveLine(-1), true);
   * assert.equal(line.cursor, 3); // the end of "one"
   * assert.equal(line.moveLine(-1), false);
   * ```
   */
  moveLine(direction: -1 | 1): boolean {
    const { text, cursor } = this;
    const start = lineStart(text, cursor);
    const end = text.indexOf("\n", cursor);
    if (direction < 0 ? start === 0 : end < 0) return false;
    const target = direction < 0 ? lineStart(text, start - 1) : end + 1;
    const targetEnd = text.indexOf("\n", target);
    const kept = this.#goal;
    const goal = kept?.text === text && kept.cursor === cursor
      ? kept.column
      : columnsOf(text.slice(start, cursor));
    let at = target;
    let column = 0;
    for (
      const { segment } of SEGMENTER.segment(
        text.slice(target, targetEnd < 0 ? undefined : targetEnd),
      )
    ) {
      column += columnsOf(segment);
      if (column > goal) break;
      at += segment.length;
    }
    this.cursor = at;
    this.#goal = { column: goal, text, cursor: at };
    return true;
  }

  /** Applies an editing key (not Enter, Ctrl-D, Ctrl-C, Up/Down or Ctrl-L). */
  apply(key: Key): void {
    const { text, cursor } = this;
    switch (key.kind) {
      case "text":
      case "paste":
        this.insert(key.text);
        break;
      case "newline":
        this.insert("\n");
        break;
      case "backspace":
        this.#remove(previousBoundary(text, cursor), cursor);
        break;
      case "delete":
        this.deleteForward();
        break;
      case "left":
        this.cursor = previousBoundary(text, cursor);
        break;
      case "right":
        this.cursor = nextBoundary(text, cursor);
        break;
      case "wordLeft":
        this.cursor = wordStart(text, cursor);
        break;
      case "wordRight":
        this.cursor = wordEnd(text, cursor);
        break;
      case "home":
        this.cursor = lineStart(text, cursor);
        break;
      case "end": {
        const end = text.indexOf("\n", cursor);
        this.cursor = end < 0 ? text.length : end;
        break;
      }
      case "killStart":
        this.#remove(lineStart(text, cursor), cursor);
        break;
      case "killEnd": {
        const end = text.indexOf("\n", cursor);
        this.#remove(cursor, end < 0 ? text.length : end);
        break;
      }
      case "killWordBack": {
        let start = cursor;
        while (start > 0 && /\s/.test(text[start - 1])) start--;
        while (start > 0 && !/\s/.test(text[start - 1])) start--;
        this.#remove(start, cursor);
        break;
      }
      case "killWordForward":
        this.#remove(cursor, wordEnd(text, cursor));
        break;
    }
  }

  #remove(from: number, to: number): void {
    if (to <= from) return;
    this.text = this.text.slice(0, from) + this.text.slice(to);
    this.cursor = from;
  }
}

/** The start of the character before `offset` (found without segmenting the whole text). */
function previousBoundary(text: string, offset: number): number {
  if (offset <= 0) return 0;
  return SEGMENTER.segment(text).containing(offset - 1)?.index ?? 0;
}

/** The end of the character at `offset`. */
function nextBoundary(text: string, offset: number): number {
  const segment = SEGMENTER.segment(text).containing(offset);
  return segment ? segment.index + segment.segment.length : text.length;
}

/** The columns `text` (one line) takes on a terminal, tabs as {@linkcode layout} draws them. */
function columnsOf(text: string): number {
  let columns = 0;
  for (const { segment } of SEGMENTER.segment(text)) {
    columns += segment === "\t" ? TAB.length : widthOf(segment);
  }
  return columns;
}

/** Where the line (of a multi-line text) holding `offset` starts. */
function lineStart(text: string, offset: number): number {
  return offset === 0 ? 0 : text.lastIndexOf("\n", offset - 1) + 1;
}

/** A character of a word: letters with their combining marks (accents, vowel signs), digits. */
const WORD = /^[\p{L}\p{N}_]/u;

/** The characters of `text` with their offsets, in order. */
function characters(text: string): Array<{ segment: string; index: number }> {
  return [...SEGMENTER.segment(text)];
}

/** The start of the word before `offset` (non-word characters before it skipped). */
function wordStart(text: string, offset: number): number {
  const before = characters(text).filter((c) => c.index < offset);
  let at = before.length;
  while (at > 0 && !WORD.test(before[at - 1].segment)) at--;
  while (at > 0 && WORD.test(before[at - 1].segment)) at--;
  return at < before.length ? before[at].index : offset;
}

/** The end of the word after `offset` (non-word characters before it skipped). */
function wordEnd(text: string, offset: number): number {
  const after = characters(text).filter((c) => c.index >= offset);
  let at = 0;
  while (at < after.length && !WORD.test(after[at].segment)) at++;
  while (at < after.length && WORD.test(after[at].segment)) at++;
  return at < after.length ? after[at].index : text.length;
}
