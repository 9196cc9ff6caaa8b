/**
 * What the model wrote, shown by `agent run` and `agent chat`: at a terminal, characters that
 * could drive it (escape sequences, `\r`, bidi controls) are escaped, while line breaks, tabs and
 * printable Unicode stay; a file, a pipe and `--json` get the answer exactly as the model gave it.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeModel, type Turn } from "../fixtures/fake_model.ts";
import { cli, parseOneJson, tempHome } from "./_helpers.ts";

/** An answer that, written raw, would clear the screen and rewrite and reorder its lines. */
const HOSTILE = "Done.\x1b[2J\x1b[H\rAll fine\b\u202Etxt.exe\x07\u0085\u2028end";
/** What a terminal is shown of it. */
const HOSTILE_SHOWN =
  "Done.\\u{1b}[2J\\u{1b}[H\\u{d}All fine\\u{8}\\u{202e}txt.exe\\u{7}\\u{85}\\u{2028}end";
/** Text that is shown as it is: line breaks, tabs, CJK, emoji with joiners and a tag flag. */
const PLAIN = "Line 1\n\tindented 中文\r\nemoji 👩‍💻 🏴󠁧󠁢󠁳󠁣󠁴󠁿 ✅";

async function modelHome(turns: Turn[]) {
  const h = await tempHome();
  const model = await startFakeModel({ turns });
  Deno.writeTextFileSync(
    join(h.home, "config.yaml"),
    `model:\n  default: gpt-4.1-mini\n  base_url: ${model.baseUrl}\n`,
  );
  return {
    home: h.home,
    model,
    [Symbol.asyncDispose]: async () => {
      await model.close();
      await h[Symbol.asyncDispose]();
    },
  };
}

Deno.test("run at a terminal: the answer's control characters are escaped, its text kept", async () => {
  const answer = `${HOSTILE}\n${PLAIN}`;
  await using h = await modelHome([{ content: answer }]);
  const result = await cli(h.home, ["run", "q"], { stdoutIsTerminal: true });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout, `${HOSTILE_SHOWN}\n${PLAIN}\n`);
});

Deno.test("run to a file or pipe, and --json: the answer exactly as the model gave it", async () => {
  const answer = `${HOSTILE}\n${PLAIN}`;
  await using h = await modelHome([{ content: answer }, { content: answer }]);
  const piped = await cli(h.home, ["run", "q"], { stdoutIsTerminal: false });
  assert.equal(piped.code, 0, piped.stderr);
  assert.equal(piped.stdout, `${answer}\n`);
  const json = await cli(h.home, ["run", "q", "--json"], { stdoutIsTerminal: true });
  assert.equal(json.code, 0, json.stderr);
  assert.equal(parseOneJson(json.stdout).answer, answer);
});

Deno.test("chat: the answer's control characters are escaped, its text kept", async () => {
  await using h = await modelHome([{ content: `${HOSTILE}\n${PLAIN}` }]);
  const result = await cli(h.home, ["chat"], { stdin: "hello\n" });
  assert.equal(result.code, 0, result.stderr);
  assert.ok(result.stdout.includes(`agent> ${HOSTILE_SHOWN}\n${PLAIN}\n`), result.stdout);
  assert.ok(!result.stdout.includes("\x1b"), JSON.stringify(result.stdout));
});

Deno.test("run at a terminal: a tool call's name and arguments from the model are escaped", async () => {
  await using h = await modelHome([
    {
      toolCalls: [{
        name: "mcp__notes__echo\x1b[2K\r",
        arguments: '{"text": "a\x1b[1A\x1b[2Kb\u202E"}',
      }],
    },
    { content: "ok" },
  ]);
  const result = await cli(h.home, ["run", "q"], { stderrIsTerminal: true, env: { TERM: "dumb" } });
  assert.equal(result.code, 0, result.stderr);
  assert.ok(!result.stderr.includes("\x1b"), JSON.stringify(result.stderr));
  assert.ok(
    result.stderr.includes(
      '  → mcp__notes__echo\\u{1b}[2K\\u{d} {"text": "a\\u{1b}[1A\\u{1b}[2Kb\\u{202e}"}\n' +
        "  ← mcp__notes__echo\\u{1b}[2K\\u{d}: failed (",
    ),
    result.stderr,
  );
});
