/**
 * Helpers of the CLI tests: a temp `<home>` per test, a fake {@linkcode CliIo} for in-process
 * runs, a real subprocess runner for end-to-end runs, recording through the library API, and a
 * loopback collector for `metrics send`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runCli } from "../../src/cli/mod.ts";
import { type CliIo, PromptCancelled, type Prompter } from "../../src/cli/io.ts";
import { loadConfig, type MetricsEvent, type MetricsPackage, openUsageMetrics } from "../../mod.ts";

/** The repository root (where `main.ts` and `deno.json` are). */
export const REPO: string = fileURLToPath(new URL("../../", import.meta.url)).replace(/\/$/, "");
/** The CLI entry point. */
export const MAIN: string = join(REPO, "main.ts");
/** The library entry point, as a file URL. */
export const MOD_URL: string = new URL("../../mod.ts", import.meta.url).href;

/** The fixed clock of the in-process tests: 2026-03-10T12:00:00Z. */
export const NOW: number = Date.UTC(2026, 2, 10, 12);
/** The UTC day of {@linkcode NOW}. */
export const DAY = "2026-03-10";

/** A fresh temp `<home>`, removed when disposed. */
export interface TempHome extends AsyncDisposable {
  home: string;
  /** `<home>/config.yaml`. */
  config: string;
  /** `<home>/telemetry/shared_metrics`. */
  metrics: string;
  /** `<home>/telemetry/shared_metrics/outbox`. */
  outbox: string;
}

/** Makes a temp `<home>`; use with `await using`. */
export async function tempHome(): Promise<TempHome> {
  const home = await Deno.makeTempDir({ prefix: "agent-cli-test-" });
  const metrics = join(home, "telemetry", "shared_metrics");
  return {
    home,
    config: join(home, "config.yaml"),
    metrics,
    outbox: join(metrics, "outbox"),
    [Symbol.asyncDispose]: () => Deno.remove(home, { recursive: true }),
  };
}

/** Options of a fake io. */
export interface FakeIoOptions {
  /** Environment beyond `AGENT_HOME` (which is always the test's home). */
  env?: Record<string, string>;
  /** Whether stdin is a terminal (prompts allowed). Default false. */
  stdinIsTerminal?: boolean;
  /** Whether stdout is a terminal (a model's answer shown escaped). Default false. */
  stdoutIsTerminal?: boolean;
  /** Whether stderr is a terminal (progress shown). Default false. */
  stderrIsTerminal?: boolean;
  /** The terminal's width in columns. Default 0 (unknown). */
  columns?: number;
  /** Answers of `confirm`, in order; running out fails the test. */
  confirms?: boolean[];
  /** What `readStdin` returns. */
  stdin?: string;
  /** Clock; default {@linkcode NOW}. */
  now?: number;
  /** The terminal questions of wizards (see {@linkcode scriptedPrompter}). */
  prompter?: Prompter;
  /** Opens a URL "in the browser" (OAuth login); default: does nothing. */
  openBrowser?: (url: string) => void;
}

/** A fake io plus what it collected. */
export interface FakeIo {
  io: CliIo;
  stdout: () => string;
  stderr: () => string;
  /** Questions `confirm` was asked. */
  questions: string[];
  /** How often `readStdin` was called. */
  stdinReads: () => number;
}

/** An in-memory {@linkcode CliIo} whose environment holds only `AGENT_HOME` and `options.env`. */
export function fakeIo(home: string, options: FakeIoOptions = {}): FakeIo {
  let out = "";
  let err = "";
  let reads = 0;
  const questions: string[] = [];
  const confirms = [...(options.confirms ?? [])];
  const env: Record<string, string> = { AGENT_HOME: home, ...options.env };
  const io: CliIo = {
    out: (text) => {
      out += text;
    },
    err: (text) => {
      err += text;
    },
    env: (name) => env[name],
    stdinIsTerminal: options.stdinIsTerminal ?? false,
    stdoutIsTerminal: options.stdoutIsTerminal ?? false,
    stderrIsTerminal: options.stderrIsTerminal ?? false,
    columns: () => options.columns ?? 0,
    readStdin: () => {
      reads++;
      if (options.stdin === undefined) throw new Error("test did not script stdin");
      return Promise.resolve(options.stdin);
    },
    confirm: (question) => {
      questions.push(question);
      const answer = confirms.shift();
      if (answer === undefined) throw new Error(`unexpected confirm: ${question}`);
      return Promise.resolve(answer);
    },
    now: () => options.now ?? NOW,
    prompter: options.prompter,
    openBrowser: options.openBrowser ?? (() => {}),
  };
  return { io, stdout: () => out, stderr: () => err, questions, stdinReads: () => reads };
}

/** The result of one CLI run. */
export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `agent <argv>` in-process against `home`. */
export async function cli(
  home: string,
  argv: string[],
  options: FakeIoOptions = {},
): Promise<CliResult & { fake: FakeIo }> {
  const fake = fakeIo(home, options);
  const code = await runCli(argv, fake.io);
  return { code, stdout: fake.stdout(), stderr: fake.stderr(), fake };
}

/**
 * Parses stdout as exactly one JSON document (JSON.parse refuses anything after it) and checks
 * that it is newline-terminated.
 */
export function parseOneJson(stdout: string): Record<string, unknown> {
  assert.ok(stdout.endsWith("\n"), `stdout is not newline-terminated: ${JSON.stringify(stdout)}`);
  assert.ok(stdout.trimStart().startsWith("{"), `stdout is not a JSON object: ${stdout}`);
  let value: unknown;
  try {
    value = JSON.parse(stdout);
  } catch (error) {
    assert.fail(`stdout is not exactly one JSON document (${error}):\n${stdout}`);
  }
  assert.equal(typeof value, "object");
  assert.ok(value !== null && !Array.isArray(value));
  return value as Record<string, unknown>;
}

/** Runs a `--json` command in-process, asserts the exit code, and returns the one document. */
export async function cliJson(
  home: string,
  argv: string[],
  expectedCode = 0,
  options: FakeIoOptions = {},
  // deno-lint-ignore no-explicit-any
): Promise<any> {
  assert.ok(argv.includes("--json"), "cliJson needs --json in argv");
  const result = await cli(home, argv, options);
  assert.equal(
    result.code,
    expectedCode,
    `exit code of agent ${argv.join(" ")}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`,
  );
  return parseOneJson(result.stdout);
}

/** Runs `agent metrics status --json`. */
// deno-lint-ignore no-explicit-any
export function status(home: string, env?: Record<string, string>): Promise<any> {
  return cliJson(home, ["metrics", "status", "--json"], 0, { env });
}

/** Writes `telemetry.shared_metrics.enabled: true` through the CLI (`agent metrics enable`). */
export async function enable(home: string, ...extra: string[]): Promise<void> {
  const result = await cli(home, ["metrics", "enable", ...extra]);
  assert.equal(result.code, 0, `metrics enable failed: ${result.stderr}`);
}

/** Records `events` through the library API, as another program embedding the service would. */
export function recordEvents(home: string, events: MetricsEvent[], now: number = NOW): void {
  const config = loadConfig({ home, env: () => undefined });
  const metrics = openUsageMetrics(config, { now: () => now });
  try {
    assert.ok(metrics.enabled, "recording needs consent: run `metrics enable` first");
    for (const event of events) metrics.recorder.record(event);
  } finally {
    metrics.close();
  }
}

/** A mix of events of several kinds, some repeated (expected counters below). */
export const SAMPLE_EVENTS: MetricsEvent[] = [
  { kind: "client_active" },
  { kind: "client_active" }, // latched: counted once a day
  { kind: "task_started", entrypoint: "interactive", surface: "cli" },
  { kind: "task_started", entrypoint: "interactive", surface: "cli" },
  { kind: "task_started", entrypoint: "gateway_message", surface: "gateway" },
  { kind: "model_call", model: "openai/gpt-4o", provider: "openrouter", outcome: "success" },
  { kind: "model_call", model: "openai/gpt-4o", provider: "openrouter", outcome: "success" },
  { kind: "model_call", model: "openai/gpt-4o", provider: "openrouter", outcome: "success" },
  { kind: "model_route", model: "GPT-4o", provider: "OpenAI" },
  {
    kind: "tool_call",
    source: { kind: "mcp" },
    latencyMs: 120,
    outcome: "success",
    approval: "not_required",
    retries: 0,
  },
  { kind: "skill_lifecycle", action: "created", provenance: "local" },
];

/** The counters {@linkcode SAMPLE_EVENTS} must produce: `name|canonical dimensions` → value. */
export const SAMPLE_COUNTERS: Record<string, number> = {
  "agent.client.active|{}": 1,
  'agent.task_run.started|{"entrypoint":"interactive","execution_surface":"cli"}': 2,
  'agent.task_run.started|{"entrypoint":"gateway_message","execution_surface":"gateway"}': 1,
  'agent.model_call.count|{"call_role":"primary","locality":"remote","model_family":"gpt","outcome":"success","provider_family":"aggregator"}':
    3,
  'agent.model_route.count|{"model":"gpt-4o","provider":"openai"}': 1,
  'agent.tool_call.count|{"approval_outcome":"not_required","latency_bucket":"100ms_to_250ms","outcome":"success","retry_count_bucket":"0","tool_category":"mcp"}':
    1,
  'agent.skill.lifecycle.count|{"action":"created","provenance":"local"}': 1,
};

/** The counters of packages, summed: `name|dimensions with sorted keys` → value. */
export function countersOf(packages: MetricsPackage[]): Record<string, number> {
  const counters: Record<string, number> = {};
  for (const pkg of packages) {
    for (const item of pkg.metrics) {
      assert.equal(item.type, "counter");
      const dims = item.dimensions as Record<string, string>;
      const sorted = Object.fromEntries(Object.keys(dims).sort().map((k) => [k, dims[k]]));
      const key = `${item.name}|${JSON.stringify(sorted)}`;
      counters[key] = (counters[key] ?? 0) + item.value;
    }
  }
  return counters;
}

/** A package as `metrics export --json` lists it. */
export interface ExportedPackage {
  package_id: string;
  path: string;
}

/**
 * Turns collection on (sending off) and exports `count` packages, each its own `metrics export`:
 * the first holds SAMPLE_EVENTS, each further one a single task_started event. Returns the first
 * package each export listed.
 */
export async function exportWithSendingOff(home: string, count = 1): Promise<ExportedPackage[]> {
  await enable(home);
  recordEvents(home, SAMPLE_EVENTS);
  const packages: ExportedPackage[] = [];
  for (let i = 0; i < count; i++) {
    if (i > 0) recordEvents(home, [{ kind: "task_started", entrypoint: "api", surface: "api" }]);
    packages.push((await cliJson(home, ["metrics", "export", "--json"])).packages[0]);
  }
  return packages;
}

/** Names of the files in a folder (none when it does not exist). */
export function filesIn(dir: string): string[] {
  try {
    return [...Deno.readDirSync(dir)].map((entry) => entry.name).sort();
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
}

/** Whether a path exists. */
export function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** Options of {@linkcode spawnCli}. */
export interface SpawnOptions {
  /** Extra environment (on top of AGENT_HOME, NO_COLOR, PATH, HOME). */
  env?: Record<string, string>;
  /** Text piped to stdin; without it stdin is closed. */
  stdin?: string;
  /** The directory it runs in; default the repository. */
  cwd?: string;
}

/** The environment of a subprocess: only what Deno needs plus the test's home. */
export function childEnv(home: string, extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = { AGENT_HOME: home, NO_COLOR: "1" };
  for (const name of ["PATH", "HOME", "DENO_DIR", "TMPDIR"]) {
    const value = Deno.env.get(name);
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...extra };
}

/** Runs the real CLI (`deno run -A main.ts …`) as a subprocess with a clean environment. */
export async function spawnCli(
  home: string,
  args: string[],
  options: SpawnOptions = {},
): Promise<CliResult> {
  return await spawnDeno(["run", "-A", MAIN, ...args], home, options);
}

/** Runs `deno <args>` in the repository with a clean environment. */
export async function spawnDeno(
  args: string[],
  home: string,
  options: SpawnOptions = {},
): Promise<CliResult> {
  const command = new Deno.Command(Deno.execPath(), {
    args,
    cwd: options.cwd ?? REPO,
    clearEnv: true,
    env: childEnv(home, options.env),
    stdin: options.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  });
  const child = command.spawn();
  if (options.stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(options.stdin));
    await writer.close();
  }
  const output = await child.output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

/** A request the collector received. */
export interface Received {
  method: string;
  contentType: string | null;
  userAgent: string | null;
  /** The body, gunzipped when it came gzipped. */
  body: string;
}

/** A loopback HTTP collector answering every POST with `statusCode`. */
export interface Collector extends AsyncDisposable {
  endpoint: string;
  received: Received[];
}

/** Starts a collector on 127.0.0.1 (port 0) answering `statusCode`. */
export function startCollector(statusCode: number): Collector {
  const received: Received[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      let bytes: BodyInit = await request.arrayBuffer();
      if (request.headers.get("content-encoding") === "gzip") {
        bytes = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
      }
      received.push({
        method: request.method,
        contentType: request.headers.get("content-type"),
        userAgent: request.headers.get("user-agent"),
        body: await new Response(bytes).text(),
      });
      return new Response(null, { status: statusCode });
    },
  );
  return {
    endpoint: `http://127.0.0.1:${server.addr.port}/v2/packages`,
    received,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

/** A valid package (built by hand, independent of the packager). */
export function validPackage(): MetricsPackage {
  return {
    schema_version: "agent.shared_metrics.v2",
    package_id: "3f1c2a4e-9b7d-4c1e-8a2b-0d9e8f7a6b5c",
    install_id: "7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d",
    period_start: "2026-03-10T00:00:00Z",
    period_end: "2026-03-11T00:00:00Z",
    generated_at: "2026-03-10T12:00:00Z",
    resource: {
      agent_version: "0.1.0",
      architecture: "x86_64",
      install_method: "git",
      os_family: "linux",
    },
    metrics: [
      { name: "agent.client.active", type: "counter", dimensions: {}, value: 1 },
      {
        name: "agent.task_run.started",
        type: "counter",
        dimensions: { entrypoint: "interactive", execution_surface: "cli" },
        value: 3,
      },
    ],
  } as MetricsPackage;
}

/** One scripted answer: a value (`""` is Enter, the default), or Ctrl-C at that question. */
export type ScriptedAnswer = string | boolean | typeof CTRL_C;

/** Stands for Ctrl-C at a question of a {@linkcode scriptedPrompter}. */
export const CTRL_C: unique symbol = Symbol("Ctrl-C");

/** A {@linkcode Prompter} answering from a script, plus what it was asked. */
export interface ScriptedPrompter {
  prompter: Prompter;
  /** Each question, in order (a re-asked question appears again). */
  asked: string[];
  /** Messages shown for answers that failed their check. */
  rejected: string[];
  /** Answers not used yet. */
  left: () => number;
}

/**
 * Answers questions in order. An answer failing its check is recorded in `rejected` and the
 * question takes the next answer, as a terminal would ask again. Running out, or a select answer
 * that is not one of the choices, fails the test.
 */
export function scriptedPrompter(answers: ScriptedAnswer[]): ScriptedPrompter {
  const queue = [...answers];
  const asked: string[] = [];
  const rejected: string[] = [];
  const next = (message: string): string | boolean => {
    asked.push(message);
    if (queue.length === 0) throw new Error(`unexpected question: ${message}`);
    const answer = queue.shift()!;
    if (answer === CTRL_C) throw new PromptCancelled();
    return answer;
  };
  const checked = (
    message: string,
    check?: (value: string) => true | string,
    fallback?: string,
  ): string => {
    while (true) {
      const typed = String(next(message));
      const answer = typed === "" && fallback !== undefined ? fallback : typed;
      const verdict = check?.(answer) ?? true;
      if (verdict === true) return answer;
      rejected.push(verdict);
    }
  };
  const prompter: Prompter = {
    // "" is Enter: the question's default.
    confirm: (message, fallback) => {
      const answer = next(message);
      return Promise.resolve(answer === "" ? fallback ?? false : answer === true);
    },
    input: (message, options = {}) =>
      Promise.resolve(checked(message, options.validate, options.default)),
    select: (message, choices) => {
      const answer = String(next(message));
      const choice = choices.find((candidate) => candidate.value === answer);
      if (!choice) throw new Error(`'${answer}' is not a choice of: ${message}`);
      return Promise.resolve(choice.value);
    },
    password: (message, validate) => Promise.resolve(checked(message, validate)),
  };
  return { prompter, asked, rejected, left: () => queue.length };
}

/**
 * Pids of running processes whose environment has `name=value` (Linux /proc): children a test
 * marked, to prove none outlives what should stop it.
 */
export function processesWithEnv(name: string, value: string): number[] {
  const found: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const environ = Deno.readTextFileSync(`/proc/${entry.name}/environ`);
      if (environ.split("\0").includes(`${name}=${value}`)) found.push(Number(entry.name));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}
