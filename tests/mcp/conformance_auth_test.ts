/**
 * The MCP conformance suite's `auth/*` client scenarios (2025-11-25 and 2025-03-26), run through
 * `scripts/conformance/client.ts` with the project's own OAuth provider and login flow.
 */
import assert from "node:assert/strict";
import { runConformance } from "./_helpers.ts";

/** The one scenario whose failure is a defect of the suite's 0.1.16 mock (see run.ts). */
const EXPECTED_FAILURE = "auth/2025-03-26-oauth-metadata-backcompat";

Deno.test("conformance auth scenarios pass through the project's OAuth provider", async () => {
  const { text, detail } = await runConformance(["auth"]);
  const lines = [...text.matchAll(/^(auth\/\S+): (\d+)\/(\d+) checks passed(.*)$/gm)];
  const names = lines.map(([, name]) => name);
  for (
    const name of [
      "auth/metadata-default",
      "auth/basic-cimd",
      "auth/scope-step-up",
      "auth/token-endpoint-auth-basic",
      "auth/token-endpoint-auth-none",
      "auth/pre-registration",
      "auth/2025-03-26-oauth-endpoint-fallback",
    ]
  ) assert.ok(names.includes(name), `${name} ran:\n${detail}`);
  assert.ok(lines.length >= 16, detail);
  for (const [, name, ok, total, rest] of lines) {
    if (name === EXPECTED_FAILURE) {
      assert.match(rest, /\(expected: /, detail);
      continue;
    }
    assert.equal(ok, total, `${name}:\n${detail}`);
  }
  assert.match(text, /^\d+ passed, 0 failed, \d+ expected failures?$/m, detail);
});
