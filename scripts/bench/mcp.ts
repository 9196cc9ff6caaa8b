/**
 * MCP client benchmark (`deno task bench`). Prints:
 * - tool-call latency (median, p99) through McpManager versus a bare SDK client on the same
 *   stdio server, in the same process, alternating blocks (target ratio ≤ 1.15);
 * - startup time of 8 stdio servers through the manager versus the slowest single one
 *   (target ≤ 1.5×). Each server waits 1 s before it starts (as servers do that fetch or index
 *   something), so the figure measures the manager's parallelism, not the CPU count; the same
 *   figure without the wait is printed for information.
 * Exits 1 when a target is missed.
 */
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { McpManager } from "../../src/mcp/manager.ts";
import { fixtureArgs, serversFrom } from "./_fixture.ts";

const denoArgs = fixtureArgs("echo");
const results: { name: string; value: string; target: string; ok: boolean }[] = [];

function servers(count: number, startupDelay: boolean) {
  return serversFrom(Array.from({ length: count }, (_, i) => {
    const launch = startupDelay
      ? { command: "sh", args: ["-c", `sleep 1 && exec "$0" "$@"`, Deno.execPath(), ...denoArgs] }
      : { command: Deno.execPath(), args: denoArgs };
    return { name: `s${i}`, ...launch, extra: "    protocol: legacy\n" };
  }));
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

async function benchLatency(): Promise<void> {
  const manager = new McpManager({ reconnect: false });
  await manager.start(servers(1, false));
  const bare = new Client({ name: "bench", version: "0" });
  await bare.connect(
    new StdioClientTransport({ command: Deno.execPath(), args: denoArgs, stderr: "ignore" }),
  );
  const viaManager: number[] = [];
  const viaSdk: number[] = [];
  const args = { message: "bench" };
  for (let i = 0; i < 200; i++) { // warm-up
    await manager.callTool("mcp__s0__echo", args);
    await bare.callTool({ name: "echo", arguments: args });
  }
  for (let block = 0; block < 20; block++) {
    const order = block % 2 === 0 ? ["manager", "sdk"] : ["sdk", "manager"];
    for (const who of order) {
      for (let i = 0; i < 100; i++) {
        const start = performance.now();
        if (who === "manager") await manager.callTool("mcp__s0__echo", args);
        else await bare.callTool({ name: "echo", arguments: args });
        (who === "manager" ? viaManager : viaSdk).push(performance.now() - start);
      }
    }
  }
  await manager.shutdown();
  await bare.close();
  const medianRatio = quantile(viaManager, 0.5) / quantile(viaSdk, 0.5);
  const p99Ratio = quantile(viaManager, 0.99) / quantile(viaSdk, 0.99);
  console.log(
    `tool call via manager: median ${quantile(viaManager, 0.5).toFixed(3)} ms, p99 ${
      quantile(viaManager, 0.99).toFixed(3)
    } ms; ` +
      `bare SDK: median ${quantile(viaSdk, 0.5).toFixed(3)} ms, p99 ${
        quantile(viaSdk, 0.99).toFixed(3)
      } ms (${viaSdk.length} calls each)`,
  );
  results.push({
    name: "call latency ratio, median",
    value: `${medianRatio.toFixed(3)}x`,
    target: "<= 1.15",
    ok: medianRatio <= 1.15,
  });
  results.push({
    name: "call latency ratio, p99",
    value: `${p99Ratio.toFixed(3)}x`,
    target: "<= 1.15",
    ok: p99Ratio <= 1.15,
  });
}

async function startupMs(count: number, startupDelay: boolean): Promise<number> {
  const manager = new McpManager({ reconnect: false });
  const started = performance.now();
  await manager.start(servers(count, startupDelay));
  const elapsed = performance.now() - started;
  const connected = manager.servers().filter((s) => s.status === "connected").length;
  await manager.shutdown();
  if (connected !== count) throw new Error(`only ${connected} of ${count} servers connected`);
  return elapsed;
}

async function benchStartup(startupDelay: boolean): Promise<{ single: number; eight: number }> {
  const singles: number[] = [];
  for (let i = 0; i < 8; i++) singles.push(await startupMs(1, startupDelay));
  const eights: number[] = [];
  for (let i = 0; i < 3; i++) eights.push(await startupMs(8, startupDelay));
  return { single: Math.max(...singles), eight: quantile(eights, 0.5) };
}

await benchLatency();
const delayed = await benchStartup(true);
const ratio = delayed.eight / delayed.single;
console.log(
  `startup with a 1 s server start: 8 servers ${delayed.eight.toFixed(0)} ms, slowest single ${
    delayed.single.toFixed(0)
  } ms`,
);
results.push({
  name: "startup of 8 servers vs slowest single",
  value: `${ratio.toFixed(2)}x`,
  target: "<= 1.5",
  ok: ratio <= 1.5,
});
const cpu = await benchStartup(false);
console.log(
  `for information, CPU-bound start (no wait, ${navigator.hardwareConcurrency} cores): 8 servers ${
    cpu.eight.toFixed(0)
  } ms, ` +
    `slowest single ${cpu.single.toFixed(0)} ms (${(cpu.eight / cpu.single).toFixed(2)}x)`,
);

console.log("\nmetric                                   value      target");
for (const r of results) {
  console.log(
    `${r.name.padEnd(40)} ${r.value.padEnd(10)} ${r.target.padEnd(10)} ${r.ok ? "ok" : "MISSED"}`,
  );
}
if (results.some((r) => !r.ok)) Deno.exit(1);
