// LogTape keeps one global configuration: every logging test lives in this file, and Deno runs
// the tests of one file one after the other. Each test closes logging in a `finally`.
import assert from "node:assert/strict";
import { join } from "node:path";
import { getLogger } from "@logtape/logtape";
import { closeLogging, configureLogging, logger, logWrites } from "../../src/home/log.ts";
import { homePaths } from "../../src/home/paths.ts";
import { modeOf, namesIn, withTempDir } from "./_helpers.ts";

interface LogLine {
  "@timestamp": string;
  level: string;
  logger: string;
  message: string;
  properties: Record<string, unknown>;
}

function readLines(path: string): LogLine[] {
  const text = Deno.readTextFileSync(path);
  if (text === "") return [];
  assert.ok(text.endsWith("\n"), "every record ends with a newline");
  return text.slice(0, -1).split("\n").map((line) => JSON.parse(line) as LogLine);
}

Deno.test("configureLogging: creates logs/ (0700) and writes JSON lines to logs/gateway.log", async () => {
  await withTempDir(async (dir) => {
    const paths = homePaths(join(dir, "home"));
    await configureLogging(paths);
    try {
      assert.equal(modeOf(paths.home), 0o700);
      assert.equal(modeOf(paths.logs), 0o700);
      assert.equal(modeOf(paths.gatewayLog), 0o600);

      logger("gateway").info("listening on {port}", { port: 8644 });
      logger("webhook", "listener").warn("route {route} has no secret", { route: "gh" });
      logger("metrics").error("store failed");
    } finally {
      await closeLogging();
    }
    assert.deepEqual(namesIn(paths.logs), ["gateway.log"]);
    const lines = readLines(paths.gatewayLog);
    assert.equal(lines.length, 3);

    const [info, warning, error] = lines;
    assert.equal(info.level, "INFO");
    assert.equal(info.logger, "agent.gateway");
    assert.equal(info.message, "listening on 8644");
    assert.deepEqual(info.properties, { port: 8644 });
    assert.ok(!Number.isNaN(Date.parse(info["@timestamp"])), info["@timestamp"]);

    assert.match(warning.level, /^WARN/);
    assert.equal(warning.logger, "agent.webhook.listener");
    assert.equal(warning.message, 'route "gh" has no secret');
    assert.deepEqual(warning.properties, { route: "gh" });

    assert.equal(error.level, "ERROR");
    assert.equal(error.logger, "agent.metrics");
    assert.equal(error.message, "store failed");
  });
});

Deno.test("configureLogging openOnFirstLine: no <home>, no logs/ until a line is written", async () => {
  await withTempDir(async (dir) => {
    const paths = homePaths(join(dir, "home"));
    await configureLogging(paths, { openOnFirstLine: true });
    try {
      logger("run").debug("below the level: not written");
      await new Promise((resolve) => setTimeout(resolve, 0)); // the turn that would write it
      assert.deepEqual(namesIn(dir), []);
      logger("run").warn("skill {name} was not found", { name: "typo" });
    } finally {
      await closeLogging();
    }
    assert.equal(modeOf(paths.logs), 0o700);
    assert.equal(modeOf(paths.gatewayLog), 0o600);
    assert.deepEqual(readLines(paths.gatewayLog).map((line) => line.message), [
      'skill "typo" was not found',
    ]);
    const quiet = homePaths(join(dir, "quiet"));
    await configureLogging(quiet, { openOnFirstLine: true });
    await closeLogging();
    assert.deepEqual(namesIn(dir), ["home"]);
  });
});

Deno.test("configureLogging: default level info; other categories are not written", async () => {
  await withTempDir(async (dir) => {
    const paths = homePaths(dir);
    await configureLogging(paths);
    try {
      logger("gateway").debug("debug is below the default level");
      getLogger(["someone-else"]).error("not ours");
      logger("gateway").info("kept");
    } finally {
      await closeLogging();
    }
    const lines = readLines(paths.gatewayLog);
    assert.deepEqual(lines.map((line) => line.message), ["kept"]);
  });
});

Deno.test("configureLogging: the level option is honoured", async () => {
  await withTempDir(async (dir) => {
    const paths = homePaths(dir);
    await configureLogging(paths, { level: "debug" });
    try {
      logger("a").debug("d1");
    } finally {
      await closeLogging();
    }
    await configureLogging(paths, { level: "warning" });
    try {
      logger("a").info("i2");
      logger("a").warn("w2");
    } finally {
      await closeLogging();
    }
    const lines = readLines(paths.gatewayLog);
    assert.deepEqual(lines.map((line) => line.message), ["d1", "w2"]);
    assert.equal(lines[0].level, "DEBUG");
    assert.match(lines[1].level, /^WARN/);
  });
});

Deno.test("configureLogging: an existing gateway.log is appended to and made 0600", async () => {
  await withTempDir(async (dir) => {
    const paths = homePaths(dir);
    Deno.mkdirSync(paths.logs, { recursive: true });
    const old =
      JSON.stringify({ level: "INFO", logger: "agent.old", message: "old", properties: {} }) + "\n";
    Deno.writeTextFileSync(paths.gatewayLog, old);
    Deno.chmodSync(paths.gatewayLog, 0o644);
    await configureLogging(paths);
    try {
      assert.equal(modeOf(paths.gatewayLog), 0o600);
      logger("gateway").info("new");
    } finally {
      await closeLogging();
    }
    const text = Deno.readTextFileSync(paths.gatewayLog);
    assert.ok(text.startsWith(old), "old lines are kept");
    assert.deepEqual(readLines(paths.gatewayLog).map((line) => line.message), ["old", "new"]);
  });
});

Deno.test("configureLogging: rotates by size and keeps at most maxFiles old files", async () => {
  await withTempDir(async (dir) => {
    const paths = homePaths(dir);
    const maxBytes = 2_000;
    const maxFiles = 2;
    const total = 300;
    await configureLogging(paths, { maxBytes, maxFiles });
    try {
      for (let i = 0; i < total; i++) {
        logger("gateway").info("line {i} {pad}", { i, pad: "x".repeat(40) });
      }
    } finally {
      await closeLogging();
    }
    const names = namesIn(paths.logs);
    assert.ok(names.includes("gateway.log"), names.join(","));
    assert.ok(names.includes("gateway.log.1"), `rotation happened: ${names.join(",")}`);
    const rotated = names.filter((name) => /^gateway\.log\.\d+$/.test(name));
    assert.ok(rotated.length <= maxFiles, `at most ${maxFiles} rotated files: ${names.join(",")}`);
    assert.deepEqual(names, ["gateway.log", ...rotated].sort(), "nothing else in logs/");

    const files = ["gateway.log", ...rotated.sort()];
    // Newest first: gateway.log holds the latest records, .1 the ones before, and so on.
    const newestFirst: number[] = [];
    for (const name of files) {
      const path = join(paths.logs, name);
      assert.ok(
        Deno.statSync(path).size <= maxBytes,
        `${name} is ${Deno.statSync(path).size} bytes`,
      );
      const lines = readLines(path); // every line is complete JSON
      assert.ok(lines.length > 0, `${name} is not empty`);
      newestFirst.push(...lines.map((line) => line.properties.i as number).reverse());
    }
    assert.equal(newestFirst[0], total - 1, "the last record is in gateway.log");
    for (let k = 1; k < newestFirst.length; k++) {
      assert.equal(
        newestFirst[k],
        newestFirst[k - 1] - 1,
        "no record lost or reordered across files",
      );
    }
    assert.ok(newestFirst.length < total, "old files beyond maxFiles were dropped");
  });
});

Deno.test({
  name: "configureLogging: log files stay 0600 after rotation",
  async fn() {
    await withTempDir(async (dir) => {
      const paths = homePaths(dir);
      await configureLogging(paths, { maxBytes: 2_000, maxFiles: 2 });
      try {
        for (let i = 0; i < 200; i++) {
          logger("gateway").info("line {i} {pad}", { i, pad: "x".repeat(40) });
        }
      } finally {
        await closeLogging();
      }
      for (const name of namesIn(paths.logs)) {
        assert.equal(modeOf(join(paths.logs, name)), 0o600, name);
      }
    });
  },
});

Deno.test("closeLogging: flushes; records logged after it are not written", async () => {
  await withTempDir(async (dir) => {
    const paths = homePaths(dir);
    await configureLogging(paths);
    try {
      logger("gateway").info("before close");
    } finally {
      await closeLogging();
    }
    logger("gateway").info("after close");
    assert.deepEqual(readLines(paths.gatewayLog).map((line) => line.message), ["before close"]);
  });
});

Deno.test("configureLogging: console hears warnings and errors, one plain line each; the file gets all", async () => {
  await withTempDir(async (dir) => {
    const paths = homePaths(dir);
    const shown: string[] = [];
    await configureLogging(paths, { console: (line) => shown.push(line) });
    try {
      logger("gateway").debug("below the level");
      logger("gateway").info("gateway listening on {addresses}", { addresses: ["http://x:1"] });
      logger("gateway").warn("INSECURE_NO_AUTH is on: unsigned requests on {host}", {
        host: "127.0.0.1",
      });
      logger("gateway").error("route {route} has no secret", { route: "ci" });
      logger("webhook").warn("route {route}: {message}", {
        route: "gh",
        message: "line one\nline two \x1b[31mred\x1b[0m",
      });
      logger("gateway").fatal("cannot start: {error}", { error: new Error("port taken") });
    } finally {
      await closeLogging();
    }
    assert.deepEqual(shown, [
      "warning: INSECURE_NO_AUTH is on: unsigned requests on 127.0.0.1\n",
      "error: route ci has no secret\n",
      "warning: route gh: line one\\nline two \\u001b[31mred\\u001b[0m\n",
      "error: cannot start: port taken\n",
    ]);
    assert.deepEqual(readLines(paths.gatewayLog).map((line) => line.level), [
      "INFO",
      "WARN",
      "ERROR",
      "WARN",
      "FATAL",
    ]);
  });
});

Deno.test("logWrites: a log keeps the lines of its level and above; no level is info", () => {
  assert.equal(logWrites(undefined, "info"), true);
  assert.equal(logWrites(undefined, "debug"), false);
  assert.equal(logWrites("warning", "warning"), true);
  assert.equal(logWrites("warning", "error"), true);
  assert.equal(logWrites("error", "warning"), false);
  assert.equal(logWrites("fatal", "error"), false);
  assert.equal(logWrites("trace", "debug"), true);
});

Deno.test("configureLogging: a list value reads as words in the message (the properties keep the list)", async () => {
  await withTempDir(async (dir) => {
    const paths = homePaths(dir);
    const shown: string[] = [];
    await configureLogging(paths, { console: (line) => shown.push(line) });
    const one = ["http://[::]:8644"];
    const two = ["http://127.0.0.1:8644", "http://[::1]:8644"];
    try {
      logger("gateway").info("gateway listening on {addresses}", { addresses: one });
      logger("gateway").info("gateway listening on {addresses}", { addresses: two });
      logger("gateway").warn("added: {added}; removed: {removed}; ports {ports} of {file}", {
        added: ["a", "b", "c"],
        removed: [],
        ports: [1, 2],
        file: "subs.json",
      });
    } finally {
      await closeLogging();
    }
    const lines = readLines(paths.gatewayLog);
    assert.deepEqual(lines.map((line) => line.message), [
      'gateway listening on "http://[::]:8644"',
      'gateway listening on "http://127.0.0.1:8644" and "http://[::1]:8644"',
      'added: "a", "b" and "c"; removed: (none); ports 1 and 2 of "subs.json"',
    ]);
    assert.deepEqual(lines[1].properties, { addresses: two });
    assert.deepEqual(lines[2].properties.removed, []);
    assert.deepEqual(shown, [
      "warning: added: a, b and c; removed: (none); ports 1 and 2 of subs.json\n",
    ]);
  });
});
