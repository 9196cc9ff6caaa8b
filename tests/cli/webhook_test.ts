/** `agent webhook list | subscribe | remove | test`, in-process against a temporary home. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { EMPTY_ANSWER, Inbox } from "../../src/gateway/inbox.ts";
import { cli, parseOneJson, tempHome } from "./_helpers.ts";
import { listeningHome } from "./_listener.ts";

function subscriptions(home: string): Record<string, Record<string, unknown>> {
  return JSON.parse(Deno.readTextFileSync(join(home, "webhook_subscriptions.json")));
}

Deno.test("subscribe --json: URL, secret and the stored record; the file is 0600", async () => {
  await using h = await tempHome();
  const result = await cli(h.home, [
    "webhook",
    "subscribe",
    " GitHub Issues ",
    "--events",
    "issues, pull_request",
    "--prompt",
    "New: {issue.title}",
    "--skills",
    "triage",
    "--deliver",
    "telegram",
    "--deliver-chat-id",
    "-100123",
    "--json",
  ]);
  assert.equal(result.code, 0, result.stderr);
  const doc = parseOneJson(result.stdout);
  assert.equal(doc.name, "github-issues");
  assert.equal(doc.webhook_url, "http://localhost:8644/webhooks/github-issues");
  assert.match(String(doc.secret), /^[A-Za-z0-9_-]{43}$/);
  assert.deepEqual(doc.events, ["issues", "pull_request"]);
  assert.equal(doc.platform_enabled, false);
  const stored = subscriptions(h.home)["github-issues"];
  assert.equal(stored.secret, doc.secret);
  assert.deepEqual(stored.deliver_extra, { chat_id: "-100123" });
  assert.equal(stored.description, "Agent-created subscription: github-issues");
  assert.match(String(stored.created_at), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  assert.equal(Deno.statSync(join(h.home, "webhook_subscriptions.json")).mode! & 0o777, 0o600);
});

Deno.test("subscribe again keeps the secret unless --secret is given", async () => {
  await using h = await tempHome();
  await cli(h.home, ["webhook", "subscribe", "ci"]);
  const first = subscriptions(h.home).ci.secret;
  const again = await cli(h.home, ["webhook", "subscribe", "ci", "--prompt", "x"]);
  assert.equal(again.code, 0);
  assert.match(again.stdout, /updated/);
  assert.equal(subscriptions(h.home).ci.secret, first);
  assert.equal(subscriptions(h.home).ci.prompt, "x");
  await cli(h.home, ["webhook", "subscribe", "ci", "--secret", "mine-0123456789ab"]);
  assert.equal(subscriptions(h.home).ci.secret, "mine-0123456789ab");
});

Deno.test("subscribe refuses bad names, unknown targets, --deliver-only with log, script escapes", async () => {
  await using h = await tempHome();
  const cases: [string[], RegExp][] = [
    [["webhook", "subscribe", "../x"], /invalid subscription name/],
    [["webhook", "subscribe", "_x"], /invalid subscription name/],
    [["webhook", "subscribe", "a".repeat(65)], /invalid subscription name/],
    [["webhook", "subscribe", "x", "--deliver", "email"], /unknown --deliver target 'email'; use/],
    [
      ["webhook", "subscribe", "x", "--deliver", "github"],
      /unknown --deliver target 'github' \(did you mean 'github_comment'\?\); use one of log, /,
    ],
    [["webhook", "subscribe", "x", "--deliver-only"], /'log' is not one/],
    [["webhook", "subscribe", "x", "--deliver-only", "--deliver", "log"], /'log' is not one/],
    [["webhook", "subscribe", "x", "--script", "../evil.sh"], /inside <home>\/scripts/],
    [["webhook", "subscribe", "x", "--script", "/etc/passwd"], /inside <home>\/scripts/],
    [["webhook", "subscribe", "x", "--deliver-extra", "novalue"], /KEY=VALUE/],
  ];
  for (const [argv, message] of cases) {
    const result = await cli(h.home, argv);
    assert.equal(result.code, 2, argv.join(" "));
    assert.match(result.stderr, message);
  }
  assert.throws(() => Deno.statSync(join(h.home, "webhook_subscriptions.json")));
});

Deno.test("a subscription cannot take the name of a static route", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(
    join(h.home, "config.yaml"),
    "platforms:\n  webhook:\n    enabled: true\n    extra:\n      routes:\n        deploy:\n          secret: s\n",
  );
  const result = await cli(h.home, ["webhook", "subscribe", "deploy"]);
  assert.equal(result.code, 2);
  assert.match(result.stderr, /static route named 'deploy'/);
  const removed = await cli(h.home, ["webhook", "remove", "deploy"]);
  assert.equal(removed.code, 2);
  assert.match(removed.stderr, /static route/);
});

Deno.test("a static route with problems: list shows it as invalid, and a subscription cannot take its name (fixed, it would shadow it)", async () => {
  await using h = await tempHome();
  const config = join(h.home, "config.yaml");
  Deno.writeTextFileSync(
    config,
    "platforms:\n  webhook:\n    enabled: true\n    extra:\n      routes:\n        stripe:\n" +
      '          secret: static-secret-0123456789\n          deliver_only: "maybe"\n',
  );
  const result = await cli(h.home, ["webhook", "subscribe", "stripe"]);
  assert.equal(result.code, 2, result.stderr);
  assert.ok(
    result.stderr.includes(
      `a static route named 'stripe' is declared at ${config}:6 ` +
        "(platforms.webhook.extra.routes.stripe); a subscription cannot replace it",
    ),
    result.stderr,
  );
  assert.throws(() => Deno.statSync(join(h.home, "webhook_subscriptions.json")));
  // `list` keeps showing it, as invalid, with its problem.
  const listed = await cli(h.home, ["webhook", "list", "--json"]);
  assert.equal(listed.code, 0, listed.stderr);
  const [row] = JSON.parse(listed.stdout).subscriptions;
  assert.equal(row.name, "stripe");
  assert.equal(row.source, "static");
  assert.equal(row.status, "invalid");
  assert.match(row.status_reason, /not served .* until it is fixed in config\.yaml/);
  assert.deepEqual(row.problems, [
    `${config}:6 (platforms.webhook.extra.routes.stripe).deliver_only: expected true or false, got "maybe"`,
  ]);
});

Deno.test("list: says when the platform is off; --json lists static and dynamic routes without secrets", async () => {
  await using h = await tempHome();
  const empty = await cli(h.home, ["webhook", "list"]);
  assert.equal(empty.code, 0);
  assert.match(empty.stdout, /webhook platform is not enabled/);
  await cli(h.home, ["webhook", "subscribe", "ci", "--events", "push"]);
  Deno.writeTextFileSync(
    join(h.home, "config.yaml"),
    "platforms:\n  webhook:\n    enabled: true\n    extra:\n      port: 9000\n      routes:\n        deploy:\n          secret: s\n",
  );
  const listed = await cli(h.home, ["webhook", "ls", "--json"]);
  assert.equal(listed.code, 0);
  const doc = parseOneJson(listed.stdout) as {
    enabled: boolean;
    subscriptions: Record<string, unknown>[];
  };
  assert.equal(doc.enabled, true);
  assert.deepEqual(doc.subscriptions.map((s) => [s.name, s.source]), [
    ["deploy", "static"],
    ["ci", "dynamic"],
  ]);
  assert.equal(doc.subscriptions[1].webhook_url, "http://localhost:9000/webhooks/ci");
  assert.ok(!listed.stdout.includes(subscriptions(h.home).ci.secret as string));
  const text = await cli(h.home, ["webhook", "list"], { env: { WEBHOOK_ENABLED: "false" } });
  assert.match(text.stdout, /not enabled/);
});

Deno.test("remove: deletes the record; an unknown name is a usage error (exit 2)", async () => {
  await using h = await tempHome();
  await cli(h.home, ["webhook", "subscribe", "ci"]);
  const removed = await cli(h.home, ["webhook", "rm", "ci", "--json"]);
  assert.equal(removed.code, 0);
  assert.deepEqual(parseOneJson(removed.stdout), { removed: "ci", warnings: [] });
  assert.deepEqual(subscriptions(h.home), {});
  const missing = await cli(h.home, ["webhook", "remove", "ci"]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /no subscription named 'ci'/);
});

Deno.test("a corrupt subscriptions file is reported and left untouched", async () => {
  await using h = await tempHome();
  const file = join(h.home, "webhook_subscriptions.json");
  Deno.writeTextFileSync(file, "{ not json");
  for (const argv of [["webhook", "list"], ["webhook", "subscribe", "x"], ["webhook", "rm", "x"]]) {
    const result = await cli(h.home, argv);
    assert.equal(result.code, 1, argv.join(" "));
    assert.match(result.stderr, /webhook_subscriptions\.json: not valid JSON/);
  }
  assert.equal(Deno.readTextFileSync(file), "{ not json");
});

Deno.test("a subscriptions file that repeats a name is reported with its lines and never rewritten", async () => {
  await using h = await tempHome();
  const file = join(h.home, "webhook_subscriptions.json");
  assert.equal((await cli(h.home, ["webhook", "subscribe", "q1"])).code, 0);
  const first = subscriptions(h.home).q1;
  // A second q1 pasted by hand: JSON.parse keeps only the last one.
  const second = { ...first, secret: "another-secret-0123456789", prompt: "pasted" };
  const text = `{\n  "q1": ${JSON.stringify(first)},\n  "q1": ${JSON.stringify(second)}\n}\n`;
  Deno.writeTextFileSync(file, text);
  for (
    const argv of [
      ["webhook", "list"],
      ["webhook", "list", "--json"],
      ["webhook", "subscribe", "q9"],
      ["webhook", "rm", "q1"],
    ]
  ) {
    const result = await cli(h.home, argv);
    assert.equal(result.code, 1, argv.join(" "));
    const json = argv.includes("--json");
    const error = json ? parseOneJson(result.stdout || result.stderr).error : undefined;
    assert.match(
      json ? (error as { message: string }).message : result.stderr,
      /webhook_subscriptions\.json: line 3: the file has the key "q1" twice in the object at \$; .*Fix: keep one of the two "q1" keys \(lines 2 and 3\): rename the other record to a new subscription name, or delete it/,
      argv.join(" "),
    );
  }
  assert.equal(Deno.readTextFileSync(file), text);
});

Deno.test("a record that is not an object is listed as invalid; the others are listed and can change", async () => {
  await using h = await tempHome();
  const file = join(h.home, "webhook_subscriptions.json");
  assert.equal((await cli(h.home, ["webhook", "subscribe", "q2"])).code, 0);
  Deno.writeTextFileSync(file, JSON.stringify({ q1: 5, ...subscriptions(h.home) }, null, 2));
  const list = await cli(h.home, ["webhook", "list", "--json"]);
  assert.equal(list.code, 0, list.stderr);
  const rows = parseOneJson(list.stdout).subscriptions as Record<string, unknown>[];
  const q1 = rows.find((row) => row.name === "q1")!;
  assert.equal(q1.status, "invalid");
  assert.deepEqual(q1.problems, [`${file}: q1: expected a mapping of route settings`]);
  assert.equal(rows.find((row) => row.name === "q2")?.status, "active");
  const text = await cli(h.home, ["webhook", "list"]);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /q1/);
  assert.match(text.stdout, /q2/);
  // Other names can be subscribed and removed; q1 stays as it was until it is fixed or removed.
  assert.equal((await cli(h.home, ["webhook", "subscribe", "q9"])).code, 0);
  assert.equal((await cli(h.home, ["webhook", "rm", "q2"])).code, 0);
  assert.deepEqual(Object.keys(subscriptions(h.home)), ["q1", "q9"]);
  assert.equal(subscriptions(h.home).q1, 5);
  const removed = await cli(h.home, ["webhook", "rm", "q1"]);
  assert.equal(removed.code, 0, removed.stderr);
  assert.deepEqual(Object.keys(subscriptions(h.home)), ["q9"]);
});

Deno.test("test: POSTs a signed test event to the running listener and prints its answer", async () => {
  await using h = await listeningHome();
  const { env, listener } = h;
  const { inbox } = listener;
  await cli(h.home, ["webhook", "subscribe", "ci", "--events", "test"], { env });
  const sent = await cli(h.home, ["webhook", "test", "ci", "--json"], { env });
  assert.equal(sent.code, 0, sent.stderr + sent.stdout);
  const doc = parseOneJson(sent.stdout) as { status: number; body: Record<string, unknown> };
  assert.equal(doc.status, 202);
  assert.equal(doc.body.event, "test");
  const event = inbox.take(Date.now())!;
  assert.deepEqual(event.payload, {
    test: true,
    event_type: "test",
    message: "Hello from agent webhook test",
  });
  const custom = await cli(h.home, ["webhook", "test", "ci", "--payload", '{"x":1}'], { env });
  assert.equal(custom.code, 0, custom.stderr);
  assert.match(custom.stdout, /HTTP 202/);
  assert.deepEqual(inbox.take(Date.now())!.payload, { x: 1 });
  const bad = await cli(h.home, ["webhook", "test", "ci", "--payload", "[1]"], { env });
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--payload is not a JSON object \(got an array\)/);
  // A route that takes other events: the default test event is ignored, and the note says how
  // to send one it takes.
  await cli(h.home, ["webhook", "subscribe", "issues", "--events", "issues,issue_comment"], {
    env,
  });
  const ignored = await cli(h.home, ["webhook", "test", "issues"], { env });
  assert.equal(ignored.code, 0, ignored.stderr);
  assert.match(ignored.stdout, /HTTP 200\n\{"status":"ignored","event":"test"\}/);
  assert.equal(
    ignored.stderr,
    "note: the route takes only issues, issue_comment events; send one with --event issues\n",
  );
  const taken = await cli(h.home, ["webhook", "test", "issues", "--event", "issues"], { env });
  assert.match(taken.stdout, /HTTP 202/);
  assert.equal(taken.stderr, "");
  assert.equal(inbox.take(Date.now())!.event, "issues");
  const spaced = await cli(h.home, ["webhook", "test", "issues", "--event", "a\tb"], { env });
  assert.equal(spaced.code, 2);
  assert.match(spaced.stderr, /--event must be a non-empty name/);
  await listener.stop();
  const down = await cli(h.home, ["webhook", "test", "ci"], { env });
  assert.equal(down.code, 1);
  assert.match(down.stderr, /start the gateway with `agent gateway run`/);
});

Deno.test("subscribe --events with no event name is a usage error (leaving it out means all events)", async () => {
  await using h = await tempHome();
  for (const events of ["", ",,", " , "]) {
    const result = await cli(h.home, ["webhook", "subscribe", "ci", "--events", events]);
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /names no event; leave --events out to accept every event/);
  }
  assert.throws(() => Deno.statSync(join(h.home, "webhook_subscriptions.json")));
});

Deno.test("events and redeliver on a home whose gateway never accepted an event: nothing is created", async () => {
  await using h = await tempHome();
  const events = await cli(h.home, ["webhook", "events", "--json"]);
  assert.equal(events.code, 0, events.stderr);
  assert.deepEqual(parseOneJson(events.stdout), { events: [], warnings: [] });
  const text = await cli(h.home, ["webhook", "events"]);
  assert.match(text.stdout, /^No events: the gateway has not accepted an event/);
  const failed = await cli(h.home, ["webhook", "redeliver", "--failed"]);
  assert.equal(failed.code, 0, failed.stderr);
  assert.equal(failed.stdout, "No failed events.\n");
  const byId = await cli(h.home, ["webhook", "redeliver", "some-id"]);
  assert.equal(byId.code, 1);
  assert.match(byId.stderr, /no events: the gateway has not accepted any event/);
  assert.equal(
    [...Deno.readDirSync(h.home)].some((entry) => entry.name === "gateway"),
    false,
    "the inbox is not created by looking at it",
  );
});

Deno.test("events and redeliver refuse bad options with exit 2", async () => {
  await using h = await tempHome();
  for (
    const [argv, message] of [
      [["events", "--state", "lost"], /--state must be one of queued, running, delivering/],
      [["events", "--limit", "0"], /--limit takes a whole number ≥ 1/],
      [["redeliver"], /name the events to redeliver/],
      [["redeliver", "x", "--failed"], /give event ids or --failed, not both/],
      [["redeliver", "x", "--route", "github"], /--route goes with --failed/],
    ] as const
  ) {
    const result = await cli(h.home, ["webhook", ...argv]);
    assert.equal(result.code, 2, argv.join(" "));
    assert.match(result.stderr, message, argv.join(" "));
  }
});

Deno.test("events lists newest first and says when --limit hides some; redeliver --failed --route takes that route's failed events", async () => {
  await using h = await tempHome();
  const path = join(h.home, "gateway", "inbox.sqlite3");
  const plan = { deliver: "slack", deliverExtra: { chat_id: "C1" }, skills: [] };
  const ids: string[] = [];
  {
    using inbox = Inbox.open(path);
    for (const [route, deliveryId] of [["a", "d1"], ["b", "d2"], ["a", "d3"]]) {
      const id = inbox.enqueue(
        { route, event: "push", deliveryId, payload: {}, prompt: "p", plan },
        1,
      );
      inbox.take(1);
      inbox.finishRun(id, { answer: "x", endReason: "completed", deliver: true }, 2);
      inbox.recordDelivery(id, { ok: false, error: "channel_not_found" }, 3);
      ids.push(id);
    }
  }
  const limited = await cli(h.home, ["webhook", "events", "--limit", "2"]);
  assert.deepEqual(
    limited.stdout.split("\n").filter((line) => /^\S+ {2}failed/.test(line)).map((line) =>
      line.split(" ")[0]
    ),
    [ids[2], ids[1]],
  );
  assert.match(limited.stdout, /\(the newest 2; --limit shows more\)/);
  const all = await cli(h.home, ["webhook", "events", "--limit", "3"]);
  assert.doesNotMatch(all.stdout, /--limit shows more/);

  const redo = await cli(h.home, ["webhook", "redeliver", "--failed", "--route", "a", "--json"]);
  assert.equal(redo.code, 0, redo.stderr);
  const { requeued, refused } = parseOneJson(redo.stdout) as {
    requeued: { id: string; state: string; previous_state: string }[];
    refused: unknown[];
  };
  assert.deepEqual(requeued.map((e) => [e.id, e.state, e.previous_state]), [
    [ids[0], "delivering", "failed"],
    [ids[2], "delivering", "failed"],
  ]);
  assert.deepEqual(refused, []);
  // Requeued again before the gateway took them: refused, exit 1, the reason given.
  const again = await cli(h.home, ["webhook", "redeliver", ids[0]]);
  assert.equal(again.code, 1);
  assert.match(again.stderr, /not requeued: it is delivering already and due now/);
  const states = await cli(h.home, ["webhook", "events", "--json"]);
  assert.deepEqual(
    (parseOneJson(states.stdout).events as { id: string; state: string }[]).map((e) => e.state),
    ["delivering", "failed", "delivering"],
  );
});

Deno.test("redeliver of a run without an answer says its notice goes out and that --rerun runs it again, an empty answer too; --json lists those notes, each naming its event", async () => {
  await using h = await tempHome();
  const plan = { deliver: "slack", deliverExtra: { chat_id: "C1" }, skills: [] };
  const ids: Record<string, string> = {};
  {
    using inbox = Inbox.open(join(h.home, "gateway", "inbox.sqlite3"));
    const ended = (deliveryId: string, run: { answer: string; endReason: string }) => {
      const id = inbox.enqueue(
        { route: "ci", event: "push", deliveryId, payload: {}, prompt: "p", plan },
        1,
      );
      inbox.take(1);
      inbox.finishRun(id, { ...run, error: "why the run ended so", deliver: true }, 2);
      // The delivery's error replaces the run's.
      inbox.recordDelivery(id, { ok: false, error: "no_text" }, 3);
      return id;
    };
    const notice = "The agent run for ci (push, delivery d-empty) ended without an answer: the " +
      "model's answer was empty. The gateway log has the details.";
    ids.empty = ended("d-empty", { answer: notice, endReason: EMPTY_ANSWER });
    // As an older version kept it: the empty answer itself, which every platform refuses.
    ids.old = ended("d-old", { answer: "", endReason: "completed" });
    ids.failed = ended("d-failed", { answer: "The agent run … failed.", endReason: "failed" });
    ids.answered = ended("d-answered", { answer: "Deployed", endReason: "completed" });
    // For --json, which must name the event of each note.
    ids.emptyJson = ended("d-empty-json", { answer: notice, endReason: EMPTY_ANSWER });
    ids.failedJson = ended("d-failed-json", {
      answer: "The agent run … failed.",
      endReason: "failed",
    });
    ids.answeredJson = ended("d-answered-json", { answer: "Deployed", endReason: "completed" });
  }
  const note = (why: string) =>
    `note: ${why}, so what is delivered is the notice saying so; add --rerun to run the agent ` +
    "again\n";
  for (
    const [key, expected] of [
      ["empty", note("the model's answer was empty when it ran")],
      ["old", note("the model's answer was empty when it ran")],
      ["failed", note("its run ended failed")],
      ["answered", ""],
    ] as const
  ) {
    const redo = await cli(h.home, ["webhook", "redeliver", ids[key]]);
    assert.equal(redo.code, 0, redo.stderr);
    assert.match(redo.stdout, /: queued for delivery to slack again\n/);
    assert.equal(redo.stderr, expected, key);
  }
  const json = await cli(h.home, [
    "webhook",
    "redeliver",
    ids.answeredJson,
    ids.emptyJson,
    ids.failedJson,
    "--json",
  ]);
  assert.equal(json.code, 0, json.stderr);
  const notes = [
    `event ${ids.emptyJson} (ci, push, delivery d-empty-json): ` +
    note("the model's answer was empty when it ran").slice("note: ".length, -1),
    `event ${ids.failedJson} (ci, push, delivery d-failed-json): ` +
    note("its run ended failed").slice("note: ".length, -1),
  ];
  const document = parseOneJson(json.stdout);
  assert.deepEqual(document.notes, notes);
  assert.equal((document.requeued as unknown[]).length, 3);
  assert.equal(json.stderr, notes.map((text) => `note: ${text}\n`).join(""));
  using inbox = Inbox.open(join(h.home, "gateway", "inbox.sqlite3"));
  const old = inbox.get(ids.old)!;
  assert.deepEqual(
    [old.answer, old.endReason],
    [
      "The agent run for ci (push, delivery d-old) ended without an answer: the model's answer " +
      "was empty. The gateway log has the details.",
      EMPTY_ANSWER,
    ],
    "the notice goes out, not the empty answer again",
  );
});

Deno.test("test: a port that accepts but never answers is reported as no answer, not as unreachable", async () => {
  await using h = await tempHome();
  const silent = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of silent) held.push(conn);
  })();
  try {
    const port = (silent.addr as Deno.NetAddr).port;
    Deno.writeTextFileSync(
      join(h.home, "config.yaml"),
      `platforms:\n  webhook:\n    enabled: true\n    extra:\n      host: 127.0.0.1\n      port: ${port}\n`,
    );
    const sub = await cli(h.home, ["webhook", "subscribe", "quiet"]);
    assert.equal(sub.code, 0, sub.stderr);
    const started = performance.now();
    const result = await cli(h.home, ["webhook", "test", "quiet", "--timeout", "0.3"]);
    const waited = performance.now() - started;
    assert.equal(result.code, 1);
    // Given up after the 0.3 s asked for (the message says 0.3 s whatever the timer was).
    assert.ok(waited >= 250 && waited < 2_000, `gave up after ${Math.round(waited)} ms`);
    assert.match(
      result.stderr,
      /no answer from http:\/\/127\.0\.0\.1:\d+\/webhooks\/quiet within 0\.3 s: something accepts connections/,
    );
    assert.doesNotMatch(result.stderr, /cannot reach/);
    const bad = await cli(h.home, ["webhook", "test", "quiet", "--timeout", "soon"]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--timeout takes a number of seconds > 0/);
    // Past 2 147 483 s the timer would fire at once: "no answer within 3000000 s".
    for (const value of ["3000000", "86401", "Infinity"]) {
      const long = await cli(h.home, ["webhook", "test", "quiet", "--timeout", value]);
      assert.equal(long.code, 2, value);
      assert.match(long.stderr, /--timeout takes a number of seconds > 0, at most 86400/, value);
    }
  } finally {
    silent.close();
    await accepting.catch(() => {});
    for (const conn of held) conn.close();
  }
});

Deno.test("subscribe again warns that hand-written filters and enabled: false are not kept (no option sets them)", async () => {
  await using h = await tempHome();
  await cli(h.home, ["webhook", "subscribe", "ci", "--events", "issues"]);
  const file = join(h.home, "webhook_subscriptions.json");
  const records = subscriptions(h.home);
  records.ci.filters = { field: "payload.action", equals: "closed" };
  records.ci.enabled = false;
  Deno.writeTextFileSync(file, JSON.stringify(records, null, 2));

  const again = await cli(h.home, ["webhook", "subscribe", "ci", "--events", "issues", "--json"]);
  assert.equal(again.code, 0, again.stderr);
  const warning = "re-subscribing replaced the whole record of 'ci', and no option of subscribe " +
    "sets what was written into it by hand: its `filters` are not kept (it now takes every " +
    "event --events allows); its `enabled: false` is not kept (it is served again). To keep " +
    `them, add them to "ci" in ${file} again`;
  assert.ok(
    (parseOneJson(again.stdout).warnings as string[]).includes(warning),
    again.stdout,
  );
  assert.ok(again.stderr.startsWith(`warning: ${warning}\n`), again.stderr);
  assert.equal(subscriptions(h.home).ci.filters, undefined);

  // Nothing written by hand, nothing said.
  const third = await cli(h.home, ["webhook", "subscribe", "ci", "--events", "issues"]);
  assert.equal(third.code, 0, third.stderr);
  assert.doesNotMatch(third.stderr, /re-subscribing/);

  // Nor for `filters: []`, which takes every event already: nothing changes.
  const empty = subscriptions(h.home);
  empty.ci.filters = [];
  Deno.writeTextFileSync(file, JSON.stringify(empty, null, 2));
  const fourth = await cli(h.home, ["webhook", "subscribe", "ci", "--events", "issues"]);
  assert.equal(fourth.code, 0, fourth.stderr);
  assert.doesNotMatch(fourth.stderr, /re-subscribing/);
});

Deno.test("list shows a route's filters (text and --json), so a filtered route does not look like it takes every event", async () => {
  await using h = await tempHome();
  await cli(h.home, ["webhook", "subscribe", "ci", "--events", "issues"]);
  await cli(h.home, ["webhook", "subscribe", "plain"]);
  const records = subscriptions(h.home);
  records.ci.filters = { field: "payload.action", equals: "closed" };
  Deno.writeTextFileSync(
    join(h.home, "webhook_subscriptions.json"),
    JSON.stringify(records, null, 2),
  );
  const text = await cli(h.home, ["webhook", "list"]);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /\n {2}filters: \{"field":"payload\.action","equals":"closed"\}\n/);
  assert.equal(text.stdout.match(/filters:/g)?.length, 1, text.stdout);
  const json = parseOneJson((await cli(h.home, ["webhook", "list", "--json"])).stdout) as {
    subscriptions: Record<string, unknown>[];
  };
  assert.deepEqual(json.subscriptions.map((row) => [row.name, row.filters]), [
    ["ci", { field: "payload.action", equals: "closed" }],
    ["plain", null],
  ]);
});
