/**
 * Servers whose answers the SDK refuses as invalid: the message names the server and says in one
 * line what was wrong (which field of which answer), never the validator's pretty-printed issue
 * list; an invalid tool of a tools/list answer is left out with a warning and the others stay; an HTTP url that answers the initialize POST with a page or with JSON that is not
 * JSON-RPC is "not an MCP endpoint", naming the url, and parks at once.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { type McpEvent, McpManager, type McpManagerOptions } from "../../src/mcp/manager.ts";
import { denoRunArgs, MISC_FIXTURE, startHttpFixture } from "../fixtures/mcp/spawn.ts";
import { failure, serverEntry } from "./_helpers.ts";

const ODD_TOOLS = fileURLToPath(new URL("../fixtures/mcp/odd_tools_stdio.ts", import.meta.url));

function oddTools(name: string, args: string[], fields: Record<string, unknown> = {}) {
  return serverEntry(name, {
    command: Deno.execPath(),
    args: denoRunArgs(ODD_TOOLS, args),
    connect_timeout: 20,
    timeout: 20,
    ...fields,
  });
}

Deno.test("a tools/list answer with invalid tools: the valid ones are registered, one warning per invalid one", async () => {
  const events: McpEvent[] = [];
  await using manager = managerOf({ onEvent: (event) => events.push(event) });
  const rawTools = [
    { name: "s1", inputSchema: { type: "string" } },
    { name: "s2", inputSchema: "nope" },
    { name: "s3" },
    { nome: "no name", inputSchema: { type: "object" } },
    { name: "x".repeat(200), inputSchema: { type: "string" } },
    { name: "ok2", inputSchema: { type: "object" } },
  ];
  await manager.start([
    oddTools("bad-list", ["--tools", '["fine"]', "--raw-tools", JSON.stringify(rawTools)]),
  ]);
  const [state] = manager.servers();
  assert.equal(state.status, "connected", state.error);
  assert.deepEqual(manager.tools().map((tool) => tool.name), [
    "mcp__bad_list__fine",
    "mcp__bad_list__ok2",
  ]);
  const server = "MCP server 'bad-list'";
  const expected = [
    `${server}: tool 's1' is not registered because its tools/list entry is not valid MCP: ` +
    'inputSchema.type: expected "object"',
    `${server}: tool 's2' is not registered because its tools/list entry is not valid MCP: ` +
    "inputSchema: expected object, received string",
    `${server}: tool 's3' is not registered because its tools/list entry is not valid MCP: ` +
    "inputSchema: expected object, received undefined",
    `${server}: the tool at index 4 of tools/list is not registered because its entry is not ` +
    "valid MCP: name: expected string, received undefined",
    `${server}: the tool at index 5 of tools/list is not registered because its entry is not ` +
    'valid MCP: inputSchema.type: expected "object"',
  ];
  // Where `agent mcp list` / `mcp tools` read them, and as events (the gateway log).
  assert.deepEqual(state.warnings, expected);
  assert.deepEqual(
    events.filter((event) => event.type === "warning").map((event) => event.message),
    expected,
  );
  assert.deepEqual(state.dropped?.map((tool) => tool.originalName), ["s1", "s2", "s3"]);
  assert.equal(state.dropped?.[0].reason, expected[0]);
  assert.equal(textOf(await manager.callTool("mcp__bad_list__fine")), "fine ok");
});

Deno.test("an invalid tool that tools.exclude leaves out is not warned about", async () => {
  await using manager = managerOf();
  const rawTools = [{ name: "legacy", inputSchema: { type: "string" } }];
  await manager.start([
    oddTools("excluding", ["--tools", '["fine"]', "--raw-tools", JSON.stringify(rawTools)], {
      tools: { exclude: ["legacy"] },
    }),
  ]);
  const [state] = manager.servers();
  assert.equal(state.status, "connected", state.error);
  assert.deepEqual(state.warnings, [], "no warning, not even 'matches none of the server's tools'");
  assert.deepEqual(state.dropped, [{
    originalName: "legacy",
    reason: "MCP server 'excluding': tool 'legacy' is left out by " +
      "mcp_servers.excluding.tools.exclude",
  }]);
  assert.deepEqual(manager.tools().map((tool) => tool.name), ["mcp__excluding__fine"]);
});

Deno.test("invalid tools on later pages of tools/list: every page's valid tools are kept, indexes count all pages", async () => {
  await using manager = managerOf();
  const rawTools = [
    { name: "bad", inputSchema: { type: "string" } },
    { inputSchema: { type: "object" } },
  ];
  await manager.start([
    oddTools("paged", [
      "--tools",
      '["a","b","c"]',
      "--raw-tools",
      JSON.stringify(rawTools),
      "--page-size",
      "2",
    ]),
  ]);
  const [state] = manager.servers();
  assert.equal(state.status, "connected", state.error);
  assert.deepEqual(manager.tools().map((tool) => tool.name), [
    "mcp__paged__a",
    "mcp__paged__b",
    "mcp__paged__c",
  ]);
  assert.deepEqual(state.warnings, [
    "MCP server 'paged': tool 'bad' is not registered because its tools/list entry is not valid " +
    'MCP: inputSchema.type: expected "object"',
    "MCP server 'paged': the tool at index 4 of tools/list is not registered because its entry " +
    "is not valid MCP: name: expected string, received undefined",
  ]);
});

Deno.test("a tools/list result that is invalid as a whole still fails discovery in one line", async () => {
  await using manager = managerOf();
  await manager.start([oddTools("whole", ["--list-result", '{"tools":{"a":1}}'])]);
  const [state] = manager.servers();
  assert.equal(state.status, "failed");
  assert.equal(
    state.error,
    "MCP server 'whole': tool discovery failed: the server's answer to tools/list is not valid " +
      "MCP: tools: expected array, received object",
  );
});

Deno.test("a tools/call result the server refuses itself fails that call in one line", async () => {
  await using manager = managerOf();
  await manager.start([
    oddTools("bad-call", ["--tools", '["echo"]', "--call-result", '{"content":"not a list"}']),
  ]);
  assert.equal(manager.servers()[0].status, "connected", manager.servers()[0].error);
  const error = await manager.callTool("mcp__bad_call__echo").then(
    () => assert.fail("the call succeeded"),
    (error: Error) => error,
  );
  assert.equal(
    error.message,
    // The SDK's server refuses its own invalid result and says so in a JSON-RPC error.
    "MCP server 'bad-call': tool 'echo' failed: Invalid tools/call result: content: expected " +
      "array, received string",
  );
});

Deno.test("HTTP answers to initialize that no MCP endpoint gives: not an MCP endpoint, naming the url", async (t) => {
  const fix = "Check the url (it usually ends in /mcp, or /sse with transport: sse)";
  for (
    const [kind, fields, said] of [
      [
        "json-200",
        {},
        "answered the MCP initialize request with JSON that is not a JSON-RPC message, not an " +
        `MCP endpoint. ${fix}`,
      ],
      [
        "html-post",
        {},
        "answered the MCP initialize request with Content-Type 'text/html; charset=utf-8', not " +
        "an MCP endpoint (a sign-in page or a proxy in front of the server answers like this). " +
        fix,
      ],
      [
        "html",
        { skip_preflight: true },
        "answered the MCP initialize request with Content-Type 'text/html; charset=utf-8', not " +
        "an MCP endpoint (a sign-in page or a proxy in front of the server answers like this). " +
        fix,
      ],
    ] as const
  ) {
    await t.step(`${kind} ${JSON.stringify(fields)}`, async () => {
      await using peer = await startHttpFixture(["--kind", kind], { fixture: MISC_FIXTURE });
      const { error } = await failure(
        serverEntry("peer", { url: peer.url, connect_timeout: 10, ...fields }),
      );
      assert.equal(error.message, `MCP server 'peer': ${peer.url} ${said}`);
      assert.equal(error.kind, "not_mcp");
      assert.ok(error.permanent, "retrying cannot help: the server is parked at once");
    });
  }
});

function managerOf(options: McpManagerOptions = {}): McpManager & AsyncDisposable {
  const manager = new McpManager({ reconnect: false, ...options }) as
    & McpManager
    & AsyncDisposable;
  manager[Symbol.asyncDispose] = () => manager.shutdown();
  return manager;
}

Deno.test("answers with an id no request had: the timeout says so, at connect and in a call", async (t) => {
  const stray = (id: number) =>
    `the server answered with id ${id}, which none of our requests had (an answer must carry ` +
    "the id of its request)";
  await t.step(
    "initialize (id 0) answered as id 1000: connect_timeout names the stray id",
    async () => {
      const config = serverEntry("wrong-id", {
        command: Deno.execPath(),
        args: denoRunArgs(ODD_TOOLS, ["--tools", '["echo"]', "--shift-ids-from", "0"]),
        connect_timeout: 1,
      });
      const { error } = await failure(config);
      assert.equal(
        error.message,
        `MCP server 'wrong-id': no answer within connect_timeout (1 s); ${stray(1000)}`,
      );
      assert.equal(error.kind, "timeout");
    },
  );
  await t.step("tools/list (id 1) answered as id 1001: discovery's timeout names it", async () => {
    await using manager = managerOf();
    await manager.start([
      serverEntry("wrong-list", {
        command: Deno.execPath(),
        args: denoRunArgs(ODD_TOOLS, ["--tools", '["echo"]', "--shift-ids-from", "1"]),
        connect_timeout: 1,
      }),
    ]);
    assert.equal(
      manager.servers()[0].error,
      `MCP server 'wrong-list': no answer to tools/list within connect_timeout (1 s); ${
        stray(1001)
      }`,
    );
  });
  await t.step("a call (id 2) answered as id 1002: the call's timeout names it", async () => {
    await using manager = managerOf();
    await manager.start([
      serverEntry("wrong-call", {
        command: Deno.execPath(),
        args: denoRunArgs(ODD_TOOLS, ["--tools", '["echo"]', "--shift-ids-from", "2"]),
        connect_timeout: 20,
        timeout: 1,
      }),
    ]);
    const error = await manager.callTool("mcp__wrong_call__echo").then(
      () => assert.fail("the call succeeded"),
      (error: Error) => error,
    );
    assert.equal(
      error.message,
      `MCP server 'wrong-call': tool 'echo' did not answer within timeout (1 s); ${stray(1002)}`,
    );
  });
});

Deno.test("a late answer to a call that timed out is not blamed as a wrong id", async () => {
  await using manager = managerOf();
  await manager.start([
    serverEntry("slow", {
      command: Deno.execPath(),
      args: denoRunArgs(ODD_TOOLS, ["--tools", '["late"]', "--delay-ms", "1500"]),
      connect_timeout: 20,
      timeout: 1,
    }),
  ]);
  // The first call's answer (id 2) arrives during the second call, after its request was dropped.
  for (let i = 0; i < 2; i++) {
    const error = await manager.callTool("mcp__slow__late").then(
      () => assert.fail("the call succeeded"),
      (error: Error) => error,
    );
    assert.equal(
      error.message,
      "MCP server 'slow': tool 'late' did not answer within timeout (1 s); if the tool needs " +
        "longer, raise mcp_servers.slow.timeout in /test/config.yaml",
    );
  }
});

Deno.test("a refresh after tools/list_changed that fails keeps the old tools and says why", async (t) => {
  const cases = [
    [
      "a result that is invalid as a whole",
      ["--changed-list", '{"tools":"nope"}'],
      "the server's answer to tools/list is not valid MCP: tools: expected array, received string",
    ],
    ["a JSON-RPC error", ["--changed-list-error", "index is rebuilding"], "index is rebuilding"],
  ] as const;
  for (const [what, args, reason] of cases) {
    await t.step(what, async () => {
      const events = new EventLog();
      await using manager = managerOf({ onEvent: events.record });
      await manager.start([oddTools("changing", ["--tools", '["fine","change"]', ...args])]);
      assert.equal(manager.servers()[0].status, "connected", manager.servers()[0].error);
      const since = events.seen.length;
      await manager.callTool("mcp__changing__change");
      const warning = await events.next((event) => event.type === "warning", "the warning", since);
      assert.deepEqual(warning, {
        type: "warning",
        server: "changing",
        message: "MCP server 'changing': its tool list changed, but listing it again failed, so " +
          `its previous tools stay registered: ${reason}`,
      });
      assert.deepEqual(manager.tools().map((tool) => tool.name), [
        "mcp__changing__fine",
        "mcp__changing__change",
      ]);
      assert.equal(textOf(await manager.callTool("mcp__changing__fine")), "fine ok");
    });
  }
  await t.step(
    "an invalid tool in the new list: left out with a warning, the rest registered",
    async () => {
      const events = new EventLog();
      await using manager = managerOf({ onEvent: events.record });
      const changedList = {
        tools: [
          { name: "fresh", inputSchema: { type: "object" } },
          { name: "broken", inputSchema: { type: "array" } },
        ],
      };
      await manager.start([
        oddTools("changing", [
          "--tools",
          '["change"]',
          "--changed-list",
          JSON.stringify(changedList),
        ]),
      ]);
      const since = events.seen.length;
      await manager.callTool("mcp__changing__change");
      const changed = await events.next(
        (event) => event.type === "tools_changed",
        "tools_changed",
        since,
      );
      assert.equal((changed as { tools: number }).tools, 1);
      assert.deepEqual(manager.tools().map((tool) => tool.name), ["mcp__changing__fresh"]);
      const message = "MCP server 'changing': tool 'broken' is not registered because its " +
        'tools/list entry is not valid MCP: inputSchema.type: expected "object"';
      assert.deepEqual(manager.servers()[0].warnings, [message]);
      assert.ok(
        events.seen.some((event) => event.type === "warning" && event.message === message),
        JSON.stringify(events.seen),
      );
    },
  );
});

Deno.test("a failed list_changed refresh is one of the server's warnings until a refresh works", async () => {
  const events = new EventLog();
  await using manager = managerOf({ onEvent: events.record });
  await manager.start([
    oddTools("changing", [
      "--tools",
      '["fine","change","restore"]',
      "--changed-list-error",
      "index is rebuilding",
    ]),
  ]);
  assert.deepEqual(manager.servers()[0].warnings, []);
  const message = "MCP server 'changing': its tool list changed, but listing it again failed, " +
    "so its previous tools stay registered: index is rebuilding";
  let since = events.seen.length;
  await manager.callTool("mcp__changing__change");
  await events.next((event) => event.type === "warning", "the warning", since);
  assert.deepEqual(manager.servers()[0].warnings, [message]);
  // Failing again is still one warning.
  since = events.seen.length;
  await manager.callTool("mcp__changing__change");
  await events.next((event) => event.type === "warning", "the second warning", since);
  assert.deepEqual(manager.servers()[0].warnings, [message]);

  since = events.seen.length;
  await manager.callTool("mcp__changing__restore");
  await events.next((event) => event.type === "tools_changed", "tools_changed", since);
  assert.deepEqual(manager.servers()[0].warnings, []);
  assert.equal(manager.servers()[0].toolCount, 3);
});

/** The events of a manager, and a way to await the next one that matches. */
class EventLog {
  readonly seen: McpEvent[] = [];
  #waiting: { matches: (event: McpEvent) => boolean; resolve: (event: McpEvent) => void }[] = [];

  readonly record = (event: McpEvent): void => {
    this.seen.push(event);
    const waiting = this.#waiting.filter((waiter) => waiter.matches(event));
    this.#waiting = this.#waiting.filter((waiter) => !waiting.includes(waiter));
    for (const waiter of waiting) waiter.resolve(event);
  };

  /**
   * The first matching event from index `since` of {@linkcode EventLog.seen} on, as soon as it is
   * there; fails after 10 s (a deadline, not a wait).
   */
  async next(
    matches: (event: McpEvent) => boolean,
    what: string,
    since: number,
  ): Promise<McpEvent> {
    const already = this.seen.slice(since).find(matches);
    if (already) return already;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      return await Promise.race([
        new Promise<McpEvent>((resolve) => this.#waiting.push({ matches, resolve })),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no ${what} within 10 s: ${JSON.stringify(this.seen)}`)),
            10_000,
          );
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }
}

function textOf(result: { content?: unknown }): string {
  return (result.content as { type: string; text?: string }[])
    .map((item) => item.text ?? "").join("");
}

Deno.test("list_resources of a server without resources/templates/list lists its resources alone", async () => {
  await using manager = managerOf();
  await manager.start([oddTools("odd", ["--resources", "--tools", '["x"]'])]);
  const listed = await manager.callTool("mcp__odd__list_resources");
  assert.equal(listed.isError, undefined);
  assert.deepEqual(JSON.parse(textOf(listed)), [{ uri: "note://odd", name: "odd" }]);
});
