/**
 * The recording API's vocabulary: runtime facts in, counter rows out. Facts are what the code
 * knows when something happens (a duration in ms, a model id, a count); this module applies the
 * classifiers and buckets of decisions.md §4 and rejects anything outside the contract. Only
 * enumerated values and schema-checked route strings ever leave it: prompts, names, ids, paths,
 * URLs and error text have no field to travel in.
 *
 * @module
 */
import { cut } from "../home/text.ts";
import { countBucket, durationBucket, toolLatencyBucket, toolRetryBucket } from "./buckets.ts";
import { locality, modelFamily, providerFamily, routeModel, routeProvider } from "./classify.ts";
import {
  APPROVAL_OUTCOMES,
  type ApprovalOutcome,
  END_REASONS,
  type EndReason,
  EXECUTION_SURFACES,
  type ExecutionSurface,
  type MetricName,
  MODEL_CALL_OUTCOMES,
  type ModelCallOutcome,
  SKILL_ACTIONS,
  SKILL_PROVENANCES,
  type SkillAction,
  type SkillProvenance,
  TASK_ENTRYPOINTS,
  type TaskEntrypoint,
  type TaskOutcome,
  type Termination,
  TOOL_APPROVAL_OUTCOMES,
  TOOL_CALL_OUTCOMES,
  TOOL_CATEGORIES,
  type ToolApprovalOutcome,
  type ToolCallOutcome,
  type ToolCategory,
} from "./contract.ts";

/** Where a tool comes from; its category is derived from this, never from its name. */
export type ToolSource = { kind: "mcp" } | { kind: "builtin"; category: ToolCategory };

/** One fact worth counting. */
export type MetricsEvent =
  | { kind: "client_active" }
  | { kind: "task_started"; entrypoint: TaskEntrypoint; surface: ExecutionSurface }
  | {
    kind: "task_finished";
    entrypoint: TaskEntrypoint;
    surface: ExecutionSurface;
    /** Wall-clock duration of the run. */
    durationMs: number;
    endReason: EndReason;
    /** Model calls made by the run. */
    modelCalls: number;
    /** Tool calls made by the run. */
    toolCalls: number;
    /** Model-call retries made by the run. */
    retries: number;
  }
  | {
    kind: "model_call";
    /** Model id as configured, e.g. `openai/gpt-4.1-mini`: only its family is counted. */
    model: string;
    /** Provider as configured, e.g. `openrouter`: only its family is counted. */
    provider: string;
    /** Endpoint base URL: only whether it is local is counted. */
    baseUrl?: string;
    outcome: ModelCallOutcome;
  }
  | {
    kind: "model_route";
    /**
     * Model id as configured: kept (lower-cased) when it is an id such as `gpt-4o` or
     * `meta-llama/llama-3.1-8b-instruct`; a path, URL, host or e-mail address is `unknown`.
     */
    model: string;
    /** Provider as configured: kept when it is an id; `custom:<anything>` is `custom`. */
    provider: string;
  }
  | {
    kind: "tool_call";
    source: ToolSource;
    /** Latency of the call; missing or invalid → `unknown`. */
    latencyMs?: number;
    outcome: ToolCallOutcome;
    approval: ToolApprovalOutcome;
    /** Retries of the call; missing → `unknown`. */
    retries?: number;
  }
  | { kind: "tool_approval"; attributedToToolCall: boolean; outcome: ApprovalOutcome }
  | { kind: "skill_lifecycle"; action: SkillAction; provenance: SkillProvenance }
  | {
    kind: "skill_load";
    provenance: SkillProvenance;
    /** Uses of the skill including this one (≥ 1). */
    useCount: number;
    /** Whether the skill was patched since its previous use; ignored on first use. */
    patchedSinceLastUse?: boolean;
  };

/** A counter row: metric name and its closed dimensions. */
export interface CounterRow {
  name: MetricName;
  dimensions: Record<string, string>;
}

/** A fact that breaks the metrics contract (unknown enum value, bad number, unknown kind). */
export class MetricsContractError extends TypeError {
  constructor(message: string) {
    super(message);
    this.name = "MetricsContractError";
  }
}

/** How each end reason reads as outcome and termination. */
const END_REASON_EFFECTS: Record<EndReason, { outcome: TaskOutcome; termination: Termination }> = {
  completed: { outcome: "success", termination: "none" },
  failed: { outcome: "failed", termination: "none" },
  iteration_limit: { outcome: "failed", termination: "none" },
  approval_denied: { outcome: "failed", termination: "none" },
  guardrail_blocked: { outcome: "failed", termination: "none" },
  timed_out: { outcome: "timed_out", termination: "timed_out" },
  user_cancelled: { outcome: "cancelled", termination: "user_cancelled" },
  system_aborted: { outcome: "cancelled", termination: "system_aborted" },
  unknown: { outcome: "unknown", termination: "unknown" },
};

/**
 * Turns a fact into its counter row. Throws {@linkcode MetricsContractError} (or `RangeError`
 * for a bad number) when the fact is outside the contract. `client_active` maps to
 * `agent.client.active` with no dimensions; its once-a-day latch is the store's job.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { counterRowOf } from "./events.ts";
 * const row = counterRowOf({ kind: "model_route", model: "GPT-4o", provider: "OpenAI" });
 * assert(row.dimensions.model === "gpt-4o" && row.dimensions.provider === "openai");
 * ```
 */
export function counterRowOf(event: MetricsEvent): CounterRow {
  switch (event.kind) {
    case "client_active":
      return { name: "agent.client.active", dimensions: {} };
    case "task_started":
      return {
        name: "agent.task_run.started",
        dimensions: {
          entrypoint: oneOf("task_started.entrypoint", event.entrypoint, TASK_ENTRYPOINTS),
          execution_surface: oneOf("task_started.surface", event.surface, EXECUTION_SURFACES),
        },
      };
    case "task_finished": {
      const endReason = oneOf("task_finished.endReason", event.endReason, END_REASONS);
      const { outcome, termination } = END_REASON_EFFECTS[endReason];
      return {
        name: "agent.task_run.finished",
        dimensions: {
          duration_bucket: durationBucket(event.durationMs),
          end_reason: endReason,
          entrypoint: oneOf("task_finished.entrypoint", event.entrypoint, TASK_ENTRYPOINTS),
          execution_surface: oneOf("task_finished.surface", event.surface, EXECUTION_SURFACES),
          model_call_count_bucket: countBucket(event.modelCalls),
          outcome,
          retry_count_bucket: countBucket(event.retries),
          termination,
          tool_call_count_bucket: countBucket(event.toolCalls),
        },
      };
    }
    case "model_call":
      return {
        name: "agent.model_call.count",
        dimensions: {
          call_role: "primary",
          locality: locality(text("model_call.provider", event.provider), event.baseUrl),
          model_family: modelFamily(text("model_call.model", event.model)),
          outcome: oneOf("model_call.outcome", event.outcome, MODEL_CALL_OUTCOMES),
          provider_family: providerFamily(event.provider),
        },
      };
    case "model_route":
      return {
        name: "agent.model_route.count",
        dimensions: {
          model: routeModel(text("model_route.model", event.model)),
          provider: routeProvider(text("model_route.provider", event.provider)),
        },
      };
    case "tool_call":
      return {
        name: "agent.tool_call.count",
        dimensions: {
          approval_outcome: oneOf("tool_call.approval", event.approval, TOOL_APPROVAL_OUTCOMES),
          latency_bucket: toolLatencyBucket(event.latencyMs),
          outcome: oneOf("tool_call.outcome", event.outcome, TOOL_CALL_OUTCOMES),
          retry_count_bucket: toolRetryBucket(event.retries),
          tool_category: toolCategoryOf(event.source),
        },
      };
    case "tool_approval":
      if (typeof event.attributedToToolCall !== "boolean") {
        throw new MetricsContractError("tool_approval.attributedToToolCall must be a boolean");
      }
      return {
        name: "agent.tool_approval.count",
        dimensions: {
          attribution: event.attributedToToolCall ? "tool_call" : "unattributed",
          outcome: oneOf("tool_approval.outcome", event.outcome, APPROVAL_OUTCOMES),
        },
      };
    case "skill_lifecycle":
      return {
        name: "agent.skill.lifecycle.count",
        dimensions: {
          action: oneOf("skill_lifecycle.action", event.action, SKILL_ACTIONS),
          provenance: oneOf("skill_lifecycle.provenance", event.provenance, SKILL_PROVENANCES),
        },
      };
    case "skill_load": {
      if (!Number.isInteger(event.useCount) || event.useCount < 1) {
        throw new RangeError(`skill_load.useCount must be an integer ≥ 1, got ${event.useCount}`);
      }
      const firstUse = event.useCount === 1;
      return {
        name: "agent.skill.load.count",
        dimensions: {
          post_patch_state: firstUse
            ? "not_applicable"
            : event.patchedSinceLastUse
            ? "reused_after_patch"
            : "no_new_patch",
          provenance: oneOf("skill_load.provenance", event.provenance, SKILL_PROVENANCES),
          reuse_state: firstUse ? "first_use" : "reused",
          use_count_bucket: countBucket(event.useCount),
        },
      };
    }
    default: {
      const kind = (event as { kind?: unknown })?.kind;
      throw new MetricsContractError(`unknown metrics event kind ${JSON.stringify(kind)}`);
    }
  }
}

function toolCategoryOf(source: ToolSource): ToolCategory {
  if (source?.kind === "mcp") return "mcp";
  if (source?.kind === "builtin") {
    return oneOf("tool_call.source.category", source.category, TOOL_CATEGORIES);
  }
  throw new MetricsContractError(
    'tool_call.source must be { kind: "mcp" } or { kind: "builtin", category }',
  );
}

function oneOf<const T extends readonly string[]>(
  field: string,
  value: unknown,
  allowed: T,
): T[number] {
  if (typeof value === "string" && (allowed as readonly string[]).includes(value)) return value;
  const got = JSON.stringify(value);
  throw new MetricsContractError(
    `${field} must be one of ${allowed.join(", ")}; got ${got === undefined ? got : cut(got, 40)}`,
  );
}

function text(field: string, value: unknown): string {
  if (typeof value === "string") return value;
  throw new MetricsContractError(`${field} must be a string; got ${typeof value}`);
}
