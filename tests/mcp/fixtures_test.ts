/**
 * Proves the MCP test fixtures (tests/fixtures/mcp) behave as documented, using the bare SDK
 * client. Besides streamable_http_test.ts (our transport under the SDK's client), this is the only
 * test file that talks to the SDK directly; everything else goes through src/mcp.
 */
import assert from "node:assert/strict";
import { createPrivateKey } from "node:crypto";
import {
  Client,
  type ClientOptions,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  SSEClientTransport,
  StreamableHTTPClientTransport,
  type Tool,
  type Transport,
  UnsupportedProtocolVersionError,
  type VersionNegotiationMode,
} from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { makeTestCertificates } from "../fixtures/mcp/certs.ts";
import {
  denoRunArgs,
  GARBAGE_STDIO_FIXTURE,
  type HttpFixture,
  MISC_FIXTURE,
  SERVER_FIXTURE,
  SILENT_STDIO_FIXTURE,
  startHttpFixture,
  stdioCommand,
} from "../fixtures/mcp/spawn.ts";

const PIN: VersionNegotiationMode = { pin: "2026-07-28" };
type Kind = "stdio" | "http" | "sse";

function newClient(mode: VersionNegotiationMode, options: ClientOptions = {}): Client {
  return new Client({ name: "fixtures-test", version: "1.0.0" }, {
    ...options,
    // Over HTTP a probe timeout is a connect failure (not a fallback), so the bound must hold on a
    // loaded machine (`deno test --parallel`); every expected outcome here is an answer, not a
    // timeout, so a generous bound costs nothing.
    versionNegotiation: { mode, probe: { timeoutMs: 20_000 } },
  });
}

/** One client connection to a fixture; `close()` closes the client and ends the fixture. */
interface Session extends AsyncDisposable {
  client: Client;
  fixture?: HttpFixture;
}

async function openTransport(
  kind: Kind,
  serverArgs: string[],
): Promise<{ transport: Transport; fixture?: HttpFixture }> {
  if (kind === "stdio") {
    const { command, args } = stdioCommand(serverArgs);
    return { transport: new StdioClientTransport({ command, args, stderr: "pipe" }) };
  }
  const fixture = await startHttpFixture(["--transport", kind, ...serverArgs]);
  const url = new URL(fixture.url);
  const transport = kind === "http"
    ? new StreamableHTTPClientTransport(url)
    : new SSEClientTransport(url);
  return { transport, fixture };
}

/** Connects; on failure everything is cleaned up and the error rethrown. */
async function connect(
  kind: Kind,
  serverArgs: string[],
  mode: VersionNegotiationMode,
  options: ClientOptions = {},
): Promise<Session> {
  const { transport, fixture } = await openTransport(kind, serverArgs);
  const client = newClient(mode, options);
  const close = async () => {
    await client.close().catch(() => {});
    await fixture?.close();
  };
  try {
    await client.connect(transport, { timeout: 10_000 });
  } catch (error) {
    await transport.close().catch(() => {});
    await close();
    throw error;
  }
  return { client, fixture, [Symbol.asyncDispose]: close };
}

/** Connects expecting failure; returns the error. */
async function connectError(
  kind: Kind,
  serverArgs: string[],
  mode: VersionNegotiationMode,
): Promise<Error> {
  try {
    await using _session = await connect(kind, serverArgs, mode);
  } catch (error) {
    assert.ok(error instanceof Error);
    return error;
  }
  assert.fail(`connect to ${kind} ${serverArgs.join(" ")} unexpectedly succeeded`);
}

function describe(error: Error): string {
  const code = (error as { code?: unknown }).code;
  const data = (error as { data?: unknown }).data;
  return `${error.constructor.name} code=${JSON.stringify(code)} message=${
    JSON.stringify(error.message)
  } data=${JSON.stringify(data)}`;
}

function textOf(result: { content?: unknown }): string {
  const content = result.content as Array<{ type: string; text?: string }>;
  return content.map((block) => block.text ?? "").join("");
}

async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

Deno.test("each era × transport: a matching client connects, lists tools, calls echo", async (t) => {
  const cases: Array<[string, VersionNegotiationMode, "legacy" | "modern"]> = [
    ["legacy", "legacy", "legacy"],
    ["legacy", "auto", "legacy"],
    ["modern", PIN, "modern"],
    ["modern", "auto", "modern"],
    ["dual", "auto", "modern"],
    ["dual", PIN, "modern"],
    ["dual", "legacy", "legacy"],
  ];
  for (const kind of ["stdio", "http", "sse"] as const) {
    for (const [era, mode, landed] of cases) {
      await t.step(`${kind} --era ${era}, client mode ${JSON.stringify(mode)}`, async () => {
        await using session = await connect(kind, ["--era", era], mode);
        assert.equal(session.client.getProtocolEra(), landed);
        const { tools } = await session.client.listTools();
        assert.deepEqual(tools.map((tool) => tool.name), [
          "echo",
          "add",
          "slow",
          "write_note",
          "crash",
          "hang",
          "list-items.v2",
          "rendezvous",
        ]);
        const echo = await session.client.callTool({
          name: "echo",
          arguments: { message: "hi" },
        });
        assert.equal(textOf(echo), "Echo: hi");
        const sum = await session.client.callTool({ name: "add", arguments: { a: 2, b: 40 } });
        assert.equal(textOf(sum), "42");
      });
    }
  }
});

Deno.test("--stateless serves 2025-era HTTP per request, alone or next to the modern era", async () => {
  for (const era of ["legacy", "dual"]) {
    await using session = await connect("http", ["--era", era, "--stateless"], "legacy");
    assert.equal(session.client.getProtocolEra(), "legacy");
    const echo = await session.client.callTool({ name: "echo", arguments: { message: era } });
    assert.equal(textOf(echo), `Echo: ${era}`);
  }
  await using modern = await connect("http", ["--era", "dual", "--stateless"], "auto");
  assert.equal(modern.client.getProtocolEra(), "modern");
});

Deno.test("a modern-only server rejects a legacy-mode client", async (t) => {
  await t.step("stdio: in-band -32022 UnsupportedProtocolVersionError", async () => {
    const error = await connectError("stdio", ["--era", "modern"], "legacy");
    console.log(`  modern-only stdio vs legacy client: ${describe(error)}`);
    assert.ok(error instanceof UnsupportedProtocolVersionError);
    assert.equal(error.code, -32022);
    assert.match(error.message, /^Unsupported protocol version: 2025-/);
    assert.deepEqual((error.data as { supported: string[] }).supported, ["2026-07-28"]);
  });
  await t.step("sse: in-band -32022 UnsupportedProtocolVersionError", async () => {
    const error = await connectError("sse", ["--era", "modern"], "legacy");
    console.log(`  modern-only sse vs legacy client: ${describe(error)}`);
    assert.ok(error instanceof UnsupportedProtocolVersionError);
    assert.equal(error.code, -32022);
  });
  await t.step("http: HTTP 400 carrying the -32022 body, surfaced as SdkHttpError", async () => {
    const error = await connectError("http", ["--era", "modern"], "legacy");
    console.log(`  modern-only http vs legacy client: ${describe(error)}`);
    assert.ok(error instanceof SdkHttpError);
    assert.equal(error.code, SdkErrorCode.ClientHttpNotImplemented);
    assert.equal(error.data?.status, 400);
    assert.match(error.message, /"code":-32022/);
    assert.match(error.message, /Unsupported protocol version: 2025-/);
  });
});

Deno.test("a legacy-only server fails a client pinned to 2026-07-28", async (t) => {
  for (const kind of ["stdio", "http", "sse"] as const) {
    await t.step(kind, async () => {
      const error = await connectError(kind, ["--era", "legacy"], PIN);
      console.log(`  legacy-only ${kind} vs pinned client: ${describe(error)}`);
      assert.ok(error instanceof SdkError);
      assert.equal(error.code, SdkErrorCode.EraNegotiationFailed);
      assert.match(error.message, /did not offer pinned protocol version 2026-07-28/);
    });
  }
});

Deno.test("tool filter, odd names, annotations, resource and prompt", async () => {
  await using session = await connect("http", [
    "--era",
    "dual",
    "--tools",
    "echo,write_note,list-items.v2",
    "--resources",
    "--prompts",
  ], "auto");
  const { client } = session;
  const { tools } = await client.listTools();
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  assert.deepEqual([...byName.keys()], ["echo", "write_note", "list-items.v2"]);
  assert.equal(byName.get("echo")?.annotations?.readOnlyHint, true);
  assert.equal(byName.get("write_note")?.annotations?.readOnlyHint, undefined);
  assert.deepEqual(byName.get("echo")?.inputSchema.required, ["message"]);
  assert.equal(textOf(await client.callTool({ name: "list-items.v2" })), "item-1\nitem-2");

  const { resources } = await client.listResources();
  assert.deepEqual(resources.map((resource) => resource.uri), ["note://hello"]);
  const read = await client.readResource({ uri: "note://hello" });
  assert.deepEqual(read.contents.map((content) => "text" in content && content.text), ["hello"]);

  const { prompts } = await client.listPrompts();
  assert.deepEqual(prompts.map((prompt) => [prompt.name, prompt.arguments?.[0]?.name]), [
    ["greet", "name"],
  ]);
  const prompt = await client.getPrompt({ name: "greet", arguments: { name: "Ada" } });
  assert.deepEqual(prompt.messages[0].content, { type: "text", text: "Hello, Ada!" });
});

Deno.test("--list-changed-after-ms adds late_tool and notifies the client", async (t) => {
  const cases: Array<[Kind, string, VersionNegotiationMode]> = [
    ["stdio", "legacy", "legacy"],
    ["stdio", "dual", "auto"],
    ["http", "legacy", "legacy"],
    ["http", "modern", PIN],
    ["sse", "legacy", "legacy"],
  ];
  for (const [kind, era, mode] of cases) {
    await t.step(`${kind} --era ${era}`, async () => {
      let changed!: (tools: Tool[]) => void;
      const seen = new Promise<Tool[]>((resolve) => changed = resolve);
      await using session = await connect(
        kind,
        [
          "--era",
          era,
          "--tools",
          "echo",
          "--list-changed-after-ms",
          "500",
        ],
        mode,
        {
          listChanged: {
            tools: {
              debounceMs: 0,
              onChanged: (error, tools) => {
                if (error === null && tools !== null) changed(tools);
              },
            },
          },
        },
      );
      assert.deepEqual((await session.client.listTools()).tools.map((tool) => tool.name), [
        "echo",
      ]);
      const tools = await within(5_000, "tools/list_changed", seen);
      assert.deepEqual(tools.map((tool) => tool.name), ["echo", "late_tool"]);
      const late = await session.client.callTool({ name: "late_tool" });
      assert.equal(textOf(late), "late");
    });
  }
});

Deno.test("crash: the server process exits with code 1 in the middle of the call", async (t) => {
  await t.step("http", async () => {
    await using session = await connect("http", ["--era", "legacy"], "legacy");
    const error = await session.client.callTool({ name: "crash" }).then(
      () => assert.fail("crash answered"),
      (error: Error) => error,
    );
    console.log(`  crash over http: ${describe(error)}`);
    const status = await session.fixture!.process.status;
    assert.equal(status.code, 1);
    assert.match(session.fixture!.stderr(), /crash tool called/);
  });
  await t.step("stdio", async () => {
    await using session = await connect("stdio", ["--era", "legacy"], "legacy");
    const error = await session.client.callTool({ name: "crash" }).then(
      () => assert.fail("crash answered"),
      (error: Error) => error,
    );
    console.log(`  crash over stdio: ${describe(error)}`);
    assert.ok(error instanceof SdkError);
    assert.equal(error.code, SdkErrorCode.ConnectionClosed);
  });
});

Deno.test("hang never answers; slow answers after its delay", async () => {
  await using session = await connect("http", ["--era", "dual"], "auto");
  const error = await session.client.callTool({ name: "hang" }, { timeout: 300 }).then(
    () => assert.fail("hang answered"),
    (error: Error) => error,
  );
  assert.ok(error instanceof SdkError);
  assert.equal(error.code, SdkErrorCode.RequestTimeout);
  const started = performance.now();
  const slow = await session.client.callTool({ name: "slow", arguments: { ms: 200 } });
  assert.equal(textOf(slow), "done");
  assert.ok(performance.now() - started >= 190);
});

Deno.test("--require-header answers 401 without the header", async () => {
  const args = ["--era", "dual", "--require-header", "X-Api-Key=secret"];
  const error = await connectError("http", args, "legacy");
  console.log(`  missing header: ${describe(error)}`);
  assert.ok(error instanceof SdkHttpError);
  assert.equal(error.data?.status, 401);

  await using fixture = await startHttpFixture(["--transport", "http", ...args]);
  const client = newClient("auto");
  await client.connect(
    new StreamableHTTPClientTransport(new URL(fixture.url), {
      requestInit: { headers: { "X-Api-Key": "secret" } },
    }),
  );
  assert.equal(
    textOf(await client.callTool({ name: "echo", arguments: { message: "k" } })),
    "Echo: k",
  );
  await client.close();
});

Deno.test("shutdown: stdio ends with stdin, http ends on SIGTERM", async () => {
  const child = new Deno.Command(Deno.execPath(), {
    args: denoRunArgs(SERVER_FIXTURE, ["--transport", "stdio", "--era", "dual"]),
    stdin: "piped",
    stdout: "null",
    stderr: "null",
  }).spawn();
  await child.stdin.close();
  assert.equal((await child.status).code, 0);

  const fixture = await startHttpFixture(["--transport", "http"]);
  await fixture.close();
  assert.equal((await fixture.process.status).code, 0);
});

Deno.test("misc peers: html, garbage-http, silent", async (t) => {
  await t.step("html answers every method with a web page", async () => {
    await using peer = await startHttpFixture(["--kind", "html"], { fixture: MISC_FIXTURE });
    for (const method of ["HEAD", "GET", "POST"]) {
      const response = await fetch(peer.url, { method, body: method === "POST" ? "{}" : null });
      assert.equal(response.status, 200);
      assert.match(response.headers.get("content-type") ?? "", /^text\/html/);
      const body = await response.text();
      if (method !== "HEAD") assert.match(body, /^<html>.*<\/html>$/);
    }
    const client = newClient("legacy");
    const error = await client.connect(new StreamableHTTPClientTransport(new URL(peer.url))).then(
      () => assert.fail("connected to a web page"),
      (error: Error) => error,
    );
    console.log(`  html peer: ${describe(error)}`);
    await client.close();
  });

  await t.step("garbage-http answers 200 application/json that is not JSON", async () => {
    await using peer = await startHttpFixture(["--kind", "garbage-http"], {
      fixture: MISC_FIXTURE,
    });
    const response = await fetch(peer.url, { method: "POST", body: "{}" });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "application/json");
    const body = await response.text();
    assert.throws(() => JSON.parse(body), SyntaxError);
    const client = newClient("legacy");
    const error = await client.connect(new StreamableHTTPClientTransport(new URL(peer.url)), {
      timeout: 2_000,
    }).then(() => assert.fail("connected to garbage"), (error: Error) => error);
    console.log(`  garbage-http peer: ${describe(error)}`);
    await client.close();
  });

  await t.step("silent accepts the connection and never answers", async () => {
    await using peer = await startHttpFixture(["--kind", "silent"], { fixture: MISC_FIXTURE });
    await assert.rejects(
      fetch(peer.url, { method: "POST", body: "{}", signal: AbortSignal.timeout(300) }),
      (error: Error) => error.name === "TimeoutError",
    );
    const client = newClient("legacy");
    const error = await client.connect(new StreamableHTTPClientTransport(new URL(peer.url)), {
      timeout: 500,
    }).then(() => assert.fail("silent peer answered"), (error: Error) => error);
    console.log(`  silent peer: ${describe(error)}`);
    assert.ok(error instanceof SdkError);
    assert.equal(error.code, SdkErrorCode.RequestTimeout);
    await client.close();
  });
});

Deno.test("misc peers: status-405, alone and with --then-sse", async (t) => {
  await t.step("405 to everything", async () => {
    await using peer = await startHttpFixture(["--kind", "status-405"], { fixture: MISC_FIXTURE });
    for (const method of ["POST", "GET"]) {
      const response = await fetch(peer.url, { method, body: method === "POST" ? "{}" : null });
      assert.equal(response.status, 405);
      await response.body?.cancel();
    }
  });

  await t.step("--then-sse: Streamable HTTP gets 405, SSE at the same URL works", async () => {
    await using peer = await startHttpFixture(["--kind", "status-405", "--then-sse"], {
      fixture: MISC_FIXTURE,
    });
    const streamable = newClient("legacy");
    const error = await streamable.connect(new StreamableHTTPClientTransport(new URL(peer.url)))
      .then(() => assert.fail("Streamable HTTP connected"), (error: Error) => error);
    console.log(`  405 peer over Streamable HTTP: ${describe(error)}`);
    assert.ok(error instanceof SdkHttpError);
    assert.equal(error.data?.status, 405);
    await streamable.close();

    const sse = newClient("legacy");
    await sse.connect(new SSEClientTransport(new URL(peer.url)));
    assert.equal(
      textOf(await sse.callTool({ name: "echo", arguments: { message: "s" } })),
      "Echo: s",
    );
    await sse.close();
  });
});

Deno.test("broken stdio servers: garbage and silent", async (t) => {
  for (
    const [name, fixture] of [["garbage", GARBAGE_STDIO_FIXTURE], ["silent", SILENT_STDIO_FIXTURE]]
  ) {
    await t.step(name, async () => {
      const client = newClient("legacy");
      const { command, args } = stdioCommand([], fixture);
      const transport = new StdioClientTransport({ command, args, stderr: "pipe" });
      const errors: string[] = [];
      client.onerror = (error) => errors.push(error.message);
      const error = await client.connect(transport, { timeout: 1_000 }).then(
        () => assert.fail(`${name} stdio server connected`),
        (error: Error) => error,
      );
      console.log(
        `  ${name} stdio: ${describe(error)}; onerror: ${
          JSON.stringify(errors.map((message) => message.replace(/\s+/g, " ").slice(0, 80)))
        }`,
      );
      assert.ok(error instanceof SdkError);
      assert.equal(error.code, SdkErrorCode.RequestTimeout);
      // Lines that are not JSON are skipped silently; JSON that is not JSON-RPC reaches onerror.
      assert.equal(errors.length > 0, name === "garbage");
      await client.close();
    });
  }
});

Deno.test("mTLS: the server requires a client certificate signed by its CA", async () => {
  const dir = await Deno.makeTempDir({ prefix: "agent-mcp-certs-" });
  try {
    const certs = await makeTestCertificates(dir);
    const read = (path: string) => Deno.readTextFile(path);
    await using server = await startHttpFixture([
      "--transport",
      "http",
      "--era",
      "dual",
      "--tls-cert",
      certs.serverCert,
      "--tls-key",
      certs.serverKey,
      "--client-ca",
      certs.caCert,
    ]);
    assert.match(server.url, /^https:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const caCerts = [await read(certs.caCert)];

    const attempt = async (options: Parameters<typeof Deno.createHttpClient>[0]) => {
      using client = Deno.createHttpClient(options);
      // Bounded: a refused handshake the server left open would otherwise hang the suite.
      const signal = AbortSignal.timeout(15_000);
      const response = await fetch(server.url, { client, method: "GET", signal });
      await response.body?.cancel();
      return response.status;
    };
    const refused = async (label: string, options: Parameters<typeof attempt>[0]) => {
      const error = await attempt(options).then(
        (status) => assert.fail(`${label}: answered HTTP ${status}`),
        (error: Error) => error,
      );
      console.log(`  ${label}: ${error.name}: ${error.message}; cause: ${error.cause}`);
      assert.ok(error instanceof TypeError, label);
    };
    await refused("no client certificate", { caCerts });
    await refused("client certificate from another CA", {
      caCerts,
      cert: await read(certs.otherClientCert),
      key: await read(certs.otherClientKey),
    });
    // The right certificate (here as one combined PEM) gets an HTTP answer: 400 for a GET
    // without a session id.
    const combined = await read(certs.clientCombined);
    assert.equal(await attempt({ caCerts, cert: combined, key: combined }), 400);

    // The encrypted key is the client key under the password (the SDK-free way to open it).
    const decrypted = createPrivateKey({
      key: await read(certs.encryptedClientKey),
      format: "pem",
      passphrase: certs.password,
    }).export({ type: "pkcs8", format: "pem" });
    assert.equal(decrypted, await read(certs.clientKey));

    using httpClient = Deno.createHttpClient({
      caCerts,
      cert: await read(certs.clientCert),
      key: await read(certs.clientKey),
    });
    const client = newClient("auto");
    await client.connect(
      new StreamableHTTPClientTransport(new URL(server.url), {
        fetch: (url, init) => fetch(url, { ...init, client: httpClient }),
      }),
    );
    assert.equal(client.getProtocolEra(), "modern");
    assert.equal(
      textOf(await client.callTool({ name: "echo", arguments: { message: "tls" } })),
      "Echo: tls",
    );
    await client.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
