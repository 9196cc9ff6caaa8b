/**
 * The listener pipeline, request by request, against the real app, inbox and route table (the
 * script runner and direct delivery are recorded stand-ins here; they have their own tests).
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { dirname, join } from "node:path";
import type { Inbox } from "../../src/gateway/inbox.ts";
import { githubSignature, standardWebhookSignature } from "../../src/webhook/signatures.ts";
import {
  rawRequest,
  signGeneric,
  signGenericV2,
  signGithub,
  signStandard,
} from "../e2e/_gateway.ts";
import { assertServing, type Harness, harness, NOW, route, SECRET } from "./_listener_harness.ts";

Deno.test("GET /health answers ok without authentication", async () => {
  await using h = await harness();
  const response = await h.app.fetch(new Request("http://localhost/health"));
  assert.equal(response.status, 200);
  assert.deepEqual(await response.json(), { status: "ok", platform: "webhook" });
});

Deno.test("/health: HEAD answers like GET; another method → 405 with Allow: GET, HEAD", async () => {
  await using h = await harness();
  const head = await h.app.fetch(new Request("http://localhost/health", { method: "HEAD" }));
  assert.equal(head.status, 200);
  await head.body?.cancel();
  for (const method of ["POST", "PUT", "DELETE", "OPTIONS"]) {
    const response = await h.app.fetch(new Request("http://localhost/health", { method }));
    assert.equal(response.status, 405, method);
    assert.equal(response.headers.get("allow"), "GET, HEAD");
    assert.deepEqual(await response.json(), {
      error: `Method ${method} not allowed; send GET`,
    });
  }
});

/**
 * A POST to the github route whose body starts `{"issue":` and then fails with `error`, or, without
 * one, never goes on (`onCancel` hears when its reader gives up on it).
 */
function partialBody(end: { error?: Error; onCancel?: (reason: unknown) => void }): Request {
  return new Request("http://localhost/webhooks/github", {
    method: "POST",
    body: new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('{"issue":'));
        if (end.error) controller.error(end.error);
      },
      cancel: end.onCancel,
    }),
  });
}

Deno.test("a body that breaks off while it is read → 400, a warning logged once a minute, never 500", async () => {
  await using h = await harness({ routes: { github: route() } });
  const broken = () => partialBody({ error: new Error("connection reset by peer") });
  for (let i = 0; i < 3; i++) {
    const response = await h.app.fetch(broken());
    assert.equal(response.status, 400);
    assert.deepEqual(await response.json(), {
      error: "the request body could not be read to its end",
    });
  }
  const warnings = h.logs.filter((line) => line.includes("could not be read"));
  assert.equal(warnings.length, 1, h.logs.join("\n"));
  assert.match(warnings[0], /^warning: .*connection reset by peer/);
  assert.equal(h.logs.filter((line) => line.startsWith("error")).length, 0, h.logs.join("\n"));
});

Deno.test("a body whose reading the gateway's stop ended → 503 with Retry-After, not 400", async () => {
  let stopping = false;
  await using h = await harness({ routes: { github: route() }, stopping: () => stopping });
  const cut = () =>
    partialBody({ error: new Error("Cannot read body as underlying resource unavailable") });
  stopping = true;
  const response = await h.app.fetch(cut());
  assert.equal(response.status, 503);
  assert.equal(response.headers.get("retry-after"), "10");
  assert.deepEqual(await response.json(), {
    error: "the gateway is stopping; send the request again later",
  });
  assert.deepEqual(h.logs, [], "not the sender's fault: no warning");
  stopping = false;
  const broken = await h.app.fetch(cut());
  assert.equal(broken.status, 400);
  await broken.body?.cancel();
});

Deno.test("a body that stops arriving → 408 after body_timeout_seconds, its read stopped, warned once a minute", async () => {
  await using h = await harness({ routes: { github: route() }, bodyTimeoutSeconds: 0.05 });
  const cancelled: unknown[] = [];
  const stalled = () => partialBody({ onCancel: (reason) => cancelled.push(reason) });
  for (let i = 0; i < 3; i++) {
    const response = await h.app.fetch(stalled());
    assert.equal(response.status, 408);
    assert.deepEqual(await response.json(), {
      error: "the request body did not arrive in full within 0.05 s",
    });
  }
  assert.equal(cancelled.length, 3, "each late read is stopped, and what it held let go");
  const warnings = h.logs.filter((line) => line.includes("(408)"));
  assert.equal(warnings.length, 1, h.logs.join("\n"));
  assert.match(
    warnings[0],
    /^warning: .*had not arrived in full after \{seconds\} s.*"seconds":0.05/,
  );
  // A body that arrives in time is read as before.
  const response = await h.signed("github", { issue: { title: "on time" } });
  assert.equal(response.status, 202);
  await response.body?.cancel();
});

Deno.test("a route whose script cannot run → 503 with Retry-After; the claim is let go", async () => {
  await using h = await harness({
    routes: { r: route({ script: "gone.sh" }) },
    script: { kind: "blocked", detail: "gone.sh is not in the scripts folder" },
  });
  for (let i = 0; i < 2; i++) {
    // Sent again, the same delivery is refused the same way: neither 409 nor "duplicate".
    const response = await h.signed("r", { n: 1 }, { "x-github-delivery": "d-1" });
    assert.equal(response.status, 503);
    assert.equal(response.headers.get("retry-after"), "300");
    assert.deepEqual(await response.json(), {
      error: "the route's script cannot run; see the gateway's log",
    });
  }
  assert.equal(h.accepted, 0);
  assert.equal(h.logs.length, 2);
  assert.match(h.logs[0], /^error: .*script cannot run.*gone\.sh is not in the scripts folder/);
  // Nothing of the delivery is kept: once the script is there, the sender's retry is served.
  assert.equal(h.inbox.claim("r", "d-1", NOW, 3600, false), true);
});

Deno.test("unknown route → 404 naming it; another method on a route → 405 with Allow", async () => {
  await using h = await harness({ routes: { github: route() } });
  const unknown = await h.signed("nope", {});
  assert.equal(unknown.status, 404);
  assert.deepEqual(await unknown.json(), { error: "Unknown route: nope" });
  await assertServing(h, "github");
  const get = await h.app.fetch(new Request("http://localhost/webhooks/github"));
  assert.equal(get.status, 405);
  assert.equal(get.headers.get("allow"), "POST");
  assert.deepEqual(await get.json(), { error: "Method GET not allowed; send POST" });
  await assertServing(h, "github");
});

Deno.test("a route's URL names it in any ASCII case, as the CLI's <name> does", async () => {
  await using h = await harness({ routes: { github: route(), kelvin: route() } });
  const upper = await h.signed("GitHub", { issue: { title: "Bug" } });
  assert.equal(upper.status, 202);
  assert.equal((await upper.json()).route, "github");
  const get = await h.app.fetch(new Request("http://localhost/webhooks/GITHUB"));
  assert.equal(get.status, 405);
  assert.equal(get.headers.get("allow"), "POST");
  await get.body?.cancel();
  // Only A-Z: U+212A KELVIN SIGN, which toLowerCase turns into `k`, is not `k`.
  const lookAlike = await h.signed("%E2%84%AAelvin", {});
  assert.equal(lookAlike.status, 404);
  assert.deepEqual(await lookAlike.json(), { error: "Unknown route: \u212aelvin" });
});

Deno.test("a route's URL with a trailing slash is the route: same pipeline, same claims", async () => {
  await using h = await harness({ routes: { github: route() }, rate: 2 });
  const headers = { "x-github-delivery": "d-slash" };
  const slashed = await h.signed("github/", { issue: { title: "Bug" } }, headers);
  assert.equal(slashed.status, 202);
  assert.equal((await slashed.json()).route, "github");
  // The delivery id and the rate window are the route's, whichever URL was used.
  const again = await h.signed("github", { issue: { title: "Bug" } }, headers);
  assert.deepEqual(await again.json(), { status: "duplicate", delivery_id: "d-slash" });
  const limited = await h.signed("github/", {});
  assert.equal(limited.status, 429);
  await limited.body?.cancel();
  const get = await h.app.fetch(new Request("http://localhost/webhooks/github/"));
  assert.equal(get.status, 405);
  assert.equal(get.headers.get("allow"), "POST");
  await get.body?.cancel();
  const unknown = await h.signed("nope/", {});
  assert.deepEqual(await unknown.json(), { error: "Unknown route: nope" });
  // One slash only: another path segment is not a route.
  for (const path of ["github//", "github/x"]) {
    const response = await h.signed(path, {});
    assert.equal(response.status, 404, path);
    await response.body?.cancel();
  }
});

Deno.test("a route URL with a doubled slash is a 404 that names the URL meant", async () => {
  await using h = await harness({ routes: { github: route() } });
  for (
    const [path, meant] of [
      ["//webhooks/github", "/webhooks/github"],
      ["/webhooks//github/", "/webhooks/github/"],
      ["///webhooks///nope", "/webhooks/nope"],
    ]
  ) {
    const response = await h.app.fetch(
      new Request(`http://localhost${path}`, { method: "POST", body: "{}" }),
    );
    assert.equal(response.status, 404, path);
    assert.deepEqual(await response.json(), {
      error: `Not found: ${path} (did you mean ${meant}? the URL has a doubled slash)`,
    });
  }
  // Other paths get no guess.
  for (const path of ["//other/github", "/webhooks/github//x", "//"]) {
    const response = await h.app.fetch(new Request(`http://localhost${path}`, { method: "POST" }));
    assert.deepEqual(await response.json(), { error: `Not found: ${path}` }, path);
  }
});

Deno.test("a 404 or 405 quotes at most 100 characters of the name, path or method the sender wrote", async () => {
  await using h = await harness({ routes: { github: route() } });
  const long = "x".repeat(5000);
  const post = await h.signed(long, {});
  assert.deepEqual(await post.json(), { error: `Unknown route: ${"x".repeat(99)}…` });
  const get = await h.app.fetch(new Request(`http://localhost/webhooks/${long}`));
  assert.deepEqual(await get.json(), { error: `Unknown route: ${"x".repeat(99)}…` });
  const other = await h.app.fetch(new Request(`http://localhost/${long}`, { method: "POST" }));
  assert.equal(other.status, 404);
  assert.deepEqual(await other.json(), { error: `Not found: /${"x".repeat(98)}…` });
  const method = "M".repeat(5000);
  for (const [path, send] of [["/webhooks/github", "POST"], ["/health", "GET"]]) {
    const response = await h.app.fetch(new Request(`http://localhost${path}`, { method }));
    assert.equal(response.status, 405);
    assert.deepEqual(await response.json(), {
      error: `Method ${"M".repeat(99)}… not allowed; send ${send}`,
    });
  }
});

Deno.test("a 404 and its log line never quote half an emoji of a long route name", async () => {
  await using h = await harness({ routes: { github: route() } });
  // The 100th character is an emoji: cut by UTF-16 units, its first half would be quoted alone.
  const response = await h.signed(`${"x".repeat(99)}${"😀".repeat(3)}`, {});
  assert.equal(response.status, 404);
  const { error } = await response.json();
  assert.equal(error, `Unknown route: ${"x".repeat(99)}…`);
  assert.ok(error.isWellFormed(), JSON.stringify(error));
  assert.ok(h.logs.at(-1)!.isWellFormed(), h.logs.at(-1));
  assert.ok(!h.logs.at(-1)!.includes("\\ud83d"), h.logs.at(-1));
  // An emoji that fits is kept whole.
  const kept = await h.signed(`${"x".repeat(98)}${"😀".repeat(3)}`, {});
  assert.deepEqual(await kept.json(), { error: `Unknown route: ${"x".repeat(98)}😀…` });
});

/** The status and JSON body (`null` when there is none) of an answer read by `rawRequest`. */
function parsed(text: string): { status: number; json: unknown } {
  const status = Number(/^HTTP\/1\.[01] (\d{3}) /.exec(text)?.[1]);
  const body = text.slice(text.indexOf("\r\n\r\n") + 4);
  return { status, json: body === "" ? null : JSON.parse(body) };
}

/** The 400 for a `Host` header that is not a host with an optional port. */
function badHost(value: string) {
  return {
    error: "the Host header must be a host name or address with an optional port " +
      `(got ${JSON.stringify(value)})`,
  };
}

Deno.test("over HTTP: an invalid Host header → 400, before any route is looked up; none is served", async () => {
  await using h = await harness({ routes: { github: route() } });
  const port = h.serve();
  const health = { status: "ok", platform: "webhook" };
  const cases: [string, number, unknown][] = [
    // The handler cannot tell these from an HTTP/2 request (which has no Host header) naming
    // localhost:<port>, so they are served; their URL names this server.
    ["GET /health HTTP/1.1\r\n\r\n", 200, health],
    ["GET /health HTTP/1.0\r\n\r\n", 200, health],
    // No 404 or 405 first: those would say which routes exist.
    [
      "POST /webhooks/nope HTTP/1.1\r\nHost: a b\r\nContent-Length: 2\r\n\r\n{}",
      400,
      badHost("a b"),
    ],
    ["GET /webhooks/github HTTP/1.1\r\nHost: a b\r\n\r\n", 400, badHost("a b")],
    ["GET /health HTTP/1.1\r\nHost:\r\n\r\n", 400, badHost("")],
    ["GET /nope HTTP/1.1\r\nHost: a b\r\n\r\n", 400, badHost("a b")],
    // Deno builds the URL from the header as is: the router would see /webhooks/github/x.
    ["POST /x HTTP/1.1\r\nHost: h/webhooks/github\r\n\r\n", 400, badHost("h/webhooks/github")],
    ["GET /health HTTP/1.1\r\nHost: h?x\r\n\r\n", 400, badHost("h?x")],
    ["GET /health HTTP/1.1\r\nHost: [::1]:8644\r\n\r\n", 200, health],
    ["GET /health HTTP/1.1\r\nHost: hooks.example.com\r\n\r\n", 200, health],
    // An HTTP/2 request carries no Host header, but names its host (`:authority`) in the URL:
    // an absolute request-target does the same in HTTP/1.1.
    ["GET http://hooks.example.com/health HTTP/1.1\r\n\r\n", 200, health],
  ];
  for (const [request, status, json] of cases) {
    assert.deepEqual(parsed(await rawRequest(port, request)), { status, json }, request);
  }
  // Six refusals, one log line a minute.
  assert.equal(h.logs.filter((line) => line.includes("the Host header {host}")).length, 1);
  assert.equal(h.logs.filter((line) => line.startsWith("error")).length, 0, h.logs.join("\n"));
});

Deno.test("over HTTP: a 404 names the path as sent, whatever authority the URL has; never a 500", async () => {
  await using h = await harness({ routes: { github: route() } });
  const port = h.serve();
  const cases: [string, string][] = [
    // Valid hosts that `new URL` refuses (punycode that does not decode, an IPv4-like name).
    ["GET /nope HTTP/1.1\r\nHost: xn--a\r\n\r\n", "/nope"],
    ["GET /nope HTTP/1.1\r\nHost: 999.1.1.1\r\n\r\n", "/nope"],
    ["GET http://h:99999/nope?x HTTP/1.1\r\nHost: h\r\n\r\n", "/nope"],
    // Dot segments are not resolved by the router: neither by the answer.
    ["GET /webhooks/../health HTTP/1.1\r\nHost: h\r\n\r\n", "/webhooks/../health"],
    ["POST /webhooks/%2e%2e/github#x HTTP/1.1\r\nHost: h\r\n\r\n", "/webhooks/%2e%2e/github"],
  ];
  for (const [request, path] of cases) {
    const answer = parsed(await rawRequest(port, request));
    assert.deepEqual(answer, { status: 404, json: { error: `Not found: ${path}` } }, request);
  }
  assert.equal(h.logs.filter((line) => line.startsWith("error")).length, 0, h.logs.join("\n"));
});

Deno.test("over HTTP: malformed framing, encoded names, queries and fragments; the listener keeps serving", async () => {
  await using h = await harness({ routes: { github: route() } });
  const port = h.serve();
  const post = (target: string, headers = "Content-Length: 2\r\n", body = "{}") =>
    `POST ${target} HTTP/1.1\r\nHost: h\r\n${headers}\r\n${body}`;
  const unsigned = { error: "Invalid signature" };
  const cases: [string, number, unknown][] = [
    // Refused by Deno's HTTP layer, with an empty body.
    [post("/webhooks/github", "Content-Length: 2\r\nContent-Length: 3\r\n"), 400, null],
    [
      post(
        "/webhooks/github",
        "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n",
        "2\r\n{}\r\n0\r\n\r\n",
      ),
      400,
      null,
    ],
    [
      post("/webhooks/github", "X-Hub-Signature-256: sha256=00\r\n 11\r\nContent-Length: 2\r\n"),
      400,
      null,
    ],
    [post("/webhooks/github", "Host: other\r\nContent-Length: 2\r\n"), 400, null],
    // Route names are percent-decoded once, and a decoded slash is not a separator.
    [post("/webhooks/git%2Fhub"), 404, { error: "Unknown route: git/hub" }],
    [post("/webhooks/%00"), 404, { error: "Unknown route: \u0000" }],
    [post("/webhooks/%2e%2e"), 404, { error: "Unknown route: .." }],
    [post("/webhooks/git%68ub"), 401, unsigned],
    // A query string or a fragment is not part of the route's name.
    [post("/webhooks/github?token=x&y"), 401, unsigned],
    [post("/webhooks/github#x"), 401, unsigned],
    ["OPTIONS /webhooks/github HTTP/1.1\r\nHost: h\r\n\r\n", 405, {
      error: "Method OPTIONS not allowed; send POST",
    }],
    ["OPTIONS /webhooks/nope HTTP/1.1\r\nHost: h\r\n\r\n", 404, { error: "Unknown route: nope" }],
    ["HEAD /webhooks/github HTTP/1.1\r\nHost: h\r\n\r\n", 405, null],
  ];
  for (const [request, status, json] of cases) {
    assert.deepEqual(parsed(await rawRequest(port, request)), { status, json }, request);
  }
  const health = await rawRequest(port, "GET /health HTTP/1.1\r\nHost: h\r\n\r\n");
  assert.equal(parsed(health).status, 200);
  assert.equal(h.logs.filter((line) => line.startsWith("error")).length, 0, h.logs.join("\n"));
});

Deno.test("over HTTP: a sender that hangs up mid-body → 400, nothing stored; the next request is accepted", async () => {
  await using h = await harness({ routes: { github: route() } });
  const port = h.serve();
  const body = JSON.stringify({ issue: { title: "cut short" } });
  const head = (framing: string) =>
    `POST /webhooks/github HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n` +
    `X-Hub-Signature-256: ${githubSignature(SECRET, body)}\r\n${framing}\r\n`;
  const unread = { status: 400, json: { error: "the request body could not be read to its end" } };
  for (
    const request of [
      `${head(`Content-Length: ${body.length + 10}\r\n`)}${body}`,
      `${head("Transfer-Encoding: chunked\r\n")}${body.length.toString(16)}\r\n${body}\r\n`,
      `${head("Transfer-Encoding: chunked\r\n")}${(body.length + 5).toString(16)}\r\n${body}`,
    ]
  ) {
    assert.deepEqual(
      parsed(await rawRequest(port, request, { closeWrite: true })),
      unread,
      request,
    );
  }
  assert.equal(h.accepted, 0);
  const whole = await rawRequest(port, `${head(`Content-Length: ${body.length}\r\n`)}${body}`);
  assert.equal(parsed(whole).status, 202);
  const db = new DatabaseSync(h.inboxPath, { readOnly: true });
  try {
    const rows = db.prepare("SELECT payload FROM events").all() as { payload: string }[];
    assert.deepEqual(rows.map((row) => row.payload), [body]);
  } finally {
    db.close();
  }
});

Deno.test("a disabled route → 403, nothing stored; other routes are served", async () => {
  await using h = await harness({ routes: { off: route({ enabled: false }), github: route() } });
  const response = await h.signed("off", { a: 1 });
  assert.equal(response.status, 403);
  assert.deepEqual(await response.json(), { error: "route disabled" });
  assert.equal(h.accepted, 0);
  await assertServing(h, "github");
});

Deno.test("bodies over the cap → 413, with or without Content-Length", async () => {
  await using h = await harness({ routes: { github: route() }, maxBodyBytes: 100 });
  const big = JSON.stringify({ text: "x".repeat(200) });
  const declared = await h.post("github", big, {
    "content-length": String(big.length),
    "x-hub-signature-256": githubSignature(SECRET, big),
  });
  assert.equal(declared.status, 413);
  assert.deepEqual(await declared.json(), { error: "body larger than 100 bytes" });
  // A chunked body (no Content-Length) is cut off while streaming.
  let pulled = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulled++;
      if (pulled > 1000) controller.close();
      else controller.enqueue(new TextEncoder().encode("x".repeat(50)));
    },
  });
  const streamed = await h.app.fetch(
    new Request("http://localhost/webhooks/github", { method: "POST", body: stream }),
  );
  assert.equal(streamed.status, 413);
  assert.ok(pulled < 10, `read ${pulled} chunks: the body was buffered past the cap`);
  await streamed.body?.cancel();
  await assertServing(h, "github");
});

Deno.test("over HTTP: a body over the cap → 413 before the rest of it arrives, with or without Content-Length; the next request is accepted", async () => {
  // Were the rest of a body waited for, rawRequest's 10 s deadline would fail the test long
  // before this 60 s body timeout answered.
  await using h = await harness({
    routes: { github: route() },
    maxBodyBytes: 100,
    bodyTimeoutSeconds: 60,
  });
  const port = h.serve();
  const head = `POST /webhooks/github HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n` +
    `X-Hub-Signature-256: sha256=${"0".repeat(64)}\r\n`;
  const tooLarge = { status: 413, json: { error: "body larger than 100 bytes" } };
  // Answered from the header: none of the body is sent.
  const declared = await rawRequest(port, `${head}Content-Length: 101\r\n\r\n`);
  assert.deepEqual(parsed(declared), tooLarge);
  // Chunked: one chunk past the cap is enough; the body's end never comes.
  const chunk = `{"text":"${"x".repeat(200)}"`;
  const chunked = await rawRequest(
    port,
    `${head}Transfer-Encoding: chunked\r\n\r\n${chunk.length.toString(16)}\r\n${chunk}\r\n`,
  );
  assert.deepEqual(parsed(chunked), tooLarge);
  // Exactly at the cap is read (and refused later, for its signature).
  const full = `{"t":"${"x".repeat(92)}"}`;
  assert.equal(full.length, 100);
  const atCap = await rawRequest(port, `${head}Content-Length: 100\r\n\r\n${full}`);
  assert.deepEqual(parsed(atCap), { status: 401, json: { error: "Invalid signature" } });
  const body = JSON.stringify({ issue: { title: "small" } });
  const good = await rawRequest(
    port,
    `POST /webhooks/github HTTP/1.1\r\nHost: h\r\nContent-Length: ${body.length}\r\n` +
      `X-Hub-Signature-256: ${githubSignature(SECRET, body)}\r\n\r\n${body}`,
  );
  assert.equal(parsed(good).status, 202);
  assert.equal(h.accepted, 1);
});

Deno.test("no secret anywhere → 403 and an error naming the route; other routes are served", async () => {
  await using h = await harness({ routes: { open: { prompt: "x" }, github: route() } });
  // Signed or not: there is no secret to check a signature against.
  const signed: Record<string, string> = { "x-hub-signature-256": githubSignature(SECRET, "{}") };
  for (const headers of [{}, signed]) {
    const response = await h.post("open", "{}", headers);
    assert.equal(response.status, 403);
    assert.deepEqual(await response.json(), { error: "no secret is configured for this route" });
  }
  assert.match(h.logs[0], /^error: route \{route\} has no secret .*"route":"open"/);
  assert.equal(h.accepted, 0);
  await assertServing(h, "github");
});

Deno.test("signatures: missing, wrong, tampered, other route's secret, downgrade → 401, never 500", async () => {
  await using h = await harness({
    routes: { github: route(), other: route({ secret: "other-secret" }) },
  });
  const body = JSON.stringify({ issue: { title: "t" } });
  const cases: Record<string, string>[] = [
    {},
    { "x-hub-signature-256": githubSignature("wrong", body) },
    { "x-hub-signature-256": githubSignature(SECRET, body + " ") },
    { "x-hub-signature-256": "sha256=zz" },
    { "x-hub-signature-256": "sha256=" + "0".repeat(63) },
    { "x-hub-signature-256": "sha256=\u00e9\u00e9" },
    { "x-gitlab-token": "nope" },
    {
      // A broken Standard Webhooks signature next to a valid GitHub one: no downgrade.
      "webhook-id": "m1",
      "webhook-timestamp": String(NOW / 1000),
      "webhook-signature": "v1,AAAA",
      "x-hub-signature-256": githubSignature(SECRET, body),
    },
    {
      "webhook-id": "m1",
      "webhook-timestamp": String(NOW / 1000 - 301),
      "webhook-signature": standardWebhookSignature(SECRET, "m1", NOW / 1000 - 301, body),
    },
  ];
  for (const headers of cases) {
    const response = await h.post("github", body, headers);
    assert.equal(response.status, 401, JSON.stringify(headers));
    assert.deepEqual(await response.json(), { error: "Invalid signature" });
    await assertServing(h, "github");
  }
  const otherRoute = await h.post("other", body, {
    "x-hub-signature-256": githubSignature(SECRET, body),
  });
  assert.equal(otherRoute.status, 401);
  assert.deepEqual(await otherRoute.json(), { error: "Invalid signature" });
  assert.equal(h.accepted, cases.length, "only the good events");
});

Deno.test("every signature family that verifies is accepted (202)", async () => {
  await using h = await harness({ routes: { r: route() } });
  const body = JSON.stringify({ issue: { title: "t" } });
  const ts = String(NOW / 1000);
  const families: Record<string, string>[] = [
    { "x-hub-signature-256": githubSignature(SECRET, body), "x-github-delivery": "g1" },
    { "x-gitlab-token": SECRET, "x-gitlab-event-uuid": "g2" },
    {
      "webhook-id": "g3",
      "webhook-timestamp": ts,
      "webhook-signature": standardWebhookSignature(SECRET, "g3", Number(ts), body),
    },
  ];
  for (const headers of families) {
    const response = await h.post("r", body, headers);
    assert.equal(response.status, 202, JSON.stringify(headers));
    await response.body?.cancel();
  }
  assert.equal(h.accepted, 3);
});

/** How a sender of one signature family signs `body` with `secret` at `ts` (seconds). */
type Signer = (secret: string, body: string, ts: number, id: string) => Record<string, string>;

/** Each family as its senders sign (the helpers of the e2e tests: computed apart from src/). */
const FAMILIES: Record<string, Signer> = {
  github: (secret, body) => ({ "x-hub-signature-256": signGithub(secret, body) }),
  gitlab: (secret) => ({ "x-gitlab-token": secret }),
  standard: (secret, body, ts, id) => ({
    "webhook-id": id,
    "webhook-timestamp": String(ts),
    "webhook-signature": signStandard(secret, id, ts, body),
  }),
  svix: (secret, body, ts, id) => ({
    "svix-id": id,
    "svix-timestamp": String(ts),
    "svix-signature": signStandard(secret, id, ts, body),
  }),
  generic_v2: (secret, body, ts) => ({
    "x-webhook-timestamp": String(ts),
    "x-webhook-signature-v2": signGenericV2(secret, ts, body),
  }),
  generic: (secret, body) => ({ "x-webhook-signature": signGeneric(secret, body) }),
};

/** A change to one signed header: dropped, set, or made from the signed value. */
type Edit = string | Uint8Array | undefined | ((signed: string) => string | Uint8Array);

/** The header of each family that carries its signature or token. */
const SIGNATURE_HEADER: Record<string, string> = {
  github: "x-hub-signature-256",
  gitlab: "x-gitlab-token",
  standard: "webhook-signature",
  svix: "svix-signature",
  generic_v2: "x-webhook-signature-v2",
  generic: "x-webhook-signature",
};

/** A header value as raw bytes: `text` as UTF-8 with `bytes` put after it. */
function withBytes(text: string, ...bytes: number[]): Uint8Array {
  return new Uint8Array([...new TextEncoder().encode(text), ...bytes]);
}

/** A POST of `body` to `/webhooks/<route>` as bytes on the wire: header values may be any bytes. */
function rawPost(route: string, body: string, headers: Record<string, string | Uint8Array>) {
  const encoder = new TextEncoder();
  const payload = encoder.encode(body);
  const parts: Uint8Array[] = [
    encoder.encode(
      `POST /webhooks/${route} HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${payload.length}\r\n`,
    ),
  ];
  for (const [name, value] of Object.entries(headers)) {
    parts.push(
      encoder.encode(`${name}: `),
      typeof value === "string" ? encoder.encode(value) : value,
    );
    parts.push(encoder.encode("\r\n"));
  }
  parts.push(encoder.encode("\r\n"), payload);
  return new Uint8Array(parts.flatMap((part) => [...part]));
}

Deno.test("over HTTP: bad signatures of every family → 401 Invalid signature, never 500; a good request of the family is accepted after each", async () => {
  const OTHER = "other-route-secret";
  await using h = await harness({
    routes: { r: route(), other: route({ secret: OTHER }) },
    rate: 10_000,
  });
  const port = h.serve();
  const ts = NOW / 1000;
  let n = 0;
  /** A body no request sent before (its hash is the delivery id of the families without one). */
  const fresh = () => JSON.stringify({ issue: { title: `event ${++n}` } });
  const send = async (route: string, body: string, headers: Record<string, string | Uint8Array>) =>
    parsed(await rawRequest(port, rawPost(route, body, headers)));
  const refused = { status: 401, json: { error: "Invalid signature" } };

  for (const [family, sign] of Object.entries(FAMILIES)) {
    const signature = SIGNATURE_HEADER[family];
    /**
     * The family's headers for `body`, signed with `secret` at `at`, then changed by `edit`: a
     * header dropped (`undefined`), set, or made from its signed value.
     */
    const signed = (
      body: string,
      edit: Record<string, Edit> = {},
      secret = SECRET,
      at = ts,
    ) => {
      const made = sign(secret, body, at, `msg_${++n}`);
      const headers: Record<string, string | Uint8Array> = { ...made };
      for (const [name, value] of Object.entries(edit)) {
        if (value === undefined) delete headers[name];
        else headers[name] = typeof value === "function" ? value(made[name]) : value;
      }
      return headers;
    };
    const timestamped = ["standard", "svix", "generic_v2"].includes(family);
    const hexed = ["github", "generic_v2", "generic"].includes(family);
    const prefix = family === "github" ? "sha256=" : "";
    const cases: [string, string, Record<string, string | Uint8Array>][] = [];
    const bad = (what: string, make: (body: string) => Record<string, string | Uint8Array>) => {
      const body = fresh();
      cases.push([what, body, make(body)]);
    };
    // A GitLab token is the secret itself, whatever the body: there is no body to tamper with.
    if (family !== "gitlab") bad("tampered body", (body) => signed(body.replace("event", "Event")));
    bad("wrong secret", (body) => signed(body, {}, "wrong-secret"));
    bad("signature valid for another route", (body) => signed(body, {}, OTHER));
    bad("signature header missing", (body) => signed(body, { [signature]: undefined }));
    bad("signature header empty", (body) => signed(body, { [signature]: "" }));
    bad("non-ASCII (UTF-8 é) in the signature", (body) => {
      return signed(body, { [signature]: (value) => `${value.slice(0, -1)}\u00e9` });
    });
    bad("invalid UTF-8 bytes after the signature", (body) => {
      return signed(body, { [signature]: (value) => withBytes(value, 0xff, 0xfe) });
    });
    bad("invalid UTF-8 bytes instead of the signature", (body) => {
      return signed(body, { [signature]: new Uint8Array([0xc3, 0x28, 0xa0, 0xa1, 0x80, 0xff]) });
    });
    if (hexed) {
      bad("signature one hex digit short", (body) => {
        return signed(body, { [signature]: (value) => value.slice(0, -1) });
      });
      bad("signature one hex digit long", (body) => signed(body, { [signature]: (v) => `${v}0` }));
      bad("signature 64 digits not all hex", (body) => {
        return signed(body, { [signature]: `${prefix}${"g".repeat(64)}` });
      });
    }
    if (family === "gitlab") {
      bad("token one character long", (body) => signed(body, { [signature]: `${SECRET}x` }));
      bad("token one character short", (body) => {
        return signed(body, { [signature]: SECRET.slice(0, -1) });
      });
    }
    if (family === "standard" || family === "svix") {
      bad("signature of 31 bytes", (body) => {
        return signed(body, { [signature]: `v1,${btoa("x".repeat(31))}` });
      });
      bad("signature not base64", (body) => signed(body, { [signature]: `v1,${"!".repeat(44)}` }));
      const id = `${family === "svix" ? "svix" : "webhook"}-id`;
      bad("id header missing", (body) => signed(body, { [id]: undefined }));
    }
    if (timestamped) {
      const stamp = family === "generic_v2"
        ? "x-webhook-timestamp"
        : `${family === "svix" ? "svix" : "webhook"}-timestamp`;
      bad("stale timestamp (301 s ago), signed", (body) => signed(body, {}, SECRET, ts - 301));
      bad("future timestamp (301 s ahead), signed", (body) => signed(body, {}, SECRET, ts + 301));
      bad("timestamp header missing", (body) => signed(body, { [stamp]: undefined }));
      bad("timestamp not a number", (body) => signed(body, { [stamp]: "now" }));
      bad("timestamp changed after signing", (body) => signed(body, { [stamp]: String(ts + 1) }));
    }
    // A valid signature of this family under a bad one of a family that is checked first.
    const stronger: Record<string, Record<string, string>> = {
      svix: { "webhook-signature": "v1,AAAA" },
      github: { "svix-id": "msg_x" },
      gitlab: { "x-hub-signature-256": `sha256=${"0".repeat(64)}` },
      generic_v2: { "x-gitlab-token": "not-the-token" },
      generic: { "x-webhook-signature-v2": "0".repeat(64), "x-webhook-timestamp": String(ts) },
    };
    if (stronger[family]) {
      bad("downgrade: a bad header of a family checked first", (body) => {
        return { ...signed(body), ...stronger[family] };
      });
    }

    for (const [what, body, headers] of cases) {
      assert.deepEqual(await send("r", body, headers), refused, `${family}: ${what}`);
      const ok = fresh();
      const accepted = await send("r", ok, signed(ok));
      assert.equal(accepted.status, 202, `${family}: the good request after "${what}"`);
    }
    // The signature made with the other route's secret is right: that route takes it.
    const theirs = fresh();
    assert.equal((await send("other", theirs, signed(theirs, {}, OTHER))).status, 202, family);
  }
  assert.equal(h.logs.filter((line) => line.startsWith("error")).length, 0, h.logs.join("\n"));
});

Deno.test("over HTTP: the GitHub documentation's test vector passes authentication; one digit off does not", async () => {
  // docs.github.com, "Validating webhook deliveries": secret, body and signature as published.
  const secret = "It's a Secret to Everybody";
  const body = "Hello, World!";
  const published = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
  await using h = await harness({ routes: { vector: route({ secret }) } });
  const port = h.serve();
  const send = async (signature: string) =>
    parsed(await rawRequest(port, rawPost("vector", body, { "x-hub-signature-256": signature })));
  // Past authentication: refused by the next step, for a body that is not JSON.
  assert.deepEqual(await send(published), {
    status: 400,
    json: { error: "the body is not valid JSON (line 1, column 1: expected a value)" },
  });
  assert.deepEqual(await send(published.replace(/7$/, "8")), {
    status: 401,
    json: { error: "Invalid signature" },
  });
});

Deno.test("a Standard Webhooks request sent again with an unsigned id header is a duplicate", async () => {
  await using h = await harness({ routes: { r: route() } });
  const body = JSON.stringify({ type: "issue.created", issue: { title: "t" } });
  const ts = String(NOW / 1000);
  const signed = {
    "webhook-id": "msg_1",
    "webhook-timestamp": ts,
    "webhook-signature": standardWebhookSignature(SECRET, "msg_1", Number(ts), body),
  };
  const first = await h.post("r", body, signed);
  assert.equal(first.status, 202);
  assert.equal((await first.json()).delivery_id, "msg_1");
  // The id headers before webhook-id in the usual order are not signed: a captured request
  // with one added is still the delivery its signature names.
  const extras: Record<string, string>[] = [
    { "idempotency-key": "evil-1" },
    { "x-github-delivery": "evil-2" },
    { "x-gitlab-event-uuid": "evil-3" },
  ];
  for (const extra of extras) {
    const again = await h.post("r", body, { ...signed, ...extra });
    assert.equal(again.status, 200, JSON.stringify(extra));
    assert.deepEqual(await again.json(), { status: "duplicate", delivery_id: "msg_1" });
  }
  // Svix's headers the same.
  const svix = {
    "svix-id": "msg_2",
    "svix-timestamp": ts,
    "svix-signature": standardWebhookSignature(SECRET, "msg_2", Number(ts), body),
  };
  assert.equal((await (await h.post("r", body, svix)).json()).delivery_id, "msg_2");
  const replay = await h.post("r", body, { ...svix, "idempotency-key": "evil-4" });
  assert.deepEqual(await replay.json(), { status: "duplicate", delivery_id: "msg_2" });
  assert.equal(h.accepted, 2);
});

Deno.test("a Standard Webhooks request's event is its signed payload type, whatever an unsigned header says", async () => {
  await using h = await harness({ routes: { r: route({ events: ["invoice.paid"] }) } });
  const ts = String(NOW / 1000);
  const post = (id: string, payload: unknown, headers: Record<string, string> = {}) => {
    const body = JSON.stringify(payload);
    return h.post("r", body, {
      "webhook-id": id,
      "webhook-timestamp": ts,
      "webhook-signature": standardWebhookSignature(SECRET, id, Number(ts), body),
      ...headers,
    });
  };
  // A captured event of a kind the route ignores, sent again naming one it takes.
  const replay = await post("msg_1", { type: "invoice.created" }, {
    "x-github-event": "invoice.paid",
  });
  assert.deepEqual(await replay.json(), { status: "ignored", event: "invoice.created" });
  const gitlab = await post("msg_2", { event_type: "invoice.created" }, {
    "x-gitlab-event": "invoice.paid",
  });
  assert.deepEqual(await gitlab.json(), { status: "ignored", event: "invoice.created" });
  // The real one is taken; a payload that names no event still goes by the header.
  assert.equal((await post("msg_3", { type: "invoice.paid" })).status, 202);
  const unnamed = await post("msg_4", { id: 1 }, { "x-github-event": "invoice.paid" });
  assert.equal(unnamed.status, 202);
  await unnamed.body?.cancel();
  // A GitHub-signed payload's own `type` field does not replace X-GitHub-Event (as before).
  const github = await h.signed("r", { type: "invoice.created" }, {
    "x-github-event": "invoice.paid",
  });
  assert.equal(github.status, 202);
  await github.body?.cancel();
});

Deno.test("over the rate limit → 429 with Retry-After, counted after authentication; other routes are served", async () => {
  await using h = await harness({ routes: { r: route(), s: route() }, rate: 2 });
  for (let i = 0; i < 5; i++) {
    const bad = await h.post("r", "{}", { "x-hub-signature-256": "sha256=" + "0".repeat(64) });
    assert.equal(bad.status, 401);
    await bad.body?.cancel();
  }
  for (const id of ["a", "b"]) {
    const ok = await h.signed("r", { id }, { "x-github-delivery": id });
    assert.equal(ok.status, 202);
    await ok.body?.cancel();
  }
  const limited = await h.signed("r", { id: "c" }, { "x-github-delivery": "c" });
  assert.equal(limited.status, 429);
  assert.equal(limited.headers.get("retry-after"), "60");
  assert.deepEqual(await limited.json(), { error: "rate limit: 2 requests per 60 s" });
  // Each route has its own window.
  await assertServing(h, "s");
});

Deno.test("the rate window slides: capacity returns as the oldest requests age out", async () => {
  let now = NOW;
  await using h = await harness({ routes: { r: route() }, rate: 2, now: () => now });
  const send = async (id: string, at: number) => {
    now = NOW + at * 1000;
    const response = await h.signed("r", { id }, { "x-github-delivery": id });
    await response.body?.cancel();
    return [response.status, response.headers.get("retry-after")];
  };
  assert.deepEqual(await send("a", 0), [202, null]);
  assert.deepEqual(await send("b", 30), [202, null]);
  assert.deepEqual(await send("c", 40), [429, "20"], "a leaves the window at 60 s");
  assert.deepEqual(await send("c", 60), [202, null], "a has aged out");
  assert.deepEqual(await send("d", 61), [429, "29"], "b leaves at 90 s");
  assert.deepEqual(await send("d", 200), [202, null], "everything aged out");
  assert.equal(h.accepted, 4);
});

Deno.test("bodies that are not a JSON object → 400 saying why; a form body with a JSON payload is accepted", async () => {
  await using h = await harness({ routes: { r: route() } });
  const nested = (depth: number) => '{"a":'.repeat(depth) + "1" + "}".repeat(depth);
  const cases: [string, string][] = [
    ["not json", "the body is not valid JSON (line 1, column 1: expected a value)"],
    [
      '{"a":1,}',
      "the body is not valid JSON (line 1, column 8: expected a property name in double quotes)",
    ],
    ["[1,2]", "the body is not a JSON object (got an array)"],
    ['"text"', "the body is not a JSON object (got a string)"],
    ["null", "the body is not a JSON object (got null)"],
    ["42", "the body is not a JSON object (got a number)"],
    [
      nested(65),
      "the body nests objects and arrays more than 64 levels deep; flatten the payload",
    ],
    [
      '{"a":' + "[".repeat(500) + "]".repeat(500) + "}",
      "the body nests objects and arrays more than 64 levels deep; flatten the payload",
    ],
    [
      '{"action":"opened","action":"closed"}',
      'the body has the key "action" twice in the object at $; each key may appear once per ' +
      "object",
    ],
    [
      '{"pr":{"user":{"id":1,"id":2}}}',
      'the body has the key "id" twice in the object at $.pr.user; each key may appear once per ' +
      "object",
    ],
  ];
  for (const [body, error] of cases) {
    const response = await h.post("r", body, {
      "x-hub-signature-256": githubSignature(SECRET, body),
    });
    assert.equal(response.status, 400, body.slice(0, 40));
    assert.deepEqual(await response.json(), { error }, body.slice(0, 40));
    await assertServing(h, "r");
  }
  assert.equal(h.accepted, cases.length, "only the good events");
  const deepest = nested(64);
  const accepted64 = await h.post("r", deepest, {
    "x-hub-signature-256": githubSignature(SECRET, deepest),
  });
  assert.equal(accepted64.status, 202, "64 levels are accepted");
  await accepted64.body?.cancel();
  const form = `payload=${encodeURIComponent(JSON.stringify({ issue: { title: "form" } }))}`;
  const accepted = await h.post("r", form, {
    "content-type": "application/x-www-form-urlencoded",
    "x-hub-signature-256": githubSignature(SECRET, form),
  });
  assert.equal(accepted.status, 202);
  await accepted.body?.cancel();
});

Deno.test("events not listed → 200 ignored with the event; listed → accepted", async () => {
  await using h = await harness({ routes: { r: route({ events: ["issues"] }) } });
  const push = await h.signed("r", {}, { "x-github-event": "push" });
  assert.equal(push.status, 200);
  assert.deepEqual(await push.json(), { status: "ignored", event: "push" });
  const issues = await h.signed("r", { issue: { title: "x" } }, { "x-github-event": "issues" });
  assert.equal(issues.status, 202);
  await issues.body?.cancel();
});

Deno.test("a payload type of only whitespace is no event name (as such a header is not); one with spaces around is trimmed", async () => {
  await using h = await harness({ routes: { r: route({ events: ["invoice.paid"] }) } });
  const blank = await h.signed("r", { type: "  " });
  assert.equal(blank.status, 200);
  assert.deepEqual(await blank.json(), { status: "ignored", event: "unknown" });
  const padded = await h.signed("r", { type: " invoice.paid\n" });
  assert.equal(padded.status, 202);
  assert.equal((await padded.json()).event, "invoice.paid");
});

Deno.test("events match whatever their case: merge request hook accepts GitLab's Merge Request Hook", async () => {
  await using h = await harness({
    routes: { r: route({ events: ["merge request hook", "ISSUES"] }) },
  });
  const mr = await h.signed("r", { object_kind: "merge_request" }, {
    "x-gitlab-event": "Merge Request Hook",
  });
  assert.equal(mr.status, 202);
  await mr.body?.cancel();
  const issues = await h.signed("r", { issue: { title: "x" } }, { "x-github-event": "issues" });
  assert.equal(issues.status, 202);
  await issues.body?.cancel();
  const push = await h.signed("r", {}, { "x-gitlab-event": "Push Hook" });
  assert.deepEqual(await push.json(), { status: "ignored", event: "Push Hook" });
});

Deno.test("filters that do not match → 200 ignored (filter)", async () => {
  await using h = await harness({
    routes: { r: route({ filters: [{ field: "action", equals: "opened" }] }) },
  });
  const closed = await h.signed("r", { action: "closed" });
  assert.deepEqual(await closed.json(), { status: "ignored", reason: "filter" });
  const opened = await h.signed("r", { action: "opened" });
  assert.equal(opened.status, 202);
  await opened.body?.cancel();
});

Deno.test("an in_file list that cannot be read: the event is ignored and the log says which list", async () => {
  await using h = await harness({
    routes: { r: route({ filters: [{ field: "a", in_file: "allow.txt" }] }) },
  });
  const list = join(dirname(h.subscriptions), "allow.txt");
  const missing = await h.signed("r", { a: "x" });
  assert.equal(missing.status, 200);
  assert.deepEqual(await missing.json(), { status: "ignored", reason: "filter" });
  const warnings = h.logs.filter((line) => line.includes("cannot read the in_file list"));
  assert.equal(warnings.length, 1, h.logs.join("\n"));
  assert.match(warnings[0], /^warning: route \{route\}: \{message\}/);
  assert.ok(warnings[0].includes(list), warnings[0]);
  assert.ok(warnings[0].includes('"route":"r"'), warnings[0]);
  // Once the list is there, the same event is taken.
  Deno.writeTextFileSync(list, "x\n");
  const listed = await h.signed("r", { a: "x" });
  assert.equal(listed.status, 202);
  await listed.body?.cancel();
});

Deno.test("an invalid filter regex: the route is served, warned about once at load, not per request", async () => {
  await using h = await harness({
    routes: {
      r: route({ filters: { any: [{ field: "a", regex: "[" }, { field: "b", equals: 1 }] } }),
    },
  });
  const regexWarnings = () => h.logs.filter((line) => line.includes(`regex "["`));
  assert.equal(regexWarnings().length, 1, h.logs.join("\n"));
  const statuses = [];
  for (const payload of [{ a: "x", b: 1 }, { a: "x", b: 2 }, { a: "y", b: 1 }, { a: "[", b: 3 }]) {
    const response = await h.signed("r", payload);
    statuses.push(response.status);
    await response.body?.cancel();
  }
  assert.deepEqual(statuses, [202, 200, 202, 200]);
  assert.equal(regexWarnings().length, 1, h.logs.join("\n"));
});

Deno.test("without a delivery header the body hash is the id: a resent body is a duplicate", async () => {
  await using h = await harness({ routes: { r: route() } });
  const first = await h.signed("r", { same: true });
  const second = await h.signed("r", { same: true });
  const third = await h.signed("r", { same: false });
  assert.deepEqual([first.status, second.status, third.status], [202, 200, 202]);
  for (const r of [first, second, third]) await r.body?.cancel();
});

Deno.test("script: ignore → 200 ignored (script); a new payload is rendered and accepted", async () => {
  await using ignored = await harness({ routes: { r: route({ script: "x.sh" }) } });
  const response = await ignored.signed("r", { issue: { title: "t" } });
  assert.deepEqual(await response.json(), { status: "ignored", reason: "script" });
  assert.deepEqual(ignored.scripts, ["r"]);

  await using replaced = await harness({
    routes: { r: route({ script: "x.sh" }) },
    script: { kind: "payload", payload: { issue: { title: "from script" } } },
  });
  const accepted = await replaced.signed("r", { issue: { title: "original" } });
  assert.equal(accepted.status, 202);
  const { id } = { id: (await accepted.json()).delivery_id };
  assert.ok(id);
  const event = replaced.inbox.take(NOW)!;
  assert.equal(event.prompt, "Issue from script");
});

Deno.test("script: an event its script ignored is answered for good: sent again, a duplicate (not 409)", async () => {
  await using h = await harness({ routes: { r: route({ script: "x.sh" }) } });
  const send = () => h.signed("r", { issue: { title: "t" } }, { "x-github-delivery": "s-1" });
  assert.deepEqual(await (await send()).json(), { status: "ignored", reason: "script" });
  const again = await send();
  assert.equal(again.status, 200);
  assert.deepEqual(await again.json(), { status: "duplicate", delivery_id: "s-1" });
  assert.deepEqual(h.scripts, ["r"], "the script ran once");
});

Deno.test("script: a failing script is logged as a warning with its detail; printing nothing is info", async () => {
  await using failing = await harness({
    routes: { r: route({ script: "x.py" }) },
    script: { kind: "ignored", reason: "exit", detail: "x.py exited with code 1: ValueError: E42" },
  });
  await (await failing.signed("r", { a: 1 })).body?.cancel();
  assert.ok(
    failing.logs.some((line) => line.startsWith("warning:") && line.includes("ValueError: E42")),
    failing.logs.join("\n"),
  );
  await using quiet = await harness({ routes: { r: route({ script: "x.py" }) } });
  await (await quiet.signed("r", { a: 1 })).body?.cancel();
  assert.ok(
    quiet.logs.some((line) => line.startsWith("info:") && line.includes(`"reason":"empty"`)),
    quiet.logs.join("\n"),
  );
});

// The listener as the gateway runs it (events committed on the inbox's writer thread) and on one
// connection: the answers are the same.
for (const writerThread of [false, true]) {
  const mode = writerThread ? "writer thread" : "one connection";

  Deno.test(`${mode}: the same delivery id → one accepted, the rest duplicates (also when sent at once)`, async () => {
    await using h = await harness({ routes: { r: route() }, writerThread });
    const responses = await Promise.all(
      Array.from({ length: 8 }, () => h.signed("r", { n: 1 }, { "x-github-delivery": "same" })),
    );
    const statuses = await Promise.all(responses.map(async (r) => [r.status, await r.json()]));
    assert.equal(statuses.filter(([status]) => status === 202).length, 1);
    for (const [status, body] of statuses.filter(([status]) => status !== 202)) {
      assert.equal(status, 200);
      assert.deepEqual(body, { status: "duplicate", delivery_id: "same" });
    }
    assert.equal(h.inbox.counts().queued, 1);
  });

  Deno.test(`${mode}: accepted events are committed with their rendered prompt and plan before the 202`, async () => {
    await using h = await harness({
      writerThread,
      routes: {
        r: route({
          deliver: "telegram",
          deliver_extra: { chat_id: "{chat}" },
          skills: ["triage"],
        }),
      },
    });
    const response = await h.signed("r", { issue: { title: "Crash" }, chat: 42 }, {
      "x-github-event": "issues",
      "x-github-delivery": "d-9",
    });
    assert.equal(response.status, 202);
    assert.deepEqual(await response.json(), {
      status: "accepted",
      route: "r",
      event: "issues",
      delivery_id: "d-9",
    });
    const event = h.inbox.take(NOW)!;
    assert.equal(event.prompt, "Issue Crash");
    assert.deepEqual(event.plan, {
      deliver: "telegram",
      deliverExtra: { chat_id: "42" },
      skills: ["triage"],
    });
    assert.equal(h.accepted, 1);
  });

  Deno.test(`${mode}: the 202 comes after the commit: another connection already sees the event`, async () => {
    await using h = await harness({ routes: { r: route() }, writerThread });
    const reader = new DatabaseSync(h.inboxPath, { readOnly: true });
    try {
      const responses = await Promise.all(
        ["c-1", "c-2", "c-3"].map((id) =>
          h.signed("r", { issue: { title: id } }, { "x-github-delivery": id })
        ),
      );
      assert.deepEqual(responses.map((response) => response.status), [202, 202, 202]);
      const rows = reader.prepare("SELECT delivery_id FROM events ORDER BY delivery_id").all() as {
        delivery_id: string;
      }[];
      assert.deepEqual(rows.map((row) => row.delivery_id), ["c-1", "c-2", "c-3"]);
    } finally {
      reader.close();
    }
  });

  Deno.test(`${mode}: an event that cannot be stored → 503 with Retry-After, logged; the retry is accepted`, async () => {
    await using h = await harness({ routes: { r: route() }, writerThread });
    const restore = refuseWrites(h.inbox, h.inboxPath);
    const failed = await h.signed("r", { issue: { title: "x" } }, { "x-github-delivery": "f-1" });
    assert.equal(failed.status, 503);
    assert.equal(failed.headers.get("retry-after"), "30");
    assert.match((await failed.json()).error, /could not be stored; try again later/);
    assert.ok(
      h.logs.some((line) =>
        line.includes("could not store event") && line.includes("disk is full")
      ),
      h.logs.join("\n"),
    );
    // The error said once, as SQLite said it, whichever thread committed.
    assert.ok(!h.logs.some((line) => /Error: Error/.test(line)), h.logs.join("\n"));
    restore();
    // Neither the claim nor the event was kept: the sender's retry is no duplicate.
    const retry = await h.signed("r", { issue: { title: "x" } }, { "x-github-delivery": "f-1" });
    assert.equal(retry.status, 202, await retry.text());
    assert.equal(h.inbox.counts().queued, 1);
  });

  Deno.test(`${mode}: a duplicate of a request that cannot be stored is not told 'duplicate': 503 too`, async () => {
    await using h = await harness({ routes: { r: route() }, writerThread });
    const restore = refuseWrites(h.inbox, h.inboxPath);
    const send = () => h.signed("r", { issue: { title: "x" } }, { "x-github-delivery": "same" });
    const responses = await Promise.all([send(), send()]);
    const answers = await Promise.all(responses.map(async (r) => [r.status, await r.json()]));
    assert.deepEqual(answers.map(([status]) => status), [503, 503], JSON.stringify(answers));
    assert.equal(responses[1].headers.get("retry-after"), "30");
    restore();
    assert.equal((await send()).status, 202);
  });
}

/**
 * Makes the writes `when` names (`BEFORE INSERT ON events`) to the inbox at `path` fail with
 * `error`, as on a full disk or a read-only file, through a trigger (seen by every connection)
 * until the returned function drops it (after committing the open transaction of `inbox`'s own
 * connection, which holds the write lock until its turn ends).
 */
function refuseWrites(
  inbox: Inbox,
  path: string,
  when = "BEFORE INSERT ON events",
  error = "database or disk is full",
): () => void {
  inbox.commit();
  const db = new DatabaseSync(path);
  db.exec("PRAGMA busy_timeout = 5000");
  db.exec(`CREATE TRIGGER refuse ${when} BEGIN SELECT RAISE(ABORT, '${error}'); END`);
  return () => {
    inbox.commit(); // what the failed request's turn wrote around the refused write is done
    db.exec("DROP TRIGGER refuse");
    db.close();
  };
}

/** The inbox with every commit of this connection failing (`durable()` rejects), as on a full disk. */
function failingCommits(inbox: Inbox): Inbox {
  return new Proxy(inbox, {
    get(target, key) {
      if (key === "durable") return () => Promise.reject(new Error("disk I/O error"));
      const value = Reflect.get(target, key, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

Deno.test("a script route whose commit fails → 503, its held claim given up for the retry", async () => {
  await using h = await harness({
    routes: { r: route({ script: "x.sh" }) },
    script: { kind: "payload", payload: { issue: { title: "x" } } },
    wrapInbox: failingCommits,
  });
  const failed = await h.signed("r", { issue: { title: "x" } }, { "x-github-delivery": "f-1" });
  assert.equal(failed.status, 503);
  assert.equal(failed.headers.get("retry-after"), "30");
  assert.ok(h.logs.some((line) => line.includes("disk I/O")), h.logs.join("\n"));
  h.inbox.commit();
  assert.equal(h.inbox.isHeld("r", "f-1"), false);
  assert.ok(h.inbox.claim("r", "f-1", NOW, 1000), "the claim was given up");
});

/** SQLite's error for a write to a read-only database. */
const READ_ONLY = "attempt to write a readonly database";

Deno.test("a script or deliver-only route whose claim cannot be written (read-only inbox) → 503 with Retry-After, not 500", async () => {
  const deliverOnly = {
    deliver_only: true,
    deliver: "discord",
    deliver_extra: { chat_id: "123456789012345678" },
  };
  for (const extra of [{ script: "x.sh" }, deliverOnly]) {
    await using h = await harness({
      routes: { r: route(extra) },
      script: { kind: "payload", payload: { issue: { title: "x" } } },
    });
    const restore = refuseWrites(h.inbox, h.inboxPath, "BEFORE INSERT ON claims", READ_ONLY);
    try {
      const failed = await h.signed("r", { issue: { title: "x" } }, { "x-github-delivery": "f-1" });
      assert.equal(failed.status, 503, JSON.stringify(extra));
      assert.equal(failed.headers.get("retry-after"), "30");
      assert.match((await failed.json()).error, /could not be stored; try again later/);
      assert.ok(
        h.logs.some((line) =>
          line.includes("could not store event") && line.includes("readonly database")
        ),
        h.logs.join("\n"),
      );
    } finally {
      restore();
    }
    const retried = await h.signed("r", { issue: { title: "x" } }, { "x-github-delivery": "f-1" });
    assert.equal(retried.status, "script" in extra ? 202 : 200);
  }
});

Deno.test("a direct delivery that went out while the inbox refuses writes is answered 200, not 500 (a retry would send it again)", async () => {
  const extra = {
    deliver_only: true,
    deliver: "discord",
    deliver_extra: { chat_id: "123456789012345678" },
  };
  await using h = await harness({ routes: { r: route(extra) } });
  // The claim is taken (an insert); what comes after it (an update) is refused.
  const restore = refuseWrites(h.inbox, h.inboxPath, "BEFORE UPDATE ON claims", READ_ONLY);
  try {
    const sent = await h.signed("r", { issue: { title: "x" } }, { "x-github-delivery": "f-1" });
    assert.equal(sent.status, 200);
    assert.equal((await sent.json()).status, "delivered");
    assert.equal(h.delivered.length, 1);
    assert.ok(
      h.logs.some((line) =>
        line.includes("could not record what became of delivery") &&
        line.includes("readonly database")
      ),
      h.logs.join("\n"),
    );
  } finally {
    restore();
  }
});

Deno.test("integers beyond 2^53 in a payload reach prompts, deliver_extra and the inbox exact", async () => {
  const body = '{"chat":1234567890123456789,"issue":{"id":98765432109876543210}}';
  const headers = { "x-hub-signature-256": githubSignature(SECRET, body) };
  const extra = { deliver: "discord", deliver_extra: { chat_id: "{chat}" }, prompt: "{issue}" };
  await using direct = await harness({ routes: { r: route({ ...extra, deliver_only: true }) } });
  assert.equal((await direct.post("r", body, headers)).status, 200);
  assert.deepEqual(direct.delivered, [{
    message: '{\n  "id": 98765432109876543210\n}',
    extra: { chat_id: "1234567890123456789" },
  }]);

  await using run = await harness({ routes: { r: route(extra) } });
  assert.equal((await run.post("r", body, headers)).status, 202);
  const event = run.inbox.take(NOW)!; // read back from SQLite
  assert.equal(event.plan.deliverExtra.chat_id, "1234567890123456789");
  assert.deepEqual(event.payload, {
    chat: 1234567890123456789n,
    issue: { id: 98765432109876543210n },
  });
});

Deno.test("a flood of badly signed requests logs one line a minute per route, counting the rest", async () => {
  let now = NOW;
  await using h = await harness({ routes: { r: route() }, now: () => now });
  const rejections = () => h.logs.filter((line) => line.includes("rejected a request"));
  for (let i = 0; i < 5; i++) {
    const response = await h.post("r", "{}", { "x-hub-signature-256": `sha256=${"0".repeat(64)}` });
    assert.equal(response.status, 401);
    await response.body?.cancel();
  }
  assert.equal(rejections().length, 1);
  now += 61_000;
  await (await h.post("r", "{}", { "x-hub-signature-256": `sha256=${"1".repeat(64)}` })).body
    ?.cancel();
  assert.equal(rejections().length, 2);
  assert.match(rejections()[1], /"more":4/);
});

Deno.test("refusals of another kind are logged in the same minute, each with its own count", async () => {
  let now = NOW;
  await using h = await harness({ routes: { r: route(), s: route() }, now: () => now });
  const wrong = { "x-hub-signature-256": `sha256=${"0".repeat(64)}` };
  const stale = (seconds: number) => ({
    "x-webhook-signature-v2": "0".repeat(64),
    "x-webhook-timestamp": String(now / 1000 - seconds),
  });
  for (const headers of [wrong, wrong, {}, stale(400), stale(500), wrong]) {
    await (await h.post("r", "{}", headers)).body?.cancel();
  }
  await (await h.post("s", "{}", wrong)).body?.cancel();
  const lines = () => h.logs.filter((line) => line.includes("rejected a request"));
  assert.deepEqual(lines().map((line) => JSON.parse(line.slice(line.indexOf(' {"')))), [
    { route: "r", reason: "the signature does not match" },
    { route: "r", reason: "no signature or token header" },
    // Timestamps off by different amounts are one kind of refusal.
    { route: "r", reason: "the timestamp is 400 s away from now (at most 300 s)" },
    { route: "s", reason: "the signature does not match" },
  ]);
  now += 61_000;
  await (await h.post("r", "{}", stale(301))).body?.cancel();
  assert.match(lines().at(-1)!, /"reason":"the timestamp is 301 s away.*"more":1/);
});

Deno.test("404, 403, 413, 400 and 429 refusals are logged too, once a minute each", async () => {
  let now = NOW;
  await using h = await harness({
    routes: { r: route(), off: route({ enabled: false }) },
    now: () => now,
    maxBodyBytes: 64,
    rate: 3,
  });
  const send = async (name: string, body: string, headers: Record<string, string> = {}) => {
    const response = await h.signed(name, JSON.parse(body), headers);
    await response.body?.cancel();
    return response.status;
  };
  const statuses = [];
  statuses.push(await h.post("nope", "{}").then(async (r) => (await r.body?.cancel(), r.status)));
  statuses.push(await h.post("n0pe", "{}").then(async (r) => (await r.body?.cancel(), r.status)));
  statuses.push(await send("off", "{}"));
  statuses.push(await send("r", JSON.stringify({ text: "x".repeat(100) })));
  statuses.push(await send("r", "[1]"));
  statuses.push(await send("r", "[2]"));
  statuses.push(await send("r", "{}"));
  statuses.push(await send("r", "{}"));
  statuses.push(await send("r", "{}"));
  assert.deepEqual(statuses, [404, 404, 403, 413, 400, 400, 202, 429, 429]);
  const logged = h.logs.map((line) => line.slice(0, line.indexOf(' {"')));
  assert.deepEqual(logged, [
    "warning: refused a POST to unknown route {name} (404)",
    "info: refused an event to {route}: it is disabled (403)",
    "warning: refused an event to {route}: body over {cap} bytes (413)",
    "warning: refused an event to {route}: {error} (400)",
    "warning: refused an event to {route}: over its rate limit of {requests} per {seconds} s (429)",
  ]);
  assert.match(h.logs[0], /"name":"nope"/);
  assert.match(h.logs[3], /"error":"the body is not a JSON object \(got an array\)"/);
  // The name of an unknown route is the sender's text: logged cut short.
  now += 61_000;
  await (await h.post("x".repeat(500), "{}")).body?.cancel();
  assert.match(h.logs.at(-1)!, new RegExp(`"name":"${"x".repeat(99)}…","more":1`));
});

Deno.test("a 400 for a body that is not JSON says where, not what the body holds", async () => {
  await using h = await harness({ routes: { r: route() } });
  const body = '{"title": "sk-secret-token" oops}';
  const response = await h.post("r", body, {
    "x-hub-signature-256": githubSignature(SECRET, body),
  });
  assert.equal(response.status, 400);
  const { error } = await response.json();
  assert.equal(error, "the body is not valid JSON (line 1, column 29: expected a comma or })");
  assert.ok(!h.logs.join("\n").includes("sk-secret"), h.logs.join("\n"));
});

Deno.test("the same delivery id while its first request is still served → 409 with Retry-After, then duplicate", async () => {
  let open!: () => void;
  const deliveryGate = new Promise<void>((resolve) => open = resolve);
  await using h = await harness({
    routes: { r: route({ deliver: "telegram", deliver_only: true }) },
    deliveryGate,
  });
  const send = () => h.signed("r", { issue: { title: "T" } }, { "x-github-delivery": "d1" });
  const first = send();
  while (h.delivered.length === 0) await new Promise((resolve) => setTimeout(resolve, 1));
  const meanwhile = await send();
  assert.equal(meanwhile.status, 409);
  assert.equal(meanwhile.headers.get("retry-after"), "10");
  assert.match((await meanwhile.json()).error, /d1 is still being processed; retry later/);
  open();
  assert.equal((await first).status, 200);
  assert.deepEqual(await (await send()).json(), { status: "duplicate", delivery_id: "d1" });
  assert.equal(h.delivered.length, 1);
});

Deno.test("an unexpected error while an event is served → 500, logged; the claim is let go for the retry", async () => {
  await using h = await harness({
    routes: { r: route({ script: "x.sh" }) },
    scriptError: new Error("boom"),
  });
  for (let attempt = 0; attempt < 2; attempt++) {
    const response = await h.signed("r", { issue: { title: "T" } }, { "x-github-delivery": "u-1" });
    const text = await response.text();
    assert.equal(response.status, 500, `attempt ${attempt}: neither 409 nor a duplicate: ${text}`);
  }
  assert.deepEqual(h.scripts, ["r", "r"]);
  assert.equal(
    h.logs.filter((line) => /^error: webhook request failed.*boom/.test(line)).length,
    2,
  );
  assert.equal(h.inbox.isHeld("r", "u-1"), false);
});

Deno.test("a direct delivery that throws after some parts went out → 500; the retry resumes after them", async () => {
  const broken = Promise.reject(new Error("boom"));
  broken.catch(() => {}); // rejected for every delivery, when it is awaited
  await using h = await harness({
    routes: { r: route({ deliver: "telegram", deliver_only: true }) },
    deliveryGate: broken,
    partsSentBeforeGate: 2,
  });
  for (let attempt = 0; attempt < 2; attempt++) {
    const response = await h.signed("r", { issue: { title: "T" } }, { "x-github-delivery": "u-2" });
    const text = await response.text();
    assert.equal(response.status, 500, `attempt ${attempt}: neither 409 nor a duplicate: ${text}`);
  }
  assert.deepEqual(h.skipped, [0, 2], "the 2 parts sent before the error are not sent again");
});

Deno.test("direct delivery: ok → 200 delivered; failure → 502 and the claim is released", async () => {
  await using ok = await harness({
    routes: { r: route({ deliver: "telegram", deliver_only: true }) },
  });
  const delivered = await ok.signed("r", { issue: { title: "T" } }, { "x-github-delivery": "1" });
  assert.equal(delivered.status, 200);
  assert.equal((await delivered.json()).status, "delivered");
  assert.deepEqual(ok.delivered.map((d) => d.message), ["Issue T"]);
  assert.equal(ok.inbox.counts().queued, 0, "no agent run for direct delivery");
  assert.deepEqual(ok.logs, [
    'info: route {route}: direct delivery {delivery_id} went to {where} {"route":"r",' +
    '"delivery_id":"1","where":"telegram"}',
  ]);

  await using failing = await harness({
    routes: { r: route({ deliver: "telegram", deliver_only: true }) },
    delivery: {
      ok: false,
      error: "the Telegram Bot API at http://10.0.0.7:8081 answered 401. Fix: check " +
        "TELEGRAM_BOT_TOKEN in /home/me/.agent/.env",
    },
  });
  for (let attempt = 0; attempt < 2; attempt++) {
    const response = await failing.signed("r", { issue: { title: "T" } }, {
      "x-github-delivery": "same",
    });
    assert.equal(response.status, 502, `attempt ${attempt}: the retry is not a duplicate`);
    // The sender (whose delivery log others may read) learns neither API roots nor settings.
    assert.deepEqual(await response.json(), {
      error: "delivery to telegram failed; the reason is in the gateway's log",
      route: "r",
      delivery_id: "same",
    });
  }
  assert.equal(failing.delivered.length, 2);
  assert.ok(
    failing.logs.some((line) => line.startsWith("warning:") && line.includes("answered 401")),
    failing.logs.join("\n"),
  );
});

Deno.test("direct delivery of a template that renders empty or blank: 502, nothing sent, the reason logged; the retry is served again", async () => {
  await using h = await harness({
    routes: { r: route({ deliver: "telegram", deliver_only: true, prompt: "{comment.body}" }) },
  });
  for (const [id, body] of [["1", ""], ["2", " \n\t "]]) {
    for (let attempt = 0; attempt < 2; attempt++) {
      const response = await h.signed("r", { comment: { body } }, { "x-github-delivery": id });
      assert.equal(response.status, 502, `${JSON.stringify(body)}, attempt ${attempt}`);
      assert.deepEqual(await response.json(), {
        error: "nothing to deliver: the route's prompt template renders an empty message for " +
          "this payload",
        route: "r",
        delivery_id: id,
      });
    }
  }
  assert.deepEqual(h.delivered, [], "no platform call for an empty message");
  // A static route's template is changed in config.yaml: subscribing would not change it.
  assert.deepEqual(
    h.logs,
    ["1", "1", "2", "2"].map((id) =>
      "warning: route {route}: direct delivery {delivery_id} to {target} not sent: the route's " +
      "prompt template renders an empty message for this payload (the fields it names are empty " +
      "or blank); to change the template, {fix} " +
      JSON.stringify({
        route: "r",
        delivery_id: id,
        target: "telegram",
        fix: "edit the prompt of platforms.webhook.extra.routes.r in config.yaml",
      })
    ),
  );
  // A subscription's is changed by subscribing it again.
  writeCommentSubscription(h, { deliver: "telegram", deliver_only: true });
  const response = await h.signed("dyn", { comment: { body: "" } }, { "x-github-delivery": "3" });
  assert.equal(response.status, 502);
  await response.body?.cancel();
  assert.equal(h.logs.length, 5, h.logs.join("\n"));
  assert.match(
    h.logs[4],
    /"fix":"subscribe it again with another --prompt \(agent webhook subscribe dyn \.\.\.\)"/,
  );
});

Deno.test("agent run of a template that renders empty or blank: the default prompt, a warning in the 202 and the log", async () => {
  await using h = await harness({ routes: { r: route({ prompt: "{comment.body}" }) } });
  const fence = "`".repeat(3);
  const warning = "the route's prompt template renders blank for this payload, so the agent " +
    "runs on the default prompt (the event and its payload)";
  for (const [id, body] of [["1", ""], ["2", " \n\t "]]) {
    const response = await h.signed("r", { comment: { body } }, {
      "x-github-delivery": id,
      "x-github-event": "issue_comment",
    });
    assert.equal(response.status, 202, JSON.stringify(body));
    assert.deepEqual(await response.json(), {
      status: "accepted",
      route: "r",
      event: "issue_comment",
      delivery_id: id,
      warning,
    });
    const event = h.inbox.take(NOW)!;
    assert.equal(
      event.prompt,
      `Webhook event 'issue_comment' on route 'r':\n\n${fence}json\n` +
        `${JSON.stringify({ comment: { body } }, null, 2)}\n${fence}`,
    );
  }
  assert.deepEqual(
    h.logs,
    ["1", "2"].map((id) =>
      "warning: route {route}: event {delivery_id}: the prompt template renders blank for this " +
      "payload (the fields it names are empty or blank), so the agent runs on the default prompt " +
      "(the event and its payload); to change the template, {fix} " +
      JSON.stringify({
        route: "r",
        delivery_id: id,
        fix: "edit the prompt of platforms.webhook.extra.routes.r in config.yaml",
      })
    ),
  );
  // A template that renders text is used as it is, without a warning.
  const filled = await h.signed("r", { comment: { body: "LGTM" } }, { "x-github-delivery": "3" });
  assert.equal(filled.status, 202);
  assert.equal((await filled.json()).warning, undefined);
  assert.equal(h.inbox.take(NOW)!.prompt, "LGTM");
  assert.equal(h.logs.length, 2);
  // A subscription's fix is to subscribe it again; a duplicate is neither warned about nor run.
  writeCommentSubscription(h, { deliver: "log" });
  for (let attempt = 0; attempt < 2; attempt++) {
    const response = await h.signed("dyn", { comment: { body: "" } }, { "x-github-delivery": "4" });
    assert.equal(response.status, attempt === 0 ? 202 : 200);
    await response.body?.cancel();
  }
  assert.equal(h.logs.length, 3, h.logs.join("\n"));
  assert.match(
    h.logs[2],
    /"fix":"subscribe it again with another --prompt \(agent webhook subscribe dyn \.\.\.\)"/,
  );
});

Deno.test("subscriptions are reloaded when the file changes; a corrupt file keeps the routes", async () => {
  await using h = await harness();
  const write = (records: unknown) =>
    Deno.writeTextFileSync(h.subscriptions, JSON.stringify(records));
  const record = {
    description: "d",
    events: [],
    secret: SECRET,
    prompt: "p",
    skills: [],
    deliver: "log",
    created_at: "2026-01-01T00:00:00Z",
  };
  assert.equal((await h.signed("dyn", {})).status, 404);
  write({ dyn: record });
  const found = await h.signed("dyn", { n: 1 });
  assert.equal(found.status, 202);
  await found.body?.cancel();
  // Same size, same second: a rename-based rewrite still gets noticed.
  const tmp = `${h.subscriptions}.tmp`;
  Deno.writeTextFileSync(tmp, JSON.stringify({ dyx: record }));
  Deno.renameSync(tmp, h.subscriptions);
  assert.equal((await h.signed("dyx", { n: 2 })).status, 202);
  Deno.writeTextFileSync(h.subscriptions, "{broken");
  const kept = await h.signed("dyx", { n: 3 });
  assert.equal(kept.status, 202, "the previous routes stay in use");
  assert.ok(h.logs.some((line) => line.includes("not valid JSON")));
});

Deno.test("the payload is stored as the body's own text; a script's payload is written out", async () => {
  const body = '{ "issue": {"title": "spaced out"},\n  "n": 12345678901234567890 }';
  const headers = { "x-hub-signature-256": githubSignature(SECRET, body) };
  const stored = (h: Harness) => {
    const db = new DatabaseSync(h.inboxPath, { readOnly: true });
    try {
      return (db.prepare("SELECT payload FROM events").get() as { payload: string }).payload;
    } finally {
      db.close();
    }
  };
  await using plain = await harness({ routes: { r: route() }, writerThread: true });
  assert.equal((await plain.post("r", body, headers)).status, 202);
  assert.equal(stored(plain), body);
  await using scripted = await harness({
    routes: { r: route({ script: "x.sh" }) },
    script: { kind: "payload", payload: { issue: { title: "new" }, n: 12345678901234567890n } },
  });
  assert.equal((await scripted.post("r", body, headers)).status, 202);
  assert.equal(stored(scripted), '{"issue":{"title":"new"},"n":12345678901234567890}');
});

/** The subscriptions file holding only `dyn`, whose prompt is the comment's body, with `delivery`. */
function writeCommentSubscription(h: Harness, delivery: Record<string, unknown>): void {
  const dyn = {
    description: "d",
    events: [],
    secret: SECRET,
    prompt: "{comment.body}",
    skills: [],
    ...delivery,
    created_at: "2026-01-01T00:00:00Z",
  };
  Deno.writeTextFileSync(h.subscriptions, JSON.stringify({ dyn }));
}
