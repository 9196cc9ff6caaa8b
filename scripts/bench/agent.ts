/**
 * Run-loop benchmark (`deno task bench`). A run of 4 model turns and 3 tool calls (one per
 * turn, then the answer) against the local fake model server (real HTTP) and a stdio MCP
 * fixture server (real MCP), with usage metrics on. Prints, per model turn, the loop's own
 * overhead: the run's wall time minus the time spent inside the model's HTTP exchanges and
 * inside the MCP manager's tool calls (target: median < 5 ms). The same figures are printed for
 * a bare loop in the same process that makes the same HTTP requests and tool calls with
 * nothing around them (the floor). Exits 1 when the target is missed.
 */
import { join } from "node:path";
import { PolicyApprovals } from "../../src/agent/approvals.ts";
import { ModelClient } from "../../src/agent/model.ts";
import { runLoop, type ToolHost } from "../../src/agent/run.ts";
import { loadConfig } from "../../src/home/config.ts";
import { McpManager } from "../../src/mcp/manager.ts";
import { openUsageMetrics } from "../../src/metrics/mod.ts";
import { startFakeModel, type Turn } from "../../tests/fixtures/fake_model.ts";
import { fixtureArgs, serversFrom } from "./_fixture.ts";

const RUNS = 200;
const WARMUP = 20;
const TURNS = 4;
const TARGET_MS = 5;

const servers = serversFrom([
  { name: "bench", command: Deno.execPath(), args: fixtureArgs("echo,add") },
]);

function script(): Turn[] {
  return [
    { toolCalls: [{ name: "mcp__bench__echo", arguments: { message: "one" } }] },
    { toolCalls: [{ name: "mcp__bench__add", arguments: { a: 2, b: 3 } }] },
    { toolCalls: [{ name: "mcp__bench__echo", arguments: { message: "three" } }] },
    { contentFromTools: "done: " },
  ];
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

const home = await Deno.makeTempDir({ prefix: "agent-bench-" });
Deno.writeTextFileSync(
  join(home, "config.yaml"),
  "telemetry:\n  shared_metrics:\n    enabled: true\n",
);
const metrics = openUsageMetrics(loadConfig({ home, env: () => undefined }));
const fake = await startFakeModel();
const manager = new McpManager({ reconnect: false });
await manager.start(servers);

// Time inside the model's HTTP exchanges and inside tool calls, measured where they happen.
let externalMs = 0;
const timedFetch: typeof fetch = async (input, init) => {
  const started = performance.now();
  try {
    const response = await fetch(input, init);
    const body = await response.arrayBuffer();
    return new Response(body, { status: response.status, headers: response.headers });
  } finally {
    externalMs += performance.now() - started;
  }
};
const tools: ToolHost = {
  tools: () => manager.tools(),
  callTool: async (name, toolArgs, options) => {
    const started = performance.now();
    try {
      return await manager.callTool(name, toolArgs, options);
    } finally {
      externalMs += performance.now() - started;
    }
  },
};
const model = new ModelClient({
  model: "gpt-4.1-mini",
  provider: "custom",
  baseUrl: fake.baseUrl,
  apiKeyVariable: "CUSTOM_API_KEY",
  timeoutSeconds: 30,
  maxRetries: 0,
}, { fetch: timedFetch });
const approvals = new PolicyApprovals("deny");

async function loopRun(): Promise<number> {
  fake.push(...script());
  externalMs = 0;
  const started = performance.now();
  const result = await runLoop({
    systemPrompt: "You are a benchmark.",
    prompt: "Run the three tools.",
    model,
    tools,
    approvals,
    limits: { maxIterations: 20, runTimeoutSeconds: 60 },
    entrypoint: "interactive",
    surface: "cli",
    metrics: metrics.recorder,
  });
  const total = performance.now() - started;
  if (result.endReason !== "completed" || result.toolCalls.length !== 3) {
    throw new Error(`unexpected run: ${result.endReason} ${result.error ?? ""}`);
  }
  return (total - externalMs) / TURNS;
}

/** The same exchanges with nothing around them: the floor of any loop. */
async function bareRun(): Promise<number> {
  fake.push(...script());
  externalMs = 0;
  const started = performance.now();
  const messages: unknown[] = [{ role: "system", content: "You are a benchmark." }, {
    role: "user",
    content: "Run the three tools.",
  }];
  const offered = manager.tools().map((tool) => ({
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
  }));
  for (let turn = 0; turn < TURNS; turn++) {
    const response = await timedFetch(`${fake.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4.1-mini", messages, tools: offered }),
    });
    const message = (await response.json()).choices[0].message;
    messages.push(message);
    for (const call of message.tool_calls ?? []) {
      const result = await tools.callTool(
        call.function.name,
        JSON.parse(call.function.arguments),
        {},
      );
      const text = (result.content as { text: string }[]).map((c) => c.text).join("\n");
      messages.push({ role: "tool", tool_call_id: call.id, content: text });
    }
  }
  return (performance.now() - started - externalMs) / TURNS;
}

try {
  for (let i = 0; i < WARMUP; i++) {
    await loopRun();
    await bareRun();
  }
  const loop: number[] = [];
  const bare: number[] = [];
  // Alternating blocks, so drift on the machine affects both alike.
  for (let i = 0; i < RUNS; i++) {
    loop.push(await loopRun());
    bare.push(await bareRun());
  }
  const fmt = (ms: number) => `${ms.toFixed(3)} ms`;
  const loopMedian = quantile(loop, 0.5);
  const bareMedian = quantile(bare, 0.5);
  console.log(`run loop, ${RUNS} runs of ${TURNS} model turns + 3 tool calls (metrics on):`);
  console.log(
    `  loop overhead per turn: median ${fmt(loopMedian)}, p95 ${fmt(quantile(loop, 0.95))}` +
      ` (target: median < ${TARGET_MS} ms)`,
  );
  console.log(
    `  bare loop (same requests, no policy): median ${fmt(bareMedian)}, p95 ${
      fmt(quantile(bare, 0.95))
    }`,
  );
  console.log(
    `  our loop minus bare: ${fmt(loopMedian - bareMedian)} per turn; ratio ${
      (loopMedian / bareMedian).toFixed(2)
    }×`,
  );
  if (loopMedian >= TARGET_MS) {
    console.log(`FAIL: median overhead ${fmt(loopMedian)} ≥ ${TARGET_MS} ms`);
    Deno.exitCode = 1;
  }
} finally {
  await manager.shutdown();
  await fake.close();
  metrics.close();
  await Deno.remove(home, { recursive: true });
}
