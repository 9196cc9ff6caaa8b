import assert from "node:assert/strict";
import { isAbsolute, relative } from "node:path";
import { expandTilde, homePaths, resolveHome } from "../../src/home/paths.ts";
import { envOf } from "./_helpers.ts";

const USER_HOME = "/home/ada";
const CWD = "/work/cwd";

Deno.test("resolveHome: unset AGENT_HOME → <userHome>/.agent", () => {
  assert.equal(resolveHome(envOf(), USER_HOME, CWD), "/home/ada/.agent");
});

Deno.test("resolveHome: reads only AGENT_HOME, never HOME or other variables", () => {
  const asked: string[] = [];
  const env = (name: string) => {
    asked.push(name);
    return name === "AGENT_HOME" ? undefined : "/bogus";
  };
  assert.equal(resolveHome(env, USER_HOME, CWD), "/home/ada/.agent");
  assert.deepEqual(asked, ["AGENT_HOME"]);
});

Deno.test("resolveHome: absolute AGENT_HOME is used as is (normalised)", () => {
  assert.equal(resolveHome(envOf({ AGENT_HOME: "/srv/agent" }), USER_HOME, CWD), "/srv/agent");
  assert.equal(resolveHome(envOf({ AGENT_HOME: "/srv/agent/" }), USER_HOME, CWD), "/srv/agent");
  assert.equal(
    resolveHome(envOf({ AGENT_HOME: "/srv/./x/../agent" }), USER_HOME, CWD),
    "/srv/agent",
  );
});

Deno.test("resolveHome: surrounding whitespace is trimmed", () => {
  assert.equal(resolveHome(envOf({ AGENT_HOME: "  /srv/agent \n" }), USER_HOME, CWD), "/srv/agent");
});

Deno.test("resolveHome: `~/x` and `~` expand to the user's home", () => {
  assert.equal(resolveHome(envOf({ AGENT_HOME: "~/x" }), USER_HOME, CWD), "/home/ada/x");
  assert.equal(resolveHome(envOf({ AGENT_HOME: "~/a/b/" }), USER_HOME, CWD), "/home/ada/a/b");
  assert.equal(resolveHome(envOf({ AGENT_HOME: "~" }), USER_HOME, CWD), "/home/ada");
});

Deno.test("resolveHome: a relative AGENT_HOME is taken from the given cwd", () => {
  assert.equal(
    resolveHome(envOf({ AGENT_HOME: "rel/home" }), USER_HOME, CWD),
    "/work/cwd/rel/home",
  );
  assert.equal(resolveHome(envOf({ AGENT_HOME: "./h" }), USER_HOME, CWD), "/work/cwd/h");
  assert.equal(resolveHome(envOf({ AGENT_HOME: "../h" }), USER_HOME, CWD), "/work/h");
  assert.equal(resolveHome(envOf({ AGENT_HOME: "." }), USER_HOME, "/other"), "/other");
});

Deno.test("resolveHome: empty or whitespace-only AGENT_HOME → default", () => {
  for (const value of ["", " ", "   ", "\t", "\n", " \t\n "]) {
    assert.equal(
      resolveHome(envOf({ AGENT_HOME: value }), USER_HOME, CWD),
      "/home/ada/.agent",
      `AGENT_HOME=${JSON.stringify(value)}`,
    );
  }
});

Deno.test("resolveHome: the result is always absolute", () => {
  for (const value of [undefined, "x", "~/y", "/z", "../w", "~"]) {
    const env = envOf(value === undefined ? {} : { AGENT_HOME: value });
    const home = resolveHome(env, USER_HOME, CWD);
    assert.ok(isAbsolute(home), `${value} → ${home}`);
  }
});

Deno.test("expandTilde: only a leading `~` or `~/` is expanded", () => {
  assert.equal(expandTilde("~", USER_HOME), USER_HOME);
  assert.equal(expandTilde("~/certs/a.pem", USER_HOME), "/home/ada/certs/a.pem");
  assert.equal(expandTilde("/abs/~/x", USER_HOME), "/abs/~/x");
  assert.equal(expandTilde("rel/~", USER_HOME), "rel/~");
  assert.equal(expandTilde("~other/x", USER_HOME), "~other/x");
  assert.equal(expandTilde("", USER_HOME), "");
});

Deno.test("homePaths: layout matches decisions.md §2", () => {
  const home = "/h/agent";
  const paths = homePaths(home);
  const expected: Record<string, string> = {
    home: "",
    config: "config.yaml",
    dotenv: ".env",
    subscriptions: "webhook_subscriptions.json",
    scripts: "scripts",
    skills: "skills",
    mcpTokens: "mcp-tokens",
    logs: "logs",
    gatewayLog: "logs/gateway.log",
    metrics: "telemetry/shared_metrics",
    metricsDb: "telemetry/shared_metrics/metrics.sqlite3",
    metricsOutbox: "telemetry/shared_metrics/outbox",
    gatewayInbox: "gateway/inbox.sqlite3",
    gatewayLock: "gateway/inbox.sqlite3.lock",
    chatHistory: "chat_history",
  };
  assert.deepEqual(Object.keys(paths).sort(), Object.keys(expected).sort());
  for (const [key, rel] of Object.entries(expected)) {
    const actual = paths[key as keyof typeof paths];
    assert.equal(relative(home, actual), rel, key);
    assert.ok(isAbsolute(actual), key);
  }
  assert.equal(paths.home, home);
  assert.equal(paths.config, "/h/agent/config.yaml");
  assert.equal(paths.gatewayLog, "/h/agent/logs/gateway.log");
  assert.equal(paths.metricsDb, "/h/agent/telemetry/shared_metrics/metrics.sqlite3");
  assert.equal(paths.gatewayInbox, "/h/agent/gateway/inbox.sqlite3");
});

Deno.test("homePaths: composes with resolveHome and touches nothing on disk", () => {
  const home = resolveHome(envOf({ AGENT_HOME: "/nonexistent-agent-home-test" }), USER_HOME, CWD);
  const paths = homePaths(home);
  assert.equal(paths.dotenv, "/nonexistent-agent-home-test/.env");
  assert.throws(() => Deno.statSync(home), Deno.errors.NotFound);
});
