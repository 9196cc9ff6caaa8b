/**
 * `agent webhook`: `subscribe --events` names checked by the rule of `test --event` and
 * de-duplicated, stored text printed inert by `list` and `subscribe` (control characters
 * escaped, `--json` raw), and the notes of `test` on a 404 `Unknown route` or 401
 * `Invalid signature` answer.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { routeFromRaw } from "../../src/webhook/routes.ts";
import { cli, parseOneJson, tempHome } from "./_helpers.ts";
import { startListener } from "./_listener.ts";

function subscriptionsFile(home: string): string {
  return join(home, "webhook_subscriptions.json");
}

function subscriptions(home: string): Record<string, Record<string, unknown>> {
  return JSON.parse(Deno.readTextFileSync(subscriptionsFile(home)));
}

/** Any C0 control but the line feed ending each line, DEL or C1 control. */
// deno-lint-ignore no-control-regex
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

function assertInert(text: string, what: string): void {
  assert.ok(
    !RAW_CONTROL.test(text),
    `${what} holds a raw control character: ${JSON.stringify(text)}`,
  );
}

Deno.test("subscribe --events: an entry breaking the --event rule is refused, shown escaped, with a fix", async () => {
  await using h = await tempHome();
  const cases: [string, string][] = [
    ["issues  pull_request", "'issues  pull_request'"],
    [" Issue Hook\u0000", "'Issue Hook\\u0000'"],
    ["push,x\u001b[2J", "'x\\u001b[2J'"],
    ["a\tb", "'a\\tb'"],
    ["del\u007f", "'del\\u007f'"],
    ["csi\u009b31m", "'csi\\u009b31m'"],
    ["pushé", "'pushé'"],
  ];
  for (const [events, shown] of cases) {
    for (const json of [[], ["--json"]]) {
      const result = await cli(h.home, ["webhook", "subscribe", "ci", "--events", events, ...json]);
      assert.equal(result.code, 2, `${JSON.stringify(events)}: ${result.stderr}${result.stdout}`);
      const message = json.length > 0
        ? (parseOneJson(result.stdout).error as { message: string }).message
        : result.stderr;
      assert.ok(message.includes("--events"), message);
      assert.ok(message.includes(shown), `${shown} not in: ${message}`);
      // The rule `test --event` states, and how to fix the list.
      assert.match(message, /printable ASCII, single spaces only between words/);
      assert.match(message, /Fix: .*comma/);
      assertInert(result.stderr + result.stdout, JSON.stringify(events));
    }
  }
  assert.throws(() => Deno.statSync(subscriptionsFile(h.home)), Deno.errors.NotFound);
  // The same rule, stated the same way, for `test --event`.
  await cli(h.home, ["webhook", "subscribe", "ci"]);
  const spaced = await cli(h.home, ["webhook", "test", "ci", "--event", "a  b"]);
  assert.equal(spaced.code, 2);
  assert.match(
    spaced.stderr,
    /--event must be a non-empty name of printable ASCII, single spaces only between words/,
  );
});

Deno.test("subscribe --events: GitLab's names with a space are taken; another spaced name is warned about", async () => {
  await using h = await tempHome();
  const gitlab = await cli(h.home, [
    ...["webhook", "subscribe", "gl", "--events", "Issue Hook,Merge Request Hook", "--json"],
  ], { env: { WEBHOOK_ENABLED: "true" } }); // no warning that the platform is off either
  assert.equal(gitlab.code, 0, gitlab.stderr);
  assert.deepEqual(parseOneJson(gitlab.stdout).events, ["Issue Hook", "Merge Request Hook"]);
  assert.equal(gitlab.stderr, "");
  const run = await cli(h.home, ["webhook", "subscribe", "gh", "--events", "issues pull_request"]);
  assert.equal(run.code, 0, run.stderr);
  assert.match(
    run.stderr,
    /warning: --events: 'issues pull_request' is one event name with a space in it; .*commas/,
  );
});

Deno.test("subscribe --events: a GitLab name in any case is not taken for a list without commas", async () => {
  await using h = await tempHome();
  // The README's own example: events match whatever their case, so this takes GitLab's
  // `Merge Request Hook`, and no warning may say it is probably a list missing its commas.
  const result = await cli(h.home, [
    ...["webhook", "subscribe", "gl", "--events", "merge request hook,NOTE HOOK", "--json"],
  ], { env: { WEBHOOK_ENABLED: "true" } });
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(parseOneJson(result.stdout).events, ["merge request hook", "NOTE HOOK"]);
  assert.equal(result.stderr, "");
});

Deno.test("subscribe --events: exact repeats are dropped, first order kept; other spellings stay", async () => {
  await using h = await tempHome();
  const result = await cli(h.home, [
    ...["webhook", "subscribe", "ci", "--events", "Push,push,push, issues ,Push,issues"],
    "--json",
  ]);
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(parseOneJson(result.stdout).events, ["Push", "push", "issues"]);
  assert.deepEqual(subscriptions(h.home).ci.events, ["Push", "push", "issues"]);
  const text = await cli(h.home, ["webhook", "subscribe", "ci", "--events", "push,push"]);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /^ {2}Events: {2}push$/m);
});

Deno.test("list: stored text from the file and config.yaml is printed with control characters escaped; --json is raw", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(
    h.config,
    "platforms:\n  webhook:\n    enabled: true\n    extra:\n      routes:\n        deploy:\n" +
      "          secret: static-secret-0123456789\n" +
      '          description: "static\\x1b[2J\\nFAKE: ok"\n' +
      '          prompt: "p\\x1b]0;title\\x07q"\n' +
      '          events: ["st\\x1b[31m"]\n',
  );
  await cli(h.home, ["webhook", "subscribe", "ci"]);
  await cli(h.home, [
    "webhook",
    "subscribe",
    "tg",
    "--deliver",
    "telegram",
    "--deliver-chat-id",
    "-1001",
  ], {
    env: { TELEGRAM_BOT_TOKEN: "1:abc" },
  });
  const records = subscriptions(h.home);
  Object.assign(records.ci, {
    description: "line one\nFAKE: valid\rX",
    prompt: "do\u001b[2Jit\u009b31m",
    events: ["push\u001b[2J", "ok"],
    skills: ["s\u0007k"],
    script: "run\u001b[1m.sh",
  });
  records.tg.deliver_extra = { chat_id: "-1001\u001b[2J" };
  records["bad\u001b[2Jname"] = { ...records.ci };
  Deno.writeTextFileSync(subscriptionsFile(h.home), JSON.stringify(records));

  const text = await cli(h.home, ["webhook", "list"], { env: { TELEGRAM_BOT_TOKEN: "1:abc" } });
  assert.equal(text.code, 0, text.stderr);
  assertInert(text.stdout, "list stdout");
  assertInert(text.stderr, "list stderr");
  // Every line is a route's name or one of its indented fields: nothing broke the layout.
  for (const line of text.stdout.trimEnd().split("\n")) {
    assert.match(line, /^(?:[a-z0-9]| {2})/, `stray line: ${JSON.stringify(line)}`);
  }
  assert.ok(text.stdout.includes("  line one\\nFAKE: valid\\rX\n"), text.stdout);
  assert.ok(text.stdout.includes("  prompt:  do\\u001b[2Jit\\u009b31m\n"), text.stdout);
  assert.ok(text.stdout.includes("  events:  push\\u001b[2J, ok\n"), text.stdout);
  assert.ok(text.stdout.includes("  skills:  s\\u0007k\n"), text.stdout);
  assert.ok(text.stdout.includes("  script:  run\\u001b[1m.sh\n"), text.stdout);
  assert.ok(text.stdout.includes("chat_id=-1001\\u001b[2J"), text.stdout);
  assert.ok(text.stdout.includes("bad\\u001b[2Jname"), text.stdout);
  assert.ok(text.stdout.includes("  static\\u001b[2J\\nFAKE: ok\n"), text.stdout);
  assert.ok(text.stdout.includes("  prompt:  p\\u001b]0;title\\u0007q\n"), text.stdout);
  assert.ok(text.stdout.includes("  events:  st\\u001b[31m\n"), text.stdout);

  const json = await cli(h.home, ["webhook", "list", "--json"], {
    env: { TELEGRAM_BOT_TOKEN: "1:abc" },
  });
  assert.equal(json.code, 0, json.stderr);
  const doc = parseOneJson(json.stdout) as {
    subscriptions: { name: string; description: string; prompt: string; events: string[] }[];
  };
  const byName = Object.fromEntries(doc.subscriptions.map((row) => [row.name, row]));
  assert.equal(byName.ci.description, "line one\nFAKE: valid\rX");
  assert.equal(byName.ci.prompt, "do\u001b[2Jit\u009b31m");
  assert.deepEqual(byName.ci.events, ["push\u001b[2J", "ok"]);
  assert.equal(byName.deploy.description, "static\u001b[2J\nFAKE: ok");
  assert.ok(byName["bad\u001b[2Jname"]);
});

Deno.test("subscribe: its text output and warnings are printed with control characters escaped", async () => {
  await using h = await tempHome();
  await cli(h.home, ["webhook", "subscribe", "ci"]);
  const records = subscriptions(h.home);
  // A hand-edited secret is kept by a new subscribe, and printed.
  records.ci.secret = "kept\u001b[2Jsecret-0123456789";
  Deno.writeTextFileSync(subscriptionsFile(h.home), JSON.stringify(records));
  const result = await cli(h.home, ["webhook", "subscribe", "ci", "--script", "a\u001b[2J.sh"]);
  assert.equal(result.code, 0, result.stderr);
  assertInert(result.stdout, "subscribe stdout");
  assertInert(result.stderr, "subscribe stderr");
  assert.match(result.stdout, /^ {2}Secret: {2}kept\\u001b\[2Jsecret-0123456789$/m);
  assert.match(result.stderr, /a\\u001b\[2J\.sh does not exist yet/);
});

const STATIC_DEPLOY = "platforms:\n  webhook:\n    enabled: true\n    extra:\n      routes:\n" +
  "        deploy:\n          description: static\n";

Deno.test("test: a 404 Unknown route says the gateway on the port runs from another home (no restart needed for subscriptions)", async () => {
  await using h = await tempHome();
  await using other = await tempHome();
  await using gateway = startListener(other.home);
  const env = { WEBHOOK_PORT: String(gateway.port), WEBHOOK_ENABLED: "true" };
  await cli(h.home, ["webhook", "subscribe", "ci"], { env });
  const result = await cli(h.home, ["webhook", "test", "ci"], { env });
  assert.equal(result.code, 1, result.stderr);
  assert.match(result.stdout, /HTTP 404\n\{"error":"Unknown route: ci"\}/);
  assert.match(result.stderr, /^note: /);
  assert.match(result.stderr, /another home/);
  assert.ok(result.stderr.includes(h.home), result.stderr);
  assert.match(result.stderr, /AGENT_HOME/);
  assert.match(result.stderr, /re-reads .*on each request/);
  assert.doesNotMatch(result.stderr, /restart it/);
  // --json stays one document, with no note.
  const json = await cli(h.home, ["webhook", "test", "ci", "--json"], { env });
  assert.equal(json.code, 1);
  assert.equal(parseOneJson(json.stdout).status, 404);
});

Deno.test("test: a 404 for a static route says static routes are read when the gateway starts", async () => {
  await using h = await tempHome();
  await using gateway = startListener(h.home, { secret: "global-secret-0123456789" });
  Deno.writeTextFileSync(h.config, STATIC_DEPLOY);
  const env = {
    WEBHOOK_PORT: String(gateway.port),
    WEBHOOK_SECRET: "global-secret-0123456789",
  };
  const result = await cli(h.home, ["webhook", "test", "deploy"], { env });
  assert.equal(result.code, 1, result.stderr);
  assert.match(result.stdout, /HTTP 404/);
  assert.match(result.stderr, /^note: .*static routes are read when the gateway starts/);
  assert.match(result.stderr, /AGENT_HOME/);
});

Deno.test("test: a 401 Invalid signature says the gateway checks another secret, and why", async () => {
  await using h = await tempHome();
  await using other = await tempHome();
  await using gateway = startListener(other.home, { secret: "gateway-global-secret-000" });
  const env = { WEBHOOK_PORT: String(gateway.port), WEBHOOK_SECRET: "shell-global-secret-1111" };
  // The same subscription name in another home, with another secret.
  await cli(other.home, ["webhook", "subscribe", "ci"]);
  await cli(h.home, ["webhook", "subscribe", "ci"], { env });
  const dynamic = await cli(h.home, ["webhook", "test", "ci"], { env });
  assert.equal(dynamic.code, 1, dynamic.stderr);
  assert.match(dynamic.stdout, /HTTP 401\n\{"error":"Invalid signature"\}/);
  assert.match(dynamic.stderr, /^note: .*secret/);
  assert.match(dynamic.stderr, /another home/);
  assert.match(dynamic.stderr, /AGENT_HOME/);
  assert.doesNotMatch(dynamic.stderr, /WEBHOOK_SECRET/); // the route has its own secret

  // A static route without its own secret is checked with the global one.
  const [deploy] = [routeFromRaw("deploy", { description: "static" }, "static", "deploy").route!];
  await using staticGateway = startListener(other.home, {
    staticRoutes: [deploy],
    secret: "gateway-global-secret-000",
  });
  Deno.writeTextFileSync(h.config, STATIC_DEPLOY);
  const staticEnv = { ...env, WEBHOOK_PORT: String(staticGateway.port) };
  const global = await cli(h.home, ["webhook", "test", "deploy"], { env: staticEnv });
  assert.equal(global.code, 1, global.stderr);
  assert.match(global.stdout, /HTTP 401/);
  assert.match(global.stderr, /^note: .*global/);
  assert.match(global.stderr, /WEBHOOK_SECRET/);
});

Deno.test("test: a 404 or 401 for a record whose filters the gateway refuses points at `webhook list`", async () => {
  await using h = await tempHome();
  await cli(h.home, ["webhook", "subscribe", "ci", "--secret", "first-secret-0123456789"]);
  await cli(h.home, ["webhook", "subscribe", "new"]);
  const broken = (name: string) => {
    const records = subscriptions(h.home);
    records[name].filters = { field: "action", equal: "opened" };
    Deno.writeTextFileSync(subscriptionsFile(h.home), JSON.stringify(records));
  };
  broken("new");
  await using gateway = startListener(h.home);
  const env = { WEBHOOK_PORT: String(gateway.port) };
  // Never valid: not served.
  const unknown = await cli(h.home, ["webhook", "test", "new"], { env });
  assert.equal(unknown.code, 1, unknown.stderr);
  assert.match(unknown.stdout, /HTTP 404/);
  assert.match(
    unknown.stderr,
    /^note: .*'new' while its filters have problems; see `agent webhook list`/,
  );
  assert.doesNotMatch(unknown.stderr, /another home/);
  // Served, then given a new secret and broken filters: the previous version (and secret) stays.
  assert.match((await cli(h.home, ["webhook", "test", "ci"], { env })).stdout, /HTTP 202/);
  await cli(h.home, ["webhook", "subscribe", "ci", "--secret", "second-secret-0123456789"]);
  broken("ci");
  const refused = await cli(h.home, ["webhook", "test", "ci"], { env });
  assert.equal(refused.code, 1, refused.stderr);
  assert.match(refused.stdout, /HTTP 401/);
  assert.match(refused.stderr, /^note: .*previous version of 'ci' .*see `agent webhook list`/);
  assert.doesNotMatch(refused.stderr, /another home/);
});
