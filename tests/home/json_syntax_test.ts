import assert from "node:assert/strict";
import fc from "fast-check";
import { jsonSyntaxError, jsonSyntaxProblem } from "../../src/home/json_syntax.ts";

/** Whether `JSON.parse` takes `text`. */
function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

Deno.test("json syntax: the error's place and what was expected, quoting none of the text", () => {
  const cases: Array<[string, string]> = [
    ['{"secret": TOPSECRET-abc}', "line 1, column 12: expected a value"],
    ['{\n  "a": 1,\n  "b": 2,\n}', "line 4, column 1: expected a property name in double quotes"],
    ['{"a": 1 "b": 2}', "line 1, column 9: expected a comma or }"],
    ['{"a" 1}', "line 1, column 6: expected a colon after the property name"],
    ["[1, 2", "line 1, column 6: expected a comma or ]"],
    ['{"a": "abc', "line 1, column 11: expected a closing quote"],
    [
      '{"a": "x\\q"}',
      'line 1, column 10: expected an escape (\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\u)',
    ],
    ['["\\u12G4"]', "line 1, column 4: expected four hexadecimal digits after \\u"],
    [
      '{"a": "x\ty"}',
      "line 1, column 9: expected a closing quote (a control character in a string)",
    ],
    ["{} {}", "line 1, column 4: expected the end of the text after the value"],
    ["", "line 1, column 1: expected a value (the text ends here)"],
    ["[01]", "line 1, column 3: expected a comma or ]"],
    ["[-]", "line 1, column 2: expected a value"],
    ["{'a': 1}", "line 1, column 2: expected a property name in double quotes, or }"],
  ];
  for (const [text, problem] of cases) {
    assert.equal(parses(text), false, text);
    assert.equal(jsonSyntaxProblem(text), problem, text);
  }
  for (
    const text of ['{"a": [1, -2.5e+3, true, false, null, "\\u00e9\\n"], "b": {}}', " [] ", "0"]
  ) {
    assert.equal(jsonSyntaxError(text), undefined, text);
  }
});

Deno.test("json syntax: deep nesting costs no stack", () => {
  assert.equal(jsonSyntaxError("[".repeat(200_000) + "]".repeat(200_000)), undefined);
  assert.deepEqual(jsonSyntaxError("[".repeat(200_000)), {
    line: 1,
    column: 200_001,
    expected: "a value (the text ends here)",
  });
});

Deno.test("json syntax: finds an error exactly when JSON.parse refuses the text (property)", () => {
  const mutated = fc.tuple(
    fc.json(),
    fc.nat(),
    fc.constantFrom(
      "",
      ",",
      "}",
      "]",
      '"',
      ":",
      "x",
      "\\",
      "-",
      " ",
      "\n",
      "{",
      "[",
      "1",
      "\u0001",
    ),
  ).map(([text, at, insert]) => {
    const cut = at % (text.length + 1);
    return text.slice(0, cut) + insert + text.slice(cut + (at % 3 === 0 ? 1 : 0));
  });
  fc.assert(
    fc.property(fc.oneof(fc.json(), mutated, fc.string()), (text) => {
      assert.equal(jsonSyntaxError(text) === undefined, parses(text), JSON.stringify(text));
    }),
    { numRuns: 3000 },
  );
});
