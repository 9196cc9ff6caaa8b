/** The worker pool over the real inbox, with recorded run and delivery functions. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { runLoop, type RunResult } from "../../src/agent/run.ts";
import { EMPTY_ANSWER, Inbox, type InboxEvent, type NewEvent } from "../../src/gateway/inbox.ts";
import { type EventDeliverer, type EventRunner, WorkerPool } from "../../src/gateway/worker.ts";
import { modelClient, NEVER_ASK, startHangingModel } from "../agent/_run_helpers.ts";

function event(deliveryId: string): NewEvent {
  return {
    route: "github",
    event: "issues",
    deliveryId,
    payload: {},
    prompt: `prompt ${deliveryId}`,
    plan: { deliver: "telegram", deliverExtra: {}, skills: [] },
  };
}

function result(answer: string, endReason: RunResult["endReason"] = "completed"): RunResult {
  return {
    answer,
    endReason,
    toolCalls: [],
    modelCalls: 1,
    retries: 0,
    messages: [],
    timings: { totalMs: 1, modelMs: 0, toolMs: 0 },
    warnings: [],
    ...(endReason === "completed" ? {} : { error: "model unreachable" }),
  };
}

/** Resolves when `predicate` holds, checking after every change the pool reports. */
function until(predicate: () => boolean, onChange: Set<() => void>): Promise<void> {
  if (predicate()) return Promise.resolve();
  return new Promise((resolve) => {
    const check = () => {
      if (predicate()) {
        onChange.delete(check);
        resolve();
      }
    };
    onChange.add(check);
  });
}

async function setup(options: {
  answers?: Record<string, RunResult>;
  /** Runs the agent instead of answering from `answers`. */
  run?: EventRunner;
  deliver?: EventDeliverer;
  concurrency?: number;
  maxDeliveryAttempts?: number;
  idlePollMs?: number;
  retryBaseMs?: number;
  storeRetryBaseMs?: number;
  now?: () => number;
}) {
  const dir = await Deno.makeTempDir();
  const inbox = Inbox.open(join(dir, "inbox.sqlite3"));
  const runs: string[] = [];
  const deliveries: { id: string; message: string }[] = [];
  const logs: { level: string; message: string; properties?: Record<string, unknown> }[] = [];
  const changed = new Set<() => void>();
  const notify = () => {
    for (const listener of [...changed]) listener();
  };
  const pool = new WorkerPool({
    inbox,
    run: (e: InboxEvent, signal) => {
      runs.push(e.deliveryId);
      setTimeout(notify, 0);
      if (options.run) return options.run(e, signal);
      return Promise.resolve(options.answers?.[e.deliveryId] ?? result(`answer ${e.deliveryId}`));
    },
    deliver: async (e, message, onPartSent) => {
      deliveries.push({ id: e.deliveryId, message });
      const outcome = options.deliver
        ? await options.deliver(e, message, onPartSent)
        : { ok: true as const };
      setTimeout(notify, 0);
      return outcome;
    },
    retryBaseMs: options.retryBaseMs ?? 1,
    concurrency: options.concurrency,
    maxDeliveryAttempts: options.maxDeliveryAttempts,
    idlePollMs: options.idlePollMs,
    storeRetryBaseMs: options.storeRetryBaseMs,
    now: options.now,
    log: (level, message, properties) => {
      logs.push({ level, message, properties });
      setTimeout(notify, 0);
    },
  });
  return {
    inbox,
    pool,
    runs,
    deliveries,
    logs,
    until: (predicate: () => boolean) => until(predicate, changed),
    async [Symbol.asyncDispose]() {
      await pool.stop(0);
      inbox.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("an accepted event is run once and its answer delivered", async () => {
  await using t = await setup({});
  t.pool.start();
  t.inbox.enqueue(event("d1"), Date.now());
  t.pool.wake();
  await t.until(() => t.inbox.counts().done === 1);
  assert.deepEqual(t.runs, ["d1"]);
  assert.deepEqual(t.deliveries, [{ id: "d1", message: "answer d1" }]);
  // The log says it went out, and where.
  await t.until(() => t.logs.some((entry) => /delivered to/.test(entry.message)));
  const delivered = t.logs.find((entry) => /delivered to/.test(entry.message))!;
  assert.equal(delivered.level, "info");
  assert.deepEqual(delivered.properties, {
    id: delivered.properties?.id,
    delivery_id: "d1",
    route: "github",
    where: "telegram", // the plan's target, when the deliverer names no place
    parts: 1,
  });
});

Deno.test("a [SILENT] answer is not delivered", async () => {
  await using t = await setup({ answers: { d1: result("  [SILENT]\n") } });
  t.pool.start();
  t.inbox.enqueue(event("d1"), Date.now());
  t.pool.wake();
  await t.until(() => t.inbox.counts().done === 1);
  assert.deepEqual(t.deliveries, []);
  assert.ok(
    t.logs.some((entry) => /the answer is \[SILENT\], so nothing is delivered/.test(entry.message)),
  );
});

Deno.test("a run without an answer delivers a notice naming the end reason, and logs the error", async () => {
  await using t = await setup({ answers: { d1: result("", "failed") } });
  t.pool.start();
  t.inbox.enqueue(event("d1"), Date.now());
  t.pool.wake();
  await t.until(() => t.inbox.counts().done === 1);
  const notice = t.deliveries[0].message;
  assert.match(notice, /\(issues, delivery d1\) ended without an answer: failed\./);
  // The notice may be posted somewhere public: the error (which can name endpoints) is logged.
  assert.doesNotMatch(notice, /model unreachable/);
  const logged = t.logs.find((entry) => entry.properties?.endReason === "failed");
  assert.equal(logged?.level, "warning");
  assert.deepEqual(
    [logged?.properties?.error, logged?.properties?.delivery_id],
    ["model unreachable", "d1"],
  );
  // The way back once the model works again, as a failed delivery's line gives its own.
  assert.match(
    logged!.message,
    /a notice saying so is delivered instead\. Once the cause is fixed, `agent webhook redeliver \{id\} --rerun` runs the agent on it again$/,
  );
});

Deno.test("an empty answer is not delivered as it is: a notice says the run ended without one", async () => {
  await using t = await setup({ answers: { d1: result(""), d2: result(" \n ") } });
  t.pool.start();
  t.inbox.enqueue(event("d1"), Date.now());
  t.inbox.enqueue(event("d2"), Date.now());
  t.pool.wake();
  await t.until(() => t.inbox.counts().done === 2);
  assert.deepEqual(
    t.deliveries.map((d) => d.message).sort(),
    ["d1", "d2"].map((id) =>
      `The agent run for github (issues, delivery ${id}) ended without an answer: the model's ` +
      "answer was empty. The gateway log has the details."
    ),
  );
  // An end reason of its own: a failed delivery overwrites `error`, and redeliver must still
  // tell that what goes out is a notice.
  const events = t.inbox.list({ limit: 10 });
  assert.deepEqual(events.map((e) => [e.state, e.endReason]), [
    ["done", EMPTY_ANSWER],
    ["done", EMPTY_ANSWER],
  ]);
  assert.ok(events.every((e) => /^the model gave an empty answer/.test(e.error ?? "")));
  assert.deepEqual(
    events.map((e) => t.inbox.requeue(e.id, { rerun: false }, Date.now())),
    [
      { ok: true, state: "delivering", noAnswer: EMPTY_ANSWER },
      { ok: true, state: "delivering", noAnswer: EMPTY_ANSWER },
    ],
  );
  const logged = t.logs.filter((entry) =>
    /a notice saying so is delivered instead/.test(entry.message)
  );
  assert.deepEqual(logged.map((entry) => entry.level), ["warning", "warning"]);
  assert.deepEqual(logged.map((entry) => entry.properties?.delivery_id).sort(), ["d1", "d2"]);
  assert.ok(
    logged.every((entry) => /`agent webhook redeliver \{id\} --rerun`/.test(entry.message)),
  );
});

Deno.test("a failing delivery is retried without running again, then succeeds", async () => {
  let failures = 2;
  await using t = await setup({
    deliver: () =>
      Promise.resolve(
        failures-- > 0 ? { ok: false, retryable: true, error: "HTTP 500" } : { ok: true },
      ),
  });
  t.pool.start();
  t.inbox.enqueue(event("d1"), Date.now());
  t.pool.wake();
  await t.until(() => t.inbox.counts().done === 1);
  assert.deepEqual(t.runs, ["d1"]);
  assert.equal(t.deliveries.length, 3);
});

Deno.test("a delivery that keeps failing is failed and logged with the event id", async () => {
  await using t = await setup({
    deliver: () => Promise.resolve({ ok: false, retryable: true, error: "HTTP 503" }),
    maxDeliveryAttempts: 3,
  });
  t.pool.start();
  const id = t.inbox.enqueue(event("d1"), Date.now());
  t.pool.wake();
  await t.until(() => t.inbox.counts().failed === 1);
  assert.equal(t.deliveries.length, 3);
  const final = t.logs.find((entry) => entry.level === "error");
  assert.equal(final?.properties?.id, id);
  assert.equal(final?.properties?.error, "HTTP 503");
  assert.match(final!.message, /failed for good after \{attempts\} attempts: /);
  const retries = t.logs.filter((entry) => entry.level === "warning");
  assert.deepEqual(retries.map((entry) => [entry.properties?.attempt, entry.properties?.max]), [
    [1, 3],
    [2, 3],
  ]);
  assert.match(retries[0].message, /delivery attempt \{attempt\} of \{max\} failed/);
});

Deno.test("options given as undefined get their defaults: a failing delivery gives up after 5 attempts", async () => {
  // setup() passes maxDeliveryAttempts and idlePollMs through as undefined here.
  await using t = await setup({
    deliver: () => Promise.resolve({ ok: false, retryable: true, error: "HTTP 503" }),
  });
  t.pool.start();
  t.inbox.enqueue(event("d1"), Date.now());
  t.pool.wake();
  await t.until(() => t.inbox.counts().failed === 1);
  assert.equal(t.deliveries.length, 5);
});

Deno.test("the pool runs at most `concurrency` events at once (2 by default); the others wait queued", async () => {
  for (const concurrency of [undefined, 1, 3]) {
    const limit = concurrency ?? 2;
    // Every run waits until it is let go, so the runs under way pile up to the limit.
    const release: (() => void)[] = [];
    let running = 0;
    let most = 0;
    await using t = await setup({
      concurrency,
      run: async (e) => {
        most = Math.max(most, ++running);
        await new Promise<void>((resolve) => release.push(resolve));
        running--;
        return result(`answer ${e.deliveryId}`);
      },
    });
    for (let i = 0; i < 5; i++) t.inbox.enqueue(event(`d${i}`), Date.now());
    t.pool.start();
    await t.until(() => t.runs.length === limit);
    // Give the pool every chance to start one more than it may.
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(t.runs.length, limit, `concurrency ${concurrency}`);
    assert.equal(t.pool.active, limit);
    assert.equal(t.inbox.counts().queued, 5 - limit);
    // As runs end, the queued events take their places, never more at once than the limit.
    while (t.inbox.counts().done < 5) {
      release.shift()?.();
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    assert.equal(most, limit, `concurrency ${concurrency}`);
    assert.equal(t.deliveries.length, 5);
  }
});

Deno.test("a non-retryable delivery failure gives up at once", async () => {
  await using t = await setup({
    deliver: () => Promise.resolve({ ok: false, retryable: false, error: "chat not found" }),
  });
  t.pool.start();
  t.inbox.enqueue(event("d1"), Date.now());
  t.pool.wake();
  await t.until(() => t.inbox.counts().failed === 1);
  assert.equal(t.deliveries.length, 1);
  const final = t.logs.find((entry) => entry.level === "error");
  assert.match(final!.message, /failed for good after \{attempts\} attempt: /);
});

Deno.test("a retry resumes after the parts of the answer already delivered", async () => {
  const skipped: number[] = [];
  await using t = await setup({
    deliver: (e) => {
      skipped.push(e.partsSent);
      return Promise.resolve(
        skipped.length === 1
          ? { ok: false, retryable: true, error: "part 3 of 5 not sent: HTTP 502", partsSent: 2 }
          : { ok: true },
      );
    },
  });
  t.pool.start();
  t.inbox.enqueue(event("d1"), Date.now());
  t.pool.wake();
  await t.until(() => t.inbox.counts().done === 1);
  assert.deepEqual(skipped, [0, 2]);
});

Deno.test("a delivered event counts every part that went out, the last one included", async () => {
  // `agent webhook events --json` showed parts_sent: 0 for a one-part answer delivered (to log,
  // telegram, …), as if nothing had been sent: only the parts before the last were counted.
  const outcomes = [
    { ok: true as const, parts: 1 },
    { ok: false as const, retryable: true, error: "part 3 of 5 not sent: HTTP 502", partsSent: 2 },
    { ok: true as const, parts: 3 },
  ];
  await using t = await setup({ deliver: () => Promise.resolve(outcomes.shift()!) });
  t.pool.start();
  const one = t.inbox.enqueue(event("d1"), Date.now());
  t.pool.wake();
  await t.until(() => t.inbox.counts().done === 1);
  assert.equal(t.inbox.get(one)?.partsSent, 1);
  // Split in five: parts 1–2 sent, then 3–5 on the retry, five in all.
  const two = t.inbox.enqueue(event("d2"), Date.now());
  t.pool.wake();
  await t.until(() => t.inbox.counts().done === 2);
  assert.equal(t.inbox.get(two)?.partsSent, 5);
});

Deno.test("a platform's Retry-After holds the retry back longer than the backoff", async () => {
  await using t = await setup({
    deliver: () =>
      Promise.resolve({ ok: false, retryable: true, error: "HTTP 429", retryAfterMs: 120_000 }),
  });
  t.pool.start();
  const before = Date.now();
  const id = t.inbox.enqueue(event("d1"), before);
  t.pool.wake();
  await t.until(() => t.logs.some((entry) => entry.level === "warning"));
  const waiting = t.inbox.get(id)!;
  assert.equal(waiting.state, "delivering");
  // The backoff alone would be 1 ms (retryBaseMs).
  assert.ok(
    waiting.nextAttemptAt >= before + 120_000,
    `due at ${waiting.nextAttemptAt - before} ms`,
  );
  // The log gives the wait actually used, not the backoff.
  const retry = t.logs.find((entry) => entry.level === "warning")!;
  assert.ok(Number(retry.properties?.wait_seconds) >= 119, String(retry.properties?.wait_seconds));
  assert.equal(t.deliveries.length, 1);
});

Deno.test("delivery retries wait delivery_retry_seconds doubling each time, and never over an hour", async () => {
  let clock = 1_800_000_000_000;
  // The platform asks for 10 h from the fourth attempt on.
  let attempts = 0;
  await using t = await setup({
    now: () => clock,
    retryBaseMs: 1_000,
    maxDeliveryAttempts: 6,
    deliver: () =>
      Promise.resolve({
        ok: false,
        retryable: true,
        error: "HTTP 503",
        ...(++attempts >= 4 ? { retryAfterMs: 10 * 3_600_000 } : {}),
      }),
  });
  const id = t.inbox.enqueue(event("d1"), clock);
  t.pool.start();
  const waits: number[] = [];
  for (let attempt = 1; attempt <= 5; attempt++) {
    await t.until(() =>
      t.deliveries.length === attempt && t.inbox.get(id)!.deliveryAttempts === attempt
    );
    const due = t.inbox.get(id)!.nextAttemptAt;
    waits.push(due - clock);
    // Not taken again before it is due.
    clock = due - 1;
    t.pool.wake();
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(t.deliveries.length, attempt, `attempt ${attempt + 1} waits for its time`);
    clock = due;
    t.pool.wake();
  }
  assert.deepEqual(waits, [1_000, 2_000, 4_000, 3_600_000, 3_600_000]);
  await t.until(() => t.inbox.get(id)!.state === "failed");
  assert.equal(t.deliveries.length, 6);
  const said = t.logs.filter((entry) => entry.level === "warning").map((entry) =>
    entry.properties?.wait_seconds
  );
  assert.deepEqual(said.map(Number), [1, 2, 4, 3600, 3600]);
});

Deno.test("the retry line gives a sub-second wait as it is (delivery_retry_seconds: 0.2 → 0.2 s, not 1 s)", async () => {
  let failures = 1;
  await using t = await setup({
    retryBaseMs: 0.2 * 1000,
    deliver: () =>
      Promise.resolve(
        failures-- > 0 ? { ok: false, retryable: true, error: "HTTP 503" } : { ok: true },
      ),
  });
  t.pool.start();
  t.inbox.enqueue(event("d1"), Date.now());
  t.pool.wake();
  await t.until(() => t.inbox.counts().done === 1);
  const retry = t.logs.find((entry) => entry.level === "warning")!;
  assert.match(
    retry.message,
    /; the next one in \{wait_seconds\} s \(once the cause is fixed, `agent webhook redeliver \{id\}` makes it due now\)$/,
  );
  assert.equal(retry.properties?.wait_seconds, 0.2);
});

Deno.test("the retry line's wait is rounded as `agent webhook events` says the time left", async () => {
  let failures = 1;
  await using t = await setup({
    deliver: () =>
      Promise.resolve(
        failures-- > 0
          ? { ok: false, retryable: true, error: "HTTP 429", retryAfterMs: 89_766 }
          : { ok: true },
      ),
  });
  t.pool.start();
  t.inbox.enqueue(event("d1"), Date.now());
  t.pool.wake();
  await t.until(() => t.logs.some((entry) => entry.level === "warning"));
  const retry = t.logs.find((entry) => entry.level === "warning")!;
  // tests/cli/webhook_events_test.ts: 89.766 s left shows as "in 89.8 s" there too.
  assert.equal(retry.properties?.wait_seconds, 89.8);
});

Deno.test("after a crash, events left running are run and delivered exactly once", async () => {
  const dir = await Deno.makeTempDir();
  const path = join(dir, "inbox.sqlite3");
  try {
    const before = Inbox.open(path);
    before.enqueue(event("a"), 0);
    before.enqueue(event("b"), 1);
    before.take(5); // "a" was running when the process died
    before.close();
    const inbox = Inbox.open(path);
    const runs: string[] = [];
    const delivered: string[] = [];
    let finished!: () => void;
    const allDone = new Promise<void>((resolve) => finished = resolve);
    const pool = new WorkerPool({
      inbox,
      run: (e) => {
        runs.push(e.deliveryId);
        return Promise.resolve(result(e.deliveryId));
      },
      deliver: (e) => {
        delivered.push(e.deliveryId);
        if (delivered.length === 2) queueMicrotask(finished);
        return Promise.resolve({ ok: true });
      },
      log: () => {},
    });
    pool.start();
    await allDone;
    await pool.stop();
    assert.deepEqual(runs.sort(), ["a", "b"]);
    assert.deepEqual(delivered.sort(), ["a", "b"]);
    assert.equal(inbox.counts().done, 2);
    inbox.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an event whose run was interrupted too often is not run again: its notice is delivered", async () => {
  await using t = await setup({});
  const id = t.inbox.enqueue(event("poison"), 0);
  for (let i = 0; i < 3; i++) {
    t.inbox.take(Date.now());
    if (i < 2) t.inbox.recover(Date.now()); // two earlier restarts
  }
  t.pool.start(); // the third restart
  await t.until(() => t.inbox.counts().done === 1);
  assert.deepEqual(t.runs, []);
  assert.equal(t.deliveries.length, 1);
  assert.match(t.deliveries[0].message, /delivery poison\) was interrupted 3 times by a crash/);
  const logged = t.logs.find((entry) => entry.level === "error");
  assert.deepEqual([logged?.properties?.id, logged?.properties?.delivery_id], [id, "poison"]);
});

Deno.test("a worker runs an event only once it is committed as running, and delivers only once the answer is committed", async () => {
  const dir = await Deno.makeTempDir();
  const path = join(dir, "inbox.sqlite3");
  const inbox = Inbox.open(path);
  const reader = new DatabaseSync(path, { readOnly: true });
  const committed = (id: string) =>
    reader.prepare("SELECT state, answer FROM events WHERE id = ?").get(id) as {
      state: string;
      answer: string | null;
    };
  const seen: string[] = [];
  let finished!: () => void;
  const done = new Promise<void>((resolve) => finished = resolve);
  const pool = new WorkerPool({
    inbox,
    run: (e) => {
      seen.push(`run sees ${committed(e.id).state}`);
      return Promise.resolve(result("the answer"));
    },
    deliver: (e, message) => {
      const row = committed(e.id);
      seen.push(`deliver sees ${row.state} with ${row.answer === message ? "its" : "no"} answer`);
      setTimeout(finished, 0);
      return Promise.resolve({ ok: true });
    },
    log: () => {},
  });
  try {
    inbox.enqueue(event("d1"), Date.now());
    pool.start();
    await done;
    assert.deepEqual(seen, ["run sees running", "deliver sees delivering with its answer"]);
  } finally {
    await pool.stop(0);
    reader.close();
    inbox.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an idle pool picks up an event another process requeued, without being woken", async () => {
  await using t = await setup({ idlePollMs: 10 });
  t.pool.start();
  const id = t.inbox.enqueue(event("d1"), Date.now());
  t.pool.wake();
  await t.until(() => t.inbox.counts().done === 1);
  // `agent webhook redeliver` writes through its own connection and cannot call wake(). (Both
  // live on this thread here, so the pool's open transaction is committed first.)
  t.inbox.commit();
  const other = Inbox.open(t.inbox.path);
  try {
    assert.equal(other.requeue(id, { rerun: false }, Date.now()).ok, true);
  } finally {
    other.close();
  }
  await t.until(() => t.deliveries.length === 2);
  assert.deepEqual(t.deliveries.map((d) => d.message), ["answer d1", "answer d1"]);
  assert.deepEqual(t.runs, ["d1"], "redelivery does not run the agent again");
});

Deno.test("a run the stop cuts off ends system_aborted, is queued again without counting as interrupted, is logged with its event, and runs once after the restart", async () => {
  const requested = Promise.withResolvers<void>();
  await using model = startHangingModel(() => requested.resolve());
  const endReasons: string[] = [];
  await using t = await setup({
    // The real run loop, its model never answering: only the stop ends it.
    run: async (e, signal) => {
      const run = await runLoop({
        systemPrompt: "You are the test agent.",
        prompt: e.prompt,
        model: modelClient(model.baseUrl),
        tools: { tools: () => [], callTool: () => Promise.reject(new Error("no tools")) },
        approvals: NEVER_ASK,
        limits: { maxIterations: 5, runTimeoutSeconds: 60 },
        entrypoint: "gateway_message",
        surface: "gateway",
        signal,
      });
      endReasons.push(run.endReason);
      return run;
    },
  });
  t.pool.start();
  const id = t.inbox.enqueue(event("d1"), Date.now());
  t.pool.wake();
  await requested.promise;
  await t.pool.stop(0);
  // A shutdown, not a user's Ctrl-C: the usage metrics count it as such.
  assert.deepEqual(endReasons, ["system_aborted"]);
  assert.deepEqual(t.deliveries, []);
  // The process outlived the run: it is no run that brings the gateway down.
  assert.deepEqual(
    [t.inbox.get(id)?.state, t.inbox.get(id)?.runAttempts],
    ["queued", 0],
    "queued again, its run not counted",
  );
  const stopped = t.logs.find((entry) => /stopped by the gateway's shutdown/.test(entry.message));
  assert.ok(stopped, `no log line for the stopped run: ${JSON.stringify(t.logs)}`);
  assert.equal(stopped.level, "warning");
  assert.deepEqual(stopped.properties, {
    id,
    delivery_id: "d1",
    route: "github",
    interrupted: 0,
    max: 3,
  });
  assert.match(
    stopped.message,
    /it is queued again, and the next `agent gateway run` runs it from the start\. A stop is not counted as an interruption: only crashes or kills of the gateway during its run are, and after \{max\} of them it is not run again \(\{interrupted\} so far\)$/,
  );

  // The restart: a new pool on the same inbox runs it once and delivers it once.
  const delivered: string[] = [];
  const done = Promise.withResolvers<void>();
  const restarted = new WorkerPool({
    inbox: t.inbox,
    run: () => Promise.resolve(result("answer after the restart")),
    deliver: (_e, message) => {
      delivered.push(message);
      done.resolve();
      return Promise.resolve({ ok: true });
    },
    log: () => {},
  });
  restarted.start();
  await done.promise;
  await restarted.stop();
  assert.deepEqual(delivered, ["answer after the restart"]);
  assert.equal(t.inbox.get(id)?.state, "done");
  assert.equal(t.inbox.get(id)?.runAttempts, 1, "the run the stop cut off is not counted");
});

Deno.test("runs aborted before the stop (a second Ctrl-C while requests drain): queued events are not taken", async () => {
  await using t = await setup({
    // Each run lasts until the runs are aborted (as the run loop, it ends at once if they are).
    run: (_e, signal) =>
      new Promise((resolve) => {
        const end = () => resolve(result("", "system_aborted"));
        if (signal.aborted) end();
        else signal.addEventListener("abort", end, { once: true });
      }),
  });
  t.pool.start();
  for (const id of ["d1", "d2", "d3", "d4"]) t.inbox.enqueue(event(id), Date.now());
  t.pool.wake();
  await t.until(() => t.runs.length === 2);
  t.pool.abortRuns();
  // Both cut-off runs have returned, and their workers have looked for more.
  await t.until(() =>
    t.logs.filter((entry) => /stopped by the gateway's shutdown/.test(entry.message)).length === 2
  );
  await t.pool.stop();
  assert.deepEqual(t.runs.toSorted(), ["d1", "d2"]);
  // The two cut off are queued again and run at the next start; the two queued were never
  // started. None counts as an interrupted run.
  assert.deepEqual(t.inbox.counts(), { queued: 4, running: 0, delivering: 0, done: 0, failed: 0 });
  const queued = t.inbox.list({ state: "queued", limit: 10 });
  assert.deepEqual(queued.map((e) => e.runAttempts), [0, 0, 0, 0]);
  // Each keeps its place: the cut-off runs, accepted first, are taken first.
  assert.deepEqual(
    [t.inbox.take(Date.now())?.deliveryId, t.inbox.take(Date.now())?.deliveryId].toSorted(),
    ["d1", "d2"],
  );
});

/**
 * Makes every commit that changes an event fail, as a full disk does (the commit fails, and none
 * of its writes happened): a trigger breaks a deferred foreign key, which only the commit checks.
 * Returns the undo (the disk has room again).
 */
function failCommits(inbox: Inbox): () => void {
  const db = new DatabaseSync(inbox.path);
  db.exec("PRAGMA busy_timeout = 5000");
  db.exec(`
    BEGIN IMMEDIATE;
    CREATE TABLE nowhere (id TEXT PRIMARY KEY);
    CREATE TABLE full_disk (missing TEXT REFERENCES nowhere (id) DEFERRABLE INITIALLY DEFERRED);
    CREATE TRIGGER full_disk AFTER UPDATE ON events BEGIN INSERT INTO full_disk VALUES ('x'); END;
    COMMIT;
  `);
  return () => {
    // A transaction the pool opened this turn holds the write lock until its commit, which runs
    // on this thread: it is made now (and fails, a last time), or the DROP would wait for it in
    // vain.
    inbox.commit();
    db.exec("BEGIN IMMEDIATE; DROP TRIGGER full_disk; COMMIT;");
    db.close();
  };
}

/** `promise`, or a failure naming `what` after 10 s (rather than a test that hangs). */
async function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), 10_000);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** The rows of `events` as committed, read through a connection of its own. */
function committedStates(path: string): string[] {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const rows = db.prepare("SELECT state FROM events ORDER BY id").all() as { state: string }[];
    return rows.map((row) => row.state);
  } finally {
    db.close();
  }
}

Deno.test("while the inbox cannot be written, no event is taken and it is said once; once it can, the event is run and delivered", async () => {
  await using t = await setup({ storeRetryBaseMs: 20 });
  t.inbox.enqueue(event("d1"), Date.now());
  await t.inbox.durable();
  const undo = failCommits(t.inbox);
  t.pool.start();
  await within(t.until(() => t.logs.some((entry) => entry.level === "error")), "the error");
  // Long enough for a loop taking the same event again and again to log thousands of lines.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const errors = t.logs.filter((entry) => entry.level === "error");
  assert.equal(errors.length, 1, `${errors.length} error lines`);
  assert.match(errors[0].message, /^the inbox \{path\} cannot be written \(\{error\}\)/);
  assert.match(String(errors[0].properties?.error), /FOREIGN KEY constraint failed/);
  assert.deepEqual(t.runs, []);
  assert.deepEqual(committedStates(t.inbox.path), ["queued"]);

  undo();
  await within(t.until(() => t.inbox.counts().done === 1), "the event to be delivered");
  assert.deepEqual(t.runs, ["d1"]);
  assert.deepEqual(t.deliveries, [{ id: "d1", message: "answer d1" }]);
  assert(t.logs.some((entry) => /can be written again/.test(entry.message)));
});

Deno.test("a run that ends while the inbox cannot be written keeps its answer until it can: it is recorded and delivered, not left running or run again", async () => {
  const started = Promise.withResolvers<void>();
  const gate = Promise.withResolvers<void>();
  await using t = await setup({
    storeRetryBaseMs: 20,
    run: async () => {
      started.resolve();
      await gate.promise;
      return result("the answer");
    },
  });
  t.inbox.enqueue(event("d1"), Date.now());
  t.pool.start();
  await within(started.promise, "the run to start");
  const undo = failCommits(t.inbox);
  gate.resolve();
  await within(t.until(() => t.logs.some((entry) => entry.level === "error")), "the error");
  await new Promise((resolve) => setTimeout(resolve, 100)); // a few tries, all failing
  assert.deepEqual(committedStates(t.inbox.path), ["running"]);
  assert.deepEqual(t.deliveries, []);

  undo();
  await within(t.until(() => t.inbox.counts().done === 1), "the answer to be delivered");
  assert.deepEqual(t.runs, ["d1"]);
  assert.deepEqual(t.deliveries, [{ id: "d1", message: "the answer" }]);
  assert.equal(t.logs.filter((entry) => entry.level === "error").length, 1);
});

Deno.test("a delivery that succeeds while the inbox cannot be written is recorded once it can, and not sent again", async () => {
  const delivering = Promise.withResolvers<void>();
  const gate = Promise.withResolvers<void>();
  await using t = await setup({
    storeRetryBaseMs: 20,
    deliver: async () => {
      delivering.resolve();
      await gate.promise;
      return { ok: true };
    },
  });
  t.inbox.enqueue(event("d1"), Date.now());
  t.pool.start();
  await within(delivering.promise, "the delivery to start");
  const undo = failCommits(t.inbox);
  gate.resolve();
  await within(t.until(() => t.logs.some((entry) => entry.level === "error")), "the error");
  assert.deepEqual(committedStates(t.inbox.path), ["delivering"]);
  undo();
  await within(t.until(() => t.inbox.counts().done === 1), "the delivery to be recorded");
  assert.equal(t.deliveries.length, 1);
});

Deno.test("while writing an event fails at once (a read-only inbox), the pool neither throws nor spins; once it can, the event is run", async () => {
  await using t = await setup({ storeRetryBaseMs: 20 });
  t.inbox.enqueue(event("d1"), Date.now());
  await t.inbox.durable();
  const db = new DatabaseSync(t.inbox.path);
  db.exec("PRAGMA busy_timeout = 5000");
  db.exec(`CREATE TRIGGER read_only BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'attempt to write a readonly database'); END`);
  try {
    t.pool.start(); // take() throws inside: said, not thrown
    await new Promise((resolve) => setTimeout(resolve, 200)); // the retries, from timers
    const errors = t.logs.filter((entry) => entry.level === "error");
    assert.equal(errors.length, 1);
    assert.match(String(errors[0].properties?.error), /readonly database/);
    assert.deepEqual(t.runs, []);
  } finally {
    t.inbox.commit();
    db.exec("DROP TRIGGER read_only");
    db.close();
  }
  await within(t.until(() => t.inbox.counts().done === 1), "the event to be delivered");
  assert.deepEqual(t.runs, ["d1"]);
});
