/**
 * The real gateway process with each kind of sender (GitLab, Standard Webhooks, the generic
 * signatures, GitHub), route scripts, and targets that fail or hang. Subscriptions are made through
 * the CLI; deliveries are observed at the local fake platform APIs, runs at the fake model.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { cli, exists, parseOneJson, tempHome } from "../cli/_helpers.ts";
import { freePort } from "../cli/_mcp_helpers.ts";
import {
  assertResentOnce,
  digestRoute,
  discordTexts,
  inboxEvents,
  ISSUES_PAYLOAD,
  nowSeconds,
  paragraphs,
  post,
  postGithub,
  signGeneric,
  signGenericV2,
  signGithub,
  signStandard,
  startGateway,
  startGatewayStack,
  subscribe,
  type Subscription,
  waitUntil,
  within,
  writeGatewayConfig,
} from "./_gateway.ts";

/** The reason a direct delivery of `deliveryId` failed, from the gateway's log ("" if none). */
function directFailure(gateway: { log(): string }, deliveryId: string): string {
  const entries = gateway.log().split("\n").filter(Boolean).map((line) => JSON.parse(line));
  const entry = entries.findLast((entry) =>
    /direct delivery/.test(entry.message) && entry.properties?.delivery_id === deliveryId
  );
  return String(entry?.properties?.error ?? "");
}

/** A GitLab "Issue Hook" event as GitLab documents it, trimmed. */
const GITLAB_ISSUE = {
  object_kind: "issue",
  event_type: "issue",
  user: { id: 1, name: "Administrator", username: "root", email: "admin@example.com" },
  project: {
    id: 1,
    name: "Gitlab Test",
    description: "Aut reprehenderit ut est.",
    web_url: "http://example.com/gitlabhq/gitlab-test",
    path_with_namespace: "gitlabhq/gitlab-test",
    default_branch: "master",
  },
  object_attributes: {
    id: 301,
    iid: 23,
    title: "New API: create/update/delete file",
    description: "Create new API for manipulations with repository",
    state: "opened",
    action: "open",
    url: "http://example.com/gitlabhq/gitlab-test/issues/23",
  },
  labels: [{ id: 206, title: "API", color: "#ffffff" }],
  repository: { name: "Gitlab Test", homepage: "http://example.com/gitlabhq/gitlab-test" },
};

Deno.test("gateway e2e: GitLab token sender → agent run → note on the issue named by the payload; wrong token 401", async () => {
  await using s = await startGatewayStack();
  const sub = await subscribe(s.home, s.env, "gitlab-issues", [
    "--events",
    "Issue Hook",
    "--prompt",
    "GitLab issue {project.path_with_namespace}#{object_attributes.iid}: {object_attributes.title}",
    "--deliver",
    "gitlab_comment",
    "--deliver-extra",
    "project={project.path_with_namespace}",
    "--deliver-extra",
    "iid={object_attributes.iid}",
  ]);
  const body = JSON.stringify(GITLAB_ISSUE);
  const headers = (token: string, uuid: string) => ({
    "x-gitlab-event": "Issue Hook",
    "x-gitlab-token": token,
    "x-gitlab-event-uuid": uuid,
  });

  const wrong = await post(s.gateway, sub.name, body, headers(`${sub.secret}x`, "uuid-wrong"));
  assert.equal(wrong.status, 401);
  assert.deepEqual(wrong.json, { error: "Invalid signature" });

  s.model.push({ content: "Triaged: the file API needs a design review first." });
  const uuid = "13792a34-cac6-4fda-95a8-c58e00a3954e";
  const accepted = await post(s.gateway, sub.name, body, headers(sub.secret, uuid));
  assert.equal(accepted.status, 202);
  assert.deepEqual(accepted.json, {
    status: "accepted",
    route: "gitlab-issues",
    event: "Issue Hook",
    delivery_id: uuid,
  });
  await within(s.platforms.gitlab.waitForRequests(1), "the note at the fake GitLab");
  const note = s.platforms.gitlab.requests[0];
  assert.equal(note.method, "POST");
  assert.equal(note.path, "/api/v4/projects/gitlabhq%2Fgitlab-test/issues/23/notes");
  assert.deepEqual(note.body, { body: "Triaged: the file API needs a design review first." });
  assert.ok(
    note.headers["private-token"] === s.platforms.gitlab.token ||
      note.headers.authorization === `Bearer ${s.platforms.gitlab.token}`,
    "the note is sent with GITLAB_TOKEN",
  );
  assert.equal(s.model.requests.length, 1, "the wrong token started no run");
  assert.equal(
    s.model.requests[0].messages.at(-1)!.content,
    "GitLab issue gitlabhq/gitlab-test#23: New API: create/update/delete file",
  );
  await waitUntil(
    () => inboxEvents(s.home).every((row) => row.state === "done"),
    "the event to be done in the inbox",
  );
  assert.equal(s.platforms.gitlab.requests.length, 1);
});

Deno.test("gateway e2e: Standard Webhooks / Svix sender → Slack; stale timestamp and another route's secret 401", async () => {
  await using s = await startGatewayStack();
  const billingSecret = `whsec_${btoa("0123456789abcdef0123456789abcdef")}`;
  const billing = await subscribe(s.home, s.env, "billing", [
    "--secret",
    billingSecret,
    "--events",
    "invoice.paid",
    "--prompt",
    "Invoice {data.id} paid: {data.amount_paid} {data.currency}",
    "--deliver",
    "slack",
    "--deliver-chat-id",
    "C0123456789",
    "--deliver-only",
  ]);
  assert.equal(billing.secret, billingSecret);
  const other = await subscribe(s.home, s.env, "other", [
    "--deliver",
    "slack",
    "--deliver-chat-id",
    "C0123456789",
    "--deliver-only",
  ]);
  const payload = (id: string) =>
    JSON.stringify({
      type: "invoice.paid",
      timestamp: "2026-03-10T12:00:00Z",
      data: { id, amount_paid: 2000, currency: "usd" },
    });
  const send = (
    prefix: "webhook" | "svix",
    id: string,
    ts: number,
    signature: string,
    body: string,
  ) =>
    post(s.gateway, "billing", body, {
      [`${prefix}-id`]: id,
      [`${prefix}-timestamp`]: String(ts),
      [`${prefix}-signature`]: signature,
    });

  // Several entries (a sender rotating its secret): one valid v1 entry is enough.
  const first = payload("in_1");
  const now = nowSeconds();
  const delivered = await send(
    "webhook",
    "msg_1",
    now,
    `v1,${btoa("not the signature at all, 32 by")} ${
      signStandard(billingSecret, "msg_1", now, first)
    }`,
    first,
  );
  assert.equal(delivered.status, 200, JSON.stringify(delivered.json));
  assert.deepEqual(delivered.json, {
    status: "delivered",
    route: "billing",
    target: "slack",
    delivery_id: "msg_1",
  });
  assert.equal(s.platforms.slack.requests.length, 1);
  assert.equal(s.platforms.slack.requests[0].path, "/api/chat.postMessage");
  assert.deepEqual(s.platforms.slack.requests[0].body, {
    channel: "C0123456789",
    text: "Invoice in_1 paid: 2000 usd",
  });

  const svixBody = payload("in_2");
  const svix = await send(
    "svix",
    "msg_2",
    now,
    signStandard(billingSecret, "msg_2", now, svixBody),
    svixBody,
  );
  assert.equal(svix.status, 200, JSON.stringify(svix.json));
  assert.equal(s.platforms.slack.requests.length, 2);

  // Correctly signed, but the timestamp is more than 300 s away, either way.
  const staleBody = payload("in_3");
  for (const ts of [now - 360, now + 360]) {
    const stale = await send(
      "webhook",
      "msg_3",
      ts,
      signStandard(billingSecret, "msg_3", ts, staleBody),
      staleBody,
    );
    assert.equal(stale.status, 401, `timestamp ${ts - now} s`);
    assert.deepEqual(stale.json, { error: "Invalid signature" });
  }
  // Valid for the route "other", not for "billing".
  const foreign = await send(
    "webhook",
    "msg_4",
    now,
    signStandard(other.secret, "msg_4", now, staleBody),
    staleBody,
  );
  assert.equal(foreign.status, 401);
  // And the other route does accept it: the signature itself is right.
  const there = await post(s.gateway, "other", staleBody, {
    "webhook-id": "msg_4",
    "webhook-timestamp": String(now),
    "webhook-signature": signStandard(other.secret, "msg_4", now, staleBody),
  });
  assert.equal(there.status, 200, JSON.stringify(there.json));
  assert.equal(s.platforms.slack.requests.length, 3, "refused requests reached no target");

  // `webhook test` of a deliver-only route says, before it sends, that a real message goes out.
  const tested = await cli(s.home, ["webhook", "test", "other"], { env: s.env });
  assert.equal(tested.code, 0, tested.stderr);
  assert.match(
    tested.stderr,
    /^note: 'other' delivers directly \(deliver_only\): this test sends a real message to slack, rendered from the test payload$/m,
  );
  assert.match(tested.stdout, /HTTP 200/);
  assert.equal(s.platforms.slack.requests.length, 4);
});

Deno.test("gateway e2e: generic X-Webhook-Signature(-V2) sender → Discord; downgrades to a weaker family refused", async () => {
  await using s = await startGatewayStack();
  const sub = await subscribe(s.home, s.env, "alerts", [
    "--prompt",
    "Alert {alert.name} is {alert.status}",
    "--deliver",
    "discord",
    "--deliver-chat-id",
    "112233445566778899",
    "--deliver-only",
  ]);
  const body = (name: string) =>
    JSON.stringify({ event_type: "alert.fired", alert: { name, status: "firing" } });
  const now = nowSeconds();

  const v2Body = body("disk-full");
  const v2 = await post(s.gateway, "alerts", v2Body, {
    "x-request-id": "req-1",
    "x-webhook-timestamp": String(now),
    "x-webhook-signature-v2": signGenericV2(sub.secret, now, v2Body),
  });
  assert.equal(v2.status, 200, JSON.stringify(v2.json));
  assert.equal(v2.json.status, "delivered");
  const v1Body = body("cpu-hot");
  const v1 = await post(s.gateway, "alerts", v1Body, {
    "x-request-id": "req-2",
    "x-webhook-signature": signGeneric(sub.secret, v1Body),
  });
  assert.equal(v1.status, 200, JSON.stringify(v1.json));
  assert.equal(s.platforms.discord.requests.length, 2);
  assert.equal(
    s.platforms.discord.requests[0].path,
    "/api/v10/channels/112233445566778899/messages",
  );
  assert.deepEqual(
    s.platforms.discord.requests.map((request) => (request.body as { content: string }).content),
    ["Alert disk-full is firing", "Alert cpu-hot is firing"],
  );

  // Each request carries a valid signature of a weaker family and a bad one of a family checked
  // before it: the first family present decides, so each is refused.
  const sneaky = body("sneaky");
  const attempts: Array<[string, Record<string, string>]> = [
    ["valid X-Webhook-Signature + bad X-Webhook-Signature-V2", {
      "x-webhook-signature": signGeneric(sub.secret, sneaky),
      "x-webhook-timestamp": String(now),
      "x-webhook-signature-v2": "0".repeat(64),
    }],
    ["valid X-Webhook-Signature + V2 signed over a stale timestamp", {
      "x-webhook-signature": signGeneric(sub.secret, sneaky),
      "x-webhook-timestamp": String(now - 3600),
      "x-webhook-signature-v2": signGenericV2(sub.secret, now - 3600, sneaky),
    }],
    ["valid X-Webhook-Signature-V2 + bad X-Hub-Signature-256", {
      "x-webhook-timestamp": String(now),
      "x-webhook-signature-v2": signGenericV2(sub.secret, now, sneaky),
      "x-hub-signature-256": `sha256=${"0".repeat(64)}`,
    }],
    ["valid X-Hub-Signature-256 + a lone webhook-signature", {
      "x-hub-signature-256": signGithub(sub.secret, sneaky),
      "webhook-signature": "v1,AAAA",
    }],
  ];
  for (const [what, headers] of attempts) {
    const refused = await post(s.gateway, "alerts", sneaky, {
      "x-request-id": "req-3",
      ...headers,
    });
    assert.equal(refused.status, 401, what);
    assert.deepEqual(refused.json, { error: "Invalid signature" }, what);
  }
  assert.equal(s.platforms.discord.requests.length, 2, "no refused request reached Discord");
});

/** A GitHub `issue_comment` event (created), as GitHub documents it, trimmed. */
const ISSUE_COMMENT = {
  action: "created",
  issue: {
    number: 1347,
    title: "Found a bug",
    state: "open",
    user: { login: "octocat" },
    html_url: "https://github.com/octocat/Hello-World/issues/1347",
  },
  comment: {
    id: 1201202,
    body: "Any news on this? It still happens on main.",
    user: { login: "monalisa" },
    html_url: "https://github.com/octocat/Hello-World/issues/1347#issuecomment-1201202",
  },
  repository: { id: 1296269, full_name: "octocat/Hello-World", private: false },
  sender: { login: "monalisa" },
};

Deno.test("gateway e2e: GitHub issue_comment → agent run → comment on the issue named by the payload", async () => {
  await using s = await startGatewayStack();
  const sub = await subscribe(s.home, s.env, "gh-comments", [
    "--events",
    "issue_comment",
    "--prompt",
    "{comment.user.login} commented on {repository.full_name}#{issue.number}: {comment.body}",
    "--deliver",
    "github_comment",
    "--deliver-extra",
    "repo={repository.full_name}",
    "--deliver-extra",
    "number={issue.number}",
  ]);
  s.model.push({ content: "Thanks @monalisa, a fix is in review." });
  const ignored = await postGithub(s.gateway, sub, "issues", "d-ignored", ISSUE_COMMENT);
  assert.deepEqual(ignored.json, { status: "ignored", event: "issues" });
  const delivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958";
  const accepted = await postGithub(s.gateway, sub, "issue_comment", delivery, ISSUE_COMMENT);
  assert.equal(accepted.status, 202, JSON.stringify(accepted.json));
  await within(s.platforms.github.waitForRequests(1), "the comment at the fake GitHub");
  const comment = s.platforms.github.requests[0];
  assert.equal(comment.path, "/repos/octocat/Hello-World/issues/1347/comments");
  assert.deepEqual(comment.body, { body: "Thanks @monalisa, a fix is in review." });
  assert.match(
    comment.headers.authorization,
    new RegExp(`^(Bearer|token) ${s.platforms.github.token}$`),
  );
  assert.equal(s.model.requests.length, 1);
  assert.equal(
    s.model.requests[0].messages.at(-1)!.content,
    "monalisa commented on octocat/Hello-World#1347: Any news on this? It still happens on main.",
  );
  await waitUntil(
    () => inboxEvents(s.home).every((row) => row.state === "done"),
    "the event to be done in the inbox",
  );
});

Deno.test("gateway e2e: route scripts rewrite the payload, add their output, or skip the event", async () => {
  await using s = await startGatewayStack();
  const scripts = join(s.home, "scripts");
  Deno.mkdirSync(scripts, { recursive: true });
  // A permissionless Deno script: the JSON object it prints replaces the payload.
  Deno.writeTextFileSync(
    join(scripts, "enrich.ts"),
    `const payload = JSON.parse(await new Response(Deno.stdin.readable).text());
const labels = payload.issue.labels.map((label) => label.name);
console.log(JSON.stringify({
  title: payload.issue.title.toUpperCase(),
  priority: labels.includes("urgent") ? "P1" : "P3",
}));
`,
  );
  // A bash script: drafts are skipped ([SILENT]); other text is added as script_output.
  Deno.writeTextFileSync(
    join(scripts, "gate.sh"),
    `payload=$(cat)
case "$payload" in *'"draft":true'*) echo '[SILENT]'; exit 0;; esac
echo "checked $AGENT_WEBHOOK_EVENT $AGENT_WEBHOOK_DELIVERY_ID on $AGENT_WEBHOOK_ROUTE"
`,
  );
  const telegram = ["--deliver", "telegram", "--deliver-chat-id", "-1001234", "--deliver-only"];
  const enrich = await subscribe(s.home, s.env, "enrich", [
    "--script",
    "enrich.ts",
    "--prompt",
    "[{priority}] {title} {issue.title}",
    ...telegram,
  ]);
  const gate = await subscribe(s.home, s.env, "prs", [
    "--script",
    "gate.sh",
    "--prompt",
    "{pull_request.title}: {script_output}",
    ...telegram,
  ]);
  const send = (sub: Subscription, event: string, id: string, payload: unknown) =>
    postGithub(s.gateway, sub, event, id, payload);

  const issue = {
    action: "labeled",
    issue: { number: 7, title: "Payments are down", labels: [{ name: "urgent" }] },
  };
  const enriched = await send(enrich, "issues", "d-enrich", issue);
  assert.equal(enriched.status, 200, JSON.stringify(enriched.json));
  assert.equal(enriched.json.status, "delivered");
  // `{issue.title}` is kept as written: the script's object replaced the whole payload.
  assert.deepEqual(s.platforms.telegram.requests.map((r) => r.body), [
    { chat_id: "-1001234", text: "[P1] PAYMENTS ARE DOWN {issue.title}" },
  ]);

  const pr = (draft: boolean) => ({
    action: "opened",
    pull_request: { number: 12, title: "Add retries", draft },
  });
  const skipped = await send(gate, "pull_request", "d-draft", pr(true));
  assert.equal(skipped.status, 200);
  assert.deepEqual(skipped.json, { status: "ignored", reason: "script" });
  assert.equal(s.platforms.telegram.requests.length, 1, "a skipped event is not delivered");

  const passed = await send(gate, "pull_request", "d-ready", pr(false));
  assert.equal(passed.status, 200, JSON.stringify(passed.json));
  assert.equal(passed.json.status, "delivered");
  assert.deepEqual(s.platforms.telegram.requests.at(-1)!.body, {
    chat_id: "-1001234",
    text: "Add retries: checked pull_request d-ready on prs",
  });
});

Deno.test("gateway e2e: route scripts out of reach (../x, absolute, symlink out, a folder) → 503, never run; one that hangs or floods stdout → ignored; the gateway keeps serving", async () => {
  await using h = await tempHome();
  const scripts = join(h.home, "scripts");
  Deno.mkdirSync(scripts);
  // What an escaped script would do: leave a mark outside the scripts folder.
  const outside = join(h.home, "outside.sh");
  const ran = join(h.home, "escaped");
  Deno.writeTextFileSync(outside, `touch ${ran}\necho '{"escaped":true}'\n`);
  const env = {
    WEBHOOK_PORT: String(freePort()),
    WEBHOOK_SECRET: "a-global-secret-of-32-characters",
  };
  writeGatewayConfig(h.home, {
    webhook: {
      script_timeout_seconds: 1,
      // The sandbox would hide <home> from an escaped script: off, its mark would show.
      script_sandbox: "off",
      // The CLI refuses these (`--script`); config.yaml is read as written.
      routes: { up: { script: "../outside.sh" }, abs: { script: outside } },
    },
  });
  Deno.writeTextFileSync(join(scripts, "ok.sh"), `cat >/dev/null\necho '{"checked":true}'\n`);
  Deno.writeTextFileSync(join(scripts, "hang.sh"), "cat >/dev/null\nexec sleep 600\n");
  Deno.writeTextFileSync(join(scripts, "flood.sh"), "cat >/dev/null\nexec yes\n");
  // Regular files when subscribed; turned into a symlink out and a folder afterwards.
  Deno.writeTextFileSync(join(scripts, "link.sh"), "echo '{}'\n");
  Deno.writeTextFileSync(join(scripts, "ci.sh"), "echo '{}'\n");
  // Static routes use the global secret; subscriptions their own.
  const secrets: Record<string, string> = { up: env.WEBHOOK_SECRET, abs: env.WEBHOOK_SECRET };
  for (const name of ["ok", "hang", "flood", "link", "ci"]) {
    const args = ["--script", `${name}.sh`, "--prompt", "{checked}"];
    secrets[name] = (await subscribe(h.home, env, name, args)).secret;
  }
  Deno.removeSync(join(scripts, "link.sh"));
  Deno.symlinkSync("../outside.sh", join(scripts, "link.sh"));
  Deno.removeSync(join(scripts, "ci.sh"));
  Deno.mkdirSync(join(scripts, "ci.sh"));
  Deno.writeTextFileSync(join(scripts, "ci.sh", "run.sh"), "echo '{}'\n");
  await using gateway = await startGateway(h.home, env);
  const sub = (name: string) => ({ name, secret: secrets[name] });
  let sent = 0;
  const send = (name: string) =>
    postGithub(gateway, sub(name), "issues", `d-${++sent}`, ISSUES_PAYLOAD);
  const assertServing = async (after: string) => {
    const health = await fetch(gateway.url("/health"));
    assert.deepEqual(await health.json(), { status: "ok", platform: "webhook" }, after);
    const good = await send("ok");
    assert.equal(good.status, 202, `a good event after ${after}: ${JSON.stringify(good.json)}`);
  };

  // Said at start, for each static route whose script cannot run.
  for (const name of ["up", "abs"]) {
    assert.match(
      gateway.stderr(),
      new RegExp(`route "?${name}"?: its events are refused \\(503\\) until its script can run`),
    );
  }
  const entries = () => gateway.log().split("\n").filter(Boolean).map((line) => JSON.parse(line));
  const blocked: [string, RegExp][] = [
    ["up", /^route script "\.\.\/outside\.sh" points outside /],
    ["abs", /^route script ".*\/outside\.sh" is an absolute path/],
    ["link", /^route script "link\.sh" resolves to .*\/outside\.sh, outside /],
    ["ci", /^route script "ci\.sh" is a folder/],
  ];
  for (const [name, why] of blocked) {
    const refused = await send(name);
    assert.equal(refused.status, 503, `${name}: ${JSON.stringify(refused.json)}`);
    assert.equal(refused.headers.get("retry-after"), "300", name);
    assert.deepEqual(refused.json, {
      error: "the route's script cannot run; see the gateway's log",
    });
    const id = `d-${sent}`;
    const logged = () => entries().find((entry) => entry.properties?.delivery_id === id);
    await waitUntil(() => logged() !== undefined, `the log line of ${name}`);
    assert.match(String(logged().properties.detail), why, name);
    await assertServing(`the blocked script of ${name}`);
  }
  assert.equal(exists(ran), false, "no script outside the scripts folder ran");

  // A hanging script is killed at script_timeout_seconds, one flooding stdout at the output cap:
  // each event is ignored, and the log says why.
  const hanging = send("hang");
  await assertServing("the start of the hanging script");
  const outcomes: [string, Promise<Awaited<ReturnType<typeof send>>>, RegExp][] = [
    ["hang", hanging, /^route script "hang\.sh" ran longer than 1 s and was killed/],
    [
      "flood",
      send("flood"),
      /^route script "flood\.sh" printed more than \d+ bytes and was killed/,
    ],
  ];
  for (const [name, answer, why] of outcomes) {
    const { status, json } = await within(answer, `the answer for ${name}.sh`);
    assert.deepEqual({ status, json }, {
      status: 200,
      json: { status: "ignored", reason: "script" },
    });
    const logged = () =>
      entries().find((entry) =>
        entry.properties?.route === name && entry.properties?.reason !== undefined
      );
    await waitUntil(() => logged() !== undefined, `the log line of ${name}.sh`);
    assert.match(String(logged().properties.detail), why);
    await assertServing(`${name}.sh`);
  }
});

Deno.test("gateway e2e: a target answering 500 is tried delivery_attempts times, then logged; a deliver-only 502 releases the claim", async () => {
  await using s = await startGatewayStack({ delivery_attempts: 3, delivery_retry_seconds: 0.1 });
  s.platforms.slack.setFallback("server_error");
  const slack = ["--deliver", "slack", "--deliver-chat-id", "C0123456789"];
  const run = await subscribe(s.home, s.env, "flaky", [...slack, "--prompt", "Summarise {id}"]);
  const direct = await subscribe(s.home, s.env, "flaky-direct", [
    ...slack,
    "--deliver-only",
    "--prompt",
    "Event {id}",
  ]);
  const send = (sub: Subscription, id: string) => postGithub(s.gateway, sub, "ping", id, { id });

  s.model.push({ content: "All quiet." });
  const accepted = await send(run, "d-run");
  assert.equal(accepted.status, 202);
  await waitUntil(
    () => inboxEvents(s.home).some((row) => row.delivery_id === "d-run" && row.state === "failed"),
    "the event to be marked failed",
  );
  const [event] = inboxEvents(s.home);
  assert.equal(event.delivery_attempts, 3);
  assert.equal(s.platforms.slack.requests.length, 3, "exactly delivery_attempts tries");
  for (const request of s.platforms.slack.requests) {
    assert.deepEqual(request.body, { channel: "C0123456789", text: "All quiet." });
  }
  // logs/gateway.log is JSON lines: the final line names the event id and the attempts made.
  const finalFailure = () =>
    s.gateway.log().split("\n").filter(Boolean).map((line) => JSON.parse(line)).find((entry) =>
      entry.level === "ERROR" && /failed for good/.test(entry.message) &&
      entry.message.includes(event.id)
    );
  await waitUntil(() => finalFailure() !== undefined, `the final failure line of ${event.id}`);
  assert.equal(finalFailure().properties.id, event.id);
  assert.equal(finalFailure().properties.attempts, 3);

  const failed = await send(direct, "d-direct");
  assert.equal(failed.status, 502);
  assert.equal(failed.json.error, "delivery to slack failed; the reason is in the gateway's log");
  await waitUntil(
    () => /HTTP 500/.test(directFailure(s.gateway, "d-direct")),
    "the reason in the log",
  );
  assert.equal(s.platforms.slack.requests.length, 4);
  s.platforms.slack.setFallback("ok");
  const retried = await send(direct, "d-direct");
  assert.equal(retried.status, 200, JSON.stringify(retried.json));
  assert.deepEqual(retried.json, {
    status: "delivered",
    route: "flaky-direct",
    target: "slack",
    delivery_id: "d-direct",
  });
  assert.equal(s.platforms.slack.requests.length, 5);
  assert.deepEqual(s.platforms.slack.requests[4].body, {
    channel: "C0123456789",
    text: "Event d-direct",
  });
});

Deno.test("gateway e2e: `webhook test` answered 502 or 503 shows the reason the gateway logged", async () => {
  await using s = await startGatewayStack();
  s.platforms.slack.setFallback("server_error");
  await subscribe(s.home, s.env, "direct", [
    "--deliver",
    "slack",
    "--deliver-chat-id",
    "C0123456789",
    "--deliver-only",
    "--prompt",
    "hello",
  ]);
  const log = join(s.home, "logs", "gateway.log");
  const failed = await cli(s.home, ["webhook", "test", "direct"], { env: s.env });
  assert.equal(failed.code, 1, failed.stderr);
  assert.match(failed.stdout, /^HTTP 502$/m);
  const deliveryId = String(
    parseOneJson(failed.stdout.split("\n").slice(2).join("\n")).delivery_id,
  );
  const reason = directFailure(s.gateway, deliveryId);
  assert.match(reason, /HTTP 500/);
  assert.ok(
    failed.stderr.split("\n").includes(
      `note: ${log} says: delivery to slack failed: ${reason}`,
    ),
    failed.stderr,
  );
  const json = await cli(s.home, ["webhook", "test", "direct", "--json"], { env: s.env });
  assert.equal(json.code, 1, json.stderr);
  const answer = parseOneJson(json.stdout);
  assert.equal(answer.status, 502);
  assert.match(String(answer.reason), /^delivery to slack failed: slack: .*HTTP 500/);
  // The notes stderr has, in the document too.
  const notes = [
    "'direct' delivers directly (deliver_only): this test sends a real message to slack, " +
    "rendered from the test payload",
    `${log} says: ${answer.reason}`,
  ];
  assert.deepEqual(answer.notes, notes);
  assert.equal(json.stderr, notes.map((note) => `note: ${note}\n`).join(""));

  // A route whose script is not there: 503, and the log says what to do.
  await subscribe(s.home, s.env, "scripted", ["--script", "triage.sh"]);
  const blocked = await cli(s.home, ["webhook", "test", "scripted"], { env: s.env });
  assert.equal(blocked.code, 1, blocked.stderr);
  assert.match(blocked.stdout, /^HTTP 503$/m);
  assert.match(
    blocked.stderr,
    new RegExp(
      `^note: ${log.replaceAll(".", "\\.")} says: its script cannot run: scripts folder .* does ` +
        'not exist: create it and put "triage\\.sh" there$',
      "m",
    ),
  );
});

Deno.test("gateway e2e: a hanging target times out at 8 s with 502 while /health and other routes keep answering", async () => {
  await using s = await startGatewayStack();
  s.platforms.telegram.push("hang");
  const slow = await subscribe(s.home, s.env, "slow", [
    "--deliver",
    "telegram",
    "--deliver-chat-id",
    "-1001234",
    "--deliver-only",
  ]);
  const fast = await subscribe(s.home, s.env, "fast", [
    "--deliver",
    "discord",
    "--deliver-chat-id",
    "112233445566778899",
    "--deliver-only",
    "--prompt",
    "still here",
  ]);
  const signed = (secret: string, id: string) => {
    const body = JSON.stringify({ id });
    return [body, { "x-request-id": id, "x-hub-signature-256": signGithub(secret, body) }] as const;
  };
  const started = Date.now();
  let settled = false;
  const hanging = post(s.gateway, slow.name, ...signed(slow.secret, "d-slow")).finally(() => {
    settled = true;
  });
  await within(s.platforms.telegram.waitForRequests(1), "the request at the hanging fake");

  const health = await fetch(s.gateway.url("/health"));
  assert.deepEqual(await health.json(), { status: "ok", platform: "webhook" });
  const other = await post(s.gateway, fast.name, ...signed(fast.secret, "d-fast"));
  assert.equal(other.status, 200, JSON.stringify(other.json));
  assert.deepEqual(
    s.platforms.discord.requests.map((r) => (r.body as { content: string }).content),
    ["still here"],
  );
  assert.equal(settled, false, "the hanging delivery is still under way meanwhile");

  const timedOut = await within(hanging, "the 502 of the hanging delivery", 15_000);
  const elapsed = Date.now() - started;
  assert.equal(timedOut.status, 502);
  assert.match(String(timedOut.json.error), /failed; the reason is in the gateway's log$/);
  await waitUntil(
    () => /did not answer within 8 s/.test(directFailure(s.gateway, "d-slow")),
    "the timeout in the log",
  );
  assert.ok(elapsed >= 7_500 && elapsed < 14_000, `answered after ${elapsed} ms`);
});

Deno.test("gateway e2e: a split answer whose third part fails is resumed at that part; nothing is sent twice", async () => {
  await using s = await startGatewayStack({ delivery_attempts: 3, delivery_retry_seconds: 0.1 });
  const sub = await subscribe(s.home, s.env, "long", [
    "--deliver",
    "discord",
    "--deliver-chat-id",
    "1100000000000000001",
    "--prompt",
    "Summarise {id}",
  ]);
  const answer = paragraphs(40, "Finding", "the retry path resends what already went out.", 5);
  s.model.push({ content: answer });
  s.platforms.discord.push("ok", "ok", "server_error");
  const accepted = await postGithub(s.gateway, sub, "ping", "d-long", { id: "d-long" });
  assert.equal(accepted.status, 202);
  await waitUntil(
    () => inboxEvents(s.home).some((row) => row.delivery_id === "d-long" && row.state === "done"),
    "the event to be delivered",
  );
  // Parts 1 and 2, part 3 refused, then parts 3 to the end once each.
  const why = "the refused part is the first one sent again";
  assertResentOnce(discordTexts(s.platforms), 2, answer, why);
  assert.equal(inboxEvents(s.home)[0].delivery_attempts, 2);
});

Deno.test("gateway e2e: deliver-only, a split message failing at part 2 → 502; the sender's retry sends the rest only", async () => {
  await using s = await startGatewayStack();
  const { sub, summary } = await digestRoute(s);
  const send = () => postGithub(s.gateway, sub, "digest", "d-digest", { summary });
  s.platforms.discord.push("ok", "server_error");

  const failed = await send();
  assert.equal(failed.status, 502);
  await waitUntil(
    () => /part 2 of \d+ not sent \(1 sent before it\)/.test(directFailure(s.gateway, "d-digest")),
    "the reason in the log",
  );
  const retried = await send();
  assert.equal(retried.status, 200, JSON.stringify(retried.json));
  assert.equal(retried.json.status, "delivered");
  assertResentOnce(
    discordTexts(s.platforms),
    1,
    summary,
    "the refused part is the first one sent again",
  );

  const again = await send();
  assert.deepEqual(again.json, { status: "duplicate", delivery_id: "d-digest" });
});

Deno.test("gateway e2e: `agent webhook redeliver` sends a failed event again through the running gateway", async () => {
  await using s = await startGatewayStack({ delivery_attempts: 1 });
  s.platforms.slack.setFallback("server_error");
  const sub = await subscribe(s.home, s.env, "flaky", [
    "--deliver",
    "slack",
    "--deliver-chat-id",
    "C0123456789",
    "--prompt",
    "Summarise {id}",
  ]);
  s.model.push({ content: "Seven is fine." });
  const accepted = await postGithub(s.gateway, sub, "ping", "d-redo", { id: 7 });
  assert.equal(accepted.status, 202);
  await waitUntil(
    () => inboxEvents(s.home).some((row) => row.state === "failed"),
    "the event to fail for good",
  );
  const [{ id }] = inboxEvents(s.home);
  const run = (args: string[]) => cli(s.home, ["webhook", ...args], { now: Date.now() });

  const listed = await run(["events", "--state", "failed", "--json"]);
  assert.equal(listed.code, 0, listed.stderr);
  const events = parseOneJson(listed.stdout).events as Record<string, unknown>[];
  assert.deepEqual(events.map((e) => [e.id, e.route, e.delivery_id, e.state, e.deliver]), [
    [id, "flaky", "d-redo", "failed", "slack"],
  ]);
  assert.match(String(events[0].error), /500/);
  const text = await run(["events"]);
  assert.match(text.stdout, new RegExp(`^${id}  failed  flaky \\(ping\\)$`, "m"));
  assert.match(text.stdout, /deliver: +slack \(run completed, 1 delivery attempt\)/);

  // The platform works again: the answer the agent gave is sent, without a second run.
  s.platforms.slack.setFallback("ok");
  const redo = await run(["redeliver", "d-redo"]);
  assert.equal(redo.code, 0, redo.stderr);
  assert.match(redo.stdout, new RegExp(`event ${id} \\(flaky, ping, delivery d-redo\\): queued`));
  assert.match(redo.stdout, /A running gateway picks this up within 5 s/);
  await waitUntil(
    () => inboxEvents(s.home).some((row) => row.id === id && row.state === "done"),
    "the redelivered event to be done",
  );
  const texts = s.platforms.slack.requests.map((request) => request.body);
  assert.deepEqual(texts, [
    { channel: "C0123456789", text: "Seven is fine." },
    { channel: "C0123456789", text: "Seven is fine." },
  ]);
  assert.equal(s.model.requests.length, 1, "the agent ran once");

  // Now done: redelivering it again is allowed, an event under way or unknown is not.
  const none = await run(["redeliver", "--failed", "--json"]);
  assert.deepEqual(parseOneJson(none.stdout), {
    requeued: [],
    refused: [],
    warnings: [],
    notes: [],
  });
  const unknown = await run(["redeliver", "no-such-event"]);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /no event with the id or delivery id 'no-such-event'/);
  const bare = await run(["redeliver"]);
  assert.equal(bare.code, 2);
  assert.match(bare.stderr, /use --failed/);
});

Deno.test("gateway e2e: `agent webhook redeliver` of a delivery waiting for its backoff retry sends it now", async () => {
  // The first retry would come 20 minutes after the failed attempt.
  await using s = await startGatewayStack({ delivery_retry_seconds: 1200 });
  s.platforms.slack.push("server_error");
  const sub = await subscribe(s.home, s.env, "flaky", [
    ...["--deliver", "slack", "--deliver-chat-id", "C0123456789", "--prompt", "Summarise {id}"],
  ]);
  s.model.push({ content: "Seven is fine." });
  assert.equal((await postGithub(s.gateway, sub, "ping", "d-wait", { id: 7 })).status, 202);
  await waitUntil(
    () => inboxEvents(s.home).some((row) => row.delivery_attempts === 1),
    "the first attempt to fail",
  );
  const [{ id, state }] = inboxEvents(s.home);
  assert.equal(state, "delivering");

  // The cause is fixed: the answer goes out now, not in 20 minutes, and the agent does not run.
  const redo = await cli(s.home, ["webhook", "redeliver", "d-wait"], { now: Date.now() });
  assert.equal(redo.code, 0, redo.stderr);
  assert.match(
    redo.stdout,
    new RegExp(
      `^event ${id} \\(flaky, ping, delivery d-wait\\): its delivery to slack was waiting for ` +
        "a retry in 1\\d{3} s; it is due now",
    ),
  );
  await waitUntil(
    () => inboxEvents(s.home).some((row) => row.state === "done"),
    "the delivery made due now",
  );
  assert.deepEqual(s.platforms.slack.requests.map((request) => request.body), [
    { channel: "C0123456789", text: "Seven is fine." },
    { channel: "C0123456789", text: "Seven is fine." },
  ]);
  assert.equal(s.model.requests.length, 1, "the agent ran once");
});
