/**
 * `agent run` and `agent chat` end to end: the real CLI as a subprocess (`deno run -A main.ts`,
 * clean environment, temp `AGENT_HOME`) against the fake OpenAI-compatible model (in-process, so
 * the requests it received can be inspected) and real MCP servers over stdio (the small fixture
 * server, and once the reference server-everything).
 *
 * Chat sessions are driven through a piped stdin, line by line, reading stdout and stderr as they
 * come; every wait has a deadline that fails the test with what the process printed so far.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import {
  type ChatRequest,
  type FakeModel,
  type FakeModelOptions,
  startFakeModel,
  type Turn,
} from "../fixtures/fake_model.ts";
import { stdioCommand } from "../fixtures/mcp/spawn.ts";
import type { MetricsPackage } from "../../mod.ts";
import {
  childEnv,
  cli,
  cliJson,
  type CliResult,
  filesIn,
  MAIN,
  parseOneJson,
  processesWithEnv,
  recordEvents,
  REPO,
  SAMPLE_EVENTS,
  spawnCli,
  type SpawnOptions,
  startCollector,
  tempHome,
} from "./_helpers.ts";
import { denoEnv, everythingStdio, freePort, writeConfig } from "./_mcp_helpers.ts";

/** How long any single wait (a line on stdout, a model request, an exit) may take. */
const WAIT_MS = 30_000;

// ---------------------------------------------------------------------------------------------
// helpers

/** Wakes waiters whenever something they watch may have changed. */
class Notifier {
  readonly #waiters = new Set<() => void>();

  notify(): void {
    for (const waiter of [...this.#waiters]) waiter();
  }

  /** Resolves once `check()` holds; rejects after `timeoutMs` with `describe()`. */
  until(check: () => boolean, timeoutMs: number, describe: () => string): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const test = () => {
        if (!check()) return;
        clearTimeout(timer);
        this.#waiters.delete(test);
        resolve();
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(test);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${describe()}`));
      }, timeoutMs);
      this.#waiters.add(test);
    });
  }
}

/** The fake model plus a way to wait for its requests. */
interface Model extends FakeModel {
  /** Resolves once `count` requests have arrived (held ones included). */
  waitForRequests(count: number): Promise<void>;
}

/**
 * Starts the fake model. With `hold`, requests go through a front that keeps the ones `hold`
 * picks (by arrival index, from 0) unanswered until the model closes, and forwards the others.
 *
 * The fake's own `{hang: true}` turn is not used: Deno.serve does not reliably abort
 * `request.signal` when a client that sent a request body of a few hundred bytes goes away (as
 * every agent request is, with its system prompt), so the hanging handler never returns and the
 * fake's `close()` (a graceful `server.shutdown()`) would wait forever.
 */
async function fakeModel(
  options: FakeModelOptions = {},
  hold?: (index: number) => boolean,
): Promise<Model> {
  const arrived = new Notifier();
  let arrivals = 0;
  const model = await startFakeModel({
    ...options,
    onRequest: (request) => {
      options.onRequest?.(request);
      if (hold) return;
      arrivals++;
      arrived.notify();
    },
  });
  const waitForRequests = (count: number) =>
    arrived.until(
      () => arrivals >= count,
      WAIT_MS,
      () => `${count} model request(s), got ${arrivals}`,
    );
  if (!hold) return Object.assign(model, { waitForRequests });

  const upstream = model.baseUrl.replace(/\/v1$/, "");
  const releases = new Set<() => void>();
  const front = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const body = await request.text();
    const index = arrivals++;
    arrived.notify();
    if (hold(index)) {
      await new Promise<void>((resolve) => releases.add(resolve));
      return new Response(null, { status: 499 });
    }
    const headers = new Headers();
    for (const name of ["authorization", "content-type", "accept"]) {
      const value = request.headers.get(name);
      if (value !== null) headers.set(name, value);
    }
    return await fetch(`${upstream}${new URL(request.url).pathname}`, {
      method: request.method,
      headers,
      body,
    });
  });
  const closeModel = model.close;
  const close = async () => {
    for (const release of releases) release();
    await front.shutdown();
    await closeModel();
  };
  return Object.assign(model, {
    baseUrl: `http://127.0.0.1:${front.addr.port}/v1`,
    port: front.addr.port,
    waitForRequests,
    close,
    [Symbol.asyncDispose]: close,
  });
}

/** The text of the last user message of a request. */
function lastUser(request: ChatRequest): string {
  const user = request.messages.findLast((message) => message.role === "user");
  return String(user?.content ?? "");
}

/** A model that answers `reply to <prompt>` to everything. */
const echoPrompt: Turn = (request) => ({ content: `reply to ${lastUser(request)}` });

/** A model that calls `name` once per prompt, then answers with the tool's result. */
function callThenAnswer(name: string, args: Record<string, unknown>): Turn {
  return (request) =>
    request.messages.at(-1)?.role === "tool"
      ? { contentFromTools: "Result: " }
      : { toolCalls: [{ name, arguments: args }] };
}

/** The roles of a request's messages. */
const roles = (request: ChatRequest) => request.messages.map((message) => message.role);
/** The tool names a request offered. */
const toolNames = (request: ChatRequest) => (request.tools ?? []).map((t) => t.function.name);

interface ServerEntry {
  command: string;
  args: string[];
  trust?: string;
  env?: Record<string, string>;
  connect_timeout?: number;
}

/** The fixture MCP server over stdio with only `tools`. */
function fixture(tools: string, extra: Partial<ServerEntry> = {}): ServerEntry {
  return { ...stdioCommand(["--tools", tools]), ...extra };
}

/** Writes `<home>/config.yaml`: a model at `baseUrl` (unless `null`), servers, other keys. */
function configure(
  home: string,
  options: {
    baseUrl?: string | null;
    model?: Record<string, unknown>;
    servers?: Record<string, ServerEntry>;
    extra?: Record<string, unknown>;
  },
): string {
  const doc: Record<string, unknown> = {};
  if (options.baseUrl !== null) {
    doc.model = { default: "test-model", base_url: options.baseUrl, ...options.model };
  }
  if (options.servers) doc.mcp_servers = options.servers;
  Object.assign(doc, options.extra);
  return writeConfig(home, stringify(doc));
}

function expectCode(result: CliResult, code: number): void {
  assert.equal(
    result.code,
    code,
    `exit code\n--- stdout ---\n${result.stdout}\n--- stderr ---\n${result.stderr}`,
  );
}

/** `agent run …` as a subprocess; `--json` output is parsed as exactly one document. */
async function agentRun(
  home: string,
  args: string[],
  options: SpawnOptions = {},
): Promise<CliResult & { json?: Record<string, unknown> }> {
  const result = await spawnCli(home, ["run", ...args], options);
  if (!args.includes("--json")) return result;
  // deno-lint-ignore no-explicit-any
  return { ...result, json: parseOneJson(result.stdout) as any };
}

/**
 * A CLI subprocess with a piped stdin whose output is read as it comes. `expectOut` and
 * `expectErr` wait for a pattern after what the previous expectation consumed.
 */
class Agent implements AsyncDisposable {
  readonly process: Deno.ChildProcess;
  stdout = "";
  stderr = "";
  exitCode: number | undefined;
  readonly #changed = new Notifier();
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #drains: Promise<void>[];
  readonly #status: Promise<Deno.CommandStatus>;
  #stdinOpen = true;
  /** Exited, and all its output read. */
  #finished = false;
  #outAt = 0;
  #errAt = 0;

  constructor(home: string, args: string[], env: Record<string, string> = {}) {
    this.process = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", MAIN, ...args],
      cwd: REPO,
      clearEnv: true,
      env: childEnv(home, env),
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    this.#writer = this.process.stdin.getWriter();
    this.#drains = [
      this.#drain(this.process.stdout, (text) => this.stdout += text),
      this.#drain(this.process.stderr, (text) => this.stderr += text),
    ];
    this.#status = this.process.status.then(async (status) => {
      this.exitCode = status.code;
      await Promise.all(this.#drains);
      this.#finished = true;
      this.#changed.notify();
      return status;
    });
  }

  async #drain(stream: ReadableStream<Uint8Array>, add: (text: string) => void): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of stream) {
        add(decoder.decode(chunk, { stream: true }));
        this.#changed.notify();
      }
    } catch {
      // the process was killed mid-read
    }
  }

  /** Sends one line. */
  async send(line: string): Promise<void> {
    await this.#writer.write(new TextEncoder().encode(`${line}\n`));
  }

  /** Ends stdin (Ctrl-D). */
  async closeStdin(): Promise<void> {
    if (!this.#stdinOpen) return;
    this.#stdinOpen = false;
    await this.#writer.close().catch(() => {});
  }

  /** Waits for `pattern` on stdout after the last match; returns the match. */
  async expectOut(pattern: RegExp): Promise<RegExpExecArray> {
    let match: RegExpExecArray | null = null;
    await this.#until(() => {
      match = pattern.exec(this.stdout.slice(this.#outAt));
      return match !== null;
    }, `stdout to match ${pattern}`);
    this.#outAt += match!.index + match![0].length;
    return match!;
  }

  /** Waits for `pattern` on stderr after the last match; returns the match. */
  async expectErr(pattern: RegExp): Promise<RegExpExecArray> {
    let match: RegExpExecArray | null = null;
    await this.#until(() => {
      match = pattern.exec(this.stderr.slice(this.#errAt));
      return match !== null;
    }, `stderr to match ${pattern}`);
    this.#errAt += match!.index + match![0].length;
    return match!;
  }

  /** Stdout not consumed by an expectation yet. */
  pendingOut(): string {
    return this.stdout.slice(this.#outAt);
  }

  kill(signal: Deno.Signal): void {
    this.process.kill(signal);
  }

  /** Waits for the exit and all output; returns the exit code. */
  async exit(): Promise<number> {
    await this.#until(() => this.#finished, "the process to exit");
    return this.exitCode!;
  }

  /** Waits until `check()` holds; fails at once when the process ended without it. */
  async #until(check: () => boolean, what: string): Promise<void> {
    const output = () => `\n--- stdout ---\n${this.stdout}\n--- stderr ---\n${this.stderr}`;
    await this.#changed.until(
      () => check() || this.#finished,
      WAIT_MS,
      () => `${what}${output()}`,
    );
    if (!check()) assert.fail(`exited with ${this.exitCode} before ${what}${output()}`);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    if (this.exitCode === undefined) {
      try {
        this.process.kill("SIGKILL");
      } catch {
        // exited meanwhile
      }
    }
    await this.#status;
    this.#stdinOpen = false;
    await this.#writer.close().catch(() => {});
    await Promise.all(this.#drains);
  }
}

/** The summed value of the counters `name` whose dimensions include `dims`. */
function counter(
  packages: MetricsPackage[],
  name: string,
  dims: Record<string, string> = {},
): number {
  let total = 0;
  for (const pkg of packages) {
    for (const item of pkg.metrics) {
      const have = item.dimensions as Record<string, string>;
      if (item.name !== name) continue;
      if (Object.entries(dims).every(([key, value]) => have[key] === value)) total += item.value;
    }
  }
  return total;
}

// ---------------------------------------------------------------------------------------------
// agent run

Deno.test("run --json: the model calls server-everything's echo, then answers from its result", async () => {
  await using home = await tempHome();
  await using model = await fakeModel({
    turns: [
      { toolCalls: [{ name: "mcp__everything__echo", arguments: { message: "hi" } }] },
      { contentFromTools: "The tool said: " },
    ],
  });
  configure(home.home, { baseUrl: model.baseUrl, servers: { everything: everythingStdio() } });

  const result = await agentRun(home.home, ["say hi", "--json"]);
  expectCode(result, 0);
  const doc = result.json!;
  assert.equal(doc.answer, "The tool said: Echo: hi");
  assert.match(String(doc.answer), /Echo:/);
  assert.equal(doc.end_reason, "completed");
  assert.equal(doc.model_calls, 2);
  assert.equal(doc.retries, 0);
  assert.deepEqual(doc.warnings, []);
  assert.equal(typeof doc.duration_ms, "number");
  const calls = doc.tool_calls as Array<Record<string, unknown>>;
  assert.equal(calls.length, 1);
  assert.deepEqual(
    {
      name: calls[0].name,
      server: calls[0].server,
      arguments: calls[0].arguments,
      outcome: calls[0].outcome,
      approval: calls[0].approval,
    },
    {
      name: "mcp__everything__echo",
      server: "everything",
      arguments: '{"message":"hi"}',
      outcome: "success",
      approval: "not_required",
    },
  );
  assert.equal(typeof calls[0].latency_ms, "number");
  assert.ok(!("error" in doc), "a completed run has no error");

  // What the model saw: every tool of the server offered, the prompt, then the tool result.
  assert.equal(model.requests.length, 2);
  const [first, second] = model.requests;
  assert.equal(first.model, "test-model");
  assert.deepEqual(roles(first), ["system", "user"]);
  assert.equal(lastUser(first), "say hi");
  assert.ok(toolNames(first).includes("mcp__everything__echo"), toolNames(first).join(" "));
  assert.ok(toolNames(first).every((name) => name.startsWith("mcp__everything__")));
  assert.deepEqual(roles(second), ["system", "user", "assistant", "tool"]);
  assert.equal(second.messages[3].content, "Echo: hi");
  assert.equal(first.authorization, null, "no key is sent to a custom endpoint without one");
});

Deno.test("run: text mode, the prompt from an argument, from `-` and from piped stdin; empty prompts", async (t) => {
  await using home = await tempHome();
  await using model = await fakeModel({ fallback: echoPrompt });
  configure(home.home, { baseUrl: model.baseUrl });

  await t.step("the answer is printed on stdout", async () => {
    const result = await agentRun(home.home, ["say hi"]);
    expectCode(result, 0);
    assert.equal(result.stdout, "reply to say hi\n");
    assert.equal(result.stderr, "");
  });

  await t.step("`-` reads the prompt from stdin, without its trailing line breaks", async () => {
    const result = await agentRun(home.home, ["-"], { stdin: "from stdin\nsecond line\n" });
    expectCode(result, 0);
    assert.equal(lastUser(model.requests.at(-1)!), "from stdin\nsecond line");
    assert.equal(result.stdout, "reply to from stdin\nsecond line\n");

    const json = await agentRun(home.home, ["-", "--json"], { stdin: "What changed today?\n" });
    expectCode(json, 0);
    assert.equal(lastUser(model.requests.at(-1)!), "What changed today?");
    assert.equal(json.json!.answer, "reply to What changed today?");

    // CRLF and several trailing line breaks go; leading text, inner breaks and spaces stay.
    const crlf = await agentRun(home.home, ["-"], { stdin: "  first\r\n\r\nlast \r\n\r\n\n" });
    expectCode(crlf, 0);
    assert.equal(lastUser(model.requests.at(-1)!), "  first\r\n\r\nlast ");
  });

  await t.step("no argument with stdin piped reads stdin", async () => {
    const result = await agentRun(home.home, [], { stdin: "piped prompt" });
    expectCode(result, 0);
    assert.equal(result.stdout, "reply to piped prompt\n");
  });

  await t.step(
    "an empty prompt is a usage error (exit 2) and the model is not called",
    async () => {
      const before = model.requests.length;
      const [argument, blankStdin, noStdin] = await Promise.all([
        agentRun(home.home, ["  "]),
        agentRun(home.home, ["-"], { stdin: " \n\n" }),
        agentRun(home.home, []),
      ]);
      expectCode(argument, 2);
      assert.equal(
        argument.stderr,
        "agent: the prompt is empty. Fix: give the text to send to the model as one quoted " +
          'argument (agent run "<prompt>"), or pipe it: echo … | agent run -\n',
      );
      expectCode(blankStdin, 2);
      assert.equal(
        blankStdin.stderr,
        "agent: the prompt read from stdin is empty. Fix: pipe the text to send to the model " +
          '(echo … | agent run -), or give it as one quoted argument: agent run "<prompt>"\n',
      );
      expectCode(noStdin, 2);
      assert.match(noStdin.stderr, /empty/);
      for (const result of [argument, blankStdin, noStdin]) assert.equal(result.stdout, "");
      assert.equal(model.requests.length, before);
    },
  );

  await t.step(
    "a prompt left unquoted (several words) is a usage error saying to quote it",
    async () => {
      const before = model.requests.length;
      const [text, json] = await Promise.all([
        agentRun(home.home, ["Summarise", "Ada's", "issues"]),
        agentRun(home.home, ["a", "b", "--json"]),
      ]);
      expectCode(text, 2);
      assert.equal(text.stdout, "");
      assert.equal(
        text.stderr,
        "agent: the prompt must be one argument, and 3 were given; quote it: " +
          "agent run 'Summarise Ada'\\''s issues'\n",
      );
      expectCode(json, 2);
      assert.deepEqual(json.json, {
        error: {
          message: "the prompt must be one argument, and 2 were given; quote it: agent run 'a b'",
          exit_code: 2,
        },
      });
      assert.equal(model.requests.length, before);
    },
  );
});

Deno.test("run: configuration and connection errors name the key, variable or file to fix", async (t) => {
  await using home = await tempHome();
  const dotenv = join(home.home, ".env");

  await t.step("no model configured: exit 2 naming model.default and config.yaml", async () => {
    configure(home.home, { baseUrl: null, extra: { agent: { max_iterations: 3 } } });
    const text = await agentRun(home.home, ["hi"]);
    expectCode(text, 2);
    assert.equal(text.stdout, "");
    assert.match(text.stderr, /model\.default/);
    assert.ok(text.stderr.includes(home.config), text.stderr);
    assert.match(text.stderr, /no model is configured/);

    const json = await agentRun(home.home, ["hi", "--json"]);
    expectCode(json, 2);
    const error = json.json!.error as Record<string, unknown>;
    assert.deepEqual(Object.keys(json.json!), ["error"]);
    assert.equal(error.exit_code, 2);
    assert.equal(error.key, "model.default");
    assert.equal(error.file, home.config);
    assert.match(String(error.message), /no model is configured/);
  });

  await t.step("provider openai without OPENAI_API_KEY: exit 2 naming it and .env", async () => {
    for (const baseUrl of [undefined, "https://api.example.invalid/v1"]) {
      configure(home.home, { baseUrl, model: { provider: "openai" } });
      const result = await agentRun(home.home, ["hi"]);
      expectCode(result, 2);
      assert.match(result.stderr, /OPENAI_API_KEY/);
      assert.ok(result.stderr.includes(dotenv), result.stderr);
      assert.equal(result.stdout, "");
    }
  });

  await using model = await fakeModel({ apiKey: "sk-test-right-key", fallback: echoPrompt });

  await t.step("with the key in <home>/.env the run proceeds and sends it", async () => {
    configure(home.home, { baseUrl: model.baseUrl, model: { provider: "openai" } });
    Deno.writeTextFileSync(dotenv, "OPENAI_API_KEY=sk-test-right-key\n");
    const result = await agentRun(home.home, ["hi"]);
    expectCode(result, 0);
    assert.equal(result.stdout, "reply to hi\n");
    assert.equal(model.requests.at(-1)!.authorization, "Bearer sk-test-right-key");
  });

  await t.step(
    "a key the endpoint refuses: exit 1 naming the variable, key not echoed",
    async () => {
      Deno.writeTextFileSync(dotenv, "OPENAI_API_KEY=sk-test-wrong-key\n");
      const text = await agentRun(home.home, ["hi"]);
      expectCode(text, 1);
      assert.equal(text.stdout, "");
      assert.match(text.stderr, /refused the API key/);
      assert.match(text.stderr, /OPENAI_API_KEY/);
      assert.ok(
        text.stderr.includes(`Fix: check OPENAI_API_KEY in ${dotenv}`),
        `names the file the key was read from: ${text.stderr}`,
      );
      assert.ok(!text.stderr.includes("sk-test-wrong-key"), text.stderr);

      const json = await agentRun(home.home, ["hi", "--json"]);
      expectCode(json, 1);
      assert.equal(json.json!.end_reason, "failed");
      assert.equal(json.json!.answer, "");
      assert.match(String(json.json!.error), /refused the API key.*OPENAI_API_KEY/);
    },
  );

  await t.step("an unreachable base_url: exit 1 naming model.base_url", async () => {
    Deno.removeSync(dotenv);
    configure(home.home, {
      baseUrl: `http://127.0.0.1:${freePort()}/v1`,
      model: { max_retries: 0 },
    });
    const started = performance.now();
    const result = await agentRun(home.home, ["hi"]);
    expectCode(result, 1);
    assert.match(result.stderr, /cannot reach the model endpoint/);
    assert.match(result.stderr, /model\.base_url/);
    assert.ok(performance.now() - started < 15_000, "max_retries: 0 does not retry");
  });
});

Deno.test("run --json: config.yaml's warnings are in warnings too, and on stderr once", async () => {
  await using home = await tempHome();
  await using model = await fakeModel({ fallback: echoPrompt });
  configure(home.home, { baseUrl: model.baseUrl, extra: { modle: { default: "x" } } });
  const json = await agentRun(home.home, ["hi", "--json"]);
  expectCode(json, 0);
  const unknown = /config\.yaml:\d+: modle: unknown key `modle` is ignored; did you mean `model`\?/;
  const warnings = json.json!.warnings as string[];
  assert.equal(warnings.length, 1, warnings.join("\n"));
  assert.ok(warnings[0].startsWith(join(home.home, "config.yaml")), warnings[0]);
  assert.match(warnings[0], new RegExp(`${unknown.source}$`));
  assert.equal(json.stderr.match(new RegExp(unknown.source, "g"))?.length, 1, json.stderr);
});

Deno.test("run and chat: the usage-metrics settings' warnings are on stderr once, and in run --json's warnings after config.yaml's", async () => {
  await using home = await tempHome();
  await using model = await fakeModel({ fallback: echoPrompt });
  configure(home.home, {
    baseUrl: model.baseUrl,
    extra: { modle: { default: "x" }, telemetry: { shared_metrics: { send: true, endpoint: 5 } } },
  });
  const unknown = "modle: unknown key `modle` is ignored; did you mean `model`?";
  const endpoint = "(key telemetry.shared_metrics.endpoint): expected a string, got number 5; " +
    "not used while usage metrics are off. Fix: quote the value before enabling them";
  const sendOff = "telemetry.shared_metrics.send is true but collection is off; nothing is sent";
  const once = (stderr: string, text: string) =>
    assert.equal(stderr.split(text).length - 1, 1, `${text}\n--- stderr ---\n${stderr}`);

  const json = await agentRun(home.home, ["hi", "--json"]);
  expectCode(json, 0);
  const warnings = json.json!.warnings as string[];
  assert.equal(warnings.length, 3, warnings.join("\n"));
  assert.ok(warnings[0].endsWith(unknown), warnings[0]);
  assert.ok(warnings[1].startsWith(join(home.home, "config.yaml")), warnings[1]);
  assert.ok(warnings[1].endsWith(endpoint), warnings[1]);
  assert.equal(warnings[2], sendOff);
  for (const text of [unknown, endpoint, sendOff]) once(json.stderr, text);

  const run = await agentRun(home.home, ["hi"]);
  expectCode(run, 0);
  assert.equal(run.stdout, "reply to hi\n");
  const chat = await spawnCli(home.home, ["chat"], { stdin: "" });
  expectCode(chat, 0);
  for (const result of [run, chat]) {
    for (const text of [unknown, endpoint, sendOff]) once(result.stderr, text);
    assert.match(result.stderr, new RegExp(`^warning: .*config\\.yaml:\\d+ \\(key telemetry`, "m"));
    assert.ok(result.stderr.includes(`warning: ${sendOff}\n`), result.stderr);
  }
});

Deno.test("run and chat: sending to an endpoint the sender refuses is a warning up front, with config.yaml's line, the key and the fix; nothing is tried, the packages wait", async () => {
  await using home = await tempHome();
  await using model = await fakeModel({ fallback: echoPrompt });
  await using collector = startCollector(202);
  const metrics = (shared: Record<string, unknown>) => ({
    baseUrl: model.baseUrl,
    extra: { telemetry: { shared_metrics: { enabled: true, ...shared } } },
  });
  // A package waits in the outbox, exported while collecting only.
  configure(home.home, metrics({}));
  recordEvents(home.home, SAMPLE_EVENTS, Date.now());
  expectCode(await spawnCli(home.home, ["metrics", "export", "--json"]), 0);

  const config = configure(
    home.home,
    metrics({ send: true, endpoint: "http://metrics.example.com/v2" }),
  );
  const line = Deno.readTextFileSync(config).split("\n").findIndex((l) => /endpoint:/.test(l)) + 1;
  const warning = `${config}:${line} (key telemetry.shared_metrics.endpoint): ` +
    'telemetry.shared_metrics.endpoint uses http:// to "metrics.example.com", which is not a ' +
    "loopback host; it must be an https:// URL, or http:// only to a loopback host (127.0.0.1, " +
    "[::1], localhost); nothing is sent. Fix: set it to an https:// URL (or http:// to " +
    "127.0.0.1, [::1] or localhost), or run `agent metrics enable --endpoint <url>`";
  const json = await agentRun(home.home, ["hi", "--json"]);
  expectCode(json, 0);
  assert.deepEqual(json.json!.warnings, [warning]);
  const chat = await spawnCli(home.home, ["chat"], { stdin: "" });
  expectCode(chat, 0);
  for (const result of [json, chat]) {
    assert.equal(result.stderr.split(`warning: ${warning}\n`).length - 1, 1, result.stderr);
  }
  // Before, each run tried to send, failed, and said so in the log only.
  const log = join(home.home, "logs", "gateway.log");
  assert.doesNotMatch(existsSync(log) ? Deno.readTextFileSync(log) : "", /usage metrics/);

  // Fixed, the package that waited is sent.
  configure(home.home, metrics({ send: true, endpoint: collector.endpoint }));
  const send = await spawnCli(home.home, ["metrics", "send", "--json"]);
  expectCode(send, 0);
  const sent = parseOneJson(send.stdout).sent as { status: string }[];
  assert.deepEqual(sent.map((outcome) => outcome.status), ["sent"]);
  assert.equal(collector.received.length, 1);
});

Deno.test("run: MCP problems are said on stderr; --json has a server that did not connect in warnings and an invalid entry in mcp_issues, as mcp list --json has it; the run goes on", async () => {
  await using home = await tempHome();
  await using model = await fakeModel({ fallback: echoPrompt });
  configure(home.home, {
    baseUrl: model.baseUrl,
    extra: {
      mcp_servers: {
        gone: { command: join(home.home, "no-such-server"), connect_timeout: 5 },
        broken: { timeout: 30 },
        fx: fixture("echo"),
      },
    },
  });

  const text = await agentRun(home.home, ["hi"]);
  expectCode(text, 0);
  assert.equal(text.stdout, "reply to hi\n");
  assert.match(text.stderr, /^error: .*config\.yaml:\d+: mcp_servers\.broken/m);
  assert.match(text.stderr, /^warning: .*gone.*; its tools are not available$/m);
  assert.ok(!/fx/.test(text.stderr), text.stderr);

  const json = await agentRun(home.home, ["hi", "--json"]);
  expectCode(json, 0);
  assert.equal(json.json!.answer, "reply to hi");
  assert.equal(json.stderr, text.stderr, "stderr as without --json");
  // The invalid entry is no warning: it is in mcp_issues, as `mcp list --json` has it in issues.
  assert.deepEqual(json.json!.warnings, [
    `MCP server 'gone': cannot start command '${join(home.home, "no-such-server")}': not found ` +
    "(check command and PATH); its tools are not available",
  ]);
  assert.deepEqual(json.json!.mcp_issues, [{
    server: "broken",
    key: "",
    severity: "error",
    message: "the server has neither `command` nor `url`; add `command:` for a local (stdio) " +
      "server or `url:` for a remote (HTTP) one",
    line: 8,
  }]);
  const listed = await cliJson(home.home, ["mcp", "list", "--json"], 0, { env: denoEnv() });
  assert.deepEqual(json.json!.mcp_issues, listed.issues, "as mcp list --json has them");
  assert.ok(toolNames(model.requests.at(-1)!).includes("mcp__fx__echo"));
});

Deno.test("run: agent.max_iterations ends a run whose model keeps calling tools (exit 1)", async () => {
  await using home = await tempHome();
  await using model = await fakeModel({
    fallback: { toolCalls: [{ name: "mcp__fx__echo", arguments: { message: "again" } }] },
  });
  configure(home.home, {
    baseUrl: model.baseUrl,
    servers: { fx: fixture("echo") },
    extra: { agent: { max_iterations: 2 } },
  });
  const [text, json] = await Promise.all([
    agentRun(home.home, ["loop"]),
    agentRun(home.home, ["loop", "--json"]),
  ]);
  expectCode(text, 1);
  assert.match(text.stderr, /iteration limit reached/);
  assert.match(text.stderr, /agent\.max_iterations \(2\)/);
  expectCode(json, 1);
  const doc = json.json!;
  assert.equal(doc.end_reason, "iteration_limit");
  assert.equal(doc.model_calls, 2);
  assert.match(String(doc.error), /agent\.max_iterations/);
  const calls = doc.tool_calls as Array<Record<string, unknown>>;
  assert.equal(calls.length, 2);
  assert.ok(calls.every((call) => call.outcome === "success" && call.server === "fx"));
  assert.equal(model.requests.length, 4);
});

Deno.test("run: an empty answer is a warning on stderr (--json too) and in --json's warnings, and exit 1; [SILENT] is an answer", async () => {
  await using home = await tempHome();
  await using model = await fakeModel({
    fallback: (request) => ({ content: lastUser(request) === "silent" ? "[SILENT]" : " \n" }),
  });
  configure(home.home, { baseUrl: model.baseUrl });
  const warning = 'the model gave an empty answer (finish_reason "stop", no text and no tool ' +
    "calls); try another model (model.default in config.yaml) or a clearer prompt";
  const [text, json, silent] = await Promise.all([
    agentRun(home.home, ["hi"]),
    agentRun(home.home, ["hi", "--json"]),
    agentRun(home.home, ["silent"]),
  ]);
  expectCode(text, 1);
  assert.equal(text.stdout, "");
  assert.equal(text.stderr, `warning: ${warning}\n`);
  expectCode(json, 1);
  assert.equal(json.json!.answer, "");
  assert.equal(json.json!.end_reason, "completed");
  assert.equal(json.json!.error, undefined);
  assert.deepEqual(json.json!.warnings, [warning]);
  // On stderr with --json too, once: the document is not the only place a reader looks.
  assert.equal(json.stderr, `warning: ${warning}\n`);
  expectCode(silent, 0);
  assert.equal(silent.stdout, "[SILENT]\n");
  assert.equal(silent.stderr, "");
});

Deno.test("run --skills: a skill's body reaches the system prompt; a missing one is a warning", async (t) => {
  await using home = await tempHome();
  await using model = await fakeModel({ fallback: echoPrompt });
  configure(home.home, { baseUrl: model.baseUrl });
  Deno.mkdirSync(join(home.home, "skills", "triage"), { recursive: true });
  Deno.writeTextFileSync(
    join(home.home, "skills", "triage", "SKILL.md"),
    "---\nname: triage\ndescription: Label new issues\n---\n" +
      "Read the issue, then label it TRIAGE-MARKER-42.\n",
  );

  await t.step("--skills triage", async () => {
    const result = await agentRun(home.home, ["label this", "--skills", "triage"]);
    expectCode(result, 0);
    assert.equal(result.stderr, "");
    const system = model.requests.at(-1)!.messages[0];
    assert.equal(system.role, "system");
    const content = String(system.content);
    assert.ok(content.includes("## Skill: triage"), content);
    assert.ok(content.includes("Label new issues"), content);
    assert.ok(content.includes("Read the issue, then label it TRIAGE-MARKER-42."), content);
    assert.ok(!content.includes("name: triage"), "the front matter is not sent");
  });

  await t.step("--skills nope: warning on stderr, the run goes on", async () => {
    const result = await agentRun(home.home, ["label this", "--skills", "nope"]);
    expectCode(result, 0);
    assert.match(result.stderr, /^warning: skill 'nope' was not found/m);
    assert.equal(result.stdout, "reply to label this\n");
    assert.ok(!String(model.requests.at(-1)!.messages[0].content).includes("TRIAGE-MARKER-42"));

    const json = await agentRun(home.home, ["label this", "--skills", "nope", "--json"]);
    expectCode(json, 0);
    const warnings = json.json!.warnings as string[];
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /skill 'nope' was not found/);
    assert.equal(json.stderr, `warning: ${warnings[0]}\n`);
  });

  await t.step("--skills ../etc: a name that can never be a skill is a usage error", async () => {
    const asked = model.requests.length;
    for (const command of [["run", "label this"], ["chat"]]) {
      const result = await spawnCli(home.home, [...command, "--skills", "triage,../etc"]);
      expectCode(result, 2);
      assert.match(result.stderr, /--skills: "\.\.\/etc" is not a skill name: a skill is a folder/);
    }
    assert.equal(model.requests.length, asked, "nothing was run");
  });
});

Deno.test("run and chat that fail before doing anything leave <home> as it was: empty, or absent", async () => {
  await using home = await tempHome();
  const absent = join(home.home, "absent");
  for (const args of [["run", "hi"], ["chat"]]) {
    for (const at of [home.home, absent]) {
      const result = await cli(at, args, { stdin: "" });
      expectCode(result, 2);
      assert.match(result.stderr, /no model is configured/);
    }
  }
  assert.deepEqual(filesIn(home.home), [], "no logs/, no <home>/absent");
});

Deno.test("run: logs/ is made for a line to write there, not for a run that logs nothing", async () => {
  await using home = await tempHome();
  await using model = await fakeModel({ fallback: echoPrompt });
  configure(home.home, { baseUrl: model.baseUrl });
  expectCode(await cli(home.home, ["run", "hi"]), 0);
  assert.deepEqual(filesIn(home.home), ["config.yaml"]);
  expectCode(await cli(home.home, ["run", "hi", "--skills", "nope"]), 0);
  assert.deepEqual(filesIn(join(home.home, "logs")), ["gateway.log"]);
  assert.match(Deno.readTextFileSync(join(home.home, "logs", "gateway.log")), /skill 'nope'/);
});

Deno.test("chat --skills: a missing skill is said once at the start, then only what changes", async () => {
  await using home = await tempHome();
  const folder = join(home.home, "skills", "typo");
  const file = join(folder, "SKILL.md");
  const missing =
    `warning: skill 'typo' was not found (expected ${file}); the run goes on without it\n`;
  await using model = await fakeModel({
    turns: [
      { content: "one" },
      // While the second turn runs, the skill appears; it is gone again during the fourth.
      (request) => {
        Deno.mkdirSync(folder, { recursive: true });
        Deno.writeTextFileSync(file, "Answer in haiku. SKILL-MARKER-7\n");
        return echoPrompt(request);
      },
      echoPrompt,
      (request) => {
        Deno.removeSync(folder, { recursive: true });
        return echoPrompt(request);
      },
      echoPrompt,
    ],
  });
  configure(home.home, { baseUrl: model.baseUrl });
  const result = await cli(home.home, ["chat", "--skills", "typo"], {
    stdin: "a\nb\nc\nd\ne\n",
  });
  expectCode(result, 0);
  assert.equal(
    result.stderr,
    missing + `note: skill 'typo' is loaded now (${file})\n` + missing,
  );
  const loaded = model.requests.map((request) =>
    String(request.messages[0].content).includes("SKILL-MARKER-7")
  );
  assert.deepEqual(loaded, [false, false, true, true, false]);
});

Deno.test("run: Ctrl-C (SIGINT) while the model is thinking cancels the run quickly (exit 1)", async (t) => {
  await using home = await tempHome();
  // Every request is held: the model never answers.
  await using model = await fakeModel({}, () => true);
  configure(home.home, { baseUrl: model.baseUrl });

  for (const [step, json] of [false, true].entries()) {
    await t.step(
      json ? "--json: end_reason user_cancelled" : "text: 'cancelled' on stderr",
      async () => {
        await using agent = new Agent(home.home, [
          "run",
          "think hard",
          ...(json ? ["--json"] : []),
        ]);
        await agent.closeStdin();
        await model.waitForRequests(step + 1);
        const interrupted = performance.now();
        agent.kill("SIGINT");
        const code = await agent.exit();
        const elapsed = performance.now() - interrupted;
        assert.equal(code, 1, agent.stderr);
        assert.ok(elapsed < 5_000, `took ${Math.round(elapsed)} ms to stop`);
        assert.match(agent.stderr, /cancelling the run/);
        if (json) {
          const doc = parseOneJson(agent.stdout);
          assert.equal(doc.end_reason, "user_cancelled");
          assert.equal(doc.answer, "");
          assert.equal(doc.model_calls, 1);
        } else {
          assert.match(agent.stderr, /^agent: cancelled/m);
          assert.equal(agent.stdout, "");
        }
      },
    );
  }
});

Deno.test("run: SIGTERM or SIGHUP while the model is thinking stops the run as system_aborted (exit 1), reported and counted", async (t) => {
  await using home = await tempHome();
  // Every request is held: the model never answers.
  await using model = await fakeModel({}, () => true);
  configure(home.home, {
    baseUrl: model.baseUrl,
    extra: { telemetry: { shared_metrics: { enabled: true } } },
  });

  const cases = [
    { signal: "SIGTERM", json: true },
    { signal: "SIGTERM", json: false },
    { signal: "SIGHUP", json: true },
  ] as const;
  for (const [step, { signal, json }] of cases.entries()) {
    await t.step(`${signal}${json ? " --json" : " text"}`, async () => {
      await using agent = new Agent(home.home, ["run", "think hard", ...(json ? ["--json"] : [])]);
      await agent.closeStdin();
      await model.waitForRequests(step + 1);
      agent.kill(signal);
      const code = await agent.exit();
      assert.equal(code, 1, agent.stderr);
      assert.match(agent.stderr, new RegExp(`${signal}: stopping the run`));
      if (json) {
        const doc = parseOneJson(agent.stdout);
        assert.equal(doc.end_reason, "system_aborted");
        assert.equal(doc.answer, "");
        assert.equal(doc.error, `the process received ${signal}`);
        assert.equal(doc.model_calls, 1);
      } else {
        assert.match(agent.stderr, /^agent: stopped: the process received SIGTERM$/m);
        assert.equal(agent.stdout, "");
      }
    });
  }

  await t.step("the usage metrics hold every stopped run as finished", async () => {
    const preview = await spawnCli(home.home, ["metrics", "preview", "--json"]);
    expectCode(preview, 0);
    const { packages } = parseOneJson(preview.stdout) as { packages: MetricsPackage[] };
    assert.equal(counter(packages, "agent.task_run.started"), cases.length);
    assert.equal(
      counter(packages, "agent.task_run.finished", { end_reason: "system_aborted" }),
      cases.length,
    );
    assert.equal(
      counter(packages, "agent.model_call.count", { outcome: "cancelled" }),
      cases.length,
    );
  });
});

Deno.test("run and chat: SIGTERM, SIGHUP or Ctrl-C while the MCP servers connect stops the connects and leaves no child behind", async (t) => {
  await using home = await tempHome();
  await using model = await fakeModel({ fallback: echoPrompt });
  const marker = `agent-test-${crypto.randomUUID()}`;
  // A server that never answers `initialize`; its connect_timeout is far beyond this test.
  configure(home.home, {
    baseUrl: model.baseUrl,
    servers: {
      mute: {
        command: "sleep",
        args: ["300"],
        env: { AGENT_TEST_MARKER: marker },
        connect_timeout: 300,
      },
    },
  });
  const children = () => processesWithEnv("AGENT_TEST_MARKER", marker);
  const cases = [
    { args: ["run", "hello"], signal: "SIGTERM", how: "SIGTERM", code: 1 },
    { args: ["run", "hello"], signal: "SIGINT", how: "Ctrl-C", code: 1 },
    { args: ["chat"], signal: "SIGTERM", how: "SIGTERM", code: 0 },
    { args: ["chat"], signal: "SIGINT", how: "Ctrl-C", code: 0 },
    { args: ["chat"], signal: "SIGHUP", how: "SIGHUP", code: 0 },
  ] as const;
  for (const { args, signal, how, code } of cases) {
    await t.step(`${args[0]}, ${signal}`, async () => {
      await using agent = new Agent(home.home, [...args]);
      const deadline = Date.now() + WAIT_MS;
      while (children().length === 0) {
        if (Date.now() > deadline) throw new Error(`the server never started: ${agent.stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      agent.kill(signal);
      assert.equal(await agent.exit(), code, agent.stderr);
      assert.match(
        agent.stderr,
        new RegExp(`^agent: stopped by ${how} while connecting to the MCP servers$`, "m"),
      );
      assert.deepEqual(children(), [], "the server's process is gone with the agent");
    });
  }
  assert.equal(model.requests.length, 0, "no model call was made");
});

Deno.test("run: a write tool of an untrusted server is blocked without a terminal unless approvals.gateway allows", async (t) => {
  await using home = await tempHome();
  await using model = await fakeModel({
    fallback: callThenAnswer("mcp__notes__write_note", { text: "remember" }),
  });
  const servers = { notes: fixture("echo,write_note", { trust: "untrusted" }) };

  await t.step("default policy (deny): the call is not made", async () => {
    configure(home.home, { baseUrl: model.baseUrl, servers });
    const result = await agentRun(home.home, ["note it", "--json"], { stdin: "y\ny\n" });
    expectCode(result, 0);
    const [call] = result.json!.tool_calls as Array<Record<string, unknown>>;
    assert.equal(call.name, "mcp__notes__write_note");
    assert.equal(call.server, "notes");
    assert.equal(call.outcome, "blocked");
    assert.equal(call.approval, "denied");
    assert.match(String(result.json!.answer), /was not made/);
    assert.ok(!String(result.json!.answer).includes("saved: remember"));
  });

  await t.step("approvals.gateway: allow: the call runs", async () => {
    configure(home.home, {
      baseUrl: model.baseUrl,
      servers,
      extra: { approvals: { gateway: "allow" } },
    });
    const result = await agentRun(home.home, ["note it", "--json"], { stdin: "note it" });
    expectCode(result, 0);
    const [call] = result.json!.tool_calls as Array<Record<string, unknown>>;
    assert.equal(call.outcome, "success");
    assert.equal(call.approval, "approved");
    assert.equal(result.json!.answer, "Result: saved: remember");
  });
});

Deno.test("run with usage metrics on: preview shows the run's counters; export validates", async () => {
  await using home = await tempHome();
  await using model = await fakeModel({
    fallback: callThenAnswer("mcp__fx__echo", { message: "metrics" }),
  });
  configure(home.home, {
    baseUrl: model.baseUrl,
    servers: { fx: fixture("echo") },
    extra: { telemetry: { shared_metrics: { enabled: true } } },
  });
  const run = await agentRun(home.home, ["count me", "--json"]);
  expectCode(run, 0);
  assert.equal(run.json!.answer, "Result: Echo: metrics");
  const second = await agentRun(home.home, ["count me too"]);
  expectCode(second, 0);

  const preview = await spawnCli(home.home, ["metrics", "preview", "--json"]);
  expectCode(preview, 0);
  const { packages } = parseOneJson(preview.stdout) as { packages: MetricsPackage[] };
  assert.ok(packages.length >= 1);
  const cli = { entrypoint: "interactive", execution_surface: "cli" };
  assert.equal(counter(packages, "agent.task_run.started", cli), 2);
  assert.equal(counter(packages, "agent.task_run.started"), 2);
  assert.equal(
    counter(packages, "agent.task_run.finished", { ...cli, end_reason: "completed" }),
    2,
  );
  assert.equal(counter(packages, "agent.model_call.count", { outcome: "success" }), 4);
  assert.equal(
    counter(packages, "agent.model_route.count", { model: "test-model", provider: "custom" }),
    4,
  );
  assert.equal(
    counter(packages, "agent.tool_call.count", {
      outcome: "success",
      approval_outcome: "not_required",
      tool_category: "mcp",
    }),
    2,
  );
  // Latched once per UTC day.
  assert.ok(counter(packages, "agent.client.active") >= 1);

  const exported = await spawnCli(home.home, ["metrics", "export", "--json"]);
  expectCode(exported, 0);
  const entries = (parseOneJson(exported.stdout) as { packages: { path: string }[] }).packages;
  assert.ok(entries.length >= 1);
  const validated = await spawnCli(home.home, [
    "metrics",
    "validate",
    ...entries.map((e) => e.path),
  ]);
  expectCode(validated, 0);
  assert.match(validated.stdout, /valid agent\.shared_metrics\.v2 package/);
  assert.doesNotMatch(validated.stdout, /invalid/);
});

// ---------------------------------------------------------------------------------------------
// agent chat

Deno.test("chat: banner, answers with history, /tools, /help, unknown commands, /new, /exit", async () => {
  await using home = await tempHome();
  await using model = await fakeModel({ fallback: echoPrompt });
  configure(home.home, { baseUrl: model.baseUrl, servers: { fx: fixture("echo,add") } });
  await using agent = new Agent(home.home, ["chat"]);

  await agent.expectOut(/^agent chat: test-model via custom, 2 tools\. .*\/help.*\n/);
  await agent.send("hello");
  await agent.expectOut(/^agent> reply to hello\n/m);
  await agent.send("and again");
  await agent.expectOut(/^agent> reply to and again\n/m);
  assert.equal(model.requests.length, 2);
  assert.deepEqual(roles(model.requests[1]), ["system", "user", "assistant", "user"]);
  assert.deepEqual(
    model.requests[1].messages.slice(1).map((message) => message.content),
    ["hello", "reply to hello", "and again"],
  );
  assert.deepEqual(toolNames(model.requests[1]), ["mcp__fx__echo", "mcp__fx__add"]);

  await agent.send("/tools");
  await agent.expectOut(/^mcp__fx__echo \(read-only\)\nmcp__fx__add \(read-only\)\n/m);
  await agent.send("/help");
  const help = await agent.expectOut(/^\/reload-mcp[\s\S]*?\/exit .*\n/m);
  for (const command of ["/reload-mcp", "/tools", "/new", "/exit"]) {
    assert.ok(help[0].includes(command), help[0]);
  }
  await agent.send("/x");
  await agent.expectOut(/^Unknown command \/x\. Type \/help/m);

  // Blank lines are ignored, not sent.
  await agent.send("");
  await agent.send("/new");
  await agent.expectOut(/^Conversation cleared\.\n/m);
  await agent.send("fresh start");
  await agent.expectOut(/^agent> reply to fresh start\n/m);
  assert.equal(model.requests.length, 3);
  assert.deepEqual(roles(model.requests[2]), ["system", "user"]);

  await agent.send("/exit");
  assert.equal(await agent.exit(), 0, agent.stderr);
  assert.equal(agent.pendingOut(), "");
  assert.equal(model.requests.length, 3);
  // Lines piped in are not typed at a terminal: nothing is kept for recall.
  assert.equal(existsSync(join(home.home, "chat_history")), false);
});

Deno.test("chat: /help lists every command, /quit leaves as /exit does, --help lists the same", async () => {
  await using home = await tempHome();
  await using model = await fakeModel({ fallback: echoPrompt });
  configure(home.home, { baseUrl: model.baseUrl });
  const commands = [
    "/reload-mcp  re-read mcp_servers from config.yaml and reconnect what changed",
    "/tools       list the tools the agent can call",
    "/new         forget the conversation so far",
    "/help        list these commands",
    "/exit        leave the session (or /quit, or Ctrl-D on an empty line)",
  ];
  const result = await cli(home.home, ["chat"], { stdin: "/help\n/quit\nnot sent\n" });
  expectCode(result, 0);
  assert.equal(
    result.stdout.replace(/^agent chat: .*\n/, ""),
    commands.map((line) => `${line}\n`).join("") +
      "Ctrl-C cancels a run or a reload and keeps the session.\n" +
      "Editing keys, history and signals: agent chat --help\n",
  );
  assert.equal(model.requests.length, 0, "/quit ended the session");

  const help = await cli(home.home, ["chat", "--help"]);
  expectCode(help, 0);
  assert.ok(
    help.stdout.includes(
      `Commands inside the session:\n${commands.map((line) => `  ${line}\n`).join("")}`,
    ),
    help.stdout,
  );
});

Deno.test("chat: a message starting with a path goes to the model; /name is still a command", async () => {
  await using home = await tempHome();
  await using model = await fakeModel({ fallback: echoPrompt });
  configure(home.home, { baseUrl: model.baseUrl });
  const result = await cli(home.home, ["chat"], {
    stdin: "/etc/hosts: what is this file for?\n/x y/z\n/tools\n",
  });
  expectCode(result, 0);
  assert.match(result.stdout, /^agent> reply to \/etc\/hosts: what is this file for\?\n/m);
  assert.match(result.stdout, /^Unknown command \/x\. /m);
  assert.match(result.stdout, /^No tools: no MCP server is connected\.\n/m);
  assert.deepEqual(model.requests.map(lastUser), ["/etc/hosts: what is this file for?"]);
});

Deno.test("chat: tool calls show progress on stderr and the answer on stdout", async () => {
  await using home = await tempHome();
  await using model = await fakeModel({
    fallback: callThenAnswer("mcp__fx__echo", { message: "from chat" }),
  });
  configure(home.home, { baseUrl: model.baseUrl, servers: { fx: fixture("echo") } });
  await using agent = new Agent(home.home, ["chat"]);
  await agent.expectOut(/^agent chat: test-model via custom, 1 tool\. /);
  await agent.send("use the tool");
  await agent.expectOut(/^agent> Result: Echo: from chat\n/m);
  await agent.expectErr(/→ mcp__fx__echo \{"message":"from chat"\}\n/);
  await agent.expectErr(/← mcp__fx__echo: success \(\d+ ms\)\n/);
  // End of input (Ctrl-D) ends the session.
  await agent.closeStdin();
  assert.equal(await agent.exit(), 0, agent.stderr);
});

Deno.test("chat: /reload-mcp applies config.yaml changes; a broken file keeps the session", async () => {
  await using home = await tempHome();
  await using model = await fakeModel({ fallback: echoPrompt });
  configure(home.home, { baseUrl: model.baseUrl, servers: { alpha: fixture("echo") } });
  await using agent = new Agent(home.home, ["chat"]);
  await agent.expectOut(/^agent chat: test-model via custom, 1 tool\. /);

  // alpha removed, beta added.
  configure(home.home, { baseUrl: model.baseUrl, servers: { beta: fixture("add") } });
  await agent.send("/reload-mcp");
  await agent.expectOut(/^Reloading MCP servers …\n/m);
  await agent.expectOut(/^added: beta\nremoved: alpha\nreconnected: none\ntools: 1\n/m);
  await agent.send("what can you do");
  await agent.expectOut(/^agent> reply to what can you do\n/m);
  assert.deepEqual(toolNames(model.requests.at(-1)!), ["mcp__beta__add"]);

  // beta's entry changed: it reconnects with its new tools.
  configure(home.home, { baseUrl: model.baseUrl, servers: { beta: fixture("add,echo") } });
  await agent.send("/reload-mcp");
  await agent.expectOut(/^added: none\nremoved: none\nreconnected: beta\ntools: 2\n/m);
  await agent.send("/tools");
  await agent.expectOut(/^mcp__beta__add \(read-only\)\nmcp__beta__echo \(read-only\)\n/m);

  // Unchanged: nothing happens.
  await agent.send("/reload-mcp");
  await agent.expectOut(/^added: none\nremoved: none\nreconnected: none\ntools: 2\n/m);

  // A broken config.yaml: the reload fails, the servers and the session stay.
  Deno.writeTextFileSync(home.config, "model: [unclosed\nmcp_servers: {\n");
  await agent.send("/reload-mcp");
  await agent.expectErr(/^reload failed: /m);
  await agent.send("still there?");
  await agent.expectOut(/^agent> reply to still there\?\n/m);
  assert.deepEqual(toolNames(model.requests.at(-1)!).sort(), ["mcp__beta__add", "mcp__beta__echo"]);

  await agent.send("/exit");
  assert.equal(await agent.exit(), 0, agent.stderr);
});

Deno.test("chat: Ctrl-C cancels the running turn and the session goes on", async () => {
  await using home = await tempHome();
  // The first request is held (the model "thinks" until cancelled); the others are answered.
  await using model = await fakeModel({
    fallback: (request) =>
      lastUser(request) === "fail please"
        ? { status: 400, body: { error: { message: "scripted refusal" } } }
        : { content: `reply to ${lastUser(request)}` },
  }, (index) => index === 0);
  configure(home.home, { baseUrl: model.baseUrl });
  await using agent = new Agent(home.home, ["chat"]);
  await agent.expectOut(/^agent chat: test-model via custom, 0 tools\. /);

  await agent.send("think forever");
  await model.waitForRequests(1);
  const interrupted = performance.now();
  agent.kill("SIGINT");
  await agent.expectErr(/\^C: cancelling the run/);
  await agent.expectErr(/^\[cancelled/m);
  assert.ok(performance.now() - interrupted < 5_000);
  assert.equal(agent.exitCode, undefined, "the session is still running");

  await agent.send("are you back");
  await agent.expectOut(/^agent> reply to are you back\n/m);
  assert.equal(lastUser(model.requests.at(-1)!), "are you back");

  // A turn that fails is reported, and the session goes on too.
  await agent.send("fail please");
  await agent.expectErr(
    /^\[the run failed: the model endpoint rejected the request \(HTTP 400: scripted refusal\)\]$/m,
  );
  await agent.send("once more");
  await agent.expectOut(/^agent> reply to once more\n/m);

  // Ctrl-C with no run under way only says how to leave.
  agent.kill("SIGINT");
  await agent.expectErr(/type \/exit or press Ctrl-D to leave/);
  await agent.send("/exit");
  assert.equal(await agent.exit(), 0, agent.stderr);
});

Deno.test("chat: SIGTERM stops the running turn as system_aborted and ends the session (exit 0)", async (t) => {
  await using home = await tempHome();
  // The first request is held (the model "thinks" until stopped); the others are answered.
  await using model = await fakeModel({ fallback: echoPrompt }, (index) => index === 0);
  configure(home.home, { baseUrl: model.baseUrl });

  await t.step("during a turn", async () => {
    await using agent = new Agent(home.home, ["chat"]);
    await agent.expectOut(/^agent chat: test-model via custom, 0 tools\. .*\n/);
    await agent.send("think forever");
    await model.waitForRequests(1);
    agent.kill("SIGTERM");
    await agent.expectErr(/SIGTERM: ending the session/);
    await agent.expectErr(/^\[stopped: the process received SIGTERM\]$/m);
    assert.equal(await agent.exit(), 0, agent.stderr);
    assert.equal(agent.pendingOut(), "");
  });

  await t.step("waiting for input", async () => {
    await using agent = new Agent(home.home, ["chat"]);
    await agent.expectOut(/^agent chat: test-model via custom, 0 tools\. /);
    await agent.send("hello");
    await agent.expectOut(/^agent> reply to hello\n/m);
    agent.kill("SIGTERM");
    await agent.expectErr(/SIGTERM: ending the session/);
    assert.equal(await agent.exit(), 0, agent.stderr);
  });
});

Deno.test("chat: without a model configured: exit 2", async () => {
  await using home = await tempHome();
  configure(home.home, { baseUrl: null });
  const result = await spawnCli(home.home, ["chat"], { stdin: "hello\n" });
  expectCode(result, 2);
  assert.match(result.stderr, /model\.default/);
  assert.ok(result.stderr.includes(home.config), result.stderr);
  assert.equal(result.stdout, "");
});
