/**
 * The wizards' questions at a real terminal (util-linux `script`): Ctrl-D on an empty answer
 * cancels the wizard as Ctrl-C does (inquirer alone would wait forever), while Ctrl-D inside a
 * typed answer deletes the character under the cursor.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { tempHome } from "./_helpers.ts";
import { Terminal } from "./_terminal.ts";

/** The screen without its escape sequences (colours, cursor moves). */
function withoutEscapes(screen: string): string {
  return screen.replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;?]*[A-Za-z]`, "g"), "");
}

Deno.test("gateway setup at a terminal: Ctrl-D in a typed answer edits it, on a choice it cancels", async () => {
  await using h = await tempHome();
  const terminal = new Terminal(h.home, ["gateway", "setup"], { term: "xterm-256color" });
  try {
    let at = await terminal.waitFor(/Enable the webhook listener\?/);
    await terminal.type("\r");
    at = await terminal.waitFor(/Port to listen on/, at);
    // "12", Left, Ctrl-D: the "2" goes, the question stays and takes "1".
    await terminal.type("12\x1b[D\x04");
    await terminal.type("\r");
    at = await terminal.waitFor(/Who may connect\?/, at);
    assert.match(withoutEscapes(terminal.screen), /✔ Port to listen on 1\r/);
    await terminal.type("\x04");
    await terminal.waitFor(/setup cancelled; nothing was changed/, at);
    const status = await terminal.exit();
    assert.equal(status.code, 1, terminal.screen);
    assert.throws(() => Deno.statSync(join(h.home, "config.yaml")), Deno.errors.NotFound);
    assert.throws(() => Deno.statSync(join(h.home, ".env")), Deno.errors.NotFound);
  } finally {
    terminal.kill();
    await terminal.exit().catch(() => {});
  }
});

Deno.test("metrics reset at a terminal: Ctrl-D at the yes/no question is no; nothing is deleted", async () => {
  await using h = await tempHome();
  Deno.mkdirSync(h.metrics, { recursive: true });
  Deno.writeTextFileSync(join(h.metrics, "keep.txt"), "usage data");
  const terminal = new Terminal(h.home, ["metrics", "reset"], { term: "xterm-256color" });
  try {
    const at = await terminal.waitFor(/\(y\/N\)/);
    await terminal.type("\x04");
    await terminal.waitFor(/reset cancelled; nothing was deleted/, at);
    const status = await terminal.exit();
    assert.equal(status.code, 1, terminal.screen);
    assert.equal(Deno.readTextFileSync(join(h.metrics, "keep.txt")), "usage data");
  } finally {
    terminal.kill();
    await terminal.exit().catch(() => {});
  }
});
