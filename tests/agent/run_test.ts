/**
 * The run loop (`runLoop`) against real parts: the fake OpenAI-compatible model over HTTP, the
 * MCP manager with stdio fixture servers and `@modelcontextprotocol/server-everything`, and a
 * usage-metrics store in a temp `<home>`. No sleeping: runs are stopped from inside the scripted
 * model turns or tool host, and the only time limits exercised are the run's own.
 */
import assert from "node:assert/strict";
import type { CallToolResult } from "@modelcontextprotocol/client";
import { PolicyApprovals } from "../../src/agent/approvals.ts";
import type { ChatMessage } from "../../src/agent/model.ts";
import {
  isEmptyAnswer,
  resultText,
  RunCancelled,
  runLoop,
  type RunOptions,
  type RunResult,
  type ToolHost,
} from "../../src/agent/run.ts";
import type { ModelSettings } from "../../src/agent/settings.ts";
import type { McpManager } from "../../src/mcp/manager.ts";
import type { RegisteredTool } from "../../src/mcp/registry.ts";
import { DURATION_BUCKETS, TOOL_LATENCY_BUCKETS } from "../../src/metrics/contract.ts";
import { validateMetricsPackage } from "../../src/metrics/schema.ts";
import { everythingStdio } from "../cli/_mcp_helpers.ts";
import { type ChatRequest, type FakeModelOptions, startFakeModel } from "../fixtures/fake_model.ts";
import { serverEntry } from "../mcp/_helpers.ts";
import {
  assertNoDanglingToolCalls,
  filesText,
  fixtureServer,
  itemsNamed,
  metricsHome,
  modelClient,
  NEVER_ASK,
  ScriptedApprovals,
  startHangingModel,
  startManager,
  toolMessages,
  valueOf,
} from "./_run_helpers.ts";

// ---------------------------------------------------------------------------------------------
// Helpers

/** A run's options with quiet defaults; `model` and `tools` always given. */
function runOptions(
  options: Partial<RunOptions> & Pick<RunOptions, "model" | "tools">,
): RunOptions {
  return {
    systemPrompt: "You are the test agent.",
    prompt: "Do the thing.",
    approvals: NEVER_ASK,
    limits: { maxIterations: 10, runTimeoutSeconds: 60 },
    entrypoint: "api",
    surface: "api",
    ...options,
  };
}

/**
 * Runs the loop once against a fake model playing `script` (closed after the run), with the quiet
 * defaults of {@linkcode runOptions}; returns the result and the requests the model received.
 */
async function runScripted(
  script: FakeModelOptions,
  options: Partial<RunOptions> & Pick<RunOptions, "tools">,
  model: Partial<ModelSettings> = {},
): Promise<{ result: RunResult; requests: ChatRequest[] }> {
  await using fake = await startFakeModel(script);
  const result = await runLoop(runOptions({ ...options, model: modelClient(fake.baseUrl, model) }));
  return { result, requests: fake.requests };
}

/** A tool host without tools. */
const NO_TOOLS: ToolHost = {
  tools: () => [],
  callTool: () => Promise.reject(new Error("no tools here")),
};

/** The manager as a tool host that remembers the calls that reached it. */
function countingHost(manager: McpManager): ToolHost & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    tools: () => manager.tools(),
    callTool: (name, args, options) => {
      calls.push(name);
      return manager.callTool(name, args, options);
    },
  };
}

/** A registered tool made up for a hand-written tool host. */
function madeUpTool(name: string, fields: Partial<RegisteredTool> = {}): RegisteredTool {
  return {
    name: `mcp__made__${name}`,
    server: "made",
    originalName: name,
    kind: "tool",
    description: `The ${name} tool`,
    inputSchema: { type: "object", properties: {} },
    readOnly: true,
    trust: "full",
    ...fields,
  };
}

const text = (value: string): CallToolResult => ({ content: [{ type: "text", text: value }] });

// ---------------------------------------------------------------------------------------------
// server-everything

Deno.test("runLoop with server-everything: real tool calls, their results and the transcript", async (t) => {
  await using mcp = await startManager([
    serverEntry("everything", {
      ...everythingStdio(),
      supports_parallel_tool_calls: true,
      trust: "untrusted",
    }),
  ]);
  const { manager } = mcp;

  await t.step(
    "echo: the answer carries the tool result; the requests are well formed",
    async () => {
      const { result, requests } = await runScripted({
        turns: [
          { toolCalls: [{ name: "mcp__everything__echo", arguments: { message: "hello there" } }] },
          { contentFromTools: "The tool said: " },
        ],
      }, {
        prompt: "Echo hello there",
        tools: manager,
        // untrusted server, but echo is read-only: nobody may be asked
        approvals: NEVER_ASK,
      });

      assert.equal(result.endReason, "completed", result.error);
      assert.equal(result.answer, "The tool said: Echo: hello there");
      assert.equal(result.error, undefined);
      assert.equal(result.modelCalls, 2);
      assert.equal(result.retries, 0);
      assert.equal(result.toolCalls.length, 1);
      const [record] = result.toolCalls;
      assert.equal(record.name, "mcp__everything__echo");
      assert.equal(record.server, "everything");
      assert.equal(record.outcome, "success");
      assert.equal(record.approval, "not_required");
      assert.deepEqual(JSON.parse(record.arguments), { message: "hello there" });
      assert.equal(record.error, undefined);

      // First request: system prompt, then the user's prompt, and every tool offered.
      assert.equal(requests.length, 2);
      const [first, second] = requests;
      assert.equal(first.model, "gpt-4.1-mini");
      assert.deepEqual(first.messages.map((m) => m.role), ["system", "user"]);
      assert.equal(first.messages[0].content, "You are the test agent.");
      assert.equal(first.messages[1].content, "Echo hello there");
      const offered = first.tools ?? [];
      assert.deepEqual(
        offered.map((tool) => tool.function.name).sort(),
        manager.tools().map((tool) => tool.name).sort(),
      );
      const echoTool = manager.tools().find((tool) => tool.name === "mcp__everything__echo")!;
      const echoOffer = offered.find((tool) => tool.function.name === "mcp__everything__echo");
      assert.ok(echoOffer, "mcp__everything__echo is offered");
      assert.equal(echoOffer.type, "function");
      assert.equal(echoOffer.function.description, echoTool.description);
      assert.deepEqual(echoOffer.function.parameters, echoTool.inputSchema);
      const parameters = echoOffer.function.parameters as {
        type: string;
        properties: Record<string, { type: string }>;
        required: string[];
      };
      assert.equal(parameters.type, "object");
      assert.equal(parameters.properties.message.type, "string");
      assert.deepEqual(parameters.required, ["message"]);

      // Second request: the assistant's tool call and the tool message answering its id.
      assert.deepEqual(second.messages.map((m) => m.role), ["system", "user", "assistant", "tool"]);
      const assistant = second.messages[2] as { tool_calls: { id: string }[] };
      assert.equal(assistant.tool_calls.length, 1);
      assert.deepEqual(second.messages[3], {
        role: "tool",
        tool_call_id: assistant.tool_calls[0].id,
        content: "Echo: hello there",
      });
      assert.deepEqual(toolMessages(result.messages), [[
        assistant.tool_calls[0].id,
        "Echo: hello there",
      ]]);
      assert.equal(result.messages.at(-1)?.role, "assistant");
      assertNoDanglingToolCalls(result.messages);
    },
  );

  await t.step(
    "a tool result with isError goes back as 'Error: …' and the run goes on",
    async () => {
      const { result } = await runScripted({
        turns: [
          { toolCalls: [{ name: "mcp__everything__get_sum", arguments: { a: "one", b: 2 } }] },
          { contentFromTools: "seen: " },
        ],
      }, {
        tools: manager,
      });
      assert.equal(result.endReason, "completed", result.error);
      const [[, content]] = toolMessages(result.messages);
      assert.match(content, /^Error: .*expected number/s);
      assert.equal(result.answer, `seen: ${content}`);
      assert.equal(result.toolCalls[0].outcome, "failed");
      assert.equal(result.toolCalls[0].approval, "not_required");
      assert.match(result.toolCalls[0].error ?? "", /expected number/);
    },
  );

  await t.step("the debug transcript passes every logged text through redact", async () => {
    const secret = "sk-live-SECRET-4242424242";
    const logged: { message: string; properties: Record<string, unknown> }[] = [];
    const { result } = await runScripted({
      turns: [
        { toolCalls: [{ name: "mcp__everything__echo", arguments: { message: `key ${secret}` } }] },
        { contentFromTools: "Done: " },
      ],
    }, {
      prompt: `Please echo my key ${secret}`,
      tools: manager,
      log: { debug: (message, properties) => logged.push({ message, properties }) },
      redact: (value) => value.split(secret).join("[REDACTED]"),
    });
    assert.equal(result.endReason, "completed", result.error);
    // The secret really went through the run (the answer is not redacted, the log is).
    assert.ok(result.answer.includes(secret));
    assert.deepEqual(logged.map((record) => record.message), [
      "model request {iteration}",
      "model reply {iteration}",
      "tool result {name}",
      "model request {iteration}",
      "model reply {iteration}",
      "run ended: {endReason}",
    ]);
    for (const record of logged) {
      const serialized = JSON.stringify(record);
      assert.ok(!serialized.includes(secret), `secret logged in ${serialized}`);
      assert.ok(!serialized.includes("4242424242"), `part of the secret logged in ${serialized}`);
    }
    const redactedIn = logged.filter((record) => JSON.stringify(record).includes("[REDACTED]"))
      .map((record) => record.message);
    assert.deepEqual(redactedIn, [
      "model request {iteration}", // the prompt
      "model reply {iteration}", // the tool call's arguments
      "tool result {name}", // the echo
      "model request {iteration}", // the tool message
      "model reply {iteration}", // the answer
    ]);
  });

  await t.step("a long tool result is redacted before it is cut for the debug log", async () => {
    const secret = "sk-live-SECRET-4242424242";
    // `Echo: ` and 1974 a's put the secret at 1980: a cut at 2000 would keep its first 19.
    const message = `${"a".repeat(1974)}${secret}`;
    const logged: { message: string; properties: Record<string, unknown> }[] = [];
    const { result } = await runScripted({
      turns: [
        { toolCalls: [{ name: "mcp__everything__echo", arguments: { message } }] },
        { content: "done" },
      ],
    }, {
      prompt: "echo it",
      tools: manager,
      log: { debug: (message, properties) => logged.push({ message, properties }) },
      redact: (value) => value.split(secret).join("[REDACTED]"),
    });
    assert.equal(result.endReason, "completed", result.error);
    const [[, content]] = toolMessages(result.messages);
    assert.equal(content.indexOf(secret), 1980, content.slice(0, 10));
    const logResult = String(
      logged.find((record) => record.message === "tool result {name}")
        ?.properties.result,
    );
    assert.ok(!logResult.includes("SECRET"), logResult.slice(1970));
    assert.ok(logResult.endsWith("a[REDACTED]"), logResult.slice(1970));
  });
});

// ---------------------------------------------------------------------------------------------
// Concurrency of one turn's calls

Deno.test("runLoop: one turn's calls overlap on a parallel server, run one by one on a serial one, and come back in call order", async (t) => {
  await using mcp = await startManager([
    fixtureServer("par", ["rendezvous", "add"], {
      supports_parallel_tool_calls: true,
      trust: "full",
    }),
    fixtureServer("ser", ["rendezvous"], { supports_parallel_tool_calls: false, trust: "full" }),
  ]);

  await t.step("supports_parallel_tool_calls: true → the two calls meet", async () => {
    const { result, requests } = await runScripted({
      turns: [
        {
          toolCalls: [
            { id: "r1", name: "mcp__par__rendezvous", arguments: { parties: 2, waitMs: 20_000 } },
            { id: "r2", name: "mcp__par__rendezvous", arguments: { parties: 2, waitMs: 20_000 } },
            // answers at once, i.e. before both rendezvous calls
            { id: "sum", name: "mcp__par__add", arguments: { a: 2, b: 3 } },
          ],
        },
        { contentFromTools: "" },
      ],
    }, {
      tools: mcp.manager,
    });
    assert.equal(result.endReason, "completed", result.error);
    assert.deepEqual(toolMessages(result.messages), [
      ["r1", "in flight together: 2"],
      ["r2", "in flight together: 2"],
      ["sum", "5"],
    ]);
    assert.deepEqual(toolMessages(requests[1].messages), toolMessages(result.messages));
    assert.equal(result.answer, "in flight together: 2\nin flight together: 2\n5");
    assert.deepEqual(result.toolCalls.map((call) => call.outcome), [
      "success",
      "success",
      "success",
    ]);
    // `add` finished first; the records keep the order the model asked in.
    assert.deepEqual(result.toolCalls.map((call) => call.name), [
      "mcp__par__rendezvous",
      "mcp__par__rendezvous",
      "mcp__par__add",
    ]);
  });

  await t.step("supports_parallel_tool_calls: false → each call waits alone", async () => {
    const { result } = await runScripted({
      turns: [
        {
          toolCalls: [
            { id: "s1", name: "mcp__ser__rendezvous", arguments: { parties: 2, waitMs: 300 } },
            { id: "s2", name: "mcp__ser__rendezvous", arguments: { parties: 2, waitMs: 300 } },
          ],
        },
        { contentFromTools: "" },
      ],
    }, {
      tools: mcp.manager,
    });
    assert.equal(result.endReason, "completed", result.error);
    assert.deepEqual(toolMessages(result.messages), [
      ["s1", "in flight together: 1"],
      ["s2", "in flight together: 1"],
    ]);
  });
});

// ---------------------------------------------------------------------------------------------
// Stopping a run

Deno.test("runLoop: iteration limit, run timeout and cancellation each end the run with their reason", async (t) => {
  await using mcp = await startManager([
    fixtureServer("tools", ["add", "hang"], { supports_parallel_tool_calls: true, trust: "full" }),
  ]);
  const { manager } = mcp;

  await t.step("agent.max_iterations: a model that never stops calling tools", async () => {
    const { result, requests } = await runScripted({
      fallback: { toolCalls: [{ name: "mcp__tools__add", arguments: { a: 1, b: 1 } }] },
    }, {
      tools: manager,
      limits: { maxIterations: 3, runTimeoutSeconds: 60 },
    });
    assert.equal(result.endReason, "iteration_limit");
    assert.equal(requests.length, 3);
    assert.equal(result.modelCalls, 3);
    assert.match(
      result.error ?? "",
      /agent\.max_iterations \(3\) model calls without a final answer\. Fix: raise agent\.max_iterations in config\.yaml/,
    );
    assert.equal(result.answer, "");
    assert.deepEqual(result.toolCalls.map((call) => call.outcome), [
      "success",
      "success",
      "success",
    ]);
    assertNoDanglingToolCalls(result.messages);
  });

  await t.step("agent.run_timeout_seconds while the model does not answer", async () => {
    await using model = startHangingModel();
    const started = performance.now();
    const result = await runLoop(runOptions({
      model: modelClient(model.baseUrl),
      tools: manager,
      limits: { maxIterations: 10, runTimeoutSeconds: 0.5 },
    }));
    const took = performance.now() - started;
    assert.equal(result.endReason, "timed_out");
    // Ended by the 0.5 s itself (the message names the setting whatever the timer was).
    assert.ok(took >= 450 && took < 3_000, `the run ended after ${Math.round(took)} ms`);
    assert.match(result.error ?? "", /agent\.run_timeout_seconds \(0\.5 s\)/);
    assert.equal(result.answer, "");
    assert.equal(result.modelCalls, 1);
    assert.equal(result.retries, 0, "a run timeout is not retried");
    assert.equal(model.requests.length, 1);
    assert.deepEqual(result.messages.map((m) => m.role), ["user"]);
  });

  await t.step("agent.run_timeout_seconds while a tool does not answer", async () => {
    await using fake = await startFakeModel({
      turns: [
        {
          toolCalls: [
            { id: "quick", name: "mcp__tools__add", arguments: { a: 1, b: 2 } },
            { id: "stuck", name: "mcp__tools__hang" },
          ],
        },
        { content: "carried on" },
      ],
    });
    const result = await runLoop(runOptions({
      model: modelClient(fake.baseUrl),
      tools: manager,
      limits: { maxIterations: 10, runTimeoutSeconds: 0.5 },
    }));
    assert.equal(result.endReason, "timed_out");
    assert.match(result.error ?? "", /agent\.run_timeout_seconds/);
    assert.equal(result.modelCalls, 1);
    const stuck = result.toolCalls.find((call) => call.name === "mcp__tools__hang");
    assert.ok(stuck, JSON.stringify(result.toolCalls));
    assert.equal(stuck.outcome, "timed_out");
    // Every tool call of the conversation has its tool message, so a chat can go on.
    assertNoDanglingToolCalls(result.messages);
    assert.deepEqual(toolMessages(result.messages).map(([id]) => id).sort(), ["quick", "stuck"]);

    const next = await runLoop(runOptions({
      history: result.messages,
      prompt: "And now?",
      model: modelClient(fake.baseUrl),
      tools: manager,
    }));
    assert.equal(next.endReason, "completed", next.error);
    assert.equal(next.answer, "carried on");
  });

  for (
    const [by, endReason] of [["user", "user_cancelled"], ["system", "system_aborted"]] as const
  ) {
    await t.step(`RunCancelled("${by}") while the model works → ${endReason}`, async () => {
      const controller = new AbortController();
      // Stopped once the request is with the model.
      await using model = startHangingModel(() => controller.abort(new RunCancelled(by)));
      const result = await runLoop(runOptions({
        model: modelClient(model.baseUrl),
        tools: manager,
        signal: controller.signal,
      }));
      assert.equal(result.endReason, endReason);
      assert.equal(result.error, new RunCancelled(by).message);
      assert.equal(result.answer, "");
      assert.equal(result.modelCalls, 1);
      assert.equal(model.requests.length, 1, "a cancelled request is not retried");
    });
  }

  await t.step("abort during a tool call → user_cancelled, the call is cancelled", async () => {
    const controller = new AbortController();
    const host: ToolHost = {
      tools: () => manager.tools(),
      callTool: (name, args, options) => {
        const call = manager.callTool(name, args, options);
        controller.abort(new RunCancelled("user"));
        return call;
      },
    };
    const { result, requests } = await runScripted({
      turns: [{ toolCalls: [{ id: "h", name: "mcp__tools__hang" }] }],
    }, {
      tools: host,
      signal: controller.signal,
    });
    assert.equal(result.endReason, "user_cancelled");
    assert.equal(result.toolCalls.length, 1);
    assert.equal(result.toolCalls[0].outcome, "cancelled");
    assert.equal(result.toolCalls[0].server, "tools");
    assert.equal(requests.length, 1);
    assertNoDanglingToolCalls(result.messages);
    assert.deepEqual(toolMessages(result.messages).map(([id]) => id), ["h"]);
  });
});

Deno.test({
  name:
    "runLoop: a tool call that finished before the run was stopped keeps its result in the conversation",
  fn: async () => {
    await using mcp = await startManager([
      fixtureServer("tools", ["add", "hang"], {
        supports_parallel_tool_calls: true,
        trust: "full",
      }),
    ]);
    const { result } = await runScripted({
      turns: [{
        toolCalls: [
          { id: "quick", name: "mcp__tools__add", arguments: { a: 1, b: 2 } },
          { id: "stuck", name: "mcp__tools__hang" },
        ],
      }],
    }, {
      tools: mcp.manager,
      limits: { maxIterations: 10, runTimeoutSeconds: 0.5 },
    });
    assert.equal(result.endReason, "timed_out");
    assert.equal(
      result.toolCalls.find((call) => call.name === "mcp__tools__add")?.outcome,
      "success",
    );
    assert.deepEqual(toolMessages(result.messages).find(([id]) => id === "quick"), ["quick", "3"]);
  },
});

// ---------------------------------------------------------------------------------------------
// Model failures

Deno.test("runLoop: model failures — retried 5xx, refused key, exhausted retries — and their metrics", async (t) => {
  await t.step("HTTP 500 twice, then an answer: completed after 2 retries", async () => {
    await using home = await metricsHome();
    const { result, requests } = await runScripted({
      turns: [{ status: 500 }, { status: 500 }, { content: "third time lucky" }],
    }, {
      tools: NO_TOOLS,
      metrics: home.metrics.recorder,
    }, { maxRetries: 2 });
    assert.equal(result.endReason, "completed", result.error);
    assert.equal(result.answer, "third time lucky");
    assert.equal(result.retries, 2);
    assert.equal(result.modelCalls, 1);
    assert.equal(requests.length, 3);
    const packages = home.metrics.preview();
    assert.equal(
      valueOf(packages, "agent.task_run.finished", {
        end_reason: "completed",
        retry_count_bucket: "2",
        model_call_count_bucket: "1",
        tool_call_count_bucket: "0",
      }),
      1,
      JSON.stringify(itemsNamed(packages, "agent.task_run.finished")),
    );
    assert.equal(valueOf(packages, "agent.model_call.count", { outcome: "success" }), 1);
  });

  await t.step("HTTP 401: failed at once, naming the key variable", async () => {
    await using home = await metricsHome();
    const { result, requests } = await runScripted({
      apiKey: "sk-the-right-key",
      fallback: { content: "never" },
    }, {
      tools: NO_TOOLS,
      metrics: home.metrics.recorder,
    });
    assert.equal(result.endReason, "failed");
    assert.match(result.error ?? "", /HTTP 401/);
    assert.match(result.error ?? "", /CUSTOM_API_KEY/);
    assert.match(result.error ?? "", /it is not set/);
    assert.equal(result.answer, "");
    assert.equal(result.retries, 0);
    assert.equal(requests.length, 1, "a refused key is not retried");
    const packages = home.metrics.preview();
    assert.equal(
      valueOf(packages, "agent.task_run.finished", {
        end_reason: "failed",
        outcome: "failed",
        retry_count_bucket: "0",
      }),
      1,
    );
    assert.equal(valueOf(packages, "agent.model_call.count", { outcome: "failed" }), 1);
    assert.equal(valueOf(packages, "agent.model_call.count", { outcome: "success" }), 0);
  });

  await t.step("HTTP 500 on every attempt: failed, the retries still counted", async () => {
    await using home = await metricsHome();
    const { result, requests } = await runScripted({ fallback: { status: 503 } }, {
      tools: NO_TOOLS,
      metrics: home.metrics.recorder,
    }, { maxRetries: 2 });
    assert.equal(result.endReason, "failed");
    assert.match(result.error ?? "", /HTTP 503.*after 3 attempts/);
    assert.equal(result.retries, 2);
    assert.equal(requests.length, 3);
    assert.equal(
      valueOf(home.metrics.preview(), "agent.task_run.finished", {
        end_reason: "failed",
        retry_count_bucket: "2",
      }),
      1,
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Bad tool calls

Deno.test("runLoop: unknown tools, broken arguments and tool errors go back to the model as errors", async (t) => {
  await using mcp = await startManager([
    fixtureServer("tools", ["add", "echo"], { trust: "full" }),
  ]);
  const host = countingHost(mcp.manager);

  await t.step("a tool name nobody registered", async () => {
    host.calls.length = 0;
    const { result, requests } = await runScripted({
      turns: [
        { toolCalls: [{ id: "u1", name: "mcp__nowhere__thing", arguments: {} }] },
        { contentFromTools: "model saw: " },
      ],
    }, { tools: host });
    assert.equal(result.endReason, "completed", result.error);
    const [[id, content]] = toolMessages(requests[1].messages);
    assert.equal(id, "u1");
    assert.equal(
      content,
      "Error: there is no tool named 'mcp__nowhere__thing'; available tools: mcp__tools__add, " +
        "mcp__tools__echo",
    );
    assert.equal(result.answer, `model saw: ${content}`);
    assert.deepEqual(host.calls, []);
    const [record] = result.toolCalls;
    assert.equal(record.name, "mcp__nowhere__thing");
    assert.equal(record.server, undefined);
    assert.equal(record.outcome, "failed");
    assert.match(record.error ?? "", /no tool named/);
  });

  await t.step("arguments that are not JSON, or not a JSON object", async () => {
    host.calls.length = 0;
    const { result } = await runScripted({
      turns: [
        {
          toolCalls: [
            { id: "broken", name: "mcp__tools__add", arguments: '{"a": 1, "b":' },
            { id: "list", name: "mcp__tools__add", arguments: "[1, 2]" },
          ],
        },
        { contentFromTools: "" },
      ],
    }, { tools: host });
    assert.equal(result.endReason, "completed", result.error);
    const [[, broken], [, list]] = toolMessages(result.messages);
    assert.match(broken, /^Error: the arguments are not valid JSON \(.+\); send a JSON object$/);
    assert.equal(list, "Error: the arguments must be a JSON object");
    assert.deepEqual(host.calls, [], "no call is made with bad arguments");
    assert.deepEqual(result.toolCalls.map((call) => call.outcome), ["failed", "failed"]);
    assert.equal(result.toolCalls[0].arguments, '{"a": 1, "b":');
  });

  await t.step(
    "arguments cut off at the token limit (finish_reason length): the model and the user are told",
    async () => {
      host.calls.length = 0;
      const cutOffCall = {
        status: 200,
        body: {
          choices: [{
            message: {
              role: "assistant",
              content: null,
              tool_calls: [{
                id: "cut",
                type: "function",
                function: { name: "mcp__tools__echo", arguments: '{"text": "a long te' },
              }],
            },
            finish_reason: "length",
          }],
        },
      };
      const { result } = await runScripted({
        turns: [cutOffCall, cutOffCall, { contentFromTools: "" }],
      }, { tools: host });
      assert.equal(result.endReason, "completed", result.error);
      const [[, cut]] = toolMessages(result.messages);
      assert.match(
        cut,
        /^Error: the arguments are not valid JSON \(.+\); send a JSON object: your answer was cut off at the output token limit in the middle of the arguments, so send shorter ones/,
      );
      assert.deepEqual(host.calls, []);
      assert.deepEqual(result.warnings, [
        'the answer was cut off at the model\'s output token limit (finish_reason "length"); ' +
        "raise model.max_tokens in config.yaml, or ask for a shorter answer",
      ], "said once, however often it happened");
    },
  );

  await t.step("a tool that reports isError (arguments of the wrong type)", async () => {
    host.calls.length = 0;
    const { result } = await runScripted({
      turns: [
        { toolCalls: [{ id: "bad", name: "mcp__tools__add", arguments: { a: "one", b: 2 } }] },
        { toolCalls: [{ id: "good", name: "mcp__tools__add", arguments: { a: 1, b: 2 } }] },
        { contentFromTools: "sum: " },
      ],
    }, { tools: host });
    assert.equal(result.endReason, "completed", result.error);
    assert.equal(result.answer, "sum: 3");
    const [[, bad], [, good]] = toolMessages(result.messages);
    assert.match(bad, /^Error: .*Invalid arguments for tool add/s);
    assert.equal(good, "3");
    assert.deepEqual(host.calls, ["mcp__tools__add", "mcp__tools__add"]);
    assert.deepEqual(result.toolCalls.map((call) => call.outcome), ["failed", "success"]);
    assert.match(result.toolCalls[0].error ?? "", /Invalid arguments for tool add/);
  });
});

// ---------------------------------------------------------------------------------------------
// Trust and approvals

Deno.test("runLoop: write-capable tools of an untrusted server need approval; read-only and trusted ones do not", async (t) => {
  await using mcp = await startManager([
    fixtureServer("notes", ["echo", "write_note"], { trust: "untrusted" }),
    fixtureServer("vault", ["write_note"], { trust: "full" }),
  ]);
  const host = countingHost(mcp.manager);
  const writeCall = { id: "w", name: "mcp__notes__write_note", arguments: { text: "memo" } };

  await t.step("read-only echo: nobody is asked", async () => {
    host.calls.length = 0;
    const { result } = await runScripted({
      turns: [
        { toolCalls: [{ name: "mcp__notes__echo", arguments: { message: "hi" } }] },
        { contentFromTools: "" },
      ],
    }, {
      tools: host,
      approvals: NEVER_ASK,
    });
    assert.equal(result.endReason, "completed", result.error);
    assert.equal(result.answer, "Echo: hi");
    assert.equal(result.toolCalls[0].approval, "not_required");
    assert.equal(result.toolCalls[0].outcome, "success");
  });

  await t.step("write_note denied by policy: not made, the model is told", async () => {
    host.calls.length = 0;
    const { result, requests } = await runScripted({
      turns: [{ toolCalls: [writeCall] }, { contentFromTools: "" }],
    }, {
      tools: host,
      approvals: new PolicyApprovals("deny"),
    });
    assert.equal(result.endReason, "completed", result.error);
    assert.deepEqual(host.calls, [], "the call was not made");
    const [record] = result.toolCalls;
    assert.equal(record.outcome, "blocked");
    assert.equal(record.approval, "denied");
    assert.equal(record.server, "notes");
    const [[id, content]] = toolMessages(requests[1].messages);
    assert.equal(id, "w");
    assert.match(content, /^The call of mcp__notes__write_note was not made: /);
    assert.match(content, /nobody could be asked to approve it, and approvals\.gateway is deny/);
    assert.equal(
      record.error,
      "nobody could be asked to approve it, and approvals.gateway is deny (allow lets such calls run unattended)",
    );
    assert.match(content, /'notes' is untrusted/);
    assert.doesNotMatch(content, /saved:/);
  });

  await t.step("write_note allowed by policy: made", async () => {
    host.calls.length = 0;
    const { result } = await runScripted({
      turns: [{ toolCalls: [writeCall] }, { contentFromTools: "" }],
    }, {
      tools: host,
      approvals: new PolicyApprovals("allow"),
    });
    assert.equal(result.endReason, "completed", result.error);
    assert.equal(result.answer, "saved: memo");
    assert.deepEqual(host.calls, ["mcp__notes__write_note"]);
    assert.equal(result.toolCalls[0].approval, "approved");
    assert.equal(result.toolCalls[0].outcome, "success");
  });

  await t.step(
    "an approval that timed out: blocked, and the request said what and where",
    async () => {
      host.calls.length = 0;
      const surface = new ScriptedApprovals("timed_out");
      const { result } = await runScripted({
        turns: [{ toolCalls: [writeCall] }, { contentFromTools: "" }],
      }, {
        tools: host,
        approvals: surface,
      });
      assert.equal(result.endReason, "completed", result.error);
      assert.deepEqual(host.calls, []);
      assert.equal(result.toolCalls[0].approval, "timed_out");
      assert.equal(result.toolCalls[0].outcome, "blocked");
      assert.match(result.answer, /not made: the approval request timed out/);
      assert.equal(surface.asked.length, 1);
      const [request] = surface.asked;
      assert.equal(request.kind, "tool_call");
      assert.equal(request.server, "notes");
      assert.match(request.summary, /write_note/);
      assert.match(request.detail ?? "", /"text":"memo"/);
    },
  );

  await t.step("an approval surface that fails counts as denied", async () => {
    host.calls.length = 0;
    const { result } = await runScripted({
      turns: [{ toolCalls: [writeCall] }, { contentFromTools: "" }],
    }, {
      tools: host,
      approvals: {
        interactive: true,
        approve: () => Promise.reject(new Error("the terminal went away")),
      },
    });
    assert.equal(result.endReason, "completed", result.error);
    assert.deepEqual(host.calls, []);
    assert.equal(result.toolCalls[0].approval, "denied");
    assert.equal(result.toolCalls[0].outcome, "blocked");
  });

  await t.step("trust: full never asks, even for write_note", async () => {
    host.calls.length = 0;
    const { result } = await runScripted({
      turns: [
        { toolCalls: [{ name: "mcp__vault__write_note", arguments: { text: "kept" } }] },
        { contentFromTools: "" },
      ],
    }, {
      tools: host,
      approvals: NEVER_ASK,
    });
    assert.equal(result.endReason, "completed", result.error);
    assert.equal(result.answer, "saved: kept");
    assert.equal(result.toolCalls[0].approval, "not_required");
    assert.equal(result.toolCalls[0].outcome, "success");
  });
});

Deno.test({
  name: "runLoop: an approval surface that throws (instead of rejecting) counts as denied",
  fn: async () => {
    await using mcp = await startManager([
      fixtureServer("notes", ["write_note"], { trust: "untrusted" }),
    ]);
    const { result } = await runScripted({
      turns: [
        { toolCalls: [{ name: "mcp__notes__write_note", arguments: { text: "memo" } }] },
        { contentFromTools: "" },
      ],
    }, {
      tools: mcp.manager,
      approvals: {
        interactive: true,
        approve: () => {
          throw new Error("the terminal went away");
        },
      },
    });
    assert.equal(result.endReason, "completed", result.error);
    assert.equal(result.toolCalls.length, 1);
    assert.equal(result.toolCalls[0].approval, "denied");
    assert.equal(result.toolCalls[0].outcome, "blocked");
  },
});

// ---------------------------------------------------------------------------------------------
// Usage metrics

Deno.test("runLoop metrics: one run's facts are counted, the package validates, no content leaks", async () => {
  const CANARY = "canary-7f3a9c1e-zebra";
  await using home = await metricsHome();
  await using mcp = await startManager([
    fixtureServer("notes", ["echo", "write_note"], { trust: "untrusted" }),
  ]);
  const { result, requests } = await runScripted({
    turns: [
      { toolCalls: [{ name: "mcp__notes__write_note", arguments: { text: CANARY } }] },
      { contentFromTools: `Stored ${CANARY}: ` },
    ],
  }, {
    prompt: `Remember ${CANARY}`,
    systemPrompt: `System ${CANARY}`,
    tools: mcp.manager,
    approvals: new PolicyApprovals("allow"),
    entrypoint: "interactive",
    surface: "cli",
    metrics: home.metrics.recorder,
  });
  assert.equal(result.endReason, "completed", result.error);
  // The canary went everywhere content goes.
  assert.equal(result.answer, `Stored ${CANARY}: saved: ${CANARY}`);
  assert.ok(JSON.stringify(requests).includes(CANARY));

  const packages = home.metrics.preview();
  assert.ok(packages.length >= 1);
  for (const pkg of packages) {
    const validation = validateMetricsPackage(pkg);
    assert.ok(validation.valid, JSON.stringify(validation));
  }
  const names = new Set(packages.flatMap((pkg) => pkg.metrics.map((item) => item.name)));
  assert.deepEqual([...names].sort(), [
    "agent.client.active",
    "agent.model_call.count",
    "agent.model_route.count",
    "agent.task_run.finished",
    "agent.task_run.started",
    "agent.tool_approval.count",
    "agent.tool_call.count",
  ]);
  const metric = (name: Parameters<typeof itemsNamed>[1]) => {
    const items = itemsNamed(packages, name);
    assert.equal(items.length, 1, `${name}: ${JSON.stringify(items)}`);
    return items[0];
  };
  assert.deepEqual(metric("agent.client.active"), {
    name: "agent.client.active",
    type: "counter",
    dimensions: {},
    value: 1,
  });
  assert.deepEqual(metric("agent.task_run.started").dimensions, {
    entrypoint: "interactive",
    execution_surface: "cli",
  });
  assert.equal(metric("agent.task_run.started").value, 1);
  const finished = metric("agent.task_run.finished");
  assert.equal(finished.value, 1);
  const { duration_bucket, ...finishedRest } = finished.dimensions;
  assert.ok((DURATION_BUCKETS as readonly string[]).includes(duration_bucket));
  assert.deepEqual(finishedRest, {
    end_reason: "completed",
    entrypoint: "interactive",
    execution_surface: "cli",
    model_call_count_bucket: "2",
    outcome: "success",
    retry_count_bucket: "0",
    termination: "none",
    tool_call_count_bucket: "1",
  });
  assert.deepEqual(metric("agent.model_call.count"), {
    name: "agent.model_call.count",
    type: "counter",
    dimensions: {
      call_role: "primary",
      locality: "local",
      model_family: "gpt",
      outcome: "success",
      provider_family: "custom",
    },
    value: 2,
  });
  assert.deepEqual(metric("agent.model_route.count").dimensions, {
    model: "gpt-4.1-mini",
    provider: "custom",
  });
  assert.equal(metric("agent.model_route.count").value, 2);
  const toolCall = metric("agent.tool_call.count");
  assert.equal(toolCall.value, 1);
  const { latency_bucket, ...toolRest } = toolCall.dimensions;
  assert.ok((TOOL_LATENCY_BUCKETS as readonly string[]).includes(latency_bucket));
  assert.notEqual(latency_bucket, "unknown");
  assert.deepEqual(toolRest, {
    approval_outcome: "approved",
    outcome: "success",
    retry_count_bucket: "0",
    tool_category: "mcp",
  });
  assert.deepEqual(metric("agent.tool_approval.count").dimensions, {
    attribution: "tool_call",
    outcome: "approved",
  });
  assert.equal(metric("agent.tool_approval.count").value, 1);

  assert.ok(!JSON.stringify(packages).includes(CANARY), "the canary is in the preview");
  home.metrics.close();
  const stored = filesText(home.config.paths.metrics);
  assert.ok(stored.includes("agent.task_run.finished"), "the store was read");
  assert.ok(!stored.includes(CANARY), "the canary is in the metrics store files");
  assert.ok(!stored.includes("mcp__notes"), "a tool name is in the metrics store files");
});

// ---------------------------------------------------------------------------------------------
// The tool list per turn

Deno.test("runLoop reads the tool list at every turn: the next request offers the new list", async () => {
  const before = [madeUpTool("alpha"), madeUpTool("beta", { description: "" })];
  const after = [madeUpTool("gamma", { inputSchema: { type: "string" } })];
  let current = before;
  const host: ToolHost = {
    tools: () => current,
    callTool: (name) => {
      current = after; // e.g. a reload, or tools/list_changed, during the turn
      return Promise.resolve(text(`ran ${name}`));
    },
  };
  const { result, requests } = await runScripted({
    turns: [
      { toolCalls: [{ name: "mcp__made__alpha" }] },
      { toolCalls: [{ name: "mcp__made__alpha" }] },
      { contentFromTools: "" },
    ],
  }, { tools: host });
  assert.equal(result.endReason, "completed", result.error);
  const offered = requests.map((request) =>
    (request.tools ?? []).map((tool) => tool.function.name)
  );
  assert.deepEqual(offered, [
    ["mcp__made__alpha", "mcp__made__beta"],
    ["mcp__made__gamma"],
    ["mcp__made__gamma"],
  ]);
  // alpha was gone by the second turn: the model is told so.
  assert.deepEqual(result.toolCalls.map((call) => call.outcome), ["success", "failed"]);
  assert.equal(
    toolMessages(result.messages)[1][1],
    "Error: there is no tool named 'mcp__made__alpha'; available tools: mcp__made__gamma",
  );
  // A missing description and a non-object schema are filled in.
  const [beta] = (requests[0].tools ?? []).filter((tool) =>
    tool.function.name === "mcp__made__beta"
  );
  assert.equal(beta.function.description, "Tool 'beta' of MCP server 'made'.");
  assert.deepEqual(requests[1].tools?.[0].function.parameters, {
    type: "object",
    properties: {},
  });
});

Deno.test("runLoop without tools offers none and passes history and warnings through", async () => {
  const history: ChatMessage[] = [
    { role: "user", content: "first question" },
    { role: "assistant", content: "first answer" },
  ];
  const { result, requests } = await runScripted({ turns: [{ content: "second answer" }] }, {
    prompt: "second question",
    history,
    tools: NO_TOOLS,
    warnings: ["skill 'x' was not found"],
  });
  assert.equal(result.endReason, "completed");
  assert.equal(result.answer, "second answer");
  assert.deepEqual(result.warnings, ["skill 'x' was not found"]);
  assert.equal(requests[0].tools, undefined);
  assert.deepEqual(requests[0].messages.map((m) => m.content), [
    "You are the test agent.",
    "first question",
    "first answer",
    "second question",
  ]);
  assert.deepEqual(result.messages, [
    ...history,
    { role: "user", content: "second question" },
    { role: "assistant", content: "second answer" },
  ]);
});

Deno.test("runLoop: an answer the endpoint cut off (length, content_filter) completes with a warning", async () => {
  const cases: Array<[string, RegExp]> = [
    [
      "length",
      /^the answer was cut off at the model's output token limit \(finish_reason "length"\); raise model\.max_tokens/,
    ],
    [
      "content_filter",
      /content filter cut off or withheld the answer \(finish_reason "content_filter"\)$/,
    ],
  ];
  for (const [finishReason, warning] of cases) {
    const { result } = await runScripted({
      turns: [{
        status: 200,
        body: {
          choices: [{
            message: { role: "assistant", content: "partial" },
            finish_reason: finishReason,
          }],
        },
      }],
    }, {
      tools: NO_TOOLS,
      warnings: ["skill 'x' was not found"],
    });
    assert.equal(result.endReason, "completed", finishReason);
    assert.equal(result.answer, "partial");
    assert.equal(result.warnings.length, 2, finishReason);
    assert.equal(result.warnings[0], "skill 'x' was not found");
    assert.match(result.warnings[1], warning);
  }
});

Deno.test("runLoop: an empty final answer (no text, null, blanks) completes with a warning; [SILENT] does not", async () => {
  const reply = (content: unknown, finishReason?: string) => ({
    status: 200,
    body: {
      choices: [{
        message: { role: "assistant", content },
        ...(finishReason === undefined ? {} : { finish_reason: finishReason }),
      }],
    },
  });
  const empty =
    /^the model gave an empty answer \(finish_reason "stop", no text and no tool calls\); try another model \(model\.default in config\.yaml\) or a clearer prompt$/;
  const cases: Array<[string, ReturnType<typeof reply>, string, RegExp[]]> = [
    ["empty text", reply("", "stop"), "", [empty]],
    ["null", reply(null, "stop"), "", [empty]],
    ["blanks only", reply(" \n\t\n", "stop"), "", [empty]],
    ["no finish_reason", reply(""), "", [/^the model gave an empty answer \(no finish_reason, /]],
    // The cut-off warning says why already.
    ["cut off", reply("", "length"), "", [/^the answer was cut off/]],
    ["[SILENT]", reply("[SILENT]", "stop"), "[SILENT]", []],
  ];
  for (const [name, turn, answer, warnings] of cases) {
    await using fake = await startFakeModel({ turns: [turn] });
    const result = await runLoop(runOptions({ model: modelClient(fake.baseUrl), tools: NO_TOOLS }));
    assert.equal(result.endReason, "completed", name);
    assert.equal(result.answer, answer, name);
    assert.equal(result.warnings.length, warnings.length, `${name}: ${result.warnings}`);
    warnings.forEach((warning, index) => assert.match(result.warnings[index], warning, name));
    assert.equal(isEmptyAnswer(result), answer === "", name);
  }
});

// ---------------------------------------------------------------------------------------------
// resultText

Deno.test("resultText: text as is, media and resources described, structured content as JSON", async (t) => {
  await t.step("text parts are joined by newlines", () => {
    assert.equal(
      resultText({ content: [{ type: "text", text: "one" }, { type: "text", text: "two" }] }),
      "one\ntwo",
    );
    assert.equal(resultText({ content: [] }), "");
  });

  await t.step("image and audio: type, mime type and decoded size", () => {
    const eightBytes = btoa("12345678").replace(/=+$/, ""); // 11 characters, no padding
    assert.equal(
      resultText({ content: [{ type: "image", data: btoa("123456"), mimeType: "image/png" }] }),
      "[image image/png, 6 bytes]",
    );
    assert.equal(
      resultText({ content: [{ type: "audio", data: btoa("123456789"), mimeType: "audio/wav" }] }),
      "[audio audio/wav, 9 bytes]",
    );
    assert.equal(
      resultText({ content: [{ type: "image", data: eightBytes, mimeType: "image/gif" }] }),
      "[image image/gif, 8 bytes]",
    );
  });

  await t.step("embedded resources: their text, or their uri, mime type and decoded size", () => {
    assert.equal(
      resultText({
        content: [{
          type: "resource",
          resource: { uri: "note://a", mimeType: "text/plain", text: "the note" },
        }],
      }),
      "the note",
    );
    assert.equal(
      resultText({
        content: [{
          type: "resource",
          resource: { uri: "file:///x.bin", mimeType: "application/octet-stream", blob: "AAAA" },
        }],
      }),
      "[resource file:///x.bin application/octet-stream, 3 bytes]",
    );
    assert.equal(
      resultText({
        content: [{ type: "resource", resource: { uri: "file:///y.bin", blob: btoa("12345") } }],
      }),
      "[resource file:///y.bin, 5 bytes]",
    );
  });

  await t.step("resource links: uri and name", () => {
    assert.equal(
      resultText({
        content: [
          { type: "resource_link", uri: "file:///r/readme.md", name: "readme" },
          { type: "text", text: "after" },
        ],
      }),
      "[resource link file:///r/readme.md (readme)]\nafter",
    );
  });

  await t.step("structured content only when there is nothing else", () => {
    assert.equal(
      resultText({ content: [], structuredContent: { temperature: 21, unit: "C" } }),
      '{"temperature":21,"unit":"C"}',
    );
    assert.equal(
      resultText({
        content: [{ type: "text", text: "21 C" }],
        structuredContent: { temperature: 21 },
      }),
      "21 C",
    );
  });

  await t.step("results over 100 000 characters are cut, saying how long they were", () => {
    const exact = "x".repeat(100_000);
    assert.equal(resultText({ content: [{ type: "text", text: exact }] }), exact);
    const long = "y".repeat(100_001);
    const cut = resultText({ content: [{ type: "text", text: long }] });
    assert.equal(cut, `${"y".repeat(100_000)}\n[… cut: the result was 100001 characters]`);
    // The cut applies to the joined text of all parts.
    const parts = resultText({
      content: [{ type: "text", text: "a".repeat(60_000) }, {
        type: "text",
        text: "b".repeat(60_000),
      }],
    });
    assert.ok(
      parts.startsWith(`${"a".repeat(60_000)}\n${"b".repeat(39_999)}\n[… cut:`),
      parts.slice(99_990, 100_060),
    );
    assert.ok(parts.endsWith("the result was 120001 characters]"));
  });
});

Deno.test({
  name: "resultText: the size of padded base64 media is the decoded size",
  fn: () => {
    assert.equal(
      resultText({ content: [{ type: "image", data: btoa("1"), mimeType: "image/png" }] }),
      "[image image/png, 1 bytes]",
    );
    assert.equal(
      resultText({ content: [{ type: "audio", data: btoa("12345"), mimeType: "audio/wav" }] }),
      "[audio audio/wav, 5 bytes]",
    );
  },
});
