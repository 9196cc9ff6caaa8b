/**
 * The `agent` command line: one commander program, one file per command group.
 *
 * @module
 */
import { Command, CommanderError, Help } from "@commander-js/extra-typings";
import { ConfigError } from "../home/errors.ts";
import { AGENT_VERSION } from "../version.ts";
import { addAgentCommands } from "./agent.ts";
import { addGatewayCommands } from "./gateway.ts";
import {
  CliError,
  type CliIo,
  ExitCode,
  type LoadedConfig,
  processIo,
  UsageError,
  warnAboutUnknownKeys,
} from "./io.ts";
import { addMcpCommands } from "./mcp.ts";
import { addMetricsCommands } from "./metrics.ts";
import { addWebhookCommands } from "./webhook.ts";

/**
 * Runs `agent` with `argv` (without the program name) and returns the exit code: 0 ok,
 * 1 operation failed, 2 usage or validation error. A leading `--` (as `deno task agent -- …`
 * passes it) is dropped.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { runCli } from "./mod.ts";
 * const code = await runCli(["--version"]);
 * assert(code === 0);
 * ```
 */
export async function runCli(argv: string[], io: CliIo = processIo()): Promise<number> {
  // `deno task agent -- metrics status --json` passes the `--` on; to commander it would end the
  // options before the command name, turning every later option into an argument.
  if (argv[0] === "--") argv = argv.slice(1);
  const wantsJson = argv.includes("--json");
  const state = { exitCode: ExitCode.ok as number };
  const program = buildProgram(io, state, wantsJson);
  // `agent help webhook subscribe` is `agent webhook subscribe --help` (commander's help command
  // takes one name, and would show the help of `webhook`); `agent help nosuch` is reported as
  // `agent nosuch` is, with commander's "did you mean", not as the whole help and no reason.
  if (argv[0] === "help" && argv[1] !== undefined && !argv[1].startsWith("-")) {
    const named = commandOf(program, argv.slice(1));
    argv = named.unknown ? argv.slice(1) : [...argv.slice(1), "--help"];
  }
  try {
    checkOptionValues(program, argv);
    await program.parseAsync(argv, { from: "user" });
    return state.exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version are printed by commander and are not failures.
      if (error.exitCode === 0) return ExitCode.ok;
      if (wantsJson) {
        const message = error.message.replace(/^error: /, "");
        io.out(JSON.stringify({ error: { message, exit_code: ExitCode.usage } }, null, 2) + "\n");
      }
      return ExitCode.usage;
    }
    return reportError(io, error, wantsJson);
  }
}

/**
 * The command `argv` names (its leading words, each a subcommand of the one before), the index of
 * the first argument after its name, and whether a leading word named no subcommand.
 */
function commandOf(
  program: Command,
  argv: string[],
): { command: Command; rest: number; unknown: boolean } {
  let command = program;
  let i = 0;
  for (; i < argv.length && !argv[i].startsWith("-"); i++) {
    const word = argv[i];
    const sub = command.commands.find((candidate) =>
      candidate.name() === word || candidate.aliases().includes(word)
    );
    if (!sub) return { command, rest: i, unknown: true };
    command = sub as Command;
  }
  return { command, rest: i, unknown: false };
}

/**
 * Refuses an option of the command being run, given where another option's value should be
 * (`--prompt --json`): commander would take `--json` as the prompt, and the command would run
 * with a value nobody meant and without the JSON output asked for. `--prompt=--json` still
 * passes `--json` as the value.
 */
function checkOptionValues(program: Command, argv: string[]): void {
  const { command, rest } = commandOf(program, argv);
  const options = [...command.options, ...(command === program ? [] : program.options)];
  const flags = new Set(["-h", "--help"]);
  for (const option of options) {
    if (option.long) flags.add(option.long);
    if (option.short) flags.add(option.short);
  }
  for (let i = rest; i < argv.length - 1; i++) {
    if (argv[i] === "--") return;
    const option = options.find((candidate) =>
      candidate.long === argv[i] || candidate.short === argv[i]
    );
    if (!option?.required || !flags.has(argv[i + 1])) continue;
    throw new UsageError(
      `option '${option.flags}' needs a value, and ${argv[i + 1]} is an option. Fix: give the ` +
        `value (write ${option.long ?? option.short}=${argv[i + 1]} if that is the value)`,
    );
  }
}

/**
 * Mutable state of a command: the exit code it chose without throwing, and the config loaded
 * before it ran (for the warnings every command prints), so that it need not load it again.
 */
export interface CommandState extends LoadedConfig {
  exitCode: number;
}

function buildProgram(io: CliIo, state: CommandState, json = false): Command {
  const program = new Command("agent")
    .description(
      "A locally run agent service: MCP client, webhook gateway, and opt-in usage metrics.\n" +
        "State lives in $AGENT_HOME (default ~/.agent): config.yaml, .env, logs/, …",
    )
    .version(AGENT_VERSION, "-V, --version", "print the version")
    .helpOption("-h, --help", "show help for a command")
    .helpCommand("help [command]", "show help for a command")
    .exitOverride()
    .configureHelp({
      // A repeatable option starts as an empty list: "(default: [])" would tell the user nothing.
      optionDescription(option) {
        const { defaultValue } = option;
        const empty = Array.isArray(defaultValue) && defaultValue.length === 0;
        const shown = empty
          ? Object.assign(Object.create(option), { defaultValue: undefined })
          : option;
        return Help.prototype.optionDescription.call(this, shown);
      },
    })
    .configureOutput({
      writeOut: io.out,
      writeErr: io.err,
      // With --json a usage error is the JSON document on stdout only, as any other error is.
      outputError: (text, write) => json ? undefined : write(text),
    })
    .showHelpAfterError(json ? false : "(run the command with --help for usage)")
    .addHelpText(
      "after",
      "\nExit codes: 0 ok, 1 the operation failed, 2 usage or validation error.\n" +
        "Commands that list or create things take --json (one JSON document on stdout).",
    );
  program.hook("preAction", (_program, command) => {
    // `gateway run` logs these itself (to logs/gateway.log as well as stderr), or prints them
    // with the error when it cannot start.
    if (command.name() === "run" && command.parent?.name() === "gateway") return;
    state.config = warnAboutUnknownKeys(io);
  });
  addMetricsCommands(program, io, state);
  addMcpCommands(program, io, state);
  addAgentCommands(program, io, state);
  addWebhookCommands(program, io, state);
  addGatewayCommands(program, io);
  return program;
}

/** Errors of the machine's files, not of this program. */
const FILESYSTEM_ERRORS = [
  Deno.errors.NotFound,
  Deno.errors.PermissionDenied,
  Deno.errors.NotCapable,
  Deno.errors.AlreadyExists,
  Deno.errors.IsADirectory,
  Deno.errors.NotADirectory,
  Deno.errors.FilesystemLoop,
];

/**
 * An error the operating system reported with an errno name and no class of its own (a
 * read-only file system, a full disk): a problem of the machine, not a bug.
 */
function isOsError(error: unknown): boolean {
  return error instanceof Error && /^E[A-Z]+$/.test(String((error as { code?: unknown }).code));
}

function reportError(io: CliIo, error: unknown, json: boolean): number {
  const exitCode = error instanceof CliError
    ? error.exitCode
    : error instanceof ConfigError
    ? ExitCode.usage
    : ExitCode.failed;
  const message = error instanceof Error ? error.message : String(error);
  if (json) {
    const detail: Record<string, unknown> = { message, exit_code: exitCode };
    if (error instanceof ConfigError) {
      Object.assign(detail, {
        file: error.location.file,
        key: error.location.key,
        line: error.location.line,
      });
    }
    io.out(JSON.stringify({ error: detail }, null, 2) + "\n");
  } else {
    io.err(`agent: ${message}\n`);
    // A stack helps with a bug, not with a file that is a folder or cannot be read (Deno's
    // message names the operation and the path).
    const expected = error instanceof CliError || error instanceof ConfigError ||
      FILESYSTEM_ERRORS.some((kind) => error instanceof kind) || isOsError(error);
    if (!expected && error instanceof Error) io.err(`${error.stack ?? ""}\n`);
  }
  return exitCode;
}
