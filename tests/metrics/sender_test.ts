import assert from "node:assert/strict";
import {
  type OutgoingPackage,
  type SenderOptions,
  type SendOutcome,
  sendPackages,
  validateEndpoint,
} from "../../src/metrics/sender.ts";
import { AGENT_VERSION } from "../../src/version.ts";

// Deno ≥2.8 leaves the leak checks off by default; the sender promises no leaked timers or bodies.
Deno.test.sanitizer({ ops: true, resources: true });

/** The fixed clock of every test: 2026-01-01T00:00:00Z (a Thursday). */
const NOW = Date.UTC(2026, 0, 1);

interface Received {
  headers: Headers;
  /** The raw request body as it came off the wire (still gzipped if it was sent gzipped). */
  body: Uint8Array;
}

type Script = (index: number, request: Request) => Response | Promise<Response>;

/** A real HTTP server on 127.0.0.1 that answers the n-th request with `script(n)`. */
function startCollector(script: Script) {
  const received: Received[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const body = new Uint8Array(await request.arrayBuffer());
    const index = received.length;
    received.push({ headers: request.headers, body });
    return await script(index, request);
  });
  return {
    endpoint: `http://127.0.0.1:${server.addr.port}/v2/packages`,
    received,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

/** Answers requests with the given statuses in order (the last one repeats). */
function statuses(...codes: number[]): Script {
  return (index) => new Response(null, { status: codes[Math.min(index, codes.length - 1)] });
}

/** A package whose JSON looks like an outbox file; `items` makes it bigger. */
function makePackage(packageId: string, items = 1, extra = ""): OutgoingPackage {
  const metrics = Array.from({ length: items }, (_, i) => ({
    name: "agent.tool_call.count",
    type: "counter",
    dimensions: { tool_category: "file", outcome: "success", latency: `n${i}${extra}` },
    value: i + 1,
  }));
  const body = JSON.stringify({
    schema_version: "agent.shared_metrics.v2",
    package_id: packageId,
    install_id: "3f0b8a52-8f3e-4c55-9d7e-2f4c1a6b9e10",
    period_start: "2025-12-31T00:00:00Z",
    period_end: "2026-01-01T00:00:00Z",
    generated_at: "2026-01-01T00:00:05Z",
    resource: {
      architecture: "x86_64",
      agent_version: "0.1.0",
      install_method: "git",
      os_family: "linux",
    },
    metrics,
  });
  return { packageId, body };
}

/** Test options: fixed clock, mid-range jitter (factor 1), a sleep that records and returns. */
function testOptions(endpoint: string, extra: Partial<SenderOptions> = {}) {
  const sleeps: number[] = [];
  const options: SenderOptions = {
    endpoint,
    now: () => NOW,
    random: () => 0.5,
    sleep: (ms) => {
      sleeps.push(ms);
      return Promise.resolve();
    },
    ...extra,
  };
  return { options, sleeps };
}

const decoder = new TextDecoder();

async function gunzip(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return await new Response(stream).text();
}

function byteLength(text: string): number {
  return new TextEncoder().encode(text).byteLength;
}

/** A resolvable promise, for handlers that hang until the test lets them go. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

Deno.test("202 → sent; the body received is the package JSON, as application/json", async () => {
  await using collector = startCollector(statuses(202));
  const { options, sleeps } = testOptions(collector.endpoint);
  const pkg = makePackage("11111111-1111-4111-8111-111111111111");

  const outcomes = await sendPackages([pkg], options);

  assert.deepEqual(outcomes, [{ packageId: pkg.packageId, status: "sent", httpStatus: 202 }]);
  assert.equal(collector.received.length, 1);
  const [request] = collector.received;
  assert.equal(decoder.decode(request.body), pkg.body);
  assert.equal(request.headers.get("content-type"), "application/json");
  assert.equal(request.headers.get("content-encoding"), null);
  assert.deepEqual(sleeps, []);
});

Deno.test("200, 201 and 204 also count as sent", async () => {
  await using collector = startCollector(statuses(200, 201, 204));
  const { options } = testOptions(collector.endpoint);

  const outcomes = await sendPackages(["a", "b", "c"].map((id) => makePackage(id)), options);

  assert.deepEqual(outcomes.map((o) => [o.packageId, o.status]), [
    ["a", "sent"],
    ["b", "sent"],
    ["c", "sent"],
  ]);
  assert.equal(collector.received.length, 3);
});

Deno.test("packages are sent one at a time, in order", async () => {
  let inFlight = 0;
  let maxInFlight = 0;
  await using collector = startCollector(async () => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    await new Promise((resolve) => setTimeout(resolve, 5));
    inFlight--;
    return new Response(null, { status: 202 });
  });
  const { options } = testOptions(collector.endpoint);
  const packages = ["p1", "p2", "p3", "p4"].map((id) => makePackage(id));

  const outcomes = await sendPackages(packages, options);

  assert.deepEqual(outcomes.map((o) => o.packageId), ["p1", "p2", "p3", "p4"]);
  assert.equal(maxInFlight, 1);
  assert.deepEqual(
    collector.received.map((r) => JSON.parse(decoder.decode(r.body)).package_id),
    ["p1", "p2", "p3", "p4"],
  );
});

Deno.test("a body of exactly 4096 bytes goes plain, one over goes gzipped", async () => {
  await using collector = startCollector(statuses(202));
  const { options } = testOptions(collector.endpoint);
  // Grow a JSON text to an exact byte length by padding a string field.
  const exactly = (target: number) => {
    const head = makePackage("edge").body.slice(0, -1) + ',"pad":"';
    const body = head + "x".repeat(target - byteLength(head) - 2) + '"}';
    assert.equal(byteLength(body), target);
    JSON.parse(body);
    return body;
  };
  const plain = { packageId: "plain", body: exactly(4096) };
  const zipped = { packageId: "zipped", body: exactly(4097) };

  const outcomes = await sendPackages([plain, zipped], options);

  assert.deepEqual(outcomes.map((o) => o.status), ["sent", "sent"]);
  const [first, second] = collector.received;
  assert.equal(first.headers.get("content-encoding"), null);
  assert.equal(decoder.decode(first.body), plain.body);
  assert.equal(second.headers.get("content-encoding"), "gzip");
  assert.equal(await gunzip(new Uint8Array(second.body)), zipped.body);
});

Deno.test("a large package is gzipped and decompresses to the original JSON", async () => {
  await using collector = startCollector(statuses(202));
  const { options } = testOptions(collector.endpoint);
  const pkg = makePackage("big", 200);
  assert.ok(byteLength(pkg.body) > 4096);

  const outcomes = await sendPackages([pkg], options);

  assert.equal(outcomes[0].status, "sent");
  const [request] = collector.received;
  assert.equal(request.headers.get("content-encoding"), "gzip");
  assert.equal(request.headers.get("content-type"), "application/json");
  assert.ok(request.body.byteLength < byteLength(pkg.body), "the wire body is compressed");
  assert.equal(await gunzip(new Uint8Array(request.body)), pkg.body);
});

Deno.test("the gzip threshold counts UTF-8 bytes, not characters", async () => {
  await using collector = startCollector(statuses(202));
  const { options } = testOptions(collector.endpoint);
  // 1500 three-byte characters: 1500 UTF-16 units but 4500 bytes.
  const pkg = { packageId: "utf8", body: JSON.stringify({ v: "€".repeat(1500) }) };
  assert.ok(pkg.body.length <= 4096 && byteLength(pkg.body) > 4096);

  await sendPackages([pkg], options);

  assert.equal(collector.received[0].headers.get("content-encoding"), "gzip");
  assert.equal(await gunzip(new Uint8Array(collector.received[0].body)), pkg.body);
});

for (const status of [400, 413, 422]) {
  Deno.test(`${status} → rejected, not retried, and the pass goes on`, async () => {
    await using collector = startCollector(statuses(status, 202));
    const { options, sleeps } = testOptions(collector.endpoint);

    const outcomes = await sendPackages([makePackage("bad"), makePackage("good")], options);

    assert.deepEqual(outcomes, [
      { packageId: "bad", status: "rejected", httpStatus: status },
      { packageId: "good", status: "sent", httpStatus: 202 },
    ]);
    assert.equal(collector.received.length, 2, "one request per package, no retry");
    assert.deepEqual(sleeps, []);
  });
}

for (const status of [401, 403, 404, 408, 418]) {
  Deno.test(`${status} → retried with the 5xx backoff, then deferred, never rejected`, async () => {
    await using collector = startCollector(statuses(status));
    const { options, sleeps } = testOptions(collector.endpoint);

    const outcomes = await sendPackages([makePackage("p1"), makePackage("p2")], options);

    assert.deepEqual(outcomes.map((o) => o.status), ["deferred", "deferred"]);
    assert.equal(outcomes[0].status === "deferred" && outcomes[0].retryAt, NOW + 25_000);
    const reason = outcomes[0].status === "deferred" ? outcomes[0].reason : "";
    assert.match(
      reason,
      new RegExp(`^HTTP ${status} \\(after 3 tries\\); retried like a server error \\(only`),
    );
    assert.match(reason, /only 400, 413 and 422 are permanent/);
    assert.equal(collector.received.length, 3, "three tries, then the pass stops");
    assert.deepEqual(sleeps, [1_000, 5_000]);
  });
}

Deno.test("429 with Retry-After: 120 → this and the remaining packages deferred 120 s", async () => {
  await using collector = startCollector((index) =>
    index === 0
      ? new Response(null, { status: 202 })
      : new Response("slow down", { status: 429, headers: { "Retry-After": "120" } })
  );
  const { options, sleeps } = testOptions(collector.endpoint);

  const outcomes = await sendPackages(
    ["p1", "p2", "p3", "p4"].map((id) => makePackage(id)),
    options,
  );

  assert.equal(collector.received.length, 2, "nothing is sent after the 429");
  assert.deepEqual(outcomes.map((o) => [o.packageId, o.status]), [
    ["p1", "sent"],
    ["p2", "deferred"],
    ["p3", "deferred"],
    ["p4", "deferred"],
  ]);
  for (const outcome of outcomes.slice(1)) {
    assert.equal(outcome.status === "deferred" && outcome.retryAt, NOW + 120_000);
  }
  assert.deepEqual(sleeps, [], "a 429 is not retried within the pass");
});

for (
  const [header, waitMs] of [
    ["Thu, 01 Jan 2026 00:05:00 GMT", 300_000], // IMF-fixdate
    ["Thursday, 01-Jan-26 00:05:00 GMT", 300_000], // RFC 850
    ["Thu Jan  1 00:05:00 2026", 300_000], // asctime
    ["Wed, 31 Dec 2025 23:00:00 GMT", 0], // already past
    ["999999999", 24 * 3_600_000], // capped at a day
  ] as const
) {
  Deno.test(`429 with Retry-After "${header}" → deferred ${waitMs} ms`, async () => {
    await using collector = startCollector(() =>
      new Response(null, { status: 429, headers: { "Retry-After": header } })
    );
    const { options } = testOptions(collector.endpoint);

    const outcomes = await sendPackages([makePackage("p1"), makePackage("p2")], options);

    assert.equal(collector.received.length, 1);
    assert.deepEqual(outcomes.map((o) => o.status === "deferred" && o.retryAt), [
      NOW + waitMs,
      NOW + waitMs,
    ]);
  });
}

Deno.test("429 reasons: a wait beyond the cap names both; a header not understood says so", async () => {
  for (
    const [header, reason] of [
      [
        "99999999",
        /^HTTP 429: the endpoint asked to wait 99999999 s; waiting the maximum of 86400 s$/,
      ],
      [
        "abc",
        /^HTTP 429: the endpoint's Retry-After "abc" was not understood; waiting the default 60 s$/,
      ],
      [null, /^HTTP 429: the endpoint sent no Retry-After; waiting the default 60 s$/],
      ["120", /^HTTP 429: the endpoint asked to wait 120 s$/],
    ] as const
  ) {
    await using collector = startCollector(() =>
      new Response(null, { status: 429, headers: header === null ? {} : { "Retry-After": header } })
    );
    const [outcome] = await sendPackages(
      [makePackage("p1")],
      testOptions(collector.endpoint).options,
    );
    assert.match(outcome.status === "deferred" ? outcome.reason : "", reason);
  }
});

Deno.test("429 reason: an HTTP-date's wait is said to the nearest, as other waits are, not rounded up", async () => {
  await using collector = startCollector(() =>
    new Response(null, { status: 429, headers: { "Retry-After": "Thu, 01 Jan 2026 00:00:01 GMT" } })
  );
  const { options } = testOptions(collector.endpoint, { now: () => NOW + 700 });
  const [outcome] = await sendPackages([makePackage("p1")], options);
  assert.equal(outcome.status === "deferred" && outcome.retryAt, NOW + 1000);
  assert.equal(
    outcome.status === "deferred" && outcome.reason,
    "HTTP 429: the endpoint asked to wait 0.3 s",
  );
});

for (const header of [null, "", "soon", "-5", "1.5", "2026-01-01T00:05:00Z"]) {
  Deno.test(`429 with Retry-After ${JSON.stringify(header)} → deferred 60 s`, async () => {
    await using collector = startCollector(() =>
      new Response(null, { status: 429, headers: header === null ? {} : { "Retry-After": header } })
    );
    const { options } = testOptions(collector.endpoint);

    const [outcome] = await sendPackages([makePackage("p1")], options);

    assert.equal(outcome.status === "deferred" && outcome.retryAt, NOW + 60_000);
  });
}

Deno.test("500 then 202 → sent after one retry with a ~1 s backoff", async () => {
  await using collector = startCollector(statuses(500, 202));
  const { options, sleeps } = testOptions(collector.endpoint);
  const pkg = makePackage("p1");

  const outcomes = await sendPackages([pkg], options);

  assert.deepEqual(outcomes, [{ packageId: "p1", status: "sent", httpStatus: 202 }]);
  assert.equal(collector.received.length, 2);
  assert.deepEqual(sleeps, [1_000]);
  assert.equal(decoder.decode(collector.received[1].body), pkg.body, "the retry resends the body");
});

Deno.test("three 503s → deferred after exactly 3 requests, backoff 1 s then 5 s", async () => {
  await using collector = startCollector(statuses(503));
  const { options, sleeps } = testOptions(collector.endpoint);

  const outcomes = await sendPackages([makePackage("p1"), makePackage("p2")], options);

  assert.equal(collector.received.length, 3, "3 tries of p1, none of p2");
  assert.deepEqual(sleeps, [1_000, 5_000]);
  assert.equal(outcomes.length, 2);
  const [first, second] = outcomes;
  assert.equal(first.status, "deferred");
  assert.equal(first.status === "deferred" && first.retryAt, NOW + 25_000);
  assert.match(first.status === "deferred" ? first.reason : "", /503/);
  assert.equal(second.status === "deferred" && second.retryAt, NOW + 25_000);
});

Deno.test("backoff delays carry ±20% jitter from the injected random", async () => {
  for (
    const [random, expected, retryIn] of [[0, [800, 4_000], 20_000], [1, [1_200, 6_000], 30_000]]
  ) {
    await using collector = startCollector(statuses(502));
    const { options, sleeps } = testOptions(collector.endpoint, { random: () => random as number });

    const [outcome] = await sendPackages([makePackage("p1")], options);

    assert.deepEqual(sleeps, expected);
    assert.equal(outcome.status === "deferred" && outcome.retryAt, NOW + (retryIn as number));
  }
});

Deno.test("a server that never answers → each try times out, then deferred, quickly", async () => {
  const release = gate();
  await using collector = startCollector(async () => {
    await release.opened;
    return new Response(null, { status: 202 });
  });
  const { options, sleeps } = testOptions(collector.endpoint, { requestTimeoutMs: 100 });
  const started = performance.now();

  const outcomes = await sendPackages([makePackage("p1")], options);

  const elapsed = performance.now() - started;
  release.open();
  assert.equal(outcomes[0].status, "deferred");
  assert.match(outcomes[0].status === "deferred" ? outcomes[0].reason : "", /100 ms/);
  assert.equal(collector.received.length, 3);
  assert.deepEqual(sleeps, [1_000, 5_000]);
  assert.ok(elapsed < 3_000, `took ${elapsed} ms`);
});

Deno.test("connection refused → retried, then deferred", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  const { options, sleeps } = testOptions(`http://127.0.0.1:${port}/v2/packages`);

  const outcomes = await sendPackages([makePackage("p1"), makePackage("p2")], options);

  assert.deepEqual(outcomes.map((o) => o.status), ["deferred", "deferred"]);
  assert.equal(outcomes[0].status === "deferred" && outcomes[0].retryAt, NOW + 25_000);
  const reason = outcomes[0].status === "deferred" ? outcomes[0].reason : "";
  assert.match(reason, /^network error: /);
  // `fetch` says only "fetch failed"; the cause says what failed and where.
  assert.match(reason, /connection refused/i);
  assert.ok(reason.includes(`127.0.0.1:${port}`), reason);
  assert.deepEqual(sleeps, [1_000, 5_000]);
});

Deno.test("aborting while a request is in flight → it and the remaining are deferred", async () => {
  const controller = new AbortController();
  const release = gate();
  await using collector = startCollector(async (index) => {
    if (index === 0) return new Response(null, { status: 202 });
    controller.abort();
    await release.opened;
    return new Response(null, { status: 202 });
  });
  const { options } = testOptions(collector.endpoint, { signal: controller.signal });

  const outcomes = await sendPackages(["p1", "p2", "p3"].map((id) => makePackage(id)), options);

  release.open();
  assert.deepEqual(outcomes.map((o) => [o.packageId, o.status]), [
    ["p1", "sent"],
    ["p2", "deferred"],
    ["p3", "deferred"],
  ]);
  assert.equal(collector.received.length, 2, "p3 is never sent");
  for (const outcome of outcomes.slice(1)) {
    assert.equal(outcome.status === "deferred" && outcome.retryAt, NOW);
  }
});

Deno.test("aborting during a backoff wait stops the pass without another request", async () => {
  const controller = new AbortController();
  await using collector = startCollector(statuses(503));
  const sleeps: number[] = [];
  const { options } = testOptions(collector.endpoint, {
    signal: controller.signal,
    sleep: (ms, signal) => {
      sleeps.push(ms);
      assert.equal(signal, controller.signal, "the sleep gets the pass's signal");
      controller.abort();
      return Promise.reject(signal?.reason);
    },
  });

  const outcomes = await sendPackages([makePackage("p1"), makePackage("p2")], options);

  assert.equal(collector.received.length, 1);
  assert.deepEqual(sleeps, [1_000]);
  assert.deepEqual(outcomes.map((o) => o.status), ["deferred", "deferred"]);
});

Deno.test("an already aborted signal sends nothing", async () => {
  await using collector = startCollector(statuses(202));
  const { options } = testOptions(collector.endpoint, { signal: AbortSignal.abort() });

  const outcomes = await sendPackages([makePackage("p1"), makePackage("p2")], options);

  assert.equal(collector.received.length, 0);
  assert.deepEqual(outcomes.map((o) => o.status), ["deferred", "deferred"]);
});

Deno.test("the default sleep really waits and wakes up early on abort", async () => {
  const controller = new AbortController();
  await using collector = startCollector(statuses(503));
  // No injected sleep: the real one would wait ~1 s; abort it after 50 ms.
  const options: SenderOptions = {
    endpoint: collector.endpoint,
    now: () => NOW,
    random: () => 0.5,
    signal: controller.signal,
  };
  const timer = setTimeout(() => controller.abort(), 50);
  const started = performance.now();

  const outcomes = await sendPackages([makePackage("p1")], options);

  clearTimeout(timer);
  assert.ok(performance.now() - started < 900, "the wait was cut short");
  assert.equal(collector.received.length, 1);
  assert.equal(outcomes[0].status, "deferred");
});

Deno.test("a redirect is not followed → deferred", async () => {
  await using collector = startCollector((index) =>
    index === 0
      ? new Response(null, { status: 307, headers: { Location: "/elsewhere" } })
      : new Response(null, { status: 202 })
  );
  const { options } = testOptions(collector.endpoint);

  const outcomes = await sendPackages([makePackage("p1")], options);

  assert.equal(collector.received.length, 1);
  assert.equal(outcomes[0].status, "deferred");
  assert.equal(outcomes[0].status === "deferred" && outcomes[0].retryAt, NOW + 60_000);
});

Deno.test("the User-Agent header is sent when set", async () => {
  await using collector = startCollector(statuses(202));
  const { options } = testOptions(collector.endpoint, { userAgent: "agent-service/0.1.0" });

  await sendPackages([makePackage("p1")], options);

  assert.equal(collector.received[0].headers.get("user-agent"), "agent-service/0.1.0");
});

Deno.test("without userAgent, the User-Agent is agent-service/<version>, not the runtime's default", async () => {
  await using collector = startCollector(statuses(202));
  const { options } = testOptions(collector.endpoint);

  await sendPackages([makePackage("p1")], options);

  assert.equal(collector.received[0].headers.get("user-agent"), `agent-service/${AGENT_VERSION}`);
});

Deno.test("response bodies of every kind are consumed (no leaks) and content never logged", async () => {
  const canary = "CANARY-7f3a-never-log-me";
  await using collector = startCollector((index) =>
    new Response(`server says ${"z".repeat(100_000)}`, {
      status: [500, 202, 400, 429][index],
    })
  );
  const { options } = testOptions(collector.endpoint);
  const logged: unknown[] = [];
  const methods = ["log", "info", "warn", "error", "debug"] as const;
  const originals = methods.map((m) => console[m]);
  for (const m of methods) console[m] = (...args: unknown[]) => logged.push(args);
  let outcomes: SendOutcome[];
  try {
    outcomes = await sendPackages(
      ["p1", "p2", "p3"].map((id) => makePackage(id, 1, canary)),
      options,
    );
  } finally {
    methods.forEach((m, i) => (console[m] = originals[i]));
  }

  assert.deepEqual(outcomes.map((o) => o.status), ["sent", "rejected", "deferred"]);
  assert.deepEqual(logged, []);
  assert.ok(!JSON.stringify(outcomes).includes(canary));
});

Deno.test("validateEndpoint accepts https and loopback http", () => {
  for (
    const url of [
      "https://example.com/x",
      "http://127.0.0.1:9/x",
      "http://127.10.20.30/x",
      "http://[::1]:9/x",
      "http://localhost:9/x",
      "HTTP://LOCALHOST:9/x",
    ]
  ) {
    const result = validateEndpoint(url);
    assert.ok(result.ok, `${url} should be accepted`);
    assert.ok(result.url instanceof URL);
  }
});

Deno.test("validateEndpoint refuses everything else with a reason that says what to set", () => {
  for (
    const url of [
      "http://example.com",
      "http://10.0.0.1",
      "http://192.168.1.5:8080/x",
      "http://[::2]/x",
      "http://localhost.example.com/x",
      "http://128.0.0.1/x",
      "ftp://x",
      "file:///tmp/x",
      "https://user:pw@host/",
      "http://user@127.0.0.1/",
      "not a url",
      "",
    ]
  ) {
    const result = validateEndpoint(url);
    assert.ok(!result.ok, `${url} should be refused`);
    assert.match(result.reason, /telemetry\.shared_metrics\.endpoint/);
    assert.match(result.reason, /https/);
    assert.match(result.reason, /loopback/);
    assert.ok(!result.reason.includes("pw"), "credentials are never echoed");
  }
});

Deno.test("sendPackages throws for an invalid endpoint, before any request", async () => {
  let called = 0;
  const fetch = () => {
    called++;
    return Promise.resolve(new Response(null, { status: 202 }));
  };
  await assert.rejects(
    sendPackages([makePackage("p1")], { endpoint: "http://example.com/", fetch }),
    (error: unknown) =>
      error instanceof TypeError && /telemetry\.shared_metrics\.endpoint/.test(error.message),
  );
  await assert.rejects(
    sendPackages([makePackage("p1")], {
      endpoint: "https://example.com/",
      fetch,
      requestTimeoutMs: 0,
    }),
    RangeError,
  );
  assert.equal(called, 0);
});

Deno.test("an injected fetch gets the endpoint URL, POST and the headers", async () => {
  const seen: { url: string; method?: string; headers: Headers }[] = [];
  const fetch: typeof globalThis.fetch = (input, init) => {
    seen.push({ url: String(input), method: init?.method, headers: new Headers(init?.headers) });
    return Promise.resolve(new Response(null, { status: 202 }));
  };

  const outcomes = await sendPackages([makePackage("p1")], {
    endpoint: "https://metrics.example.com/v2/packages",
    fetch,
  });

  assert.equal(outcomes[0].status, "sent");
  assert.equal(seen.length, 1);
  assert.equal(seen[0].url, "https://metrics.example.com/v2/packages");
  assert.equal(seen[0].method, "POST");
  assert.equal(seen[0].headers.get("content-type"), "application/json");
});
