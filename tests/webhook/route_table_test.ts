import assert from "node:assert/strict";
import { join } from "node:path";
import { matchFilter } from "../../src/webhook/filters.ts";
import { type Route, routeFromRaw } from "../../src/webhook/routes.ts";
import { record } from "./_records.ts";
import { RouteTable } from "../../src/webhook/route_table.ts";
import { writeSubscriptions } from "../../src/webhook/subscriptions.ts";

function staticRoute(name: string, raw: Record<string, unknown>): Route {
  const { route, problems } = routeFromRaw(name, raw, "static", `routes.${name}`);
  assert.deepEqual(problems, []);
  return route!;
}

async function withHome(body: (home: string, file: string) => void | Promise<void>) {
  const home = await Deno.makeTempDir({ prefix: "route-table-" });
  try {
    await body(home, join(home, "webhook_subscriptions.json"));
  } finally {
    await Deno.remove(home, { recursive: true });
  }
}

Deno.test("RouteTable: an invalid record keeps its previous version; the others load as usual", async () => {
  await withHome((_home, file) => {
    writeSubscriptions(file, { ci: record(), old: record({ prompt: "old" }) });
    const reports: string[] = [];
    const table = new RouteTable({ file, staticRoutes: [], report: (p) => reports.push(p) });
    assert.equal(table.get("ci")?.prompt, "hello");
    assert.deepEqual(reports, []);

    // Edited by hand while the gateway runs: `prompt` is no longer a string.
    writeSubscriptions(file, {
      ci: record({ prompt: 7 }),
      old: record({ prompt: "old, edited" }),
      added: record({ prompt: "new" }),
    });
    table.refresh();
    assert.equal(table.get("ci")?.prompt, "hello", "the last good version of ci is served");
    assert.equal(table.get("old")?.prompt, "old, edited");
    assert.equal(table.get("added")?.prompt, "new");
    assert.deepEqual(reports, [
      `${file}: ci.prompt: expected a string`,
      `${file}: subscription 'ci' is invalid; its previous version stays in use until the ` +
      "record is fixed",
    ]);

    // Fixed: the new version replaces the kept one.
    writeSubscriptions(file, { ci: record({ prompt: "fixed" }) });
    table.refresh();
    assert.equal(table.get("ci")?.prompt, "fixed");
    assert.equal(table.get("added"), undefined, "a removed record is gone");
    assert.equal(reports.length, 2);
  });
});

Deno.test("RouteTable: a record invalid from the start is not served, and says so", async () => {
  await withHome((_home, file) => {
    writeSubscriptions(file, { ci: record({ deliver: "pigeon" }), ok: record() });
    const reports: string[] = [];
    const table = new RouteTable({ file, staticRoutes: [], report: (p) => reports.push(p) });
    assert.equal(table.get("ci"), undefined);
    assert.ok(table.get("ok"));
    assert.equal(reports.length, 2);
    assert.match(
      reports[0],
      /^.*webhook_subscriptions\.json: ci\.deliver: unknown delivery target/,
    );
    assert.equal(
      reports[1],
      `${file}: subscription 'ci' is invalid; it is not served until the record is fixed`,
    );
  });
});

Deno.test("RouteTable: a record whose filters became invalid keeps its previous version", async () => {
  await withHome((_home, file) => {
    writeSubscriptions(file, { ci: record({ filters: [{ field: "action", equals: "opened" }] }) });
    const reports: string[] = [];
    const table = new RouteTable({ file, staticRoutes: [], report: (p) => reports.push(p) });
    const before = table.get("ci");
    assert.ok(before?.filter);

    writeSubscriptions(file, { ci: record({ filters: [{ field: "title", regex: "(a+)+$" }] }) });
    table.refresh();
    assert.equal(table.get("ci"), before);
    assert.match(reports[0], /ci\.filters\[0\]: regex "\(a\+\)\+\$" is refused/);
    assert.match(reports[1], /subscription 'ci' is invalid; its previous version stays in use/);
  });
});

Deno.test("RouteTable: a static route with a nested-quantifier regex is refused at load, naming the route", async () => {
  await withHome((_home, file) => {
    const reports: string[] = [];
    const table = new RouteTable({
      file,
      staticRoutes: [
        staticRoute("slow", { filters: [{ field: "title", regex: "(a+)+$" }] }),
        staticRoute("fine", { filters: [{ field: "title", regex: "^a+$" }] }),
      ],
      report: (p) => reports.push(p),
    });
    assert.equal(table.get("slow"), undefined);
    assert.ok(table.get("fine"));
    assert.equal(reports.length, 2);
    assert.match(
      reports[0],
      /^platforms\.webhook\.extra\.routes\.slow\.filters\[0\]: regex "\(a\+\)\+\$" is refused: .* Fix: /,
    );
    assert.equal(reports[1], "route 'slow' is not served until its filters are fixed");
  });
});

const TYPO_FILTERS = { any: [{ field: "a", regex: "[" }, { field: "b", equals: 1 }] };

Deno.test("RouteTable: a static route with an invalid regex is served, with one warning at load", async () => {
  await withHome((_home, file) => {
    const reports: string[] = [];
    const warnings: string[] = [];
    const table = new RouteTable({
      file,
      staticRoutes: [staticRoute("typo", { filters: TYPO_FILTERS })],
      report: (p) => reports.push(p),
      warn: (w) => warnings.push(w),
    });
    assert.deepEqual(reports, []);
    assert.equal(warnings.length, 1, warnings.join("\n"));
    assert.match(
      warnings[0],
      /^platforms\.webhook\.extra\.routes\.typo\.filters\.any\[0\]: filter on 'a': regex "\[" is not a valid JavaScript regular expression \(.+\); the condition is false until the pattern is fixed \(the route is served: its other conditions still decide\)$/,
    );
    const { filter } = table.get("typo")!;
    const quiet = { warn: (m: string) => assert.fail(`warned per request: ${m}`) };
    for (let i = 0; i < 3; i++) {
      assert.equal(
        matchFilter(filter!, { payload: { b: 1 }, event: "e", headers: {} }, quiet),
        true,
      );
      assert.equal(
        matchFilter(filter!, { payload: { a: "[" }, event: "e", headers: {} }, quiet),
        false,
      );
    }
    table.refresh();
    assert.equal(warnings.length, 1, "a refresh without a change does not warn again");
  });
});

Deno.test("RouteTable: a subscription with an invalid regex is served, warned once per change of the file", async () => {
  await withHome((_home, file) => {
    writeSubscriptions(file, { ci: record({ filters: TYPO_FILTERS }) });
    const reports: string[] = [];
    const table = new RouteTable({ file, staticRoutes: [], report: (p) => reports.push(p) });
    assert.ok(table.get("ci")?.filter);
    // Without a warn hook, warnings go where problems go (what `agent webhook list` prints).
    assert.equal(reports.length, 1, reports.join("\n"));
    assert.match(reports[0], /webhook_subscriptions\.json: ci\.filters\.any\[0\]: filter on 'a'/);
    table.refresh();
    assert.equal(reports.length, 1);
    writeSubscriptions(file, { ci: record({ filters: TYPO_FILTERS, prompt: "edited" }) });
    table.refresh();
    assert.equal(table.get("ci")?.prompt, "edited");
    assert.equal(reports.length, 2);
  });
});

Deno.test("RouteTable: relative in_file paths are read from <home>, not the working directory", async () => {
  await withHome((home, file) => {
    Deno.mkdirSync(join(home, "lists"));
    Deno.writeTextFileSync(join(home, "lists", "allow.txt"), "octo\n");
    const filters = [{ field: "sender.login", in_file: "lists/allow.txt" }];
    writeSubscriptions(file, { ci: record({ filters }) });
    const table = new RouteTable({
      file,
      staticRoutes: [staticRoute("deploy", { filters })],
      report: (p) => assert.fail(p),
    });
    assert.notEqual(Deno.cwd(), home);
    for (const name of ["ci", "deploy"]) {
      const warnings: string[] = [];
      const matches = (login: string) =>
        matchFilter(table.get(name)!.filter!, {
          payload: { sender: { login } },
          event: "push",
          headers: {},
        }, { warn: (m) => warnings.push(m) });
      assert.equal(matches("octo"), true, name);
      assert.equal(matches("mona"), false, name);
      assert.equal(warnings.length, 0, warnings.join("\n"));
    }
  });
});

Deno.test("RouteTable: the home option overrides the subscriptions file's folder", async () => {
  await withHome((home, file) => {
    const elsewhere = join(home, "elsewhere");
    const table = new RouteTable({
      file,
      home: elsewhere,
      staticRoutes: [staticRoute("deploy", { filters: [{ field: "a", in_file: "allow.txt" }] })],
      report: (p) => assert.fail(p),
    });
    assert.deepEqual(table.get("deploy")?.filter, {
      all: [{ field: "a", op: "in_file", path: join(elsewhere, "allow.txt") }],
    });
  });
});

const FIX = " Fix: correct the file by hand there; do not delete it, it holds every subscription " +
  "and its secret (it is never overwritten while broken)";

Deno.test("RouteTable: a corrupt file is reported by line and column, none of its secrets quoted", async () => {
  await withHome((_home, file) => {
    Deno.writeTextFileSync(
      file,
      '{\n  "ci": {\n    "secret": TOPSECRET-abcdefghijklmnop\n  }\n}\n',
    );
    const reports: string[] = [];
    const table = new RouteTable({ file, staticRoutes: [], report: (p) => reports.push(p) });
    assert.equal(table.get("ci"), undefined);
    assert.deepEqual(reports, [
      `${file}: not valid JSON (line 3, column 15: expected a value).${FIX}; no subscription ` +
      "is served until it is fixed",
    ]);
    assert.ok(!reports.join("\n").includes("TOPSEC"));

    writeSubscriptions(file, { ci: record() });
    table.refresh();
    assert.ok(table.get("ci"));
    // A quoted secret broken by a stray character is not quoted either.
    Deno.writeTextFileSync(file, '{"ci": {"secret": "It-s-a-Secret-to-Everybody",}}');
    table.refresh();
    assert.ok(table.get("ci"), "the subscriptions read before stay in use");
    assert.equal(
      reports[1],
      `${file}: not valid JSON (line 1, column 48: expected a property name in double quotes).` +
        `${FIX}; the subscriptions read before stay in use until it is fixed`,
    );
    assert.ok(!reports.join("\n").includes("It-s"));
  });
});

Deno.test("RouteTable: a reload tells which subscriptions it added and removed", async () => {
  await withHome((_home, file) => {
    writeSubscriptions(file, { a: record(), b: record() });
    const changes: unknown[] = [];
    const table = new RouteTable({
      file,
      staticRoutes: [],
      report: () => {},
      changed: (change) => changes.push(change),
    });
    assert.deepEqual(changes, [], "the first read is no change");
    writeSubscriptions(file, { b: record({ prompt: "edited" }), c: record() });
    table.refresh();
    assert.deepEqual(changes, [{ added: ["c"], removed: ["a"], served: 2 }]);
    // An edit of a record that stays is not a change of the set.
    writeSubscriptions(file, { b: record({ prompt: "again" }), c: record() });
    table.refresh();
    assert.equal(changes.length, 1);
    // The file emptied or deleted: every subscription is gone, and that is said.
    Deno.writeTextFileSync(file, "");
    table.refresh();
    assert.deepEqual(changes[1], { added: [], removed: ["b", "c"], served: 0 });
    Deno.removeSync(file);
    writeSubscriptions(file, { d: record() });
    table.refresh();
    assert.deepEqual(changes[2], { added: ["d"], removed: [], served: 1 });
  });
});

Deno.test("RouteTable: a file that repeats a name keeps the routes read before, and says why", async () => {
  await withHome((_home, file) => {
    writeSubscriptions(file, { q1: record({ prompt: "one" }), q2: record({ prompt: "two" }) });
    const reports: string[] = [];
    const table = new RouteTable({ file, staticRoutes: [], report: (p) => reports.push(p) });
    assert.equal(table.get("q1")?.prompt, "one");

    // Edited by hand: a second q1, which JSON.parse would quietly take instead of the first.
    const q1 = JSON.stringify(record({ prompt: "one" }));
    const edited = JSON.stringify(record({ prompt: "edited", secret: "another-secret-012345" }));
    const q2 = JSON.stringify(record({ prompt: "two, edited" }));
    Deno.writeTextFileSync(file, `{\n"q1": ${q1},\n"q2": ${q2},\n"q1": ${edited}\n}\n`);
    table.refresh();
    assert.equal(table.get("q1")?.prompt, "one");
    assert.equal(table.get("q1")?.secret, "0123456789abcdef0123");
    assert.equal(table.get("q2")?.prompt, "two", "nothing of the broken file is used");
    assert.equal(reports.length, 1);
    assert.match(
      reports[0],
      /webhook_subscriptions\.json: line 4: the file has the key "q1" twice in the object at \$; .*Fix: keep one of the two "q1" keys \(lines 2 and 4\).*; the subscriptions read before stay in use until it is fixed$/,
    );
  });
});

Deno.test("RouteTable: a record that is not an object is invalid on its own; the other records load", async () => {
  await withHome((_home, file) => {
    writeSubscriptions(file, { q1: record({ prompt: "one" }), q2: record({ prompt: "two" }) });
    const reports: string[] = [];
    const table = new RouteTable({ file, staticRoutes: [], report: (p) => reports.push(p) });
    writeSubscriptions(file, { q1: 5, q2: record({ prompt: "two, edited" }), q3: record() });
    table.refresh();
    assert.equal(table.get("q1")?.prompt, "one", "the last good version of q1 is served");
    assert.equal(table.get("q2")?.prompt, "two, edited");
    assert.ok(table.get("q3"));
    assert.deepEqual(reports, [
      `${file}: q1: expected a mapping of route settings`,
      `${file}: subscription 'q1' is invalid; its previous version stays in use until the ` +
      "record is fixed",
    ]);
  });
});

Deno.test("RouteTable: a hand-edited record's deliver_extra is checked as subscribe checks it, naming the file, the record, the key and the fix", async () => {
  await withHome((_home, file) => {
    const good = { deliver: "telegram", deliver_extra: { chat_id: "-100123" } };
    writeSubscriptions(file, {
      tg: record({ ...good, prompt: "first" }),
      gh: record({ deliver: "github_comment", deliver_extra: { repo: "octo/app" } }),
    });
    const reports: string[] = [];
    const table = new RouteTable({ file, staticRoutes: [], report: (p) => reports.push(p) });
    assert.equal(table.get("gh"), undefined, "a record that cannot be delivered is not served");
    assert.deepEqual(reports, [
      `${file}: gh.deliver_extra: "deliver": "github_comment" needs deliver_extra.number (a ` +
      'value, or a template such as "number": "{issue.number}"); to answer on the item the ' +
      'event came from, use "deliver": "origin"',
      `${file}: subscription 'gh' is invalid; it is not served until the record is fixed`,
    ]);
    reports.length = 0;

    // A typo while the gateway runs: the chat would silently become TELEGRAM_HOME_CHANNEL.
    writeSubscriptions(file, {
      tg: record({ deliver: "telegram", deliver_extra: { chatid: "-100123" }, prompt: "typo" }),
    });
    table.refresh();
    assert.equal(table.get("tg")?.prompt, "first", "the last good version stays in use");
    assert.deepEqual(table.get("tg")?.deliverExtra, { chat_id: "-100123" });
    assert.deepEqual(reports, [
      `${file}: tg.deliver_extra.chatid: "deliver": "telegram" does not use the key 'chatid'; ` +
      "it reads only chat_id. Fix: did you mean chat_id?",
      `${file}: subscription 'tg' is invalid; its previous version stays in use until the ` +
      "record is fixed",
    ]);
  });
});

Deno.test("RouteTable: a subscription with a static route's name is reported, and the static route is served", async () => {
  await withHome((_home, file) => {
    // Written by hand, or by an older version: `subscribe` refuses a static route's name.
    writeSubscriptions(file, { deploy: record({ prompt: "from the file" }), ci: record() });
    const reports: string[] = [];
    const table = new RouteTable({
      file,
      staticRoutes: [staticRoute("deploy", { prompt: "from config.yaml" })],
      report: (p) => reports.push(p),
    });
    assert.equal(table.get("deploy")?.prompt, "from config.yaml");
    assert.equal(table.get("deploy")?.source, "static");
    assert.equal(table.get("ci")?.source, "dynamic");
    assert.deepEqual(reports, [
      `${file}: subscription 'deploy' has the name of a static route in config.yaml; the ` +
      "static route is used. Fix: `agent webhook remove deploy` (it removes the subscription " +
      "and keeps the static route), or rename the record",
    ]);
  });
});
