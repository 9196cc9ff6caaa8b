/**
 * A tool's progress (`notifications/progress`) at a terminal: `agent mcp call` and `agent run`
 * ask for it and show each report on one row they redraw, erased before the result; without a
 * terminal, on a dumb one, or with --json they do not ask for it. The line itself: escaped, on
 * one row. The fixture's `progress` tool reports each step and answers whether it was asked.
 */
import assert from "node:assert/strict";
import stringWidth from "fast-string-width";
import { toolProgressLine } from "../../src/cli/status_line.ts";
import { startFakeModel } from "../fixtures/fake_model.ts";
import { stdioCommand } from "../fixtures/mcp/spawn.ts";
import { cli, tempHome } from "./_helpers.ts";
import { denoEnv, modelLines, stdioServerLines, writeConfig } from "./_mcp_helpers.ts";

const ERASE = "\r\x1b[K";
const ARGS = { steps: 2, message: "step" };
const TERMINAL = { stderrIsTerminal: true, columns: 100 };
const SERVER = [
  "mcp_servers:",
  ...stdioServerLines("local", stdioCommand(["--tools", "progress"])),
];

Deno.test("mcp call at a terminal: the server's progress on one redrawn row, erased before the result", async () => {
  await using home = await tempHome();
  writeConfig(home.home, SERVER);
  const call = (extra: string[], env: Record<string, string>, terminal = true) =>
    cli(home.home, ["mcp", "call", "local", "progress", "--args", JSON.stringify(ARGS), ...extra], {
      ...(terminal ? TERMINAL : {}),
      env: denoEnv(env),
    });

  const shown = await call([], { TERM: "xterm-256color" });
  assert.equal(shown.code, 0, shown.stderr);
  assert.equal(shown.stdout, "reported 2 steps\n");
  assert.ok(
    shown.stderr.endsWith(
      `${ERASE}  … progress: 1/2 step 1${ERASE}  … progress: 2/2 step 2${ERASE}`,
    ),
    JSON.stringify(shown.stderr),
  );

  for (
    const [what, result] of [
      ["no terminal", await call([], { TERM: "xterm-256color" }, false)],
      ["a dumb terminal", await call([], { TERM: "dumb" })],
      ["--json", await call(["--json"], { TERM: "xterm-256color" })],
    ] as const
  ) {
    assert.equal(result.code, 0, `${what}: ${result.stderr}`);
    assert.equal(result.stdout.includes("progress not asked for"), true, what);
    const err = `${what}: ${JSON.stringify(result.stderr)}`;
    assert.ok(!result.stderr.includes("progress:") && !result.stderr.includes("\x1b"), err);
  }
});

Deno.test("run at a terminal: a tool's progress is shown while it runs and erased before its result line", async () => {
  await using home = await tempHome();
  // Two runs, each a tool call and an answer made of its result.
  const turns = [
    { toolCalls: [{ name: "mcp__local__progress", arguments: ARGS }] },
    { contentFromTools: "said: " },
  ];
  await using model = await startFakeModel({ turns: [...turns, ...turns] });
  writeConfig(home.home, [...modelLines(model.baseUrl), ...SERVER]);
  const result = await cli(home.home, ["run", "go"], {
    ...TERMINAL,
    env: denoEnv({ TERM: "xterm-256color" }),
  });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout, "said: reported 2 steps\n");
  assert.ok(
    result.stderr.includes(
      `  → mcp__local__progress {"steps":2,"message":"step"}\n` +
        `${ERASE}  … mcp__local__progress: 1/2 step 1${ERASE}  … mcp__local__progress: 2/2 step 2` +
        `${ERASE}  ← mcp__local__progress: success`,
    ),
    JSON.stringify(result.stderr),
  );

  // Without a terminal nobody sees it, so it is not asked for.
  const plain = await cli(home.home, ["run", "go"], { env: denoEnv() });
  assert.equal(plain.code, 0, plain.stderr);
  assert.equal(plain.stdout, "said: progress not asked for\n");
});

Deno.test("toolProgressLine: the server's message escaped on one line, cut to the row", () => {
  assert.equal(toolProgressLine("t", { progress: 0.5, total: 1 }, 0), "  … t: 0.5/1");
  assert.equal(
    toolProgressLine("t", { progress: 3, message: "step\n\tthree\x1b[2J\u202e" }, 0),
    "  … t: 3 step three\\u{1b}[2J\\u{202e}",
  );
  const line = toolProgressLine("t", { progress: 1, total: 9, message: "下载中".repeat(20) }, 30);
  assert.ok(stringWidth(line) < 30, line);
  assert.ok(line.startsWith("  … t: 1/9 下载中") && line.endsWith("…"), line);
});
