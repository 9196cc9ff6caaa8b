import assert from "node:assert/strict";
import {
  type ChatMessage,
  type FunctionTool,
  ModelClient,
  type ModelClientOptions,
  ModelError,
  type ModelErrorKind,
} from "../../src/agent/model.ts";
import type { ModelSettings } from "../../src/agent/settings.ts";
import { type FakeModelOptions, startFakeModel } from "../fixtures/fake_model.ts";
import { USER_AGENT } from "../../src/version.ts";

// The client promises no leaked timers, bodies or connections.
Deno.test.sanitizer({ ops: true, resources: true });

const KEY = "sk-test-SECRET-0123456789abcdef";
const HELLO: ChatMessage[] = [{ role: "user", content: "hello" }];
const NOTE_TOOL: FunctionTool = {
  type: "function",
  function: {
    name: "write_note",
    description: "Writes a note",
    parameters: { type: "object", properties: { text: { type: "string" } } },
  },
};

/** Settings of a keyless custom endpoint at `baseUrl`, no retries unless overridden. */
function settingsFor(baseUrl: string, overrides: Partial<ModelSettings> = {}): ModelSettings {
  return {
    model: "test-model",
    provider: "custom",
    baseUrl,
    apiKeyVariable: "CUSTOM_API_KEY",
    timeoutSeconds: 30,
    maxRetries: 0,
    ...overrides,
  };
}

/** Client options whose sleep records the delays asked for and returns at once. */
function instant(extra: ModelClientOptions = {}) {
  const delays: number[] = [];
  const options: ModelClientOptions = {
    random: () => 0.5,
    sleep: (ms, signal) => {
      delays.push(ms);
      return signal?.aborted ? Promise.reject(signal.reason) : Promise.resolve();
    },
    ...extra,
  };
  return { options, delays };
}

/** Awaits `promise`, asserts it rejects with a ModelError of `kind`, and returns the error. */
async function modelError(promise: Promise<unknown>, kind: ModelErrorKind): Promise<ModelError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof ModelError, `expected a ModelError, got ${error}`);
    assert.equal(error.name, "ModelError");
    assert.equal(error.kind, kind, error.message);
    return error;
  }
  assert.fail(`expected a ModelError (${kind}), the request succeeded`);
}

/** Starts the fake model and a client pointed at it. */
async function setup(
  fake: FakeModelOptions,
  overrides: Partial<ModelSettings> = {},
  extra: ModelClientOptions = {},
) {
  const model = await startFakeModel(fake);
  const { options, delays } = instant(extra);
  const client = new ModelClient(settingsFor(model.baseUrl, overrides), options);
  return { model, client, delays };
}

/** A resolvable promise. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** A port on 127.0.0.1 that nothing listens on. */
function closedPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/**
 * A call to `http://127.0.0.1:<port>/v1` where nothing listens (settings and client options as
 * given): the port and the `unreachable` error.
 */
async function refusedCall(
  overrides: Partial<ModelSettings> = {},
  extra: ModelClientOptions = {},
): Promise<{ port: number; error: ModelError }> {
  const port = closedPort();
  const client = new ModelClient(
    settingsFor(`http://127.0.0.1:${port}/v1`, overrides),
    instant(extra).options,
  );
  return { port, error: await modelError(client.complete(HELLO, []), "unreachable") };
}

/** The message of {@linkcode refusedCall} as a pattern: the refused connection, then `rest`. */
function refusedMessage(port: number, rest: string): RegExp {
  return new RegExp(
    `^cannot reach the model endpoint http://127\\.0\\.0\\.1:${port}/v1/chat/completions ` +
      "\\(client error \\(Connect\\): tcp connect error: Connection refused \\(os error \\d+\\)\\)" +
      rest,
  );
}

/** A tiny real HTTP server on 127.0.0.1 answering every request with `handler`. */
function serve(handler: (request: Request) => Response | Promise<Response>) {
  const hits: Array<{ method: string; url: string; headers: Headers }> = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    hits.push({ method: request.method, url: request.url, headers: new Headers(request.headers) });
    return handler(request);
  });
  return {
    baseUrl: `http://127.0.0.1:${server.addr.port}/v1`,
    hits,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

function assertClose(actual: number[], expected: number[]) {
  assert.equal(actual.length, expected.length, `got ${JSON.stringify(actual)}`);
  for (const [i, value] of expected.entries()) {
    assert.ok(Math.abs(actual[i] - value) < 1e-6, `delay ${i}: ${actual[i]} ≠ ${value}`);
  }
}

// --- answers -------------------------------------------------------------------------------

Deno.test("complete: a plain answer → content, no tool calls, finish reason, usage, 0 retries", async () => {
  const { model, client } = await setup({ turns: [{ content: "Hi there" }] });
  await using _ = model;

  const reply = await client.complete(HELLO, []);

  assert.equal(reply.content, "Hi there");
  assert.deepEqual(reply.toolCalls, []);
  assert.equal(reply.finishReason, "stop");
  assert.equal(reply.retries, 0);
  assert.deepEqual(reply.usage, { promptTokens: 10, completionTokens: 5 });
  assert.equal(model.requests.length, 1);
  assert.equal(client.url, `${model.baseUrl}/chat/completions`);
});

Deno.test("complete: a tool-call answer is parsed (id, name, arguments text, in order)", async () => {
  const { model, client } = await setup({
    turns: [{
      toolCalls: [
        { id: "call_abc", name: "write_note", arguments: { text: "hi" } },
        { id: "call_def", name: "list_notes", arguments: "{broken" },
      ],
    }],
  });
  await using _ = model;

  const reply = await client.complete(HELLO, [NOTE_TOOL]);

  assert.equal(reply.content, null);
  assert.equal(reply.finishReason, "tool_calls");
  assert.deepEqual(reply.toolCalls, [
    {
      id: "call_abc",
      type: "function",
      function: { name: "write_note", arguments: '{"text":"hi"}' },
    },
    { id: "call_def", type: "function", function: { name: "list_notes", arguments: "{broken" } },
  ]);
});

Deno.test("complete: object arguments are stringified, missing ones are {}, a missing id is call_<index>", async () => {
  const { model, client } = await setup({
    turns: [{
      status: 200,
      body: {
        choices: [{
          message: {
            role: "assistant",
            content: null,
            tool_calls: [
              { type: "function", function: { name: "a", arguments: { x: 1, y: [true] } } },
              { id: "", type: "function", function: { name: "b" } },
              { id: "keep", type: "function", function: { name: "c", arguments: "{}" } },
            ],
          },
        }],
      },
    }],
  });
  await using _ = model;

  const reply = await client.complete(HELLO, []);

  assert.deepEqual(reply.toolCalls.map((call) => [call.id, call.function]), [
    ["call_0", { name: "a", arguments: '{"x":1,"y":[true]}' }],
    ["call_1", { name: "b", arguments: "{}" }],
    ["keep", { name: "c", arguments: "{}" }],
  ]);
  assert.equal(reply.finishReason, undefined);
  assert.equal(reply.usage, undefined);
});

Deno.test("complete: content given as an array of parts is joined (text parts only)", async () => {
  const { model, client } = await setup({
    turns: [{
      status: 200,
      body: {
        choices: [{
          message: {
            role: "assistant",
            content: [
              { type: "text", text: "Hello, " },
              { type: "image_url", image_url: { url: "x" } },
              { type: "text", text: "world" },
            ],
          },
          finish_reason: "stop",
        }],
      },
    }],
  });
  await using _ = model;

  const reply = await client.complete(HELLO, []);

  assert.equal(reply.content, "Hello, world");
});

// --- the request ---------------------------------------------------------------------------

Deno.test("request: carries model, messages and tools; no sampling keys when unset", async () => {
  const { model, client } = await setup({ turns: [{ content: "ok" }] });
  await using _ = model;
  const messages: ChatMessage[] = [
    { role: "system", content: "be brief" },
    { role: "user", content: "note this" },
    {
      role: "assistant",
      content: null,
      tool_calls: [{
        id: "c1",
        type: "function",
        function: { name: "write_note", arguments: "{}" },
      }],
    },
    { role: "tool", tool_call_id: "c1", content: "done" },
  ];

  await client.complete(messages, [NOTE_TOOL]);

  const [request] = model.requests;
  assert.equal(request.model, "test-model");
  assert.deepEqual(request.messages, messages);
  assert.deepEqual(request.tools, [NOTE_TOOL]);
  assert.equal("temperature" in request, false);
  assert.equal("max_tokens" in request, false);
});

Deno.test("request: tools are omitted when none are offered", async () => {
  const { model, client } = await setup({ turns: [{ content: "ok" }] });
  await using _ = model;

  await client.complete(HELLO, []);

  assert.equal("tools" in model.requests[0], false);
});

Deno.test("request: temperature (even 0) and max_tokens are sent when set", async () => {
  const { model, client } = await setup(
    { turns: [{ content: "ok" }, { content: "ok" }] },
    { temperature: 0, maxTokens: 256 },
  );
  await using _ = model;

  await client.complete(HELLO, []);

  assert.equal(model.requests[0].temperature, 0);
  assert.equal(model.requests[0].max_tokens, 256);
});

Deno.test("request: Authorization: Bearer <key> only when an API key is set", async () => {
  const keyed = await setup({ apiKey: KEY, turns: [{ content: "ok" }] }, { apiKey: KEY });
  await using _keyed = keyed.model;
  const keyless = await setup({ turns: [{ content: "ok" }] });
  await using _keyless = keyless.model;

  assert.equal((await keyed.client.complete(HELLO, [])).content, "ok");
  await keyless.client.complete(HELLO, []);

  assert.equal(keyed.model.requests[0].authorization, `Bearer ${KEY}`);
  assert.equal(keyless.model.requests[0].authorization, null);
});

Deno.test("request: the service's own User-Agent, as deliveries and metrics packages send it", async () => {
  const { client, model } = await setup({ turns: [{ content: "ok" }] });
  await using _model = model;
  await client.complete(HELLO, []);
  assert.equal(model.requests[0].userAgent, USER_AGENT);
  assert.match(USER_AGENT, /^agent-service\/\d+\.\d+\.\d+/);
});

Deno.test("request: JSON content type and accept headers, POST to <base_url>/chat/completions", async () => {
  await using server = serve(() =>
    Response.json({ choices: [{ message: { role: "assistant", content: "ok" } }] })
  );
  const client = new ModelClient(settingsFor(server.baseUrl));

  await client.complete(HELLO, []);

  const [hit] = server.hits;
  assert.equal(hit.method, "POST");
  assert.equal(new URL(hit.url).pathname, "/v1/chat/completions");
  assert.equal(hit.headers.get("content-type"), "application/json");
  assert.equal(hit.headers.get("accept"), "application/json");
});

// --- retries -------------------------------------------------------------------------------

Deno.test("429 is retried, then the answer counts the retries", async () => {
  const { model, client, delays } = await setup(
    { turns: [{ status: 429 }, { status: 429 }, { content: "finally" }] },
    { maxRetries: 3 },
  );
  await using _ = model;

  const reply = await client.complete(HELLO, []);

  assert.equal(reply.content, "finally");
  assert.equal(reply.retries, 2);
  assert.equal(model.requests.length, 3);
  assert.equal(delays.length, 2);
});

Deno.test("Retry-After in seconds is the delay, capped at 60 s", async () => {
  const { model, client, delays } = await setup(
    {
      turns: [
        { status: 429, headers: { "retry-after": "7" } },
        { status: 429, headers: { "retry-after": " 1.5 " } },
        { status: 429, headers: { "retry-after": "600" } },
        { status: 429, headers: { "retry-after": "0" } },
        { content: "ok" },
      ],
    },
    { maxRetries: 5 },
  );
  await using _ = model;

  const reply = await client.complete(HELLO, []);

  assert.equal(reply.retries, 4);
  assert.deepEqual(delays, [7_000, 1_500, 60_000, 0]);
});

Deno.test("Retry-After as an HTTP date: the time until then, capped at 60 s; a past date → backoff", async () => {
  const soon = new Date(Date.now() + 45_000).toUTCString();
  const { model, client, delays } = await setup(
    {
      turns: [
        { status: 429, headers: { "retry-after": "Fri, 01 Jan 2100 00:00:00 GMT" } },
        { status: 429, headers: { "retry-after": "Thu, 01 Jan 1970 00:00:00 GMT" } },
        { status: 429, headers: { "retry-after": soon } },
        { status: 429, headers: { "retry-after": "soon-ish" } },
        { content: "ok" },
      ],
    },
    { maxRetries: 4 },
  );
  await using _ = model;

  await client.complete(HELLO, []);

  assert.equal(delays.length, 4);
  assert.equal(delays[0], 60_000);
  assert.equal(delays[1], 2_000, "a past date falls back to the backoff (1 s × 2¹ × 1.0)");
  // The date has whole seconds, so the wait is a little under 45 s: far above the 4 s backoff.
  assert.ok(delays[2] > 30_000 && delays[2] <= 45_000, `got ${delays[2]}`);
  assert.equal(delays[3], 8_000, "an unparseable header falls back to the backoff");
});

Deno.test("Retry-After also applies to a 503", async () => {
  const { model, client, delays } = await setup(
    { turns: [{ status: 503, headers: { "retry-after": "3" } }, { content: "ok" }] },
    { maxRetries: 1 },
  );
  await using _ = model;

  await client.complete(HELLO, []);

  assert.deepEqual(delays, [3_000]);
});

for (const status of [500, 502, 503]) {
  Deno.test(`${status} is retried with doubling backoff and ±20 % jitter`, async () => {
    const randoms = [0, 0.5, 1, 0.25];
    const { model, client, delays } = await setup(
      { turns: [{ status }, { status }, { status }, { status }, { content: "ok" }] },
      { maxRetries: 4 },
      { random: () => randoms.shift()! },
    );
    await using _ = model;

    const reply = await client.complete(HELLO, []);

    assert.equal(reply.content, "ok");
    assert.equal(reply.retries, 4);
    // base 1000 ms × 2^attempt × (0.8 + 0.4 × random)
    assertClose(delays, [800, 2_000, 4_800, 7_200]);
  });
}

Deno.test("backoff: retryBaseMs sets the first delay; doubling stops at 30 s before jitter", async () => {
  const { model, client, delays } = await setup(
    { fallback: { status: 503 } },
    { maxRetries: 4 },
    { retryBaseMs: 10_000 },
  );
  await using _ = model;

  await modelError(client.complete(HELLO, []), "server");

  assertClose(delays, [10_000, 20_000, 30_000, 30_000]);
});

Deno.test("429 after every retry → rate_limited with retries = maxRetries, 'after N attempts'", async () => {
  const { model, client, delays } = await setup(
    { fallback: { status: 429, body: { error: { message: "Slow down" } } } },
    { maxRetries: 2 },
  );
  await using _ = model;

  const error = await modelError(client.complete(HELLO, []), "rate_limited");

  assert.equal(error.retries, 2);
  assert.equal(error.status, 429);
  assert.match(error.message, /after 3 attempts/);
  assert.match(error.message, /HTTP 429: Slow down/);
  assert.equal(model.requests.length, 3);
  assert.equal(delays.length, 2);
});

Deno.test("5xx after every retry → server error with the status, 'after N attempts'", async () => {
  const { model, client } = await setup({ fallback: { status: 502 } }, { maxRetries: 3 });
  await using _ = model;

  const error = await modelError(client.complete(HELLO, []), "server");

  assert.equal(error.retries, 3);
  assert.equal(error.status, 502);
  assert.match(error.message, /HTTP 502/);
  assert.match(error.message, /after 4 attempts/);
  assert.ok(error.message.includes(client.url));
  assert.equal(model.requests.length, 4);
});

Deno.test("maxRetries 0: a 429 or 503 is not retried", async () => {
  const { model, client, delays } = await setup({ turns: [{ status: 429 }, { status: 503 }] });
  await using _ = model;

  const limited = await modelError(client.complete(HELLO, []), "rate_limited");
  const server = await modelError(client.complete(HELLO, []), "server");

  for (const error of [limited, server]) {
    assert.equal(error.retries, 0);
    assert.doesNotMatch(error.message, /attempts/);
  }
  assert.equal(model.requests.length, 2);
  assert.deepEqual(delays, []);
});

// --- errors that are not retried -----------------------------------------------------------

for (const status of [401, 403]) {
  Deno.test(`${status} → auth, not retried, names the key variable and says it is not set`, async () => {
    const { model, client, delays } = await setup(
      { turns: [{ status, body: { error: { message: "Incorrect API key provided" } } }] },
      { maxRetries: 3, apiKeyVariable: "ACME_API_KEY" },
    );
    await using _ = model;

    const error = await modelError(client.complete(HELLO, []), "auth");

    assert.equal(error.status, status);
    assert.equal(error.retries, 0);
    assert.match(error.message, new RegExp(`HTTP ${status}: Incorrect API key provided`));
    assert.match(error.message, /Fix: add ACME_API_KEY=<your key> to \.env \(it is not set\)$/);
    assert.equal(model.requests.length, 1);
    assert.deepEqual(delays, []);
  });
}

Deno.test("401 with a key set → auth, without '(it is not set)'", async () => {
  const { model, client } = await setup(
    { apiKey: "the-right-key" },
    { apiKey: KEY, apiKeyVariable: "OPENAI_API_KEY" },
  );
  await using _ = model;

  const error = await modelError(client.complete(HELLO, []), "auth");

  assert.match(error.message, /check OPENAI_API_KEY in \.env$/);
  assert.doesNotMatch(error.message, /not set/);
});

Deno.test("401 names where the key was read from: the .env file, or the process environment", async () => {
  const { model } = await setup({ apiKey: "the-right-key" });
  await using _ = model;
  const refused = (settings: Partial<ModelSettings>) =>
    modelError(
      new ModelClient(
        settingsFor(model.baseUrl, { apiKeyVariable: "OPENAI_API_KEY", ...settings }),
        instant().options,
      ).complete(HELLO, []),
      "auth",
    );

  const fromDotenv = await refused({ apiKey: KEY, apiKeySource: ".env", dotenvPath: "/h/.env" });
  assert.match(fromDotenv.message, /\. Fix: check OPENAI_API_KEY in \/h\/\.env$/);

  const fromEnvironment = await refused({
    apiKey: KEY,
    apiKeySource: "environment",
    dotenvPath: "/h/.env",
  });
  assert.match(
    fromEnvironment.message,
    /\. Fix: check OPENAI_API_KEY, read from the process environment \(a line in \/h\/\.env would take its place\)$/,
  );

  const unset = await refused({ dotenvPath: "/h/.env" });
  assert.match(
    unset.message,
    /\. Fix: add OPENAI_API_KEY=<your key> to \/h\/\.env \(it is not set\)$/,
  );
  for (const error of [fromDotenv, fromEnvironment, unset]) {
    assert.ok(!error.message.includes(KEY), "the key itself is never shown");
  }
});

Deno.test("429 insufficient_quota and 402 → quota, not retried: waiting does not buy credit", async () => {
  const quota = {
    error: {
      message: "You exceeded your current quota, please check your plan and billing details.",
      type: "insufficient_quota",
      param: null,
      code: "insufficient_quota",
    },
  };
  const { model, client, delays } = await setup(
    {
      turns: [
        { status: 429, body: quota },
        { status: 402, body: { error: { message: "Insufficient credits", code: 402 } } },
      ],
    },
    { maxRetries: 3, apiKeyVariable: "OPENROUTER_API_KEY", apiKey: KEY },
  );
  await using _ = model;

  const exceeded = await modelError(client.complete(HELLO, []), "quota");
  assert.equal(exceeded.status, 429);
  assert.equal(exceeded.retries, 0);
  assert.equal(
    exceeded.message,
    "the model provider refused the request: the account has no quota or credit left (HTTP 429: " +
      "You exceeded your current quota, please check your plan and billing details.). Fix: " +
      "check the plan and billing of the account the key in OPENROUTER_API_KEY belongs to",
  );
  const credits = await modelError(client.complete(HELLO, []), "quota");
  assert.equal(credits.status, 402);
  assert.match(credits.message, /no quota or credit left \(HTTP 402: Insufficient credits\)/);
  assert.equal(model.requests.length, 2, "neither was retried");
  assert.deepEqual(delays, []);
});

const CONTEXT_ERRORS: Array<[string, number, unknown]> = [
  ["OpenAI", 400, {
    error: {
      message: "This model's maximum context length is 128000 tokens. However, your messages " +
        "resulted in 130512 tokens. Please reduce the length of the messages.",
      type: "invalid_request_error",
      param: "messages",
      code: "context_length_exceeded",
    },
  }],
  ["llama.cpp", 400, {
    error: {
      code: 400,
      message: "the request exceeds the available context size, try increasing it",
      type: "exceed_context_size_error",
    },
  }],
  ["vLLM", 400, {
    object: "error",
    message: "This model's maximum context length is 32768 tokens. However, you requested " +
      "40000 tokens in the messages.",
    type: "BadRequestError",
    code: 400,
  }],
  ["Anthropic", 400, {
    type: "error",
    error: {
      type: "invalid_request_error",
      message: "prompt is too long: 210000 tokens > 200000 maximum",
    },
  }],
];

for (const [server, status, body] of CONTEXT_ERRORS) {
  Deno.test(`${server}'s 'context too long' → context_length saying so, with what to do, not retried`, async () => {
    const { model, client, delays } = await setup(
      { turns: [{ status, body }] },
      { maxRetries: 3 },
      { configFile: "/h/config.yaml" },
    );
    await using _ = model;

    const error = await modelError(client.complete(HELLO, []), "context_length");

    assert.equal(error.status, status);
    assert.match(
      error.message,
      /^the conversation is longer than model 'test-model' can take \(HTTP 400: .+\)\. Fix: start a new conversation \(\/new in chat\), ask for less at once, or set model\.default in \/h\/config\.yaml to a model with a larger context window/,
    );
    assert.equal(model.requests.length, 1);
    assert.deepEqual(delays, []);
  });
}

Deno.test("context too long with model.max_tokens set → also says to lower it", async () => {
  const [, status, body] = CONTEXT_ERRORS[2];
  const { model, client } = await setup({ turns: [{ status, body }] }, { maxTokens: 30_000 });
  await using _ = model;

  const error = await modelError(client.complete(HELLO, []), "context_length");

  assert.match(
    error.message,
    /ask for less at once, lower model\.max_tokens \(the answer's tokens count too\), or set model\.default/,
  );
});

for (const status of [405, 501]) {
  Deno.test(`${status} (a web server, not the API) → names model.base_url, not retried`, async () => {
    const page = "<html><body><h1>Unsupported method ('POST')</h1></body></html>";
    const { model, client, delays } = await setup(
      { turns: [{ status, body: page }] },
      { maxRetries: 3 },
      { configFile: "/h/config.yaml" },
    );
    await using _ = model;

    const error = await modelError(client.complete(HELLO, []), "bad_request");

    assert.equal(
      error.message,
      `the model endpoint ${client.url} does not take POST requests (HTTP ${status}: ` +
        "Unsupported method ('POST')). Fix: set model.base_url in /h/config.yaml to the " +
        "OpenAI-compatible API root, which usually ends in /v1 (/chat/completions is added to it)",
    );
    assert.equal(model.requests.length, 1);
    assert.deepEqual(delays, []);
  });
}

Deno.test("404 → model_not_found naming the model, model.default, the config file and model.base_url", async () => {
  const { model, client, delays } = await setup(
    { models: ["other-model"] },
    { maxRetries: 3 },
    { configFile: "/h/config.yaml" },
  );
  await using _ = model;

  const error = await modelError(client.complete(HELLO, []), "model_not_found");

  assert.equal(error.status, 404);
  assert.match(error.message, /model 'test-model'/);
  assert.match(error.message, /set model\.default in \/h\/config\.yaml/);
  assert.match(error.message, /check model\.base_url/);
  assert.equal(model.requests.length, 1);
  assert.deepEqual(delays, []);
});

Deno.test("400 saying the model does not exist → model_not_found naming model.default", async () => {
  const { model, client } = await setup(
    {
      turns: [{
        status: 400,
        body: { error: { message: "The model `test-model` does not exist." } },
      }],
    },
    { maxRetries: 2 },
  );
  await using _ = model;

  const error = await modelError(client.complete(HELLO, []), "model_not_found");

  assert.equal(error.status, 400);
  assert.match(error.message, /model\.default in config\.yaml/);
  assert.doesNotMatch(error.message, /model\.base_url/);
  assert.equal(model.requests.length, 1);
});

Deno.test("another 400 → bad_request with the endpoint's message, not retried", async () => {
  const { model, client, delays } = await setup(
    {
      turns: [{
        status: 400,
        body: { error: { message: "Invalid value for 'temperature'", type: "invalid_request" } },
      }],
    },
    { maxRetries: 3 },
  );
  await using _ = model;

  const error = await modelError(client.complete(HELLO, []), "bad_request");

  assert.equal(error.status, 400);
  assert.equal(error.retries, 0);
  assert.match(error.message, /rejected the request \(HTTP 400: Invalid value for 'temperature'\)/);
  assert.equal(model.requests.length, 1);
  assert.deepEqual(delays, []);
});

Deno.test("error detail: {error: text}, {message}, plain text; whitespace collapsed; long text cut", async () => {
  const { model, client } = await setup({
    turns: [
      { status: 422, body: { error: "plain error string" } },
      { status: 422, body: { message: "top-level message" } },
      { status: 422, body: "  not\n\n json   at all " },
      { status: 422, body: "x".repeat(400) },
    ],
  });
  await using _ = model;

  const messages: string[] = [];
  for (let i = 0; i < 4; i++) {
    messages.push((await modelError(client.complete(HELLO, []), "bad_request")).message);
  }

  assert.match(messages[0], /HTTP 422: plain error string\)/);
  assert.match(messages[1], /HTTP 422: top-level message\)/);
  assert.match(messages[2], /HTTP 422: not json at all\)/);
  assert.ok(messages[3].includes(`HTTP 422: ${"x".repeat(199)}…)`), messages[3]);
  assert.ok(!messages[3].includes("x".repeat(200)));
});

// --- answers that are not chat completions -------------------------------------------------

const BAD_ANSWERS: Array<[string, unknown, RegExp]> = [
  ["an HTML page", "<!doctype html><html><body>Welcome</body></html>", /not with JSON/],
  ["{} without choices", {}, /without choices\[0\]\.message/],
  ["empty choices", { choices: [] }, /without choices\[0\]\.message/],
  ["a choice without message", { choices: [{ text: "hi" }] }, /without choices\[0\]\.message/],
  [
    "a tool call without function name",
    {
      choices: [{
        message: {
          role: "assistant",
          tool_calls: [
            { id: "a", function: { name: "ok" } },
            { id: "b", function: { arguments: "{}" } },
          ],
        },
      }],
    },
    /tool_calls\[1\] has no function name/,
  ],
];

for (const [what, body, why] of BAD_ANSWERS) {
  Deno.test(`200 with ${what} → bad_response pointing at model.base_url, not retried`, async () => {
    const { model, client, delays } = await setup(
      { turns: [{ status: 200, body }] },
      { maxRetries: 2 },
    );
    await using _ = model;

    const error = await modelError(client.complete(HELLO, []), "bad_response");

    assert.equal(error.status, 200);
    assert.match(error.message, why);
    assert.match(error.message, /model\.base_url/);
    assert.ok(error.message.includes(client.url));
    assert.equal(model.requests.length, 1);
    assert.deepEqual(delays, []);
  });
}

Deno.test("200 with an error body → the endpoint's error quoted, not 'check model.base_url'", async () => {
  const { model, client, delays } = await setup(
    { turns: [{ status: 200, body: { error: { message: "upstream provider overloaded" } } }] },
    { maxRetries: 2 },
  );
  await using _ = model;

  const error = await modelError(client.complete(HELLO, []), "bad_response");

  assert.equal(error.status, 200);
  assert.equal(
    error.message,
    `the model endpoint ${client.url} answered HTTP 200 with an error instead of an answer: ` +
      "upstream provider overloaded",
  );
  assert.equal(model.requests.length, 1);
  assert.deepEqual(delays, []);
});

Deno.test("200 'Unexpected endpoint or method' (LM Studio at a path it does not serve) → names model.base_url", async () => {
  const { model, client } = await setup(
    {
      turns: [{
        status: 200,
        body: { error: "Unexpected endpoint or method. (POST /chat/completions)" },
      }],
    },
    {},
    { configFile: "/h/config.yaml" },
  );
  await using _ = model;

  const error = await modelError(client.complete(HELLO, []), "bad_response");

  assert.equal(
    error.message,
    `the model endpoint ${client.url} answered HTTP 200 with an error instead of an answer: ` +
      "Unexpected endpoint or method. (POST /chat/completions). Fix: set model.base_url in " +
      "/h/config.yaml to the API root, which usually ends in /v1 (/chat/completions is added to it)",
  );
});

Deno.test("an answer that breaks off mid-body is retried, and said as such, not 'cannot reach'", async () => {
  const { model, client, delays } = await setup(
    { turns: [{ brokenBody: '{"choices":[{"mess' }, { content: "whole" }] },
    { maxRetries: 2 },
  );
  await using _ = model;

  const reply = await client.complete(HELLO, []);
  assert.equal(reply.content, "whole");
  assert.equal(reply.retries, 1);
  assert.equal(delays.length, 1);

  model.push({ brokenBody: "{" }, { brokenBody: '{"id":' }, { brokenBody: "" });
  const error = await modelError(client.complete(HELLO, []), "server");
  assert.equal(error.status, 200);
  assert.equal(error.retries, 2);
  assert.match(
    error.message,
    /^the model endpoint http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions broke off its answer \(HTTP 200, error reading a body from connection\), after 3 attempts\. Fix: if it keeps happening, look at the model server's log/,
  );
  assert.doesNotMatch(error.message, /cannot reach|start the model server/);
});

// A wrong model.base_url (or a broken server) can send a body that never ends: it is read up to
// a cap, never buffered past it, and fails without being retried.
const MiB = 1024 * 1024;
/** Bytes the server may have sent past what the client read: socket buffers, generously. */
const IN_FLIGHT = 16 * MiB;

Deno.test("a JSON answer that never ends → bad_response at 64 MiB, not retried, naming model.base_url and what came", async () => {
  const { model, client } = await setup(
    {
      turns: [{
        endlessBody: {
          start: '{"choices":[{"message":{"role":"assistant","content":"',
          repeat: "all work and no play ",
        },
      }],
    },
    { timeoutSeconds: 10, maxRetries: 1 },
    { configFile: "/h/config.yaml" },
  );
  await using _ = model;

  const error = await modelError(client.complete(HELLO, []), "bad_response");

  assert.equal(error.status, 200);
  assert.equal(error.retries, 0);
  assert.equal(model.requests.length, 1, "not retried");
  assert.match(
    error.message,
    /^the model endpoint http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions answered HTTP 200 \(application\/json\) with more than 64 MiB and had not finished, far more than any chat completion, so the rest was not read \(it began: \{"choices":\[\{"message":\{"role":"assistant","content":"all work and no play all work/,
  );
  assert.match(
    error.message,
    /\. Fix: check that model\.base_url in \/h\/config\.yaml points at an OpenAI-compatible API root \(it usually ends in \/v1\) and that the server there works$/,
  );
  const [body] = model.endlessBodies;
  await body.stopped; // the client cancelled the body
  assert.ok(body.sentBytes < 64 * MiB + IN_FLIGHT, `${body.sentBytes} bytes sent`);
});

Deno.test("an event stream that never ends → bad_response at the cap, not retried, saying text/event-stream", async () => {
  const { model, client } = await setup(
    {
      turns: [{
        endlessBody: {
          contentType: "text/event-stream; charset=utf-8",
          repeat: 'data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n',
        },
      }],
    },
    { timeoutSeconds: 10, maxRetries: 1 },
  );
  await using _ = model;

  const error = await modelError(client.complete(HELLO, []), "bad_response");

  assert.equal(model.requests.length, 1, "not retried");
  assert.match(
    error.message,
    /answered HTTP 200 \(text\/event-stream\) with more than 64 MiB and had not finished, .* \(it began: data: \{"choices":\[\{"index":0,"delta":\{"content":"x"\}\}\]\} data: /,
  );
  assert.match(error.message, /Fix: check that model\.base_url in config\.yaml points at/);
  const [body] = model.endlessBodies;
  await body.stopped;
  assert.ok(body.sentBytes < 64 * MiB + IN_FLIGHT, `${body.sentBytes} bytes sent`);
});

Deno.test("maxAnswerBytes sets the cap; an answer of exactly that size is read whole", async () => {
  const answer = JSON.stringify({
    choices: [{ message: { role: "assistant", content: "fits" }, finish_reason: "stop" }],
  });
  await using server = serve(() => Response.json(JSON.parse(answer)));
  const bytes = new TextEncoder().encode(answer).byteLength;
  const fits = new ModelClient(settingsFor(server.baseUrl), { maxAnswerBytes: bytes });
  assert.equal((await fits.complete(HELLO, [])).content, "fits");
  const over = new ModelClient(settingsFor(server.baseUrl), { maxAnswerBytes: bytes - 1 });
  const error = await modelError(over.complete(HELLO, []), "bad_response");
  assert.match(error.message, new RegExp(`with more than ${bytes - 1} bytes and had not finished`));
});

Deno.test("an error answer that never ends is read up to 1 MiB and judged by its status (5xx: retried)", async () => {
  const endless500 = {
    endlessBody: {
      status: 502,
      start: '{"error":{"message":"',
      repeat: "upstream overloaded ",
    },
  };
  const { model, client, delays } = await setup(
    { turns: [endless500, endless500] },
    { timeoutSeconds: 10, maxRetries: 1 },
  );
  await using _ = model;

  const error = await modelError(client.complete(HELLO, []), "server");

  assert.equal(error.status, 502);
  assert.equal(error.retries, 1);
  assert.equal(delays.length, 1);
  assert.match(
    error.message,
    /^the model endpoint http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions failed \(HTTP 502: \{"error":\{"message":"upstream overloaded upstream/,
  );
  for (const body of model.endlessBodies) {
    await body.stopped;
    assert.ok(body.sentBytes < 1 * MiB + IN_FLIGHT, `${body.sentBytes} bytes sent`);
  }
});

Deno.test("an answer that trickles forever ends with model.timeout_seconds, said as begun but unfinished", async () => {
  const { model, client } = await setup(
    { turns: [{ endlessBody: { start: '{"choices":[', repeat: " ", everyMs: 20 } }] },
    { timeoutSeconds: 0.5, maxRetries: 0 },
  );
  await using _ = model;

  const started = performance.now();
  const error = await modelError(client.complete(HELLO, []), "timeout");
  const waited = performance.now() - started;

  // Ended by the 0.5 s itself (the message names the setting whatever the timer was).
  assert.ok(waited >= 450 && waited < 3_000, `ended after ${Math.round(waited)} ms`);

  assert.match(
    error.message,
    /^the model endpoint http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions began to answer \(HTTP 200\) but did not finish within model\.timeout_seconds \(0\.5 s\)$/,
  );
  await model.endlessBodies[0].stopped;
});

Deno.test("reasoning in <think>…</think> before the answer is not part of the answer", async () => {
  const cases: Array<[string | null, string | null]> = [
    ["<think>\nThe user greets me.\n</think>\n\nHello!", "Hello!"],
    ["  <think>a</think>[SILENT]", "[SILENT]"],
    // The chat template opened the block: only its end is in the answer.
    ["The user greets me.\n</think>\n\nHello!", "Hello!"],
    // Cut off while reasoning: no answer yet.
    ["<think>\nStill thinking", ""],
    // An answer that talks about the tags keeps them.
    ["Models write <think>…</think> first.", "Models write <think>…</think> first."],
    ["Hello", "Hello"],
    [null, null],
  ];
  const { model, client } = await setup({
    turns: cases.map(([content]) => ({
      status: 200,
      body: { choices: [{ message: { role: "assistant", content }, finish_reason: "stop" }] },
    })),
  });
  await using _ = model;

  for (const [content, answer] of cases) {
    assert.equal((await client.complete(HELLO, [])).content, answer, JSON.stringify(content));
  }
});

Deno.test("a refusal without content is the answer's text", async () => {
  const refusal = "I can't help with that.";
  const { model, client } = await setup({
    turns: [{
      status: 200,
      body: { choices: [{ message: { role: "assistant", content: null, refusal } }] },
    }, {
      status: 200,
      body: { choices: [{ message: { role: "assistant", content: "", refusal } }] },
    }, {
      status: 200,
      body: { choices: [{ message: { role: "assistant", content: "hi", refusal: null } }] },
    }],
  });
  await using _ = model;

  assert.equal((await client.complete(HELLO, [])).content, refusal);
  assert.equal((await client.complete(HELLO, [])).content, refusal);
  assert.equal((await client.complete(HELLO, [])).content, "hi");
});

Deno.test("a redirect is not followed: the request fails and the target is never asked", async () => {
  await using target = serve(() =>
    Response.json({ choices: [{ message: { role: "assistant", content: "redirected" } }] })
  );
  await using redirector = serve(() =>
    new Response(null, {
      status: 307,
      headers: { location: `${target.baseUrl}/chat/completions` },
    })
  );
  const client = new ModelClient(settingsFor(redirector.baseUrl));

  const error = await client.complete(HELLO, []).then(
    (reply) => assert.fail(`the redirect was followed: ${JSON.stringify(reply)}`),
    (error: unknown) => error,
  );

  assert.ok(error instanceof ModelError, `expected a ModelError, got ${error}`);
  assert.equal(error.kind, "bad_request");
  assert.equal(error.status, 307);
  assert.match(
    error.message,
    /redirects \(HTTP 307 to http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions\)/,
  );
  assert.match(error.message, /model\.base_url/);
  // Not retried: a redirect does not go away by asking again.
  assert.equal(redirector.hits.length, 1);
  assert.equal(target.hits.length, 0);
});

// --- connection problems -------------------------------------------------------------------

Deno.test("unreachable endpoint → unreachable after the retries, naming model.base_url", async () => {
  const baseUrl = `http://127.0.0.1:${closedPort()}/v1`;
  const { options, delays } = instant({ configFile: "/h/config.yaml" });
  const client = new ModelClient(settingsFor(baseUrl, { maxRetries: 2 }), options);

  const error = await modelError(client.complete(HELLO, []), "unreachable");

  assert.equal(error.retries, 2);
  assert.equal(error.status, undefined);
  assert.ok(error.message.includes(`${baseUrl}/chat/completions`), error.message);
  assert.match(error.message, /set model\.base_url in \/h\/config\.yaml/);
  assert.match(error.message, /after 3 attempts/);
  assert.equal(delays.length, 2);
  assert.ok(error.cause !== undefined);
});

Deno.test("unreachable endpoint: the message says why (connection refused), not 'fetch failed'", async () => {
  const { port, error } = await refusedCall();
  assert.match(error.message, refusedMessage(port, "\\. Fix: start the model server"));
  assert.doesNotMatch(error.message, /fetch failed|error sending request/);
});

Deno.test("no answer within timeoutSeconds → timeout, retried, naming model.timeout_seconds", async () => {
  const { model, client, delays } = await setup(
    { turns: [{ hang: true }, { hang: true }] },
    { timeoutSeconds: 0.2, maxRetries: 1 },
  );
  await using _ = model;

  const started = performance.now();
  const error = await modelError(client.complete(HELLO, []), "timeout");
  const waited = performance.now() - started;

  // Two attempts of 0.2 s each (the backoff sleep is injected and does not wait).
  assert.ok(waited >= 350 && waited < 3_000, `timed out after ${Math.round(waited)} ms`);
  assert.equal(error.retries, 1);
  assert.match(error.message, /did not answer within model\.timeout_seconds \(0\.2 s\)/);
  assert.match(error.message, /after 2 attempts/);
  assert.equal(model.requests.length, 2);
  assert.equal(delays.length, 1);
});

Deno.test("after the retries, each message reads as one sentence: '…, after N attempts'", async () => {
  // Not "(0.2 s) (after 2 attempts)", nor the attempts after the fix.
  const hang = await setup(
    { turns: [{ hang: true }, { hang: true }] },
    { timeoutSeconds: 0.2, maxRetries: 1 },
  );
  await using _hang = hang.model;
  const timeout = await modelError(hang.client.complete(HELLO, []), "timeout");
  assert.equal(
    timeout.message,
    `the model endpoint ${hang.client.url} did not answer within model.timeout_seconds ` +
      "(0.2 s), after 2 attempts",
  );

  const limited = await setup(
    { fallback: { status: 429, body: { error: { message: "Slow down" } } } },
    { maxRetries: 2 },
  );
  await using _limited = limited.model;
  assert.equal(
    (await modelError(limited.client.complete(HELLO, []), "rate_limited")).message,
    "the model endpoint rate-limited the request (HTTP 429: Slow down), after 3 attempts",
  );

  const failing = await setup({ fallback: { status: 502 } }, { maxRetries: 1 });
  await using _failing = failing.model;
  assert.equal(
    (await modelError(failing.client.complete(HELLO, []), "server")).message,
    `the model endpoint ${failing.client.url} failed (HTTP 502: scripted 502), after 2 attempts`,
  );

  const refused = await refusedCall({ maxRetries: 1 }, { configFile: "/h/config.yaml" });
  assert.match(
    refused.error.message,
    refusedMessage(
      refused.port,
      ", after 2 attempts\\. Fix: start the model server, or set model\\.base_url in /h/config\\.yaml$",
    ),
  );
});

Deno.test("a timed-out attempt is retried and the next answer is used", async () => {
  const { model, client } = await setup(
    { turns: [{ hang: true }, { content: "second try" }] },
    { timeoutSeconds: 0.2, maxRetries: 1 },
  );
  await using _ = model;

  const reply = await client.complete(HELLO, []);

  assert.equal(reply.content, "second try");
  assert.equal(reply.retries, 1);
});

// --- cancellation --------------------------------------------------------------------------

Deno.test("abort during a request → cancelled at once, not retried", async () => {
  const received = deferred();
  const { model, client, delays } = await setup(
    { turns: [{ hang: true }], onRequest: () => received.resolve() },
    // A long timeout and retries: only the abort can end this request.
    { timeoutSeconds: 3_600, maxRetries: 3 },
  );
  await using _ = model;
  const controller = new AbortController();

  const pending = client.complete(HELLO, [], { signal: controller.signal });
  await received.promise;
  controller.abort(new Error("user pressed Ctrl+C"));
  const error = await modelError(pending, "cancelled");

  assert.equal(error.retries, 0);
  assert.equal(error.message, "the model request was cancelled");
  assert.equal(model.requests.length, 1);
  assert.deepEqual(delays, []);
});

Deno.test("an already aborted signal → cancelled without sending anything", async () => {
  const { model, client } = await setup({ turns: [{ content: "never" }] });
  await using _ = model;

  const error = await modelError(
    client.complete(HELLO, [], { signal: AbortSignal.abort() }),
    "cancelled",
  );

  assert.equal(error.retries, 0);
  assert.equal(model.requests.length, 0);
});

Deno.test("abort during the backoff sleep → cancelled, no further attempt", async () => {
  const sleeping = deferred<number>();
  const model = await startFakeModel({ fallback: { status: 503 } });
  await using _ = model;
  const client = new ModelClient(settingsFor(model.baseUrl, { maxRetries: 3 }), {
    random: () => 0.5,
    // Waits until the signal aborts, like the real sleep with a long delay.
    sleep: (ms, signal) =>
      new Promise((_resolve, reject) => {
        sleeping.resolve(ms);
        signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
      }),
  });
  const controller = new AbortController();

  const pending = client.complete(HELLO, [], { signal: controller.signal });
  assert.equal(await sleeping.promise, 1_000);
  controller.abort();
  const error = await modelError(pending, "cancelled");

  assert.equal(error.retries, 1);
  assert.equal(model.requests.length, 1);
});

Deno.test("the default sleep stops when the signal aborts and leaves no timer behind", async () => {
  const model = await startFakeModel({
    fallback: { status: 429, headers: { "retry-after": "60" } },
  });
  await using _ = model;
  const controller = new AbortController();
  let calls = 0;
  const client = new ModelClient(settingsFor(model.baseUrl, { maxRetries: 3 }), {
    // The answer is read in full, then the caller aborts while the client waits 60 s.
    fetch: async (input, init) => {
      calls++;
      const response = await fetch(input, init);
      const text = await response.text();
      setTimeout(() => controller.abort(), 0);
      return new Response(text, { status: response.status, headers: response.headers });
    },
  });

  const error = await modelError(
    client.complete(HELLO, [], { signal: controller.signal }),
    "cancelled",
  );

  assert.equal(error.retries, 1);
  assert.equal(calls, 1);
});

// --- the API key stays secret --------------------------------------------------------------

for (const [status, kind] of [[401, "auth"], [400, "bad_request"], [500, "server"]] as const) {
  Deno.test(`the API key echoed in a ${status} error body is redacted`, async () => {
    const { model, client } = await setup(
      {
        fallback: {
          status,
          body: { error: { message: `Incorrect API key provided: ${KEY}. Key ${KEY} is bad.` } },
        },
      },
      { apiKey: KEY, maxRetries: 1 },
    );
    await using _ = model;

    const error = await modelError(client.complete(HELLO, []), kind);

    assert.ok(!error.message.includes(KEY), error.message);
    assert.match(error.message, /provided: \[REDACTED\]\. Key \[REDACTED\] is bad/);
  });
}

Deno.test("the API key in a non-JSON error body is redacted too", async () => {
  const { model, client } = await setup(
    { turns: [{ status: 403, body: `<html>forbidden for ${KEY}</html>` }] },
    { apiKey: KEY },
  );
  await using _ = model;

  const error = await modelError(client.complete(HELLO, []), "auth");

  assert.ok(!error.message.includes(KEY));
  assert.match(error.message, /forbidden for \[REDACTED\]/);
});

Deno.test({
  name: "no part of the API key leaks when the echoed key straddles the 300-character cut",
  fn: async () => {
    const { model, client } = await setup(
      { turns: [{ status: 401, body: { error: { message: `${"x".repeat(290)}${KEY}` } } }] },
      { apiKey: KEY },
    );
    await using _ = model;

    const error = await modelError(client.complete(HELLO, []), "auth");

    assert.ok(!error.message.includes(KEY.slice(0, 10)), error.message);
  },
});

Deno.test("404 that says nothing of the model (a base_url without /v1) → names model.base_url and the URL asked, not the model", async () => {
  const { model, client } = await setup(
    { turns: [{ status: 404, body: { error: { message: "Unknown request URL" } } }] },
    { maxRetries: 3 },
    { configFile: "/h/config.yaml" },
  );
  await using _ = model;

  const error = await modelError(client.complete(HELLO, []), "bad_request");

  assert.equal(error.status, 404);
  assert.match(
    error.message,
    /has no chat completions API at http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions/,
  );
  assert.match(error.message, /Unknown request URL/);
  assert.match(
    error.message,
    /set model\.base_url in \/h\/config\.yaml to the API root, which usually ends in \/v1/,
  );
  assert.doesNotMatch(error.message, /does not know model/);
  assert.equal(model.requests.length, 1, "not retried");
});

Deno.test("an HTML error page is quoted as its text, not its markup", async () => {
  const page = "<!DOCTYPE HTML>\n<html><head><title>Error</title></head>\n" +
    "<body><h1>Unsupported method ('POST')</h1></body></html>\n";
  const { model, client } = await setup(
    { turns: [{ status: 400, body: page }] },
    { maxRetries: 0 },
  );
  await using _ = model;

  const error = await modelError(client.complete(HELLO, []), "bad_request");

  assert.match(error.message, /\(HTTP 400: Unsupported method \('POST'\)\)/);
  assert.doesNotMatch(error.message, /DOCTYPE|<html/);
});
