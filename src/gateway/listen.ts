/**
 * A `Deno.serve` listener that survives its accept loop failing. Deno ends the loop, and with it
 * the listening socket, on the first `accept()` error: with the process out of file descriptors
 * (a few hundred idle connections under a low `ulimit -n`), anyone who can reach the port would
 * stop the gateway for good. Here the failed server is shut down (the requests under way finish)
 * and a new one is bound to the same address after a pause that grows while it keeps failing.
 *
 * Stopping waits for the requests under way to be answered, but not for long after that for the
 * connections to close: Deno's HTTP server reads the rest of a body the handler did not read (one
 * refused 413 or 408) before it closes the connection, with no deadline, so a sender that never
 * sends it nor closes would keep the gateway from ever stopping.
 *
 * @module
 */

/** The first pause before binding again; it doubles up to {@linkcode MAX_REBIND_DELAY_MS}. */
const FIRST_REBIND_DELAY_MS = 100;
const MAX_REBIND_DELAY_MS = 5_000;
/** A failure this long after the previous one starts the pauses again from the first. */
const FAILURE_STREAK_MS = 60_000;
/**
 * How long {@linkcode ResilientServer.shutdown} waits, once every request under way has been
 * answered, for the connections to close (time for the answers to be written out).
 */
const CLOSE_GRACE_MS = 2_000;

/** What {@linkcode ResilientServer} tells its owner. */
export type ListenerEvent =
  /** The accept loop (or binding again) failed; `failures` counts the current streak. */
  | { type: "failed"; error: unknown; retryInMs: number; failures: number }
  /** Listening again after `failures` failures. */
  | { type: "listening"; failures: number }
  /**
   * Stopped with connections still open `waitedMs` after the last request was answered: their
   * senders did not read their answers, or neither sent the rest of a body nobody read nor closed.
   */
  | { type: "unclosed"; waitedMs: number };

/**
 * Serves `handler` on `options.hostname`/`options.port` until {@linkcode shutdown}, binding again
 * whenever the accept loop fails. The first bind happens in the constructor and throws as
 * `Deno.serve` does (port in use, address not available).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ResilientServer } from "./listen.ts";
 * const server = new ResilientServer({ hostname: "127.0.0.1", port: 0 }, () => new Response("ok"));
 * const response = await fetch(`http://127.0.0.1:${server.addr.port}/`);
 * assert.equal(await response.text(), "ok");
 * await server.shutdown();
 * ```
 */
export class ResilientServer {
  readonly addr: Deno.NetAddr;
  #current: Deno.HttpServer<Deno.NetAddr> | undefined;
  /** Failed servers still finishing the requests they had. */
  readonly #draining = new Set<Promise<void>>();
  /** The handler's answers under way. */
  readonly #answering = new Set<Promise<Response>>();
  #stopping = false;
  #failures = 0;
  #lastFailureMs = -Infinity;
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #stopped: Promise<void>;
  #resolveStopped!: () => void;
  #closed: Promise<void> | undefined;

  constructor(
    readonly options: { hostname: string; port: number },
    readonly handler: Deno.ServeHandler<Deno.NetAddr>,
    readonly onEvent: (event: ListenerEvent) => void = () => {},
  ) {
    this.#stopped = new Promise((resolve) => this.#resolveStopped = resolve);
    const server = this.#bind(options.port);
    // Port 0 picks a free port once; binding again takes the same one.
    this.addr = server.addr;
  }

  /** Whether {@linkcode shutdown} was called: requests under way are finishing. */
  get stopping(): boolean {
    return this.#stopping;
  }

  /** Resolves once {@linkcode shutdown} has finished. */
  get finished(): Promise<void> {
    return this.#stopped;
  }

  /**
   * Resolves once every connection has closed, which can be later than {@linkcode shutdown}
   * (see {@linkcode ListenerEvent} `unclosed`); never before {@linkcode shutdown} was called.
   */
  get closed(): Promise<void> {
    return this.#stopped.then(() => this.#closed);
  }

  /**
   * Stops accepting and binding again; resolves when every request under way has been answered
   * and its connection closed, or {@linkcode CLOSE_GRACE_MS} after the last answer if connections
   * are still open then (reported as `unclosed`; the process can exit: nothing is left to answer).
   */
  async shutdown(): Promise<void> {
    if (!this.#stopping) {
      this.#stopping = true;
      clearTimeout(this.#timer);
      const current = this.#current;
      this.#current = undefined;
      let closed = false;
      this.#closed = Promise.all([current?.shutdown(), ...this.#draining]).then(() => {
        closed = true;
      });
      let graceTimer: ReturnType<typeof setTimeout> | undefined;
      const grace = this.#answered().then(() => {
        const answeredAt = performance.now();
        return new Promise<number>((resolve) => {
          if (closed) return resolve(0);
          graceTimer = setTimeout(() => resolve(performance.now() - answeredAt), CLOSE_GRACE_MS);
        });
      });
      const waited = await Promise.race([this.#closed.then(() => undefined), grace]);
      if (!closed && waited !== undefined) {
        this.onEvent({ type: "unclosed", waitedMs: Math.round(waited) });
      } else {
        // Closed first: the grace's timer, if set, or about to be (`closed` is now true), ends.
        clearTimeout(graceTimer);
      }
      this.#resolveStopped();
    }
    await this.#stopped;
  }

  /** Resolves once no answer of the handler is under way. */
  async #answered(): Promise<void> {
    while (this.#answering.size > 0) await Promise.allSettled(this.#answering);
  }

  /** The handler, its answers under way counted. */
  #serve: Deno.ServeHandler<Deno.NetAddr> = (request, info) => {
    const answer = Promise.resolve().then(() => this.handler(request, info));
    this.#answering.add(answer);
    answer.finally(() => this.#answering.delete(answer)).catch(() => {});
    return answer;
  };

  #bind(port: number): Deno.HttpServer<Deno.NetAddr> {
    const server = Deno.serve(
      { hostname: this.options.hostname, port, onListen() {} },
      this.#serve,
    );
    this.#current = server;
    server.finished.catch((error) => this.#failed(server, error));
    return server;
  }

  #failed(server: Deno.HttpServer<Deno.NetAddr>, error: unknown): void {
    if (this.#current === server) this.#current = undefined;
    // Ends what the failed server still holds; its requests under way finish first.
    const draining = server.shutdown().catch(() => {});
    this.#draining.add(draining);
    draining.finally(() => this.#draining.delete(draining));
    if (!this.#stopping) this.#retry(error);
  }

  #retry(error: unknown): void {
    const now = performance.now();
    if (now - this.#lastFailureMs > FAILURE_STREAK_MS) this.#failures = 0;
    this.#lastFailureMs = now;
    this.#failures++;
    const retryInMs = Math.min(
      FIRST_REBIND_DELAY_MS * 2 ** (this.#failures - 1),
      MAX_REBIND_DELAY_MS,
    );
    this.onEvent({ type: "failed", error, retryInMs, failures: this.#failures });
    this.#timer = setTimeout(() => {
      if (this.#stopping) return;
      try {
        this.#bind(this.addr.port);
      } catch (bindError) {
        this.#retry(bindError);
        return;
      }
      this.onEvent({ type: "listening", failures: this.#failures });
    }, retryInMs);
  }
}
