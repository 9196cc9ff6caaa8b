/**
 * MCP sampling (decisions.md §5 "Sampling keys"): a server asks the client's model for a
 * completion. {@linkcode SamplingResponder} serves `sampling/createMessage` within the server's
 * `sampling` settings:
 *
 * - **model**: `sampling.model`, else `model.default`. The request's `modelPreferences.hints` are
 *   honoured only within `allowed_models`: the first hint naming an allowed model (exactly, else
 *   as a substring, case-insensitive) picks it; hints naming anything else are ignored. With
 *   `allowed_models` empty the server never picks. When `allowed_models` is set and the default
 *   model is not in it, the first allowed model is used ({@linkcode chooseSamplingModel}).
 * - **max_tokens_cap**: a larger `maxTokens` is cut to the cap.
 * - **max_rpm**: at most this many requests per server per rolling minute reach the model; more
 *   are refused with a JSON-RPC error ({@linkcode RateWindow}).
 * - **timeout**: seconds the model may take; then the request fails with an error.
 * - **max_tool_rounds**: when the request offers tools, the model sees them only while the
 *   conversation has had fewer assistant tool-use turns than this; after that the tools are
 *   withheld (and the earlier tool turns are passed as text), so the model must answer in text.
 *   With 0 the `sampling.tools` capability is not declared at all ({@linkcode samplingCapability}).
 *
 * The model is reached through a {@linkcode SamplingModel} function, an OpenAI-compatible chat
 * request (the agent's model client): only text content is served; image and audio content is
 * refused. `stopSequences` and `includeContext` are not supported by that client and ignored.
 * Refusals and failures are JSON-RPC errors that say why without echoing local configuration.
 *
 * @module
 */
import {
  type CreateMessageRequestParams,
  type CreateMessageResult,
  type CreateMessageResultWithTools,
  type ModelPreferences,
  ProtocolError,
  ProtocolErrorCode,
  type SamplingMessage,
  type SamplingMessageContentBlock,
} from "@modelcontextprotocol/client";
import type { SamplingSettings } from "./config.ts";

/** A tool call in the OpenAI chat-completions wire shape. */
export interface SamplingToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** One chat-completions message (the wire shape the agent's model client sends). */
export type SamplingChatMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string }
  | { role: "assistant"; content: string | null; tool_calls?: SamplingToolCall[] }
  | { role: "tool"; tool_call_id: string; content: string };

/** A function tool offered to the model. */
export interface SamplingFunctionTool {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** One model request made for a server. */
export interface SamplingModelRequest {
  /** The server asking. */
  server: string;
  /** The model id to send. */
  model: string;
  messages: SamplingChatMessage[];
  /** Empty when no tools are offered. */
  tools: SamplingFunctionTool[];
  /** `maxTokens` after the cap. */
  maxTokens: number;
  /** The request's temperature, when it set one. */
  temperature?: number;
  /** `sampling.timeout`: seconds the model may take. */
  timeoutSeconds: number;
}

/** What the model answered. */
export interface SamplingModelReply {
  content: string | null;
  toolCalls: SamplingToolCall[];
  /** `stop`, `length`, `tool_calls`, … as the endpoint said. */
  finishReason?: string;
}

/** Sends one chat request to the model; `signal` aborts it (timeout, or the server cancelling). */
export type SamplingModel = (
  request: SamplingModelRequest,
  signal: AbortSignal,
) => Promise<SamplingModelReply>;

/** The answer to a sampling request. */
export type SamplingResult = CreateMessageResult | CreateMessageResultWithTools;

/** How one sampling request ended, for logs and metrics (never the messages). */
export interface SamplingOutcome {
  server: string;
  /**
   * `served` (answered by the model), `refused` (rate limit, unsupported content, disabled: the
   * model was not called), `failed` (the model call failed), `timed_out`, `cancelled` (the server
   * withdrew the request).
   */
  outcome: "served" | "refused" | "failed" | "timed_out" | "cancelled";
  /** The model used, once chosen. */
  model?: string;
  /** `maxTokens` sent, after the cap. */
  maxTokens?: number;
  /** Whether tools were offered to the model. */
  toolsOffered?: boolean;
  /** Why it was refused or failed. */
  reason?: string;
  /** Milliseconds the model took. */
  ms?: number;
}

/** Options of {@linkcode SamplingResponder}. */
export interface SamplingResponderOptions {
  /** Sends requests to the model. */
  model: SamplingModel;
  /** `model.default`: the model used when `sampling.model` is not set. */
  defaultModel: string;
  /** Clock for the rate limit. Default `Date.now`. */
  now?: () => number;
  /** Told how each request ended. */
  onOutcome?: (outcome: SamplingOutcome) => void;
}

const MINUTE_MS = 60_000;

/**
 * The client capability declared for sampling: tool use too, unless `max_tool_rounds` is 0.
 *
 * @param settings The server's sampling settings.
 * @returns The `sampling` capability.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { samplingCapability } from "./sampling.ts";
 *
 * assert.deepEqual(samplingCapability({ maxToolRounds: 5 }), { tools: {} });
 * assert.deepEqual(samplingCapability({ maxToolRounds: 0 }), {});
 * ```
 */
export function samplingCapability(
  settings: Pick<SamplingSettings, "maxToolRounds">,
): { tools?: Record<string, never> } {
  return settings.maxToolRounds > 0 ? { tools: {} } : {};
}

/**
 * The model a request is served by (rule in the module documentation).
 *
 * @param settings `model` and `allowedModels` of the server's sampling settings.
 * @param defaultModel `model.default`.
 * @param preferences The request's `modelPreferences`.
 * @returns The model id to use.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { chooseSamplingModel } from "./sampling.ts";
 *
 * const hints = { hints: [{ name: "gpt-5" }, { name: "mini" }] };
 * // No allowed_models: the server cannot pick.
 * assert.equal(chooseSamplingModel({ allowedModels: [] }, "qwen2.5:7b", hints), "qwen2.5:7b");
 * // gpt-5 is not allowed and ignored; "mini" names an allowed model.
 * const settings = { allowedModels: ["gpt-4.1", "gpt-4.1-mini"] };
 * assert.equal(chooseSamplingModel(settings, "gpt-4.1", hints), "gpt-4.1-mini");
 * assert.equal(chooseSamplingModel(settings, "gpt-4.1", { hints: [{ name: "gpt-5" }] }), "gpt-4.1");
 * ```
 */
export function chooseSamplingModel(
  settings: Pick<SamplingSettings, "model" | "allowedModels">,
  defaultModel: string,
  preferences?: ModelPreferences,
): string {
  const fallback = settings.model ?? defaultModel;
  const allowed = settings.allowedModels;
  if (allowed.length === 0) return fallback;
  for (const hint of preferences?.hints ?? []) {
    const name = hint.name?.trim().toLowerCase();
    if (!name) continue;
    const match = allowed.find((model) => model.toLowerCase() === name) ??
      allowed.find((model) => model.toLowerCase().includes(name));
    if (match) return match;
  }
  return allowed.includes(fallback) ? fallback : allowed[0];
}

/**
 * The tool-use rounds a sampling conversation has had: its assistant turns that use a tool.
 *
 * @param messages The request's messages.
 * @returns The number of rounds.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { toolRoundsOf } from "./sampling.ts";
 *
 * assert.equal(toolRoundsOf([
 *   { role: "user", content: { type: "text", text: "weather?" } },
 *   { role: "assistant", content: [{ type: "tool_use", id: "1", name: "weather", input: {} }] },
 *   { role: "user", content: [{ type: "tool_result", toolUseId: "1", content: [] }] },
 * ]), 1);
 * ```
 */
export function toolRoundsOf(messages: readonly SamplingMessage[]): number {
  return messages.filter((message) =>
    message.role === "assistant" && blocksOf(message).some((block) => block.type === "tool_use")
  ).length;
}

/**
 * Turns a sampling request's system prompt and messages into chat-completions messages. With
 * `withTools` false, tool-use turns become text, so no tool definitions are needed. Throws a
 * `ProtocolError` (invalid params) for content other than text, tool use and tool results.
 *
 * @param params The request's parameters.
 * @param withTools Whether tools are offered to the model.
 * @returns The messages to send.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { toChatMessages } from "./sampling.ts";
 *
 * assert.deepEqual(
 *   toChatMessages({
 *     systemPrompt: "Be brief.",
 *     messages: [{ role: "user", content: { type: "text", text: "Hi" } }],
 *   }, false),
 *   [{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }],
 * );
 * ```
 */
export function toChatMessages(
  params: Pick<CreateMessageRequestParams, "systemPrompt" | "messages">,
  withTools: boolean,
): SamplingChatMessage[] {
  const chat: SamplingChatMessage[] = [];
  if (params.systemPrompt) chat.push({ role: "system", content: params.systemPrompt });
  const toolNames = new Map<string, string>();
  params.messages.forEach((message, index) => {
    const texts: string[] = [];
    const calls: SamplingToolCall[] = [];
    const results: { id: string; text: string }[] = [];
    for (const block of blocksOf(message)) {
      switch (block.type) {
        case "text":
          texts.push(block.text);
          break;
        case "tool_use":
          toolNames.set(block.id, block.name);
          calls.push({
            id: block.id,
            type: "function",
            function: { name: block.name, arguments: JSON.stringify(block.input) },
          });
          break;
        case "tool_result":
          results.push({
            id: block.toolUseId,
            text: (block.isError ? "error: " : "") + contentText(block.content),
          });
          break;
        default:
          throw new ProtocolError(
            ProtocolErrorCode.InvalidParams,
            `sampling is served as text only; message ${index + 1} carries ${block.type} content`,
          );
      }
    }
    if (message.role === "assistant") {
      if (withTools) {
        if (texts.length > 0 || calls.length > 0) {
          chat.push({
            role: "assistant",
            content: texts.length > 0 ? texts.join("\n") : null,
            ...(calls.length > 0 ? { tool_calls: calls } : {}),
          });
        }
      } else {
        const used = calls.map((call) =>
          `[called tool ${call.function.name} with ${call.function.arguments}]`
        );
        const text = [...texts, ...used].join("\n");
        if (text !== "") chat.push({ role: "assistant", content: text });
      }
      return;
    }
    for (const result of results) {
      if (withTools) chat.push({ role: "tool", tool_call_id: result.id, content: result.text });
      else {
        const name = toolNames.get(result.id) ?? result.id;
        chat.push({ role: "user", content: `[result of tool ${name}: ${result.text}]` });
      }
    }
    if (texts.length > 0) chat.push({ role: "user", content: texts.join("\n") });
  });
  return chat;
}

/**
 * Builds the result sent back to the server from the model's reply: text (and, when tools were
 * offered, `tool_use` blocks with stop reason `toolUse`).
 *
 * @param reply The model's reply.
 * @param model The model id used.
 * @param toolsOffered Whether the model was offered tools.
 * @returns The sampling result.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { toSamplingResult } from "./sampling.ts";
 *
 * assert.deepEqual(toSamplingResult({ content: "4", toolCalls: [], finishReason: "stop" }, "m", false), {
 *   model: "m",
 *   role: "assistant",
 *   content: { type: "text", text: "4" },
 *   stopReason: "endTurn",
 * });
 * ```
 */
export function toSamplingResult(
  reply: SamplingModelReply,
  model: string,
  toolsOffered: boolean,
): SamplingResult {
  if (toolsOffered && reply.toolCalls.length > 0) {
    return {
      model,
      role: "assistant",
      content: [
        ...(reply.content ? [{ type: "text" as const, text: reply.content }] : []),
        ...reply.toolCalls.map((call) => ({
          type: "tool_use" as const,
          id: call.id,
          name: call.function.name,
          input: argumentsOf(call.function.arguments),
        })),
      ],
      stopReason: "toolUse",
    };
  }
  const stopReason = reply.finishReason === "length"
    ? "maxTokens"
    : reply.finishReason === undefined || reply.finishReason === "stop" ||
        reply.finishReason === "tool_calls"
    ? "endTurn"
    : reply.finishReason;
  return {
    model,
    role: "assistant",
    content: { type: "text", text: reply.content ?? "" },
    stopReason,
  };
}

/**
 * A rolling one-minute window: at most `limit` takes in any 60 s.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { RateWindow } from "./sampling.ts";
 *
 * const window = new RateWindow(2);
 * assert.equal(window.take(0), undefined);
 * assert.equal(window.take(10_000), undefined);
 * assert.equal(window.take(20_000), 40_000); // refused: the first take frees up in 40 s
 * assert.equal(window.take(60_000), undefined);
 * ```
 */
export class RateWindow {
  readonly limit: number;
  readonly #stamps: number[] = [];

  constructor(limit: number) {
    this.limit = limit;
  }

  /** Takes one slot at `now` (ms); returns `undefined`, or the ms until a slot frees up. */
  take(now: number): number | undefined {
    while (this.#stamps.length > 0 && this.#stamps[0] <= now - MINUTE_MS) this.#stamps.shift();
    if (this.#stamps.length >= this.limit) return this.#stamps[0] + MINUTE_MS - now;
    this.#stamps.push(now);
    return undefined;
  }
}

/**
 * The error a client that serves no sampling here answers with (the capability is declared so
 * that a server lists the same tools as to an agent run): the server gets `sampling refused:
 * <reason>`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { samplingRefusal } from "./sampling.ts";
 * assert.equal(samplingRefusal("not here").message, "sampling refused: not here");
 * ```
 */
export function samplingRefusal(reason: string): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.InvalidRequest, `sampling refused: ${reason}`);
}

/**
 * Serves the sampling requests of every server of a session, each within its own settings; the
 * rate limit is per server name and survives reconnects.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { SamplingResponder } from "./sampling.ts";
 *
 * const sent: number[] = [];
 * const responder = new SamplingResponder({
 *   defaultModel: "m",
 *   model: (request) => {
 *     sent.push(request.maxTokens);
 *     return Promise.resolve({ content: "hello", toolCalls: [] });
 *   },
 * });
 * const server = {
 *   name: "s",
 *   sampling: {
 *     enabled: true, maxTokensCap: 100, timeoutSeconds: 30, maxRpm: 1, maxToolRounds: 5,
 *     allowedModels: [],
 *   },
 * };
 * const params = {
 *   messages: [{ role: "user" as const, content: { type: "text" as const, text: "Hi" } }],
 *   maxTokens: 5000,
 * };
 * const result = await responder.respond(server, params);
 * assert.deepEqual(result.content, { type: "text", text: "hello" });
 * assert.deepEqual(sent, [100]); // capped
 * await assert.rejects(responder.respond(server, params), /max_rpm/); // over the rate
 * ```
 */
export class SamplingResponder {
  readonly #options: SamplingResponderOptions;
  readonly #windows = new Map<string, RateWindow>();

  constructor(options: SamplingResponderOptions) {
    this.#options = options;
  }

  /**
   * Serves one request of `server`. Throws a `ProtocolError` (sent to the server as a JSON-RPC
   * error) when the request is refused or the model fails.
   */
  async respond(
    server: { name: string; sampling: SamplingSettings },
    params: CreateMessageRequestParams,
    signal?: AbortSignal,
  ): Promise<SamplingResult> {
    const settings = server.sampling;
    const report = (outcome: Omit<SamplingOutcome, "server">) =>
      this.#options.onOutcome?.({ server: server.name, ...outcome });
    const refuse = (code: number, reason: string): never => {
      report({ outcome: "refused", reason });
      throw new ProtocolError(code, `sampling refused: ${reason}`);
    };
    if (!settings.enabled) {
      refuse(ProtocolErrorCode.InvalidRequest, "sampling is disabled for this server");
    }
    const rounds = toolRoundsOf(params.messages);
    const toolsOffered = (params.tools?.length ?? 0) > 0 && params.toolChoice?.mode !== "none" &&
      rounds < settings.maxToolRounds;
    let messages: SamplingChatMessage[];
    try {
      messages = toChatMessages(params, toolsOffered);
    } catch (error) {
      return refuse(ProtocolErrorCode.InvalidParams, messageOf(error));
    }
    const wait = this.#window(server.name, settings.maxRpm).take(this.#now());
    if (wait !== undefined) {
      refuse(
        ProtocolErrorCode.InvalidRequest,
        `more than max_rpm (${settings.maxRpm}) requests in the last minute; try again in ${
          Math.ceil(wait / 1000)
        } s`,
      );
    }
    const model = chooseSamplingModel(
      settings,
      this.#options.defaultModel,
      params.modelPreferences,
    );
    const maxTokens = Math.max(1, Math.min(params.maxTokens, settings.maxTokensCap));
    const tools: SamplingFunctionTool[] = toolsOffered
      ? params.tools!.map((tool) => ({
        type: "function",
        function: {
          name: tool.name,
          description: tool.description ?? "",
          parameters: tool.inputSchema as Record<string, unknown>,
        },
      }))
      : [];
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), settings.timeoutSeconds * 1000);
    const both = signal ? AbortSignal.any([deadline.signal, signal]) : deadline.signal;
    const started = performance.now();
    const facts = { model, maxTokens, toolsOffered };
    try {
      const reply = await this.#options.model({
        server: server.name,
        model,
        messages,
        tools,
        maxTokens,
        ...(params.temperature === undefined ? {} : { temperature: params.temperature }),
        timeoutSeconds: settings.timeoutSeconds,
      }, both);
      report({ outcome: "served", ...facts, ms: Math.round(performance.now() - started) });
      return toSamplingResult(reply, model, toolsOffered);
    } catch (error) {
      const ms = Math.round(performance.now() - started);
      if (deadline.signal.aborted) {
        report({ outcome: "timed_out", ...facts, ms });
        throw new ProtocolError(
          ProtocolErrorCode.InternalError,
          `the model did not answer within sampling.timeout (${settings.timeoutSeconds} s)`,
        );
      }
      if (signal?.aborted) {
        report({ outcome: "cancelled", ...facts, ms });
        throw new ProtocolError(
          ProtocolErrorCode.InternalError,
          "the sampling request was cancelled",
        );
      }
      // Only the kind of failure goes to the server; the details (URLs, config hints) stay local.
      const kind = (error as { kind?: unknown })?.kind;
      report({ outcome: "failed", ...facts, ms, reason: messageOf(error) });
      throw new ProtocolError(
        ProtocolErrorCode.InternalError,
        `the model request failed${typeof kind === "string" ? ` (${kind})` : ""}`,
      );
    } finally {
      clearTimeout(timer);
    }
  }

  #window(server: string, limit: number): RateWindow {
    let window = this.#windows.get(server);
    if (!window || window.limit !== limit) {
      window = new RateWindow(limit);
      this.#windows.set(server, window);
    }
    return window;
  }

  #now(): number {
    return (this.#options.now ?? Date.now)();
  }
}

function blocksOf(message: SamplingMessage): SamplingMessageContentBlock[] {
  return Array.isArray(message.content) ? message.content : [message.content];
}

function contentText(content: readonly { type: string; text?: unknown }[]): string {
  return content.map((block) =>
    block.type === "text" && typeof block.text === "string" ? block.text : `[${block.type}]`
  ).join("\n");
}

function argumentsOf(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text);
    if (typeof value === "object" && value !== null && !Array.isArray(value)) return value;
  } catch { /* not JSON: the model's arguments are unusable */ }
  return {};
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
