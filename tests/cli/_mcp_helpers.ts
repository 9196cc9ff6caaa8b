/**
 * Helpers of the MCP tests that use `@modelcontextprotocol/server-everything` (the reference
 * server pinned in deno.json) and of the `agent mcp` CLI tests.
 *
 * @module
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The project's `deno.json` (its import map and lock apply to the reference server too). */
export const DENO_CONFIG: string = fileURLToPath(new URL("../../deno.json", import.meta.url));

/** The reference server, exactly as pinned in deno.json. */
export const EVERYTHING_PACKAGE = "npm:@modelcontextprotocol/server-everything@2026.8.31";

/** The `command` + `args` of a stdio config entry that runs the reference server. */
export function everythingStdio(): { command: string; args: string[] } {
  return {
    command: Deno.execPath(),
    args: ["run", "-A", "--config", DENO_CONFIG, EVERYTHING_PACKAGE, "stdio"],
  };
}

/** A port nobody listens on right now (bound by the OS, then released). */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/**
 * Whether nothing listens on `port` right now, on any interface (where the gateway listens by
 * default). A test of the default port's behaviour depends on it: a gateway the developer runs on
 * 8644 would add a "port in use" warning to what it checks.
 */
export function portIsFree(port: number): boolean {
  for (const hostname of ["0.0.0.0", "::"]) {
    try {
      Deno.listen({ hostname, port }).close();
    } catch (error) {
      if (error instanceof Deno.errors.AddrInUse) return false;
    }
  }
  return true;
}

/** A running reference server in one of its HTTP modes. */
export interface EverythingServer extends AsyncDisposable {
  /** `http://127.0.0.1:<port>/mcp` (Streamable HTTP) or `.../sse` (SSE). */
  url: string;
  port: number;
  /** What the server wrote to stdout and stderr so far. */
  output(): string;
  /** SIGTERM (SIGKILL after 5 s), then waits for the process and its pipes. */
  close(): Promise<void>;
}

/** The line each mode prints (stderr) once its port is bound. */
const READY: Record<"streamableHttp" | "sse", RegExp> = {
  streamableHttp: /listening on port (\d+)/,
  sse: /running on port (\d+)/,
};

/**
 * Starts the reference server in `mode` on a free port (env `PORT`) and resolves once it printed
 * its ready line and accepts TCP connections on 127.0.0.1. A port that was taken meanwhile (the
 * server exits with EADDRINUSE) is retried with another one, up to three times.
 *
 * The reference server binds every interface (it has no host setting); the tests talk to it on
 * 127.0.0.1 only.
 */
export async function startEverything(
  mode: "streamableHttp" | "sse",
  timeoutMs = 30_000,
): Promise<EverythingServer> {
  let lastError: unknown;
  for (let attempt = 1; attempt <= 3; attempt++) {
    try {
      return await startEverythingOnce(mode, freePort(), timeoutMs);
    } catch (error) {
      lastError = error;
      if (!/EADDRINUSE|already in use/i.test(String(error))) break;
    }
  }
  throw lastError;
}

async function startEverythingOnce(
  mode: "streamableHttp" | "sse",
  port: number,
  timeoutMs: number,
): Promise<EverythingServer> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", "--config", DENO_CONFIG, EVERYTHING_PACKAGE, mode],
    env: { PORT: String(port) },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let text = "";
  const drains = [child.stdout, child.stderr].map(async (stream) => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of stream) {
        text = (text + decoder.decode(chunk, { stream: true })).slice(-50_000);
      }
    } catch {
      // killed mid-read
    }
  });
  let exited = false;
  child.status.then(() => exited = true);
  let closing: Promise<void> | undefined;
  const close = () =>
    closing ??= (async () => {
      try {
        child.kill("SIGTERM");
      } catch {
        // already exited
      }
      const killer = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch {
          // exited meanwhile
        }
      }, 5_000);
      await child.status;
      clearTimeout(killer);
      await Promise.all(drains);
    })();

  const deadline = Date.now() + timeoutMs;
  try {
    while (!READY[mode].test(text) || !(await accepts(port))) {
      if (exited) throw new Error(`exited before listening`);
      if (Date.now() > deadline) throw new Error(`not listening within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    if (exited) throw new Error(`exited right after listening`);
  } catch (error) {
    await close();
    throw new Error(
      `server-everything ${mode} on port ${port}: ${(error as Error).message}\n${text}`,
    );
  }
  const path = mode === "sse" ? "/sse" : "/mcp";
  return {
    url: `http://127.0.0.1:${port}${path}`,
    port,
    output: () => text,
    close,
    [Symbol.asyncDispose]: close,
  };
}

async function accepts(port: number): Promise<boolean> {
  try {
    const connection = await Deno.connect({ hostname: "127.0.0.1", port });
    connection.close();
    return true;
  } catch {
    return false;
  }
}

/**
 * The environment of an in-process CLI run that starts stdio servers: what Deno needs to find its
 * cache (the fake io's environment is otherwise empty), plus `extra`.
 */
export function denoEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ["PATH", "HOME", "DENO_DIR", "TMPDIR"]) {
    const value = Deno.env.get(name);
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...extra };
}

/** Writes `<home>/config.yaml`: `text`, or `lines` (see {@linkcode configText}). */
export function writeConfig(home: string, text: string | string[]): string {
  const file = join(home, "config.yaml");
  Deno.writeTextFileSync(file, typeof text === "string" ? text : configText(text));
  return file;
}

/** The text of config lines, each ending in a line break. */
export function configText(lines: string[]): string {
  return lines.map((line) => `${line}\n`).join("");
}

/** The `model:` section of a config for a (fake) model at `baseUrl`, `name` by default. */
export function modelLines(baseUrl: string, name = "gpt-4.1-mini"): string[] {
  return ["model:", `  default: ${name}`, `  base_url: ${baseUrl}`];
}

/**
 * One stdio entry under `mcp_servers:`: `name`, the `command` and `args` of `server` (as
 * `stdioCommand` of tests/fixtures/mcp/spawn.ts gives them), then the entry's further `lines`
 * (`trust: untrusted`, `env: {…}`).
 *
 * @example
 * ```ts ignore
 * writeConfig(home, [
 *   ...modelLines(model.baseUrl),
 *   "mcp_servers:",
 *   ...stdioServerLines("notes", stdioCommand(["--tools", "echo"]), ["trust: untrusted"]),
 * ]);
 * ```
 */
export function stdioServerLines(
  name: string,
  server: { command: string; args: string[] },
  lines: string[] = [],
): string[] {
  return [
    `  ${name}:`,
    `    command: ${yamlValue(server.command)}`,
    `    args: ${yamlValue(server.args)}`,
    ...lines.map((line) => `    ${line}`),
  ];
}

/**
 * A YAML flow value for embedding in config texts: JSON (valid YAML), lists spaced the way people
 * (and the YAML printer) write them, `["a", "b"]`.
 */
export function yamlValue(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => yamlValue(item)).join(", ")}]`;
  return JSON.stringify(value);
}
