/**
 * McpManager lifecycle against real servers: the fixture server (`server.ts`) over stdio and
 * HTTP, the broken stdio fixtures, and `@modelcontextprotocol/server-everything` over stdio.
 * Events (`onEvent`) are observed instead of sleeping; where waiting is unavoidable, conditions
 * are polled against a deadline. Every test shuts its manager down and checks that no child
 * process it saw is left running.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { CallToolResult } from "@modelcontextprotocol/client";
import type { McpServerConfig } from "../../src/mcp/config.ts";
import { McpServerError } from "../../src/mcp/errors.ts";
import {
  type McpEvent,
  McpManager,
  type McpManagerOptions,
  type ServerState,
} from "../../src/mcp/manager.ts";
import { StderrLog } from "../../src/mcp/stderr_log.ts";
import {
  GARBAGE_STDIO_FIXTURE,
  SILENT_STDIO_FIXTURE,
  startHttpFixture,
  stdioCommand,
} from "../fixtures/mcp/spawn.ts";
import { isAlive, serverEntry, serversFromYaml } from "./_helpers.ts";
import { processesWithEnv } from "../cli/_helpers.ts";

const REPO_CONFIG = new URL("../../deno.json", import.meta.url).pathname;
/** Set in every stdio child's `env`, so leftover processes of this file can be found in /proc. */
const MARKER_NAME = "AGENT_MANAGER_TEST_RUN";
const MARKER = crypto.randomUUID();

// ---------------------------------------------------------------------------------------------
// Helpers

type SeenEvent = McpEvent & { at: number };

/** A manager that records its events, stderr and every child pid it reported. */
class Harness implements AsyncDisposable {
  readonly manager: McpManager;
  readonly events: SeenEvent[] = [];
  readonly stderr: { server: string; text: string }[] = [];
  /** Every stdio pid seen, so the disposal can prove none survived. */
  readonly pids = new Set<number>();

  constructor(options: McpManagerOptions = {}) {
    this.manager = new McpManager({
      ...options,
      onEvent: (event) => {
        this.events.push({ ...event, at: performance.now() });
        if (event.type === "connected") this.snapshot();
        options.onEvent?.(event);
      },
      onStderr: (server, text) => {
        this.stderr.push({ server, text });
        options.onStderr?.(server, text);
      },
    });
  }

  /** The servers now; their pids are remembered. */
  snapshot(): ServerState[] {
    const states = this.manager.servers();
    for (const state of states) if (state.pid !== undefined) this.pids.add(state.pid);
    return states;
  }

  state(name: string): ServerState {
    const state = this.snapshot().find((one) => one.name === name);
    assert.ok(state, `no server '${name}' in ${JSON.stringify(this.manager.servers())}`);
    return state;
  }

  pid(name: string): number {
    const pid = this.state(name).pid;
    assert.ok(
      pid !== undefined,
      `server '${name}' has no pid: ${JSON.stringify(this.state(name))}`,
    );
    return pid;
  }

  toolNames(server?: string): string[] {
    return this.manager.tools()
      .filter((tool) => server === undefined || tool.server === server)
      .map((tool) => tool.name)
      .sort();
  }

  eventsOf(server: string, type?: McpEvent["type"]): SeenEvent[] {
    return this.events.filter((event) =>
      event.server === server && (type === undefined || event.type === type)
    );
  }

  /** Waits for an event (recorded at or after index `since`) matching `predicate`. */
  async waitForEvent(
    predicate: (event: SeenEvent) => boolean,
    timeoutMs: number,
    what: string,
    since = 0,
  ): Promise<SeenEvent> {
    let found: SeenEvent | undefined;
    await until(
      () => {
        found = this.events.slice(since).find(predicate);
        return found !== undefined;
      },
      timeoutMs,
      `${what}; events: ${JSON.stringify(this.events)}`,
    );
    return found!;
  }

  stderrOf(server: string): string {
    return this.stderr.filter((one) => one.server === server).map((one) => one.text).join("");
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.snapshot();
    await this.manager.shutdown();
    await until(
      () => [...this.pids].every((pid) => !isAlive(pid)),
      3_000,
      `child processes still running after shutdown: ${
        [...this.pids].filter((pid) => isAlive(pid)).join(", ")
      }`,
    );
  }
}

/** Polls `condition` every 20 ms until it holds; fails with `what` after `timeoutMs`. */
async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A stdio entry running the fixture server with `args`, plus any other entry fields. */
function fixture(
  name: string,
  args: string[],
  fields: Record<string, unknown> = {},
): McpServerConfig {
  return serverEntry(name, {
    ...stdioCommand(args),
    env: { [MARKER_NAME]: MARKER },
    ...fields,
  });
}

/** `@modelcontextprotocol/server-everything` over stdio. */
function everything(name: string, fields: Record<string, unknown> = {}): McpServerConfig {
  return serverEntry(name, {
    command: Deno.execPath(),
    args: [
      "run",
      "-A",
      "--quiet",
      "--config",
      REPO_CONFIG,
      "npm:@modelcontextprotocol/server-everything@2026.8.31",
      "stdio",
    ],
    ...fields,
  });
}

/** A port nothing listens on (bound by the OS, then released). */
function deadPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** Pids of running processes whose environment carries this file's marker (Linux /proc). */
function markedProcesses(marker: string = MARKER): number[] {
  return processesWithEnv(MARKER_NAME, marker);
}

function textOf(result: CallToolResult): string {
  return result.content.map((item) => item.type === "text" ? item.text : `[${item.type}]`).join(
    "\n",
  );
}

/** Asserts that `promise` rejects with an McpServerError of `kind` for `server`. */
async function rejectsWith(
  promise: Promise<unknown>,
  server: string,
  kind: McpServerError["kind"],
  message: RegExp,
): Promise<McpServerError> {
  let caught: unknown;
  await assert.rejects(promise, (error: unknown) => {
    caught = error;
    return true;
  });
  assert.ok(caught instanceof McpServerError, `expected McpServerError, got ${caught}`);
  assert.equal(caught.server, server, caught.message);
  assert.equal(caught.kind, kind, caught.message);
  assert.match(caught.message, new RegExp(`^MCP server '${server}': `));
  assert.match(caught.message, message);
  return caught;
}

// ---------------------------------------------------------------------------------------------
// Start

Deno.test("start connects servers in parallel and skips a disabled server entirely", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcp-manager-disabled-" });
  try {
    const marker = join(dir, "spawned");
    const names = ["p1", "p2", "p3", "p4"];
    await using h = new Harness({ reconnect: false });
    const started = performance.now();
    await h.manager.start([
      ...names.map((name) => fixture(name, ["--tools", "echo"])),
      // Would leave a file behind if it were ever spawned.
      serverEntry("off", {
        command: Deno.execPath(),
        args: ["eval", `Deno.writeTextFileSync(${JSON.stringify(marker)}, "x")`],
        enabled: false,
      }),
    ]);
    const elapsed = performance.now() - started;

    const connected = h.events.filter((event) => event.type === "connected");
    assert.deepEqual(connected.map((event) => event.server).sort(), names);
    // Each connect window is [end - ms, end]; serial connects could not all overlap.
    const windows = connected.map((event) => ({
      start: event.at - (event as { ms: number }).ms,
      end: event.at,
    }));
    const latestStart = Math.max(...windows.map((w) => w.start));
    const earliestEnd = Math.min(...windows.map((w) => w.end));
    assert.ok(
      latestStart < earliestEnd,
      `connect windows do not overlap: ${JSON.stringify(windows)}`,
    );
    const sum = connected.reduce((total, event) => total + (event as { ms: number }).ms, 0);
    assert.ok(elapsed < sum, `start took ${elapsed} ms, the connects summed ${sum} ms`);

    for (const name of names) {
      const state = h.state(name);
      assert.equal(state.status, "connected");
      assert.equal(state.toolCount, 1);
      assert.ok(state.pid !== undefined && isAlive(state.pid));
    }
    const off = h.state("off");
    assert.equal(off.status, "disabled");
    assert.equal(off.pid, undefined);
    assert.equal(off.toolCount, 0);
    assert.equal(off.error, undefined);
    assert.deepEqual(h.toolNames("off"), []);
    assert.deepEqual(h.eventsOf("off"), []);
    assert.deepEqual(h.manager.servers().map((state) => state.name), [...names, "off"]);
    // The other servers took far longer to start than `deno eval` needs to write a file.
    await assert.rejects(Deno.stat(marker), Deno.errors.NotFound);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// ---------------------------------------------------------------------------------------------
// Tool registry

Deno.test("tool registry: generated names, filters on original names, utility tools, readOnly", async () => {
  await using h = new Harness({ reconnect: false });
  await h.manager.start([
    fixture("my-api", ["--resources", "--prompts"]),
    fixture("inc", [], { tools: { include: ["echo", "list-*"] } }),
    fixture("exc", [], { tools: { exclude: ["crash", "h?ng", "write_*"] } }),
    fixture("both", [], { tools: { include: ["add"], exclude: ["add"] } }),
    fixture("sanitized", [], { tools: { include: ["list_items_v2"] } }),
    fixture("none", [], { tools: { include: [] } }),
    fixture("switched-off", ["--resources", "--prompts", "--tools", "echo"], {
      tools: { resources: false, prompts: "no" },
    }),
    fixture("not-advertised", ["--tools", "echo"], { tools: { resources: true, prompts: true } }),
    fixture("resources-only", ["--resources", "--tools", "echo"]),
  ]);
  for (const state of h.snapshot()) assert.equal(state.status, "connected", state.name);

  assert.deepEqual(h.toolNames("my-api"), [
    "mcp__my_api__add",
    "mcp__my_api__crash",
    "mcp__my_api__echo",
    "mcp__my_api__get_prompt",
    "mcp__my_api__hang",
    "mcp__my_api__list_items_v2",
    "mcp__my_api__list_prompts",
    "mcp__my_api__list_resources",
    "mcp__my_api__read_resource",
    "mcp__my_api__rendezvous",
    "mcp__my_api__slow",
    "mcp__my_api__write_note",
  ]);
  const byName = new Map(h.manager.tools().map((tool) => [tool.name, tool]));
  const items = byName.get("mcp__my_api__list_items_v2")!;
  assert.equal(items.originalName, "list-items.v2");
  assert.equal(items.server, "my-api");
  assert.equal(items.kind, "tool");
  assert.equal(items.description, "A tool whose name has a dash and a dot");
  // readOnly comes from the server's readOnlyHint, and only from it.
  const readOnly = Object.fromEntries(
    h.manager.tools().filter((tool) => tool.server === "my-api").map((tool) => [
      tool.originalName,
      tool.readOnly,
    ]),
  );
  assert.deepEqual(readOnly, {
    echo: true,
    add: true,
    slow: true,
    write_note: false,
    crash: false,
    hang: false,
    "list-items.v2": true,
    rendezvous: false,
    list_resources: true,
    read_resource: true,
    list_prompts: true,
    get_prompt: true,
  });
  assert.equal(byName.get("mcp__my_api__get_prompt")!.kind, "utility");
  assert.deepEqual(byName.get("mcp__my_api__echo")!.inputSchema.required, ["message"]);

  assert.deepEqual(h.toolNames("inc"), ["mcp__inc__echo", "mcp__inc__list_items_v2"]);
  assert.deepEqual(h.toolNames("exc"), [
    "mcp__exc__add",
    "mcp__exc__echo",
    "mcp__exc__list_items_v2",
    "mcp__exc__rendezvous",
    "mcp__exc__slow",
  ]);
  assert.deepEqual(h.toolNames("both"), ["mcp__both__add"], "include wins over exclude");
  // Filters see original names: the sanitised spelling matches nothing, so: no toolset.
  for (const name of ["sanitized", "none"]) {
    const state = h.state(name);
    assert.equal(state.status, "connected", `${name} is connected without tools`);
    assert.equal(state.toolCount, 0);
    assert.deepEqual(h.toolNames(name), []);
    assert.ok(!h.manager.tools().some((tool) => tool.name.startsWith(`mcp__${name}__`)));
    assert.equal((h.eventsOf(name, "connected")[0] as { tools: number }).tools, 0);
  }
  assert.deepEqual(h.toolNames("switched-off"), ["mcp__switched_off__echo"]);
  assert.deepEqual(h.toolNames("not-advertised"), ["mcp__not_advertised__echo"]);
  assert.deepEqual(h.toolNames("resources-only"), [
    "mcp__resources_only__echo",
    "mcp__resources_only__list_resources",
    "mcp__resources_only__read_resource",
  ]);
  for (const state of h.snapshot()) {
    assert.equal(state.toolCount, h.toolNames(state.name).length, state.name);
    assert.equal(
      (h.eventsOf(state.name, "connected")[0] as { tools: number }).tools,
      state.toolCount,
    );
  }
});

Deno.test({
  name: "tool registry: two servers whose names sanitise alike do not register one name twice",
  fn: async () => {
    await using h = new Harness({ reconnect: false });
    await h.manager.start([
      fixture("a-b", ["--tools", "echo"]),
      fixture("a_b", ["--tools", "echo"]),
    ]);
    const names = h.manager.tools().map((tool) => tool.name);
    assert.deepEqual(names, [...new Set(names)], `duplicate tool names: ${names}`);
    assert.ok(
      h.events.some((e) => e.type === "warning" && e.message.includes("mcp__a_b__echo")),
      "a warning names the collision",
    );
  },
});

// ---------------------------------------------------------------------------------------------
// Calls

Deno.test("callTool: content, utility tools, unknown names, tool-level errors", async () => {
  await using h = new Harness({ reconnect: false });
  await h.manager.start([
    fixture("notes", ["--resources", "--prompts", "--tools", "echo,add,write_note"]),
  ]);

  const echo = await h.manager.callTool("mcp__notes__echo", { message: "hi" });
  assert.deepEqual(echo.content, [{ type: "text", text: "Echo: hi" }]);
  assert.notEqual(echo.isError, true);
  assert.equal(
    textOf(await h.manager.callTool("mcp__notes__add", { a: 2, b: 40 })),
    "42",
  );

  const resources = JSON.parse(textOf(await h.manager.callTool("mcp__notes__list_resources")));
  assert.deepEqual(
    resources.map((resource: { uri: string; name: string }) => [resource.uri, resource.name]),
    [["note://hello", "hello"]],
  );
  const read = await h.manager.callTool("mcp__notes__read_resource", { uri: "note://hello" });
  assert.deepEqual(read.content, [{ type: "text", text: "hello" }]);
  const prompts = JSON.parse(textOf(await h.manager.callTool("mcp__notes__list_prompts")));
  assert.deepEqual(prompts.map((prompt: { name: string }) => prompt.name), ["greet"]);
  const prompt = JSON.parse(
    textOf(
      await h.manager.callTool("mcp__notes__get_prompt", {
        name: "greet",
        arguments: { name: "Ada" },
      }),
    ),
  );
  assert.deepEqual(prompt.messages, [
    { role: "user", content: { type: "text", text: "Hello, Ada!" } },
  ]);

  // Errors the model should see as results, not exceptions.
  const missingUri = await h.manager.callTool("mcp__notes__read_resource", {});
  assert.equal(missingUri.isError, true);
  assert.match(textOf(missingUri), /uri/);
  const badArgs = await h.manager.callTool("mcp__notes__add", { a: "two" });
  assert.equal(badArgs.isError, true, JSON.stringify(badArgs));

  // A prompt the server does not have: the server answers with a JSON-RPC error.
  await rejectsWith(
    h.manager.callTool("mcp__notes__get_prompt", { name: "nope" }),
    "notes",
    "tool",
    /get_prompt/,
  );

  for (const name of ["mcp__notes__nope", "mcp__other__echo", "echo"]) {
    await assert.rejects(
      h.manager.callTool(name, {}),
      (error: unknown) => {
        assert.ok(error instanceof Error);
        assert.equal(error.message, `no MCP tool named '${name}' is registered`);
        return true;
      },
    );
  }
  // Nothing of the above disturbed the server.
  assert.equal(h.state("notes").status, "connected");
  assert.equal(textOf(await h.manager.callTool("mcp__notes__echo", { message: "ok" })), "Echo: ok");
});

Deno.test("an aborted call rejects at once, naming server and tool; the server stays usable", async () => {
  await using h = new Harness({ reconnect: false });
  await h.manager.start([fixture("abortable", ["--tools", "slow,echo"])]);
  const pid = h.pid("abortable");
  const controller = new AbortController();
  const started = performance.now();
  const call = h.manager.callTool("mcp__abortable__slow", { ms: 5_000 }, {
    signal: controller.signal,
  });
  await delay(200); // the request is with the server now
  controller.abort(new Error("user pressed stop"));
  let caught: unknown;
  await assert.rejects(call, (error: unknown) => {
    caught = error;
    return true;
  });
  assert.ok(caught instanceof McpServerError, String(caught));
  assert.equal(caught.server, "abortable");
  assert.match(caught.message, /^MCP server 'abortable': tool 'slow' /);
  assert.ok(performance.now() - started < 2_000, "the abort did not wait for the tool");
  // The (read-only) call was not retried after the abort: the server is free at once.
  const echoStarted = performance.now();
  assert.equal(
    textOf(await h.manager.callTool("mcp__abortable__echo", { message: "after" })),
    "Echo: after",
  );
  assert.ok(performance.now() - echoStarted < 1_000);
  assert.equal(h.pid("abortable"), pid);
  assert.equal(h.state("abortable").status, "connected");
});

Deno.test({
  name: "an aborted call is reported as cancelled, not as a timeout",
  fn: async () => {
    await using h = new Harness({ reconnect: false });
    await h.manager.start([fixture("abortable", ["--tools", "slow"])]);
    const controller = new AbortController();
    const call = h.manager.callTool("mcp__abortable__slow", { ms: 5_000 }, {
      signal: controller.signal,
    });
    await delay(200);
    controller.abort(new Error("user pressed stop"));
    await rejectsWith(call, "abortable", "closed", /tool 'slow' was cancelled/);
    await rejectsWith(
      h.manager.callTool("mcp__abortable__slow", { ms: 5_000 }, { signal: AbortSignal.abort() }),
      "abortable",
      "closed",
      /tool 'slow' was cancelled/,
    );
  },
});

Deno.test("timeout: a hung tool fails as a timeout naming server and tool; the server keeps working", async () => {
  await using h = new Harness({ reconnect: false });
  await h.manager.start([fixture("hanger", ["--tools", "hang,echo"], { timeout: 1 })]);
  const pid = h.pid("hanger");

  const started = performance.now();
  await rejectsWith(
    h.manager.callTool("mcp__hanger__hang"),
    "hanger",
    "timeout",
    /tool 'hang' did not answer within timeout \(1 s\)/,
  );
  const elapsed = performance.now() - started;
  assert.ok(elapsed >= 900 && elapsed < 3_000, `timed out after ${elapsed} ms`);

  // The next call on the same (serialised) server runs at once, on the same process.
  assert.equal(
    textOf(await h.manager.callTool("mcp__hanger__echo", { message: "still here" })),
    "Echo: still here",
  );
  assert.equal(h.state("hanger").status, "connected");
  assert.equal(h.pid("hanger"), pid);
  assert.deepEqual(h.eventsOf("hanger", "lost"), []);
});

Deno.test("supports_parallel_tool_calls: false runs a server's calls one at a time, true concurrently", async () => {
  await using h = new Harness({ reconnect: false });
  await h.manager.start([
    fixture("serial", ["--tools", "slow,echo"]),
    fixture("parallel", ["--tools", "slow,echo"], { supports_parallel_tool_calls: true }),
  ]);
  const ms = 600;
  const timeTwo = async (server: string) => {
    const started = performance.now();
    const results = await Promise.all([
      h.manager.callTool(`mcp__${server}__slow`, { ms }),
      h.manager.callTool(`mcp__${server}__slow`, { ms }),
    ]);
    for (const result of results) assert.equal(textOf(result), "done");
    return performance.now() - started;
  };
  const serial = await timeTwo("serial");
  assert.ok(serial >= 2 * ms - 50, `serial calls took ${serial} ms`);
  const parallel = await timeTwo("parallel");
  assert.ok(parallel < 2 * ms - 200, `parallel calls took ${parallel} ms`);

  // Serialisation is per server: the two servers' calls still overlap each other.
  const started = performance.now();
  await Promise.all([
    h.manager.callTool("mcp__serial__slow", { ms }),
    h.manager.callTool("mcp__parallel__slow", { ms }),
  ]);
  const mixed = performance.now() - started;
  assert.ok(mixed < 2 * ms - 200, `calls on two servers took ${mixed} ms`);
});

// ---------------------------------------------------------------------------------------------
// Dropped connections

Deno.test("a server dying mid-call: the write-capable call is not retried, the server comes back, others keep working", async () => {
  await using h = new Harness({ reconnect: true, random: () => 0.5 });
  await h.manager.start([
    fixture("crashy", ["--tools", "crash,echo"]),
    fixture("steady", ["--tools", "echo"]),
  ]);
  const crashyPid = h.pid("crashy");
  const steadyPid = h.pid("steady");
  const since = h.events.length;

  await rejectsWith(
    h.manager.callTool("mcp__crashy__crash"),
    "crashy",
    "closed",
    /the connection was lost during tool 'crash'.*not retried because the tool may have side effects/,
  );
  assert.equal(textOf(await h.manager.callTool("mcp__steady__echo", { message: "a" })), "Echo: a");

  await h.waitForEvent((e) => e.server === "crashy" && e.type === "lost", 3_000, "lost", since);
  const back = await h.waitForEvent(
    (e) => e.server === "crashy" && e.type === "connected",
    6_000,
    "crashy reconnected",
    since,
  );
  const lost = h.eventsOf("crashy", "lost")[0];
  // Backoff 1 s (jitter pinned to the middle) before the first reconnect.
  assert.ok(back.at - lost.at >= 900, `reconnected ${back.at - lost.at} ms after the loss`);
  assert.equal(h.state("crashy").status, "connected");
  const newPid = h.pid("crashy");
  assert.notEqual(newPid, crashyPid);
  assert.ok(!isAlive(crashyPid));
  assert.equal(textOf(await h.manager.callTool("mcp__crashy__echo", { message: "b" })), "Echo: b");

  // The crash ran once: a replay would have crashed the new process too.
  assert.equal(h.stderrOf("crashy").match(/crash tool called/g)?.length, 1);
  assert.equal(h.state("steady").status, "connected");
  assert.equal(h.pid("steady"), steadyPid);
  assert.deepEqual(h.eventsOf("steady", "lost"), []);
  assert.equal(textOf(await h.manager.callTool("mcp__steady__echo", { message: "c" })), "Echo: c");
});

/**
 * A Streamable HTTP proxy in front of `upstream` that resolves `callStarted` once the server has
 * begun answering a `tools/call` POST (its response headers arrived): the call is then with the
 * server, and killing the server interrupts that response stream.
 */
function callWatchingProxy(upstream: string) {
  let started: () => void = () => {};
  const callStarted = new Promise<void>((resolve) => started = resolve);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const body = req.method === "POST" ? await req.text() : undefined;
    const target = new URL(upstream);
    const url = new URL(req.url);
    target.search = url.search;
    try {
      const answer = await fetch(target, {
        method: req.method,
        headers: req.headers,
        body,
      });
      if (body?.includes('"tools/call"')) started();
      return new Response(answer.body, { status: answer.status, headers: answer.headers });
    } catch {
      return new Response("upstream gone", { status: 502 });
    }
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/mcp`,
    callStarted,
    close: () => server.shutdown(),
  };
}

// The 2025 era answers a call on an SSE stream opened at once (the 2026 era answers with JSON,
// whose loss is a failed fetch, reported at once already).
Deno.test("a Streamable HTTP server killed mid-call fails the call at once, not after its timeout", async () => {
  await using server = await startHttpFixture([
    "--transport",
    "http",
    "--era",
    "legacy",
    "--tools",
    "hang,echo",
  ]);
  const proxy = callWatchingProxy(server.url);
  try {
    await using h = new Harness({ reconnect: false });
    await h.manager.start([serverEntry("remote", { url: proxy.url, timeout: 20 })]);
    assert.equal(h.state("remote").status, "connected", JSON.stringify(h.state("remote")));

    const call = h.manager.callTool("mcp__remote__hang");
    call.catch(() => {});
    await proxy.callStarted;
    const killed = performance.now();
    server.process.kill("SIGKILL");
    await rejectsWith(
      call,
      "remote",
      "closed",
      /the connection was lost during tool 'hang'.*not retried because the tool may have side effects/,
    );
    const elapsed = performance.now() - killed;
    assert.ok(elapsed < 10_000, `the loss was noticed ${elapsed} ms after the kill (timeout 20 s)`);
    const lost = await h.waitForEvent(
      (e) => e.server === "remote" && e.type === "lost",
      3_000,
      "lost",
    );
    assert.match((lost as { reason: string }).reason, /response stream .* without answering/);
    assert.equal(h.state("remote").status, "failed");
  } finally {
    await proxy.close();
  }
});

Deno.test("a one-shot manager marks a crashed server failed; its tools then answer with a clear error", async () => {
  await using h = new Harness({ reconnect: false });
  await h.manager.start([fixture("crashy", ["--tools", "crash,echo"])]);
  await rejectsWith(h.manager.callTool("mcp__crashy__crash"), "crashy", "closed", /not retried/);
  await until(() => h.state("crashy").status === "failed", 3_000, "crashy failed");
  assert.deepEqual(h.toolNames("crashy"), [], "a failed server's tools are withdrawn");
  await rejectsWith(
    h.manager.callTool("mcp__crashy__echo", { message: "x" }),
    "crashy",
    "closed",
    /is failed/,
  );
  await delay(1_300); // longer than the first backoff: a one-shot manager never retries
  assert.deepEqual(h.eventsOf("crashy", "connected").length, 1);
  assert.equal(h.state("crashy").status, "failed");
});

Deno.test("read-only calls survive a dropped session: reconnect on demand, and one retry mid-call", async (t) => {
  await using h = new Harness({ reconnect: true, random: () => 0.5 });
  await h.manager.start([fixture("ro", ["--tools", "echo,slow,write_note"])]);

  await t.step("killed while idle: the next echo reconnects at once", async () => {
    const pid = h.pid("ro");
    const since = h.events.length;
    Deno.kill(pid, "SIGKILL");
    await h.waitForEvent((e) => e.server === "ro" && e.type === "lost", 3_000, "lost", since);
    assert.equal(h.state("ro").status, "reconnecting");
    const started = performance.now();
    const result = await h.manager.callTool("mcp__ro__echo", { message: "again" });
    assert.equal(textOf(result), "Echo: again");
    assert.ok(performance.now() - started < 5_000);
    // At once: the new connect began well before the background retry's 1 s backoff was over.
    const [lost] = h.eventsOf("ro", "lost").slice(-1);
    const [back] = h.eventsOf("ro", "connected").slice(-1) as (SeenEvent & { ms: number })[];
    const waited = back.at - back.ms - lost.at;
    assert.ok(waited < 800, `the reconnect began ${Math.round(waited)} ms after the loss`);
    const newPid = h.pid("ro");
    assert.notEqual(newPid, pid);
    assert.equal(h.state("ro").status, "connected");
    // The pending background retry was cancelled: no second connection replaces this one.
    await delay(1_500);
    assert.equal(h.pid("ro"), newPid);
    assert.equal(h.eventsOf("ro", "connected").length, 2);
  });

  await t.step(
    "killed during a read-only call: the call is retried once and succeeds",
    async () => {
      const pid = h.pid("ro");
      const call = h.manager.callTool("mcp__ro__slow", { ms: 1_000 });
      await delay(250); // the request is with the server now
      Deno.kill(pid, "SIGKILL");
      assert.equal(textOf(await call), "done");
      const newPid = h.pid("ro");
      assert.notEqual(newPid, pid);
      assert.ok(!isAlive(pid));
      assert.equal(h.state("ro").status, "connected");
      assert.equal(
        textOf(await h.manager.callTool("mcp__ro__write_note", { text: "n" })),
        "saved: n",
      );
    },
  );
});

/**
 * The sessionful fixture over Streamable HTTP with `tools`, how many sessions it started so far,
 * and `forget()`, which makes it end every session (HTTP 404 for their ids from then on).
 */
async function sessionfulServer(tools: string) {
  const server = await startHttpFixture([
    "--transport",
    "http",
    "--era",
    "legacy",
    "--tools",
    tools,
  ]);
  return Object.assign(server, {
    sessions: () => server.stderr().split("fixture: session started").length - 1,
    forget: async () => {
      const answer = await fetch(new URL("/forget-sessions", server.url), { method: "POST" });
      assert.equal(await answer.text(), "forgot 1");
    },
  });
}

Deno.test("a Streamable HTTP session the server ended (HTTP 404): a new session, the read-only call retried once, a write-capable one not", async () => {
  await using server = await sessionfulServer("echo,write_note");
  await using h = new Harness({ reconnect: true, random: () => 0.5 });
  await h.manager.start([serverEntry("remote", { url: server.url })]);
  assert.equal(server.sessions(), 1);

  await server.forget();
  let retries = 0;
  const result = await h.manager.callTool("mcp__remote__echo", { message: "again" }, {
    onRetry: () => retries++,
  });
  assert.equal(textOf(result), "Echo: again");
  assert.equal(retries, 1);
  assert.equal(server.sessions(), 2);
  assert.equal(h.state("remote").status, "connected");
  const lost = h.eventsOf("remote", "lost");
  assert.equal(lost.length, 1, JSON.stringify(h.events));
  assert.match(
    (lost[0] as { reason: string }).reason,
    /^the server ended the MCP session \(HTTP 404 for its session id\)$/,
  );

  await server.forget();
  await rejectsWith(
    h.manager.callTool("mcp__remote__write_note", { text: "n" }, { onRetry: () => retries++ }),
    "remote",
    "closed",
    /: the server ended the MCP session during tool 'write_note' \(HTTP 404 for its session id\); not retried because the tool may have side effects; the next call starts a new session$/,
  );
  assert.equal(retries, 1);
  assert.equal(
    textOf(await h.manager.callTool("mcp__remote__write_note", { text: "n" })),
    "saved: n",
  );
  assert.equal(server.sessions(), 3);
  assert.equal(h.state("remote").status, "connected");
});

Deno.test("keepalive notices a Streamable HTTP session the server ended (HTTP 404) and starts a new one", async () => {
  await using server = await sessionfulServer("echo");
  await using h = new Harness({ reconnect: true, random: () => 0.5 });
  const entry = serverEntry("remote", { url: server.url });
  // Below the 5 s floor of keepalive_interval (config.yaml's), so the test takes no minutes.
  await h.manager.start([{ ...entry, keepaliveIntervalSeconds: 0.1 }]);
  await server.forget();
  const lost = await h.waitForEvent(
    (e) => e.server === "remote" && e.type === "lost",
    5_000,
    "the ended session noticed",
  );
  assert.match((lost as { reason: string }).reason, /^the server ended the MCP session/);
  await h.waitForEvent(
    (e) => e.server === "remote" && e.type === "connected" && e.at > lost.at,
    5_000,
    "a new session",
  );
  assert.equal(server.sessions(), 2);
  assert.equal(textOf(await h.manager.callTool("mcp__remote__echo", { message: "x" })), "Echo: x");
});

Deno.test("the event stream notices a Streamable HTTP session the server ended (HTTP 404 to its GET) and a new one starts, without a request", async () => {
  await using server = await sessionfulServer("echo");
  await using h = new Harness({ reconnect: true, random: () => 0.5 });
  // No keepalive within the test: only the event stream can notice.
  await h.manager.start([serverEntry("remote", { url: server.url, keepalive_interval: 3600 })]);
  // Ending the session closes its event stream; the SDK opens it again and gets the 404.
  await server.forget();
  const lost = await h.waitForEvent(
    (e) => e.server === "remote" && e.type === "lost",
    10_000,
    "the ended session noticed",
  );
  assert.equal(
    (lost as { reason: string }).reason,
    "the server ended the MCP session (HTTP 404 for its session id)",
  );
  await h.waitForEvent(
    (e) => e.server === "remote" && e.type === "connected" && e.at > lost.at,
    10_000,
    "a new session",
  );
  assert.equal(server.sessions(), 2);
  assert.deepEqual(h.toolNames("remote"), ["mcp__remote__echo"]);
  assert.equal(textOf(await h.manager.callTool("mcp__remote__echo", { message: "x" })), "Echo: x");
  assert.equal(h.eventsOf("remote", "lost").length, 1, JSON.stringify(h.events));
});

// ---------------------------------------------------------------------------------------------
// Recycling

Deno.test("idle_timeout_seconds recycles an idle stdio child; tools stay; the next call respawns it", async () => {
  await using h = new Harness({ reconnect: false });
  const [config] = serversFromYaml(
    `idler:\n  command: ${JSON.stringify(Deno.execPath())}\n  args: ${
      JSON.stringify(stdioCommand(["--tools", "echo"]).args)
    }\n  idle_timeout_seconds: 1\n  env: { ${MARKER_NAME}: ${MARKER} }`,
  );
  assert.equal(config.idleTimeoutSeconds, 1);
  await h.manager.start([config]);
  const pid = h.pid("idler");

  // Activity keeps it alive: calls 400 ms apart for longer than the idle timeout.
  for (let i = 0; i < 4; i++) {
    assert.equal(
      textOf(await h.manager.callTool("mcp__idler__echo", { message: `${i}` })),
      `Echo: ${i}`,
    );
    await delay(400);
  }
  assert.deepEqual(h.eventsOf("idler", "recycled"), []);
  assert.equal(h.pid("idler"), pid);

  const lastCall = performance.now();
  await h.manager.callTool("mcp__idler__echo", { message: "last" });
  const recycled = await h.waitForEvent(
    (e) => e.server === "idler" && e.type === "recycled",
    4_000,
    "idle recycle",
  );
  assert.equal((recycled as { reason: string }).reason, "idle");
  assert.ok(recycled.at - lastCall >= 900, `recycled ${recycled.at - lastCall} ms after the call`);
  await until(() => !isAlive(pid), 4_000, `idle child ${pid} exits`);
  const idle = h.state("idler");
  assert.equal(idle.status, "idle");
  assert.equal(idle.pid, undefined);
  assert.deepEqual(h.toolNames("idler"), ["mcp__idler__echo"], "tools stay registered");
  assert.equal(idle.toolCount, 1);

  assert.equal(
    textOf(await h.manager.callTool("mcp__idler__echo", { message: "woke" })),
    "Echo: woke",
  );
  const newPid = h.pid("idler");
  assert.notEqual(newPid, pid);
  assert.ok(isAlive(newPid));
  assert.equal(h.state("idler").status, "connected");
  assert.deepEqual(h.eventsOf("idler", "lost"), [], "a recycle is not a loss");
  assert.deepEqual(h.eventsOf("idler", "failed"), []);
});

Deno.test("max_lifetime_seconds recycles the child after its age, at top level and under lifecycle:", async () => {
  await using h = new Harness({ reconnect: false });
  const args = JSON.stringify(stdioCommand(["--tools", "echo,slow"]).args);
  const command = JSON.stringify(Deno.execPath());
  const env = `{ ${MARKER_NAME}: ${MARKER} }`;
  const configs = serversFromYaml([
    `top:\n  command: ${command}\n  args: ${args}\n  env: ${env}\n  max_lifetime_seconds: 1`,
    `nested:\n  command: ${command}\n  args: ${args}\n  env: ${env}\n  lifecycle:\n    max_lifetime_seconds: 1`,
    `nested-idle:\n  command: ${command}\n  args: ${args}\n  env: ${env}\n  lifecycle: { idle_timeout_seconds: 1 }`,
    `busy:\n  command: ${command}\n  args: ${args}\n  env: ${env}\n  max_lifetime_seconds: 1`,
  ].join("\n"));
  assert.deepEqual(
    configs.map((c) => [c.name, c.maxLifetimeSeconds, c.idleTimeoutSeconds]),
    [["top", 1, 0], ["nested", 1, 0], ["nested-idle", 0, 1], ["busy", 1, 0]],
  );
  await h.manager.start(configs);
  const pids = Object.fromEntries(configs.map((c) => [c.name, h.pid(c.name)]));

  // A call running when the lifetime ends is not cut off; the recycle waits for it.
  const busyCall = h.manager.callTool("mcp__busy__slow", { ms: 1_800 });
  busyCall.catch(() => {}); // awaited below: a check failing first is reported, not this

  for (
    const [name, reason] of [["top", "lifetime"], ["nested", "lifetime"], ["nested-idle", "idle"]]
  ) {
    const event = await h.waitForEvent(
      (e) => e.server === name && e.type === "recycled",
      4_000,
      `${name} recycled`,
    );
    assert.equal((event as { reason: string }).reason, reason, name);
    // At its age of 1 s, not sooner.
    const age = event.at - h.eventsOf(name, "connected")[0].at;
    assert.ok(age >= 900, `${name} recycled ${Math.round(age)} ms after it connected`);
    await until(() => !isAlive(pids[name]), 4_000, `${name} child exits`);
    assert.equal(h.state(name).status, "idle");
    assert.deepEqual(h.toolNames(name).length, 2);
  }

  assert.equal(textOf(await busyCall), "done");
  const busyDone = performance.now();
  const busyRecycled = await h.waitForEvent(
    (e) => e.server === "busy" && e.type === "recycled",
    3_000,
    "busy recycled after its call",
  );
  assert.equal((busyRecycled as { reason: string }).reason, "lifetime");
  assert.ok(busyRecycled.at >= busyDone - 50, "recycled only after the call finished");
  await until(() => !isAlive(pids.busy), 4_000, "busy child exits");

  for (const name of ["top", "nested"]) {
    assert.equal(
      textOf(await h.manager.callTool(`mcp__${name}__echo`, { message: name })),
      `Echo: ${name}`,
    );
    assert.notEqual(h.pid(name), pids[name]);
    assert.equal(h.state(name).status, "connected");
  }
});

// ---------------------------------------------------------------------------------------------
// Reconnect, backoff, parking, keepalive

Deno.test("reconnect: a missing command parks at once; an unreachable URL backs off, then parks", async () => {
  await using h = new Harness({ reconnect: true, random: () => 0.5 });
  const url = `http://127.0.0.1:${deadPort()}/mcp`;
  const started = performance.now();
  await h.manager.start([
    serverEntry("ghost", { command: "/nonexistent/agent-test-no-such-server" }),
    serverEntry("nowhere", { url, connect_timeout: 5 }),
    fixture("fine", ["--tools", "echo"]),
  ]);

  const ghost = h.state("ghost");
  assert.equal(ghost.status, "parked");
  assert.match(ghost.error ?? "", /^MCP server 'ghost': cannot start command .*not found/);
  assert.deepEqual(h.eventsOf("ghost").map((e) => e.type), ["parked"]);
  assert.deepEqual(h.toolNames("ghost"), []);

  assert.equal(h.state("nowhere").status, "reconnecting");
  assert.equal(h.state("fine").status, "connected");
  const parked = await h.waitForEvent(
    (e) => e.server === "nowhere" && e.type === "parked",
    8_000,
    "nowhere parked",
  );
  const failures = h.eventsOf("nowhere", "failed") as (SeenEvent & { retryInMs?: number })[];
  assert.deepEqual(failures.map((e) => e.retryInMs), [1_000, 2_000], "1 s, then 2 s (jitter 0.5)");
  for (const failure of failures) {
    assert.match((failure as { error: string }).error, /^MCP server 'nowhere': cannot reach /);
  }
  // Three tries: at 0, after 1 s, after 2 more seconds.
  const took = parked.at - started;
  assert.ok(took >= 2_900 && took < 7_000, `parked after ${took} ms`);
  assert.equal(h.state("nowhere").status, "parked");
  assert.deepEqual(h.toolNames("nowhere"), []);
  assert.equal(textOf(await h.manager.callTool("mcp__fine__echo", { message: "ok" })), "Echo: ok");
});

Deno.test("reconnect: false marks unreachable and unstartable servers failed and never retries", async () => {
  await using h = new Harness({ reconnect: false });
  await h.manager.start([
    serverEntry("ghost", { command: "/nonexistent/agent-test-no-such-server" }),
    serverEntry("nowhere", { url: `http://127.0.0.1:${deadPort()}/mcp` }),
  ]);
  for (const name of ["ghost", "nowhere"]) {
    const state = h.state(name);
    assert.equal(state.status, "failed", name);
    assert.match(state.error ?? "", new RegExp(`^MCP server '${name}': `));
    const events = h.eventsOf(name);
    assert.deepEqual(events.map((e) => e.type), ["failed"]);
    assert.equal((events[0] as { retryInMs?: number }).retryInMs, undefined);
  }
  await delay(1_300); // past the first backoff step
  assert.equal(h.events.length, 2, JSON.stringify(h.events));
});

Deno.test("keepalive (floored at 5 s) notices an HTTP server that died while the connection was idle", async () => {
  await using server = await startHttpFixture(["--transport", "http", "--tools", "echo"]);
  await using h = new Harness({ reconnect: true, random: () => 0.5 });
  const config = serverEntry("remote", { url: server.url, keepalive_interval: 1 });
  assert.equal(config.keepaliveIntervalSeconds, 5);
  await h.manager.start([config]);
  const connected = h.eventsOf("remote", "connected")[0];
  assert.ok(connected, JSON.stringify(h.events));
  assert.equal(textOf(await h.manager.callTool("mcp__remote__echo", { message: "x" })), "Echo: x");

  server.process.kill("SIGKILL");
  await server.close();
  const lost = await h.waitForEvent(
    (e) => e.server === "remote" && e.type === "lost",
    9_000,
    "keepalive notices the dead server",
  );
  const after = lost.at - connected.at;
  assert.ok(after >= 4_500 && after < 8_000, `lost ${after} ms after connecting`);
  assert.match((lost as { reason: string }).reason, /keepalive failed/);
  assert.equal(h.state("remote").status, "reconnecting");
});

/** How many times `text` (a fixture's stderr so far) says it refused a ping. */
function refusedPings(text: string): number {
  return text.split("fixture: refused ping").length - 1;
}

/** How many tools/list requests `text` (a `--refuse-ping` fixture's stderr so far) says. */
function toolListings(text: string): number {
  return text.split("fixture: listed tools").length - 1;
}

// A server without ping (decisions.md: list_tools then proves liveness). Over stdio it refuses
// with a JSON-RPC error response, over Streamable HTTP as an HTTP 400 whose body is the error.
for (const transport of ["stdio", "http"] as const) {
  Deno.test(`keepalive: a ping refused over ${transport} as "Method not found" is checked by tools/list; the server stays connected`, async () => {
    const args = ["--tools", "echo", "--refuse-ping=-32601"];
    await using server = transport === "http"
      ? await startHttpFixture(["--transport", "http", "--era", "legacy", ...args])
      : undefined;
    await using h = new Harness({ reconnect: true, random: () => 0.5 });
    const entry = server ? serverEntry("pingless", { url: server.url }) : fixture("pingless", args);
    // Below the 5 s floor of keepalive_interval (config.yaml's), so the test takes no minutes.
    await h.manager.start([{ ...entry, keepaliveIntervalSeconds: 0.1 }]);
    assert.equal(h.state("pingless").status, "connected", JSON.stringify(h.events));
    const pid = h.state("pingless").pid;
    const stderr = () => server?.stderr() ?? h.stderrOf("pingless");
    for (let pings = 1; pings <= 3; pings++) {
      await until(() => refusedPings(stderr()) >= pings, 10_000, `ping ${pings} refused`);
      assert.equal(
        textOf(await h.manager.callTool("mcp__pingless__echo", { message: `${pings}` })),
        `Echo: ${pings}`,
      );
    }
    // Each refused ping is followed by a tools/list, besides the one of the connect.
    await until(
      () => toolListings(stderr()) >= 1 + 3,
      10_000,
      `a tools/list after each refused ping: ${toolListings(stderr())} listings`,
    );
    assert.deepEqual(h.eventsOf("pingless").map((e) => e.type), ["connected"]);
    assert.equal(h.state("pingless").status, "connected");
    assert.equal(h.state("pingless").pid, pid);
    if (server) assert.equal(server.stderr().split("fixture: session started").length - 1, 1);
  });
}

Deno.test("keepalive: a ping refused with another JSON-RPC error failed: the server is reconnected", async () => {
  await using h = new Harness({ reconnect: true, random: () => 0.5 });
  const entry = fixture("pingless", ["--tools", "echo", "--refuse-ping=-32603"]);
  await h.manager.start([{ ...entry, keepaliveIntervalSeconds: 0.1 }]);
  const firstPid = h.pid("pingless");
  const lost = await h.waitForEvent(
    (e) => e.server === "pingless" && e.type === "lost",
    10_000,
    "the failed ping's loss",
  );
  assert.match((lost as { reason: string }).reason, /^keepalive failed: .*Ping is not supported/);
  // Reconnected after its backoff (about 1 s here), to a new child: not left "reconnecting".
  await h.waitForEvent(
    (e) => e.server === "pingless" && e.type === "connected",
    10_000,
    "the reconnect after the failed ping",
    h.events.indexOf(lost) + 1,
  );
  assert.ok(
    [...h.pids].some((pid) => pid !== firstPid),
    `no new child after the reconnect: ${[...h.pids].join(", ")}`,
  );
});

// ---------------------------------------------------------------------------------------------
// list_changed

for (const transport of ["stdio", "http"] as const) {
  Deno.test(`notifications/tools/list_changed over ${transport} registers late_tool and tells listeners`, async () => {
    const args = ["--tools", "echo", "--list-changed-after-ms", "300"];
    await using server = transport === "http"
      ? await startHttpFixture(["--transport", "http", ...args])
      : undefined;
    await using h = new Harness({ reconnect: false });
    let notified = 0;
    const unsubscribe = h.manager.onToolsChanged(() => notified++);
    await h.manager.start([
      server ? serverEntry("lc", { url: server.url }) : fixture("lc", args),
    ]);
    assert.deepEqual(h.toolNames("lc"), ["mcp__lc__echo"]);
    const before = notified;
    const changed = await h.waitForEvent(
      (e) => e.server === "lc" && e.type === "tools_changed",
      6_000,
      "tools_changed",
    );
    assert.equal((changed as { tools: number }).tools, 2);
    assert.ok(notified > before, "onToolsChanged listeners fired");
    assert.deepEqual(h.toolNames("lc"), ["mcp__lc__echo", "mcp__lc__late_tool"]);
    assert.equal(h.state("lc").toolCount, 2);
    assert.equal(textOf(await h.manager.callTool("mcp__lc__late_tool")), "late");
    unsubscribe();
  });
}

// ---------------------------------------------------------------------------------------------
// Reload

Deno.test("reload: unchanged kept, removed closed, added connected, changed replaced after the new one is up", async () => {
  let oldChangedPid = 0;
  let oldAliveWhenNewConnected: boolean | undefined;
  let phase = "start";
  await using h = new Harness({
    reconnect: false,
    onEvent: (event) => {
      if (phase === "reload" && event.server === "change" && event.type === "connected") {
        oldAliveWhenNewConnected = isAlive(oldChangedPid);
      }
    },
  });
  await h.manager.start([
    fixture("keep", ["--tools", "echo"]),
    fixture("gone", ["--tools", "echo"]),
    fixture("change", ["--tools", "echo"]),
  ]);
  const keepPid = h.pid("keep");
  const gonePid = h.pid("gone");
  oldChangedPid = h.pid("change");
  let notified = 0;
  h.manager.onToolsChanged(() => notified++);

  phase = "reload";
  const report = await h.manager.reload([
    fixture("added", ["--tools", "echo"]),
    fixture("change", ["--tools", "echo,add"]),
    fixture("keep", ["--tools", "echo"]),
    serverEntry("broken", { command: "/nonexistent/agent-test-no-such-server" }),
  ]);
  h.snapshot();

  assert.deepEqual(report.unchanged, ["keep"]);
  assert.deepEqual(report.removed, ["gone"]);
  assert.deepEqual(report.reconnected, ["change"]);
  assert.deepEqual([...report.added].sort(), ["added", "broken"]);
  assert.equal(report.failed.length, 1, JSON.stringify(report.failed));
  assert.equal(report.failed[0].name, "broken");
  assert.match(report.failed[0].error, /^MCP server 'broken': cannot start command .*not found/);
  assert.equal(report.toolCount, 4); // keep 1 + change 2 + added 1
  assert.equal(report.toolCount, h.manager.tools().length);
  assert.ok(notified > 0, "listeners told about the new tool list");

  assert.deepEqual(h.manager.servers().map((s) => [s.name, s.status]), [
    ["added", "connected"],
    ["change", "connected"],
    ["keep", "connected"],
    ["broken", "failed"],
  ]);
  assert.equal(h.pid("keep"), keepPid, "unchanged server not reconnected");
  assert.equal(h.eventsOf("keep", "connected").length, 1);
  assert.ok(!isAlive(gonePid), "removed server's process exited");
  assert.equal(
    oldAliveWhenNewConnected,
    true,
    "old connection still up when the new one connected",
  );
  assert.ok(!isAlive(oldChangedPid), "old connection of the changed server closed");
  const newChangedPid = h.pid("change");
  assert.notEqual(newChangedPid, oldChangedPid);
  assert.ok(isAlive(newChangedPid));
  assert.ok(isAlive(h.pid("added")));

  assert.deepEqual(h.toolNames(), [
    "mcp__added__echo",
    "mcp__change__add",
    "mcp__change__echo",
    "mcp__keep__echo",
  ]);
  assert.equal(textOf(await h.manager.callTool("mcp__change__add", { a: 1, b: 2 })), "3");
  assert.equal(textOf(await h.manager.callTool("mcp__keep__echo", { message: "k" })), "Echo: k");
  assert.equal(textOf(await h.manager.callTool("mcp__added__echo", { message: "a" })), "Echo: a");
  await assert.rejects(
    h.manager.callTool("mcp__gone__echo", { message: "g" }),
    /no MCP tool named 'mcp__gone__echo'/,
  );

  // Reloading the same configuration again changes nothing.
  const again = await h.manager.reload([
    fixture("added", ["--tools", "echo"]),
    fixture("change", ["--tools", "echo,add"]),
    fixture("keep", ["--tools", "echo"]),
  ]);
  assert.deepEqual(again.unchanged, ["added", "change", "keep"]);
  assert.deepEqual(again.removed, ["broken"]);
  assert.deepEqual([again.added, again.reconnected, again.failed], [[], [], []]);
  assert.equal(again.toolCount, 4);
  assert.equal(h.pid("change"), newChangedPid);
});

Deno.test({
  name: "reload: a changed server stays callable while a slow new server is still connecting",
  fn: async () => {
    await using h = new Harness({ reconnect: false });
    await h.manager.start([fixture("change", ["--tools", "echo"])]);
    const oldPid = h.pid("change");
    const since = h.events.length;
    const reload = h.manager.reload([
      fixture("change", ["--tools", "echo,add"]),
      serverEntry("slow-new", {
        ...stdioCommand([], SILENT_STDIO_FIXTURE),
        env: { [MARKER_NAME]: MARKER },
        connect_timeout: 2,
      }),
    ]);
    try {
      await h.waitForEvent(
        (e) => e.server === "change" && e.type === "connected",
        5_000,
        "new change connected",
        since,
      );
      await until(() => !isAlive(oldPid), 4_000, "old change process exits");
      const result = await h.manager.callTool("mcp__change__echo", { message: "mid-reload" });
      assert.equal(textOf(result), "Echo: mid-reload");
    } finally {
      const report = await reload;
      assert.deepEqual(report.failed.map((f) => f.name), ["slow-new"]);
    }
  },
});

Deno.test({
  name:
    "reload cancelled: servers still connecting are stopped and left as before; done work stays",
  fn: async () => {
    await using h = new Harness({ reconnect: false });
    await h.manager.start([
      fixture("change", ["--tools", "echo"]),
      fixture("stuck-change", ["--tools", "echo"]),
    ]);
    const since = h.events.length;
    const silentMarker = `${MARKER}-silent`;
    const silent = (name: string) =>
      serverEntry(name, {
        ...stdioCommand([], SILENT_STDIO_FIXTURE),
        env: { [MARKER_NAME]: silentMarker },
        connect_timeout: 60,
      });
    const cancel = new AbortController();
    const reload = h.manager.reload([
      fixture("change", ["--tools", "echo,add"]),
      silent("stuck-change"),
      silent("stuck-new"),
    ], { signal: cancel.signal });
    await h.waitForEvent(
      (e) => e.server === "change" && e.type === "connected",
      5_000,
      "the changed server connected",
      since,
    );
    await until(
      () => markedProcesses(silentMarker).length === 2,
      5_000,
      "both silent children spawned",
    );
    const started = performance.now();
    cancel.abort();
    const report = await reload;
    const took = performance.now() - started;
    assert.ok(took < 3_000, `the cancelled reload took ${took} ms to return`);
    assert.deepEqual(report.reconnected, ["change"]);
    assert.deepEqual(report.added, []);
    assert.deepEqual(report.cancelled.sort(), ["stuck-change", "stuck-new"]);
    assert.deepEqual(report.failed, []);
    assert.deepEqual(markedProcesses(silentMarker), [], "the connects under way were stopped");
    // The new server is not there; the changed one keeps its old connection and tools.
    assert.deepEqual(h.manager.servers().map((s) => [s.name, s.status]), [
      ["change", "connected"],
      ["stuck-change", "connected"],
    ]);
    assert.equal(report.toolCount, 3);
    assert.equal(
      textOf(await h.manager.callTool("mcp__stuck_change__echo", { message: "old" })),
      "Echo: old",
    );
    assert.equal(textOf(await h.manager.callTool("mcp__change__add", { a: 2, b: 3 })), "5");
    // The next reload tries them again.
    const again = h.manager.reload([
      fixture("change", ["--tools", "echo,add"]),
      fixture("stuck-change", ["--tools", "echo"]),
      fixture("stuck-new", ["--tools", "echo"]),
    ]);
    const report2 = await again;
    assert.deepEqual(report2.unchanged, ["change", "stuck-change"]);
    assert.deepEqual(report2.added, ["stuck-new"]);
    assert.equal(report2.toolCount, 4);
  },
});

// ---------------------------------------------------------------------------------------------
// Processes, environment, stderr

Deno.test("shutdown leaves no child process behind, including recycled, respawned and failed ones", async () => {
  const h = new Harness({ reconnect: true, random: () => 0.5 });
  try {
    await h.manager.start([
      fixture("plain", ["--tools", "echo"]),
      fixture("idler", ["--tools", "echo"], { idle_timeout_seconds: 1 }),
      fixture("crashy", ["--tools", "crash,echo"]),
      serverEntry("silent", {
        ...stdioCommand([], SILENT_STDIO_FIXTURE),
        env: { [MARKER_NAME]: MARKER },
        connect_timeout: 1,
      }),
    ]);
    assert.equal(h.state("silent").status, "reconnecting");
    // Respawn after an idle recycle.
    const idlePid = h.pid("idler");
    await h.waitForEvent((e) => e.server === "idler" && e.type === "recycled", 4_000, "recycle");
    await h.manager.callTool("mcp__idler__echo", { message: "x" });
    assert.notEqual(h.pid("idler"), idlePid);
    // Respawn after a crash.
    const crashPid = h.pid("crashy");
    const since = h.events.length;
    await assert.rejects(h.manager.callTool("mcp__crashy__crash"));
    await h.waitForEvent(
      (e) => e.server === "crashy" && e.type === "connected",
      6_000,
      "crashy back",
      since,
    );
    assert.notEqual(h.pid("crashy"), crashPid);
    h.snapshot();
    assert.ok(h.pids.size >= 5, `pids seen: ${[...h.pids]}`);
  } finally {
    h.snapshot();
    await h.manager.shutdown();
  }
  const alive = [...h.pids].filter((pid) => isAlive(pid));
  assert.deepEqual(alive, [], "every stdio pid ended by the time shutdown resolved");
  assert.deepEqual(markedProcesses(), [], "no process of this test is left (failed connects too)");
  assert.deepEqual(h.manager.servers(), [], "shutdown forgets every server");
});

Deno.test({
  name: "shutdown while a server is still connecting returns promptly and stops the child",
  fn: async () => {
    const h = new Harness({ reconnect: false });
    const start = h.manager.start([
      serverEntry("stuck", {
        ...stdioCommand([], SILENT_STDIO_FIXTURE),
        env: { [MARKER_NAME]: MARKER },
        connect_timeout: 8,
      }),
    ]);
    await until(() => markedProcesses().length === 1, 5_000, "the stuck child was spawned");
    assert.equal(h.state("stuck").status, "connecting");
    const started = performance.now();
    await h.manager.shutdown();
    const took = performance.now() - started;
    await start;
    assert.ok(took < 3_000, `shutdown took ${took} ms`);
    assert.deepEqual(markedProcesses(), []);
  },
});

Deno.test("stdio children get a minimal environment plus their env; stderr reaches onStderr and the log", async () => {
  const secret = `AGENT_TEST_SECRET_${crypto.randomUUID().slice(0, 8).toUpperCase()}`;
  const xdg = `XDG_AGENT_TEST_${crypto.randomUUID().slice(0, 8).toUpperCase()}`;
  const dir = await Deno.makeTempDir({ prefix: "mcp-manager-env-" });
  const logPath = join(dir, "logs", "mcp-stderr.log");
  const log = new StderrLog(logPath);
  Deno.env.set(secret, "s3cret-value");
  Deno.env.set(xdg, "xdg-value");
  try {
    await using h = new Harness({
      reconnect: false,
      onStderr: (server, text) => log.write(server, text),
    });
    await h.manager.start([
      everything("everything", { env: { FOO: "bar", [MARKER_NAME]: MARKER } }),
      fixture("fx", ["--tools", "echo"]),
    ]);
    assert.equal(h.state("everything").status, "connected", h.state("everything").error);
    assert.ok(h.toolNames("everything").includes("mcp__everything__get_env"));

    const env = JSON.parse(textOf(await h.manager.callTool("mcp__everything__get_env")));
    assert.equal(env.FOO, "bar");
    assert.equal(env.PATH, Deno.env.get("PATH"));
    assert.equal(env.HOME, Deno.env.get("HOME"));
    assert.equal(env[xdg], "xdg-value");
    assert.equal(env[secret], undefined, "the gateway's secrets stay out of the child");
    assert.ok(
      !JSON.stringify(env).includes("s3cret-value"),
      "the secret value is nowhere in the child's environment",
    );
    // Only the minimal set, the entry's env and XDG_* (plus what the runtime adds itself).
    const allowed = new Set([
      "PATH",
      "HOME",
      "USER",
      "LOGNAME",
      "LANG",
      "LC_ALL",
      "TERM",
      "SHELL",
      "TMPDIR",
      "FOO",
      MARKER_NAME,
      "npm_config_user_agent",
    ]);
    const extra = Object.keys(env).filter((name) => !allowed.has(name) && !name.startsWith("XDG_"));
    assert.deepEqual(extra, []);

    await until(
      () => h.stderrOf("everything").includes("Starting default (STDIO) server"),
      5_000,
      `everything's stderr: ${JSON.stringify(h.stderr)}`,
    );
    await until(
      () => h.stderrOf("fx").includes("fixture: serving era dual over stdio"),
      5_000,
      `fx stderr: ${JSON.stringify(h.stderr)}`,
    );
    log.close();
    const text = await Deno.readTextFile(logPath);
    assert.match(text, /^\S+Z \[everything\] Starting default \(STDIO\) server/m);
    assert.match(text, /^\S+Z \[fx\] fixture: serving era dual over stdio$/m);
    assert.equal((await Deno.stat(logPath)).mode! & 0o777, 0o600);
  } finally {
    Deno.env.delete(secret);
    Deno.env.delete(xdg);
    log.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("garbage and silent stdio servers fail with errors naming them; a good server connects meanwhile", async () => {
  await using h = new Harness({ reconnect: false });
  const started = performance.now();
  await h.manager.start([
    serverEntry("garbage", {
      ...stdioCommand([], GARBAGE_STDIO_FIXTURE),
      env: { [MARKER_NAME]: MARKER },
      connect_timeout: 2,
    }),
    serverEntry("silent", {
      ...stdioCommand([], SILENT_STDIO_FIXTURE),
      env: { [MARKER_NAME]: MARKER },
      connect_timeout: 2,
    }),
    fixture("good", ["--tools", "echo"]),
  ]);
  const elapsed = performance.now() - started;
  assert.ok(elapsed >= 1_900 && elapsed < 6_000, `start took ${elapsed} ms`);

  const good = h.eventsOf("good", "connected")[0];
  assert.ok(good, JSON.stringify(h.events));
  for (const name of ["garbage", "silent"]) {
    const state = h.state(name);
    assert.equal(state.status, "failed", name);
    assert.deepEqual(h.toolNames(name), []);
  }
  // JSON that is not JSON-RPC ends the handshake at once; silence waits for connect_timeout.
  assert.match(
    h.state("garbage").error ?? "",
    /^MCP server 'garbage': the connection closed during the handshake: the server printed JSON that is not JSON-RPC/,
  );
  assert.match(
    h.state("silent").error ?? "",
    /^MCP server 'silent': no answer within connect_timeout \(2 s\)/,
  );
  const failed = h.eventsOf("silent", "failed")[0];
  assert.ok(good.at < failed.at, "the good server did not wait for the broken ones");
  assert.equal(h.state("good").status, "connected");
  assert.equal(textOf(await h.manager.callTool("mcp__good__echo", { message: "g" })), "Echo: g");
  // The broken children were stopped when their connects failed.
  const goodPid = h.pid("good");
  await until(
    () => markedProcesses().every((pid) => pid === goodPid),
    3_000,
    `leftover processes: ${markedProcesses()}`,
  );
});
