/**
 * The MCP conformance suite's client scenarios (initialize, tools_call, sse-retry,
 * elicitation-sep1034-client-defaults), run through
 * `scripts/conformance/client.ts` — the project's own config parser and connection manager.
 */
import assert from "node:assert/strict";
import { runConformance } from "./_helpers.ts";

Deno.test("conformance client scenarios pass through the project's client stack", async () => {
  // The auth/* scenarios (also in the task's default run) are left to `deno task conformance`.
  const scenarios = [
    "initialize",
    "tools_call",
    "sse-retry",
    "elicitation-sep1034-client-defaults",
  ];
  const { text, detail } = await runConformance(scenarios);
  for (const scenario of scenarios) {
    assert.match(text, new RegExp(`^${scenario}: (\\d+)/\\1 checks passed$`, "m"), detail);
  }
  assert.match(text, /^10 passed, 0 failed$/m, detail);
});
