/**
 * Where `agent chat` and the approval questions read their lines: the line editor when stdin and
 * stdout are a terminal that can draw it, else the lines as they come (a pipe, a file, `TERM=dumb`).
 * One input per command, so the chat prompt and an approval question never steal each other's
 * keys.
 *
 * @module
 */
import type { CliIo } from "./io.ts";
import { typedLine } from "./keys.ts";
import { type HistoryStore, LineEditor } from "./line_editor.ts";
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
  /**
   * Shows `prompt` and reads one line; `null` at the end of input (Ctrl-D on an empty line).
   * One line is read at a time: a question asked while another waits (a form left over from a
   * cancelled run, say) ends the waiting one, which rejects with {@linkcode ReadSuperseded}, and
   * is asked once that one has let go of the terminal.
   */
  ask(prompt: string, options: AskOptions): Promise<string | null>;
  /** Resolves once no line is being read. */
  idle(): Promise<void>;
  /**
   * Reads what is typed from now on (while the agent works, or the MCP servers connect) without
   * waiting for it, when lines are read as a terminal delivers them: a line typed meanwhile,
   * which the terminal echoed among other output, is then shown again after the prompt that
   * takes it. The editor leaves type-ahead in the terminal and draws it at the prompt itself:
   * nothing to do there.
   */
  readAhead(): void;
  close(): Promise<void>;
}

/** The read ended because another question took the terminal. */
export class ReadSuperseded extends Error {
  constructor() {
    super("another question took the terminal");
    this.name = "ReadSuperseded";
  }
}

/**
 * Opens the input of `io`: the editor on a capable terminal, else plain lines. With `history`,
 * the editor recalls the lines kept there and keeps the ones it remembers there too.
 */
export function openInput(io: CliIo, options: { history?: HistoryStore } = {}): LineInput {
  const terminal = io.editorTerminal?.();
  if (terminal) {
    const editor = new LineEditor(terminal, {
      interrupt: () => io.interrupt?.(),
      history: options.history,
    });
    return oneAtATime(
      true,
      (prompt, options) => editor.readLine(prompt, options),
      () => terminal.close(),
    );
  }
  const lines = new LineReader(stdinOf(io));
  return oneAtATime(
    false,
    async (prompt, options) => {
      if (!io.stdinIsTerminal) return await lines.readLine(options.signal);
      // A line typed before the prompt was echoed then, among other output: shown again after it.
      const typedAhead = lines.hasLine;
      io[options.to](prompt);
      const line = await lines.readLine(options.signal);
      if (line === null) return null;
      // Arrows pressed at a terminal that cannot edit are not text of the message or answer.
      const typed = typedLine(line);
      if (typedAhead) io[options.to](`${typed}\n`);
      return typed;
    },
    () => lines.close(),
    () => {
      if (io.stdinIsTerminal) lines.readAhead();
    },
  );
}

/** A {@linkcode LineInput} over `read`, which is never called while a call of it is under way. */
function oneAtATime(
  editing: boolean,
  read: (prompt: string, options: AskOptions) => Promise<string | null>,
  close: () => Promise<void>,
  readAhead: () => void = () => {},
): LineInput {
  /** The read under way, which a new question stops. */
  let active: AbortController | undefined;
  /** Settles when the last question asked so far has let go of the terminal. */
  let tail: Promise<void> = Promise.resolve();
  const idle = async () => {
    for (let seen; seen !== tail;) await (seen = tail);
  };
  return {
    editing,
    ask: (prompt, options) => {
      active?.abort(new ReadSuperseded());
      const previous = tail;
      let release!: () => void;
      tail = new Promise((resolve) => release = resolve);
      return (async () => {
        try {
          await previous;
          options.signal?.throwIfAborted();
          const stop = new AbortController();
          active = stop;
          const signal = options.signal
            ? AbortSignal.any([options.signal, stop.signal])
            : stop.signal;
          return await read(prompt, { ...options, signal });
        } finally {
          active = undefined;
          release();
        }
      })();
    },
    idle,
    readAhead,
    close,
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
