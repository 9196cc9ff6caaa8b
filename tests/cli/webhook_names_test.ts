/**
 * `agent webhook` from a second QA pass: names that merely start with "invalid", exact large
 * integers in `test --payload`, static route names checked like subscription names, and what
 * `list` says about records a running gateway may still serve.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { cli, parseOneJson, tempHome } from "./_helpers.ts";

function subscriptionsFile(home: string): string {
  return join(home, "webhook_subscriptions.json");
}

function subscriptions(home: string): Record<string, Record<string, unknown>> {
  return JSON.parse(Deno.readTextFileSync(subscriptionsFile(home)));
}

/** A stand-in gateway that records each request's raw body and answers 200 with it. */
function echoServer(): { server: Deno.HttpServer<Deno.NetAddr>; bodies: string[] } {
  const bodies: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const body = await request.text();
    bodies.push(body);
    return new Response(body, { headers: { "content-type": "application/json" } });
  });
  return { server, bodies };
}

Deno.test("names starting with 'invalid' work for subscribe, test and remove", async () => {
  await using h = await tempHome();
  const { server, bodies } = echoServer();
  try {
    const env = { WEBHOOK_PORT: String(server.addr.port), WEBHOOK_ENABLED: "true" };
    for (const name of ["invalid-hooks", "invalidator", "Invalid Thing"]) {
      const made = await cli(h.home, ["webhook", "subscribe", name, "--json"], { env });
      assert.equal(made.code, 0, `${name}: ${made.stderr}`);
    }
    assert.deepEqual(Object.keys(subscriptions(h.home)).sort(), [
      "invalid-hooks",
      "invalid-thing",
      "invalidator",
    ]);
    const sent = await cli(h.home, ["webhook", "test", "invalid-hooks"], { env });
    assert.equal(sent.code, 0, sent.stderr);
    assert.match(sent.stdout, /\/webhooks\/invalid-hooks\nHTTP 200/);
    assert.equal(bodies.length, 1);
    for (const name of ["invalid-hooks", "invalidator"]) {
      const removed = await cli(h.home, ["webhook", "remove", name, "--json"]);
      assert.equal(removed.code, 0, `${name}: ${removed.stderr}`);
      assert.equal(parseOneJson(removed.stdout).removed, name);
    }
    assert.deepEqual(Object.keys(subscriptions(h.home)), ["invalid-thing"]);
  } finally {
    await server.shutdown();
  }
});

Deno.test("a bad name is a usage error stating the rule, for every command", async () => {
  await using h = await tempHome();
  for (const argv of [["subscribe"], ["remove"], ["test"]]) {
    const run = await cli(h.home, ["webhook", ...argv, "../x"]);
    assert.equal(run.code, 2, `${argv}: ${run.stderr}`);
    assert.match(run.stderr, /invalid subscription name "\.\.\/x": use 1 to 64 lower-case/);
  }
  assert.throws(() => Deno.statSync(subscriptionsFile(h.home)), Deno.errors.NotFound);
});

Deno.test("test --payload sends integers beyond 2^53 with their exact digits", async () => {
  await using h = await tempHome();
  const { server, bodies } = echoServer();
  try {
    const env = { WEBHOOK_PORT: String(server.addr.port), WEBHOOK_ENABLED: "true" };
    await cli(h.home, ["webhook", "subscribe", "ci"], { env });
    const payload = '{"id":1234567890123456789,"n":[-98765432109876543210,1.5]}';
    const sent = await cli(h.home, ["webhook", "test", "ci", "--payload", payload, "--json"], {
      env,
    });
    assert.equal(sent.code, 0, sent.stderr);
    assert.equal(bodies[0], payload);
    // The answer is printed exactly too.
    assert.match(sent.stdout, /"id": 1234567890123456789,/);
    assert.match(sent.stdout, /-98765432109876543210/);
  } finally {
    await server.shutdown();
  }
});

Deno.test("list shows every record; an invalid one is a row saying what a gateway does", async () => {
  await using h = await tempHome();
  for (const name of ["ok", "typed", "regex"]) {
    await cli(h.home, ["webhook", "subscribe", name]);
  }
  const records = subscriptions(h.home);
  records.typed.prompt = 7;
  records.regex.filters = { field: "ref", regex: "(a+)+$" };
  records["Bad Name"] = { ...records.ok };
  Deno.writeTextFileSync(subscriptionsFile(h.home), JSON.stringify(records, null, 2));
  const listed = await cli(h.home, ["webhook", "list", "--json"]);
  assert.equal(listed.code, 0, listed.stderr);
  const rows = parseOneJson(listed.stdout).subscriptions as Record<string, unknown>[];
  assert.deepEqual(rows.map((row) => [row.name, row.status]), [
    ["ok", "active"],
    ["typed", "invalid"],
    ["regex", "invalid"],
    ["Bad Name", "invalid"],
  ]);
  const [, typed, regex, bad] = rows;
  assert.match(String((typed.problems as string[])[0]), /typed\.prompt: expected a string/);
  assert.match(String((regex.problems as string[])[0]), /regex\.filters/);
  assert.equal(bad.webhook_url, null);
  assert.equal(typed.webhook_url, `http://localhost:8644/webhooks/typed`);
  assert.equal(
    typed.status_reason,
    "invalid: a running gateway keeps serving its last good version until the record is " +
      "fixed (if it had one); a restarted gateway does not serve it",
  );
  const text = await cli(h.home, ["webhook", "list"]);
  assert.match(text.stdout, /^typed \[invalid\]\n {2}url: .*\n(.*\n){3} {2}status: +invalid: /m);
  assert.match(text.stdout, /problem: .*typed\.prompt: expected a string/);
  assert.doesNotMatch(text.stdout, /not served \(requests are answered 404\)/);
});

Deno.test("list shows a static route with a bad name as invalid, without a URL, and reports it", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(
    join(h.home, "config.yaml"),
    'platforms:\n  webhook:\n    extra:\n      routes:\n        "My Route": {}\n        ok: {}\n',
  );
  // A global secret, so that `ok` is served (without one it is listed as no_secret).
  Deno.writeTextFileSync(join(h.home, ".env"), "WEBHOOK_SECRET=global-secret-0123456789\n");
  const listed = await cli(h.home, ["webhook", "list", "--json"]);
  assert.equal(listed.code, 0, listed.stderr);
  const doc = parseOneJson(listed.stdout);
  const rows = doc.subscriptions as Record<string, unknown>[];
  assert.deepEqual(rows.map((row) => [row.name, row.status]), [
    ["ok", "active"],
    ["My Route", "invalid"],
  ]);
  assert.equal(rows[1].webhook_url, null);
  const badName =
    /:5 \(platforms\.webhook\.extra\.routes\.My Route\): route name "My Route" is not valid.* \(e\.g\. my-route\)/;
  assert.match(String((doc.problems as string[])[0]), badName);
  assert.match(String((rows[1].problems as string[])[0]), badName);
  const text = await cli(h.home, ["webhook", "list"]);
  assert.doesNotMatch(text.stdout, /My%20Route/);
});
