/**
 * `AgentSession` wiring of server-initiated MCP requests, over a temp `<home>` with the fake
 * model and the `client_requests.ts` fixture: elicitation forms go to the session's approval
 * surface (a terminal fills them in; the default policy surface declines), and sampling requests
 * are served by the configured model within the server's `sampling` keys and counted as model
 * calls.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { type AskLine, PromptApprovals } from "../../src/agent/approvals.ts";
import { AgentSession, type AgentSessionOptions } from "../../src/agent/session.ts";
import { loadConfig } from "../../src/home/config.ts";
import { validateMetricsPackage } from "../../src/metrics/schema.ts";
import { type FakeModelOptions, startFakeModel } from "../fixtures/fake_model.ts";
import { isAlive } from "../mcp/_helpers.ts";
import { requestsServerYaml } from "../mcp/_client_requests.ts";
import { valueOf } from "./_run_helpers.ts";

const ENV: Record<string, string> = Object.fromEntries(
  ["PATH", "HOME", "DENO_DIR", "TMPDIR"].flatMap((name) => {
    const value = Deno.env.get(name);
    return value === undefined ? [] : [[name, value]];
  }),
);
const env = (name: string) => ENV[name];

const SCHEMA = {
  type: "object",
  properties: {
    name: { type: "string", default: "John Doe" },
    age: { type: "integer", minimum: 0 },
  },
  required: ["age"],
};

/** The model's script of the form tests: the fixture's `ask` with SCHEMA, then its result. */
const ASKS_FORM: FakeModelOptions = {
  turns: [
    {
      toolCalls: [{
        name: "mcp__req__ask",
        arguments: { message: "How old are you?", requestedSchema: SCHEMA },
      }],
    },
    { contentFromTools: "server got: " },
  ],
};

/** A `<home>` whose config.yaml has the fake model, the fixture as `req`, and metrics on. */
async function home(baseUrl: string, serverLines: string[] = []): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "agent-session-requests-" });
  Deno.writeTextFileSync(
    join(dir, "config.yaml"),
    "model:\n  default: gpt-4.1-mini\n  provider: custom\n" +
      `  base_url: ${JSON.stringify(baseUrl)}\n  max_retries: 0\n  timeout_seconds: 10\n` +
      "agent:\n  max_iterations: 5\n" +
      `mcp_servers:\n${requestsServerYaml("req", ["trust: full", ...serverLines])}` +
      "telemetry:\n  shared_metrics:\n    enabled: true\n",
  );
  return dir;
}

function options(dir: string, extra: Partial<AgentSessionOptions> = {}): AgentSessionOptions {
  return {
    config: loadConfig({ home: dir, env }),
    entrypoint: "interactive",
    surface: "cli",
    env,
    reconnect: false,
    model: { sleep: () => Promise.resolve() },
    ...extra,
  };
}

/** Opens a session and closes it (and removes `<home>`) when disposed; no child may survive. */
async function openSession(dir: string, extra: Partial<AgentSessionOptions> = {}) {
  const session = await AgentSession.open(options(dir, extra));
  const [state] = session.manager.servers();
  const pid = state.pid;
  return Object.assign(session, {
    async [Symbol.asyncDispose]() {
      await session.close();
      if (pid !== undefined) assert.ok(!isAlive(pid), "the fixture child was left running");
      await Deno.remove(dir, { recursive: true });
    },
  });
}

Deno.test("AgentSession: a server's form is filled in at the terminal, defaults applied", async () => {
  await using fake = await startFakeModel(ASKS_FORM);
  const answers = ["y", "", "36", "y"];
  const questions: string[] = [];
  const written: string[] = [];
  const ask: AskLine = (question) => {
    questions.push(question);
    return Promise.resolve(answers.shift() ?? null);
  };
  const approvals = new PromptApprovals(ask, {
    timeoutMs: 60_000,
    write: (text) => written.push(text),
  });
  await using session = await openSession(await home(fake.baseUrl), { approvals });
  const result = await session.run("Sign me up");
  assert.equal(result.endReason, "completed", result.error);
  assert.equal(
    result.answer,
    'server got: {"action":"accept","content":{"name":"John Doe","age":36}}',
  );
  assert.equal(answers.length, 0, "every scripted answer was used");
  assert.deepEqual(questions.slice(1), ["  name [John Doe]: ", "  age: ", "Send? [y/N] "]);
  assert.match(written.join(""), /MCP server 'req' asks for information:\n {4}How old are you\?/);
});

Deno.test("AgentSession: without a terminal (the gateway's policy surface) forms are declined", async () => {
  await using fake = await startFakeModel(ASKS_FORM);
  // `approvals.gateway: allow` approves tool calls, yet nobody can fill in a form.
  const dir = await home(fake.baseUrl);
  Deno.writeTextFileSync(
    join(dir, "config.yaml"),
    Deno.readTextFileSync(join(dir, "config.yaml")) + "approvals:\n  gateway: allow\n",
  );
  await using session = await openSession(dir, {
    entrypoint: "gateway_message",
    surface: "gateway",
  });
  const result = await session.run("Sign me up");
  assert.equal(result.endReason, "completed", result.error);
  assert.equal(result.answer, 'server got: {"action":"decline"}');
});

Deno.test("AgentSession: sampling is served by the configured model, capped, and counted", async () => {
  await using fake = await startFakeModel({
    turns: [
      {
        toolCalls: [{
          name: "mcp__req__sample",
          arguments: {
            params: {
              messages: [{ role: "user", content: { type: "text", text: "Summarise: gnus" } }],
              maxTokens: 9000,
              modelPreferences: { hints: [{ name: "gpt-5" }] },
            },
          },
        }],
      },
      { content: "Gnus are oxen." },
      { contentFromTools: "server got: " },
    ],
  });
  await using session = await openSession(
    await home(fake.baseUrl, ["sampling: { max_tokens_cap: 256, timeout: 5 }"]),
  );
  const result = await session.run("Summarise gnus via the server");
  assert.equal(result.endReason, "completed", result.error);
  assert.ok(result.answer?.startsWith("server got: "), result.answer ?? "");
  assert.deepEqual(JSON.parse(result.answer.slice("server got: ".length)), {
    model: "gpt-4.1-mini",
    role: "assistant",
    content: { type: "text", text: "Gnus are oxen." },
    stopReason: "endTurn",
  });
  assert.equal(fake.requests.length, 3);
  const sampling = fake.requests[1];
  assert.equal(sampling.model, "gpt-4.1-mini", "the hint is not an allowed model");
  assert.equal(sampling.max_tokens, 256);
  assert.equal(sampling.tools, undefined);
  assert.deepEqual(sampling.messages, [{ role: "user", content: "Summarise: gnus" }]);
  assert.equal(fake.requests[0].max_tokens, undefined, "the run's own calls are not capped");

  const packages = session.metrics.preview();
  for (const pkg of packages) assert.ok(validateMetricsPackage(pkg).valid);
  assert.equal(valueOf(packages, "agent.model_call.count", { outcome: "success" }), 3);
  assert.equal(valueOf(packages, "agent.model_route.count", { model: "gpt-4.1-mini" }), 3);
});

Deno.test("AgentSession: sampling.enabled false is not declared to the server", async () => {
  await using fake = await startFakeModel({
    turns: [
      { toolCalls: [{ name: "mcp__req__client_capabilities", arguments: {} }] },
      { contentFromTools: "" },
    ],
  });
  await using session = await openSession(
    await home(fake.baseUrl, ["sampling: { enabled: false }", "elicitation: { enabled: false }"]),
  );
  const result = await session.run("What can you do?");
  assert.equal(result.endReason, "completed", result.error);
  assert.deepEqual(JSON.parse(result.answer ?? ""), {});
});
