/**
 * The inbox's writer thread (a worker started by `Inbox.open(path, { writerThread: true })`): its
 * own connection to the inbox file, on which each message of events is claimed, inserted and
 * committed in one transaction, by the same {@linkcode admit} as on the main connection. The
 * answer goes back only after the commit, so an event answered `accepted` is durable.
 *
 * @module
 */
import { DatabaseSync } from "node:sqlite";
import {
  admit,
  type AdmitStatements,
  admitStatements,
  type WriterReply,
  type WriterRequest,
} from "./inbox.ts";

interface WorkerScope {
  onmessage: ((message: MessageEvent<WriterRequest>) => void) | null;
  postMessage(reply: WriterReply): void;
}

const scope = globalThis as unknown as WorkerScope;
let store: { db: DatabaseSync; statements: AdmitStatements } | undefined;

scope.onmessage = ({ data: request }) => {
  if (request.kind === "open") {
    try {
      store = open(request.path);
    } catch (error) {
      scope.postMessage({
        kind: "broken",
        error: `cannot open ${request.path}: ${messageOf(error)}`,
      });
    }
    return;
  }
  if (!store) {
    scope.postMessage({ kind: "failed", seq: request.seq, error: "the inbox is not open" });
    return;
  }
  const { db, statements } = store;
  try {
    db.exec("BEGIN IMMEDIATE");
    const results = request.rows.map((row) => admit(statements, row));
    db.exec("COMMIT");
    scope.postMessage({ kind: "admitted", seq: request.seq, results });
  } catch (error) {
    try {
      if (db.isTransaction) db.exec("ROLLBACK");
    } catch { /* the connection is unusable; the next message reports it */ }
    // The message only: the main thread makes an Error of it, which says "Error: " itself.
    scope.postMessage({ kind: "failed", seq: request.seq, error: messageOf(error) });
  }
};

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The inbox (created by the main thread) with the settings of `openPrivateDatabase`. */
function open(path: string): { db: DatabaseSync; statements: AdmitStatements } {
  const db = new DatabaseSync(path);
  try {
    db.exec("PRAGMA busy_timeout = 15000");
    db.exec("PRAGMA synchronous = NORMAL");
    return { db, statements: admitStatements(db) };
  } catch (error) {
    db.close();
    throw error;
  }
}
