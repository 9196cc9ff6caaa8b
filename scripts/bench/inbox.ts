/**
 * Large-inbox benchmark: `deno run -A scripts/bench/inbox.ts [--events 300000] [--payload 1000]
 * [--chunk 1000]`.
 *
 * Builds a gateway inbox (`<home>/gateway/inbox.sqlite3`) holding `--events` events received over
 * the last week and an hour (mostly done, a few still waiting, and the deliveries of one hour
 * three days ago failed in part: failures are rare and come together; payloads of `--payload`
 * bytes), with the delivery-id claims of the last day, as a busy install has them: finished
 * events are kept a week. Then prints, each against a baseline measured in the same run:
 * - `agent webhook events --state failed` (the newest 21 failed events) and
 *   `agent webhook redeliver --failed` (every failed one): `Inbox.list` against the query of
 *   schema version 4 (no partial index serves it) on the same file;
 * - `Inbox.counts` against `GROUP BY state` over the whole table;
 * - the hourly prune (one hour of events expired) and a big one (a day expired, as after a day
 *   without a gateway): `Inbox.prune` in chunks of `--chunk` rows on a copy of the file, against
 *   the prune of version 4 (one transaction, its indexes) on another copy. For each: total time,
 *   the longest stretch the main thread was blocked (the largest gap between turns of a probe
 *   timer), and the longest wait for the answer to a webhook posted while it ran (one every 2 ms,
 *   by a client on a thread of its own, to a server on the main thread that answers 202 once the
 *   writer thread committed the event, as the gateway does);
 * - how long a version 4 inbox of that size takes to open the first time (the upgrade builds the
 *   indexes once);
 * - the cost of the intake's insert (claim and event) in that upgraded file against the version 4
 *   file it came from: the new indexes hold no queued event, so the ratio should stay about 1.
 * Prints figures only; no target makes it fail.
 */
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { parseArgs } from "node:util";
import {
  admit,
  admitStatements,
  type EventState,
  Inbox,
  timeOrderedId,
} from "../../src/gateway/inbox.ts";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** As the gateway keeps finished events. */
const KEEP_MS = 7 * DAY;
/** The default `idempotency_ttl_seconds`. */
const CLAIM_TTL_MS = DAY;
/** The queries of schema version 4, the baseline. */
const V4_LIST_SQL = `SELECT id, route, event, delivery_id, plan, state, run_attempts,
    delivery_attempts, parts_sent, end_reason, error, created_at, updated_at, next_attempt_at,
    leased FROM events
  WHERE (?1 IS NULL OR state = ?1) AND (?2 IS NULL OR route = ?2) ORDER BY id DESC LIMIT ?3`;
const V4_COUNTS_SQL = "SELECT state, COUNT(*) AS n FROM events GROUP BY state";
const V4_PRUNE_CLAIMS_SQL =
  "DELETE FROM claims WHERE expires_at <= ? AND (message_key IS NULL OR expires_at < ?)";
const V4_PRUNE_EVENTS_SQL =
  "DELETE FROM events WHERE state IN ('done', 'failed') AND updated_at < ?";

/**
 * The webhook sender of {@linkcode measurePrune}, a worker: posts every 2 ms whether or not the
 * answers come (as senders do), and reports the longest time to an answer once told to stop.
 */
const CLIENT = `
let stop = false;
self.onmessage = async ({ data }) => {
  if (data === "stop") { stop = true; return; }
  const post = async () => {
    const started = performance.now();
    const response = await fetch(data.url, { method: "POST", body: data.body });
    await response.arrayBuffer();
    if (response.status !== 202) throw new Error("answered " + response.status);
    return performance.now() - started;
  };
  await post();
  self.postMessage({ longestMs: 0, sent: 1 });
  let longestMs = 0;
  let sent = 0;
  const pending = [];
  const started = performance.now();
  while (!stop) {
    pending.push(post().then((ms) => { longestMs = Math.max(longestMs, ms); }));
    sent++;
    const next = started + sent * 2;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - performance.now())));
  }
  await Promise.all(pending);
  self.postMessage({ longestMs, sent });
};
`;

const { values } = parseArgs({
  options: {
    events: { type: "string", default: "300000" },
    payload: { type: "string", default: "1000" },
    chunk: { type: "string", default: "1000" },
  },
});
const events = positiveInt("events", values.events);
const payloadBytes = positiveInt("payload", values.payload);
const chunkRows = positiveInt("chunk", values.chunk);
const PAYLOAD = JSON.stringify({
  action: "opened",
  body: "x".repeat(Math.max(0, payloadBytes - 30)),
});
const PROMPT = `Triage this issue:\n${PAYLOAD.slice(0, Math.floor(payloadBytes / 2))}`;
const PLAN = JSON.stringify({ deliver: "github_comment", deliverExtra: {}, skills: [] });

const dir = await Deno.makeTempDir({ prefix: "inbox-bench-" });
const path = join(dir, "inbox.sqlite3");
const now = Date.UTC(2026, 10, 20, 12);
try {
  let started = performance.now();
  const built = build(path, events, now);
  console.log(
    `inbox of ${events.toLocaleString("en")} events (${
      built.failed.toLocaleString("en")
    } failed), ` +
      `${built.claims.toLocaleString("en")} claims, payloads of ${payloadBytes} bytes: ` +
      `${(Deno.statSync(path).size / 1e6).toFixed(0)} MB, built in ` +
      `${((performance.now() - started) / 1000).toFixed(1)} s\n`,
  );
  const v4 = join(dir, "v4.sqlite3");
  copyFileSync(path, v4);
  toVersion4(v4);
  const v4Upgrade = join(dir, "v4-upgrade.sqlite3");
  copyFileSync(v4, v4Upgrade);
  // Written out now: the first commit's fsync would otherwise write the whole copy, in the
  // middle of a measure.
  for (const file of [path, v4, v4Upgrade]) syncFile(file);

  console.log("query                                    ours          baseline (v4)   ratio");
  {
    using inbox = Inbox.open(path);
    const db = new DatabaseSync(path);
    try {
      const v4List = db.prepare(V4_LIST_SQL);
      const v4Counts = db.prepare(V4_COUNTS_SQL);
      row(
        "webhook events --state failed",
        median(() => inbox.list({ state: "failed", limit: 21 })),
        median(() => v4List.all("failed", null, 21)),
      );
      row(
        "webhook redeliver --failed (the list)",
        median(() => inbox.list({ state: "failed", limit: -1 })),
        median(() => v4List.all("failed", null, -1)),
      );
      row(
        "webhook events --state running",
        median(() => inbox.list({ state: "running", limit: 21 })),
        median(() => v4List.all("running", null, 21)),
      );
      row("counts", median(() => inbox.counts()), median(() => v4Counts.all()));
      checkSame(inbox, v4List, v4Counts);
    } finally {
      db.close();
    }
  }

  const v4Copy = join(dir, "v4-prune.sqlite3");
  copyFileSync(v4, v4Copy);
  // Labelled current, so that the Inbox (and its writer thread, for the intake probe) opens it
  // as it is, with version 4's indexes only.
  const label = new DatabaseSync(v4Copy);
  label.exec("PRAGMA user_version = 5");
  label.close();
  syncFile(v4Copy);
  console.log(
    `\nprune (chunks of ${chunkRows} rows)       total      longest block   longest webhook wait`,
  );
  for (
    const [name, at] of [["hourly (1 h expired)", now], [
      "big (1 day expired)",
      now + DAY,
    ]] as const
  ) {
    const ours = await measurePrune(path, at, (inbox) => inbox.prune(at, KEEP_MS, { chunkRows }));
    const base = await measurePrune(v4Copy, at, (inbox, db) => {
      // What version 4 did: both deletes in one transaction, on its own indexes.
      db.exec("BEGIN IMMEDIATE");
      db.prepare(V4_PRUNE_CLAIMS_SQL).run(at, at - KEEP_MS);
      db.prepare(V4_PRUNE_EVENTS_SQL).run(at - KEEP_MS);
      db.exec("COMMIT");
      return Promise.resolve(inbox);
    });
    if (ours.remaining !== base.remaining) {
      throw new Error(`the prunes disagree: ${ours.remaining} events left, v4 ${base.remaining}`);
    }
    const fmt = (m: PruneFigures) =>
      `${ms(m.totalMs)} ${ms(m.longestBlockMs)} ${ms(m.longestWaitMs)}`;
    console.log(`${name.padEnd(37)} ours ${fmt(ours)}`);
    console.log(`${"".padEnd(37)} v4   ${fmt(base)}`);
    console.log(
      `${"".padEnd(37)} ratio v4/ours: total ${ratio(base.totalMs, ours.totalMs)}, ` +
        `block ${ratio(base.longestBlockMs, ours.longestBlockMs)}, ` +
        `wait ${ratio(base.longestWaitMs, ours.longestWaitMs)}` +
        ` (${ours.deleted.toLocaleString("en")} events deleted in ${ours.chunks} chunks)`,
    );
  }

  started = performance.now();
  Inbox.open(v4Upgrade).close();
  console.log(
    `\nfirst open of a version 4 inbox of ${events.toLocaleString("en")} events (builds the ` +
      `indexes): ${ms(performance.now() - started).trim()}`,
  );
  // The same events, with and without the indexes of version 5.
  const insert = measureInsert(v4Upgrade, v4, now);
  console.log(
    `intake insert (claim + event, 100 a commit): ours ${insert.ours.toFixed(1)} µs/event, ` +
      `v4 ${insert.v4.toFixed(1)} µs/event, ratio ${(insert.ours / insert.v4).toFixed(2)}`,
  );
} finally {
  await Deno.remove(dir, { recursive: true });
}

interface PruneFigures {
  totalMs: number;
  longestBlockMs: number;
  longestWaitMs: number;
  deleted: number;
  remaining: number;
  chunks: number;
}

/**
 * Runs `prune` on the inbox at `file` while a probe timer measures the gaps between turns of the
 * event loop, and a client on a thread of its own posts a webhook every 2 ms to a server on this
 * thread that answers 202 once `Inbox.accept` (through the writer thread) committed its event.
 */
async function measurePrune(
  file: string,
  at: number,
  prune: (inbox: Inbox, db: DatabaseSync) => Promise<unknown>,
): Promise<PruneFigures> {
  const inbox = Inbox.open(file, { writerThread: true });
  const db = new DatabaseSync(file);
  db.exec("PRAGMA busy_timeout = 15000");
  // The events built, not those the intake added.
  const count = () =>
    (db.prepare("SELECT COUNT(*) AS n FROM events WHERE delivery_id NOT LIKE 'during-%'")
      .get() as { n: number }).n;
  let received = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    await request.arrayBuffer();
    await inbox.accept(newEvent(`during-${file}-${at}-${received++}`), at, CLAIM_TTL_MS);
    return new Response(null, { status: 202 });
  });
  const client = new Worker(URL.createObjectURL(new Blob([CLIENT], { type: "text/javascript" })), {
    type: "module",
  });
  const answer = () =>
    new Promise<{ longestMs: number; sent: number }>((resolve, reject) => {
      client.onmessage = (message) => resolve(message.data);
      client.onerror = (event) => reject(new Error(event.message));
    });
  try {
    const before = count();
    const ready = answer();
    client.postMessage({ url: `http://127.0.0.1:${server.addr.port}/`, body: PAYLOAD });
    await ready; // the client is up and its first request was answered
    let longestBlockMs = 0;
    let probing = true;
    let last = performance.now();
    const probe = () => {
      const tick = performance.now();
      longestBlockMs = Math.max(longestBlockMs, tick - last);
      last = tick;
      if (probing) setTimeout(probe, 0);
    };
    setTimeout(probe, 0);
    // The intake runs a little first, as it would.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = performance.now();
    const result = await prune(inbox, db) as { chunks?: number };
    const totalMs = performance.now() - started;
    // The probes' last turn, so that a block at the end is counted too.
    await new Promise((resolve) => setTimeout(resolve, 20));
    probing = false;
    const done = answer();
    client.postMessage("stop");
    const intake = await done;
    const after = count();
    return {
      totalMs,
      longestBlockMs,
      longestWaitMs: intake.longestMs,
      deleted: before - after,
      remaining: after,
      chunks: result.chunks ?? 1,
    };
  } finally {
    client.terminate();
    await server.shutdown();
    db.close();
    inbox.close();
  }
}

/** µs per event of claiming and inserting 20 000 events, 100 a commit, in each file. */
function measureInsert(ours: string, v4: string, at: number): { ours: number; v4: number } {
  let round = 0;
  const time = (file: string) => {
    const db = new DatabaseSync(file);
    db.exec("PRAGMA synchronous = NORMAL"); // as the writer thread has it
    const statements = admitStatements(db);
    const started = performance.now();
    for (let batch = 0; batch < 200; batch++) {
      db.exec("BEGIN IMMEDIATE");
      for (let i = 0; i < 100; i++) {
        const deliveryId = `insert-${round}-${batch}-${i}`;
        admit(statements, {
          id: timeOrderedId(at),
          route: "github",
          event: "issues",
          deliveryId,
          payload: PAYLOAD,
          prompt: PROMPT,
          plan: PLAN,
          nowMs: at,
          expiresAt: at + CLAIM_TTL_MS,
        });
      }
      db.exec("COMMIT");
    }
    const perEvent = (performance.now() - started) * 1000 / 20_000;
    db.close();
    return perEvent;
  };
  // Alternated, best of three each: the two files share the machine's caches alike.
  const figures = { ours: Infinity, v4: Infinity };
  for (; round < 3; round++) {
    figures.v4 = Math.min(figures.v4, time(v4));
    figures.ours = Math.min(figures.ours, time(ours));
  }
  return figures;
}

/**
 * Writes `count` events received evenly over the week and an hour before `now`: queued and
 * running ones in the last minutes, then delivering ones, the rest finished a minute after they
 * arrived (a quarter of one hour's, three days ago, failed). Claims for the last day's events
 * (the older ones are pruned).
 */
function build(file: string, count: number, now: number) {
  Inbox.open(file).close(); // the current schema
  const db = new DatabaseSync(file);
  db.exec("PRAGMA synchronous = OFF");
  const insert = db.prepare(
    `INSERT INTO events (id, route, event, delivery_id, payload, prompt, plan, state, answer,
       end_reason, error, delivery_attempts, created_at, updated_at, next_attempt_at)
     VALUES (?, ?, 'issues', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const claim = db.prepare(
    "INSERT INTO claims (route, delivery_id, expires_at) VALUES (?, ?, ?)",
  );
  const span = KEEP_MS + HOUR;
  // A token that had expired for an hour, three days ago: a quarter of that hour's deliveries
  // gave up (the others went to routes that do not need it).
  const failingFrom = now - 3 * DAY;
  let failed = 0;
  let claims = 0;
  db.exec("BEGIN");
  for (let i = 0; i < count; i++) {
    const received = now - span + Math.floor((i * span) / count);
    const fromEnd = count - i;
    const state: EventState = fromEnd <= 20
      ? "queued"
      : fromEnd <= 24
      ? "running"
      : fromEnd <= 40
      ? "delivering"
      : received >= failingFrom && received < failingFrom + HOUR && i % 4 === 0
      ? "failed"
      : "done";
    if (state === "failed") failed++;
    const route = ["github", "gitlab", "stripe"][i % 3];
    const deliveryId = crypto.randomUUID();
    const finished = state === "done" || state === "failed";
    const updated = finished ? received + 60_000 : received;
    insert.run(
      timeOrderedId(received),
      route,
      deliveryId,
      PAYLOAD,
      PROMPT,
      PLAN,
      state,
      finished ? "The issue is a duplicate of #1200; labelled and closed." : null,
      finished ? "completed" : null,
      state === "failed" ? "github_comment: 502 Bad Gateway" : null,
      finished ? 1 : 0,
      received,
      updated,
      state === "delivering" ? now + 60_000 : received,
    );
    if (received + CLAIM_TTL_MS > now - HOUR) {
      claim.run(route, deliveryId, received + CLAIM_TTL_MS);
      claims++;
    }
  }
  db.exec("COMMIT");
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  db.close();
  return { failed, claims };
}

function syncFile(file: string): void {
  using handle = Deno.openSync(file, { read: true, write: true });
  handle.syncSync();
}

/** Makes `file` what schema version 4 left: without the indexes version 5 added. */
function toVersion4(file: string): void {
  const db = new DatabaseSync(file);
  db.exec(`DROP INDEX events_by_state; DROP INDEX events_finished; PRAGMA user_version = 4;
    PRAGMA wal_checkpoint(TRUNCATE);`);
  db.close();
}

/** Both versions' answers agree (so the figures compare the same work). */
function checkSame(
  inbox: Inbox,
  v4List: StatementSync,
  v4Counts: StatementSync,
): void {
  const ours = inbox.list({ state: "failed", limit: -1 }).map((event) => event.id);
  const base = (v4List.all("failed", null, -1) as { id: string }[]).map((row) => row.id);
  if (ours.join() !== base.join()) throw new Error("the failed events listed differ from v4's");
  const counts = inbox.counts();
  for (const { state, n } of v4Counts.all() as { state: EventState; n: number }[]) {
    if (counts[state] !== n) throw new Error(`counts differ from v4's for ${state}`);
  }
}

function newEvent(deliveryId: string) {
  return {
    route: "github",
    event: "issues",
    deliveryId,
    payload: {},
    payloadJson: PAYLOAD,
    prompt: PROMPT,
    plan: { deliver: "github_comment", deliverExtra: {}, skills: [] },
  };
}

/** The median time of `work`, in ms, over 7 runs after one warm-up run. */
function median(work: () => unknown): number {
  work();
  const times: number[] = [];
  for (let i = 0; i < 7; i++) {
    const started = performance.now();
    work();
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b)[3];
}

function row(name: string, oursMs: number, baseMs: number): void {
  console.log(`${name.padEnd(40)} ${ms(oursMs)}   ${ms(baseMs)}   ${ratio(baseMs, oursMs)}`);
}

function ms(value: number): string {
  return `${value < 10 ? value.toFixed(2) : value.toFixed(0)} ms`.padStart(11);
}

function ratio(base: number, ours: number): string {
  return `${(base / ours).toFixed(base / ours < 10 ? 1 : 0)}×`;
}

function positiveInt(name: string, value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number <= 0) {
    console.error(`--${name} must be a positive whole number, not ${value}`);
    Deno.exit(2);
  }
  return number;
}
