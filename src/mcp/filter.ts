/**
 * The `include`/`exclude` filters of an MCP server's `tools` mapping (SPEC.md `tools` mapping,
 * decisions.md §5 "Filters on original names"): entries match the server's original, unsanitized
 * tool names, exactly or as fnmatch-style globs; `include` wins over `exclude`.
 *
 * @module
 */

/** How many compiled patterns {@linkcode fnmatch} keeps; the oldest is dropped beyond this. */
const PATTERN_CACHE_SIZE = 512;

const patternCache = new Map<string, RegExp>();

/**
 * Tells whether a filter entry is a glob, that is contains `*`, `?` or `[`.
 *
 * @param pattern A filter entry.
 * @returns `true` when the entry is matched by {@linkcode fnmatch}, `false` when only exactly.
 *
 * @example Usage
 * ```ts
 * import { hasGlob } from "./filter.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(hasGlob("get_*"), true);
 * assert.equal(hasGlob("read_file"), false);
 * ```
 */
export function hasGlob(pattern: string): boolean {
  return /[*?[]/.test(pattern);
}

/**
 * Matches a whole name against an fnmatch-style pattern, case-sensitively.
 *
 * - `*` matches any run of characters, including none, `/` and `.`;
 * - `?` matches exactly one character (one Unicode code point);
 * - `[abc]`, `[a-z]` match one character of the set; `[!abc]` and `[^abc]` one character not in
 *   it; a `]` right after the opening (or after `!`/`^`) is a member, a `-` first or last is a
 *   member, and a reversed range such as `[z-a]` matches nothing;
 * - a `[` without a closing `]` is a literal `[`; every other character, `\` included, is literal.
 *
 * Patterns compile once to an anchored `RegExp` (kept in a bounded cache); stars after the first
 * use atomic lookahead groups, so no pattern can backtrack exponentially.
 *
 * @param name The name to test, e.g. a server's original tool name.
 * @param pattern The fnmatch-style pattern.
 * @returns `true` when the whole of `name` matches `pattern`.
 *
 * @example Usage
 * ```ts
 * import { fnmatch } from "./filter.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(fnmatch("get_issue", "get_*"), true);
 * assert.equal(fnmatch("write", "[rw]rite"), true);
 * assert.equal(fnmatch("Get_issue", "get_*"), false);
 * assert.equal(fnmatch("a.b", "a?b"), true);
 * ```
 */
export function fnmatch(name: string, pattern: string): boolean {
  let regex = patternCache.get(pattern);
  if (regex === undefined) {
    regex = compile(pattern);
    if (patternCache.size >= PATTERN_CACHE_SIZE) {
      patternCache.delete(patternCache.keys().next().value as string);
    }
    patternCache.set(pattern, regex);
  }
  return regex.test(name);
}

/**
 * Tells whether a name matches any filter entry: exactly, or by {@linkcode fnmatch} when the
 * entry {@linkcode hasGlob | has a glob character}.
 *
 * @param name The name to test, e.g. a server's original tool name.
 * @param patterns The filter entries.
 * @returns `true` when at least one entry matches; `false` for no entries.
 *
 * @example Usage
 * ```ts
 * import { matchesAny } from "./filter.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(matchesAny("read_file", ["write_file", "read_*"]), true);
 * assert.equal(matchesAny("read_file", []), false);
 * ```
 */
export function matchesAny(name: string, patterns: readonly string[]): boolean {
  return patterns.some((pattern) =>
    pattern === name || (hasGlob(pattern) && fnmatch(name, pattern))
  );
}

/** The `include`/`exclude` entries of a server's `tools` mapping, already normalised to lists. */
export interface ToolSelection {
  /** Allowlist: when present (even empty), only matching tools are kept and `exclude` is ignored. */
  include?: readonly string[];
  /** Denylist: matching tools are dropped, unless `include` is present. */
  exclude?: readonly string[];
}

/**
 * Keeps the tools a server's `include`/`exclude` filters allow, matching original tool names
 * with {@linkcode matchesAny}.
 *
 * - `include` present: only tools matching it; `exclude` is then ignored (include wins), and
 *   `include: []` keeps nothing;
 * - only `exclude`: every tool but the matching ones;
 * - neither: every tool.
 *
 * @param tools The server's tools, with their original (unsanitized) names, in announced order.
 * @param selection The filters.
 * @returns A new array of the kept tools, in the same order.
 *
 * @example Usage
 * ```ts
 * import { selectTools } from "./filter.ts";
 * import assert from "node:assert/strict";
 *
 * const tools = [{ name: "read_file" }, { name: "write_file" }, { name: "delete_file" }];
 * assert.deepEqual(selectTools(tools, { exclude: ["delete_*"] }).map((t) => t.name), [
 *   "read_file",
 *   "write_file",
 * ]);
 * assert.deepEqual(
 *   selectTools(tools, { include: ["*_file"], exclude: ["write_file"] }).map((t) => t.name),
 *   ["read_file", "write_file", "delete_file"],
 * );
 * assert.deepEqual(selectTools(tools, { include: [] }), []);
 * ```
 */
export function selectTools<T extends { name: string }>(
  tools: readonly T[],
  selection: ToolSelection,
): T[] {
  const { include, exclude } = selection;
  if (include !== undefined) return tools.filter((tool) => matchesAny(tool.name, include));
  if (exclude !== undefined) return tools.filter((tool) => !matchesAny(tool.name, exclude));
  return [...tools];
}

/** One pattern element: a fixed single-character matcher (regex source) or a star. */
type Token = { star: true } | { star: false; source: string };

/** Compiles an fnmatch pattern to an anchored RegExp, per code point (`u`), `.` spanning lines. */
function compile(pattern: string): RegExp {
  const tokens = tokenize(pattern);
  // Split on stars: chunk[0] is anchored at the start, the last chunk at the end, and each middle
  // chunk is matched at its leftmost position, which is always safe when a star follows it.
  const chunks: string[][] = [[]];
  for (const token of tokens) {
    if (token.star) chunks.push([]);
    else chunks[chunks.length - 1].push(token.source);
  }
  if (chunks.length === 1) return new RegExp(`^${chunks[0].join("")}$`, "su");
  let source = `^${chunks[0].join("")}`;
  let group = 0;
  for (const chunk of chunks.slice(1, -1)) {
    if (chunk.length === 0) continue; // consecutive stars
    group += 1;
    // JS has no atomic groups; a captured lookahead plus backreference behaves as one.
    source += `(?=(.*?${chunk.join("")}))\\${group}`;
  }
  source += `.*${chunks[chunks.length - 1].join("")}$`;
  return new RegExp(source, "su");
}

function tokenize(pattern: string): Token[] {
  const chars = [...pattern]; // code points, so `?` and classes see whole characters
  const tokens: Token[] = [];
  let i = 0;
  while (i < chars.length) {
    const char = chars[i];
    if (char === "*") {
      tokens.push({ star: true });
      i += 1;
    } else if (char === "?") {
      tokens.push({ star: false, source: "." });
      i += 1;
    } else if (char === "[") {
      const parsed = parseClass(chars, i);
      if (parsed === undefined) {
        tokens.push({ star: false, source: literal("[") });
        i += 1;
      } else {
        tokens.push({ star: false, source: parsed.source });
        i = parsed.next;
      }
    } else {
      tokens.push({ star: false, source: literal(char) });
      i += 1;
    }
  }
  return tokens;
}

/** Parses `[...]` starting at `chars[start]`; `undefined` when no `]` closes it. */
function parseClass(
  chars: readonly string[],
  start: number,
): { source: string; next: number } | undefined {
  let j = start + 1;
  const negated = chars[j] === "!" || chars[j] === "^";
  if (negated) j += 1;
  const first = j;
  if (chars[j] === "]") j += 1; // a leading `]` is a member, not the end
  while (j < chars.length && chars[j] !== "]") j += 1;
  if (j >= chars.length) return undefined;
  const members = chars.slice(first, j);
  const parts: string[] = [];
  for (let k = 0; k < members.length; k += 1) {
    if (k + 2 < members.length && members[k + 1] === "-") {
      const low = members[k].codePointAt(0)!;
      const high = members[k + 2].codePointAt(0)!;
      // A reversed range is empty (as in Python's fnmatch) rather than a RegExp syntax error.
      if (low <= high) parts.push(`${literal(members[k])}-${literal(members[k + 2])}`);
      k += 2;
    } else {
      parts.push(literal(members[k]));
    }
  }
  let source: string;
  if (parts.length === 0) source = negated ? "." : "(?!)";
  else source = `[${negated ? "^" : ""}${parts.join("")}]`;
  return { source, next: j + 1 };
}

/** Regex source matching exactly `char`; anything but `[A-Za-z0-9_]` as a `\u{...}` escape. */
function literal(char: string): string {
  if (/^[A-Za-z0-9_]$/.test(char)) return char;
  return `\\u{${char.codePointAt(0)!.toString(16)}}`;
}
