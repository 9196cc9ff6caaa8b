/**
 * The `.env` line check against dotenv's own `parse()`: a line said to be ignored really gives
 * nothing, a line that gives a variable is never said to be ignored, and no message quotes the
 * text of a line.
 */
import assert from "node:assert/strict";
import { parse } from "dotenv";
import fc from "fast-check";
import { dotenvLineProblems, dotenvWarnings } from "../../src/home/dotenv_lines.ts";

const NO_EQUALS = "nothing is read from this line: it has no `=`; write it as NAME=value";
const BAD_NAME = "nothing is read from this line: the text before `=` is not a variable name " +
  "(letters, digits, `_`, `.` and `-`, no spaces); write it as NAME=value";

Deno.test("dotenvLineProblems: what dotenv reads is not reported, in every form it reads", () => {
  const text = [
    "# comment",
    "",
    "   ",
    "A=1",
    "export B=2",
    "  C = spaced  # inline comment",
    "D: colon form",
    'E="multi',
    "line value, with a # and a",
    'stray = inside"',
    "F='single quoted'",
    "G=`back quoted`",
    "H=",
    "I.J-K=dotted",
    'L="escaped \\" quote"',
    'M="a\\nb"',
  ].join("\n");
  assert.deepEqual(dotenvLineProblems(text), []);
  assert.deepEqual(dotenvLineProblems(text.replaceAll("\n", "\r\n")), []);
  assert.deepEqual(Object.keys(parse(text)), [
    "A",
    "B",
    "C",
    "D",
    "E",
    "F",
    "G",
    "H",
    "I.J-K",
    "L",
    "M",
  ]);
});

Deno.test("dotenvLineProblems: a line without a name or without `=` is reported, never quoted", () => {
  const text = [
    "OPENAI_API_KEY=sk-ok",
    "API TOKEN=tok-with-space-in-name",
    "sk-live-pasted-token-without-a-name",
    "set WINDOWS=style",
    "$DOLLAR=x",
    "GITHUB_TOKEN ghp_noequals",
    "  # indented comment",
  ].join("\r\n");
  const problems = dotenvLineProblems(text);
  assert.deepEqual(problems, [
    { line: 2, message: BAD_NAME },
    { line: 3, message: NO_EQUALS },
    { line: 4, message: BAD_NAME },
    { line: 5, message: BAD_NAME },
    { line: 6, message: NO_EQUALS },
  ]);
  const said = JSON.stringify(problems);
  for (const secret of ["tok-with", "sk-live", "ghp_", "WINDOWS", "DOLLAR"]) {
    assert.ok(!said.includes(secret), `${secret} in ${said}`);
  }
});

Deno.test("dotenvLineProblems: a quote that is opened and not closed is reported on its line", () => {
  const text = "A=1\nTOKEN=\"abc123\nB=2\nC='x'y\n";
  assert.deepEqual(parse(text), { A: "1", TOKEN: '"abc123', B: "2", C: "'x'y" });
  const quote = (name: string, q: string) =>
    `the value of ${name} starts with a ${q} quote but does not end with one, so the quote is ` +
    "read as part of the value; close the quote (with nothing but a `# comment` after it) or " +
    "remove it";
  assert.deepEqual(dotenvLineProblems(text), [
    { line: 2, message: quote("TOKEN", '"') },
    { line: 4, message: quote("C", "'") },
  ]);
  // A lone quote as the whole value, the last one of the file: nothing closes it.
  assert.deepEqual(parse('D="\n'), { D: '"' });
  assert.deepEqual(dotenvLineProblems('D="\n'), [{ line: 1, message: quote("D", '"') }]);
});

Deno.test("dotenvWarnings: file and line in front; none without a file", () => {
  assert.deepEqual(dotenvWarnings("/home/u/.agent/.env", "OK=1\n\nnot an assignment\n"), [
    `/home/u/.agent/.env:3: ${NO_EQUALS}`,
  ]);
  assert.deepEqual(dotenvWarnings("/x/.env", undefined), []);
  assert.deepEqual(dotenvWarnings("/x/.env", ""), []);
});

/** Lines of the kinds a hand-written .env has, junk included; names unique per line index. */
function lineOf(kind: number, index: number, word: string): string {
  switch (kind) {
    case 0:
      return `K${index}=${word}`;
    case 1:
      return `export K${index}="${word}"`;
    case 2:
      return `K${index}='${word}\n${word} = more\n'`; // multi-line, with an assignment-like line
    case 3:
      return `# K${index}=${word}`;
    case 4:
      return "";
    case 5:
      return `${word} ${word}`; // no `=`
    case 6:
      return `K ${index}=${word}`; // a space in the name
    default:
      return `K${index}: ${word}`;
  }
}

Deno.test("dotenvLineProblems agrees with dotenv: reported lines give nothing, others give their variable", () => {
  const word = fc.stringMatching(/^[a-z0-9]{1,8}$/);
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 7 }), word), { maxLength: 12 }), (
      spec,
    ) => {
      const text = spec.map(([kind, w], index) => lineOf(kind, index, w)).join("\n");
      const lines = text.split("\n");
      const parsed = parse(text);
      const reported = new Set(dotenvLineProblems(text).map((p) => p.line));
      lines.forEach((line, i) => {
        const without = [...lines.slice(0, i), "", ...lines.slice(i + 1)].join("\n");
        const changes = JSON.stringify(parse(without)) !== JSON.stringify(parsed);
        if (reported.has(i + 1)) {
          assert.ok(!changes, `line ${i + 1} is reported but gives something:\n${text}`);
        } else if (line.trim() !== "" && !line.trim().startsWith("#")) {
          assert.ok(changes, `line ${i + 1} gives nothing but is not reported:\n${text}`);
        }
      });
    }),
    { numRuns: 300 },
  );
});
