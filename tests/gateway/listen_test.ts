/** The listener's view of Deno's HTTP server, checked against the real `Deno.serve`. */
import assert from "node:assert/strict";
import { hostlessAuthority } from "../../src/gateway/listen.ts";
import { rawRequest } from "../e2e/_gateway.ts";

Deno.test("hostlessAuthority is the authority Deno.serve gives a request without a Host header", async () => {
  // "::" is how the gateway listens without extra.host (IPv4 reaches it mapped).
  for (const hostname of ["127.0.0.1", "::"]) {
    await using server = Deno.serve(
      { hostname, port: 0, onListen() {} },
      (request) => new Response(request.url),
    );
    const answer = await rawRequest(server.addr.port, "GET /x HTTP/1.1\r\n\r\n");
    const url = answer.slice(answer.indexOf("\r\n\r\n") + 4);
    assert.equal(url, `http://${hostlessAuthority(server.addr)}/x`, hostname);
    // A Host header is what the URL names then.
    const named = await rawRequest(server.addr.port, "GET /x HTTP/1.1\r\nHost: h:1\r\n\r\n");
    assert.match(named, /\r\n\r\nhttp:\/\/h:1\/x$/);
  }
});
