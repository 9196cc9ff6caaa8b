import assert from "node:assert/strict";
import fc from "fast-check";
import { fnmatch, hasGlob, matchesAny, selectTools } from "../../src/mcp/filter.ts";

Deno.test("hasGlob: *, ? and [ are glob characters", () => {
  const cases: Array<[string, boolean]> = [
    ["read_file", false],
    ["", false],
    ["a.b+c(d)", false],
    ["get_*", true],
    ["read_?ile", true],
    ["[rw]rite", true],
    ["unclosed[", true],
    ["]", false],
  ];
  for (const [pattern, expected] of cases) {
    assert.equal(hasGlob(pattern), expected, `hasGlob(${JSON.stringify(pattern)})`);
  }
});

Deno.test("fnmatch: table", () => {
  const cases: Array<[pattern: string, name: string, expected: boolean]> = [
    ["*", "", true],
    ["*", "anything/with.dots", true],
    ["get_*", "get_issue", true],
    ["get_*", "get_", true],
    ["get_*", "list_issue", false],
    ["get_*", "xget_issue", false],
    ["*_file", "read_file", true],
    ["*_file", "read_file_x", false],
    ["*_file", "a/b.c_file", true],
    ["a*b*c", "abc", true],
    ["a*b*c", "aXbYc", true],
    ["a*b*c", "acb", false],
    ["a**b", "ab", true],
    ["*a*", "bab", true],
    ["*ab", "aab", true],
    ["*a?c*", "xxabcxx", true],
    ["read_?ile", "read_file", true],
    ["read_?ile", "read_mile", true],
    ["read_?ile", "read_ile", false],
    ["read_?ile", "read_fxile", false],
    ["?", "🚀", true], // one code point
    ["??", "🚀", false],
    ["[rw]rite", "write", true],
    ["[rw]rite", "rrite", true],
    ["[rw]rite", "xrite", false],
    ["[!r]ead", "head", true],
    ["[!r]ead", "read", false],
    ["[^r]ead", "head", true],
    ["[^r]ead", "read", false],
    ["[a-c]*", "alpha", true],
    ["[a-c]*", "charlie", true],
    ["[a-c]*", "delta", false],
    ["[a-c]*", "Alpha", false],
    ["[!a-c]*", "delta", true],
    ["[a-]", "-", true],
    ["[-a]", "-", true],
    ["[]]", "]", true],
    ["[!]]", "a", true],
    ["[!]]", "]", false],
    ["[z-a]", "m", false], // a reversed range is empty
    ["[!z-a]", "m", true],
    ["[.]", ".", true],
    ["[.]", "a", false],
    ["[\\]", "\\", true],
    ["a.b", "a.b", true],
    ["a.b", "axb", false],
    ["a+", "a+", true],
    ["a+", "aa", false],
    ["f(x)", "f(x)", true],
    ["f(x", "f(x", true],
    ["$^|{1}\\d", "$^|{1}\\d", true],
    ["[abc", "[abc", true], // unclosed "[" is literal
    ["[abc", "a", false],
    ["x[", "x[", true],
    ["[]", "[]", true],
    ["", "", true],
    ["", "a", false],
    ["Read", "read", false],
    ["read", "READ", false],
    ["*", "multi\nline", true],
    ["a?b", "a\nb", true],
  ];
  for (const [pattern, name, expected] of cases) {
    assert.equal(
      fnmatch(name, pattern),
      expected,
      `fnmatch(${JSON.stringify(name)}, ${JSON.stringify(pattern)})`,
    );
  }
});

Deno.test("fnmatch: many stars on a long non-matching name finish quickly", () => {
  const start = performance.now();
  assert.equal(fnmatch("a".repeat(5_000), "*a*a*a*a*a*a*a*a*b"), false);
  assert.ok(performance.now() - start < 1_000);
});

Deno.test("fnmatch: the cache stays correct past its bound", () => {
  for (let i = 0; i < 2_000; i += 1) {
    assert.equal(fnmatch(`tool_${i}`, `tool_${i}*`), true);
    assert.equal(fnmatch(`tool_${i}`, `tool_${i + 1}*`), false);
  }
  assert.equal(fnmatch("tool_0", "tool_0*"), true);
});

Deno.test("matchesAny: exact entries, glob entries, no entries", () => {
  assert.equal(matchesAny("read_file", ["read_file"]), true);
  assert.equal(matchesAny("read_file", ["write_file", "read_*"]), true);
  assert.equal(matchesAny("read_file", ["write_file", "delete_*"]), false);
  assert.equal(matchesAny("read_file", []), false);
  assert.equal(matchesAny("a.b", ["a_b"]), false); // original names, not sanitized ones
  assert.equal(matchesAny("a[b", ["a[b"]), true);
  assert.equal(matchesAny("Read_file", ["read_file"]), false);
});

Deno.test("selectTools: include/exclude table", () => {
  const tools = ["read_file", "write_file", "delete_file", "list-items.v2", "get_issue"].map(
    (name) => ({ name }),
  );
  const cases: Array<[string, Parameters<typeof selectTools>[1], string[]]> = [
    ["neither", {}, ["read_file", "write_file", "delete_file", "list-items.v2", "get_issue"]],
    ["include exact", { include: ["get_issue"] }, ["get_issue"]],
    ["include glob", { include: ["*_file"] }, ["read_file", "write_file", "delete_file"]],
    ["include original name", { include: ["list-items.v2"] }, ["list-items.v2"]],
    ["include sanitized name misses", { include: ["list_items_v2"] }, []],
    ["include: [] keeps nothing", { include: [] }, []],
    ["include: [] ignores exclude", { include: [], exclude: ["read_file"] }, []],
    ["exclude exact", { exclude: ["delete_file"] }, [
      "read_file",
      "write_file",
      "list-items.v2",
      "get_issue",
    ]],
    ["exclude glob", { exclude: ["*_file", "[gl]*"] }, []],
    ["exclude: [] keeps all", { exclude: [] }, [
      "read_file",
      "write_file",
      "delete_file",
      "list-items.v2",
      "get_issue",
    ]],
    ["include wins over exclude", { include: ["*_file"], exclude: ["delete_file"] }, [
      "read_file",
      "write_file",
      "delete_file",
    ]],
    ["include order is the tools' order", { include: ["get_issue", "read_file"] }, [
      "read_file",
      "get_issue",
    ]],
  ];
  for (const [label, selection, expected] of cases) {
    assert.deepEqual(selectTools(tools, selection).map((tool) => tool.name), expected, label);
  }
});

Deno.test("selectTools: returns a new array and keeps the tool objects", () => {
  const tools = [{ name: "a", extra: 1 }, { name: "b", extra: 2 }];
  const selected = selectTools(tools, {});
  assert.notEqual(selected, tools);
  assert.deepEqual(selected, tools);
  assert.equal(selectTools(tools, { include: ["b"] })[0], tools[1]);
});

const noGlob = fc.string({ unit: "binary" }).filter((value) => !/[*?[]/.test(value));

Deno.test("property: a name without glob characters matches itself", () => {
  fc.assert(fc.property(noGlob, (value) => {
    assert.equal(fnmatch(value, value), true);
    assert.equal(matchesAny(value, [value]), true);
  }));
});

Deno.test("property: a glob-free pattern matches only its exact text", () => {
  fc.assert(fc.property(noGlob, fc.string({ unit: "binary" }), (pattern, name) => {
    assert.equal(fnmatch(name, pattern), name === pattern);
  }));
});

Deno.test("property: * matches everything", () => {
  fc.assert(fc.property(fc.string({ unit: "binary" }), (value) => {
    assert.equal(fnmatch(value, "*"), true);
    assert.equal(fnmatch(value, "**"), true);
  }));
});

Deno.test("property: prefix* and *suffix match names with that prefix or suffix", () => {
  fc.assert(fc.property(noGlob, noGlob, noGlob, (prefix, middle, suffix) => {
    const name = prefix + middle + suffix;
    assert.equal(fnmatch(name, `${prefix}*`), true);
    assert.equal(fnmatch(name, `*${suffix}`), true);
    assert.equal(fnmatch(name, `${prefix}*${suffix}`), true);
    assert.equal(fnmatch(name, `*${middle}*`), true);
  }));
});

Deno.test("property: fnmatch agrees with a reference matcher on a small alphabet", () => {
  const pattern = fc.string({ unit: fc.constantFrom("a", "b", "*", "?"), maxLength: 8 });
  const name = fc.string({ unit: fc.constantFrom("a", "b"), maxLength: 8 });
  fc.assert(fc.property(name, pattern, (n, p) => {
    assert.equal(fnmatch(n, p), reference(n, p), `fnmatch(${n}, ${p})`);
  }));
});

Deno.test("property: selectTools without filters keeps everything; include ['*'] too", () => {
  fc.assert(fc.property(fc.array(fc.string()), fc.array(fc.string()), (names, exclude) => {
    const tools = names.map((name) => ({ name }));
    assert.deepEqual(selectTools(tools, {}), tools);
    assert.deepEqual(selectTools(tools, { include: ["*"], exclude }), tools);
    assert.deepEqual(selectTools(tools, { exclude: ["*"] }), []);
  }));
});

/** Plain recursive matcher for `*` and `?` only, to check the compiled RegExp against. */
function reference(name: string, pattern: string): boolean {
  if (pattern === "") return name === "";
  if (pattern[0] === "*") {
    for (let i = 0; i <= name.length; i += 1) {
      if (reference(name.slice(i), pattern.slice(1))) return true;
    }
    return false;
  }
  if (name === "") return false;
  if (pattern[0] === "?" || pattern[0] === name[0]) {
    return reference(name.slice(1), pattern.slice(1));
  }
  return false;
}
