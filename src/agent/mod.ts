/**
 * Agent runs: the model client, the run loop over MCP tools, skills and the approval surface.
 *
 * @example Run once against a configured `<home>`
 * ```ts ignore
 * import { runAgent } from "./mod.ts";
 * const result = await runAgent("Summarise today's notes", { skills: ["notes"] });
 * console.log(result.endReason, result.answer);
 * ```
 *
 * @module
 */
import { loadConfig } from "../home/config.ts";
import type { EnvReader } from "../home/paths.ts";
import type { ExecutionSurface, TaskEntrypoint } from "../metrics/contract.ts";
import type { ApprovalSurface } from "./approvals.ts";
import type { RunEvent, RunResult } from "./run.ts";
import { AgentSession } from "./session.ts";

export {
  type ApprovalDecision,
  type ApprovalRequest,
  type ApprovalSurface,
  type AskLine,
  PolicyApprovals,
  PromptApprovals,
} from "./approvals.ts";
export {
  type ChatMessage,
  type FunctionTool,
  ModelClient,
  type ModelClientOptions,
  ModelError,
  type ModelErrorKind,
  type ModelReply,
  type ToolCallRequest,
} from "./model.ts";
export { buildSystemPrompt } from "./prompt.ts";
export {
  isEmptyAnswer,
  type ModelHost,
  resultText,
  RunCancelled,
  type RunEvent,
  runLoop,
  type RunOptions,
  type RunResult,
  type ToolCallRecord,
  type ToolHost,
} from "./run.ts";
export {
  AgentSession,
  type AgentSessionOptions,
  type McpReload,
  type RunRequestOptions,
} from "./session.ts";
export {
  type AgentSettings,
  type ApprovalPolicy,
  type ModelSettings,
  readAgentSettings,
  readModelSettings,
  type RunLimits,
} from "./settings.ts";
export { listSkills, loadSkills, type Skill, type SkillLoad } from "./skills.ts";
// Whether a model's base URL is this machine (a local server needs no key): shared with src/home.
export { isLoopbackHost } from "../home/loopback.ts";

/** Options of {@linkcode runAgent}. */
export interface RunAgentOptions {
  /** `<home>`; default `$AGENT_HOME` or `~/.agent`. */
  home?: string;
  /** Environment reader (secrets fall back to it, stdio servers inherit from it). */
  env?: EnvReader;
  /** Skills to load from `<home>/skills/`. */
  skills?: readonly string[];
  /** Aborting cancels the run (a `RunCancelled` reason says who stopped it). */
  signal?: AbortSignal;
  /** How the run counts in the usage metrics. Default `api` / `api`. */
  entrypoint?: TaskEntrypoint;
  surface?: ExecutionSurface;
  /** Who answers approvals. Default the `approvals.gateway` policy (deny unless `allow`). */
  approvals?: ApprovalSurface;
  /** Progress of the run. */
  onEvent?: (event: RunEvent) => void;
}

/**
 * Runs the agent once on `prompt` with `<home>`'s configuration: connects the MCP servers, runs
 * the loop, closes everything. Model and tool failures are the result's `endReason` and `error`;
 * an unusable configuration throws a `ConfigError` naming the file, key and fix.
 *
 * @throws {TypeError} when `prompt` is empty or only whitespace, before the configuration is
 * read or anything is contacted.
 */
export async function runAgent(prompt: string, options: RunAgentOptions = {}): Promise<RunResult> {
  if (typeof prompt !== "string") {
    throw new TypeError(`the prompt must be a string, not ${describeType(prompt)}`);
  }
  if (prompt.trim() === "") {
    throw new TypeError("the prompt is empty: pass runAgent the text to send to the model");
  }
  const config = loadConfig({ env: options.env, home: options.home });
  const session = await AgentSession.open({
    config,
    entrypoint: options.entrypoint ?? "api",
    surface: options.surface ?? "api",
    approvals: options.approvals,
    env: options.env,
    reconnect: false,
  });
  try {
    return await session.run(prompt, {
      skills: options.skills,
      signal: options.signal,
      onEvent: options.onEvent,
    });
  } finally {
    await session.close();
  }
}

function describeType(value: unknown): string {
  return value === null ? "null" : Array.isArray(value) ? "an array" : typeof value;
}
