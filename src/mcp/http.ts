/**
 * HTTP access to one remote MCP server: its headers on every request, TLS settings
 * (`ssl_verify`, mTLS via `client_cert`/`client_key`), and the content-type preflight.
 *
 * @module
 */
import { createPrivateKey } from "node:crypto";
import https from "node:https";
import { Readable } from "node:stream";
import type { McpServerConfig } from "./config.ts";
import { McpServerError, messageOf } from "./errors.ts";

/** A fetch function as the SDK transports take it. */
export type FetchFunction = (
  input: string | URL | Request,
  init?: RequestInit,
) => Promise<Response>;

/** What a transport needs to reach one server. */
export interface HttpAccess extends Disposable {
  /** Fetch with the server's headers and TLS settings applied. */
  fetch: FetchFunction;
}

/**
 * Builds the HTTP access of `config`. Certificate files are read now, so a missing file fails
 * at connect time with an error naming the server and the path.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { httpAccessFor } from "./http.ts";
 * try {
 *   httpAccessFor({
 *     name: "api", url: "https://example.com/mcp", headers: {}, sslVerify: true,
 *     clientCert: { cert: "/missing/cert.pem" },
 *   } as never);
 * } catch (error) {
 *   assert(String(error).includes("client_cert not found at '/missing/cert.pem'"));
 * }
 * ```
 */
export function httpAccessFor(config: McpServerConfig): HttpAccess {
  const tls = readTlsMaterial(config);
  const headers = Object.entries(config.headers);
  if (config.sslVerify === false && config.url?.startsWith("https:")) {
    return { fetch: withHeaders(insecureFetch(tls), headers), [Symbol.dispose]() {} };
  }
  if (!tls.caCerts && !tls.cert) {
    return {
      fetch: withHeaders((input, init) => fetch(input, init), headers),
      [Symbol.dispose]() {},
    };
  }
  const client = Deno.createHttpClient({
    ...(tls.caCerts ? { caCerts: tls.caCerts } : {}),
    ...(tls.cert && tls.key ? { cert: tls.cert, key: tls.key } : {}),
  });
  return {
    fetch: withHeaders((input, init) => fetch(input, { ...init, client }), headers),
    [Symbol.dispose]: () => client.close(),
  };
}

interface TlsMaterial {
  caCerts?: string[];
  cert?: string;
  key?: string;
}

function readTlsMaterial(config: McpServerConfig): TlsMaterial {
  const material: TlsMaterial = {};
  if (typeof config.sslVerify === "string") {
    material.caCerts = [readPem(config.name, "ssl_verify", config.sslVerify)];
  }
  const cert = config.clientCert;
  if (cert) {
    material.cert = readPem(config.name, "client_cert", cert.cert);
    const keyText = cert.key ? readPem(config.name, "client_key", cert.key) : material.cert;
    material.key = cert.password === undefined
      ? keyText
      : decryptKey(config.name, keyText, cert.password);
  }
  return material;
}

function readPem(server: string, key: string, path: string): string {
  try {
    return Deno.readTextFileSync(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new McpServerError(server, "config", `${key} not found at '${path}'`);
    }
    throw new McpServerError(
      server,
      "config",
      `cannot read ${key} at '${path}': ${messageOf(error)}`,
    );
  }
}

function decryptKey(server: string, pem: string, password: string): string {
  try {
    return createPrivateKey({ key: pem, passphrase: password }).export({
      type: "pkcs8",
      format: "pem",
    })
      .toString();
  } catch (error) {
    throw new McpServerError(
      server,
      "tls",
      `cannot decrypt the client key with the password of client_cert: ${messageOf(error)}`,
    );
  }
}

/** Adds the configured headers to every request, without overriding the transport's own. */
function withHeaders(inner: FetchFunction, headers: [string, string][]): FetchFunction {
  if (headers.length === 0) return inner;
  return (input, init) => {
    const merged = new Headers(input instanceof Request ? input.headers : undefined);
    new Headers(init?.headers).forEach((value, name) => merged.set(name, value));
    for (const [name, value] of headers) if (!merged.has(name)) merged.set(name, value);
    return inner(input, { ...init, headers: merged });
  };
}

/**
 * `ssl_verify: false`: Deno's fetch cannot skip verification per client, so this one request
 * path uses `node:https` with `rejectUnauthorized: false`. Streaming bodies (SSE) pass through.
 */
function insecureFetch(tls: TlsMaterial): FetchFunction {
  return async (input, init) => {
    const request = input instanceof Request ? input : undefined;
    const url = new URL(request ? request.url : String(input));
    const method = init?.method ?? request?.method ?? "GET";
    const headers = new Headers(init?.headers ?? request?.headers);
    const body = init?.body ?? (request?.body ? await request.text() : undefined);
    const payload = body === undefined || body === null
      ? undefined
      : await new Response(body).bytes();
    const signal = init?.signal ?? request?.signal;
    return await new Promise<Response>((resolve, reject) => {
      const req = https.request(url, {
        method,
        headers: Object.fromEntries(headers),
        rejectUnauthorized: false,
        ...(tls.cert && tls.key ? { cert: tls.cert, key: tls.key } : {}),
      }, (res) => {
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          if (Array.isArray(value)) value.forEach((v) => responseHeaders.append(name, v));
          else if (value !== undefined) responseHeaders.set(name, value);
        }
        const status = res.statusCode ?? 502;
        const stream = [101, 204, 205, 304].includes(status) || method === "HEAD"
          ? null
          : Readable.toWeb(res) as ReadableStream<Uint8Array>;
        if (stream === null) res.resume();
        resolve(
          new Response(stream, { status, statusText: res.statusMessage, headers: responseHeaders }),
        );
      });
      const abort = () => {
        req.destroy();
        reject(signal?.reason ?? new DOMException("The request was aborted", "AbortError"));
      };
      if (signal?.aborted) return abort();
      signal?.addEventListener("abort", abort, { once: true });
      req.on(
        "error",
        (error) => reject(new TypeError(`fetch failed: ${error.message}`, { cause: error })),
      );
      req.end(payload);
    });
  };
}

const MCP_CONTENT_TYPES = ["application/json", "text/event-stream"];

/**
 * The fail-fast probe (decisions.md §5): HEAD the URL (GET when HEAD is not allowed). A 2xx with
 * a content type that is not JSON or an event stream gets one JSON-RPC `initialize` POST; if
 * that is still not MCP, the URL is a web page or another service, and the error says so.
 * Other answers (401, 404, 405 …) are left to the real connection to report.
 */
export async function preflight(
  config: McpServerConfig,
  access: HttpAccess,
  signal: AbortSignal,
): Promise<void> {
  const url = config.url!;
  let response: Response;
  try {
    response = await access.fetch(url, { method: "HEAD", signal, redirect: "manual" });
    if (response.status === 405 || response.status === 501) {
      await response.body?.cancel();
      response = await access.fetch(url, {
        method: "GET",
        headers: { accept: "application/json, text/event-stream" },
        signal,
        redirect: "manual",
      });
    }
  } catch (error) {
    if (signal.aborted) throw error;
    throw unreachable(config, error);
  }
  await response.body?.cancel();
  const type = contentType(response);
  if (!response.ok || type === "" || MCP_CONTENT_TYPES.includes(type)) return;
  let probe: Response;
  try {
    probe = await access.fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 0,
        method: "initialize",
        params: {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "agent-preflight", version: "0" },
        },
      }),
      signal,
      redirect: "manual",
    });
  } catch (error) {
    if (signal.aborted) throw error;
    throw unreachable(config, error);
  }
  await probe.body?.cancel();
  const probeType = contentType(probe);
  if (MCP_CONTENT_TYPES.includes(probeType)) return;
  throw new McpServerError(
    config.name,
    "not_mcp",
    `${url} answered with Content-Type '${
      probeType || type
    }', not an MCP endpoint. Check the url ` +
      `(it usually ends in /mcp, or /sse with transport: sse); if it is a valid Streamable HTTP ` +
      `endpoint, set skip_preflight: true`,
  );
}

/** The connection error for a URL where nothing answered. */
export function unreachable(config: McpServerConfig, error: unknown): McpServerError {
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
  const text = messageOf(cause);
  const kind = /certificate|tls|handshake|ssl/i.test(text) ? "tls" : "unreachable";
  const hint = kind === "tls"
    ? " (check ssl_verify, client_cert and client_key)"
    : " (is the server running and the url right?)";
  return new McpServerError(config.name, kind, `cannot reach ${config.url}: ${text}${hint}`, {
    cause: error,
  });
}

function contentType(response: Response): string {
  return (response.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
}
