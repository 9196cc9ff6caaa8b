/**
 * `logs/mcp-stderr.log` stays bounded whatever a stdio server writes to stderr: it rotates by
 * size like `gateway.log`, and a line that never ends is written in pieces instead of growing in
 * memory. A character whose bytes come in two chunks is written whole.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { McpManager } from "../../src/mcp/manager.ts";
import { MAX_PARTIAL_LINE, StderrLog } from "../../src/mcp/stderr_log.ts";
import { fileURLToPath } from "node:url";
import { denoRunArgs } from "../fixtures/mcp/spawn.ts";
import { serverEntry } from "./_helpers.ts";

const ODD_TOOLS = fileURLToPath(new URL("../fixtures/mcp/odd_tools_stdio.ts", import.meta.url));

/** Polls `condition` (a process's pipe has no event to await here) until `timeoutMs`. */
async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function sizeOf(path: string): number | undefined {
  try {
    return Deno.statSync(path).size;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
}

Deno.test("a stdio server flooding stderr: mcp-stderr.log rotates and stays within its limit", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcp-stderr-rotate-" });
  const path = join(dir, "logs", "mcp-stderr.log");
  const log = new StderrLog(path, undefined, { maxBytes: 16 * 1024, maxFiles: 2 });
  // About 300 KB of stderr, then the process exits before answering initialize.
  const flood = "const line = 'x'.repeat(100) + '\\n';" +
    "for (let i = 0; i < 3000; i++) Deno.stderr.writeSync(new TextEncoder().encode(i + ' ' + line));" +
    "Deno.stderr.writeSync(new TextEncoder().encode('last words\\n')); Deno.exit(1);";
  const manager = new McpManager({
    reconnect: false,
    onStderr: (server, text) => log.write(server, text),
  });
  try {
    await manager.start([
      serverEntry("chatty", {
        command: Deno.execPath(),
        args: ["eval", flood],
        connect_timeout: 20,
      }),
    ]);
    const [state] = manager.servers();
    assert.equal(state.status, "failed");
    assert.match(state.error ?? "", /^MCP server 'chatty': .*exited with code 1.*last words/);
    await until(
      () => Deno.readTextFileSync(path).includes("[chatty] last words"),
      10_000,
      "the last stderr line in the log",
    );
    for (const file of [path, `${path}.1`, `${path}.2`]) {
      const size = sizeOf(file);
      assert.ok(size !== undefined && size <= 16 * 1024, `${file}: ${size} bytes`);
    }
    assert.equal(sizeOf(`${path}.3`), undefined, "only maxFiles rotated files are kept");
    assert.equal(Deno.statSync(path).mode! & 0o777, 0o600);
  } finally {
    await manager.shutdown();
    log.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("StderrLog: the default limit is gateway.log's 10 MiB, and the file rotates past it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcp-stderr-default-" });
  const path = join(dir, "mcp-stderr.log");
  try {
    using log = new StderrLog(path, () => new Date(0));
    const line = "y".repeat(1023) + "\n";
    for (let i = 0; i < 11 * 1024; i++) log.write("big", line);
    log.close();
    assert.ok(Deno.statSync(path).size <= 10 * 1024 * 1024);
    // Rotated when full: within one line of 10 MiB (a smaller limit leaves a smaller file).
    const rotated = Deno.statSync(`${path}.1`).size;
    assert.ok(rotated <= 10 * 1024 * 1024, `${rotated} bytes`);
    assert.ok(rotated > 10 * 1024 * 1024 - 2048, `${rotated} bytes`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("StderrLog: a line that never ends is written in pieces, not kept in memory", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcp-stderr-partial-" });
  const path = join(dir, "mcp-stderr.log");
  try {
    using log = new StderrLog(path, () => new Date(0));
    log.write("noisy", "z".repeat(MAX_PARTIAL_LINE * 2 + 10));
    // Two whole pieces are on disk before the line ends; the rest waits for its end.
    const lines = Deno.readTextFileSync(path).split("\n").filter((one) => one !== "");
    assert.equal(lines.length, 2);
    for (const one of lines) {
      assert.equal(one, `1970-01-01T00:00:00.000Z [noisy] ${"z".repeat(MAX_PARTIAL_LINE)}`);
    }
    log.write("noisy", "!\n");
    log.close();
    const last = Deno.readTextFileSync(path).trimEnd().split("\n").at(-1);
    assert.equal(last, `1970-01-01T00:00:00.000Z [noisy] ${"z".repeat(10)}!`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("StderrLog: a piece of a line that never ends does not split an emoji", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcp-stderr-pair-" });
  const path = join(dir, "mcp-stderr.log");
  try {
    using log = new StderrLog(path, () => new Date(0));
    // The emoji's two UTF-16 units straddle the piece's end.
    log.write("noisy", `${"z".repeat(MAX_PARTIAL_LINE - 1)}😀${"z".repeat(MAX_PARTIAL_LINE)}`);
    log.write("noisy", "\n");
    log.close();
    const text = Deno.readTextFileSync(path);
    assert.ok(!text.includes("\uFFFD"), "no half emoji written as U+FFFD");
    const pieces = text.split("\n").filter((one) => one !== "")
      .map((one) => one.slice("1970-01-01T00:00:00.000Z [noisy] ".length));
    assert.deepEqual(pieces, [
      "z".repeat(MAX_PARTIAL_LINE - 1),
      `😀${"z".repeat(MAX_PARTIAL_LINE - 2)}`,
      "zz",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a UTF-8 character split across two stderr chunks reaches mcp-stderr.log whole", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcp-stderr-utf8-" });
  const path = join(dir, "logs", "mcp-stderr.log");
  const log = new StderrLog(path);
  const received: string[] = [];
  const first = Promise.withResolvers<void>();
  const lineEnd = Promise.withResolvers<void>();
  const manager = new McpManager({
    reconnect: false,
    onStderr: (server, text) => {
      received.push(text);
      log.write(server, text);
      if (received.join("").includes("caf")) first.resolve();
      if (text.includes("\n")) lineEnd.resolve();
    },
  });
  try {
    await manager.start([
      serverEntry("split", {
        command: Deno.execPath(),
        args: denoRunArgs(ODD_TOOLS, ["--tools", '["stderr_rest"]', "--stderr-split"]),
        connect_timeout: 20,
      }),
    ]);
    assert.equal(manager.servers()[0].status, "connected", manager.servers()[0].error);
    // `caf` and the first byte of `é` have come; only now does the server write the second byte.
    await within(first.promise, "the first stderr chunk");
    await manager.callTool("mcp__split__stderr_rest");
    await within(lineEnd.promise, "the end of the stderr line");
    assert.equal(received.join(""), "café ok\n");
    assert.match(Deno.readTextFileSync(path), /\[split\] café ok\n$/);
  } finally {
    await manager.shutdown();
    log.close();
    await Deno.remove(dir, { recursive: true });
  }
});

/** `promise`, or a failure naming `what` after 10 s (a deadline: it resolves on the event). */
async function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no ${what} within 10 s`)), 10_000);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
