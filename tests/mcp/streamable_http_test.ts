/**
 * What our Streamable HTTP transport (src/mcp/_streamable_http.ts) makes of the SDK's GET of the
 * event stream. It runs under the SDK's own client here: the SDK reports a refused GET only to
 * the client's `onerror`, which is the moment this test needs to wait for. The ended session
 * noticed on that stream, end to end, is in manager_test.ts.
 */
import assert from "node:assert/strict";
import { Client, SdkErrorCode, SdkHttpError } from "@modelcontextprotocol/client";
import { WatchedStreamableHTTPClientTransport } from "../../src/mcp/_streamable_http.ts";
import { startHttpFixture } from "../fixtures/mcp/spawn.ts";
import { CLIENT } from "./_helpers.ts";

Deno.test("a server that answers every GET of the event stream with 404 keeps its session: it never had that stream", async () => {
  await using server = await startHttpFixture([
    "--transport",
    "http",
    "--era",
    "legacy",
    "--tools",
    "echo",
    "--refuse-get-stream=404",
  ]);
  const transport = new WatchedStreamableHTTPClientTransport(new URL(server.url));
  const client = new Client(CLIENT.clientInfo, { versionNegotiation: { mode: "legacy" } });
  const refused = Promise.withResolvers<SdkHttpError>();
  client.onerror = (error) => {
    if (error instanceof SdkHttpError && error.code === SdkErrorCode.ClientHttpFailedToOpenStream) {
      refused.resolve(error);
    }
  };
  try {
    await client.connect(transport);
    assert.ok(transport.sessionId, "the fixture gives a session id");
    // The SDK reports the refused GET after the transport saw its answer.
    assert.equal((await refused.promise).status, 404);
    assert.equal(transport.lostReason, undefined);
    const result = await client.callTool({ name: "echo", arguments: { message: "x" } });
    assert.deepEqual(result.content, [{ type: "text", text: "Echo: x" }]);
    assert.equal(transport.lostReason, undefined);
  } finally {
    await client.close();
  }
});
