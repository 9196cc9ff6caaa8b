/**
 * Edits `config.yaml` in place, keeping comments, key order and unrelated keys.
 *
 * @module
 */
import {
  isAlias,
  isCollection,
  isMap,
  isNode,
  isPair,
  isScalar,
  isSeq,
  parseDocument,
  visit,
} from "yaml";
import type { Document, Node, Pair, YAMLMap } from "yaml";
import { keepInlineComments } from "./_comment_spacing.ts";
import { keepUntouchedLines } from "./_keep_lines.ts";
import { ConfigSource } from "./config.ts";
import { readTextIfExists, withEditLock, writeFileAtomic } from "./files.ts";
import { cut } from "./text.ts";

/** The first lines of a `config.yaml` the service creates. */
export const NEW_CONFIG_HEADER =
  "# Agent service configuration (see README.md for every section).\n";

/**
 * Applies `edit` to the YAML document of `file` and writes it back atomically (mode 0600), under
 * the edit lock of its folder ({@linkcode withEditLock}), so that two commands editing it at once (`agent
 * metrics enable` and `agent mcp add`, say) both keep their change. A missing file is created:
 * `edit` applies to `options.whenMissing` (default {@linkcode NEW_CONFIG_HEADER}), so a command
 * can start a new file from a commented starter. A file that does not parse is left untouched and the
 * {@linkcode ConfigError} from {@linkcode ConfigSource.parse} is thrown. Only the lines the edit
 * changes are written anew (indented as the file indents); every other line stays byte for byte
 * (its flow padding, quotes, blank lines; see {@linkcode printEdited}). The file keeps its
 * line ends: when its lines end in CRLF, every line written does. Inline comments keep the blanks
 * before them, and stay at their column on a line whose value changed when it leaves room.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { editConfigFile } from "./config_edit.ts";
 * const dir = await Deno.makeTempDir();
 * const file = `${dir}/config.yaml`;
 * Deno.writeTextFileSync(file, "# mine\nmodel:\n  default: gpt-4o # keep\n");
 * editConfigFile(file, (doc) => doc.setIn(["telemetry", "shared_metrics", "enabled"], true));
 * const text = Deno.readTextFileSync(file);
 * assert(text.includes("# mine") && text.includes("# keep") && text.includes("enabled: true"));
 * Deno.writeTextFileSync(file, "# mine\r\nmodel: {}\r\n");
 * editConfigFile(file, (doc) => doc.setIn(["model", "default"], "gpt-4o"));
 * assert.equal(Deno.readTextFileSync(file), "# mine\r\nmodel: {default: gpt-4o}\r\n");
 * const fresh = `${dir}/new.yaml`;
 * const starter = "# the port:\nport: 1 # any\n";
 * editConfigFile(fresh, (doc) => doc.set("port", 2), { whenMissing: starter });
 * assert.equal(Deno.readTextFileSync(fresh), "# the port:\nport: 2 # any\n");
 * Deno.writeTextFileSync(file, "a: [-y, x]\nb: { c: 1 }\n\n\nd:\n    e: 1\n");
 * editConfigFile(file, (doc) => doc.setIn(["d", "f"], 2));
 * assert.equal(Deno.readTextFileSync(file), "a: [-y, x]\nb: { c: 1 }\n\n\nd:\n    e: 1\n    f: 2\n");
 * ```
 */
export function editConfigFile(
  file: string,
  edit: (document: Document, source: ConfigSource) => void,
  options: EditOptions = {},
): void {
  withEditLock(
    file,
    () =>
      rewrite(file, options.whenMissing ?? NEW_CONFIG_HEADER, (text, source) => {
        const document = parseDocument(text);
        keepCommentLevels(text, document);
        const untouched = printUntouched(text, document);
        edit(document, source);
        return printEdited(text, untouched, document);
      }),
  );
}

/** Options of {@linkcode editConfigFile}. */
export interface EditOptions {
  /** The text a missing file starts from; default {@linkcode NEW_CONFIG_HEADER}. */
  whenMissing?: string;
}

/**
 * Removes the entry `path` (`["mcp_servers", "fs"]`) from `file`, under the edit lock, with the
 * comment lines directly above it (no blank line between) that belong to it, and every line of
 * its value; a comment separated from it by a blank line, or directly above the next entry,
 * stays. Every other byte is kept. False, and nothing written, when `path` is not written in the
 * file (it is missing, or only merged in with `<<`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { removeConfigEntry } from "./config_edit.ts";
 * const file = `${await Deno.makeTempDir()}/config.yaml`;
 * Deno.writeTextFileSync(file, "mcp_servers:\n  # files\n  fs:\n    command: npx\n  # wiki\n  wiki: {url: x}\n");
 * assert(removeConfigEntry(file, ["mcp_servers", "fs"]));
 * assert.equal(Deno.readTextFileSync(file), "mcp_servers:\n  # wiki\n  wiki: {url: x}\n");
 * ```
 */
export function removeConfigEntry(file: string, path: readonly string[]): boolean {
  let removed = false;
  withEditLock(file, () =>
    rewrite(file, NEW_CONFIG_HEADER, (text, source) => {
      const document = parseDocument(text);
      keepCommentLevels(text, document);
      const untouched = printUntouched(text, document);
      const parent = path.length === 1
        ? document.contents
        : document.getIn(path.slice(0, -1), true);
      const index = isMap(parent) ? indexOfKey(parent, path[path.length - 1]) : -1;
      if (!isMap(parent) || index < 0) return undefined;
      const [pair] = parent.items.splice(index, 1);
      refuseUsedAnchors(document, pair, source, path.join("."));
      removed = true;
      // The spliced text must read as the document without the entry (a section left empty reads
      // as null, which every reader takes as empty); else the printer writes it.
      const emptied = parent.items.length === 0 && path.length > 1 ? path.slice(0, -1) : undefined;
      const spliced = parent.flow ? undefined : spliceOut(text, pair);
      if (spliced !== undefined && readsAs(spliced, document, emptied)) return spliced;
      return printEdited(text, untouched, document);
    }));
  return removed;
}

/**
 * Reads `file` (missing: `whenMissing`), refuses a broken one, lets `change` make the new text
 * from the text with LF line ends, and writes it atomically (mode 0600) with the file's line
 * ends: a file whose lines end in CRLF stays CRLF. `change` returning `undefined` writes nothing.
 */
function rewrite(
  file: string,
  whenMissing: string,
  change: (text: string, source: ConfigSource) => string | undefined,
): void {
  const original = readTextIfExists(file);
  const source = ConfigSource.parse(file, original ?? ""); // refuse to edit a broken file
  const text = (original ?? whenMissing).replaceAll("\r\n", "\n");
  const changed = change(text, source);
  if (changed === undefined) return;
  const crlf = original !== undefined && /\r\n/.test(original);
  writeFileAtomic(file, crlf ? changed.replaceAll("\n", "\r\n") : changed);
}

/**
 * The prints of `document`, not yet edited, parsed from `text` (LF line ends), with each flow
 * padding ({@linkcode flowPaddings}), for {@linkcode printEdited} to match lines against.
 */
function printUntouched(text: string, document: Document): Map<boolean, string> {
  return new Map(flowPaddings(text).map((padding) => [padding, print(text, document, padding)]));
}

/**
 * The edited `document` as the text to write: the lines of `text` (LF line ends) the edit did not
 * change, byte for byte, and the library's print of the lines it did. `untouched` holds the
 * prints of the document before the edit ({@linkcode printUntouched}); of its flow paddings, the
 * one that changes the fewest characters wins (the file's usual one on a tie), so that an edited
 * `{enabled: false}` stays unpadded in a file that pads others. When the lines cannot be matched,
 * or the result would not read as the edited document, the whole print.
 */
function printEdited(text: string, untouched: Map<boolean, string>, document: Document): string {
  let best: string | undefined;
  for (const [padding, before] of untouched) {
    const printed = print(text, document, padding);
    const kept = keepUntouchedLines(text, before, printed);
    const written = kept !== undefined && sameDocument(kept, printed) ? kept : printed;
    if (best === undefined || changedLength(text, written) < changedLength(text, best)) {
      best = written;
    }
  }
  return best!;
}

/** How many characters differ between `a` and `b` once their common start and end are cut. */
function changedLength(a: string, b: string): number {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let end = 0;
  while (
    end < a.length - start && end < b.length - start &&
    a[a.length - 1 - end] === b[b.length - 1 - end]
  ) end++;
  return a.length + b.length - 2 * (start + end);
}

/**
 * Whether YAML texts `a` and `b` are the same document to the YAML library: the same data,
 * styles and comments, in the same order, whatever their spacing and blank lines.
 */
function sameDocument(a: string, b: string): boolean {
  const [first, second] = [a, b].map((text) => parseDocument(text));
  if (first.errors.length > 0 || second.errors.length > 0) return false;
  const normal = (document: Document) =>
    document.toString({ lineWidth: 0 }).split("\n").filter((line) => line.trim() !== "")
      .join("\n");
  return normal(first) === normal(second);
}

/**
 * `document` printed the way `text` (LF line ends) is written: flow collections padded
 * (`[ a, b ]`) as `padding` says, by default as the file mostly does.
 */
function print(text: string, document: Document, padding = usesFlowPadding(text)): string {
  const printed = document.toString({
    lineWidth: 0, // never re-wrap long values
    flowCollectionPadding: padding,
    indentSeq: !usesUnindentedSequences(text),
    indent: indentOf(text, document),
  });
  return keepTrailingCommentSpacing(text, keepInlineComments(text, printed));
}

/**
 * Readies the sections of `path` (`["telemetry", "shared_metrics"]`) for keys to be set in them:
 * a missing section is left to `setIn`, which creates it; a null one (say all its keys are
 * commented out) becomes an empty mapping that keeps its comments; one merged in with `<<` is
 * copied in place ({@linkcode copyMergedSections}). A section holding anything
 * else (a string, a list, an alias) is a {@linkcode ConfigError} naming it: setting a key there
 * would fail or throw the value away.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { editConfigFile, prepareSections } from "./config_edit.ts";
 * const file = `${await Deno.makeTempDir()}/config.yaml`;
 * Deno.writeTextFileSync(file, "telemetry:\n  # shared_metrics: {enabled: false}\n");
 * editConfigFile(file, (doc, source) => {
 *   prepareSections(doc, source, ["telemetry", "shared_metrics"]);
 *   doc.setIn(["telemetry", "shared_metrics", "enabled"], true);
 * });
 * assert.match(Deno.readTextFileSync(file), /# shared_metrics[^\n]*\n\s*shared_metrics:\n\s+enabled: true/);
 * ```
 */
export function prepareSections(
  doc: Document,
  source: ConfigSource,
  path: readonly string[],
): void {
  copyMergedSections(doc, path);
  for (let depth = 1; depth <= path.length; depth++) {
    const prefix = path.slice(0, depth);
    const node = doc.getIn(prefix, true);
    if (node === undefined || isMap(node)) continue;
    if (fillNullSection(doc, prefix)) continue;
    const key = prefix.join(".");
    throw source.error(
      key,
      isAlias(node)
        ? `it is an alias (*${node.source}), so this change would not stay in ${key}`
        : `expected a mapping of settings, got ${describeNode(node)}`,
      `write ${key} as a mapping of its settings (key: value lines indented under it), or ` +
        "remove it; then run the command again",
    );
  }
}

/** A value {@linkcode setConfigValue} replaced because its key cannot hold it. */
export interface ReplacedValue {
  /** The dotted key path that held it: the key set, or a section on its way. */
  key: string;
  /** The 1-based line of that key in the file as it was, when known. */
  line?: number;
  /** The value as it was, to quote (`"maybe"`, `the list [1,2]`); absent for a secret. */
  written?: string;
  /** The value itself, as the file gave it; absent for a secret. */
  value?: unknown;
  /** What the key holds instead: "true or false", "a mapping of settings". */
  expected: string;
}

/** What {@linkcode setConfigValue} accepts as a key's current value, and how it says so. */
export interface ValueRule {
  /** Whether the current value (as YAML reads it; never null) is one the key may hold. */
  accepts: (value: unknown) => boolean;
  /** The values it may hold, in words: "true or false". */
  expected: string;
  /** The key may hold a secret: a replaced value is not quoted. */
  secret?: boolean;
}

/**
 * Sets `path` to `value` in `doc`, replacing what stands in the way: a section on the way that
 * holds a scalar or a list (`shared_metrics: yes`) becomes a mapping, and a current value `rule`
 * does not accept (`enabled: maybe`) is overwritten. Returns each value replaced, for the command
 * to say so; comments elsewhere are kept, and the comments of a replaced section move above it.
 * Sections are readied as {@linkcode prepareSections} does (an alias as a section stays a
 * {@linkcode ConfigError}). `source` is the file as read, for the lines of the replaced keys.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ConfigSource } from "./config.ts";
 * import { editConfigFile, setConfigValue } from "./config_edit.ts";
 * const file = `${await Deno.makeTempDir()}/config.yaml`;
 * Deno.writeTextFileSync(file, "# mine\ntelemetry:\n  shared_metrics:\n    enabled: maybe\n");
 * const rule = { accepts: (v: unknown) => typeof v === "boolean", expected: "true or false" };
 * let replaced;
 * editConfigFile(file, (doc, source: ConfigSource) => {
 *   replaced = setConfigValue(doc, source, ["telemetry", "shared_metrics", "enabled"], true, rule);
 * });
 * assert.deepEqual(replaced, [{
 *   key: "telemetry.shared_metrics.enabled",
 *   line: 4,
 *   written: '"maybe"',
 *   value: "maybe",
 *   expected: "true or false",
 * }]);
 * assert.equal(Deno.readTextFileSync(file), "# mine\ntelemetry:\n  shared_metrics:\n    enabled: true\n");
 * ```
 */
export function setConfigValue(
  doc: Document,
  source: ConfigSource,
  path: readonly string[],
  value: unknown,
  rule: ValueRule,
): ReplacedValue[] {
  const replaced: ReplacedValue[] = [];
  const section = path.slice(0, -1);
  copyMergedSections(doc, section);
  for (let depth = 1; depth <= section.length; depth++) {
    const prefix = section.slice(0, depth);
    const node = doc.getIn(prefix, true);
    if (node === undefined || isMap(node) || isAlias(node)) continue;
    if (isScalar(node) && node.value === null) continue;
    replaced.push(replacement(source, prefix, node, { expected: "a mapping of settings" }));
    const mapping = doc.createNode({});
    if (isNode(node)) {
      const comments = [node.commentBefore, node.comment].filter(Boolean).join("\n");
      if (comments) mapping.commentBefore = comments;
    }
    doc.setIn(prefix, mapping);
    break; // nothing was under it
  }
  prepareSections(doc, source, section);
  const current = doc.getIn(path, true);
  const resolved = isAlias(current) ? current.resolve(doc) : current;
  const held = isNode(resolved) ? resolved.toJSON() : resolved;
  if (held !== undefined && held !== null && !rule.accepts(held)) {
    replaced.push(replacement(source, path, resolved, rule));
  }
  doc.setIn(path, value);
  return replaced;
}

function replacement(
  source: ConfigSource,
  path: readonly string[],
  node: unknown,
  rule: { expected: string; secret?: boolean },
): ReplacedValue {
  const key = path.join(".");
  const line = source.lineOf(key);
  const where = line === undefined ? {} : { line };
  if (rule.secret) return { key, ...where, expected: rule.expected };
  const value = isNode(node) ? node.toJSON() : node;
  return { key, ...where, written: writtenAs(node, value), value, expected: rule.expected };
}

/** A value as a user recognises it from the file: `"maybe"`, `the list ["a"]`, `2`. */
function writtenAs(node: unknown, value: unknown): string {
  const kind = isSeq(node) ? "the list " : isMap(node) ? "the mapping " : "";
  const text = isScalar(node) && typeof value !== "string" && typeof node.source === "string"
    ? node.source
    : JSON.stringify(value) ?? String(value);
  return kind + cut(text, 80);
}

/**
 * Copies in place each section on `path` that `doc` has only through a merge key (`<<: *defaults`),
 * so that a key set in it keeps the section's other merged keys: set in a new section, it would
 * hide the whole merged one (a merge is not deep). The anchor's mapping is left as it was, for the
 * other keys that merge it. Returns the dotted paths copied.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseDocument } from "yaml";
 * import { copyMergedSections } from "./config_edit.ts";
 * const doc = parseDocument("d: &d\n  extra: {port: 1, host: h}\nwebhook:\n  <<: *d\n");
 * assert.deepEqual(copyMergedSections(doc, ["webhook", "extra"]), ["webhook.extra"]);
 * doc.setIn(["webhook", "extra", "port"], 2);
 * assert.deepEqual(doc.toJS({}).webhook.extra, { port: 2, host: "h" });
 * ```
 */
export function copyMergedSections(doc: Document, path: readonly string[]): string[] {
  const copied: string[] = [];
  for (let depth = 1; depth <= path.length; depth++) {
    const parentPath = path.slice(0, depth - 1);
    const parent = parentPath.length === 0 ? doc.contents : doc.getIn(parentPath, true);
    if (!isMap(parent)) break;
    const key = path[depth - 1];
    if (indexOfKey(parent, key) >= 0) continue;
    const merged = mergedValue(doc, parent, key, new Set());
    if (merged === undefined) break; // missing: setIn creates it
    const copy = isNode(merged) ? merged.clone() : doc.createNode(merged);
    if (isNode(copy)) copy.anchor = undefined; // the anchor stays on the original
    parent.set(doc.createNode(key), copy);
    copied.push(path.slice(0, depth).join("."));
  }
  return copied;
}

/** Whether `key` is a merge key: `<<` unquoted (as a plain key, or parsed with `merge: true`). */
function isMergeKeyNode(key: unknown): boolean {
  if (!isScalar(key)) return false;
  if (typeof key.value === "symbol") return key.value.description === "<<";
  return key.value === "<<" && (key.type === undefined || key.type === "PLAIN");
}

/** The value `map` gets for `key` through its merge keys (earlier sources first), if any. */
function mergedValue(doc: Document, map: YAMLMap, key: string, seen: Set<YAMLMap>): unknown {
  if (seen.has(map)) return undefined;
  seen.add(map);
  for (const pair of map.items) {
    if (!isMergeKeyNode(pair.key)) continue;
    for (const item of isSeq(pair.value) ? pair.value.items : [pair.value]) {
      const source = isAlias(item) ? item.resolve(doc) : item;
      if (!isMap(source)) continue;
      const index = indexOfKey(source, key);
      if (index >= 0) return source.items[index].value;
      const nested = mergedValue(doc, source, key, seen);
      if (nested !== undefined) return nested;
    }
  }
  return undefined;
}

/**
 * Turns the section at `path` into an empty mapping when it is null (say all its keys are
 * commented out), keeping its comments; true when it did. Setting a key under a null section
 * would otherwise stop the YAML library.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseDocument } from "yaml";
 * import { fillNullSection } from "./config_edit.ts";
 * const doc = parseDocument("telemetry: # later\n");
 * assert(fillNullSection(doc, ["telemetry"]));
 * doc.setIn(["telemetry", "send"], false);
 * assert.match(doc.toString(), /# later/);
 * ```
 */
export function fillNullSection(doc: Document, path: readonly string[]): boolean {
  const node = doc.getIn(path, true);
  if (!isScalar(node) || node.value !== null) return false;
  const mapping = doc.createNode({});
  const comments = [node.commentBefore, node.comment].filter(Boolean).join("\n");
  if (comments) mapping.commentBefore = comments;
  doc.setIn(path, mapping);
  return true;
}

function describeNode(node: unknown): string {
  if (isSeq(node)) return "a list";
  const value = isScalar(node) ? node.value : node;
  return `${typeof value} ${JSON.stringify(value)}`;
}

/**
 * Puts each comment line after the last entry of a section back at the level it is written at in
 * `text` (LF line ends), the text `document` was parsed from. The YAML library gives the whole
 * comment block after the last entry of a nested section to that section and prints it at the
 * section's indentation: a `# model:` block written at column 0 after `platforms.webhook.extra`
 * would come back inside it, and a comment above the next key of an outer section would move into
 * the section before it. A line goes to the innermost enclosing section whose entries start at or
 * left of its `#`: after that section's entries, or above its next entry when it has one. A
 * comment the text does not match line for line stays where the library put it.
 */
function keepCommentLevels(text: string, document: Document): void {
  const holders: { node: Node; path: readonly (Document | Node | Pair)[] }[] = [];
  visit(document, (key, node, path) => {
    if (key === "key" || !isNode(node) || !node.comment || !node.range) return;
    if (isScalar(node) || (isCollection(node) && !node.flow)) holders.push({ node, path });
  });
  for (const { node, path } of holders) placeTrailingComment(text, node, path);
}

/** One line of a comment: its text after `#` ("" for a blank line), and the column of its `#`. */
interface CommentLine {
  text: string;
  /** `Infinity` for a comment on the line of the value itself. */
  column?: number;
}

/** Where comment lines of one level go: after or before entries that start at `column`. */
interface CommentLevel {
  column: number;
  place: (lines: string[]) => void;
}

/** Splits the trailing comment of `node` (see {@linkcode keepCommentLevels}) by level. */
function placeTrailingComment(
  text: string,
  node: Node,
  path: readonly (Document | Node | Pair)[],
): void {
  const lines = commentLinesOf(text, node);
  const levels = commentLevels(text, node, path);
  if (lines === undefined || levels.length === 0) return;
  // A line never goes deeper than the one before it, so the comment keeps its order; a blank
  // line goes with the comment line after it (the last one's level at the end).
  let level = 0;
  const levelOf = lines.map((line) =>
    line.column === undefined ? -1 : (level = Math.max(level, levelAt(levels, line.column)))
  );
  for (let index = levelOf.length - 2; index >= 0; index--) {
    if (levelOf[index] < 0) levelOf[index] = levelOf[index + 1];
  }
  for (let index = 0; index < levelOf.length; index++) {
    if (levelOf[index] < 0) levelOf[index] = index > 0 ? levelOf[index - 1] : 0;
  }
  node.comment = undefined;
  levels.forEach((level, index) => {
    const group = lines.filter((_line, line) => levelOf[line] === index);
    if (group.length > 0) level.place(group.map((line) => line.text));
  });
}

/** The index in `levels` (innermost first) of the level of a comment line at `column`. */
function levelAt(levels: readonly CommentLevel[], column: number): number {
  let index = levels.findIndex((level) => level.column <= column);
  if (index < 0) return levels.length - 1;
  // Entries at the same column (an unindented list under its key): the outer one.
  while (index + 1 < levels.length && levels[index + 1].column === levels[index].column) index++;
  return index;
}

/**
 * The levels a trailing comment of `node` can go to, innermost first: `node` itself, then each
 * enclosing block section of which it ends the last entry, up to the first one that has an entry
 * after it (the comment then goes above that entry) or the document's top level.
 */
function commentLevels(
  text: string,
  node: Node,
  path: readonly (Document | Node | Pair)[],
): CommentLevel[] {
  const levels: CommentLevel[] = [];
  const parentPair = path[path.length - 1];
  const ownLevel = (column: number): CommentLevel => ({
    column,
    place: (lines) => {
      // An empty value's comment on the lines below its key is printed there only as a comment
      // before the value: as a comment after it, a one-line comment joins the key's line.
      const below = isScalar(node) && node.value === null && isPair(parentPair) &&
        parentPair.value === node && !/^[ \t]*#/.test(text.slice(node.range![1], node.range![2]));
      if (below) node.commentBefore = joinComments(node.commentBefore, lines.join("\n"));
      else node.comment = lines.join("\n");
    },
  });
  if (isCollection(node)) levels.push(ownLevel(columnAt(text, node.range![0])));
  let child: Node | Pair = node;
  for (let index = path.length - 1; index >= 0; index--) {
    const parent = path[index];
    if (isPair(parent)) {
      child = parent;
      continue;
    }
    if (!isCollection(parent) || parent.flow || !parent.range) break;
    const column = columnAt(text, parent.range[0]);
    if (levels.length === 0) levels.push(ownLevel(column + 1)); // a value: lines deeper than its key
    const items: unknown[] = parent.items;
    const position = items.indexOf(child);
    if (position < 0) break;
    const next = items[position + 1];
    if (next === undefined) {
      levels.push({
        column,
        place: (lines) => parent.comment = joinComments(lines.join("\n"), parent.comment),
      });
      child = parent;
      continue;
    }
    const before = isPair(next) ? next.key : next;
    if (!isNode(before)) break;
    const blankBelow = blankLineAt(text, node.range![2]);
    levels.push({ column, place: (lines) => placeAbove(before, lines, blankBelow) });
    break;
  }
  return levels;
}

/**
 * Puts comment `lines` above `node`, before the comment it has, with a blank line between when
 * `blankBelow`; blank lines leading `lines` stay above them.
 */
function placeAbove(node: Node, lines: string[], blankBelow: boolean): void {
  const first = lines.findIndex((line) => line !== "");
  if (first < 0) return;
  // Not `node.spaceBefore`: the parser sets it below a comment of an empty value without one.
  const blank = blankBelow ? [""] : [];
  node.commentBefore = [...lines.slice(first), ...blank, node.commentBefore ?? ""]
    .join("\n").replace(/\n$/, "");
  node.spaceBefore = first > 0;
}

/**
 * Whether the line at `offset` of `text` is blank; when `offset` is inside a line, the next line
 * if the rest of this one is blank.
 */
function blankLineAt(text: string, offset: number): boolean {
  let start = offset;
  if (start > 0 && text[start - 1] !== "\n") {
    const newline = text.indexOf("\n", start);
    if (newline < 0 || text.slice(start, newline).trim() !== "") return false;
    start = newline + 1;
  }
  const newline = text.indexOf("\n", start);
  return newline >= 0 && text.slice(start, newline).trim() === "";
}

/** Comment `first` then comment `second`, either of which may be missing. */
function joinComments(first: string | null | undefined, second: string | null | undefined): string {
  return [first, second].filter((comment) => comment != null).join("\n");
}

/** The column of the character at `offset` of `text`. */
function columnAt(text: string, offset: number): number {
  return offset - (text.lastIndexOf("\n", offset - 1) + 1);
}

/**
 * The lines of the trailing comment of `node`, each with the column its `#` has in `text`;
 * `undefined` when they are not the comment lines that follow `node` in `text`.
 */
function commentLinesOf(text: string, node: Node): CommentLine[] | undefined {
  const [, valueEnd, nodeEnd] = node.range!;
  const written: (CommentLine | undefined)[] = []; // undefined: a blank line
  let start = valueEnd;
  if (start > 0 && text[start - 1] !== "\n") {
    const lineEnd = text.indexOf("\n", start);
    const end = lineEnd < 0 || lineEnd > nodeEnd ? nodeEnd : lineEnd;
    const hash = text.indexOf("#", start);
    if (hash >= 0 && hash < end) {
      written.push({ text: text.slice(hash + 1, end), column: Infinity });
    }
    start = end + 1;
  }
  for (const line of start < nodeEnd ? text.slice(start, nodeEnd).split("\n") : []) {
    const column = line.search(/\S/);
    if (column < 0) written.push(undefined);
    else if (line[column] === "#") written.push({ text: line.slice(column + 1), column });
    else return undefined;
  }
  const lines: CommentLine[] = [];
  let next = 0;
  for (const line of node.comment!.split("\n")) {
    if (line === "") {
      if (next < written.length && written[next] === undefined) next++;
      lines.push({ text: "" });
      continue;
    }
    while (next < written.length && written[next] === undefined) next++;
    const source = written[next++];
    if (source === undefined || source.text.trimEnd() !== line.trimEnd()) return undefined;
    lines.push({ text: line, column: source.column });
  }
  return lines;
}

/** Whether the file pads flow collections (`{ a: 1 }`, `[ x ]`); new files do not. */
function usesFlowPadding(text: string): boolean {
  return /:[ \t]+[[{] [^\s\]}]/.test(text);
}

/**
 * The flow paddings an edit of `text` may print with: the file's usual one first, and the other
 * one too when the file may hold a flow collection (it may mix both).
 */
function flowPaddings(text: string): boolean[] {
  const usual = usesFlowPadding(text);
  return /[[{]/.test(text) ? [usual, !usual] : [usual];
}

/**
 * How many columns the file indents a block mapping under its key (2 when it nests none), so
 * that lines an edit adds line up with the file's own.
 */
function indentOf(text: string, document: Document): number {
  let indent = 2;
  visit(document, {
    Pair: (_key, pair) => {
      if (!isScalar(pair.key) || !isMap(pair.value) || pair.value.flow) return;
      const keyStart = pair.key.range?.[0];
      const valueStart = pair.value.range?.[0];
      if (keyStart === undefined || valueStart === undefined) return;
      const step = columnAt(text, valueStart) - columnAt(text, keyStart);
      if (step < 1 || step > 8) return;
      indent = step;
      return visit.BREAK;
    },
  });
  return indent;
}

/** Whether the file writes block lists at their key's indentation (`key:` then `- item`). */
function usesUnindentedSequences(text: string): boolean {
  return /^([ \t]*)[^\s#-][^\n]*:[ \t]*(?:#[^\n]*)?\r?\n\1- /m.test(text);
}

/**
 * The YAML printer puts a blank line before a comment block at the end of the file; keep the
 * user's spacing when they had none.
 */
function keepTrailingCommentSpacing(original: string, printed: string): string {
  const block = /(?:^|\n)((?:[ \t]*#[^\n]*(?:\n|$))+)$/.exec(original)?.[1];
  if (!block || original.endsWith(`\n\n${block}`) || !printed.endsWith(`\n\n${block}`)) {
    return printed;
  }
  return printed.slice(0, printed.length - block.length - 1) + block;
}

/** The index of the pair of `map` whose key reads as `key` (`8080:` is the key "8080"), or -1. */
function indexOfKey(map: YAMLMap, key: string): number {
  return map.items.findIndex((pair) => isScalar(pair.key) && String(pair.key.value) === key);
}

/**
 * An entry that defines an anchor (`&defaults`) which other keys still use (`*defaults`, or
 * `<<: *defaults`) cannot go: they would be left pointing at nothing.
 */
function refuseUsedAnchors(
  document: Document,
  pair: Pair,
  source: ConfigSource,
  keyPath: string,
): void {
  const defined = new Set<string>();
  for (const part of [pair.key, pair.value]) {
    if (!isNode(part)) continue;
    visit(part, (_key, node) => {
      if (isNode(node) && node.anchor) defined.add(node.anchor);
    });
  }
  if (defined.size === 0) return;
  let used: string | undefined;
  visit(document, {
    Alias: (_key, node) => {
      if (!defined.has(node.source)) return;
      used = node.source;
      return visit.BREAK;
    },
  });
  if (used === undefined) return;
  throw source.error(
    keyPath,
    `it defines the anchor &${used} that other keys use (*${used}), so they would be left ` +
      "pointing at nothing; nothing was written",
    `write out the values where *${used} is used (or move &${used} to another entry), then run ` +
      "the command again",
  );
}

/**
 * Whether YAML `text` reads as the same data as `document` (both with merge keys as plain keys),
 * where the section at `emptied`, when given, is null in `text` rather than an empty mapping.
 */
function readsAs(text: string, document: Document, emptied?: readonly string[]): boolean {
  const reread = parseDocument(text);
  if (reread.errors.length > 0) return false;
  try {
    const expected = document.toJS();
    if (emptied) {
      const section = emptied.slice(0, -1).reduce((value, key) => value?.[key], expected);
      if (section) section[emptied[emptied.length - 1]] = null;
    }
    return JSON.stringify(reread.toJS()) === JSON.stringify(expected);
  } catch {
    return false;
  }
}

/** One line of a text: where it starts, where the next one starts, and its content. */
interface Line {
  start: number;
  end: number;
  text: string;
}

function linesOf(text: string): Line[] {
  const lines: Line[] = [];
  for (let start = 0; start < text.length;) {
    const newline = text.indexOf("\n", start);
    const end = newline < 0 ? text.length : newline + 1;
    lines.push({ start, end, text: text.slice(start, newline < 0 ? end : newline) });
    start = end;
  }
  return lines;
}

/**
 * `text` (LF line ends) without the block-mapping entry `pair`: its key line, the lines of its
 * value (indented deeper), and the comment lines directly above it (no blank line between, not
 * indented deeper: those end the previous entry's value). Of the blank lines around it, one run
 * stays between its neighbours, none between the parent key and the next entry. `undefined` when
 * the key does not start its line (`- name: …`, `? name`): the printer removes those.
 */
function spliceOut(text: string, pair: Pair): string | undefined {
  const keyStart = isNode(pair.key) ? pair.key.range?.[0] : undefined;
  if (keyStart === undefined) return undefined;
  const lines = linesOf(text);
  const keyLine = lines.findIndex((line) => keyStart < line.end);
  if (keyLine < 0 || text.slice(lines[keyLine].start, keyStart).trim() !== "") return undefined;
  const indent = keyStart - lines[keyLine].start;
  const indentOf = (line: Line) => line.text.length - line.text.trimStart().length;
  const blank = (index: number) => lines[index].text.trim() === "";
  const comment = (index: number) => lines[index].text.trimStart().startsWith("#");

  let first = keyLine;
  while (first > 0 && comment(first - 1) && indentOf(lines[first - 1]) <= indent) first--;
  let last = keyLine;
  for (let index = keyLine + 1; index < lines.length; index++) {
    if (blank(index)) continue;
    if (indentOf(lines[index]) <= indent) break;
    last = index;
  }
  let before = first; // first of the blank lines above
  while (before > 0 && blank(before - 1)) before--;
  let after = last + 1; // the line after the blank lines below
  while (after < lines.length && blank(after)) after++;

  const entryIsFirst = before === 0 ||
    (indentOf(lines[before - 1]) < indent && !comment(before - 1));
  const nextIsSibling = after < lines.length && indentOf(lines[after]) === indent;
  let from = first;
  let to = last + 1;
  if (after > to && (before < first || entryIsFirst)) to = after; // blank runs on both sides
  else if (before < first && after === to && !nextIsSibling) from = before; // end of the section
  const end = to < lines.length ? lines[to].start : text.length;
  return text.slice(0, lines[from].start) + text.slice(end);
}
