/**
 * A small model of a terminal's screen for line-editor tests: a grid of `rows` × `columns` cells
 * that is written as xterm draws what it is sent, and the rows that scrolled off its top (the
 * scrollback). It knows what the editor writes: printable characters (one column each; tests use
 * ASCII), carriage return, line feed, and the CSI sequences for cursor up/down/forward/back (`A`
 * `B` `C` `D`), column (`G`, as Deno's own progress writes it), home (`H`), erase in display
 * (`J`) and in line (`K`); private modes (`?2004h`) are ignored.
 * Lines wrap as xterm's do: a character written in the last column leaves the cursor there,
 * and the next character goes to the start of the next row, scrolling at the bottom.
 *
 * @module
 */

export class Screen {
  readonly rows: number;
  columns: number;
  /** Rows scrolled off the top, oldest first, trailing spaces removed. */
  readonly scrollback: string[] = [];
  #cells: string[][];
  #row = 0;
  #column = 0;
  /** A character was written in the last column: the next one goes to the next row. */
  #pendingWrap = false;

  constructor(rows: number, columns: number) {
    this.rows = rows;
    this.columns = columns;
    this.#cells = Array.from({ length: rows }, () => this.#blankRow());
  }

  /** The screen's rows, trailing spaces removed. */
  get lines(): string[] {
    return this.#cells.map((cells) => cells.join("").trimEnd());
  }

  /** Where the cursor is. */
  get cursor(): { row: number; column: number } {
    return { row: this.#row, column: this.#column };
  }

  /** The scrollback and the screen, one row per line, blank rows at the end removed. */
  get transcript(): string {
    return [...this.scrollback, ...this.lines].join("\n").trimEnd();
  }

  /** A new width, as xterm takes it: rows are cut or extended, not rewrapped. */
  resize(columns: number): void {
    this.columns = columns;
    this.#cells = this.#cells.map((cells) => [...cells, ...this.#blankRow()].slice(0, columns));
    this.#column = Math.min(this.#column, columns - 1);
    this.#pendingWrap = false;
  }

  write(text: string): void {
    for (let i = 0; i < text.length; i++) {
      const character = text[i];
      if (character === "\x1b" && text[i + 1] === "[") {
        const match = /^\[(\??)([\d;]*)([A-Za-z])/.exec(text.slice(i + 1));
        if (!match) throw new Error(`unknown escape sequence at ${JSON.stringify(text.slice(i))}`);
        i += match[0].length;
        if (match[1] === "?") continue;
        this.#control(match[3], Number(match[2] || "0"));
      } else if (character === "\r") {
        this.#column = 0;
        this.#pendingWrap = false;
      } else if (character === "\n") {
        this.#lineFeed();
      } else if (character < " ") {
        throw new Error(`unexpected control character ${JSON.stringify(character)}`);
      } else {
        this.#print(character);
      }
    }
  }

  #control(command: string, parameter: number): void {
    const count = Math.max(parameter, 1);
    this.#pendingWrap = false;
    switch (command) {
      case "A":
        this.#row = Math.max(this.#row - count, 0);
        break;
      case "B":
        this.#row = Math.min(this.#row + count, this.rows - 1);
        break;
      case "C":
        this.#column = Math.min(this.#column + count, this.columns - 1);
        break;
      case "D":
        this.#column = Math.max(this.#column - count, 0);
        break;
      case "H":
        this.#row = 0;
        this.#column = 0;
        break;
      case "J":
        if (parameter === 0) {
          this.#cells[this.#row].fill(" ", this.#column);
          for (let row = this.#row + 1; row < this.rows; row++) this.#cells[row].fill(" ");
        } else {
          for (const cells of this.#cells) cells.fill(" ");
        }
        break;
      case "G":
        this.#column = Math.min(count, this.columns) - 1;
        break;
      case "K":
        if (parameter === 1) throw new Error("erase to the start of the line is not modelled");
        this.#cells[this.#row].fill(" ", parameter === 0 ? this.#column : 0);
        break;
      default:
        throw new Error(`unknown control sequence ${command}`);
    }
  }

  #print(character: string): void {
    if (this.#pendingWrap) {
      this.#column = 0;
      this.#lineFeed();
    }
    this.#cells[this.#row][this.#column] = character;
    if (this.#column === this.columns - 1) this.#pendingWrap = true;
    else this.#column++;
  }

  #lineFeed(): void {
    this.#pendingWrap = false;
    if (this.#row < this.rows - 1) {
      this.#row++;
      return;
    }
    this.scrollback.push(this.#cells.shift()!.join("").trimEnd());
    this.#cells.push(this.#blankRow());
  }

  #blankRow(): string[] {
    return Array(this.columns).fill(" ");
  }
}
