/**
 * Sets variables in `<home>/.env`, keeping every other line (comments, blank lines, other
 * variables) as it was.
 *
 * @module
 */
import { parse } from "dotenv";
import { assignmentsOf } from "./dotenv_lines.ts";
import { readTextIfExists, withEditLock, writeFileAtomic } from "./files.ts";

/** Characters a value may hold without quotes. */
const PLAIN_VALUE = /^[A-Za-z0-9_\-.~+/=:@%,]*$/;

/** How a value is written, or why it cannot be: dotenv has no escape for every character. */
export function dotenvLine(name: string, value: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
    throw new RangeError(`'${name}' is not a valid variable name`);
  }
  if (PLAIN_VALUE.test(value)) return `${name}=${value}`;
  // Single quotes are literal in dotenv; a value with a quote or a line break has no safe form.
  if (/['\r\n]/.test(value)) {
    throw new RangeError(`the value of ${name} cannot hold a single quote or a line break`);
  }
  if (!value.endsWith("\\")) return `${name}='${value}'`;
  // dotenv reads `\'` as an escaped quote, so a trailing backslash cannot close a quoted value;
  // unquoted is exact when nothing in it starts a comment or gets trimmed.
  if (!value.includes("#") && value.trim() === value && !/^["'`]/.test(value)) {
    return `${name}=${value}`;
  }
  throw new RangeError(
    `the value of ${name} cannot end with a backslash and also hold '#' or surrounding spaces`,
  );
}

/**
 * Sets `values` in the dotenv file `file` (created 0600 when missing), atomically. An existing
 * assignment is replaced in place, the whole of its value (every line of a quoted multi-line
 * value, as dotenv reads it), keeping an `export ` prefix and an inline `# comment`; later
 * duplicates are removed, new names are appended, in the file's line-end style (LF or CRLF).
 * Every other byte is kept. The result is parsed back: it must give exactly the values set and
 * leave every other variable as it was, otherwise nothing is written and a `RangeError` says why.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { setDotenvValues } from "./dotenv_edit.ts";
 * const file = `${await Deno.makeTempDir()}/.env`;
 * Deno.writeTextFileSync(file, '# keys\nOPENAI_API_KEY=sk-1\nWEBHOOK_SECRET="old\nlines"\n');
 * setDotenvValues(file, { WEBHOOK_SECRET: "new secret" });
 * assert.equal(
 *   Deno.readTextFileSync(file),
 *   "# keys\nOPENAI_API_KEY=sk-1\nWEBHOOK_SECRET='new secret'\n",
 * );
 * ```
 */
export function setDotenvValues(file: string, values: Readonly<Record<string, string>>): void {
  withEditLock(file, () => setUnlocked(file, values));
}

function setUnlocked(file: string, values: Readonly<Record<string, string>>): void {
  const original = readTextIfExists(file) ?? "";
  const source = original.replaceAll("\r\n", "\n");
  const pending = new Map(Object.entries(values));
  const seen = new Set<string>();
  let edited = "";
  let at = 0;
  for (const span of assignmentsOf(source)) {
    if (!pending.has(span.name)) continue;
    edited += source.slice(at, span.start);
    if (seen.has(span.name)) {
      // a later duplicate would win over the new value: drop it with its line break
      at = source[span.end] === "\n" ? span.end + 1 : span.end;
      continue;
    }
    seen.add(span.name);
    const line = `${span.prefix}${dotenvLine(span.name, pending.get(span.name)!)}`;
    edited += span.comment === "" ? line : `${line} ${span.comment}`;
    at = span.end;
  }
  edited += source.slice(at);
  for (const [name, value] of pending) {
    if (seen.has(name)) continue;
    if (edited !== "" && !edited.endsWith("\n")) edited += "\n";
    edited += `${dotenvLine(name, value)}\n`;
  }
  if (edited !== "" && !edited.endsWith("\n")) edited += "\n";
  // A file written with CRLF line ends keeps them (an editor on Windows shows it as it was).
  const eol = /\r\n/.test(original) ? "\r\n" : "\n";
  const text = eol === "\n" ? edited : edited.replaceAll("\n", eol);
  const parsed = parse(text);
  const before = parse(original);
  for (const [name, value] of pending) {
    if (parsed[name] !== value) {
      throw new RangeError(`the value of ${name} would not read back the same from ${file}`);
    }
  }
  for (const [name, value] of Object.entries(before)) {
    if (!pending.has(name) && parsed[name] !== value) {
      // e.g. a multi-line quoted value holding a line that looks like an assignment
      throw new RangeError(`${file} has a layout this edit cannot keep (${name}); edit it by hand`);
    }
  }
  writeFileAtomic(file, text, { mode: 0o600 });
}
