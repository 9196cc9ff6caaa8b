/**
 * Stdio with a diagnosis: the SDK's transport skips stdout lines that are not JSON-RPC silently
 * and drops the child's exit status, so a server that prints a banner or crashes at start would
 * fail only with "no answer" or "connection closed". This one remembers the first stray stdout
 * line, the exit code or signal, and the last stderr lines, to put them in the error. It also
 * notices when the SDK dropped the connection because one message was over its read limit
 * (`STDIO_DEFAULT_MAX_BUFFER_SIZE`, 10 MiB), which is then the whole story. When the process
 * exits, what is left of its process group (a wrapper's background child holding its pipes) is
 * stopped, so the connection closes at once instead of waiting for connect_timeout or a tool's
 * timeout.
 *
 * @module
 */
import type { ChildProcess } from "node:child_process";
import {
  StdioClientTransport,
  type StdioServerParameters,
} from "@modelcontextprotocol/client/stdio";
import { quotedServerText } from "./errors.ts";

const STDERR_LINES_KEPT = 3;
const LINE_LENGTH_SHOWN = 120;
/** How much of a stdout line is kept to judge it; a longer one is judged by its start. */
const LINE_LENGTH_KEPT = LINE_LENGTH_SHOWN * 8;
/** How long what is left of an exited server's process group gets to end after SIGTERM. */
const LEFTOVER_GRACE_MS = 1_000;

/** The start of the diagnosis of a message over the SDK's stdio read limit. */
export const OVERSIZED_MESSAGE = "a message from the server was larger than the";

/** What the SDK's `ReadBuffer` throws (and the transport hands to `onerror`) over its limit. */
const BUFFER_EXCEEDED = /ReadBuffer exceeded maximum size of (\d+) bytes/;

/** A {@linkcode StdioClientTransport} that can say why its server did not answer. */
export class DiagnosedStdioClientTransport extends StdioClientTransport {
  #strayLine: string | undefined;
  #stdoutRest = "";
  /** Whether {@linkcode #stdoutRest} was cut to its first {@linkcode LINE_LENGTH_KEPT} characters. */
  #stdoutCut = false;
  /** The read limit in bytes, once a message went over it. */
  #oversizedLimit: number | undefined;
  /** Whether a JSON-RPC message came on stdout (after one, bad JSON no longer closes). */
  #sawMessage = false;
  /** JSON that is not JSON-RPC, printed before any message: the connection was closed for it. */
  #refusedJson: string | undefined;
  #stderrRest = "";
  readonly #stderrTail: string[] = [];
  #exit: { code: number | null; signal: string | null } | undefined;
  /** The file the server's stderr is logged to, named in the diagnosis; none when not logged. */
  readonly stderrLogPath: string | undefined;

  constructor(server: StdioServerParameters, stderrLogPath?: string) {
    super(server);
    this.stderrLogPath = stderrLogPath;
    // The SDK reports a message over its read limit only through `onerror` (then it closes);
    // `onerror` is a plain field that the client wraps, so the wrapping is observed on the way.
    let onerror: ((error: Error) => void) | undefined;
    Object.defineProperty(this, "onerror", {
      configurable: true,
      enumerable: true,
      get: () => onerror,
      set: (handler: ((error: Error) => void) | undefined) => {
        onerror = handler && ((error: Error) => {
          this.#noteError(error);
          handler(error);
        });
      },
    });
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
      if (this.#strayLine !== undefined && this.#sawMessage) return;
      const parts = decoder.decode(chunk, { stream: true }).split("\n");
      const last = parts.pop() ?? "";
      const lines = parts.map((part, index) => ({
        line: (index === 0 ? this.#stdoutRest + part : part).replace(/\r$/, ""),
        cut: index === 0 && this.#stdoutCut,
      }));
      if (parts.length > 0) [this.#stdoutRest, this.#stdoutCut] = ["", false];
      // Only the start of a long line is kept: such a line is judged by how it begins.
      const rest = this.#stdoutRest + last;
      this.#stdoutCut ||= rest.length > LINE_LENGTH_KEPT;
      this.#stdoutRest = rest.slice(0, LINE_LENGTH_KEPT);
      for (const { line, cut } of lines) this.#judge(line, cut);
    });
    child?.once("exit", (code, signal) => {
      this.#exit = { code, signal };
      if (child.pid !== undefined) stopLeftovers(child, child.pid);
    });
  }

  /**
   * What went wrong with the server process, as a clause for an error message (`undefined` when
   * nothing is known): its exit status with its last stderr lines, or the first line it printed
   * on stdout that is not JSON-RPC.
   */
  diagnosis(): string | undefined {
    // The SDK closed the connection itself: the exit that followed and the cut line are effects.
    if (this.#oversizedLimit !== undefined) {
      return `${OVERSIZED_MESSAGE} ${sizeOf(this.#oversizedLimit)} stdio limit`;
    }
    if (this.#refusedJson !== undefined) {
      return `the server printed JSON that is not JSON-RPC on stdout before any MCP message: ${
        shown(this.#refusedJson)
      } (stdout must carry only MCP messages; a server logs to stderr)`;
    }
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
          ? `its last stderr lines: ${tail.map(shown).join(" | ")}${
            this.stderrLogPath ? ` (all of it in ${this.stderrLogPath})` : ""
          }`
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

  /**
   * Remembers the first stray line. JSON that is not JSON-RPC before any message closes the
   * connection at once: such a server would otherwise be waited for until connect_timeout,
   * while a text banner is tolerated (the SDK skips it).
   */
  #judge(line: string, cut: boolean): void {
    if (line.trim() === "") return;
    if (!isStray(line, cut)) {
      if (!cut) this.#sawMessage = true;
      return;
    }
    this.#strayLine ??= line;
    if (this.#sawMessage || this.#refusedJson !== undefined || cut || !isJson(line)) return;
    this.#refusedJson = line;
    this.close().catch(() => {});
  }

  #noteError(error: Error): void {
    const match = BUFFER_EXCEEDED.exec(error?.message ?? "");
    if (match) this.#oversizedLimit ??= Number(match[1]);
  }

  #keepStderr(lines: string[]): void {
    for (const line of lines) {
      if (line.trim() === "") continue;
      this.#stderrTail.push(line.trim());
      if (this.#stderrTail.length > STDERR_LINES_KEPT) this.#stderrTail.shift();
    }
  }
}

/**
 * Stops what is left of the process group of an exited server: children of a wrapper
 * (`sh -c "server & exit 3"`) that keep its stdout open, so the SDK would never see the
 * connection close. The server was started in its own session (`setsid`), so its pid is the
 * group's id; without one there is no such group and nothing is signalled. SIGKILL follows when
 * the pipes are still open after {@linkcode LEFTOVER_GRACE_MS}.
 */
function stopLeftovers(child: ChildProcess, group: number): void {
  if (!signalGroup(group, "SIGTERM")) return;
  const timer = setTimeout(() => signalGroup(group, "SIGKILL"), LEFTOVER_GRACE_MS);
  Deno.unrefTimer(timer);
  child.once("close", () => clearTimeout(timer));
}

/** Sends `signal` to process group `group`; false when there is no such group. */
function signalGroup(group: number, signal: Deno.Signal): boolean {
  if (Deno.build.os === "windows") return false;
  try {
    Deno.kill(-group, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * A stdout line that is not a JSON-RPC message (blank lines are ignored). A `cut` line (only its
 * start was kept) counts as JSON-RPC when it starts like a JSON object or array.
 */
function isStray(line: string, cut = false): boolean {
  if (line.trim() === "") return false;
  if (cut) return !/^\s*[[{]/.test(line);
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

/** Whether `line` is JSON (of any shape). */
function isJson(line: string): boolean {
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
  }
}

/** A byte count in MiB or KiB, as limits are usually spoken of. */
function sizeOf(bytes: number): string {
  if (bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes}-byte`;
}

/** A line quoted for a message, cut to a readable length, invisible characters escaped. */
function shown(line: string): string {
  return quotedServerText(line, LINE_LENGTH_SHOWN);
}
