/**
 * `deliver_extra` of routes that `subscribe` did not check: static routes of config.yaml and
 * hand-edited records of the subscriptions file get the checks of `subscribe --deliver-extra`,
 * reported where the other route problems are (`webhook list`, `gateway run`, reloads).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { startGateway, subscribe, waitUntil, writeGatewayConfig } from "../e2e/_gateway.ts";
import { cli, parseOneJson, tempHome } from "./_helpers.ts";
import { freePort } from "./_mcp_helpers.ts";

function subscriptionsFile(home: string): string {
  return join(home, "webhook_subscriptions.json");
}

/** Sets fields of stored records, as a user editing the file would. */
function editRecords(home: string, changes: Record<string, Record<string, unknown>>): void {
  const records = JSON.parse(Deno.readTextFileSync(subscriptionsFile(home)));
  for (const [name, fields] of Object.entries(changes)) Object.assign(records[name], fields);
  Deno.writeTextFileSync(subscriptionsFile(home), JSON.stringify(records, null, 2));
}

const STATIC_TG = "(platforms.webhook.extra.routes.tg).deliver_extra.chatid: deliver: telegram " +
  "does not use the key 'chatid'; it reads only chat_id. Fix: did you mean chat_id?";

Deno.test("subscribe --deliver-extra: a misspelled key of the target names the key meant; an empty chat_id names the option that gave it", async () => {
  await using h = await tempHome();
  const typo = await cli(h.home, [
    "webhook",
    "subscribe",
    "tg",
    "--deliver",
    "telegram",
    "--deliver-extra",
    "chatid=-100123",
  ]);
  assert.equal(typo.code, 2, typo.stderr);
  assert.match(
    typo.stderr,
    /--deliver-extra chatid: --deliver telegram does not use the key 'chatid'; it reads only chat_id\. Fix: did you mean chat_id\?/,
  );
  const empty = await cli(h.home, [
    "webhook",
    "subscribe",
    "tg",
    "--deliver",
    "telegram",
    "--deliver-extra",
    "chat_id= ",
  ]);
  assert.equal(empty.code, 2, empty.stderr);
  assert.match(empty.stderr, /--deliver-extra chat_id is empty\. Fix: give the chat/);
});

Deno.test("webhook list: a static route and a hand-edited record whose deliver_extra delivery would ignore or refuse are invalid, with the file, route, key and fix", async () => {
  await using h = await tempHome();
  writeGatewayConfig(h.home, {
    webhook: {
      secret: "global-secret-0123456789",
      routes: { tg: { deliver: "telegram", deliver_extra: { chatid: 123 } } },
    },
  });
  const created = await cli(h.home, [
    "webhook",
    "subscribe",
    "gh",
    "--deliver",
    "github_comment",
    "--deliver-extra",
    "repo=octo/app",
    "--deliver-extra",
    "number={issue.number}",
  ]);
  assert.equal(created.code, 0, created.stderr);
  editRecords(h.home, { gh: { deliver_extra: { repo: "octo/app", numbr: "{issue.number}" } } });

  const file = subscriptionsFile(h.home);
  const ghUnused = `${file}: gh.deliver_extra.numbr: "deliver": "github_comment" does not use ` +
    "the key 'numbr'; it reads only repo, number. Fix: did you mean number?";
  const ghMissing = `${file}: gh.deliver_extra: "deliver": "github_comment" needs ` +
    'deliver_extra.number (a value, or a template such as "number": "{issue.number}")';
  const text = await cli(h.home, ["webhook", "list"]);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /^tg \(static, config\.yaml\) \[invalid\]$/m);
  assert.match(text.stdout, /^gh \[invalid\]$/m);
  assert.ok(text.stdout.includes(`  problem: ${join(h.home, "config.yaml")}:`), text.stdout);
  assert.ok(text.stdout.includes(STATIC_TG), text.stdout);
  assert.ok(text.stdout.includes(`  problem: ${ghUnused}`), text.stdout);
  assert.ok(text.stdout.includes(`  problem: ${ghMissing}`), text.stdout);
  assert.ok(text.stderr.includes(STATIC_TG), text.stderr);

  const json = await cli(h.home, ["webhook", "list", "--json"]);
  assert.equal(json.code, 0, json.stderr);
  const rows = parseOneJson(json.stdout).subscriptions as Record<string, unknown>[];
  const row = (name: string) => rows.find((candidate) => candidate.name === name)!;
  assert.equal(row("tg").status, "invalid");
  assert.deepEqual(row("tg").deliver_extra, { chatid: 123 });
  assert.ok((row("tg").problems as string[]).some((p) => p.endsWith(STATIC_TG)));
  assert.equal(row("gh").status, "invalid");
  assert.ok((row("gh").problems as string[]).includes(ghUnused));

  const test = await cli(h.home, ["webhook", "test", "tg"]);
  assert.equal(test.code, 1, test.stderr);
  assert.match(test.stderr, /'tg' is not served: it has problems/);
});

Deno.test("gateway run: a static route's deliver_extra typo is an error at start and the route is not served; a record edited into one while it runs is reported on reload and keeps its previous version", async () => {
  await using h = await tempHome();
  writeGatewayConfig(h.home, {
    webhook: {
      host: "127.0.0.1",
      secret: "global-secret-0123456789",
      routes: {
        tg: { deliver: "telegram", deliver_extra: { chatid: 123 } },
        fine: { deliver: "telegram", deliver_extra: { chat_id: 123 } },
      },
    },
  });
  const env = { WEBHOOK_PORT: String(freePort()) };
  await subscribe(h.home, env, "ci", ["--deliver", "slack", "--deliver-chat-id", "C0123456789"]);
  const gateway = await startGateway(h.home, env);
  let stderr: string;
  try {
    const status = async (route: string) => {
      const answer = await fetch(gateway.url(`/webhooks/${route}`), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      });
      await answer.body?.cancel();
      return answer.status;
    };
    assert.equal(await status("tg"), 404, "the route with the typo is not served");
    assert.equal(await status("fine"), 401, "the others are");
    assert.equal(await status("ci"), 401);

    editRecords(h.home, { ci: { deliver_extra: { chat: "C0123456789" } } });
    assert.equal(await status("ci"), 401, "its previous version stays in use");
    await waitUntil(
      () => gateway.stderr().includes("subscription 'ci' is invalid"),
      "the reload's report on stderr",
    );
  } finally {
    stderr = (await gateway.stop()).stderr;
  }
  const lines = stderr.split("\n").filter((line) => line !== "");
  const config = join(h.home, "config.yaml");
  assert.equal(
    lines.filter((line) => line.startsWith(`error: ${config}:`) && line.endsWith(STATIC_TG))
      .length,
    1,
    stderr,
  );
  const file = subscriptionsFile(h.home);
  assert.ok(
    lines.includes(
      `error: ${file}: ci.deliver_extra.chat: "deliver": "slack" does not use the key 'chat'; ` +
        "it reads only chat_id. Fix: did you mean chat_id?",
    ),
    stderr,
  );
  assert.ok(
    lines.includes(
      `error: ${file}: subscription 'ci' is invalid; its previous version stays in use until ` +
        "the record is fixed",
    ),
    stderr,
  );
});
