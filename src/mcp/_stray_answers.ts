/**
 * Answers whose id no request of ours ever had. The SDK drops such an answer with only an
 * `onerror` ("Received a response for an unknown message ID"), so the request it was meant for
 * waits for its whole timeout and the user reads "no answer". Remembering the stray answer lets
 * the timeout say what the server did wrong instead.
 *
 * A late answer to a request that already timed out is also unknown to the SDK; it is not stray:
 * only an id above every id sent so far (or one that is not a whole number) counts.
 *
 * @module
 */
import type { Client, JSONRPCMessage, Transport } from "@modelcontextprotocol/client";

const UNKNOWN_ID = /^Received a response for an unknown message ID: ([\s\S]*)$/;

/** Watches one client + transport pair for answers carrying an id that was never sent. */
export class StrayAnswers {
  #highestSent = -1;
  #stray: unknown;
  #seen = false;

  /** Starts watching: wraps `transport.send` (ids sent) and sets `client.onerror`. */
  watch(client: Client, transport: Transport): void {
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
      for (const one of Array.isArray(message) ? message : [message] as JSONRPCMessage[]) {
        const id = (one as { id?: unknown; method?: unknown }).method !== undefined
          ? Number((one as { id?: unknown }).id)
          : NaN;
        if (Number.isInteger(id) && id > this.#highestSent) this.#highestSent = id;
      }
      return send(message, options);
    };
    client.onerror = (error) => this.#note(error);
  }

  /** A clause for an error message about the last stray answer, or `undefined` when none came. */
  clause(): string | undefined {
    if (!this.#seen) return undefined;
    return `the server answered with id ${
      JSON.stringify(this.#stray)
    }, which none of our requests had (an answer must carry the id of its request)`;
  }

  #note(error: Error): void {
    const match = UNKNOWN_ID.exec(error?.message ?? "");
    if (!match) return;
    let id: unknown;
    try {
      id = JSON.parse(match[1])?.id;
    } catch {
      return;
    }
    const number = Number(id);
    if (Number.isInteger(number) && number >= 0 && number <= this.#highestSent) return;
    this.#stray = id;
    this.#seen = true;
  }
}
