/**
 * `agent mcp`: list, test, tools, call, add, remove, login, install.
 *
 * @module
 */
import type { Command } from "@commander-js/extra-typings";
import { Document, isMap } from "yaml";
import stringWidth from "fast-string-width";
import { ConfigSource, isPlainObject, loadConfig, type ResolvedConfig } from "../home/config.ts";
import { editConfigFile, removeConfigEntry } from "../home/config_edit.ts";
import { ConfigError } from "../home/errors.ts";
import { configuredLogLevel, type LogLevel } from "../home/log.ts";
import {
  formatIssue,
  loadMcpServers,
  type McpConfigIssue,
  McpManager,
  type McpServerConfig,
  McpServerError,
  type McpTransportKind,
  parseMcpServers,
  type RegisteredTool,
  SERVER_NAME_PATTERN,
  serverLogLevel,
  type ServerState,
  StderrLog,
  type ToolProgress,
} from "../mcp/mod.ts";
import { loginMcpServer, type LoginOutcome, storedOAuth } from "../mcp/oauth/mod.ts";
import {
  type InstallEntry,
  InstallLinkError,
  parseInstallLink,
  renderCommandLine,
  renderEntry,
  visible,
} from "../mcp/deeplink.ts";
import { splitCommandLine } from "../mcp/command_line.ts";
import { argumentProblems, describeArguments } from "../mcp/tool_arguments.ts";
import { looksLikeJson, parseInstallSnippet } from "../mcp/snippet.ts";
import { samplingRefusal } from "../mcp/sampling.ts";
import { homedir } from "node:os";
import { basename, isAbsolute, join, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { writeFileAtomic } from "../home/files.ts";
import { cut } from "../home/text.ts";
import { contentText } from "../agent/run.ts";
import { isLoopbackHost } from "../home/loopback.ts";
import { AGENT_VERSION } from "../version.ts";
import {
  CliError,
  type CliIo,
  configFileWarnings,
  loadedConfigFileWarnings,
  printJson,
  PromptCancelled,
  type Prompter,
  UsageError,
} from "./io.ts";
import { jsonObjectOption } from "./json_option.ts";
import { canRedraw, ERASE_ROW, toolProgressLine } from "./status_line.ts";
import type { CommandState } from "./mod.ts";

/** Adds the `mcp` group to `program`. */
export function addMcpCommands(program: Command, io: CliIo, state: CommandState): void {
  const mcp = program.command("mcp").description(
    "manage MCP tool servers (mcp_servers in config.yaml)",
  )
    .addHelpText(
      "after",
      "\nServers are declared under mcp_servers in config.yaml; their tools become\n" +
        "mcp__<server>__<tool>. Stdio servers' stderr, and the log messages of servers that\n" +
        "send them (logging.level and up, info by default), go to <home>/logs/mcp-stderr.log.",
    );

  mcp.command("list").alias("ls").description(
    "connect to every configured server and show its status",
  )
    .option("--json", "print one JSON document").action(async (options) => {
      const session = McpSession.open(io);
      try {
        await session.start(session.servers);
        const servers = session.manager.servers();
        // The servers' own warnings (a tool left out, a tools.include entry that matches none),
        // on stderr as `mcp tools` says them, with --json too; they quote the server's tool
        // names: shown inert (--json: the exact text).
        const serverWarnings = servers.flatMap((server) => server.warnings);
        // Each entry's own config warnings sit on its row, as in `mcp test --json`.
        const rows = [...servers, ...session.invalidServers()].map((row) => ({
          ...row,
          warnings: [...session.warningsOf(row.name), ...row.warnings],
        }));
        if (options.json) {
          // The entries' config warnings on stderr, as without --json (their errors are in
          // `issues` and the invalid rows).
          const configWarnings = session.warningsOf();
          for (const warning of configWarnings) io.err(`warning: ${warning}\n`);
          for (const warning of serverWarnings) io.err(`warning: ${visible(warning)}\n`);
          return printJson(io, {
            servers: rows.map(serverRow),
            issues: session.issues,
            // What every command says on stderr first (unknown keys, .env lines), then these.
            warnings: [
              ...configFileWarnings(session.config),
              ...configWarnings,
              ...session.oauthWarnings,
              ...serverWarnings,
            ],
          });
        }
        session.printIssues();
        for (const warning of serverWarnings) io.err(`warning: ${visible(warning)}\n`);
        if (rows.length === 0) {
          io.out(
            `No MCP servers configured. Add one with \`agent mcp add\` or under mcp_servers in ${session.config.paths.config}.\n`,
          );
          return;
        }
        printTable(
          io,
          ["NAME", "TRANSPORT", "STATUS", "ERA", "TOOLS", "DETAIL"],
          rows.map((s) => [
            s.name,
            s.transport,
            s.status,
            s.era ?? "",
            String(s.toolCount),
            s.error ?? s.warnings[0] ?? "",
          ]),
        );
      } finally {
        await session.close();
      }
    });

  mcp.command("test").description(
    "connect to one server: negotiated era, protocol version, timings, tools",
  )
    .argument("<name>", "server name").option("--json", "print one JSON document").action(
      async (name, options) => {
        const session = McpSession.open(io);
        try {
          const config = session.server(name, { allowDisabled: true });
          const started = performance.now();
          await session.start([{ ...config, enabled: true }]);
          const totalMs = Math.round(performance.now() - started);
          const [server] = session.manager.servers();
          const tools = session.manager.tools();
          const ok = server.status === "connected";
          if (!ok) state.exitCode = 1;
          const configWarnings = session.warningsOf(name);
          for (const warning of configWarnings) io.err(`warning: ${warning}\n`);
          if (options.json) {
            // The connection's warnings, which the text shows in its report, on stderr too.
            for (const warning of server.warnings) io.err(`warning: ${visible(warning)}\n`);
            return printJson(io, {
              ok,
              ...serverRow(server),
              warnings: [
                ...configFileWarnings(session.config),
                ...configWarnings,
                ...session.oauthWarnings,
                ...server.warnings,
              ],
              enabled: config.enabled,
              total_ms: totalMs,
              tools: tools.map(toolRow),
            });
          }
          if (!ok) {
            // The connection's warnings (an SSE fallback) when it was discovery that failed.
            for (const warning of server.warnings) io.err(`warning: ${visible(warning)}\n`);
            io.err(`${server.error}\n`);
            return;
          }
          io.out(`MCP server '${name}': connected over ${server.transport}\n`);
          io.out(
            `  server:    ${server.serverInfo?.name ?? "?"} ${server.serverInfo?.version ?? ""}\n`,
          );
          io.out(`  era:       ${server.era} (protocol ${server.protocolVersion ?? "?"})\n`);
          io.out(
            `  timings:   connect ${server.connectMs} ms, connect + discovery ${totalMs} ms\n`,
          );
          // A server's warnings quote its tool names: shown inert (--json: the exact text).
          for (const warning of server.warnings) io.out(`  warning:   ${visible(warning)}\n`);
          const logged = [
            ...(server.transport === "stdio" ? ["stderr"] : []),
            ...(server.logging ? ["log messages"] : []),
          ];
          if (logged.length > 0) {
            io.out(`  logs:      ${logged.join(" and ")} in ${session.stderrLogPath}\n`);
          }
          io.out(`  tools:     ${tools.length}\n`);
          for (const tool of tools) {
            io.out(
              `    ${tool.name}${tool.readOnly ? " (read-only)" : ""}\n`,
            );
          }
          if (!config.enabled) {
            io.out(
              "  note:      this server has enabled: false; agents do not use it\n",
            );
          }
        } finally {
          await session.close();
        }
      },
    );

  mcp.command("tools").description("list registered tool names with the server's original names")
    .argument("[name]", "only this server").option("--json", "print one JSON document").action(
      async (name, options) => {
        const session = McpSession.open(io);
        try {
          await session.start(name ? [session.server(name)] : session.servers);
          const tools = session.manager.tools();
          const servers = session.manager.servers();
          const failed = servers.filter((s) => s.status !== "connected" && s.status !== "disabled");
          // Tools left out or shadowed (a clash of names, an empty name …): said, never silent.
          const warnings = servers.flatMap((s) => s.warnings);
          // The server asked for by name failing is this command failing; in a listing of all
          // servers one failure is a line of the report.
          if (name && failed.length > 0) state.exitCode = 1;
          if (options.json) {
            // Config errors and warnings too: invalid entries (only in a listing of all servers:
            // a named invalid one is refused above) and the config warnings of the entries used,
            // which are said on stderr as without --json, as are the servers' warnings.
            const invalid = name ? [] : session.invalidServers();
            const configWarnings = session.warningsOf(name);
            for (const warning of configWarnings) io.err(`warning: ${warning}\n`);
            for (const warning of warnings) io.err(`warning: ${visible(warning)}\n`);
            return printJson(io, {
              tools: tools.map(toolRow),
              errors: [...failed, ...invalid].map((s) => ({ server: s.name, error: s.error })),
              warnings: [
                ...configFileWarnings(session.config),
                ...configWarnings,
                ...session.oauthWarnings,
                ...warnings,
              ],
            });
          }
          session.printIssues(name);
          // They quote the server's tool names: shown inert (--json: the exact text).
          for (const warning of warnings) io.err(`warning: ${visible(warning)}\n`);
          if (name && failed.length > 0) {
            throw new CliError(failed[0].error ?? `MCP server '${name}' is ${failed[0].status}`);
          }
          for (const server of failed) io.err(`error: ${server.error}\n`);
          if (tools.length === 0) {
            io.out("No tools registered.\n");
            return;
          }
          printTable(
            io,
            ["TOOL", "SERVER", "ORIGINAL NAME", "READ-ONLY"],
            tools.map((tool) => [
              tool.name,
              tool.server,
              // A server may name a tool with any length and any characters; the column stays
              // readable and inert, cut after the escapes are written (--json: the exact name).
              cut(visible(tool.originalName), ORIGINAL_NAME_SHOWN),
              tool.readOnly ? "yes" : "no",
            ]),
          );
        } finally {
          await session.close();
        }
      },
    );

  mcp.command("call").description("call one tool of one server and print the result")
    .argument("<name>", "server name").argument("<tool>", "tool name (original or mcp__… name)")
    .option("--args <json>", "arguments as a JSON object", "{}")
    .option(
      "--json",
      "print the whole result as JSON: the MCP CallToolResult, keys as the protocol names them (isError, structuredContent)",
    ).action(async (name, toolArg, options) => {
      // Checked as `webhook test --payload` is, then read as JSON.parse reads it: the SDK sends
      // the arguments with JSON.stringify, which has no exact form for a large integer.
      const args: Record<string, unknown> = JSON.parse(
        jsonObjectOption(
          options.args,
          "--args",
          `a JSON object of the tool's arguments such as --args '{"message":"hi"}'`,
        ).json,
      );
      const session = McpSession.open(io);
      let calledTool: RegisteredTool | undefined;
      try {
        const config = session.server(name);
        // On stderr, also with --json: stdout holds the tool's result only.
        for (const warning of session.warningsOf(name)) io.err(`warning: ${warning}\n`);
        await session.start([config]);
        const [server] = session.manager.servers();
        if (server.status !== "connected") {
          throw new CliError(server.error ?? `MCP server '${name}' is ${server.status}`);
        }
        const tool = session.manager.tools().find((t) =>
          t.originalName === toolArg || t.name === toolArg
        );
        // The server's tool names, inert on a terminal; the JSON error document keeps them exact.
        const shown = options.json ? (text: string) => text : visible;
        if (!tool) {
          const dropped = server.dropped?.find((t) => t.originalName === toolArg);
          if (dropped) throw new CliError(shown(dropped.reason));
          const names = session.manager.tools().map((t) => shown(t.originalName)).join(", ");
          throw new UsageError(
            `MCP server '${name}' has no tool '${toolArg}'. Its tools: ${names || "none"}`,
          );
        }
        calledTool = tool;
        // The server's progress reports, on one row a terminal redraws, erased before the result.
        const live = canRedraw(io) && !options.json;
        let drawn = false;
        const onProgress = (report: ToolProgress) => {
          io.err(`${ERASE_ROW}${toolProgressLine(tool.originalName, report, io.columns?.() ?? 0)}`);
          drawn = true;
        };
        const result = await session.manager.callTool(tool.name, args, {
          signal: session.signal,
          ...(live ? { onProgress } : {}),
        }).finally(() => {
          if (drawn) io.err(ERASE_ROW);
        });
        if (result.isError) state.exitCode = 1;
        if (options.json) return printJson(io, result);
        // As the agent reads it: an embedded resource's text is shown, other parts described.
        for (const item of result.content ?? []) io.out(`${contentText(item)}\n`);
        if (result.structuredContent && (result.content ?? []).length === 0) {
          io.out(`${JSON.stringify(result.structuredContent, null, 2)}\n`);
        }
        if (result.isError) {
          io.err(`MCP server '${name}': tool '${shown(tool.originalName)}' reported an error\n`);
          noteArgumentProblems(io, tool, args);
        }
      } catch (error) {
        session.signal.throwIfAborted();
        if (error instanceof McpServerError) {
          // A server may refuse bad arguments as a JSON-RPC error rather than an error result.
          if (!options.json && calledTool && error.kind === "tool") {
            noteArgumentProblems(io, calledTool, args);
          }
          throw new CliError(error.message);
        }
        throw error;
      } finally {
        await session.close();
      }
    });

  mcp.command("add").description("add a server to config.yaml (comments and other keys are kept)")
    .argument("<name>", "server name: letters, digits, '.', '_', '-'")
    .option("--command <command>", "a local server: the executable to launch")
    .option(
      "--arg <arg>",
      "an argument of the command (repeat for several)",
      collect,
      [] as string[],
    )
    .option("--env <KEY=VALUE>", "environment of the command (repeat)", collect, [] as string[])
    .option("--url <url>", "a remote server: its MCP endpoint (http or https)")
    .option(
      "--header <Name=Value>",
      "a header sent to the remote server, Name=Value or 'Name: Value' (repeat)",
      collect,
      [] as string[],
    )
    .option(
      "--transport <kind>",
      "http (Streamable HTTP, the default) or sse for servers that only speak the old HTTP+SSE transport",
    )
    .option("--disabled", "add it with enabled: false")
    .option("--json", "print one JSON document")
    .addHelpText(
      "after",
      "\nExamples:\n  agent mcp add everything --command npx --arg -y --arg @modelcontextprotocol/server-everything\n" +
        "  agent mcp add api --url https://example.com/mcp --header 'Authorization=Bearer ${API_TOKEN}'\n" +
        "Put secrets in <home>/.env and refer to them as ${NAME}.",
    )
    .action((name, options) => {
      if (!SERVER_NAME_PATTERN.test(name)) {
        throw new UsageError(
          `server name '${name}' must be 1 to 64 letters, digits, '.', '_' or '-'`,
        );
      }
      if (!options.command === !options.url) {
        throw new UsageError("give exactly one of --command or --url");
      }
      refuseMisfitOptions(options);
      if (options.command) refuseCommandLine(name, options.command, options);
      const entry: Record<string, unknown> = {};
      if (options.command) {
        entry.command = options.command;
        if (options.arg.length) entry.args = options.arg;
        if (options.env.length) entry.env = pairs("--env", options.env);
      } else {
        entry.url = options.url;
        if (options.header.length) entry.headers = headerPairs(options.header);
        if (options.transport) entry.transport = options.transport;
      }
      if (options.disabled) entry.enabled = false;
      const config = loadConfig({ env: io.env });
      const file = config.paths.config;
      const servers = config.source.get("mcp_servers");
      if (servers !== undefined && servers !== null && !isPlainObject(servers)) {
        throw new UsageError(notAMapping(config, servers));
      }
      if (hasServer(config, name)) {
        throw new CliError(
          `MCP server '${name}' already exists in ${file}; remove it first (agent mcp remove ${name})`,
        );
      }
      checkNewEntry(config, name, entry);
      editConfigFile(file, (doc) => {
        readyServersSection(doc, file, "nothing was written");
        doc.setIn(["mcp_servers", name], doc.createNode(entry));
      });
      const reloaded = loadConfig({ env: io.env });
      const { issues } = loadMcpServers(reloaded);
      const own = issues.filter((issue) => issue.server === name);
      // As `mcp install` says in its review: on stderr in both modes, and in --json's warnings.
      const warnings = entryWarnings(entry);
      if (options.json) {
        for (const warning of warnings) io.err(`warning: ${warning}\n`);
        // What every command says on stderr first (unknown keys, .env lines), as `mcp list`.
        return printJson(io, {
          added: name,
          entry,
          issues: own,
          warnings: [...configFileWarnings(config), ...warnings],
        });
      }
      io.out(
        `Added MCP server '${name}' to ${reloaded.paths.config}. Check it with: agent mcp test ${name}\n`,
      );
      for (const warning of warnings) io.err(`warning: ${warning}\n`);
      for (const issue of own) {
        io.err(`${issue.severity}: ${formatIssue(issue, reloaded.paths.config)}\n`);
      }
    });

  mcp.command("remove").alias("rm").description("remove a server from config.yaml")
    .argument("<name>", "server name").option("--json", "print one JSON document").action(
      (name, options) => {
        const config = loadConfig({ env: io.env });
        if (!hasServer(config, name)) {
          throw noSuchServer(config, name, configuredNames(config, loadMcpServers(config).servers));
        }
        // The entry goes with its own comment lines; the section's and the next entry's stay.
        if (!removeConfigEntry(config.paths.config, ["mcp_servers", name])) {
          const now = loadConfig({ env: io.env }); // it may have gone meanwhile
          if (!hasServer(now, name)) {
            throw noSuchServer(now, name, configuredNames(now, loadMcpServers(now).servers));
          }
          throw mergedServer(now, name);
        }
        if (options.json) {
          // What every command says on stderr first (unknown keys, .env lines), as `mcp list`.
          return printJson(io, { removed: name, warnings: configFileWarnings(config) });
        }
        io.out(`Removed MCP server '${name}' from ${config.paths.config}.\n`);
      },
    );

  mcp.command("login").description(
    "authorize an auth: oauth server in the browser and store its tokens",
  )
    .argument("<name>", "server name").option("--json", "print one JSON document")
    .addHelpText(
      "after",
      "\nClears the server's OAuth records (tokens, client registration, metadata, and a recorded\n" +
        "refusal of the client metadata document), prints the authorization URL (and opens a\n" +
        "browser when possible), and waits up to 5 minutes for the redirect to\n" +
        "http://127.0.0.1:<port>/callback. Tokens are stored in <home>/mcp-tokens/<name>.json.",
    )
    .action(async (name, options) => {
      const session = McpSession.open(io);
      try {
        const config = session.server(name, { allowDisabled: true });
        if (config.transport === "stdio") {
          throw new UsageError(
            `OAuth applies to HTTP servers (with \`url\`) only; '${name}' is a local (stdio) server, started from its command, so there is nothing to log in to`,
          );
        }
        if (config.auth !== "oauth") {
          throw new UsageError(
            `MCP server '${name}' does not use OAuth; add \`auth: oauth\` to mcp_servers.${name} in ${session.config.paths.config}`,
          );
        }
        // The entry's config warnings, as `mcp test` has them: on stderr, and in --json's warnings.
        const configWarnings = session.warningsOf(name);
        for (const warning of configWarnings) io.err(`warning: ${warning}\n`);
        // What the login says as it goes (a refused client metadata document …): on stderr as
        // it happens, and in --json's warnings.
        const loginWarnings: string[] = [];
        const outcome = await loginMcpServer(config, {
          tokenDir: session.config.paths.mcpTokens,
          clientInfo: { name: "agent", version: AGENT_VERSION },
          processEnv: io.env,
          print: (text) => io.err(text),
          openBrowser: io.openBrowser,
          signal: session.signal,
          onWarning: (message) => {
            loginWarnings.push(message);
            io.err(`warning: ${message}\n`);
          },
        });
        // The stored tokens, used the way every later connect uses them.
        await session.start([{ ...config, enabled: true }]);
        const [server] = session.manager.servers();
        const connected = server.status === "connected";
        if (!connected) state.exitCode = 1;
        if (options.json) {
          for (const warning of server.warnings) io.err(`warning: ${visible(warning)}\n`);
          return printJson(io, {
            server: name,
            logged_in: outcome.loggedIn,
            client: outcome.client,
            redirect_uri: outcome.redirectUri,
            pinned_port: outcome.pinned,
            ...(outcome.pinningObstacle ? { pinning_obstacle: outcome.pinningObstacle } : {}),
            cimd_rejected: outcome.cimdRejected,
            authorizations: outcome.authorizations,
            tokens_file: outcome.tokensFile,
            status: server.status,
            tools: server.toolCount,
            ...(server.error ? { error: server.error } : {}),
            // What every command says on stderr first (unknown keys, .env lines), as `mcp test`;
            // last, the connection's own (tools left out, a filter entry that matches none …).
            warnings: [
              ...configFileWarnings(session.config),
              ...configWarnings,
              ...loginWarnings,
              ...session.oauthWarnings,
              ...server.warnings,
            ],
          });
        }
        io.out(`MCP server '${name}': ${loginSummary(outcome, config)}\n`);
        if (connected) {
          io.out(`Connected: ${server.toolCount} tool${server.toolCount === 1 ? "" : "s"}.\n`);
        } else io.err(`${server.error}\n`);
        // They quote the server's tool names: shown inert (--json: the exact text).
        for (const warning of server.warnings) io.err(`warning: ${visible(warning)}\n`);
      } catch (error) {
        if (error instanceof McpServerError) throw new CliError(error.message);
        throw error;
      } finally {
        await session.close();
      }
    });

  mcp.command("install").description(
    "install a server from an agent://mcp/install link, or from the JSON a server's README shows (shows it and asks first)",
  )
    .argument(
      "[link]",
      "in quotes: the link 'agent://mcp/install?name=…&config=…', or the JSON '{\"mcpServers\": {…}}'",
    )
    .option("-y, --yes", "install without asking (scripts); read the link yourself first")
    .option(
      "--name <name>",
      "install under this name instead of the link's (or the JSON's); names a JSON entry that has none",
    )
    .option(
      "--register-handler",
      "make `agent mcp install` open agent:// links on this Linux desktop (xdg)",
    )
    .option("--json", "print one JSON document (never asks, so it needs --yes)")
    .addHelpText(
      "after",
      "\nThe link's config is the server entry as base64url (or base64) JSON, at most 32 KB.\n" +
        'The JSON is one server as other MCP clients write it: {"mcpServers": {"<name>": {…}}}\n' +
        '(Claude Desktop, Cursor), {"servers": {…}} (VS Code), {"<name>": {…}}, or one entry\n' +
        "with --name; comments and trailing commas are allowed, and keys this client does not\n" +
        "use are left out with a warning.\n" +
        "The entry is shown before anything is written; a local (stdio) server is code that\n" +
        "will run on this machine. An existing server is never overwritten: rename or cancel.\n\n" +
        "Examples:\n" +
        "  agent mcp install 'agent://mcp/install?name=docs&config=eyJ1cmwiOiJodHRwczovL2V4YW1wbGUuY29tL21jcCJ9'\n" +
        "  agent mcp install --name docs2 --yes '<link>'\n" +
        `  agent mcp install '{"mcpServers": {"fetch": {"command": "uvx", "args": ["mcp-server-fetch"]}}}'\n` +
        "  agent mcp install --register-handler",
    )
    .action(async (link, options) => {
      if (options.registerHandler) {
        if (link !== undefined) {
          throw new UsageError("--register-handler takes no link; run it on its own");
        }
        return registerLinkHandler(io, options.json === true, loadedConfigFileWarnings(state));
      }
      if (link === undefined) {
        throw new UsageError(
          "missing the link: agent mcp install '<agent://mcp/install?name=…&config=…>' (in quotes: it holds ? and &), or the server's JSON: agent mcp install '{\"mcpServers\": {…}}'",
        );
      }
      await installFromLink(io, link, options);
    });
}

/** A one-shot session: config, servers and a manager that does not retry in the background. */
class McpSession {
  readonly config: ResolvedConfig;
  readonly servers: McpServerConfig[];
  readonly issues: McpConfigIssue[];
  readonly manager: McpManager;
  /**
   * What the OAuth records said while connecting (a refused client metadata document …): on
   * stderr as it happens, and in the `--json` document's `warnings`.
   */
  readonly oauthWarnings: string[] = [];
  readonly #io: CliIo;
  readonly #stderr: StderrLog;
  readonly #stop = new AbortController();
  readonly #unlisten: (() => void)[] = [];

  private constructor(io: CliIo, config: ResolvedConfig) {
    this.#io = io;
    this.config = config;
    const { servers, issues } = loadMcpServers(config);
    this.servers = servers;
    this.issues = issues;
    this.#stderr = new StderrLog(join(config.paths.logs, "mcp-stderr.log"));
    this.manager = new McpManager({
      reconnect: false,
      clientInfo: { name: "agent", version: AGENT_VERSION },
      processEnv: io.env,
      onStderr: (server, text) => this.#stderr.write(server, text),
      stderrLogPath: this.#stderr.path,
      onServerLog: (server, message) => this.#stderr.message(server, message),
      serverLogLevel: serverLogLevel(agentLogLevel(config, io.env)),
      // Declared as an agent run declares them, so a server lists the tools an agent gets (some
      // offer tools only to clients that can answer these requests); answered no here.
      onElicitation: (server) => {
        io.err(
          `note: MCP server '${server.name}' asked for input (elicitation); \`agent mcp\` commands decline it, \`agent run\` and \`agent chat\` ask you at a terminal\n`,
        );
        return Promise.resolve({ action: "decline" });
      },
      onSampling: (server) => {
        io.err(
          `note: MCP server '${server.name}' asked your model for a completion (sampling); \`agent mcp\` commands refuse it, \`agent run\` and \`agent chat\` serve it\n`,
        );
        return Promise.reject(
          samplingRefusal("agent mcp commands do not call the model; agent run and agent chat do"),
        );
      },
      oauth: storedOAuth(config.paths.mcpTokens, {
        onWarning: (_, message) => {
          this.oauthWarnings.push(message);
          io.err(`warning: ${message}\n`);
        },
      }),
    });
  }

  /** Loads config.yaml; an `mcp_servers` that is not a mapping is a usage error. */
  static open(io: CliIo): McpSession {
    const session = new McpSession(io, loadConfig({ env: io.env }));
    const broken = session.issues.find((issue) =>
      issue.server === "" && issue.severity === "error"
    );
    if (broken) throw new UsageError(formatIssue(broken, session.config.paths.config));
    session.#listen();
    return session;
  }

  /**
   * Aborts on Ctrl-C, SIGTERM or SIGHUP, with the error the command ends with: the command stops
   * what it waits for, and {@linkcode McpSession.close} shuts down the servers it started (no
   * stdio child is left running).
   */
  /** `<home>/logs/mcp-stderr.log`: stdio servers' stderr and servers' log messages. */
  get stderrLogPath(): string {
    return this.#stderr.path;
  }

  get signal(): AbortSignal {
    return this.#stop.signal;
  }

  #listen(): void {
    const stopped = (how: string) => {
      if (this.#stop.signal.aborted) return;
      this.#stop.abort(
        new CliError(`stopped by ${how}; the MCP servers it started were shut down`),
      );
      if (this.#io.stderrIsTerminal) this.#io.err(`\n${how}: stopping …\n`);
    };
    const interrupt = this.#io.onInterrupt?.(() => stopped("Ctrl-C"));
    const terminate = this.#io.onTerminate?.((signal) => stopped(signal));
    for (const unlisten of [interrupt, terminate]) if (unlisten) this.#unlisten.push(unlisten);
  }

  /**
   * The config warnings of server `name` (an unknown key, an unset variable …), formatted; without
   * a name, those of every entry and of `mcp_servers` itself.
   */
  warningsOf(name?: string): string[] {
    return this.issues
      .filter((issue) =>
        issue.severity === "warning" && (name === undefined || issue.server === name)
      )
      .map((issue) => formatIssue(issue, this.config.paths.config));
  }

  /**
   * The configured server `name`, or a usage error that lists the valid names. For an invalid
   * entry the error is its first config error, after its warnings on stderr (a misspelled key is
   * often why the entry is invalid).
   */
  server(name: string, options: { allowDisabled?: boolean } = {}): McpServerConfig {
    const found = this.servers.find((server) => server.name === name);
    if (!found) {
      const invalid = this.issues.find((issue) =>
        issue.server === name && issue.severity === "error"
      );
      if (invalid) {
        // On stderr also with --json: the error document has no place for them.
        for (const warning of this.warningsOf(name)) this.#io.err(`warning: ${warning}\n`);
        throw new UsageError(formatIssue(invalid, this.config.paths.config));
      }
      throw noSuchServer(this.config, name, configuredNames(this.config, this.servers));
    }
    if (!found.enabled && !options.allowDisabled) {
      throw new CliError(`MCP server '${name}' has enabled: false in ${this.config.paths.config}`);
    }
    return found;
  }

  async start(servers: readonly McpServerConfig[]): Promise<void> {
    const count = servers.filter((server) => server.enabled).length;
    if (this.#io.stderrIsTerminal && count > 0) {
      this.#io.err(`Connecting to ${count} MCP server${count === 1 ? "" : "s"} …\n`);
    }
    await this.manager.start(servers, { signal: this.#stop.signal });
    this.#stop.signal.throwIfAborted();
  }

  /** Servers whose entry has errors, as listing rows. */
  invalidServers(): ServerState[] {
    const names = [
      ...new Set(this.issues.filter((i) => i.severity === "error").map((i) => i.server)),
    ];
    return names.filter((name) => !this.servers.some((s) => s.name === name)).map((name) => ({
      name,
      status: "invalid" as ServerState["status"],
      transport: this.#configuredTransport(name),
      toolCount: 0,
      error: this.issues.filter((i) => i.server === name && i.severity === "error")
        .map((i) => formatIssue(i, this.config.paths.config)).join("; "),
      warnings: [],
    }));
  }

  /** The transport an entry asks for, read from the raw entry (it did not validate). */
  #configuredTransport(name: string): McpTransportKind {
    const entry = this.config.source.get("mcp_servers") as Record<string, unknown> | undefined;
    const raw = entry?.[name] as Record<string, unknown> | undefined;
    if (!raw || typeof raw !== "object" || raw.url === undefined) return "stdio";
    return String(raw.transport ?? "").trim().toLowerCase() === "sse" ? "sse" : "http";
  }

  /** Prints the config issues (of server `name` only, when given) on stderr. */
  printIssues(name?: string): void {
    for (const issue of this.issues.filter((issue) => !name || issue.server === name)) {
      this.#io.err(`${issue.severity}: ${formatIssue(issue, this.config.paths.config)}\n`);
    }
  }

  /** Shuts the servers down; a stop that came meanwhile is the error the command ends with. */
  async close(): Promise<void> {
    await this.manager.shutdown();
    this.#stderr.close();
    for (const unlisten of this.#unlisten.splice(0)) unlisten();
  }
}

/** One line saying how a login went. */
function loginSummary(outcome: LoginOutcome, config: McpServerConfig): string {
  if (outcome.client === "none") {
    return "the server did not ask for an authorization; nothing was stored.";
  }
  const client = {
    cimd: `the client metadata document ${config.oauth?.clientMetadataUrl}`,
    dcr: "dynamic client registration",
    pre_registered: "the pre-registered client",
  }[outcome.client];
  const refused = outcome.cimdRejected
    ? " (the client metadata document was refused, so registration was used)"
    : "";
  return `logged in with ${client}${refused}; tokens are in ${outcome.tokensFile}.`;
}

/** The options of `mcp add` that belong to the other kind of server. */
const STDIO_OPTIONS = [["arg", "--arg"], ["env", "--env"]] as const;
const HTTP_OPTIONS = [["header", "--header"], ["transport", "--transport"]] as const;

/** Refuses options that do not apply to the kind of server being added (never drops them). */
function refuseMisfitOptions(
  options: { command?: string; arg: string[]; env: string[]; header: string[]; transport?: string },
): void {
  const given = (key: "arg" | "env" | "header" | "transport") => {
    const value = options[key];
    return Array.isArray(value) ? value.length > 0 : value !== undefined;
  };
  const misfits = (options.command ? HTTP_OPTIONS : STDIO_OPTIONS).filter(([key]) => given(key))
    .map(([, flag]) => flag);
  if (misfits.length === 0) return;
  const which = `${misfits.join(" and ")} ${misfits.length > 1 ? "apply" : "applies"}`;
  throw new UsageError(
    options.command
      ? `${which} to remote servers (--url) only, and this one is a local server (--command); remove ${
        misfits.join(" and ")
      }, or add the server with --url instead`
      : `${which} to local servers (--command) only, and this one is a remote server (--url); remove ${
        misfits.join(" and ")
      }, or add the server with --command instead`,
  );
}

/**
 * Refuses a --command that holds a whole command line (`--command "npx -y pkg"`): the server
 * would fail to start with "not found". The error shows the command to run instead. A path that
 * exists (spaces in a folder name) and a `${...}` value are taken as written.
 */
function refuseCommandLine(
  name: string,
  command: string,
  options: { arg: string[]; env: string[]; disabled?: true; json?: true },
): void {
  const words = splitCommandLine(command);
  if (!words || words.length < 2 || command.includes("${") || pathExists(command)) return;
  const fixed = [
    "agent",
    "mcp",
    "add",
    name,
    "--command",
    words[0],
    ...[...words.slice(1), ...options.arg].flatMap((arg) => ["--arg", arg]),
    ...options.env.flatMap((pair) => ["--env", pair]),
    ...(options.disabled ? ["--disabled"] : []),
    ...(options.json ? ["--json"] : []),
  ];
  throw new UsageError(
    `--command ${
      visible(JSON.stringify(command))
    } is a whole command line, but --command takes only the ` +
      "executable; each argument goes in its own --arg. Nothing was written. Run instead: " +
      renderCommandLine(fixed),
  );
}

function pathExists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** The `mcp add` option that set an entry key, for error messages. */
const OPTION_OF_KEY: Record<string, string> = {
  command: "--command",
  args: "--arg",
  env: "--env",
  url: "--url",
  headers: "--header",
  transport: "--transport",
  enabled: "--disabled",
};

/**
 * Runs a new entry through the same checks as `config.yaml` (with the same `${...}` values)
 * before anything is written; an error is a usage error naming the option and the fix.
 */
function checkNewEntry(config: ResolvedConfig, name: string, entry: Record<string, unknown>): void {
  const text = new Document({ mcp_servers: { [name]: entry } }).toString({ lineWidth: 0 });
  const { issues } = parseMcpServers(ConfigSource.parse(config.paths.config, text), {
    lookup: (variable) => config.secrets.get(variable),
    userHome: homedir(),
    workspaceFolder: Deno.cwd(),
    pathSeparator: sep,
    secretsFile: config.paths.dotenv,
  });
  // config.yaml falls back to Streamable HTTP on an unknown transport (a warning); a value typed
  // as --transport is a mistake, so it is refused like an error.
  const badTransport = (issue: McpConfigIssue) => issue.key === "transport";
  const errors = issues.filter((issue) => issue.severity === "error" || badTransport(issue));
  if (errors.length === 0) return;
  const described = errors.map((issue) => {
    const option = OPTION_OF_KEY[issue.key.split(".")[0]];
    const path = ["mcp_servers", name, issue.key].filter((part) => part !== "").join(".");
    const message = badTransport(issue)
      ? `unknown transport ${
        JSON.stringify(entry.transport)
      }; use http (Streamable HTTP, the default) or sse (servers that only speak the old HTTP+SSE transport)`
      : issue.message;
    return `${option ? `${option}: ` : ""}${path}: ${message}`;
  });
  throw new UsageError(
    `not adding MCP server '${name}': ${
      described.join("; ")
    }; nothing was written to ${config.paths.config}`,
  );
}

/** The error for an `mcp_servers` that is there but not a mapping of names to entries. */
function notAMapping(config: ResolvedConfig, value: unknown): string {
  const line = config.source.lineOf("mcp_servers");
  const where = line === undefined ? config.paths.config : `${config.paths.config}:${line}`;
  const got = Array.isArray(value) ? "a list" : JSON.stringify(value);
  return `${where}: mcp_servers must be a mapping of server names to entries, got ${got}; ` +
    "replace it with `mcp_servers:` followed by indented `<name>:` entries (or delete the line), " +
    "then run the command again; nothing was written";
}

function hasServer(config: ResolvedConfig, name: string): boolean {
  const servers = config.source.get("mcp_servers");
  return typeof servers === "object" && servers !== null && Object.hasOwn(servers, name);
}

/** Every name under mcp_servers, in file order; an entry that is not in `valid` is marked. */
function configuredNames(config: ResolvedConfig, valid: readonly McpServerConfig[]): string[] {
  const entries = config.source.get("mcp_servers");
  const names = isPlainObject(entries) ? Object.keys(entries) : [];
  return names.map((name) =>
    valid.some((server) => server.name === name) ? name : `${name} (invalid)`
  );
}

/**
 * The error for a server that `mcp_servers` only has through a merge key (`<<: *shared`): it is
 * written, and can only be removed, in the mapping the anchor names.
 */
function mergedServer(config: ResolvedConfig, name: string): ConfigError {
  const key = `mcp_servers.${name}`;
  return new ConfigError(
    { file: config.paths.config, key, line: config.source.lineOf(key) },
    `MCP server '${name}' is merged into mcp_servers with \`<<\` from the mapping written here, ` +
      "so it cannot be removed from mcp_servers alone; nothing was written",
    "delete it here (every key that merges this mapping loses it), or replace the `<<` in " +
      "mcp_servers by the servers you want",
  );
}

/** The usage error for a server name that is not in config.yaml, listing the names that are. */
function noSuchServer(config: ResolvedConfig, name: string, names: string[]): UsageError {
  return new UsageError(
    `no MCP server '${name}' in ${config.paths.config}${
      names.length > 0 ? ` (configured: ${names.join(", ")})` : ""
    }`,
  );
}

/** A server's state as `--json` prints it: snake_case keys, like every other document. */
function serverRow(server: ServerState) {
  return {
    name: server.name,
    status: server.status,
    transport: server.transport,
    era: server.era,
    protocol_version: server.protocolVersion,
    server_info: server.serverInfo,
    connect_ms: server.connectMs,
    tool_count: server.toolCount,
    error: server.error,
    warnings: server.warnings,
    pid: server.pid,
  };
}

/** A registered tool as `--json` prints it: with what a caller needs to call it. */
function toolRow(tool: RegisteredTool) {
  return {
    name: tool.name,
    server: tool.server,
    original_name: tool.originalName,
    kind: tool.kind,
    read_only: tool.readOnly,
    description: tool.description,
    input_schema: tool.inputSchema,
  };
}

/**
 * After a failed call whose arguments miss the tool's schema (a required one left out, a string
 * for a number): a note on stderr with the arguments the tool takes, in place of guessing.
 */
function noteArgumentProblems(
  io: CliIo,
  tool: RegisteredTool,
  args: Record<string, unknown>,
): void {
  const problems = argumentProblems(tool.inputSchema, args);
  if (problems.length === 0) return;
  // The names come from the server: shown inert.
  const text = `note: tool '${tool.originalName}' takes ${describeArguments(tool.inputSchema)}. ` +
    `In these --args, ${problems.join("; ")}`;
  io.err(`${visible(text)}\n`);
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function pairs(option: string, values: string[]): Record<string, string> {
  const result: Record<string, string> = {};
  for (const value of values) {
    const at = value.indexOf("=");
    if (at <= 0) throw new UsageError(`${option} takes NAME=VALUE, got '${value}'`);
    result[value.slice(0, at)] = value.slice(at + 1);
  }
  return result;
}

/**
 * `--header` values: `Name=Value`, or `Name: Value` as curl and servers' READMEs write them (a
 * header name holds neither `=` nor `:`, so the first of them ends it). A value without either
 * is refused without being quoted: it is often a token.
 */
function headerPairs(values: string[]): Record<string, string> {
  const result: Record<string, string> = {};
  for (const value of values) {
    const at = value.search(/[=:]/);
    if (at <= 0) {
      throw new UsageError(
        "--header takes Name=Value (or 'Name: Value'), as in --header 'Authorization=Bearer ${API_TOKEN}'; " +
          (at < 0
            ? "one has neither '=' nor ':'"
            : `one starts with '${value[0]}', before any name`),
      );
    }
    if (value[at] === ":") result[value.slice(0, at).trim()] = value.slice(at + 1).trimStart();
    else result[value.slice(0, at)] = value.slice(at + 1);
  }
  return result;
}

/** The most characters of a server's own tool name `mcp tools` shows, as registered names. */
const ORIGINAL_NAME_SHOWN = 64;

/**
 * Prints `rows` under `header` in columns. Cells may hold a server's words (a tool's name, an
 * error): control and format characters are written as escapes ({@linkcode visible}), so none
 * can move the cursor or recolour the terminal, and cells are padded by the columns they take on
 * a terminal (a CJK character or an emoji takes two), so the columns line up.
 */
function printTable(io: CliIo, header: string[], rows: string[][]): void {
  const shown = rows.map((row) => row.map(visible));
  const widths = header.map((h, i) =>
    Math.max(stringWidth(h), ...shown.map((row) => stringWidth(row[i])))
  );
  const pad = (cell: string, width: number) => cell + " ".repeat(width - stringWidth(cell));
  const line = (cells: string[]) =>
    cells.map((cell, i) => (i === cells.length - 1 ? cell : pad(cell, widths[i]))).join("  ")
      .trimEnd() + "\n";
  io.out(line(header));
  for (const row of shown) io.out(line(row));
}

// ---------------------------------------------------------------------------------------------
// install: agent://mcp/install links (SPEC "Install deep link", decisions.md §5)

interface InstallOptions {
  yes?: true;
  name?: string;
  json?: true;
}

/**
 * Shows the decoded entry, resolves a name clash (rename or cancel, never overwrite), asks for
 * confirmation, and writes the entry to config.yaml. Nothing is written before the user said yes
 * (or passed --yes).
 */
async function installFromLink(io: CliIo, link: string, options: InstallOptions): Promise<void> {
  // A server's README usually shows the JSON of another MCP client rather than a link.
  const source = looksLikeJson(link) ? "JSON" : "link";
  let request: InstallEntry & { changes?: string[] };
  try {
    request = source === "JSON" ? parseInstallSnippet(link, options.name) : parseInstallLink(link);
  } catch (error) {
    if (error instanceof InstallLinkError) {
      throw new UsageError(`not installing this ${source}: ${error.message}`);
    }
    throw error;
  }
  if (options.name !== undefined && !SERVER_NAME_PATTERN.test(options.name)) {
    throw new UsageError(
      `--name '${
        visible(options.name)
      }' is not a valid server name; use 1 to 64 letters, digits, '.', '_' or '-'`,
    );
  }
  if (options.json && !options.yes) {
    throw new UsageError(
      "--json never asks, so it needs --yes; review the entry first (run without --json), then add --yes",
    );
  }
  const config = loadConfig({ env: io.env });
  const file = config.paths.config;
  const servers = config.source.get("mcp_servers");
  if (servers !== undefined && servers !== null && !isPlainObject(servers)) {
    throw new UsageError(notAMapping(config, servers));
  }
  const exists = (name: string) => isPlainObject(servers) && Object.hasOwn(servers, name);
  const unset = request.variables.filter((name) => !config.secrets.get(name));
  // The review says it; --json shows no review, so it says it here, once. First what the
  // translation of another client's JSON left out or rewrote.
  const warnings = [
    ...(request.changes ?? []),
    ...entryWarnings(request.entry),
  ];
  if (!options.json) {
    showInstallReview(io, request, { source, unset, warnings, dotenv: config.paths.dotenv });
  } else {
    // What the review would say of the entry's variables and keys, in the review's words.
    warnings.push(
      ...unset.map((name) => unsetWarning(name, config.paths.dotenv)),
      ...request.warnings.map((warning) => `config: ${warning}`),
    );
    for (const warning of warnings) warn(io, warning);
  }

  let name = options.name ?? request.name;
  try {
    if (exists(name)) {
      const never = "nothing was changed (an existing server is never overwritten)";
      if (options.name !== undefined) {
        throw new CliError(
          `MCP server '${name}' already exists in ${file}; ${never}. Choose another --name`,
        );
      }
      if (options.yes || !io.stdinIsTerminal || !io.prompter) {
        throw new CliError(
          `MCP server '${name}' already exists in ${file}; ${never}. Install it under another name with --name <new-name>`,
        );
      }
      name = await askNewName(io.prompter, name, file, exists);
    }
    if (!options.yes) {
      if (!io.stdinIsTerminal) {
        throw new UsageError(
          "nothing was installed: installing needs your confirmation and stdin is not a terminal; review the entry above, then run again with --yes",
        );
      }
      const question = request.transport === "stdio"
        ? `Install MCP server '${name}' and let the agent run this command on this machine?`
        : `Install MCP server '${name}'?`;
      const yes = io.prompter
        ? await io.prompter.confirm(question, false)
        : await io.confirm(question);
      if (!yes) throw new CliError("install cancelled; nothing was changed");
    }
  } catch (error) {
    if (error instanceof PromptCancelled) {
      throw new CliError("install cancelled; nothing was changed");
    }
    throw error;
  }

  editConfigFile(file, (doc) => {
    readyServersSection(doc, file, "nothing was changed");
    // Checked again on the file being edited: a server added meanwhile is not overwritten either.
    if (doc.hasIn(["mcp_servers", name])) {
      throw new CliError(
        `MCP server '${name}' appeared in ${file} meanwhile; nothing was changed (an existing server is never overwritten)`,
      );
    }
    doc.setIn(["mcp_servers", name], doc.createNode(request.entry));
  });

  const reloaded = loadConfig({ env: io.env });
  const issues = loadMcpServers(reloaded).issues.filter((issue) => issue.server === name);
  if (options.json) {
    return printJson(io, {
      installed: name,
      link_name: request.name,
      source: source === "JSON" ? "json" : "link",
      file,
      transport: request.transport,
      entry: request.entry,
      variables: request.variables,
      unset_variables: unset,
      issues,
      // What every command says on stderr first (unknown keys, .env lines), as `mcp list`.
      warnings: [...configFileWarnings(config), ...warnings],
    });
  }
  io.out(`Installed MCP server '${name}' in ${file}.\n`);
  io.out(`Check it with: agent mcp test ${name}\n`);
  io.out("A running gateway or chat uses it after a restart or /reload-mcp.\n");
  for (const issue of issues.filter((issue) => issue.severity === "error")) {
    io.err(`error: ${formatIssue(issue, file)}\n`);
  }
}

/** The decoded entry on stdout; what makes it risky on stderr, as warnings. */
function showInstallReview(
  io: CliIo,
  request: InstallEntry,
  { source, unset, warnings, dotenv }: {
    source: "link" | "JSON";
    /** The variables the entry reads that are not set. */
    unset: string[];
    warnings: string[];
    /** `<home>/.env`, named where a variable is to be set. */
    dotenv: string;
  },
): void {
  const kind = request.transport === "stdio"
    ? "a local server (stdio): a command that runs on this machine"
    : `a remote server (${request.transport === "sse" ? "SSE" : "Streamable HTTP"})`;
  io.out(`The ${source} installs MCP server '${request.name}', ${kind}:\n`);
  io.out(renderEntry(request.entry).replace(/^(?=.)/gm, "  "));
  if (request.commandLine) {
    warn(io, "this server is a command: code that will run on this machine, with your");
    warn(io, "permissions, each time the agent starts it:");
    warn(io, `  ${renderCommandLine(request.commandLine)}`);
    warn(io, `install it only if you trust where the ${source} came from.`);
  }
  for (const warning of warnings) warn(io, warning);
  if (request.variables.length > 0) {
    const to = request.commandLine ? "the command" : new URL(String(request.entry.url).trim()).host;
    warn(
      io,
      `the entry reads ${
        request.variables.map((name) => `\${${name}}`).join(", ")
      } from ${dotenv} or the environment and hands the values to ${visible(to)}.`,
    );
  }
  for (const name of unset) warn(io, unsetWarning(name, dotenv));
  for (const warning of request.warnings) warn(io, `config: ${warning}`);
}

function unsetWarning(name: string, dotenv: string): string {
  return `${name} is not set; add it to ${dotenv} before using the server.`;
}

function warn(io: CliIo, text: string): void {
  const colour = io.stderrIsTerminal && !io.env("NO_COLOR");
  io.err(`${colour ? "\x1b[1;33mwarning:\x1b[0m" : "warning:"} ${text}\n`);
}

/**
 * What `mcp add` and `mcp install` warn about in a new entry: a remote server reached over plain
 * http, other than on this machine (loopback).
 */
function entryWarnings(entry: Record<string, unknown>): string[] {
  if (typeof entry.url !== "string") return [];
  let url: URL;
  try {
    url = new URL(entry.url.trim());
  } catch {
    return []; // refused by the entry's checks already
  }
  if (url.protocol !== "http:" || isLoopbackHost(url.hostname)) return [];
  return [
    `${url.host} is reached over plain http: nothing sent to it (headers and tokens too) is ` +
    "encrypted; use its https:// URL if it has one",
  ];
}

/** Rename or cancel: the new name follows the same rule and must be free too. */
async function askNewName(
  prompter: Prompter,
  name: string,
  file: string,
  exists: (name: string) => boolean,
): Promise<string> {
  const choice = await prompter.select(
    `MCP server '${name}' already exists in ${file} and is never overwritten. What now?`,
    [
      { value: "rename", name: "Install it under another name" },
      { value: "cancel", name: "Cancel (nothing is changed)" },
    ],
    "rename",
  );
  if (choice === "cancel") throw new CliError("install cancelled; nothing was changed");
  let suggestion = name;
  for (let n = 2; exists(suggestion); n++) suggestion = `${name.slice(0, 60)}-${n}`;
  return await prompter.input("Name of the new server", {
    default: suggestion,
    validate: (value) =>
      !SERVER_NAME_PATTERN.test(value)
        ? `'${
          visible(value)
        }' is not a valid server name; use 1 to 64 letters, digits, '.', '_' or '-'`
        : exists(value)
        ? `'${value}' exists too; choose another name`
        : true,
  });
}

// ---------------------------------------------------------------------------------------------
// install --register-handler: agent:// links on xdg desktops

const DESKTOP_FILE = "agent-mcp-install.desktop";
const SCHEME_MIME = "x-scheme-handler/agent";

/**
 * Writes `$XDG_DATA_HOME/applications/agent-mcp-install.desktop` (opening `agent mcp install`
 * in a terminal, where it asks before installing) and, when `xdg-mime` is installed, makes it
 * the default handler of agent:// links. `configWarnings` (the config file's, said on stderr
 * before) go in the `--json` document.
 */
async function registerLinkHandler(
  io: CliIo,
  json: boolean,
  configWarnings: string[],
): Promise<void> {
  if (!["linux", "freebsd", "netbsd"].includes(Deno.build.os)) {
    throw new UsageError(
      `--register-handler supports freedesktop (xdg) systems only, not ${Deno.build.os}`,
    );
  }
  const userHome = io.env("HOME") || homedir();
  const dataHome = io.env("XDG_DATA_HOME");
  const applications = join(
    dataHome && isAbsolute(dataHome) ? dataHome : join(userHome, ".local", "share"),
    "applications",
  );
  const argv = handlerArgv(io);
  const exec = `${argv.map(desktopExecArg).join(" ")} %u`;
  const desktopFile = join(applications, DESKTOP_FILE);
  Deno.mkdirSync(applications, { recursive: true });
  writeFileAtomic(
    desktopFile,
    [
      "[Desktop Entry]",
      "Type=Application",
      "Name=Agent: install MCP server",
      "Comment=Shows an agent://mcp/install link and asks before installing it",
      `Exec=${exec}`,
      "Terminal=true",
      "NoDisplay=true",
      `MimeType=${SCHEME_MIME};`,
      "",
    ].join("\n"),
  );
  const childEnv: Record<string, string> = {};
  for (const name of ["HOME", "PATH", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_DATA_DIRS"]) {
    const value = io.env(name);
    if (value !== undefined) childEnv[name] = value;
  }
  const run = async (tool: string, args: string[]): Promise<string> => {
    const path = findExecutable(tool, io.env("PATH"));
    if (!path) return "not installed";
    try {
      const output = await new Deno.Command(path, {
        args,
        env: childEnv,
        stdin: "null",
        stdout: "null",
        stderr: "piped",
      }).output();
      if (output.success) return "done";
      return `failed: ${new TextDecoder().decode(output.stderr).trim() || `exit ${output.code}`}`;
    } catch (error) {
      return `failed: ${(error as Error).message}`;
    }
  };
  const xdgMime = await run("xdg-mime", ["default", DESKTOP_FILE, SCHEME_MIME]);
  const database = await run("update-desktop-database", [applications]);
  const command = `xdg-mime default ${DESKTOP_FILE} ${SCHEME_MIME}`;
  const warning = xdgMime === "done"
    ? undefined
    : xdgMime === "not installed"
    ? `xdg-mime is not installed; to make this the agent:// handler, run: ${command}`
    : `${command} ${xdgMime}`;
  if (warning) io.err(`warning: ${warning}\n`);
  if (json) {
    return printJson(io, {
      desktop_file: desktopFile,
      exec,
      xdg_mime: xdgMime,
      update_desktop_database: database,
      // Said on stderr first by every command, though this one does not read the config.
      warnings: [...configWarnings, ...(warning ? [warning] : [])],
    });
  }
  io.out(`Wrote ${desktopFile}\n  Exec=${exec}\n`);
  if (xdgMime === "done") {
    io.out(`agent:// links now open \`agent mcp install\` in a terminal (${command}).\n`);
  }
}

/** The command a desktop runs to open a link: this binary, or `deno run` of this checkout. */
function handlerArgv(io: CliIo): string[] {
  const exec = Deno.execPath();
  const home = io.env("AGENT_HOME");
  const prefix = home ? ["env", `AGENT_HOME=${home}`] : [];
  if (!/^deno(\.exe)?$/.test(basename(exec))) return [...prefix, exec, "mcp", "install"];
  const main = new URL("../../main.ts", import.meta.url);
  if (main.protocol !== "file:") {
    throw new CliError(
      `--register-handler needs a local checkout or a compiled binary; this runs from ${main.href}`,
    );
  }
  const denoJson = fileURLToPath(new URL("../../deno.json", import.meta.url));
  return [
    ...prefix,
    exec,
    "run",
    "--allow-all",
    "--config",
    denoJson,
    fileURLToPath(main),
    "mcp",
    "install",
  ];
}

/** One argument of a desktop entry's Exec key (freedesktop Desktop Entry spec, "Exec"). */
function desktopExecArg(arg: string): string {
  if (/[\n\r]/.test(arg)) throw new CliError(`cannot put a line break in a desktop entry: ${arg}`);
  const escaped = arg.replaceAll("%", "%%");
  if (!/[\s"'\\><~|&;$*?#()`]/.test(escaped)) return escaped;
  // Quoted: ", `, $ and \ take a backslash; the key's own string escaping doubles backslashes.
  return `"${escaped.replace(/["`$\\]/g, (char) => `\\${char}`).replaceAll("\\", "\\\\")}"`;
}

function findExecutable(name: string, path: string | undefined): string | undefined {
  for (const dir of (path ?? "").split(":")) {
    if (dir === "") continue;
    const candidate = join(dir, name);
    try {
      const info = Deno.statSync(candidate);
      if (info.isFile && ((info.mode ?? 0o111) & 0o111) !== 0) return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/**
 * The agent's own log level (`logging.level`, `AGENT_LOG_LEVEL`); an unknown one is `agent run`'s
 * and `agent gateway`'s to report, not a reason for an `agent mcp` command to fail.
 */
function agentLogLevel(
  config: ResolvedConfig,
  env: (name: string) => string | undefined,
): LogLevel | undefined {
  try {
    return configuredLogLevel(config.source, env);
  } catch (error) {
    if (error instanceof ConfigError) return undefined;
    throw error;
  }
}

/**
 * Readies `mcp_servers` in `doc` for an entry to be added: created when missing or empty, and an
 * empty flow mapping (`mcp_servers: {}`) is turned into block style, so the entry goes on lines of
 * its own instead of into `{…}` on one line. Anything but a mapping is a usage error.
 */
function readyServersSection(doc: Document, file: string, outcome: string): void {
  const current = doc.get("mcp_servers");
  if (current === undefined || current === null) {
    doc.set("mcp_servers", doc.createNode({}));
  } else if (!isMap(current)) {
    throw new UsageError(`mcp_servers in ${file} is not a mapping; ${outcome}`);
  } else if (current.flow && current.items.length === 0) {
    current.flow = false;
    // `mcp_servers: {}   # none yet`: the comment stays on the key's line.
    if (current.comment) [current.commentBefore, current.comment] = [current.comment, undefined];
  }
}
