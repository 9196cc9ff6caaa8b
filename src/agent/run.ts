/**
 * The run loop: system prompt + history + the user's prompt go to the model with every
 * registered MCP tool offered as a function tool; the tool calls it asks for are executed (all
 * of one turn at once: the MCP manager runs a server's calls one at a time unless it allows
 * parallel calls), their results go back, until a final answer, the iteration limit, the run
 * timeout, cancellation or an error, each with its own end reason.
 *
 * @module
 */
import type { CallToolResult } from "@modelcontextprotocol/client";
import { codePointCount, cut, firstCodePoints } from "../home/text.ts";
import type { MetricsRecorder } from "../metrics/recorder.ts";
import type {
  EndReason,
  ExecutionSurface,
  TaskEntrypoint,
  ToolApprovalOutcome,
  ToolCallOutcome,
} from "../metrics/contract.ts";
import { McpServerError } from "../mcp/errors.ts";
import type { RegisteredTool } from "../mcp/registry.ts";
import type { ToolCallOptions, ToolProgress } from "../mcp/manager.ts";
import type { ApprovalDecision, ApprovalSurface } from "./approvals.ts";
import {
  type ChatMessage,
  type FunctionTool,
  ModelError,
  type ModelReply,
  type ToolCallRequest,
} from "./model.ts";
import type { ModelSettings, RunLimits } from "./settings.ts";

/** Where tools come from: the MCP manager, or anything shaped like it. */
export interface ToolHost {
  /** The tools to offer now (read at every turn, so a reload is seen at once). */
  tools(): RegisteredTool[];
  callTool(
    name: string,
    args: Record<string, unknown>,
    options: ToolCallOptions,
  ): Promise<CallToolResult>;
}

/** The model, or anything that answers like it. */
export interface ModelHost {
  readonly settings: Pick<ModelSettings, "model" | "provider" | "baseUrl">;
  complete(
    messages: readonly ChatMessage[],
    tools: readonly FunctionTool[],
    options: { signal?: AbortSignal },
  ): Promise<ModelReply>;
}

/** Why a run was stopped from outside: `user` (Ctrl-C) or `system` (shutdown). */
export class RunCancelled extends Error {
  readonly by: "user" | "system";
  constructor(by: "user" | "system", message?: string) {
    super(message ?? (by === "user" ? "cancelled by the user" : "stopped by a shutdown"));
    this.name = "RunCancelled";
    this.by = by;
  }
}

/** Something a watcher (the chat screen, the log) may show while the run goes on. */
export type RunEvent =
  | { type: "model_call"; iteration: number }
  | { type: "tool_call"; id: string; name: string; arguments: string }
  /** A progress report the tool's server sent during the call (`notifications/progress`). */
  | { type: "tool_progress"; id: string; name: string; progress: ToolProgress }
  | {
    type: "tool_result";
    id: string;
    name: string;
    outcome: ToolCallOutcome;
    latencyMs: number;
    text: string;
  };

/** A tool call the run made (or refused), as reported to the caller. */
export interface ToolCallRecord {
  /** The generated name the model used. */
  name: string;
  /** The MCP server, when the tool exists. */
  server?: string;
  /** Arguments as the model sent them (JSON text). */
  arguments: string;
  outcome: ToolCallOutcome;
  approval: ToolApprovalOutcome;
  latencyMs: number;
  /** The error, for calls that did not succeed. */
  error?: string;
}

/** The outcome of one run. */
export interface RunResult {
  /** The final answer; empty when the run ended without one. */
  answer: string;
  endReason: EndReason;
  /** What went wrong, for runs that did not complete. */
  error?: string;
  toolCalls: ToolCallRecord[];
  /** Model calls made. */
  modelCalls: number;
  /** Model-call retries made. */
  retries: number;
  /** The conversation without the system prompt: the history, the prompt and this run's turns. */
  messages: ChatMessage[];
  /** Time spent, in ms: whole run, waiting for the model, waiting for tools. */
  timings: { totalMs: number; modelMs: number; toolMs: number };
  /** Warnings for the user (missing skills, …). */
  warnings: string[];
}

/** Debug sink for the transcript; text passes through `redact` first. */
export interface TranscriptLog {
  debug(message: string, properties: Record<string, unknown>): void;
}

/** Everything one run needs. */
export interface RunOptions {
  /** The system prompt (base text, `agent.system_prompt`, skills). */
  systemPrompt: string;
  /** The user's prompt. */
  prompt: string;
  /** Earlier turns of the conversation (chat), without a system message. */
  history?: readonly ChatMessage[];
  model: ModelHost;
  tools: ToolHost;
  approvals: ApprovalSurface;
  limits: RunLimits;
  /** How the run started, for the metrics. */
  entrypoint: TaskEntrypoint;
  surface: ExecutionSurface;
  metrics?: MetricsRecorder;
  /** Aborting stops the run; a {@linkcode RunCancelled} reason says who stopped it. */
  signal?: AbortSignal;
  /** Monotonic clock in ms. Default `performance.now`. */
  clock?: () => number;
  onEvent?: (event: RunEvent) => void;
  /** Transcript at debug level. */
  log?: TranscriptLog;
  /** Removes secrets from logged text. */
  redact?: (text: string) => string;
  /** Warnings gathered before the run (skills), passed through to the result. */
  warnings?: string[];
}

/** Tool results longer than this many characters are cut before they go back to the model. */
const MAX_TOOL_RESULT_CHARS = 100_000;

/**
 * Runs the agent once.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PolicyApprovals } from "./approvals.ts";
 * import { runLoop } from "./run.ts";
 * const result = await runLoop({
 *   systemPrompt: "You are terse.",
 *   prompt: "hi",
 *   model: {
 *     settings: { model: "m", provider: "custom", baseUrl: "http://127.0.0.1:1/v1" },
 *     complete: () => Promise.resolve({ content: "hello", toolCalls: [], retries: 0 }),
 *   },
 *   tools: { tools: () => [], callTool: () => Promise.reject(new Error("no tools")) },
 *   approvals: new PolicyApprovals("deny"),
 *   limits: { maxIterations: 5, runTimeoutSeconds: 10 },
 *   entrypoint: "interactive",
 *   surface: "cli",
 * });
 * assert(result.answer === "hello" && result.endReason === "completed");
 * ```
 */
export async function runLoop(options: RunOptions): Promise<RunResult> {
  return await new Run(options).execute();
}

class Run {
  readonly #o: RunOptions;
  readonly #clock: () => number;
  readonly #redact: (text: string) => string;
  readonly #timeout = new AbortController();
  readonly #signal: AbortSignal;
  readonly #messages: ChatMessage[];
  readonly #warnings: string[];
  readonly #toolCalls: ToolCallRecord[] = [];
  /** The model's id of each recorded call. */
  readonly #callIds = new WeakMap<ToolCallRecord, string>();
  #modelCalls = 0;
  #retries = 0;
  #modelMs = 0;
  #toolMs = 0;

  constructor(options: RunOptions) {
    this.#o = options;
    this.#clock = options.clock ?? (() => performance.now());
    this.#redact = options.redact ?? ((text) => text);
    this.#signal = options.signal
      ? AbortSignal.any([options.signal, this.#timeout.signal])
      : this.#timeout.signal;
    this.#messages = [...(options.history ?? []), { role: "user", content: options.prompt }];
    this.#warnings = options.warnings ?? [];
  }

  async execute(): Promise<RunResult> {
    const o = this.#o;
    const started = this.#clock();
    o.metrics?.record({ kind: "client_active" });
    o.metrics?.record({ kind: "task_started", entrypoint: o.entrypoint, surface: o.surface });
    const limitMs = o.limits.runTimeoutSeconds * 1000;
    const timer = limitMs > 0
      ? setTimeout(
        () =>
          this.#timeout.abort(
            new Error(
              `the run took longer than agent.run_timeout_seconds (${o.limits.runTimeoutSeconds} s)`,
            ),
          ),
        limitMs,
      )
      : undefined;
    let outcome: { answer: string; endReason: EndReason; error?: string };
    try {
      outcome = await this.#turns();
    } catch (error) {
      outcome = this.#stopped(error);
      this.#closeOpenToolCalls();
    } finally {
      clearTimeout(timer);
    }
    const totalMs = this.#clock() - started;
    o.metrics?.record({
      kind: "task_finished",
      entrypoint: o.entrypoint,
      surface: o.surface,
      durationMs: totalMs,
      endReason: outcome.endReason,
      modelCalls: this.#modelCalls,
      toolCalls: this.#toolCalls.length,
      retries: this.#retries,
    });
    o.log?.debug("run ended: {endReason}", {
      endReason: outcome.endReason,
      error: outcome.error === undefined ? undefined : this.#redact(outcome.error),
      modelCalls: this.#modelCalls,
      toolCalls: this.#toolCalls.length,
      totalMs: Math.round(totalMs),
    });
    return {
      ...outcome,
      toolCalls: this.#toolCalls,
      modelCalls: this.#modelCalls,
      retries: this.#retries,
      messages: this.#messages,
      timings: { totalMs, modelMs: this.#modelMs, toolMs: this.#toolMs },
      warnings: this.#warnings,
    };
  }

  async #turns(): Promise<{ answer: string; endReason: EndReason; error?: string }> {
    const o = this.#o;
    let lastText = "";
    for (let iteration = 1; iteration <= o.limits.maxIterations; iteration++) {
      this.#throwIfStopped();
      const available = o.tools.tools();
      const reply = await this.#callModel(iteration, available);
      this.#messages.push(
        reply.toolCalls.length > 0
          ? { role: "assistant", content: reply.content, tool_calls: reply.toolCalls }
          : { role: "assistant", content: reply.content ?? "" },
      );
      if (reply.content) lastText = reply.content;
      if (reply.toolCalls.length === 0) {
        // Blanks only are no answer: nothing to print or deliver.
        const answer = reply.content?.trim() ? reply.content : "";
        const warning = cutOffWarning(reply.finishReason) ??
          (answer === "" ? emptyAnswerWarning(reply.finishReason) : undefined);
        if (warning && !this.#warnings.includes(warning)) this.#warnings.push(warning);
        return { answer, endReason: "completed" };
      }
      const byName = new Map(available.map((tool) => [tool.name, tool]));
      // Tool calls cut off at the token limit have broken arguments: the model and the user are
      // told why, or the model repeats the same cut-off call until the iteration limit.
      const cutOff = reply.finishReason === "length";
      const warning = cutOff ? cutOffWarning(reply.finishReason) : undefined;
      if (warning && !this.#warnings.includes(warning)) this.#warnings.push(warning);
      const started = this.#clock();
      const recorded = this.#toolCalls.length;
      const results = await Promise.all(
        reply.toolCalls.map((call) => this.#callTool(call, byName.get(call.function.name), cutOff)),
      );
      // Recorded as they finished; kept in the order the model asked for them.
      const order = new Map(reply.toolCalls.map((call, index) => [call.id, index]));
      const batch = this.#toolCalls.splice(recorded);
      batch.sort((a, b) => order.get(this.#callIds.get(a)!)! - order.get(this.#callIds.get(b)!)!);
      this.#toolCalls.push(...batch);
      this.#toolMs += this.#clock() - started;
      // Results first: a call that finished is told as it is, even when the run stops now.
      for (const [index, call] of reply.toolCalls.entries()) {
        this.#messages.push({ role: "tool", tool_call_id: call.id, content: results[index] });
      }
      this.#throwIfStopped();
    }
    return {
      answer: lastText,
      endReason: "iteration_limit",
      error: `the run stopped after agent.max_iterations (${o.limits.maxIterations}) model ` +
        "calls without a final answer. Fix: raise agent.max_iterations in config.yaml if the " +
        "task needs more steps, or ask for less at once",
    };
  }

  async #callModel(iteration: number, available: RegisteredTool[]): Promise<ModelReply> {
    const o = this.#o;
    const { model, provider, baseUrl } = o.model.settings;
    const messages: ChatMessage[] = [
      { role: "system", content: o.systemPrompt },
      ...this.#messages,
    ];
    o.onEvent?.({ type: "model_call", iteration });
    o.log?.debug("model request {iteration}", {
      iteration,
      messages: messages.length,
      tools: available.length,
      last: this.#redact(JSON.stringify(messages.at(-1))),
    });
    this.#modelCalls++;
    const started = this.#clock();
    try {
      const reply = await o.model.complete(messages, available.map(functionTool), {
        signal: this.#signal,
      });
      this.#retries += reply.retries;
      o.metrics?.record({ kind: "model_call", model, provider, baseUrl, outcome: "success" });
      o.metrics?.record({ kind: "model_route", model, provider });
      o.log?.debug("model reply {iteration}", {
        iteration,
        content: reply.content === null ? null : this.#redact(reply.content),
        toolCalls: reply.toolCalls.map((call) => ({
          name: call.function.name,
          arguments: this.#redact(call.function.arguments),
        })),
      });
      return reply;
    } catch (error) {
      if (error instanceof ModelError) this.#retries += error.retries;
      const cancelled = this.#signal.aborted ||
        (error instanceof ModelError && error.kind === "cancelled");
      o.metrics?.record({
        kind: "model_call",
        model,
        provider,
        baseUrl,
        outcome: cancelled ? "cancelled" : "failed",
      });
      o.metrics?.record({ kind: "model_route", model, provider });
      throw error;
    } finally {
      this.#modelMs += this.#clock() - started;
    }
  }

  /** Runs one tool call and returns the text the model gets back; never throws. */
  async #callTool(
    call: ToolCallRequest,
    tool: RegisteredTool | undefined,
    cutOff = false,
  ): Promise<string> {
    const o = this.#o;
    const name = call.function.name;
    o.onEvent?.({ type: "tool_call", id: call.id, name, arguments: call.function.arguments });
    const record: ToolCallRecord = {
      name,
      server: tool?.server,
      arguments: call.function.arguments,
      outcome: "failed",
      approval: "not_required",
      latencyMs: 0,
    };
    this.#callIds.set(record, call.id);
    let retries: number | undefined = 0;
    const finish = (text: string): string => {
      this.#toolCalls.push(record);
      o.metrics?.record({
        kind: "tool_call",
        source: { kind: "mcp" },
        latencyMs: record.latencyMs,
        outcome: record.outcome,
        approval: record.approval,
        retries,
      });
      o.onEvent?.({
        type: "tool_result",
        id: call.id,
        name,
        outcome: record.outcome,
        latencyMs: record.latencyMs,
        text,
      });
      o.log?.debug("tool result {name}", {
        name,
        outcome: record.outcome,
        approval: record.approval,
        latencyMs: Math.round(record.latencyMs),
        result: cut(this.#redact(text), 2000), // redacted first: a cut secret is not found
      });
      return text;
    };
    const fail = (outcome: ToolCallOutcome, error: string): string => {
      record.outcome = outcome;
      record.error = error;
      return finish(`Error: ${error}`);
    };
    if (!tool) {
      retries = undefined;
      const known = o.tools.tools().map((t) => t.name);
      return fail(
        "failed",
        `there is no tool named '${name}'` +
          (known.length > 0
            ? `; available tools: ${known.join(", ")}`
            : "; no tools are available"),
      );
    }
    const args = parseArguments(call.function.arguments);
    if (typeof args === "string") {
      return fail(
        "failed",
        cutOff
          ? `${args}: your answer was cut off at the output token limit in the middle of the ` +
            "arguments, so send shorter ones (or split the work into several calls)"
          : args,
      );
    }
    if (tool.trust === "untrusted" && !tool.readOnly) {
      const decision = await this.#approve(tool, call.function.arguments);
      record.approval = decision;
      if (decision !== "approved") {
        record.outcome = "blocked";
        record.error = decision === "timed_out"
          ? "the approval request timed out"
          : o.approvals.interactive
          ? "the user did not approve the call"
          : "nobody could be asked to approve it, and approvals.gateway is deny (allow lets " +
            "such calls run unattended)";
        return finish(
          `The call of ${name} was not made: ${record.error}. MCP server '${tool.server}' is ` +
            "untrusted, so its write-capable tools need the user's approval.",
        );
      }
    }
    const started = this.#clock();
    try {
      const onEvent = o.onEvent;
      const result = await o.tools.callTool(name, args, {
        signal: this.#signal,
        onRetry: () => retries = (retries ?? 0) + 1,
        // Asked for only when someone shows it.
        ...(onEvent
          ? {
            onProgress: (progress) =>
              onEvent({ type: "tool_progress", id: call.id, name, progress }),
          }
          : {}),
      });
      record.latencyMs = this.#clock() - started;
      const text = resultText(result);
      if (result.isError) {
        record.outcome = "failed";
        record.error = firstCodePoints(text, 500);
        return finish(`Error: ${text}`);
      }
      record.outcome = "success";
      return finish(text);
    } catch (error) {
      record.latencyMs = this.#clock() - started;
      const message = error instanceof Error ? error.message : String(error);
      if (this.#timeout.signal.aborted) return fail("timed_out", message);
      if (this.#signal.aborted) return fail("cancelled", message);
      if (error instanceof McpServerError && error.kind === "timeout") {
        return fail("timed_out", message);
      }
      return fail("failed", message);
    }
  }

  async #approve(tool: RegisteredTool, rawArguments: string): Promise<ApprovalDecision> {
    // A surface that fails (even synchronously) denies: nothing runs without a yes.
    const decision = await Promise.resolve().then(() =>
      this.#o.approvals.approve({
        kind: "tool_call",
        summary: `call tool '${tool.originalName}' of untrusted MCP server '${tool.server}'`,
        detail: `arguments: ${cut(rawArguments, 2000)}`,
        server: tool.server,
      }, { signal: this.#signal })
    ).catch(() => "denied" as const);
    this.#o.metrics?.record({
      kind: "tool_approval",
      attributedToToolCall: true,
      outcome: decision,
    });
    return decision;
  }

  /**
   * A run stopped between a tool-call request and its results leaves calls without an answer;
   * the API refuses such a conversation, so each gets one (a chat goes on after Ctrl-C).
   */
  #closeOpenToolCalls(): void {
    const index = this.#messages.findLastIndex((message) => message.role === "assistant");
    const assistant = this.#messages[index];
    if (assistant?.role !== "assistant" || !assistant.tool_calls) return;
    const answered = new Set(
      this.#messages.slice(index + 1).flatMap((m) => m.role === "tool" ? [m.tool_call_id] : []),
    );
    for (const call of assistant.tool_calls) {
      if (answered.has(call.id)) continue;
      this.#messages.push({
        role: "tool",
        tool_call_id: call.id,
        content: "The call did not complete: the run was stopped.",
      });
    }
  }

  #throwIfStopped(): void {
    if (this.#signal.aborted) throw this.#signal.reason;
  }

  /** The end of a run that did not reach an answer. */
  #stopped(error: unknown): { answer: string; endReason: EndReason; error: string } {
    if (this.#timeout.signal.aborted) {
      return { answer: "", endReason: "timed_out", error: messageOf(this.#timeout.signal.reason) };
    }
    if (this.#o.signal?.aborted) {
      const reason = this.#o.signal.reason;
      const by = reason instanceof RunCancelled ? reason.by : "user";
      return {
        answer: "",
        endReason: by === "system" ? "system_aborted" : "user_cancelled",
        error: reason instanceof RunCancelled ? reason.message : "the run was cancelled",
      };
    }
    return { answer: "", endReason: "failed", error: messageOf(error) };
  }
}

/**
 * What to tell the user about a final answer the endpoint says it did not finish: cut at the
 * token limit, or held back by a content filter. Such an answer still completes the run.
 */
function cutOffWarning(finishReason: string | undefined): string | undefined {
  if (finishReason === "length") {
    return 'the answer was cut off at the model\'s output token limit (finish_reason "length"); ' +
      "raise model.max_tokens in config.yaml, or ask for a shorter answer";
  }
  if (finishReason === "content_filter") {
    return "the model endpoint's content filter cut off or withheld the answer " +
      '(finish_reason "content_filter")';
  }
  return undefined;
}

/** What to tell the user about a final answer with no text (and no tool calls). */
function emptyAnswerWarning(finishReason: string | undefined): string {
  const reason = finishReason === undefined
    ? "no finish_reason"
    : `finish_reason ${JSON.stringify(cut(finishReason, 40))}`;
  return `the model gave an empty answer (${reason}, no text and no tool calls); try another ` +
    "model (model.default in config.yaml) or a clearer prompt";
}

/**
 * Whether a run completed with an empty final answer (no text, or blanks only): a run that
 * ended without an answer as much as one that failed. `[SILENT]` is an answer.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isEmptyAnswer, type RunResult } from "./run.ts";
 * const result = { answer: "", endReason: "completed" } as RunResult;
 * assert.equal(isEmptyAnswer(result), true);
 * assert.equal(isEmptyAnswer({ ...result, answer: "[SILENT]" }), false);
 * assert.equal(isEmptyAnswer({ ...result, endReason: "failed" }), false);
 * ```
 */
export function isEmptyAnswer(result: Pick<RunResult, "answer" | "endReason">): boolean {
  return result.endReason === "completed" && result.answer.trim() === "";
}

function functionTool(tool: RegisteredTool): FunctionTool {
  const schema = tool.inputSchema.type === "object"
    ? tool.inputSchema
    : { type: "object", properties: {} };
  return {
    type: "function",
    function: {
      name: tool.name,
      description: tool.description ||
        `Tool '${tool.originalName}' of MCP server '${tool.server}'.`,
      parameters: schema,
    },
  };
}

/** The arguments as an object, or the error text for the model. */
function parseArguments(text: string): Record<string, unknown> | string {
  if (text.trim() === "") return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return `the arguments are not valid JSON (${messageOf(error)}); send a JSON object`;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return "the arguments must be a JSON object";
  }
  return value as Record<string, unknown>;
}

/**
 * What a tool result says, as text for the model: text parts as they are, other parts
 * described, structured content as JSON when there is nothing else.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resultText } from "./run.ts";
 * assert(resultText({ content: [{ type: "text", text: "42" }] }) === "42");
 * ```
 */
export function resultText(result: CallToolResult): string {
  const parts = (result.content ?? []).map(contentText);
  if (parts.length === 0 && result.structuredContent !== undefined) {
    parts.push(JSON.stringify(result.structuredContent));
  }
  const text = parts.join("\n");
  const kept = firstCodePoints(text, MAX_TOOL_RESULT_CHARS);
  return kept === text
    ? text
    : `${kept}\n[… cut: the result was ${codePointCount(text)} characters]`;
}

/**
 * One part of a tool result as text: a text part as it is, an embedded resource's text, other
 * parts described (`[image image/png, 1024 bytes]`, `[resource file:///b.pdf application/pdf, 300
 * bytes]`, `[resource link file:///a (a)]`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { contentText } from "./run.ts";
 * const part = { type: "resource" as const, resource: { uri: "file:///n.md", text: "# Notes" } };
 * assert(contentText(part) === "# Notes");
 * ```
 */
export function contentText(item: NonNullable<CallToolResult["content"]>[number]): string {
  switch (item.type) {
    case "text":
      return item.text;
    case "image":
    case "audio":
      return `[${item.type} ${item.mimeType}, ${base64Bytes(item.data)} bytes]`;
    case "resource": {
      const resource = item.resource as {
        uri: string;
        mimeType?: string;
        text?: unknown;
        blob?: unknown;
      };
      if (typeof resource.text === "string") return resource.text;
      if (typeof resource.blob !== "string") return `[resource ${resource.uri}]`;
      const type = resource.mimeType ? ` ${resource.mimeType}` : "";
      return `[resource ${resource.uri}${type}, ${base64Bytes(resource.blob)} bytes]`;
    }
    case "resource_link":
      return `[resource link ${item.uri}${item.name ? ` (${item.name})` : ""}]`;
    default:
      return JSON.stringify(item);
  }
}

/** Decoded size of base64 text. */
function base64Bytes(data: string): number {
  const padding = data.match(/=*$/)?.[0].length ?? 0;
  return Math.max(0, Math.floor(data.length * 3 / 4) - padding);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
