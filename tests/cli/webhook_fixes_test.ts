/**
 * `agent webhook`: parallel changes under the edit lock, re-subscribing, what `list` says about
 * routes the gateway does not serve, removing a shadowed subscription, variable errors, and the
 * checks of `--secret` and literal `deliver_extra` values.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadConfig } from "../../src/home/config.ts";
import { RouteTable } from "../../src/webhook/route_table.ts";
import { readWebhookSettings } from "../../src/webhook/settings.ts";
import { cli, parseOneJson, spawnCli, tempHome } from "./_helpers.ts";

function subscriptionsFile(home: string): string {
  return join(home, "webhook_subscriptions.json");
}

function subscriptions(home: string): Record<string, Record<string, unknown>> {
  return JSON.parse(Deno.readTextFileSync(subscriptionsFile(home)));
}

/** Adds fields to stored records, as a user editing the file would. */
function editRecords(home: string, changes: Record<string, Record<string, unknown>>): void {
  const records = subscriptions(home);
  for (const [name, fields] of Object.entries(changes)) Object.assign(records[name], fields);
  Deno.writeTextFileSync(subscriptionsFile(home), JSON.stringify(records, null, 2));
}

/** The problems the gateway reports for the routes of `home` (its own route table). */
function gatewayProblems(home: string): string[] {
  const config = loadConfig({ home, env: () => undefined });
  const settings = readWebhookSettings(config);
  const problems = [...settings.routeProblems];
  new RouteTable({
    file: config.paths.subscriptions,
    staticRoutes: settings.routes,
    report: (problem) => problems.push(problem),
  });
  return problems;
}

const STATIC_DEPLOY = "platforms:\n  webhook:\n    enabled: true\n    extra:\n      routes:\n" +
  "        deploy:\n          secret: static-secret-0123456789\n";

Deno.test("parallel subscribe and remove processes keep every record", async () => {
  await using h = await tempHome();
  const names = Array.from({ length: 10 }, (_, i) => `p${i + 1}`);
  const created = await Promise.all(
    names.map((name) => spawnCli(h.home, ["webhook", "subscribe", name, "--json"])),
  );
  for (const result of created) assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(Object.keys(subscriptions(h.home)).sort(), [...names].sort());

  const removed = names.slice(0, 5);
  const added = Array.from({ length: 5 }, (_, i) => `q${i + 1}`);
  const mixed = await Promise.all([
    ...removed.map((name) => spawnCli(h.home, ["webhook", "remove", name])),
    ...added.map((name) => spawnCli(h.home, ["webhook", "subscribe", name])),
  ]);
  for (const result of mixed) assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(
    Object.keys(subscriptions(h.home)).sort(),
    [...names.slice(5), ...added].sort(),
  );
});

Deno.test("re-subscribing replaces the record and keeps only the secret", async () => {
  await using h = await tempHome();
  const first = await cli(h.home, [
    "webhook",
    "subscribe",
    "ci",
    "--deliver",
    "github_comment",
    "--deliver-extra",
    "repo=octo/app",
    "--deliver-extra",
    "number={issue.number}",
    "--script",
    "triage.sh",
    "--events",
    "issues",
  ]);
  assert.equal(first.code, 0, first.stderr);
  const secret = subscriptions(h.home).ci.secret;
  editRecords(h.home, { ci: { enabled: false, filters: { field: "action", equals: "opened" } } });
  const again = await cli(h.home, ["webhook", "subscribe", "ci", "--deliver", "log", "--json"]);
  assert.equal(again.code, 0, again.stderr);
  const doc = parseOneJson(again.stdout);
  assert.equal(doc.updated, true);
  const stored = subscriptions(h.home).ci;
  assert.deepEqual(Object.keys(stored).sort(), [
    "created_at",
    "deliver",
    "description",
    "events",
    "prompt",
    "secret",
    "skills",
  ]);
  assert.equal(stored.secret, secret);
  assert.equal(stored.deliver, "log");
  assert.deepEqual(stored.events, []);
  assert.equal(doc.deliver_extra, undefined);

  // A chat id given again is the only extra afterwards.
  await cli(h.home, [
    "webhook",
    "subscribe",
    "ci",
    "--deliver",
    "github_comment",
    "--deliver-extra",
    "repo=octo/app",
    "--deliver-extra",
    "number=7",
  ]);
  await cli(h.home, [
    "webhook",
    "subscribe",
    "ci",
    "--deliver",
    "slack",
    "--deliver-chat-id",
    "C0123456",
  ]);
  assert.deepEqual(subscriptions(h.home).ci.deliver_extra, { chat_id: "C0123456" });
  assert.equal(subscriptions(h.home).ci.secret, secret);
});

Deno.test("list: a subscription shadowed by a static route is a problem, and remove deletes it", async () => {
  await using h = await tempHome();
  assert.equal((await cli(h.home, ["webhook", "subscribe", "deploy"])).code, 0);
  Deno.writeTextFileSync(h.config, STATIC_DEPLOY);
  const listed = await cli(h.home, ["webhook", "list", "--json"]);
  assert.equal(listed.code, 0, listed.stderr);
  const doc = parseOneJson(listed.stdout) as {
    subscriptions: Record<string, unknown>[];
    problems: string[];
  };
  assert.deepEqual(doc.subscriptions.map((row) => [row.name, row.source, row.status]), [
    ["deploy", "static", "active"],
    ["deploy", "dynamic", "shadowed"],
  ]);
  assert.match(String(doc.subscriptions[1].status_reason), /agent webhook remove deploy/);
  assert.deepEqual(doc.problems, gatewayProblems(h.home));
  assert.ok(
    doc.problems.some((problem) => /deploy.*static route/.test(problem)),
    doc.problems.join("\n"),
  );

  const text = await cli(h.home, ["webhook", "list"]);
  assert.match(text.stdout, /^deploy \[shadowed\]$/m);
  assert.match(text.stderr, /warning: .*deploy.*static route/);

  const removed = await cli(h.home, ["webhook", "remove", "deploy"]);
  assert.equal(removed.code, 0, removed.stderr);
  assert.match(removed.stdout, /Subscription 'deploy' removed/);
  assert.match(removed.stdout, /static route 'deploy' at .*config\.yaml:6 .* stays/);
  assert.deepEqual(subscriptions(h.home), {});
  assert.equal(Deno.readTextFileSync(h.config), STATIC_DEPLOY);

  // Only the static route is left: that is removed in config.yaml.
  const again = await cli(h.home, ["webhook", "remove", "deploy", "--json"]);
  assert.equal(again.code, 2);
  assert.match(
    String((parseOneJson(again.stdout).error as Record<string, unknown>).message),
    /'deploy' is a static route at .*config\.yaml:6 \(platforms\.webhook\.extra\.routes\.deploy\)/,
  );

  await cli(h.home, ["webhook", "subscribe", "other"]);
  Deno.writeTextFileSync(h.config, STATIC_DEPLOY.replace("deploy:", "other:"));
  const json = await cli(h.home, ["webhook", "rm", "other", "--json"]);
  assert.deepEqual(parseOneJson(json.stdout), {
    removed: "other",
    static_route_kept: true,
    warnings: [],
  });
});

Deno.test("list: routes with invalid filters are reported as the gateway reports them, as warnings (--json too)", async () => {
  await using h = await tempHome();
  await cli(h.home, ["webhook", "subscribe", "ci"]);
  editRecords(h.home, { ci: { filters: { field: "ref", equal: "x" } } });
  Deno.writeTextFileSync(
    h.config,
    "platforms:\n  webhook:\n    enabled: true\n    extra:\n      routes:\n        st:\n" +
      "          secret: static-secret-0123456789\n          filters: {field: ref, equal: x}\n",
  );
  const listed = await cli(h.home, ["webhook", "list", "--json"]);
  assert.equal(listed.code, 0, listed.stderr);
  const doc = parseOneJson(listed.stdout) as {
    subscriptions: Record<string, unknown>[];
    problems: string[];
    warnings: string[];
  };
  assert.deepEqual(doc.subscriptions.map((row) => [row.name, row.status]), [
    ["st", "not_served"],
    ["ci", "invalid"],
  ]);
  const problems = gatewayProblems(h.home);
  assert.deepEqual(doc.problems, problems);
  // Warnings, as without --json: once on stderr, and in the document's warnings.
  assert.deepEqual(doc.warnings, problems);
  assert.equal(listed.stderr, problems.map((problem) => `warning: ${problem}\n`).join(""));
  assert.ok(
    problems.some((p) => /routes\.st\.filters: unknown key 'equal'/.test(p)),
    problems.join("\n"),
  );
  assert.ok(problems.some((p) => /ci\.filters: unknown key 'equal'/.test(p)), problems.join("\n"));
  assert.ok(problems.some((p) => /'st' is not served/.test(p)), problems.join("\n"));

  const text = await cli(h.home, ["webhook", "list"]);
  assert.match(text.stdout, /^st \(static, config\.yaml\) \[not served\]$/m);
  assert.match(text.stdout, /^ci \[invalid\]$/m);
  assert.match(text.stdout, /problem: .*ci\.filters: unknown key 'equal'/);
  assert.match(text.stdout, /status: +not served \(requests are answered 404\)/);
  assert.equal(text.stderr, listed.stderr);
});

Deno.test("list: a disabled record is marked disabled in the text and the JSON", async () => {
  await using h = await tempHome();
  await cli(h.home, ["webhook", "subscribe", "ci"]);
  await cli(h.home, ["webhook", "subscribe", "on"]);
  editRecords(h.home, { ci: { enabled: false } });
  const text = await cli(h.home, ["webhook", "list"]);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /^ci \[disabled\]$/m);
  assert.match(text.stdout, /^on$/m);
  assert.match(text.stdout, /status: +disabled \(enabled: false\): requests are answered 403/);
  const doc = parseOneJson((await cli(h.home, ["webhook", "list", "--json"])).stdout) as {
    subscriptions: Record<string, unknown>[];
  };
  assert.deepEqual(doc.subscriptions.map((row) => [row.name, row.enabled, row.status]), [
    ["ci", false, "disabled"],
    ["on", true, "active"],
  ]);
});

Deno.test("a malformed variable is blamed on .env (with its line) or the environment, not config.yaml", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(h.config, "platforms:\n  webhook:\n    extra:\n      host: 127.0.0.1\n");
  const dotenv = join(h.home, ".env");
  const cases: [string, RegExp][] = [
    ["INSECURE_NO_AUTH", /INSECURE_NO_AUTH=maybe is not true or false/],
    ["WEBHOOK_ENABLED", /WEBHOOK_ENABLED=maybe is not true or false/],
    ["WEBHOOK_PORT", /WEBHOOK_PORT=maybe is not a port/],
  ];
  for (const [name, problem] of cases) {
    Deno.writeTextFileSync(dotenv, `# keys\n${name}=maybe\n`);
    const fromDotenv = await cli(h.home, ["webhook", "list"]);
    assert.equal(fromDotenv.code, 2, name);
    assert.match(fromDotenv.stderr, problem);
    assert.ok(
      fromDotenv.stderr.startsWith(`agent: ${dotenv}:2 (key ${name}): `),
      fromDotenv.stderr,
    );
    assert.match(fromDotenv.stderr, new RegExp(`Fix: set ${name} to .* in ${dotenv}, or delete`));
    assert.doesNotMatch(fromDotenv.stderr, /config\.yaml:/);
    Deno.removeSync(dotenv);
    const fromEnv = await cli(h.home, ["webhook", "list", "--json"], { env: { [name]: "maybe" } });
    assert.equal(fromEnv.code, 2);
    const error = parseOneJson(fromEnv.stdout).error as Record<string, unknown>;
    assert.equal(error.file, "the environment");
    assert.equal(error.key, name);
    assert.match(String(error.message), new RegExp(`unset it \\(\`unset ${name}\`\\)`));
  }
});

Deno.test("subscribe --secret: the rules of gateway setup, and a whsec_ secret must decode", async () => {
  await using h = await tempHome();
  const cases: [string, RegExp][] = [
    ["abc", /--secret: use at least 16 characters/],
    ["whsec_!!!notbase64!!!", /--secret: a whsec_ secret is whsec_ followed by base64/],
    ["whsec_abcdefghijklmnopq", /whsec_ followed by base64/],
    ["has a space in it ok", /visible ASCII characters only/],
    ["it's-sixteen-chars", /single quotes/],
    ["x".repeat(513), /at most 512 characters/],
  ];
  for (const [secret, message] of cases) {
    const result = await cli(h.home, ["webhook", "subscribe", "ci", "--secret", secret]);
    assert.equal(result.code, 2, secret);
    assert.match(result.stderr, message, secret);
  }
  assert.throws(() => Deno.statSync(subscriptionsFile(h.home)), Deno.errors.NotFound);
  const svix = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  const ok = await cli(h.home, ["webhook", "subscribe", "ci", "--secret", svix]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(subscriptions(h.home).ci.secret, svix);
});

Deno.test("subscribe checks literal deliver_extra values as delivery does; templates pass", async () => {
  await using h = await tempHome();
  const refused: [string[], RegExp][] = [
    [
      ["--deliver", "telegram", "--deliver-chat-id", "abc/../x"],
      /--deliver-chat-id: deliver_extra\.chat_id is "abc\/\.\.\/x"; expected a Telegram chat id/,
    ],
    [["--deliver", "telegram", "--deliver-chat-id", " "], /--deliver-chat-id is empty/],
    [["--deliver", "slack", "--deliver-chat-id", "general"], /expected a Slack channel id/],
    [["--deliver", "discord", "--deliver-chat-id", "123"], /expected a Discord channel id/],
    [
      ["--deliver", "github_comment", "--deliver-extra", "repo=o/r", "--deliver-extra", "number=0"],
      /--deliver-extra number: deliver_extra\.number is "0"; expected a positive integer/,
    ],
    [
      ["--deliver", "github_comment", "--deliver-extra", "number=3"],
      /--deliver github_comment needs --deliver-extra repo=.*use --deliver origin/,
    ],
    [
      ["--deliver", "github_comment", "--deliver-extra", "repo=o/r"],
      /needs --deliver-extra number=.*number=\{issue\.number\}/,
    ],
    [
      [
        "--deliver",
        "github_comment",
        "--deliver-extra",
        "repo=a/../b",
        "--deliver-extra",
        "number=1",
      ],
      /--deliver-extra repo: deliver_extra\.repo is "a\/\.\.\/b"/,
    ],
    [
      ["--deliver", "gitlab_comment", "--deliver-extra", "project=g/app"],
      /needs --deliver-extra iid=/,
    ],
    [
      [
        "--deliver",
        "gitlab_comment",
        "--deliver-extra",
        "project=g/../admin",
        "--deliver-extra",
        "iid=2",
      ],
      /--deliver-extra project: deliver_extra\.project is "g\/\.\.\/admin"/,
    ],
    [
      [
        "--deliver",
        "gitlab_comment",
        "--deliver-extra",
        "project=g/app",
        "--deliver-extra",
        "iid=2",
        "--deliver-extra",
        "kind=pr",
      ],
      /--deliver-extra kind: "pr" is not a GitLab item kind/,
    ],
  ];
  for (const [flags, message] of refused) {
    const result = await cli(h.home, ["webhook", "subscribe", "x", ...flags]);
    assert.equal(result.code, 2, `${flags.join(" ")}: ${result.stderr}`);
    assert.match(result.stderr, message, flags.join(" "));
  }
  assert.throws(() => Deno.statSync(subscriptionsFile(h.home)), Deno.errors.NotFound);

  const accepted: string[][] = [
    ["--deliver", "telegram", "--deliver-chat-id", "-1001234567890"],
    ["--deliver", "telegram", "--deliver-chat-id", "{message.chat.id}"],
    ["--deliver", "slack", "--deliver-chat-id", "#deploys"],
    ["--deliver", "discord", "--deliver-chat-id", "1100000000000000001"],
    [
      "--deliver",
      "github_comment",
      "--deliver-extra",
      "repo={repository.full_name}",
      "--deliver-extra",
      "number={issue.number}",
    ],
    ["--deliver", "github_comment", "--deliver-extra", "repo=o/r", "--deliver-extra", "number=42"],
    [
      "--deliver",
      "gitlab_comment",
      "--deliver-extra",
      "project=42",
      "--deliver-extra",
      "iid=3",
      "--deliver-extra",
      "kind=merge_request",
    ],
    ["--deliver", "origin"],
  ];
  for (const flags of accepted) {
    const result = await cli(h.home, ["webhook", "subscribe", "x", ...flags]);
    assert.equal(result.code, 0, `${flags.join(" ")}: ${result.stderr}`);
  }

  // Without a chat the home channel is used: a warning until one of them is set.
  const noChat = await cli(h.home, ["webhook", "subscribe", "x", "--deliver", "telegram"]);
  assert.equal(noChat.code, 0);
  assert.match(noChat.stderr, /warning: no chat to deliver to: .*TELEGRAM_HOME_CHANNEL/);
  const homeChannel = await cli(h.home, ["webhook", "subscribe", "x", "--deliver", "telegram"], {
    env: { TELEGRAM_HOME_CHANNEL: "-100123" },
  });
  assert.doesNotMatch(homeChannel.stderr, /no chat to deliver to/);
});

Deno.test("list: a route whose script cannot run is 'script blocked', with the gateway's reason", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(
    h.config,
    "platforms:\n  webhook:\n    enabled: true\n    extra:\n      routes:\n        st:\n" +
      "          secret: static-secret-0123456789\n          script: /etc/passwd\n" +
      "        off:\n          enabled: false\n          secret: static-secret-0123456789\n" +
      "          script: /etc/passwd\n",
  );
  const subscribed = await cli(h.home, ["webhook", "subscribe", "ci", "--script", "tag.sh"]);
  assert.equal(subscribed.code, 0, subscribed.stderr);
  assert.match(subscribed.stderr, /tag\.sh does not exist yet/);
  const rows = async () => {
    const listed = await cli(h.home, ["webhook", "list", "--json"]);
    assert.equal(listed.code, 0, listed.stderr);
    return (parseOneJson(listed.stdout) as { subscriptions: Record<string, unknown>[] })
      .subscriptions.map((row) => [row.name, row.status, row.status_reason]);
  };
  const scripts = join(h.home, "scripts");
  assert.deepEqual(await rows(), [
    [
      "st",
      "script_blocked",
      "events are refused (503, the sender retries later) until its script can run: route " +
      `script "/etc/passwd" is an absolute path: name a file relative to ${scripts} and put it ` +
      "there",
    ],
    // Disabled comes first: its events are refused 403 before any script would run.
    ["off", "disabled", "disabled (enabled: false): requests are answered 403"],
    [
      "ci",
      "script_blocked",
      "events are refused (503, the sender retries later) until its script can run: scripts " +
      `folder ${scripts} does not exist: create it and put "tag.sh" there`,
    ],
  ]);
  const text = await cli(h.home, ["webhook", "list"]);
  assert.match(text.stdout, /^st \(static, config\.yaml\) \[script blocked\]$/m);
  assert.match(text.stdout, /^ci \[script blocked\]$/m);
  // The script put in place: active, no restart or re-subscribe needed.
  Deno.mkdirSync(scripts);
  Deno.writeTextFileSync(join(scripts, "tag.sh"), "cat\n");
  assert.deepEqual((await rows()).map(([name, status]) => [name, status]), [
    ["st", "script_blocked"],
    ["off", "disabled"],
    ["ci", "active"],
  ]);
});

Deno.test("list of a disabled platform: the advice works where it is followed (setup --enable; the environment)", async () => {
  await using h = await tempHome();
  const dotenv = join(h.home, ".env");
  Deno.writeTextFileSync(dotenv, "WEBHOOK_ENABLED=no\n");
  const notEnabled = async (env: Record<string, string> = {}) =>
    (await cli(h.home, ["webhook", "list"], { env })).stdout.split("\n")[0];

  assert.equal(
    await notEnabled(),
    `The webhook platform is not enabled: WEBHOOK_ENABLED=no in ${dotenv}:1 turns it off (it ` +
      "overrides platforms.webhook.enabled of config.yaml). Fix: set WEBHOOK_ENABLED=true there " +
      "(`agent gateway setup --enable` does).",
  );
  // The old advice, `agent gateway setup` without a terminal, keeps the platform off.
  assert.equal((await cli(h.home, ["gateway", "setup"])).code, 0);
  assert.match(await notEnabled(), /not enabled: WEBHOOK_ENABLED=false in /);
  // The advice given turns it on.
  assert.equal((await cli(h.home, ["gateway", "setup", "--enable"])).code, 0);
  assert.equal(
    await notEnabled(),
    "No subscriptions. Create one with `agent webhook subscribe <name>`.",
  );

  // Off in config.yaml (or by default), with nothing in .env.
  Deno.writeTextFileSync(dotenv, "");
  Deno.writeTextFileSync(h.config, "platforms:\n  webhook:\n    enabled: false\n");
  assert.equal(
    await notEnabled(),
    "The webhook platform is not enabled. Enable it with `agent gateway setup --enable`, or set " +
      `platforms.webhook.enabled: true in ${h.config}.`,
  );
  // Off in the environment (and not in .env, which would win): setup cannot change that. Unset,
  // the variable would leave config.yaml's `enabled: false`: the platform would stay off.
  const byEnvironment = "The webhook platform is not enabled: WEBHOOK_ENABLED=off in the " +
    "environment turns it off (it overrides platforms.webhook.enabled of config.yaml). Fix: ";
  assert.equal(
    await notEnabled({ WEBHOOK_ENABLED: "off" }),
    `${byEnvironment}set WEBHOOK_ENABLED=true in the environment.`,
  );
  Deno.writeTextFileSync(h.config, "platforms:\n  webhook:\n    enabled: true\n");
  assert.equal(
    await notEnabled({ WEBHOOK_ENABLED: "off" }),
    `${byEnvironment}unset WEBHOOK_ENABLED (\`unset WEBHOOK_ENABLED\`), or set it to true.`,
  );
  assert.equal(
    await notEnabled({}),
    "No subscriptions. Create one with `agent webhook subscribe <name>`.",
    "unset, as advised: enabled",
  );
});

Deno.test("subscribe: a token line left empty in .env is said to hide the environment's, not to be unset", async () => {
  await using home = await tempHome();
  Deno.writeTextFileSync(join(home.home, ".env"), "SLACK_BOT_TOKEN=\n");
  const result = await cli(
    home.home,
    ["webhook", "subscribe", "alerts", "--deliver", "slack", "--deliver-chat-id", "C0123456789"],
    { env: { SLACK_BOT_TOKEN: "xoxb-1111111111-2222222222-fromTheEnvironment" } },
  );
  assert.equal(result.code, 0, result.stderr);
  assert.ok(
    result.stderr.split("\n").includes(
      "warning: SLACK_BOT_TOKEN is empty in .env, which is read before the environment: " +
        `deliveries to slack fail until you add it to ${join(home.home, ".env")} and restart ` +
        "the gateway",
    ),
    result.stderr,
  );
});
