/**
 * Keys from the bytes a terminal in raw mode sends: text, control keys, the escape sequences of
 * arrows, Home/End/Delete (xterm, VT220 and SS3 forms, with modifiers), Alt combinations, and
 * bracketed pastes. Mouse reports (tracking left on by another program) are dropped whole. A
 * sequence split across reads is completed by the next one.
 *
 * Lines typed or pasted while the terminal was not in raw mode (while the agent worked) reach
 * the first read after it as one input, each ended by a line feed (the line discipline turned
 * their Enters into line feeds). Input that holds such a line feed with more after it is one
 * paste, so several lines are one message to send, not one message each; a single line ended
 * with Enter is still that line and Enter.
 *
 * @module
 */

/** One key press, or one paste. */
export type Key =
  /** Typed text (one or more printable characters). */
  | { kind: "text"; text: string }
  /**
   * A bracketed paste, or lines typed ahead (see the module's text): its text as is, line breaks
   * as `\n`, other control characters removed.
   */
  | { kind: "paste"; text: string }
  | { kind: KeyName };

/** The keys that carry no text. */
export type KeyName =
  | "enter"
  /** Alt-Enter: a line break inside the message. */
  | "newline"
  | "backspace"
  | "delete"
  | "left"
  | "right"
  | "wordLeft"
  | "wordRight"
  | "home"
  | "end"
  | "up"
  | "down"
  /** Ctrl-U: delete up to the start of the line. */
  | "killStart"
  /** Ctrl-K: delete to the end of the line. */
  | "killEnd"
  /** Ctrl-W, Alt-Backspace: delete the word before the cursor. */
  | "killWordBack"
  /** Alt-D: delete the word after the cursor. */
  | "killWordForward"
  /** Ctrl-D. */
  | "eof"
  /** Ctrl-C. */
  | "interrupt"
  /** Ctrl-L. */
  | "clearScreen"
  /** Ctrl-Z: stop the program until the shell continues it (`fg`). */
  | "suspend";

const ESC = "\x1b";
const PASTE_START = "\x1b[200~";
const PASTE_END = "\x1b[201~";
/** An X10/normal mouse report: `ESC [ M` and three bytes. */
const X10_MOUSE = "\x1b[M";

const CONTROL_KEYS: Record<string, Key> = {
  "\x01": { kind: "home" },
  "\x02": { kind: "left" },
  "\x03": { kind: "interrupt" },
  "\x04": { kind: "eof" },
  "\x05": { kind: "end" },
  "\x06": { kind: "right" },
  "\x08": { kind: "backspace" },
  "\x0b": { kind: "killEnd" },
  "\x0c": { kind: "clearScreen" },
  "\x0e": { kind: "down" },
  "\x10": { kind: "up" },
  "\x15": { kind: "killStart" },
  "\x17": { kind: "killWordBack" },
  "\x1a": { kind: "suspend" },
  "\x7f": { kind: "backspace" },
};

/** CSI sequences by their final byte (`ESC [ … final`). */
const CSI_FINAL: Record<string, KeyName> = {
  A: "up",
  B: "down",
  C: "right",
  D: "left",
  H: "home",
  F: "end",
};

/** VT220 sequences `ESC [ n ~` by `n`. */
const CSI_TILDE: Record<string, KeyName> = {
  "1": "home",
  "7": "home",
  "4": "end",
  "8": "end",
  "3": "delete",
};

/** Alt (Meta) combinations: `ESC` then the key. */
const ALT_KEYS: Record<string, KeyName> = {
  "\r": "newline",
  "\n": "newline",
  b: "wordLeft",
  f: "wordRight",
  d: "killWordForward",
  "\x7f": "killWordBack",
  "\x08": "killWordBack",
};

/**
 * Turns raw terminal input into {@linkcode Key}s.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { KeyDecoder } from "./keys.ts";
 * const keys = new KeyDecoder();
 * assert.deepEqual(keys.push("hi\x1b[D"), [{ kind: "text", text: "hi" }, { kind: "left" }]);
 * // A sequence cut between two reads.
 * assert.deepEqual(keys.push("\x1b["), []);
 * assert.deepEqual(keys.push("3~\r"), [{ kind: "delete" }, { kind: "enter" }]);
 * assert.deepEqual(keys.push("\x1b[200~a\r\nb\x1b[201~"), [{ kind: "paste", text: "a\nb" }]);
 * ```
 */
export class KeyDecoder {
  /** Input not decoded yet: the start of an escape sequence, or a paste under way. */
  #pending = "";
  #pasting = false;
  #paste = "";
  /** The last key was a carriage return: a `\n` right after it is the same Enter. */
  #afterCr = false;

  /** Decodes `input`, keeping an incomplete sequence at its end for the next call. */
  push(input: string): Key[] {
    if (this.#pasting && input === "\x03") {
      // A read of nothing but Ctrl-C is a key pressed, not pasted text: a paste whose end marker
      // never came would otherwise take every key typed after it. What it holds is dropped.
      this.#pasting = false;
      this.#paste = "";
      this.#pending = "";
      return [{ kind: "interrupt" }];
    }
    if (!this.#pasting && this.#pending === "" && !input.includes(PASTE_START)) {
      // The line feed of a CR LF split between reads is that Enter's.
      const rest = this.#afterCr && input.startsWith("\n") ? input.slice(1) : input;
      if (holdsTypedLines(rest)) {
        this.#afterCr = false;
        // Enter after the last line stays unsent: the lines are shown at the prompt first.
        const text = cleanPaste(rest.replace(/\n+$/, ""));
        return text.trim() === "" ? [] : [{ kind: "paste", text }];
      }
    }
    let text = this.#pending + input;
    this.#pending = "";
    const keys: Key[] = [];
    while (text.length > 0) {
      if (this.#pasting) {
        text = this.#continuePaste(text, keys);
        continue;
      }
      const consumed = this.#next(text, keys);
      if (consumed === 0) {
        this.#pending = text; // an incomplete escape sequence
        break;
      }
      text = text.slice(consumed);
    }
    return keys;
  }

  /** Reads one key from the start of `text`; returns how much it used (0: need more input). */
  #next(text: string, keys: Key[]): number {
    const first = text[0];
    if (first === ESC) return this.#escape(text, keys);
    if (first === "\n" && this.#afterCr) {
      this.#afterCr = false;
      return 1;
    }
    this.#afterCr = first === "\r";
    if (first === "\r" || first === "\n") {
      keys.push({ kind: "enter" });
      return 1;
    }
    const control = CONTROL_KEYS[first];
    if (control) {
      keys.push(control);
      return 1;
    }
    if (isControl(first.charCodeAt(0)) && first !== "\t") return 1; // not bound: ignored
    let end = 1;
    while (end < text.length) {
      const code = text.charCodeAt(end);
      if ((isControl(code) && text[end] !== "\t") || code === 0x7f) break;
      end++;
    }
    const last = keys.at(-1);
    if (last?.kind === "text") last.text += text.slice(0, end);
    else keys.push({ kind: "text", text: text.slice(0, end) });
    return end;
  }

  #escape(text: string, keys: Key[]): number {
    this.#afterCr = false;
    if (text.length < 2) return 0;
    const second = text[1];
    if (second === "[") {
      if (text[2] === "[") return text.length < 4 ? 0 : 4; // Linux console F1-F5: ESC [ [ A..E
      // CSI: parameter and intermediate bytes, then one final byte in @..~ (or rxvt's `$`).
      let end = 2;
      while (end < text.length && /[0-9;:<=>? !"#%&'()*+,\-./]/.test(text[end])) end++;
      if (end >= text.length) return 0;
      const sequence = text.slice(0, end + 1);
      if (sequence === X10_MOUSE) {
        // A mouse report left on by another program: three bytes of button and position follow.
        return text.length < X10_MOUSE.length + 3 ? 0 : X10_MOUSE.length + 3;
      }
      if (sequence === PASTE_START) {
        this.#pasting = true;
        this.#paste = "";
        return sequence.length;
      }
      const key = csiKey(text.slice(2, end), text[end]);
      if (key) keys.push({ kind: key });
      return end + 1;
    }
    if (second === "O") {
      // SS3, with an optional modifier (`ESC O 5 D`); rxvt's Ctrl-Left/Right are `ESC O d/c`.
      let end = 2;
      while (end < text.length && /[0-9;]/.test(text[end])) end++;
      if (end >= text.length) return 0;
      const final = text[end];
      const key = final === "d"
        ? "wordLeft"
        : final === "c"
        ? "wordRight"
        : csiKey(text.slice(2, end) ? `1;${text.slice(2, end)}` : "", final);
      if (key) keys.push({ kind: key });
      return end + 1;
    }
    const alt = ALT_KEYS[second];
    if (alt) {
      keys.push({ kind: alt });
      return 2;
    }
    // A lone Escape press: dropped, and the key after it counts on its own.
    return 1;
  }

  /** Takes paste text from `text` up to the paste's end marker; returns what follows it. */
  #continuePaste(text: string, keys: Key[]): string {
    const end = text.indexOf(PASTE_END);
    if (end < 0) {
      // Keep back what could be the start of the end marker.
      let keep = 0;
      for (let n = Math.min(PASTE_END.length - 1, text.length); n > 0; n--) {
        if (PASTE_END.startsWith(text.slice(text.length - n))) {
          keep = n;
          break;
        }
      }
      this.#paste += text.slice(0, text.length - keep);
      this.#pending = text.slice(text.length - keep);
      return "";
    }
    this.#paste += text.slice(0, end);
    this.#pasting = false;
    keys.push({ kind: "paste", text: cleanPaste(this.#paste) });
    this.#paste = "";
    return text.slice(end + PASTE_END.length);
  }
}

function csiKey(parameters: string, final: string): KeyName | undefined {
  if (final === "~") return CSI_TILDE[parameters.split(";")[0]];
  const key = CSI_FINAL[final];
  if (!key) return undefined;
  // `1;5C` is Ctrl-Right, `1;3C` Alt-Right: both move by words.
  const modifier = Number(parameters.split(";")[1] ?? "1");
  const byWord = modifier === 3 || modifier === 5;
  if (byWord && key === "left") return "wordLeft";
  if (byWord && key === "right") return "wordRight";
  return key;
}

function isControl(code: number): boolean {
  return code < 0x20 || (code >= 0x80 && code < 0xa0);
}

/**
 * Whether `input` holds lines typed ahead: a line feed that is not the end of a CR LF and has more
 * input after it. Typed in raw mode, Enter is a carriage return, and a line feed (Ctrl-J) comes
 * alone.
 */
function holdsTypedLines(input: string): boolean {
  for (let at = input.indexOf("\n"); at >= 0; at = input.indexOf("\n", at + 1)) {
    if (at === input.length - 1) return false;
    if (input[at - 1] !== "\r") return true;
  }
  return false;
}

/**
 * The escape sequences of keys: CSI (`ESC [ … final`: arrows, Home, Delete, F5 and up), SS3
 * (`ESC O x`: arrows and F1-F4 in application mode), and Alt combinations (`ESC x`).
 */
const KEY_SEQUENCE = new RegExp("\u001b(?:\\[[0-?]*[ -/]*[@-~]|O.|.?)", "gs");
/** Control characters other than tab. */
const CONTROL = new RegExp("[\u0000-\u0008\u000a-\u001f\u007f-\u009f]", "g");

/**
 * The text of a line that a terminal's own line discipline delivered, where no editor reads
 * (`TERM=dumb`): the keys it cannot edit with (arrows, Home, function keys) arrive in it as
 * escape sequences, which are removed with the other control characters but tabs.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { typedLine } from "./keys.ts";
 * assert.equal(typedLine("yes\x1b[A\x1bOD\t!"), "yes\t!");
 * ```
 */
export function typedLine(line: string): string {
  return line.replace(KEY_SEQUENCE, "").replace(CONTROL, "");
}

/** Line breaks become `\n`; escape sequences and control characters other than tabs go. */
function cleanPaste(text: string): string {
  return text
    .replace(/\r\n?/g, "\n")
    // deno-lint-ignore no-control-regex
    .replace(/\x1b\[[0-?]*[ -/]*[@-~]|\x1b[^[]?/g, "")
    // deno-lint-ignore no-control-regex
    .replace(/[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]/g, "");
}
