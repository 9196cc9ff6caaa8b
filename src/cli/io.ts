/**
 * What a CLI command may touch: output streams, environment, terminal state, clock, and the
 * errors that choose its exit code. Injected so commands run in-process in tests.
 *
 * @module
 */
import process from "node:process";
import { loadConfig, type ResolvedConfig } from "../home/config.ts";
import { unknownConfigKeyWarnings } from "../home/config_keys.ts";
import type { EnvReader } from "../home/paths.ts";
import type { EditorTerminal } from "./line_editor.ts";
import { ChunkReader } from "./lines.ts";

/** The outside world of one CLI invocation. */
export interface CliIo {
  /** Writes to stdout (text is written as given). */
  out(text: string): void;
  /** Writes to stderr. */
  err(text: string): void;
  /** Reads the process environment. */
  env: EnvReader;
  /** Whether stdin is a terminal (prompts are allowed). */
  stdinIsTerminal: boolean;
  /** Whether stdout is a terminal (text a terminal would act on is shown escaped). */
  stdoutIsTerminal: boolean;
  /** Whether stderr is a terminal (progress is shown). */
  stderrIsTerminal: boolean;
  /** The terminal's width in columns, 0 when unknown: a progress line redrawn in place fits it. */
  columns?(): number;
  /** Reads all of stdin as text. */
  readStdin(): Promise<string>;
  /** Asks a yes/no question on the terminal; default answer no. */
  confirm(question: string): Promise<boolean>;
  /** Clock (ms since epoch). */
  now(): number;
  /** stdin as a byte stream (interactive commands read it line by line). */
  stdin?(): ReadableStream<Uint8Array>;
  /** Subscribes to Ctrl-C (SIGINT) while the listener is registered; returns the unsubscribe. */
  onInterrupt?(listener: () => void): () => void;
  /** Does what Ctrl-C does: calls the {@linkcode onInterrupt} listeners (raw mode has no SIGINT). */
  interrupt?(): void;
  /**
   * The terminal for line editing, when stdin and stdout are both terminals and `TERM` is not
   * `dumb`; otherwise lines are read as the terminal's own line discipline delivers them.
   */
  editorTerminal?(): EditorTerminal | undefined;
  /**
   * Subscribes to the system asking the process to stop (SIGTERM: `kill`, `timeout`, service
   * managers; SIGHUP: the terminal closed) while the listener is registered; returns the
   * unsubscribe. Without a listener the signals end the process at once.
   */
  onTerminate?(listener: (signal: StopSignal) => void): () => void;
  /** Terminal questions of the wizards (only used when `stdinIsTerminal`). */
  prompter?: Prompter;
  /** Opens a URL in the browser (OAuth login); default `xdg-open` / `open`, failures ignored. */
  openBrowser?(url: string): void | Promise<void>;
}

/** A signal by which the system asks the process to stop. */
export type StopSignal = "SIGTERM" | "SIGHUP";

/** Checks an answer: `true`, or the message shown before asking again. */
export type AnswerCheck = (value: string) => true | string;

/** One choice of {@linkcode Prompter.select}. */
export interface PromptChoice<T extends string> {
  value: T;
  name: string;
  description?: string;
}

/**
 * Questions asked at the terminal. An answer that fails its check is asked again. Ctrl-C
 * rejects with {@linkcode PromptCancelled}.
 */
export interface Prompter {
  confirm(message: string, defaultValue: boolean): Promise<boolean>;
  input(message: string, options?: { default?: string; validate?: AnswerCheck }): Promise<string>;
  select<T extends string>(
    message: string,
    choices: readonly PromptChoice<T>[],
    defaultValue?: T,
  ): Promise<T>;
  /** Asks for a value without echoing it. */
  password(message: string, validate?: AnswerCheck): Promise<string>;
}

/** The user left a question with Ctrl-C (or closed the terminal). */
export class PromptCancelled extends Error {
  constructor() {
    super("cancelled at the prompt");
    this.name = "PromptCancelled";
  }
}

/** Exit codes of `agent` (decisions.md §3). */
export const ExitCode = { ok: 0, failed: 1, usage: 2 } as const;

/** An error the CLI reports as one message and an exit code (1 unless said otherwise). */
export class CliError extends Error {
  /** Process exit code. */
  readonly exitCode: number;
  constructor(message: string, exitCode: number = ExitCode.failed) {
    super(message);
    this.name = "CliError";
    this.exitCode = exitCode;
  }
}

/** A usage or validation error: exit code 2. */
export class UsageError extends CliError {
  constructor(message: string) {
    super(message, ExitCode.usage);
    this.name = "UsageError";
  }
}

/**
 * The error of a log under `<home>/logs` that cannot be opened (`agent run`, `chat`, `gateway
 * run`): the folder and the fix, with the operating system's reason.
 */
export function logUnwritable(config: ResolvedConfig, error: unknown): CliError {
  const logs = config.paths.logs;
  return new CliError(
    `cannot write the log under ${logs}: ${error instanceof Error ? error.message : error}. ` +
      `Fix: make ${logs} a folder this user can write, with gateway.log in it a file or absent ` +
      "(check their owner and mode; files created with sudo belong to root)",
  );
}

/** Writes one JSON document (pretty, newline-terminated) to stdout. */
export function printJson(io: CliIo, value: unknown): void {
  io.out(JSON.stringify(value, null, 2) + "\n");
}

/** The real process: Deno's streams, environment and terminal. */
export function processIo(): CliIo {
  const encoder = new TextEncoder();
  const interruptListeners = new Set<() => void>();
  const interrupt = () => {
    for (const listener of [...interruptListeners]) listener();
  };
  const prompter = inquirerPrompter();
  return {
    out: (text) => writeAll(Deno.stdout, encoder.encode(text)),
    err: (text) => writeAll(Deno.stderr, encoder.encode(text)),
    env: (name) => Deno.env.get(name),
    stdinIsTerminal: Deno.stdin.isTerminal(),
    stdoutIsTerminal: Deno.stdout.isTerminal(),
    stderrIsTerminal: Deno.stderr.isTerminal(),
    columns: () => consoleSize().columns,
    readStdin: () => new Response(Deno.stdin.readable).text(),
    // Ctrl-C or Ctrl-D at a yes/no question is "no".
    confirm: (question) =>
      prompter.confirm(question, false).catch((error) => {
        if (error instanceof PromptCancelled) return false;
        throw error;
      }),
    now: () => Date.now(),
    stdin: () => Deno.stdin.readable,
    onInterrupt: (listener) => {
      if (interruptListeners.size === 0) Deno.addSignalListener("SIGINT", interrupt);
      interruptListeners.add(listener);
      return () => {
        if (interruptListeners.delete(listener) && interruptListeners.size === 0) {
          Deno.removeSignalListener("SIGINT", interrupt);
        }
      };
    },
    interrupt,
    editorTerminal: () => {
      if (!Deno.stdin.isTerminal() || !Deno.stdout.isTerminal()) return undefined;
      if (["dumb", ""].includes(Deno.env.get("TERM") ?? "")) return undefined;
      const input = new ChunkReader(Deno.stdin.readable);
      return {
        read: (signal) => input.read(signal),
        ready: () => input.ready(),
        write: (text) => writeAll(Deno.stdout, encoder.encode(text)),
        setRaw: (raw) => {
          try {
            Deno.stdin.setRaw(raw);
          } catch {
            // The terminal went away (SIGHUP): there is no mode left to restore.
          }
        },
        columns: () => consoleSize().columns,
        rows: () => consoleSize().rows,
        // The default action of SIGTSTP stops the process until SIGCONT (the shell's `fg`); the
        // kernel drops it where no shell does job control.
        suspend: () => Deno.kill(Deno.pid, "SIGTSTP"),
        onResize: (listener) => {
          try {
            Deno.addSignalListener("SIGWINCH", listener);
          } catch {
            return () => {}; // Windows has no SIGWINCH
          }
          return () => Deno.removeSignalListener("SIGWINCH", listener);
        },
        close: () => input.close(),
      };
    },
    onTerminate: (listener) => {
      const added: Array<[StopSignal, () => void]> = [];
      for (const signal of ["SIGTERM", "SIGHUP"] as const) {
        const handler = () => listener(signal);
        try {
          Deno.addSignalListener(signal, handler);
          added.push([signal, handler]);
        } catch {
          // Windows knows neither signal.
        }
      }
      return () => {
        for (const [signal, handler] of added) Deno.removeSignalListener(signal, handler);
      };
    },
    prompter,
  };
}

/**
 * {@linkcode Prompter} on `@inquirer/prompts` (loaded on first use). Questions go to stderr, like
 * progress: stdout may be redirected to a file (`agent gateway setup > out.txt`), where a question
 * would wait unseen.
 */
function inquirerPrompter(): Prompter {
  const prompts = () => import("@inquirer/prompts");
  type Context = { output: NodeJS.WritableStream; signal: AbortSignal };
  /**
   * Runs one prompt; Ctrl-C and Ctrl-D on an empty answer cancel it. Inquirer leaves a prompt
   * waiting forever when Ctrl-D closes its readline (it only handles Ctrl-C): readline's own key
   * handler runs first and, when it closed on that key, has taken the terminal out of raw mode.
   */
  type Prompts = Awaited<ReturnType<typeof prompts>>;
  const cancellable = async <T>(
    ask: (prompts: Prompts, context: Context) => Promise<T>,
  ): Promise<T> => {
    const loaded = await prompts();
    const closed = new AbortController();
    const onKey = (_text: unknown, key?: { ctrl?: boolean; name?: string }) => {
      if (key?.ctrl && key.name === "d" && !process.stdin.isRaw) closed.abort();
    };
    try {
      // The prompt's readline is made here, in this turn: its key handler comes before ours.
      const answer = ask(loaded, { output: process.stderr, signal: closed.signal });
      process.stdin.on("keypress", onKey);
      return await answer;
    } catch (error) {
      const name = error instanceof Error ? error.name : "";
      if (name === "ExitPromptError" || name === "AbortPromptError") throw new PromptCancelled();
      throw error;
    } finally {
      process.stdin.off("keypress", onKey);
    }
  };
  return {
    confirm: (message, defaultValue) =>
      cancellable((prompts, context) =>
        prompts.confirm({ message, default: defaultValue }, context)
      ),
    input: (message, options = {}) =>
      cancellable((prompts, context) => prompts.input({ message, ...options }, context)),
    select: <T extends string>(
      message: string,
      choices: readonly PromptChoice<T>[],
      defaultValue?: T,
    ) =>
      cancellable((prompts, context) =>
        prompts.select<T>({ message, choices, default: defaultValue }, context)
      ),
    password: (message, validate) =>
      cancellable((prompts, context) =>
        prompts.password({ message, mask: "*", validate }, context)
      ),
  };
}

function writeAll(stream: { writeSync(p: Uint8Array): number }, bytes: Uint8Array): void {
  let written = 0;
  try {
    while (written < bytes.length) written += stream.writeSync(bytes.subarray(written));
  } catch (error) {
    // The reader went away (`agent … | head`): like other Unix tools, stop writing quietly.
    if (!(error instanceof Deno.errors.BrokenPipe)) throw error;
  }
}

/**
 * Prints a warning for each key of `config.yaml` that nothing reads (a misspelled section or
 * option is otherwise silently ignored), and for each line of `.env` that gives no variable (a
 * secret written there would otherwise be "not set" with no word why). Returns the config it
 * loaded, for the command to use; `undefined` when it does not load: that is left to the command,
 * which reports it with its own exit code.
 */
export function warnAboutUnknownKeys(io: CliIo): ResolvedConfig | undefined {
  let config: ResolvedConfig;
  try {
    config = loadConfig({ env: io.env });
  } catch {
    return undefined;
  }
  for (const warning of configFileWarnings(config)) io.err(`warning: ${warning}\n`);
  return config;
}

/** What a command got before it ran: the config {@linkcode warnAboutUnknownKeys} loaded. */
export interface LoadedConfig {
  /** `undefined` when it did not load, or was not loaded (`gateway run`). */
  config?: ResolvedConfig;
}

/**
 * The config a command that does not change it reads: the one loaded before it ran, or, when that
 * did not load, loaded again to throw the error the command reports.
 */
export function commandConfig(io: CliIo, loaded: LoadedConfig): ResolvedConfig {
  return loaded.config ?? loadConfig({ env: io.env });
}

/**
 * {@linkcode configFileWarnings} of the config loaded before the command ran, none when it did not
 * load: for the `--json` document of a command that does not read the config otherwise.
 */
export function loadedConfigFileWarnings(loaded: LoadedConfig): string[] {
  return loaded.config ? configFileWarnings(loaded.config) : [];
}

/**
 * What {@linkcode warnAboutUnknownKeys} prints for `config` (without `warning: `), for a
 * `--json` document's `warnings`.
 */
export function configFileWarnings(config: ResolvedConfig): string[] {
  return [...unknownConfigKeyWarnings(config.source), ...config.dotenvWarnings];
}

/** The terminal's size, zeros when unknown (no terminal, or it went away). */
function consoleSize(): { columns: number; rows: number } {
  try {
    return Deno.consoleSize();
  } catch {
    return { columns: 0, rows: 0 };
  }
}
