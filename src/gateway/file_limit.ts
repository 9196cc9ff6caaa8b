/**
 * The process's open-file limit: every connection the listener holds takes a file descriptor,
 * and Deno's HTTP server closes none that is idle or still sending its headers. Once they are all
 * taken, accepting fails (see `listen.ts`): anyone who can reach the port can get there with that
 * many idle connections.
 *
 * @module
 */

/** Below this open-file limit, a gateway that other machines can reach is warned about at start. */
export const LOW_OPEN_FILE_LIMIT = 4096;

/**
 * The soft open-file limit in the text of Linux's `/proc/<pid>/limits`; `undefined` when the text
 * has none or it is `unlimited`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openFileLimit } from "./file_limit.ts";
 * const limits = "Limit                     Soft Limit           Hard Limit           Units     \n" +
 *   "Max open files            1024                 524288               files     \n";
 * assert.equal(openFileLimit(limits), 1024);
 * assert.equal(openFileLimit("Max open files  unlimited  unlimited  files\n"), undefined);
 * ```
 */
export function openFileLimit(limits: string): number | undefined {
  const soft = /^Max open files +(\S+)/m.exec(limits)?.[1];
  return soft !== undefined && /^\d+$/.test(soft) ? Number(soft) : undefined;
}

/**
 * This process's open-file limit; `undefined` where it cannot be read (`/proc` is Linux's).
 * Deno raises it to the hard limit (`ulimit -Hn`) as it starts.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { processOpenFileLimit } from "./file_limit.ts";
 * assert.equal(processOpenFileLimit(() => "Max open files  256  256  files\n"), 256);
 * assert.equal(processOpenFileLimit(() => { throw new Deno.errors.NotFound(); }), undefined);
 * ```
 */
export function processOpenFileLimit(
  read: () => string = () => Deno.readTextFileSync("/proc/self/limits"),
): number | undefined {
  try {
    return openFileLimit(read());
  } catch {
    return undefined;
  }
}
