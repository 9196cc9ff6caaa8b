/**
 * `agent mcp`: list, test, tools, call, add, remove.
 *
 * @module
 */
import type { Command } from "@commander-js/extra-typings";
import { isMap } from "yaml";
import { loadConfig, type ResolvedConfig } from "../home/config.ts";
import { editConfigFile } from "../home/config_edit.ts";
import {
  formatIssue,
  loadMcpServers,
  type McpConfigIssue,
  McpManager,
  type McpServerConfig,
  McpServerError,
  type McpTransportKind,
  type ServerState,
  StderrLog,
} from "../mcp/mod.ts";
import { join } from "node:path";
import { AGENT_VERSION } from "../version.ts";
import { CliError, type CliIo, printJson, UsageError } from "./io.ts";
import type { CommandState } from "./mod.ts";

const SERVER_NAME = /^[A-Za-z0-9._-]{1,64}$/;

/** Adds the `mcp` group to `program`. */
export function addMcpCommands(program: Command, io: CliIo, state: CommandState): void {
  const mcp = program.command("mcp").description(
    "manage MCP tool servers (mcp_servers in config.yaml)",
  )
    .addHelpText(
      "after",
      "\nServers are declared under mcp_servers in config.yaml; their tools become\n" +
        "mcp__<server>__<tool>. Stdio servers' stderr goes to <home>/logs/mcp-stderr.log.",
    );

  mcp.command("list").description("connect to every configured server and show its status")
    .option("--json", "print one JSON document").action(async (options) => {
      const session = McpSession.open(io);
      try {
        await session.start(session.servers);
        const rows = [...session.manager.servers(), ...session.invalidServers()];
        if (options.json) return printJson(io, { servers: rows, issues: session.issues });
        session.printIssues();
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
          if (options.json) {
            return printJson(io, {
              ok,
              ...server,
              enabled: config.enabled,
              totalMs,
              tools: tools.map(toolRow),
            });
          }
          if (!ok) {
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
          for (const warning of server.warnings) io.out(`  warning:   ${warning}\n`);
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
          const failed = session.manager.servers().filter((s) =>
            s.status !== "connected" && s.status !== "disabled"
          );
          if (options.json) {
            return printJson(io, {
              tools: tools.map(toolRow),
              errors: failed.map((s) => ({ server: s.name, error: s.error })),
            });
          }
          session.printIssues();
          for (const server of failed) io.err(`${server.error}\n`);
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
              tool.originalName,
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
    .option("--json", "print the whole result as JSON").action(async (name, toolArg, options) => {
      let args: unknown;
      try {
        args = JSON.parse(options.args);
      } catch (error) {
        throw new UsageError(`--args is not valid JSON: ${(error as Error).message}`);
      }
      if (typeof args !== "object" || args === null || Array.isArray(args)) {
        throw new UsageError('--args must be a JSON object, e.g. --args \'{"message":"hi"}\'');
      }
      const session = McpSession.open(io);
      try {
        await session.start([session.server(name)]);
        const [server] = session.manager.servers();
        if (server.status !== "connected") {
          throw new CliError(server.error ?? `MCP server '${name}' is ${server.status}`);
        }
        const tool = session.manager.tools().find((t) =>
          t.originalName === toolArg || t.name === toolArg
        );
        if (!tool) {
          const names = session.manager.tools().map((t) => t.originalName).join(", ");
          throw new UsageError(
            `MCP server '${name}' has no tool '${toolArg}'. Its tools: ${names || "none"}`,
          );
        }
        const result = await session.manager.callTool(tool.name, args as Record<string, unknown>);
        if (result.isError) state.exitCode = 1;
        if (options.json) return printJson(io, result);
        for (const item of result.content ?? []) {
          if (item.type === "text") io.out(`${item.text}\n`);
          else io.out(`[${item.type} content${"mimeType" in item ? ` ${item.mimeType}` : ""}]\n`);
        }
        if (result.structuredContent && (result.content ?? []).length === 0) {
          io.out(`${JSON.stringify(result.structuredContent, null, 2)}\n`);
        }
        if (result.isError) {
          io.err(`MCP server '${name}': tool '${tool.originalName}' reported an error\n`);
        }
      } catch (error) {
        if (error instanceof McpServerError) throw new CliError(error.message);
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
      "a header sent to the remote server (repeat)",
      collect,
      [] as string[],
    )
    .option("--transport <kind>", "sse for servers that only speak the old HTTP+SSE transport")
    .option("--disabled", "add it with enabled: false")
    .option("--json", "print one JSON document")
    .addHelpText(
      "after",
      "\nExamples:\n  agent mcp add everything --command npx --arg -y --arg @modelcontextprotocol/server-everything\n" +
        "  agent mcp add api --url https://example.com/mcp --header 'Authorization=Bearer ${API_TOKEN}'\n" +
        "Put secrets in <home>/.env and refer to them as ${NAME}.",
    )
    .action((name, options) => {
      if (!SERVER_NAME.test(name)) {
        throw new UsageError(
          `server name '${name}' must be 1 to 64 letters, digits, '.', '_' or '-'`,
        );
      }
      if (!options.command === !options.url) {
        throw new UsageError("give exactly one of --command or --url");
      }
      const entry: Record<string, unknown> = {};
      if (options.command) {
        entry.command = options.command;
        if (options.arg.length) entry.args = options.arg;
        if (options.env.length) entry.env = pairs("--env", options.env);
      } else {
        entry.url = options.url;
        if (options.header.length) entry.headers = pairs("--header", options.header);
        if (options.transport) entry.transport = options.transport;
      }
      if (options.disabled) entry.enabled = false;
      const config = loadConfig({ env: io.env });
      if (hasServer(config, name)) {
        throw new CliError(
          `MCP server '${name}' already exists in ${config.paths.config}; remove it first (agent mcp remove ${name})`,
        );
      }
      editConfigFile(config.paths.config, (doc) => {
        if (!isMap(doc.get("mcp_servers"))) doc.set("mcp_servers", doc.createNode({}));
        doc.setIn(["mcp_servers", name], doc.createNode(entry));
      });
      const reloaded = loadConfig({ env: io.env });
      const { issues } = loadMcpServers(reloaded);
      const own = issues.filter((issue) => issue.server === name);
      if (options.json) return printJson(io, { added: name, entry, issues: own });
      io.out(
        `Added MCP server '${name}' to ${reloaded.paths.config}. Check it with: agent mcp test ${name}\n`,
      );
      for (const issue of own) {
        io.err(`${issue.severity}: ${formatIssue(issue, reloaded.paths.config)}\n`);
      }
    });

  mcp.command("remove").alias("rm").description("remove a server from config.yaml")
    .argument("<name>", "server name").option("--json", "print one JSON document").action(
      (name, options) => {
        const config = loadConfig({ env: io.env });
        if (!hasServer(config, name)) {
          throw new CliError(`no MCP server '${name}' in ${config.paths.config}`);
        }
        editConfigFile(config.paths.config, (doc) => doc.deleteIn(["mcp_servers", name]));
        if (options.json) return printJson(io, { removed: name });
        io.out(`Removed MCP server '${name}' from ${config.paths.config}.\n`);
      },
    );
}

/** A one-shot session: config, servers and a manager that does not retry in the background. */
class McpSession {
  readonly config: ResolvedConfig;
  readonly servers: McpServerConfig[];
  readonly issues: McpConfigIssue[];
  readonly manager: McpManager;
  readonly #io: CliIo;
  readonly #stderr: StderrLog;

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
    });
  }

  static open(io: CliIo): McpSession {
    return new McpSession(io, loadConfig({ env: io.env }));
  }

  /** The configured server `name`, or a usage error that lists the valid names. */
  server(name: string, options: { allowDisabled?: boolean } = {}): McpServerConfig {
    const found = this.servers.find((server) => server.name === name);
    if (!found) {
      const invalid = this.issues.find((issue) =>
        issue.server === name && issue.severity === "error"
      );
      if (invalid) throw new UsageError(formatIssue(invalid, this.config.paths.config));
      const names = this.servers.map((server) => server.name).join(", ");
      throw new UsageError(
        `no MCP server '${name}' in ${this.config.paths.config}${
          names ? ` (configured: ${names})` : ""
        }`,
      );
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
    await this.manager.start(servers);
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

  printIssues(): void {
    for (const issue of this.issues) {
      this.#io.err(`${issue.severity}: ${formatIssue(issue, this.config.paths.config)}\n`);
    }
  }

  async close(): Promise<void> {
    await this.manager.shutdown();
    this.#stderr.close();
  }
}

function hasServer(config: ResolvedConfig, name: string): boolean {
  const servers = config.source.get("mcp_servers");
  return typeof servers === "object" && servers !== null && Object.hasOwn(servers, name);
}

function toolRow(
  tool: { name: string; server: string; originalName: string; kind: string; readOnly: boolean },
) {
  return {
    name: tool.name,
    server: tool.server,
    original_name: tool.originalName,
    kind: tool.kind,
    read_only: tool.readOnly,
  };
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

function printTable(io: CliIo, header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    cells.map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]))).join("  ")
      .trimEnd() + "\n";
  io.out(line(header));
  for (const row of rows) io.out(line(row));
}
