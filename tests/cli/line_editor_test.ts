import assert from "node:assert/strict";
import { openInput, ReadSuperseded } from "../../src/cli/input.ts";
import { type Key, KeyDecoder } from "../../src/cli/keys.ts";
import {
  EditBuffer,
  type EditorTerminal,
  HISTORY_LIMIT,
  type Layout,
  layout,
  type LayoutCache,
  LineEditor,
  type ScreenPosition,
} from "../../src/cli/line_editor.ts";
import { fakeIo } from "./_helpers.ts";
import { Screen } from "./_screen.ts";
import stringWidth from "fast-string-width";

/**
 * A terminal fed by the test: each `send` is one read; records raw-mode switches and output.
 * Its height is `rows` (0: unknown).
 */
function scriptedTerminal(columns = 80, rows = 0) {
  const resizeListeners = new Set<() => void>();
  const queue: Array<string | null> = [];
  const waiting: Array<(value: string | null) => void> = [];
  const raw: boolean[] = [];
  let output = "";
  const terminal: EditorTerminal = {
    read: (signal) =>
      new Promise((resolve, reject) => {
        if (queue.length > 0) return resolve(queue.shift()!);
        const onAbort = () => {
          waiting.splice(waiting.indexOf(resolve), 1);
          reject(signal!.reason);
        };
        signal?.addEventListener("abort", onAbort, { once: true });
        waiting.push((value) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(value);
        });
      }),
    ready: () =>
      Promise.resolve(queue.length > 0 && queue[0] !== null ? queue.shift()! : undefined),
    write: (text) => output += text,
    setRaw: (on) => raw.push(on),
    columns: () => columns,
    rows: () => rows,
    onResize: (listener) => {
      resizeListeners.add(listener);
      return () => resizeListeners.delete(listener);
    },
    close: () => Promise.resolve(),
  };
  return {
    terminal,
    raw,
    output: () => output,
    /** Gives the terminal a new width, as a SIGWINCH would tell. */
    resize(to: number) {
      columns = to;
      for (const listener of resizeListeners) listener();
    },
    listening: () => resizeListeners.size,
    /** Resolves once the editor waits for input (so what is sent next is typed at its prompt). */
    async reading() {
      while (waiting.length === 0) await new Promise((resolve) => setTimeout(resolve, 0));
    },
    send(...inputs: Array<string | null>) {
      for (const input of inputs) {
        const wake = waiting.shift();
        if (wake) wake(input);
        else queue.push(input);
      }
    },
  };
}

function decode(...chunks: string[]): Key[] {
  const decoder = new KeyDecoder();
  return chunks.flatMap((chunk) => decoder.push(chunk));
}

Deno.test("keys: arrows and Home/End in their CSI, SS3 and VT220 forms, modifiers by word", () => {
  assert.deepEqual(
    decode("\x1b[A\x1bOB\x1b[1~\x1b[4~\x1b[7~\x1b[8~\x1bOH\x1b[F\x1b[3~"),
    ["up", "down", "home", "end", "home", "end", "home", "end", "delete"].map((kind) => ({
      kind,
    })),
  );
  assert.deepEqual(decode("\x1b[1;5C\x1b[1;5D\x1b[1;3C\x1bb\x1bf\x1bd\x1b\x7f"), [
    { kind: "wordRight" },
    { kind: "wordLeft" },
    { kind: "wordRight" },
    { kind: "wordLeft" },
    { kind: "wordRight" },
    { kind: "killWordForward" },
    { kind: "killWordBack" },
  ]);
});

Deno.test("keys: unknown sequences and unbound control characters are dropped, not typed", () => {
  assert.deepEqual(decode("a\x1b[15~b\x1b[?1;2c\x00\x07c"), [{ kind: "text", text: "abc" }]);
  // Linux console F1-F5, rxvt's `$` forms, SS3 with a modifier.
  assert.deepEqual(decode("x\x1b[[A\x1b[3$\x1b[7$\x1bO5Dy"), [
    { kind: "text", text: "x" },
    { kind: "wordLeft" },
    { kind: "text", text: "y" },
  ]);
  assert.deepEqual(decode("\x1bOd\x1bOc"), [{ kind: "wordLeft" }, { kind: "wordRight" }]);
});

Deno.test("keys: a lone Escape is dropped; the key after it is not lost", () => {
  assert.deepEqual(decode("\x1b", "x"), [{ kind: "text", text: "x" }]);
  assert.deepEqual(decode("\x1b\x03"), [{ kind: "interrupt" }]);
  assert.deepEqual(decode("\x1b\x1b[D"), [{ kind: "left" }]);
});

Deno.test("keys: CR LF is one Enter, CR CR two; Alt-Enter is a line break", () => {
  assert.deepEqual(decode("a\r\n\r\r", "\x1b\r"), [
    { kind: "text", text: "a" },
    { kind: "enter" },
    { kind: "enter" },
    { kind: "enter" },
    { kind: "newline" },
  ]);
  // The LF of a CR LF split between reads is still the same Enter.
  assert.deepEqual(decode("x\r", "\ny"), [
    { kind: "text", text: "x" },
    { kind: "enter" },
    { kind: "text", text: "y" },
  ]);
});

Deno.test("keys: lines typed ahead outside raw mode (line feeds, one read) are one paste", () => {
  // Pasted or typed while the agent worked: the line discipline kept the lines for one read.
  assert.deepEqual(decode("line one\nline two\n"), [{ kind: "paste", text: "line one\nline two" }]);
  assert.deepEqual(decode("a\n\tb\x1b[Ac"), [{ kind: "paste", text: "a\n\tbc" }]);
  assert.deepEqual(decode("no end\nyet"), [{ kind: "paste", text: "no end\nyet" }]);
  // Nothing but empty lines: nothing.
  assert.deepEqual(decode("\n\n"), []);
  // One line and its Enter is what it was.
  assert.deepEqual(decode("one line\n"), [{ kind: "text", text: "one line" }, { kind: "enter" }]);
  // Typed in raw mode: Enter is CR (with or without the LF of CR LF), keys after it are typed.
  assert.deepEqual(decode("a\r\nb\rc"), [
    { kind: "text", text: "a" },
    { kind: "enter" },
    { kind: "text", text: "b" },
    { kind: "enter" },
    { kind: "text", text: "c" },
  ]);
  assert.deepEqual(decode("x\r", "\ny"), [
    { kind: "text", text: "x" },
    { kind: "enter" },
    { kind: "text", text: "y" },
  ]);
  // A bracketed paste is decoded as such, whatever line breaks it holds.
  assert.deepEqual(decode("\x1b[200~p\nq\x1b[201~\r"), [
    { kind: "paste", text: "p\nq" },
    { kind: "enter" },
  ]);
});

Deno.test("keys: sequences and pastes split anywhere between reads decode the same", () => {
  const input = "ab\x1b[D\x1b[200~p1\r\nq\x1b[Dz\x1b[201~\x1b[3~é\r";
  const whole = decode(input);
  assert.deepEqual(whole, [
    { kind: "text", text: "ab" },
    { kind: "left" },
    { kind: "paste", text: "p1\nqz" },
    { kind: "delete" },
    { kind: "text", text: "é" },
    { kind: "enter" },
  ]);
  for (let cut = 1; cut < input.length; cut++) {
    const split = decode(input.slice(0, cut), input.slice(cut));
    // Typed text may arrive in two pieces; joined, it is the same.
    const joined: Key[] = [];
    for (const key of split) {
      const last = joined.at(-1);
      if (key.kind === "text" && last?.kind === "text") last.text += key.text;
      else joined.push({ ...key });
    }
    assert.deepEqual(joined, whole, `cut at ${cut}`);
  }
});

Deno.test("keys: a paste keeps tabs and line breaks, drops escapes and other controls", () => {
  assert.deepEqual(decode("\x1b[200~a\tb\rc\x1b[31md\x07\x1b[201~"), [
    { kind: "paste", text: "a\tb\ncd" },
  ]);
});

Deno.test("keys: a mouse report left on by another program is dropped whole, even split", () => {
  // X10/normal reports (ESC [ M, button, column, row), and the SGR form (ESC [ < … M/m).
  const input = "a\x1b[M !!b\x1b[M#\x7f\x7fc\x1b[<0;12;5Md";
  const expected = [{ kind: "text", text: "abcd" }];
  for (let cut = 1; cut < input.length; cut++) {
    const keys = decode(input.slice(0, cut), input.slice(cut));
    assert.equal(keys.map((key) => key.kind === "text" ? key.text : key.kind).join(""), "abcd");
  }
  assert.deepEqual(decode(input), expected);
});

Deno.test("keys: Ctrl-C pressed in a paste whose end never came ends it and interrupts", () => {
  const decoder = new KeyDecoder();
  assert.deepEqual(decoder.push("\x1b[200~lost end"), []);
  assert.deepEqual(decoder.push("typed\r"), [], "without the end marker, keys go to the paste");
  assert.deepEqual(decoder.push("\x03"), [{ kind: "interrupt" }]);
  assert.deepEqual(decoder.push("next\r"), [{ kind: "text", text: "next" }, { kind: "enter" }]);
  // A Ctrl-C byte inside a paste's own burst is pasted text (dropped as a control character).
  assert.deepEqual(decode("\x1b[200~a\x03b\x1b[201~"), [{ kind: "paste", text: "ab" }]);
  assert.deepEqual(decode("\x1b[200~a", "\x03b\x1b[201~"), [{ kind: "paste", text: "ab" }]);
});

Deno.test("edit buffer: moves and deletes by whole characters (combined, wide, emoji)", () => {
  const line = new EditBuffer();
  line.insert("e\u0301👍🏽世");
  line.apply({ kind: "backspace" });
  assert.equal(line.text, "e\u0301👍🏽");
  line.apply({ kind: "left" });
  assert.equal(line.cursor, 2);
  line.apply({ kind: "backspace" });
  assert.equal(line.text, "👍🏽");
  assert.equal(line.cursor, 0);
  line.apply({ kind: "delete" });
  assert.equal(line.text, "");
});

Deno.test("edit buffer: word moves keep accents and vowel signs with their letters", () => {
  const line = new EditBuffer();
  line.insert("cafe\u0301 ok");
  line.cursor = 0;
  line.apply({ kind: "wordRight" });
  assert.equal(line.cursor, "cafe\u0301".length);
  line.insert("!");
  assert.equal(line.text, "cafe\u0301! ok");
  line.cursor = 0;
  line.apply({ kind: "killWordForward" });
  assert.equal(line.text, "! ok");
  const hindi = new EditBuffer();
  hindi.insert("नमस्ते दुनिया");
  hindi.apply({ kind: "wordLeft" });
  assert.equal(hindi.cursor, "नमस्ते ".length);
  hindi.apply({ kind: "wordLeft" });
  assert.equal(hindi.cursor, 0);
});

Deno.test("edit buffer: words, kills, and Home/End within a line of a multi-line text", () => {
  const line = new EditBuffer();
  line.insert("first line\nsecond  word here");
  line.apply({ kind: "killWordBack" });
  assert.equal(line.text, "first line\nsecond  word ");
  line.apply({ kind: "wordLeft" });
  line.apply({ kind: "wordLeft" });
  assert.equal(line.cursor, "first line\n".length);
  line.apply({ kind: "killWordForward" });
  assert.equal(line.text, "first line\n  word ");
  line.apply({ kind: "end" });
  assert.equal(line.cursor, "first line\n  word ".length);
  line.apply({ kind: "home" });
  assert.equal(line.cursor, "first line\n".length);
  line.apply({ kind: "left" });
  line.apply({ kind: "killStart" });
  assert.equal(line.text, "\n  word ");
  assert.equal(line.cursor, 0);
  line.apply({ kind: "home" });
  assert.equal(line.cursor, 0);
  line.apply({ kind: "killEnd" });
  assert.equal(line.text, "\n  word ");
  line.apply({ kind: "right" });
  line.apply({ kind: "killEnd" });
  assert.equal(line.text, "\n");
});

Deno.test("edit buffer: Up and Down move between the lines of a text, keeping the column", () => {
  const line = new EditBuffer();
  line.set("漢字ab\n\tx\nxyz");
  // From the end of "xyz" (column 3): "\tx" is 5 columns wide, so to column 3 would be inside
  // the tab: the cursor stays before it.
  assert.equal(line.moveLine(-1), true);
  assert.equal(line.cursor, "漢字ab\n".length);
  // Up again aims at column 3 still: after 漢, as 字 would reach column 4.
  assert.equal(line.moveLine(-1), true);
  assert.equal(line.cursor, 1);
  assert.equal(line.moveLine(-1), false);
  assert.equal(line.cursor, 1);
  // Down, still aiming at column 3: the tab takes 4 columns, so before it.
  assert.equal(line.moveLine(1), true);
  assert.equal(line.cursor, "漢字ab\n".length);
  line.cursor = "漢字ab\n\tx".length; // column 5
  assert.equal(line.moveLine(1), true);
  assert.equal(line.cursor, line.text.length);
  assert.equal(line.moveLine(1), false);
  // A wide character across the column: the cursor stops before it.
  line.set("漢字\nabc");
  line.cursor = "漢字\na".length;
  line.moveLine(-1);
  assert.equal(line.cursor, 0);
  // Through a shorter line the column is kept, until something else moves the cursor.
  line.set("abcdef\nab\nabcdef");
  line.cursor = "abcdef\nab\nabcd".length;
  line.moveLine(-1);
  assert.equal(line.cursor, "abcdef\nab".length);
  line.moveLine(-1);
  assert.equal(line.cursor, "abcd".length);
  line.apply({ kind: "left" }); // column 3 now
  line.moveLine(1);
  line.moveLine(1);
  assert.equal(line.cursor, "abcdef\nab\nabc".length);
});

Deno.test("layout: a wide character that does not fit goes to the next row, as terminals wrap it", () => {
  // "> " + "abc" fills 5 of 6 columns; 世 (2 wide) cannot start in the last one.
  const shown = layout("> ", "abc世x", 4, 6);
  assert.equal(shown.text, "> abc 世x");
  assert.deepEqual(shown.cursor, { row: 1, column: 2 });
  assert.deepEqual(shown.end, { row: 1, column: 3 });
  // The cursor on 世 is where it is drawn, not in the empty last column.
  assert.deepEqual(layout("> ", "abc世x", 3, 6).cursor, { row: 1, column: 0 });
});

Deno.test("layout: line breaks indent by the prompt's width; tabs are spaces", () => {
  const shown = layout("you> ", "a\n\tb", 1, 80);
  assert.equal(shown.text, "you> a\r\n         b");
  assert.deepEqual(shown.cursor, { row: 0, column: 6 });
  assert.deepEqual(shown.end, { row: 1, column: 10 });
});

Deno.test("layout: a row filled exactly puts the end and a cursor there at the next row's start", () => {
  const shown = layout("ab", "cd", 2, 4);
  assert.equal(shown.text, "abcd\r\n");
  assert.deepEqual(shown.cursor, { row: 1, column: 0 });
  assert.deepEqual(shown.end, { row: 1, column: 0 });
  assert.equal(shown.filled, true);
  // With the cursor inside, it stays where its character is.
  assert.deepEqual(layout("ab", "cd", 1, 4).cursor, { row: 0, column: 3 });
  assert.equal(layout("ab", "c", 1, 4).filled, false);
  // An empty last line after a line break is a row of its own, not a filled one.
  assert.equal(layout("", "abcd\n", 5, 4).filled, false);
});

Deno.test("editor: a line that fills its last row exactly is not followed by a blank row", async () => {
  const t = scriptedTerminal(4);
  const editor = new LineEditor(t.terminal);
  /** The line breaks written after the last draw of `shown`. */
  const breaksAfter = (shown: string) => {
    const output = t.output();
    return output.slice(output.lastIndexOf(shown) + shown.length).split("\r\n").length - 1;
  };
  t.send("cd", "\r");
  assert.equal(await editor.readLine("ab"), "cd");
  // The last draw wrapped to the next row's start (its own line break); Enter adds none there.
  assert.equal(breaksAfter("abcd\r\n"), 0, JSON.stringify(t.output()));
  t.send("c", "\r");
  assert.equal(await editor.readLine("ab"), "c");
  assert.equal(breaksAfter("abc"), 1, JSON.stringify(t.output()));
  t.send("cd", "\x03", null);
  assert.equal(await editor.readLine("ab"), null);
  // Ctrl-C's mark goes on that fresh row, not below a blank one.
  assert.match(t.output(), /abcd\r\n\r\^C\r\n/);
});

Deno.test("editor: raw mode on while a line is read, off after, also when the read is aborted", async () => {
  const t = scriptedTerminal();
  const editor = new LineEditor(t.terminal);
  t.send("ok\r");
  assert.equal(await editor.readLine("> "), "ok");
  assert.deepEqual(t.raw, [true, false]);
  const stop = new AbortController();
  const pending = editor.readLine("> ", { signal: stop.signal });
  t.send("typed but not sent");
  await new Promise((resolve) => setTimeout(resolve, 0));
  stop.abort(new Error("timed out"));
  await assert.rejects(pending, /timed out/);
  assert.deepEqual(t.raw, [true, false, true, false]);
  // The text of the aborted read is gone: the next line starts empty.
  const next = editor.readLine("> ");
  await t.reading();
  t.send("next\r");
  assert.equal(await next, "next");
});

Deno.test("editor: lines typed ahead outside raw mode wait at the prompt as one message", async () => {
  const t = scriptedTerminal();
  const editor = new LineEditor(t.terminal);
  t.send("first\nsecond\n"); // what the terminal held when the prompt came
  let answered = false;
  const read = editor.readLine("> ").finally(() => answered = true);
  await t.reading();
  // Drawn as a line of two rows, the cursor at its end; not sent.
  assert.ok(t.output().endsWith("> first\r\n  second\r\x1b[8C"), JSON.stringify(t.output()));
  assert.equal(answered, false);
  t.send(" and more", "\r");
  assert.equal(await read, "first\nsecond and more");
});

Deno.test("editor: keys after Enter in the same read are kept for the next line", async () => {
  const t = scriptedTerminal();
  const editor = new LineEditor(t.terminal);
  t.send("one\rtwo\r\x1b[A\r");
  assert.equal(await editor.readLine("> "), "one");
  assert.equal(await editor.readLine("> "), "two");
  assert.equal(await editor.readLine("> "), "two");
});

Deno.test("editor: after a question ends unanswered, what was typed up to Enter before the next read is dropped", async () => {
  const t = scriptedTerminal();
  const editor = new LineEditor(t.terminal);
  const timeout = new AbortController();
  const question = editor.readLine("Approve once? [y/N] ", {
    signal: timeout.signal,
    remember: false,
  });
  timeout.abort(new Error("timed out"));
  await assert.rejects(question, /timed out/);
  // Typed while nothing reads (the run goes on): the late answer, then the start of a message.
  t.send("y", "\r", "next");
  const line = editor.readLine("you> ");
  t.send("\r");
  assert.equal(await line, "next");
  assert.match(t.output(), /\(dropped "y", typed after the previous question had ended\)\r\n/);

  // Type-ahead after an answered question is kept whole, Enter included.
  t.send("a\rb\r");
  assert.equal(await editor.readLine("you> "), "a");
  assert.equal(await editor.readLine("you> "), "b");
  assert.equal(t.output().match(/dropped/g)?.length, 1);

  // Keys that come once the next prompt is shown are its own, even after an unanswered one.
  const again = new AbortController();
  const second = editor.readLine("Approve once? [y/N] ", { signal: again.signal, remember: false });
  again.abort(new Error("timed out"));
  await assert.rejects(second, /timed out/);
  const fresh = editor.readLine("Approve once? [y/N] ", { remember: false });
  await t.reading();
  t.send("y\r");
  assert.equal(await fresh, "y");
  assert.equal(t.output().match(/dropped/g)?.length, 1);
});

Deno.test("editor: Up and Down walk the history and give back the line being written", async () => {
  const t = scriptedTerminal();
  const editor = new LineEditor(t.terminal);
  t.send("a\r", "b\r", "b\r", "  \r");
  for (let i = 0; i < 4; i++) await editor.readLine("> ");
  // Repeats and blank lines are not kept.
  assert.deepEqual(editor.history, ["a", "b"]);
  t.send("draft\x1b[A\x1b[A\x1b[A\x1b[B\x1b[B\x1b[B!\r");
  assert.equal(await editor.readLine("> "), "draft!");
  t.send("\x1b[A\x1b[A\x1b[A-\r");
  assert.equal(await editor.readLine("> "), "a-");
  t.send("secret\r");
  assert.equal(await editor.readLine("? ", { remember: false }), "secret");
  assert.deepEqual(editor.history, ["a", "b", "draft!", "a-"]);
});

Deno.test("editor: in a message of several lines Up and Down move between its lines, then through the history", async () => {
  const t = scriptedTerminal();
  const editor = new LineEditor(t.terminal);
  t.send("earlier\r");
  await editor.readLine("> ");
  // Alt-Enter breaks the line; Up goes to the line above at the same column, Down back.
  t.send("abcdef\x1b\rxy\x1b[AX\x1b[BY\r");
  assert.equal(await editor.readLine("> "), "abXcdef\nxyY");
  // From the first line Up recalls the message before; from its last line Down comes back.
  t.send("one\x1b\rtwo\x1b[A\x1b[A\x1b[B\x1b[B!\r");
  assert.equal(await editor.readLine("> "), "one\ntwo!");
  // A recalled message of several lines is walked line by line too.
  t.send("\x1b[A\x1b[A\x1b[A\r");
  assert.equal(await editor.readLine("> "), "abXcdef\nxyY");
});

Deno.test("editor: a history store's lines are recalled, and what is remembered is kept there", async () => {
  const t = scriptedTerminal();
  const kept: string[] = [];
  const editor = new LineEditor(t.terminal, {
    history: { load: () => ["from an earlier session", "the last one"], add: (l) => kept.push(l) },
  });
  assert.deepEqual(editor.history, ["from an earlier session", "the last one"]);
  t.send("\x1b[A\x1b[A!\r");
  assert.equal(await editor.readLine("> "), "from an earlier session!");
  // Answers to questions, repeats and blank lines are not kept, here or in the store.
  t.send("yes\r");
  assert.equal(await editor.readLine("? ", { remember: false }), "yes");
  t.send("\x1b[A\r", " \r");
  assert.equal(await editor.readLine("> "), "from an earlier session!");
  assert.equal(await editor.readLine("> "), " ");
  assert.deepEqual(kept, ["from an earlier session!"]);
});

Deno.test("editor: a store holding more than the editor keeps gives only its newest lines", () => {
  const t = scriptedTerminal();
  const many = Array.from({ length: HISTORY_LIMIT + 20 }, (_, i) => `line ${i}`);
  const editor = new LineEditor(t.terminal, { history: { load: () => many, add: () => {} } });
  assert.equal(editor.history.length, HISTORY_LIMIT);
  assert.equal(editor.history[0], "line 20");
  assert.equal(editor.history.at(-1), `line ${HISTORY_LIMIT + 19}`);
});

Deno.test("editor: Ctrl-D ends input on an empty line and deletes the next character otherwise", async () => {
  const t = scriptedTerminal();
  const editor = new LineEditor(t.terminal);
  t.send("abc\x1b[D\x1b[D\x04\r");
  assert.equal(await editor.readLine("> "), "ac");
  t.send("\x04");
  assert.equal(await editor.readLine("> "), null);
  // The end of the input stream: what was typed is the last line, then null.
  t.send("partial", null);
  assert.equal(await editor.readLine("> "), "partial");
  t.send(null);
  assert.equal(await editor.readLine("> "), null);
});

Deno.test("editor: Ctrl-C clears a line with text; on an empty line it interrupts", async () => {
  const t = scriptedTerminal();
  let interrupts = 0;
  const editor = new LineEditor(t.terminal, { interrupt: () => interrupts++ });
  t.send("oops\x03");
  const pending = editor.readLine("> ");
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(interrupts, 0);
  t.send("\x03", "fine\r");
  assert.equal(await pending, "fine");
  assert.equal(interrupts, 1);
  assert.equal(t.output().split("^C").length - 1, 2);

  // An interrupt that stops what is waiting for the answer aborts the read.
  const stop = new AbortController();
  const stopping = new LineEditor(t.terminal, { interrupt: () => stop.abort(new Error("stop")) });
  t.send("\x03");
  await assert.rejects(stopping.readLine("> ", { signal: stop.signal }), /stop/);
});

Deno.test("editor: the screen is redrawn from the prompt's first row on a narrow terminal", async () => {
  const t = scriptedTerminal(10);
  const editor = new LineEditor(t.terminal);
  t.send("abcdefghijkl", "\x01", "\r");
  assert.equal(await editor.readLine("> "), "abcdefghijkl");
  const output = t.output();
  // After the first read the cursor was on the second row: Home goes up one row to redraw.
  assert.ok(output.includes("\x1b[1A\r\x1b[J> abcdefghijkl"));
  // And puts the cursor after the prompt on the first row.
  assert.ok(output.includes("> abcdefghijkl\x1b[1A\r\x1b[2C"));
});

Deno.test("editor: a resize redraws the line from where the rewrapped prompt now starts", async () => {
  const t = scriptedTerminal(10);
  const editor = new LineEditor(t.terminal);
  const read = editor.readLine("> ");
  t.send("abcdefghijklmnopq"); // "> " and 17 characters: two rows at this width
  while (!t.output().includes("pq")) await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(t.listening(), 1);
  // Narrower: the terminal rewraps the 19 columns to four rows of 5, the cursor on the fourth:
  // the redraw goes up three rows, not the one row it was on before.
  let before = t.output().length;
  t.resize(5);
  assert.equal(t.output().slice(before), "\x1b[3A\r\x1b[J> abcdefghijklmnopq\r\x1b[4C");
  // Wider: the rewrapped line is on one row, the cursor on it: no row up.
  before = t.output().length;
  t.resize(40);
  assert.equal(t.output().slice(before), "\r\x1b[J> abcdefghijklmnopq\r\x1b[19C");
  before = t.output().length;
  t.resize(7);
  assert.equal(t.output().slice(before), "\x1b[2A\r\x1b[J> abcdefghijklmnopq\r\x1b[5C");
  t.send("\r");
  assert.equal(await read, "abcdefghijklmnopq");
  // Between reads the editor does not listen: nothing is drawn on a resize then.
  assert.equal(t.listening(), 0);
  before = t.output().length;
  t.resize(10);
  assert.equal(t.output().length, before);
});

Deno.test("editor: a question of several lines writes the first ones once and redraws the last", async () => {
  const t = scriptedTerminal();
  const editor = new LineEditor(t.terminal);
  t.send("a", "b", "\r");
  assert.equal(await editor.readLine("Project\nname: "), "ab");
  assert.equal(t.output().split("Project").length - 1, 1, JSON.stringify(t.output()));
  assert.ok(t.output().includes("Project\r\n"));
});

Deno.test("input: a question asked while another waits ends it first; they never read at once", async () => {
  const t = scriptedTerminal();
  const io = {
    ...fakeIo("/nonexistent").io,
    editorTerminal: () => t.terminal,
  };
  const input = openInput(io);
  assert.equal(input.editing, true);
  const stale = input.ask("Fill in the form? ", { to: "err", remember: false });
  await new Promise((resolve) => setTimeout(resolve, 0));
  const prompt = input.ask("you> ", { to: "out" });
  await assert.rejects(stale, ReadSuperseded);
  t.send("hello\r");
  assert.equal(await prompt, "hello");
  // Raw mode went off for the stale question before it went on for the new one.
  assert.deepEqual(t.raw, [true, false, true, false]);
  await input.idle();
});

Deno.test("input: without the editor, keys a terminal sends as escape sequences are not text", async () => {
  const fake = fakeIo("/nonexistent", {
    stdinIsTerminal: true,
    // Left, Up, Home (SS3), F5, Alt-b, a bell; the tab stays.
    stdin: "abc\x1b[D\x1b[Ad\x1bOH\x1b[15~\x1bb\x07\tok\ny\x1b[B\n",
  });
  const input = openInput(fake.io);
  assert.equal(input.editing, false);
  assert.equal(await input.ask("you> ", { to: "out" }), "abcd\tok");
  assert.equal(await input.ask("Approve once? [y/N] ", { to: "err", remember: false }), "y");
  assert.equal(await input.ask("you> ", { to: "out" }), null);
  await input.close();
  // Piped lines are taken as they are.
  const piped = openInput(fakeIo("/nonexistent", { stdin: "a\x1b[Db\n" }).io);
  assert.equal(await piped.ask("you> ", { to: "out" }), "a\x1b[Db");
  await piped.close();
});

Deno.test("input: without the editor, a line typed while the agent works is shown after its prompt", async () => {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const stream = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
  const type = (text: string) => controller.enqueue(new TextEncoder().encode(text));
  const fake = fakeIo("/nonexistent", { stdinIsTerminal: true });
  const input = openInput({ ...fake.io, stdin: () => stream });
  const first = input.ask("you> ", { to: "out" });
  type("one\n"); // typed at the prompt: the terminal echoed it there
  assert.equal(await first, "one");
  input.readAhead(); // the agent works on "one"
  type("two\n"); // the terminal echoed it among the agent's output
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(await input.ask("you> ", { to: "out" }), "two");
  const third = input.ask("you> ", { to: "out" });
  type("three\n");
  assert.equal(await third, "three");
  assert.equal(fake.stdout(), "you> you> two\nyou> ");
  controller.close();
  await input.close();
});

Deno.test("layout: zero-width spaces and joiners take no column", () => {
  assert.deepEqual(layout("> ", "ab\u200bcd\u200bef", 5, 80).cursor, { row: 0, column: 6 });
});

Deno.test("editor: Ctrl-Z stops the program in cooked mode below the line, then redraws it", async () => {
  const t = scriptedTerminal();
  const events: string[] = [];
  let shownWhenStopped = "";
  const terminal: EditorTerminal = {
    ...t.terminal,
    setRaw: (on) => events.push(on ? "raw" : "cooked"),
    suspend: () => {
      events.push("stopped");
      shownWhenStopped = t.output();
    },
  };
  const editor = new LineEditor(terminal);
  t.send("abc\x1b[D\x1a", "X\r");
  assert.equal(await editor.readLine("> "), "abXc", "the cursor is where it was");
  assert.deepEqual(events, ["raw", "cooked", "stopped", "raw", "cooked"]);
  // The whole line was drawn, the cursor at its end, then put below it; bracketed pastes off.
  assert.ok(
    shownWhenStopped.endsWith("> abc\r\x1b[5C\r\n\x1b[?2004l"),
    JSON.stringify(shownWhenStopped),
  );
  // Continued: pastes back on, the line drawn again from the prompt.
  const after = t.output().slice(shownWhenStopped.length);
  assert.ok(after.startsWith("\x1b[?2004h"), JSON.stringify(after));
  assert.ok(after.includes("> abc"), JSON.stringify(after));

  // Without job control (no `suspend`), Ctrl-Z does nothing.
  const plain = scriptedTerminal();
  plain.send("a\x1ab\r");
  assert.equal(await new LineEditor(plain.terminal).readLine("> "), "ab");
  assert.deepEqual(plain.raw, [true, false]);
});

/** `text` cut into rows of `columns` characters, as a terminal wraps it. */
function wrapped(text: string, columns: number): string[] {
  return text.match(new RegExp(`.{1,${columns}}`, "g")) ?? [];
}

Deno.test("editor: a line taller than the screen is edited in a window; nothing scrolls off until it is sent", async () => {
  const t = scriptedTerminal(10, 5);
  const screen = new Screen(5, 10);
  screen.write("earlier\r\n");
  let shown = 0;
  const show = async () => {
    await t.reading(); // all sent is drawn
    screen.write(t.output().slice(shown));
    shown = t.output().length;
  };
  const editor = new LineEditor(t.terminal);
  const read = editor.readLine("> ");
  const text = "abcdefghijklmnopqrstuvwxyz".repeat(4).slice(0, 93); // "> " and 93: ten rows
  const rows = wrapped(`> ${text}`, 10);
  assert.equal(rows.length, 10);
  for (const chunk of wrapped(text, 7)) { // a draw after each chunk, as typing does
    t.send(chunk);
    await show();
  }
  // Four rows (the screen less one) show the end of the line, the cursor after it; the row
  // above them and everything before stay where they were.
  assert.deepEqual(screen.lines, ["earlier", ...rows.slice(6)]);
  assert.deepEqual(screen.cursor, { row: 4, column: 5 });
  assert.deepEqual(screen.scrollback, []);
  // Moving the cursor up moves the window only as far as the cursor goes past it.
  t.send("\x1b[D".repeat(15)); // to row 8 of the line: still in the window
  await show();
  assert.deepEqual(screen.lines, ["earlier", ...rows.slice(6)]);
  assert.deepEqual(screen.cursor, { row: 3, column: 0 });
  t.send("\x1b[D".repeat(30)); // to row 5: the window's first row
  await show();
  assert.deepEqual(screen.lines, ["earlier", ...rows.slice(5, 9)]);
  assert.deepEqual(screen.cursor, { row: 1, column: 0 });
  t.send("\x01"); // Home: the first row, with the prompt
  await show();
  assert.deepEqual(screen.lines, ["earlier", ...rows.slice(0, 4)]);
  assert.deepEqual(screen.cursor, { row: 1, column: 2 });
  t.send("X"); // typed at the start
  await show();
  assert.equal(screen.lines[1], `> X${text.slice(0, 7)}`);
  assert.deepEqual(screen.scrollback, []);
  // Once sent, the whole line is written out, once: above the screen, the scrollback holds it.
  t.send("\r");
  assert.equal(await read, `X${text}`);
  screen.write(t.output().slice(shown));
  const sent = wrapped(`> X${text}`, 10);
  assert.equal(screen.transcript, ["earlier", ...sent].join("\n"));
  assert.deepEqual(screen.cursor, { row: 4, column: 0 });
});

Deno.test("editor: a window over a line of several lines starts its rows at their indent", async () => {
  const t = scriptedTerminal(10, 4);
  const screen = new Screen(4, 10);
  const editor = new LineEditor(t.terminal);
  const read = editor.readLine("> ");
  t.send("\x1b[200~one\ntwo\nthree\nfour\nfive\x1b[201~");
  await t.reading();
  screen.write(t.output());
  assert.deepEqual(screen.lines, ["  three", "  four", "  five", ""]);
  assert.deepEqual(screen.cursor, { row: 2, column: 6 });
  assert.deepEqual(screen.scrollback, []);
  const before = t.output().length;
  t.send("\r");
  assert.equal(await read, "one\ntwo\nthree\nfour\nfive");
  screen.write(t.output().slice(before));
  assert.equal(screen.transcript, "> one\n  two\n  three\n  four\n  five");
});

Deno.test("editor: a resize of a line in a window goes up at most the screen's rows, scrolling nothing", async () => {
  const t = scriptedTerminal(10, 5);
  const screen = new Screen(5, 10);
  const editor = new LineEditor(t.terminal);
  const read = editor.readLine("> ");
  t.send("x".repeat(60)); // seven rows at 10 columns: a window of four
  await t.reading();
  screen.write(t.output());
  assert.deepEqual(screen.cursor, { row: 3, column: 2 });
  const before = t.output().length;
  // Rewrapped, the cursor would be on row 7 of the line; the screen has 5 rows (and, as xterm,
  // does not rewrap).
  t.resize(8);
  screen.resize(8);
  const redraw = t.output().slice(before);
  assert.ok(redraw.startsWith("\x1b[4A\r\x1b[J"), JSON.stringify(redraw));
  screen.write(redraw);
  assert.deepEqual(screen.scrollback, []);
  // The window's four rows from the top, the cursor at the end ("> " and 60: 7 rows and 6).
  assert.deepEqual(screen.lines, ["xxxxxxxx", "xxxxxxxx", "xxxxxxxx", "xxxxxx", ""]);
  assert.deepEqual(screen.cursor, { row: 3, column: 6 });
  t.send("\r");
  assert.equal(await read, "x".repeat(60));
});

/**
 * The layout as first written, one grapheme at a time (no fast path for ASCII runs): what
 * {@linkcode layout} must give for any text.
 */
function referenceLayout(
  prompt: string,
  text: string,
  cursor: number,
  columns: number,
): Layout {
  let row = 0;
  let column = 0;
  let out = "";
  let cursorAt: ScreenPosition | undefined;
  const rows = [{ start: 0, end: 0 }];
  /** Ends the row at `end`, the next row starting at `start` (after a line break, when any). */
  const nextRow = (end: number, start: number) => {
    rows[row].end = end;
    rows.push({ start, end: start });
    row++;
    column = 0;
  };
  /** Goes to the next row when a character `width` wide does not fit, as the terminal will. */
  const wrapFor = (width: number) => {
    if (width === 0 || column + width <= columns) return;
    if (column < columns) out += " ".repeat(columns - column);
    nextRow(out.length, out.length);
  };
  const put = (shown: string, width: number) => {
    wrapFor(width);
    out += shown;
    column += width;
  };
  const normalized = (): ScreenPosition =>
    column >= columns ? { row: row + 1, column: 0 } : { row, column };
  for (const { segment } of SEGMENTER.segment(prompt)) put(segment, widthOf(segment));
  const indent = " ".repeat(Math.min(column, Math.max(columns - 1, 0)));
  let index = 0;
  for (const { segment } of SEGMENTER.segment(text)) {
    const lineBreak = segment === "\n" || segment === "\r\n";
    const [shown, width] = lineBreak
      ? [segment, 0]
      : segment === "\t"
      ? [TAB, TAB.length]
      : [segment, widthOf(segment)];
    wrapFor(width);
    if (index === cursor) cursorAt = normalized();
    index += segment.length;
    if (lineBreak) {
      const end = out.length;
      out += "\r\n";
      nextRow(end, out.length);
      out += indent;
      column = indent.length;
      continue;
    }
    put(shown, width);
  }
  if (cursorAt === undefined) cursorAt = normalized();
  const filled = column >= columns;
  if (filled) {
    const end = out.length;
    out += "\r\n";
    nextRow(end, out.length);
  }
  rows[row].end = out.length;
  return { text: out, cursor: cursorAt, end: { row, column }, filled, rows };
}

const SEGMENTER = new Intl.Segmenter(undefined, { granularity: "grapheme" });
const ZERO_WIDTH = /^[\u200b-\u200f\u2060-\u2064\ufeff]+$/;
const TAB = "    ";

function widthOf(character: string): number {
  return ZERO_WIDTH.test(character) ? 0 : stringWidth(character);
}

Deno.test("layout: with a cache, a line with text added at its end is laid out from before its last character", () => {
  const cache: LayoutCache = {};
  layout("> ", "the quick brown fox jumps", 25, 10, cache);
  assert.equal(cache.checkpoint?.prefix, "the quick brown fox jump");
  assert.deepEqual([cache.checkpoint.row, cache.checkpoint.column], [2, 6]);
  // The last character is "e" with a combining accent: the checkpoint is before both.
  layout("> ", "the quick brown fox jumpse\u0301", 27, 10, cache);
  assert.equal(cache.checkpoint?.prefix, "the quick brown fox jumps");
  // Nothing to go on from: no checkpoint.
  layout("> ", "", 0, 10, cache);
  assert.equal(cache.checkpoint, undefined);
});

Deno.test("layout: runs of ASCII are laid out as character by character, next to any other text", () => {
  // Pieces a run of ASCII can meet: characters that combine with the one before them (an accent,
  // a variation selector and keycap), wide ones, emoji with a skin tone, zero-width ones, tabs
  // and both line endings.
  const pieces = [
    "a",
    "bc",
    " ",
    "xyz0123",
    "the quick brown fox",
    "e\u0301",
    "\u0301",
    "1\ufe0f\u20e3",
    "#\u20e3",
    "世",
    "👍🏽",
    "\u200b",
    "\t",
    "\n",
    "\r\n",
    "é",
    "~",
    "ab\u200dcd",
  ];
  let seed = 7;
  const random = (below: number) => {
    seed = (seed * 48_271) % 2_147_483_647; // MINSTD: the same texts on every run
    return seed % below;
  };
  const texts = [
    // A long run ends where a character combines with its last one.
    "the quick brown fox1\ufe0f\u20e3 and more",
    "the quick brown foxe\u0301 and more",
    "the quick brown fox#\u20e3",
    "世界 the quick brown fox jumps\tover\r\nthe lazy dog 👍🏽",
  ];
  for (let round = 0; round < 400; round++) {
    let text = "";
    for (let count = random(14); count > 0; count--) text += pieces[random(pieces.length)];
    texts.push(text);
  }
  for (const text of texts) {
    const columns = 2 + random(9);
    const prompt = ["> ", "", "you> ", "世> "][random(4)];
    const boundaries = [...SEGMENTER.segment(text)].map((s) => s.index).concat(text.length);
    for (const cursor of boundaries) {
      assert.deepEqual(
        layout(prompt, text, cursor, columns),
        referenceLayout(prompt, text, cursor, columns),
        JSON.stringify({ prompt, text, cursor, columns }),
      );
    }
    // Laid out as it grows, one code point at a time (a read may end inside a character), with
    // one cache: the same as laid out whole. Now and then the cursor is elsewhere, or the text
    // shrinks, and the cache must not be used.
    const cache: LayoutCache = {};
    const codePoints = [...text];
    for (let length = 0; length <= codePoints.length; length++) {
      let shown = codePoints.slice(0, length).join("");
      let cursor = shown.length;
      const odd = random(8);
      if (odd === 0) cursor = boundaries.filter((at) => at < shown.length).at(-1) ?? 0;
      if (odd === 1) shown = codePoints.slice(0, length - 1).join("");
      cursor = Math.min(cursor, shown.length);
      assert.deepEqual(
        layout(prompt, shown, cursor, columns, cache),
        referenceLayout(prompt, shown, cursor, columns),
        JSON.stringify({ prompt, shown, cursor, columns }),
      );
    }
  }
});
