import assert from "node:assert/strict";
import { ChunkReader, LineReader } from "../../src/cli/lines.ts";

// A reader must not leave reads or streams behind.
Deno.test.sanitizer({ ops: true, resources: true });

const encoder = new TextEncoder();

/** A finished stream of the given chunks (strings are UTF-8 encoded). */
function streamOf(...chunks: Array<string | number[]>): ReadableStream<Uint8Array> {
  return ReadableStream.from(
    chunks.map((chunk) =>
      typeof chunk === "string" ? encoder.encode(chunk) : new Uint8Array(chunk)
    ),
  );
}

/** A stream the test writes to as it goes. */
function liveStream() {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
    },
    cancel() {
      cancelled = true;
    },
  });
  return {
    stream,
    write: (text: string) => controller.enqueue(encoder.encode(text)),
    end: () => controller.close(),
    cancelled: () => cancelled,
  };
}

/** Every line until the end of input. */
async function readAll(reader: LineReader): Promise<string[]> {
  const lines: string[] = [];
  for (let line = await reader.readLine(); line !== null; line = await reader.readLine()) {
    lines.push(line);
  }
  return lines;
}

/** Awaits `promise`, asserts it rejects, and returns the rejection reason. */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (reason) {
    return reason;
  }
  assert.fail("expected a rejection");
}

Deno.test("LineReader: lines split across chunks are joined", async () => {
  const reader = new LineReader(streamOf("hel", "lo\nwor", "ld\nthird", " line\n"));

  assert.deepEqual(await readAll(reader), ["hello", "world", "third line"]);
});

Deno.test("LineReader: several lines in one chunk come one per call", async () => {
  const reader = new LineReader(streamOf("a\nb\nc\n"));

  assert.equal(await reader.readLine(), "a");
  assert.equal(await reader.readLine(), "b");
  assert.equal(await reader.readLine(), "c");
  assert.equal(await reader.readLine(), null);
});

Deno.test("LineReader: CRLF line endings, also with CR and LF in different chunks", async () => {
  const reader = new LineReader(streamOf("one\r\ntwo\r", "\nthree\r\n"));

  assert.deepEqual(await readAll(reader), ["one", "two", "three"]);
});

Deno.test("LineReader: a CR inside a line is kept", async () => {
  const reader = new LineReader(streamOf("a\rb\n"));

  assert.deepEqual(await readAll(reader), ["a\rb"]);
});

Deno.test("LineReader: the last line without a newline is returned", async () => {
  const reader = new LineReader(streamOf("first\nlast", " words"));

  assert.deepEqual(await readAll(reader), ["first", "last words"]);
});

Deno.test("LineReader: empty lines are empty strings, not the end", async () => {
  const reader = new LineReader(streamOf("\n\r\nx\n", "\n"));

  assert.deepEqual(await readAll(reader), ["", "", "x", ""]);
});

Deno.test("LineReader: multi-byte UTF-8 split across chunks is decoded whole", async () => {
  // "é" = C3 A9, "€" = E2 82 AC, "🦕" = F0 9F A6 95 — each split between chunks.
  const reader = new LineReader(
    streamOf([0x63, 0x61, 0x66, 0xc3], [0xa9, 0x0a, 0xe2], [0x82], [0xac, 0x0a, 0xf0, 0x9f], [
      0xa6,
      0x95,
      0x0a,
    ]),
  );

  assert.deepEqual(await readAll(reader), ["café", "€", "🦕"]);
});

Deno.test("LineReader: invalid UTF-8 becomes U+FFFD instead of failing", async () => {
  const reader = new LineReader(streamOf([0x61, 0xff, 0x62, 0x0a]));

  assert.deepEqual(await readAll(reader), ["a\uFFFDb"]);
});

Deno.test("LineReader: a character cut by the end of input is U+FFFD, then the end", async () => {
  const reader = new LineReader(streamOf("line\n", [0x61, 0xe2, 0x82]));

  assert.deepEqual(await readAll(reader), ["line", "a\uFFFD"]);
});

Deno.test("ChunkReader: reads nothing ahead, so input stays where it is until asked for", async () => {
  // What a terminal holds between reads must reach the next read whole (lines typed while the
  // agent works arrive as one input, not line by line to a read left waiting).
  let pulls = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulls++;
      controller.enqueue(encoder.encode(`chunk ${pulls}`));
    },
  }, { highWaterMark: 0 });
  const input = new ChunkReader(stream);

  assert.equal(await input.read(), "chunk 1");
  for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(pulls, 1);
  assert.equal(await input.read(), "chunk 2");
  assert.equal(pulls, 2);
  await input.close();
});

Deno.test("LineReader: null at the end, again and again", async () => {
  const reader = new LineReader(streamOf("only\n"));

  assert.equal(await reader.readLine(), "only");
  for (let i = 0; i < 3; i++) assert.equal(await reader.readLine(), null);
});

Deno.test("LineReader: an empty stream is null at once", async () => {
  const reader = new LineReader(streamOf());

  assert.equal(await reader.readLine(), null);
  assert.equal(await reader.readLine(), null);
});

Deno.test("LineReader: waits for a line written later", async () => {
  const input = liveStream();
  const reader = new LineReader(input.stream);

  const pending = reader.readLine();
  input.write("par");
  input.write("tial\nnext");
  assert.equal(await pending, "partial");
  input.end();

  assert.equal(await reader.readLine(), "next");
  assert.equal(await reader.readLine(), null);
});

Deno.test("LineReader: an aborted readLine rejects; the line that arrives later is not lost", async () => {
  const input = liveStream();
  const reader = new LineReader(input.stream);
  const controller = new AbortController();
  const reason = new Error("question timed out");

  const aborted = reader.readLine(controller.signal);
  controller.abort(reason);
  assert.equal(await rejection(aborted), reason);

  // The read under way when the signal aborted still gets this data.
  input.write("late answer\n");
  assert.equal(await reader.readLine(), "late answer");
  input.end();
  assert.equal(await reader.readLine(), null);
});

Deno.test("LineReader: a partial line before the abort is kept and completed afterwards", async () => {
  const input = liveStream();
  const reader = new LineReader(input.stream);
  const controller = new AbortController();

  input.write("hal");
  const aborted = reader.readLine(controller.signal);
  controller.abort();
  await rejection(aborted);
  input.write("f\n");

  assert.equal(await reader.readLine(), "half");
  input.end();
  assert.equal(await reader.readLine(), null);
});

Deno.test("LineReader: an already aborted signal rejects and reads nothing", async () => {
  const reader = new LineReader(streamOf("kept\n"));
  const reason = new Error("gone");

  assert.equal(await rejection(reader.readLine(AbortSignal.abort(reason))), reason);
  assert.equal(await reader.readLine(), "kept");
});

Deno.test("LineReader: a buffered line is returned even with an aborted signal", async () => {
  const reader = new LineReader(streamOf("one\ntwo\n"));

  assert.equal(await reader.readLine(), "one");
  // "two" is already read from the stream: no wait, so nothing to abort.
  assert.equal(await reader.readLine(AbortSignal.abort()), "two");
});

Deno.test("LineReader: a signal that never aborts does not get in the way", async () => {
  const input = liveStream();
  const reader = new LineReader(input.stream);
  const controller = new AbortController();

  const pending = reader.readLine(controller.signal);
  input.write("answer\n");

  assert.equal(await pending, "answer");
  input.end();
  assert.equal(await reader.readLine(controller.signal), null);
});

Deno.test("LineReader: close() cancels the stream; later reads are null", async () => {
  const input = liveStream();
  const reader = new LineReader(input.stream);

  await reader.close();

  assert.equal(input.cancelled(), true);
  assert.equal(await reader.readLine(), null);
  await reader.close(); // twice is fine
});

Deno.test({
  name: "LineReader: two readLine calls at once get two different lines",
  fn: async () => {
    const input = liveStream();
    const reader = new LineReader(input.stream);

    const first = reader.readLine();
    const second = reader.readLine();
    input.write("one\n");
    input.write("two\n");
    input.end();

    assert.deepEqual([await first, await second], ["one", "two"]);
    assert.equal(await reader.readLine(), null);
  },
});

/** The turn after the current one: whatever the input brought by now has been taken in. */
const nextTurn = () => new Promise((resolve) => setTimeout(resolve, 0));

Deno.test("LineReader: readAhead takes in what arrives meanwhile; hasLine says a whole line is there", async () => {
  const input = liveStream();
  const reader = new LineReader(input.stream);

  input.write("typed ahead\n");
  await nextTurn();
  assert.equal(reader.hasLine, false, "nothing is read unless asked for");
  reader.readAhead();
  await nextTurn();
  assert.equal(reader.hasLine, true);
  reader.readAhead(); // a read is started only when none is under way
  input.write("par");
  assert.equal(await reader.readLine(), "typed ahead", "the line read ahead is not lost");
  await nextTurn();
  assert.equal(reader.hasLine, false, "part of a line is not a line");
  input.write("tial\n");
  await nextTurn();
  assert.equal(reader.hasLine, false, "nothing was reading");
  const next = reader.readLine();
  assert.equal(await next, "partial");
  input.end();
  reader.readAhead();
  await nextTurn();
  assert.equal(reader.hasLine, true, "the end of input is there too");
  assert.equal(await reader.readLine(), null);
});
