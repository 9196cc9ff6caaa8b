/**
 * `agent webhook events` and `redeliver` while no gateway serves the home: an event whose run or
 * delivery the gone gateway was doing is shown as interrupted (not as running), a delivery
 * waiting for its retry as waiting for a gateway; while a gateway holds the home's lock, as stored.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { lockGatewayHome } from "../../src/gateway/home_lock.ts";
import { Inbox } from "../../src/gateway/inbox.ts";
import { cli, NOW, parseOneJson, tempHome } from "./_helpers.ts";

const PLAN = { deliver: "slack", deliverExtra: { chat_id: "C1" }, skills: [] };

/**
 * An inbox with one event in each unfinished shape, oldest first: running, delivering (taken by
 * a worker), delivering (waiting for its retry in 90 s), queued, and a done one.
 */
function pendingInbox(home: string): Record<string, string> {
  using inbox = Inbox.open(join(home, "gateway", "inbox.sqlite3"));
  const add = (deliveryId: string) =>
    inbox.enqueue(
      { route: "ci", event: "push", deliveryId, payload: {}, prompt: "p", plan: PLAN },
      NOW - 60_000,
    );
  const ids: Record<string, string> = {};
  ids.running = add("d-running");
  inbox.take(NOW - 60_000);
  ids.delivering = add("d-delivering");
  inbox.take(NOW - 60_000);
  inbox.finishRun(ids.delivering, { answer: "a", endReason: "completed", deliver: true }, NOW);
  ids.retry = add("d-retry");
  inbox.take(NOW - 60_000);
  inbox.finishRun(ids.retry, { answer: "a", endReason: "completed", deliver: true }, NOW);
  inbox.recordDelivery(ids.retry, { ok: false, error: "HTTP 503", retryAt: NOW + 90_000 }, NOW);
  ids.done = add("d-done");
  inbox.take(NOW - 60_000);
  inbox.finishRun(ids.done, { answer: "[SILENT]", endReason: "completed", deliver: false }, NOW);
  ids.queued = add("d-queued");
  return ids;
}

interface EventJson {
  id: string;
  state: string;
  interrupted: boolean;
  [key: string]: unknown;
}

async function eventsJson(home: string): Promise<Record<string, EventJson>> {
  const result = await cli(home, ["webhook", "events", "--json"]);
  assert.equal(result.code, 0, result.stderr);
  const { events } = parseOneJson(result.stdout) as { events: EventJson[] };
  return Object.fromEntries(events.map((event) => [event.id, event]));
}

/** The first line of the event's block in the text listing. */
function headLine(stdout: string, id: string): string {
  const line = stdout.split("\n").find((line) => line.startsWith(`${id}  `));
  assert.ok(line, `no line for ${id} in:\n${stdout}`);
  return line;
}

/** The lines of the event's block in the text listing. */
function block(stdout: string, id: string): string {
  const start = stdout.indexOf(`${id}  `);
  assert.ok(start >= 0, `no block for ${id} in:\n${stdout}`);
  const next = stdout.slice(start + 1).search(/\n\S/);
  return next < 0 ? stdout.slice(start) : stdout.slice(start, start + 1 + next + 1);
}

for (
  const [name, setUp] of [
    ["never ran (no lock file)", (_home: string) => {}],
    ["stopped (lock file left, free)", async (home: string) => {
      const lock = await lockGatewayHome(join(home, "gateway", "inbox.sqlite3.lock"));
      lock.close();
    }],
  ] as const
) {
  Deno.test(`events with no gateway running (${name}): running and taken deliveries are interrupted`, async () => {
    await using h = await tempHome();
    const ids = pendingInbox(h.home);
    await setUp(h.home);

    const text = await cli(h.home, ["webhook", "events"]);
    assert.equal(text.code, 0, text.stderr);
    assert.equal(
      headLine(text.stdout, ids.running),
      `${ids.running}  interrupted (was running; the next \`agent gateway run\` resumes it)  ` +
        "ci (push)",
    );
    assert.equal(
      headLine(text.stdout, ids.delivering),
      `${ids.delivering}  interrupted (was delivering; the next \`agent gateway run\` resumes ` +
        "it)  ci (push)",
    );
    assert.doesNotMatch(block(text.stdout, ids.delivering), /next try/);
    // Waiting for its retry: not cut off, but nothing tries it while no gateway runs.
    assert.equal(headLine(text.stdout, ids.retry), `${ids.retry}  delivering  ci (push)`);
    assert.match(block(text.stdout, ids.retry), /next try: {4}in 90 s, if a gateway runs then\n/);
    assert.equal(headLine(text.stdout, ids.queued), `${ids.queued}  queued  ci (push)`);
    assert.equal(headLine(text.stdout, ids.done), `${ids.done}  done  ci (push)`);
    assert.match(
      text.stdout,
      /\nNo gateway is running on this home: the events above that are not finished wait for the next `agent gateway run`\.\n$/,
    );

    const json = await eventsJson(h.home);
    assert.deepEqual(
      Object.values(json).map((event) => [event.id, event.state, event.interrupted]),
      [
        [ids.queued, "queued", false],
        [ids.done, "done", false],
        [ids.retry, "delivering", false],
        [ids.delivering, "delivering", true],
        [ids.running, "running", true],
      ],
    );

    const redo = await cli(h.home, ["webhook", "redeliver", ids.running]);
    assert.equal(redo.code, 1);
    assert.match(
      redo.stderr,
      /not requeued: it was running when the gateway stopped; the next `agent gateway run` resumes it \(only done or failed events, and deliveries waiting for a retry, are requeued\)/,
    );
  });
}

Deno.test("events while a gateway holds the home's lock: running and delivering as stored, not interrupted", async () => {
  await using h = await tempHome();
  const ids = pendingInbox(h.home);
  const lock = await lockGatewayHome(join(h.home, "gateway", "inbox.sqlite3.lock"));
  try {
    const text = await cli(h.home, ["webhook", "events"]);
    assert.equal(text.code, 0, text.stderr);
    assert.doesNotMatch(text.stdout, /interrupted|No gateway is running|if a gateway runs/);
    assert.equal(headLine(text.stdout, ids.running), `${ids.running}  running  ci (push)`);
    assert.equal(
      headLine(text.stdout, ids.delivering),
      `${ids.delivering}  delivering  ci (push)`,
    );
    assert.match(block(text.stdout, ids.retry), /next try: {4}in 90 s\n/);
    const json = await eventsJson(h.home);
    assert.deepEqual(Object.values(json).map((event) => event.interrupted), [
      false,
      false,
      false,
      false,
      false,
    ]);
    const redo = await cli(h.home, ["webhook", "redeliver", ids.running]);
    assert.match(redo.stderr, /not requeued: it is running already/);
  } finally {
    lock.close();
  }
});

Deno.test("redeliver of a delivery waiting for its retry makes it due now, --json too; one the gateway is sending, or due already, is refused; --failed leaves them", async () => {
  await using h = await tempHome();
  const ids = pendingInbox(h.home);
  const lock = await lockGatewayHome(join(h.home, "gateway", "inbox.sqlite3.lock"));
  try {
    // --failed takes the failed events only: a delivery waiting for its retry is not one.
    const failed = await cli(h.home, ["webhook", "redeliver", "--failed", "--json"]);
    assert.equal(failed.code, 0, failed.stderr);
    assert.deepEqual(parseOneJson(failed.stdout).requeued, []);

    const redo = await cli(h.home, ["webhook", "redeliver", ids.retry]);
    assert.equal(redo.code, 0, redo.stderr);
    assert.equal(
      redo.stdout,
      `event ${ids.retry} (ci, push, delivery d-retry): its delivery to slack was waiting for a ` +
        "retry in 90 s; it is due now, its tries start again, and the parts already sent are " +
        "skipped\nA running gateway picks this up within 5 s; otherwise it happens at the next " +
        "`agent gateway run`.\n",
    );
    assert.equal(redo.stderr, "");
    const retry = (await eventsJson(h.home))[ids.retry];
    assert.deepEqual(
      [retry.state, retry.next_attempt_at, retry.delivery_attempts, retry.deliver],
      ["delivering", new Date(NOW).toISOString().replace(".000Z", "Z"), 0, "slack"],
    );

    // Due now, not taken yet: redelivering it again changes nothing.
    const again = await cli(h.home, ["webhook", "redeliver", ids.retry]);
    assert.equal(again.code, 1);
    assert.equal(
      again.stderr,
      `event ${ids.retry} (ci, push, delivery d-retry): not requeued: it is delivering already ` +
        "and due now: a running gateway sends it within 5 s, a stopped one at its next " +
        "`agent gateway run`\n",
    );
    // A worker of the running gateway holds this one: its attempt is under way.
    const held = await cli(h.home, ["webhook", "redeliver", ids.delivering]);
    assert.equal(held.code, 1);
    assert.equal(
      held.stderr,
      `event ${ids.delivering} (ci, push, delivery d-delivering): not requeued: the gateway is ` +
        "delivering it to slack right now; once that attempt is over, `agent webhook events` " +
        "shows how it went (a failed attempt waits for a retry, which redeliver can make due " +
        "now)\n",
    );
  } finally {
    lock.close();
  }

  // --json, on a fresh inbox: the waiting one requeued (and what it was), the held one refused.
  await using j = await tempHome();
  const jids = pendingInbox(j.home);
  const lockJ = await lockGatewayHome(join(j.home, "gateway", "inbox.sqlite3.lock"));
  try {
    const json = await cli(j.home, [
      "webhook",
      "redeliver",
      jids.retry,
      jids.delivering,
      "--json",
    ]);
    assert.equal(json.code, 1);
    const document = parseOneJson(json.stdout);
    assert.deepEqual(document.requeued, [{
      id: jids.retry,
      route: "ci",
      delivery_id: "d-retry",
      state: "delivering",
      previous_state: "delivering",
    }]);
    assert.deepEqual(
      (document.refused as { id: string; reason: string }[]).map((r) => [r.id, r.reason]),
      [[
        jids.delivering,
        "the gateway is delivering it to slack right now; once that attempt is over, " +
        "`agent webhook events` shows how it went (a failed attempt waits for a retry, which " +
        "redeliver can make due now)",
      ]],
    );
  } finally {
    lockJ.close();
  }
});

Deno.test("events --json keeps every field it had, adding interrupted", async () => {
  await using h = await tempHome();
  const ids = pendingInbox(h.home);
  const json = await eventsJson(h.home);
  assert.deepEqual(Object.keys(json).sort(), Object.values(ids).sort(), "every event is listed");
  for (const event of Object.values(json)) {
    assert.deepEqual(Object.keys(event), [
      "id",
      "route",
      "event",
      "delivery_id",
      "deliver",
      "state",
      "run_attempts",
      "delivery_attempts",
      "parts_sent",
      "end_reason",
      "error",
      "created_at",
      "updated_at",
      "next_attempt_at",
      "interrupted",
    ]);
  }
});

Deno.test("events says the time to the next try as the retry log line says a wait, not rounded up", async () => {
  await using h = await tempHome();
  const ids: Record<number, string> = {};
  {
    using inbox = Inbox.open(join(h.home, "gateway", "inbox.sqlite3"));
    for (const left of [200, 61_000, 89_766, 3_600_000]) {
      const id = inbox.enqueue(
        {
          route: "ci",
          event: "push",
          deliveryId: `d-${left}`,
          payload: {},
          prompt: "p",
          plan: PLAN,
        },
        NOW - 60_000,
      );
      inbox.take(NOW - 60_000);
      inbox.finishRun(id, { answer: "a", endReason: "completed", deliver: true }, NOW);
      inbox.recordDelivery(id, { ok: false, error: "HTTP 503", retryAt: NOW + left }, NOW);
      ids[left] = id;
    }
  }
  const lock = await lockGatewayHome(join(h.home, "gateway", "inbox.sqlite3.lock"));
  try {
    const text = await cli(h.home, ["webhook", "events"]);
    assert.equal(text.code, 0, text.stderr);
    // The worker logs delivery_retry_seconds: 0.2 as "the next one in 0.2 s".
    assert.match(block(text.stdout, ids[200]), /next try: {4}in 0\.2 s\n/);
    assert.match(block(text.stdout, ids[61_000]), /next try: {4}in 61 s\n/);
    assert.match(block(text.stdout, ids[89_766]), /next try: {4}in 89\.8 s\n/);
    assert.match(block(text.stdout, ids[3_600_000]), /next try: {4}in 3600 s\n/);
  } finally {
    lock.close();
  }
});

Deno.test("events --route and redeliver --failed --route take a name as subscribe does: any case, spaces as '-'", async () => {
  await using h = await tempHome();
  {
    using inbox = Inbox.open(join(h.home, "gateway", "inbox.sqlite3"));
    const enqueue = (deliveryId: string) =>
      inbox.enqueue({
        route: "github-issues",
        event: "issues",
        deliveryId,
        payload: {},
        prompt: "p",
        plan: PLAN,
      }, NOW - 60_000);
    enqueue("d-queued");
    const failed = enqueue("d-failed");
    inbox.take(NOW - 60_000);
    inbox.take(NOW - 60_000);
    inbox.finishRun(failed, { answer: "a", endReason: "completed", deliver: true }, NOW);
    inbox.recordDelivery(failed, { ok: false, error: "HTTP 403" }, NOW);
  }
  // `subscribe "GitHub Issues"` made the route github-issues; the same words find its events.
  for (const route of ["GitHub-Issues", " GitHub Issues "]) {
    const listed = await cli(h.home, ["webhook", "events", "--route", route, "--json"]);
    assert.equal(listed.code, 0, listed.stderr);
    const { events } = parseOneJson(listed.stdout) as { events: EventJson[] };
    assert.equal(events.length, 2, `events --route ${JSON.stringify(route)}`);
  }
  const text = await cli(h.home, ["webhook", "events", "--route", "Nope"]);
  assert.equal(text.code, 0, text.stderr);
  assert.equal(text.stdout, "No events of route 'nope'.\n");
  const redeliver = await cli(h.home, [
    ...["webhook", "redeliver", "--failed", "--route", "GitHub-Issues", "--json"],
  ]);
  assert.equal(redeliver.code, 0, redeliver.stderr);
  const { requeued } = parseOneJson(redeliver.stdout) as { requeued: { delivery_id: string }[] };
  assert.deepEqual(requeued.map((event) => event.delivery_id), ["d-failed"]);
  // A name no route can have is a usage error, as for `webhook test` and `remove`.
  const bad = await cli(h.home, ["webhook", "events", "--route", "a/b"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /^agent: --route: invalid subscription name "a\/b"/);
});
