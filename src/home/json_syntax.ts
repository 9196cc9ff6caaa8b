/**
 * Where a text stops being JSON, told without quoting it. `JSON.parse`'s own messages quote the
 * text around the error (`Unexpected token 'T', ..."secret":TOPSEC"... is not valid JSON`), and
 * the files of `<home>` that are JSON hold secrets: their errors go to logs and terminals.
 *
 * @module
 */

/** The first syntax error of a text that is not JSON. */
export interface JsonSyntaxError {
  /** 1-based line of the error. */
  line: number;
  /** 1-based column (in UTF-16 code units) of the error. */
  column: number;
  /** What was expected there, in words that quote none of the text. */
  expected: string;
}

const WHITESPACE = new Set([" ", "\t", "\n", "\r"]);
const ESCAPES = new Set(['"', "\\", "/", "b", "f", "n", "r", "t"]);
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const HEX4 = /[0-9a-fA-F]{4}/y;

/**
 * The first syntax error of `text` as JSON (RFC 8259), or `undefined` when it is JSON. Nesting
 * depth costs no stack.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonSyntaxError } from "./json_syntax.ts";
 * assert.equal(jsonSyntaxError('{"a": [1, 2]}'), undefined);
 * assert.deepEqual(jsonSyntaxError('{\n  "secret": abc\n}'), {
 *   line: 2,
 *   column: 13,
 *   expected: "a value",
 * });
 * ```
 */
export function jsonSyntaxError(text: string): JsonSyntaxError | undefined {
  let at = 0;
  /** The open arrays and objects, innermost last: `]` or `}`. */
  const closers: string[] = [];
  const fail = (expected: string): JsonSyntaxError => {
    const before = text.slice(0, at);
    const lineStart = before.lastIndexOf("\n") + 1;
    return { line: before.split("\n").length, column: at - lineStart + 1, expected };
  };
  const skipSpace = () => {
    while (at < text.length && WHITESPACE.has(text[at])) at++;
  };
  /** Reads a string at `at` (its opening quote); false when it is not a valid one. */
  const string = (): string | undefined => {
    at++;
    while (at < text.length) {
      const char = text[at];
      if (char === '"') {
        at++;
        return undefined;
      }
      if (char.charCodeAt(0) < 0x20) return "a closing quote (a control character in a string)";
      if (char === "\\") {
        const escaped = text[at + 1];
        if (escaped === "u") {
          HEX4.lastIndex = at + 2;
          if (!HEX4.test(text)) {
            at++;
            return "four hexadecimal digits after \\u";
          }
          at += 6;
          continue;
        }
        if (!ESCAPES.has(escaped)) {
          at++;
          return 'an escape (\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\u)';
        }
        at += 2;
        continue;
      }
      at++;
    }
    return "a closing quote";
  };
  /** Reads a property name and its colon; an error (`orElse` says what else could be there). */
  const propertyName = (orElse: string): string | undefined => {
    if (text[at] !== '"') return `a property name in double quotes${orElse}`;
    const problem = string();
    if (problem) return problem;
    skipSpace();
    if (text[at] !== ":") return "a colon after the property name";
    at++;
    return undefined;
  };
  /** Reads a value that is not an array or object; an error, else undefined. */
  const scalar = (): string | undefined => {
    const char = text[at];
    if (char === '"') return string();
    for (const literal of ["true", "false", "null"]) {
      if (text.startsWith(literal, at)) {
        at += literal.length;
        return undefined;
      }
    }
    NUMBER.lastIndex = at;
    const number = NUMBER.exec(text);
    if (number) {
      at += number[0].length;
      return undefined;
    }
    return at >= text.length ? "a value (the text ends here)" : "a value";
  };

  skipSpace();
  // Each turn reads one value (opening a container, or a scalar), then what may follow it.
  while (true) {
    skipSpace();
    if (text[at] === "{" || text[at] === "[") {
      const opener = text[at++];
      closers.push(opener === "{" ? "}" : "]");
      skipSpace();
      if (text[at] === closers.at(-1)) {
        at++;
        closers.pop();
      } else {
        const problem = opener === "{" ? propertyName(", or }") : undefined;
        if (problem) return fail(problem);
        continue;
      }
    } else {
      const problem = scalar();
      if (problem) return fail(problem);
    }
    // After a value: a comma and the next member, the end of containers, or the end of the text.
    while (true) {
      skipSpace();
      const closer = closers.at(-1);
      if (closer === undefined) {
        return at < text.length ? fail("the end of the text after the value") : undefined;
      }
      if (text[at] === closer) {
        at++;
        closers.pop();
        continue;
      }
      if (text[at] !== ",") return fail(`a comma or ${closer}`);
      at++;
      skipSpace();
      const problem = closer === "}" ? propertyName("") : undefined;
      if (problem) return fail(problem);
      break;
    }
  }
}

/**
 * Why `text` is not JSON, as "line L, column C: expected ..." (`JSON.parse` failed on it), with
 * none of the text quoted.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonSyntaxProblem } from "./json_syntax.ts";
 * assert.equal(jsonSyntaxProblem('{"a": 1,}'), "line 1, column 9: expected a property name in double quotes");
 * ```
 */
export function jsonSyntaxProblem(text: string): string {
  const error = jsonSyntaxError(text);
  // JSON.parse refused what this scanner takes: a lone surrogate, say. Name no place then.
  if (!error) return "not JSON";
  return `line ${error.line}, column ${error.column}: expected ${error.expected}`;
}
