/**
 * HTTP access to one remote MCP server: its headers on every request to its origin, TLS settings
 * (`ssl_verify`, mTLS via `client_cert`/`client_key`), and the content-type preflight.
 *
 * @module
 */
import { createPrivateKey, createPublicKey, type KeyObject, X509Certificate } from "node:crypto";
import http from "node:http";
import https from "node:https";
import type { Socket } from "node:net";
import tls from "node:tls";
import { Readable } from "node:stream";
import { SdkHttpError } from "@modelcontextprotocol/client";
import type { McpServerConfig } from "./config.ts";
import { proxyFor, type ProxyRoute } from "./proxy.ts";
import {
  answerProblem,
  bodySummary,
  causeChainText,
  entryFix,
  McpServerError,
  messageOf,
  quotedServerText,
} from "./errors.ts";

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
  const material = readTlsMaterial(config);
  const headers = Object.entries(config.headers);
  if (config.sslVerify === false && config.url?.startsWith("https:")) {
    return {
      fetch: withHeaders(insecureFetch(material), headers, config.url),
      [Symbol.dispose]() {},
    };
  }
  if (!material.caCerts && !material.cert) {
    return {
      fetch: withHeaders((input, init) => fetch(input, init), headers, config.url),
      [Symbol.dispose]() {},
    };
  }
  let client: Deno.HttpClient;
  try {
    client = Deno.createHttpClient({
      ...(material.caCerts ? { caCerts: material.caCerts } : {}),
      ...(material.cert && material.key ? { cert: material.cert, key: material.key } : {}),
    });
  } catch (error) {
    // The files were checked above; what is left is their content (a key that does not match).
    throw new McpServerError(
      config.name,
      "config",
      `the TLS files cannot be used: ${messageOf(error)} (check ${tlsKeys(config)})`,
      { cause: error },
    );
  }
  return {
    fetch: withHeaders((input, init) => fetch(input, { ...init, client }), headers, config.url),
    [Symbol.dispose]: () => client.close(),
  };
}

/**
 * The warning for an entry whose server certificate is not checked (`ssl_verify: false` on an
 * `https://` url), or `undefined`. Said on every connect, so the setting is never silently insecure.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { insecureWarning } from "./http.ts";
 * const config = { name: "api", url: "https://example.com/mcp", sslVerify: false } as never;
 * assert.match(insecureWarning(config)!, /^MCP server 'api': ssl_verify is false/);
 * assert.equal(insecureWarning({ ...config as object, sslVerify: true } as never), undefined);
 * ```
 */
export function insecureWarning(config: McpServerConfig): string | undefined {
  if (config.sslVerify !== false || !config.url?.startsWith("https:")) return undefined;
  return `MCP server '${config.name}': ssl_verify is false, so the certificate of ` +
    `${new URL(config.url).host} is not checked: anyone on the network path can read and change ` +
    `this traffic, headers and tokens included. ${
      entryFix(config, "set <ssl_verify> to the PEM file of the CA that signed its certificate")
    }`;
}

interface TlsMaterial {
  caCerts?: string[];
  cert?: string;
  key?: string;
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g;
const CERTIFICATE_LABELS = ["CERTIFICATE", "X509 CERTIFICATE", "TRUSTED CERTIFICATE"];
const KEY_LABELS = [
  "PRIVATE KEY",
  "RSA PRIVATE KEY",
  "EC PRIVATE KEY",
  "DSA PRIVATE KEY",
  "ENCRYPTED PRIVATE KEY",
];

/** The PEM blocks of `text` whose label is one of `labels`, in order. */
function pemBlocks(text: string, labels: readonly string[]): string[] {
  const blocks = [...text.matchAll(PEM_BLOCK)];
  return blocks.filter((block) => labels.includes(block[1])).map((block) => block[0]);
}

/**
 * Reads and checks the certificate files, so a file that cannot work is a config error naming
 * the key, the path and the fix (Deno's own errors, such as "No keys found in key data", name
 * neither).
 */
function readTlsMaterial(config: McpServerConfig): TlsMaterial {
  const server = config.name;
  const cert = config.clientCert;
  // Every file is read first: a missing one is the first thing to fix.
  const caPath = typeof config.sslVerify === "string" ? config.sslVerify : undefined;
  const caText = caPath === undefined ? undefined : readPem(server, "ssl_verify", caPath);
  const certText = cert ? readPem(server, "client_cert", cert.cert) : undefined;
  const keyText = cert?.key ? readPem(server, "client_key", cert.key) : certText;

  const material: TlsMaterial = {};
  if (caText !== undefined) {
    if (pemBlocks(caText, CERTIFICATE_LABELS).length === 0) {
      throw new McpServerError(
        server,
        "config",
        `ssl_verify: '${caPath}' holds no certificate; it must be a PEM CA bundle ` +
          `(-----BEGIN CERTIFICATE----- blocks)${derHint(caText, "x509")}`,
      );
    }
    material.caCerts = [caText];
  }
  if (cert && certText !== undefined && keyText !== undefined) {
    if (pemBlocks(certText, CERTIFICATE_LABELS).length === 0) {
      throw new McpServerError(
        server,
        "config",
        `client_cert: '${cert.cert}' holds no certificate; it must be a PEM file with a ` +
          `-----BEGIN CERTIFICATE----- block${derHint(certText, "x509")}`,
      );
    }
    const keyPath = cert.key ?? cert.cert;
    const [keyBlock] = pemBlocks(keyText, KEY_LABELS);
    if (keyBlock === undefined) {
      throw new McpServerError(
        server,
        "config",
        cert.key
          ? `client_key: '${keyPath}' holds no private key; it must be a PEM file with a ` +
            `-----BEGIN PRIVATE KEY----- block${derHint(keyText, "pkey")}`
          : `client_cert: '${keyPath}' holds no private key; add client_key: <path to the key ` +
            `file>, or write client_cert: [cert, key]`,
      );
    }
    const encrypted = keyBlock.startsWith("-----BEGIN ENCRYPTED PRIVATE KEY-----") ||
      /^Proc-Type:\s*4,ENCRYPTED/m.test(keyBlock);
    if (encrypted && cert.password === undefined) {
      throw new McpServerError(
        server,
        "config",
        `${cert.key ? "client_key" : "client_cert"}: the key in '${keyPath}' is encrypted; ` +
          `add its password as the third item of client_cert: [cert, key, password]`,
      );
    }
    material.cert = certText;
    material.key = cert.password === undefined
      ? keyBlock
      : decryptKey(server, keyBlock, cert.password);
    checkKeyMatches(config, pemBlocks(certText, CERTIFICATE_LABELS)[0], material.key);
  }
  return material;
}

/**
 * Refuses a private key that does not belong to the client certificate, naming both files: Deno
 * says only "KeyMismatch", and the `ssl_verify: false` path (node:https) fails the handshake
 * later as "unsupported protocol", which reads like a server problem.
 */
function checkKeyMatches(config: McpServerConfig, certPem: string, keyPem: string): void {
  const cert = config.clientCert!;
  let certKey: KeyObject;
  let ownKey: KeyObject;
  try {
    certKey = new X509Certificate(certPem).publicKey;
    ownKey = createPublicKey(createPrivateKey(keyPem));
  } catch (error) {
    const bad = /certificate|x509/i.test(messageOf(error)) ? "client_cert" : "client_key";
    throw new McpServerError(
      config.name,
      "config",
      `${bad}: '${bad === "client_cert" ? cert.cert : cert.key ?? cert.cert}' cannot be read as ` +
        `a PEM ${bad === "client_cert" ? "certificate" : "private key"}: ${messageOf(error)}`,
      { cause: error },
    );
  }
  const der = (key: KeyObject) => key.export({ type: "spki", format: "der" });
  if (der(certKey).equals(der(ownKey))) return;
  const where = cert.key
    ? `the key in '${cert.key}' does not belong to the certificate in '${cert.cert}'`
    : `the key in '${cert.cert}' does not belong to the certificate in the same file`;
  throw new McpServerError(
    config.name,
    "config",
    `client_cert: ${where}. ${
      entryFix(
        config,
        "point <client_cert> (and client_key, if set) at a certificate and its own key",
      )
    }`,
  );
}

/** A conversion hint for a file that holds no PEM text at all (likely DER). */
function derHint(text: string, command: "x509" | "pkey"): string {
  if (text.includes("-----BEGIN ")) return "";
  return ` (the file is not PEM; convert a DER file with \`openssl ${command} -inform der ` +
    `-in <file> -out <file>.pem\`)`;
}

/** The config keys that name TLS files in `config`, for hints. */
function tlsKeys(config: McpServerConfig): string {
  const keys = [
    ...(typeof config.sslVerify === "string" ? ["ssl_verify"] : []),
    ...(config.clientCert ? ["client_cert"] : []),
    ...(config.clientCert?.key ? ["client_key"] : []),
  ];
  return keys.join(", ");
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

/**
 * Adds the configured headers to every request to the server's own origin, without overriding
 * the transport's own. Requests elsewhere (an OAuth authorization server on another host, its
 * client registration and token endpoints) get none: a static `Authorization` or API-key header
 * is the server's credential, not theirs.
 */
function withHeaders(
  inner: FetchFunction,
  headers: [string, string][],
  serverUrl: string | undefined,
): FetchFunction {
  if (headers.length === 0) return inner;
  const origin = serverUrl === undefined ? undefined : new URL(serverUrl).origin;
  return (input, init) => {
    const target = new URL(input instanceof Request ? input.url : String(input));
    if (target.origin !== origin) return inner(input, init);
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
function insecureFetch(material: TlsMaterial): FetchFunction {
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
    const route = proxyFor(url, processEnv);
    const tlsOptions = {
      rejectUnauthorized: false,
      ...(material.cert && material.key ? { cert: material.cert, key: material.key } : {}),
    };
    // node:https ignores HTTPS_PROXY; Deno's fetch does not, so neither may this path.
    const socket = route ? await tunnel(route, url, signal) : undefined;
    return await new Promise<Response>((resolve, reject) => {
      const req = https.request(url, {
        method,
        headers: Object.fromEntries(headers),
        ...tlsOptions,
        ...(socket
          ? {
            createConnection: () =>
              tls.connect({
                socket,
                ...tlsOptions,
                ...(isIp(url.hostname) ? {} : { servername: url.hostname }),
              }),
          }
          : {}),
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

/** The process environment, as Deno's fetch reads it for its proxy settings. */
function processEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined; // no env permission: Deno's fetch sees none either
  }
}

function isIp(hostname: string): boolean {
  return /^[\d.]+$/.test(hostname) || hostname.includes(":");
}

/** A socket tunnelled to `target`'s host and port through an HTTP proxy (CONNECT). */
function tunnel(route: ProxyRoute, target: URL, signal?: AbortSignal | null): Promise<Socket> {
  const { url: proxy } = route;
  if (proxy.protocol !== "http:") {
    throw new TypeError(
      `fetch failed: the proxy ${route.shown} (from ${route.variable}) is not an http:// proxy, ` +
        `which is all ssl_verify: false can tunnel through`,
    );
  }
  const authority = `${target.hostname}:${target.port || "443"}`;
  const headers: Record<string, string> = { host: authority };
  if (proxy.username) {
    const user = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
    headers["proxy-authorization"] = `Basic ${btoa(user)}`;
  }
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: proxy.hostname.replace(/^\[|\]$/g, ""),
      port: Number(proxy.port || 80),
      method: "CONNECT",
      path: authority,
      headers,
      ...(signal ? { signal } : {}),
    });
    req.on("connect", (res, socket) => {
      if (res.statusCode === 200) return resolve(socket);
      socket.destroy();
      reject(
        new TypeError(
          `fetch failed: the proxy ${route.shown} (from ${route.variable}) answered ` +
            `${res.statusCode} ${res.statusMessage ?? ""}`.trimEnd() + ` to CONNECT ${authority}`,
        ),
      );
    });
    req.on(
      "error",
      (error) => reject(new TypeError(`fetch failed: ${error.message}`, { cause: error })),
    );
    req.end();
  });
}

const MCP_CONTENT_TYPES = ["application/json", "text/event-stream"];

/** The longest one preflight request may take: it is a hint, never the reason to give up. */
const PREFLIGHT_STEP_MS = 5_000;

/** What the preflight learnt about the URL. */
export interface PreflightResult {
  /**
   * A HEAD or GET answered 2xx with `text/event-stream`: the URL opens an event stream, as a
   * legacy HTTP+SSE endpoint does, so a refused Streamable HTTP POST (even a 404) means "use SSE".
   */
  eventStream: boolean;
}

/**
 * The fail-fast probe (decisions.md §5): HEAD the URL (GET when HEAD is not allowed). A 2xx with
 * a content type that is not JSON or an event stream gets one JSON-RPC `initialize` POST; if
 * that is still not MCP, the URL is a web page or another service, and the error says so.
 * Other answers (401, 404, 405 …) are left to the real connection to report.
 *
 * Only status and headers are looked at (bodies are cancelled), and each request gets at most
 * {@linkcode PREFLIGHT_STEP_MS} (a quarter of `connect_timeout` when that is shorter): some
 * servers answer HEAD with their GET handler and never send the headers of its event stream.
 * A HEAD without an answer is retried as a GET; a probe without an answer is inconclusive and the
 * real connection reports.
 */
export async function preflight(
  config: McpServerConfig,
  access: HttpAccess,
  signal: AbortSignal,
): Promise<PreflightResult> {
  const url = config.url!;
  const stepMs = Math.min(PREFLIGHT_STEP_MS, config.connectTimeoutSeconds * 250);
  const ask = async (init: RequestInit): Promise<Response | undefined> => {
    const step = AbortSignal.any([signal, AbortSignal.timeout(stepMs)]);
    try {
      const response = await access.fetch(url, { ...init, signal: step, redirect: "manual" });
      await response.body?.cancel().catch(() => {});
      return response;
    } catch (error) {
      if (signal.aborted) throw error;
      if (step.aborted) return undefined; // no headers in time: inconclusive
      throw unreachable(config, error);
    }
  };
  let response = await ask({ method: "HEAD" });
  if (response === undefined || response.status === 405 || response.status === 501) {
    response = await ask({
      method: "GET",
      headers: { accept: "application/json, text/event-stream" },
    });
  }
  if (response === undefined) return { eventStream: false };
  const type = contentType(response);
  const eventStream = response.ok && type === "text/event-stream";
  if (!response.ok || type === "" || MCP_CONTENT_TYPES.includes(type)) return { eventStream };
  const probe = await ask({
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
  });
  if (probe === undefined) return { eventStream };
  const probeType = contentType(probe);
  if (MCP_CONTENT_TYPES.includes(probeType)) return { eventStream };
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
  const hungUp = HANDSHAKE_HANG_UP.test(text);
  // A hang-up checked no certificate: it is retried like any unreachable server, not parked.
  const kind = !hungUp && /certificate|tls|handshake|ssl/i.test(text) ? "tls" : "unreachable";
  const explained = kind === "tls" ? certificateProblem(config, text) : undefined;
  if (explained) {
    return new McpServerError(config.name, kind, `cannot reach ${config.url}: ${explained}`, {
      cause: error,
    });
  }
  const route = config.url ? proxyFor(new URL(config.url), processEnv) : undefined;
  const hint = kind === "tls" || hungUp
    ? " (check ssl_verify, client_cert and client_key)"
    : route
    ? ` (through the proxy ${route.shown} from ${route.variable}: is the proxy running, and does ` +
      `it reach the server? If the server is reachable without it, add ` +
      `${new URL(config.url!).hostname} to NO_PROXY)`
    : " (is the server running and the url right?)";
  return new McpServerError(config.name, kind, `cannot reach ${config.url}: ${text}${hint}`, {
    cause: error,
  });
}

/** The server closed the connection during the TLS handshake (rustls; node:tls). */
const HANDSHAKE_HANG_UP =
  /tls handshake eof|socket disconnected before secure TLS connection was established/i;

/**
 * A TLS handshake failure in the user's words, with the fix, or `undefined` when it is not one of
 * the common ones. rustls names them in its own terms ("UnknownIssuer", "CaUsedAsEndEntity",
 * seconds since 1970), and one blanket hint pointed at settings that cannot fix an expired
 * certificate or a url naming another host.
 */
function certificateProblem(config: McpServerConfig, text: string): string | undefined {
  const host = config.url ? new URL(config.url).hostname : "the server";
  const date = (seconds: string) => new Date(Number(seconds) * 1000).toISOString().slice(0, 10);
  const expired = text.match(/certificate expired\b.*?not valid after (\d+)/);
  if (expired) {
    return `the server's certificate expired on ${date(expired[1])}; the server must renew it ` +
      `(if it has, check this machine's clock)`;
  }
  const early = text.match(/certificate not valid yet\b.*?not valid before (\d+)/);
  if (early) {
    return `the server's certificate is valid only from ${date(early[1])}; check this machine's ` +
      `clock`;
  }
  const otherName = text.match(
    /certificate not valid for name "[^"]*"; certificate is only valid for (.*)$/,
  );
  if (otherName) {
    const names = [...otherName[1].matchAll(/"([^"]+)"/g)].map((match) => match[1]);
    return `the server's certificate is not valid for ${host}, only for ${
      names.length ? names.join(", ") : otherName[1]
    }. ${entryFix(config, "make <url> use a name the certificate holds")}`;
  }
  if (/CaUsedAsEndEntity/.test(text)) {
    return `the server presents a CA certificate (basicConstraints CA:TRUE, as \`openssl req ` +
      `-x509\` makes by default) as its own, which is refused: the server needs a certificate for ` +
      `${host} signed by a CA. ${entryFix(config, "set <ssl_verify> to the PEM file of that CA")}`;
  }
  if (/UnknownIssuer/.test(text)) {
    const bundle = typeof config.sslVerify === "string"
      ? `neither by the system's CAs nor by one in '${config.sslVerify}'`
      : "not by one of the system's CAs";
    return `the server's certificate is signed by a CA that is not trusted here (${bundle}). ${
      entryFix(config, "set <ssl_verify> to the PEM file of the CA that signed it")
    }`;
  }
  return undefined;
}

/** What a TLS client says when the peer answered in plain text (rustls; OpenSSL). */
const NOT_TLS = /received corrupt message(?: of type \w+)?|wrong version number/i;
/** What the HTTP client says when the answer does not start like HTTP (a TLS server's alert). */
const NOT_HTTP = /invalid HTTP version parsed/i;
/** A handshake failure only a TLS server causes (its certificate, its alert). */
const TLS_SPOKEN = /certificate|UnknownIssuer|NotValidForName|alert/i;
/** A certificate signed by a CA that is not trusted here. */
const UNTRUSTED_CA = /UnknownIssuer|unable to get local issuer|self[- ]signed/i;
/** What nginx and Go's TLS servers answer a plain HTTP request with. */
const PLAIN_TO_TLS_PAGE =
  /plain HTTP request was sent to HTTPS port|HTTP request to an HTTPS server/i;

/**
 * A failure to reach the url explained as its scheme not matching the server, or `undefined`.
 * `https://` to a server that answers plain HTTP fails the TLS handshake (it reads the HTTP answer
 * as a corrupt TLS record); `http://` to a TLS server gets a TLS alert where the HTTP answer should
 * be. Either suspicion is confirmed by one HEAD to the url's origin (no path or query, none of the
 * entry's headers: nothing of the request is sent in plain text) over the other scheme; only an
 * answer there makes the failure a config error whose fix is the scheme. A certificate error is
 * never this: the server speaks TLS.
 */
export async function wrongScheme(
  config: McpServerConfig,
  error: unknown,
  signal: AbortSignal,
): Promise<McpServerError | undefined> {
  if (!(error instanceof McpServerError) || !["unreachable", "tls"].includes(error.kind)) {
    return undefined;
  }
  if (config.url === undefined) return undefined;
  const url = new URL(config.url);
  const said = causeChainText(error.cause);
  const stepMs = Math.min(PREFLIGHT_STEP_MS, config.connectTimeoutSeconds * 250);
  if (url.protocol === "https:") {
    const notTls = said.match(NOT_TLS)?.[0];
    if (notTls === undefined || (await originAnswers(url, "http:", stepMs, signal)) !== "answers") {
      return undefined;
    }
    return new McpServerError(
      config.name,
      "config",
      `cannot reach ${config.url}: the server at that address answers plain HTTP, not HTTPS ` +
        `(the TLS handshake failed: ${notTls}). ${
          entryFix(config, "make <url> start with http:// instead of https://")
        }`,
      { cause: error.cause },
    );
  }
  const notHttp = said.match(NOT_HTTP)?.[0];
  if (notHttp === undefined) return undefined;
  const tls = await originAnswers(url, "https:", stepMs, signal);
  if (tls === undefined) return undefined;
  // The probe trusts the system CAs only: a CA bundle or ssl_verify: false may be set already.
  const untrusted = tls !== "answers" && config.sslVerify === true &&
      UNTRUSTED_CA.test(tls.handshake)
    ? `, and set <ssl_verify> to the PEM file of the CA that signed its certificate (not trusted ` +
      `here: ${tls.handshake})`
    : "";
  return new McpServerError(
    config.name,
    "config",
    `cannot reach ${config.url}: the server at that address answers HTTPS, not plain HTTP (its ` +
      `answer to plain HTTP was not HTTP: ${notHttp}). ${
        entryFix(config, `make <url> start with https:// instead of http://${untrusted}`)
      }`,
    { cause: error.cause },
  );
}

/**
 * Whether the origin of `url` answers over `scheme`: `"answers"` for any HTTP answer, a TLS
 * handshake failure that only a TLS server causes (a certificate error, an alert), or `undefined`
 * for anything else.
 */
async function originAnswers(
  url: URL,
  scheme: "http:" | "https:",
  stepMs: number,
  signal: AbortSignal,
): Promise<"answers" | { handshake: string } | undefined> {
  const port = url.port || (url.protocol === "https:" ? "443" : "80");
  try {
    const response = await fetch(`${scheme}//${url.hostname}:${port}/`, {
      method: "HEAD",
      redirect: "manual",
      signal: AbortSignal.any([signal, AbortSignal.timeout(stepMs)]),
    });
    await response.body?.cancel().catch(() => {});
    return "answers";
  } catch (error) {
    const parts = causeChainText(error).split(": ");
    const at = parts.findIndex((part) => TLS_SPOKEN.test(part));
    return at < 0 ? undefined : { handshake: parts.slice(at).join(": ") };
  }
}

/**
 * The connection error for an HTTP error answer, the same over Streamable HTTP and SSE: 401/403
 * are credential problems; a JSON-RPC error in the body is the server refusing `request` (by
 * default "the request"), in its words ({@linkcode jsonRpcRefusal}); anything else names the
 * status, the URL and a one-line summary of the body ({@linkcode bodySummary}), with a hint where
 * the status suggests one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { httpStatusFailure } from "./http.ts";
 * const config = { name: "api", url: "http://127.0.0.1:3002/sse", transport: "http" } as never;
 * const error = httpStatusFailure(config, 404, "<html><body>Cannot POST /sse</body></html>");
 * assert.equal(
 *   error.message,
 *   "MCP server 'api': HTTP 404 from http://127.0.0.1:3002/sse: Cannot POST /sse " +
 *     "(this looks like an SSE endpoint: add `transport: sse`)",
 * );
 * const refused = httpStatusFailure(
 *   config,
 *   400,
 *   '{"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"Bad protocolVersion"}}',
 *   undefined,
 *   "the MCP handshake (initialize)",
 * );
 * assert.equal(
 *   refused.message,
 *   "MCP server 'api': the server refused the MCP handshake (initialize): " +
 *     '"Bad protocolVersion" (JSON-RPC error -32602, HTTP 400)',
 * );
 * ```
 */
export function httpStatusFailure(
  config: McpServerConfig,
  status: number,
  body: string | undefined,
  options?: ErrorOptions,
  request = "the request",
): McpServerError {
  if (status === 401 || status === 403) {
    return new McpServerError(
      config.name,
      "auth",
      `the server refused the credentials (HTTP ${status}); check headers (for example an ` +
        "Authorization header) or set auth: oauth",
      options,
    );
  }
  const refusal = jsonRpcRefusal(status, body);
  if (refusal) {
    // The server speaks MCP at this url and said no: no hint about the url is due.
    return new McpServerError(
      config.name,
      "protocol",
      `the server refused ${request}: ${refusal}`,
      options,
    );
  }
  const summary = status >= 300 && status < 400
    ? redirectInUserTerms(body ?? "")
    : bodySummary(body ?? "");
  if (status === 400 && config.url?.startsWith("http:") && PLAIN_TO_TLS_PAGE.test(summary)) {
    return new McpServerError(
      config.name,
      "config",
      `HTTP 400 from ${config.url}: ${summary}: the server at that address answers HTTPS, not ` +
        `plain HTTP. ${entryFix(config, "make <url> start with https:// instead of http://")}`,
      options,
    );
  }
  let hint = "";
  const route = GATEWAY_ERRORS.includes(status) && config.url
    ? proxyFor(new URL(config.url), processEnv)
    : undefined;
  if (route) {
    // Likely the proxy's own answer: a server it could not reach.
    hint = ` (through the proxy ${route.shown} from ${route.variable}: does it reach the ` +
      `server? If the server is reachable without it, add ${
        new URL(config.url!).hostname
      } to NO_PROXY)`;
  } else if (status === 404) {
    const path = config.url ? new URL(config.url).pathname : "";
    hint = config.transport !== "sse" && /\/sse\/?$/i.test(path)
      ? " (this looks like an SSE endpoint: add `transport: sse`)"
      : " (check the path of the url)";
  }
  return new McpServerError(
    config.name,
    "protocol",
    `HTTP ${status} from ${config.url}${summary ? `: ${summary}` : ""}${hint}`,
    options,
  );
}

/** What a proxy answers for a server it cannot reach (refused, unknown, timed out). */
const GATEWAY_ERRORS = [502, 503, 504];

/**
 * An HTTP error answer whose body is a JSON-RPC error response (`{"jsonrpc": "2.0", "id": …,
 * "error": {"code", "message"}}`), as some servers refuse a request (a bad `initialize`, an
 * unknown session, bad call arguments), as a clause: the server's message quoted and cut
 * ({@linkcode quotedServerText}), its code and the HTTP status. `undefined` for a status below
 * 400 or any other body.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonRpcRefusal } from "./http.ts";
 * const body = '{"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"Session not found"}}';
 * assert.equal(
 *   jsonRpcRefusal(404, body),
 *   '"Session not found" (JSON-RPC error -32001, HTTP 404)',
 * );
 * assert.equal(jsonRpcRefusal(404, "<html>Not Found</html>"), undefined);
 * ```
 */
export function jsonRpcRefusal(status: number, body: unknown): string | undefined {
  const error = status >= 400 && typeof body === "string" ? jsonRpcErrorIn(body) : undefined;
  if (!error) return undefined;
  // The SDK's servers quote their validator's issue list: one line, as in a handshake refusal.
  const words = answerProblem(error.message) ?? error.message;
  return `${quotedServerText(words)} (JSON-RPC error ${error.code}, HTTP ${status})`;
}

/**
 * {@linkcode jsonRpcRefusal} of the SDK's error for an HTTP error answer (`SdkHttpError`);
 * `undefined` for any other error.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SdkErrorCode, SdkHttpError } from "@modelcontextprotocol/client";
 * import { jsonRpcRefusalOf } from "./http.ts";
 * const text = '{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Unknown tool"}}';
 * const error = new SdkHttpError(SdkErrorCode.ClientHttpNotImplemented, "Error POSTing", {
 *   status: 400,
 *   text,
 * });
 * assert.equal(jsonRpcRefusalOf(error), '"Unknown tool" (JSON-RPC error -32602, HTTP 400)');
 * assert.equal(jsonRpcRefusalOf(new Error(text)), undefined);
 * ```
 */
export function jsonRpcRefusalOf(error: unknown): string | undefined {
  return error instanceof SdkHttpError ? jsonRpcRefusal(error.status, error.data.text) : undefined;
}

/**
 * The JSON-RPC `error` in the body of the SDK's error for an HTTP error answer (`SdkHttpError`,
 * status 400 or more); `undefined` for any other error or body.
 */
export function jsonRpcErrorOf(error: unknown): { code: number; message: string } | undefined {
  return error instanceof SdkHttpError && error.status >= 400 && typeof error.data.text === "string"
    ? jsonRpcErrorIn(error.data.text)
    : undefined;
}

/** The `error` of a JSON-RPC error response in `body`, `undefined` when it is not one. */
function jsonRpcErrorIn(body: string): { code: number; message: string } | undefined {
  let value;
  try {
    value = JSON.parse(body);
  } catch {
    return undefined;
  }
  const error = value?.jsonrpc === "2.0" ? value.error : undefined;
  return Number.isInteger(error?.code) && typeof error.message === "string"
    ? { code: error.code, message: error.message }
    : undefined;
}

/**
 * The SDK's note on a redirect it did not follow, in the words of the config: it names its own
 * option (`redirectPolicy`) and calls the url "the endpoint".
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { redirectInUserTerms } from "./http.ts";
 * assert.equal(
 *   redirectInUserTerms(
 *     "Redirect to https://b.example/mcp not followed; use that URL as the endpoint if it is " +
 *       "the intended server (redirectPolicy: 'same-origin')",
 *   ),
 *   "the server redirects to https://b.example/mcp, and only redirects within the same origin " +
 *     "are followed; if that is the intended server, set url: https://b.example/mcp",
 * );
 * ```
 */
export function redirectInUserTerms(text: string): string {
  const plain = text.replace(/\s*\(redirectPolicy: '[^']*'\)/g, "");
  const to = plain.match(/^Redirect to (\S+) not followed\b/);
  if (to) {
    return `the server redirects to ${to[1]}, and only redirects within the same origin are ` +
      `followed; if that is the intended server, set url: ${to[1]}`;
  }
  const downgrade = plain.match(/^Redirect from https to plain http not followed; try (\S+)/);
  if (downgrade) {
    return `the server redirects from https to plain http, which is not followed; try url: ${
      downgrade[1]
    }`;
  }
  if (/^Redirect not followed\b/.test(plain)) {
    return "the server redirects, which is not followed; set url to the address it redirects to";
  }
  return plain;
}

function contentType(response: Response): string {
  return (response.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
}
