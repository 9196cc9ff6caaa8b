/**
 * What the listener refuses for the safety of the machine it runs on, beyond signatures: requests
 * a web page may have sent to a route that takes unsigned ones (INSECURE_NO_AUTH on loopback).
 */
import assert from "node:assert/strict";
import { UNSIGNED_BROWSER_ERROR } from "../../src/webhook/listener.ts";
import { githubSignature } from "../../src/webhook/signatures.ts";
import { rawRequest } from "../e2e/_gateway.ts";
import { harness } from "./_listener_harness.ts";

const OPEN_ROUTE = { open: { prompt: "opened {action}", deliver: "log" } };
const BODY = JSON.stringify({ action: "opened" });

/** A raw HTTP/1.1 POST of {@linkcode BODY} to the open route, with `headers` (Host included). */
function post(headers: string[]): string {
  return [
    "POST /webhooks/open HTTP/1.1",
    ...headers,
    "Content-Type: text/plain",
    `Content-Length: ${BODY.length}`,
    "Connection: close",
    "",
    BODY,
  ].join("\r\n");
}

Deno.test("INSECURE_NO_AUTH: a web page's request (Origin, Sec-Fetch-Site) or a rebound Host → 403, nothing accepted", async () => {
  await using h = await harness({ routes: OPEN_ROUTE, insecureNoAuth: true, host: "127.0.0.1" });
  const port = h.serve();
  const local = `Host: 127.0.0.1:${port}`;
  const refusedHeaders = [
    // A page on any site posting with fetch(..., {mode: "no-cors"}) or a form.
    [local, "Origin: https://evil.example"],
    [local, "Origin: null"],
    [local, "Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: no-cors"],
    // DNS rebinding: the page's own name, now resolving to 127.0.0.1.
    [`Host: rebind.evil.example:${port}`],
    [`Host: 192.168.1.20:${port}`],
  ];
  for (const headers of refusedHeaders) {
    const answer = await rawRequest(port, post(headers));
    assert.match(answer, /^HTTP\/1\.1 403 /, `${headers.join(", ")}: ${answer}`);
    assert.ok(answer.endsWith(JSON.stringify({ error: UNSIGNED_BROWSER_ERROR })), answer);
  }
  assert.equal(h.accepted, 0);
  assert.equal(h.logs.filter((line) => line.includes("refused an unsigned request")).length, 1);

  // A local sender (curl, a script) is served, by any loopback name.
  let id = 0;
  for (const host of [local, `Host: localhost:${port}`, `Host: [::1]:${port}`, "Host: localhost"]) {
    const answer = await rawRequest(port, post([host, `X-Request-ID: local-${++id}`]));
    assert.match(answer, /^HTTP\/1\.1 202 /, `${host}: ${answer}`);
  }
  assert.equal(h.accepted, id);
});

Deno.test("a signed request is served whatever Origin or Host it has: a page cannot sign", async () => {
  await using h = await harness({
    routes: { github: { secret: "s", prompt: "x", deliver: "log" } },
    insecureNoAuth: true,
    host: "127.0.0.1",
  });
  const response = await h.post("github", BODY, {
    origin: "https://github.example",
    host: "gateway.example:8644",
    "x-hub-signature-256": githubSignature("s", BODY),
  });
  assert.equal(response.status, 202, await response.text());
});
