/**
 * `isLoopbackHost`: the one test of "this machine" for a URL's host, used by the metrics endpoint
 * check, the model's key check and `mcp add`'s plain-http warning.
 */
import assert from "node:assert/strict";
import { isLoopbackHost } from "../../src/home/loopback.ts";

Deno.test("isLoopbackHost: localhost, 127.0.0.0/8 and ::1 (bracketed or not), any case", () => {
  for (
    const host of [
      "localhost",
      "LOCALHOST",
      "127.0.0.1",
      "127.0.0.5",
      "127.255.0.1",
      "127.255.255.255",
      "::1",
      "[::1]",
    ]
  ) {
    assert.equal(isLoopbackHost(host), true, host);
  }
});

Deno.test("isLoopbackHost: other hosts, and names that only start like a loopback one, are not", () => {
  for (
    const host of [
      "example.com",
      "localhost.example.com",
      "127.0.0.1.example.com",
      "127.example.com",
      "10.0.0.1",
      "0.0.0.0",
      "128.0.0.1",
      "1127.0.0.1",
      "127.0.0.256",
      "127.999.0.1",
      "127.0.0",
      "::2",
      "[::2]",
      "[::1",
      "",
    ]
  ) {
    assert.equal(isLoopbackHost(host), false, host);
  }
});

Deno.test("isLoopbackHost: hosts as the URL parser writes them (other IPv4 and IPv6 forms)", () => {
  const hostOf = (url: string) => new URL(url).hostname;
  assert.equal(isLoopbackHost(hostOf("http://127.1:8080/")), true);
  assert.equal(isLoopbackHost(hostOf("http://0x7f.0.0.1/")), true);
  assert.equal(isLoopbackHost(hostOf("http://[0:0:0:0:0:0:0:1]/")), true);
  assert.equal(isLoopbackHost(hostOf("http://LocalHost:11434/v1")), true);
  assert.equal(isLoopbackHost(hostOf("http://127.0.0.1.example.com/")), false);
  assert.equal(isLoopbackHost(hostOf("http://[::ffff:10.0.0.1]/")), false);
});
