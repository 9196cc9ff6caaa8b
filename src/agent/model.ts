/**
 * A client for OpenAI-compatible chat completions (`POST {base_url}/chat/completions`): the
 * request and answer shapes of that API, per-request timeout, a cap on the size of an answer,
 * retries with backoff on 429, 5xx and lost connections, and errors that say which setting to fix.
 *
 * @module
 */
import type { ModelSettings } from "./settings.ts";
import { bodySummary, causeChainText } from "../mcp/errors.ts";
import { USER_AGENT } from "../version.ts";

/** A function call the model asked for (the wire shape). */
export interface ToolCallRequest {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** One message of a conversation (the wire shape). */
export type ChatMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string }
  | { role: "assistant"; content: string | null; tool_calls?: ToolCallRequest[] }
  | { role: "tool"; tool_call_id: string; content: string };

/** A tool offered to the model. */
export interface FunctionTool {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** The model's answer to one request. */
export interface ModelReply {
  /** Text of the answer (may be empty when the model only calls tools). */
  content: string | null;
  /** Tool calls requested, in order. */
  toolCalls: ToolCallRequest[];
  /** `stop`, `tool_calls`, `length`, … as the endpoint said. */
  finishReason?: string;
  /** Retries this request needed (0 when the first attempt succeeded). */
  retries: number;
  /** Token usage, when the endpoint reported it. */
  usage?: { promptTokens?: number; completionTokens?: number };
}

/** What went wrong with a model request, in the user's terms. */
export type ModelErrorKind =
  | "auth" // 401/403: the key is wrong or missing
  | "quota" // the account has no quota or credit left (429 insufficient_quota, 402)
  | "context_length" // the conversation is longer than the model's context window
  | "model_not_found" // the endpoint says the model does not exist
  | "bad_request" // another 4xx
  | "rate_limited" // 429 after every retry
  | "server" // 5xx after every retry
  | "unreachable" // no connection after every retry
  | "timeout" // no answer within model.timeout_seconds after every retry
  | "bad_response" // an answer that is not a chat completion
  | "cancelled"; // the caller aborted

/** A model request that failed; `message` says what to do about it. */
export class ModelError extends Error {
  readonly kind: ModelErrorKind;
  /** HTTP status, when there was an answer. */
  readonly status?: number;
  /** Retries made before giving up. */
  readonly retries: number;
  constructor(
    kind: ModelErrorKind,
    message: string,
    options: { status?: number; retries?: number; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = "ModelError";
    this.kind = kind;
    this.status = options.status;
    this.retries = options.retries ?? 0;
  }
}

/** Inputs of {@linkcode ModelClient} besides the settings; injectable for tests. */
export interface ModelClientOptions {
  /** HTTP client. Default the global `fetch`. */
  fetch?: typeof fetch;
  /** Waits between retries. Default a timer that the signal cancels. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Jitter source. Default `Math.random`. */
  random?: () => number;
  /** First backoff in ms (doubling, ±20 % jitter, never over 30 s). Default 1000. */
  retryBaseMs?: number;
  /** Where the `model.*` keys live, for messages. Default `config.yaml`. */
  configFile?: string;
  /**
   * The most bytes of an answer read; a longer one fails, not retried. Default 64 MiB
   * (`MAX_ANSWER_BYTES`).
   */
  maxAnswerBytes?: number;
}

/**
 * The most bytes of an answer read (64 MiB): far above any real completion. An answer is at most
 * the model's output limit, tool-call arguments included (128k tokens for the largest today,
 * about 0.5 MB of text); a local server left to write until a 1M-token context is full, every
 * character JSON-escaped, stays under 30 MB. Only something that is not a chat completion (an
 * endless stream at a wrong `model.base_url`, a broken server) gets here, and reading on would
 * grow the process until it dies.
 */
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;
/** The most bytes of an error answer read: more than any error message, or an error page's start. */
const MAX_ERROR_BYTES = 1024 * 1024;
const MAX_BACKOFF_MS = 30_000;
const MAX_RETRY_AFTER_MS = 60_000;

/**
 * Sends chat-completion requests to one configured model.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ModelClient } from "./model.ts";
 * const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, () =>
 *   Response.json({ choices: [{ message: { role: "assistant", content: "hi" }, finish_reason: "stop" }] }));
 * const client = new ModelClient({
 *   model: "m", provider: "custom", baseUrl: `http://127.0.0.1:${server.addr.port}/v1`,
 *   apiKeyVariable: "CUSTOM_API_KEY", timeoutSeconds: 5, maxRetries: 0,
 * });
 * const reply = await client.complete([{ role: "user", content: "hello" }], []);
 * assert(reply.content === "hi");
 * await server.shutdown();
 * ```
 */
export class ModelClient {
  readonly settings: ModelSettings;
  readonly #fetch: typeof fetch;
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly #random: () => number;
  readonly #retryBaseMs: number;
  readonly #configFile: string;
  readonly #maxAnswerBytes: number;

  constructor(settings: ModelSettings, options: ModelClientOptions = {}) {
    this.settings = settings;
    this.#fetch = options.fetch ?? fetch;
    this.#sleep = options.sleep ?? abortableSleep;
    this.#random = options.random ?? Math.random;
    this.#retryBaseMs = options.retryBaseMs ?? 1000;
    this.#configFile = options.configFile ?? "config.yaml";
    this.#maxAnswerBytes = options.maxAnswerBytes ?? MAX_ANSWER_BYTES;
  }

  /** The endpoint requests go to. */
  get url(): string {
    return `${this.settings.baseUrl}/chat/completions`;
  }

  /**
   * Sends `messages` with `tools` offered, retrying 429, 5xx, timeouts and lost connections up
   * to `model.max_retries` times. Throws a {@linkcode ModelError}.
   */
  async complete(
    messages: readonly ChatMessage[],
    tools: readonly FunctionTool[],
    options: { signal?: AbortSignal } = {},
  ): Promise<ModelReply> {
    const body = JSON.stringify(this.#requestBody(messages, tools));
    const { maxRetries } = this.settings;
    for (let attempt = 0;; attempt++) {
      const failure = await this.#attempt(body, attempt, options.signal);
      if (!(failure instanceof RetryableFailure)) return { ...failure, retries: attempt };
      if (attempt >= maxRetries) throw failure.toError(attempt);
      const backoff = Math.min(
        MAX_BACKOFF_MS,
        this.#retryBaseMs * 2 ** attempt * (0.8 + 0.4 * this.#random()),
      );
      try {
        await this.#sleep(failure.retryAfterMs ?? backoff, options.signal);
      } catch (error) {
        throw this.#cancelled(attempt + 1, error);
      }
    }
  }

  #requestBody(messages: readonly ChatMessage[], tools: readonly FunctionTool[]) {
    const request: Record<string, unknown> = { model: this.settings.model, messages };
    if (tools.length > 0) request.tools = tools;
    if (this.settings.temperature !== undefined) request.temperature = this.settings.temperature;
    if (this.settings.maxTokens !== undefined) request.max_tokens = this.settings.maxTokens;
    return request;
  }

  async #attempt(
    body: string,
    attempt: number,
    signal: AbortSignal | undefined,
  ): Promise<Omit<ModelReply, "retries"> | RetryableFailure> {
    const { settings } = this;
    if (signal?.aborted) throw this.#cancelled(attempt, signal.reason);
    const timeout = AbortSignal.timeout(settings.timeoutSeconds * 1000);
    const headers: Record<string, string> = {
      "content-type": "application/json",
      accept: "application/json",
      "user-agent": USER_AGENT,
    };
    if (settings.apiKey) headers.authorization = `Bearer ${settings.apiKey}`;
    let response: Response | undefined;
    let answer: AnswerBody;
    try {
      response = await this.#fetch(this.url, {
        method: "POST",
        headers,
        body,
        redirect: "manual",
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
      // The timeout covers the body too: one that trickles forever ends with it.
      answer = await readBody(
        response,
        response.ok ? this.#maxAnswerBytes : Math.min(MAX_ERROR_BYTES, this.#maxAnswerBytes),
      );
    } catch (error) {
      if (signal?.aborted) throw this.#cancelled(attempt, error);
      if (timeout.aborted) {
        return new RetryableFailure(
          "timeout",
          `the model endpoint ${this.url} ` +
            (response
              ? `began to answer (HTTP ${response.status}) but did not finish within `
              : "did not answer within ") +
            `model.timeout_seconds (${settings.timeoutSeconds} s)`,
          undefined,
          error,
        );
      }
      if (response) {
        // It was reached and began to answer: the connection dropped in the middle of the body.
        return new RetryableFailure(
          "server",
          `the model endpoint ${this.url} broke off its answer (HTTP ${response.status}, ` +
            `${this.#redact(networkReason(error))})`,
          response.status,
          error,
          undefined,
          "if it keeps happening, look at the model server's log (a crash or an out-of-memory " +
            "kill ends an answer like this)",
        );
      }
      return new RetryableFailure(
        "unreachable",
        `cannot reach the model endpoint ${this.url} (${this.#redact(networkReason(error))})`,
        undefined,
        error,
        undefined,
        `start the model server, or set model.base_url in ${this.#configFile}`,
      );
    }
    if (response.ok && !answer.whole) throw this.#tooLarge(response, answer.text, attempt);
    // An error answer past its cap is judged by its status and its start.
    const text = answer.text;
    if (response.ok) return this.#parse(text, response.status, attempt);
    if (response.status >= 300 && response.status < 400) {
      // Following a redirect would resend the API key to wherever it points.
      const location = response.headers.get("location") ?? "?";
      throw new ModelError(
        "bad_request",
        `the model endpoint ${this.url} redirects (HTTP ${response.status} to ${location}); ` +
          `requests are not followed there. Fix: set model.base_url in ${this.#configFile} to ` +
          "the final API root",
        { status: response.status, retries: attempt },
      );
    }
    const detail = bodySummary(this.#redact(text));
    const status = response.status;
    const code = errorCode(text);
    if (status === 402 || (status === 429 && code === "insufficient_quota")) {
      // Waiting does not help: the account needs money or a higher plan.
      throw new ModelError(
        "quota",
        `the model provider refused the request: the account has no quota or credit left ` +
          `(HTTP ${status}${detail ? `: ${detail}` : ""}). Fix: check the plan and billing of ` +
          `the account the key in ${settings.apiKeyVariable} belongs to`,
        { status, retries: attempt },
      );
    }
    if (status === 429) {
      return new RetryableFailure(
        "rate_limited",
        `the model endpoint rate-limited the request (HTTP 429${detail ? `: ${detail}` : ""})`,
        status,
        undefined,
        retryAfterMs(response.headers.get("retry-after")),
      );
    }
    if (status === 405 || status === 501) {
      // A web server or another API at that URL: it does not take POST there, so retrying is
      // no use.
      throw new ModelError(
        "bad_request",
        `the model endpoint ${this.url} does not take POST requests (HTTP ${status}` +
          `${detail ? `: ${detail}` : ""}). Fix: set model.base_url in ${this.#configFile} to ` +
          "the OpenAI-compatible API root, which usually ends in /v1 (/chat/completions is " +
          "added to it)",
        { status, retries: attempt },
      );
    }
    if (status >= 500) {
      return new RetryableFailure(
        "server",
        `the model endpoint ${this.url} failed (HTTP ${status}${detail ? `: ${detail}` : ""})`,
        status,
        undefined,
        retryAfterMs(response.headers.get("retry-after")),
      );
    }
    const retries = attempt;
    if (status === 401 || status === 403) {
      throw new ModelError(
        "auth",
        `the model endpoint refused the API key (HTTP ${status}${detail ? `: ${detail}` : ""}). ` +
          `Fix: ${this.#keyFix()}`,
        { status, retries },
      );
    }
    if (
      [400, 413, 422].includes(status) &&
      (code === "context_length_exceeded" || CONTEXT_EXCEEDED.test(detail))
    ) {
      throw new ModelError(
        "context_length",
        `the conversation is longer than model '${settings.model}' can take (HTTP ${status}` +
          `${detail ? `: ${detail}` : ""}). Fix: start a new conversation (/new in chat), ` +
          "ask for less at once, " +
          (settings.maxTokens === undefined ? "" : "lower model.max_tokens (the answer's " +
            "tokens count too), ") +
          `or set model.default in ${this.#configFile} to a model with a larger context ` +
          "window (a local server may have its own context size setting)",
        { status, retries },
      );
    }
    if (/model.*(not.?found|does not exist|not exist|unknown)/i.test(detail)) {
      throw new ModelError(
        "model_not_found",
        `the model endpoint does not know model '${settings.model}' (HTTP ${status}` +
          `${detail ? `: ${detail}` : ""}). Fix: set model.default in ${this.#configFile} to a ` +
          `model this endpoint serves` + (status === 404 ? `, and check model.base_url` : ""),
        { status, retries },
      );
    }
    if (status === 404) {
      // Nothing about the model: most often a base_url without /v1, or with the whole path.
      throw new ModelError(
        "bad_request",
        `the model endpoint has no chat completions API at ${this.url} (HTTP 404` +
          `${
            detail ? `: ${detail}` : ""
          }). Fix: set model.base_url in ${this.#configFile} to the ` +
          "API root, which usually ends in /v1 (/chat/completions is added to it)",
        { status, retries },
      );
    }
    throw new ModelError(
      "bad_request",
      `the model endpoint rejected the request (HTTP ${status}${detail ? `: ${detail}` : ""})`,
      { status, retries },
    );
  }

  #parse(text: string, status: number, retries: number): Omit<ModelReply, "retries"> {
    const bad = (why: string) =>
      new ModelError(
        "bad_response",
        `the model endpoint ${this.url} answered HTTP ${status} but ${why}. Fix: check that ` +
          `model.base_url points at an OpenAI-compatible API root (it usually ends in /v1)`,
        { status, retries },
      );
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      throw bad("not with JSON");
    }
    const choice = isRecord(data) && Array.isArray(data.choices) ? data.choices[0] : undefined;
    const message = isRecord(choice) ? choice.message : undefined;
    if (!isRecord(message) && isRecord(data) && data.error !== undefined) {
      // Some endpoints and proxies answer 200 with the error an upstream provider gave; LM
      // Studio answers 200 "Unexpected endpoint or method" for a path it does not serve.
      const said = bodySummary(this.#redact(text));
      throw new ModelError(
        "bad_response",
        `the model endpoint ${this.url} answered HTTP ${status} with an error instead of an ` +
          `answer: ${said || "no message"}` +
          (/unexpected endpoint|unknown (url|endpoint|route)|not found/i.test(said)
            ? `. Fix: set model.base_url in ${this.#configFile} to the API root, which usually ` +
              "ends in /v1 (/chat/completions is added to it)"
            : ""),
        { status, retries },
      );
    }
    if (!isRecord(message)) throw bad("without choices[0].message");
    const toolCalls: ToolCallRequest[] = [];
    const rawCalls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
    for (const [index, call] of rawCalls.entries()) {
      const fn = isRecord(call) ? call.function : undefined;
      if (!isRecord(fn) || typeof fn.name !== "string") {
        throw bad(`tool_calls[${index}] has no function name`);
      }
      const args = fn.arguments;
      toolCalls.push({
        id: isRecord(call) && typeof call.id === "string" && call.id ? call.id : `call_${index}`,
        type: "function",
        function: {
          name: fn.name,
          arguments: typeof args === "string" ? args : JSON.stringify(args ?? {}),
        },
      });
    }
    const usage = isRecord(data) && isRecord(data.usage) ? data.usage : undefined;
    const content = withoutThinking(contentText(message.content));
    // A refusal (OpenAI's `refusal`, with no content) is what the model answered.
    const refusal = typeof message.refusal === "string" && message.refusal !== ""
      ? message.refusal
      : undefined;
    return {
      content: content || (refusal ?? content),
      toolCalls,
      finishReason: isRecord(choice) && typeof choice.finish_reason === "string"
        ? choice.finish_reason
        : undefined,
      usage: usage
        ? {
          promptTokens: typeof usage.prompt_tokens === "number" ? usage.prompt_tokens : undefined,
          completionTokens: typeof usage.completion_tokens === "number"
            ? usage.completion_tokens
            : undefined,
        }
        : undefined,
    };
  }

  /** An answer that went on past the cap: not a chat completion, and trying again is no use. */
  #tooLarge(response: Response, start: string, retries: number): ModelError {
    const type = response.headers.get("content-type")?.split(";")[0].trim() || "no content type";
    const began = bodySummary(this.#redact(start.slice(0, 1000)));
    return new ModelError(
      "bad_response",
      `the model endpoint ${this.url} answered HTTP ${response.status} (${type}) with more than ` +
        `${byteCount(this.#maxAnswerBytes)} and had not finished, far more than any chat ` +
        `completion, so the rest was not read${began ? ` (it began: ${began})` : ""}. Fix: ` +
        `check that model.base_url in ${this.#configFile} points at an OpenAI-compatible API ` +
        "root (it usually ends in /v1) and that the server there works",
      { status: response.status, retries },
    );
  }

  /** What to do about a refused key, naming the variable and where it was read from. */
  #keyFix(): string {
    const { apiKey, apiKeyVariable, apiKeySource, dotenvPath } = this.settings;
    const dotenv = dotenvPath ?? ".env";
    if (!apiKey) return `add ${apiKeyVariable}=<your key> to ${dotenv} (it is not set)`;
    if (apiKeySource === "environment") {
      return `check ${apiKeyVariable}, read from the process environment (a line in ${dotenv} ` +
        "would take its place)";
    }
    return `check ${apiKeyVariable} in ${dotenv}`;
  }

  #cancelled(retries: number, cause: unknown): ModelError {
    return new ModelError("cancelled", "the model request was cancelled", { retries, cause });
  }

  /** Keeps the API key out of any message that might echo it. */
  #redact(text: string): string {
    const key = this.settings.apiKey;
    return key && key.length >= 4 ? text.split(key).join("[REDACTED]") : text;
  }
}

/** A failed attempt that may be retried; becomes a {@linkcode ModelError} when retries run out. */
class RetryableFailure {
  constructor(
    readonly kind: "rate_limited" | "server" | "unreachable" | "timeout",
    /** What went wrong, one clause: the attempts are added to it, then the fix. */
    readonly message: string,
    readonly status: number | undefined,
    readonly cause?: unknown,
    readonly retryAfterMs?: number,
    /** What to do, said after `Fix: `. */
    readonly fix?: string,
  ) {}

  /** "<message>, after N attempts. Fix: <fix>": one sentence, whatever brackets end the message. */
  toError(retries: number): ModelError {
    const tries = retries === 0 ? "" : `, after ${retries + 1} attempts`;
    const fix = this.fix ? `. Fix: ${this.fix}` : "";
    return new ModelError(this.kind, `${this.message}${tries}${fix}`, {
      status: this.status,
      retries,
      cause: this.cause,
    });
  }
}

/** What was read of an answer's body. */
interface AnswerBody {
  text: string;
  /** False when the body went on past the cap: `text` is its start, the rest was not read. */
  whole: boolean;
}

/**
 * The body of `response` as text, at most `maxBytes` of it: reading stops there and the body is
 * cancelled, so an endless one costs no more memory than that.
 */
async function readBody(response: Response, maxBytes: number): Promise<AnswerBody> {
  if (response.body === null) return { text: "", whole: true };
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const parts: string[] = [];
  let room = maxBytes;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) {
      parts.push(decoder.decode());
      return { text: parts.join(""), whole: true };
    }
    if (value.byteLength > room) {
      parts.push(decoder.decode(value.subarray(0, room)));
      await reader.cancel().catch(() => {});
      return { text: parts.join(""), whole: false };
    }
    room -= value.byteLength;
    parts.push(decoder.decode(value, { stream: true }));
  }
}

/** A byte count as limits are spoken of: `64 MiB`, `512 KiB`, `100 bytes`. */
function byteCount(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

/**
 * Why a request got no answer. Deno's `fetch` says only "fetch failed"; the reason (connection
 * refused, a DNS or TLS error) is in its cause, after the URL the message already names.
 */
function networkReason(error: unknown): string {
  return causeChainText(error).replace(/^fetch failed: /, "")
    .replace(/error sending request for url \([^)]*\): /, "");
}

/**
 * How endpoints word a conversation too long for the model: OpenAI and vLLM ("maximum context
 * length"), llama.cpp ("exceeds the available context size"), Anthropic ("prompt is too long"),
 * Mistral and others ("too many tokens", "context window").
 */
const CONTEXT_EXCEEDED =
  /context[ _-]?(length|window|size)|prompt is too long|too many (input )?tokens|reduce the length of the messages/i;

/** The machine-readable `error.code` (or `error.type`) of a JSON error body, if any. */
function errorCode(text: string): string | undefined {
  try {
    const error = JSON.parse(text)?.error;
    const code = error?.code ?? error?.type;
    return typeof code === "string" ? code : undefined;
  } catch {
    return undefined;
  }
}

/** `Retry-After` in seconds or as an HTTP date, capped at a minute; `undefined` if absent. */
function retryAfterMs(header: string | null, nowMs: number = Date.now()): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header.trim());
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - nowMs;
  if (!Number.isFinite(ms) || ms < 0) return undefined;
  return Math.min(ms, MAX_RETRY_AFTER_MS);
}

/**
 * The answer without the reasoning that models such as DeepSeek-R1 and Qwen3 write before it
 * in `<think>…</think>` when the server does not move it to a reasoning field (vLLM without a
 * reasoning parser, some llama.cpp and Ollama versions). A chat template may open the block
 * itself, so the answer then holds only `</think>`. Reasoning cut off before `</think>` leaves
 * no answer.
 */
function withoutThinking(content: string | null): string | null {
  if (content === null) return null;
  const end = content.indexOf("</think>");
  if (/^\s*<think>/.test(content)) {
    return end < 0 ? "" : content.slice(end + "</think>".length).replace(/^\s+/, "");
  }
  if (end >= 0 && !content.slice(0, end).includes("<think>")) {
    return content.slice(end + "</think>".length).replace(/^\s+/, "");
  }
  return content;
}

/** The text of `message.content`: a string, or the text parts of a list of parts. */
function contentText(content: unknown): string | null {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    // Some servers answer with content parts; the text parts are the answer.
    return content.map((part) => isRecord(part) && typeof part.text === "string" ? part.text : "")
      .join("");
  }
  return null;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
