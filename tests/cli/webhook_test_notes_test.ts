/**
 * What `agent webhook` says about deliver-only routes: `test` warns that a real message is sent
 * only when the route takes the test's event; `subscribe` warns that skills are never loaded.
 * And what `test` says when a route's template renders blank for its payload (an agent run gets
 * the default prompt, a direct delivery sends nothing), or its script ignored the event.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { cli, parseOneJson, tempHome } from "./_helpers.ts";
import { listeningHome } from "./_listener.ts";

/** Runs `agent webhook subscribe <name> <args>` with `env`; it must succeed. */
async function subscribe(
  home: string,
  name: string,
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<void> {
  const subscribed = await cli(home, ["webhook", "subscribe", name, ...args], { env });
  assert.equal(subscribed.code, 0, subscribed.stderr);
}

/**
 * Subscribes `direct`: its events (default: issues only; `[]`: every event) delivered straight to
 * a Slack channel (deliver-only).
 */
async function subscribeDirectSlack(
  home: string,
  env: Record<string, string>,
  events = ["--events", "issues"],
): Promise<void> {
  const deliver = ["--deliver", "slack", "--deliver-chat-id", "C0123456789", "--deliver-only"];
  await subscribe(home, "direct", [...events, ...deliver], {
    ...env,
    SLACK_BOT_TOKEN: "xoxb-test",
  });
}

Deno.test("test of a deliver-only route: the real-message note only when the route takes the event (any case)", async () => {
  await using h = await listeningHome();
  const { env } = h;
  await subscribeDirectSlack(h.home, env);

  // The default event `test` is not one the route takes: nothing is sent, and no note says so.
  const ignored = await cli(h.home, ["webhook", "test", "direct"], { env });
  assert.equal(ignored.code, 0, ignored.stderr);
  assert.match(ignored.stdout, /HTTP 200\n\{"status":"ignored","event":"test"\}/);
  assert.equal(
    ignored.stderr,
    "note: the route takes only issues events; send one with --event issues\n",
  );

  const sent = await cli(h.home, ["webhook", "test", "direct", "--event", "Issues"], { env });
  assert.equal(sent.code, 0, sent.stderr);
  assert.match(sent.stdout, /"status":"delivered"/);
  assert.equal(
    sent.stderr,
    "note: 'direct' delivers directly (deliver_only): this test sends a real message to slack, " +
      "rendered from the test payload\n",
  );
});

Deno.test("test --json: the notes stderr has (a real message is sent, what to change) are in notes too, each said once", async () => {
  await using h = await listeningHome();
  const { env } = h;
  await subscribeDirectSlack(h.home, env);
  for (
    const [event, note] of [
      ["test", "the route takes only issues events; send one with --event issues"],
      [
        "issues",
        "'direct' delivers directly (deliver_only): this test sends a real message to slack, " +
        "rendered from the test payload",
      ],
    ]
  ) {
    const result = await cli(h.home, ["webhook", "test", "direct", "--event", event, "--json"], {
      env,
    });
    assert.equal(result.code, 0, result.stderr);
    const document = parseOneJson(result.stdout);
    assert.deepEqual([document.warnings, document.notes], [[], [note]], event);
    assert.equal(result.stderr, `note: ${note}\n`, event);
  }
});

Deno.test("subscribe --deliver-only --skills warns that the skills are never loaded (no agent run)", async () => {
  await using h = await tempHome();
  const env = { SLACK_BOT_TOKEN: "xoxb-test", WEBHOOK_ENABLED: "true" };
  const args = ["--deliver", "slack", "--deliver-chat-id", "C0123456789", "--skills", "triage"];
  const direct = await cli(h.home, ["webhook", "subscribe", "direct", ...args, "--deliver-only"], {
    env,
  });
  assert.equal(direct.code, 0, direct.stderr);
  assert.equal(
    direct.stderr,
    "warning: --skills: a --deliver-only route has no agent run, so its skills are never " +
      "loaded; leave --skills out\n",
  );
  // With an agent run, a skill not there yet is what is warned about.
  const run = await cli(h.home, ["webhook", "subscribe", "run", ...args], { env });
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stderr, /^warning: skill 'triage' not found/);
  assert.doesNotMatch(run.stderr, /never loaded/);
});

Deno.test("test of an agent-run route whose template renders blank: the 202's warning, a note on what to change, the default prompt", async () => {
  await using h = await listeningHome();
  const { env } = h;
  await subscribe(h.home, "triage", ["--prompt", "{comment.body}"], env);
  const payload = '{"comment":{"body":" "}}';
  const blank = await cli(h.home, ["webhook", "test", "triage", "--payload", payload], { env });
  assert.equal(blank.code, 0, blank.stderr);
  assert.match(
    blank.stdout,
    /HTTP 202\n\{"status":"accepted",.*"warning":"the route's prompt template renders blank for this payload, so the agent runs on the default prompt \(the event and its payload\)"\}/,
  );
  assert.equal(
    blank.stderr,
    "note: the fields the route's prompt template names are empty in this payload; send one " +
      "that fills them with --payload, or change the template (see `agent webhook list`)\n",
  );
  const fence = "`".repeat(3);
  assert.equal(
    h.listener.inbox.take(Date.now())?.prompt,
    `Webhook event 'test' on route 'triage':\n\n${fence}json\n{\n  "comment": {\n    "body": " "\n  }\n}\n${fence}`,
  );

  const filled = await cli(h.home, [
    "webhook",
    "test",
    "triage",
    "--payload",
    '{"comment":{"body":"LGTM"}}',
  ], {
    env,
  });
  assert.equal(filled.code, 0, filled.stderr);
  assert.doesNotMatch(filled.stdout, /warning/);
  assert.equal(filled.stderr, "");
  assert.equal(h.listener.inbox.take(Date.now())?.prompt, "LGTM");
});

Deno.test("test of a deliver-only route whose template renders blank: says nothing was sent, why, and the fix, not that a real message goes out", async () => {
  const delivered: string[] = [];
  await using h = await listeningHome({
    deliverDirect: (_route, message) => {
      delivered.push(message);
      return Promise.resolve({ ok: true });
    },
    // `scripted`'s script blanks the field its template names: only the answer tells.
    runScript: () => Promise.resolve({ kind: "payload", payload: { comment: { body: "" } } }),
  });
  const { env } = h;
  const slack = ["--deliver", "slack", "--deliver-chat-id", "C0123456789", "--deliver-only"];
  const withToken = { ...env, SLACK_BOT_TOKEN: "xoxb-test" };
  await subscribe(h.home, "direct", ["--prompt", "{comment.body}", ...slack], withToken);
  const payload = '{"comment":{"body":" "}}';
  const blank = await cli(h.home, ["webhook", "test", "direct", "--payload", payload], { env });
  assert.equal(blank.code, 1, blank.stderr);
  assert.match(blank.stdout, /^HTTP 502\n\{"error":"nothing to deliver: /m);
  const nothingSent = "nothing was sent to slack: the route's prompt template renders blank for " +
    "this payload (the fields it names are empty or blank); send one that fills them with " +
    "--payload, or change the template: subscribe it again with another --prompt (agent " +
    "webhook subscribe direct ...)";
  assert.equal(blank.stderr, `note: ${nothingSent}\n`);
  const json = await cli(h.home, ["webhook", "test", "direct", "--payload", payload, "--json"], {
    env,
  });
  assert.equal(json.code, 1, json.stderr);
  assert.deepEqual(parseOneJson(json.stdout).notes, [nothingSent]);

  // Filled, the same route sends a real message, and says so first.
  const filled = await cli(h.home, [
    "webhook",
    "test",
    "direct",
    "--payload",
    '{"comment":{"body":"LGTM"}}',
  ], { env });
  assert.equal(filled.code, 0, filled.stderr);
  assert.match(
    filled.stderr,
    /^note: 'direct' delivers directly \(deliver_only\): this test sends/,
  );
  assert.deepEqual(delivered, ["LGTM"]);

  // A script may blank the fields: the test cannot know before it sends, but says what happened.
  Deno.mkdirSync(join(h.home, "scripts"));
  Deno.writeTextFileSync(join(h.home, "scripts", "blank.sh"), "#!/bin/sh\ncat\n");
  const scriptArgs = ["--script", "blank.sh", "--prompt", "{comment.body}", ...slack];
  await subscribe(h.home, "scripted", scriptArgs, withToken);
  const scripted = await cli(h.home, ["webhook", "test", "scripted", "--payload", payload], {
    env,
  });
  assert.equal(scripted.code, 1, scripted.stderr);
  assert.match(
    scripted.stderr,
    /\nnote: nothing was sent to slack: the route's prompt template renders blank for this payload .* subscribe scripted \.\.\.\)\n$/,
  );
  assert.deepEqual(delivered, ["LGTM"]);
});

Deno.test("test of a route whose script ignored the event: the note names this home's gateway.log by its full path", async () => {
  await using h = await listeningHome({
    runScript: () => Promise.resolve({ kind: "ignored", reason: "exit 1" }),
  });
  const { env } = h;
  Deno.mkdirSync(join(h.home, "scripts"));
  Deno.writeTextFileSync(join(h.home, "scripts", "gate.sh"), "#!/bin/sh\nexit 1\n");
  await subscribe(h.home, "gated", ["--script", "gate.sh"], env);
  const result = await cli(h.home, ["webhook", "test", "gated"], { env });
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /HTTP 200\n\{"status":"ignored","reason":"script"\}/);
  assert.equal(
    result.stderr,
    "note: the route's script ignored the event; see " +
      `${join(h.home, "logs", "gateway.log")} for what it said\n`,
  );
});

Deno.test("test answered 502 or 503 while the log level leaves out the line with the reason: says which setting to lower instead of pointing at the log", async () => {
  await using h = await listeningHome({
    deliverDirect: () => Promise.resolve({ ok: false, error: "slack: HTTP 500" }),
    runScript: () => Promise.resolve({ kind: "blocked", detail: "no such script" }),
  });
  const { env } = h;
  await subscribeDirectSlack(h.home, env, []);
  const log = join(h.home, "logs", "gateway.log");
  // Each test of `direct` also says first that it sends a real message.
  const notes = (stderr: string) =>
    stderr.split("\n").filter((line) => line !== "" && !line.includes("delivers directly"));

  // A failed direct delivery is logged as a warning: AGENT_LOG_LEVEL=error leaves it out.
  const quiet = await cli(h.home, ["webhook", "test", "direct"], {
    env: { ...env, AGENT_LOG_LEVEL: "error" },
  });
  assert.equal(quiet.code, 1, quiet.stderr);
  assert.match(quiet.stdout, /^HTTP 502$/m);
  assert.deepEqual(notes(quiet.stderr), [
    "note: the gateway logs the reason at level warning, and AGENT_LOG_LEVEL is error, so a " +
    `gateway started with it leaves that line out of ${log}; set AGENT_LOG_LEVEL to warning ` +
    "(or lower), restart the gateway and test again",
  ]);

  // The same from config.yaml, which names the file.
  Deno.writeTextFileSync(h.config, "logging:\n  level: Error\n");
  const configured = await cli(h.home, ["webhook", "test", "direct"], { env });
  assert.deepEqual(notes(configured.stderr), [
    "note: the gateway logs the reason at level warning, and logging.level in " +
    `${h.config} is error, so a gateway started with it leaves that line out of ${log}; set ` +
    "logging.level to warning (or lower), restart the gateway and test again",
  ]);

  // At warning the line is written (no gateway runs on this home here, so no line is found).
  const shown = await cli(h.home, ["webhook", "test", "direct"], {
    env: { ...env, AGENT_LOG_LEVEL: "warning" },
  });
  assert.equal(notes(shown.stderr).length, 1, shown.stderr);
  assert.match(
    notes(shown.stderr)[0],
    /^note: the reason is in the gateway's log \(this home's: .*gateway\.log\), under delivery id [0-9a-f-]{36}$/,
  );

  // A script that cannot run is logged as an error: only fatal leaves it out.
  await subscribe(h.home, "scripted", ["--script", "x.sh"], env);
  Deno.removeSync(h.config);
  const blocked = await cli(h.home, ["webhook", "test", "scripted"], {
    env: { ...env, AGENT_LOG_LEVEL: "error" },
  });
  assert.match(blocked.stdout, /^HTTP 503$/m);
  assert.match(blocked.stderr, /^note: the reason is in the gateway's log /m);
  const fatal = await cli(h.home, ["webhook", "test", "scripted"], {
    env: { ...env, AGENT_LOG_LEVEL: "fatal" },
  });
  assert.match(
    fatal.stderr,
    /^note: the gateway logs the reason at level error, and AGENT_LOG_LEVEL is fatal, .* set AGENT_LOG_LEVEL to error \(or lower\)/m,
  );
});

Deno.test("test --payload that is not a JSON object says what is wrong and how to send a file", async () => {
  await using h = await tempHome();
  await subscribe(h.home, "ci");
  const example = `give a JSON object such as --payload '{"action":"opened"}', or an event saved ` +
    `from the sender with --payload "$(cat event.json)"`;
  for (
    const [payload, message] of [
      [
        "@/tmp/event.json",
        '--payload takes the JSON text itself, not a file name: to send a file, write --payload "$(cat /tmp/event.json)"',
      ],
      [
        '{"a":1,}',
        `--payload is not valid JSON (line 1, column 8: expected a property name in double quotes); ${example}`,
      ],
      ["[1]", `--payload is not a JSON object (got an array); ${example}`],
      ["", `--payload is empty; ${example}`],
      // The gateway would answer 400: one key twice is ambiguous.
      [
        '{"a":1,"a":2}',
        '--payload has the key "a" twice in the object at $; each key may appear once per object',
      ],
    ]
  ) {
    const result = await cli(h.home, ["webhook", "test", "ci", "--payload", payload]);
    assert.equal(result.code, 2, payload);
    assert.equal(result.stderr.split("\n")[0], `agent: ${message}`, payload);
  }
});

Deno.test("test says which fields of the prompt template the payload does not have (they are sent as written)", async () => {
  await using h = await listeningHome();
  const { env } = h;
  await subscribe(h.home, "triage", [
    "--prompt",
    "Triage issue #{issue.number}: {issue.title} ({event_type}, {issue.number})",
  ], env);
  const bare = await cli(h.home, ["webhook", "test", "triage", "--event", "issues"], { env });
  assert.equal(bare.code, 0, bare.stderr);
  assert.match(bare.stdout, /HTTP 202/);
  assert.equal(
    bare.stderr,
    "note: the route's prompt template names issue.number and issue.title, which this payload " +
      "does not have, so the prompt holds them as written ({issue.number}); send an event saved " +
      `from the sender with --payload "$(cat event.json)"\n`,
  );
  assert.equal(
    h.listener.inbox.take(Date.now())?.prompt,
    "Triage issue #{issue.number}: {issue.title} (issues, {issue.number})",
  );

  const filled = await cli(h.home, [
    "webhook",
    "test",
    "triage",
    "--event",
    "issues",
    "--payload",
    '{"issue":{"number":7,"title":"Crash"}}',
  ], { env });
  assert.equal(filled.code, 0, filled.stderr);
  assert.equal(filled.stderr, "");
  assert.equal(h.listener.inbox.take(Date.now())?.prompt, "Triage issue #7: Crash (issues, 7)");
});

Deno.test("test of a route with a script: no note on the template's fields, which the script may add", async () => {
  // The listener's script step replaces the payload, as the gateway's does with a script's output.
  await using h = await listeningHome({
    runScript: (_route, payload) =>
      Promise.resolve({
        kind: "payload",
        payload: { ...payload, issue: { number: 7, title: "added by the script" } },
      }),
  });
  const { env } = h;
  Deno.mkdirSync(join(h.home, "scripts"));
  Deno.writeTextFileSync(join(h.home, "scripts", "enrich.sh"), "#!/bin/sh\ncat\n");
  await subscribe(h.home, "triage", [
    "--script",
    "enrich.sh",
    "--prompt",
    "Triage issue #{issue.number}: {issue.title}",
  ], env);
  const result = await cli(h.home, ["webhook", "test", "triage", "--event", "issues"], { env });
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /HTTP 202/);
  assert.equal(result.stderr, "");
  assert.equal(
    h.listener.inbox.take(Date.now())?.prompt,
    "Triage issue #7: added by the script",
  );
});
