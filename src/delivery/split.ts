/**
 * Splitting a long message into parts that fit a platform's length limit.
 *
 * @module
 */

/** Where a part may end, best first: after a blank line, after a line, after a space. */
const BOUNDARIES = ["\n\n", "\n", " "] as const;

/** A line that opens a fenced code block: up to 3 spaces, 3+ backticks or tildes, info string. */
const OPENING_FENCE = /^( {0,3})(`{3,}|~{3,})(.*)$/s;

/** What starts a line that may be a fence: up to 3 spaces, then ``` or ~~~. */
const FENCE_LIKE = /^ {0,3}(```|~~~)/;

/** A line that may close a fenced code block: up to 3 spaces, the fence, blanks only. */
const CLOSING_FENCE = /^ {0,3}(`{3,}|~{3,})[ \t]*$/;

/** A fenced code block of the message, by offsets into it. */
interface Fence {
  /** Where its opening line starts. */
  openStart: number;
  /** Where its content starts, after the opening line's line break. */
  contentStart: number;
  /** Where its closing line starts; the message's length when the block is never closed. */
  closeStart: number;
  /** Where its closing line ends, after its line break; the message's length if none. */
  closeEnd: number;
  /** The opening line without its line break (e.g. "```ts"): what reopens the block. */
  opener: string;
  /** The indentation and fence of the opening line (e.g. "```"): what closes the block. */
  closer: string;
}

/** A line that starts with {@linkcode FENCE_LIKE}, by offsets into the message. */
interface FenceLikeLine {
  start: number;
  /** Where it ends, before its line break. */
  end: number;
  /** Where its run of backticks or tildes starts and ends. */
  runStart: number;
  runEnd: number;
  /** Where the blanks after the run end. */
  blankEnd: number;
  /** Where the first backtick after the run is; `end` when there is none. */
  backtickAt: number;
}

/** What a part may not break in a message: its fenced code blocks and its fence-like lines. */
interface FenceMap {
  fences: Fence[];
  /** In order. */
  fenceLikeLines: FenceLikeLine[];
}

/** Where a cut may go: outside any block, or inside `fence` (which the cut closes and reopens). */
type Place = { fence?: Fence };

/**
 * Splits `message` into parts of at most `limit` UTF-16 code units (the unit JavaScript's
 * `length` counts; Telegram counts the same, and it is never fewer than the code points Discord
 * and Slack count).
 *
 * A part ends after the last blank line (`\n\n`) in reach, else after the last line break, else
 * after the last space — each only when that keeps the part (with the whitespace it ends with)
 * at least half the limit long, so a boundary near the start never makes a tiny part. Otherwise
 * the part is cut as near the limit as fits. A cut never goes inside a grapheme cluster (what a
 * reader sees as one character: an emoji ZWJ sequence such as 👨‍👩‍👧‍👦, a flag, a letter with its
 * combining marks), unless one cluster alone is longer than a part; then it is cut between code
 * points, never between the halves of a surrogate pair.
 *
 * The whitespace around a cut outside a code block is dropped, and so are the message's leading
 * lines of whitespace only and its trailing whitespace: no part starts with a blank line (its
 * first line keeps its indentation) or ends with whitespace, and none is blank unless the message
 * is (then the only part is `""`). A message that fits the limit once trimmed is the only part.
 * Nothing else is dropped, nothing is reordered, and outside Markdown code blocks nothing is
 * added.
 *
 * When a part ends inside a fenced code block (opened by a line of up to 3 spaces, then 3 or more
 * backticks or tildes and an optional info string such as `ts`; a block never closed runs to the
 * end), the part gets a closing fence on a line of its own (after an added line break when the
 * part ends mid-line), and the next part starts with the block's opening line and a line break,
 * so each part renders on its own; the added fences count toward the limit; the code's own
 * whitespace is kept. A cut never goes inside a fence line, right after an opening or right
 * before a closing one, nor cuts a line where its first piece would read as a fence or its second
 * piece would start (after up to 3 spaces) with three backticks or tildes. When the fences leave
 * no room for a part (limits of a few units), the text is split as if it had no fences.
 * The same text and limit always give the same parts, so a retry can resume at any part.
 *
 * @param message The message.
 * @param limit The platform's limit; an integer of at least 2 (one character may take two units).
 * @returns The parts, in order; each has some non-whitespace text unless `message` has none.
 * @throws {RangeError} When `limit` is not an integer of at least 2.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { splitMessage } from "./split.ts";
 *
 * assert.deepEqual(splitMessage("short", 10), ["short"]);
 * assert.deepEqual(splitMessage("one two\n\nthree four", 12), ["one two", "three four"]);
 * assert.deepEqual(splitMessage("one two\n\n\n\nthree four", 9), ["one two", "three", "four"]);
 * assert.deepEqual(splitMessage("abcdefghij", 4), ["abcd", "efgh", "ij"]);
 * const text = "word ".repeat(1000);
 * assert.equal(splitMessage(text, 2000).join(" "), text.trimEnd());
 *
 * // A code block split across parts is closed and reopened.
 * assert.deepEqual(splitMessage("~~~ts\nlet a;\nlet b;\n~~~\n", 18), [
 *   "~~~ts\nlet a;\n~~~",
 *   "~~~ts\nlet b;\n~~~",
 * ]);
 * ```
 */
export function splitMessage(message: string, limit: number): string[] {
  if (!Number.isInteger(limit) || limit < 2) {
    throw new RangeError(`splitMessage: limit must be an integer of at least 2, got ${limit}`);
  }
  const text = message.slice(new BlankLines(message).after(0)).trimEnd();
  if (text.length <= limit) return [text];
  const fenced = text.includes("```") || text.includes("~~~")
    ? splitParts(text, limit, findFences(text))
    : undefined;
  // Without a fence map every cut is allowed and the plain split always succeeds.
  return fenced ?? splitParts(text, limit, undefined)!;
}

/** The parts of `text` (longer than `limit`), or `undefined` when the fences leave no room. */
function splitParts(text: string, limit: number, map: FenceMap | undefined): string[] | undefined {
  const parts: string[] = [];
  const blankLines = new BlankLines(text);
  let start = 0;
  let reopening = "";
  while (reopening.length + text.length - start > limit) {
    const cut = partEnd(text, start, limit, reopening, map);
    if (cut === undefined) return undefined;
    const { fence } = placeOf(text, cut, map)!;
    if (fence === undefined) {
      // Outside a block, the whitespace around a cut is dropped: it would only pad the parts.
      const body = text.slice(start, cut).trimEnd();
      // Blanks only (a long indentation cut hard): nothing to send.
      if (reopening !== "" || body !== "") parts.push(reopening + body);
      reopening = "";
      start = blankLines.after(cut);
    } else {
      parts.push(reopening + text.slice(start, cut) + closingAt(text, cut, fence));
      reopening = `${fence.opener}\n`;
      start = cut;
    }
  }
  parts.push(reopening + text.slice(start));
  return parts;
}

/**
 * Where `text` goes on after the lines of whitespace only at a position (the rest of a line counts
 * when it is blank). The whitespace run last scanned is remembered: cutting a long run of blanks
 * into many parts asks about many positions in it, and each answer must not scan it again.
 */
class BlankLines {
  readonly #text: string;
  /** The last run of whitespace scanned: [start, end), and the last line break in it (or -1). */
  #run = { start: 0, end: 0, lastBreak: -1 };

  constructor(text: string) {
    this.#text = text;
  }

  /** The position after the blank lines at `at`; `at` itself when there are none. */
  after(at: number): number {
    if (at < this.#run.start || at >= this.#run.end) this.#scan(at);
    const { lastBreak } = this.#run;
    return lastBreak >= at ? lastBreak + 1 : at;
  }

  #scan(at: number): void {
    const text = this.#text;
    let end = at;
    let lastBreak = -1;
    for (; end < text.length; end++) {
      const code = text.charCodeAt(end);
      if (code === 0x0a) lastBreak = end;
      else if (!isBlank(code)) break;
    }
    this.#run = { start: at, end, lastBreak };
  }
}

/** Whitespace other than a line break, as `\s` in a regular expression means it. */
function isBlank(code: number): boolean {
  if (code === 0x20 || code === 0x09 || code === 0x0d) return true;
  return code !== 0x0a && code > 0x0a && /\s/.test(String.fromCharCode(code));
}

/**
 * Where the part of `text` starting at `start` (after `reopening`) ends, best boundary first;
 * `undefined` when no cut fits.
 */
function partEnd(
  text: string,
  start: number,
  limit: number,
  reopening: string,
  map: FenceMap | undefined,
): number | undefined {
  const furthest = start + limit - reopening.length;
  const shortest = Math.ceil(limit / 2);
  /** The length of the part cut at `cut`, fences included; `undefined` if it may not end there. */
  const lengthAt = (cut: number): number | undefined => {
    const place = placeOf(text, cut, map);
    if (place === undefined) return undefined;
    return reopening.length + cut - start + closingAt(text, cut, place.fence).length;
  };
  const graphemes = new GraphemeBoundaries(text, start, furthest);
  // Searched in the part's own text: a search of the whole text from its end would go on to its
  // start whenever the boundary is missing, once for every part.
  const window = text.slice(start, Math.max(start, furthest));
  for (const boundary of BOUNDARIES) {
    let at = window.lastIndexOf(boundary, window.length - boundary.length);
    while (at >= 0) {
      const cut = start + at + boundary.length;
      const length = graphemes.has(cut) ? lengthAt(cut) : undefined;
      if (length !== undefined && length <= limit) {
        if (length < shortest) break;
        return cut;
      }
      at = at > 0 ? window.lastIndexOf(boundary, at - 1) : -1;
    }
  }
  // A character as the reader sees it stays whole; only one longer than a part is cut, and then
  // between code points.
  for (const whole of [true, false]) {
    for (let cut = furthest; cut > start; cut--) {
      if (whole ? !graphemes.has(cut) : splitsSurrogatePair(text, cut)) continue;
      const length = lengthAt(cut);
      if (length !== undefined && length <= limit) return cut;
    }
  }
  return undefined;
}

const GRAPHEMES = new Intl.Segmenter(undefined, { granularity: "grapheme" });

/**
 * Where the grapheme clusters (what a reader sees as one character: an emoji ZWJ sequence, a
 * flag, a letter with its combining marks) of `text` between `start` and `end` begin. Text of
 * letters below U+0300 needs no look-up; otherwise the window is segmented once, when first asked.
 */
class GraphemeBoundaries {
  readonly #text: string;
  readonly #start: number;
  readonly #end: number;
  #offsets: Set<number> | undefined;

  constructor(text: string, start: number, end: number) {
    this.#text = text;
    this.#start = start;
    this.#end = end;
  }

  /** Whether a cluster begins at `at` (`start` < `at` <= `end`). */
  has(at: number): boolean {
    const before = this.#text.charCodeAt(at - 1);
    const after = this.#text.charCodeAt(at);
    // Below U+0300 nothing joins a cluster but a line feed after a carriage return.
    if (before < 0x300 && after < 0x300) return !(before === 0x0d && after === 0x0a);
    if (this.#offsets === undefined) {
      // Whether a cluster begins at a place depends on the text before it and one code point
      // after it; the part's start is where a cluster begins.
      const window = this.#text.slice(this.#start, this.#end + 2);
      this.#offsets = new Set();
      for (const { index } of GRAPHEMES.segment(window)) this.#offsets.add(this.#start + index);
    }
    return this.#offsets.has(at);
  }
}

function splitsSurrogatePair(text: string, at: number): boolean {
  return isHighSurrogate(text.charCodeAt(at - 1)) && isLowSurrogate(text.charCodeAt(at));
}

/** What closes the part cut at `cut` inside `fence`: a closing fence on a line of its own. */
function closingAt(text: string, cut: number, fence: Fence | undefined): string {
  if (fence === undefined) return "";
  return text[cut - 1] === "\n" ? fence.closer : `\n${fence.closer}`;
}

/**
 * Whether a part may end at `cut` (0 < cut < text.length), and inside which block; `undefined`
 * when the cut would break a fence line or make a piece of a cut line read as one.
 */
function placeOf(text: string, cut: number, map: FenceMap | undefined): Place | undefined {
  if (map === undefined) return {};
  const fence = lastBefore(map.fences, cut, (fence) => fence.openStart);
  const inside = fence !== undefined && cut < fence.closeEnd ? fence : undefined;
  if (inside !== undefined) {
    // An empty block, or a closing line alone at the start of the next part, helps no one.
    if (cut <= inside.contentStart || cut >= inside.closeStart) return undefined;
  }
  if (text[cut - 1] === "\n") return { fence: inside };
  // A cut line makes two: the first may not read as a fence, the second not start like one.
  const line = lastBefore(map.fenceLikeLines, cut, (line) => line.start);
  if (line !== undefined && cut <= line.end && headIsFence(text, line, cut, inside)) {
    return undefined;
  }
  if (FENCE_LIKE.test(text.slice(cut, cut + 6))) return undefined;
  // The line break goes in before the closing fence; the original one must not follow the cut.
  if (inside !== undefined && (text[cut] === "\n" || text.startsWith("\r\n", cut))) {
    return undefined;
  }
  return { fence: inside };
}

/** Whether `line` closes the block that `closer` (e.g. "  ```") closes. */
function closesFence(line: string, closer: string): boolean {
  const closing = CLOSING_FENCE.exec(line);
  const fence = closer.trimStart();
  return closing !== null && closing[1][0] === fence[0] && closing[1].length >= fence.length;
}

/**
 * Whether the first piece of `line` cut at `cut` opens a block (outside any) or closes `inside`.
 */
function headIsFence(
  text: string,
  line: FenceLikeLine,
  cut: number,
  inside: Fence | undefined,
): boolean {
  const run = Math.min(cut, line.runEnd) - line.runStart;
  const char = text[line.runStart];
  if (inside === undefined) return run >= 3 && (char === "~" || cut <= line.backtickAt);
  const fence = inside.closer.trimStart();
  return char === fence[0] && run >= fence.length && cut <= line.blankEnd;
}

/** The indentation and fence of `line` when it opens a block (no backtick in a ``` info string). */
function openingFence(line: string): { indent: string; fence: string } | undefined {
  const match = OPENING_FENCE.exec(line);
  if (match === null || (match[2][0] === "`" && match[3].includes("`"))) return undefined;
  return { indent: match[1], fence: match[2] };
}

/** The fenced code blocks of `text` and the starts of its fence-like lines (CommonMark rules). */
function findFences(text: string): FenceMap {
  const fences: Fence[] = [];
  const fenceLikeLines: FenceLikeLine[] = [];
  let open: Omit<Fence, "closeStart" | "closeEnd"> | undefined;
  for (let start = 0; start < text.length;) {
    const newline = text.indexOf("\n", start);
    const end = newline < 0 ? text.length : newline + 1;
    const line = text.slice(start, newline < 0 ? text.length : newline).replace(/\r$/, "");
    if (FENCE_LIKE.test(line)) {
      fenceLikeLines.push(fenceLikeLine(line, start));
      if (open === undefined) {
        const opening = openingFence(line);
        if (opening !== undefined) {
          open = {
            openStart: start,
            contentStart: end,
            opener: line,
            closer: opening.indent + opening.fence,
          };
        }
      } else if (closesFence(line, open.closer)) {
        fences.push({ ...open, closeStart: start, closeEnd: end });
        open = undefined;
      }
    }
    start = end;
  }
  if (open !== undefined) fences.push({ ...open, closeStart: text.length, closeEnd: text.length });
  return { fences, fenceLikeLines };
}

/** Where the parts of `line` (at `start`, without its line break) are. */
function fenceLikeLine(line: string, start: number): FenceLikeLine {
  const runStart = line.search(/[`~]/);
  let runEnd = runStart;
  while (line[runEnd] === line[runStart]) runEnd++;
  let blankEnd = runEnd;
  while (line[blankEnd] === " " || line[blankEnd] === "\t") blankEnd++;
  const backtick = line.indexOf("`", runEnd);
  return {
    start,
    end: start + line.length,
    runStart: start + runStart,
    runEnd: start + runEnd,
    blankEnd: start + blankEnd,
    backtickAt: start + (backtick < 0 ? line.length : backtick),
  };
}

/** The last item of `sorted` whose key is before `offset` (binary search). */
function lastBefore<T>(sorted: T[], offset: number, key: (item: T) => number): T | undefined {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (key(sorted[middle]) < offset) low = middle + 1;
    else high = middle;
  }
  return low > 0 ? sorted[low - 1] : undefined;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}
