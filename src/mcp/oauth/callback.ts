/**
 * The loopback listener that receives the browser's OAuth redirect: `GET
 * http://127.0.0.1:<port>/callback?code=…&state=…`, on 127.0.0.1 only. A redirect whose
 * `state` does not match the authorization under way is refused and the wait goes on.
 *
 * @module
 */
import { CALLBACK_PATH } from "./metadata_url.ts";

/** Where and what the listener waits for. */
export interface CallbackListenerOptions {
  /** Port to bind on 127.0.0.1; 0 lets the OS choose. */
  port: number;
  /** Path of the redirect URI (default `/callback`). */
  path?: string;
  /** The `state` of the authorization under way (`undefined` before one started). */
  expectedState: () => string | undefined;
}

/** A bound listener waiting for one redirect. */
export interface CallbackListener {
  /** The bound port. */
  readonly port: number;
  /** The path redirects must use. */
  readonly path: string;
  /** `http://127.0.0.1:<port><path>`. */
  readonly url: string;
  /** The query of the first redirect whose `state` matched (it holds `code`, or `error`). */
  readonly redirect: Promise<URLSearchParams>;
  /** Whether {@linkcode CallbackListener.close} was called. */
  readonly closed: boolean;
  /** Stops listening (the port is free again). */
  close(): Promise<void>;
}

const PAGE_STYLE = "font-family: sans-serif; max-width: 36em; margin: 4em auto;";

/**
 * Binds `127.0.0.1:<port>` now and waits for the redirect. Throws `Deno.errors.AddrInUse` when
 * the port is taken.
 *
 * @param options Port, path and the expected `state`.
 * @returns The listener.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { startCallbackListener } from "./callback.ts";
 * const listener = startCallbackListener({ port: 0, expectedState: () => "s1" });
 * const refused = await fetch(`${listener.url}?code=c&state=other`);
 * assert.equal(refused.status, 400);
 * await refused.body?.cancel();
 * const page = await fetch(`${listener.url}?code=c&state=s1`);
 * await page.text();
 * assert.equal((await listener.redirect).get("code"), "c");
 * await listener.close();
 * ```
 */
export function startCallbackListener(options: CallbackListenerOptions): CallbackListener {
  const path = options.path ?? CALLBACK_PATH;
  let resolve!: (params: URLSearchParams) => void;
  const redirect = new Promise<URLSearchParams>((done) => resolve = done);
  let received = false;
  let closed = false;
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: options.port, onListen() {} },
    (request) => {
      const url = new URL(request.url);
      if (url.pathname !== path) return page(404, "Not found", "This is not the OAuth callback.");
      if (request.method !== "GET") return page(405, "Method not allowed", "Use GET.");
      const expected = options.expectedState();
      const state = url.searchParams.get("state");
      if (expected === undefined || state !== expected) {
        return page(
          400,
          "Not this login",
          "This authorization response does not belong to the login under way (its state does not match). Go back to the terminal.",
        );
      }
      if (received) {
        return page(200, "Already received", "You can close this tab and return to the terminal.");
      }
      received = true;
      resolve(url.searchParams);
      return url.searchParams.has("code")
        ? page(200, "Authorization received", "You can close this tab and return to the terminal.")
        : page(
          400,
          "Authorization failed",
          "The authorization server did not grant access. The terminal says what happened.",
        );
    },
  );
  const port = server.addr.port;
  return {
    port,
    path,
    url: `http://127.0.0.1:${port}${path}`,
    redirect,
    get closed() {
      return closed;
    },
    async close() {
      if (closed) return;
      closed = true;
      await server.shutdown();
    },
  };
}

function page(status: number, title: string, text: string): Response {
  const html = `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head>` +
    `<body style="${PAGE_STYLE}"><h1>${title}</h1><p>${text}</p></body></html>`;
  return new Response(html, {
    status,
    headers: { "content-type": "text/html; charset=utf-8", connection: "close" },
  });
}
