/**
 * Edits `config.yaml` in place, keeping comments, key order and unrelated keys.
 *
 * @module
 */
import { isAlias, isMap, isScalar, isSeq, parseDocument } from "yaml";
import type { Document } from "yaml";
import { ConfigSource } from "./config.ts";
import { readTextIfExists, withEditLock, writeFileAtomic } from "./files.ts";

/** The first lines of a `config.yaml` the service creates. */
export const NEW_CONFIG_HEADER =
  "# Agent service configuration (see README.md for every section).\n";

/**
 * Applies `edit` to the YAML document of `file` and writes it back atomically (mode 0600), under
 * the edit lock of its folder ({@linkcode withEditLock}), so that two commands editing it at once (`agent
 * metrics enable` and `agent mcp add`, say) both keep their change. A missing file is created. A file that does not parse is left untouched and the
 * {@linkcode ConfigError} from {@linkcode ConfigSource.parse} is thrown.
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
 * ```
 */
export function editConfigFile(
  file: string,
  edit: (document: Document, source: ConfigSource) => void,
): void {
  withEditLock(file, () => editUnlocked(file, edit));
}

function editUnlocked(
  file: string,
  edit: (document: Document, source: ConfigSource) => void,
): void {
  const original = readTextIfExists(file);
  const source = ConfigSource.parse(file, original ?? ""); // refuse to edit a broken file
  const text = original ?? NEW_CONFIG_HEADER;
  const document = parseDocument(text);
  edit(document, source);
  const printed = document.toString({
    lineWidth: 0, // never re-wrap long values
    flowCollectionPadding: usesFlowPadding(text), // `[a, b]` or `[ a, b ]`, as the file does
    indentSeq: !usesUnindentedSequences(text),
  });
  writeFileAtomic(file, keepTrailingCommentSpacing(text, printed));
}

/**
 * Readies the sections of `path` (`["telemetry", "shared_metrics"]`) for keys to be set in them:
 * a missing section is left to `setIn`, which creates it; a null one (say all its keys are
 * commented out) becomes an empty mapping that keeps its comments. A section holding anything
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

/** Whether the file pads flow collections (`{ a: 1 }`, `[ x ]`); new files do not. */
function usesFlowPadding(text: string): boolean {
  return /:[ \t]+[[{] [^\s\]}]/.test(text);
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
