/**
 * `agent mcp install <link>`: the review, the confirmation (at a terminal, without one, --yes),
 * the no-overwrite rule (rename at the prompt, cancel, --name, a server added meanwhile), the
 * config.yaml edit keeping comments, --json, and `--register-handler`. Nothing here connects to
 * a server. One test runs the real CLI in a pseudo-terminal.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse } from "yaml";
import { installLink } from "../../src/mcp/deeplink.ts";
import type { Prompter } from "../../src/cli/io.ts";
import {
  cli,
  cliJson,
  type CliResult,
  CTRL_C,
  exists,
  type FakeIoOptions,
  type ScriptedAnswer,
  scriptedPrompter,
  tempHome,
} from "./_helpers.ts";
import { Terminal } from "./_terminal.ts";

const HTTP_ENTRY = {
  url: "https://mcp.example.com/mcp",
  headers: { Authorization: "Bearer sk-live-123456", "X-Team": "${TEAM_ID}" },
};
const STDIO_ENTRY = { command: "npx", args: ["-y", "@example/mcp-server", "--root", "/tmp"] };

/** A config.yaml with comments, another key and one server, `docs`. */
const COMMENTED = [
  "# my agent",
  "model:",
  "  default: gpt-4o # keep me",
  "mcp_servers:",
  "  # the docs server",
  "  docs:",
  "    url: https://docs.example.com/mcp # existing",
  "# trailing comment",
  "",
].join("\n");

function expectCode(result: CliResult, code: number): void {
  assert.equal(result.code, code, `exit code\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
}

/** A temp home, optionally with a config.yaml. */
async function home(configText?: string) {
  const h = await tempHome();
  if (configText !== undefined) Deno.writeTextFileSync(h.config, configText);
  return {
    ...h,
    run: (argv: string[], options: FakeIoOptions = {}) => cli(h.home, argv, options),
    text: () => exists(h.config) ? Deno.readTextFileSync(h.config) : undefined,
    servers: () => parse(Deno.readTextFileSync(h.config)).mcp_servers,
  };
}

/** Options of an in-process run at a terminal that answers from `answers`. */
function atTerminal(answers: ScriptedAnswer[]) {
  const scripted = scriptedPrompter(answers);
  return { scripted, options: { stdinIsTerminal: true, prompter: scripted.prompter } };
}

// ---------------------------------------------------------------------------------------------
// Confirmation

Deno.test("at a terminal: the entry is shown, yes writes it, and it says how to test it", async () => {
  await using h = await home();
  const { scripted, options } = atTerminal([true]);
  const result = await h.run(["mcp", "install", installLink("example", HTTP_ENTRY)], options);
  expectCode(result, 0);
  assert.deepEqual(scripted.asked, ["Install MCP server 'example'?"]);
  assert.equal(
    result.stdout,
    [
      "The link installs MCP server 'example', a remote server (Streamable HTTP):",
      "  url: https://mcp.example.com/mcp",
      "  headers:",
      "    Authorization: Bearer <hidden, 14 characters>",
      "    X-Team: ${TEAM_ID}",
      `Installed MCP server 'example' in ${h.config}.`,
      "Check it with: agent mcp test example",
      "A running gateway or chat uses it after a restart or /reload-mcp.",
      "",
    ].join("\n"),
  );
  assert.equal(
    result.stderr,
    // This home's .env, by its path.
    `warning: the entry reads \${TEAM_ID} from ${h.home}/.env or the environment and hands the values to mcp.example.com.\n` +
      `warning: TEAM_ID is not set; add it to ${h.home}/.env before using the server.\n`,
  );
  // Written as given (the mask is only for the screen), in a new file with the usual header.
  assert.deepEqual(h.servers(), { example: HTTP_ENTRY });
  assert.match(h.text()!, /^# Agent service configuration/);
  assert.equal(Deno.statSync(h.config).mode! & 0o777, 0o600);
});

Deno.test("at a terminal: no, Ctrl-C, or io.confirm's no write nothing", async () => {
  await using h = await home(COMMENTED);
  const link = installLink("example", HTTP_ENTRY);
  for (const answers of [[false], [CTRL_C]] as const) {
    const { scripted, options } = atTerminal([...answers]);
    const result = await h.run(["mcp", "install", link], options);
    expectCode(result, 1);
    assert.equal(result.stderr.split("\n").at(-2), "agent: install cancelled; nothing was changed");
    assert.equal(scripted.left(), 0);
    assert.equal(h.text(), COMMENTED);
  }
  // Without a prompter the plain io.confirm is asked (default no).
  const plain = await h.run(["mcp", "install", link], { stdinIsTerminal: true, confirms: [false] });
  expectCode(plain, 1);
  assert.deepEqual(plain.fake.questions, ["Install MCP server 'example'?"]);
  assert.equal(h.text(), COMMENTED);
  const yes = await h.run(["mcp", "install", link], { stdinIsTerminal: true, confirms: [true] });
  expectCode(yes, 0);
  assert.deepEqual(Object.keys(h.servers()), ["docs", "example"]);
});

Deno.test("without a terminal and without --yes: refused (2) after the review, nothing written", async () => {
  await using h = await home();
  const result = await h.run(["mcp", "install", installLink("fs", STDIO_ENTRY)]);
  expectCode(result, 2);
  assert.match(result.stdout, /^The link installs MCP server 'fs', a local server \(stdio\)/);
  assert.match(
    result.stderr,
    /agent: nothing was installed: installing needs your confirmation and stdin is not a terminal; review the entry above, then run again with --yes\n$/,
  );
  assert.equal(exists(h.config), false, "config.yaml was created");
  assert.equal(exists(h.home) && [...Deno.readDirSync(h.home)].length, 0);
});

Deno.test("--yes installs without asking, also without a terminal; stdio is flagged as code", async () => {
  await using h = await home();
  const result = await h.run(["mcp", "install", "--yes", installLink("fs", STDIO_ENTRY)]);
  expectCode(result, 0);
  assert.equal(
    result.stderr,
    [
      "warning: this server is a command: code that will run on this machine, with your",
      "warning: permissions, each time the agent starts it:",
      "warning:   npx -y @example/mcp-server --root /tmp",
      "warning: install it only if you trust where the link came from.",
      "",
    ].join("\n"),
  );
  assert.ok(result.stdout.includes("\n  command: npx\n  args:\n    - -y\n"), result.stdout);
  assert.deepEqual(h.servers(), { fs: STDIO_ENTRY });
  // At a terminal --yes asks nothing either (the prompter has no answers).
  const { options } = atTerminal([]);
  const again = await h.run(
    ["mcp", "install", "-y", "--name", "fs2", installLink("fs", STDIO_ENTRY)],
    options,
  );
  expectCode(again, 0);
  assert.deepEqual(Object.keys(h.servers()), ["fs", "fs2"]);
});

Deno.test("at a terminal, a stdio entry asks about running its command; warnings are coloured", async () => {
  await using h = await home();
  const { scripted } = atTerminal([true]);
  const result = await h.run(["mcp", "install", installLink("fs", STDIO_ENTRY)], {
    stdinIsTerminal: true,
    stderrIsTerminal: true,
    prompter: scripted.prompter,
  });
  expectCode(result, 0);
  assert.deepEqual(scripted.asked, [
    "Install MCP server 'fs' and let the agent run this command on this machine?",
  ]);
  assert.ok(
    result.stderr.startsWith("\x1b[1;33mwarning:\x1b[0m this server is a command"),
    result.stderr,
  );
  const plain = await h.run([
    "mcp",
    "install",
    "--yes",
    "--name",
    "b",
    installLink("fs", STDIO_ENTRY),
  ], {
    stderrIsTerminal: true,
    env: { NO_COLOR: "1" },
  });
  assert.match(plain.stderr, /^warning: this server is a command/);
});

Deno.test("the review escapes characters that could hide text, and shows config warnings", async () => {
  await using h = await home();
  const entry = { command: "sh", args: ["-c", "echo hi\x1b[2K\rrm -rf ~"], comand: "typo" };
  const result = await h.run(["mcp", "install", installLink("x", entry)]);
  expectCode(result, 2);
  for (const hidden of ["\x1b", "\r"]) assert.ok(!(result.stdout + result.stderr).includes(hidden));
  assert.match(result.stdout, /- "echo hi\\u001b\[2K\\rrm -rf ~"/);
  assert.ok(
    result.stderr.includes("warning:   sh -c 'echo hi\\u{1b}[2K\\u{d}rm -rf ~'\n"),
    result.stderr,
  );
  assert.match(
    result.stderr,
    /warning: config: comand: unknown key `comand` is ignored; did you mean `command`\?/,
  );
  // Plain http to another host is flagged.
  const plainHttp = await h.run([
    "mcp",
    "install",
    installLink("p", { url: "http://mcp.example.com/mcp" }),
  ]);
  assert.match(plainHttp.stderr, /warning: mcp\.example\.com is reached over plain http/);
  const loopback = await h.run([
    "mcp",
    "install",
    installLink("l", { url: "http://127.0.0.1:9000/mcp" }),
  ]);
  assert.doesNotMatch(loopback.stderr, /plain http/);
});

// ---------------------------------------------------------------------------------------------
// Rejected links

Deno.test("every rejected link exits 2 with the reason and writes nothing", async () => {
  await using h = await home(COMMENTED);
  const good = installLink("ok", HTTP_ENTRY);
  const cases: [string, RegExp][] = [
    ["https://mcp/install?name=a&config=e30", /the link starts with "https:\/\/", not agent:\/\//],
    [good.replace("name=ok", "name=a%20b"), /name "a b" is not a valid server name/],
    [`${good}&extra=1`, /unknown parameter "extra"/],
    [good.replace(/config=.*/, "config=!!!"), /config is not base64/],
    [installLink("big", { command: "x", args: ["y".repeat(40_000)] }), /over the limit of 32768/],
    [installLink("a", { url: "file:///etc/passwd" }), /config\.url must use http or https/],
    [installLink("a", { url: "https://a.example", command: "npx" }), /both url and command/],
    [installLink("a", { args: [] }), /neither url nor command/],
    [installLink("a", { command: "npx", timeout: "soon" }), /timeout must be a number/],
  ];
  for (const [link, reason] of cases) {
    const result = await h.run(["mcp", "install", "--yes", link]);
    expectCode(result, 2);
    assert.match(result.stderr, /^agent: not installing this link: /);
    assert.match(result.stderr, reason);
    assert.equal(result.stdout, "");
    const json = await cliJson(h.home, ["mcp", "install", "--yes", "--json", link], 2);
    assert.match(json.error.message, reason);
    assert.equal(json.error.exit_code, 2);
  }
  assert.equal(h.text(), COMMENTED);
});

Deno.test("usage errors: no link, a bad --name, --json without --yes, a link with --register-handler", async () => {
  await using h = await home(COMMENTED);
  const link = installLink("example", HTTP_ENTRY);
  const none = await h.run(["mcp", "install"]);
  expectCode(none, 2);
  assert.match(
    none.stderr,
    /missing the link: agent mcp install '<agent:\/\/mcp\/install\?name=…&config=…>'/,
  );
  const badName = await h.run(["mcp", "install", "--yes", "--name", "a b", link]);
  expectCode(badName, 2);
  assert.match(badName.stderr, /--name 'a b' is not a valid server name; use 1 to 64 letters/);
  const json = await cliJson(h.home, ["mcp", "install", "--json", link], 2, {
    stdinIsTerminal: true,
  });
  assert.match(json.error.message, /^--json never asks, so it needs --yes/);
  const both = await h.run(["mcp", "install", "--register-handler", link]);
  expectCode(both, 2);
  assert.match(both.stderr, /--register-handler takes no link/);
  assert.equal(h.text(), COMMENTED);
});

Deno.test("mcp_servers that is not a mapping is not replaced (2)", async () => {
  const text = "mcp_servers: [a, b] # odd\n";
  await using h = await home(text);
  const result = await h.run(["mcp", "install", "--yes", installLink("x", HTTP_ENTRY)]);
  expectCode(result, 2);
  assert.equal(
    result.stderr,
    `agent: ${h.config}:1: mcp_servers must be a mapping of server names to entries, ` +
      "got a list; replace it with `mcp_servers:` followed by indented `<name>:` entries (or " +
      "delete the line), then run the command again; nothing was written\n",
  );
  assert.equal(h.text(), text);
});

// ---------------------------------------------------------------------------------------------
// Existing names: rename or cancel, never overwrite

Deno.test("existing name without a terminal (or with --yes): refused (1), file byte-identical", async () => {
  await using h = await home(COMMENTED);
  const link = installLink("docs", HTTP_ENTRY);
  for (
    const options of [{}, { stdinIsTerminal: true, prompter: scriptedPrompter([]).prompter }]
  ) {
    const result = await h.run(["mcp", "install", "--yes", link], options);
    expectCode(result, 1);
    assert.match(
      result.stderr,
      /agent: MCP server 'docs' already exists in .*config\.yaml; nothing was changed \(an existing server is never overwritten\)\. Install it under another name with --name <new-name>\n$/,
    );
    assert.equal(h.text(), COMMENTED);
  }
  const json = await cliJson(h.home, ["mcp", "install", "--yes", "--json", link], 1);
  assert.match(json.error.message, /already exists/);
  assert.equal(h.text(), COMMENTED);
});

Deno.test("existing name at a terminal: rename (the new name is checked), then confirm", async () => {
  await using h = await home(COMMENTED);
  const { scripted, options } = atTerminal([
    "rename",
    "docs", // exists too
    "bad name", // invalid
    "", // the suggested default: docs-2
    true,
  ]);
  const result = await h.run(["mcp", "install", installLink("docs", HTTP_ENTRY)], options);
  expectCode(result, 0);
  assert.deepEqual(scripted.asked, [
    `MCP server 'docs' already exists in ${h.config} and is never overwritten. What now?`,
    "Name of the new server",
    "Name of the new server",
    "Name of the new server",
    "Install MCP server 'docs-2'?",
  ]);
  assert.deepEqual(scripted.rejected, [
    "'docs' exists too; choose another name",
    "'bad name' is not a valid server name; use 1 to 64 letters, digits, '.', '_' or '-'",
  ]);
  assert.match(result.stdout, /Installed MCP server 'docs-2' in /);
  const text = h.text()!;
  assert.ok(text.startsWith(COMMENTED.replace("# trailing comment\n", "")), text);
  assert.deepEqual(h.servers(), {
    docs: { url: "https://docs.example.com/mcp" },
    "docs-2": HTTP_ENTRY,
  });
});

Deno.test("existing name at a terminal: cancel, Ctrl-C, or no after renaming change nothing", async () => {
  await using h = await home(COMMENTED);
  const link = installLink("docs", HTTP_ENTRY);
  const scripts: ScriptedAnswer[][] = [
    ["cancel"],
    [CTRL_C],
    ["rename", CTRL_C],
    ["rename", "new", false],
  ];
  for (const answers of scripts) {
    const { scripted, options } = atTerminal(answers);
    const result = await h.run(["mcp", "install", link], options);
    expectCode(result, 1);
    assert.match(result.stderr, /agent: install cancelled; nothing was changed\n$/);
    assert.equal(scripted.left(), 0);
    assert.equal(h.text(), COMMENTED);
  }
});

Deno.test("--name installs under another name; an existing --name is refused (1)", async () => {
  await using h = await home(COMMENTED);
  const link = installLink("docs", HTTP_ENTRY);
  const taken = await h.run(["mcp", "install", "--yes", "--name", "docs", link]);
  expectCode(taken, 1);
  assert.match(
    taken.stderr,
    /MCP server 'docs' already exists .*never overwritten\)\. Choose another --name/,
  );
  assert.equal(h.text(), COMMENTED);
  // At a terminal an existing --name is not asked about either.
  const { options } = atTerminal([]);
  const takenAtTerminal = await h.run(["mcp", "install", "--name", "docs", link], options);
  expectCode(takenAtTerminal, 1);
  assert.equal(h.text(), COMMENTED);

  const renamed = await h.run(["mcp", "install", "--yes", "--name", "docs.v2", link]);
  expectCode(renamed, 0);
  assert.deepEqual(Object.keys(h.servers()), ["docs", "docs.v2"]);
  assert.deepEqual(h.servers()["docs.v2"], HTTP_ENTRY);
});

Deno.test("a server added while the user was asked is not overwritten either", async () => {
  await using h = await home(COMMENTED);
  const meanwhile = COMMENTED.replace("# trailing comment\n", "  new:\n    command: other\n");
  const prompter: Prompter = {
    ...scriptedPrompter([]).prompter,
    confirm: () => {
      Deno.writeTextFileSync(h.config, meanwhile); // another `agent mcp add new` got there first
      return Promise.resolve(true);
    },
  };
  const result = await h.run(["mcp", "install", installLink("new", HTTP_ENTRY)], {
    stdinIsTerminal: true,
    prompter,
  });
  expectCode(result, 1);
  assert.match(
    result.stderr,
    /MCP server 'new' appeared in .*config\.yaml meanwhile; nothing was changed/,
  );
  assert.equal(h.text(), meanwhile);
});

// ---------------------------------------------------------------------------------------------
// config.yaml and --json

Deno.test("comments, key order and other keys of config.yaml are kept", async () => {
  await using h = await home(COMMENTED);
  const result = await h.run(["mcp", "install", "--yes", installLink("fs", STDIO_ENTRY)]);
  expectCode(result, 0);
  const text = h.text()!;
  for (
    const kept of [
      "# my agent",
      "  default: gpt-4o # keep me",
      "  # the docs server",
      "# existing",
      "# trailing comment",
    ]
  ) {
    assert.ok(text.includes(kept), `${kept} lost:\n${text}`);
  }
  assert.ok(text.startsWith(COMMENTED.replace("# trailing comment\n", "")), text);
  const config = parse(text);
  assert.deepEqual(Object.keys(config), ["model", "mcp_servers"]);
  assert.deepEqual(config.mcp_servers, {
    docs: { url: "https://docs.example.com/mcp" },
    fs: STDIO_ENTRY,
  });
});

Deno.test("an empty mcp_servers: is filled; the entry loads like any other server", async () => {
  await using h = await home("# servers below\nmcp_servers:\n");
  const doc = await cliJson(h.home, [
    "mcp",
    "install",
    "--yes",
    "--json",
    installLink("fs", STDIO_ENTRY),
  ]);
  assert.equal(doc.installed, "fs");
  assert.deepEqual(h.servers(), { fs: STDIO_ENTRY });
  assert.match(h.text()!, /^# servers below\n/);
  const listed = await cliJson(h.home, ["mcp", "list", "--json"], 0, { env: { PATH: "" } });
  assert.deepEqual(listed.issues, []);
  assert.deepEqual(listed.servers.map((s: { name: string }) => s.name), ["fs"]);
});

Deno.test("--json --yes: exactly one document; nothing on stderr", async () => {
  await using h = await home(COMMENTED);
  const result = await h.run(
    ["mcp", "install", "--yes", "--json", "--name", "api", installLink("example", HTTP_ENTRY)],
    { env: { TEAM_ID: "t-1" } },
  );
  expectCode(result, 0);
  assert.equal(result.stderr, "");
  assert.deepEqual(JSON.parse(result.stdout), {
    installed: "api",
    link_name: "example",
    source: "link",
    file: h.config,
    transport: "http",
    entry: HTTP_ENTRY,
    variables: ["TEAM_ID"],
    unset_variables: [],
    issues: [],
    warnings: [],
  });
  assert.deepEqual(h.servers().api, HTTP_ENTRY);
});

// ---------------------------------------------------------------------------------------------
// The JSON of other MCP clients, as servers' READMEs show it

/** Claude Desktop's `claude_desktop_config.json`, as a server's README prints it. */
const README_SNIPPET = `{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"],
      "env": { "API_KEY": "\${FS_KEY}" },
      "cwd": "/Users/me"
    }
  }
}`;

Deno.test("a README's Claude Desktop JSON: reviewed like a link, --yes writes the translated entry", async () => {
  await using h = await home(COMMENTED);
  const result = await h.run(["mcp", "install", "--yes", README_SNIPPET]);
  expectCode(result, 0);
  assert.equal(
    result.stdout,
    [
      "The JSON installs MCP server 'filesystem', a local server (stdio): a command that runs on this machine:",
      "  command: npx",
      "  args:",
      "    - -y",
      "    - @modelcontextprotocol/server-filesystem",
      "    - /Users/me/Desktop",
      "  env:",
      "    API_KEY: ${FS_KEY}",
      `Installed MCP server 'filesystem' in ${h.config}.`,
      "Check it with: agent mcp test filesystem",
      "A running gateway or chat uses it after a restart or /reload-mcp.",
      "",
    ].join("\n"),
  );
  assert.match(
    result.stderr,
    /^warning: install it only if you trust where the JSON came from\.$/m,
  );
  assert.match(
    result.stderr,
    /^warning: left out `cwd` \(the server starts in the directory the agent runs in; give absolute paths in args\): not a key of a server entry here$/m,
  );
  assert.ok(
    result.stderr.includes(`warning: FS_KEY is not set; add it to ${h.home}/.env before`),
    result.stderr,
  );
  assert.deepEqual(h.servers().filesystem, {
    command: "npx",
    args: ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"],
    env: { API_KEY: "${FS_KEY}" },
  });
  assert.match(h.text()!, /^# my agent\n/, "comments kept");

  // The same JSON again: the name exists, so it is refused like a link's, nothing changed.
  const before = h.text();
  const again = await h.run(["mcp", "install", "--yes", README_SNIPPET]);
  expectCode(again, 1);
  assert.match(again.stderr, /MCP server 'filesystem' already exists/);
  assert.equal(h.text(), before);
});

Deno.test("JSON: --json has source json, the changes and an unset variable in warnings (and on stderr); an entry without a name needs --name", async () => {
  await using h = await home();
  const vscode = JSON.stringify({
    servers: {
      github: {
        type: "http",
        url: "https://api.example.com/mcp/",
        headers: { Authorization: "Bearer ${input:github_token}" },
      },
    },
  });
  const result = await h.run(["mcp", "install", "--yes", "--json", vscode]);
  expectCode(result, 0);
  const doc = JSON.parse(result.stdout);
  // The variable is not set yet: config.yaml's own warning about it.
  assert.deepEqual(
    doc.issues.map((issue: { key: string; severity: string }) => [issue.key, issue.severity]),
    [["headers.Authorization", "warning"]],
  );
  assert.deepEqual({ ...doc, issues: [] }, {
    installed: "github",
    link_name: "github",
    source: "json",
    file: h.config,
    transport: "http",
    entry: {
      url: "https://api.example.com/mcp/",
      headers: { Authorization: "Bearer ${GITHUB_TOKEN}" },
    },
    variables: ["GITHUB_TOKEN"],
    unset_variables: ["GITHUB_TOKEN"],
    issues: [],
    warnings: [
      "${input:github_token} (a VS Code input) is read as the variable ${GITHUB_TOKEN}",
      // What the review says without --json.
      `GITHUB_TOKEN is not set; add it to ${join(h.home, ".env")} before using the server.`,
    ],
  });
  // Each once on stderr too, as the review says them.
  assert.equal(result.stderr, doc.warnings.map((line: string) => `warning: ${line}\n`).join(""));

  const bare = JSON.stringify({ command: "uvx", args: ["mcp-server-fetch"] });
  const unnamed = await h.run(["mcp", "install", "--yes", bare]);
  expectCode(unnamed, 2);
  assert.equal(
    unnamed.stderr,
    "agent: not installing this JSON: the JSON is one server entry without a name; give it one with --name <name>\n",
  );
  const named = await h.run(["mcp", "install", "--yes", "--name", "fetch", bare]);
  expectCode(named, 0);
  assert.deepEqual(h.servers().fetch, { command: "uvx", args: ["mcp-server-fetch"] });

  const several = await h.run([
    "mcp",
    "install",
    "--yes",
    JSON.stringify({ mcpServers: { a: { command: "x" }, b: { command: "y" } } }),
  ]);
  expectCode(several, 2);
  assert.match(several.stderr, /not installing this JSON: the JSON holds 2 servers \(a, b\)/);
  assert.deepEqual(Object.keys(h.servers()), ["github", "fetch"]);
});

// ---------------------------------------------------------------------------------------------
// --register-handler

Deno.test({
  name: "--register-handler writes the xdg desktop entry and runs xdg-mime when it is installed",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    await using h = await home();
    const data = join(h.home, "my data");
    const bin = join(h.home, "bin");
    Deno.mkdirSync(bin);
    const log = join(h.home, "xdg-mime.log");
    Deno.writeTextFileSync(join(bin, "xdg-mime"), `#!/bin/sh\necho "$@" >> '${log}'\n`);
    Deno.chmodSync(join(bin, "xdg-mime"), 0o755);
    const env = { XDG_DATA_HOME: data, PATH: bin, HOME: h.home };

    const result = await h.run(["mcp", "install", "--register-handler"], { env });
    expectCode(result, 0);
    const file = join(data, "applications", "agent-mcp-install.desktop");
    assert.match(result.stdout, new RegExp(`^Wrote ${file}\n`));
    assert.match(result.stdout, /agent:\/\/ links now open `agent mcp install` in a terminal/);
    const desktop = Deno.readTextFileSync(file);
    assert.match(desktop, /^\[Desktop Entry\]\nType=Application\n/);
    assert.match(desktop, /^MimeType=x-scheme-handler\/agent;$/m);
    assert.match(desktop, /^Terminal=true$/m);
    // Runs this checkout through deno with the home of this invocation, the link last.
    const exec = /^Exec=(.*)$/m.exec(desktop)![1];
    assert.ok(
      exec.startsWith(`env AGENT_HOME=${h.home} ${Deno.execPath()} run --allow-all --config `),
      exec,
    );
    assert.match(exec, /main\.ts mcp install %u$/);
    assert.equal(
      Deno.readTextFileSync(log),
      "default agent-mcp-install.desktop x-scheme-handler/agent\n",
    );

    // Without xdg-mime: the file is written and the command to run is named, in a warning on
    // stderr (--json too, where it is in warnings).
    const warning = "xdg-mime is not installed; to make this the agent:// handler, run: " +
      "xdg-mime default agent-mcp-install.desktop x-scheme-handler/agent";
    const withJson = await h.run(["mcp", "install", "--register-handler", "--json"], {
      env: { ...env, PATH: join(h.home, "empty") },
    });
    expectCode(withJson, 0);
    const json = JSON.parse(withJson.stdout);
    assert.equal(json.desktop_file, file);
    assert.equal(json.xdg_mime, "not installed");
    assert.deepEqual(json.warnings, [warning]);
    assert.equal(withJson.stderr, `warning: ${warning}\n`);
    const text = await h.run(["mcp", "install", "--register-handler"], {
      env: { ...env, PATH: "" },
    });
    expectCode(text, 0);
    assert.equal(text.stderr, `warning: ${warning}\n`);
  },
});

Deno.test({
  name: "--register-handler quotes paths with spaces and specials as the desktop entry spec says",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    await using h = await home();
    const agentHome = join(h.home, 'odd "home" $x 100%');
    const result = await h.run(["mcp", "install", "--register-handler", "--json"], {
      env: { XDG_DATA_HOME: join(h.home, "d"), PATH: "", AGENT_HOME: agentHome },
    });
    expectCode(result, 0);
    const exec = JSON.parse(result.stdout).exec as string;
    assert.ok(
      exec.startsWith(`env "AGENT_HOME=${h.home}/odd \\\\"home\\\\" \\\\$x 100%%" `),
      exec,
    );
  },
});

// ---------------------------------------------------------------------------------------------
// A real terminal

Deno.test("in a real terminal: the review, then y at the prompt installs", async () => {
  await using h = await home(COMMENTED);
  const terminal = new Terminal(h.home, ["mcp", "install", installLink("fs", STDIO_ENTRY)]);
  try {
    let at = await terminal.waitFor(/npx -y @example\/mcp-server --root \/tmp/);
    at = await terminal.waitFor(/Install MCP server 'fs' and let the agent run this command/, at);
    await terminal.type("y\r");
    await terminal.waitFor(/Installed MCP server 'fs'/, at);
    const status = await terminal.exit();
    assert.equal(status.code, 0, terminal.screen);
  } finally {
    terminal.kill();
  }
  assert.deepEqual(h.servers().fs, STDIO_ENTRY);
  assert.ok(h.text()!.includes("  default: gpt-4o # keep me"));
});

Deno.test("in a real terminal: Enter keeps the default answer, no, and nothing is written", async () => {
  await using h = await home(COMMENTED);
  const terminal = new Terminal(h.home, ["mcp", "install", installLink("api", HTTP_ENTRY)]);
  try {
    const at = await terminal.waitFor(/Install MCP server 'api'\?/);
    await terminal.type("\r");
    await terminal.waitFor(/install cancelled; nothing was changed/, at);
    const status = await terminal.exit();
    assert.equal(status.code, 1, terminal.screen);
  } finally {
    terminal.kill();
  }
  assert.equal(h.text(), COMMENTED);
});

Deno.test('JSON whose "type" says stdio but has a url (or http with only a command) is refused naming both keys; nothing written', async () => {
  await using h = await home(COMMENTED);
  const stdioWithUrl = JSON.stringify({
    mcpServers: { api: { type: "stdio", url: "https://api.example.com/mcp" } },
  });
  const refused = await h.run(["mcp", "install", "--yes", stdioWithUrl]);
  expectCode(refused, 2);
  assert.equal(
    refused.stderr,
    'agent: not installing this JSON: mcpServers.api.type is "stdio" (a local command) but ' +
      "mcpServers.api.url is set (a remote server), so the entry contradicts itself; remove " +
      '"type" to install the remote server at the url, or remove "url" and give a "command"\n',
  );
  assert.equal(refused.stdout, "");
  assert.equal(h.text(), COMMENTED);

  const httpWithCommand = JSON.stringify({ fetch: { type: "http", command: "uvx" } });
  const other = await h.run(["mcp", "install", "--yes", httpWithCommand]);
  expectCode(other, 2);
  assert.match(
    other.stderr,
    /fetch\.type is "http" \(a remote server\) but fetch\.command is set and no url .*remove "type" to run the command, or remove "command" and give a "url"\n$/,
  );
  assert.equal(h.text(), COMMENTED);

  // Without the contradiction, both install.
  const fixed = await h.run([
    "mcp",
    "install",
    "--yes",
    stdioWithUrl.replace('"type":"stdio",', ""),
  ]);
  expectCode(fixed, 0);
  assert.deepEqual(h.servers().api, { url: "https://api.example.com/mcp" });
});
