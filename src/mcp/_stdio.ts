/**
 * Stdio with a diagnosis: the SDK's transport skips stdout lines that are not JSON-RPC silently
 * and drops the child's exit status, so a server that prints a banner or crashes at start would
 * fail only with "no answer" or "connection closed". This one remembers the first stray stdout
 * line, the exit code or signal, and the last stderr lines, to put them in the error.
 *
 * @module
 */
import type { ChildProcess } from "node:child_process";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const STDERR_LINES_KEPT = 3;
const LINE_LENGTH_SHOWN = 120;

/** A {@linkcode StdioClientTransport} that can say why its server did not answer. */
export class DiagnosedStdioClientTransport extends StdioClientTransport {
  #strayLine: string | undefined;
  #stdoutRest = "";
  #stderrRest = "";
  readonly #stderrTail: string[] = [];
  #exit: { code: number | null; signal: string | null } | undefined;

  constructor(...params: ConstructorParameters<typeof StdioClientTransport>) {
    super(...params);
    const decoder = new TextDecoder();
    this.stderr?.on("data", (chunk: Uint8Array) => {
      const lines = (this.#stderrRest + decoder.decode(chunk, { stream: true })).split("\n");
      this.#stderrRest = lines.pop() ?? "";
      this.#keepStderr(lines);
    });
  }

  override async start(): Promise<void> {
    await super.start();
    // The SDK keeps the child private; without it the error only loses detail.
    const child = (this as unknown as { _process?: ChildProcess })._process;
    const decoder = new TextDecoder();
    child?.stdout?.on("data", (chunk: Uint8Array) => {
      if (this.#strayLine !== undefined) return;
      const lines = (this.#stdoutRest + decoder.decode(chunk, { stream: true })).split("\n");
      this.#stdoutRest = (lines.pop() ?? "").slice(-LINE_LENGTH_SHOWN * 8);
      this.#strayLine = lines.map((line) => line.replace(/\r$/, "")).find(isStray);
    });
    child?.once("exit", (code, signal) => this.#exit = { code, signal });
  }

  /**
   * What went wrong with the server process, as a clause for an error message (`undefined` when
   * nothing is known): its exit status with its last stderr lines, or the first line it printed
   * on stdout that is not JSON-RPC.
   */
  diagnosis(): string | undefined {
    const parts: string[] = [];
    if (this.#exit) {
      const { code, signal } = this.#exit;
      parts.push(
        signal ? `the process was killed by ${signal}` : `the process exited with code ${code}`,
      );
      const tail = [...this.#stderrTail, this.#stderrRest.trim()].filter((line) => line !== "")
        .slice(-STDERR_LINES_KEPT);
      parts.push(
        tail.length > 0
          ? `its last stderr lines: ${
            tail.map(shown).join(" | ")
          } (all of it in logs/mcp-stderr.log)`
          : "it wrote nothing to stderr",
      );
    }
    if (this.#strayLine !== undefined) {
      parts.push(
        `the server printed output that is not JSON-RPC on stdout, first: ${
          shown(this.#strayLine)
        } (stdout must carry only MCP messages; a server logs to stderr)`,
      );
    }
    return parts.length > 0 ? parts.join("; ") : undefined;
  }

  #keepStderr(lines: string[]): void {
    for (const line of lines) {
      if (line.trim() === "") continue;
      this.#stderrTail.push(line.trim());
      if (this.#stderrTail.length > STDERR_LINES_KEPT) this.#stderrTail.shift();
    }
  }
}

/** A stdout line that is not a JSON-RPC message (blank lines are ignored). */
function isStray(line: string): boolean {
  if (line.trim() === "") return false;
  try {
    const value = JSON.parse(line);
    const messages = Array.isArray(value) ? value : [value];
    return !messages.every((message) =>
      typeof message === "object" && message !== null && message.jsonrpc === "2.0"
    );
  } catch {
    return true;
  }
}

/** A line quoted for a message, cut to a readable length, control characters escaped. */
function shown(line: string): string {
  const cut = line.length > LINE_LENGTH_SHOWN ? `${line.slice(0, LINE_LENGTH_SHOWN)}…` : line;
  return JSON.stringify(cut);
}
