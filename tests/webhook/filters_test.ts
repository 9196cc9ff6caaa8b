import assert from "node:assert/strict";
import { join } from "node:path";
import {
  type Filter,
  type FilterInput,
  matchFilter,
  MAX_FILTER_DEPTH,
  MAX_REGEX_INPUT_CHARS,
  parseFilters,
} from "../../src/webhook/filters.ts";

const WHERE = "platforms.webhook.extra.routes.deploy.filters";

/** Parses `raw`, failing the test on any problem. */
function parse(raw: unknown): Filter {
  const { filter, problems } = parseFilters(raw, WHERE);
  assert.deepEqual(problems, []);
  assert.ok(filter);
  return filter;
}

/** The problems of `raw`, checking that no filter came with them. */
function problemsOf(raw: unknown): string[] {
  const { filter, problems } = parseFilters(raw, WHERE);
  assert.equal(filter, undefined);
  assert.ok(problems.length > 0, "expected problems");
  return problems;
}

const PAYLOAD = {
  action: "opened",
  number: 42,
  draft: false,
  merged_at: null,
  labels: ["bug", "ci"],
  commits: [{ id: "abc", message: "Deploy now" }, { id: "def", message: "fix" }],
  repository: { full_name: "octo/app", owner: { login: "octo" } },
  title: "Crash on {start}",
};

function input(overrides: Partial<FilterInput> = {}): FilterInput {
  return {
    payload: PAYLOAD,
    event: "pull_request",
    headers: new Headers({ "X-GitHub-Event": "pull_request", "X-Count": "5" }),
    ...overrides,
  };
}

/** Matches one condition, given in config shape, against `input()` (or `over`). */
function check(condition: unknown, over: Partial<FilterInput> = {}): boolean {
  return matchFilter(parse(condition), input(over), { warn: (m) => assert.fail(`warned: ${m}`) });
}

// --- parseFilters ---------------------------------------------------------------------------

Deno.test("parseFilters: no filters configured means no filter and no problem", () => {
  assert.deepEqual(parseFilters(undefined, WHERE), { problems: [], warnings: [] });
  assert.deepEqual(parseFilters(null, WHERE), { problems: [], warnings: [] });
});

Deno.test("parseFilters: a list means all, a condition gets its operator", () => {
  assert.deepEqual(
    parse([
      { field: "action", equals: "opened" },
      { field: "labels", contains: "bug" },
      { field: "title", exists: true },
      { field: "closed_at", missing: true },
      { field: "action", not_equals: "closed" },
      { field: "action", in: ["opened", "reopened"] },
      { field: "repository.owner.login", in_file: "/etc/owners" },
      { field: "commits.0.message", regex: "^Deploy" },
    ]),
    {
      all: [
        { field: "action", op: "equals", value: "opened" },
        { field: "labels", op: "contains", value: "bug" },
        { field: "title", op: "exists" },
        { field: "closed_at", op: "missing" },
        { field: "action", op: "not_equals", value: "closed" },
        { field: "action", op: "in", values: ["opened", "reopened"] },
        { field: "repository.owner.login", op: "in_file", path: "/etc/owners" },
        { field: "commits.0.message", op: "regex", pattern: "^Deploy", regex: /^Deploy/ },
      ],
    },
  );
});

Deno.test("parseFilters: groups all, any and not nest", () => {
  assert.deepEqual(
    parse({
      any: [
        { not: { field: "draft", equals: true } },
        { all: [{ field: "event", equals: "push" }] },
        { not: [{ field: "a", exists: true }] },
      ],
    }),
    {
      any: [
        { not: { field: "draft", op: "equals", value: true } },
        { all: [{ field: "event", op: "equals", value: "push" }] },
        { not: { all: [{ field: "a", op: "exists" }] } },
      ],
    },
  );
});

Deno.test("parseFilters: an unknown operator lists the valid ones and suggests the closest", () => {
  const [problem] = problemsOf([{ field: "action" }, { field: "action", equal: "opened" }]).slice(
    1,
  );
  assert.equal(
    problem,
    `${WHERE}[1]: unknown key 'equal' (did you mean 'equals'?); a condition has \`field\` and ` +
      "one operator of: exists, missing, equals, not_equals, contains, in, in_file, regex; a " +
      "group is `all`, `any` or `not`",
  );
  assert.match(problemsOf({ field: "a", matches: "x" })[0], /did you mean 'regex'\?/);
  assert.match(problemsOf({ or: [] })[0], /unknown key 'or' \(did you mean 'any'\?\)/);
  assert.doesNotMatch(problemsOf({ field: "a", zzzzzzzz: 1 })[0], /did you mean/);
});

Deno.test("parseFilters: a condition without an operator says which to add", () => {
  assert.deepEqual(problemsOf({ field: "action" }), [
    `${WHERE}: the condition has no operator; add one of: exists, missing, equals, not_equals, ` +
    "contains, in, in_file, regex",
  ]);
});

Deno.test("parseFilters: two operators in one condition are a problem", () => {
  assert.deepEqual(problemsOf({ all: [{ field: "action", equals: "a", regex: "b" }] }), [
    `${WHERE}.all[0]: one condition has one operator, this one has equals and regex; split it ` +
    "into conditions of their own in a list (all must match) or an `any` group",
  ]);
});

Deno.test("parseFilters: a missing or malformed field is a problem", () => {
  assert.match(problemsOf({ equals: 1 })[0], /^.*filters: the condition has no `field`; add/);
  assert.match(problemsOf({ field: 3, equals: 1 })[0], /`field` is a dot path .*not number 3/);
  assert.match(problemsOf({ field: "a..b", exists: true })[0], /field 'a..b' has an empty segment/);
  assert.match(
    problemsOf({ field: "event.name", exists: true })[0],
    /`event` is the event name and has no fields; .* write `payload.event.name`/,
  );
  assert.match(problemsOf({ field: "headers", exists: true })[0], /needs a header name/);
});

Deno.test("parseFilters: a filter that is not a mapping or a list is a problem", () => {
  assert.deepEqual(problemsOf("action == opened"), [
    `${WHERE}: a filter is a mapping (a condition with \`field\`, or a group \`all\`, \`any\` or ` +
    '`not`) or a list of them, not the string "action == opened"',
  ]);
  assert.match(problemsOf([1])[0], new RegExp(`^${escape(WHERE)}\\[0\\]: .*not number 1$`));
  assert.match(problemsOf({ all: { field: "a", exists: true } })[0], /`all` takes a list/);
  assert.match(
    problemsOf({ not: { field: "a", exists: true }, field: "b" })[0],
    /a group has only its `not` key; move 'field' into a filter of its own/,
  );
});

Deno.test("parseFilters: operator values are checked", () => {
  assert.match(
    problemsOf({ field: "action", in: "opened" })[0],
    /`in` takes a list of values, e\.g\. `in: \[opened, reopened\]`, not the string "opened"; use `equals`/,
  );
  assert.match(
    problemsOf({ field: "a", exists: false })[0],
    /write `missing: true` for the opposite/,
  );
  assert.match(
    problemsOf({ field: "a", missing: "yes" })[0],
    /`missing` takes true, not the string/,
  );
  assert.match(problemsOf({ field: "a", in_file: "" })[0], /`in_file` takes the path of a file/);
  assert.match(problemsOf({ field: "a", regex: 5 })[0], /`regex` takes a regular expression/);
});

Deno.test("parseFilters: an invalid regex is a warning naming its place, not a problem", () => {
  const { filter, problems, warnings } = parseFilters(
    { any: [{ field: "a", regex: "[" }, { field: "b", equals: 1 }] },
    WHERE,
  );
  assert.deepEqual(problems, []);
  assert.deepEqual(filter, {
    any: [
      {
        field: "a",
        op: "regex",
        pattern: "[",
        invalid: "is not a valid JavaScript regular expression (Invalid regular expression: " +
          "/[/: Unterminated character class)",
      },
      { field: "b", op: "equals", value: 1 },
    ],
  });
  assert.deepEqual(warnings, [
    `${WHERE}.any[0]: filter on 'a': regex "[" is not a valid JavaScript regular expression ` +
    "(Invalid regular expression: /[/: Unterminated character class); the condition is false " +
    "until the pattern is fixed (the route is served: its other conditions still decide)",
  ]);
});

Deno.test("parseFilters: each regex is compiled once, when the filter is parsed", () => {
  const condition = parse({ field: "title", regex: "(?i)^deploy" }) as { regex?: RegExp };
  assert.ok(condition.regex instanceof RegExp);
  assert.deepEqual([condition.regex.source, condition.regex.flags], ["^deploy", "i"]);
});

Deno.test("parseFilters: every problem is reported, with its place", () => {
  const problems = problemsOf([{ field: "a", equal: 1 }, { any: [{ field: "b", in: 2 }] }]);
  assert.equal(problems.length, 2);
  assert.ok(problems[0].startsWith(`${WHERE}[0]: `));
  assert.ok(problems[1].startsWith(`${WHERE}[1].any[0]: `));
});

Deno.test("parseFilters: nesting is bounded", () => {
  const nest = (levels: number): unknown => {
    let filter: unknown = { field: "a", exists: true };
    for (let i = 0; i < levels; i++) filter = { not: filter };
    return filter;
  };
  assert.ok(parse(nest(MAX_FILTER_DEPTH)));
  const problems = problemsOf(nest(MAX_FILTER_DEPTH + 1));
  assert.equal(problems.length, 1);
  assert.match(problems[0], /filters nest more than 16 groups deep; flatten them/);
  assert.match(problems[0], new RegExp(`^${escape(WHERE)}(\\.not){16}: `));
  // A cycle (YAML aliases can build one) stops at the bound instead of recursing forever.
  const cycle: Record<string, unknown> = {};
  cycle.all = [cycle];
  assert.match(problemsOf(cycle)[0], /more than 16 groups deep/);
});

// --- matchFilter: operators -----------------------------------------------------------------

Deno.test("matchFilter: exists and missing, with null counting as present", () => {
  assert.equal(check({ field: "merged_at", exists: true }), true);
  assert.equal(check({ field: "merged_at", missing: true }), false);
  assert.equal(check({ field: "closed_at", exists: true }), false);
  assert.equal(check({ field: "closed_at", missing: true }), true);
  assert.equal(check({ field: "draft", exists: true }), true);
});

Deno.test("matchFilter: equals and not_equals compare JSON values deeply", () => {
  assert.equal(check({ field: "action", equals: "opened" }), true);
  assert.equal(check({ field: "action", equals: "closed" }), false);
  assert.equal(check({ field: "draft", equals: false }), true);
  assert.equal(check({ field: "merged_at", equals: null }), true);
  assert.equal(check({ field: "labels", equals: ["bug", "ci"] }), true);
  assert.equal(check({ field: "labels", equals: ["ci", "bug"] }), false);
  assert.equal(
    check({ field: "repository", equals: { owner: { login: "octo" }, full_name: "octo/app" } }),
    true,
  );
  assert.equal(check({ field: "repository", equals: { full_name: "octo/app" } }), false);
  assert.equal(check({ field: "action", not_equals: "closed" }), true);
  assert.equal(check({ field: "action", not_equals: "opened" }), false);
  assert.equal(check({ field: "closed_at", equals: null }), false, "missing is not null");
  assert.equal(check({ field: "closed_at", not_equals: "x" }), true, "missing is not equal");
});

Deno.test("matchFilter: scalars of different types compare by their string forms", () => {
  assert.equal(check({ field: "number", equals: "42" }), true);
  assert.equal(check({ field: "number", equals: "42.0" }), false);
  assert.equal(check({ field: "draft", equals: "false" }), true);
  assert.equal(check({ field: "headers.x-count", equals: 5 }), true);
  assert.equal(check({ field: "number", equals: true }), false);
  assert.equal(check({ field: "merged_at", equals: "null" }), false);
  assert.equal(check({ field: "number", in: ["41", "42"] }), true);
});

Deno.test("matchFilter: contains tests substrings of strings and elements of arrays", () => {
  assert.equal(check({ field: "title", contains: "Crash" }), true);
  assert.equal(check({ field: "title", contains: "crash" }), false);
  assert.equal(check({ field: "labels", contains: "ci" }), true);
  assert.equal(check({ field: "labels", contains: "c" }), false);
  assert.equal(check({ field: "commits", contains: { id: "def", message: "fix" } }), true);
  assert.equal(check({ field: "repository", contains: "octo" }), false);
  assert.equal(check({ field: "number", contains: 4 }), false);
  assert.equal(check({ field: "closed_at", contains: "x" }), false);
});

Deno.test("matchFilter: in is equality with one of a list", () => {
  assert.equal(check({ field: "action", in: ["opened", "reopened"] }), true);
  assert.equal(check({ field: "action", in: ["closed"] }), false);
  assert.equal(check({ field: "action", in: [] }), false);
  assert.equal(check({ field: "closed_at", in: [null] }), false);
  assert.equal(check({ field: "merged_at", in: [null] }), true);
});

Deno.test("matchFilter: regex searches the value's string form", () => {
  assert.equal(check({ field: "commits.0.message", regex: "^Deploy" }), true);
  assert.equal(check({ field: "commits.1.message", regex: "^Deploy" }), false);
  assert.equal(check({ field: "commits.1.message", regex: "(?i)FIX" }), true);
  assert.equal(check({ field: "commits.1.message", regex: "FIX" }), false);
  assert.equal(check({ field: "number", regex: "^4\\d$" }), true);
  assert.equal(check({ field: "repository.owner", regex: '"login":"octo"' }), true);
  assert.equal(check({ field: "merged_at", regex: "^null$" }), true);
  assert.equal(check({ field: "closed_at", regex: ".*" }), false);
});

Deno.test("matchFilter: regex tests at most the first 10 000 characters", () => {
  const long = { text: "a".repeat(MAX_REGEX_INPUT_CHARS) + "TAIL" };
  assert.equal(check({ field: "text", regex: "^a+$" }, { payload: long }), true);
  assert.equal(check({ field: "text", regex: "TAIL" }, { payload: long }), false);
  assert.equal(check({ field: "text", regex: "TAIL" }, { payload: { text: "aTAIL" } }), true);
});

Deno.test("matchFilter: an invalid regex parsed at load is false, and not warned about again", () => {
  const warnings: string[] = [];
  const filter = parse({ any: [{ field: "action", regex: "[" }, { field: "number", equals: 42 }] });
  const warn = (m: string) => warnings.push(m);
  for (let i = 0; i < 3; i++) {
    assert.equal(matchFilter(filter, input(), { warn }), true);
    assert.equal(
      matchFilter(filter, input({ payload: { action: "x", number: 8 } }), { warn }),
      false,
    );
  }
  assert.deepEqual(warnings, [], "parseFilters reported it; requests must not repeat it");
});

Deno.test("matchFilter: an invalid regex built by hand is false with a warning", () => {
  const warnings: string[] = [];
  const filter: Filter = { not: { field: "action", op: "regex", pattern: "(unclosed" } };
  assert.equal(matchFilter(filter, input(), { warn: (m) => warnings.push(m) }), true);
  assert.equal(warnings.length, 1);
  assert.match(
    warnings[0],
    /^filter on 'action': regex "\(unclosed" is not a valid JavaScript regular expression \(.+\); the condition is false until the pattern is fixed$/,
  );
});

Deno.test("matchFilter: in_file reads one value per line, skipping blanks and comments", async () => {
  const dir = await Deno.makeTempDir({ prefix: "filters-test-" });
  try {
    const path = join(dir, "owners.txt");
    Deno.writeTextFileSync(path, "# allowed owners\n\n  octo  \r\n#hubot\nmona\n42\n");
    const warn = (m: string) => assert.fail(`warned: ${m}`);
    const owner = (login: unknown) =>
      matchFilter(parse({ field: "login", in_file: path }), input({ payload: { login } }), {
        warn,
      });
    assert.equal(owner("octo"), true);
    assert.equal(owner("mona"), true);
    assert.equal(owner(42), true);
    assert.equal(owner("hubot"), false);
    assert.equal(owner("#hubot"), false);
    assert.equal(owner("# allowed owners"), false);
    assert.equal(owner(""), false);
    assert.equal(owner(undefined), false);
    assert.equal(owner({ name: "octo" }), false);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("matchFilter: in_file reads each file once per call, through options.readFile", () => {
  const reads: string[] = [];
  const readFile = (path: string) => {
    reads.push(path);
    return "opened\n";
  };
  const filter = parse([
    { field: "action", in_file: "/lists/a" },
    { any: [{ field: "action", in_file: "/lists/a" }, { field: "x", exists: true }] },
  ]);
  assert.equal(matchFilter(filter, input(), { readFile }), true);
  assert.deepEqual(reads, ["/lists/a"]);
});

Deno.test("matchFilter: an unreadable in_file list is false with a warning", async () => {
  const dir = await Deno.makeTempDir({ prefix: "filters-test-" });
  try {
    const path = join(dir, "absent.txt");
    const warnings: string[] = [];
    const filter = parse({ field: "action", in_file: path });
    assert.equal(matchFilter(filter, input(), { warn: (m) => warnings.push(m) }), false);
    assert.deepEqual(warnings, [
      `filter on 'action': cannot read the in_file list ${path}; the condition is false until ` +
      "the file exists and is readable (one value per line)",
    ]);
    const throwing = () => {
      throw new Error("boom");
    };
    assert.equal(matchFilter(filter, input(), { readFile: throwing, warn: () => {} }), false);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// --- matchFilter: fields --------------------------------------------------------------------

Deno.test("matchFilter: event and event_type are the event name", () => {
  assert.equal(check({ field: "event", equals: "pull_request" }), true);
  assert.equal(check({ field: "event_type", equals: "pull_request" }), true);
  assert.equal(check({ field: "event", equals: "push" }), false);
  // The payload's own event_type field does not shadow the event name.
  assert.equal(
    check({ field: "event_type", equals: "x" }, { payload: { event_type: "x" } }),
    false,
  );
});

Deno.test("matchFilter: headers are found in any case, from Headers or a record", () => {
  assert.equal(check({ field: "headers.x-github-event", equals: "pull_request" }), true);
  assert.equal(check({ field: "headers.X-GITHUB-EVENT", equals: "pull_request" }), true);
  assert.equal(check({ field: "headers.x-gitlab-event", exists: true }), false);
  const record = { headers: { "X-Gitlab-Event": "Push Hook" } };
  assert.equal(check({ field: "headers.x-gitlab-event", equals: "Push Hook" }, record), true);
  assert.equal(check({ field: "headers.X-GitLab-EVENT", exists: true }, record), true);
  assert.equal(check({ field: "headers.x-github-event", exists: true }, record), false);
  // A payload field named headers is not a header.
  assert.equal(
    check({ field: "headers.a", exists: true }, { payload: { headers: { a: 1 } } }),
    false,
  );
  // Not a valid header name: no such header, no exception.
  assert.equal(check({ field: "headers.bad name", missing: true }), true);
});

Deno.test("matchFilter: `payload.` starts at a nested payload object, else at the root", () => {
  const nested = { payload: { action: "inner" }, action: "outer" };
  assert.equal(check({ field: "payload.action", equals: "inner" }, { payload: nested }), true);
  assert.equal(check({ field: "action", equals: "outer" }, { payload: nested }), true);
  assert.equal(check({ field: "payload.action", equals: "opened" }), true);
  // A nested `payload` that is not an object does not count.
  const scalar = { payload: "text", action: "outer" };
  assert.equal(check({ field: "payload.action", equals: "outer" }, { payload: scalar }), true);
  const list = { payload: [1], action: "outer" };
  assert.equal(check({ field: "payload.action", equals: "outer" }, { payload: list }), true);
  assert.equal(check({ field: "payload", equals: { action: "inner" } }, { payload: nested }), true);
});

Deno.test("matchFilter: numeric segments index arrays; other steps into nothing are missing", () => {
  assert.equal(check({ field: "commits.1.id", equals: "def" }), true);
  assert.equal(check({ field: "labels.0", equals: "bug" }), true);
  assert.equal(check({ field: "commits.2.id", missing: true }), true);
  assert.equal(check({ field: "commits.id", missing: true }), true);
  assert.equal(check({ field: "labels.length", missing: true }), true);
  assert.equal(check({ field: "action.length", missing: true }), true);
  assert.equal(check({ field: "repository.constructor", missing: true }), true);
  assert.equal(check({ field: "0", equals: "first" }, { payload: ["first"] }), true);
  assert.equal(check({ field: "a.0", equals: "x" }, { payload: { a: { "0": "x" } } }), true);
});

// --- matchFilter: groups --------------------------------------------------------------------

Deno.test("matchFilter: all, any and not; empty all is true, empty any is false", () => {
  const yes = { field: "action", equals: "opened" };
  const no = { field: "action", equals: "closed" };
  assert.equal(check({ all: [yes, yes] }), true);
  assert.equal(check({ all: [yes, no] }), false);
  assert.equal(check({ any: [no, yes] }), true);
  assert.equal(check({ any: [no, no] }), false);
  assert.equal(check({ not: no }), true);
  assert.equal(check({ not: yes }), false);
  assert.equal(check({ all: [] }), true);
  assert.equal(check({ any: [] }), false);
  assert.equal(check([]), true);
  assert.equal(check([yes, no]), false);
  assert.equal(check([yes, { any: [no, { not: { all: [no, yes] } }] }]), true);
  assert.equal(check([yes, { any: [no, { not: { all: [yes, yes] } }] }]), false);
});

Deno.test("matchFilter: a hand-built tree nested too deep is false with a warning", () => {
  let filter: Filter = { field: "action", op: "exists" };
  for (let i = 0; i <= MAX_FILTER_DEPTH; i++) filter = { not: filter };
  const warnings: string[] = [];
  assert.equal(matchFilter(filter, input(), { warn: (m) => warnings.push(m) }), false);
  assert.match(warnings[0], /nest more than 16 deep; the filter does not match/);
  assert.equal(matchFilter((filter as { not: Filter }).not, input()), true);
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

Deno.test("matchFilter: integers beyond 2^53 (bigint in a parsed payload) compare by their digits", () => {
  const payload = { channel: { id: 1234567890123456789n, name: "ops" } };
  assert.equal(check({ field: "channel.id", equals: "1234567890123456789" }, { payload }), true);
  assert.equal(check({ field: "channel.id", equals: "1234567890123456800" }, { payload }), false);
  assert.equal(check({ field: "channel", regex: '"id":1234567890123456789,' }, { payload }), true);
  assert.equal(check({ field: "channel.id", in: ["1", "1234567890123456789"] }, { payload }), true);
});

Deno.test("parseFilters: an unquoted integer beyond 2^53 is refused (it was rounded when read)", () => {
  for (
    const condition of [{ field: "chat", equals: 1234567890123456789 }, {
      field: "chat",
      in: [1, 1234567890123456789],
    }]
  ) {
    const { problems } = parseFilters(condition, "filters");
    assert.equal(problems.length, 1, JSON.stringify(problems));
    assert.match(problems[0], /too large to be exact .*write it in quotes/);
  }
  assert.deepEqual(parseFilters({ field: "n", equals: 9007199254740991 }, "filters").problems, []);
  assert.equal(
    check({ field: "chat", equals: "1234567890123456789" }, {
      payload: { chat: 1234567890123456789n },
    }),
    true,
  );
});
