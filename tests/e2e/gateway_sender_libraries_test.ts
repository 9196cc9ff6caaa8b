/**
 * The real gateway process with requests signed by the senders' own published libraries
 * (`standardwebhooks`, `@octokit/webhooks-methods`) rather than by this project's helpers, and
 * with GitLab merge request events sent as GitLab sends them, resends included. Deliveries are
 * observed at the local fake platform APIs.
 */
import assert from "node:assert/strict";
import { sign as signWithOctokit } from "@octokit/webhooks-methods";
import { Webhook } from "standardwebhooks";
import { post, startGatewayStack, subscribe } from "./_gateway.ts";

const SLACK = ["--deliver", "slack", "--deliver-chat-id", "C0123456789", "--deliver-only"];

Deno.test("gateway e2e: the standardwebhooks library's signatures are accepted; a replay is a duplicate, a tampered body or a 6-minute-old timestamp 401", async () => {
  await using s = await startGatewayStack();
  const secret = `whsec_${btoa("a sender's key of 32 bytes, here")}`;
  await subscribe(s.home, s.env, "billing", [
    "--secret",
    secret,
    "--events",
    "invoice.paid",
    "--prompt",
    "{data.customer} paid {data.amount_paid} {data.currency}",
    ...SLACK,
  ]);
  // A route's own generated secret has no whsec_ prefix: the sender uses its bytes as the key.
  const plain = await subscribe(s.home, s.env, "plain", ["--prompt", "{data.customer}", ...SLACK]);
  const sender = new Webhook(secret);
  const send = (route: string, id: string, at: Date, body: string, signedBody = body) =>
    post(s.gateway, route, body, {
      "webhook-id": id,
      "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
      "webhook-signature":
        (route === "plain" ? new Webhook(plain.secret, { format: "raw" }) : sender)
          .sign(id, at, signedBody),
    });
  // Non-ASCII text: the signature is over the UTF-8 bytes the sender put on the wire.
  const body = JSON.stringify({
    type: "invoice.paid",
    data: { customer: "Zoë Åberg", amount_paid: 4200, currency: "€" },
  });
  const now = new Date();

  const delivered = await send("billing", "msg_2mZ1", now, body);
  assert.equal(delivered.status, 200, JSON.stringify(delivered.json));
  assert.deepEqual(delivered.json, {
    status: "delivered",
    route: "billing",
    target: "slack",
    delivery_id: "msg_2mZ1",
  });
  assert.deepEqual(s.platforms.slack.requests.map((request) => request.body), [
    { channel: "C0123456789", text: "Zoë Åberg paid 4200 €" },
  ]);

  // The same message again (a sender's retry, or a captured request replayed).
  const again = await send("billing", "msg_2mZ1", now, body);
  assert.equal(again.status, 200);
  assert.deepEqual(again.json, { status: "duplicate", delivery_id: "msg_2mZ1" });

  const tampered = await send("billing", "msg_2mZ2", now, body.replace("4200", "1"), body);
  assert.equal(tampered.status, 401);
  assert.deepEqual(tampered.json, { error: "Invalid signature" });
  // Signed by the library 6 minutes ago: outside the ±5 minutes the spec allows.
  const stale = await send("billing", "msg_2mZ3", new Date(now.getTime() - 360_000), body);
  assert.equal(stale.status, 401);
  assert.deepEqual(stale.json, { error: "Invalid signature" });

  const raw = await send("plain", "msg_2mZ4", now, body);
  assert.equal(raw.status, 200, JSON.stringify(raw.json));
  assert.equal(raw.json.delivery_id, "msg_2mZ4");
  assert.deepEqual(s.platforms.slack.requests.map((request) => request.body), [
    { channel: "C0123456789", text: "Zoë Åberg paid 4200 €" },
    { channel: "C0123456789", text: "Zoë Åberg" },
  ]);
});

Deno.test("gateway e2e: @octokit/webhooks-methods sign() → X-Hub-Signature-256 accepted; a tampered body 401", async () => {
  await using s = await startGatewayStack();
  const sub = await subscribe(s.home, s.env, "gh-issues", [
    "--events",
    "issues",
    "--prompt",
    "{sender.login} opened #{issue.number}: {issue.title}",
    ...SLACK,
  ]);
  const payload = {
    action: "opened",
    issue: { number: 1347, title: "Ünïcode in the title — and an emoji 🐛" },
    repository: { full_name: "octocat/Hello-World" },
    sender: { login: "octocat" },
  };
  const body = JSON.stringify(payload);
  const signature = await signWithOctokit(sub.secret, body);
  const send = (delivery: string, sent: string) =>
    post(s.gateway, sub.name, sent, {
      "x-github-event": "issues",
      "x-github-delivery": delivery,
      "x-hub-signature-256": signature,
    });

  const tampered = await send("d-1", body.replace("1347", "1348"));
  assert.equal(tampered.status, 401);
  assert.deepEqual(tampered.json, { error: "Invalid signature" });
  const delivered = await send("d-2", body);
  assert.equal(delivered.status, 200, JSON.stringify(delivered.json));
  assert.equal(delivered.json.delivery_id, "d-2");
  assert.deepEqual(s.platforms.slack.requests.map((request) => request.body), [
    {
      channel: "C0123456789",
      text: "octocat opened #1347: Ünïcode in the title — and an emoji 🐛",
    },
  ]);
});

/** A GitLab "Merge Request Hook" event, in the shape GitLab's webhook docs give, trimmed. */
function mergeRequestEvent(action: string, iid: number, title: string) {
  return {
    object_kind: "merge_request",
    event_type: "merge_request",
    user: { id: 7, name: "Ada Lovelace", username: "ada" },
    project: {
      id: 4711,
      name: "Engine",
      web_url: "https://gitlab.example.com/analytical/engine",
      path_with_namespace: "analytical/engine",
      default_branch: "main",
    },
    object_attributes: {
      id: 90000 + iid,
      iid,
      title,
      state: action === "merge" ? "merged" : "opened",
      action,
      source_branch: "difference-mode",
      target_branch: "main",
      draft: false,
      url: `https://gitlab.example.com/analytical/engine/-/merge_requests/${iid}`,
    },
    labels: [],
    changes: {},
    repository: { name: "Engine", homepage: "https://gitlab.example.com/analytical/engine" },
  };
}

Deno.test("gateway e2e: GitLab Merge Request Hook → filters on object_attributes.action → note on the MR by {project.id}; a resend (same Idempotency-Key) is a duplicate", async () => {
  const token = "gitlab-hook-token-0123456789";
  await using s = await startGatewayStack({
    routes: {
      "gitlab-mrs": {
        secret: token,
        events: ["Merge Request Hook"],
        filters: { field: "object_attributes.action", in: ["open", "reopen"] },
        prompt: "MR !{object_attributes.iid} by {user.username}: {object_attributes.title}",
        deliver: "gitlab_comment",
        deliver_extra: {
          project: "{project.id}",
          kind: "merge_request",
          iid: "{object_attributes.iid}",
        },
        deliver_only: true,
      },
    },
  });
  /** The headers GitLab 17.4 and later sends: a new event UUID on each send, even a resend. */
  const gitlab = (event: string, idempotencyKey?: string, eventUuid = crypto.randomUUID()) => ({
    "user-agent": "GitLab/18.2.1",
    "x-gitlab-event": event,
    "x-gitlab-token": token,
    "x-gitlab-instance": "https://gitlab.example.com",
    "x-gitlab-webhook-uuid": crypto.randomUUID(),
    "x-gitlab-event-uuid": eventUuid,
    ...(idempotencyKey === undefined ? {} : { "idempotency-key": idempotencyKey }),
  });
  const send = (payload: unknown, headers: Record<string, string>) =>
    post(s.gateway, "gitlab-mrs", JSON.stringify(payload), headers);
  const opened = mergeRequestEvent("open", 17, "Add the difference engine mode");

  const wrong = await send(opened, { ...gitlab("Merge Request Hook"), "x-gitlab-token": "nope" });
  assert.equal(wrong.status, 401);
  assert.deepEqual(wrong.json, { error: "Invalid signature" });
  const issue = await send({ ...opened, object_kind: "issue" }, gitlab("Issue Hook"));
  assert.deepEqual(issue.json, { status: "ignored", event: "Issue Hook" });
  const updated = await send(
    mergeRequestEvent("update", 17, "Edited"),
    gitlab("Merge Request Hook"),
  );
  assert.deepEqual(updated.json, { status: "ignored", reason: "filter" });
  assert.equal(s.platforms.gitlab.requests.length, 0);

  const key = "f5e5f430-f57b-4e6e-9fac-d9128cd7232f";
  const delivered = await send(opened, gitlab("Merge Request Hook", key));
  assert.equal(delivered.status, 200, JSON.stringify(delivered.json));
  assert.deepEqual(delivered.json, {
    status: "delivered",
    route: "gitlab-mrs",
    target: "gitlab_comment",
    delivery_id: key,
  });
  assert.equal(s.platforms.gitlab.requests.length, 1);
  const note = s.platforms.gitlab.requests[0];
  assert.equal(note.method, "POST");
  assert.equal(note.path, "/api/v4/projects/4711/merge_requests/17/notes");
  assert.deepEqual(note.body, { body: "MR !17 by ada: Add the difference engine mode" });
  assert.equal(note.headers["private-token"], s.platforms.gitlab.token);

  // GitLab's "Resend request" (web UI or API) sends the logged request again with the same
  // Idempotency-Key and a new X-Gitlab-Event-UUID: the same event, not a second note.
  const resent = await send(opened, gitlab("Merge Request Hook", key));
  assert.equal(resent.status, 200);
  assert.deepEqual(resent.json, { status: "duplicate", delivery_id: key });
  assert.equal(s.platforms.gitlab.requests.length, 1, "a resend posts no second note");

  // A GitLab before 17.4 sends no Idempotency-Key: the event UUID is the delivery id.
  const uuid = "13792a34-cac6-4fda-95a8-c58e00a3954e";
  const reopened = mergeRequestEvent("reopen", 18, "Try the analytical mode again");
  const older = await send(reopened, gitlab("Merge Request Hook", undefined, uuid));
  assert.equal(older.status, 200, JSON.stringify(older.json));
  assert.equal(older.json.delivery_id, uuid);
  const olderAgain = await send(reopened, gitlab("Merge Request Hook", undefined, uuid));
  assert.deepEqual(olderAgain.json, { status: "duplicate", delivery_id: uuid });
  assert.deepEqual(s.platforms.gitlab.requests.map((request) => [request.path, request.body]), [
    [
      "/api/v4/projects/4711/merge_requests/17/notes",
      { body: "MR !17 by ada: Add the difference engine mode" },
    ],
    [
      "/api/v4/projects/4711/merge_requests/18/notes",
      { body: "MR !18 by ada: Try the analytical mode again" },
    ],
  ]);
});
