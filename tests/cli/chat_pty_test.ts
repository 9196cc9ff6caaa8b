/**
 * `agent chat` at a real terminal: the CLI runs inside a pseudo-terminal (util-linux `script`),
 * so stdin is a TTY, approval questions are asked, and Ctrl-C is the terminal's interrupt key.
 */
import assert from "node:assert/strict";
import { startFakeModel } from "../fixtures/fake_model.ts";
import { tempHome } from "./_helpers.ts";
import { modelLines, writeConfig } from "./_mcp_helpers.ts";
import { Terminal, writeNotesChatConfig } from "./_terminal.ts";

/** Processes whose environment holds `marker` (Linux /proc). */
function pidsWithMarker(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      if (Deno.readTextFileSync(`/proc/${entry.name}/environ`).includes(marker)) {
        pids.push(Number(entry.name));
      }
    } catch { /* gone, or not ours */ }
  }
  return pids;
}

Deno.test("chat at a terminal: approval asked and answered, Ctrl-C cancels a run, the session goes on", async () => {
  await using h = await tempHome();
  await using model = await startFakeModel();
  const marker = `pty-${crypto.randomUUID()}`;
  writeNotesChatConfig(h.home, model.baseUrl, {
    timeoutSeconds: 120,
    serverLines: [`env: {AGENT_TEST_MARKER: ${marker}}`],
  });
  const terminal = new Terminal(h.home, ["chat"]);
  try {
    let at = await terminal.waitFor(/you> /);
    assert.match(terminal.screen, /agent chat: gpt-4\.1-mini via custom, 2 tools/);

    // A write-capable tool of an untrusted server: the user is asked, and approves.
    model.push(
      { toolCalls: [{ name: "mcp__notes__write_note", arguments: { text: "buy milk" } }] },
      { contentFromTools: "Result: " },
    );
    await terminal.type("please save a note\r");
    at = await terminal.waitFor(/Approve once\? \[y\/N\]/, at);
    assert.match(terminal.screen, /call tool 'write_note' of untrusted MCP server 'notes'/);
    await terminal.type("y\r");
    at = await terminal.waitFor(/agent> Result: saved: buy milk/, at);
    at = await terminal.waitFor(/you> /, at);

    // The same call, denied: the tool does not run and the model is told.
    model.push(
      { toolCalls: [{ name: "mcp__notes__write_note", arguments: { text: "sell milk" } }] },
      { contentFromTools: "Told: " },
    );
    await terminal.type("save another\r");
    at = await terminal.waitFor(/Approve once\? \[y\/N\]/, at);
    await terminal.type("n\r");
    at = await terminal.waitFor(/agent> Told: The call of mcp__notes__write_note was not made/, at);
    at = await terminal.waitFor(/you> /, at);

    // Ctrl-C while the model is thinking cancels the run, not the session, and does not reach
    // the MCP servers.
    const serverPids = pidsWithMarker(marker);
    assert.equal(serverPids.length, 1);
    const requestsBefore = model.requests.length;
    model.push({ hang: true });
    await terminal.type("think forever\r");
    await model.waitForRequests(requestsBefore + 1);
    await terminal.type("\x03");
    at = await terminal.waitFor(/\[cancelled by the user\]/, at);
    at = await terminal.waitFor(/you> /, at);

    model.push(
      { toolCalls: [{ name: "mcp__notes__echo", arguments: { message: "ping" } }] },
      { contentFromTools: "still here: " },
    );
    await terminal.type("are you there?\r");
    at = await terminal.waitFor(/agent> still here: Echo: ping/, at);
    assert.deepEqual(pidsWithMarker(marker), serverPids);
    // The cancelled turn stays in the history, closed properly (the fake model checks it).
    const last = model.requests.at(-1)!;
    assert.deepEqual(last.messages.map((m) => m.role), [
      "system",
      "user",
      "assistant",
      "tool",
      "assistant",
      "user",
      "assistant",
      "tool",
      "assistant",
      "user",
      "user",
      "assistant",
      "tool",
    ]);

    await terminal.type("/exit\r");
    const status = await terminal.exit();
    assert.equal(status.code, 0, terminal.screen);
  } finally {
    terminal.kill();
    await terminal.exit().catch(() => {});
  }
});

Deno.test("chat at a dumb terminal: a line typed while the agent works is shown after the prompt that sends it", async () => {
  await using h = await tempHome();
  await using model = await startFakeModel();
  writeNotesChatConfig(h.home, model.baseUrl, { timeoutSeconds: 120 });
  const terminal = new Terminal(h.home, ["chat"]); // TERM=dumb: lines as the terminal gives them
  try {
    let at = await terminal.waitFor(/you> /);
    let release!: () => void;
    const answered = new Promise<void>((resolve) => release = resolve);
    model.push({ content: "first answer", after: answered }, { content: "second answer" });
    await terminal.type("one\r");
    await model.waitForRequests(1);
    // Typed while the model thinks: the terminal echoes it among the output.
    await terminal.type("two\r");
    at = await terminal.waitFor(/two\r\n/, at);
    release();
    at = await terminal.waitFor(/agent> first answer\r\n/, at);
    // Sent at the next prompt, and shown after it: not `you> agent> second answer`.
    at = await terminal.waitFor(/you> two\r\nagent> second answer\r\n/, at);
    assert.equal(lastUserOf(model.requests[1].messages), "two");
    // A line typed at the prompt (once it is shown) is echoed by the terminal only, once.
    at = await terminal.waitFor(/^you> /, at);
    await terminal.type("/help\r");
    at = await terminal.waitFor(/^\/help\r\n\/reload-mcp /, at);
    await terminal.type("/exit\r");
    assert.equal((await terminal.exit()).code, 0, terminal.screen);
  } finally {
    terminal.kill();
    await terminal.exit().catch(() => {});
  }
});

/**
 * An HTTP "MCP server" on 127.0.0.1 that answers nothing until `release()`, then 404 to every
 * request: a connect to it waits for the test, then fails at once.
 */
function heldServer() {
  let release!: () => void;
  const released = new Promise<void>((resolve) => release = resolve);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async () => {
    await released;
    return new Response("Not Found", { status: 404 });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/mcp`,
    release,
    [Symbol.asyncDispose]: async () => {
      release();
      await server.shutdown();
    },
  };
}

Deno.test("chat at a dumb terminal: a line typed while the MCP servers connect, at the start or at /reload-mcp, is shown after the prompt that sends it", async () => {
  await using h = await tempHome();
  await using model = await startFakeModel();
  await using atStart = heldServer();
  await using atReload = heldServer();
  const config = (...servers: string[]) =>
    writeConfig(h.home, [
      ...modelLines(model.baseUrl),
      "mcp_servers:",
      ...servers.flatMap((url, index) => [`  held${index + 1}:`, `    url: ${url}`]),
    ]);
  config(atStart.url);
  model.push({ content: "first answer" }, { content: "second answer" });
  const terminal = new Terminal(h.home, ["chat"]); // TERM=dumb: lines as the terminal gives them
  try {
    let at = await terminal.waitFor(/Connecting to MCP servers …\r\n/);
    await terminal.type("one\r");
    at = await terminal.waitFor(/one\r\n/, at); // the terminal's echo, before any prompt
    atStart.release();
    at = await terminal.waitFor(/agent> first answer\r\n/, at);
    // Before: `you> agent> first answer`.
    assert.match(terminal.screen.slice(0, at), /\nyou> one\r\nagent> first answer\r\n$/);
    assert.equal(lastUserOf(model.requests[0].messages), "one");

    at = await terminal.waitFor(/^you> /m, at);
    config(atStart.url, atReload.url);
    await terminal.type("/reload-mcp\r");
    at = await terminal.waitFor(/Reloading MCP servers …\r\n/, at);
    await terminal.type("two\r");
    at = await terminal.waitFor(/two\r\n/, at);
    atReload.release();
    at = await terminal.waitFor(/agent> second answer\r\n/, at);
    assert.match(
      terminal.screen.slice(0, at),
      /\ntools: 0\r\nyou> two\r\nagent> second answer\r\n$/,
    );
    assert.equal(lastUserOf(model.requests[1].messages), "two");
    await terminal.type("/exit\r");
    assert.equal((await terminal.exit()).code, 0, terminal.screen);
  } finally {
    terminal.kill();
    await terminal.exit().catch(() => {});
  }
});

function lastUserOf(messages: Array<Record<string, unknown>>): string {
  return String(messages.findLast((message) => message.role === "user")?.content);
}
