/**
 * `ResilientServer.shutdown` against real sockets: it waits for the answers under way, and only a
 * little after the last one for connections still open (which Deno's HTTP server would otherwise
 * wait for without end).
 */
import assert from "node:assert/strict";
import { type ListenerEvent, ResilientServer } from "../../src/gateway/listen.ts";
import { within } from "../e2e/_gateway.ts";

/** Sends `request` on a new connection and returns it with the first bytes of the answer. */
async function send(port: number, request: string): Promise<[Deno.TcpConn, string]> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(new TextEncoder().encode(request));
  const buffer = new Uint8Array(4096);
  const read = await within(conn.read(buffer), "the answer");
  return [conn, new TextDecoder().decode(buffer.subarray(0, read ?? 0))];
}

Deno.test("shutdown waits for an answer under way; its sender gets it", async () => {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => release = resolve);
  let started!: () => void;
  const handling = new Promise<void>((resolve) => started = resolve);
  const server = new ResilientServer({ hostname: "127.0.0.1", port: 0 }, async () => {
    started();
    await gate;
    return new Response("late but answered");
  });
  const answer = fetch(`http://127.0.0.1:${server.addr.port}/`);
  await handling;
  let stopped = false;
  const stopping = server.shutdown().then(() => stopped = true);
  // Well past the grace given to connections after the last answer: this one is still under way.
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  assert.equal(stopped, false);
  release();
  const response = await answer;
  assert.equal(await response.text(), "late but answered");
  await stopping;
  await server.closed;
});

Deno.test("shutdown ends 2 s after the last answer while a refused sender keeps its connection open", async () => {
  const events: ListenerEvent[] = [];
  const server = new ResilientServer(
    { hostname: "127.0.0.1", port: 0 },
    // Refused without reading the body, as the listener answers a Content-Length over the cap.
    () => new Response("too large", { status: 413 }),
    (event) => events.push(event),
  );
  const [conn, answer] = await send(
    server.addr.port,
    "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1000000\r\n\r\n{",
  );
  try {
    assert.match(answer, /^HTTP\/1\.1 413 /);
    const start = performance.now();
    await within(server.shutdown(), "shutdown", 8_000);
    assert.ok(performance.now() - start >= 1_900, "the grace is given");
    assert.equal(events.length, 1, JSON.stringify(events));
    assert.equal(events[0].type, "unclosed");
  } finally {
    conn.close();
  }
  // Deno's own shutdown ends once the sender is gone.
  await within(server.closed, "the connection to close");
});

Deno.test("shutdown with connections that close at once reports nothing and does not wait", async () => {
  const events: ListenerEvent[] = [];
  const server = new ResilientServer(
    { hostname: "127.0.0.1", port: 0 },
    () => new Response("ok"),
    (event) => events.push(event),
  );
  // An idle keep-alive connection and one in the middle of its headers: both closed by shutdown.
  const [idle, answer] = await send(server.addr.port, "GET / HTTP/1.1\r\nHost: h\r\n\r\n");
  assert.match(answer, /^HTTP\/1\.1 200 /);
  const partial = await Deno.connect({ hostname: "127.0.0.1", port: server.addr.port });
  await partial.write(new TextEncoder().encode("POST / HTTP/1.1\r\nHost: h\r\n"));
  try {
    const start = performance.now();
    await server.shutdown();
    assert.ok(performance.now() - start < 1_000, "no grace waited for");
    assert.deepEqual(events, []);
    await server.closed;
    for (const conn of [idle, partial]) {
      assert.equal(await within(conn.read(new Uint8Array(16)), "the server to close it"), null);
    }
  } finally {
    idle.close();
    partial.close();
  }
});
