/**
 * The console lines of the gateway's log (warnings and errors on stderr) show a sender's text
 * inert: nothing in a payload or a script's stderr quoted in a warning can move, hide or reorder
 * what the terminal shows.
 */
import assert from "node:assert/strict";
import { closeLogging, configureLogging, logger } from "../../src/home/log.ts";
import { homePaths } from "../../src/home/paths.ts";

Deno.test("configureLogging: console lines escape bidi overrides, zero-width and line-separator characters too", async () => {
  const dir = await Deno.makeTempDir();
  const shown: string[] = [];
  try {
    await configureLogging(homePaths(dir), { console: (line) => shown.push(line) });
    try {
      logger("webhook").warn("route {route}: event ignored because of its script: {detail}", {
        route: "gh",
        detail: "title: \u202Eexe.txt\u2028next line\u200B\u{E0041}",
      });
    } finally {
      await closeLogging();
    }
    assert.deepEqual(shown, [
      "warning: route gh: event ignored because of its script: title: \\u202eexe.txt\\u2028next " +
      "line\\u200b\\u{e0041}\n",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
