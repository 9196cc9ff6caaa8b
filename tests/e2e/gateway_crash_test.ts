/**
 * The real gateway killed (`kill -9`) while a request is not answered yet, or while a split
 * message is half out: after a restart the sender's retry is served (not taken for a duplicate),
 * and no part that went out before the crash is sent again.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  assertResentOnce,
  digestRoute,
  discordTexts,
  type GatewayProcess,
  inboxIdle,
  inboxQuery,
  paragraphs,
  postGithub,
  startFakeStack,
  startGateway,
  subscribe,
  type Subscription,
  waitUntil,
  within,
} from "./_gateway.ts";

/** A home with the fake platforms and a fake model answering with `answer(prompt)`. */
function crashStack(answer: (prompt: string) => string) {
  return startFakeStack({
    model: {
      fallback: (request) => ({ content: answer(String(request.messages.at(-1)!.content)) }),
    },
  });
}

/** Sends `payload` signed for `sub` with delivery id `id`. */
function send(gateway: GatewayProcess, sub: Subscription, id: string, payload: unknown) {
  return postGithub(gateway, sub, "issues", id, payload);
}

/** The claim of `id` as committed to the inbox, if any. */
function claimOf(home: string, id: string) {
  return inboxQuery(home, "SELECT held, parts_sent FROM claims WHERE delivery_id = ?", id)[0];
}

/** A request whose answer is awaited later: how it ended. */
function pending(request: Promise<unknown>): Promise<string> {
  return request.then(() => "answered", () => "connection lost");
}

/** Kills the gateway with SIGKILL; the request it was serving fails with the connection. */
async function crash(gateway: GatewayProcess, unanswered: Promise<string>): Promise<void> {
  const killed = await gateway.kill("SIGKILL");
  assert.equal(killed.signal, "SIGKILL");
  assert.equal(await unanswered, "connection lost", "the sender never got an answer");
}

Deno.test("gateway e2e: kill -9 while a route script runs; after a restart the sender's retry is accepted, not a duplicate", async () => {
  await using s = await crashStack((prompt) => `Answer to: ${prompt}`);
  const scripts = join(s.home, "scripts");
  Deno.mkdirSync(scripts, { recursive: true });
  // Waits while a `hold` file lies next to it, then passes the payload on unchanged.
  Deno.writeTextFileSync(
    join(scripts, "gate.sh"),
    "#!/bin/bash\nwhile [ -e hold ]; do sleep 0.05; done\ncat\n",
  );
  const hold = join(scripts, "hold");
  Deno.writeTextFileSync(hold, "");
  const sub = await subscribe(s.home, s.env, "gated", [
    "--script",
    "gate.sh",
    "--prompt",
    "Triage #{issue.number}",
    "--deliver",
    "telegram",
    "--deliver-chat-id",
    "-1001234",
  ]);
  const payload = { action: "opened", issue: { number: 7 } };

  const first = await startGateway(s.home, s.env);
  try {
    const unanswered = pending(send(first, sub, "d-held", payload));
    await waitUntil(
      () => claimOf(s.home, "d-held")?.held === 1,
      "the claim to be committed while the script runs",
    );
    await crash(first, unanswered);
  } finally {
    await first.kill("SIGKILL");
    Deno.removeSync(hold); // the orphaned script ends too
  }

  const second = await startGateway(s.home, s.env);
  try {
    const retried = await send(second, sub, "d-held", payload);
    assert.equal(retried.status, 202, JSON.stringify(retried.json));
    await within(s.platforms.telegram.waitForRequests(1), "the delivery of the retried event");
    await waitUntil(() => inboxIdle(s.home), "the inbox to have nothing left to do");
    assert.deepEqual(
      s.platforms.telegram.requests.map((request) => (request.body as { text: string }).text),
      ["Answer to: Triage #7"],
    );
    assert.match(second.log(), /freed 1 delivery ids whose request was not answered/);
    const again = await send(second, sub, "d-held", payload);
    assert.deepEqual(again.json, { status: "duplicate", delivery_id: "d-held" });
  } finally {
    const exit = await second.stop();
    assert.equal(exit.code, 0, exit.stderr);
  }
});

Deno.test("gateway e2e: kill -9 in the middle of a deliver-only split message; the sender's retry sends the rest only", async () => {
  await using s = await crashStack(() => "unused");
  const { sub, summary } = await digestRoute(s);
  s.platforms.discord.push("ok", "hang");

  const first = await startGateway(s.home, s.env);
  try {
    const unanswered = pending(send(first, sub, "d-digest", { summary }));
    await within(s.platforms.discord.waitForRequests(2), "part 2 to reach the hanging fake");
    await waitUntil(
      () =>
        claimOf(s.home, "d-digest")?.parts_sent === 1 && claimOf(s.home, "d-digest")?.held === 1,
      "the first part to be recorded as sent, the request still unanswered",
    );
    await crash(first, unanswered);
  } finally {
    await first.kill("SIGKILL");
  }

  const second = await startGateway(s.home, s.env);
  try {
    const retried = await send(second, sub, "d-digest", { summary });
    assert.equal(retried.status, 200, JSON.stringify(retried.json));
    assert.equal(retried.json.status, "delivered");
    const why = "the part cut off by the crash is the first one sent again";
    assertResentOnce(discordTexts(s.platforms), 1, summary, why);
  } finally {
    const exit = await second.stop();
    assert.equal(exit.code, 0, exit.stderr);
  }
});

Deno.test("gateway e2e: kill -9 in the middle of a split answer; after a restart it resumes at the part cut off", async () => {
  const answer = paragraphs(40, "Finding", "the crash must not resend what already went out.", 5);
  await using s = await crashStack(() => answer);
  const sub = await subscribe(s.home, s.env, "long", [
    "--deliver",
    "discord",
    "--deliver-chat-id",
    "1100000000000000001",
    "--prompt",
    "Summarise #{issue.number}",
  ]);
  s.platforms.discord.push("ok", "hang");

  const first = await startGateway(s.home, s.env);
  try {
    const accepted = await send(first, sub, "d-long", { issue: { number: 1 } });
    assert.equal(accepted.status, 202);
    await within(s.platforms.discord.waitForRequests(2), "part 2 to reach the hanging fake");
    // Recorded while the delivery is still under way (the 8 s timeout would record it too).
    await waitUntil(() => {
      const [row] = inboxQuery(s.home, "SELECT parts_sent, delivery_attempts FROM events");
      return row?.parts_sent === 1 && row?.delivery_attempts === 0;
    }, "the first part to be recorded as sent");
  } finally {
    await first.kill("SIGKILL");
  }

  const second = await startGateway(s.home, s.env);
  try {
    await waitUntil(() => inboxIdle(s.home), "the delivery to finish after the restart");
    const why = "the part cut off by the crash is the first one sent again";
    assertResentOnce(discordTexts(s.platforms), 1, answer, why);
    assert.equal(s.model.requests.length, 1, "the answer is not run again");
  } finally {
    const exit = await second.stop();
    assert.equal(exit.code, 0, exit.stderr);
  }
});
