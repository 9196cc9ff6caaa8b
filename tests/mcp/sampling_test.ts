/**
 * MCP sampling: the pure pieces (model choice, message mapping, results, the rate window), the
 * responder's limits with an injected clock, the `sampling` config keys, and the whole path
 * against a real server (`client_requests.ts` over stdio) and the fake model API: the request the
 * model gets (model, capped max_tokens, messages, tools), refusals over max_rpm, allowed models,
 * tool rounds, timeouts, failures and the capability switches.
 */
import assert from "node:assert/strict";
import { ProtocolError, type SamplingMessage } from "@modelcontextprotocol/client";
import { ModelClient } from "../../src/agent/model.ts";
import {
  chooseSamplingModel,
  RateWindow,
  samplingCapability,
  type SamplingModel,
  type SamplingOutcome,
  SamplingResponder,
  toChatMessages,
  toolRoundsOf,
  toSamplingResult,
} from "../../src/mcp/sampling.ts";
import {
  type ChatRequest,
  type FakeModel,
  startFakeModel,
  type Turn,
} from "../fixtures/fake_model.ts";
import { call, requestsServer, resultJson, resultText, startManager } from "./_client_requests.ts";
import { parseServerS, SAMPLING_DEFAULTS as SETTINGS } from "./_helpers.ts";

const DEFAULT_MODEL = "gpt-4.1-mini";

const user = (text: string): SamplingMessage => ({ role: "user", content: { type: "text", text } });

/** Serves sampling with the agent's model client pointed at the fake model. */
function modelAt(baseUrl: string): SamplingModel {
  return (request, signal) =>
    new ModelClient({
      model: request.model,
      provider: "custom",
      baseUrl,
      apiKeyVariable: "CUSTOM_API_KEY",
      timeoutSeconds: request.timeoutSeconds,
      maxRetries: 0,
      maxTokens: request.maxTokens,
      ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
    }).complete(request.messages, request.tools, { signal });
}

/** A manager over `servers` whose sampling goes to `fake`, with the outcomes recorded. */
async function samplingManager(fake: FakeModel, servers: Parameters<typeof startManager>[0]) {
  const outcomes: SamplingOutcome[] = [];
  const responder = new SamplingResponder({
    model: modelAt(fake.baseUrl),
    defaultModel: DEFAULT_MODEL,
    onOutcome: (outcome) => outcomes.push(outcome),
  });
  const manager = await startManager(servers, {
    onSampling: (server, params, signal) => responder.respond(server, params, signal),
  });
  return { manager, outcomes };
}

// ---------------------------------------------------------------------------------------------
// Pure pieces

Deno.test("chooseSamplingModel: hints count only within allowed_models", () => {
  const hints = (...names: string[]) => ({ hints: names.map((name) => ({ name })) });
  assert.equal(chooseSamplingModel(SETTINGS, DEFAULT_MODEL, hints("gpt-5")), DEFAULT_MODEL);
  assert.equal(chooseSamplingModel({ ...SETTINGS, model: "local" }, DEFAULT_MODEL), "local");
  const allowed = { ...SETTINGS, allowedModels: ["gpt-4.1-mini", "claude-sonnet-4"] };
  assert.equal(chooseSamplingModel(allowed, DEFAULT_MODEL, hints("gpt-5")), DEFAULT_MODEL);
  assert.equal(chooseSamplingModel(allowed, DEFAULT_MODEL, hints("CLAUDE")), "claude-sonnet-4");
  assert.equal(
    chooseSamplingModel(allowed, DEFAULT_MODEL, hints("", "gpt-5", "claude-sonnet-4")),
    "claude-sonnet-4",
  );
  assert.equal(
    chooseSamplingModel({ ...allowed, model: "claude-sonnet-4" }, DEFAULT_MODEL, hints()),
    "claude-sonnet-4",
  );
  // The default is not allowed: the first allowed model stands in.
  assert.equal(
    chooseSamplingModel({ ...SETTINGS, allowedModels: ["claude-sonnet-4"] }, DEFAULT_MODEL),
    "claude-sonnet-4",
  );
});

const TOOL_CONVERSATION: SamplingMessage[] = [
  user("Define gnu"),
  {
    role: "assistant",
    content: [
      { type: "text", text: "Looking it up" },
      { type: "tool_use", id: "t1", name: "lookup", input: { q: "gnu" } },
    ],
  },
  {
    role: "user",
    content: [{ type: "tool_result", toolUseId: "t1", content: [{ type: "text", text: "an ox" }] }],
  },
];

Deno.test("toolRoundsOf and toChatMessages: tool turns as tool calls, or as text", () => {
  assert.equal(toolRoundsOf([user("hi")]), 0);
  assert.equal(toolRoundsOf(TOOL_CONVERSATION), 1);
  assert.deepEqual(toChatMessages({ systemPrompt: "Short.", messages: TOOL_CONVERSATION }, true), [
    { role: "system", content: "Short." },
    { role: "user", content: "Define gnu" },
    {
      role: "assistant",
      content: "Looking it up",
      tool_calls: [{
        id: "t1",
        type: "function",
        function: { name: "lookup", arguments: '{"q":"gnu"}' },
      }],
    },
    { role: "tool", tool_call_id: "t1", content: "an ox" },
  ]);
  assert.deepEqual(toChatMessages({ messages: TOOL_CONVERSATION }, false), [
    { role: "user", content: "Define gnu" },
    { role: "assistant", content: 'Looking it up\n[called tool lookup with {"q":"gnu"}]' },
    { role: "user", content: "[result of tool lookup: an ox]" },
  ]);
  assert.throws(
    () =>
      toChatMessages({
        messages: [{
          role: "user",
          content: { type: "image", data: "AA==", mimeType: "image/png" },
        }],
      }, false),
    (error) =>
      error instanceof ProtocolError && error.code === -32602 &&
      /text only; message 1 carries image content/.test(error.message),
  );
});

Deno.test("toSamplingResult: text with stop reasons, tool calls as tool_use blocks", () => {
  const reply = (finishReason?: string) => ({ content: "x", toolCalls: [], finishReason });
  assert.equal(toSamplingResult(reply("stop"), "m", false).stopReason, "endTurn");
  assert.equal(toSamplingResult(reply(), "m", false).stopReason, "endTurn");
  assert.equal(toSamplingResult(reply("length"), "m", false).stopReason, "maxTokens");
  assert.equal(toSamplingResult(reply("content_filter"), "m", false).stopReason, "content_filter");
  const calls = {
    content: null,
    toolCalls: [{
      id: "c1",
      type: "function" as const,
      function: { name: "lookup", arguments: '{"q":"gnu"}' },
    }],
    finishReason: "tool_calls",
  };
  assert.deepEqual(toSamplingResult(calls, "m", true), {
    model: "m",
    role: "assistant",
    content: [{ type: "tool_use", id: "c1", name: "lookup", input: { q: "gnu" } }],
    stopReason: "toolUse",
  });
  // Tools were not offered: stray tool calls are not passed on.
  assert.deepEqual(toSamplingResult(calls, "m", false), {
    model: "m",
    role: "assistant",
    content: { type: "text", text: "" },
    stopReason: "endTurn",
  });
});

Deno.test("RateWindow and samplingCapability", () => {
  const window = new RateWindow(3);
  assert.equal(window.take(1_000), undefined);
  assert.equal(window.take(2_000), undefined);
  assert.equal(window.take(3_000), undefined);
  assert.equal(window.take(30_000), 31_000);
  assert.equal(window.take(61_000), undefined, "the first take left the window");
  assert.equal(window.take(61_500), 500);
  assert.deepEqual(samplingCapability(SETTINGS), { tools: {} });
  assert.deepEqual(samplingCapability({ maxToolRounds: 0 }), {});
});

Deno.test("SamplingResponder: max_rpm per rolling minute and per server, with a clock", async () => {
  let now = 0;
  const outcomes: SamplingOutcome[] = [];
  let calls = 0;
  const responder = new SamplingResponder({
    model: () => Promise.resolve({ content: `answer ${++calls}`, toolCalls: [] }),
    defaultModel: DEFAULT_MODEL,
    now: () => now,
    onOutcome: (outcome) => outcomes.push(outcome),
  });
  const a = { name: "a", sampling: { ...SETTINGS, maxRpm: 2 } };
  const b = { name: "b", sampling: { ...SETTINGS, maxRpm: 2 } };
  const params = { messages: [user("hi")], maxTokens: 10 };
  await responder.respond(a, params);
  now = 30_000;
  await responder.respond(a, params);
  await assert.rejects(
    responder.respond(a, params),
    (error) =>
      error instanceof ProtocolError && error.code === -32600 &&
      error.message === "sampling refused: more than max_rpm (2) requests in the last minute; " +
          "try again in 30 s",
  );
  await responder.respond(b, params); // another server has its own window
  now = 60_000;
  const result = await responder.respond(a, params);
  assert.deepEqual(result.content, { type: "text", text: "answer 4" });
  assert.deepEqual(outcomes.map((o) => `${o.server}:${o.outcome}`), [
    "a:served",
    "a:served",
    "a:refused",
    "b:served",
    "a:served",
  ]);
  await assert.rejects(
    responder.respond({ name: "c", sampling: { ...SETTINGS, enabled: false } }, params),
    /sampling refused: sampling is disabled for this server/,
  );
});

Deno.test("SamplingResponder: timeout, cancellation and failures say only what is needed", async () => {
  const waiting: SamplingModel = (_request, signal) =>
    new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason)));
  const outcomes: SamplingOutcome[] = [];
  const responder = (model: SamplingModel) =>
    new SamplingResponder({ model, defaultModel: "m", onOutcome: (o) => outcomes.push(o) });
  const server = { name: "s", sampling: { ...SETTINGS, timeoutSeconds: 0.1 } };
  const params = { messages: [user("hi")], maxTokens: 10 };
  const started = performance.now();
  await assert.rejects(
    responder(waiting).respond(server, params),
    /the model did not answer within sampling.timeout \(0.1 s\)/,
  );
  // After the 0.1 s itself: the message names the setting whatever the timer was.
  const waited = performance.now() - started;
  assert.ok(waited >= 80 && waited < 800, `timed out after ${Math.round(waited)} ms`);
  const controller = new AbortController();
  const pending = responder(waiting).respond(
    { ...server, sampling: SETTINGS },
    params,
    controller.signal,
  );
  controller.abort();
  await assert.rejects(pending, /the sampling request was cancelled/);
  const secret = Object.assign(new Error("cannot reach http://10.0.0.5/v1; set model.base_url"), {
    kind: "unreachable",
  });
  await assert.rejects(
    responder(() => Promise.reject(secret)).respond({ ...server, sampling: SETTINGS }, params),
    (error) =>
      error instanceof ProtocolError && error.code === -32603 &&
      error.message === "the model request failed (unreachable)",
  );
  assert.deepEqual(outcomes.map((o) => o.outcome), ["timed_out", "cancelled", "failed"]);
  assert.match(outcomes[2].reason ?? "", /10\.0\.0\.5/, "the details stay in the local log");
});

// ---------------------------------------------------------------------------------------------
// Config

Deno.test("config: sampling defaults, and every key typed", () => {
  assert.deepEqual(parseServerS([]).servers[0].sampling, SETTINGS);
  const { servers, issues } = parseServerS([
    "sampling:",
    "  enabled: no",
    "  model: ' claude-sonnet-4 '",
    "  max_tokens_cap: '1000'",
    "  timeout: 12.5",
    "  max_rpm: 3",
    "  max_tool_rounds: 0",
    "  allowed_models: [gpt-4.1-mini, claude-sonnet-4]",
  ]);
  assert.deepEqual(issues, []);
  assert.deepEqual(servers[0].sampling, {
    enabled: false,
    model: "claude-sonnet-4",
    maxTokensCap: 1000,
    timeoutSeconds: 12.5,
    maxRpm: 3,
    maxToolRounds: 0,
    allowedModels: ["gpt-4.1-mini", "claude-sonnet-4"],
  });
  assert.deepEqual(parseServerS(["sampling: { allowed_models: only-one }"]).servers[0].sampling, {
    ...SETTINGS,
    allowedModels: ["only-one"],
  });
});

Deno.test("config: each bad sampling value is an issue naming its key", () => {
  const cases: [string, string, string][] = [
    ["enabled: maybe", "sampling.enabled", 'sampling.enabled must be true or false, got "maybe"'],
    ["model: 5", "sampling.model", "sampling.model must be a model id such as gpt-4.1-mini, got 5"],
    ["model: ''", "sampling.model", "sampling.model must be a model id"],
    ["max_tokens_cap: 0", "sampling.max_tokens_cap", "must be a whole number >= 1, got 0"],
    ["max_tokens_cap: 1.5", "sampling.max_tokens_cap", "must be a whole number >= 1, got 1.5"],
    ["max_tokens_cap: lots", "sampling.max_tokens_cap", 'got "lots"'],
    ["timeout: 0", "sampling.timeout", "sampling.timeout must be a number of seconds > 0, got 0"],
    ["max_rpm: 0", "sampling.max_rpm", "whole number >= 1 (use enabled: false to turn sampling"],
    ["max_tool_rounds: -1", "sampling.max_tool_rounds", "whole number >= 0 (0 never offers tools)"],
    ["allowed_models: 5", "sampling.allowed_models", "must be a list of model ids, got 5"],
    [
      "allowed_models: [a, 3]",
      "sampling.allowed_models.1",
      "sampling.allowed_models items must be model ids (non-empty strings), got 3",
    ],
    [
      "{ model: b, allowed_models: [a] }",
      "sampling.model",
      'sampling.model "b" is not in sampling.allowed_models (a)',
    ],
  ];
  for (const [value, key, message] of cases) {
    const body = value.startsWith("{") ? [`sampling: ${value}`] : ["sampling:", `  ${value}`];
    const { servers, issues } = parseServerS(body);
    assert.deepEqual(servers, [], value);
    const issue = issues.find((one) => one.key === key);
    assert.ok(issue, `${value}: ${JSON.stringify(issues)}`);
    assert.equal(issue.severity, "error");
    assert.ok(issue.message.includes(message), `${value}: ${issue.message}`);
    assert.equal(issue.line, body.length === 1 ? 4 : 5, `${value}: the line is the key's`);
  }
  const typo = parseServerS(["sampling: { max_token_cap: 10 }"]);
  assert.equal(typo.servers.length, 1, "an unknown key is only a warning");
  assert.deepEqual(typo.issues.map((issue) => [issue.key, issue.severity, issue.message]), [[
    "sampling.max_token_cap",
    "warning",
    "unknown key `max_token_cap` is ignored; did you mean `max_tokens_cap`?",
  ]]);
});

// ---------------------------------------------------------------------------------------------
// Against a real server and the fake model API

/** The `sample` tool's arguments. */
const sample = (params: Record<string, unknown>) => ({
  params: { messages: [user("What is 2 + 2?")], maxTokens: 100, ...params },
});

Deno.test("a real server: sampling is served by the configured model, within max_tokens_cap", async () => {
  await using fake = await startFakeModel({ fallback: { content: "4" } });
  const { manager, outcomes } = await samplingManager(fake, [
    requestsServer("calc", { sampling: { max_tokens_cap: 500 } }),
  ]);
  await using _ = manager;
  const caps = resultJson(await call(manager, "calc", "client_capabilities"));
  assert.deepEqual(caps.sampling, { tools: {} });

  const result = resultJson(
    await call(manager, "calc", "sample", sample({ systemPrompt: "Be brief.", temperature: 0.3 })),
  );
  assert.deepEqual(result, {
    model: DEFAULT_MODEL,
    role: "assistant",
    content: { type: "text", text: "4" },
    stopReason: "endTurn",
  });
  const request = fake.requests[0];
  assert.equal(request.model, DEFAULT_MODEL);
  assert.equal(request.max_tokens, 100);
  assert.equal(request.temperature, 0.3);
  assert.equal(request.tools, undefined);
  assert.deepEqual(request.messages, [
    { role: "system", content: "Be brief." },
    { role: "user", content: "What is 2 + 2?" },
  ]);

  // Over the cap: cut to it.
  resultJson(await call(manager, "calc", "sample", sample({ maxTokens: 100_000 })));
  assert.equal(fake.requests[1].max_tokens, 500);
  assert.deepEqual(outcomes.map((o) => [o.outcome, o.model, o.maxTokens]), [
    ["served", DEFAULT_MODEL, 100],
    ["served", DEFAULT_MODEL, 500],
  ]);
});

Deno.test("a real server: over max_rpm is refused and the model is not called", async () => {
  await using fake = await startFakeModel({ fallback: { content: "ok" } });
  const { manager } = await samplingManager(fake, [
    requestsServer("chatty", { sampling: { max_rpm: 2 } }),
  ]);
  await using _ = manager;
  resultJson(await call(manager, "chatty", "sample", sample({})));
  resultJson(await call(manager, "chatty", "sample", sample({})));
  const refused = await call(manager, "chatty", "sample", sample({}));
  assert.ok(refused.isError);
  assert.match(
    resultText(refused),
    /^error -32600: sampling refused: more than max_rpm \(2\) requests in the last minute; try again in \d+ s$/,
  );
  assert.equal(fake.requests.length, 2);
});

Deno.test("a real server: model hints outside allowed_models are ignored", async () => {
  await using fake = await startFakeModel({ fallback: (request) => ({ content: request.model }) });
  const { manager } = await samplingManager(fake, [
    requestsServer("picky", { sampling: { allowed_models: [DEFAULT_MODEL, "claude-sonnet-4"] } }),
    requestsServer("open"),
    requestsServer("pinned", { sampling: { model: "local-model" } }),
  ]);
  await using _ = manager;
  const modelFor = async (server: string, hint: string) => {
    const args = sample({ modelPreferences: { hints: [{ name: hint }] } });
    return resultJson(await call(manager, server, "sample", args)).model;
  };
  assert.equal(await modelFor("picky", "gpt-5"), DEFAULT_MODEL, "not allowed: the default");
  assert.equal(await modelFor("picky", "sonnet"), "claude-sonnet-4", "allowed: honoured");
  assert.equal(await modelFor("open", "claude-sonnet-4"), DEFAULT_MODEL, "no allowed_models");
  assert.equal(await modelFor("pinned", "gpt-5"), "local-model", "sampling.model");
  assert.deepEqual(fake.requests.map((request) => request.model), [
    DEFAULT_MODEL,
    "claude-sonnet-4",
    DEFAULT_MODEL,
    "local-model",
  ]);
});

/** The model uses the lookup tool whenever it is offered, and answers in text otherwise. */
const toolHappy: Turn = (request: ChatRequest) =>
  request.tools
    ? { toolCalls: [{ name: "lookup", arguments: { q: `word ${request.messages.length}` } }] }
    : { content: "final answer" };

Deno.test("a real server: tool rounds up to max_tool_rounds, then tools are withheld", async () => {
  await using fake = await startFakeModel({ fallback: toolHappy });
  const { manager, outcomes } = await samplingManager(fake, [
    requestsServer("tools", { sampling: { max_tool_rounds: 2 } }),
  ]);
  await using _ = manager;
  const result = resultJson(
    await call(manager, "tools", "sample_with_tools", { prompt: "Define gnu", maxRequests: 10 }),
  );
  assert.deepEqual(result, { requests: 3, toolRounds: 2, text: "final answer" });
  assert.deepEqual(
    fake.requests.map((request) => (request.tools ?? []).map((tool) => tool.function.name)),
    [["lookup"], ["lookup"], []],
  );
  // Round two sees the first round as a tool call and its result.
  assert.deepEqual(fake.requests[1].messages.map((message) => message.role), [
    "user",
    "assistant",
    "tool",
  ]);
  // The last request carries the rounds as text, so no tool definitions are needed.
  assert.deepEqual(fake.requests[2].messages.map((message) => message.role), [
    "user",
    "assistant",
    "user",
    "assistant",
    "user",
  ]);
  assert.match(String(fake.requests[2].messages[1].content), /^\[called tool lookup with /);
  assert.deepEqual(outcomes.map((o) => o.toolsOffered), [true, true, false]);
});

Deno.test("a real server: capabilities follow sampling.enabled and max_tool_rounds", async () => {
  await using fake = await startFakeModel({ fallback: { content: "unused" } });
  const { manager } = await samplingManager(fake, [
    requestsServer("off", { sampling: { enabled: false } }),
    requestsServer("notools", { sampling: { max_tool_rounds: 0 } }),
  ]);
  await using _ = manager;
  const off = resultJson(await call(manager, "off", "client_capabilities"));
  assert.equal(off.sampling, undefined);
  const refused = await call(manager, "off", "sample", sample({}));
  assert.ok(refused.isError);
  // The server SDK sends it anyway; a client without the capability has no such method.
  assert.equal(resultText(refused), "error -32601: Method not found");

  const notools = resultJson(await call(manager, "notools", "client_capabilities"));
  assert.deepEqual(notools.sampling, {});
  const withTools = await call(manager, "notools", "sample_with_tools", {
    prompt: "x",
    maxRequests: 1,
  });
  assert.ok(withTools.isError);
  assert.match(resultText(withTools), /does not support sampling tools/i);
  assert.equal(fake.requests.length, 0, "the model was never called");

  await using plain = await startManager([requestsServer("plain")]);
  const none = resultJson(await call(plain, "plain", "client_capabilities"));
  assert.equal(none.sampling, undefined, "no handler: not declared");
});

Deno.test("a real server: timeouts, model failures and unsupported content are errors", async () => {
  await using fake = await startFakeModel({
    turns: [
      { hang: true },
      { status: 500, body: { error: { message: "internal detail at /srv/secret" } } },
    ],
  });
  const { manager, outcomes } = await samplingManager(fake, [
    requestsServer("flaky", { sampling: { timeout: 0.2 } }),
  ]);
  await using _ = manager;
  const slow = await call(manager, "flaky", "sample", sample({}));
  assert.equal(
    resultText(slow),
    "error -32603: the model did not answer within sampling.timeout (0.2 s)",
  );
  const broken = await call(manager, "flaky", "sample", sample({}));
  assert.equal(resultText(broken), "error -32603: the model request failed (server)");
  const image = await call(manager, "flaky", "sample", {
    params: {
      messages: [{ role: "user", content: { type: "image", data: "AA==", mimeType: "image/png" } }],
      maxTokens: 10,
    },
  });
  assert.equal(
    resultText(image),
    "error -32602: sampling refused: sampling is served as text only; message 1 carries image content",
  );
  assert.equal(fake.requests.length, 2, "the image request never reached the model");
  assert.deepEqual(outcomes.map((o) => o.outcome), ["timed_out", "failed", "refused"]);
});
