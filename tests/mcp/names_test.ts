import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import fc from "fast-check";
import {
  clampToolName,
  detectCollisions,
  MAX_TOOL_NAME_LENGTH,
  sanitizeNamePart,
  toolName,
  UTILITY_TOOLS,
  type UtilityTool,
  utilityToolName,
} from "../../src/mcp/names.ts";

const SAFE_NAME = /^[A-Za-z0-9_]+$/;

function sha8(value: string): string {
  return createHash("sha256").update(value, "utf8").digest("hex").slice(0, 8);
}

Deno.test("toolName: the SPEC example", () => {
  assert.equal(toolName("my-api", "list-items.v2"), "mcp__my_api__list_items_v2");
});

Deno.test("sanitizeNamePart: replaces each disallowed character with one underscore", () => {
  const cases: Array<[string, string]> = [
    ["plain_Name_09", "plain_Name_09"],
    ["a.b", "a_b"],
    ["a-b", "a_b"],
    ["a b", "a_b"],
    ["a--b", "a__b"],
    ["  ", "__"],
    ["a/b:c@d", "a_b_c_d"],
    ["café", "caf_"],
    ["数据", "__"],
    ["Ünïcode", "_n_code"],
    ["go🚀", "go_"], // one code point, two UTF-16 code units → one "_"
    ["🚀🚀", "__"],
    ["🇫🇷", "__"], // a flag is two code points
    ["👍🏽", "__"], // emoji plus skin-tone modifier: two code points
    ["a\ud800b", "a_b"], // a lone surrogate is one "_"
    ["tab\there\nnl", "tab_here_nl"],
    ["", ""],
  ];
  for (const [input, expected] of cases) {
    assert.equal(sanitizeNamePart(input), expected, `sanitizeNamePart(${JSON.stringify(input)})`);
  }
});

Deno.test("toolName: sanitizes both the server and the tool", () => {
  assert.equal(toolName("my server.io", "get issue"), "mcp__my_server_io__get_issue");
  assert.equal(toolName("gh", "🚀launch"), "mcp__gh___launch");
});

Deno.test("clampToolName: 64 characters or fewer are unchanged", () => {
  for (const length of [1, 10, 63, 64]) {
    const name = "n".repeat(length);
    assert.equal(clampToolName(name), name, `length ${length}`);
  }
});

Deno.test("clampToolName: 65 characters become exactly 64: prefix, '_' and 8 hex of sha256", () => {
  const name = "mcp__server__" + "t".repeat(65 - 13);
  assert.equal(name.length, 65);
  const clamped = clampToolName(name);
  assert.equal(clamped.length, MAX_TOOL_NAME_LENGTH);
  assert.equal(clamped, `${name.slice(0, 55)}_${sha8(name)}`);
  assert.match(clamped, /^mcp__server__t+_[0-9a-f]{8}$/);
});

Deno.test("clampToolName: long names sharing a 60-character prefix stay distinct", () => {
  const prefix = "mcp__server__" + "p".repeat(60 - 13);
  const a = clampToolName(prefix + "_alpha");
  const b = clampToolName(prefix + "_beta");
  assert.notEqual(a, b);
  assert.equal(a.length, 64);
  assert.equal(b.length, 64);
  assert.equal(a.slice(0, 55), b.slice(0, 55));
});

Deno.test("clampToolName: deterministic", () => {
  const name = "mcp__" + "x".repeat(100);
  assert.equal(clampToolName(name), clampToolName(name));
  assert.equal(clampToolName(name), `${"mcp__" + "x".repeat(50)}_${sha8(name)}`);
});

Deno.test("clampToolName: an unsanitized name cut inside a surrogate pair keeps 64 units", () => {
  const name = "a".repeat(54) + "🚀" + "b".repeat(20);
  const clamped = clampToolName(name);
  assert.equal(clamped.length, 64);
  assert.equal(clamped, `${"a".repeat(54)}__${sha8(name)}`);
  assert.ok(clamped.isWellFormed());
});

Deno.test("toolName: long server and tool names are clamped", () => {
  const name = toolName("very-long-server-name", "a.really.long.tool.name.that.goes.on.and.on");
  const full = "mcp__very_long_server_name__a_really_long_tool_name_that_goes_on_and_on";
  assert.equal(name, `${full.slice(0, 55)}_${sha8(full)}`);
});

Deno.test("utilityToolName: every utility under the sanitized server", () => {
  assert.deepEqual(
    UTILITY_TOOLS.map((utility) => utilityToolName("my-api", utility)),
    [
      "mcp__my_api__list_resources",
      "mcp__my_api__read_resource",
      "mcp__my_api__list_prompts",
      "mcp__my_api__get_prompt",
    ],
  );
});

Deno.test("utilityToolName: clamps long server names", () => {
  const server = "s".repeat(70);
  const name = utilityToolName(server, "list_prompts");
  assert.equal(name.length, 64);
  assert.equal(name, clampToolName(`mcp__${server}__list_prompts`));
});

Deno.test("utilityToolName: an unknown utility throws a TypeError listing the valid ones", () => {
  assert.throws(
    () => utilityToolName("srv", "call_tool" as UtilityTool),
    (error: unknown) =>
      error instanceof TypeError && error.message.includes("call_tool") &&
      error.message.includes("list_resources, read_resource, list_prompts, get_prompt"),
  );
});

Deno.test("UTILITY_TOOLS: frozen", () => {
  assert.ok(Object.isFrozen(UTILITY_TOOLS));
});

Deno.test("detectCollisions: tools that sanitize alike collide", () => {
  const names = ["a-b", "read", "a.b", "a b", "x-y", "x_y"].map((tool) => ({
    registered: toolName("srv", tool),
    original: tool,
  }));
  assert.deepEqual(detectCollisions(names), ["mcp__srv__a_b", "mcp__srv__x_y"]);
});

Deno.test("detectCollisions: no collisions, repeated originals, empty input", () => {
  assert.deepEqual(detectCollisions([]), []);
  assert.deepEqual(
    detectCollisions([
      { registered: "mcp__s__a", original: "a" },
      { registered: "mcp__s__b", original: "b" },
      { registered: "mcp__s__a", original: "a" },
    ]),
    [],
  );
});

Deno.test("detectCollisions: a native tool clashing with a utility tool", () => {
  const names = [
    { registered: toolName("srv", "list-resources"), original: "tool:list-resources" },
    { registered: utilityToolName("srv", "list_resources"), original: "utility:list_resources" },
  ];
  assert.deepEqual(detectCollisions(names), ["mcp__srv__list_resources"]);
});

Deno.test("property: sanitized parts contain only [A-Za-z0-9_] and keep the code-point count", () => {
  fc.assert(
    fc.property(fc.string({ unit: "binary", minLength: 1 }), (value) => {
      const sanitized = sanitizeNamePart(value);
      assert.match(sanitized, SAFE_NAME);
      assert.equal([...sanitized].length, [...value].length);
    }),
  );
});

Deno.test("property: sanitizing is idempotent", () => {
  fc.assert(
    fc.property(fc.string({ unit: "binary" }), (value) => {
      const once = sanitizeNamePart(value);
      assert.equal(sanitizeNamePart(once), once);
    }),
  );
});

Deno.test("property: generated names are at most 64 safe characters", () => {
  fc.assert(
    fc.property(
      fc.string({ unit: "binary", maxLength: 120 }),
      fc.string({ unit: "binary", maxLength: 120 }),
      fc.constantFrom(...UTILITY_TOOLS),
      (server, tool, utility) => {
        for (const name of [toolName(server, tool), utilityToolName(server, utility)]) {
          assert.ok(name.length <= MAX_TOOL_NAME_LENGTH, name);
          assert.match(name, SAFE_NAME);
          assert.ok(name.startsWith("mcp__"));
        }
      },
    ),
  );
});

Deno.test("property: clamping keeps short names and distinguishes long ones", () => {
  const safeChar = fc.constantFrom(..."abcXYZ019_");
  fc.assert(
    fc.property(
      fc.string({ unit: safeChar, maxLength: 150 }),
      fc.string({ unit: safeChar, maxLength: 150 }),
      (a, b) => {
        const ca = clampToolName(a);
        assert.ok(ca.length <= MAX_TOOL_NAME_LENGTH);
        if (a.length <= MAX_TOOL_NAME_LENGTH) assert.equal(ca, a);
        else assert.equal(ca.length, MAX_TOOL_NAME_LENGTH);
        if (a !== b) assert.notEqual(ca, clampToolName(b));
      },
    ),
  );
});
