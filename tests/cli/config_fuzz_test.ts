/**
 * Property test of the CLI over wrong configurations: `agent mcp list` and `agent webhook list`
 * answer a broken `config.yaml` or `.env` with exit code 2 and a message naming the file, never
 * with exit code 1 and a stack trace.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import fc from "fast-check";
import { anyConfigText, dotenvText } from "../home/_config_arbitraries.ts";
import { cli, tempHome } from "./_helpers.ts";
import { freePort } from "./_mcp_helpers.ts";

Deno.test("fuzz: mcp list and webhook list exit 0 or 2 on any config, never 1 with a stack", async () => {
  await using home = await tempHome();
  // Servers that fail at once: no such program, a port nobody listens on.
  const places = {
    commands: [join(home.home, "no-such-server")],
    urls: [`http://127.0.0.1:${freePort()}/mcp`],
  };
  const dotenvFile = join(home.home, ".env");
  await fc.assert(
    fc.asyncProperty(
      anyConfigText(places),
      dotenvText,
      fc.constantFrom(["mcp", "list"], ["webhook", "list"]),
      async (yaml, dotenv, argv) => {
        Deno.writeTextFileSync(home.config, yaml);
        Deno.writeTextFileSync(dotenvFile, dotenv);
        const { code, stderr } = await cli(home.home, [...argv]);
        assert.ok(code === 0 || code === 2, `exit ${code}:\n${stderr}`);
        assert.doesNotMatch(stderr, /^\s+at .+:\d+:\d+\)?$/m, "a stack trace was printed");
        if (code === 2) {
          assert.ok(
            stderr.includes(home.config) || stderr.includes(dotenvFile),
            `exit 2 without naming the file:\n${stderr}`,
          );
        }
      },
    ),
    { numRuns: 50, seed: Number(Deno.env.get("FUZZ_SEED") ?? 20260310) },
  );
});
