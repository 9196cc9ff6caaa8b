/**
 * How remote connections fail, in the user's words: an SSE-only server without `transport: sse`
 * (whose HEAD never answers), SSE errors worded like Streamable HTTP ones, HTTP error bodies cut
 * to one line, redirects without SDK option names, certificate files that cannot work
 * reported as config problems naming the key, the path and the fix, and a hang-up during the TLS
 * handshake retried like an unreachable server.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { McpServerConfig } from "../../src/mcp/config.ts";
import { connectServer } from "../../src/mcp/connect.ts";
import { bodySummary } from "../../src/mcp/errors.ts";
import { type McpEvent, McpManager } from "../../src/mcp/manager.ts";
import net from "node:net";
import { freePort } from "../cli/_mcp_helpers.ts";
import { makeBadServerCertificates, makeTestCertificates } from "../fixtures/mcp/certs.ts";
import { expressNotFound } from "../fixtures/mcp/express_sse.ts";
import { MISC_FIXTURE, startHttpFixture } from "../fixtures/mcp/spawn.ts";
import { CLIENT, failure, serversFromYaml } from "./_helpers.ts";

const EXPRESS_SSE = new URL("../fixtures/mcp/express_sse.ts", import.meta.url).pathname;

/** JSON is valid YAML: embeds any value in a config text. */
const y = (value: unknown) => JSON.stringify(value);

function entry(name: string, lines: Record<string, unknown>): McpServerConfig {
  const body = Object.entries(lines).map(([key, value]) => `\n  ${key}: ${y(value)}`).join("");
  return serversFromYaml(`${name}:${body}`)[0];
}

function assertOneShortLine(message: string): void {
  assert.ok(!/[\r\n]/.test(message), `not one line: ${JSON.stringify(message)}`);
  assert.ok(!/<[a-z!/]/i.test(message), `HTML left in: ${message}`);
  assert.ok(message.length < 400, `too long (${message.length}): ${message}`);
}

// ---------------------------------------------------------------------------------------------
// An SSE-only server configured without `transport: sse`

Deno.test("an SSE-only url without transport: sse connects over SSE though its HEAD never answers", async () => {
  await using server = await startHttpFixture([], { fixture: EXPRESS_SSE });
  // connect_timeout 8: the preflight gives each request 2 s, then the GET sees the event stream.
  const config = entry("legacy", { url: server.url, connect_timeout: 8 });
  const started = performance.now();
  const connection = await connectServer(config, CLIENT);
  try {
    assert.equal(connection.transport, "sse");
    assert.deepEqual(connection.warnings, [
      "MCP server 'legacy': Streamable HTTP was refused (HTTP 404); connected over SSE instead. " +
      "Set mcp_servers.legacy.transport to sse in /test/config.yaml to skip the failed attempt.",
    ]);
    const result = await connection.client.callTool({ name: "echo", arguments: { message: "hi" } });
    assert.deepEqual(result.content, [{ type: "text", text: "Echo: hi" }]);
  } finally {
    await connection.close();
  }
  const ms = performance.now() - started;
  assert.ok(ms < 7_000, `took ${ms} ms (the HEAD waited for connect_timeout?)`);
});

Deno.test("a 404 from a url ending in /sse, preflight skipped, says transport: sse in one line", async () => {
  await using server = await startHttpFixture([], { fixture: EXPRESS_SSE });
  const { error } = await failure(
    entry("skipped", { url: server.url, skip_preflight: true, connect_timeout: 8 }),
  );
  assert.equal(
    error.message,
    `MCP server 'skipped': HTTP 404 from ${server.url}: Cannot POST /sse ` +
      "(this looks like an SSE endpoint: add `transport: sse`)",
  );
  assertOneShortLine(error.message);
});

// ---------------------------------------------------------------------------------------------
// SSE errors worded like Streamable HTTP ones

Deno.test("SSE: a 401 is refused credentials, as over Streamable HTTP", async () => {
  const args = ["--tools", "echo", "--require-header", "X-Api-Key=secret"];
  await using sse = await startHttpFixture(["--transport", "sse", ...args]);
  await using http = await startHttpFixture(["--transport", "http", ...args]);
  const over = (url: string, transport: string) =>
    failure(entry("locked", { url, transport, connect_timeout: 8 }));
  const { error } = await over(sse.url, "sse");
  const { error: streamable } = await over(http.url, "http");
  assert.equal(error.kind, "auth", error.message);
  assert.equal(
    error.message,
    "MCP server 'locked': the server refused the credentials (HTTP 401); check headers (for " +
      "example an Authorization header) or set auth: oauth",
  );
  assert.equal(error.message, streamable.message);
});

Deno.test("SSE: a refused connection is 'cannot reach' with the running/url hint", async () => {
  const url = `http://127.0.0.1:${freePort()}/sse`;
  for (const transport of ["sse", "http"]) {
    const { error } = await failure(entry("gone", { url, transport, connect_timeout: 8 }));
    assert.equal(error.kind, "unreachable", error.message);
    assert.match(
      error.message,
      new RegExp(
        `^MCP server 'gone': cannot reach ${url}: .+ \\(is the server running and the url right\\?\\)$`,
      ),
    );
    assert.doesNotMatch(error.message, /SSE error|fetch failed/);
  }
});

Deno.test("SSE: 404 and 500 name the url and quote the page's text in one line", async () => {
  await using server = await startHttpFixture([], { fixture: EXPRESS_SSE });
  const origin = new URL(server.url).origin;
  const cases = [
    [`${origin}/nope`, "HTTP 404", "Cannot GET /nope (check the path of the url)"],
    [`${origin}/boom`, "HTTP 500", "Internal Server Error The database & the cache are down."],
  ];
  for (const [url, status, text] of cases) {
    const { error } = await failure(entry("odd", { url, transport: "sse", connect_timeout: 8 }));
    assert.equal(error.message, `MCP server 'odd': ${status} from ${url}: ${text}`);
    assertOneShortLine(error.message);
  }
});

Deno.test("SSE: a url that answers with a web page is not an event stream", async () => {
  await using page = await startHttpFixture(["--kind", "html"], { fixture: MISC_FIXTURE });
  const { error } = await failure(
    entry("page", { url: page.url, transport: "sse", connect_timeout: 8 }),
  );
  assert.equal(error.kind, "protocol", error.message);
  assert.equal(
    error.message,
    `MCP server 'page': ${page.url} did not open an event stream (Invalid content type, ` +
      'expected "text/event-stream"); check the url (an SSE endpoint usually ends in /sse)',
  );
});

Deno.test("a redirect to another origin is explained without the SDK's option names", async () => {
  await using server = await startHttpFixture([], { fixture: EXPRESS_SSE });
  const port = new URL(server.url).port;
  const url = `http://127.0.0.1:${port}/moved`;
  const target = `http://localhost:${port}/sse`;
  for (const transport of ["http", "sse"]) {
    const { error } = await failure(entry("moved", { url, transport, connect_timeout: 8 }));
    assert.doesNotMatch(error.message, /redirectPolicy|same-origin'/);
    assert.equal(
      error.message,
      `MCP server 'moved': HTTP 307 from ${url}: the server redirects to ${target}, and only ` +
        `redirects within the same origin are followed; if that is the intended server, set ` +
        `url: ${target}`,
      transport,
    );
  }
});

Deno.test("bodySummary: HTML pages become their text, JSON errors their message, one capped line", () => {
  assert.equal(bodySummary(expressNotFound("POST", "/mcp")), "Cannot POST /mcp");
  assert.equal(
    bodySummary("<html><head><title>404 Not Found</title></head><body></body></html>"),
    "404 Not Found",
  );
  assert.equal(
    bodySummary(
      "<html><head><style>p{}</style></head><body><script>x()</script>A&nbsp;&lt;b&gt;</body></html>",
    ),
    "A <b>",
  );
  assert.equal(
    bodySummary(
      '{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No session"},"id":null}',
    ),
    "Bad Request: No session",
  );
  assert.equal(bodySummary("plain\n  text\twith   spaces\n"), "plain text with spaces");
  const long = bodySummary(`<p>${"word ".repeat(200)}</p>`);
  assert.ok(long.length <= 201 && long.endsWith("…"), long);
});

// ---------------------------------------------------------------------------------------------
// Certificate files that cannot work: config errors, parked at once

Deno.test("unusable certificate files are config errors naming the key, the path and the fix", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "agent-mcp-tls-files-" });
  try {
    const certs = await makeTestCertificates(dir);
    const notPem = join(dir, "client.der");
    const der = await new Deno.Command("openssl", {
      args: ["x509", "-in", certs.clientCert, "-outform", "der", "-out", notPem],
    }).output();
    assert.ok(der.success, new TextDecoder().decode(der.stderr));
    const url = `https://127.0.0.1:${freePort()}/mcp`;
    const cases: [string, Record<string, unknown>, string][] = [
      [
        "cert-without-key",
        { client_cert: certs.clientCert },
        `client_cert: '${certs.clientCert}' holds no private key; add client_key: <path to the ` +
        "key file>, or write client_cert: [cert, key]",
      ],
      [
        "encrypted-without-password",
        { client_cert: [certs.clientCert, certs.encryptedClientKey] },
        `client_key: the key in '${certs.encryptedClientKey}' is encrypted; add its password as ` +
        "the third item of client_cert: [cert, key, password]",
      ],
      [
        "der-cert",
        { client_cert: [notPem, certs.clientKey] },
        `client_cert: '${notPem}' holds no certificate; it must be a PEM file with a -----BEGIN ` +
        "CERTIFICATE----- block (the file is not PEM; convert a DER file with `openssl x509 " +
        "-inform der -in <file> -out <file>.pem`)",
      ],
      [
        "key-file-without-key",
        { client_cert: certs.clientCert, client_key: certs.caCert },
        `client_key: '${certs.caCert}' holds no private key; it must be a PEM file with a ` +
        "-----BEGIN PRIVATE KEY----- block",
      ],
      [
        "ca-without-certificate",
        { ssl_verify: certs.clientKey },
        `ssl_verify: '${certs.clientKey}' holds no certificate; it must be a PEM CA bundle ` +
        "(-----BEGIN CERTIFICATE----- blocks)",
      ],
    ];
    for (const [name, keys, message] of cases) {
      await t.step(name, async () => {
        const config = entry(name, { url, connect_timeout: 8, ...keys });
        const { error } = await failure(config);
        assert.equal(error.kind, "config", error.message);
        assert.equal(error.message, `MCP server '${name}': ${message}`);
        // The manager treats it as a config problem: parked at once, no backoff retries.
        const manager = new McpManager({ reconnect: true, clientInfo: CLIENT.clientInfo });
        try {
          await manager.start([config]);
          const [state] = manager.servers();
          assert.equal(state.status, "parked", state.error);
          assert.equal(state.error, `MCP server '${name}': ${message}`);
        } finally {
          await manager.shutdown();
        }
      });
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// ---------------------------------------------------------------------------------------------
// Server certificates that must be refused: said in plain words, with the fix that works

Deno.test("an expired, other-host or self-signed server certificate is refused in plain words", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "agent-mcp-tls-server-" });
  try {
    const certs = await makeTestCertificates(dir);
    const bad = await makeBadServerCertificates(dir, certs);
    const cases: [string, { cert: string; key: string }, string][] = [
      [
        "expired",
        bad.expired,
        "the server's certificate expired on 2020-01-02; the server must renew it (if it has, " +
        "check this machine's clock)",
      ],
      [
        "other-host",
        bad.otherHost,
        "the server's certificate is not valid for 127.0.0.1, only for other.example. Fix: in " +
        "/test/config.yaml, make mcp_servers.other-host.url use a name the certificate holds",
      ],
      [
        "self-signed",
        bad.selfSigned,
        "the server presents a CA certificate (basicConstraints CA:TRUE, as `openssl req -x509` " +
        "makes by default) as its own, which is refused: the server needs a certificate for " +
        "127.0.0.1 signed by a CA. Fix: in /test/config.yaml, set " +
        "mcp_servers.self-signed.ssl_verify to the PEM file of that CA",
      ],
    ];
    for (const [name, pair, message] of cases) {
      await t.step(name, async () => {
        await using server = await startHttpFixture([
          "--transport",
          "http",
          "--tls-cert",
          pair.cert,
          "--tls-key",
          pair.key,
          "--tools",
          "echo",
        ]);
        // The self-signed certificate is its own CA: trusting it does not make it acceptable.
        const ca = name === "self-signed" ? pair.cert : certs.caCert;
        const config = entry(name, { url: server.url, ssl_verify: ca, connect_timeout: 8 });
        const { error } = await failure(config);
        assert.equal(error.kind, "tls", error.message);
        assert.equal(error.message, `MCP server '${name}': cannot reach ${server.url}: ${message}`);
        // Retrying cannot fix a certificate: parked at once, no backoff retries.
        const manager = new McpManager({ reconnect: true, clientInfo: CLIENT.clientInfo });
        try {
          await manager.start([config]);
          assert.equal(manager.servers()[0].status, "parked", manager.servers()[0].error);
        } finally {
          await manager.shutdown();
        }
      });
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// ---------------------------------------------------------------------------------------------
// A server that hangs up during the TLS handshake: no certificate was checked, so it is retried

Deno.test("a server that hangs up during the TLS handshake is backed off and retried, not parked at once", async (t) => {
  // Reads the ClientHello, then closes: what a restarting or overloaded TLS front can do.
  const server = net.createServer((socket) => socket.once("data", () => socket.end()));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `https://127.0.0.1:${(server.address() as net.AddressInfo).port}/mcp`;
  try {
    // Deno's fetch (system CAs or a CA bundle) and node:https (ssl_verify: false).
    for (const sslVerify of [true, false]) {
      await t.step(`ssl_verify: ${sslVerify}`, async () => {
        const config = entry(`hangup-${sslVerify}`, { url, ssl_verify: sslVerify });
        const { error } = await failure(config);
        assert.equal(error.kind, "unreachable", error.message);
        assert.match(error.message, /\(check ssl_verify, client_cert and client_key\)$/);
        const events: McpEvent[] = [];
        const manager = new McpManager({
          reconnect: true,
          random: () => 0.5,
          clientInfo: CLIENT.clientInfo,
          onEvent: (event) => events.push(event),
        });
        try {
          await manager.start([config]);
          assert.equal(manager.servers()[0].status, "reconnecting", JSON.stringify(events));
          assert.deepEqual(events.map((event) => event.type), ["failed"]);
          assert.equal((events[0] as { retryInMs?: number }).retryInMs, 1_000);
        } finally {
          await manager.shutdown();
        }
      });
    }
  } finally {
    server.close();
  }
});
