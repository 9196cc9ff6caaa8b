/**
 * Empty messages against the real gateway process and the fake Telegram API (which refuses an
 * empty text as the real one does): a run whose model answers with no text delivers the notice
 * of a run without an answer (and so does its redelivery, with a note on --rerun), a deliver-only
 * route whose template renders empty fails (502) without calling the platform, and an agent run
 * whose template renders blank gets the default prompt.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Inbox } from "../../src/gateway/inbox.ts";
import { cli, parseOneJson, tempHome } from "../cli/_helpers.ts";
import { freePort } from "../cli/_mcp_helpers.ts";
import { startFakeModel } from "../fixtures/fake_model.ts";
import { startFakePlatforms } from "../fixtures/fake_platforms.ts";
import {
  inboxIdle,
  inboxQuery,
  logEntries,
  postGithub,
  startGateway,
  subscribe,
  waitUntil,
  writeGatewayConfig,
} from "./_gateway.ts";

/** The prompt of a route without a template (decisions.md §6), written out independently. */
function defaultPrompt(route: string, event: string, payload: unknown): string {
  const fence = "`".repeat(3);
  return `Webhook event '${event}' on route '${route}':\n\n${fence}json\n` +
    `${JSON.stringify(payload, null, 2)}\n${fence}`;
}

/** The content of the user message of a request to the model. */
function userMessage(request: { messages: Array<Record<string, unknown>> }): unknown {
  return request.messages.find((message) => message.role === "user")?.content;
}

Deno.test("gateway e2e: an empty model answer delivers a notice (redelivered: the notice again), a cut-off one is logged; a template that renders blank: deliver-only fails without a platform call, an agent run gets the default prompt", async (t) => {
  await using h = await tempHome();
  await using model = await startFakeModel({ turns: [{ content: "" }] });
  await using platforms = await startFakePlatforms();
  const env = { WEBHOOK_PORT: String(freePort()), ...platforms.env };
  writeGatewayConfig(h.home, {
    modelBaseUrl: model.baseUrl,
    apiBaseUrls: { telegram: platforms.baseUrls.telegram },
  });
  const chat = ["--deliver", "telegram", "--deliver-chat-id", "-1001234"];
  const triage = await subscribe(h.home, env, "triage", [...chat, "--prompt", "Triage {title}"]);
  const direct = await subscribe(h.home, env, "direct", [
    ...chat,
    "--deliver-only",
    "--prompt",
    "{comment.body}",
  ]);
  const comments = await subscribe(h.home, env, "comments", [
    ...chat,
    "--prompt",
    "{comment.body}",
  ]);
  // As an older version kept the event of a template that rendered blank: an empty prompt, and
  // the model's empty answer as it was, whose delivery every platform refused.
  const oldPayload = { comment: { body: "" } };
  let old: string;
  {
    using inbox = Inbox.open(join(h.home, "gateway", "inbox.sqlite3"));
    old = inbox.enqueue({
      route: "comments",
      event: "issue_comment",
      deliveryId: "d-old",
      payload: oldPayload,
      prompt: "",
      plan: { deliver: "telegram", deliverExtra: { chat_id: "-1001234" }, skills: [] },
    }, Date.now());
    inbox.take(Date.now());
    inbox.finishRun(old, { answer: "", endReason: "completed", deliver: true }, Date.now());
    inbox.recordDelivery(
      old,
      { ok: false, error: "Bad Request: message text is empty" },
      Date.now(),
    );
  }

  const telegramTexts = () =>
    platforms.telegram.requests.map((request) => (request.body as { text: string }).text);

  const gateway = await startGateway(h.home, env);
  try {
    await t.step("an empty answer: the notice of a run without an answer", async () => {
      const accepted = await postGithub(gateway, triage, "issues", "d-empty", {
        title: "Found a bug",
      });
      assert.equal(accepted.status, 202);
      await waitUntil(() => model.requests.length === 1 && inboxIdle(h.home), "the event to end");
      assert.equal(platforms.telegram.requests.length, 1, "the notice, sent once");
      assert.deepEqual(platforms.telegram.requests[0].body, {
        chat_id: "-1001234",
        text: "The agent run for triage (issues, delivery d-empty) ended without an answer: the " +
          "model's answer was empty. The gateway log has the details.",
      });
      const events = await cli(h.home, ["webhook", "events", "--json"]);
      assert.equal(events.code, 0, events.stderr);
      const event = (parseOneJson(events.stdout) as { events: Record<string, unknown>[] }).events
        .find((event) => event.delivery_id === "d-empty")!;
      assert.equal(event.state, "done");
      assert.equal(event.end_reason, "empty_answer");
      assert.equal(event.delivery_attempts, 1);
      assert.match(
        String(event.error),
        /^the model gave an empty answer \(no text and no tool calls/,
      );
      await waitUntil(
        () =>
          logEntries(gateway.log()).some(({ level, message, properties }) =>
            level === "WARN" &&
            /a notice saying so is delivered instead\. `agent webhook redeliver "[^"]+" --rerun` runs the agent on it again$/
              .test(message) &&
            properties.id === event.id && properties.delivery_id === "d-empty" &&
            properties.route === "triage"
          ),
        "the warning naming the event",
      );
    });

    await t.step("a cut-off answer is delivered, and the log says it was cut off", async () => {
      model.push({
        status: 200,
        body: {
          id: "chatcmpl-cut",
          object: "chat.completion",
          model: "fake",
          choices: [{
            index: 0,
            message: { role: "assistant", content: "Labelled it as a b" },
            finish_reason: "length",
          }],
        },
      });
      const accepted = await postGithub(gateway, triage, "issues", "d-cut", { title: "Long one" });
      assert.equal(accepted.status, 202);
      await waitUntil(() => model.requests.length === 2 && inboxIdle(h.home), "the event to end");
      assert.deepEqual(platforms.telegram.requests.at(-1)?.body, {
        chat_id: "-1001234",
        text: "Labelled it as a b",
      });
      await waitUntil(
        () =>
          logEntries(gateway.log()).some(({ level, message }) =>
            level === "WARN" &&
            /^the answer was cut off at the model's output token limit/.test(message)
          ),
        "the warning of the cut-off answer in the log",
      );
    });

    // As any failed direct delivery (decisions.md §6): 502, the claim released, so the sender's
    // retry is delivered once the route's prompt is fixed.
    await t.step("deliver-only, a template that renders empty: 502, nothing sent", async () => {
      const blank = { comment: { body: " \n " } };
      const sent = () => platforms.telegram.requests.length;
      const before = sent();
      for (let attempt = 0; attempt < 2; attempt++) {
        const failed = await postGithub(gateway, direct, "issue_comment", "d-blank", blank);
        assert.equal(failed.status, 502, `attempt ${attempt}: the retry is not a duplicate`);
        assert.match(String(failed.json?.error), /renders an empty message for this payload$/);
      }
      assert.equal(sent(), before, "nothing more was sent");
      await waitUntil(
        () =>
          logEntries(gateway.log()).some(({ level, message, properties }) =>
            level === "WARN" && /renders an empty message for this payload/.test(message) &&
            properties.route === "direct" && properties.delivery_id === "d-blank"
          ),
        "the warning naming the route and the delivery",
      );
    });
    await t.step(
      "agent run, a template that renders blank: the model gets the default prompt",
      async () => {
        model.push({ content: "Nothing was said." });
        const accepted = await postGithub(gateway, comments, "issue_comment", "d-blank-run", {
          comment: { body: " " },
        });
        assert.equal(accepted.status, 202);
        assert.match(String(accepted.json.warning), /^the route's prompt template renders blank/);
        await waitUntil(() => model.requests.length === 3 && inboxIdle(h.home), "the event to end");
        assert.equal(
          userMessage(model.requests[2]),
          defaultPrompt("comments", "issue_comment", { comment: { body: " " } }),
        );
        assert.equal(telegramTexts().at(-1), "Nothing was said.");
        await waitUntil(
          () =>
            logEntries(gateway.log()).some(({ level, message, properties }) =>
              level === "WARN" &&
              /the prompt template renders blank for this payload/.test(message) &&
              properties.route === "comments" && properties.delivery_id === "d-blank-run"
            ),
          "the warning naming the route and the delivery",
        );
      },
    );

    await t.step(
      "redeliver of an empty answer: its notice, a note on --rerun; an older version's empty answer too",
      async () => {
        const empty = inboxQuery(h.home, "SELECT id FROM events WHERE delivery_id = 'd-empty'")[0]
          .id as string;
        const before = platforms.telegram.requests.length;
        const redo = await cli(h.home, ["webhook", "redeliver", empty, old], { env });
        assert.equal(redo.code, 0, redo.stderr);
        const note =
          "note: the model's answer was empty when it ran, so what is delivered is the " +
          "notice saying so; add --rerun to run the agent again\n";
        assert.equal(redo.stderr, note + note);
        await waitUntil(() => inboxIdle(h.home), "the redeliveries to end");
        const texts = telegramTexts().slice(before);
        assert.deepEqual(texts.sort(), [
          "The agent run for comments (issue_comment, delivery d-old) ended without an answer: the " +
          "model's answer was empty. The gateway log has the details.",
          "The agent run for triage (issues, delivery d-empty) ended without an answer: the " +
          "model's answer was empty. The gateway log has the details.",
        ]);
        const [{ state }] = inboxQuery(h.home, "SELECT state FROM events WHERE id = ?", old);
        assert.equal(state, "done");
      },
    );

    await t.step(
      "redeliver --rerun of an older version's event with an empty prompt: the default prompt",
      async () => {
        model.push({ content: "Now answered." });
        const redo = await cli(h.home, ["webhook", "redeliver", "--rerun", old], { env });
        assert.equal(redo.code, 0, redo.stderr);
        await waitUntil(() => model.requests.length === 4 && inboxIdle(h.home), "the rerun to end");
        assert.equal(
          userMessage(model.requests[3]),
          defaultPrompt("comments", "issue_comment", oldPayload),
        );
        assert.equal(telegramTexts().at(-1), "Now answered.");
        await waitUntil(
          () =>
            logEntries(gateway.log()).some(({ level, message, properties }) =>
              level === "WARN" && /its stored prompt is blank/.test(message) &&
              properties.id === old && properties.delivery_id === "d-old"
            ),
          "the warning naming the event",
        );
      },
    );
  } finally {
    const end = await gateway.stop();
    assert.equal(end.code, 0, end.stderr);
  }
});
