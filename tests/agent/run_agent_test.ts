/**
 * `runAgent`: one run against a temp `<home>` (the fake OpenAI-compatible model, the fixture MCP
 * server over stdio), its errors and cancellation, the usage metrics it records, and the same
 * call from a separate program that imports the library entry point `mod.ts`.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { stringify } from "yaml";
import { runAgent, RunCancelled, type RunEvent } from "../../src/agent/mod.ts";
import { loadConfig } from "../../src/home/config.ts";
import { ConfigError } from "../../src/home/errors.ts";
import { type MetricsPackage, openExistingUsageMetrics } from "../../src/metrics/mod.ts";
import { type ChatRequest, startFakeModel, type Turn } from "../fixtures/fake_model.ts";
import { stdioCommand } from "../fixtures/mcp/spawn.ts";
import { MOD_URL, parseOneJson, REPO, spawnDeno, tempHome } from "../cli/_helpers.ts";

/** What Deno needs to find its cache (the stdio server runs under Deno); nothing else leaks in. */
const ENV: Record<string, string> = {};
for (const name of ["PATH", "HOME", "DENO_DIR", "TMPDIR"]) {
  const value = Deno.env.get(name);
  if (value !== undefined) ENV[name] = value;
}
const env = (name: string) => ENV[name];

/** Calls `name` once per prompt, then answers `Result: <tool result>`. */
function callThenAnswer(name: string, args: Record<string, unknown>): Turn {
  return (request: ChatRequest) =>
    request.messages.at(-1)?.role === "tool"
      ? { contentFromTools: "Result: " }
      : { toolCalls: [{ name, arguments: args }] };
}

/** Writes `<home>/config.yaml`. */
function configure(home: string, doc: Record<string, unknown>): void {
  Deno.writeTextFileSync(join(home, "config.yaml"), stringify(doc));
}

/** The fixture server over stdio with `tools`. */
function fixture(tools: string) {
  return stdioCommand(["--tools", tools]);
}

/** The summed value of the counters `name` whose dimensions include `dims`. */
function counter(packages: MetricsPackage[], name: string, dims: Record<string, string>): number {
  let total = 0;
  for (const item of packages.flatMap((pkg) => pkg.metrics)) {
    const have = item.dimensions as Record<string, string>;
    if (item.name !== name) continue;
    if (Object.entries(dims).every(([key, value]) => have[key] === value)) total += item.value;
  }
  return total;
}

/**
 * A model endpoint that never answers: every request is held until `close()`, and
 * `onRequest` is told when one arrived. (Not the fake's `{hang: true}`: Deno.serve does not
 * reliably abort `request.signal` when a client that sent a larger body goes away, and the
 * fake's graceful shutdown would then wait for the hanging handler forever.)
 */
function silentModel(onRequest: () => void) {
  const releases = new Set<() => void>();
  let received = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    await request.text();
    received++;
    onRequest();
    await new Promise<void>((resolve) => releases.add(resolve));
    return new Response(null, { status: 499 });
  });
  const close = async () => {
    for (const release of releases) release();
    await server.shutdown();
  };
  return {
    baseUrl: `http://127.0.0.1:${server.addr.port}/v1`,
    received: () => received,
    [Symbol.asyncDispose]: close,
  };
}

Deno.test("runAgent: one run over the home's model and MCP servers returns the RunResult", async () => {
  await using home = await tempHome();
  await using model = await startFakeModel({
    fallback: callThenAnswer("mcp__fx__echo", { message: "library" }),
  });
  configure(home.home, {
    model: { default: "test-model", base_url: model.baseUrl },
    mcp_servers: { fx: fixture("echo,add") },
    telemetry: { shared_metrics: { enabled: true } },
  });

  const events: RunEvent["type"][] = [];
  const result = await runAgent("echo something", {
    home: home.home,
    env,
    onEvent: (event) => events.push(event.type),
  });
  assert.equal(result.endReason, "completed");
  assert.equal(result.answer, "Result: Echo: library");
  assert.equal(result.error, undefined);
  assert.equal(result.modelCalls, 2);
  assert.equal(result.retries, 0);
  assert.deepEqual(result.warnings, []);
  assert.equal(result.toolCalls.length, 1);
  const [call] = result.toolCalls;
  assert.deepEqual(
    {
      name: call.name,
      server: call.server,
      arguments: call.arguments,
      outcome: call.outcome,
      approval: call.approval,
    },
    {
      name: "mcp__fx__echo",
      server: "fx",
      arguments: '{"message":"library"}',
      outcome: "success",
      approval: "not_required",
    },
  );
  assert.deepEqual(events, ["model_call", "tool_call", "tool_result", "model_call"]);
  assert.deepEqual(result.messages.map((message) => message.role), [
    "user",
    "assistant",
    "tool",
    "assistant",
  ]);
  assert.ok(result.timings.totalMs >= result.timings.modelMs);

  // The model was offered the server's tools.
  assert.deepEqual(
    model.requests[0].tools?.map((tool) => tool.function.name),
    ["mcp__fx__echo", "mcp__fx__add"],
  );

  // The run counts as entrypoint api on surface api (the defaults).
  const metrics = openExistingUsageMetrics(loadConfig({ home: home.home, env }));
  assert.ok(metrics, "the run created the metrics store");
  let packages: MetricsPackage[];
  try {
    packages = metrics.preview();
  } finally {
    metrics.close();
  }
  const api = { entrypoint: "api", execution_surface: "api" };
  assert.equal(counter(packages, "agent.task_run.started", api), 1);
  assert.equal(counter(packages, "agent.task_run.started", {}), 1);
  assert.equal(
    counter(packages, "agent.task_run.finished", { ...api, end_reason: "completed" }),
    1,
  );
  assert.equal(counter(packages, "agent.model_call.count", { outcome: "success" }), 2);
  assert.equal(counter(packages, "agent.tool_call.count", { outcome: "success" }), 1);

  // Other entrypoints and surfaces are the caller's choice.
  const batch = await runAgent("again", {
    home: home.home,
    env,
    entrypoint: "batch",
    surface: "batch",
  });
  assert.equal(batch.endReason, "completed");
  const after = openExistingUsageMetrics(loadConfig({ home: home.home, env }))!;
  try {
    packages = after.preview();
  } finally {
    after.close();
  }
  assert.equal(
    counter(packages, "agent.task_run.started", {
      entrypoint: "batch",
      execution_surface: "batch",
    }),
    1,
  );
  assert.equal(counter(packages, "agent.task_run.started", api), 1);
});

Deno.test("runAgent: a home without a model rejects with a ConfigError naming model.default", async () => {
  await using home = await tempHome();
  configure(home.home, { agent: { max_iterations: 3 } });
  try {
    await runAgent("hi", { home: home.home, env });
    assert.fail("runAgent resolved without a model");
  } catch (caught) {
    assert.ok(caught instanceof ConfigError);
    assert.equal(caught.location.key, "model.default");
    assert.equal(caught.location.file, home.config);
    assert.match(caught.message, /no model is configured/);
  }

  // No config.yaml at all: the same.
  Deno.removeSync(home.config);
  await assert.rejects(
    runAgent("hi", { home: home.home, env }),
    (caught: unknown) => caught instanceof ConfigError && caught.location.key === "model.default",
  );
});

Deno.test("runAgent: an empty or blank prompt is a TypeError before anything is contacted", async () => {
  await using home = await tempHome();
  await using model = await startFakeModel({ fallback: { content: "an answer to nothing" } });
  configure(home.home, {
    model: { default: "test-model", base_url: model.baseUrl },
    telemetry: { shared_metrics: { enabled: true } },
  });
  for (const prompt of ["", "   ", "\n\r\n\t "]) {
    await assert.rejects(
      runAgent(prompt, { home: home.home, env }),
      (caught: unknown) =>
        caught instanceof TypeError && /the prompt is empty/.test(caught.message),
      JSON.stringify(prompt),
    );
  }
  // From JavaScript, or through `as never`: not a string is said as such.
  for (const [prompt, kind] of [[42, "number"], [null, "null"], [["hi"], "an array"]] as const) {
    await assert.rejects(
      runAgent(prompt as never, { home: home.home, env }),
      new TypeError(`the prompt must be a string, not ${kind}`),
    );
  }
  assert.equal(model.requests.length, 0);
  // Nothing was recorded or written: the home holds only config.yaml.
  assert.deepEqual([...Deno.readDirSync(home.home)].map((entry) => entry.name), ["config.yaml"]);

  // Checked before config.yaml is read: a broken file does not hide the mistake.
  Deno.writeTextFileSync(home.config, "model: [unclosed\n");
  await assert.rejects(runAgent("", { home: home.home, env }), TypeError);
});

Deno.test("runAgent: aborting the signal with RunCancelled ends the run as cancelled", async (t) => {
  await using home = await tempHome();
  for (
    const [by, endReason] of [["user", "user_cancelled"], ["system", "system_aborted"]] as const
  ) {
    await t.step(`RunCancelled("${by}") → ${endReason}`, async () => {
      const controller = new AbortController();
      await using model = silentModel(() => controller.abort(new RunCancelled(by)));
      configure(home.home, { model: { default: "test-model", base_url: model.baseUrl } });
      const started = performance.now();
      const result = await runAgent("take your time", {
        home: home.home,
        env,
        signal: controller.signal,
      });
      assert.equal(result.endReason, endReason);
      assert.equal(result.answer, "");
      assert.equal(result.modelCalls, 1);
      assert.equal(result.error, new RunCancelled(by).message);
      assert.equal(model.received(), 1);
      assert.ok(performance.now() - started < 10_000);
    });
  }

  await t.step("a signal aborted before the run: no model call", async () => {
    await using model = silentModel(() => {});
    configure(home.home, { model: { default: "test-model", base_url: model.baseUrl } });
    const result = await runAgent("never", {
      home: home.home,
      env,
      signal: AbortSignal.abort(new RunCancelled("user")),
    });
    assert.equal(result.endReason, "user_cancelled");
    assert.equal(model.received(), 0);
  });
});

Deno.test("runAgent from mod.ts in a separate program (deno run --config deno.json)", async () => {
  await using home = await tempHome();
  await using model = await startFakeModel({
    fallback: callThenAnswer("mcp__fx__add", { a: 2, b: 40 }),
  });
  configure(home.home, {
    model: { default: "test-model", base_url: model.baseUrl },
    mcp_servers: { fx: fixture("add") },
  });
  const script = join(home.home, "use_library.ts");
  Deno.writeTextFileSync(
    script,
    `const mod = await import(${JSON.stringify(MOD_URL)});
if (typeof mod.runAgent !== "function") {
  console.log(JSON.stringify({ missing: "runAgent is not exported by mod.ts" }));
  Deno.exit(3);
}
// No home option: $AGENT_HOME is used.
const result = await mod.runAgent(Deno.args[0], { env: (name) => Deno.env.get(name) });
console.log(JSON.stringify({
  answer: result.answer,
  endReason: result.endReason,
  tools: result.toolCalls.map((call) => [call.name, call.outcome]),
}));
`,
  );
  const run = await spawnDeno(
    ["run", "-A", "--config", join(REPO, "deno.json"), script, "what is 2 + 40?"],
    home.home,
  );
  assert.notEqual(run.code, 3, `mod.ts does not export runAgent: ${run.stdout}`);
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(parseOneJson(run.stdout), {
    answer: "Result: 42",
    endReason: "completed",
    tools: [["mcp__fx__add", "success"]],
  });
  assert.equal(model.requests[0].messages.at(-1)?.content, "what is 2 + 40?");
});

// An `env` left undefined must not replace the manager's default (`Deno.env.get`).
Deno.test({
  name: "runAgent without `env`: stdio MCP servers start with the process environment",
  fn: async () => {
    await using home = await tempHome();
    await using model = await startFakeModel({
      fallback: callThenAnswer("mcp__fx__add", { a: 1, b: 2 }),
    });
    configure(home.home, {
      model: { default: "test-model", base_url: model.baseUrl },
      mcp_servers: { fx: fixture("add") },
    });
    const result = await runAgent("add", { home: home.home });
    assert.equal(result.endReason, "completed");
    assert.deepEqual(result.toolCalls.map((call) => [call.name, call.outcome]), [
      ["mcp__fx__add", "success"],
    ]);
    assert.equal(result.answer, "Result: 3");
  },
});
