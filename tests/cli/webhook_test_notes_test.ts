/**
 * The notes `agent webhook test` prints around the gateway's answer: the warning that a
 * deliver-only route sends a real message comes only when the route takes the test's event.
 */
import assert from "node:assert/strict";
import { cli, tempHome } from "./_helpers.ts";
import { startListener } from "./_listener.ts";

Deno.test("test of a deliver-only route: the real-message note only when the route takes the event (any case)", async () => {
  await using h = await tempHome();
  await using gateway = startListener(h.home);
  const env = { WEBHOOK_PORT: String(gateway.port), WEBHOOK_ENABLED: "true" };
  const subscribed = await cli(h.home, [
    "webhook",
    "subscribe",
    "direct",
    "--events",
    "issues",
    "--deliver",
    "slack",
    "--deliver-chat-id",
    "C0123456789",
    "--deliver-only",
  ], { env: { ...env, SLACK_BOT_TOKEN: "xoxb-test" } });
  assert.equal(subscribed.code, 0, subscribed.stderr);

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
