/**
 * Where dotenv's `parse()` finds its assignments in a `.env` text, and the lines it reads
 * nothing from: a line it ignores (`API TOKEN=…`, a token pasted without a name) otherwise shows
 * up only later, as a variable that is "not set".
 *
 * @module
 */

/**
 * An assignment as dotenv's `parse()` finds it (its own expression, with indices): a quoted value
 * may span lines, and a later match starts after the end of the previous one, so a line inside a
 * multi-line value is never taken for an assignment.
 */
const ASSIGNMENT =
  /(?:^|^)\s*(?:export\s+)?([\w.-]+)(?:\s*=\s*?|:\s+?)(\s*'(?:\\'|[^'])*'|\s*"(?:\\"|[^"])*"|\s*`(?:\\`|[^`])*`|[^#\r\n]+)?\s*(?:#.*)?(?:$|$)/dgm;

/** Where one assignment is in a text (line ends as LF): whole lines, name to value's end. */
export interface AssignmentSpan {
  name: string;
  /** Start of the line holding the name. */
  start: number;
  /** End of the line where the value ends (before its line break). */
  end: number;
  /** `export ` when the assignment had it. */
  prefix: string;
  /** An inline `# comment` after the value, kept on a rewritten line. */
  comment: string;
  /** The value as written (quotes included, spaces around it trimmed). */
  raw: string;
}

/**
 * The assignments of a dotenv text whose line ends are LF, in order, as dotenv reads them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { assignmentsOf } from "./dotenv_lines.ts";
 * const spans = assignmentsOf('A=1 # one\nexport B="x\ny"\n');
 * assert.deepEqual(spans.map((s) => [s.name, s.start, s.end, s.prefix, s.comment, s.raw]), [
 *   ["A", 0, 9, "", "# one", "1"],
 *   ["B", 10, 24, "export ", "", '"x\ny"'],
 * ]);
 * ```
 */
export function assignmentsOf(text: string): AssignmentSpan[] {
  const spans: AssignmentSpan[] = [];
  for (const match of text.matchAll(ASSIGNMENT)) {
    const [nameStart, nameEnd] = match.indices![1]!;
    const valueEnd = match.indices![2]?.[1] ?? nameEnd;
    const start = text.lastIndexOf("\n", nameStart - 1) + 1;
    const lineEnd = text.indexOf("\n", valueEnd);
    const end = lineEnd === -1 ? text.length : lineEnd;
    const rest = text.slice(valueEnd, end).trim();
    spans.push({
      name: match[1],
      start,
      end,
      prefix: /^\s*export\s/.test(text.slice(start, nameStart)) ? "export " : "",
      comment: rest.startsWith("#") ? rest : "",
      raw: (match[2] ?? "").trim(),
    });
  }
  return spans;
}

/** A line of a `.env` text that gives no variable, or a value that is not what it looks like. */
export interface DotenvLineProblem {
  /** 1-based line. */
  line: number;
  /** What is wrong and what to do; never quotes the line (it may hold a secret). */
  message: string;
}

/**
 * What in a `.env` text dotenv silently reads otherwise than written: lines it reads nothing
 * from (not blank, not a `#` comment, not part of an assignment), and values that start with a
 * quote but do not end with it (the quote then becomes part of the value). The messages never
 * quote the text: a pasted token may be on the line.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { dotenvLineProblems } from "./dotenv_lines.ts";
 * assert.deepEqual(dotenvLineProblems("# keys\nAPI TOKEN=abc\nOK=1\nsk-live-123\n"), [
 *   {
 *     line: 2,
 *     message: "nothing is read from this line: the text before `=` is not a variable name " +
 *       "(letters, digits, `_`, `.` and `-`, no spaces); write it as NAME=value",
 *   },
 *   {
 *     line: 4,
 *     message: "nothing is read from this line: it has no `=`; write it as NAME=value",
 *   },
 * ]);
 * assert.deepEqual(dotenvLineProblems('A="multi\nline"\nB=2\n'), []);
 * ```
 */
export function dotenvLineProblems(text: string): DotenvLineProblem[] {
  const source = text.replace(/\r\n?/g, "\n");
  const problems: DotenvLineProblem[] = [];
  const spans = assignmentsOf(source);
  let next = 0; // the first span that may still cover a line at or after `at`
  let line = 0;
  for (let at = 0; at <= source.length; line++) {
    const lineEnd = source.indexOf("\n", at);
    const end = lineEnd === -1 ? source.length : lineEnd;
    const content = source.slice(at, end).trim();
    while (next < spans.length && spans[next].end < at) next++;
    const covered = next < spans.length && spans[next].start <= at;
    if (content !== "" && !content.startsWith("#") && !covered) {
      problems.push({ line: line + 1, message: ignoredLineMessage(content) });
    }
    if (lineEnd === -1) break;
    at = lineEnd + 1;
  }
  for (const span of spans) {
    const quote = span.raw[0];
    if (quote !== "'" && quote !== '"' && quote !== "`") continue;
    if (span.raw.length >= 2 && span.raw.endsWith(quote)) continue;
    const lineOf = source.slice(0, span.start).split("\n").length;
    problems.push({
      line: lineOf,
      message: `the value of ${span.name} starts with a ${quote} quote but does not end with ` +
        "one, so the quote is read as part of the value; close the quote (with nothing but a " +
        "`# comment` after it) or remove it",
    });
  }
  return problems.sort((a, b) => a.line - b.line);
}

function ignoredLineMessage(content: string): string {
  const equals = content.indexOf("=");
  if (equals < 0) return "nothing is read from this line: it has no `=`; write it as NAME=value";
  return "nothing is read from this line: the text before `=` is not a variable name " +
    "(letters, digits, `_`, `.` and `-`, no spaces); write it as NAME=value";
}

/**
 * {@linkcode dotenvLineProblems} as warning lines: `<file>:<line>: <message>`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { dotenvWarnings } from "./dotenv_lines.ts";
 * assert.deepEqual(dotenvWarnings("/h/.env", "TOKEN abc\n"), [
 *   "/h/.env:1: nothing is read from this line: it has no `=`; write it as NAME=value",
 * ]);
 * assert.deepEqual(dotenvWarnings("/h/.env", undefined), []);
 * ```
 */
export function dotenvWarnings(file: string, text: string | undefined): string[] {
  if (text === undefined) return [];
  return dotenvLineProblems(text).map(({ line, message }) => `${file}:${line}: ${message}`);
}
