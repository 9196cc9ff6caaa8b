/**
 * The MCP client over every transport against the reference server
 * (`@modelcontextprotocol/server-everything` over stdio, Streamable HTTP and SSE), and the HTTP
 * access settings against the fixture server: `headers` with `${VAR}`, mTLS in every
 * `client_cert` shape with `ssl_verify`, `~` in certificate paths, and the initial-connect SSE
 * fallback with its warning.
 */
import assert from "node:assert/strict";
import { ConfigSource } from "../../src/home/config.ts";
import { type McpServerConfig, parseMcpServers } from "../../src/mcp/config.ts";
import { connectServer, type McpConnection } from "../../src/mcp/connect.ts";
import { httpAccessFor } from "../../src/mcp/http.ts";
import { McpManager } from "../../src/mcp/manager.ts";
import type { RegisteredTool } from "../../src/mcp/registry.ts";
import { type EverythingServer, everythingStdio, startEverything } from "../cli/_mcp_helpers.ts";
import { makeTestCertificates, type TestCertificates } from "../fixtures/mcp/certs.ts";
import { type HttpFixture, MISC_FIXTURE, startHttpFixture } from "../fixtures/mcp/spawn.ts";
import { CLIENT, failure, serversFromYaml } from "./_helpers.ts";

/** JSON is valid YAML: embeds any value in a config text. */
const y = (value: unknown) => JSON.stringify(value);

/** Parses a `mcp_servers` body with a chosen home folder and secret lookup; fails on errors. */
function servers(
  body: string,
  options: { userHome?: string; lookup?: (name: string) => string | undefined } = {},
): McpServerConfig[] {
  const text = `mcp_servers:\n${body.replace(/^/gm, "  ")}\n`;
  const { servers, issues } = parseMcpServers(ConfigSource.parse("/test/config.yaml", text), {
    lookup: options.lookup ?? (() => undefined),
    userHome: options.userHome ?? "/home/test",
    workspaceFolder: Deno.cwd(),
    pathSeparator: "/",
  });
  const errors = issues.filter((issue) => issue.severity === "error");
  assert.deepEqual(errors, [], "config errors");
  return servers;
}

function textOf(result: { content?: unknown }): string {
  const content = (result.content ?? []) as Array<{ type: string; text?: string }>;
  return content.map((block) => block.text ?? "").join("");
}

/** Connects, calls `echo`, closes. */
async function echoes(config: McpServerConfig, message = "tls"): Promise<McpConnection> {
  const connection = await connectServer(config, CLIENT);
  try {
    const result = await connection.client.callTool({ name: "echo", arguments: { message } });
    assert.equal(textOf(result), `Echo: ${message}`);
  } finally {
    await connection.close();
  }
  return connection;
}

// ---------------------------------------------------------------------------------------------
// server-everything over stdio, Streamable HTTP and SSE

/** The entries each transport is tested with: all tools, filtered three ways, no utilities. */
function everythingEntries(
  transport: "stdio" | "http" | "sse",
  server: EverythingServer | undefined,
): McpServerConfig[] {
  const where = transport === "stdio"
    ? `command: ${y(everythingStdio().command)}\n  args: ${y(everythingStdio().args)}`
    : `url: ${y(server!.url)}${transport === "sse" ? "\n  transport: sse" : ""}`;
  const entry = (name: string, tools = "") =>
    `${name}:\n  ${where}\n  connect_timeout: 30${tools ? `\n  tools:\n${tools}` : ""}`;
  return servers([
    entry("everything"),
    // include wins over exclude (decisions.md §5): get-env stays.
    entry("picky", `    include: ["echo", "get-*"]\n    exclude: ["get-env"]`),
    entry("sparse", `    exclude: ["get-env", "get-tiny-*", "trigger-*"]`),
    entry("bare", `    include: echo\n    resources: false\n    prompts: false`),
    entry("no-resources", `    include: []\n    resources: false`),
    entry("no-prompts", `    include: []\n    prompts: "off"`),
  ].join("\n"));
}

const UTILITIES = ["list_resources", "read_resource", "list_prompts", "get_prompt"];

function namesOf(tools: RegisteredTool[], server: string): string[] {
  return tools.filter((tool) => tool.server === server).map((tool) => tool.name);
}

for (const transport of ["stdio", "http", "sse"] as const) {
  Deno.test(`server-everything over ${transport}: names, filters, calls, resources, prompts`, async (t) => {
    await using server = transport === "stdio"
      ? undefined
      : await startEverything(transport === "sse" ? "sse" : "streamableHttp");
    const manager = new McpManager({ reconnect: false, clientInfo: CLIENT.clientInfo });
    try {
      await manager.start(everythingEntries(transport, server));
      const states = manager.servers();
      for (const state of states) {
        assert.equal(state.status, "connected", `${state.name}: ${state.error}`);
        assert.equal(state.transport, transport);
        assert.equal(state.era, "legacy");
        // The one tool that runs only as a task is left out, said where a filter lets it in.
        assert.deepEqual(
          state.warnings,
          ["everything", "sparse"].includes(state.name)
            ? [
              `MCP server '${state.name}': tool 'simulate-research-query' is not registered ` +
              "because it runs only as a task (execution.taskSupport: required), and this " +
              "client does not run MCP tasks",
            ]
            : [],
        );
        assert.equal(state.serverInfo?.name, "mcp-servers/everything");
      }
      const tools = manager.tools();

      await t.step("native tools are mcp__<server>__<tool>, sanitised", () => {
        const own = tools.filter((tool) => tool.server === "everything");
        const native = own.filter((tool) => tool.kind === "tool");
        const originals = native.map((tool) => tool.originalName);
        for (const name of ["echo", "get-sum", "get-env", "get-tiny-image"]) {
          assert.ok(originals.includes(name), `${name} missing from ${originals}`);
        }
        for (const tool of native) {
          assert.equal(tool.name, `mcp__everything__${tool.originalName.replace(/\W/g, "_")}`);
          assert.match(tool.name, /^[A-Za-z0-9_]{1,64}$/);
        }
        const byName = new Map(own.map((tool) => [tool.name, tool]));
        assert.equal(byName.get("mcp__everything__get_sum")?.originalName, "get-sum");
        assert.equal(byName.get("mcp__everything__echo")?.readOnly, true);
      });

      await t.step("utility tools are registered: the server offers resources and prompts", () => {
        const utilities = tools.filter((tool) => tool.server === "everything")
          .filter((tool) => tool.kind === "utility").map((tool) => tool.name);
        assert.deepEqual(utilities, UTILITIES.map((name) => `mcp__everything__${name}`));
      });

      await t.step("include/exclude on original names, globs too", () => {
        const native = (server: string) =>
          tools.filter((tool) => tool.server === server && tool.kind === "tool")
            .map((tool) => tool.originalName);
        const all = native("everything");
        assert.deepEqual(
          native("picky"),
          all.filter((name) => name === "echo" || name.startsWith("get-")),
        );
        assert.ok(native("picky").includes("get-sum") && native("picky").includes("get-env"));
        assert.deepEqual(
          native("sparse"),
          all.filter((name) =>
            name !== "get-env" && !name.startsWith("get-tiny-") && !name.startsWith("trigger-")
          ),
        );
        assert.ok(!native("sparse").includes("get-tiny-image"));
        assert.ok(native("sparse").includes("get-sum"));
        // Filters never touch the utilities: their switches default to true.
        for (const server of ["picky", "sparse"]) {
          assert.deepEqual(
            tools.filter((tool) => tool.server === server && tool.kind === "utility")
              .map((tool) => tool.name),
            UTILITIES.map((name) => `mcp__${server}__${name}`),
          );
        }
      });

      await t.step("resources: false and prompts: false drop the utility tools", () => {
        assert.deepEqual(namesOf(tools, "bare"), ["mcp__bare__echo"]);
        // `include: []` keeps no native tool: only the utilities the switches allow remain.
        assert.deepEqual(namesOf(tools, "no-resources"), [
          "mcp__no_resources__list_prompts",
          "mcp__no_resources__get_prompt",
        ]);
        assert.deepEqual(namesOf(tools, "no-prompts"), [
          "mcp__no_prompts__list_resources",
          "mcp__no_prompts__read_resource",
        ]);
      });

      await t.step("calls return the server's result", async () => {
        const echo = await manager.callTool("mcp__everything__echo", { message: "hi" });
        assert.equal(echo.isError, undefined);
        assert.equal(textOf(echo), "Echo: hi");
        const sum = await manager.callTool("mcp__everything__get_sum", { a: 2, b: 3 });
        assert.equal(textOf(sum), "The sum of 2 and 3 is 5.");
        assert.equal(
          textOf(await manager.callTool("mcp__bare__echo", { message: "b" })),
          "Echo: b",
        );
      });

      await t.step("list_resources, then read_resource of a listed uri", async () => {
        const listed = await manager.callTool("mcp__everything__list_resources");
        const resources = JSON.parse(textOf({ content: listed.content.slice(0, 1) })) as Array<
          { uri: string; mimeType?: string }
        >;
        assert.ok(resources.length > 0);
        const doc = resources.find((resource) => resource.uri.endsWith("/architecture.md"));
        assert.ok(doc, `no architecture.md in ${resources.map((r) => r.uri)}`);
        const read = await manager.callTool("mcp__everything__read_resource", { uri: doc.uri });
        assert.equal(read.isError, undefined);
        assert.match(textOf(read), /^# Everything Server – Architecture/);
      });

      await t.step(
        "list_resources names the resource templates too; read_resource fills one",
        async () => {
          const listed = await manager.callTool("mcp__everything__list_resources");
          assert.equal(listed.content.length, 2, JSON.stringify(listed.content).slice(0, 300));
          const note = listed.content[1].type === "text" ? listed.content[1].text : "";
          assert.match(
            note,
            /^Resource templates: read_resource also takes a uri made from a uriTemplate below, each \{variable\} filled in:\n/,
          );
          const templates = JSON.parse(note.slice(note.indexOf("\n") + 1)) as Array<
            { uriTemplate: string }
          >;
          assert.deepEqual(templates.map((template) => template.uriTemplate), [
            "demo://resource/dynamic/text/{resourceId}",
            "demo://resource/dynamic/blob/{resourceId}",
          ]);
          const read = await manager.callTool("mcp__everything__read_resource", {
            uri: "demo://resource/dynamic/text/7",
          });
          assert.match(textOf(read), /^Resource 7: This is a plaintext resource/);
        },
      );

      await t.step("list_prompts, then get_prompt with arguments", async () => {
        const listed = await manager.callTool("mcp__everything__list_prompts");
        const prompts = JSON.parse(textOf(listed)) as Array<
          { name: string; arguments?: { name: string }[] }
        >;
        const args = prompts.find((prompt) => prompt.name === "args-prompt");
        assert.ok(args, `no args-prompt in ${prompts.map((p) => p.name)}`);
        assert.equal(args.arguments?.[0]?.name, "city");
        const rendered = await manager.callTool("mcp__everything__get_prompt", {
          name: "args-prompt",
          arguments: { city: "Paris" },
        });
        const prompt = JSON.parse(textOf(rendered)) as {
          messages: { content: { text: string } }[];
        };
        assert.equal(prompt.messages[0].content.text, "What's weather in Paris?");
      });
    } finally {
      await manager.shutdown();
    }
  });
}

// ---------------------------------------------------------------------------------------------
// headers

/** The Streamable HTTP fixture with `echo`, refusing (401) requests without `X-Api-Key: secret`. */
function startKeyedFixture(): Promise<HttpFixture> {
  return startHttpFixture([
    "--transport",
    "http",
    "--tools",
    "echo",
    "--require-header",
    "X-Api-Key=secret",
  ]);
}

Deno.test("headers: ${API_KEY} from the secret scope is sent; a wrong value is an auth error", async () => {
  await using fixture = await startKeyedFixture();
  const entry = `keyed:\n  url: ${y(fixture.url)}\n  headers:\n    X-Api-Key: "\${API_KEY}"`;
  const right = servers(entry, { lookup: (name) => name === "API_KEY" ? "secret" : undefined });
  assert.equal(right[0].headers["X-Api-Key"], "secret");
  await echoes(right[0], "key");

  for (
    const lookup of [(name: string) => name === "API_KEY" ? "wrong" : undefined, () => undefined]
  ) {
    const [config] = servers(entry, { lookup });
    const { error } = await failure(config);
    assert.equal(error.kind, "auth", error.message);
    assert.match(
      error.message,
      /^MCP server 'keyed': the server refused the credentials \(HTTP 401\)/,
    );
  }
});

Deno.test("headers go to the server's own origin only, not to an authorization server elsewhere", async () => {
  // The SDK's OAuth discovery, registration and token requests use the transport's fetch.
  const seen: { origin: string; authorization: string | null; key: string | null }[] = [];
  const record = (request: Request) => {
    seen.push({
      origin: new URL(request.url).origin,
      authorization: request.headers.get("authorization"),
      key: request.headers.get("x-api-key"),
    });
    return new Response("{}", { headers: { "content-type": "application/json" } });
  };
  await using server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, record);
  await using elsewhere = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, record);
  const own = `http://127.0.0.1:${server.addr.port}`;
  const other = `http://127.0.0.1:${elsewhere.addr.port}`;
  const [config] = servers(
    `api:\n  url: ${y(`${own}/mcp`)}\n  headers:\n    Authorization: Bearer static\n` +
      `    X-Api-Key: k`,
  );
  using access = httpAccessFor(config);
  for (const url of [`${own}/mcp`, `${other}/.well-known/oauth-authorization-server`]) {
    await (await access.fetch(url, { method: "GET" })).body?.cancel();
  }
  await (await access.fetch(new Request(`${other}/token`, { method: "POST", body: "x" }))).body
    ?.cancel();
  assert.deepEqual(seen, [
    { origin: own, authorization: "Bearer static", key: "k" },
    { origin: other, authorization: null, key: null },
    { origin: other, authorization: null, key: null },
  ]);
});

// ---------------------------------------------------------------------------------------------
// mTLS

interface TlsSetup extends AsyncDisposable {
  certs: TestCertificates;
  dir: string;
  http: HttpFixture;
  sse: HttpFixture;
}

async function tlsSetup(): Promise<TlsSetup> {
  const dir = await Deno.makeTempDir({ prefix: "agent-mcp-tls-" });
  const fixtures: HttpFixture[] = [];
  const cleanup = async () => {
    await Promise.all(fixtures.map((fixture) => fixture.close()));
    await Deno.remove(dir, { recursive: true });
  };
  try {
    const certs = await makeTestCertificates(dir);
    const tls = [
      "--tls-cert",
      certs.serverCert,
      "--tls-key",
      certs.serverKey,
      "--client-ca",
      certs.caCert,
      "--tools",
      "echo",
    ];
    const [http, sse] = await Promise.all([
      startHttpFixture(["--transport", "http", ...tls]),
      startHttpFixture(["--transport", "sse", ...tls]),
    ]);
    fixtures.push(http, sse);
    return { certs, dir, http, sse, [Symbol.asyncDispose]: cleanup };
  } catch (error) {
    await cleanup();
    throw error;
  }
}

Deno.test("mTLS: every client_cert shape, ssl_verify, ~ in paths, and refusals", async (t) => {
  await using setup = await tlsSetup();
  const { certs, http, sse } = setup;
  const ca = `ssl_verify: ${y(certs.caCert)}`;
  const entry = (name: string, lines: string, url = http.url) =>
    servers(`${name}:\n  url: ${y(url)}\n  connect_timeout: 20\n  ${lines}`)[0];

  await t.step("client_cert: one PEM with certificate and key", async () => {
    await echoes(entry("combined", `${ca}\n  client_cert: ${y(certs.clientCombined)}`));
  });
  await t.step("client_cert: [cert, key]", async () => {
    await echoes(entry("pair", `${ca}\n  client_cert: ${y([certs.clientCert, certs.clientKey])}`));
  });
  await t.step("client_cert: [cert, encrypted key, password]", async () => {
    const list = [certs.clientCert, certs.encryptedClientKey, certs.password];
    await echoes(entry("encrypted", `${ca}\n  client_cert: ${y(list)}`));
  });
  await t.step("client_cert: cert path + client_key", async () => {
    await echoes(
      entry(
        "split",
        `${ca}\n  client_cert: ${y(certs.clientCert)}\n  client_key: ${y(certs.clientKey)}`,
      ),
    );
  });
  await t.step("over SSE too", async () => {
    const config = entry(
      "tls-sse",
      `${ca}\n  transport: sse\n  client_cert: ${y(certs.clientCombined)}`,
      sse.url,
    );
    const connection = await echoes(config);
    assert.equal(connection.transport, "sse");
  });
  await t.step("ssl_verify: false connects without the CA, and warns", async () => {
    const connection = await echoes(
      entry("insecure", `ssl_verify: false\n  client_cert: ${y(certs.clientCombined)}`),
    );
    assert.deepEqual(connection.warnings, [
      `MCP server 'insecure': ssl_verify is false, so the certificate of ${
        new URL(http.url).host
      } ` +
      "is not checked: anyone on the network path can read and change this traffic, headers and " +
      "tokens included. Fix: in /test/config.yaml, set mcp_servers.insecure.ssl_verify to the " +
      "PEM file of the CA that signed its certificate",
    ]);
  });
  await t.step("a key that does not belong to the certificate is a config error", async () => {
    for (const [name, lines] of [["mismatch", ca], ["mismatch-insecure", "ssl_verify: false"]]) {
      const pair = [certs.clientCert, certs.otherClientKey];
      const { error } = await failure(entry(name, `${lines}\n  client_cert: ${y(pair)}`));
      assert.equal(error.kind, "config", error.message);
      assert.equal(
        error.message,
        `MCP server '${name}': client_cert: the key in '${certs.otherClientKey}' does not belong ` +
          `to the certificate in '${certs.clientCert}'. Fix: in /test/config.yaml, point ` +
          `mcp_servers.${name}.client_cert (and client_key, if set) at a certificate and its own key`,
      );
    }
  });
  await t.step("~ is expanded in client_cert, client_key and ssl_verify", async () => {
    const userHome = setup.dir;
    const tilde = (path: string) => `~/${path.slice(userHome.length + 1)}`;
    const [config] = servers(
      `home:\n  url: ${y(http.url)}\n  ssl_verify: ${y(tilde(certs.caCert))}\n` +
        `  client_cert: ${y(tilde(certs.clientCert))}\n  client_key: ${y(tilde(certs.clientKey))}`,
      { userHome },
    );
    assert.equal(config.sslVerify, certs.caCert);
    assert.deepEqual(config.clientCert, { cert: certs.clientCert, key: certs.clientKey });
    await echoes(config);
  });

  await t.step("the server's certificate needs ssl_verify: <ca path>", async () => {
    const { error, ms } = await failure(
      entry("system-cas", `client_cert: ${y(certs.clientCombined)}`),
    );
    assert.equal(error.kind, "tls", error.message);
    assert.match(error.message, /cannot reach https:\/\/127\.0\.0\.1:\d+\/mcp: .*ssl_verify/);
    assert.ok(ms < 15_000, `took ${ms} ms`);
  });
  await t.step(
    "no client certificate: a tls/unreachable error naming the server, fast",
    async () => {
      for (const [name, lines] of [["no-cert", ca], ["no-cert-insecure", "ssl_verify: false"]]) {
        const { error, ms } = await failure(entry(name, lines));
        assert.ok(["tls", "unreachable"].includes(error.kind), `${error.kind}: ${error.message}`);
        assert.ok(error.message.includes(http.url), error.message);
        assert.ok(ms < 15_000, `${name} took ${ms} ms (a hang until connect_timeout?)`);
      }
    },
  );
  await t.step("a client certificate from another CA is refused", async () => {
    const other = [certs.otherClientCert, certs.otherClientKey];
    const { error, ms } = await failure(entry("other-ca", `${ca}\n  client_cert: ${y(other)}`));
    assert.ok(["tls", "unreachable"].includes(error.kind), `${error.kind}: ${error.message}`);
    assert.ok(ms < 15_000, `took ${ms} ms`);
  });
  await t.step("a wrong key password is a tls error saying so", async () => {
    const list = [certs.clientCert, certs.encryptedClientKey, "not-the-password"];
    const { error } = await failure(entry("bad-password", `${ca}\n  client_cert: ${y(list)}`));
    assert.equal(error.kind, "tls");
    assert.match(
      error.message,
      /^MCP server 'bad-password': cannot decrypt the client key with the password of client_cert/,
    );
  });
});

Deno.test({
  name: "closing a connection that uses ssl_verify: <ca path> or client_cert does not throw",
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "agent-mcp-ca-" });
    try {
      const certs = await makeTestCertificates(dir);
      // Plain HTTP: the CA bundle is loaded into a Deno.createHttpClient but never used.
      await using fixture = await startHttpFixture(["--transport", "http", "--tools", "echo"]);
      const [config] = servers(`ca:\n  url: ${y(fixture.url)}\n  ssl_verify: ${y(certs.caCert)}`);
      const connection = await connectServer(config, CLIENT);
      await connection.close();
      assert.ok(connection.closed);
      const manager = new McpManager({ reconnect: false });
      await manager.start([config]);
      assert.equal(manager.servers()[0].status, "connected");
      await manager.shutdown();
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

// ---------------------------------------------------------------------------------------------
// SSE fallback

Deno.test("a Streamable HTTP entry on an SSE-only server falls back to SSE with a warning", async () => {
  await using peer = await startHttpFixture(["--kind", "status-405", "--then-sse"], {
    fixture: MISC_FIXTURE,
  });
  const manager = new McpManager({ reconnect: false, clientInfo: CLIENT.clientInfo });
  try {
    await manager.start(serversFromYaml(
      `plain:\n  url: ${y(peer.url)}\n  connect_timeout: 20\n` +
        `pinned:\n  url: ${y(peer.url)}\n  transport: sse\n  connect_timeout: 20`,
    ));
    const [plain, pinned] = manager.servers();
    assert.equal(plain.status, "connected", plain.error);
    assert.equal(plain.transport, "sse");
    assert.equal(plain.warnings.length, 1);
    assert.match(
      plain.warnings[0],
      /^MCP server 'plain': Streamable HTTP was refused \(HTTP 405\)/,
    );
    assert.match(
      plain.warnings[0],
      /Set mcp_servers\.plain\.transport to sse in .*config\.yaml to skip the failed attempt\.$/,
    );

    assert.equal(pinned.status, "connected", pinned.error);
    assert.equal(pinned.transport, "sse");
    assert.deepEqual(pinned.warnings, []);

    for (const server of ["plain", "pinned"]) {
      const result = await manager.callTool(`mcp__${server}__echo`, { message: server });
      assert.equal(textOf(result), `Echo: ${server}`);
    }
  } finally {
    await manager.shutdown();
  }
});

Deno.test("the SSE fallback is for the refused transport only: a 401 is not retried over SSE", async () => {
  await using fixture = await startKeyedFixture();
  const { error } = await failure(serversFromYaml(`locked:\n  url: ${y(fixture.url)}`)[0]);
  assert.equal(error.kind, "auth");
});
