/**
 * `agent webhook events` against the real gateway process: an event whose run is under way is
 * `running` while the gateway lives, and interrupted (resumed by the next start) once the
 * gateway was killed.
 */
import assert from "node:assert/strict";
import { cli, parseOneJson, tempHome } from "../cli/_helpers.ts";
import { freePort } from "../cli/_mcp_helpers.ts";
import { startFakeModel } from "../fixtures/fake_model.ts";
import {
  inboxEvents,
  postGithub,
  startGateway,
  subscribe,
  within,
  writeGatewayConfig,
} from "./_gateway.ts";

/** `agent webhook events` (text) and `--json`, run in this process on `home`. */
async function events(home: string) {
  const text = await cli(home, ["webhook", "events"]);
  assert.equal(text.code, 0, text.stderr);
  const json = await cli(home, ["webhook", "events", "--json"]);
  assert.equal(json.code, 0, json.stderr);
  const doc = parseOneJson(json.stdout) as {
    events: { state: string; interrupted: boolean }[];
  };
  return { text: text.stdout, json: doc.events };
}

Deno.test("gateway e2e: webhook events shows a run under way as running, and as interrupted once the gateway was killed", async () => {
  await using h = await tempHome();
  // Every run hangs until the model goes away: the event stays `running`.
  await using model = await startFakeModel({ fallback: { hang: true } });
  const env = { WEBHOOK_PORT: String(freePort()), WEBHOOK_SECRET: "global" };
  writeGatewayConfig(h.home, { modelBaseUrl: model.baseUrl });
  const sub = await subscribe(h.home, env, "triage", ["--prompt", "Triage {issue.number}"]);

  const gateway = await startGateway(h.home, env);
  try {
    const accepted = await postGithub(gateway, sub, "issues", "d-7", { issue: { number: 7 } });
    assert.equal(accepted.status, 202);
    await within(model.waitForRequests(1), "the run to reach the model");
    assert.deepEqual(inboxEvents(h.home).map((row) => row.state), ["running"]);

    const live = await events(h.home);
    assert.deepEqual(live.json.map((e) => [e.state, e.interrupted]), [["running", false]]);
    assert.match(live.text, /^\S+ {2}running {2}triage \(issues\)$/m);
    assert.doesNotMatch(live.text, /interrupted|No gateway is running/);
  } finally {
    const killed = await gateway.kill("SIGKILL");
    assert.equal(killed.signal, "SIGKILL");
  }

  const after = await events(h.home);
  assert.deepEqual(after.json.map((e) => [e.state, e.interrupted]), [["running", true]]);
  assert.match(
    after.text,
    /^\S+ {2}interrupted \(was running; the next `agent gateway run` resumes it\) {2}triage \(issues\)$/m,
  );
  assert.match(after.text, /No gateway is running on this home/);
});
