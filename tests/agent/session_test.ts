/**
 * `AgentSession` over a temp `<home>`: config.yaml with the fake model, a stdio fixture MCP server
 * and usage metrics on; skills from `<home>/skills`; `reloadMcp()` after config.yaml changes; and
 * `close()` leaving no MCP child behind.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { AgentSession, type AgentSessionOptions } from "../../src/agent/session.ts";
import { loadConfig } from "../../src/home/config.ts";
import { ConfigError } from "../../src/home/errors.ts";
import { closeLogging, configureLogging } from "../../src/home/log.ts";
import { homePaths } from "../../src/home/paths.ts";
import type { MetricsPackage } from "../../src/metrics/contract.ts";
import { validateMetricsPackage } from "../../src/metrics/schema.ts";
import { type ChatRequest, startFakeModel } from "../fixtures/fake_model.ts";
import { stdioCommand } from "../fixtures/mcp/spawn.ts";
import { isAlive } from "../mcp/_helpers.ts";
import { itemsNamed, until, valueOf } from "./_run_helpers.ts";

/** What the stdio children and the config see of the environment: enough for Deno to run. */
const ENV: Record<string, string> = Object.fromEntries(
  ["PATH", "HOME", "DENO_DIR", "TMPDIR"].flatMap((name) => {
    const value = Deno.env.get(name);
    return value === undefined ? [] : [[name, value]];
  }),
);
const env = (name: string) => ENV[name];

/** A `mcp_servers` entry (YAML, indented under `mcp_servers:`) running the fixture with `tools`. */
function serverYaml(name: string, tools: string[]): string {
  const { command, args } = stdioCommand(["--tools", tools.join(",")]);
  return `  ${name}:\n    command: ${JSON.stringify(command)}\n    args: ${
    JSON.stringify(args)
  }\n` +
    "    trust: full\n";
}

/** config.yaml: the model at `baseUrl` (unless `model` is false), the servers, metrics on. */
function configYaml(baseUrl: string, servers: string[], options: { model?: boolean } = {}): string {
  const model = options.model === false ? "" : "model:\n  default: gpt-4.1-mini\n" +
    `  provider: custom\n  base_url: ${JSON.stringify(baseUrl)}\n  max_retries: 0\n` +
    "  timeout_seconds: 10\n";
  return `${model}agent:\n  max_iterations: 5\n` +
    `mcp_servers:\n${servers.join("")}` +
    "telemetry:\n  shared_metrics:\n    enabled: true\n";
}

function sessionOptions(home: string): AgentSessionOptions {
  return {
    config: loadConfig({ home, env }),
    entrypoint: "interactive",
    surface: "cli",
    env,
    reconnect: false,
    model: { sleep: () => Promise.resolve() },
  };
}

function writeSkill(home: string, name: string, text: string): void {
  Deno.mkdirSync(join(home, "skills", name), { recursive: true });
  Deno.writeTextFileSync(join(home, "skills", name, "SKILL.md"), text);
}

function systemPromptOf(request: ChatRequest): string {
  const [first] = request.messages;
  assert.equal(first.role, "system");
  return String(first.content);
}

/** The `agent.skill.load.count` items as `{...dimensions, value}`, by use-count bucket. */
function skillLoads(packages: MetricsPackage[]): Record<string, string | number>[] {
  return itemsNamed(packages, "agent.skill.load.count")
    .sort((a, b) => a.dimensions.use_count_bucket.localeCompare(b.dimensions.use_count_bucket))
    .map((item) => ({ ...item.dimensions, value: item.value }));
}

function assertValid(packages: MetricsPackage[]): void {
  assert.ok(packages.length >= 1, "there is a package to preview");
  for (const pkg of packages) {
    const validation = validateMetricsPackage(pkg);
    assert.ok(validation.valid, JSON.stringify(validation));
  }
}

Deno.test("AgentSession: open, run with skills, reload MCP servers, close", async (t) => {
  const home = await Deno.makeTempDir({ prefix: "agent-session-test-" });
  const fake = await startFakeModel();
  let session: AgentSession | undefined;
  try {
    Deno.writeTextFileSync(
      join(home, "config.yaml"),
      configYaml(fake.baseUrl, [serverYaml("first", ["echo"])]),
    );
    writeSkill(
      home,
      "triage",
      "---\nname: triage\ndescription: Label new issues\n---\nRead the issue, then label it " +
        "BODY-ONE.\n",
    );

    await t.step("open connects the configured servers", async () => {
      session = await AgentSession.open(sessionOptions(home));
      const [state, ...others] = session.manager.servers();
      assert.deepEqual(others, []);
      assert.equal(state.name, "first");
      assert.equal(state.status, "connected", state.error);
      assert.ok(state.pid !== undefined && isAlive(state.pid));
      assert.deepEqual(session.manager.tools().map((tool) => tool.name), ["mcp__first__echo"]);
      assert.deepEqual(session.mcpIssues, []);
      assert.ok(session.metrics.enabled);
    });
    if (!session) return;
    const s = session;

    await t.step(
      "run answers through the tool; the skill is in the system prompt and counted",
      async () => {
        fake.push(
          { toolCalls: [{ name: "mcp__first__echo", arguments: { message: "issue 7" } }] },
          { contentFromTools: "Labelled: " },
        );
        const result = await s.run("Triage issue 7", { skills: ["triage"] });
        assert.equal(result.endReason, "completed", result.error);
        assert.equal(result.answer, "Labelled: Echo: issue 7");
        assert.deepEqual(result.warnings, []);
        assert.equal(result.toolCalls[0].outcome, "success");

        const request = fake.requests.at(-2)!;
        assert.deepEqual(request.messages[1], { role: "user", content: "Triage issue 7" });
        assert.deepEqual(
          (request.tools ?? []).map((tool) => tool.function.name),
          ["mcp__first__echo"],
        );
        const system = systemPromptOf(request);
        assert.match(system, /# Skills\nFollow these skills where they apply\./);
        assert.ok(
          system.includes(
            "## Skill: triage\nLabel new issues\n\nRead the issue, then label it BODY-ONE.",
          ),
          system,
        );
        assert.ok(!system.includes("name: triage"), "the front matter is not sent");

        const packages = s.metrics.preview();
        assertValid(packages);
        assert.deepEqual(skillLoads(packages), [{
          post_patch_state: "not_applicable",
          provenance: "local",
          reuse_state: "first_use",
          use_count_bucket: "1",
          value: 1,
        }]);
        assert.equal(
          valueOf(packages, "agent.task_run.finished", {
            end_reason: "completed",
            entrypoint: "interactive",
            execution_surface: "cli",
            tool_call_count_bucket: "1",
          }),
          1,
        );
        assert.equal(valueOf(packages, "agent.tool_call.count", { tool_category: "mcp" }), 1);
      },
    );

    await t.step("the second use of the skill counts as reused", async () => {
      fake.push({ content: "again" });
      const result = await s.run("Triage issue 8", { skills: ["triage"] });
      assert.equal(result.endReason, "completed", result.error);
      assert.ok(systemPromptOf(fake.requests.at(-1)!).includes("BODY-ONE"));
      const packages = s.metrics.preview();
      assertValid(packages);
      assert.deepEqual(skillLoads(packages), [
        {
          post_patch_state: "not_applicable",
          provenance: "local",
          reuse_state: "first_use",
          use_count_bucket: "1",
          value: 1,
        },
        {
          post_patch_state: "no_new_patch",
          provenance: "local",
          reuse_state: "reused",
          use_count_bucket: "2",
          value: 1,
        },
      ]);
    });

    await t.step(
      "an edited SKILL.md is sent as edited and counted reused_after_patch",
      async () => {
        writeSkill(
          home,
          "triage",
          "---\nname: triage\ndescription: Label new issues\n---\nLabel it BODY-TWO.\n",
        );
        fake.push({ content: "patched" });
        const result = await s.run("Triage issue 9", { skills: ["triage"] });
        assert.equal(result.endReason, "completed", result.error);
        const system = systemPromptOf(fake.requests.at(-1)!);
        assert.ok(system.includes("Label it BODY-TWO."), system);
        assert.ok(!system.includes("BODY-ONE"), system);
        const loads = skillLoads(s.metrics.preview());
        assert.deepEqual(loads.at(-1), {
          post_patch_state: "reused_after_patch",
          provenance: "local",
          reuse_state: "reused",
          use_count_bucket: "3_to_5",
          value: 1,
        });
        assert.equal(loads.reduce((sum, load) => sum + Number(load.value), 0), 3);
      },
    );

    await t.step("a missing skill is a warning; the run completes without it", async () => {
      fake.push({ content: "no skill needed" });
      const result = await s.run("Do it", { skills: ["nope"] });
      assert.equal(result.endReason, "completed", result.error);
      assert.equal(result.answer, "no skill needed");
      assert.equal(result.warnings.length, 1);
      assert.match(result.warnings[0], /skill 'nope' was not found/);
      assert.ok(result.warnings[0].includes(join(home, "skills", "nope", "SKILL.md")));
      assert.ok(!systemPromptOf(fake.requests.at(-1)!).includes("# Skills"));
      const loads = skillLoads(s.metrics.preview());
      assert.equal(
        loads.reduce((sum, load) => sum + Number(load.value), 0),
        3,
        "no load was counted",
      );
    });

    await t.step(
      "a run's warning is logged as written, its braces not read as placeholders",
      async () => {
        const shown: string[] = [];
        await configureLogging(homePaths(home), { console: (line) => shown.push(line) });
        try {
          fake.push({ content: "no skill needed" });
          await s.run("Do it", { skills: ["{oops}"] });
        } finally {
          await closeLogging();
        }
        assert.deepEqual(shown, [
          `warning: skill '{oops}' was not loaded: a skill name is a folder name under ${
            join(home, "skills")
          } (letters, digits, '.', '_', '-')\n`,
        ]);
      },
    );

    await t.step(
      "the loop's own warning (an empty answer) is logged as written too: the model's braces stay",
      async () => {
        const shown: string[] = [];
        await configureLogging(homePaths(home), { console: (line) => shown.push(line) });
        try {
          fake.push({
            status: 200,
            body: {
              id: "chatcmpl-braces",
              object: "chat.completion",
              created: 0,
              model: "gpt-4.1-mini",
              choices: [{
                index: 0,
                message: { role: "assistant", content: "" },
                finish_reason: "{stop}",
              }],
            },
          });
          const result = await s.run("Do it");
          assert.match(result.warnings[0], /finish_reason "\{stop\}"/);
          assert.deepEqual(shown, [`warning: ${result.warnings[0]}\n`]);
        } finally {
          await closeLogging();
        }
      },
    );

    await t.step(
      "reloadMcp applies an edited config.yaml; the next run offers the new tools",
      async () => {
        const oldPid = s.manager.servers()[0].pid!;
        assert.ok(isAlive(oldPid));
        Deno.writeTextFileSync(
          join(home, "config.yaml"),
          configYaml(fake.baseUrl, [serverYaml("second", ["add"])]),
        );
        const { report, issues } = await s.reloadMcp();
        assert.deepEqual(issues, []);
        assert.deepEqual(report.added, ["second"]);
        assert.deepEqual(report.removed, ["first"]);
        assert.deepEqual(report.reconnected, []);
        assert.deepEqual(report.unchanged, []);
        assert.deepEqual(report.failed, []);
        assert.equal(report.toolCount, 1);
        assert.deepEqual(s.manager.servers().map((state) => [state.name, state.status]), [
          ["second", "connected"],
        ]);
        await until(() => !isAlive(oldPid), 3_000, () => `the removed server (pid ${oldPid}) runs`);

        fake.push(
          { toolCalls: [{ name: "mcp__second__add", arguments: { a: 2, b: 40 } }] },
          { contentFromTools: "sum " },
        );
        const result = await s.run("Add 2 and 40");
        assert.equal(result.endReason, "completed", result.error);
        assert.equal(result.answer, "sum 42");
        for (const request of fake.requests.slice(-2)) {
          assert.deepEqual(
            (request.tools ?? []).map((tool) => tool.function.name),
            ["mcp__second__add"],
          );
        }
      },
    );

    await t.step("close stops the MCP children; the session refuses further runs", async () => {
      const pids = s.manager.servers().map((state) => state.pid);
      assert.equal(pids.length, 1);
      assert.ok(pids[0] !== undefined && isAlive(pids[0]));
      await s.close();
      await until(() => !isAlive(pids[0]!), 3_000, () => `MCP child ${pids[0]} still runs`);
      assert.deepEqual(s.manager.servers(), []);
      await assert.rejects(s.run("more"), /the agent session is closed/);
      await s.close(); // a second close is harmless
    });
  } finally {
    await session?.close();
    await fake.close();
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("AgentSession.open without model.default rejects with a ConfigError naming the key", async () => {
  const home = await Deno.makeTempDir({ prefix: "agent-session-test-" });
  try {
    Deno.writeTextFileSync(
      join(home, "config.yaml"),
      configYaml("http://127.0.0.1:9/v1", [serverYaml("first", ["echo"])], { model: false }),
    );
    const error = await AgentSession.open(sessionOptions(home)).then(
      () => assert.fail("AgentSession.open resolved"),
      (error) => error,
    );
    assert.ok(error instanceof ConfigError, String(error));
    assert.equal(error.location.key, "model.default");
    assert.equal(error.location.file, join(home, "config.yaml"));
    assert.match(error.message, /model\.default/);
    assert.match(error.message, /no model is configured/);
    // Nothing was opened: no metrics store was created.
    assert.throws(
      () => Deno.statSync(join(home, "telemetry")),
      Deno.errors.NotFound,
    );
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});
