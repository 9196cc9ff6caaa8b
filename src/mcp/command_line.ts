/**
 * A whole command line written where only the executable belongs (`command: npx -y pkg`): the
 * most common mistake in a stdio entry. {@linkcode splitCommandLine} reads it the way a POSIX
 * shell would, so a message can show the entry as it should be written.
 *
 * @module
 */

/**
 * Splits `text` into words as a POSIX shell would: blanks separate words, single quotes keep
 * everything literally, double quotes keep everything but `\"`, `\\`, `\$` and `` \` ``, and a
 * backslash outside quotes keeps the next character. No expansion of any kind.
 *
 * @param text A command line, e.g. `npx -y "@scope/server" /tmp`.
 * @returns The words, or `undefined` when a quote is left open or the text ends in a backslash.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { splitCommandLine } from "./command_line.ts";
 * assert.deepEqual(splitCommandLine(`npx -y "my server" 'a b'`), ["npx", "-y", "my server", "a b"]);
 * assert.equal(splitCommandLine(`npx "open`), undefined);
 * ```
 */
export function splitCommandLine(text: string): string[] | undefined {
  const words: string[] = [];
  let word = "";
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) return undefined;
      word += text.slice(i + 1, end);
      inWord = true;
      i = end;
    } else if (char === '"') {
      let j = i + 1;
      for (; j < text.length && text[j] !== '"'; j++) {
        if (text[j] === "\\" && '"\\$`'.includes(text[j + 1] ?? "")) j++;
        word += text[j];
      }
      if (j >= text.length) return undefined;
      inWord = true;
      i = j;
    } else if (char === "\\") {
      if (i + 1 >= text.length) return undefined;
      word += text[++i];
      inWord = true;
    } else if (/\s/.test(char)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
    } else {
      word += char;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}
