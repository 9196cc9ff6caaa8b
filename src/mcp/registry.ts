/**
 * The tools one server contributes to the agent: its own tools after `include`/`exclude`, and
 * the utility tools for resources and prompts when both the switch and the server allow them.
 *
 * @module
 */
import type { ServerCapabilities, Tool } from "@modelcontextprotocol/client";
import type { McpServerConfig } from "./config.ts";
import { matchesAny, selectTools } from "./filter.ts";
import { toolName, type UtilityTool, utilityToolName } from "./names.ts";

/** A tool as the agent sees it. */
export interface RegisteredTool {
  /** The generated name, e.g. `mcp__my_api__list_items_v2`. */
  name: string;
  /** The server's configured name. */
  server: string;
  /** The server-native name, or the utility tool's name. */
  originalName: string;
  /** A server-native tool, or one of the four utility tools. */
  kind: "tool" | "utility";
  description: string;
  /** JSON Schema of the arguments. */
  inputSchema: Record<string, unknown>;
  /** True only when the server annotated the tool `readOnlyHint: true`. */
  readOnly: boolean;
  /** The server's `trust`: calls of an `untrusted` server's write-capable tools need approval. */
  trust: "full" | "untrusted";
}

/** A tool the server announced that is not registered, and why (a warning's text, or the filter). */
export interface DroppedTool {
  /** The server-native name. */
  originalName: string;
  reason: string;
}

/**
 * An entry of the server's `tools/list` answer that is not a valid MCP tool (an `inputSchema`
 * that is not an object schema, no name …): it was taken out before the SDK validated the answer,
 * so the server's other tools still work.
 */
export interface InvalidTool {
  /** Its place in the server's whole list (pages counted together), from 0. */
  index: number;
  /** Its name, when it has one a message can quote. */
  name?: string;
  /** What is wrong, in one line: `inputSchema.type: expected "object"`. */
  problem: string;
}

/** The tools of one server, and what the user should know about them. */
export interface ServerToolset {
  tools: RegisteredTool[];
  /** One line per tool left out or shadowed. */
  warnings: string[];
  /**
   * The native tools not registered: left out by `tools.include`/`exclude`, or because another
   * tool took their registered name.
   */
  dropped: DroppedTool[];
}

const UTILITY_SCHEMAS: Record<
  UtilityTool,
  { description: string; inputSchema: Record<string, unknown> }
> = {
  list_resources: {
    description:
      "List the resources this MCP server offers (uri, name, description, mime type), and its " +
      "resource templates (uriTemplate), whose {variables} filled in make further uris.",
    inputSchema: { type: "object", properties: {} },
  },
  read_resource: {
    description: "Read one resource of this MCP server by its uri.",
    inputSchema: {
      type: "object",
      properties: {
        uri: {
          type: "string",
          description:
            "The resource uri, from list_resources (or one of its uriTemplates filled in).",
        },
      },
      required: ["uri"],
    },
  },
  list_prompts: {
    description: "List the prompt templates this MCP server offers, with their arguments.",
    inputSchema: { type: "object", properties: {} },
  },
  get_prompt: {
    description: "Render one prompt template of this MCP server with its arguments.",
    inputSchema: {
      type: "object",
      properties: {
        name: { type: "string", description: "The prompt name, from list_prompts." },
        arguments: {
          type: "object",
          description: "The prompt's arguments as string values.",
          additionalProperties: { type: "string" },
        },
      },
      required: ["name"],
    },
  },
};

/**
 * Builds the toolset of one connected server. An empty `tools` list means the server gets no
 * toolset at all (SPEC.md: no empty runtime toolset). Each of the `invalid` entries of its
 * `tools/list` answer is named in a warning, unless `include`/`exclude` leaves its name out anyway.
 * So is a tool that runs only as an MCP task (`execution.taskSupport: required`): the SDK has no
 * task runtime, and a plain call of such a tool fails.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { buildToolset } from "./registry.ts";
 * const { tools } = buildToolset(
 *   { name: "my-api", tools: { resources: true, prompts: true } } as never,
 *   [{ name: "list-items.v2", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } }],
 *   {},
 * );
 * assert(tools[0].name === "mcp__my_api__list_items_v2" && tools[0].readOnly);
 * ```
 */
export function buildToolset(
  config: Pick<McpServerConfig, "name" | "tools"> & Partial<Pick<McpServerConfig, "trust">>,
  serverTools: readonly Tool[],
  capabilities: ServerCapabilities | undefined,
  invalid: readonly InvalidTool[] = [],
): ServerToolset {
  const server = `MCP server '${config.name}'`;
  const warnings: string[] = [];
  const dropped: DroppedTool[] = [];
  const kept = selectTools(serverTools, config.tools);
  const named = invalid.flatMap((entry) => entry.name === undefined ? [] : [entry.name]);
  const wanted = new Set(
    selectTools(named.map((name) => ({ name })), config.tools).map((t) => t.name),
  );
  const filter = config.tools.include !== undefined
    ? { key: "include", patterns: config.tools.include }
    : config.tools.exclude !== undefined
    ? { key: "exclude", patterns: config.tools.exclude }
    : undefined;
  if (filter) {
    const where = `mcp_servers.${config.name}.tools.${filter.key}`;
    // A pattern that matches nothing is most often a typo: an exclude that protects nothing.
    for (const pattern of filter.patterns) {
      const names = [...serverTools.map((tool) => tool.name), ...named];
      if (!names.some((name) => matchesAny(name, [pattern]))) {
        warnings.push(
          `${server}: ${where} entry '${pattern}' matches none of the server's tools ` +
            "(names are case-sensitive)",
        );
      }
    }
    const keptSet = new Set(kept);
    const leftOut = [
      ...serverTools.filter((tool) => !keptSet.has(tool)).map((tool) => tool.name),
      ...named.filter((name) => !wanted.has(name)),
    ];
    for (const name of leftOut) {
      dropped.push({
        originalName: name,
        reason: `${server}: tool '${name}' is left out by ${where}`,
      });
    }
  }
  for (const entry of invalid) {
    if (entry.name !== undefined && !wanted.has(entry.name)) continue; // left out anyway
    // Named by its index when it has no name a message can quote.
    const reason = entry.name === undefined
      ? `${server}: the tool at index ${entry.index} of tools/list is not registered because ` +
        `its entry is not valid MCP: ${entry.problem}`
      : `${server}: tool '${entry.name}' is not registered because its tools/list entry is not ` +
        `valid MCP: ${entry.problem}`;
    warnings.push(reason);
    if (entry.name !== undefined) dropped.push({ originalName: entry.name, reason });
  }
  const selected = kept.filter((tool) => {
    if (tool.name === "") {
      warnings.push(`${server}: the server lists a tool with an empty name; it is not registered`);
      return false;
    }
    if (tool.execution?.taskSupport === "required") {
      // Such a tool answers a plain call with an error (-32601): the model would only see it fail.
      const reason = `${server}: tool '${tool.name}' is not registered because it runs only as ` +
        "a task (execution.taskSupport: required), and this client does not run MCP tasks";
      warnings.push(reason);
      dropped.push({ originalName: tool.name, reason });
      return false;
    }
    return true;
  });
  const candidates: RegisteredTool[] = selected.map((tool) => ({
    name: toolName(config.name, tool.name),
    server: config.name,
    originalName: tool.name,
    kind: "tool",
    description: tool.description ?? tool.title ?? "",
    inputSchema: (tool.inputSchema as Record<string, unknown> | undefined) ?? { type: "object" },
    readOnly: tool.annotations?.readOnlyHint === true,
    trust: config.trust ?? "full",
  }));
  const utilities: UtilityTool[] = [];
  if (config.tools.resources && capabilities?.resources) {
    utilities.push("list_resources", "read_resource");
  }
  if (config.tools.prompts && capabilities?.prompts) utilities.push("list_prompts", "get_prompt");
  for (const utility of utilities) {
    candidates.push({
      name: utilityToolName(config.name, utility),
      server: config.name,
      originalName: utility,
      kind: "utility",
      ...UTILITY_SCHEMAS[utility],
      readOnly: true,
      trust: config.trust ?? "full",
    });
  }
  // The first tool under a name keeps it; every later one is named in a warning.
  const registered = new Map<string, RegisteredTool>();
  const repeats = new Map<string, number>();
  for (const tool of candidates) {
    const first = registered.get(tool.name);
    if (!first) {
      registered.set(tool.name, tool);
    } else if (
      first.kind === "tool" && tool.kind === "tool" && first.originalName === tool.originalName
    ) {
      repeats.set(tool.originalName, (repeats.get(tool.originalName) ?? 1) + 1);
    } else if (tool.kind === "utility") {
      warnings.push(
        `${server}: its own tool '${first.originalName}' is registered as ${tool.name}, so the ` +
          `utility tool ${tool.originalName} is not registered`,
      );
    } else {
      const reason = `${server}: tool '${tool.originalName}' is not registered because tool ` +
        `'${first.originalName}' already becomes ${tool.name} after sanitising; only the first ` +
        "is registered";
      warnings.push(reason);
      dropped.push({ originalName: tool.originalName, reason });
    }
  }
  for (const [original, count] of repeats) {
    warnings.push(
      `${server}: the server lists tool '${original}' ${count} times; only the first is registered`,
    );
  }
  return { tools: [...registered.values()], warnings, dropped };
}
