import assert from "node:assert/strict";
import { counterRowOf, MetricsContractError, type MetricsEvent } from "../../src/metrics/events.ts";

Deno.test("task_finished: facts become buckets and end reason decides outcome and termination", () => {
  const row = counterRowOf({
    kind: "task_finished",
    entrypoint: "gateway_message",
    surface: "gateway",
    durationMs: 4_999,
    endReason: "timed_out",
    modelCalls: 3,
    toolCalls: 11,
    retries: 0,
  });
  assert.deepEqual(row, {
    name: "agent.task_run.finished",
    dimensions: {
      duration_bucket: "1s_to_5s",
      end_reason: "timed_out",
      entrypoint: "gateway_message",
      execution_surface: "gateway",
      model_call_count_bucket: "3_to_5",
      outcome: "timed_out",
      retry_count_bucket: "0",
      termination: "timed_out",
      tool_call_count_bucket: "gte_11",
    },
  });
});

Deno.test("task_finished: every end reason maps to a fixed outcome and termination", () => {
  const expected: Record<string, [string, string]> = {
    completed: ["success", "none"],
    failed: ["failed", "none"],
    iteration_limit: ["failed", "none"],
    approval_denied: ["failed", "none"],
    guardrail_blocked: ["failed", "none"],
    timed_out: ["timed_out", "timed_out"],
    user_cancelled: ["cancelled", "user_cancelled"],
    system_aborted: ["cancelled", "system_aborted"],
    unknown: ["unknown", "unknown"],
  };
  for (const [endReason, [outcome, termination]] of Object.entries(expected)) {
    const row = counterRowOf({
      kind: "task_finished",
      entrypoint: "interactive",
      surface: "cli",
      durationMs: 0,
      endReason: endReason as "completed",
      modelCalls: 0,
      toolCalls: 0,
      retries: 0,
    });
    assert.equal(row.dimensions.outcome, outcome, endReason);
    assert.equal(row.dimensions.termination, termination, endReason);
  }
});

Deno.test("model_call: only families and locality are kept, never the id or URL", () => {
  const row = counterRowOf({
    kind: "model_call",
    model: "openai/gpt-4.1-mini",
    provider: "openrouter",
    baseUrl: "http://127.0.0.1:11434/v1",
    outcome: "success",
  });
  assert.deepEqual(row, {
    name: "agent.model_call.count",
    dimensions: {
      call_role: "primary",
      locality: "local",
      model_family: "gpt",
      outcome: "success",
      provider_family: "aggregator",
    },
  });
});

Deno.test("model_route: lower-cased, and values outside the pattern become unknown", () => {
  assert.deepEqual(
    counterRowOf({
      kind: "model_route",
      model: "Anthropic/Claude-Sonnet-4.5",
      provider: "Anthropic",
    })
      .dimensions,
    { model: "anthropic/claude-sonnet-4.5", provider: "anthropic" },
  );
  assert.deepEqual(
    counterRowOf({ kind: "model_route", model: "my model!", provider: "x".repeat(65) }).dimensions,
    { model: "unknown", provider: "unknown" },
  );
});

Deno.test("tool_call: category comes from the source, latency and retries are bucketed", () => {
  assert.deepEqual(
    counterRowOf({
      kind: "tool_call",
      source: { kind: "mcp" },
      latencyMs: 250,
      outcome: "success",
      approval: "not_required",
      retries: 1,
    }).dimensions,
    {
      approval_outcome: "not_required",
      latency_bucket: "250ms_to_500ms",
      outcome: "success",
      retry_count_bucket: "1",
      tool_category: "mcp",
    },
  );
  const builtin = counterRowOf({
    kind: "tool_call",
    source: { kind: "builtin", category: "terminal" },
    outcome: "failed",
    approval: "denied",
  });
  assert.equal(builtin.dimensions.tool_category, "terminal");
  assert.equal(builtin.dimensions.latency_bucket, "unknown");
  assert.equal(builtin.dimensions.retry_count_bucket, "unknown");
});

Deno.test("tool_approval, skill_lifecycle and skill_load dimensions", () => {
  assert.deepEqual(
    counterRowOf({ kind: "tool_approval", attributedToToolCall: false, outcome: "timed_out" }),
    {
      name: "agent.tool_approval.count",
      dimensions: { attribution: "unattributed", outcome: "timed_out" },
    },
  );
  assert.deepEqual(
    counterRowOf({ kind: "skill_lifecycle", action: "patched", provenance: "local" }).dimensions,
    { action: "patched", provenance: "local" },
  );
  assert.deepEqual(
    counterRowOf({
      kind: "skill_load",
      provenance: "installed",
      useCount: 1,
      patchedSinceLastUse: true,
    })
      .dimensions,
    {
      post_patch_state: "not_applicable",
      provenance: "installed",
      reuse_state: "first_use",
      use_count_bucket: "1",
    },
  );
  assert.deepEqual(
    counterRowOf({
      kind: "skill_load",
      provenance: "local",
      useCount: 4,
      patchedSinceLastUse: true,
    })
      .dimensions,
    {
      post_patch_state: "reused_after_patch",
      provenance: "local",
      reuse_state: "reused",
      use_count_bucket: "3_to_5",
    },
  );
  assert.equal(
    counterRowOf({ kind: "skill_load", provenance: "local", useCount: 2 }).dimensions
      .post_patch_state,
    "no_new_patch",
  );
});

Deno.test("facts outside the contract are rejected with a message naming the field", () => {
  const bad: [unknown, RegExp, new (message: string) => Error][] = [
    [
      { kind: "task_started", entrypoint: "web", surface: "cli" },
      /task_started\.entrypoint/,
      MetricsContractError,
    ],
    [
      { kind: "task_started", entrypoint: "api", surface: 3 },
      /task_started\.surface/,
      MetricsContractError,
    ],
    [
      { kind: "model_call", model: 5, provider: "openai", outcome: "success" },
      /model_call\.model/,
      MetricsContractError,
    ],
    [
      { kind: "model_call", model: "gpt-4o", provider: "openai", outcome: "ok" },
      /model_call\.outcome/,
      MetricsContractError,
    ],
    [
      { kind: "tool_call", source: { kind: "shell" }, outcome: "success", approval: "approved" },
      /tool_call\.source/,
      MetricsContractError,
    ],
    [
      {
        kind: "tool_call",
        source: { kind: "builtin", category: "shell" },
        outcome: "success",
        approval: "approved",
      },
      /category/,
      MetricsContractError,
    ],
    [
      { kind: "tool_approval", attributedToToolCall: "yes", outcome: "approved" },
      /attributedToToolCall/,
      MetricsContractError,
    ],
    [{ kind: "skill_load", provenance: "local", useCount: 0 }, /useCount/, RangeError],
    [
      {
        kind: "task_finished",
        entrypoint: "api",
        surface: "api",
        durationMs: -1,
        endReason: "completed",
        modelCalls: 0,
        toolCalls: 0,
        retries: 0,
      },
      /-1/,
      RangeError,
    ],
    [
      {
        kind: "task_finished",
        entrypoint: "api",
        surface: "api",
        durationMs: 1,
        endReason: "completed",
        modelCalls: 1.5,
        toolCalls: 0,
        retries: 0,
      },
      /1\.5/,
      RangeError,
    ],
    [{ kind: "page_view" }, /unknown metrics event kind "page_view"/, MetricsContractError],
  ];
  for (const [event, message, type] of bad) {
    assert.throws(() => counterRowOf(event as MetricsEvent), (error: unknown) => {
      assert.ok(error instanceof type, `${JSON.stringify(event)} threw ${error}`);
      assert.match((error as Error).message, message);
      return true;
    });
  }
});

Deno.test("fields outside the recording API never reach a dimension", () => {
  const canary = "CANARY-7f3a-secret";
  const row = counterRowOf({
    kind: "tool_call",
    source: { kind: "mcp", server: canary } as unknown as { kind: "mcp" },
    outcome: "failed",
    approval: "approved",
    toolName: canary,
    error: canary,
  } as unknown as MetricsEvent);
  assert.ok(!JSON.stringify(row).includes(canary));
});
