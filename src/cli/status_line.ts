/**
 * The one-row status lines the CLI redraws on a terminal's stderr: whether it can, cutting a line
 * to the row, and the line of a tool call's progress.
 *
 * @module
 */
import stringWidth from "fast-string-width";
import { collapseWhitespace, visible } from "../home/text.ts";
import type { ToolProgress } from "../mcp/mod.ts";
import type { CliIo } from "./io.ts";

/** Writes this before a status line to replace the row the cursor is on, or alone to erase it. */
export const ERASE_ROW = "\r\x1b[K";

/** Whether stderr is a terminal that can redraw a line (`TERM` set and not `dumb`). */
export function canRedraw(io: CliIo): boolean {
  return io.stderrIsTerminal && !["dumb", ""].includes(io.env("TERM") ?? "");
}

/**
 * `text` cut to take at most `columns` columns of a terminal (wide characters count two), the
 * last one `…` when it is cut; whole characters only.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fitColumns } from "./status_line.ts";
 * assert.equal(fitColumns("abcdef", 4), "abc…");
 * assert.equal(fitColumns("abc", 4), "abc");
 * ```
 */
export function fitColumns(text: string, columns: number): string {
  if (stringWidth(text) <= columns) return text;
  let kept = "";
  let used = 0;
  for (const { segment } of new Intl.Segmenter().segment(text)) {
    used += stringWidth(segment);
    if (used > columns - 1) break;
    kept += segment;
  }
  return `${kept}…`;
}

/**
 * "  … <tool>: <progress>/<total> <message>", the progress a server reported for a tool call, on
 * one row of a terminal `columns` wide (0: unknown). The server's message is shown escaped, on
 * one line, so it cannot move the cursor or recolour the terminal.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { toolProgressLine } from "./status_line.ts";
 * assert.equal(
 *   toolProgressLine("fetch", { progress: 2, total: 5, message: "page 2" }, 0),
 *   "  … fetch: 2/5 page 2",
 * );
 * assert.equal(toolProgressLine("fetch", { progress: 40 }, 0), "  … fetch: 40");
 * ```
 */
export function toolProgressLine(tool: string, report: ToolProgress, columns: number): string {
  const count = report.total === undefined
    ? `${report.progress}`
    : `${report.progress}/${report.total}`;
  const message = report.message ? ` ${visible(collapseWhitespace(report.message))}` : "";
  const line = `  … ${visible(tool)}: ${count}${message}`;
  // The last column stays free: a character written there leaves some terminals wrapping.
  return columns > 0 ? fitColumns(line, Math.max(columns - 1, 1)) : line;
}
