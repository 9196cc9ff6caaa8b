/** The loopback callback listener: 127.0.0.1 only, its path, and the `state` check. */
import assert from "node:assert/strict";
import { startCallbackListener } from "../../../src/mcp/oauth/mod.ts";

async function get(url: string): Promise<{ status: number; body: string }> {
  const response = await fetch(url);
  return { status: response.status, body: await response.text() };
}

Deno.test("the listener answers on 127.0.0.1 at /callback and resolves with the matching redirect", async () => {
  let expected: string | undefined = undefined;
  const listener = startCallbackListener({ port: 0, expectedState: () => expected });
  try {
    assert.equal(listener.url, `http://127.0.0.1:${listener.port}/callback`);
    assert.equal((await get(`http://127.0.0.1:${listener.port}/other?code=c&state=s`)).status, 404);
    const before = await get(`${listener.url}?code=c&state=s`);
    assert.equal(before.status, 400, "no authorization under way");
    expected = "s";
    const wrong = await get(`${listener.url}?code=c&state=forged`);
    assert.equal(wrong.status, 400);
    assert.match(wrong.body, /state does not match/);
    const missing = await get(`${listener.url}?code=c`);
    assert.equal(missing.status, 400);
    const post = await fetch(`${listener.url}?code=c&state=s`, { method: "POST" });
    await post.body?.cancel();
    assert.equal(post.status, 405);
    const right = await get(`${listener.url}?code=the-code&state=s&iss=https%3A%2F%2Fas`);
    assert.equal(right.status, 200);
    assert.match(right.body, /close this tab/);
    const params = await listener.redirect;
    assert.equal(params.get("code"), "the-code");
    assert.equal(params.get("iss"), "https://as");
  } finally {
    await listener.close();
  }
  assert.ok(listener.closed);
});

Deno.test("the listener is not reachable on other addresses than 127.0.0.1", async () => {
  const listener = startCallbackListener({ port: 0, expectedState: () => "s" });
  try {
    const interfaces = Deno.networkInterfaces().filter((item) =>
      item.family === "IPv4" && item.address !== "127.0.0.1"
    );
    for (const item of interfaces) {
      await assert.rejects(
        () => Deno.connect({ hostname: item.address, port: listener.port }),
        `reachable on ${item.address}`,
      );
    }
  } finally {
    await listener.close();
  }
});

Deno.test("an error redirect with the right state is passed on (the SDK reports it)", async () => {
  const listener = startCallbackListener({ port: 0, path: "/oauth/cb", expectedState: () => "s" });
  try {
    const page = await get(
      `http://127.0.0.1:${listener.port}/oauth/cb?error=access_denied&state=s`,
    );
    assert.equal(page.status, 400);
    assert.equal((await listener.redirect).get("error"), "access_denied");
  } finally {
    await listener.close();
  }
});

Deno.test("a taken port is reported as AddrInUse", () => {
  const other = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    assert.throws(
      () =>
        startCallbackListener({
          port: (other.addr as Deno.NetAddr).port,
          expectedState: () => undefined,
        }),
      Deno.errors.AddrInUse,
    );
  } finally {
    other.close();
  }
});
