/**
 * A Streamable HTTP server that refuses a request with an HTTP 4xx whose body is a JSON-RPC error
 * (as several servers do for a bad `initialize`, an unknown session or bad call arguments): the
 * message reads the JSON-RPC error, the server's words quoted and cut, with its code and the
 * HTTP status, for the handshake (`agent mcp test`), tool discovery and a call (`agent mcp
 * call`). The initial connect still retries over SSE (decisions.md), but when that fails too the
 * server's refusal is what is reported, not why SSE failed.
 */
import assert from "node:assert/strict";
import { cli, cliJson, tempHome } from "./_helpers.ts";
import { writeConfig, yamlValue } from "./_mcp_helpers.ts";

/** Which request the server refuses, and how it answers a GET (the SSE fallback's request). */
interface RefusingOptions {
  refuse: "initialize" | "tools/list" | "tools/call";
  status: number;
  error: { code: number; message: string };
  get: "405" | "json-rpc-400";
  /** The `inputSchema` of its tool `echo`; default `{type: "object"}`. */
  schema?: Record<string, unknown>;
}

/**
 * A minimal Streamable HTTP MCP server (2025 era, JSON answers, one tool `echo`) that answers
 * the request `refuse` with HTTP `status` and a JSON-RPC error body. Records each request as
 * `<method> <JSON-RPC method or Accept>`.
 */
function refusingServer(options: RefusingOptions) {
  const seen: string[] = [];
  const rpcError = (id: unknown, status: number, error: { code: number; message: string }) =>
    Response.json({ jsonrpc: "2.0", id: id ?? null, error }, { status });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    if (request.method !== "POST") {
      seen.push(`${request.method} ${request.headers.get("accept")}`);
      // A server with sessions refuses a GET without one in JSON-RPC (the MCP SDK's servers).
      return options.get === "json-rpc-400" && request.method === "GET"
        ? rpcError(null, 400, {
          code: -32000,
          message: "Bad Request: No valid session ID provided",
        })
        : new Response("Method Not Allowed", { status: 405 });
    }
    const message = await request.json();
    seen.push(`POST ${message.method}`);
    if (message.id === undefined) return new Response(null, { status: 202 });
    if (message.method === options.refuse) {
      return rpcError(message.id, options.status, options.error);
    }
    const result = message.method === "initialize"
      ? {
        protocolVersion: message.params.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: "refusing", version: "1.0.0" },
      }
      : message.method === "tools/list"
      ? { tools: [{ name: "echo", inputSchema: options.schema ?? { type: "object" } }] }
      : message.method === "tools/call"
      ? { content: [{ type: "text", text: "echo ok" }] }
      : {};
    return Response.json({ jsonrpc: "2.0", id: message.id, result });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/mcp`,
    seen,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

async function homeFor(url: string) {
  const home = await tempHome();
  writeConfig(
    home.home,
    ["mcp_servers:", "  remote:", `    url: ${yamlValue(url)}`, "    connect_timeout: 10", ""]
      .join("\n"),
  );
  return home;
}

/**
 * `agent <args>` run on a home whose server `remote` is a {@linkcode refusingServer} (its GETs
 * answered 405), stopped after.
 */
async function refusedRun(options: Omit<RefusingOptions, "get">, args: string[]) {
  await using server = refusingServer({ ...options, get: "405" });
  await using home = await homeFor(server.url);
  return await cli(home.home, args);
}

/** The server's words: a line break, an escape sequence, and more than 200 characters. */
const START = "Invalid params: protocolVersion\n\u001b[31m";
const WORDS = `${START}${"x".repeat(300)}`;
/** As quoted: JSON-escaped, cut to 200 characters, the last one `…`. */
const QUOTED = JSON.stringify(`${START}${"x".repeat(199 - START.length)}…`);

Deno.test("mcp test: an initialize refused with HTTP 400 and a JSON-RPC error reads as the refused handshake, after the SSE retry", async (t) => {
  for (const get of ["405", "json-rpc-400"] as const) {
    await t.step(`GET answered ${get}`, async () => {
      await using server = refusingServer({
        refuse: "initialize",
        status: 400,
        error: { code: -32602, message: WORDS },
        get,
      });
      await using home = await homeFor(server.url);
      const message = "MCP server 'remote': the server refused the MCP handshake (initialize): " +
        `${QUOTED} (JSON-RPC error -32602, HTTP 400)`;

      const text = await cli(home.home, ["mcp", "test", "remote"]);
      assert.equal(text.code, 1, text.stderr);
      assert.equal(text.stderr, `${message}\n`);
      // The Streamable HTTP refusal was retried once over SSE (a GET for an event stream).
      const posts = server.seen.filter((line) => line === "POST initialize");
      assert.equal(posts.length, 1, server.seen.join("\n"));
      const retry = server.seen.slice(server.seen.indexOf("POST initialize") + 1);
      assert.deepEqual(retry, ["GET text/event-stream"], server.seen.join("\n"));

      const doc = await cliJson(home.home, ["mcp", "test", "remote", "--json"], 1);
      assert.equal(doc.error, message);
    });
  }
});

Deno.test("mcp test: a 404 with a JSON-RPC error is the server's refusal, with no hint about the url's path", async () => {
  const text = await refusedRun(
    { refuse: "initialize", status: 404, error: { code: -32001, message: "Session not found" } },
    ["mcp", "test", "remote"],
  );
  assert.equal(text.code, 1, text.stderr);
  assert.equal(
    text.stderr,
    "MCP server 'remote': the server refused the MCP handshake (initialize): " +
      '"Session not found" (JSON-RPC error -32001, HTTP 404)\n',
  );
});

Deno.test("mcp test: a tools/list refused with HTTP 400 and a JSON-RPC error is a failed discovery in the server's quoted words", async () => {
  const text = await refusedRun(
    { refuse: "tools/list", status: 400, error: { code: -32603, message: WORDS } },
    ["mcp", "test", "remote"],
  );
  assert.equal(text.code, 1, text.stderr);
  assert.equal(
    text.stderr,
    "MCP server 'remote': tool discovery failed: the server refused tools/list: " +
      `${QUOTED} (JSON-RPC error -32603, HTTP 400)\n`,
  );
});

Deno.test("mcp call: a tools/call refused with HTTP 400 and a JSON-RPC error names the call's refusal in the server's quoted words", async () => {
  const text = await refusedRun(
    { refuse: "tools/call", status: 400, error: { code: -32602, message: WORDS } },
    ["mcp", "call", "remote", "echo", "--args", "{}"],
  );
  assert.equal(text.code, 1, text.stderr);
  assert.equal(text.stdout, "");
  assert.equal(
    text.stderr,
    "agent: MCP server 'remote': tool 'echo' failed: the server refused the call: " +
      `${QUOTED} (JSON-RPC error -32602, HTTP 400)\n`,
  );
});

Deno.test("mcp call: a call refused as a JSON-RPC error for arguments that miss the schema notes what the tool takes", async () => {
  const schema = {
    type: "object",
    properties: { message: { type: "string" }, count: { type: "integer" } },
    required: ["message"],
    additionalProperties: false,
  };
  const text = await refusedRun(
    {
      refuse: "tools/call",
      status: 400,
      error: { code: -32602, message: "Invalid params" },
      schema,
    },
    ["mcp", "call", "remote", "echo", "--args", '{"count":1.5,"mesage":"hi"}'],
  );
  assert.equal(text.code, 1, text.stderr);
  assert.equal(
    text.stderr,
    "note: tool 'echo' takes message (string, required), count (integer). In these --args, " +
      "message is missing; count is a number, not an integer; mesage is not an argument of " +
      "this tool\n" +
      "agent: MCP server 'remote': tool 'echo' failed: the server refused the call: " +
      '"Invalid params" (JSON-RPC error -32602, HTTP 400)\n',
  );
  // --json: one error document and nothing else on stderr.
  await using server = refusingServer({
    refuse: "tools/call",
    status: 400,
    error: { code: -32602, message: "Invalid params" },
    get: "405",
    schema,
  });
  await using home = await homeFor(server.url);
  const json = await cli(home.home, ["mcp", "call", "remote", "echo", "--json"]);
  assert.equal(json.code, 1);
  assert.equal(json.stderr, "");
  assert.match(JSON.parse(json.stdout).error.message, /the server refused the call/);
});

/**
 * Words that JSON quotes leave as they are but a terminal obeys or hides: a right-to-left
 * override, a left-to-right isolate and its pop, zero-width characters, a byte-order mark and
 * the line and paragraph separators. Each shown as a `\u{…}` escape.
 */
const HIDING = "Invalid \u202Efdp.exe\u2066x\u2069 \u200Bzw\u200F\uFEFF\u2028next\u2029end";
const HIDING_SHOWN = String.raw`"Invalid \u{202e}fdp.exe\u{2066}x\u{2069} \u{200b}zw\u{200f}` +
  String.raw`\u{feff}\u{2028}next\u{2029}end"`;

Deno.test("mcp test and call: a server's words that could reorder or hide text on a terminal are shown as escapes, in every message that quotes them", async (t) => {
  await t.step("the handshake refused (HTTP 400, quoted)", async () => {
    await using server = refusingServer({
      refuse: "initialize",
      status: 400,
      error: { code: -32602, message: HIDING },
      get: "405",
    });
    await using home = await homeFor(server.url);
    const message = "MCP server 'remote': the server refused the MCP handshake (initialize): " +
      `${HIDING_SHOWN} (JSON-RPC error -32602, HTTP 400)`;
    const text = await cli(home.home, ["mcp", "test", "remote"]);
    assert.equal(text.code, 1, text.stderr);
    assert.equal(text.stderr, `${message}\n`);
    // --json: the error is a message, escaped the same.
    const doc = await cliJson(home.home, ["mcp", "test", "remote", "--json"], 1);
    assert.equal(doc.error, message);
  });

  await t.step(
    "a call refused in a JSON-RPC error with HTTP 200 (the server's words unquoted)",
    async () => {
      const text = await refusedRun(
        { refuse: "tools/call", status: 200, error: { code: -32602, message: HIDING } },
        ["mcp", "call", "remote", "echo", "--args", "{}"],
      );
      assert.equal(text.code, 1, text.stderr);
      assert.equal(
        text.stderr,
        `agent: MCP server 'remote': tool 'echo' failed: ${HIDING_SHOWN.slice(1, -1)}\n`,
      );
    },
  );

  await t.step("an HTTP error answer that is not JSON-RPC (the body summarised)", async () => {
    await using server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      () => new Response(`Denied \u202Etxt.exe\u200B`, { status: 500 }),
    );
    await using home = await homeFor(`http://127.0.0.1:${server.addr.port}/mcp`);
    const text = await cli(home.home, ["mcp", "test", "remote"]);
    assert.equal(text.code, 1, text.stderr);
    assert.match(text.stderr, /: Denied \\u\{202e\}txt\.exe\\u\{200b\}/, text.stderr);
    assert.doesNotMatch(text.stderr, /[\u200B\u202E]/);
  });
});

Deno.test("mcp test: a cut of the server's words never splits an escape: the cut counts the server's characters, then they are escaped", async (t) => {
  // 199 characters kept before `…`: the override as the 199th is kept whole, as the 200th it is cut.
  for (const [before, shown] of [[198, String.raw`\u{202e}…`], [199, "…"]] as const) {
    await t.step(`the override after ${before} characters`, async () => {
      const text = await refusedRun(
        {
          refuse: "initialize",
          status: 400,
          error: { code: -32602, message: `${"a".repeat(before)}\u202E${"b".repeat(50)}` },
        },
        ["mcp", "test", "remote"],
      );
      assert.equal(text.code, 1, text.stderr);
      assert.equal(
        text.stderr,
        "MCP server 'remote': the server refused the MCP handshake (initialize): " +
          `"${"a".repeat(before)}${shown}" (JSON-RPC error -32602, HTTP 400)\n`,
      );
    });
  }
});
