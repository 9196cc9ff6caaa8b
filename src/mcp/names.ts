/**
 * The names MCP tools are registered under (SPEC.md "Generated tool names", decisions.md §5
 * "Names:"): `mcp__<server>__<tool>` and `mcp__<server>__<utility>`, with every character outside
 * `[A-Za-z0-9_]` replaced by `_`, and names over 64 characters cut to a readable prefix plus `_`
 * and 8 hex digits of a sha256, because model APIs reject longer tool names.
 *
 * @module
 */
import { createHash } from "node:crypto";

/** The longest tool name model APIs accept; longer names are clamped by {@linkcode clampToolName}. */
export const MAX_TOOL_NAME_LENGTH = 64;

/** How many hex digits of the sha256 end a clamped name. */
const HASH_HEX_LENGTH = 8;

/** Length of the readable prefix kept by a clamped name: the rest is `_` plus the hash. */
const PREFIX_LENGTH = MAX_TOOL_NAME_LENGTH - 1 - HASH_HEX_LENGTH;

/** One Unicode code point (or lone surrogate) outside the allowed set; `u` makes it per code point. */
const DISALLOWED = /[^A-Za-z0-9_]/gu;

/**
 * Replaces every character that is not an ASCII letter, digit or underscore with `_`.
 *
 * Replacement is per Unicode code point, not per UTF-16 code unit: an emoji such as `🚀`
 * (two code units) becomes a single `_`, and so does a lone surrogate. A sequence of several code
 * points (a flag, a ZWJ family, an emoji with a variation selector) becomes one `_` per code point.
 * Runs of replaced characters are not collapsed, so `a--b` stays distinguishable from `a-b`.
 *
 * @param value A server or tool name as written in config or announced by the server.
 * @returns The name with only `[A-Za-z0-9_]` characters; same number of code points as `value`.
 *
 * @example Usage
 * ```ts
 * import { sanitizeNamePart } from "./names.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(sanitizeNamePart("list-items.v2"), "list_items_v2");
 * assert.equal(sanitizeNamePart("go🚀"), "go_");
 * assert.equal(sanitizeNamePart("snake_case_42"), "snake_case_42");
 * ```
 */
export function sanitizeNamePart(value: string): string {
  return value.replace(DISALLOWED, "_");
}

/**
 * Clamps a tool name to {@linkcode MAX_TOOL_NAME_LENGTH} characters.
 *
 * A name of at most 64 characters is returned unchanged. A longer one becomes its first 55
 * characters, `_`, and the first 8 hex digits of the sha256 of the whole unclamped name: exactly
 * 64 characters, deterministic, and distinct for distinct long names that share a prefix.
 * Length is counted in UTF-16 code units; names are meant to be sanitized (ASCII) first. Should
 * an unsanitized name be cut inside a surrogate pair, the dangling half becomes `_`.
 *
 * @param name A full tool name, normally from {@linkcode toolName} or {@linkcode utilityToolName}.
 * @returns `name` itself, or its 64-character clamped form.
 *
 * @example Usage
 * ```ts
 * import { clampToolName, MAX_TOOL_NAME_LENGTH } from "./names.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(clampToolName("mcp__github__create_issue"), "mcp__github__create_issue");
 *
 * const clamped = clampToolName("mcp__server__" + "x".repeat(80));
 * assert.equal(clamped.length, MAX_TOOL_NAME_LENGTH);
 * assert.match(clamped, /^mcp__server__x+_[0-9a-f]{8}$/);
 * ```
 */
export function clampToolName(name: string): string {
  if (name.length <= MAX_TOOL_NAME_LENGTH) return name;
  const hash = createHash("sha256").update(name, "utf8").digest("hex").slice(0, HASH_HEX_LENGTH);
  let prefix = name.slice(0, PREFIX_LENGTH);
  const last = prefix.charCodeAt(PREFIX_LENGTH - 1);
  // A high surrogate at the cut would leave half a character; keep the length, drop the half.
  if (last >= 0xd800 && last <= 0xdbff) prefix = prefix.slice(0, -1) + "_";
  return `${prefix}_${hash}`;
}

/**
 * The registered name of a server-native tool: `mcp__<server>__<tool>` with both parts sanitized
 * by {@linkcode sanitizeNamePart}, then clamped by {@linkcode clampToolName}.
 *
 * Different originals can sanitize to the same name (`a-b` and `a.b` both give `a_b`); see
 * {@linkcode detectCollisions}.
 *
 * @param server The server's key in the `mcp_servers` config.
 * @param tool The tool's name as the server announces it.
 * @returns The name the tool is registered under, at most 64 characters.
 *
 * @example Usage
 * ```ts
 * import { toolName } from "./names.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(toolName("my-api", "list-items.v2"), "mcp__my_api__list_items_v2");
 * ```
 */
export function toolName(server: string, tool: string): string {
  return clampToolName(`mcp__${sanitizeNamePart(server)}__${sanitizeNamePart(tool)}`);
}

/** The utility tools registered for servers that advertise resources or prompts. */
export type UtilityTool = "list_resources" | "read_resource" | "list_prompts" | "get_prompt";

/**
 * Every utility tool, resource tools first, then prompt tools.
 *
 * @example Usage
 * ```ts
 * import { UTILITY_TOOLS } from "./names.ts";
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(UTILITY_TOOLS, ["list_resources", "read_resource", "list_prompts", "get_prompt"]);
 * ```
 */
export const UTILITY_TOOLS: readonly UtilityTool[] = Object.freeze(
  [
    "list_resources",
    "read_resource",
    "list_prompts",
    "get_prompt",
  ] as const,
);

/**
 * The registered name of a utility tool: `mcp__<server>__<utility>` with the server sanitized by
 * {@linkcode sanitizeNamePart}, then clamped by {@linkcode clampToolName}.
 *
 * @param server The server's key in the `mcp_servers` config.
 * @param utility One of {@linkcode UTILITY_TOOLS}.
 * @returns The name the utility tool is registered under, at most 64 characters.
 * @throws {TypeError} If `utility` is not one of {@linkcode UTILITY_TOOLS} (untyped callers).
 *
 * @example Usage
 * ```ts
 * import { utilityToolName } from "./names.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(utilityToolName("my-api", "read_resource"), "mcp__my_api__read_resource");
 * ```
 */
export function utilityToolName(server: string, utility: UtilityTool): string {
  if (!UTILITY_TOOLS.includes(utility)) {
    throw new TypeError(
      `Unknown MCP utility tool '${String(utility)}': expected one of ${UTILITY_TOOLS.join(", ")}`,
    );
  }
  return clampToolName(`mcp__${sanitizeNamePart(server)}__${utility}`);
}

/**
 * Lists the registered names that more than one distinct original produces, such as tools `a-b`
 * and `a.b` of one server, which both register as `mcp__<server>__a_b`.
 *
 * The caller picks what "original" means; to also catch a native tool named `list_resources`
 * clashing with the utility tool, give originals that tell the two apart (for example
 * `tool:list_resources` and `utility:list_resources`). An original repeated with the same
 * registered name is not a collision (the registry warns about repeats separately).
 *
 * @param names Each registered name with the original it came from, in registration order.
 * @returns Each colliding registered name once, in order of first appearance.
 *
 * @example Usage
 * ```ts
 * import { detectCollisions, toolName } from "./names.ts";
 * import assert from "node:assert/strict";
 *
 * const names = ["a-b", "a.b", "c"].map((tool) => ({
 *   registered: toolName("srv", tool),
 *   original: tool,
 * }));
 * assert.deepEqual(detectCollisions(names), ["mcp__srv__a_b"]);
 * ```
 */
export function detectCollisions(
  names: readonly { registered: string; original: string }[],
): string[] {
  const originals = new Map<string, Set<string>>();
  for (const { registered, original } of names) {
    const seen = originals.get(registered);
    if (seen) seen.add(original);
    else originals.set(registered, new Set([original]));
  }
  return [...originals].filter(([, seen]) => seen.size > 1).map(([registered]) => registered);
}
