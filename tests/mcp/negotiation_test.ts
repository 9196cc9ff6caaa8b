/**
 * SPEC.md's negotiation table, against SDK-built servers of each era, over stdio and HTTP:
 * `auto` = legacy handshake first, modern only when the server rejects it as modern-only;
 * `stateless` = `server/discover` first, one legacy retry; `legacy` = handshake only.
 */
import assert from "node:assert/strict";
import { connectServer } from "../../src/mcp/connect.ts";
import { McpServerError } from "../../src/mcp/errors.ts";
import { MISC_FIXTURE, startHttpFixture, stdioCommand } from "../fixtures/mcp/spawn.ts";
import { serverEntry } from "./_helpers.ts";

const CLIENT = {
  clientInfo: { name: "agent-test", version: "0" },
  processEnv: (n: string) => Deno.env.get(n),
};

type Era = "legacy" | "modern" | "dual";
type Protocol = "auto" | "stateless" | "legacy";

/** What each (server era, protocol) pair must give: the era connected, or failure. */
const EXPECTED: Record<Era, Record<Protocol, "legacy" | "modern" | "fail">> = {
  legacy: { auto: "legacy", stateless: "legacy", legacy: "legacy" },
  modern: { auto: "modern", stateless: "modern", legacy: "fail" },
  dual: { auto: "legacy", stateless: "modern", legacy: "legacy" },
};

for (const transport of ["stdio", "http"] as const) {
  for (const era of ["legacy", "modern", "dual"] as const) {
    Deno.test(`negotiation over ${transport} against a ${era}-era server`, async (t) => {
      await using http = transport === "http"
        ? await startHttpFixture(["--transport", "http", "--era", era, "--tools", "echo"])
        : undefined;
      for (const protocol of ["auto", "stateless", "legacy"] as const) {
        await t.step(`protocol: ${protocol}`, async () => {
          const fields = http
            ? { url: http.url, protocol, connect_timeout: 20 }
            : { ...stdioCommand(["--era", era, "--tools", "echo"]), protocol, connect_timeout: 20 };
          const config = serverEntry(`${era}-${transport}`, fields);
          const expected = EXPECTED[era][protocol];
          if (expected === "fail") {
            await assert.rejects(connectServer(config, CLIENT), (error: unknown) => {
              assert.ok(error instanceof McpServerError, String(error));
              assert.equal(error.server, `${era}-${transport}`);
              assert.notEqual(error.kind, "timeout");
              // The server answered in JSON-RPC (-32022): no SSE fallback, the rejection is reported.
              assert.match(error.message, /Unsupported protocol version/);
              assert.doesNotMatch(error.message, /SSE/i);
              return true;
            });
            return;
          }
          const connection = await connectServer(config, CLIENT);
          try {
            assert.equal(connection.era, expected);
            assert.equal(
              connection.protocolVersion,
              expected === "modern" ? "2026-07-28" : "2025-11-25",
            );
            assert.equal(connection.transport, transport);
            const result = await connection.client.callTool({
              name: "echo",
              arguments: { message: "hi" },
            });
            assert.deepEqual(result.content, [{ type: "text", text: "Echo: hi" }]);
          } finally {
            await connection.close();
          }
        });
      }
    });
  }
}

Deno.test("a connect timeout is reported as a timeout and never triggers a fallback", async () => {
  await using silent = await startHttpFixture(["--kind", "silent"], { fixture: MISC_FIXTURE });
  for (const protocol of ["auto", "stateless"] as const) {
    const config = serverEntry("silent", {
      url: silent.url,
      protocol,
      connect_timeout: 1,
      skip_preflight: true,
    });
    const started = performance.now();
    await assert.rejects(connectServer(config, CLIENT), (error: unknown) => {
      assert.ok(error instanceof McpServerError);
      assert.equal(error.kind, "timeout", error.message);
      assert.match(error.message, /MCP server 'silent': no answer within connect_timeout \(1 s\)/);
      return true;
    });
    assert.ok(performance.now() - started < 5_000, "gave up at its timeout");
  }
});
