/**
 * Where `agent chat` and the approval questions read their lines: the line editor when stdin and
 * stdout are a terminal that can draw it, else the lines as they come (a pipe, a file, `TERM=dumb`).
 * One input per command, so the chat prompt and an approval question never steal each other's
 * keys.
 *
 * @module
 */
import type { CliIo } from "./io.ts";
import { LineEditor } from "./line_editor.ts";
import { LineReader } from "./lines.ts";

/** How one line is asked for. */
export interface AskOptions {
  /** Stops waiting: the call rejects with the reason, and what was typed is dropped. */
  signal?: AbortSignal;
  /** Where a plain prompt is written (the editor draws on the terminal itself). */
  to: "out" | "err";
  /** Whether the answer is kept for Up/Down recall (chat messages are, answers are not). */
  remember?: boolean;
}

/** Line input of an interactive command. */
export interface LineInput {
  /** Whether lines are edited in place (the terminal is in raw mode while one is read). */
  readonly editing: boolean;
  /** Shows `prompt` and reads one line; `null` at the end of input (Ctrl-D on an empty line). */
  ask(prompt: string, options: AskOptions): Promise<string | null>;
  close(): Promise<void>;
}

/** Opens the input of `io`: the editor on a capable terminal, else plain lines. */
export function openInput(io: CliIo): LineInput {
  const terminal = io.editorTerminal?.();
  if (terminal) {
    const editor = new LineEditor(terminal, { interrupt: () => io.interrupt?.() });
    return {
      editing: true,
      ask: (prompt, options) => editor.readLine(prompt, options),
      close: () => terminal.close(),
    };
  }
  const lines = new LineReader(stdinOf(io));
  return {
    editing: false,
    ask: (prompt, options) => {
      if (io.stdinIsTerminal) io[options.to](prompt);
      return lines.readLine(options.signal);
    },
    close: () => lines.close(),
  };
}

function stdinOf(io: CliIo): ReadableStream<Uint8Array> {
  if (io.stdin) return io.stdin();
  // An io without a stream (tests): the whole of stdin, read once.
  return ReadableStream.from(
    (async function* () {
      yield new TextEncoder().encode(await io.readStdin());
    })(),
  );
}
