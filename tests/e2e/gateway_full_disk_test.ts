/**
 * The real gateway process when its disk fills while it runs: a file-size limit set on the
 * running process (`prlimit --fsize`, with SIGXFSZ ignored) makes every write that grows a file
 * fail, the inbox's and the log's, as a full disk does; lifting it is the room coming back.
 */
import assert from "node:assert/strict";
import {
  type GatewayProcess,
  inboxEvents,
  postGithub,
  startFakeStack,
  startGateway,
  subscribe,
  type Subscription,
  waitUntil,
  within,
} from "./_gateway.ts";

/** Sets the file-size limit of the running gateway (`unlimited`, or bytes). */
function limitFileSize(gateway: GatewayProcess, limit: string): void {
  const result = new Deno.Command("prlimit", {
    args: ["--pid", String(gateway.pid), `--fsize=${limit}:unlimited`],
    stdout: "null",
    stderr: "piped",
  }).outputSync();
  assert(result.success, new TextDecoder().decode(result.stderr));
}

function sendIssue(gateway: GatewayProcess, sub: Subscription, id: string) {
  return postGithub(gateway, sub, "issues", id, {
    action: "opened",
    issue: { number: 1, title: "x".repeat(2000) },
  });
}

Deno.test("gateway e2e: a full disk while it runs: events are refused 503 with Retry-After, runs that end keep their answers, nothing floods; once there is room, all is run and delivered once", async () => {
  const gate = Promise.withResolvers<void>();
  await using s = await startFakeStack({
    model: { fallback: { content: "the answer", after: gate.promise } },
  });
  const sub = await subscribe(s.home, s.env, "triage", [
    ...["--prompt", "Triage {issue.title}", "--deliver", "log"],
  ]);
  const gateway = await startGateway(s.home, s.env, { fileSizeLimitable: true });
  try {
    for (const id of ["d-1", "d-2", "d-3"]) {
      assert.equal((await sendIssue(gateway, sub, id)).status, 202);
    }
    await within(s.model.waitForRequests(2), "two runs to reach the model");

    limitFileSize(gateway, "1");
    const refused = await sendIssue(gateway, sub, "d-4");
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get("retry-after"), "30");
    assert.match(String(refused.json.error), /could not be stored; try again later/);
    // The two runs end now, and their answers cannot be recorded.
    gate.resolve();
    // Long enough for the runs to end, and for a loop that takes the queued event again and
    // again to print thousands of lines.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const lines = gateway.stderr().split("\n").filter(Boolean);
    assert.ok(
      lines.length < 20,
      `${lines.length} lines on stderr:\n${lines.slice(0, 30).join("\n")}`,
    );
    assert.match(gateway.stderr(), /error: the inbox .* cannot be written \(.*disk I\/O error/);
    assert.deepEqual(inboxEvents(s.home).map((row) => row.delivery_id), ["d-1", "d-2", "d-3"]);
    assert.equal((await sendIssue(gateway, sub, "d-5")).status, 503, "still serving");

    limitFileSize(gateway, "unlimited");
    assert.equal((await sendIssue(gateway, sub, "d-4")).status, 202);
    await waitUntil(
      () => inboxEvents(s.home).filter((row) => row.state === "done").length === 4,
      "the four events to be delivered",
      30_000,
    );
    const rows = inboxEvents(s.home);
    assert.deepEqual(rows.map((row) => row.delivery_id), ["d-1", "d-2", "d-3", "d-4"]);
    assert.deepEqual(rows.map((row) => [row.run_attempts, row.delivery_attempts]), [
      [1, 1],
      [1, 1],
      [1, 1],
      [1, 1],
    ]);
    assert.equal(s.model.requests.length, 4, "each event was run once");
  } finally {
    const exit = await gateway.stop();
    assert.equal(exit.code, 0, exit.stderr);
  }
});
