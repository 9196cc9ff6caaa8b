/**
 * `agent mcp` as a new user meets it: the mistakes people make when they copy a server's setup
 * from its README, and what the commands answer.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { cli, cliJson, type CliResult, tempHome } from "./_helpers.ts";
import { denoEnv, everythingStdio, writeConfig, yamlValue } from "./_mcp_helpers.ts";

function expectCode(result: CliResult, code: number): void {
  assert.equal(result.code, code, `exit code\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
}

/** Whether `file` exists. */
function exists(file: string): boolean {
  try {
    Deno.statSync(file);
    return true;
  } catch {
    return false;
  }
}

Deno.test("mcp add: a whole command line in --command exits 2 with the --arg form to run; nothing written", async () => {
  await using home = await tempHome();
  const result = await cli(home.home, [
    "mcp",
    "add",
    "fs",
    "--command",
    "npx -y @modelcontextprotocol/server-filesystem '/tmp/my dir'",
    "--arg",
    "--verbose",
    "--env",
    "LOG=debug",
  ]);
  expectCode(result, 2);
  assert.equal(
    result.stderr,
    "agent: --command \"npx -y @modelcontextprotocol/server-filesystem '/tmp/my dir'\" is a whole " +
      "command line, but --command takes only the executable; each argument goes in its own " +
      "--arg. Nothing was written. Run instead: agent mcp add fs --command npx --arg -y --arg " +
      "@modelcontextprotocol/server-filesystem --arg '/tmp/my dir' --arg --verbose --env " +
      "LOG=debug\n",
  );
  assert.equal(exists(home.config), false);
  const doc = await cliJson(home.home, ["mcp", "add", "fs", "--command", "npx -y x", "--json"], 2);
  assert.match(
    doc.error.message,
    /Run instead: agent mcp add fs --command npx --arg -y --arg x --json$/,
  );
  assert.equal(exists(home.config), false);

  // An executable whose path holds a space is taken as written.
  const spaced = join(home.home, "my tools");
  Deno.mkdirSync(spaced);
  Deno.writeTextFileSync(join(spaced, "server"), "#!/bin/sh\n", { mode: 0o755 });
  const added = await cli(home.home, ["mcp", "add", "local", "--command", join(spaced, "server")]);
  expectCode(added, 0);
  assert.match(Deno.readTextFileSync(home.config), /command: .*my tools\/server/);
});

Deno.test("an unset ${VAR} is to be set in this home's .env, named by its path", async () => {
  await using home = await tempHome();
  const dotenv = join(home.home, ".env");
  const added = await cli(home.home, [
    "mcp",
    "add",
    "api",
    "--url",
    "https://api.example.com/mcp",
    "--header",
    "Authorization=Bearer ${API_TOKEN}",
  ]);
  expectCode(added, 0);
  assert.equal(
    added.stderr,
    `warning: ${home.config}:7: mcp_servers.api.headers.Authorization: \${API_TOKEN} is not set ` +
      `(or empty) in ${dotenv} or the process environment, so it is kept as written; add it to ` +
      `${dotenv}\n`,
  );

  Deno.writeTextFileSync(
    home.config,
    "mcp_servers:\n  docs:\n    url: ${DOCS_URL}\n  logs:\n    command: x\n    env: { LEVEL: '${LEVEL:-info}' }\n",
  );
  const doc = await cliJson(home.home, ["mcp", "list", "--json"]);
  const errors = doc.servers.map((server: { error?: string }) => server.error ?? "");
  assert.ok(
    errors.some((error: string) =>
      error.endsWith(
        `(it still contains \${DOCS_URL}: set DOCS_URL in ${dotenv} or the process environment)`,
      )
    ),
    errors.join("\n"),
  );
  const warnings = doc.servers.flatMap((server: { warnings: string[] }) => server.warnings);
  assert.ok(
    warnings.some((warning: string) =>
      warning.endsWith(`write the value itself, or write \${LEVEL} and set LEVEL in ${dotenv}`)
    ),
    warnings.join("\n"),
  );
});

Deno.test("mcp add --header takes 'Name: Value' as READMEs write it; a header without either is refused unquoted", async () => {
  await using home = await tempHome();
  const doc = await cliJson(home.home, [
    "mcp",
    "add",
    "api",
    "--url",
    "https://api.example.com/mcp",
    "--header",
    "Authorization: Bearer abc",
    "--header",
    "X-Url=http://a.example:8080/x",
    "--header",
    "X-Pair:k=v",
    "--json",
  ]);
  assert.deepEqual(doc.entry.headers, {
    Authorization: "Bearer abc",
    "X-Url": "http://a.example:8080/x",
    "X-Pair": "k=v",
  });

  for (
    const [header, why] of [["Bearer sk-live-secret", "one has neither '=' nor ':'"], [
      ": x",
      "one starts with ':', before any name",
    ]]
  ) {
    const result = await cli(home.home, [
      "mcp",
      "add",
      "other",
      "--url",
      "https://api.example.com/mcp",
      "--header",
      header,
    ]);
    expectCode(result, 2);
    assert.equal(
      result.stderr,
      "agent: --header takes Name=Value (or 'Name: Value'), as in --header " +
        `'Authorization=Bearer \${API_TOKEN}'; ${why}\n`,
    );
  }
  assert.doesNotMatch(Deno.readTextFileSync(home.config), /other/);
});

Deno.test("mcp tools lists the tools an agent gets: server-everything's elicitation and sampling tools too; mcp call answers them no, saying so", async () => {
  await using home = await everythingHome();
  const env = denoEnv();
  const doc = await cliJson(home.home, ["mcp", "tools", "everything", "--json"], 0, { env });
  const names = doc.tools.map((tool: { original_name: string }) => tool.original_name);
  assert.ok(names.includes("trigger-elicitation-request"), names.join(" "));
  assert.ok(names.includes("trigger-sampling-request"), names.join(" "));

  const elicited = await cli(home.home, [
    "mcp",
    "call",
    "everything",
    "trigger-elicitation-request",
  ], {
    env,
  });
  expectCode(elicited, 0);
  assert.match(elicited.stdout, /"action": "decline"/);
  assert.equal(
    elicited.stderr,
    "note: MCP server 'everything' asked for input (elicitation); `agent mcp` commands decline " +
      "it, `agent run` and `agent chat` ask you at a terminal\n",
  );

  const sampled = await cli(home.home, [
    "mcp",
    "call",
    "everything",
    "trigger-sampling-request",
    "--args",
    '{"prompt":"hi"}',
  ], { env });
  expectCode(sampled, 1);
  assert.match(sampled.stdout, /sampling refused: agent mcp commands do not call the model/);
  assert.match(
    sampled.stderr,
    /^note: MCP server 'everything' asked your model for a completion \(sampling\); `agent mcp` commands refuse it/,
  );
});

Deno.test("server-everything's simulate-research-query runs only as a task: not registered, said by mcp list, test and tools; mcp call says why", async () => {
  await using home = await everythingHome();
  const env = denoEnv();
  const reason = "MCP server 'everything': tool 'simulate-research-query' is not registered " +
    "because it runs only as a task (execution.taskSupport: required), and this client does not " +
    "run MCP tasks";
  const doc = await cliJson(home.home, ["mcp", "tools", "everything", "--json"], 0, { env });
  const names = doc.tools.map((tool: { original_name: string }) => tool.original_name);
  assert.ok(!names.includes("simulate-research-query"), names.join(" "));
  assert.ok(names.includes("echo"), names.join(" "));
  assert.deepEqual(doc.warnings, [reason]);
  for (const command of [["list"], ["test", "everything"], ["tools", "everything"]]) {
    const result = await cli(home.home, ["mcp", ...command], { env });
    expectCode(result, 0);
    assert.ok(
      `${result.stdout}${result.stderr}`.includes(reason),
      `mcp ${command.join(" ")}:\n${result.stdout}${result.stderr}`,
    );
  }
  const called = await cli(home.home, [
    "mcp",
    "call",
    "everything",
    "simulate-research-query",
    "--args",
    '{"topic":"tides"}',
  ], { env });
  expectCode(called, 1);
  assert.equal(called.stderr, `agent: ${reason}\n`);
});

/** A temporary home whose config.yaml declares server-everything over stdio as `everything`. */
async function everythingHome(): Promise<Awaited<ReturnType<typeof tempHome>>> {
  const home = await tempHome();
  const { command, args } = everythingStdio();
  writeConfig(
    home.home,
    `mcp_servers:\n  everything:\n    command: ${yamlValue(command)}\n    args: ${
      yamlValue(args)
    }\n`,
  );
  return home;
}
