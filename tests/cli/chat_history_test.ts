/** `<home>/chat_history`: what `agent chat` keeps for Up/Down recall across sessions. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ChatHistoryFile } from "../../src/cli/chat_history.ts";
import { waitUntil } from "../e2e/_gateway.ts";
import { editLockWaiters, holdEditLock } from "../fixtures/edit_lock_holder.ts";

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

/** Another `agent chat`: runs `code` with `history`, the ChatHistoryFile of `path` (limit 3). */
function otherChat(path: string, code: string) {
  const module = new URL("../../src/cli/chat_history.ts", import.meta.url).href;
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `import { ChatHistoryFile } from ${JSON.stringify(module)};\n` +
      `const history = new ChatHistoryFile(${JSON.stringify(path)}, console.error, 3);\n${code}`,
    ],
    cwd: fileURLToPath(new URL("../../", import.meta.url)),
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const state = { pid: child.pid, ended: false, done: child.output() };
  state.done.finally(() => state.ended = true);
  return state;
}

Deno.test("chat history: a line another agent chat appends while the file is cut back is kept", async () => {
  const home = await Deno.makeTempDir();
  const path = join(home, "chat_history");
  Deno.writeTextFileSync(
    path,
    ["m1", "m2", "m3", "m4", "m5", "m6"].map((m) => `"${m}"\n`).join(""),
  );
  // Another command holds the edit lock of <home>: the cut-back and the append both wait for it.
  await using holder = await holdEditLock(home, {});
  const cutting = otherChat(path, "console.log(JSON.stringify(history.load()));");
  await waitUntil(
    () => cutting.ended || editLockWaiters(home).includes(cutting.pid),
    "the cut-back to wait for the edit lock",
  );
  assert.ok(!cutting.ended, "the file was cut back without the edit lock");
  const adding = otherChat(path, 'history.add("from B");');
  await waitUntil(
    () => adding.ended || editLockWaiters(home).includes(adding.pid),
    "the append to wait for the edit lock",
  );
  assert.ok(!adding.ended, "a line was appended without the edit lock");
  await holder.release();
  const [cut, added] = await Promise.all([cutting.done, adding.done]);
  const decoder = new TextDecoder();
  assert.equal(cut.code, 0, decoder.decode(cut.stderr));
  assert.equal(added.code, 0, decoder.decode(added.stderr));
  assert.equal(decoder.decode(cut.stderr) + decoder.decode(added.stderr), "", "no warning");

  // Whichever took the lock first, the appended line is in the file, after the kept ones.
  const text = Deno.readTextFileSync(path);
  const appendedFirst = text === '"m5"\n"m6"\n"from B"\n';
  if (!appendedFirst) assert.equal(text, '"m4"\n"m5"\n"m6"\n"from B"\n');
  assert.deepEqual(
    JSON.parse(decoder.decode(cut.stdout)),
    appendedFirst ? ["m5", "m6", "from B"] : ["m4", "m5", "m6"],
  );
  assert.equal(Deno.statSync(path).mode! & 0o777, 0o600);
  await Deno.remove(home, { recursive: true });
});
