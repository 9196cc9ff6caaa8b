/**
 * The MCP conformance suite's client scenarios (initialize, tools_call, sse-retry,
 * elicitation-sep1034-client-defaults), run through
 * `scripts/conformance/client.ts` — the project's own config parser and connection manager.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const RUNNER = fileURLToPath(new URL("../../scripts/conformance/run.ts", import.meta.url));

Deno.test("conformance client scenarios pass through the project's client stack", async () => {
  // The auth/* scenarios (also in the task's default run) are left to `deno task conformance`.
  const scenarios = [
    "initialize",
    "tools_call",
    "sse-retry",
    "elicitation-sep1034-client-defaults",
  ];
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", RUNNER, ...scenarios],
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(output.stdout);
  const detail = `${text}\n${new TextDecoder().decode(output.stderr)}`;
  assert.equal(output.code, 0, detail);
  for (const scenario of scenarios) {
    assert.match(text, new RegExp(`^${scenario}: (\\d+)/\\1 checks passed$`, "m"), detail);
  }
  assert.match(text, /^10 passed, 0 failed$/m, detail);
});
