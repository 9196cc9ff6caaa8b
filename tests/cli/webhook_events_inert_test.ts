/**
 * `agent webhook events` shows a sender's and a platform's text inert: an event name from a
 * payload (bidi controls) and a delivery error quoting an API's answer (escape sequences) cannot
 * drive or disguise the terminal the listing is read on.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Inbox } from "../../src/gateway/inbox.ts";
import { cli, NOW, tempHome } from "./_helpers.ts";

Deno.test("events shows the event name and the error with their control and bidi characters escaped", async () => {
  await using h = await tempHome();
  {
    using inbox = Inbox.open(join(h.home, "gateway", "inbox.sqlite3"));
    const id = inbox.enqueue({
      route: "ci",
      // A payload's `event_type`: controls are refused there, format characters are not.
      event: "push\u202Egpj.exe",
      deliveryId: "d-1",
      payload: {},
      prompt: "p",
      plan: { deliver: "slack", deliverExtra: { chat_id: "C1" }, skills: [] },
    }, NOW - 60_000);
    inbox.take(NOW - 60_000);
    inbox.finishRun(id, { answer: "a", endReason: "completed", deliver: true }, NOW);
    inbox.recordDelivery(id, {
      ok: false,
      error: "the Slack Web API refused the message (\u001b[2J\u001b[32mdelivered\u001b[0m\r)",
    }, NOW);
  }
  const result = await cli(h.home, ["webhook", "events"]);
  assert.equal(result.code, 0, result.stderr);
  // deno-lint-ignore no-control-regex
  assert.doesNotMatch(result.stdout, /[\u001b\r\u202E]/);
  assert.match(result.stdout, /\(push\\u\{202e\}gpj\.exe\)/);
  assert.match(result.stdout, /error: +the Slack Web API refused the message \(\\u\{1b\}\[2J/);
});
