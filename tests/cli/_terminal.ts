/**
 * A real pseudo-terminal for CLI tests (util-linux `script`): stdin is a TTY, so prompts are
 * asked, and Ctrl-C is the terminal's interrupt key.
 *
 * @module
 */
import { stdioCommand } from "../fixtures/mcp/spawn.ts";
import { childEnv, MAIN, REPO } from "./_helpers.ts";
import { modelLines, stdioServerLines, writeConfig } from "./_mcp_helpers.ts";

/**
 * Writes `<home>/config.yaml` for a chat at a terminal: the model at `baseUrl`, approvals that
 * time out after `timeoutSeconds`, and the untrusted fixture server `notes` (tools `echo` and
 * `write_note`), its entry extended by `serverLines`.
 */
export function writeNotesChatConfig(
  home: string,
  baseUrl: string,
  options: { timeoutSeconds: number; serverLines?: string[] },
): void {
  writeConfig(home, [
    ...modelLines(baseUrl),
    "approvals:",
    `  timeout_seconds: ${options.timeoutSeconds}`,
    "mcp_servers:",
    ...stdioServerLines("notes", stdioCommand(["--tools", "echo,write_note"]), [
      "trust: untrusted",
      ...options.serverLines ?? [],
    ]),
  ]);
}

/** A terminal session: what the screen showed so far, and keystrokes. */
export class Terminal {
  readonly #process: Deno.ChildProcess;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  #screen = "";
  #waiters: Array<() => void> = [];
  readonly #done: Promise<void>;

  /**
   * Runs `agent <args>` with `<home>` in a new pseudo-terminal. By default `TERM` is `dumb` (lines
   * are read as the terminal delivers them); `term` names another, and `columns` sets the width.
   */
  constructor(
    home: string,
    args: string[],
    options: { term?: string; columns?: number; jobControl?: boolean } = {},
  ) {
    // `script` runs the command through sh; `exec` makes the agent the terminal's process
    // (a waiting sh would die of the Ctrl-C itself).
    const size = options.columns ? `stty cols ${options.columns} rows 24; ` : "";
    const agent = [Deno.execPath(), "run", "-A", MAIN, ...args].map(shellQuote).join(" ");
    // With `jobControl`, a job-control shell runs the agent instead, as a terminal's shell does:
    // when the agent stops (Ctrl-Z), the shell prints `[job 148]` and continues it with `fg`.
    const command = options.jobControl
      ? `${size}exec bash -c ${shellQuote(`set -m; ${agent}; echo "[job $?]"; fg`)}`
      : `${size}exec ${agent}`;
    const child = new Deno.Command("script", {
      args: ["-qfec", command, "/dev/null"],
      cwd: REPO,
      clearEnv: true,
      env: { ...childEnv(home), TERM: options.term ?? "dumb" },
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    this.#process = child;
    this.#writer = child.stdin.getWriter();
    this.#done = (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of child.stdout) {
        this.#screen += decoder.decode(chunk, { stream: true });
        for (const wake of this.#waiters.splice(0)) wake();
      }
    })();
  }

  get screen(): string {
    return this.#screen;
  }

  async type(text: string): Promise<void> {
    await this.#writer.write(new TextEncoder().encode(text));
  }

  /** Waits until the screen, after `from`, matches `pattern`; returns the index after the match. */
  async waitFor(pattern: RegExp, from = 0, timeoutMs = 30_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    while (true) {
      const match = pattern.exec(this.#screen.slice(from));
      if (match) return from + match.index + match[0].length;
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(`timed out waiting for ${pattern}; screen:\n${this.#screen}`);
      }
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        new Promise<void>((resolve) => this.#waiters.push(resolve)),
        new Promise<void>((resolve) => timer = setTimeout(resolve, left)),
      ]);
      clearTimeout(timer);
    }
  }

  /** Waits for the session to end (keep stdin open: `script` reports an early EOF as 130). */
  async exit(): Promise<Deno.CommandStatus> {
    const status = await this.#process.status;
    await this.#writer.close().catch(() => {});
    await this.#done;
    await this.#process.stderr.cancel();
    return status;
  }

  /**
   * Sets the pseudo-terminal's width, as resizing a terminal window does: the kernel sends
   * SIGWINCH to the agent.
   */
  async resize(columns: number): Promise<void> {
    // `script` has one child, the agent (its sh exec'd it); the agent's stdin is the terminal.
    const pid = Deno.readTextFileSync(
      `/proc/${this.#process.pid}/task/${this.#process.pid}/children`,
    ).trim().split(/\s+/)[0];
    const tty = Deno.readLinkSync(`/proc/${pid}/fd/0`);
    const { success, stderr } = await new Deno.Command("stty", {
      args: ["-F", tty, "cols", String(columns)],
      stderr: "piped",
    }).output();
    if (!success) throw new Error(`stty -F ${tty} failed: ${new TextDecoder().decode(stderr)}`);
  }

  kill(): void {
    try {
      this.#process.kill("SIGKILL");
    } catch { /* already gone */ }
  }
}

function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}
