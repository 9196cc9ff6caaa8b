/**
 * Streamable HTTP that notices a dead server during a call. The SDK answers a request whose
 * response stream (the POST's SSE stream) ends or breaks without the answer only with
 * `onerror`, so the call would wait for its whole `timeout`. Stdio and SSE report such a loss at
 * once; this makes Streamable HTTP do the same: the transport is closed, and the SDK then fails
 * every pending request with `ConnectionClosed`.
 *
 * It also notices a session the server ended: the MCP spec (transports, 2025-03-26 on) has the
 * server answer HTTP 404 to a request carrying the id of a session it terminated, and the client
 * start a new session with a new `initialize`. The SDK only throws that 404; this closes the
 * transport the same way, so the connection is lost and the next one starts a new session. The
 * same 404 can come first to the GET that reopens the event stream of server notifications (a
 * server that ends a session closes that stream, and the SDK reconnects it); the SDK only reports
 * it to `onerror` and gives up after a few tries, so notifications would be lost until the next
 * request. That 404 closes the transport as well.
 *
 * @module
 */
import {
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  type RequestId,
  SdkHttpError,
  StreamableHTTPClientTransport,
  type StreamableHTTPClientTransportOptions,
} from "@modelcontextprotocol/client";

/** Why the transport closed when the server ended the session (`lostReason`). */
export const SESSION_ENDED = "the server ended the MCP session (HTTP 404 for its session id)";

type SendOptions = Parameters<StreamableHTTPClientTransport["send"]>[1];
type FetchLike = NonNullable<StreamableHTTPClientTransportOptions["fetch"]>;
type MessageHandler = NonNullable<StreamableHTTPClientTransport["onmessage"]>;

/**
 * A {@linkcode StreamableHTTPClientTransport} that closes itself when the response stream of a
 * request ends without that request's answer (after the SDK's own resumption attempts), since
 * the answer can then never arrive, and when the server answers HTTP 404 to a request carrying
 * the session id ({@linkcode SESSION_ENDED}), to a request or to the GET of an event stream that
 * was open for that session. Requests whose sender watches the stream end itself (a
 * `subscriptions/listen` stream) and requests cancelled by the client are left alone.
 */
export class WatchedStreamableHTTPClientTransport extends StreamableHTTPClientTransport {
  /** Requests sent over this transport whose answer has not arrived yet. */
  readonly #awaiting = new Set<RequestId>();
  #wrapped: MessageHandler | undefined;
  #lost: string | undefined;
  /**
   * Whether a GET opened the event stream of this session. Never reset: a transport carries one
   * session (connect.ts makes a new transport for each connection, so a new session gets one).
   */
  #streamOpened = false;

  constructor(url: URL, options: StreamableHTTPClientTransportOptions = {}) {
    // The SDK's fetch is the only place that sees the answer to its GET; `this` comes after super.
    let noteAnswer = (_init: RequestInit | undefined, _response: Response) => {};
    const inner: FetchLike = options.fetch ?? ((input, init) => fetch(input, init));
    super(url, {
      ...options,
      fetch: async (input, init) => {
        const response = await inner(input, init);
        noteAnswer(init, response);
        return response;
      },
    });
    noteAnswer = (init, response) => this.#noteStreamAnswer(init, response);
  }

  /** Why the transport closed itself, if it did ({@linkcode SESSION_ENDED} among others). */
  get lostReason(): string | undefined {
    return this.#lost;
  }

  override async send(
    message: JSONRPCMessage | JSONRPCMessage[],
    options?: SendOptions,
  ): Promise<void> {
    const session = this.sessionId;
    try {
      return await this.#send(message, options);
    } catch (error) {
      if (session !== undefined && error instanceof SdkHttpError && error.status === 404) {
        this.#closeLost(SESSION_ENDED);
      }
      throw error;
    }
  }

  async #send(message: JSONRPCMessage | JSONRPCMessage[], options?: SendOptions): Promise<void> {
    this.#watchAnswers();
    const messages = Array.isArray(message) ? message : [message];
    for (const one of messages) {
      if (isJSONRPCNotification(one) && one.method === "notifications/cancelled") {
        const id = (one.params as { requestId?: RequestId } | undefined)?.requestId;
        if (id !== undefined) this.#awaiting.delete(id); // a cancelled request gets no answer
      }
    }
    const ids = messages.filter(isJSONRPCRequest).map((one) => one.id);
    if (ids.length === 0 || options?.onRequestStreamEnd || options?.resumptionToken) {
      return await super.send(message, options);
    }
    for (const id of ids) this.#awaiting.add(id);
    try {
      await super.send(message, {
        ...options,
        onRequestStreamEnd: () => {
          const unanswered = ids.filter((id) => this.#awaiting.has(id));
          for (const id of ids) this.#awaiting.delete(id);
          if (unanswered.length > 0) {
            this.#closeLost("the server closed the response stream of a request without answering");
          }
        },
      });
    } catch (error) {
      for (const id of ids) this.#awaiting.delete(id); // the SDK rejects these requests itself
      throw error;
    }
  }

  /** Wraps the protocol's message handler (set by `Client.connect`) to see answers arrive. */
  #watchAnswers(): void {
    const current = this.onmessage;
    if (!current || current === this.#wrapped) return;
    const wrapped: MessageHandler = (message) => {
      if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) {
        if (message.id !== undefined) this.#awaiting.delete(message.id);
      }
      current(message);
    };
    this.#wrapped = wrapped;
    this.onmessage = wrapped;
  }

  /**
   * A 404 to the GET of an event stream ends the session only when a GET opened that stream
   * before: some servers without the stream answer 404 instead of the spec's 405 (which the SDK
   * takes quietly), and a new session would get the same answer.
   */
  #noteStreamAnswer(init: RequestInit | undefined, response: Response): void {
    const session = this.sessionId;
    if (init?.method !== "GET" || session === undefined) return;
    if (new Headers(init.headers).get("mcp-session-id") !== session) return;
    if (response.ok) this.#streamOpened = true;
    else if (response.status === 404 && this.#streamOpened) this.#closeLost(SESSION_ENDED);
  }

  #closeLost(reason: string): void {
    if (this.#lost !== undefined) return;
    this.#lost = reason;
    this.onerror?.(new Error(reason));
    this.close().catch(() => {});
  }
}
