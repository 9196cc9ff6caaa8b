/**
 * Two common connection mistakes get an error that says what is wrong and what to change in
 * config.yaml: a url whose scheme does not match the server (`https://` to a plain HTTP server,
 * `http://` to a TLS one), and `transport: sse` for a Streamable HTTP endpoint. Both are config
 * errors (parked at once); a certificate error or a peer that speaks neither TLS nor HTTP gets no
 * such hint.
 */
import assert from "node:assert/strict";
import { connectServer } from "../../src/mcp/connect.ts";
import { McpManager } from "../../src/mcp/manager.ts";
import type { McpServerConfig } from "../../src/mcp/config.ts";
import { startEverything } from "../cli/_mcp_helpers.ts";
import { makeTestCertificates } from "../fixtures/mcp/certs.ts";
import { startHttpFixture } from "../fixtures/mcp/spawn.ts";
import { CLIENT, failure, serverEntry } from "./_helpers.ts";

/** Where {@linkcode serverEntry} says its entries come from. */
const FILE = "/test/config.yaml";

const withScheme = (url: string, scheme: "http:" | "https:") => url.replace(/^https?:/, scheme);

/** Connects, calls `echo`, closes: the fix the message gives works. */
async function connects(config: McpServerConfig): Promise<void> {
  const connection = await connectServer(config, CLIENT);
  try {
    const result = await connection.client.callTool({ name: "echo", arguments: { message: "ok" } });
    assert.deepEqual(result.content, [{ type: "text", text: "Echo: ok" }]);
  } finally {
    await connection.close();
  }
}

/** Starts `config` in a reconnecting manager: a config error parks it at once, no retries. */
async function parkedAtOnce(config: McpServerConfig, message: string): Promise<void> {
  const manager = new McpManager({ reconnect: true, clientInfo: CLIENT.clientInfo });
  try {
    await manager.start([config]);
    const [state] = manager.servers();
    assert.equal(state.status, "parked", state.error);
    assert.equal(state.error, message);
  } finally {
    await manager.shutdown();
  }
}

/** A TCP peer that greets every connection with an SSH banner: neither TLS nor HTTP. */
function sshLikePeer(): { port: number; close(): Promise<void> } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const connections = new Set<Deno.Conn>();
  const accepting = (async () => {
    for await (const connection of listener) {
      connections.add(connection);
      connection.write(new TextEncoder().encode("SSH-2.0-OpenSSH_9.6\r\n"))
        .catch(() => {});
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    close: async () => {
      listener.close();
      await accepting;
      for (const connection of connections) connection.close();
    },
  };
}

Deno.test("https:// to a plain HTTP server: the url should start with http://, over Streamable HTTP and SSE", async (t) => {
  await using http = await startHttpFixture(["--transport", "http", "--tools", "echo"]);
  await using sse = await startHttpFixture(["--transport", "sse", "--tools", "echo"]);
  const cases: [string, Record<string, unknown>][] = [
    ["streamable", { url: withScheme(http.url, "https:") }],
    ["no-preflight", { url: withScheme(http.url, "https:"), skip_preflight: true }],
    ["insecure", { url: withScheme(http.url, "https:"), ssl_verify: false }],
    ["sse", { url: withScheme(sse.url, "https:"), transport: "sse" }],
  ];
  for (const [name, fields] of cases) {
    await t.step(name, async () => {
      const config = serverEntry(name, { connect_timeout: 8, ...fields });
      const { error } = await failure(config);
      const message = `MCP server '${name}': cannot reach ${fields.url}: the server at that ` +
        "address answers plain HTTP, not HTTPS (the TLS handshake failed: received corrupt " +
        `message of type InvalidContentType). Fix: in ${FILE}, make mcp_servers.${name}.url ` +
        "start with http:// instead of https://";
      assert.equal(error.message, message);
      assert.equal(error.kind, "config");
      await connects({ ...config, url: withScheme(config.url!, "http:") });
      if (name === "streamable") await parkedAtOnce(config, message);
    });
  }

  await t.step("a certificate error keeps its own message", async () => {
    const dir = await Deno.makeTempDir({ prefix: "agent-mcp-hints-" });
    try {
      const certs = await makeTestCertificates(dir);
      await using tls = await startHttpFixture([
        "--transport",
        "http",
        "--tls-cert",
        certs.serverCert,
        "--tls-key",
        certs.serverKey,
      ]);
      const { error } = await failure(
        serverEntry("untrusted", { url: tls.url, connect_timeout: 8 }),
      );
      assert.equal(error.kind, "tls");
      assert.equal(
        error.message,
        `MCP server 'untrusted': cannot reach ${tls.url}: the server's certificate is signed by a ` +
          "CA that is not trusted here (not by one of the system's CAs). Fix: in " +
          `${FILE}, set mcp_servers.untrusted.ssl_verify to the PEM file of the CA that signed it`,
      );
      assert.doesNotMatch(error.message, /plain HTTP|start with http/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });

  await t.step("a peer that answers neither TLS nor HTTP gets no scheme hint", async () => {
    const peer = sshLikePeer();
    try {
      const url = `https://127.0.0.1:${peer.port}/mcp`;
      const { error } = await failure(serverEntry("ssh", { url, connect_timeout: 8 }));
      assert.equal(error.kind, "unreachable");
      assert.match(
        error.message,
        /InvalidContentType \(is the server running and the url right\?\)$/,
      );
      assert.doesNotMatch(error.message, /plain HTTP|Fix:/);
    } finally {
      await peer.close();
    }
  });
});

Deno.test("http:// to an HTTPS server: the url should start with https://, with ssl_verify when its CA is not trusted", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "agent-mcp-hints-" });
  try {
    const certs = await makeTestCertificates(dir);
    const tlsArgs = [
      "--tools",
      "echo",
      "--tls-cert",
      certs.serverCert,
      "--tls-key",
      certs.serverKey,
    ];
    await using tls = await startHttpFixture(["--transport", "http", ...tlsArgs]);
    await using tlsSse = await startHttpFixture(["--transport", "sse", ...tlsArgs]);
    // node:https with a required client certificate: another TLS server implementation.
    await using mutual = await startHttpFixture([
      "--transport",
      "http",
      ...tlsArgs,
      "--client-ca",
      certs.caCert,
    ]);
    const fix = (name: string) =>
      `Fix: in ${FILE}, make mcp_servers.${name}.url start with https:// instead of http://`;
    const cases: [string, Record<string, unknown>, string][] = [
      [
        "default-trust",
        { url: withScheme(tls.url, "http:") },
        `${
          fix("default-trust")
        }, and set mcp_servers.default-trust.ssl_verify to the PEM file of ` +
        "the CA that signed its certificate (not trusted here: invalid peer certificate: " +
        "UnknownIssuer)",
      ],
      ["ca-set", { url: withScheme(tls.url, "http:"), ssl_verify: certs.caCert }, fix("ca-set")],
      [
        "sse",
        { url: withScheme(tlsSse.url, "http:"), transport: "sse", ssl_verify: certs.caCert },
        fix("sse"),
      ],
      [
        "mutual",
        {
          url: withScheme(mutual.url, "http:"),
          ssl_verify: certs.caCert,
          client_cert: [certs.clientCert, certs.clientKey],
        },
        fix("mutual"),
      ],
    ];
    for (const [name, fields, fixText] of cases) {
      await t.step(name, async () => {
        const config = serverEntry(name, { connect_timeout: 8, ...fields });
        const { error } = await failure(config);
        assert.equal(
          error.message,
          `MCP server '${name}': cannot reach ${fields.url}: the server at that address answers ` +
            "HTTPS, not plain HTTP (its answer to plain HTTP was not HTTP: invalid HTTP version " +
            `parsed). ${fixText}`,
        );
        assert.equal(error.kind, "config");
        if (name !== "default-trust") {
          await connects({ ...config, url: withScheme(config.url!, "https:") });
        }
      });
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }

  await t.step("nginx's page for a plain HTTP request to its HTTPS port", async () => {
    // What nginx answers (400) when plain HTTP arrives at a port it serves TLS on.
    const page =
      "<html>\r\n<head><title>400 The plain HTTP request was sent to HTTPS port</title>" +
      "</head>\r\n<body>\r\n<center><h1>400 Bad Request</h1></center>\r\n<center>The plain HTTP " +
      "request was sent to HTTPS port</center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";
    await using nginx = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      () => new Response(page, { status: 400, headers: { "content-type": "text/html" } }),
    );
    const url = `http://127.0.0.1:${nginx.addr.port}/mcp`;
    const { error } = await failure(serverEntry("nginx", { url, connect_timeout: 8 }));
    assert.equal(
      error.message,
      `MCP server 'nginx': HTTP 400 from ${url}: 400 Bad Request The plain HTTP request was sent ` +
        "to HTTPS port nginx: the server at that address answers HTTPS, not plain HTTP. Fix: in " +
        `${FILE}, make mcp_servers.nginx.url start with https:// instead of http://`,
    );
    assert.equal(error.kind, "config");
  });

  await t.step("a peer that answers neither TLS nor HTTP gets no scheme hint", async () => {
    const peer = sshLikePeer();
    try {
      const url = `http://127.0.0.1:${peer.port}/mcp`;
      const { error } = await failure(serverEntry("ssh", { url, connect_timeout: 8 }));
      assert.equal(error.kind, "unreachable", error.message);
      assert.doesNotMatch(error.message, /HTTPS|Fix:/);
    } finally {
      await peer.close();
    }
  });
});

Deno.test("transport: sse for a Streamable HTTP endpoint: remove it, naming the key", async (t) => {
  const hint = (name: string) =>
    "An answer in JSON-RPC means {url} is a Streamable HTTP endpoint, not an SSE one. Fix: in " +
    `${FILE}, remove \`transport: sse\` from mcp_servers.${name} ` +
    `(Streamable HTTP is the default), or set mcp_servers.${name}.transport to http`;
  const sessions = 'the server refused the SSE request: "Bad Request: No valid session ID ' +
    'provided" (JSON-RPC error -32000, HTTP 400).';
  const sessionless = 'the server refused the SSE request: "Method not allowed." ' +
    "(JSON-RPC error -32000, HTTP 405).";
  const cases: [string, () => Promise<{ url: string } & AsyncDisposable>, string][] = [
    ["sessions", () => startHttpFixture(["--transport", "http", "--tools", "echo"]), sessions],
    [
      "modern",
      () => startHttpFixture(["--transport", "http", "--tools", "echo", "--era", "modern"]),
      sessionless,
    ],
    [
      "stateless",
      () => startHttpFixture(["--transport", "http", "--tools", "echo", "--stateless"]),
      sessionless,
    ],
    // The reference server (SDK v1 on Express) answers like the v2 fixture with sessions.
    ["everything", () => startEverything("streamableHttp"), sessions],
  ];
  for (const [name, start, status] of cases) {
    await t.step(name, async () => {
      await using server = await start();
      const config = serverEntry(name, { url: server.url, transport: "sse", connect_timeout: 30 });
      const { error } = await failure(config);
      const message = `MCP server '${name}': ${status} ${hint(name).replace("{url}", server.url)}`;
      assert.equal(error.message, message);
      assert.equal(error.kind, "config");
      if (name === "everything") return;
      await connects({ ...config, transport: "http" });
      if (name === "sessions") await parkedAtOnce(config, message);
    });
  }
});
