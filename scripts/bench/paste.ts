/**
 * Line-editor paste benchmark: `deno run -A scripts/bench/paste.ts [--size 200000]`.
 *
 * A terminal without bracketed paste delivers a paste as plain reads of about 4 KB, and the line
 * editor draws the line after each read, so a paste costs one layout of the line so far per read.
 * For texts of `--size` characters (ASCII prose, Cyrillic prose, Chinese), prints the time of one
 * such paste into an 80 × 24 terminal, the time of the same text as one bracketed paste (one
 * draw: the baseline), and their ratio. Each draw lays out only what its read added to the line
 * (the layout goes on from before the line's last character), and runs of printable ASCII are
 * laid out without segmenting them into characters.
 */
import { parseArgs } from "node:util";
import { LineEditor } from "../../src/cli/line_editor.ts";

const READ_SIZE = 4096;
const { values } = parseArgs({ options: { size: { type: "string", default: "200000" } } });
const size = Number(values.size);
if (!Number.isInteger(size) || size <= 0) {
  console.error(`--size must be a positive whole number of characters, not ${values.size}`);
  Deno.exit(2);
}

/** Milliseconds one `readLine` takes to read `reads` (then Enter), and the line it returned. */
async function timeRead(reads: string[]): Promise<{ ms: number; line: string | null }> {
  const queue = [...reads, "\r"];
  const editor = new LineEditor({
    read: () => Promise.resolve(queue.shift() ?? null),
    write: () => {},
    setRaw: () => {},
    columns: () => 80,
    rows: () => 24,
    close: () => Promise.resolve(),
  });
  const start = performance.now();
  const line = await editor.readLine("you> ");
  return { ms: performance.now() - start, line };
}

const TEXTS: Array<[string, string]> = [
  ["ASCII prose", "The gateway answered 202 and the run began. "],
  ["Cyrillic prose", "Шлюз ответил 202, и запуск начался. "],
  ["Chinese", "网关回答了二零二，运行开始了。"],
];

console.log(`paste of ${size} characters, read ${READ_SIZE} at a time, 80 × 24 terminal`);
console.log("text            plain reads   bracketed   ratio");
for (const [name, sentence] of TEXTS) {
  const text = sentence.repeat(Math.ceil(size / sentence.length)).slice(0, size);
  const reads: string[] = [];
  for (let at = 0; at < text.length; at += READ_SIZE) reads.push(text.slice(at, at + READ_SIZE));
  const plain = await timeRead(reads);
  const bracketed = await timeRead([`\x1b[200~${text}\x1b[201~`]);
  if (plain.line !== text || bracketed.line !== text) {
    console.error(`${name}: the line read is not the text pasted`);
    Deno.exit(1);
  }
  console.log(
    `${name.padEnd(15)} ${plain.ms.toFixed(0).padStart(8)} ms ${
      bracketed.ms.toFixed(0).padStart(8)
    } ms ${(plain.ms / bracketed.ms).toFixed(1).padStart(6)}×`,
  );
}
