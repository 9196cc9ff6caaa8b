/** The shared SQLite helpers of `<home>`'s stores. */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { immediateTransaction } from "../../src/home/sqlite.ts";

Deno.test("immediateTransaction: an error after which SQLite rolled back itself is thrown as is", () => {
  const db = new DatabaseSync(":memory:");
  db.exec("CREATE TABLE t (a)");
  // What SQLite does on SQLITE_FULL (a full disk): the transaction ends before the error comes.
  const full = new Error("database or disk is full");
  assert.throws(
    () =>
      immediateTransaction(db, () => {
        db.exec("INSERT INTO t VALUES (1)");
        db.exec("ROLLBACK");
        throw full;
      }),
    (error: unknown) => error === full,
  );
  assert.equal(db.isTransaction, false);
  assert.equal((db.prepare("SELECT COUNT(*) AS n FROM t").get() as { n: number }).n, 0);
  db.close();
});
