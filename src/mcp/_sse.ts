/**
 * SSE that can say why it failed. The SDK's legacy SSE transport reports a refused event stream
 * only as "SSE error: Non-200 status code (401)" and an unreachable server as "SSE error:
 * TypeError: fetch failed", without the body or the network error; this one keeps the last
 * failed answer (status and the start of its body) and the last network error of its requests,
 * so the connect error can be worded as it is for Streamable HTTP.
 *
 * @module
 */
import { SSEClientTransport } from "@modelcontextprotocol/client";

/** How much of a failed answer's body is kept (enough for a one-line summary). */
const BODY_KEPT = 16 * 1024;

/** A failed HTTP answer to one of the transport's requests. */
export interface SseHttpFailure {
  status: number;
  /** The start of the body (up to 16 KiB). */
  body: string;
}

type SseOptions = NonNullable<ConstructorParameters<typeof SSEClientTransport>[1]>;
type FetchLike = NonNullable<SseOptions["fetch"]>;

/** A {@linkcode SSEClientTransport} that remembers its last HTTP failure and network error. */
export class DiagnosedSSEClientTransport extends SSEClientTransport {
  readonly #record: { failure?: SseHttpFailure; networkError?: unknown };

  constructor(url: URL, options: SseOptions = {}) {
    const record: { failure?: SseHttpFailure; networkError?: unknown } = {};
    super(url, { ...options, fetch: recording(options.fetch ?? fetch, record) });
    this.#record = record;
  }

  /** The last answer with a status of 400 or more, if any. */
  get lastFailure(): SseHttpFailure | undefined {
    return this.#record.failure;
  }

  /** The last error a request threw before any answer (refused, DNS, TLS …), if any. */
  get lastNetworkError(): unknown {
    return this.#record.networkError;
  }
}

function recording(
  inner: FetchLike,
  record: { failure?: SseHttpFailure; networkError?: unknown },
): FetchLike {
  return async (input, init) => {
    let response: Response;
    try {
      response = await inner(input, init);
    } catch (error) {
      if (!init?.signal?.aborted) record.networkError = error;
      throw error;
    }
    if (response.status < 400) return response;
    const body = await startOf(response);
    record.failure = { status: response.status, body };
    // The body was read here; the SDK gets the same answer with the part that was kept.
    return new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

async function startOf(response: Response): Promise<string> {
  if (!response.body) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < BODY_KEPT) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
    }
  } catch {
    // a body cut short still says what it said so far
  } finally {
    await reader.cancel().catch(() => {});
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  return new TextDecoder().decode(bytes.subarray(0, BODY_KEPT));
}
