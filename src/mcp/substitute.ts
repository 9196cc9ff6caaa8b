/**
 * `${...}` substitution in MCP server entries (SPEC "MCP server entry", decisions.md §5
 * "Substitution").
 *
 * Every `${body}` (regex `\$\{([^}]+)\}`) in a string is replaced once:
 *
 * | Reference | Resolves to |
 * |---|---|
 * | `${userHome}` | {@linkcode SubstitutionContext.userHome} |
 * | `${workspaceFolder}` | {@linkcode SubstitutionContext.workspaceFolder} |
 * | `${workspaceFolderBasename}` | the last segment of `workspaceFolder` |
 * | `${pathSeparator}`, `${/}` | {@linkcode SubstitutionContext.pathSeparator} |
 * | `${env:NAME}`, `${NAME}` (any other name) | `lookup(NAME)`: `<home>/.env`, then the process env |
 *
 * The body is trimmed (`${ NAME }` is `${NAME}`). Names are case-sensitive (`${USERHOME}` is a
 * variable). `${env:...}` always means a variable, even `${env:userHome}`. A variable that is
 * unset or empty keeps the placeholder exactly as written. Substitution is one pass: a value
 * that itself contains `${X}` is not expanded again. Keys of mappings are never substituted.
 *
 * @module
 */

/** What `${...}` references resolve against; everything is passed in, nothing is read globally. */
export interface SubstitutionContext {
  /**
   * Reads a variable from the secret scope: `<home>/.env` first, then the process environment
   * (pass `SecretScope.get` bound to its scope).
   */
  lookup: (name: string) => string | undefined;
  /** The current user's home folder (`${userHome}`). */
  userHome: string;
  /**
   * The session workspace root (`${workspaceFolder}`): the caller decides (the session's terminal
   * working directory when known, else the process working directory).
   */
  workspaceFolder: string;
  /** The OS path separator (`${pathSeparator}`, `${/}`), e.g. `sep` from `node:path`. */
  pathSeparator: string;
  /**
   * The `.env` file messages tell the user to set a variable in (`config.paths.dotenv`); default
   * the words `<home>/.env`.
   */
  secretsFile?: string;
}

/** Matches one placeholder; the group is the untrimmed body. */
const PLACEHOLDER = /\$\{([^}]+)\}/g;
const ENV_PREFIX = "env:";

/** The names that resolve from the context rather than from variables. */
type ContextName =
  | "userHome"
  | "workspaceFolder"
  | "workspaceFolderBasename"
  | "pathSeparator"
  | "/";

/**
 * A parsed placeholder body: a context value, or a variable name (possibly empty, which never
 * resolves).
 */
type Reference = { kind: "context"; name: ContextName } | { kind: "variable"; name: string };

function parseReference(body: string): Reference {
  const trimmed = body.trim();
  if (trimmed.startsWith(ENV_PREFIX)) {
    // `${env: NAME}` is read as NAME: a variable name cannot carry spaces in `.env` anyway.
    return { kind: "variable", name: trimmed.slice(ENV_PREFIX.length).trim() };
  }
  switch (trimmed) {
    case "userHome":
    case "workspaceFolder":
    case "workspaceFolderBasename":
    case "pathSeparator":
    case "/":
      return { kind: "context", name: trimmed };
    default:
      return { kind: "variable", name: trimmed };
  }
}

function contextValue(name: ContextName, context: SubstitutionContext): string {
  switch (name) {
    case "userHome":
      return context.userHome;
    case "workspaceFolder":
      return context.workspaceFolder;
    case "workspaceFolderBasename":
      return basenameOf(context.workspaceFolder, context.pathSeparator);
    case "pathSeparator":
    case "/":
      return context.pathSeparator;
  }
}

/** The last path segment, ignoring trailing separators; `/` and the context separator both split. */
function basenameOf(path: string, separator: string): string {
  const parts = path.split("/").flatMap((part) => separator ? part.split(separator) : [part]);
  return parts.filter((part) => part.length > 0).at(-1) ?? "";
}

/** The value of a variable reference, or `undefined` when it is unset or empty. */
function variableValue(name: string, context: SubstitutionContext): string | undefined {
  if (name.length === 0) return undefined;
  const value = context.lookup(name);
  return value === undefined || value === "" ? undefined : value;
}

/**
 * Replaces every `${...}` reference in `value`, once. Unset or empty variables keep their
 * placeholder exactly as written.
 *
 * @param value The string to expand.
 * @param context Where references resolve.
 * @returns The expanded string.
 *
 * @example Usage
 * ```ts
 * import { substituteString } from "./substitute.ts";
 * import assert from "node:assert/strict";
 *
 * const context = {
 *   lookup: (name: string) => ({ TOKEN: "s3cret", EMPTY: "" } as Record<string, string>)[name],
 *   userHome: "/home/ada",
 *   workspaceFolder: "/work/project",
 *   pathSeparator: "/",
 * };
 * assert.equal(substituteString("Bearer ${TOKEN}", context), "Bearer s3cret");
 * assert.equal(substituteString("${ env:TOKEN }", context), "s3cret");
 * assert.equal(substituteString("${userHome}${/}x", context), "/home/ada/x");
 * assert.equal(substituteString("${workspaceFolderBasename}", context), "project");
 * assert.equal(substituteString("${ MISSING } ${EMPTY}", context), "${ MISSING } ${EMPTY}");
 * ```
 */
export function substituteString(value: string, context: SubstitutionContext): string {
  return value.replace(PLACEHOLDER, (literal: string, body: string) => {
    const reference = parseReference(body);
    if (reference.kind === "context") return contextValue(reference.name, context);
    return variableValue(reference.name, context) ?? literal;
  });
}

/**
 * The placeholders in `value` that {@linkcode substituteString} would keep as written (their
 * variable is unset or empty), in order of appearance, without repeats.
 *
 * @param value The string to inspect (before substitution).
 * @param context Where references resolve.
 * @returns Each unresolved placeholder's literal text (e.g. `${ TOKEN }`).
 *
 * @example Usage
 * ```ts
 * import { unresolvedPlaceholders } from "./substitute.ts";
 * import assert from "node:assert/strict";
 *
 * const context = {
 *   lookup: (name: string) => name === "SET" ? "yes" : undefined,
 *   userHome: "/home/ada",
 *   workspaceFolder: "/work",
 *   pathSeparator: "/",
 * };
 * assert.deepEqual(unresolvedPlaceholders("${SET} ${UNSET} ${userHome}", context), ["${UNSET}"]);
 * ```
 */
export function unresolvedPlaceholders(value: string, context: SubstitutionContext): string[] {
  const found: string[] = [];
  for (const match of value.matchAll(PLACEHOLDER)) {
    const reference = parseReference(match[1]);
    if (reference.kind === "context") continue;
    if (variableValue(reference.name, context) === undefined && !found.includes(match[0])) {
      found.push(match[0]);
    }
  }
  return found;
}

/**
 * Returns a copy of `value` with {@linkcode substituteString} applied to every string in it,
 * nested in lists and mappings at any depth. Mapping keys are never substituted; numbers,
 * booleans and `null` are returned unchanged. The input is not modified.
 *
 * @param value Any YAML/JSON value (typically one `mcp_servers` entry).
 * @param context Where references resolve.
 * @returns The expanded copy.
 *
 * @example Usage
 * ```ts
 * import { substituteDeep } from "./substitute.ts";
 * import assert from "node:assert/strict";
 *
 * const context = {
 *   lookup: (name: string) => name === "KEY" ? "k-123" : undefined,
 *   userHome: "/home/ada",
 *   workspaceFolder: "/work",
 *   pathSeparator: "/",
 * };
 * const entry = { headers: { "${KEY}": "${KEY}" }, args: ["--root", "${workspaceFolder}"], timeout: 30 };
 * assert.deepEqual(substituteDeep(entry, context), {
 *   headers: { "${KEY}": "k-123" },
 *   args: ["--root", "/work"],
 *   timeout: 30,
 * });
 * ```
 */
export function substituteDeep<T>(value: T, context: SubstitutionContext): T {
  return deep(value, context) as T;
}

function deep(value: unknown, context: SubstitutionContext): unknown {
  if (typeof value === "string") return substituteString(value, context);
  if (Array.isArray(value)) return value.map((item) => deep(item, context));
  if (isMapping(value)) {
    // `fromEntries` defines own properties, so a `__proto__` key stays a plain key.
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, deep(item, context)]),
    );
  }
  return value;
}

/** Plain mappings only: class instances (dates, maps) are values, not containers. */
function isMapping(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** A variable's value put into an entry by substitution, and the placeholder it replaced. */
export interface Substitution {
  /** The variable's value (from `.env` or the process environment). */
  value: string;
  /** The placeholder as written, e.g. `${API_TOKEN}`. */
  placeholder: string;
}

/**
 * Values shorter than this are not masked: too short to be a credential, and replacing every
 * `1` or `on` in a message would garble it.
 */
const MIN_MASKED_LENGTH = 4;

/**
 * The variables {@linkcode substituteDeep} puts into `value` (strings in lists and mappings at any
 * depth, not keys), each once, longest value first: what {@linkcode maskSubstitutions} hides.
 * Context references (`${userHome}`, …) are not variables and are not listed.
 *
 * @param value The entry before substitution.
 * @param context Where references resolve.
 * @returns The substitutions whose value is at least 4 characters long.
 *
 * @example Usage
 * ```ts
 * import { variableSubstitutions } from "./substitute.ts";
 * import assert from "node:assert/strict";
 *
 * const context = {
 *   lookup: (name: string) => ({ TOKEN: "s3cret-t0ken", ON: "1" } as Record<string, string>)[name],
 *   userHome: "/home/ada",
 *   workspaceFolder: "/work",
 *   pathSeparator: "/",
 * };
 * const entry = { url: "https://x/mcp?t=${TOKEN}&v=${ON}", args: ["${userHome}"] };
 * assert.deepEqual(variableSubstitutions(entry, context), [
 *   { value: "s3cret-t0ken", placeholder: "${TOKEN}" },
 * ]);
 * ```
 */
export function variableSubstitutions(
  value: unknown,
  context: SubstitutionContext,
): Substitution[] {
  const found = new Map<string, string>();
  const visit = (item: unknown): void => {
    if (typeof item === "string") {
      for (const match of item.matchAll(PLACEHOLDER)) {
        const reference = parseReference(match[1]);
        if (reference.kind === "context") continue;
        const resolved = variableValue(reference.name, context);
        if (resolved !== undefined && resolved.length >= MIN_MASKED_LENGTH) {
          if (!found.has(resolved)) found.set(resolved, match[0]);
        }
      }
    } else if (Array.isArray(item)) {
      item.forEach(visit);
    } else if (isMapping(item)) {
      Object.values(item).forEach(visit);
    }
  };
  visit(value);
  return [...found].map(([resolved, placeholder]) => ({ value: resolved, placeholder }))
    .sort((a, b) => b.value.length - a.value.length);
}

/**
 * `text` with each substituted value (as it is, or percent-encoded as a URL holds it) written
 * back as its placeholder, so that a message quoting a URL or header built from `.env` names the
 * variable instead of showing its value.
 *
 * @param text A message that may quote substituted values.
 * @param substitutions From {@linkcode variableSubstitutions} (longest first).
 * @returns The masked text.
 *
 * @example Usage
 * ```ts
 * import { maskSubstitutions } from "./substitute.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(
 *   maskSubstitutions("cannot reach https://x/mcp?t=s3cret", [{ value: "s3cret", placeholder: "${T}" }]),
 *   "cannot reach https://x/mcp?t=${T}",
 * );
 * ```
 */
export function maskSubstitutions(
  text: string,
  substitutions: readonly Substitution[] | undefined,
): string {
  let out = text;
  for (const { value, placeholder } of substitutions ?? []) {
    // A URL quotes a value percent-encoded where it must be.
    for (
      const form of new Set([value, encoded(encodeURI, value), encoded(encodeURIComponent, value)])
    ) {
      if (form !== undefined) out = out.replaceAll(form, placeholder);
    }
  }
  return out;
}

function encoded(encode: (text: string) => string, text: string): string | undefined {
  try {
    return encode(text);
  } catch {
    return undefined; // a lone surrogate
  }
}
