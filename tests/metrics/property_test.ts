import assert from "node:assert/strict";
import fc from "fast-check";
import {
  APPROVAL_OUTCOMES,
  END_REASONS,
  EXECUTION_SURFACES,
  MODEL_CALL_OUTCOMES,
  SKILL_ACTIONS,
  SKILL_PROVENANCES,
  TASK_ENTRYPOINTS,
  TOOL_APPROVAL_OUTCOMES,
  TOOL_CALL_OUTCOMES,
  TOOL_CATEGORIES,
} from "../../src/metrics/contract.ts";
import type { MetricsEvent } from "../../src/metrics/events.ts";
import { writePackages } from "../../src/metrics/packager.ts";
import { StoreRecorder } from "../../src/metrics/recorder.ts";
import { validateMetricsPackage } from "../../src/metrics/schema.ts";
import { MetricsStore } from "../../src/metrics/store.ts";
import { listFiles, RESOURCE, sumByName } from "./_helpers.ts";

const CANARY = "zqx-canary-51f0";

const NAME_OF: Record<MetricsEvent["kind"], string> = {
  client_active: "agent.client.active",
  task_started: "agent.task_run.started",
  task_finished: "agent.task_run.finished",
  model_call: "agent.model_call.count",
  model_route: "agent.model_route.count",
  tool_call: "agent.tool_call.count",
  tool_approval: "agent.tool_approval.count",
  skill_lifecycle: "agent.skill.lifecycle.count",
  skill_load: "agent.skill.load.count",
};

/** Private text that callers might have at hand; it must never be stored. */
const privateText = fc.constantFrom(
  `prompt: summarise ${CANARY}`,
  `/home/ada/${CANARY}/notes.md`,
  `https://api.example.com/${CANARY}?token=x`,
  `Error: ENOENT ${CANARY}`,
);
const count = fc.nat({ max: 40 });

const eventArb: fc.Arbitrary<MetricsEvent> = fc.oneof(
  fc.constant({ kind: "client_active" as const }),
  fc.record({
    kind: fc.constant("task_started" as const),
    entrypoint: fc.constantFrom(...TASK_ENTRYPOINTS),
    surface: fc.constantFrom(...EXECUTION_SURFACES),
    prompt: privateText,
  }),
  fc.record({
    kind: fc.constant("task_finished" as const),
    entrypoint: fc.constantFrom(...TASK_ENTRYPOINTS),
    surface: fc.constantFrom(...EXECUTION_SURFACES),
    durationMs: fc.double({ min: 0, max: 3_600_000, noNaN: true }),
    endReason: fc.constantFrom(...END_REASONS),
    modelCalls: count,
    toolCalls: count,
    retries: count,
    answer: privateText,
  }),
  fc.record({
    kind: fc.constant("model_call" as const),
    model: fc.constantFrom("gpt-4o", "anthropic/claude-sonnet-4.5", "qwen3:32b", "acme-private"),
    provider: fc.constantFrom("openai", "openrouter", "ollama", "custom:lab", "acme"),
    baseUrl: fc.option(privateText, { nil: undefined }),
    outcome: fc.constantFrom(...MODEL_CALL_OUTCOMES),
    error: privateText,
  }),
  fc.record({
    kind: fc.constant("model_route" as const),
    model: fc.constantFrom("gpt-4o", "Meta-Llama/Llama-3.1-8B", "bad model name"),
    provider: fc.constantFrom("openai", "OpenRouter", "x".repeat(80)),
  }),
  fc.record({
    kind: fc.constant("tool_call" as const),
    source: fc.oneof(
      fc.constant({ kind: "mcp" as const }),
      fc.record({
        kind: fc.constant("builtin" as const),
        category: fc.constantFrom(...TOOL_CATEGORIES),
      }),
    ),
    latencyMs: fc.option(fc.double({ min: -5, max: 60_000, noNaN: true }), { nil: undefined }),
    outcome: fc.constantFrom(...TOOL_CALL_OUTCOMES),
    approval: fc.constantFrom(...TOOL_APPROVAL_OUTCOMES),
    retries: fc.option(count, { nil: undefined }),
    toolName: privateText,
    args: privateText,
  }),
  fc.record({
    kind: fc.constant("tool_approval" as const),
    attributedToToolCall: fc.boolean(),
    outcome: fc.constantFrom(...APPROVAL_OUTCOMES),
  }),
  fc.record({
    kind: fc.constant("skill_lifecycle" as const),
    action: fc.constantFrom(...SKILL_ACTIONS),
    provenance: fc.constantFrom(...SKILL_PROVENANCES),
    skillName: privateText,
  }),
  fc.record({
    kind: fc.constant("skill_load" as const),
    provenance: fc.constantFrom(...SKILL_PROVENANCES),
    useCount: fc.integer({ min: 1, max: 30 }),
    patchedSinceLastUse: fc.option(fc.boolean(), { nil: undefined }),
    skillPath: privateText,
  }),
) as fc.Arbitrary<MetricsEvent>;

/** An event and how far the clock moves before it. */
const stepArb = fc.tuple(eventArb, fc.integer({ min: 0, max: 9 * 3_600_000 }));

Deno.test("property: packages built from any recorded events validate, sum exactly, hold no private text", async () => {
  const dir = await Deno.makeTempDir({ prefix: "metrics-property-" });
  let run = 0;
  try {
    fc.assert(
      fc.property(
        fc.array(stepArb, { minLength: 1, maxLength: 120 }),
        fc.boolean(),
        (steps, exportMidway) => {
          const base = `${dir}/${run++}`;
          const store = MetricsStore.open(`${base}/metrics.sqlite3`);
          let now = Date.parse("2026-11-01T00:00:00Z");
          const recorder = new StoreRecorder(store, RESOURCE, {
            now: () => now,
            maxBufferedEvents: 17,
          });
          const expected: Record<string, number> = {};
          let lastActive = Number.NEGATIVE_INFINITY;
          for (const [i, [event, advance]] of steps.entries()) {
            now += advance;
            recorder.record(event);
            if (event.kind === "client_active") {
              if (now - lastActive < 86_400_000) continue;
              lastActive = now;
            }
            expected[NAME_OF[event.kind]] = (expected[NAME_OF[event.kind]] ?? 0) + 1;
            if (exportMidway && i === Math.floor(steps.length / 2)) {
              recorder.flush();
              writePackages(store, { outbox: `${base}/outbox`, nowMs: now, includeToday: true });
            }
          }
          recorder.close();
          const built = writePackages(store, {
            outbox: `${base}/outbox`,
            nowMs: now,
            includeToday: true,
          });
          assert.ok(built.length >= 1 || exportMidway);
          store.close();
          const files = listFiles(`${base}/outbox`);
          const packages = files.map((name) =>
            JSON.parse(Deno.readTextFileSync(`${base}/outbox/${name}`))
          );
          for (const pkg of packages) {
            const result = validateMetricsPackage(pkg);
            assert.ok(result.valid, JSON.stringify(result));
            const keys = pkg.metrics.map((m: { name: string; dimensions: object }) =>
              m.name + JSON.stringify(m.dimensions)
            );
            assert.deepEqual(keys, [...keys].sort(), "rows sorted by (name, dimensions)");
          }
          assert.deepEqual(sumByName(packages), expected);
          for (const name of listFiles(base).concat(files.map((f) => `outbox/${f}`))) {
            const path = `${base}/${name}`;
            if (!Deno.statSync(path).isFile) continue;
            const bytes = new TextDecoder("latin1").decode(Deno.readFileSync(path));
            assert.ok(!bytes.includes(CANARY), `private text found in ${name}`);
          }
        },
      ),
      { numRuns: 60 },
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
