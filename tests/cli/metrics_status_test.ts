/**
 * `agent metrics status` says who is sending packages right now (process, host, since when) and
 * when the packages waiting after a failed send are tried next, in text and as stable JSON fields.
 */
import assert from "node:assert/strict";
import { hostname } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { MetricsStore } from "../../src/metrics/store.ts";
import { cli, cliJson, enable, NOW, recordEvents, status, tempHome } from "./_helpers.ts";

const MINUTE = 60_000;
const TASK = { kind: "task_started", entrypoint: "api", surface: "api" } as const;

/** A collector answering every POST with 429 and `Retry-After: <seconds>`. */
function busyCollector(retryAfterSeconds: number) {
  let posts = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    await request.arrayBuffer();
    posts++;
    return new Response(null, {
      status: 429,
      headers: { "Retry-After": String(retryAfterSeconds) },
    });
  });
  return {
    endpoint: `http://127.0.0.1:${server.addr.port}/v2/packages`,
    posts: () => posts,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

/** Exports one package per day for the three days up to and including the day of {@linkcode NOW}. */
async function exportThreeDays(home: string): Promise<void> {
  for (const daysAgo of [2, 1, 0]) recordEvents(home, [TASK], NOW - daysAgo * 86_400_000);
  const exported = await cliJson(home, ["metrics", "export", "--json"]);
  assert.equal(exported.packages.length, 3);
}

Deno.test("status shows no sender and nothing waiting when nothing is being sent", async () => {
  await using h = await tempHome();
  const none = await status(h.home); // no store: the fields are there, empty
  assert.deepEqual(none.sending_now, []);
  assert.deepEqual(none.deferred, { packages: 0, next_attempt_at: null, reason: null });
  assert.equal(none.due_now, 0);
  await enable(h.home);
  await exportThreeDays(h.home);
  const doc = await status(h.home);
  assert.deepEqual(doc.sending_now, []);
  assert.deepEqual(doc.deferred, { packages: 0, next_attempt_at: null, reason: null });
  assert.equal(doc.due_now, 3);
  const text = await cli(h.home, ["metrics", "status"]);
  assert.doesNotMatch(text.stdout, /Sending now|Waiting|Due now/, "sending is off");
});

Deno.test("status names a live send claim: this process on this host since when", async () => {
  await using h = await tempHome();
  await enable(h.home);
  await exportThreeDays(h.home);
  await enable(h.home, "--send", "--endpoint", "http://127.0.0.1:9/v2");
  const claimedAt = NOW + MINUTE + 5_000; // 12:01:05
  {
    using store = MetricsStore.open(join(h.metrics, "metrics.sqlite3"));
    assert.equal(store.claimDuePackages(claimedAt, 15 * MINUTE).length, 3);
  }
  const now = claimedAt + 3 * MINUTE;
  const doc = await cliJson(h.home, ["metrics", "status", "--json"], 0, { now });
  assert.deepEqual(doc.sending_now, [{
    pid: Deno.pid,
    host: hostname().replace(/\s/g, "_"),
    this_host: true,
    since: "2026-03-10T12:01:05.000Z",
    packages: 3,
  }]);
  assert.deepEqual(doc.deferred, { packages: 0, next_attempt_at: null, reason: null });
  assert.equal(doc.due_now, 0);
  const text = await cli(h.home, ["metrics", "status"], { now });
  assert.equal(text.code, 0, text.stderr);
  assert.match(
    text.stdout,
    new RegExp(
      `^Sending now: {3}process ${Deno.pid} on this host since 12:01:05 UTC \\(3 packages\\)$`,
      "m",
    ),
  );
  // Past the claim's lease it is no longer "sending now": the packages are due again.
  const later = await cliJson(h.home, ["metrics", "status", "--json"], 0, {
    now: claimedAt + 16 * MINUTE,
  });
  assert.deepEqual(later.sending_now, []);
  assert.equal(later.due_now, 3);
});

Deno.test("status names a claim of another host by its host name, and an older version's claim", async () => {
  await using h = await tempHome();
  await enable(h.home);
  await exportThreeDays(h.home);
  const claimedAt = Date.UTC(2026, 2, 9, 23, 59, 10); // the day before
  const db = new DatabaseSync(join(h.metrics, "metrics.sqlite3"));
  try {
    const ids = db.prepare("SELECT package_id FROM packages ORDER BY day").all()
      .map((row) => String(row.package_id));
    const claim = db.prepare(
      "UPDATE packages SET last_result = ?, next_attempt_at = ? WHERE package_id = ?",
    );
    claim.run(`sending build-box 4242 ${claimedAt}`, NOW + 10 * MINUTE, ids[0]);
    claim.run(`sending build-box 4242 ${claimedAt + 1000}`, NOW + 10 * MINUTE, ids[1]);
    claim.run("sending", NOW + 10 * MINUTE, ids[2]); // written by a version before pids
  } finally {
    db.close();
  }
  const doc = await status(h.home);
  assert.deepEqual(doc.sending_now, [
    { pid: null, host: null, this_host: false, since: null, packages: 1 },
    {
      pid: 4242,
      host: "build-box",
      this_host: false,
      since: "2026-03-09T23:59:10.000Z",
      packages: 2,
    },
  ]);
  const text = await cli(h.home, ["metrics", "status"]);
  const lines = text.stdout.split("\n").filter((line) => line.startsWith("Sending now:"));
  assert.deepEqual(lines, [
    "Sending now:   an agent process of an older version (1 package)",
    "Sending now:   process 4242 on host build-box since 2026-03-09 23:59:10 UTC (2 packages)",
  ]);
});

Deno.test("status says how many packages wait after a deferral and when the next attempt is", async () => {
  await using h = await tempHome();
  await using collector = busyCollector(14 * 60);
  await enable(h.home);
  await exportThreeDays(h.home);
  await enable(h.home, "--send", "--endpoint", collector.endpoint);
  const sent = await cli(h.home, ["metrics", "send"]);
  assert.equal(sent.code, 1, sent.stdout + sent.stderr);
  assert.equal(collector.posts(), 1, "a 429 stops the pass: the others are deferred untried");

  const now = NOW + MINUTE;
  const doc = await cliJson(h.home, ["metrics", "status", "--json"], 0, { now });
  assert.deepEqual(doc.sending_now, []);
  assert.deepEqual(doc.deferred, {
    packages: 3,
    next_attempt_at: "2026-03-10T12:14:00.000Z",
    reason: "HTTP 429: the endpoint asked to wait 840 s",
  });
  assert.equal(doc.due_now, 0);
  const text = await cli(h.home, ["metrics", "status"], { now });
  assert.match(
    text.stdout,
    /^Waiting: {7}3 packages to send; next attempt at 2026-03-10 12:14 UTC \(in 13 min\); last attempt: HTTP 429: the endpoint asked to wait 840 s$/m,
  );
  assert.doesNotMatch(text.stdout, /Due now/);

  // A short wait is said to the nearest, as `agent webhook events` says one, never rounded up.
  const attemptAt = NOW + 14 * MINUTE;
  for (
    const [left, said] of [[200, "0.2 s"], [44_200, "44.2 s"], [89_500, "1 min"]] as const
  ) {
    const soon = await cli(h.home, ["metrics", "status"], { now: attemptAt - left });
    assert.match(soon.stdout, new RegExp(`next attempt at 2026-03-10 12:14 UTC \\(in ${said}\\);`));
  }

  // Once the wait is over they are due, not waiting.
  const due = await cli(h.home, ["metrics", "status"], { now: NOW + 15 * MINUTE });
  assert.doesNotMatch(due.stdout, /Waiting/);
  assert.match(
    due.stdout,
    /^Due now: {7}3 packages; the next `agent metrics send`, agent run or gateway pass sends them$/m,
  );

  // With sending off, no attempt is announced.
  assert.equal((await cli(h.home, ["metrics", "disable"])).code, 0);
  const off = await cli(h.home, ["metrics", "status"], { now });
  assert.match(
    off.stdout,
    /^Waiting: {7}3 packages to send; none is tried while sending is off; last attempt: HTTP 429/m,
  );
  assert.doesNotMatch(off.stdout, /Due now/);
});
