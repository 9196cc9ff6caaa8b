/**
 * Overlapping `tools/list` walks on one connection (a refresh after `list_changed` while a
 * keepalive lists the tools): the invalid entries read after an answer are that answer's walk's,
 * not those of a walk started later and not answered yet.
 */
import assert from "node:assert/strict";
import type { JSONRPCMessage, Transport } from "@modelcontextprotocol/client";
import { InvalidTools } from "../../src/mcp/_invalid_tools.ts";

/** A transport that sends nowhere; `answer` hands a message to whoever reads it. */
function fakeTransport(): Transport & { answer(message: unknown): void } {
  const transport = {
    start: () => Promise.resolve(),
    close: () => Promise.resolve(),
    send: (_message: JSONRPCMessage) => Promise.resolve(),
    onmessage: (_message: JSONRPCMessage) => {},
    answer(message: unknown) {
      transport.onmessage(message as JSONRPCMessage);
    },
  };
  return transport as unknown as Transport & { answer(message: unknown): void };
}

const list = (id: number, cursor?: string): JSONRPCMessage =>
  ({
    jsonrpc: "2.0",
    id,
    method: "tools/list",
    ...(cursor === undefined ? {} : { params: { cursor } }),
  }) as JSONRPCMessage;

const valid = { name: "fine", inputSchema: { type: "object" } };
const invalid = (name: string) => ({ name, inputSchema: { type: "string" } });

Deno.test("overlapping tools/list walks: each answer's invalid tools are its own walk's", async () => {
  const transport = fakeTransport();
  const screen = new InvalidTools();
  screen.watch(transport);

  await transport.send(list(1));
  await transport.send(list(2)); // a second walk starts before the first is answered
  transport.answer({ jsonrpc: "2.0", id: 1, result: { tools: [invalid("first"), valid] } });
  assert.deepEqual(screen.latest().map((tool) => tool.name), ["first"]);
  transport.answer({ jsonrpc: "2.0", id: 2, result: { tools: [valid, invalid("second")] } });
  assert.deepEqual(screen.latest().map((tool) => tool.name), ["second"]);

  // Pages of a walk still count together while another walk is answered in between.
  await transport.send(list(3));
  await transport.send(list(4));
  transport.answer({
    jsonrpc: "2.0",
    id: 3,
    result: { tools: [invalid("page1")], nextCursor: "c1" },
  });
  transport.answer({ jsonrpc: "2.0", id: 4, result: { tools: [valid] } });
  assert.deepEqual(screen.latest(), []);
  await transport.send(list(5, "c1"));
  transport.answer({ jsonrpc: "2.0", id: 5, result: { tools: [valid, invalid("page2")] } });
  assert.deepEqual(
    screen.latest().map((tool) => [tool.name, tool.index]),
    [["page1", 0], ["page2", 2]],
  );
});
