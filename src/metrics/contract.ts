/**
 * The vocabulary of the `agent.shared_metrics.v2` contract: every enumeration of SPEC.md's
 * "Usage-metrics package" tables as a readonly tuple, with the matching string-literal type.
 *
 * The JSON Schema in `schemas/shared_metrics.v2.schema.json` is the authority on the wire; these
 * tuples mirror it for the recording API (a test asserts that both agree).
 *
 * @module
 */

/** The constant `schema_version` of every package. */
export const SCHEMA_VERSION = "agent.shared_metrics.v2";

/** Where a run was started from. */
export const EXECUTION_SURFACES = [
  "api",
  "batch",
  "cli",
  "desktop",
  "gateway",
  "other",
  "python",
  "scheduled_task",
  "tui",
  "unknown",
] as const;
/** One of {@linkcode EXECUTION_SURFACES}. */
export type ExecutionSurface = typeof EXECUTION_SURFACES[number];

/** What kind of request started a run. */
export const TASK_ENTRYPOINTS = [
  "api",
  "background",
  "batch",
  "delegated",
  "gateway_message",
  "interactive",
  "other",
  "python",
  "scheduled_task",
  "unknown",
] as const;
/** One of {@linkcode TASK_ENTRYPOINTS}. */
export type TaskEntrypoint = typeof TASK_ENTRYPOINTS[number];

/** Buckets of a run's wall-clock duration. */
export const DURATION_BUCKETS = [
  "lt_1s",
  "1s_to_5s",
  "5s_to_30s",
  "30s_to_2m",
  "2m_to_10m",
  "gte_10m",
] as const;
/** One of {@linkcode DURATION_BUCKETS}. */
export type DurationBucket = typeof DURATION_BUCKETS[number];

/** Buckets of a small count (model calls, tool calls, retries). */
export const COUNT_BUCKETS = ["0", "1", "2", "3_to_5", "6_to_10", "gte_11"] as const;
/** One of {@linkcode COUNT_BUCKETS}. */
export type CountBucket = typeof COUNT_BUCKETS[number];

/** Buckets of one tool call's latency. */
export const TOOL_LATENCY_BUCKETS = [
  "lt_100ms",
  "100ms_to_250ms",
  "250ms_to_500ms",
  "500ms_to_1s",
  "1s_to_2s",
  "2s_to_5s",
  "5s_to_10s",
  "10s_to_30s",
  "gte_30s",
  "unknown",
] as const;
/** One of {@linkcode TOOL_LATENCY_BUCKETS}. */
export type ToolLatencyBucket = typeof TOOL_LATENCY_BUCKETS[number];

/** The count buckets plus `unknown`, for a tool call's retries. */
export const TOOL_RETRY_BUCKETS = [...COUNT_BUCKETS, "unknown"] as const;
/** One of {@linkcode TOOL_RETRY_BUCKETS}. */
export type ToolRetryBucket = typeof TOOL_RETRY_BUCKETS[number];

/** Where a skill came from. */
export const SKILL_PROVENANCES = [
  "agent_created",
  "external",
  "installed",
  "local",
  "unknown",
] as const;
/** One of {@linkcode SKILL_PROVENANCES}. */
export type SkillProvenance = typeof SKILL_PROVENANCES[number];

/** The 21 model-family labels, in schema order (decisions.md §4). */
export const MODEL_FAMILIES = [
  "claude",
  "deepseek",
  "gemini",
  "gemma",
  "glm",
  "gpt",
  "grok",
  "kimi",
  "llama",
  "minimax",
  "mimo",
  "mistral",
  "nemotron",
  "nova",
  "o1",
  "o3",
  "o4",
  "qwen",
  "step",
  "trinity",
  "unknown",
] as const;
/** One of {@linkcode MODEL_FAMILIES}. */
export type ModelFamily = typeof MODEL_FAMILIES[number];

/** Where a model runs relative to this machine. */
export const LOCALITIES = ["local", "remote", "unknown"] as const;
/** One of {@linkcode LOCALITIES}. */
export type Locality = typeof LOCALITIES[number];

/** Outcome of one model call. */
export const MODEL_CALL_OUTCOMES = ["cancelled", "failed", "success"] as const;
/** One of {@linkcode MODEL_CALL_OUTCOMES}. */
export type ModelCallOutcome = typeof MODEL_CALL_OUTCOMES[number];

/** Kind of provider serving a model. */
export const PROVIDER_FAMILIES = ["aggregator", "custom", "direct", "local", "unknown"] as const;
/** One of {@linkcode PROVIDER_FAMILIES}. */
export type ProviderFamily = typeof PROVIDER_FAMILIES[number];

/** Why a run ended. */
export const END_REASONS = [
  "approval_denied",
  "completed",
  "failed",
  "guardrail_blocked",
  "iteration_limit",
  "system_aborted",
  "timed_out",
  "unknown",
  "user_cancelled",
] as const;
/** One of {@linkcode END_REASONS}. */
export type EndReason = typeof END_REASONS[number];

/** Outcome of a finished run. */
export const TASK_OUTCOMES = ["cancelled", "failed", "success", "timed_out", "unknown"] as const;
/** One of {@linkcode TASK_OUTCOMES}. */
export type TaskOutcome = typeof TASK_OUTCOMES[number];

/** How a run was terminated from outside, if it was. */
export const TERMINATIONS = [
  "none",
  "system_aborted",
  "timed_out",
  "unknown",
  "user_cancelled",
] as const;
/** One of {@linkcode TERMINATIONS}. */
export type Termination = typeof TERMINATIONS[number];

/** Approval outcome attached to a tool call. */
export const TOOL_APPROVAL_OUTCOMES = [
  "approved",
  "denied",
  "not_required",
  "timed_out",
  "unknown",
] as const;
/** One of {@linkcode TOOL_APPROVAL_OUTCOMES}. */
export type ToolApprovalOutcome = typeof TOOL_APPROVAL_OUTCOMES[number];

/** Outcome of one tool call. */
export const TOOL_CALL_OUTCOMES = [
  "blocked",
  "cancelled",
  "failed",
  "success",
  "timed_out",
  "unknown",
] as const;
/** One of {@linkcode TOOL_CALL_OUTCOMES}. */
export type ToolCallOutcome = typeof TOOL_CALL_OUTCOMES[number];

/** Category of a tool, from its source (never its name). */
export const TOOL_CATEGORIES = [
  "browser",
  "code_execution",
  "communication",
  "computer_use",
  "delegation",
  "file",
  "home_automation",
  "mcp",
  "media",
  "memory",
  "other",
  "planning",
  "project",
  "scheduler",
  "skill",
  "terminal",
  "unknown",
  "web",
] as const;
/** One of {@linkcode TOOL_CATEGORIES}. */
export type ToolCategory = typeof TOOL_CATEGORIES[number];

/** Whether an approval prompt belonged to a tool call. */
export const APPROVAL_ATTRIBUTIONS = ["tool_call", "unattributed"] as const;

/** Outcome of one approval prompt. */
export const APPROVAL_OUTCOMES = ["approved", "denied", "timed_out", "unknown"] as const;
/** One of {@linkcode APPROVAL_OUTCOMES}. */
export type ApprovalOutcome = typeof APPROVAL_OUTCOMES[number];

/** What happened to a skill. */
export const SKILL_ACTIONS = [
  "archived",
  "created",
  "edited",
  "installed",
  "patched",
  "restored",
  "stale",
] as const;
/** One of {@linkcode SKILL_ACTIONS}. */
export type SkillAction = typeof SKILL_ACTIONS[number];

/** Patch state of a skill when it was loaded. */
export const POST_PATCH_STATES = ["no_new_patch", "not_applicable", "reused_after_patch"] as const;

/** Whether a skill load was its first use. */
export const REUSE_STATES = ["first_use", "reused"] as const;

/** `resource.architecture` values. */
export const ARCHITECTURES = ["arm", "arm64", "unknown", "x86", "x86_64"] as const;
/** One of {@linkcode ARCHITECTURES}. */
export type Architecture = typeof ARCHITECTURES[number];

/** `resource.install_method` values. */
export const INSTALL_METHODS = [
  "apt",
  "docker",
  "git",
  "home-manager",
  "homebrew",
  "nixos",
  "pip",
  "unknown",
] as const;
/** One of {@linkcode INSTALL_METHODS}. */
export type InstallMethod = typeof INSTALL_METHODS[number];

/** `resource.os_family` values. */
export const OS_FAMILIES = ["linux", "macos", "unknown", "windows"] as const;
/** One of {@linkcode OS_FAMILIES}. */
export type OsFamily = typeof OS_FAMILIES[number];

/** The nine metric names, in schema order. */
export const METRIC_NAMES = [
  "agent.client.active",
  "agent.model_call.count",
  "agent.model_route.count",
  "agent.task_run.started",
  "agent.task_run.finished",
  "agent.tool_call.count",
  "agent.tool_approval.count",
  "agent.skill.lifecycle.count",
  "agent.skill.load.count",
] as const;
/** One of {@linkcode METRIC_NAMES}. */
export type MetricName = typeof METRIC_NAMES[number];

/** Pattern of the `model` and `provider` dimensions of `agent.model_route.count`. */
export const ROUTE_VALUE_PATTERN = /^[a-z0-9][a-z0-9._:/@+\-]*$/;

/** The `resource` object of a package. */
export interface MetricsResource {
  architecture: Architecture;
  agent_version: string;
  install_method: InstallMethod;
  os_family: OsFamily;
}

/** One counter of a package. */
export interface MetricItem {
  name: MetricName;
  type: "counter";
  dimensions: Record<string, string>;
  value: number;
}

/** A usage-metrics package, as it goes on the wire. */
export interface MetricsPackage {
  schema_version: typeof SCHEMA_VERSION;
  package_id: string;
  install_id: string;
  period_start: string;
  period_end: string;
  generated_at: string;
  resource: MetricsResource;
  metrics: MetricItem[];
}
