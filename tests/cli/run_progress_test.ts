/**
 * `agent run` at a terminal: "… waiting for <model> (N s)" while a model call takes longer than a
 * second, erased before the next output; nothing of it on a dumb terminal or without a terminal.
 */
import assert from "node:assert/strict";
import stringWidth from "fast-string-width";
import { startFakeModel } from "../fixtures/fake_model.ts";
import { stdioCommand } from "../fixtures/mcp/spawn.ts";
import { cli, tempHome } from "./_helpers.ts";
import { modelLines, stdioServerLines, writeConfig } from "./_mcp_helpers.ts";

const ERASE = "\r\x1b[K";

async function slowModelHome(turns: Parameters<typeof startFakeModel>[0], modelName?: string) {
  const h = await tempHome();
  const model = await startFakeModel(turns);
  writeConfig(h.home, [
    ...modelLines(model.baseUrl, modelName),
    "mcp_servers:",
    ...stdioServerLines("notes", stdioCommand(["--tools", "echo"])),
  ]);
  return {
    home: h.home,
    [Symbol.asyncDispose]: async () => {
      await model[Symbol.asyncDispose]();
      await h[Symbol.asyncDispose]();
    },
  };
}

Deno.test("run at a terminal: a slow model call shows a waiting line, counted in seconds and erased", async () => {
  await using h = await slowModelHome({
    turns: [
      { toolCalls: [{ name: "mcp__notes__echo", arguments: { message: "hi" } }], delayMs: 2300 },
      { content: "all done" },
    ],
  });
  const result = await cli(h.home, ["run", "say hi"], {
    stderrIsTerminal: true,
    env: { TERM: "xterm-256color" },
  });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout, "all done\n");
  const err = result.stderr;
  const first = err.indexOf(`${ERASE}  … waiting for gpt-4.1-mini (1 s)`);
  const second = err.indexOf(`${ERASE}  … waiting for gpt-4.1-mini (2 s)`);
  assert.ok(first >= 0 && second > first, err);
  // Erased before the tool call is shown, so the tool line starts at the left edge.
  const toolLine = err.indexOf("  → mcp__notes__echo");
  assert.ok(toolLine > second, err);
  assert.equal(err.slice(toolLine - ERASE.length, toolLine), ERASE);
  // The quick second call shows none.
  assert.equal(err.split("… waiting").length - 1, 2, err);
});

/**
 * The waiting lines `agent run` draws at a terminal `columns` wide, each checked to take fewer
 * columns than the row (a line that wraps leaves its first row behind at every redraw).
 */
async function waitingLinesAt(home: string, columns: number): Promise<string[]> {
  const result = await cli(home, ["run", "q"], {
    stderrIsTerminal: true,
    columns,
    env: { TERM: "xterm-256color" },
  });
  assert.equal(result.code, 0, result.stderr);
  const drawn = result.stderr.split(ERASE).slice(1).filter((line) => line !== "");
  assert.ok(drawn.length > 0, result.stderr);
  for (const line of drawn) {
    assert.ok(stringWidth(line) < columns, `${JSON.stringify(line)} at ${columns} columns`);
  }
  return drawn;
}

Deno.test("run at a narrow terminal: the waiting line fits one row, so erasing it leaves nothing", async () => {
  await using h = await slowModelHome({ fallback: { content: "slow", delayMs: 1300 } });
  // The model's name is cut first, so the seconds stay in view.
  const drawn = await waitingLinesAt(h.home, 30);
  assert.ok(drawn.includes("  … waiting for gpt-4.… (1 s)"), JSON.stringify(drawn));
  await waitingLinesAt(h.home, 12);
});

Deno.test("run at a narrow terminal: a model name of wide characters is cut by the columns it takes", async () => {
  // Each of these characters takes two columns: counted as one, the line would wrap.
  await using h = await slowModelHome(
    { fallback: { content: "slow", delayMs: 1300 } },
    "通义千问模型长名字",
  );
  const drawn = await waitingLinesAt(h.home, 30);
  assert.ok(drawn.includes("  … waiting for 通义千… (1 s)"), JSON.stringify(drawn));
});

Deno.test("run: no waiting line on a dumb terminal, without a terminal, or with --json", async () => {
  await using h = await slowModelHome({ fallback: { content: "slow", delayMs: 1300 } });
  for (
    const [options, args] of [
      [{ stderrIsTerminal: true, env: { TERM: "dumb" } }, ["run", "q"]],
      [{ stderrIsTerminal: false, env: { TERM: "xterm" } }, ["run", "q"]],
      [{ stderrIsTerminal: true, env: { TERM: "xterm" } }, ["run", "q", "--json"]],
    ] as const
  ) {
    const result = await cli(h.home, [...args], options);
    assert.equal(result.code, 0, result.stderr);
    assert.doesNotMatch(result.stderr, /waiting for/);
    assert.ok(!result.stderr.includes("\x1b[K"), JSON.stringify(result.stderr));
  }
});
