/**
 * `agent chat` with the line editor, at a real pseudo-terminal (util-linux `script`) whose `TERM`
 * can draw it: what the user edits, recalls and pastes is what the model receives.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { type ChatRequest, startFakeModel } from "../fixtures/fake_model.ts";
import { SILENT_STDIO_FIXTURE, stdioCommand } from "../fixtures/mcp/spawn.ts";
import { requestsServerYaml } from "../mcp/_client_requests.ts";
import { processesWithEnv, tempHome } from "./_helpers.ts";
import { configText, modelLines, stdioServerLines, writeConfig } from "./_mcp_helpers.ts";
import { Screen } from "./_screen.ts";
import { Terminal, writeNotesChatConfig } from "./_terminal.ts";

const LEFT = "\x1b[D";
const UP = "\x1b[A";
const HOME = "\x1b[H";
const PASTE_START = "\x1b[200~";
const PASTE_END = "\x1b[201~";
const UP_3 = "\x1b[3A";
const CLEAR_BELOW = "\x1b[J";

/** The text of the last user message of `request`. */
function lastUserText(request: ChatRequest): string {
  const user = request.messages.findLast((message) => message.role === "user");
  return String(user?.content);
}

/** A fake model answering `heard <the user's last message>`, configured in `home`. */
async function echoModel(home: string) {
  const model = await startFakeModel({
    fallback: (request) => ({ content: `heard ${lastUserText(request)}` }),
  });
  writeConfig(home, modelLines(model.baseUrl));
  return model;
}

/** Types `/exit` and checks that the session ended with exit code 0. */
async function leave(terminal: Terminal): Promise<void> {
  await terminal.type("/exit\r");
  const status = await terminal.exit();
  assert.equal(status.code, 0, terminal.screen);
}

/** Ends the terminal's process if a failed test left it running. */
async function closed(terminal: Terminal): Promise<void> {
  terminal.kill();
  await terminal.exit().catch(() => {});
}

Deno.test("chat line editor: editing keys, history, one-turn paste, long lines, Ctrl-C and Ctrl-D", async () => {
  await using h = await tempHome();
  await using model = await startFakeModel({
    fallback: (request) => ({ content: `heard ${lastUserText(request).length} chars` }),
  });
  writeConfig(h.home, modelLines(model.baseUrl));
  const terminal = new Terminal(h.home, ["chat"], { term: "xterm-256color" });
  const said = async (keys: string, from: number): Promise<[string, number]> => {
    const before = model.requests.length;
    await terminal.type(keys);
    await model.waitForRequests(before + 1);
    const at = await terminal.waitFor(/agent> heard \d+ chars[\s\S]*?you> /, from);
    assert.equal(model.requests.length, before + 1, "one keystroke sequence, one turn");
    return [lastUserText(model.requests.at(-1)!), at];
  };
  try {
    let at = await terminal.waitFor(/you> /);
    // The terminal is asked for bracketed pastes while a line is read.
    assert.ok(terminal.screen.includes("\x1b[?2004h"));

    let text: string;
    [text, at] = await said(`hllo${LEFT.repeat(3)}e\r`, at);
    assert.equal(text, "hello");

    // Ctrl-W deletes the word before the cursor, Ctrl-A / Home go to the start, Ctrl-E to the
    // end, Ctrl-K cuts to the end, Ctrl-U to the start.
    [text, at] = await said(`foo bar baz\x17qux\x01X\x05 end${HOME}>\r`, at);
    assert.equal(text, ">Xfoo bar qux end");
    [text, at] = await said(`drop me\x15keep${LEFT.repeat(2)}\x0b\r`, at);
    assert.equal(text, "ke");

    // Up recalls earlier messages (newest first); the recalled line can be edited.
    [text, at] = await said(`${UP.repeat(3)}!\r`, at);
    assert.equal(text, "hello!");

    // A multi-line paste is one message, not one turn per line.
    [text, at] = await said(`${PASTE_START}line one\r\nline two\r\n${PASTE_END} and more\r`, at);
    assert.equal(text, "line one\nline two\n and more");

    // No 4095-character cut of the terminal's line discipline.
    const long = "0123456789".repeat(600);
    [text, at] = await said(`${long}\r`, at);
    assert.equal(text, long);

    // Wide and combined characters are deleted whole.
    [text, at] = await said("héllo 世界👍🏽\x7f\x7f\r", at);
    assert.equal(text, "héllo 世");

    // Ctrl-C on a line with text clears it; on an empty line it reminds how to leave.
    const requests = model.requests.length;
    await terminal.type("never sent\x03");
    at = await terminal.waitFor(/\^C\r*\n/, at);
    await terminal.type("\x03");
    at = await terminal.waitFor(/type \/exit or press Ctrl-D to leave/, at);
    [text, at] = await said("after\r", at);
    assert.equal(text, "after");
    assert.equal(model.requests.length, requests + 1);

    // Ctrl-D on an empty line ends the session; the terminal is given back in cooked mode.
    await terminal.type("\x04");
    const status = await terminal.exit();
    assert.equal(status.code, 0, terminal.screen);
    assert.ok(terminal.screen.slice(at).includes("\x1b[?2004l"));
  } finally {
    await closed(terminal);
  }
});

Deno.test("chat line editor: Up recalls messages of an earlier session from <home>/chat_history, not those typed with a leading space", async () => {
  await using h = await tempHome();
  await using model = await echoModel(h.home);
  const first = new Terminal(h.home, ["chat"], { term: "xterm-256color" });
  try {
    let at = await first.waitFor(/you> /);
    await first.type("remember this\r");
    at = await first.waitFor(/agent> heard remember this[\s\S]*?you> /, at);
    await first.type(" my token is abc123\r");
    at = await first.waitFor(/agent> heard my token is abc123[\s\S]*?you> /, at);
    await leave(first);
  } finally {
    await closed(first);
  }
  const file = join(h.home, "chat_history");
  assert.equal(Deno.statSync(file).mode! & 0o777, 0o600);
  assert.doesNotMatch(Deno.readTextFileSync(file), /abc123/);

  const second = new Terminal(h.home, ["chat"], { term: "xterm-256color" });
  try {
    const at = await second.waitFor(/you> /);
    // Newest first: `/exit`, then the message before it (the one with a leading space was not kept).
    const before = model.requests.length;
    await second.type(`${UP}${UP}\r`);
    await second.waitFor(/agent> heard remember this[\s\S]*?you> /, at);
    assert.equal(model.requests.length, before + 1);
    assert.equal(lastUserText(model.requests.at(-1)!), "remember this");
    await leave(second);
  } finally {
    await closed(second);
  }
});

Deno.test("chat line editor at approvals: Ctrl-D denies and the session goes on, a timed-out answer does not leak, Ctrl-C cancels the run", async () => {
  await using h = await tempHome();
  await using model = await startFakeModel();
  writeNotesChatConfig(h.home, model.baseUrl, { timeoutSeconds: 1 });
  const terminal = new Terminal(h.home, ["chat"], { term: "xterm-256color" });
  const writeNote = (text: string) => ({
    toolCalls: [{ name: "mcp__notes__write_note", arguments: { text } }],
  });
  try {
    let at = await terminal.waitFor(/you> /);

    // Ctrl-D at the question is "no"; it does not end the session.
    model.push(writeNote("one"), { contentFromTools: "Told: " });
    await terminal.type("save one\r");
    at = await terminal.waitFor(/Approve once\? \[y\/N\][^\n]*/, at);
    await terminal.type("\x04");
    at = await terminal.waitFor(/Not approved\.[\s\S]*agent> Told: The call[\s\S]*?you> /, at);

    // An answer typed but not sent before the timeout is dropped with the question.
    model.push(writeNote("two"), { contentFromTools: "Timed out: " });
    await terminal.type("save two\r");
    at = await terminal.waitFor(/Approve once\? \[y\/N\][^\n]*/, at);
    await terminal.type("ye");
    at = await terminal.waitFor(/No answer within 1 s: not approved\.[\s\S]*?you> /, at);
    model.push({ content: "fine" });
    await terminal.type("next\r");
    at = await terminal.waitFor(/agent> fine[\s\S]*?you> /, at);
    const sent = model.requests.at(-1)!.messages.findLast((message) => message.role === "user");
    assert.equal(sent?.content, "next");

    // An answer typed after the timeout, while the run goes on, is not the next message.
    model.push(writeNote("late"), { contentFromTools: "Late: ", delayMs: 1_500 });
    await terminal.type("save late\r");
    at = await terminal.waitFor(/Approve once\? \[y\/N\][^\n]*/, at);
    at = await terminal.waitFor(/No answer within 1 s: not approved\./, at);
    await terminal.type("y\r");
    at = await terminal.waitFor(
      /agent> Late: [\s\S]*?\(dropped "y", typed after the previous question had ended\)[\s\S]*?you> /,
      at,
    );
    model.push({ content: "fine again" });
    await terminal.type("after\r");
    at = await terminal.waitFor(/agent> fine again[\s\S]*?you> /, at);
    const userTexts = model.requests.flatMap((request) =>
      request.messages.filter((message) => message.role === "user").map((message) =>
        message.content
      )
    );
    assert.equal(lastUserText(model.requests.at(-1)!), "after");
    assert.ok(!userTexts.includes("y"), JSON.stringify(userTexts));

    // Ctrl-C at the question (nothing typed) cancels the run, as it does while the model thinks.
    model.push(writeNote("three"));
    await terminal.type("save three\r");
    at = await terminal.waitFor(/Approve once\? \[y\/N\][^\n]*/, at);
    await terminal.type("\x03");
    at = await terminal.waitFor(/\[cancelled by the user\][\s\S]*?you> /, at);

    // "y" approves.
    model.push(writeNote("four"), { contentFromTools: "Result: " });
    await terminal.type("save four\r");
    at = await terminal.waitFor(/Approve once\? \[y\/N\][^\n]*/, at);
    await terminal.type("y\r");
    at = await terminal.waitFor(/agent> Result: saved: four[\s\S]*?you> /, at);

    await leave(terminal);
  } finally {
    await closed(terminal);
  }
});

Deno.test("chat and run: Ctrl-C while the model is slow replaces the waiting line with one notice", async () => {
  await using h = await tempHome();
  await using model = await echoModel(h.home);
  /** The screen after `terminal`'s output so far, drawn on 24 rows of 80 columns. */
  const drawn = (terminal: Terminal) => {
    const screen = new Screen(24, 80);
    screen.write(terminal.screen);
    return screen.transcript;
  };
  const chat = new Terminal(h.home, ["chat"], { term: "xterm-256color", columns: 80 });
  try {
    let at = await chat.waitFor(/you> /);
    model.push({ hang: true });
    await chat.type("think\r");
    at = await chat.waitFor(/waiting for gpt-4\.1-mini \(1 s\)/, at);
    await chat.type("\x03");
    at = await chat.waitFor(/\[cancelled by the user\][\s\S]*?you> /, at);
    // Neither the waiting line nor the `^C` the terminal echoed after it stays.
    assert.match(
      drawn(chat),
      /\nyou> think\n\^C: cancelling the run …\n\[cancelled by the user\]\nyou>$/,
    );
    await leave(chat);
  } finally {
    await closed(chat);
  }

  model.push({ hang: true });
  const run = new Terminal(h.home, ["run", "think"], { term: "xterm-256color", columns: 80 });
  try {
    await run.waitFor(/waiting for gpt-4\.1-mini \(1 s\)/);
    await run.type("\x03");
    const status = await run.exit();
    assert.equal(status.code, 1, run.screen);
    assert.equal(drawn(run), "^C: cancelling the run …\nagent: cancelled by the user");
  } finally {
    await closed(run);
  }
});

Deno.test("chat: Ctrl-C while the MCP servers connect replaces the echoed ^C with its notice", async () => {
  await using h = await tempHome();
  await using model = await echoModel(h.home);
  // A server that never answers: the chat stays connecting.
  const mute = stdioCommand([], SILENT_STDIO_FIXTURE);
  const marker = `pty-${crypto.randomUUID()}`;
  writeConfig(h.home, [
    ...modelLines(model.baseUrl),
    "mcp_servers:",
    ...stdioServerLines("mute", mute, [`env: {AGENT_TEST_MARKER: ${marker}}`]),
  ]);
  const chat = new Terminal(h.home, ["chat"], { term: "xterm-256color", columns: 80 });
  try {
    await chat.waitFor(/Connecting to MCP servers …/);
    // The server's process starts once Ctrl-C is taken over (before, Ctrl-C ends the process).
    while (processesWithEnv("AGENT_TEST_MARKER", marker).length === 0) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await chat.type("\x03");
    const status = await chat.exit();
    assert.equal(status.code, 0, chat.screen);
    const screen = new Screen(24, 80);
    screen.write(chat.screen);
    assert.equal(
      screen.transcript,
      "Connecting to MCP servers …\nCtrl-C: stopping …\n" +
        "agent: stopped by Ctrl-C while connecting to the MCP servers",
    );
  } finally {
    await closed(chat);
  }
});

Deno.test("chat: Ctrl-C during /reload-mcp stops the servers still connecting; the session stays", async () => {
  await using h = await tempHome();
  await using model = await startFakeModel({ fallback: { content: "still here" } });
  writeConfig(h.home, modelLines(model.baseUrl));
  const terminal = new Terminal(h.home, ["chat"], { term: "xterm-256color" });
  try {
    let at = await terminal.waitFor(/you> /);
    // A server that never answers `initialize`: without Ctrl-C, the reload would wait for its
    // connect_timeout (far longer than this test waits).
    writeConfig(h.home, [
      ...modelLines(model.baseUrl),
      "mcp_servers:",
      ...stdioServerLines("mute", { command: "sleep", args: ["300"] }, ["connect_timeout: 300"]),
    ]);
    await terminal.type("/reload-mcp\r");
    at = await terminal.waitFor(/Reloading MCP servers …/, at);
    await terminal.type("\x03");
    at = await terminal.waitFor(/\^C: cancelling …/, at);
    at = await terminal.waitFor(
      /added: none[\s\S]*?cancelled: mute \(stopped while connecting and left as before; \/reload-mcp tries again\)[\s\S]*?tools: 0[\s\S]*?you> /,
      at,
    );
    await terminal.type("hello\r");
    at = await terminal.waitFor(/agent> still here/, at);
    await leave(terminal);
  } finally {
    await closed(terminal);
  }
});

Deno.test("chat: a form left open by a cancelled run does not read along with the next prompt", async () => {
  await using h = await tempHome();
  await using model = await startFakeModel();
  writeConfig(
    h.home,
    configText([...modelLines(model.baseUrl), "mcp_servers:"]) + requestsServerYaml("cr"),
  );
  const terminal = new Terminal(h.home, ["chat"], { term: "xterm-256color" });
  try {
    let at = await terminal.waitFor(/you> /);
    model.push({
      toolCalls: [{
        name: "mcp__cr__ask",
        arguments: {
          message: "Who are you?",
          requestedSchema: {
            type: "object",
            properties: { name: { type: "string", title: "Your name" } },
            required: ["name"],
          },
        },
      }],
    });
    await terminal.type("ask me\r");
    at = await terminal.waitFor(/Fill in the form\?[^\n]*/, at);
    // Ctrl-C on the empty answer cancels the run; the form goes with it.
    await terminal.type("\x03");
    at = await terminal.waitFor(/\[cancelled by the user\][\s\S]*?you> /, at);
    model.push({ content: "got it" });
    await terminal.type("my message\r");
    at = await terminal.waitFor(/agent> got it[\s\S]*?you> /, at);
    const sent = model.requests.at(-1)!.messages.findLast((message) => message.role === "user");
    assert.equal(sent?.content, "my message");
    // Lines go to the chat alone: "y" is a message, not a late answer to the form.
    model.push({ content: "second" });
    await terminal.type("y\r");
    at = await terminal.waitFor(/agent> second[\s\S]*?you> /, at);
    assert.doesNotMatch(terminal.screen.slice(at - 200), /Your name/);
    await leave(terminal);
  } finally {
    await closed(terminal);
  }
});

Deno.test("chat: Ctrl-Z stops the agent for the shell; after fg the line is back and editable", async () => {
  await using h = await tempHome();
  await using model = await echoModel(h.home);
  const terminal = new Terminal(h.home, ["chat"], { term: "xterm-256color", jobControl: true });
  try {
    let at = await terminal.waitFor(/you> /);
    await terminal.type(`abc${LEFT}`);
    await terminal.waitFor(/abc/, at);
    await terminal.type("\x1a");
    // Stopped (128 + SIGTSTP), as the shell reports it; then the shell's `fg` continues it.
    at = await terminal.waitFor(/\[job 148\]/, at);
    at = await terminal.waitFor(/you> abc/, at);
    await terminal.type("X\r");
    await terminal.waitFor(/agent> heard abXc/, at);
    assert.equal(lastUserText(model.requests.at(-1)!), "abXc");
    await leave(terminal);
  } finally {
    await closed(terminal);
  }
});

Deno.test("chat: a terminal resized while a line is edited gets the line drawn again at its new width", async () => {
  await using h = await tempHome();
  await using _model = await echoModel(h.home);
  const terminal = new Terminal(h.home, ["chat"], { term: "xterm-256color", columns: 20 });
  try {
    let at = await terminal.waitFor(/you> /);
    // "you> " and 25 characters: two rows of 20, the cursor on the second.
    await terminal.type("abcdefghijklmnopqrstuvwxy");
    at = await terminal.waitFor(/uvwxy/, at);
    await terminal.resize(10);
    // Rewrapped to rows of 10 the cursor is on the third row (30 columns fill three rows and
    // move it to the fourth's start): the line is drawn again from three rows up.
    const redraw = `${UP_3}\r${CLEAR_BELOW}you> abcdefghijklmnopqrstuvwxy`;
    at = await terminal.waitFor(new RegExp(redraw.replace(/[[\]\\^$.*+?(){}|]/g, "\\$&")), at);
    await terminal.type("z\r");
    await terminal.waitFor(/agent> heard abcdefghijklmnopqrstuvwxyz/, at);
    await leave(terminal);
  } finally {
    await closed(terminal);
  }
});

Deno.test("chat: lines pasted while the agent works come back at the prompt as one message, sent on Enter", async () => {
  await using h = await tempHome();
  const { promise: gate, resolve: open } = Promise.withResolvers<void>();
  await using model = await startFakeModel({
    turns: [{ content: "first done", after: gate }],
    fallback: (request) => ({ content: `heard ${JSON.stringify(lastUserText(request))}` }),
  });
  writeConfig(h.home, modelLines(model.baseUrl));
  const terminal = new Terminal(h.home, ["chat"], { term: "xterm-256color" });
  try {
    let at = await terminal.waitFor(/you> /);
    await terminal.type("first\r");
    await model.waitForRequests(1);
    // Pasted during the run (the terminal is in cooked mode, no bracketed paste): the terminal
    // echoes the lines, so once shown they wait in its input.
    await terminal.type("pasted one\rpasted two\r");
    at = await terminal.waitFor(/pasted two/, at);
    open();
    at = await terminal.waitFor(/agent> first done/, at);
    // At the prompt: both lines, not sent.
    at = await terminal.waitFor(/you> [^\n]*pasted one\r+\n {5}pasted two/, at);
    assert.equal(model.requests.length, 1);
    await terminal.type(" (both)\r");
    await terminal.waitFor(/agent> heard "pasted one\\npasted two \(both\)"/, at);
    assert.equal(model.requests.length, 2);
    await leave(terminal);
  } finally {
    await closed(terminal);
  }
});
