/** `<home>/chat_history`: what `agent chat` keeps for Up/Down recall across sessions. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ChatHistoryFile } from "../../src/cli/chat_history.ts";

async function tempFile(): Promise<string> {
  return join(await Deno.makeTempDir(), "chat_history");
}

Deno.test("chat history: no file is no history; entries come back as written, multi-line ones whole", async () => {
  const path = await tempFile();
  const warnings: string[] = [];
  const history = new ChatHistoryFile(path, (w) => warnings.push(w));
  assert.deepEqual(history.load(), []);
  const entries = ["first", "two\nlines", 'quotes " and \\ backslashes', "世界👍🏽", "trailing  "];
  for (const entry of entries) history.add(entry);
  assert.deepEqual(new ChatHistoryFile(path, (w) => warnings.push(w)).load(), entries);
  assert.equal(Deno.readTextFileSync(path).split("\n").length, entries.length + 1, "one per line");
  assert.equal(Deno.statSync(path).mode! & 0o777, 0o600, "it holds what was typed");
  assert.deepEqual(warnings, []);
});

Deno.test("chat history: a message with a leading space or tab, or a blank one, is not written", async () => {
  const path = await tempFile();
  const history = new ChatHistoryFile(path, () => assert.fail("no warning"));
  history.add(" my password is hunter2");
  history.add("\tanother");
  history.add("   ");
  history.add("kept");
  assert.deepEqual(history.load(), ["kept"]);
  assert.doesNotMatch(Deno.readTextFileSync(path), /hunter2|another/);
});

Deno.test("chat history: torn or hand-edited lines are skipped, not the whole file", async () => {
  const path = await tempFile();
  Deno.writeTextFileSync(
    path,
    '"one"\n{"not":"a string"}\nnot json\n42\n""\n"two"\n"torn at the en',
  );
  const history = new ChatHistoryFile(path, () => assert.fail("no warning"));
  assert.deepEqual(history.load(), ["one", "two"]);
  // An entry added after a torn last line (a crash mid-write) starts a line of its own.
  Deno.writeTextFileSync(path, '"one"\n"torn at the en');
  const next = new ChatHistoryFile(path, () => assert.fail("no warning"));
  assert.deepEqual(next.load(), ["one"]);
  next.add("three");
  next.add("four");
  assert.deepEqual(next.load(), ["one", "three", "four"]);
  assert.equal(Deno.readTextFileSync(path), '"one"\n"torn at the en\n"three"\n"four"\n');
});

Deno.test("chat history: only the newest entries are read; the file is cut back once it holds twice as many", async () => {
  const path = await tempFile();
  const history = new ChatHistoryFile(path, () => assert.fail("no warning"), 3);
  for (let i = 1; i <= 5; i++) history.add(`m${i}`);
  assert.deepEqual(history.load(), ["m3", "m4", "m5"]);
  assert.equal(Deno.readTextFileSync(path).trim().split("\n").length, 5, "not cut back yet");
  history.add("m6");
  assert.deepEqual(history.load(), ["m4", "m5", "m6"]);
  assert.equal(Deno.readTextFileSync(path), '"m4"\n"m5"\n"m6"\n');
  assert.equal(Deno.statSync(path).mode! & 0o777, 0o600);
});

Deno.test("chat history: a file that cannot be read or written is one warning, naming it; the session goes on", async () => {
  const dir = await Deno.makeTempDir();
  const folder = join(dir, "chat_history");
  Deno.mkdirSync(folder);
  const warnings: string[] = [];
  const history = new ChatHistoryFile(folder, (w) => warnings.push(w));
  assert.deepEqual(history.load(), []);
  history.add("one");
  history.add("two");
  assert.equal(warnings.length, 1, warnings.join("\n"));
  assert.ok(warnings[0].startsWith(`${folder} cannot be read (`), warnings[0]);
  assert.match(warnings[0], /messages are recalled in this session only$/);

  const missing = join(dir, "no-such-folder", "chat_history");
  const unwritable = new ChatHistoryFile(missing, (w) => warnings.push(w));
  unwritable.add("one");
  unwritable.add("two");
  assert.equal(warnings.length, 2);
  assert.ok(warnings[1].startsWith(`${missing} cannot be written (`), warnings[1]);
});
