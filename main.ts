/**
 * The `agent` command line (what `deno compile` builds).
 *
 * @module
 */
import { runCli } from "./src/cli/mod.ts";

if (import.meta.main) {
  startWhereTheTaskWasStarted();
  Deno.exit(await runCli(Deno.args));
}

/**
 * `deno task agent` and `deno task gateway` run this file in the checkout, whatever folder they
 * were started from; `deno task` names that folder in `INIT_CWD`. Relative paths on the command
 * line (`metrics validate ./p.json`, `--out ./packages`, a stdio server's `./server.sh`) are the
 * user's, so they are taken from there. A folder that is gone leaves the checkout as it is.
 */
function startWhereTheTaskWasStarted(): void {
  const started = Deno.env.get("INIT_CWD");
  if (!started) return;
  try {
    Deno.chdir(started);
  } catch {
    // Removed since, or not readable: the checkout is a working folder as good as any.
  }
}
