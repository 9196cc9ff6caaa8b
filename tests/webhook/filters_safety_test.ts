// Filters that must not depend on where the gateway was started (relative `in_file` paths) and
// must not stall it (regexes with catastrophic backtracking).
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  type Filter,
  matchFilter,
  nestedQuantifier,
  parseFilters,
} from "../../src/webhook/filters.ts";

const WHERE = "platforms.webhook.extra.routes.slow.filters";

/** 28 `a` and a `!`: `(a+)+$` backtracks through 2^28 splits on it (~20 s in V8). */
const PATHOLOGICAL_TITLE = "a".repeat(28) + "!";

Deno.test("parseFilters: a relative in_file path is resolved against baseDir, an absolute one kept", () => {
  const { filter, problems } = parseFilters(
    [
      { field: "sender.login", in_file: "lists/allow.txt" },
      { field: "sender.login", in_file: "/etc/owners" },
    ],
    WHERE,
    { baseDir: "/home/me/.agent" },
  );
  assert.deepEqual(problems, []);
  assert.deepEqual(filter, {
    all: [
      { field: "sender.login", op: "in_file", path: "/home/me/.agent/lists/allow.txt" },
      { field: "sender.login", op: "in_file", path: "/etc/owners" },
    ],
  });
});

Deno.test("matchFilter: a relative in_file list is read from baseDir, whatever the working directory", async () => {
  const home = await Deno.makeTempDir({ prefix: "filters-home-" });
  try {
    Deno.writeTextFileSync(join(home, "allow.txt"), "octo\n");
    const { filter } = parseFilters({ field: "login", in_file: "allow.txt" }, WHERE, {
      baseDir: home,
    });
    const warnings: string[] = [];
    const matches = (login: string) =>
      matchFilter(filter!, { payload: { login }, event: "push", headers: {} }, {
        warn: (m) => warnings.push(m),
      });
    assert.notEqual(Deno.cwd(), home);
    assert.equal(matches("octo"), true);
    assert.equal(matches("mona"), false);
    assert.equal(warnings.length, 0);

    Deno.removeSync(join(home, "allow.txt"));
    assert.equal(matches("octo"), false);
    assert.equal(warnings.length, 1);
    assert.ok(
      warnings[0].includes(`cannot read the in_file list ${join(home, "allow.txt")};`),
      `the warning names the resolved path: ${warnings[0]}`,
    );
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("parseFilters: a regex with a nested quantifier is refused, naming it and the fix", () => {
  const { filter, problems } = parseFilters({ field: "title", regex: "(a+)+$" }, WHERE);
  assert.equal(filter, undefined);
  assert.equal(problems.length, 1);
  assert.match(
    problems[0],
    /^platforms\.webhook\.extra\.routes\.slow\.filters: regex "\(a\+\)\+\$" is refused: its nested quantifier "\(a\+\)\+" .* Fix: repeat once/,
  );
  // Inline flags are looked through; nesting deeper or in a non-capturing group is found too.
  for (const pattern of ["(?i)(a+)+$", "^(?:x|(\\w+\\s?))*!", "((ab)*c)+", "(a+){3}b"]) {
    assert.equal(parseFilters({ field: "t", regex: pattern }, WHERE).filter, undefined, pattern);
  }
  // Common regexes without nested quantifiers pass.
  for (
    const pattern of [
      "^refs/tags/v\\d+\\.\\d+\\.\\d+$",
      "(?i)deploy",
      "^(\\d{1,3}\\.){3}\\d{1,3}$",
      "^(feat|fix)(\\([a-z-]+\\))?: .+",
      "[(a+)+]",
      "\\((a+)\\)+",
      "(ab)+c*",
      "(a+)?b",
    ]
  ) {
    assert.deepEqual(parseFilters({ field: "t", regex: pattern }, WHERE).problems, [], pattern);
  }
});

Deno.test("nestedQuantifier: reports the repeated group with its quantifier", () => {
  assert.equal(nestedQuantifier("(a+)+$"), "(a+)+");
  assert.equal(nestedQuantifier("x(a*)*?y"), "(a*)*?");
  assert.equal(nestedQuantifier("(?<w>a{1,3})+"), "(?<w>a{1,3})+");
  assert.equal(nestedQuantifier("((a+))+"), "((a+))+");
  assert.equal(nestedQuantifier("(a{2})+"), undefined); // a fixed count inside: one way to split
  assert.equal(nestedQuantifier("(a|aa)+"), undefined); // overlapping alternatives: not found
});

Deno.test("matchFilter: the pathological (a+)+$ case ends at once, also when built by hand", () => {
  // A filter tree built without parseFilters still never runs the pattern.
  const filter: Filter = { field: "title", op: "regex", pattern: "(a+)+$" };
  const warnings: string[] = [];
  const started = performance.now();
  const matched = matchFilter(filter, {
    payload: { title: PATHOLOGICAL_TITLE },
    event: "issues",
    headers: {},
  }, { warn: (m) => warnings.push(m) });
  const elapsedMs = performance.now() - started;
  assert.equal(matched, false);
  // Normal runs take well under 10 ms; the old code took ~20 s. The bound is far from both.
  assert.ok(elapsedMs < 2_000, `matchFilter took ${elapsedMs.toFixed(0)} ms`);
  assert.equal(warnings.length, 1);
  assert.match(
    warnings[0],
    /^filter on 'title': regex "\(a\+\)\+\$" is refused: its nested quantifier .*; the condition is false until the pattern is fixed$/,
  );
});
