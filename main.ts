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
 *
 * Only a process started in the checkout follows it: `INIT_CWD` is inherited (an npm script or a
 * task of another project sets it for all it starts, and keeps an outer one), so a compiled
 * binary, or this file started in another folder, stays where it was started.
 */
function startWhereTheTaskWasStarted(): void {
  const started = Deno.env.get("INIT_CWD");
  if (!started) return;
  try {
    const checkout = Deno.realPathSync(new URL(".", import.meta.url));
    if (Deno.realPathSync(Deno.cwd()) !== checkout) return;
    Deno.chdir(started);
  } catch {
    // Removed since, or not readable (or no checkout: a compiled binary): stay where started.
  }
}
