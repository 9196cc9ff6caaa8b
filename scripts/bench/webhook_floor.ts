/**
 * The durable floor of the webhook benchmark: the least a server can do and still answer 202 only
 * after the event is committed. A bare `Deno.serve` handler that checks the `X-Hub-Signature-256`
 * like webhook_ceiling.ts, parses the body as JSON (400 unless an object), claims its
 * `X-GitHub-Delivery` (200 for a repeat), inserts the raw body into SQLite (`node:sqlite`, WAL,
 * `synchronous = NORMAL`, as our inbox) and answers once the transaction holding it is committed.
 * Commits are grouped: every request of one event-loop turn shares one commit, scheduled with
 * `setImmediate`, which of the schedules tried gave this server its highest rate.
 * Nothing else: no routes, rate limit, events, templates, logging or workers.
 * Prints `listening <port>`. `BENCH_SECRET` is the secret, `BENCH_DB` the database file.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { createHmac, timingSafeEqual } from "node:crypto";
import { DatabaseSync } from "node:sqlite";

const secret = Deno.env.get("BENCH_SECRET");
const path = Deno.env.get("BENCH_DB");
if (!secret || !path) throw new Error("set BENCH_SECRET and BENCH_DB");

const db = new DatabaseSync(path);
db.exec("PRAGMA journal_mode = WAL");
db.exec("PRAGMA synchronous = NORMAL");
db.exec(`CREATE TABLE IF NOT EXISTS claims (delivery_id TEXT PRIMARY KEY) STRICT, WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY, delivery_id TEXT NOT NULL,
    payload TEXT NOT NULL) STRICT`);
const claim = db.prepare("INSERT OR IGNORE INTO claims (delivery_id) VALUES (?)");
const insert = db.prepare("INSERT INTO events (delivery_id, payload) VALUES (?, ?)");

/** Who waits for the open transaction's commit; undefined when none is open. */
let waiting: (() => void)[] | undefined;

function commitSoon(): Promise<void> {
  return new Promise((resolve) => waiting!.push(resolve));
}

function begin(): void {
  db.exec("BEGIN IMMEDIATE");
  waiting = [];
  setImmediate(() => {
    const done = waiting!;
    waiting = undefined;
    db.exec("COMMIT");
    for (const resolve of done) resolve();
  });
}

Deno.serve({
  hostname: "127.0.0.1",
  port: 0,
  onListen: ({ port }) => console.log(`listening ${port}`),
}, async (request) => {
  const bytes = new Uint8Array(await request.arrayBuffer());
  const given = Buffer.from(request.headers.get("x-hub-signature-256") ?? "");
  const expected = Buffer.from(
    `sha256=${createHmac("sha256", secret).update(bytes).digest("hex")}`,
  );
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return new Response(null, { status: 401 });
  }
  const text = new TextDecoder().decode(bytes);
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch {
    return new Response(null, { status: 400 });
  }
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) {
    return new Response(null, { status: 400 });
  }
  const deliveryId = request.headers.get("x-github-delivery") ?? "";
  if (!waiting) begin();
  if (Number(claim.run(deliveryId).changes) === 0) return new Response(null, { status: 200 });
  insert.run(deliveryId, text);
  await commitSoon();
  return new Response(null, { status: 202 });
});
