/**
 * Puts back the user's layout of inline comments after the YAML library printed a document: it
 * writes every `value   # note` as `value # note`, and a note on a section's key line
 * (`extra:   # note`) on a line of its own under the key.
 *
 * @module
 */
import { Parser } from "yaml";

/** A comment on a line after some YAML (`port: 8644   # note`), split where it starts. */
interface InlineComment {
  /** The line's index in its text. */
  line: number;
  /** The YAML before the comment, indentation included, without the blanks after it. */
  code: string;
  /** The blanks between `code` and the `#`. */
  gap: string;
  /** The comment from its `#` to the end of the line. */
  comment: string;
}

/**
 * `printed` (the library's output for a document parsed from `original`, both with LF line ends)
 * with the inline comments laid out as in `original`: a line that only the blanks before its
 * comment tell apart from a line of `original` gets that line's blanks; a line whose value
 * changed keeps its comment at the column it had when the new value leaves room (else one space);
 * and a key line's comment that the library moved under the key goes back onto it. Lines are
 * matched in order, by their YAML (or their key) and the comment's text; anything else is left as
 * printed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { keepInlineComments } from "./_comment_spacing.ts";
 * const original = "extra:   # settings\n  port: 8644   # public\n";
 * const printed = "extra:\n  # settings\n  port: 9000 # public\n";
 * assert.equal(keepInlineComments(original, printed), "extra:   # settings\n  port: 9000   # public\n");
 * ```
 */
export function keepInlineComments(original: string, printed: string): string {
  const wanted = inlineComments(original);
  if (wanted.length === 0) return printed;
  const lines = printed.split("\n");
  const found = new Map(inlineComments(printed).map((comment) => [comment.line, comment]));
  let next = 0; // the first comment of `original` not matched yet
  const match = (accepts: (comment: InlineComment) => boolean) => {
    const index = wanted.findIndex((comment, at) => at >= next && accepts(comment));
    if (index >= 0) next = index + 1;
    return index < 0 ? undefined : wanted[index];
  };
  for (let line = 0; line < lines.length; line++) {
    const own = found.get(line);
    if (own !== undefined) {
      const source = match((comment) =>
        comment.comment === own.comment &&
        (comment.code === own.code || keyOf(comment.code) === keyOf(own.code))
      );
      if (source !== undefined) lines[line] = own.code + gapFor(own.code, source) + own.comment;
      continue;
    }
    // A key line whose comment went onto the line under it: put it back.
    const below = lines[line + 1]?.trim();
    if (below?.startsWith("#") !== true || found.has(line + 1)) continue;
    const source = match((comment) =>
      comment.code === lines[line].trimEnd() && comment.comment === below
    );
    if (source === undefined) continue;
    lines.splice(line, 2, source.code + source.gap + source.comment);
    found.clear(); // the line numbers below moved: find them again
    for (const comment of inlineComments(lines.join("\n"))) found.set(comment.line, comment);
  }
  return lines.join("\n");
}

/**
 * The blanks to put before the comment of `code`, laid out as `source` was: its own blanks for
 * the same code, else the comment's column when the code leaves room and the comment was aligned
 * (more than one blank before it), else one space.
 */
function gapFor(code: string, source: InlineComment): string {
  if (code === source.code) return source.gap;
  const column = source.code.length + source.gap.length;
  const aligned = source.gap.length > 1;
  return aligned && code.length < column ? " ".repeat(column - code.length) : " ";
}

/** The indentation and key of a `key: value` line (`"  port:"`); the whole code otherwise. */
function keyOf(code: string): string {
  return /^[ \t]*(?:- )*[^\s#'"{[][^:#]*:(?=\s|$)/.exec(code)?.[0] ?? code;
}

/** The inline comments of YAML `text`, in order, as the YAML parser finds them. */
function inlineComments(text: string): InlineComment[] {
  const offsets: number[] = [];
  for (const token of new Parser().parse(text)) collectComments(token, offsets);
  const comments: InlineComment[] = [];
  let line = 0;
  let lineStart = 0;
  for (const offset of offsets.sort((a, b) => a - b)) {
    for (let newline = text.indexOf("\n", lineStart); newline >= 0 && newline < offset;) {
      line++;
      lineStart = newline + 1;
      newline = text.indexOf("\n", lineStart);
    }
    const before = text.slice(lineStart, offset);
    const code = before.trimEnd();
    if (code.trim() === "") continue; // a comment line of its own
    const end = text.indexOf("\n", offset);
    comments.push({
      line,
      code,
      gap: before.slice(code.length),
      comment: text.slice(offset, end < 0 ? text.length : end).trimEnd(),
    });
  }
  return comments;
}

/** Adds the offset of every comment token under `token` (a node of the parser's CST). */
function collectComments(token: unknown, offsets: number[]): void {
  if (Array.isArray(token)) {
    for (const item of token) collectComments(item, offsets);
    return;
  }
  if (typeof token !== "object" || token === null) return;
  const { type, offset } = token as { type?: unknown; offset?: unknown };
  if (type === "comment" && typeof offset === "number") {
    offsets.push(offset);
    return;
  }
  for (const value of Object.values(token)) collectComments(value, offsets);
}
