/**
 * Edits `config.yaml` in place, keeping comments, key order and unrelated keys.
 *
 * @module
 */
import { parseDocument } from "yaml";
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
export function editConfigFile(file: string, edit: (document: Document) => void): void {
  withEditLock(file, () => editUnlocked(file, edit));
}

function editUnlocked(file: string, edit: (document: Document) => void): void {
  const original = readTextIfExists(file);
  ConfigSource.parse(file, original ?? ""); // refuse to edit a broken file
  const text = original ?? NEW_CONFIG_HEADER;
  const document = parseDocument(text);
  edit(document);
  const printed = document.toString({
    lineWidth: 0, // never re-wrap long values
    flowCollectionPadding: usesFlowPadding(text), // `[a, b]` or `[ a, b ]`, as the file does
    indentSeq: !usesUnindentedSequences(text),
  });
  writeFileAtomic(file, keepTrailingCommentSpacing(text, printed));
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
