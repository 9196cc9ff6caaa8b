/**
 * Tool entries of a `tools/list` answer that are not valid MCP, taken out before the SDK sees the
 * answer. The SDK validates the whole result at once, so one tool with, say, an `inputSchema` of
 * `{type: "string"}` would make discovery fail for every tool of the server (and `tools.exclude`
 * could not help: filters apply after). Each entry is checked with the SDK's own `Tool` schema;
 * the invalid ones are dropped from the answer and remembered, so the toolset can name them.
 *
 * Only answers to `tools/list` requests we sent are touched, and only when the result is an object
 * with a `tools` list: a result that is not (no object, `tools` not a list) reaches the SDK as it
 * came and fails as a whole. Pages (`nextCursor`) count together: an entry's index is its place in
 * the server's whole list. Walks may overlap (a refresh after `list_changed` while a keepalive
 * lists the tools): the latest walk is the one whose page was answered last, which is the one
 * whose caller resumes next, not the one started last.
 *
 * @module
 */
import { type JSONRPCMessage, specTypeSchemas, type Transport } from "@modelcontextprotocol/client";
import { validationIssues } from "./errors.ts";
import type { InvalidTool } from "./registry.ts";

/** The longest tool name quoted in a warning; a longer one is named by its index. */
const READABLE_NAME_LENGTH = 128;

/** One `tools/list` walk (its first page and the pages its cursors lead to). */
interface Walk {
  /** Entries before the next page's first one. */
  offset: number;
  invalid: InvalidTool[];
}

/** Screens the `tools/list` answers of one client + transport pair. */
export class InvalidTools {
  /** Walks of the `tools/list` requests sent and not answered yet, by request id. */
  readonly #requests = new Map<unknown, Walk>();
  /** Walks by the `nextCursor` their last page gave. */
  readonly #cursors = new Map<string, Walk>();
  #latest: Walk | undefined;

  /**
   * Starts screening: wraps `transport.send` (to know our `tools/list` request ids) and
   * `transport.onmessage`. Call it after `client.connect`, which sets the `onmessage` wrapped
   * here (no `tools/list` is sent before).
   */
  watch(transport: Transport): void {
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
      for (const one of Array.isArray(message) ? message : [message] as JSONRPCMessage[]) {
        this.#sent(one);
      }
      return send(message, options);
    };
    const receive = transport.onmessage;
    if (!receive) return;
    transport.onmessage = (message, extra) => receive(this.#screened(message), extra);
  }

  /**
   * The entries left out of the `tools/list` walk answered last (all its pages so far), in list
   * order.
   */
  latest(): InvalidTool[] {
    return [...(this.#latest?.invalid ?? [])];
  }

  #sent(message: JSONRPCMessage): void {
    const request = message as { id?: unknown; method?: unknown; params?: { cursor?: unknown } };
    if (request.method !== "tools/list" || request.id === undefined) return;
    const cursor = request.params?.cursor;
    const walk = typeof cursor === "string" ? this.#cursors.get(cursor) : undefined;
    if (typeof cursor === "string") this.#cursors.delete(cursor);
    this.#requests.set(request.id, walk ?? { offset: 0, invalid: [] });
  }

  #screened(message: JSONRPCMessage): JSONRPCMessage {
    const answer = message as { id?: unknown; result?: unknown; method?: unknown };
    if (answer.method !== undefined || answer.id === undefined) return message;
    const walk = this.#requests.get(answer.id);
    if (!walk) return message;
    this.#requests.delete(answer.id);
    const result = answer.result;
    if (!isRecord(result) || !Array.isArray(result.tools)) return message;
    this.#latest = walk;
    const entries: unknown[] = result.tools;
    const kept = entries.filter((entry, index) => {
      const checked = specTypeSchemas.Tool["~standard"].validate(entry);
      if (!("issues" in checked) || checked.issues === undefined) return true;
      walk.invalid.push({
        index: walk.offset + index,
        name: readableName(entry),
        problem: validationIssues(checked.issues),
      });
      return false;
    });
    walk.offset += entries.length;
    if (typeof result.nextCursor === "string") this.#cursors.set(result.nextCursor, walk);
    if (kept.length === entries.length) return message;
    return { ...message, result: { ...result, tools: kept } } as JSONRPCMessage;
  }
}

/** The entry's name when a warning can quote it: a short string of printable characters. */
function readableName(entry: unknown): string | undefined {
  const name = isRecord(entry) ? entry.name : undefined;
  if (typeof name !== "string" || name.trim() === "" || name.length > READABLE_NAME_LENGTH) {
    return undefined;
  }
  return /^[^\p{C}]+$/u.test(name) ? name : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
