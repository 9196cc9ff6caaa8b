/**
 * The shape of `agent`: help, version, exit codes, and the groups that have not landed yet.
 */
import assert from "node:assert/strict";
import manifest from "../../deno.json" with { type: "json" };
import { join } from "node:path";
import {
  cli,
  filesIn,
  MAIN,
  parseOneJson,
  REPO,
  spawnCli,
  spawnDeno,
  tempHome,
  validPackage,
} from "./_helpers.ts";

Deno.test("--help lists every command group and the exit codes, exit 0", async () => {
  await using h = await tempHome();
  const result = await cli(h.home, ["--help"]);
  assert.equal(result.code, 0);
  for (const group of ["metrics", "gateway", "webhook", "mcp", "chat", "run"]) {
    assert.match(result.stdout, new RegExp(`^\\s+${group}\\b`, "m"), `help lists ${group}`);
  }
  assert.match(result.stdout, /Exit codes: 0 ok, 1 the operation failed, 2 usage or validation/);
  assert.equal(result.stderr, "");
  assert.deepEqual(filesIn(h.home), [], "help creates nothing in <home>");
});

Deno.test("metrics --help lists its subcommands and the consent note, exit 0", async () => {
  await using h = await tempHome();
  const result = await cli(h.home, ["metrics", "--help"]);
  assert.equal(result.code, 0);
  for (const sub of ["status", "enable", "disable", "preview", "export", "send", "validate"]) {
    assert.match(result.stdout, new RegExp(`^\\s+${sub}\\b`, "m"), `metrics help lists ${sub}`);
  }
  assert.match(result.stdout, /^\s+reset\b/m);
  assert.match(result.stdout, /DO_NOT_TRACK/);
});

Deno.test("metrics help says that export also sends, enable sends only with --send, and how disabled data goes", async () => {
  await using h = await tempHome();
  const help = async (...argv: string[]) => {
    const result = await cli(h.home, [...argv, "--help"]);
    assert.equal(result.code, 0, result.stderr);
    return result.stdout.replace(/\s+/g, " ");
  };
  assert.match(
    await help("metrics", "export"),
    /with sending on, also send the packages that are due/,
  );
  assert.match(
    await help("metrics", "enable"),
    /collect usage counters locally \(with --send, also send/,
  );
  assert.match(await help("metrics", "disable"), /data is kept; `agent metrics reset` deletes it/);
  const group = await help("metrics");
  assert.match(group, /export \[options\] build packages .* also send the packages that are due/);
});

Deno.test("--version and -V print the deno.json version", async () => {
  await using h = await tempHome();
  for (const flag of ["--version", "-V"]) {
    const result = await cli(h.home, [flag]);
    assert.equal(result.code, 0);
    assert.equal(result.stdout, `${manifest.version}\n`);
  }
});

Deno.test("an unknown command is a usage error (exit 2) naming the command", async () => {
  await using h = await tempHome();
  const result = await cli(h.home, ["frobnicate"]);
  assert.equal(result.code, 2);
  assert.match(result.stderr, /unknown command 'frobnicate'/);
  assert.equal(result.stdout, "");
});

Deno.test("help <command> shows that command's help; help of an unknown one names it", async () => {
  await using h = await tempHome();
  const known = await cli(h.home, ["help", "webhook"]);
  assert.equal(known.code, 0);
  assert.match(known.stdout, /^Usage: agent webhook /);
  const unknown = await cli(h.home, ["help", "metrcs"]);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown command 'metrcs'\n\(Did you mean metrics\?\)/);
  assert.equal(unknown.stdout, "");
});

Deno.test("help <group> <command> shows that command's help, not the group's; an unknown one is named", async () => {
  await using h = await tempHome();
  const nested = await cli(h.home, ["help", "webhook", "subscribe"]);
  assert.equal(nested.code, 0, nested.stderr);
  assert.match(nested.stdout, /^Usage: agent webhook subscribe\|add \[options\] <name>/);
  assert.match(nested.stdout, /--prompt <template>/);
  const alias = await cli(h.home, ["help", "webhook", "ls"]);
  assert.match(alias.stdout, /^Usage: agent webhook list\|ls /);
  const unknown = await cli(h.home, ["help", "webhook", "subscibe"]);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown command 'subscibe'\n\(Did you mean subscribe\?\)/);
  assert.equal(unknown.stdout, "");
});

Deno.test("an option where another option's value belongs is refused, not taken as the value", async () => {
  await using h = await tempHome();
  const swallowed = await cli(h.home, ["webhook", "subscribe", "x", "--prompt", "--json"]);
  assert.equal(swallowed.code, 2);
  assert.equal(
    (parseOneJson(swallowed.stdout).error as { message: string }).message,
    "option '--prompt <template>' needs a value, and --json is an option. Fix: give the value " +
      "(write --prompt=--json if that is the value)",
  );
  const text = await cli(h.home, ["webhook", "subscribe", "x", "--deliver", "-h"]);
  assert.equal(text.code, 2);
  assert.match(
    text.stderr,
    /^agent: option '--deliver <target>' needs a value, and -h is an option/,
  );
  assert.deepEqual(filesIn(h.home), [], "nothing was subscribed");
  // Written with =, the option is the value; a value that only starts with - is a value.
  const meant = await cli(h.home, ["webhook", "subscribe", "x", "--prompt=--json", "--json"]);
  assert.equal(meant.code, 0, meant.stderr);
  assert.equal(parseOneJson(meant.stdout).prompt, "--json");
  const negative = await cli(h.home, [
    "webhook",
    "subscribe",
    "y",
    "--deliver",
    "telegram",
    "--deliver-chat-id",
    "-1001234567890",
    "--json",
  ]);
  assert.equal(negative.code, 0, negative.stderr);
  assert.deepEqual(parseOneJson(negative.stdout).deliver_extra, { chat_id: "-1001234567890" });
});

Deno.test("an unknown option of a metrics command is a usage error (exit 2)", async () => {
  await using h = await tempHome();
  const result = await cli(h.home, ["metrics", "status", "--bogus"]);
  assert.equal(result.code, 2);
  assert.match(result.stderr, /unknown option '--bogus'/);
});

Deno.test("metrics validate without a file is a usage error (exit 2)", async () => {
  await using h = await tempHome();
  const result = await cli(h.home, ["metrics", "validate"]);
  assert.equal(result.code, 2);
  assert.match(result.stderr, /missing required argument 'files'/);
  assert.equal(result.stdout, "");
});

Deno.test("`agent mcp login` of an unknown server is a usage error naming it (exit 2)", async () => {
  await using h = await tempHome();
  const result = await cli(h.home, ["mcp", "login", "server"]);
  assert.equal(result.code, 2);
  assert.match(result.stderr, /no MCP server 'server' in .*config\.yaml/);
  assert.doesNotMatch(result.stderr, /not available yet/);
  assert.equal(result.stdout, "");
  assert.deepEqual(filesIn(h.home), [], "nothing is created for an unknown server");
});

Deno.test("`agent mcp --help` lists login", async () => {
  await using h = await tempHome();
  const result = await cli(h.home, ["mcp", "--help"]);
  assert.equal(result.code, 0);
  assert.match(result.stdout, /^\s+login\b.*authorize an auth: oauth server/m);
  assert.doesNotMatch(result.stdout, /not available yet/);
});

Deno.test("e2e: the real CLI prints help, version, and exit codes", async () => {
  await using h = await tempHome();
  const help = await spawnCli(h.home, ["--help"]);
  assert.equal(help.code, 0, help.stderr);
  for (const group of ["metrics", "gateway", "webhook", "mcp", "chat", "run"]) {
    assert.match(help.stdout, new RegExp(`^\\s+${group}\\b`, "m"));
  }
  assert.match(help.stdout, /Exit codes: 0 ok, 1 the operation failed, 2 usage/);

  const version = await spawnCli(h.home, ["--version"]);
  assert.equal(version.code, 0, version.stderr);
  assert.equal(version.stdout.trim(), manifest.version);

  const unknown = await spawnCli(h.home, ["frobnicate"]);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown command 'frobnicate'/);

  const login = await spawnCli(h.home, ["mcp", "login", "server"]);
  assert.equal(login.code, 2);
  assert.match(login.stderr, /no MCP server 'server'/);
  assert.deepEqual(filesIn(h.home), []);
});

Deno.test("the README's `deno task agent -- <command> --option` form works: the `--` deno task passes on is dropped", async () => {
  await using h = await tempHome();
  const result = await spawnDeno(["task", "agent", "--", "metrics", "status", "--json"], h.home);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(JSON.parse(result.stdout).enabled, false);
  const help = await cli(h.home, ["--", "mcp", "--help"]);
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /Usage: agent mcp/);
});

Deno.test("under `deno task`, relative paths are taken from the folder the task was started in", async () => {
  await using h = await tempHome();
  const elsewhere = Deno.makeTempDirSync({ dir: h.home, prefix: "work-" });
  Deno.writeTextFileSync(join(elsewhere, "metrics-package.json"), JSON.stringify(validPackage()));
  const result = await spawnDeno(
    [
      "task",
      "--config",
      join(REPO, "deno.json"),
      "agent",
      "metrics",
      "validate",
      "--json",
      "metrics-package.json",
    ],
    h.home,
    { cwd: elsewhere },
  );
  assert.equal(result.code, 0, result.stdout + result.stderr);
  assert.equal(JSON.parse(result.stdout).valid, true);
});

Deno.test("an INIT_CWD inherited by a process started in another folder is not followed: its relative paths are its own folder's", async () => {
  // An npm script or a task of another project sets INIT_CWD for everything it starts; `agent`
  // started by it in a folder of its own (not `deno task` in the checkout) stays there.
  await using h = await tempHome();
  const started = Deno.makeTempDirSync({ dir: h.home, prefix: "started-" });
  const inherited = Deno.makeTempDirSync({ dir: h.home, prefix: "inherited-" });
  Deno.writeTextFileSync(join(started, "metrics-package.json"), JSON.stringify(validPackage()));
  const result = await spawnCli(h.home, ["metrics", "validate", "--json", "metrics-package.json"], {
    cwd: started,
    env: { INIT_CWD: inherited },
  });
  assert.equal(result.code, 0, result.stdout + result.stderr);
  assert.equal(JSON.parse(result.stdout).valid, true);
});

Deno.test("a package.json saved next to deno.json does not make Deno look for node_modules", async () => {
  await using h = await tempHome();
  // A copy of the checkout's configuration with a package.json beside it, as a user saving an
  // npm manifest (or a file they named package.json) in the checkout would have.
  const checkout = Deno.makeTempDirSync({ dir: h.home, prefix: "checkout-" });
  for (const file of ["deno.json", "deno.lock"]) {
    Deno.copyFileSync(join(REPO, file), join(checkout, file));
  }
  Deno.writeTextFileSync(join(checkout, "package.json"), '{"name": "mine"}\n');
  const result = await spawnDeno(
    ["run", "--config", join(checkout, "deno.json"), "--allow-all", MAIN, "--version"],
    h.home,
    { cwd: checkout },
  );
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout, `${manifest.version}\n`);
});

Deno.test("help of a repeatable option shows no `(default: [])`; webhook subscribe names --deliver's default", async () => {
  await using h = await tempHome();
  for (const command of [["webhook", "subscribe"], ["mcp", "add"]]) {
    const result = await cli(h.home, [...command, "--help"]);
    assert.equal(result.code, 0, result.stderr);
    assert.doesNotMatch(result.stdout, /default: \[\]/, command.join(" "));
  }
  const subscribe = await cli(h.home, ["webhook", "subscribe", "--help"]);
  assert.match(subscribe.stdout, /\(repeatable\)\n/);
  assert.match(subscribe.stdout.replace(/\s+/g, " "), /gitlab_comment \(default: log\)/);
});
