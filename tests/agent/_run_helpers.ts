/**
 * Shared helpers of the agent run-loop and session tests: a model client pointed at the fake
 * model, an MCP manager over fixture servers that proves its children are gone on disposal, a
 * temp `<home>` with usage metrics enabled, and readers for preview packages.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type {
  ApprovalDecision,
  ApprovalRequest,
  ApprovalSurface,
} from "../../src/agent/approvals.ts";
import { type ChatMessage, ModelClient } from "../../src/agent/model.ts";
import type { ModelSettings } from "../../src/agent/settings.ts";
import { loadConfig, type ResolvedConfig } from "../../src/home/config.ts";
import type { McpServerConfig } from "../../src/mcp/config.ts";
import { McpManager } from "../../src/mcp/manager.ts";
import type { MetricItem, MetricName, MetricsPackage } from "../../src/metrics/contract.ts";
import { openUsageMetrics, type UsageMetrics } from "../../src/metrics/mod.ts";
import { stdioCommand } from "../fixtures/mcp/spawn.ts";
import { isAlive, serverEntry } from "../mcp/_helpers.ts";

/** The model client of the run tests: the fake model, no waiting between retries. */
export function modelClient(baseUrl: string, overrides: Partial<ModelSettings> = {}): ModelClient {
  return new ModelClient({
    model: "gpt-4.1-mini",
    provider: "custom",
    baseUrl,
    apiKeyVariable: "CUSTOM_API_KEY",
    timeoutSeconds: 10,
    maxRetries: 2,
    ...overrides,
  }, { sleep: () => Promise.resolve() });
}

/** A stdio entry of the fixture server offering `tools`, plus entry fields. */
export function fixtureServer(
  name: string,
  tools: string[],
  fields: Record<string, unknown> = {},
): McpServerConfig {
  return serverEntry(name, {
    ...stdioCommand(["--tools", tools.join(",")]),
    supports_parallel_tool_calls: false,
    trust: "untrusted",
    ...fields,
  });
}

/** Polls `condition` every 20 ms until it holds; fails with `what` after `timeoutMs`. */
export async function until(
  condition: () => boolean,
  timeoutMs: number,
  what: () => string,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms: ${what()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A started one-shot manager; disposal shuts it down and checks every child it saw is gone. */
export async function startManager(
  configs: McpServerConfig[],
): Promise<{ manager: McpManager; pids: number[] } & AsyncDisposable> {
  const manager = new McpManager({ reconnect: false });
  const dispose = async () => {
    const pids = manager.servers().flatMap((state) => state.pid === undefined ? [] : [state.pid]);
    await manager.shutdown();
    await until(
      () => pids.every((pid) => !isAlive(pid)),
      3_000,
      () => `MCP children still running: ${pids.filter(isAlive).join(", ")}`,
    );
  };
  try {
    await manager.start(configs);
    for (const state of manager.servers()) {
      assert.equal(state.status, "connected", `${state.name}: ${state.error}`);
    }
  } catch (error) {
    await dispose();
    throw error;
  }
  return {
    manager,
    pids: manager.servers().flatMap((state) => state.pid === undefined ? [] : [state.pid]),
    [Symbol.asyncDispose]: dispose,
  };
}

/** A temp `<home>` whose config.yaml holds `config` plus usage-metrics consent. */
export async function metricsHome(configText = ""): Promise<
  { home: string; config: ResolvedConfig; metrics: UsageMetrics } & AsyncDisposable
> {
  const home = await Deno.makeTempDir({ prefix: "agent-run-test-" });
  Deno.writeTextFileSync(
    join(home, "config.yaml"),
    `${configText}telemetry:\n  shared_metrics:\n    enabled: true\n`,
  );
  const config = loadConfig({ home, env: () => undefined });
  assert.ok(config.telemetry.enabled, config.telemetry.decidedBy);
  // A fixed clock: every count of a test lands on one day, whatever the time of the run.
  const metrics = openUsageMetrics(config, {
    flushDelayMs: 0,
    now: () => Date.parse("2026-11-21T12:00:00Z"),
  });
  let closed = false;
  return {
    home,
    config,
    metrics,
    async [Symbol.asyncDispose]() {
      if (!closed) metrics.close();
      closed = true;
      await Deno.remove(home, { recursive: true });
    },
  };
}

/** Every metric item of `packages` named `name`. */
export function itemsNamed(packages: MetricsPackage[], name: MetricName): MetricItem[] {
  return packages.flatMap((pkg) => pkg.metrics).filter((item) => item.name === name);
}

/** The summed value of the items named `name` whose dimensions include `dimensions`. */
export function valueOf(
  packages: MetricsPackage[],
  name: MetricName,
  dimensions: Record<string, string> = {},
): number {
  return itemsNamed(packages, name)
    .filter((item) =>
      Object.entries(dimensions).every(([key, value]) => item.dimensions[key] === value)
    )
    .reduce((sum, item) => sum + item.value, 0);
}

/** An approval surface that answers `decision` and remembers what it was asked. */
export class ScriptedApprovals implements ApprovalSurface {
  readonly interactive = true;
  readonly asked: ApprovalRequest[] = [];
  constructor(readonly decision: ApprovalDecision) {}
  approve(request: ApprovalRequest): Promise<ApprovalDecision> {
    this.asked.push(request);
    return Promise.resolve(this.decision);
  }
}

/** An approval surface that must never be asked: it fails when it is (a run counts that as denied). */
export const NEVER_ASK: ApprovalSurface = {
  interactive: false,
  approve(request) {
    return Promise.reject(
      new Error(`no approval should be asked, got: ${JSON.stringify(request)}`),
    );
  },
};

/** The tool messages of a conversation, as `[tool_call_id, content]`. */
export function toolMessages(messages: readonly unknown[]): [string, string][] {
  return (messages as ChatMessage[]).flatMap((message) =>
    message.role === "tool" ? [[message.tool_call_id, message.content] as [string, string]] : []
  );
}

/**
 * Checks the API's rule on a conversation: every assistant tool call is answered by exactly one
 * tool message before the next non-tool message.
 */
export function assertNoDanglingToolCalls(messages: readonly ChatMessage[]): void {
  let open: string[] = [];
  for (const [index, message] of messages.entries()) {
    if (message.role === "tool") {
      assert.ok(
        open.includes(message.tool_call_id),
        `messages[${index}] answers ${message.tool_call_id}, which is not open (${open})`,
      );
      open = open.filter((id) => id !== message.tool_call_id);
      continue;
    }
    assert.deepEqual(open, [], `tool calls left unanswered before messages[${index}]`);
    if (message.role === "assistant") open = (message.tool_calls ?? []).map((call) => call.id);
  }
  assert.deepEqual(open, [], "tool calls left unanswered at the end of the conversation");
}

/** All bytes of the files under `dir` (recursively), as one Latin-1 string for searching. */
export function filesText(dir: string): string {
  let text = "";
  for (const entry of Deno.readDirSync(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) text += filesText(path);
    else if (entry.isFile) text += new TextDecoder("latin1").decode(Deno.readFileSync(path));
  }
  return text;
}

/** A model endpoint that never answers (see {@linkcode startHangingModel}). */
export interface HangingModel extends AsyncDisposable {
  baseUrl: string;
  /** Bodies of the requests received, in order. */
  requests: Record<string, unknown>[];
  /** Answers every pending request (HTTP 499) and stops the server. */
  close(): Promise<void>;
}

/**
 * A chat-completions endpoint that receives requests and never answers them until closed.
 *
 * Why not the fake model's `{hang: true}` turn: it waits for `request.signal`, and Deno's HTTP
 * server does not abort that signal when the client gives up on a request whose body arrived in
 * a second read (bodies over ~300 bytes on loopback), so `FakeModel.close()` then waits forever.
 * This server holds every request until it is closed, whatever the client does.
 */
export function startHangingModel(
  onRequest: (body: Record<string, unknown>) => void = () => {},
): HangingModel {
  const requests: Record<string, unknown>[] = [];
  const pending = new Set<() => void>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const body = await request.json();
    requests.push(body);
    onRequest(body);
    await new Promise<void>((resolve) => {
      const release = () => {
        pending.delete(release);
        resolve();
      };
      pending.add(release);
    });
    return new Response(null, { status: 499 });
  });
  const close = async () => {
    for (const release of [...pending]) release();
    await server.shutdown();
  };
  return {
    baseUrl: `http://127.0.0.1:${server.addr.port}/v1`,
    requests,
    close,
    [Symbol.asyncDispose]: close,
  };
}
