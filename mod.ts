/**
 * The agent service as a library: configuration of a `<home>`, and the usage-metrics package
 * (schema v2 validation and the recording API).
 *
 * @example Validate a usage-metrics package
 * ```ts
 * import { validateMetricsPackage } from "./mod.ts";
 * const result = validateMetricsPackage({ schema_version: "agent.shared_metrics.v2" });
 * console.assert(!result.valid);
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
