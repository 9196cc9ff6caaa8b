/**
 * MCP elicitation: the pure form helpers (fields, answers, checks, defaults), the handler's
 * outcomes (accept/decline/cancel, timeout, URL mode, bad content), the `elicitation` config
 * keys, and the whole path against a real server (`client_requests.ts` over stdio) through the
 * connection manager.
 */
import assert from "node:assert/strict";
import {
  acceptDefaults,
  answerElicitation,
  checkFieldValue,
  describeField,
  type ElicitationForm,
  elicitationHandler,
  type ElicitationOutcome,
  type FieldValue,
  type FormAnswer,
  type FormCollector,
  type FormField,
  formFields,
  parseFieldAnswer,
  withDefaults,
} from "../../src/mcp/elicitation.ts";
import { call, requestsServer, resultJson, resultText, startManager } from "./_client_requests.ts";
import { parseServerS } from "./_helpers.ts";

/** A form schema with every primitive type, defaults on some fields. */
const PROFILE = {
  type: "object" as const,
  properties: {
    name: { type: "string" as const, title: "Your name", default: "John Doe", minLength: 2 },
    email: { type: "string" as const, format: "email" as const, description: "Work address" },
    age: { type: "integer" as const, minimum: 0, maximum: 150, default: 30 },
    score: { type: "number" as const, default: 95.5 },
    status: {
      type: "string" as const,
      enum: ["active", "inactive", "pending"],
      default: "active",
    },
    plan: {
      type: "string" as const,
      oneOf: [{ const: "free", title: "Free plan" }, { const: "pro", title: "Pro plan" }],
    },
    tags: {
      type: "array" as const,
      items: { type: "string" as const, enum: ["a", "b", "c"] },
      maxItems: 2,
    },
    verified: { type: "boolean" as const, default: true },
  },
  required: ["email", "plan"],
};

const fieldsOf = () => formFields(PROFILE);
const field = (name: string): FormField => fieldsOf().find((one) => one.name === name)!;

/** A collector that answers from a script and records the forms it saw. */
class ScriptedCollector implements Required<FormCollector> {
  readonly forms: ElicitationForm[] = [];
  readonly signals: AbortSignal[] = [];
  constructor(
    readonly answer: (
      form: ElicitationForm,
      signal: AbortSignal | undefined,
    ) => FormAnswer | Promise<FormAnswer>,
  ) {}
  async collectForm(form: ElicitationForm, options: { signal?: AbortSignal } = {}) {
    this.forms.push(form);
    if (options.signal) this.signals.push(options.signal);
    return await this.answer(form, options.signal);
  }
}

/** Resolves when `signal` aborts (never answers on its own: a person who walked away). */
function untilAborted(signal: AbortSignal | undefined): Promise<FormAnswer> {
  return new Promise((_, reject) => {
    signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
}

// ---------------------------------------------------------------------------------------------
// Pure helpers

Deno.test("formFields: every primitive schema becomes a typed field", () => {
  const fields = fieldsOf();
  assert.deepEqual(fields.map((one) => [one.name, one.type, one.required]), [
    ["name", "string", false],
    ["email", "string", true],
    ["age", "integer", false],
    ["score", "number", false],
    ["status", "enum", false],
    ["plan", "enum", true],
    ["tags", "multi_enum", false],
    ["verified", "boolean", false],
  ]);
  assert.equal(field("name").label, "Your name");
  assert.equal(field("email").label, "email");
  assert.equal(field("email").description, "Work address");
  assert.deepEqual(field("plan"), {
    name: "plan",
    label: "plan",
    required: true,
    type: "enum",
    options: [{ value: "free", label: "Free plan" }, { value: "pro", label: "Pro plan" }],
  });
  const legacy = formFields({
    type: "object",
    properties: { size: { type: "string", enum: ["s", "l"], enumNames: ["Small", "Large"] } },
  });
  assert.deepEqual(legacy[0].type === "enum" && legacy[0].options, [
    { value: "s", label: "Small" },
    { value: "l", label: "Large" },
  ]);
  const titledMulti = formFields({
    type: "object",
    properties: {
      colours: {
        type: "array",
        items: { anyOf: [{ const: "r", title: "Red" }, { const: "g", title: "Green" }] },
        minItems: 1,
      },
    },
  });
  assert.deepEqual(titledMulti[0], {
    name: "colours",
    label: "colours",
    required: false,
    type: "multi_enum",
    options: [{ value: "r", label: "Red" }, { value: "g", label: "Green" }],
    minItems: 1,
  });
});

Deno.test("describeField: says what each field expects", () => {
  assert.equal(describeField(field("name")), "text, at least 2 characters");
  assert.equal(describeField(field("email")), "email address");
  assert.equal(describeField(field("age")), "whole number, at least 0, at most 150");
  assert.equal(describeField(field("score")), "number");
  assert.equal(describeField(field("plan")), "one of: 1) Free plan, 2) Pro plan");
  assert.equal(
    describeField(field("tags")),
    "any of: 1) a, 2) b, 3) c (comma-separated), at most 2 item(s)",
  );
  assert.equal(describeField(field("verified")), "yes or no");
});

Deno.test("parseFieldAnswer: empty answers take the default, or are required", () => {
  assert.deepEqual(parseFieldAnswer(field("name"), "  "), { value: "John Doe" });
  assert.deepEqual(parseFieldAnswer(field("verified"), ""), { value: true });
  assert.deepEqual(parseFieldAnswer(field("tags"), ""), { value: undefined });
  assert.deepEqual(parseFieldAnswer(field("email"), ""), { error: "email is required" });
});

Deno.test("parseFieldAnswer: strings, formats and lengths", () => {
  assert.deepEqual(parseFieldAnswer(field("name"), " Ada "), { value: "Ada" });
  assert.deepEqual(parseFieldAnswer(field("name"), "A"), {
    error: "Your name: expected text, at least 2 characters",
  });
  assert.deepEqual(parseFieldAnswer(field("email"), "ada@example.com"), {
    value: "ada@example.com",
  });
  assert.ok("error" in parseFieldAnswer(field("email"), "ada@example"));
  const formatted = (format: "uri" | "date" | "date-time"): FormField => ({
    name: "f",
    label: "f",
    required: true,
    type: "string",
    format,
  });
  assert.equal(checkFieldValue(formatted("uri"), "https://example.com/a?b=1"), undefined);
  assert.ok(checkFieldValue(formatted("uri"), "example.com"));
  assert.equal(checkFieldValue(formatted("date"), "2024-02-29"), undefined);
  assert.ok(checkFieldValue(formatted("date"), "2023-02-29"), "not a leap year");
  assert.ok(checkFieldValue(formatted("date"), "29.02.2024"));
  assert.equal(checkFieldValue(formatted("date-time"), "2024-05-01T12:30:00Z"), undefined);
  assert.equal(checkFieldValue(formatted("date-time"), "2024-05-01T12:30:00.5+02:00"), undefined);
  assert.ok(checkFieldValue(formatted("date-time"), "2024-05-01 12:30"));
  assert.ok(checkFieldValue(formatted("date-time"), "2024-05-01T25:00:00Z"));
});

Deno.test("parseFieldAnswer: numbers, integers and their range", () => {
  assert.deepEqual(parseFieldAnswer(field("age"), "41"), { value: 41 });
  assert.ok("error" in parseFieldAnswer(field("age"), "41.5"));
  assert.ok("error" in parseFieldAnswer(field("age"), "-1"));
  assert.ok("error" in parseFieldAnswer(field("age"), "151"));
  assert.ok("error" in parseFieldAnswer(field("age"), "0x10"), "only decimal numbers");
  assert.ok("error" in parseFieldAnswer(field("age"), "forty"));
  assert.deepEqual(parseFieldAnswer(field("score"), "-2.5e1"), { value: -25 });
});

Deno.test("parseFieldAnswer: booleans, enums by value, label or number, multi-select", () => {
  for (const yes of ["y", "Yes", "true", "1", "on"]) {
    assert.deepEqual(parseFieldAnswer(field("verified"), yes), { value: true });
  }
  for (const no of ["n", "NO", "false", "0", "off"]) {
    assert.deepEqual(parseFieldAnswer(field("verified"), no), { value: false });
  }
  assert.ok("error" in parseFieldAnswer(field("verified"), "maybe"));
  assert.deepEqual(parseFieldAnswer(field("status"), "pending"), { value: "pending" });
  assert.deepEqual(parseFieldAnswer(field("status"), "2"), { value: "inactive" });
  assert.deepEqual(parseFieldAnswer(field("plan"), "pro plan"), { value: "pro" });
  assert.deepEqual(parseFieldAnswer(field("plan"), "free"), { value: "free" });
  assert.ok("error" in parseFieldAnswer(field("plan"), "3"));
  assert.ok("error" in parseFieldAnswer(field("status"), "archived"));
  assert.deepEqual(parseFieldAnswer(field("tags"), "a, 3, a"), { value: ["a", "c"] });
  assert.ok("error" in parseFieldAnswer(field("tags"), "a, b, c"), "maxItems is 2");
  assert.ok("error" in parseFieldAnswer(field("tags"), "a, z"));
});

Deno.test("withDefaults: fills the fields left out, keeps given values, drops unknown keys", () => {
  assert.deepEqual(withDefaults(fieldsOf(), { email: "a@b.co", age: 5, plan: "pro", x: 1 }), {
    name: "John Doe",
    email: "a@b.co",
    age: 5,
    score: 95.5,
    status: "active",
    plan: "pro",
    verified: true,
  });
});

Deno.test("acceptDefaults: accepts with the defaults, declines when a required field has none", async () => {
  const form = { server: "s", message: "m", fields: fieldsOf(), timeoutSeconds: 1 };
  assert.deepEqual(await acceptDefaults.collectForm(form), { action: "decline" });
  const optional = formFields({ ...PROFILE, required: [] });
  assert.deepEqual(await acceptDefaults.collectForm({ ...form, fields: optional }), {
    action: "accept",
    content: {
      name: "John Doe",
      age: 30,
      score: 95.5,
      status: "active",
      verified: true,
    },
  });
});

// ---------------------------------------------------------------------------------------------
// The handler

const FORM_PARAMS = {
  mode: "form" as const,
  message: "Tell me about you",
  requestedSchema: PROFILE,
};

function answer(collector: FormCollector, timeoutSeconds = 300, signal?: AbortSignal) {
  const outcomes: ElicitationOutcome[] = [];
  const result = answerElicitation(FORM_PARAMS, {
    server: "profile",
    timeoutSeconds,
    collector,
    signal,
    onOutcome: (outcome) => outcomes.push(outcome),
  });
  return { result, outcomes };
}

Deno.test("answerElicitation: accept gets the defaults; decline and cancel pass through", async () => {
  const accepting = new ScriptedCollector(() => ({
    action: "accept",
    content: { email: "ada@example.com", plan: "pro", tags: ["b"] },
  }));
  const accepted = answer(accepting);
  assert.deepEqual(await accepted.result, {
    action: "accept",
    content: {
      name: "John Doe",
      email: "ada@example.com",
      age: 30,
      score: 95.5,
      status: "active",
      plan: "pro",
      tags: ["b"],
      verified: true,
    },
  });
  assert.deepEqual(accepted.outcomes, [
    { server: "profile", mode: "form", action: "accept", reason: "answered" },
  ]);
  assert.equal(accepting.forms[0].server, "profile");
  assert.equal(accepting.forms[0].message, "Tell me about you");
  assert.equal(accepting.forms[0].timeoutSeconds, 300);

  for (const action of ["decline", "cancel"] as const) {
    const { result, outcomes } = answer(new ScriptedCollector(() => ({ action })));
    assert.deepEqual(await result, { action });
    assert.deepEqual(outcomes, [{ server: "profile", mode: "form", action, reason: "answered" }]);
  }
});

Deno.test("answerElicitation: no answer within the timeout is a cancel; the collector is told", async () => {
  const collector = new ScriptedCollector((_form, signal) => untilAborted(signal));
  const started = performance.now();
  const { result, outcomes } = answer(collector, 0.2);
  assert.deepEqual(await result, { action: "cancel" });
  const waited = performance.now() - started;
  assert.ok(waited >= 150, "not before the timeout");
  assert.ok(waited < 1_500, `cancelled ${Math.round(waited)} ms after the 0.2 s timeout`);
  assert.deepEqual(outcomes, [
    { server: "profile", mode: "form", action: "cancel", reason: "timeout" },
  ]);
  assert.ok(collector.signals[0].aborted);

  // A collector that ignores the signal cannot hold the request either.
  const deaf = new ScriptedCollector(() => new Promise<FormAnswer>(() => {}));
  assert.deepEqual(await answer(deaf, 0.1).result, { action: "cancel" });
});

Deno.test("answerElicitation: the server withdrawing the request cancels it", async () => {
  const controller = new AbortController();
  const collector = new ScriptedCollector((_form, signal) => {
    controller.abort(new Error("notifications/cancelled"));
    return untilAborted(signal);
  });
  const { result, outcomes } = answer(collector, 300, controller.signal);
  assert.deepEqual(await result, { action: "cancel" });
  assert.equal(outcomes[0].reason, "cancelled");
});

Deno.test("answerElicitation: URL mode, no form support, a failing or lying collector", async () => {
  const outcomes: ElicitationOutcome[] = [];
  const collector = new ScriptedCollector(() => ({ action: "accept", content: {} }));
  const url = await answerElicitation({
    mode: "url",
    message: "Log in",
    url: "https://example.com/login",
    elicitationId: "e1",
  }, { server: "s", timeoutSeconds: 300, collector, onOutcome: (o) => outcomes.push(o) });
  assert.deepEqual(url, { action: "decline" });
  assert.deepEqual(outcomes, [{ server: "s", mode: "url", action: "decline", reason: "url_mode" }]);
  assert.equal(collector.forms.length, 0, "nobody is asked about a URL");

  const noForms = answer({});
  assert.deepEqual(await noForms.result, { action: "decline" });
  assert.equal(noForms.outcomes[0].reason, "no_form_support");

  const failing = answer(new ScriptedCollector(() => Promise.reject(new Error("terminal gone"))));
  assert.deepEqual(await failing.result, { action: "cancel" });
  assert.deepEqual(failing.outcomes[0], {
    server: "profile",
    mode: "form",
    action: "cancel",
    reason: "failed",
    detail: "terminal gone",
  });

  const lying = answer(
    new ScriptedCollector(() => ({
      action: "accept",
      content: { email: "not an address", plan: "pro" },
    })),
  );
  assert.deepEqual(await lying.result, { action: "cancel" });
  assert.equal(lying.outcomes[0].reason, "invalid");
  assert.equal(lying.outcomes[0].detail, "email: expected email address");

  const missing = answer(
    new ScriptedCollector(() => ({ action: "accept", content: { plan: "pro" } })),
  );
  assert.deepEqual(await missing.result, { action: "cancel" });
  assert.equal(missing.outcomes[0].detail, "email is required");
});

// ---------------------------------------------------------------------------------------------
// Config

Deno.test("config: each bad elicitation value is an issue naming its key", () => {
  const cases: [string[], string, string][] = [
    [["elicitation: 5"], "elicitation", "elicitation must be a mapping of keys, got 5"],
    [["elicitation: { enabled: sometimes }"], "elicitation.enabled", "must be true or false"],
    [["elicitation: { timeout: soon }"], "elicitation.timeout", 'got "soon"'],
    [["elicitation: { timeout: -1 }"], "elicitation.timeout", "number of seconds > 0"],
  ];
  for (const [body, key, message] of cases) {
    const { servers, issues } = parseServerS(body);
    assert.deepEqual(servers, [], body.join());
    const issue = issues.find((one) => one.key === key);
    assert.ok(issue, `${body.join()}: ${JSON.stringify(issues)}`);
    assert.equal(issue.severity, "error");
    assert.ok(issue.message.includes(message), issue.message);
  }
  const { servers, issues } = parseServerS(["elicitation: { enabled: off, timeout: 0.5 }"]);
  assert.deepEqual(issues, []);
  assert.deepEqual(servers[0].elicitation, { enabled: false, timeoutSeconds: 0.5 });
});

// ---------------------------------------------------------------------------------------------
// Against a real server

const ASK = { message: "Tell me about you", requestedSchema: PROFILE };

Deno.test("a real server: form answers reach it typed, with the defaults applied", async () => {
  const outcomes: ElicitationOutcome[] = [];
  const script: FormAnswer[] = [
    { action: "accept", content: { email: "ada@example.com", plan: "pro", age: 36, tags: ["a"] } },
    { action: "decline" },
    { action: "cancel" },
  ];
  const collector = new ScriptedCollector(() => script.shift()!);
  await using manager = await startManager([requestsServer("profile")], {
    onElicitation: elicitationHandler(collector, (outcome) => outcomes.push(outcome)),
  });
  const caps = resultJson(await call(manager, "profile", "client_capabilities"));
  assert.deepEqual(caps.elicitation, { form: {} }, "form mode only");

  const accepted = resultJson(await call(manager, "profile", "ask", ASK));
  assert.deepEqual(accepted, {
    action: "accept",
    content: {
      name: "John Doe",
      email: "ada@example.com",
      age: 36,
      score: 95.5,
      status: "active",
      plan: "pro",
      tags: ["a"],
      verified: true,
    } satisfies Record<string, FieldValue>,
  });
  const form = collector.forms[0];
  assert.equal(form.server, "profile");
  assert.equal(form.message, "Tell me about you");
  assert.deepEqual(form.fields, fieldsOf());
  assert.equal(form.timeoutSeconds, 300);

  assert.deepEqual(resultJson(await call(manager, "profile", "ask", ASK)), { action: "decline" });
  assert.deepEqual(resultJson(await call(manager, "profile", "ask", ASK)), { action: "cancel" });
  assert.deepEqual(outcomes.map((outcome) => outcome.action), ["accept", "decline", "cancel"]);
});

Deno.test("a real server: elicitation.timeout cancels an unanswered form", async () => {
  const outcomes: ElicitationOutcome[] = [];
  const collector = new ScriptedCollector((_form, signal) => untilAborted(signal));
  await using manager = await startManager(
    [requestsServer("slowpoke", { elicitation: { timeout: 0.2 } })],
    { onElicitation: elicitationHandler(collector, (outcome) => outcomes.push(outcome)) },
  );
  assert.deepEqual(resultJson(await call(manager, "slowpoke", "ask", ASK)), { action: "cancel" });
  assert.deepEqual(outcomes, [
    { server: "slowpoke", mode: "form", action: "cancel", reason: "timeout" },
  ]);
  assert.ok(collector.signals[0].aborted, "the question was withdrawn");
});

Deno.test("a real server: URL mode is not declared and never reaches the user", async () => {
  const collector = new ScriptedCollector(() => ({ action: "accept", content: {} }));
  await using manager = await startManager([requestsServer("login")], {
    onElicitation: elicitationHandler(collector),
  });
  const caps = resultJson(await call(manager, "login", "client_capabilities"));
  assert.equal((caps.elicitation as Record<string, unknown>).url, undefined);
  // A well-behaved server sees that the client does not do URL mode.
  const checked = await call(manager, "login", "ask_url", { raw: false });
  assert.ok(checked.isError);
  assert.match(resultText(checked), /does not support url elicitation/i);
  // A server that sends one anyway is refused (invalid params), and nobody is asked.
  const raw = await call(manager, "login", "ask_url", { raw: true });
  assert.ok(raw.isError);
  assert.match(resultText(raw), /^error -32602: .*URL-mode/);
  assert.equal(collector.forms.length, 0);
});

Deno.test("a real server: no elicitation capability when disabled or without a handler", async () => {
  const collector = new ScriptedCollector(() => ({ action: "accept", content: {} }));
  await using manager = await startManager(
    [requestsServer("off", { elicitation: { enabled: false } }), requestsServer("bare")],
    { onElicitation: elicitationHandler(collector) },
  );
  const off = resultJson(await call(manager, "off", "client_capabilities"));
  assert.equal(off.elicitation, undefined);
  const refused = await call(manager, "off", "ask", ASK);
  assert.ok(refused.isError);
  assert.match(resultText(refused), /does not support form elicitation/i);
  assert.equal(collector.forms.length, 0);
  const bare = resultJson(await call(manager, "bare", "client_capabilities"));
  assert.deepEqual(bare.elicitation, { form: {} }, "the other server still has it");

  await using plain = await startManager([requestsServer("plain")]);
  const none = resultJson(await call(plain, "plain", "client_capabilities"));
  assert.equal(none.elicitation, undefined, "no handler: not declared");
});
