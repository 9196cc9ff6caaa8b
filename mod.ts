/**
 * The agent service as a library: agent runs over the MCP servers of a `<home>`, its
 * configuration, and the usage-metrics package (schema v2 validation and the recording API).
 *
 * @example Run the agent once (here against a one-answer stand-in for the model API)
 * ```ts
 * import assert from "node:assert/strict";
 * import { runAgent } from "./mod.ts";
 * const model = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () =>
 *   Response.json({ choices: [{ message: { role: "assistant", content: "4" }, finish_reason: "stop" }] }));
 * const home = await Deno.makeTempDir();
 * Deno.writeTextFileSync(
 *   `${home}/config.yaml`,
 *   `model:\n  default: qwen2.5:7b\n  base_url: http://127.0.0.1:${model.addr.port}/v1\n`,
 * );
 * const result = await runAgent("What is 2 + 2?", { home, env: () => undefined });
 * assert(result.endReason === "completed" && result.answer === "4");
 * await model.shutdown();
 * ```
 *
 * @example Validate a usage-metrics package
 * ```ts
 * import assert from "node:assert/strict";
 * import { validateMetricsPackage } from "./mod.ts";
 * const result = validateMetricsPackage({ schema_version: "agent.shared_metrics.v2" });
 * assert(!result.valid);
 * ```
 *
 * @example Record facts into the store of a `<home>` that opted in
 * ```ts
 * import { loadConfig, openUsageMetrics } from "./mod.ts";
 * const home = await Deno.makeTempDir();
 * Deno.writeTextFileSync(`${home}/config.yaml`, "telemetry:\n  shared_metrics:\n    enabled: true\n");
 * const metrics = openUsageMetrics(loadConfig({ home }));
 * metrics.recorder.record({ kind: "model_call", model: "gpt-4o", provider: "openai", outcome: "success" });
 * metrics.close();
 * ```
 *
 * @module
 */
export {
  AgentSession,
  type AgentSessionOptions,
  type AgentSettings,
  type ApprovalDecision,
  type ApprovalPolicy,
  type ApprovalRequest,
  type ApprovalSurface,
  type AskLine,
  type ChatMessage,
  type FunctionTool,
  isEmptyAnswer,
  ModelClient,
  type ModelClientOptions,
  ModelError,
  type ModelErrorKind,
  type ModelHost,
  type ModelReply,
  type ModelSettings,
  PolicyApprovals,
  PromptApprovals,
  readAgentSettings,
  runAgent,
  type RunAgentOptions,
  RunCancelled,
  type RunEvent,
  type RunLimits,
  runLoop,
  type RunOptions,
  type RunResult,
  type ToolCallRecord,
  type ToolCallRequest,
  type ToolHost,
} from "./src/agent/mod.ts";
export {
  ConfigSource,
  loadConfig,
  type LoadConfigOptions,
  type ResolvedConfig,
  type TelemetrySettings,
} from "./src/home/config.ts";
export { ConfigError, type ConfigLocation } from "./src/home/errors.ts";
export { type EnvReader, type HomePaths, homePaths, resolveHome } from "./src/home/paths.ts";
export { SecretScope } from "./src/home/secrets.ts";
export {
  loadMcpServers,
  loginMcpServer,
  McpManager,
  type McpServerConfig,
  McpServerError,
  type RegisteredTool,
  type ReloadReport,
  storedOAuth,
} from "./src/mcp/mod.ts";
export { type ElicitationForm, type FormAnswer } from "./src/mcp/elicitation.ts";
export {
  type MetricItem,
  MetricsContractError,
  type MetricsEvent,
  type MetricsPackage,
  type MetricsRecorder,
  type MetricsResource,
  type MetricsValidationError,
  type MetricsValidationResult,
  openExistingUsageMetrics,
  openUsageMetrics,
  SCHEMA_VERSION,
  sharedMetricsSchema,
  type ToolSource,
  UsageMetrics,
  type UsageMetricsOptions,
  validateMetricsPackage,
} from "./src/metrics/mod.ts";
export { AGENT_VERSION } from "./src/version.ts";
