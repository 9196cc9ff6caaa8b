/**
 * Keeps the user's own lines when the YAML library reprints an edited `config.yaml`: the library
 * normalises the whole file (flow padding, indentation, blank lines, escapes), so only the lines
 * the edit changed should come from its output.
 *
 * @module
 */

/**
 * The text of the edited document: the lines of `original` wherever the edit left the printed
 * document alone, and the lines of `edited` only where it changed it. `untouched` and `edited`
 * are the library's prints of the document before and after the edit; all three have LF line
 * ends. `original` is matched to `untouched` line by line ignoring blanks (the printer's own
 * changes of padding and indentation), `untouched` to `edited` exactly; a run of `original`
 * lines that matches no printed line (a plain value folded over lines, escapes the printer
 * rewrites) is kept when the printed lines of it are, and a line the printer drops when the
 * line before it is (a blank one always). `undefined`
 * when the files are too large to match.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { keepUntouchedLines } from "./_keep_lines.ts";
 * const original = "a: [x]\nb: { c: 1 }\n\n\nd: 1\n";
 * const untouched = "a: [ x ]\nb: { c: 1 }\n\nd: 1\n";
 * const edited = "a: [ x ]\nb: { c: 1 }\n\nd: 2\n";
 * assert.equal(keepUntouchedLines(original, untouched, edited), "a: [x]\nb: { c: 1 }\n\n\nd: 2\n");
 * ```
 */
export function keepUntouchedLines(
  original: string,
  untouched: string,
  edited: string,
): string | undefined {
  const source = linesOf(original);
  const before = linesOf(untouched);
  const after = linesOf(edited);
  // Blank lines are not matched: the printer drops and adds them, and one blank line is as good
  // as another to match, which would tie non-blank lines to the wrong place.
  const written = commonLines(source.lines.map(unblanked), before.lines.map(unblanked), true);
  const kept = commonLines(before.lines, after.lines);
  if (written === undefined || kept === undefined) return undefined;
  const keptAt = new Int32Array(before.lines.length).fill(-1); // line of `after`, or -1
  for (const [line, at] of kept) keptAt[line] = at;

  const out: string[] = [];
  let next = 0; // the first line of `after` not written yet
  let lastFromSource = false;
  const writeEdited = (to: number) => {
    if (to > next) lastFromSource = false;
    for (; next < to; next++) out.push(after.lines[next]);
  };
  for (const run of runsOf(written, source.lines.length, before.lines.length)) {
    const targets = Array.from(keptAt.subarray(run.fromBefore, run.toBefore));
    let intact: boolean;
    if (targets.length > 0) {
      // Every printed line of the run stays, in one block (lines inserted before it go first).
      intact = targets.every((at, index) => at >= 0 && at === targets[0] + index);
    } else {
      // Lines the printer dropped (a second blank line): they go with the line before them, and
      // blank lines stay whatever became of it.
      const previous = run.fromBefore > 0 ? keptAt[run.fromBefore - 1] : undefined;
      const following = run.toBefore < before.lines.length ? keptAt[run.toBefore] : undefined;
      intact = source.lines.slice(run.from, run.to).every((line) => line.trim() === "") ||
        (previous === undefined ? following === undefined || following >= 0 : previous >= 0);
    }
    if (intact) {
      if (targets.length > 0) writeEdited(targets[0]);
      out.push(...source.lines.slice(run.from, run.to));
      next += targets.length;
      if (run.to > run.from) lastFromSource = run.to === source.lines.length;
      continue;
    }
    const stays = targets.filter((at) => at >= 0);
    if (stays.length > 0) writeEdited(Math.max(...stays) + 1);
  }
  writeEdited(after.lines.length);
  const endsLine = lastFromSource ? source.endsWithNewline : after.endsWithNewline;
  return out.join("\n") + (endsLine && out.length > 0 ? "\n" : "");
}

/** A run of `original` lines with the `untouched` lines it prints as. */
interface Run {
  from: number;
  to: number;
  fromBefore: number;
  toBefore: number;
}

/**
 * The runs of lines of two texts of `sourceLength` and `beforeLength` lines matched by
 * `pairs`: each matched pair, and the unmatched lines between two pairs.
 */
function runsOf(pairs: [number, number][], sourceLength: number, beforeLength: number): Run[] {
  const runs: Run[] = [];
  let from = 0;
  let fromBefore = 0;
  for (const [to, toBefore] of [...pairs, [sourceLength, beforeLength]]) {
    if (to > from || toBefore > fromBefore) runs.push({ from, to, fromBefore, toBefore });
    if (to < sourceLength || toBefore < beforeLength) {
      runs.push({ from: to, to: to + 1, fromBefore: toBefore, toBefore: toBefore + 1 });
    }
    from = to + 1;
    fromBefore = toBefore + 1;
  }
  return runs;
}

/** The lines of `text` without the empty one after its final line end. */
function linesOf(text: string): { lines: string[]; endsWithNewline: boolean } {
  const endsWithNewline = text.endsWith("\n");
  const lines = text === "" ? [] : text.split("\n");
  if (endsWithNewline) lines.pop();
  return { lines, endsWithNewline };
}

/** A line without its blanks: what the printer's own spacing does not change. */
function unblanked(line: string): string {
  return line.replace(/[ \t]+/g, "");
}

/** Above this many line pairs to compare, two texts are not matched (the edit prints in full). */
const MAX_CELLS = 4_000_000;

/**
 * The pairs of equal lines of a longest common subsequence of `a` and `b`, in order, leaving
 * out empty lines when `skipEmpty`; `undefined` when they are too long to compare.
 */
function commonLines(
  a: readonly string[],
  b: readonly string[],
  skipEmpty = false,
): [number, number][] | undefined {
  if (skipEmpty) {
    const [atA, atB] = [a, b].map((lines) =>
      lines.flatMap((line, index) => line === "" ? [] : [index])
    );
    return commonLines(atA.map((index) => a[index]), atB.map((index) => b[index]))
      ?.map(([i, j]) => [atA[i], atB[j]]);
  }
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const rows = endA - start;
  const columns = endB - start;
  if ((rows + 1) * (columns + 1) > MAX_CELLS) return undefined;
  // length[i][j]: the longest common subsequence of a[start+i..endA) and b[start+j..endB).
  const width = columns + 1;
  const length = new Uint32Array((rows + 1) * width);
  for (let i = rows - 1; i >= 0; i--) {
    for (let j = columns - 1; j >= 0; j--) {
      length[i * width + j] = a[start + i] === b[start + j]
        ? length[(i + 1) * width + j + 1] + 1
        : Math.max(length[(i + 1) * width + j], length[i * width + j + 1]);
    }
  }
  const pairs: [number, number][] = [];
  for (let i = 0; i < start; i++) pairs.push([i, i]);
  for (let i = 0, j = 0; i < rows && j < columns;) {
    if (a[start + i] === b[start + j]) {
      pairs.push([start + i, start + j]);
      i++;
      j++;
    } else if (length[(i + 1) * width + j] >= length[i * width + j + 1]) i++;
    else j++;
  }
  for (let i = 0; i < a.length - endA; i++) pairs.push([endA + i, endB + i]);
  return pairs;
}
