/**
 * `agent webhook` from a third QA pass: unknown names are usage errors, names are normalised in
 * ASCII only, and `subscribe` checks `--skills`, `--deliver-extra` keys and `--script` as the
 * gateway and the agent will use them.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { cli, parseOneJson, tempHome } from "./_helpers.ts";

function subscriptionsFile(home: string): string {
  return join(home, "webhook_subscriptions.json");
}

function subscriptions(home: string): Record<string, Record<string, unknown>> {
  return JSON.parse(Deno.readTextFileSync(subscriptionsFile(home)));
}

function errorOf(stdout: string): { message: string; exit_code: number } {
  return parseOneJson(stdout).error as { message: string; exit_code: number };
}

Deno.test("an unknown name is a usage error (exit 2) in remove and test, listing the names", async () => {
  await using h = await tempHome();
  const none = await cli(h.home, ["webhook", "remove", "nope"]);
  assert.equal(none.code, 2, none.stderr);
  assert.match(none.stderr, /no subscription named 'nope'/);

  await cli(h.home, ["webhook", "subscribe", "ci"]);
  for (const command of ["remove", "rm", "test"]) {
    const text = await cli(h.home, ["webhook", command, "cj"]);
    assert.equal(text.code, 2, `${command}: ${text.stderr}`);
    assert.match(text.stderr, /named 'cj' \(have: ci\); did you mean 'ci'\?/);
    const json = await cli(h.home, ["webhook", command, "nope", "--json"]);
    assert.equal(json.code, 2, command);
    const error = errorOf(json.stdout);
    assert.equal(error.exit_code, 2);
    assert.match(error.message, /named 'nope' \(have: ci\)$/);
  }
  assert.deepEqual(Object.keys(subscriptions(h.home)), ["ci"]);
});

Deno.test("test: a record that exists but is not served fails (exit 1) saying so, not 'unknown'", async () => {
  await using h = await tempHome();
  await cli(h.home, ["webhook", "subscribe", "ci"]);
  const records = subscriptions(h.home);
  records.ci.prompt = 7 as unknown as string;
  Deno.writeTextFileSync(subscriptionsFile(h.home), JSON.stringify(records));
  const result = await cli(h.home, ["webhook", "test", "ci"]);
  assert.equal(result.code, 1, result.stderr);
  assert.match(result.stderr, /'ci' is not served: it has problems \(see `agent webhook list`\)/);
});

Deno.test("names: non-ASCII look-alikes, tabs, line breaks and no-break spaces are refused, not mapped", async () => {
  await using h = await tempHome();
  assert.equal((await cli(h.home, ["webhook", "subscribe", "kelvin"])).code, 0);
  const before = Deno.readTextFileSync(subscriptionsFile(h.home));
  const cases: [string, string][] = [
    ["\u212Aelvin", "U+212A"], // KELVIN SIGN, lower-cased by Unicode to "k"
    ["kelv\u0130n", "U+0130"], // İ, lower-cased to "i̇"
    ["kel\nvin", "U+000A"],
    ["kel\tvin", "U+0009"],
    ["kel\u00A0vin", "U+00A0"],
    ["kelvin\r", "U+000D"],
  ];
  for (const [name, shown] of cases) {
    for (const command of ["subscribe", "remove", "test"]) {
      const result = await cli(h.home, ["webhook", command, name]);
      assert.equal(result.code, 2, `${command} ${JSON.stringify(name)}: ${result.stderr}`);
      assert.match(result.stderr, /use 1 to 64 lower-case letters, digits, '-' and '_'/);
      assert.match(result.stderr, /ASCII only/);
      assert.ok(result.stderr.includes(`not allowed: ${shown}`), result.stderr);
    }
  }
  assert.equal(Deno.readTextFileSync(subscriptionsFile(h.home)), before);
});

Deno.test("names: another spelling of an existing name replaces it (decisions.md), with a warning", async () => {
  await using h = await tempHome();
  await cli(h.home, ["webhook", "subscribe", "my-hook", "--prompt", "first"]);
  const secret = subscriptions(h.home)["my-hook"].secret;
  for (const name of ["My-Hook", "my hook", "MY HOOK"]) {
    const result = await cli(h.home, ["webhook", "subscribe", name, "--prompt", name]);
    assert.equal(result.code, 0, `${name}: ${result.stderr}`);
    assert.equal(
      result.stderr.split("\n")[0] + "\n",
      `warning: ${JSON.stringify(name)} is the name 'my-hook' (A-Z are lower-cased and spaces ` +
        "become '-'): the existing subscription 'my-hook' was replaced. If you meant a new one, " +
        "subscribe it under another name and this one again as it was\n",
    );
    assert.deepEqual(Object.keys(subscriptions(h.home)), ["my-hook"]);
    assert.equal(subscriptions(h.home)["my-hook"].prompt, name);
    assert.equal(subscriptions(h.home)["my-hook"].secret, secret);
  }
  const json = await cli(h.home, ["webhook", "subscribe", "My Hook", "--json"]);
  assert.equal(json.code, 0, json.stderr);
  assert.equal(parseOneJson(json.stdout).updated, true);
  assert.match(json.stderr, /^warning: "My Hook" is the name 'my-hook'/);
  // Documented: a new name is normalised, and the same name again replaces the record.
  assert.equal((await cli(h.home, ["webhook", "subscribe", "Other Hook"])).code, 0);
  const again = await cli(h.home, ["webhook", "subscribe", " my-hook ", "--prompt", "second"]);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(subscriptions(h.home)["my-hook"].prompt, "second");
  assert.deepEqual(Object.keys(subscriptions(h.home)).sort(), ["my-hook", "other-hook"]);
});

Deno.test("a name that is an Object.prototype key is a new subscription, not an update", async () => {
  await using h = await tempHome();
  const made = await cli(h.home, ["webhook", "subscribe", "constructor", "--json"]);
  assert.equal(made.code, 0, made.stderr);
  assert.equal(parseOneJson(made.stdout).updated, false);
});

Deno.test("subscribe --skills: a name the skills loader refuses is a usage error; a missing skill a warning", async () => {
  await using h = await tempHome();
  for (const skills of ["../../etc", "triage,a/b", ".hidden", "x".repeat(65)]) {
    const result = await cli(h.home, ["webhook", "subscribe", "ci", "--skills", skills]);
    assert.equal(result.code, 2, `${skills}: ${result.stderr}`);
    const bad = skills.split(",").at(-1)!;
    assert.ok(result.stderr.includes(`--skills: ${JSON.stringify(bad)} is not a skill name`));
    assert.match(result.stderr, /a skill is a folder under .*skills named with/);
  }
  assert.throws(() => Deno.statSync(subscriptionsFile(h.home)), Deno.errors.NotFound);

  Deno.mkdirSync(join(h.home, "skills", "triage"), { recursive: true });
  Deno.writeTextFileSync(join(h.home, "skills", "triage", "SKILL.md"), "Label it.\n");
  const json = await cli(h.home, [
    "webhook",
    "subscribe",
    "ci",
    "--skills",
    "triage, review.v2",
    "--json",
  ]);
  assert.equal(json.code, 0, json.stderr);
  assert.deepEqual(parseOneJson(json.stdout).skills, ["triage", "review.v2"]);
  assert.match(json.stderr, /warning: skill 'review\.v2' not found \(expected .*SKILL\.md\)/);
  assert.doesNotMatch(json.stderr, /'triage'/);
});

Deno.test("subscribe --deliver-extra: a key the target does not read is refused, naming the keys it reads", async () => {
  await using h = await tempHome();
  const cases: [string[], RegExp][] = [
    [
      ["--deliver", "slack", "--deliver-extra", "foo=bar"],
      /--deliver-extra foo: --deliver slack does not use the key 'foo'; it reads only chat_id/,
    ],
    [
      ["--deliver", "telegram", "--deliver-chat-id", "-100123", "--deliver-extra", "repo=o/r"],
      /--deliver-extra repo: --deliver telegram does not use the key 'repo'; it reads only chat_id/,
    ],
    [
      [
        "--deliver",
        "github_comment",
        "--deliver-extra",
        "repo=o/r",
        "--deliver-extra",
        "number=1",
        "--deliver-extra",
        "kind=issue",
      ],
      /--deliver github_comment does not use the key 'kind'; it reads only repo, number/,
    ],
    [
      ["--deliver", "log", "--deliver-chat-id", "123"],
      /--deliver-chat-id: --deliver log does not use a chat id; it reads none\. Fix: add --deliver telegram or --deliver discord or --deliver slack, or leave it out/,
    ],
    // No --deliver at all: the message does not put words in the user's mouth.
    [
      ["--deliver-chat-id", "123"],
      /--deliver-chat-id: without --deliver, events go to the log, which does not use a chat id; it reads none\. Fix: add --deliver telegram or/,
    ],
    [
      ["--deliver", "slack", "--deliver-extra", "number=3"],
      /it reads only chat_id\. Fix: add --deliver github_comment, or leave it out/,
    ],
    [
      ["--deliver", "origin", "--deliver-extra", "repo=o/r"],
      /--deliver origin does not use the key 'repo'; it reads none \(it answers on the item/,
    ],
    [
      ["--deliver", "slack", "--deliver-extra", "__proto__=x", "--deliver-chat-id", "C0123456"],
      /--deliver-extra __proto__: --deliver slack does not use the key '__proto__'/,
    ],
    [
      ["--deliver", "gitlab_comment", "--deliver-extra", "chat_id=1"],
      /it reads only project, iid, kind/,
    ],
    // The same key twice: which one is meant is not guessed.
    [
      ["--deliver", "telegram", "--deliver-extra", "chat_id=5", "--deliver-chat-id", "6"],
      /the chat id is given twice, by --deliver-chat-id and --deliver-extra chat_id; give it once/,
    ],
    [
      ["--deliver", "telegram", "--deliver-chat-id", "6", "--deliver-extra", "chat_id=5"],
      /the chat id is given twice/,
    ],
    [
      [
        ...["--deliver", "github_comment", "--deliver-extra", "repo=o/r"],
        ...["--deliver-extra", "number=1", "--deliver-extra", "number=2"],
      ],
      /--deliver-extra number is given twice; give each key once/,
    ],
  ];
  for (const [flags, message] of cases) {
    const result = await cli(h.home, ["webhook", "subscribe", "x", ...flags]);
    assert.equal(result.code, 2, `${flags.join(" ")}: ${result.stderr}`);
    assert.match(result.stderr, message);
  }
  assert.throws(() => Deno.statSync(subscriptionsFile(h.home)), Deno.errors.NotFound);
  const chat = await cli(h.home, [
    "webhook",
    "subscribe",
    "x",
    "--deliver",
    "slack",
    "--deliver-extra",
    "chat_id=C0123456",
  ]);
  assert.equal(chat.code, 0, chat.stderr);
});

Deno.test("subscribe --script: checked as the gateway runs it; a symlink out of <home>/scripts is refused", async () => {
  await using h = await tempHome();
  const scripts = join(h.home, "scripts");
  const outside = join(h.home, "outside");
  Deno.mkdirSync(join(scripts, "folder"), { recursive: true });
  Deno.mkdirSync(outside);
  Deno.writeTextFileSync(join(outside, "evil.sh"), "echo hi\n");
  Deno.writeTextFileSync(join(scripts, "ok.sh"), "echo hi\n");
  Deno.symlinkSync(join(outside, "evil.sh"), join(scripts, "link.sh"));
  Deno.symlinkSync(join(outside, "later.sh"), join(scripts, "dangling.sh"));
  Deno.symlinkSync(outside, join(scripts, "out"));
  Deno.symlinkSync("ok.sh", join(scripts, "inner.sh"));
  Deno.symlinkSync("not-yet.sh", join(scripts, "inner-later.sh"));

  const refused: [string, RegExp][] = [
    ["link.sh", /route script "link\.sh" resolves to .*outside\/evil\.sh, outside /],
    ["out/evil.sh", /route script "out\/evil\.sh" resolves to .*outside\/evil\.sh, outside /],
    ["dangling.sh", /route script "dangling\.sh" leads to .*outside\/later\.sh, outside /],
    ["out/later.sh", /route script "out\/later\.sh" leads to .*outside\/later\.sh, outside /],
    ["folder", /route script "folder" is a folder/],
  ];
  for (const [script, message] of refused) {
    for (const json of [[], ["--json"]]) {
      const result = await cli(h.home, ["webhook", "subscribe", "x", "--script", script, ...json]);
      assert.equal(result.code, 2, `${script}: ${result.stderr}`);
      const shown = json.length > 0 ? errorOf(result.stdout).message : result.stderr;
      assert.match(shown, /--script: /);
      assert.match(shown, message);
    }
  }
  assert.throws(() => Deno.statSync(subscriptionsFile(h.home)), Deno.errors.NotFound);

  for (const script of ["ok.sh", "inner.sh"]) {
    const result = await cli(h.home, ["webhook", "subscribe", "x", "--script", script]);
    assert.equal(result.code, 0, `${script}: ${result.stderr}`);
    assert.doesNotMatch(result.stderr, /does not exist|leads to|resolves to/);
  }
  // Not there yet (also through a symlink that stays inside): a warning, as before.
  for (const script of ["new.sh", "sub/new.sh", "inner-later.sh"]) {
    const result = await cli(h.home, ["webhook", "subscribe", "x", "--script", script]);
    assert.equal(result.code, 0, `${script}: ${result.stderr}`);
    assert.match(result.stderr, /warning: .*scripts\/.* does not exist yet/);
    assert.equal(subscriptions(h.home).x.script, script);
  }
});

Deno.test("subscribe --script: no scripts folder yet is a warning, in --json mode on stderr", async () => {
  await using h = await tempHome();
  const result = await cli(h.home, ["webhook", "subscribe", "x", "--script", "tag.sh", "--json"]);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(parseOneJson(result.stdout).script, "tag.sh");
  assert.match(result.stderr, /warning: .*scripts\/tag\.sh does not exist yet/);
});

Deno.test("subscribe --script: an absolute path into the scripts folder is stored relative to it", async () => {
  await using h = await tempHome();
  const scripts = join(h.home, "scripts");
  Deno.mkdirSync(join(scripts, "sub"), { recursive: true });
  Deno.writeTextFileSync(join(scripts, "sub", "tag.sh"), "cat\n");
  // As a shell completes it, and through a symlink to the home.
  const linked = `${h.home}-link`;
  Deno.symlinkSync(h.home, linked);
  try {
    for (
      const given of [join(scripts, "sub", "tag.sh"), join(linked, "scripts", "sub", "tag.sh")]
    ) {
      const result = await cli(h.home, ["webhook", "subscribe", "x", "--script", given, "--json"]);
      assert.equal(result.code, 0, `${given}: ${result.stderr}`);
      assert.equal(parseOneJson(result.stdout).script, "sub/tag.sh");
      assert.equal(subscriptions(h.home).x.script, "sub/tag.sh");
    }
  } finally {
    Deno.removeSync(linked);
  }
  // Anywhere else, and the folder itself, are still refused.
  for (const given of ["/etc/passwd", scripts, join(h.home, "tag.sh")]) {
    const result = await cli(h.home, ["webhook", "subscribe", "y", "--script", given]);
    assert.equal(result.code, 2, `${given}: ${result.stderr}`);
    assert.match(result.stderr, /must name a file inside <home>\/scripts\//);
    // An absolute path inside the folder is taken: the message must not say none is.
    assert.doesNotMatch(result.stderr, /no absolute path/);
    assert.match(
      result.stderr,
      /relative to that folder \(e\.g\. --script triage\.sh\) or an absolute path inside it/,
    );
  }
});

Deno.test("list shows where each route delivers and what it sends (text and --json)", async () => {
  await using h = await tempHome();
  const env = { TELEGRAM_BOT_TOKEN: "1:abc", GITHUB_TOKEN: "ghp_x" };
  await cli(h.home, [
    ...["webhook", "subscribe", "tg", "--deliver", "telegram", "--deliver-chat-id", "-100123"],
    ...["--prompt", "Triage #{issue.number}:\n{issue.title}", "--skills", "triage"],
  ], { env });
  await cli(h.home, [
    ...["webhook", "subscribe", "gh", "--deliver", "github_comment", "--deliver-only"],
    ...["--deliver-extra", "repo={repository.full_name}", "--deliver-extra", "number=7"],
  ], { env });
  await cli(h.home, ["webhook", "subscribe", "plain"], { env });
  const text = await cli(h.home, ["webhook", "list"], { env });
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /^tg\n(?:.*\n)*? {2}deliver: telegram \(chat_id=-100123\)\n/m);
  assert.match(
    text.stdout,
    /^ {2}prompt: {2}Triage #\{issue\.number\}:⏎\{issue\.title\}\n {2}skills: {2}triage$/m,
  );
  assert.match(
    text.stdout,
    /^ {2}deliver: github_comment \(repo=\{repository\.full_name\}, number=7\), direct, no agent run$/m,
  );
  assert.match(
    text.stdout,
    /^plain\n(?:.*\n)*? {2}deliver: log\n {2}prompt: {2}\(the event and payload\)$/m,
  );
  const doc = parseOneJson((await cli(h.home, ["webhook", "list", "--json"], { env })).stdout) as {
    subscriptions: { name: string; deliver_extra: Record<string, unknown>; prompt: string }[];
  };
  const byName = Object.fromEntries(doc.subscriptions.map((row) => [row.name, row]));
  assert.deepEqual(byName.tg.deliver_extra, { chat_id: "-100123" });
  assert.equal(byName.tg.prompt, "Triage #{issue.number}:\n{issue.title}");
  assert.deepEqual(byName.gh.deliver_extra, { repo: "{repository.full_name}", number: "7" });
  assert.deepEqual(byName.plain.deliver_extra, {});
  assert.equal(byName.plain.prompt, "");
});
