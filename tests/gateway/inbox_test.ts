/** The durable inbox: claims, the event life cycle, recovery after a crash, file modes. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import {
  COUNTS_SQL,
  EMPTY_ANSWER,
  type EventState,
  Inbox,
  listSql,
  type NewEvent,
  NEXT_DUE_SQL,
  PRUNE_EVENTS_SQL,
  timeOrderedId,
} from "../../src/gateway/inbox.ts";

async function withInbox(work: (inbox: Inbox, path: string) => void | Promise<void>) {
  const dir = await Deno.makeTempDir();
  const path = join(dir, "gateway", "inbox.sqlite3");
  const inbox = Inbox.open(path);
  try {
    await work(inbox, path);
  } finally {
    inbox.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/** A path for an inbox in a fresh temp folder, removed afterwards. */
async function withInboxPath(work: (path: string) => void | Promise<void>) {
  const dir = await Deno.makeTempDir();
  try {
    await work(join(dir, "inbox.sqlite3"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function event(deliveryId: string, route = "github"): NewEvent {
  return {
    route,
    event: "issues",
    deliveryId,
    payload: { issue: { number: 7 } },
    prompt: `prompt ${deliveryId}`,
    plan: { deliver: "telegram", deliverExtra: { chat_id: "42" }, skills: ["triage"] },
  };
}

Deno.test("claims: one per route and delivery id until the TTL ends; release frees it", async () => {
  await withInbox((inbox) => {
    assert.equal(inbox.claim("github", "d1", 1000, 500), true);
    assert.equal(inbox.claim("github", "d1", 1200, 500), false, "live claim → duplicate");
    assert.equal(inbox.claim("gitlab", "d1", 1200, 500), true, "claims are per route");
    assert.equal(inbox.claim("github", "d1", 1500, 500), true, "expired claim is taken over");
    assert.equal(inbox.claim("github", "d1", 1600, 500), false);
    inbox.release("github", "d1");
    assert.equal(inbox.claim("github", "d1", 1700, 500), true, "released claim is free");
  });
});

Deno.test("life cycle: queued → running → delivering → done, with the plan kept", async () => {
  await withInbox((inbox) => {
    const id = inbox.enqueue(event("d1"), 10);
    assert.deepEqual(inbox.counts(), { queued: 1, running: 0, delivering: 0, done: 0, failed: 0 });
    const taken = inbox.take(10)!;
    assert.equal(taken.id, id);
    assert.equal(taken.state, "running");
    assert.equal(taken.runAttempts, 1);
    assert.deepEqual(taken.plan, event("d1").plan);
    assert.deepEqual(taken.payload, { issue: { number: 7 } });
    assert.equal(inbox.take(10), undefined, "a running event is not taken twice");
    inbox.finishRun(id, { answer: "done!", endReason: "completed", deliver: true }, 20);
    assert.equal(inbox.get(id)!.state, "delivering");
    assert.equal(inbox.take(20), undefined, "the worker that ran it delivers it: not handed out");
    inbox.recordDelivery(id, { ok: false, error: "HTTP 500", retryAt: 100 }, 30);
    assert.equal(inbox.take(50), undefined, "not due before retryAt");
    assert.equal(inbox.nextDueAt(), 100);
    const delivering = inbox.take(100)!;
    assert.equal(delivering.state, "delivering");
    assert.equal(delivering.answer, "done!");
    assert.equal(delivering.runAttempts, 1, "delivery does not run the agent again");
    assert.equal(inbox.take(100), undefined, "a delivery under way is not handed out twice");
    inbox.recordDelivery(id, { ok: true }, 100);
    assert.equal(inbox.get(id)!.state, "done");
    assert.equal(inbox.get(id)!.deliveryAttempts, 2);
    assert.equal(inbox.nextDueAt(), undefined);
  });
});

Deno.test("a delivery that gives up is failed with its error; a silent run is done at once", async () => {
  await withInbox((inbox) => {
    const failing = inbox.enqueue(event("d1"), 0);
    inbox.take(0);
    inbox.finishRun(failing, { answer: "x", endReason: "completed", deliver: true }, 0);
    inbox.recordDelivery(failing, { ok: false, error: "chat not found" }, 1);
    assert.equal(inbox.get(failing)!.state, "failed");
    assert.equal(inbox.get(failing)!.error, "chat not found");
    const silent = inbox.enqueue(event("d2"), 0);
    inbox.take(0);
    inbox.finishRun(silent, { answer: "[SILENT]", endReason: "completed", deliver: false }, 0);
    assert.equal(inbox.get(silent)!.state, "done");
  });
});

Deno.test("recover: unfinished runs are queued again, deliveries resume without a rerun", async () => {
  await withInbox((inbox, path) => {
    const a = inbox.enqueue(event("a"), 0);
    const b = inbox.enqueue(event("b"), 1);
    inbox.take(5); // a running
    inbox.take(5); // b running
    inbox.finishRun(b, { answer: "B", endReason: "completed", deliver: true }, 6);
    inbox.close();
    // A new process opens the same file after a crash.
    const reopened = Inbox.open(path);
    try {
      assert.equal(reopened.recover(10).requeued, 1);
      const first = reopened.take(10)!;
      const second = reopened.take(10)!;
      const byId = new Map([first, second].map((e) => [e.id, e]));
      assert.equal(byId.get(a)!.state, "running");
      assert.equal(byId.get(a)!.runAttempts, 2);
      assert.equal(byId.get(b)!.state, "delivering");
      assert.equal(byId.get(b)!.answer, "B");
      assert.equal(reopened.take(10), undefined);
    } finally {
      reopened.close();
    }
  });
});

Deno.test("recover: a run interrupted 3 times is not run again; a notice is to be delivered", async () => {
  await withInbox((inbox) => {
    const id = inbox.enqueue(event("poison"), 0);
    for (const now of [1, 2]) {
      assert.equal(inbox.take(now)?.state, "running");
      assert.deepEqual(inbox.recover(now), { requeued: 1, abandoned: [], freedClaims: 0 });
    }
    assert.equal(inbox.take(3)?.runAttempts, 3);
    assert.deepEqual(inbox.recover(4), {
      requeued: 0,
      abandoned: [{ id, deliveryId: "poison" }],
      freedClaims: 0,
    });
    const notice = inbox.take(4)!;
    assert.deepEqual(
      [notice.id, notice.state, notice.endReason, notice.runAttempts],
      [id, "delivering", "interrupted", 3],
    );
    assert.equal(
      notice.answer,
      "The agent run for github (issues, delivery poison) was interrupted 3 times by a crash " +
        "or kill of the gateway; it is not run again.",
    );
  });
});

Deno.test("putBack: a run a clean stop cut off is queued again in its place, not counted; a crash still is", async () => {
  await withInbox((inbox) => {
    const id = inbox.enqueue(event("long"), 0);
    const later = inbox.enqueue(event("later"), 1);
    for (const now of [2, 3, 4, 5]) {
      assert.equal(inbox.take(now)?.id, id, "taken before the event accepted after it");
      assert.equal(inbox.putBack(id, now), 0);
      assert.deepEqual(inbox.recover(now), { requeued: 0, abandoned: [], freedClaims: 0 });
    }
    assert.deepEqual([inbox.get(id)?.state, inbox.get(id)?.runAttempts], ["queued", 0]);
    // The other event runs meanwhile.
    assert.deepEqual([inbox.take(5)?.id, inbox.take(5)?.id], [id, later]);
    inbox.finishRun(later, { answer: "[SILENT]", endReason: "completed", deliver: false }, 5);
    assert.equal(inbox.putBack(id, 5), 0);
    // Crashes during its run count as before: the third one and it is not run again.
    for (const now of [6, 7]) {
      assert.equal(inbox.take(now)?.id, id);
      assert.deepEqual(inbox.recover(now), { requeued: 1, abandoned: [], freedClaims: 0 });
    }
    assert.equal(inbox.take(8)?.runAttempts, 3);
    assert.equal(inbox.putBack(id, 8), 2, "two crashes so far; this stop is not one");
    assert.equal(inbox.take(9)?.runAttempts, 3);
    assert.deepEqual(inbox.recover(10).abandoned, [{ id, deliveryId: "long" }]);
    // Only a running event is put back.
    assert.equal(inbox.putBack(later, 11), undefined);
    assert.equal(inbox.get(later)?.state, "done");
    assert.equal(inbox.putBack(id, 11), undefined);
    assert.equal(inbox.get(id)?.state, "delivering");
  });
});

Deno.test("recover: a delivery waiting for its retry keeps its time; a held one is due at once", async () => {
  await withInbox((inbox, path) => {
    const waiting = inbox.enqueue(event("waiting"), 0);
    const held = inbox.enqueue(event("held"), 1);
    for (const id of [inbox.take(5)!.id, inbox.take(5)!.id]) {
      inbox.finishRun(id, { answer: "A", endReason: "completed", deliver: true }, 6);
    }
    // The first delivery failed and waits 5 minutes; the second was being sent when the process died.
    inbox.recordDelivery(waiting, { ok: false, error: "HTTP 503", retryAt: 300_000 }, 7);
    inbox.close();
    const reopened = Inbox.open(path);
    try {
      reopened.recover(10);
      assert.equal(reopened.take(10)?.id, held);
      assert.equal(reopened.take(10), undefined, "the retry is not due before its time");
      assert.equal(reopened.get(waiting)!.nextAttemptAt, 300_000);
      assert.equal(reopened.take(300_000)?.id, waiting);
    } finally {
      reopened.close();
    }
  });
});

Deno.test("recordDelivery keeps how many parts went out, never fewer than before", async () => {
  await withInbox((inbox) => {
    const id = inbox.enqueue(event("parts"), 0);
    inbox.take(0);
    inbox.finishRun(id, { answer: "long", endReason: "completed", deliver: true }, 0);
    assert.equal(inbox.get(id)!.partsSent, 0);
    inbox.recordDelivery(id, { ok: false, error: "HTTP 500", retryAt: 5, partsSent: 2 }, 1);
    const retry = inbox.take(5)!;
    assert.deepEqual([retry.id, retry.partsSent, retry.deliveryAttempts], [id, 2, 1]);
    // A failure that reports nothing sent (say, the token was revoked) does not resend parts.
    inbox.recordDelivery(id, { ok: false, error: "HTTP 401", retryAt: 9 }, 6);
    assert.equal(inbox.get(id)!.partsSent, 2);
  });
});

Deno.test("a released claim can keep how many parts of which message went out", async () => {
  await withInbox((inbox) => {
    assert.ok(inbox.claim("r", "d1", 0, 1000));
    assert.equal(inbox.partsDelivered("r", "d1", "key-a"), 0);
    inbox.release("r", "d1", { messageKey: "key-a", partsSent: 2, atMs: 0 });
    // Released: the sender's retry takes the claim again, and finds the progress.
    assert.ok(inbox.claim("r", "d1", 1, 1000));
    assert.equal(inbox.partsDelivered("r", "d1", "key-a"), 2);
    assert.equal(inbox.partsDelivered("r", "d1", "key-b"), 0, "another message starts at 0");
    assert.equal(inbox.partsDelivered("r", "d2", "key-a"), 0, "another delivery id too");
    assert.equal(inbox.claim("r", "d1", 2, 1000), false, "taken again: a duplicate meanwhile");
    inbox.settle("r", "d1");
    assert.equal(inbox.partsDelivered("r", "d1", "key-a"), 0);
    // Without progress (or with none sent), a release forgets the claim.
    inbox.release("r", "d1", { messageKey: "key-a", partsSent: 0, atMs: 2 });
    assert.ok(inbox.claim("r", "d1", 3, 1000));
    assert.equal(inbox.partsDelivered("r", "d1", "key-a"), 0);
  });
});

Deno.test("the inbox folder is 0700 and its files 0600", async () => {
  await withInbox((inbox, path) => {
    inbox.enqueue(event("d1"), 0);
    assert.equal(Deno.statSync(join(path, "..")).mode! & 0o777, 0o700);
    assert.equal(Deno.statSync(path).mode! & 0o777, 0o600);
  });
});

Deno.test("prune removes expired claims and old finished events only", async () => {
  await withInbox(async (inbox, path) => {
    inbox.claim("r", "old", 0, 10);
    inbox.claim("r", "live", 0, 1000);
    const done = inbox.enqueue(event("x"), 0);
    inbox.take(0);
    inbox.finishRun(done, { answer: "", endReason: "completed", deliver: false }, 0);
    const queued = inbox.enqueue(event("y"), 0);
    await inbox.prune(500, 100);
    // An expired claim is taken over by claim() whether or not it is still stored: look.
    inbox.commit();
    const db = new DatabaseSync(path, { readOnly: true });
    try {
      const rows = db.prepare("SELECT delivery_id FROM claims ORDER BY delivery_id").all();
      assert.deepEqual(rows.map((row) => row.delivery_id), ["live"]);
    } finally {
      db.close();
    }
    assert.equal(inbox.claim("r", "old", 500, 10), true);
    assert.equal(inbox.claim("r", "live", 500, 10), false);
    assert.equal(inbox.get(done), undefined);
    assert.ok(inbox.get(queued));
  });
});

Deno.test("prune keeps a released claim's delivery progress as long as finished events", async () => {
  await withInbox(async (inbox, path) => {
    const claimed = () => {
      inbox.commit();
      const db = new DatabaseSync(path, { readOnly: true });
      try {
        const rows = db.prepare("SELECT delivery_id FROM claims ORDER BY delivery_id").all();
        return rows.map((row) => row.delivery_id);
      } finally {
        db.close();
      }
    };
    assert.ok(inbox.claim("r", "d1", 0, 10));
    inbox.release("r", "d1", { messageKey: "k", partsSent: 2, atMs: 5 });
    assert.ok(inbox.claim("r", "plain", 0, 10));
    await inbox.prune(50, 100); // both expired; only the one without progress goes
    assert.deepEqual(claimed(), ["d1"]);
    assert.equal(inbox.partsDelivered("r", "d1", "k"), 2);
    await inbox.prune(200, 100); // released at 5: more than 100 ago
    assert.deepEqual(claimed(), []);
  });
});

/** What {@linkcode fillForPrune} writes that a prune at 100 000 keeping 50 000 deletes. */
const PRUNED = { events: 1200, claims: 750 };

/**
 * Writes, on a connection of its own, finished events and claims of which a prune at 100 000
 * keeping 50 000 deletes {@linkcode PRUNED}: 1200 events finished at 10 000 (done and failed),
 * 700 claims expired at 1 000 and 50 holding a failed direct delivery's progress since 10 000;
 * and what it keeps: 300 events finished at 60 000, 80 old ones not finished, 200 live claims
 * and 50 holding progress since 80 000.
 */
function fillForPrune(path: string): void {
  const db = new DatabaseSync(path);
  try {
    db.exec("BEGIN");
    const insert = db.prepare(
      `INSERT INTO events (id, route, event, delivery_id, payload, prompt, plan, state,
         created_at, updated_at, next_attempt_at)
       VALUES (?, 'r', 'e', ?, '{}', 'p', '{"deliver":"log","deliverExtra":{},"skills":[]}', ?,
         ?, ?, ?)`,
    );
    const rows: [EventState, number][] = [
      ...Array.from({ length: 1200 }, (_, i): [EventState, number] => [
        i % 3 ? "done" : "failed",
        10_000,
      ]),
      ...Array.from({ length: 300 }, (_, i): [EventState, number] => [
        i % 3 ? "done" : "failed",
        60_000,
      ]),
      ...Array.from({ length: 80 }, (_, i): [EventState, number] => [
        (["queued", "running", "delivering"] as const)[i % 3],
        10_000,
      ]),
    ];
    // Interleaved by id, as a real inbox has them.
    rows.sort((a, b) => (a[0] + a[1]).localeCompare(b[0] + b[1]));
    rows.forEach(([state, at], i) => {
      const id = `e${String(i).padStart(5, "0")}`;
      insert.run(id, `d-${id}`, state, at - 100, at, at);
    });
    const claim = db.prepare(
      "INSERT INTO claims (route, delivery_id, expires_at, parts_sent, message_key) VALUES (?, ?, ?, ?, ?)",
    );
    const claims: [number, string | null][] = [
      ...Array.from({ length: 700 }, (): [number, string | null] => [1_000, null]),
      ...Array.from({ length: 50 }, (): [number, string | null] => [10_000, "k"]),
      ...Array.from({ length: 200 }, (): [number, string | null] => [200_000, null]),
      ...Array.from({ length: 50 }, (): [number, string | null] => [80_000, "k"]),
    ];
    claims.forEach(([expires, key], i) => {
      // Keys in an order unrelated to expiry.
      const id = `c${String((i * 7919) % claims.length).padStart(5, "0")}`;
      claim.run(i % 2 ? "github" : "gitlab", id, expires, key ? 2 : 0, key);
    });
    db.exec("COMMIT");
  } finally {
    db.close();
  }
}

/** How many of what {@linkcode fillForPrune} wrote are left, as another connection sees it. */
function leftAfterPrune(path: string) {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const count = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
    return {
      oldEvents: count(
        "SELECT COUNT(*) AS n FROM events WHERE state IN ('done', 'failed') AND updated_at = 10000",
      ),
      expiredClaims: count(
        "SELECT COUNT(*) AS n FROM claims WHERE expires_at IN (1000, 10000)",
      ),
      kept: {
        recentEvents: count("SELECT COUNT(*) AS n FROM events WHERE updated_at = 60000"),
        waitingOrRunning: count(
          "SELECT COUNT(*) AS n FROM events WHERE state NOT IN ('done', 'failed')",
        ),
        claims: count("SELECT COUNT(*) AS n FROM claims WHERE expires_at IN (80000, 200000)"),
      },
    };
  } finally {
    db.close();
  }
}

const KEPT = { recentEvents: 300, waitingOrRunning: 80, claims: 250 };

Deno.test("prune goes in chunks, each committed, with turns of the event loop in between", async () => {
  await withInbox(async (inbox, path) => {
    fillForPrune(path);
    const seen: number[] = [];
    let timer = setTimeout(function tick() {
      seen.push(leftAfterPrune(path).oldEvents);
      timer = setTimeout(tick, 0);
    }, 0);
    try {
      const done = await inbox.prune(100_000, 50_000, { chunkRows: 100 });
      // 1000 claims looked at 100 at a time, then 1200 events deleted 100 at a time; the last
      // chunk of each finds the end.
      assert.deepEqual(done, { ...PRUNED, chunks: 11 + 13 });
    } finally {
      clearTimeout(timer);
    }
    assert.ok(
      seen.some((left) => left > 0 && left < PRUNED.events),
      `a timer ran while some old events were deleted and others not yet: ${seen}`,
    );
    assert.deepEqual(leftAfterPrune(path), { oldEvents: 0, expiredClaims: 0, kept: KEPT });
  });
});

Deno.test("a prune cut off by close() leaves whole chunks done; the next prune finishes it", async () => {
  await withInboxPath(async (path) => {
    const inbox = Inbox.open(path);
    fillForPrune(path);
    let timer = setTimeout(function tick() {
      const left = leftAfterPrune(path).oldEvents;
      if (left < PRUNED.events) inbox.close(); // as the gateway's stop does
      else timer = setTimeout(tick, 0);
    }, 0);
    let done;
    try {
      done = await inbox.prune(100_000, 50_000, { chunkRows: 100 });
    } finally {
      clearTimeout(timer);
      inbox.close();
    }
    assert.ok(done.events > 0 && done.events < PRUNED.events, `deleted ${done.events}`);
    assert.equal(done.events % 100, 0, "whole chunks only");
    assert.deepEqual(leftAfterPrune(path), {
      oldEvents: PRUNED.events - done.events,
      expiredClaims: 0,
      kept: KEPT,
    });
    using again = Inbox.open(path);
    const rest = await again.prune(100_000, 50_000);
    assert.equal(rest.events, PRUNED.events - done.events);
    assert.deepEqual(leftAfterPrune(path), { oldEvents: 0, expiredClaims: 0, kept: KEPT });
  });
});

Deno.test("writer thread: an event accepted during a prune is committed before the next chunk", async () => {
  await withInboxPath(async (path) => {
    using inbox = Inbox.open(path, { writerThread: true });
    fillForPrune(path);
    await inbox.accept(event("w-0"), 100_000, 1000); // the thread is up
    const pruning = inbox.prune(100_000, 50_000, { chunkRows: 50 });
    let pruned = false;
    pruning.then(() => pruned = true, () => {});
    const accepted = await inbox.accept(event("w-1"), 100_000, 1000);
    assert.equal(accepted.kind, "accepted");
    assert.equal(pruned, false);
    // The first chunk looked at 50 claims: no other one was committed before the event.
    const left = leftAfterPrune(path).expiredClaims;
    assert.ok(left >= PRUNED.claims - 50 && left < PRUNED.claims, `expired claims left: ${left}`);
    assert.deepEqual(await pruning, { ...PRUNED, chunks: 21 + 25 });
  });
});

Deno.test("recover frees the held claims of unanswered requests, keeping how far a direct delivery got", async () => {
  await withInboxPath((path) => {
    const before = Inbox.open(path);
    assert.ok(before.claim("r", "plain", 0, 1000));
    assert.ok(before.claim("r", "script", 0, 1000, true)); // its script was running
    assert.ok(before.claim("r", "direct", 0, 1000, true)); // its message half out
    before.recordDirectParts("r", "direct", { messageKey: "k", partsSent: 2 });
    assert.ok(before.claim("r", "answered", 0, 1000, true));
    before.settle("r", "answered");
    assert.equal(before.claim("r", "script", 1, 1000), false, "held: still a duplicate");
    before.close(); // then the process dies

    using after = Inbox.open(path);
    assert.equal(after.recover(5).freedClaims, 2);
    assert.equal(after.claim("r", "plain", 6, 1000), false);
    assert.equal(after.claim("r", "answered", 6, 1000), false);
    assert.ok(after.claim("r", "script", 6, 1000), "the sender's retry is served");
    assert.ok(after.claim("r", "direct", 6, 1000, true));
    assert.equal(after.partsDelivered("r", "direct", "k"), 2, "and resumes after the sent parts");
    after.settle("r", "direct");
    assert.equal(after.partsDelivered("r", "direct", "k"), 0);
  });
});

Deno.test("recordParts keeps the parts a delivery under way has sent", async () => {
  await withInbox((inbox) => {
    const id = inbox.enqueue(event("d1"), 0);
    inbox.take(0);
    inbox.finishRun(id, { answer: "long", endReason: "completed", deliver: true }, 1);
    inbox.take(2);
    inbox.recordParts(id, 1);
    inbox.recordParts(id, 3);
    assert.equal(inbox.get(id)!.partsSent, 3);
    inbox.recordParts(id, 2); // never backwards
    assert.equal(inbox.get(id)!.partsSent, 3);
  });
});

Deno.test("two processes claiming the same delivery id at once: exactly one wins", async () => {
  const dir = await Deno.makeTempDir();
  const path = join(dir, "inbox.sqlite3");
  Inbox.open(path).close();
  const script = `
    import { Inbox } from ${
    JSON.stringify(new URL("../../src/gateway/inbox.ts", import.meta.url).href)
  };
    const inbox = Inbox.open(Deno.args[0]);
    let won = 0;
    for (let i = 0; i < 200; i++) if (inbox.claim("r", "id-" + i, 0, 1e12)) won++;
    inbox.close();
    console.log(won);
  `;
  try {
    const runs = await Promise.all([0, 1, 2].map(() =>
      new Deno.Command(Deno.execPath(), {
        args: ["eval", "--quiet", script, path],
        stdout: "piped",
        stderr: "inherit",
      }).output()
    ));
    const wins = runs.map((run) => Number(new TextDecoder().decode(run.stdout).trim()));
    assert.equal(wins.reduce((a, b) => a + b, 0), 200, `wins per process: ${wins}`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a run's answer being delivered is leased: take() does not hand it to another worker", async () => {
  await withInbox((inbox) => {
    const id = inbox.enqueue(event("lease-1"), 0);
    assert.equal(inbox.take(0)?.id, id);
    inbox.finishRun(id, { answer: "hi", endReason: "completed", deliver: true }, 10);
    // The worker that ran it delivers it now; a worker woken meanwhile finds nothing due.
    assert.equal(inbox.take(20), undefined);
    assert.ok(inbox.nextDueAt()! > 60_000);
    // Only if this process dies is it due again (recover at the next start), without a rerun.
    inbox.recover(30);
    const again = inbox.take(30)!;
    assert.deepEqual([again.id, again.state, again.runAttempts], [id, "delivering", 1]);
  });
});

Deno.test("writes of one turn share one transaction: others see them once durable() resolves", async () => {
  await withInbox(async (inbox, path) => {
    const reader = new DatabaseSync(path, { readOnly: true });
    try {
      const count = () =>
        (reader.prepare("SELECT COUNT(*) AS n FROM events").get() as { n: number }).n;
      assert.ok(inbox.claim("github", "d1", 0, 1000));
      inbox.enqueue(event("d1"), 0);
      inbox.enqueue(event("d2"), 0);
      assert.equal(inbox.counts().queued, 2, "this connection sees its writes at once");
      assert.equal(count(), 0, "not committed while the turn lasts");
      const durable = inbox.durable();
      assert.equal(inbox.durable(), durable, "the same commit for every write of the turn");
      await durable;
      assert.equal(count(), 2, "committed together on the next turn");
      await inbox.durable(); // nothing pending: resolves at once
      inbox.enqueue(event("d3"), 0);
      inbox.commit();
      assert.equal(count(), 3, "commit() commits at once");
    } finally {
      reader.close();
    }
  });
});

Deno.test("close() commits what is pending", async () => {
  await withInboxPath((path) => {
    const inbox = Inbox.open(path);
    inbox.enqueue(event("d1"), 0);
    inbox.close();
    using again = Inbox.open(path);
    assert.equal(again.counts().queued, 1);
  });
});

Deno.test("take() uses the waiting-events index: no sort of the queue", async () => {
  await withInbox((_inbox, path) => {
    const db = new DatabaseSync(path, { readOnly: true });
    try {
      const plan = db.prepare(`EXPLAIN QUERY PLAN ${NEXT_DUE_SQL}`).all(0) as {
        detail: string;
      }[];
      const details = plan.map((row) => row.detail).join("; ");
      assert.match(details, /USING INDEX events_waiting/);
      assert.doesNotMatch(details, /TEMP B-TREE/);
    } finally {
      db.close();
    }
  });
});

/** The details of the query plan of `sql` (with `params`) on the inbox at `path`. */
function planOf(path: string, sql: string, ...params: (string | number | null)[]): string {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const plan = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[];
    return plan.map((row) => row.detail).join("; ");
  } finally {
    db.close();
  }
}

/** A step of a plan that reads the whole events table, row by row. */
const TABLE_SCAN = /SCAN events(?! USING)/;

Deno.test("list by state, counts and prune read partial indexes, never the whole events table", async () => {
  await withInbox((_inbox, path) => {
    for (const state of ["running", "done", "failed"] as const) {
      for (const route of [null, "github"]) {
        const plan = planOf(path, listSql(state), route, 21);
        assert.match(plan, /USING INDEX events_by_state \(state=\?\)/, `${state}: ${plan}`);
        assert.doesNotMatch(plan, /TEMP B-TREE/, `${state}: read in id order, no sort`);
      }
    }
    for (const state of ["queued", "delivering"] as const) {
      const plan = planOf(path, listSql(state), null, 21);
      assert.match(plan, /USING INDEX events_waiting/, `${state}: ${plan}`);
      assert.doesNotMatch(plan, TABLE_SCAN, `${state}: ${plan}`);
    }
    const counts = planOf(path, COUNTS_SQL);
    assert.match(counts, /USING COVERING INDEX events_by_state/, counts);
    assert.match(counts, /USING INDEX events_waiting/, counts);
    assert.doesNotMatch(counts, TABLE_SCAN, counts);
    const prune = planOf(path, PRUNE_EVENTS_SQL, 0, 1000);
    assert.match(prune, /USING INDEX events_finished \(updated_at<\?\)/, prune);
    assert.doesNotMatch(prune, TABLE_SCAN, prune);
  });
});

Deno.test("list by state and counts agree with the events, for every state", async () => {
  await withInbox((inbox) => {
    const ids: Record<EventState, string[]> = {
      queued: [],
      running: [],
      delivering: [],
      done: [],
      failed: [],
    };
    const github = new Set<string>();
    // Each is the only one due when taken; the queued ones come last.
    for (let i = 0; i < 15; i++) {
      const id = inbox.enqueue(event(`s-${i}`, i % 2 ? "gitlab" : "github"), i);
      if (i % 2 === 0) github.add(id);
      if (i >= 12) {
        ids.queued.push(id);
        continue;
      }
      assert.equal(inbox.take(100)?.id, id);
      if (i % 4 === 0) {
        ids.running.push(id);
        continue;
      }
      const deliver = i % 4 !== 1;
      inbox.finishRun(id, { answer: "a", endReason: "completed", deliver }, 100 + i);
      if (!deliver) ids.done.push(id);
      else if (i % 4 === 2) {
        inbox.recordDelivery(id, { ok: false, error: "no", retryAt: 10_000 }, 100 + i);
        ids.delivering.push(id);
      } else {
        inbox.recordDelivery(id, { ok: false, error: "no" }, 100 + i);
        ids.failed.push(id);
      }
    }
    const counts = inbox.counts();
    for (const state of Object.keys(ids) as EventState[]) {
      assert.deepEqual(inbox.list({ state, limit: 100 }).map((e) => e.id), ids[state].reverse());
      assert.equal(counts[state], ids[state].length, state);
      // By state and route: exactly the github ones of the state, newest first.
      assert.deepEqual(
        inbox.list({ state, route: "github", limit: 100 }).map((e) => e.id),
        ids[state].filter((id) => github.has(id)),
        `${state}, route github`,
      );
    }
    assert.equal(inbox.list({ state: "failed", limit: 1 }).length, 1);
  });
});

/** A version 4 inbox, as that version created it, with one event in each given state. */
function writeVersion4(path: string, states: EventState[]): void {
  const db = new DatabaseSync(path);
  try {
    db.exec(`
      CREATE TABLE events (id TEXT PRIMARY KEY, route TEXT NOT NULL, event TEXT NOT NULL,
        delivery_id TEXT NOT NULL, payload TEXT NOT NULL, prompt TEXT NOT NULL, plan TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'delivering', 'done', 'failed')),
        run_attempts INTEGER NOT NULL DEFAULT 0, delivery_attempts INTEGER NOT NULL DEFAULT 0,
        answer TEXT, end_reason TEXT, error TEXT, created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL, next_attempt_at INTEGER NOT NULL,
        parts_sent INTEGER NOT NULL DEFAULT 0, leased INTEGER NOT NULL DEFAULT 0) STRICT;
      CREATE INDEX events_waiting ON events (next_attempt_at, created_at)
        WHERE state IN ('queued', 'delivering');
      CREATE TABLE claims (route TEXT NOT NULL, delivery_id TEXT NOT NULL,
        expires_at INTEGER NOT NULL, parts_sent INTEGER NOT NULL DEFAULT 0, message_key TEXT,
        held INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (route, delivery_id)) STRICT, WITHOUT ROWID;
      PRAGMA user_version = 4;
    `);
    const insert = db.prepare(
      `INSERT INTO events (id, route, event, delivery_id, payload, prompt, plan, state,
         created_at, updated_at, next_attempt_at)
       VALUES (?, 'r', 'e', ?, '{}', 'p', '{"deliver":"log","deliverExtra":{},"skills":[]}', ?,
         ?, ?, ?)`,
    );
    states.forEach((state, i) => insert.run(`e${i}`, `d${i}`, state, i, i, i));
  } finally {
    db.close();
  }
}

Deno.test("a version 4 inbox gains the indexes of version 5 in place, its events kept", async () => {
  await withInboxPath(async (path) => {
    writeVersion4(path, ["done", "failed", "queued", "running", "failed"]);
    using inbox = Inbox.open(path);
    assert.deepEqual(schemaOf(path), {
      version: 5,
      indexes: ["events_by_state", "events_finished", "events_waiting"],
    });
    assert.match(planOf(path, listSql("failed"), null, 21), /USING INDEX events_by_state/);
    assert.deepEqual(inbox.list({ state: "failed", limit: 10 }).map((e) => e.id), ["e4", "e1"]);
    assert.deepEqual(inbox.counts(), { queued: 1, running: 1, delivering: 0, done: 1, failed: 2 });
    assert.deepEqual(await inbox.prune(100, 98), { claims: 0, events: 2, chunks: 2 });
    assert.deepEqual(inbox.list({ limit: 10 }).map((e) => e.id), ["e4", "e3", "e2"]);
  });
});

Deno.test("a version 1 inbox is upgraded in place: its events are kept and taken in order", async () => {
  await withInboxPath((path) => {
    const old = new DatabaseSync(path);
    old.exec(`
      CREATE TABLE events (id TEXT PRIMARY KEY, route TEXT NOT NULL, event TEXT NOT NULL,
        delivery_id TEXT NOT NULL, payload TEXT NOT NULL, prompt TEXT NOT NULL, plan TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'delivering', 'done', 'failed')),
        run_attempts INTEGER NOT NULL DEFAULT 0, delivery_attempts INTEGER NOT NULL DEFAULT 0,
        answer TEXT, end_reason TEXT, error TEXT, created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL, next_attempt_at INTEGER NOT NULL) STRICT;
      CREATE INDEX events_due ON events (state, next_attempt_at);
      CREATE TABLE claims (route TEXT NOT NULL, delivery_id TEXT NOT NULL,
        expires_at INTEGER NOT NULL, PRIMARY KEY (route, delivery_id)) STRICT, WITHOUT ROWID;
      INSERT INTO events (id, route, event, delivery_id, payload, prompt, plan, state, created_at,
        updated_at, next_attempt_at)
      VALUES ('b', 'r', 'e', 'd2', '{}', 'p', '{"deliver":"log","deliverExtra":{},"skills":[]}',
        'queued', 2, 2, 2),
        ('a', 'r', 'e', 'd1', '{}', 'p', '{"deliver":"log","deliverExtra":{},"skills":[]}',
        'queued', 1, 1, 1);
      INSERT INTO events (id, route, event, delivery_id, payload, prompt, plan, state, answer,
        created_at, updated_at, next_attempt_at)
      VALUES ('c', 'r', 'e', 'd3', '{}', 'p', '{"deliver":"log","deliverExtra":{},"skills":[]}',
        'delivering', 'A', 3, 3, 600003);
      PRAGMA user_version = 1;
    `);
    old.close();
    using inbox = Inbox.open(path);
    // Held or waiting could not be told apart before: after a restart, c is due at once, as then.
    inbox.recover(10);
    assert.deepEqual([inbox.take(10)?.id, inbox.take(10)?.id], ["a", "b"]);
    const resumed = inbox.take(10)!;
    assert.deepEqual([resumed.id, resumed.state, resumed.partsSent], ["c", "delivering", 0]);
    // Its claims table took the new columns too.
    assert.ok(inbox.claim("r", "d9", 10, 1000));
    inbox.release("r", "d9", { messageKey: "k", partsSent: 2, atMs: 10 });
    assert.equal(inbox.partsDelivered("r", "d9", "k"), 2);
    assert.deepEqual(schemaOf(path), {
      version: 5,
      indexes: ["events_by_state", "events_finished", "events_waiting"],
    });
  });
});

Deno.test("event ids are UUIDv7, increasing also within one millisecond and when the clock steps back", () => {
  // Ahead of any clock other tests of this process used (the generator keeps the last time).
  const base = Date.now() + 3_600_000;
  const ids = [
    ...Array.from({ length: 10_000 }, () => timeOrderedId(base)), // > 4096 in one ms
    timeOrderedId(base - 1_000), // the clock went back
    timeOrderedId(base + 60_000),
  ];
  for (const id of ids) {
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  }
  for (let i = 1; i < ids.length; i++) assert.ok(ids[i - 1] < ids[i], `${ids[i - 1]} < ${ids[i]}`);
  assert.equal(new Set(ids).size, ids.length);
  assert.equal(
    ids.at(-1)!.replaceAll("-", "").slice(0, 12),
    (base + 60_000).toString(16).padStart(12, "0"),
  );
});

/** Runs `id` (taken at `at`) to a completed answer and records one delivery outcome. */
function finish(
  inbox: Inbox,
  id: string,
  at: number,
  delivery: { ok: true } | { ok: false; error: string; partsSent?: number },
): void {
  inbox.take(at);
  inbox.finishRun(id, { answer: `answer of ${id}`, endReason: "completed", deliver: true }, at);
  inbox.recordDelivery(id, delivery, at);
}

Deno.test("list: newest first, by state and route, at most limit; find by event or delivery id", async () => {
  await withInbox((inbox) => {
    const a = inbox.enqueue(event("d-a"), 10);
    const b = inbox.enqueue(event("d-b", "gitlab"), 20);
    const c = inbox.enqueue(event("d-c"), 30);
    finish(inbox, a, 40, { ok: false, error: "chat not found" });
    assert.deepEqual(inbox.list({ limit: 10 }).map((e) => e.id), [c, b, a]);
    assert.deepEqual(inbox.list({ limit: 2 }).map((e) => e.id), [c, b]);
    assert.deepEqual(inbox.list({ route: "gitlab", limit: 10 }).map((e) => e.id), [b]);
    const [failed] = inbox.list({ state: "failed", limit: 10 });
    assert.deepEqual(
      { ...failed },
      {
        id: a,
        route: "github",
        event: "issues",
        deliveryId: "d-a",
        deliver: "telegram",
        state: "failed",
        runAttempts: 1,
        deliveryAttempts: 1,
        partsSent: 0,
        endReason: "completed",
        error: "chat not found",
        createdAt: 10,
        updatedAt: 40,
        nextAttemptAt: 40,
        leased: false,
      },
    );
    assert.deepEqual(inbox.find(a).map((e) => e.id), [a]);
    assert.deepEqual(inbox.find("d-b").map((e) => e.id), [b]);
    assert.deepEqual(inbox.find("nothing"), []);
  });
});

Deno.test("requeue: a failed delivery is due again with the parts not sent yet, a done one in whole", async () => {
  await withInbox((inbox) => {
    const failed = inbox.enqueue(event("d1"), 0);
    finish(inbox, failed, 1, { ok: false, error: "HTTP 403", partsSent: 2 });
    const done = inbox.enqueue(event("d2"), 2);
    finish(inbox, done, 3, { ok: true });
    inbox.recordParts(done, 3);

    assert.deepEqual(inbox.requeue(failed, { rerun: false }, 100), {
      ok: true,
      state: "delivering",
    });
    let again = inbox.get(failed)!;
    assert.equal(again.state, "delivering");
    assert.equal(again.deliveryAttempts, 0, "the retries start again");
    assert.equal(again.partsSent, 2, "parts already out are not sent twice");
    assert.equal(again.answer, `answer of ${failed}`);
    assert.equal(again.runAttempts, 1, "the agent does not run again");
    assert.equal(inbox.take(100)?.id, failed, "due now");

    assert.deepEqual(inbox.requeue(done, { rerun: false }, 200), { ok: true, state: "delivering" });
    again = inbox.get(done)!;
    assert.equal(again.partsSent, 0, "a done event is sent in whole");
    assert.equal(inbox.take(200)?.id, done);
  });
});

Deno.test("requeue of a run without an answer names its end reason: what goes out is its notice", async () => {
  await withInbox((inbox) => {
    const notice = (deliveryId: string) =>
      `The agent run for github (issues, delivery ${deliveryId}) ended without an answer: the ` +
      "model's answer was empty. The gateway log has the details.";
    const ended = (
      deliveryId: string,
      run: { answer: string; endReason: string; error?: string },
    ) => {
      const id = inbox.enqueue(event(deliveryId), 0);
      inbox.take(0);
      inbox.finishRun(id, { ...run, deliver: true }, 1);
      // A failed delivery puts its own error in place of the run's.
      inbox.recordDelivery(id, { ok: false, error: "Bad Request: message text is empty" }, 2);
      return id;
    };
    // As the worker stores an empty answer: its notice, and an end reason of its own.
    const empty = ended("d1", {
      answer: notice("d1"),
      endReason: EMPTY_ANSWER,
      error: "the model gave an empty answer",
    });
    // Older versions: the empty answer itself, with the end reason `completed`.
    const blank = ended("d2", { answer: " \n", endReason: "completed" });
    const failed = ended("d4", { answer: "The agent run … failed.", endReason: "failed" });
    const answered = ended("d5", { answer: "All good", endReason: "completed" });
    const requeued = [empty, blank, failed, answered].map((id) =>
      inbox.requeue(id, { rerun: false }, 10)
    );
    assert.deepEqual(requeued, [
      { ok: true, state: "delivering", noAnswer: EMPTY_ANSWER },
      { ok: true, state: "delivering", noAnswer: EMPTY_ANSWER },
      { ok: true, state: "delivering", noAnswer: "failed" },
      { ok: true, state: "delivering" },
    ]);
    // The empty answer is not delivered again (every platform refuses it): its notice is.
    assert.deepEqual(
      [blank, answered].map((id) => [inbox.get(id)!.answer, inbox.get(id)!.endReason]),
      [[notice("d2"), EMPTY_ANSWER], ["All good", "completed"]],
    );
    assert.equal(
      answerDelivered(inbox, blank),
      notice("d2"),
      "a worker delivers the notice",
    );
  });
});

/** The answer a worker taking `id` delivers. */
function answerDelivered(inbox: Inbox, id: string): string | undefined {
  for (let event = inbox.take(10); event; event = inbox.take(10)) {
    if (event.id === id) return event.answer;
  }
  return undefined;
}

Deno.test("requeue with rerun: the event is queued to run again, its old answer forgotten", async () => {
  await withInbox((inbox) => {
    const id = inbox.enqueue(event("d1"), 0);
    finish(inbox, id, 1, { ok: false, error: "HTTP 403", partsSent: 1 });
    assert.deepEqual(inbox.requeue(id, { rerun: true }, 50), { ok: true, state: "queued" });
    const again = inbox.get(id)!;
    assert.equal(again.state, "queued");
    assert.equal(again.answer, undefined);
    assert.equal(again.error, undefined);
    assert.equal(again.partsSent, 0);
    assert.equal(again.deliveryAttempts, 0);
    assert.equal(again.runAttempts, 0);
    assert.equal(again.prompt, "prompt d1", "the prompt rendered at acceptance is kept");
    const taken = inbox.take(50)!;
    assert.equal(taken.state, "running");
    assert.equal(taken.runAttempts, 1);
  });
});

Deno.test("requeue of a delivery waiting for its retry makes it due now, its parts sent skipped; one a worker holds, or due already, is refused", async () => {
  await withInbox((inbox) => {
    const id = inbox.enqueue(event("d1"), 0);
    inbox.take(1);
    inbox.finishRun(id, { answer: "A", endReason: "completed", deliver: true }, 2);
    // The worker that ran it is delivering it.
    const leased = { ok: false, problem: "leased", state: "delivering" };
    assert.deepEqual(inbox.requeue(id, { rerun: false }, 3), leased);
    assert.deepEqual(inbox.requeue(id, { rerun: true }, 3), leased);
    inbox.recordDelivery(
      id,
      { ok: false, error: "HTTP 401", retryAt: 1_200_000, partsSent: 2 },
      4,
    );
    assert.equal(inbox.take(5), undefined, "waiting for its retry");

    assert.deepEqual(inbox.requeue(id, { rerun: false }, 5), {
      ok: true,
      state: "delivering",
      retryWasDueAt: 1_200_000,
    });
    const taken = inbox.take(5)!;
    assert.equal(taken?.id, id, "due now");
    assert.deepEqual(
      [taken.state, taken.answer, taken.partsSent, taken.deliveryAttempts, taken.runAttempts],
      ["delivering", "A", 2, 0, 1],
      "the same answer, the parts already sent skipped, its tries from the first, no new run",
    );
    assert.deepEqual(taken.plan, event("d1").plan, "its target as accepted");
    assert.deepEqual(inbox.requeue(id, { rerun: false }, 6), leased, "taken by a worker again");

    // Failed again; its retry falls due, but no worker has taken it yet: nothing to hurry.
    inbox.recordDelivery(id, { ok: false, error: "HTTP 401", retryAt: 100 }, 7);
    assert.deepEqual(inbox.requeue(id, { rerun: false }, 200), {
      ok: false,
      problem: "due",
      state: "delivering",
    });
    assert.deepEqual(inbox.requeue(id, { rerun: true }, 200), { ok: true, state: "queued" });
    assert.deepEqual([inbox.get(id)?.state, inbox.get(id)?.answer], ["queued", undefined]);
  });
});

Deno.test("requeue refuses an event under way, a silent one (unless rerun) and an unknown id", async () => {
  await withInbox((inbox) => {
    const queued = inbox.enqueue(event("d1"), 0);
    assert.deepEqual(inbox.requeue(queued, { rerun: false }, 1), {
      ok: false,
      problem: "pending",
      state: "queued",
    });
    inbox.take(1);
    assert.deepEqual(inbox.requeue(queued, { rerun: true }, 1), {
      ok: false,
      problem: "pending",
      state: "running",
    });
    inbox.finishRun(queued, { answer: "[SILENT]", endReason: "completed", deliver: false }, 2);
    assert.deepEqual(inbox.requeue(queued, { rerun: false }, 3), {
      ok: false,
      problem: "silent",
      state: "done",
    });
    assert.equal(inbox.get(queued)!.state, "done", "left as it was");
    assert.deepEqual(inbox.requeue(queued, { rerun: true }, 3), { ok: true, state: "queued" });
    assert.deepEqual(inbox.requeue("no-such-id", { rerun: false }, 3), {
      ok: false,
      problem: "unknown",
    });
  });
});

// --- accept: the claim and the event in one transaction, on this connection or the writer thread

for (const writerThread of [false, true]) {
  const mode = writerThread ? "writer thread" : "one connection";
  const open = (path: string) => Inbox.open(path, { writerThread });

  Deno.test(`${mode}: accept claims and enqueues at once; a redelivery is a duplicate`, async () => {
    await withInboxPath(async (path) => {
      using inbox = open(path);
      const reader = new DatabaseSync(path, { readOnly: true });
      try {
        const big = { ...event("a-1"), payload: { id: 12345678901234567890n, n: 7 } };
        const json = '{"id": 12345678901234567890, "n": 7}';
        const first = await inbox.accept({ ...big, payloadJson: json }, 1000, 500);
        assert.equal(first.kind, "accepted");
        const id = first.kind === "accepted" ? first.id : "";
        // Resolved only once committed: another connection sees the event.
        const row = reader.prepare("SELECT payload, prompt, state FROM events WHERE id = ?")
          .get(id) as Record<string, string>;
        assert.deepEqual({ ...row }, { payload: json, prompt: "prompt a-1", state: "queued" });
        assert.deepEqual(inbox.get(id)!.payload, big.payload, "the body's own text, read exact");
        assert.deepEqual(inbox.get(id)!.plan, big.plan);
        assert.deepEqual(await inbox.accept(big, 1200, 500), { kind: "duplicate" });
        assert.equal((await inbox.accept(event("a-1", "gitlab"), 1200, 500)).kind, "accepted");
        assert.equal((await inbox.accept(big, 1500, 500)).kind, "accepted", "expired: taken over");
        assert.equal(inbox.counts().queued, 3);
      } finally {
        reader.close();
      }
    });
  });

  Deno.test(`${mode}: accept of an id whose request is still served is held, then a duplicate`, async () => {
    await withInboxPath(async (path) => {
      using inbox = open(path);
      assert.ok(inbox.claim("github", "h-1", 0, 1000, true));
      inbox.commit();
      assert.deepEqual(await inbox.accept(event("h-1"), 10, 1000), { kind: "held" });
      inbox.settle("github", "h-1");
      inbox.commit();
      assert.deepEqual(await inbox.accept(event("h-1"), 20, 1000), { kind: "duplicate" });
      inbox.release("github", "h-1");
      inbox.commit();
      assert.equal((await inbox.accept(event("h-1"), 30, 1000)).kind, "accepted");
      assert.equal(inbox.counts().queued, 1);
    });
  });

  Deno.test(`${mode}: the same id accepted many times at once is accepted once`, async () => {
    await withInboxPath(async (path) => {
      using inbox = open(path);
      const results = await Promise.all([
        ...Array.from({ length: 20 }, () => inbox.accept(event("same"), 0, 1000)),
        ...Array.from({ length: 20 }, (_, i) => inbox.accept(event(`other-${i}`), 0, 1000)),
      ]);
      const kinds = results.map((result) => result.kind);
      assert.equal(kinds.slice(0, 20).filter((kind) => kind === "accepted").length, 1);
      assert.equal(kinds.slice(0, 20).filter((kind) => kind === "duplicate").length, 19);
      assert.deepEqual(new Set(kinds.slice(20)), new Set(["accepted"]));
      assert.equal(inbox.counts().queued, 21);
    });
  });

  Deno.test(`${mode}: an event that cannot be inserted is not accepted, and its claim not kept`, async () => {
    await withInboxPath(async (path) => {
      using inbox = open(path);
      const other = new DatabaseSync(path);
      try {
        other.exec(`CREATE TRIGGER full BEFORE INSERT ON events WHEN NEW.delivery_id = 'f-1'
          BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`);
        const [failed, fine] = await Promise.allSettled([
          inbox.accept(event("f-1"), 0, 1000),
          inbox.accept(event("f-2"), 0, 1000),
        ]);
        assert.equal(failed.status, "rejected");
        assert.match(String((failed as PromiseRejectedResult).reason), /disk is full/);
        if (writerThread) {
          // One transaction for the turn's events: none of them was stored.
          assert.equal(fine.status, "rejected");
        } else {
          assert.equal(fine.status, "fulfilled");
        }
        inbox.commit();
        other.exec("DROP TRIGGER full");
        assert.equal((await inbox.accept(event("f-1"), 1, 1000)).kind, "accepted", "no claim");
      } finally {
        other.close();
      }
    });
  });
}

Deno.test("writer thread: close() rejects the events it has not committed", async () => {
  await withInboxPath(async (path) => {
    const inbox = Inbox.open(path, { writerThread: true });
    const pending = inbox.accept(event("c-1"), 0, 1000);
    inbox.close();
    await assert.rejects(pending, /closed before the event was committed/);
    using again = Inbox.open(path);
    assert.equal(again.counts().queued, 0);
    assert.ok(again.claim("github", "c-1", 0, 1000), "nor was it claimed");
  });
});

Deno.test({
  name: "writer thread: when it cannot open the inbox, events are accepted on the main connection",
  // Root opens a file whatever its mode (and the deleted file of older versions of this test is
  // now put back before the thread starts).
  ignore: Deno.uid() === 0,
  fn: async () => {
    const dir = await Deno.makeTempDir();
    const path = join(dir, "inbox.sqlite3");
    const errors: unknown[] = [];
    const inbox = Inbox.open(path, {
      writerThread: true,
      onWriterError: (error) => errors.push(error),
    });
    try {
      // The thread opens the file by its path when the first event comes, and may not now; this
      // connection keeps the file it has open.
      Deno.chmodSync(path, 0);
      const results = await Promise.all([
        inbox.accept(event("w-1"), 0, 1000),
        inbox.accept(event("w-2"), 0, 1000),
      ]);
      assert.deepEqual(results.map((result) => result.kind), ["accepted", "accepted"]);
      assert.equal(errors.length, 1);
      assert.match(String(errors[0]), /cannot open/);
      assert.deepEqual(await inbox.accept(event("w-1"), 1, 1000), { kind: "duplicate" });
      assert.equal(inbox.counts().queued, 2);
    } finally {
      inbox.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

/** The schema version of the inbox at `path` and the names of its events table's own indexes. */
function schemaOf(path: string): { version: number; indexes: string[] } {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const { user_version } = db.prepare("PRAGMA user_version").get() as { user_version: number };
    const indexes = db.prepare(
      "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events' AND sql IS NOT NULL",
    ).all() as { name: string }[];
    return { version: user_version, indexes: indexes.map((row) => row.name).sort() };
  } finally {
    db.close();
  }
}

/** The delivery ids of the events in the inbox file at `path`, read afresh from disk. */
function deliveryIdsOnDisk(path: string): string[] {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const rows = db.prepare("SELECT delivery_id FROM events ORDER BY id").all();
    return rows.map((row) => String(row.delivery_id));
  } finally {
    db.close();
  }
}

for (
  const [what, remove] of [
    ["the whole folder", (path: string) => Deno.removeSync(join(path, ".."), { recursive: true })],
    ["the file", (path: string) => Deno.removeSync(path)],
    ["its -wal", (path: string) => Deno.removeSync(`${path}-wal`)],
  ] as const
) {
  Deno.test(`an inbox deleted while open (${what}) is put back by keepInPlace, with all it held, events taken since included`, async () => {
    const dir = await Deno.makeTempDir();
    const path = join(dir, "gateway", "inbox.sqlite3");
    try {
      using inbox = Inbox.open(path, { writerThread: true });
      assert.equal((await inbox.accept(event("before"), 1000, 60_000)).kind, "accepted");
      const queued = inbox.enqueue(event("queued-in-turn"), 1000); // not committed yet
      remove(path);
      assert.equal((await inbox.accept(event("after"), 2000, 60_000)).kind, "accepted");
      await inbox.keepInPlace();
      assert.deepEqual(deliveryIdsOnDisk(path), ["before", "queued-in-turn", "after"]);
      assert.equal((await inbox.accept(event("later"), 2000, 60_000)).kind, "accepted");
      assert.deepEqual(deliveryIdsOnDisk(path), ["before", "queued-in-turn", "after", "later"]);
      assert.equal(Deno.statSync(path).mode! & 0o777, 0o600);
      assert.equal(Deno.statSync(join(dir, "gateway")).mode! & 0o777, 0o700);
      // Its claims came along: a redelivery is still a duplicate; and it goes on as before.
      assert.deepEqual(await inbox.accept(event("before"), 3000, 60_000), { kind: "duplicate" });
      assert.equal(inbox.take(3000)?.deliveryId, "before");
      assert.equal(inbox.get(queued)?.state, "queued");
      await inbox.durable();
      inbox.close();
      using reopened = Inbox.open(path);
      assert.deepEqual(reopened.counts(), {
        queued: 3,
        running: 1,
        delivering: 0,
        done: 0,
        failed: 0,
      });
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("an inbox replaced by another file while open refuses events, saying so, and leaves that file alone", async () => {
  await withInboxPath(async (path) => {
    using inbox = Inbox.open(path, { writerThread: true });
    assert.equal((await inbox.accept(event("before"), 1000, 60_000)).kind, "accepted");
    Deno.removeSync(path);
    Deno.writeTextFileSync(path, "someone's file");
    const said =
      /inbox .* was replaced by another file while the gateway ran; events are refused until the gateway is restarted/;
    await assert.rejects(() => inbox.keepInPlace(), said);
    await assert.rejects(() => inbox.accept(event("after"), 2000, 60_000), said);
    assert.equal(Deno.readTextFileSync(path), "someone's file");
  });
});
