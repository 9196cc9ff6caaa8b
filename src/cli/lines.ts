/**
 * Line input for the interactive commands: one reader over stdin shared by the chat prompt and
 * approval questions, so neither steals the other's input.
 *
 * @module
 */

/**
 * Reads lines from a byte stream. A read interrupted by its signal loses nothing: the next call
 * gets the line.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { LineReader } from "./lines.ts";
 * const reader = new LineReader(ReadableStream.from([new TextEncoder().encode("a\r\nb")]));
 * assert(await reader.readLine() === "a");
 * assert(await reader.readLine() === "b");
 * assert(await reader.readLine() === null);
 * ```
 */
export class LineReader {
  readonly #input: ChunkReader;
  #buffer = "";
  #done = false;
  /** The read under way: what it brings goes to the buffer, whoever waits for it, if anyone. */
  #filling: Promise<void> | undefined;

  constructor(stream: ReadableStream<Uint8Array>) {
    this.#input = new ChunkReader(stream);
  }

  /** The next line without its line ending, or `null` at end of input. Rejects on abort. */
  async readLine(signal?: AbortSignal): Promise<string | null> {
    while (true) {
      const line = this.#take();
      if (line !== undefined) return line;
      const filling = this.#fill();
      await (signal ? abortable(filling, signal) : filling);
    }
  }

  /** Whether a whole line, or the end of input, has arrived and waits for {@linkcode readLine}. */
  get hasLine(): boolean {
    return this.#done || this.#buffer.includes("\n");
  }

  /**
   * Reads what arrives from now on without waiting for it, so that {@linkcode hasLine} knows of a
   * line that arrived before the next {@linkcode readLine}. Nothing is lost: that call gets it.
   */
  readAhead(): void {
    this.#fill().catch(() => {}); // the next readLine gets the error
  }

  /** The next line from the buffer; `null` at the end of input; `undefined`: none yet. */
  #take(): string | null | undefined {
    const end = this.#buffer.indexOf("\n");
    if (end >= 0) {
      const line = this.#buffer.slice(0, end).replace(/\r$/, "");
      this.#buffer = this.#buffer.slice(end + 1);
      return line;
    }
    if (!this.#done) return undefined;
    const last = this.#buffer;
    this.#buffer = "";
    return last === "" ? null : last;
  }

  #fill(): Promise<void> {
    return this.#filling ??= this.#input.read().then((chunk) => {
      if (chunk === null) this.#done = true;
      else this.#buffer += chunk;
    }).finally(() => this.#filling = undefined);
  }

  /** Stops reading. */
  async close(): Promise<void> {
    await this.#input.close();
  }
}

/**
 * Text from a byte stream (UTF-8), chunk by chunk as it arrives. A read interrupted by its signal
 * loses nothing: the next call gets the chunk.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ChunkReader } from "./lines.ts";
 * const input = new ChunkReader(ReadableStream.from([new Uint8Array([0xc3]), new Uint8Array([0xa9])]));
 * assert.equal(await input.read(), "é");
 * assert.equal(await input.ready(), undefined); // the end of input is for read to say
 * assert.equal(await input.read(), null);
 * ```
 */
export class ChunkReader {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #decoder = new TextDecoder();
  /**
   * The read under way. There is none between calls: nothing reads ahead, so what a terminal
   * holds for the next read (lines typed while no line was read) stays there until then, whole.
   */
  #pending: Promise<ReadableStreamReadResult<Uint8Array>> | undefined;

  constructor(stream: ReadableStream<Uint8Array>) {
    this.#reader = stream.getReader();
  }

  /** The next text, or `null` at end of input. Rejects on abort. */
  async read(signal?: AbortSignal): Promise<string | null> {
    while (true) {
      const pending = this.#pending ??= this.#reader.read();
      const result = signal ? await abortable(pending, signal) : await pending;
      // Another caller waiting on the same read has taken its data already.
      if (this.#pending !== pending) continue;
      this.#pending = undefined;
      if (result.done) return this.#end(result);
      const text = this.#decoder.decode(result.value, { stream: true });
      if (text !== "") return text;
    }
  }

  /**
   * The next text if it has arrived already, without waiting for more; `undefined` when none
   * has (or the input has ended: the next {@linkcode ChunkReader.read} says so).
   */
  async ready(): Promise<string | undefined> {
    while (true) {
      const pending = this.#pending ??= this.#reader.read();
      // A promise settled already wins the race against one made after it.
      const result = await Promise.race([pending, Promise.resolve(NOT_ARRIVED)]);
      if (result === NOT_ARRIVED || this.#pending !== pending || result.done) return undefined;
      this.#pending = undefined;
      const text = this.#decoder.decode(result.value, { stream: true });
      if (text !== "") return text;
    }
  }

  /** Stops reading. */
  async close(): Promise<void> {
    await this.#reader.cancel().catch(() => {});
  }

  /** At the end of input: a character it cut as a replacement character first, then `null`. */
  #end(result: ReadableStreamReadResult<Uint8Array>): string | null {
    const rest = this.#decoder.decode();
    if (rest === "") return null;
    this.#pending = Promise.resolve(result);
    return rest;
  }
}

const NOT_ARRIVED = Symbol("not arrived");

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
