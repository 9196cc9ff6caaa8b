/** One timer for every body read: reads that end in time, late ones, and a timer that lets go. */
import assert from "node:assert/strict";
import { LATE, ReadDeadlines } from "../../src/webhook/read_deadline.ts";

/** A promise settled from outside. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((yes, no) => [resolve, reject] = [yes, no]);
  return { promise, resolve, reject };
}

Deno.test("ReadDeadlines: a read that ends in time gives its value or its error", async () => {
  const deadlines = new ReadDeadlines(5_000);
  const read = deferred<string>();
  const result = deadlines.within(read.promise, () => assert.fail("not late"));
  read.resolve("body");
  assert.equal(await result, "body");
  const broken = deferred<string>();
  const failed = deadlines.within(broken.promise, () => assert.fail("not late"));
  broken.reject(new Error("connection reset"));
  await assert.rejects(failed, /connection reset/);
});

Deno.test("ReadDeadlines: reads past the deadline are late, each stopped once; one that ends in time is not", async () => {
  const deadlines = new ReadDeadlines(30);
  const stopped: string[] = [];
  const first = deadlines.within(new Promise<string>(() => {}), () => stopped.push("first"));
  const onTime = deferred<string>();
  const second = deadlines.within(onTime.promise, () => stopped.push("second"));
  const third = deadlines.within(new Promise<string>(() => {}), () => stopped.push("third"));
  onTime.resolve("in time");
  assert.equal(await second, "in time");
  assert.equal(await first, LATE);
  assert.equal(await third, LATE);
  assert.deepEqual(stopped, ["first", "third"]);
});

Deno.test("ReadDeadlines: what a late read settles with afterwards is dropped", async () => {
  const deadlines = new ReadDeadlines(10);
  const read = deferred<string>();
  const result = deadlines.within(read.promise, () => read.reject(new Error("cancelled")));
  assert.equal(await result, LATE);
  // Its rejection (the read stopped by onLate) is neither thrown nor unhandled.
  await read.promise.catch(() => {});
});

Deno.test("ReadDeadlines: a read started once the others ended still expires, the timer kept alive for it", async () => {
  const deadlines = new ReadDeadlines(40);
  const early = deferred<string>();
  const done = deadlines.within(early.promise);
  early.resolve("early");
  assert.equal(await done, "early"); // no read under way: the timer no longer keeps us alive
  await new Promise((resolve) => setTimeout(resolve, 20));
  // Nothing else keeps this test's event loop going: the timer must again, until this expires.
  // It was set for the first read's deadline, finds this one not due yet, and is set again.
  assert.equal(await deadlines.within(new Promise<string>(() => {})), LATE);
});
