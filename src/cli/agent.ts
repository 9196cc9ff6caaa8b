/**
 * `agent run` (one run on a prompt) and `agent chat` (an interactive session with `/reload-mcp`).
 *
 * @module
 */
import type { Command } from "@commander-js/extra-typings";
import {
  AgentSession,
  type ApprovalSurface,
  type ChatMessage,
  isEmptyAnswer,
  PolicyApprovals,
  PromptApprovals,
  readAgentSettings,
  RunCancelled,
  type RunEvent,
  type RunResult,
} from "../agent/mod.ts";
import { loadSkills, type SkillLoad, skillNameProblem } from "../agent/skills.ts";
import { loadConfig, type ResolvedConfig } from "../home/config.ts";
import { closeLogging, configuredLogLevel, configureLogging } from "../home/log.ts";
import stringWidth from "fast-string-width";
import { collapseWhitespace, cut, visible, visibleLines } from "../home/text.ts";
import { formatIssue, type McpConfigIssue } from "../mcp/mod.ts";
import {
  CliError,
  type CliIo,
  configFileWarnings,
  logUnwritable,
  printJson,
  type StopSignal,
  UsageError,
} from "./io.ts";
import { ChatHistoryFile } from "./chat_history.ts";
import { canRedraw, ERASE_ROW, fitColumns, toolProgressLine } from "./status_line.ts";
import { type LineInput, openInput, ReadSuperseded } from "./input.ts";
import type { CommandState } from "./mod.ts";

/** Adds `run` and `chat` to `program`. */
export function addAgentCommands(program: Command, io: CliIo, state: CommandState): void {
  program.command("run").description("run the agent once on a prompt and print the answer")
    .argument("[prompt]", "the prompt; '-' or none reads it from stdin")
    .option("--skills <names>", "comma-separated skills from <home>/skills/<name>/SKILL.md")
    .option("--json", "print one JSON document: answer, end reason, tool calls")
    .addHelpText(
      "after",
      "\nThe model comes from model.default / model.provider / model.base_url in config.yaml;\n" +
        "the key from <PROVIDER>_API_KEY (or model.api_key_env) in <home>/.env. Every tool of\n" +
        "the enabled mcp_servers is offered. Exit code 1 when the run ends without an answer\n" +
        "(timeout, iteration limit, model error, an empty answer, Ctrl-C, SIGTERM). A prompt read\n" +
        "from stdin loses its trailing line breaks.",
    )
    // Checked in the action, to say what to do: `agent run Summarise the issues` is a prompt
    // left unquoted, not a mistake commander's "too many arguments" explains.
    .allowExcessArguments()
    .action(async (promptArgument, options, command) => {
      if (command.args.length > 1) {
        throw new UsageError(
          `the prompt must be one argument, and ${command.args.length} were given; quote it: ` +
            `agent run ${shellQuote(command.args.join(" "))}`,
        );
      }
      const config = loadConfig({ env: io.env });
      warnAboutMetricsSettings(io, config);
      const skills = skillNames(options.skills, config);
      const prompt = await readPrompt(io, promptArgument);
      await withLogging(io, config, async () => {
        const lines = io.stdinIsTerminal ? openInput(io) : undefined;
        // A run that never started has no answer: exit 1, as for a run stopped midway.
        const session = await openSession(io, config, approvalsFor(io, config, lines), 1);
        try {
          const problems = mcpProblems(session, config);
          for (const { level, text } of problems) io.err(`${level}: ${text}\n`);
          const result = await cancellable(io, async (signal) => {
            const shown = io.stderrIsTerminal && !options.json
              ? progress(io, session.model.settings.model, signal)
              : undefined;
            try {
              return await session.run(prompt, { skills, signal, onEvent: shown?.onEvent });
            } finally {
              shown?.done();
            }
          });
          // An empty answer is no answer either (a warning says so): a script must not take it
          // for one.
          if (result.endReason !== "completed" || isEmptyAnswer(result)) state.exitCode = 1;
          // The run's own warnings (an empty or cut-off answer, a missing skill) on stderr in
          // both modes, as the config warnings before them: the file's (every command prints
          // them first) and the usage-metrics settings' (said above).
          for (const warning of result.warnings) io.err(`warning: ${warning}\n`);
          if (options.json) {
            // An invalid mcp_servers entry is no warning: it is in mcp_issues, as `mcp list
            // --json` has it in issues, with the entries' config warnings (also in warnings).
            const before = [
              ...configFileWarnings(config),
              ...config.telemetry.warnings,
              ...problems.filter((problem) => problem.level === "warning").map((p) => p.text),
            ];
            return printJson(io, runJson(result, before, session.mcpIssues));
          }
          if (result.answer) {
            // At a terminal, what the model wrote cannot drive it (a prompt-injected page could
            // make it clear or rewrite the screen); a file or pipe gets the answer as it is.
            const answer = io.stdoutIsTerminal ? visibleLines(result.answer) : result.answer;
            io.out(`${answer.replace(/\n*$/, "")}\n`);
          }
          if (result.endReason !== "completed") io.err(`agent: ${endText(result)}\n`);
        } finally {
          await lines?.close();
          await session.close();
        }
      });
    });

  program.command("chat").description("interactive agent session (type /help inside)")
    .option("--skills <names>", "comma-separated skills loaded for every turn")
    .addHelpText(
      "after",
      "\nCommands inside the session:\n" +
        CHAT_COMMANDS.map((line) => `  ${line}\n`).join("") +
        "Ctrl-C cancels the current run (or what /reload-mcp has not connected yet) and keeps\n" +
        "the session; SIGTERM or SIGHUP stops the run and leaves.\n\n" +
        "Editing at a terminal: Left/Right, Home/End (Ctrl-A/E), Alt-B/F by word, Ctrl-W and\n" +
        "Alt-Backspace (word before), Alt-D (word after), Ctrl-U/K (to start/end), Up/Down for\n" +
        "earlier messages (in a message of several lines, first from line to line), Alt-Enter\n" +
        "for a line break, Ctrl-L to clear. A multi-line paste is one message; lines pasted\n" +
        "while the agent works wait at the next prompt for Enter.\n" +
        "Ctrl-C clears the line (on an empty line: see above); Ctrl-D on an empty line\n" +
        "leaves. Messages are kept for Up/Down in later sessions too, in <home>/chat_history;\n" +
        "one typed with a leading space is not.",
    )
    .action(async (options) => {
      const config = loadConfig({ env: io.env });
      warnAboutMetricsSettings(io, config);
      const skills = skillNames(options.skills, config);
      await withLogging(io, config, async () => {
        const history = new ChatHistoryFile(
          config.paths.chatHistory,
          (problem) => io.err(`warning: ${problem}\n`),
        );
        const lines = openInput(io, { history });
        let session: AgentSession | undefined;
        try {
          // A line typed while the servers connect is shown again after the first prompt.
          lines.readAhead();
          // The session ends as SIGTERM ends it once open (exit 0).
          session = await openSession(io, config, approvalsFor(io, config, lines), 0);
          await chat(io, session, config, lines, skills);
        } finally {
          await lines.close();
          await session?.close();
        }
      });
    });
}

async function chat(
  io: CliIo,
  session: AgentSession,
  config: ResolvedConfig,
  lines: LineInput,
  skills: string[],
): Promise<void> {
  const model = session.model.settings;
  io.out(
    `agent chat: ${model.model} via ${model.provider}, ${
      countOf(session.manager.tools().length, "tool")
    }. ` +
      "Type /help for commands, /exit to leave.\n",
  );
  for (const { level, text } of mcpProblems(session, config)) io.err(`${level}: ${text}\n`);
  // A skill that is missing is said now, once, not at every turn.
  const skillNotes = skillNotices(io);
  skillNotes(loadSkills(config.paths.skills, skills));
  let history: ChatMessage[] = [];
  let running: AbortController | undefined;
  let reading = false;
  /** The /command under way, which Ctrl-C cancels. */
  let command: AbortController | undefined;
  const stopListening = io.onInterrupt?.(() => {
    if (running) {
      interruptNotice(io, "^C: cancelling the run …");
      running.abort(new RunCancelled("user"));
    } else if (command) {
      if (!command.signal.aborted) interruptNotice(io, "^C: cancelling …");
      command.abort();
    } else if (lines.editing) {
      // The editor has ended the line with ^C and draws the prompt again.
      io.err(`${reading ? "" : "\n"}(type /exit or press Ctrl-D to leave)\n`);
    } else {
      io.err("\n(type /exit or press Ctrl-D to leave)\n");
      if (io.stdinIsTerminal && reading) io.out("you> ");
    }
  });
  // SIGTERM / SIGHUP end the session like /exit, stopping a run under way first.
  const ended = new AbortController();
  const stopTerminate = io.onTerminate?.((signal) => {
    const reason = stoppedBy(signal);
    running?.abort(reason);
    ended.abort(reason);
    tell(io, `\n${signal}: ending the session …\n`);
  });
  try {
    while (!ended.signal.aborted) {
      let line: string | null;
      reading = true;
      try {
        line = await lines.ask("you> ", { signal: ended.signal, to: "out" });
      } catch (error) {
        if (ended.signal.aborted) break;
        if (!(error instanceof ReadSuperseded)) throw error;
        // A question of an MCP server came first: ask again once it is answered.
        await lines.idle();
        continue;
      } finally {
        reading = false;
      }
      if (line === null) break;
      if (line.trim() === "") continue;
      // A pasted block keeps the indentation of its first line.
      const text = line.includes("\n") ? line.replace(/^(?:[ \t]*\n)+/, "").trimEnd() : line.trim();
      if (isChatCommand(text)) {
        command = new AbortController();
        let keepGoing: boolean;
        try {
          keepGoing = await chatCommand(io, session, text, {
            clearHistory: () => history = [],
            configFile: config.paths.config,
            readAhead: () => lines.readAhead(),
            signal: command.signal,
          });
        } finally {
          command = undefined;
        }
        if (!keepGoing) break;
        continue;
      }
      running = new AbortController();
      lines.readAhead();
      const shown = progress(io, model.model, running.signal);
      let result: RunResult;
      try {
        result = await session.run(text, {
          skills,
          history,
          signal: running.signal,
          onEvent: shown.onEvent,
          onSkills: skillNotes,
        });
      } finally {
        shown.done();
        running = undefined;
      }
      history = result.messages;
      for (const warning of result.warnings) io.err(`warning: ${warning}\n`);
      // A conversation is read by a person (also through `| tee`): the answer cannot drive the
      // terminal.
      if (result.answer) io.out(`agent> ${visibleLines(result.answer).replace(/\n*$/, "")}\n`);
      if (result.endReason !== "completed") io.err(`[${endText(result)}]\n`);
    }
  } finally {
    stopListening?.();
    stopTerminate?.();
  }
}

/** The /commands of `agent chat`, one line each, for `/help` and `agent chat --help`. */
const CHAT_COMMANDS = [
  "/reload-mcp  re-read mcp_servers from config.yaml and reconnect what changed",
  "/tools       list the tools the agent can call",
  "/new         forget the conversation so far",
  "/help        list these commands",
  "/exit        leave the session (or /quit, or Ctrl-D on an empty line)",
];

/**
 * Says on stderr what the user should know of a chat's skills: each problem the first time it is
 * seen (or when it changes), and a skill that was missing once it is loaded.
 */
function skillNotices(io: CliIo): (load: SkillLoad) => void {
  let said = new Map<string, string>();
  return (load) => {
    const now = new Map(load.notLoaded.map((name, index) => [name, load.warnings[index]]));
    for (const [name, warning] of now) {
      if (said.get(name) !== warning) io.err(`warning: ${warning}\n`);
    }
    for (const skill of load.skills) {
      if (said.has(skill.name)) {
        io.err(`note: skill '${skill.name}' is loaded now (${skill.path})\n`);
      }
    }
    said = now;
  };
}

/**
 * Whether a message is a /command: one line whose first word is `/` and a name. A first word
 * with another `/` in it (a path such as `/etc/hosts`) starts a message to the model.
 */
function isChatCommand(text: string): boolean {
  return /^\/[^\s/]*(?:\s|$)/.test(text) && !text.includes("\n");
}

/** What a /command may need of the session around it. */
interface CommandContext {
  clearHistory: () => void;
  configFile: string;
  /** For a command that waits: a line typed meanwhile is shown again after the next prompt. */
  readAhead: () => void;
  /** Aborts on Ctrl-C. */
  signal: AbortSignal;
}

/** Runs a `/command`; returns false to leave the session. */
async function chatCommand(
  io: CliIo,
  session: AgentSession,
  text: string,
  { clearHistory, configFile, readAhead, signal }: CommandContext,
): Promise<boolean> {
  const [command] = text.split(/\s+/);
  switch (command) {
    case "/exit":
    case "/quit":
      return false;
    case "/help":
      io.out(
        CHAT_COMMANDS.map((line) => `${line}\n`).join("") +
          "Ctrl-C cancels a run or a reload and keeps the session.\n" +
          "Editing keys, history and signals: agent chat --help\n",
      );
      return true;
    case "/tools": {
      const tools = session.manager.tools();
      if (tools.length === 0) io.out("No tools: no MCP server is connected.\n");
      for (const tool of tools) {
        const notes = [
          tool.readOnly ? "read-only" : "",
          tool.trust === "untrusted" ? "untrusted" : "",
        ]
          .filter(Boolean).join(", ");
        io.out(`${tool.name}${notes ? ` (${notes})` : ""}\n`);
      }
      return true;
    }
    case "/new":
      clearHistory();
      io.out("Conversation cleared.\n");
      return true;
    case "/reload-mcp": {
      io.out("Reloading MCP servers …\n");
      readAhead();
      let reload;
      try {
        reload = await session.reloadMcp({ signal });
      } catch (error) {
        // A broken config.yaml keeps the current servers.
        io.err(`reload failed: ${error instanceof Error ? error.message : error}\n`);
        return true;
      }
      const { report, issues } = reload;
      for (const issue of issues) {
        io.err(`${issue.severity}: ${formatIssue(issue, configFile)}\n`);
      }
      const list = (names: string[]) => names.length > 0 ? names.join(", ") : "none";
      io.out(`added: ${list(report.added)}\n`);
      io.out(`removed: ${list(report.removed)}\n`);
      io.out(`reconnected: ${list(report.reconnected)}\n`);
      for (const failure of report.failed) io.out(`failed: ${failure.name}: ${failure.error}\n`);
      if (report.cancelled.length > 0) {
        io.out(
          `cancelled: ${report.cancelled.join(", ")} (stopped while connecting and left as ` +
            "before; /reload-mcp tries again)\n",
        );
      }
      io.out(`tools: ${report.toolCount}\n`);
      return true;
    }
    default:
      io.out(`Unknown command ${command}. Type /help for the commands.\n`);
      return true;
  }
}

/**
 * Says the warnings of the usage-metrics settings (`telemetry` in config.yaml,
 * `AGENT_SHARED_METRICS`) on stderr, after the config file's own: runs record and send by them.
 */
function warnAboutMetricsSettings(io: CliIo, config: ResolvedConfig): void {
  for (const warning of config.telemetry.warnings) io.err(`warning: ${warning}\n`);
}

/**
 * Opens the agent session, connecting to the MCP servers. Ctrl-C, SIGTERM or SIGHUP meanwhile
 * stop it: what was started is shut down (no stdio child is left behind) and the command ends
 * with `stoppedExitCode`, saying so.
 */
async function openSession(
  io: CliIo,
  config: ResolvedConfig,
  approvals: ApprovalSurface,
  stoppedExitCode: number,
): Promise<AgentSession> {
  const settings = readAgentSettings(config);
  if (!settings.model) throw settings.modelProblem!;
  const connecting = io.stderrIsTerminal && config.source.get("mcp_servers");
  if (connecting) io.err("Connecting to MCP servers …\n");
  const stop = new AbortController();
  const stopped = (how: string) => {
    if (stop.signal.aborted) return;
    stop.abort(
      new CliError(`stopped by ${how} while connecting to the MCP servers`, stoppedExitCode),
    );
    if (!connecting) return;
    // A Ctrl-C's notice takes the row of the `^C` the terminal echoed; a signal echoes nothing.
    if (how === "Ctrl-C") interruptNotice(io, "Ctrl-C: stopping …");
    else tell(io, `\n${how}: stopping …\n`);
  };
  const stopInterrupt = io.onInterrupt?.(() => stopped("Ctrl-C"));
  const stopTerminate = io.onTerminate?.((signal) => stopped(signal));
  try {
    return await AgentSession.open({
      config,
      entrypoint: "interactive",
      surface: "cli",
      approvals,
      env: io.env,
      signal: stop.signal,
    });
  } finally {
    stopInterrupt?.();
    stopTerminate?.();
  }
}

function approvalsFor(
  io: CliIo,
  config: ResolvedConfig,
  lines: LineInput | undefined,
): ApprovalSurface {
  const settings = readAgentSettings(config);
  if (!io.stdinIsTerminal || !lines) return new PolicyApprovals(settings.nonInteractiveApprovals);
  return new PromptApprovals(
    (question, signal) => lines.ask(question, { signal, to: "err", remember: false }),
    { timeoutMs: settings.approvalTimeoutSeconds * 1000, write: io.err },
  );
}

/**
 * The session's MCP problems, as stderr shows them (`<level>: <text>`): the config issues of
 * `mcp_servers` (an `error` is an invalid entry, whose server is skipped) and a server that did
 * not connect.
 */
function mcpProblems(
  session: AgentSession,
  config: ResolvedConfig,
): { level: "error" | "warning"; text: string }[] {
  return [
    ...session.mcpIssues.map((issue) => ({
      level: issue.severity,
      text: formatIssue(issue, config.paths.config),
    })),
    ...session.manager.servers()
      .filter((server) => server.error && server.status !== "connected")
      .map((server) => ({
        level: "warning" as const,
        text: `${server.error}; its tools are not available`,
      })),
  ];
}

/**
 * Runs `work` with Ctrl-C wired to cancel it (`user_cancelled`) and SIGTERM / SIGHUP to stop it
 * (`system_aborted`), so the run still ends, is reported and counted.
 */
async function cancellable<T>(io: CliIo, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const stopInterrupt = io.onInterrupt?.(() => {
    interruptNotice(io, "^C: cancelling the run …");
    controller.abort(new RunCancelled("user"));
  });
  const stopTerminate = io.onTerminate?.((signal) => {
    controller.abort(stoppedBy(signal));
    tell(io, `\n${signal}: stopping the run …\n`);
  });
  try {
    return await work(controller.signal);
  } finally {
    stopInterrupt?.();
    stopTerminate?.();
  }
}

/** The reason of a run stopped because the system asked the process to stop. */
function stoppedBy(signal: StopSignal): RunCancelled {
  return new RunCancelled("system", `the process received ${signal}`);
}

/**
 * Says on stderr what a Ctrl-C does, on a row of its own. Where the terminal can redraw, the
 * notice replaces the row the cursor is on: the `^C` the terminal echoed, and the waiting line
 * before it (else both stayed, and `^C` twice).
 */
function interruptNotice(io: CliIo, text: string): void {
  io.err(`${canRedraw(io) ? "\r\x1b[K" : "\n"}${text}\n`);
}

/** Writes to stderr from a signal handler: after SIGHUP the terminal may be gone. */
function tell(io: CliIo, text: string): void {
  try {
    io.err(text);
  } catch {
    // nobody is left to read it
  }
}

/** `text` in single quotes for a POSIX shell (a `'` in it as `'\''`). */
function shellQuote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

async function readPrompt(io: CliIo, argument: string | undefined): Promise<string> {
  if (argument !== undefined && argument !== "-") {
    if (argument.trim() === "") {
      throw new UsageError(
        "the prompt is empty. Fix: give the text to send to the model as one quoted argument " +
          '(agent run "<prompt>"), or pipe it: echo … | agent run -',
      );
    }
    return argument;
  }
  if (io.stdinIsTerminal) {
    throw new UsageError('give a prompt: agent run "<prompt>" (or pipe it: echo … | agent run -)');
  }
  const text = await io.readStdin();
  if (text.trim() === "") {
    throw new UsageError(
      "the prompt read from stdin is empty. Fix: pipe the text to send to the model " +
        '(echo … | agent run -), or give it as one quoted argument: agent run "<prompt>"',
    );
  }
  // `echo … |` ends the text with a line break that is not part of the prompt.
  return text.replace(/(?:\r?\n)+$/, "");
}

/**
 * Writes `logs/gateway.log` at `logging.level` (or `AGENT_LOG_LEVEL`) while `work` runs; the
 * file, and `<home>` itself, are only created when there is a line to write.
 */
async function withLogging(
  io: CliIo,
  config: ResolvedConfig,
  work: () => Promise<void>,
): Promise<void> {
  const level = configuredLogLevel(config.source, io.env);
  try {
    await configureLogging(config.paths, { level, openOnFirstLine: true });
  } catch (error) {
    throw logUnwritable(config, error);
  }
  try {
    await work();
  } finally {
    await closeLogging();
  }
}

/** A wait for the model longer than this shows the "waiting" line. */
const WAITING_SHOWN_AFTER_MS = 1000;

/**
 * Progress of a run on stderr: each tool call and its result, and, on a terminal that can redraw
 * a line, "… waiting for <model> (N s)" while a model call takes longer than a second and
 * "… <tool>: 2/5 <message>" as a tool's server reports progress. Such a line is erased before
 * anything else is written, when the run's `signal` aborts, and by `done()` (call it when the
 * run has returned).
 */
function progress(
  io: CliIo,
  model: string,
  signal?: AbortSignal,
): { onEvent: (event: RunEvent) => void; done: () => void } {
  const live = canRedraw(io);
  let delay: ReturnType<typeof setTimeout> | undefined;
  let ticker: ReturnType<typeof setInterval> | undefined;
  let shown = false;
  const stopWaiting = () => {
    clearTimeout(delay);
    clearInterval(ticker);
    if (shown) io.err("\r\x1b[K");
    shown = false;
  };
  const startWaiting = () => {
    stopWaiting();
    if (!live || signal?.aborted) return;
    const started = performance.now();
    const draw = () => {
      const seconds = Math.floor((performance.now() - started) / 1000);
      io.err(`\r\x1b[K${waitingLine(model, seconds, io.columns?.() ?? 0)}`);
      shown = true;
    };
    delay = setTimeout(() => {
      draw();
      ticker = setInterval(draw, 1000);
    }, WAITING_SHOWN_AFTER_MS);
  };
  signal?.addEventListener("abort", stopWaiting, { once: true });
  return {
    onEvent: (event) => {
      if (event.type === "tool_progress") {
        // Replaces the row (the call's earlier progress); the next event erases it.
        if (!live || signal?.aborted) return;
        io.err(
          `${ERASE_ROW}${toolProgressLine(event.name, event.progress, io.columns?.() ?? 0)}`,
        );
        shown = true;
        return;
      }
      stopWaiting();
      if (event.type === "model_call") startWaiting();
      // The name and arguments are the model's: escaped, so they cannot drive the terminal.
      if (event.type === "tool_call") {
        const args = cut(visible(collapseWhitespace(event.arguments)), 120);
        io.err(`  → ${visible(event.name)} ${args}\n`);
      }
      if (event.type === "tool_result") {
        io.err(
          `  ← ${visible(event.name)}: ${event.outcome} (${Math.round(event.latencyMs)} ms)\n`,
        );
      }
    },
    done: () => {
      stopWaiting();
      signal?.removeEventListener("abort", stopWaiting);
    },
  };
}

/**
 * "  … waiting for <model> (N s)", on one row of a terminal `columns` wide (0: unknown): erasing
 * the row erases all of it, where a line that wrapped would leave its first rows behind at every
 * redraw. The model's name is cut first, so the seconds stay in view.
 */
function waitingLine(model: string, seconds: number, columns: number): string {
  const line = (name: string) => `  … waiting for ${name} (${seconds} s)`;
  // The last column stays free: a character written there leaves some terminals wrapping.
  const room = columns - 1;
  if (columns <= 0 || stringWidth(line(model)) <= room) return line(model);
  const forName = room - stringWidth(line(""));
  return forName >= 2
    ? line(fitColumns(model, forName))
    : fitColumns(line(model), Math.max(room, 1));
}

/**
 * `run --json`'s document; `warnings` starts with `before` (the config file's warnings, the
 * usage-metrics settings' and the MCP warnings); `mcp_issues` are the config issues of
 * `mcp_servers`, as `mcp list --json` gives them in `issues`.
 */
function runJson(result: RunResult, before: string[], mcpIssues: McpConfigIssue[]) {
  return {
    answer: result.answer,
    end_reason: result.endReason,
    ...(result.error === undefined ? {} : { error: result.error }),
    tool_calls: result.toolCalls.map((call) => ({
      name: call.name,
      server: call.server ?? null,
      arguments: call.arguments,
      outcome: call.outcome,
      approval: call.approval,
      latency_ms: Math.round(call.latencyMs),
      ...(call.error === undefined ? {} : { error: call.error }),
    })),
    model_calls: result.modelCalls,
    retries: result.retries,
    duration_ms: Math.round(result.timings.totalMs),
    warnings: [...before, ...result.warnings],
    mcp_issues: mcpIssues,
  };
}

function endText(result: RunResult): string {
  const labels: Record<string, string> = {
    failed: "the run failed",
    iteration_limit: "iteration limit reached",
    timed_out: "the run timed out",
    user_cancelled: "cancelled",
    system_aborted: "stopped",
  };
  const label = labels[result.endReason] ?? result.endReason;
  if (!result.error) return label;
  // "cancelled by the user" says it already: not "cancelled: cancelled by the user".
  return result.error.startsWith(label) ? result.error : `${label}: ${result.error}`;
}

/** The `--skills` names; one that can never name a skill (`../etc`) is a usage error. */
function skillNames(value: string | undefined, config: ResolvedConfig): string[] {
  const names = splitList(value);
  const problem = skillNameProblem(names, config.paths.skills);
  if (problem) throw new UsageError(`--skills: ${problem}`);
  return names;
}

function splitList(value: string | undefined): string[] {
  return value ? value.split(",").map((item) => item.trim()).filter(Boolean) : [];
}

function countOf(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}
