/**
 * Declarative `filters` of a config route (SPEC.md "Payload filters and scripts", decisions.md §6
 * "Filters"): conditions on payload fields, the event type or headers, grouped with `all`, `any`
 * and `not`. An event the filter does not match is ignored with HTTP 200.
 *
 * Config shape (YAML): a list of filters (all must match) or one filter; a filter is a group
 * (`all: [...]`, `any: [...]`, `not: <filter>`) or a condition (`field` + exactly one operator):
 *
 * ```yaml
 * filters:
 *   - field: event
 *     in: [push, release]
 *   - field: headers.x-github-event
 *     exists: true
 *   - any:
 *       - { field: ref, equals: refs/heads/main }
 *       - { field: commits.0.message, regex: "(?i)deploy" }
 * ```
 *
 * @module
 */
import { resolve } from "node:path";
import { stringifyJsonExact } from "../home/exact_json.ts";

/** The operators of a condition, in the order decisions.md lists them. */
const FILTER_OPERATORS = [
  "exists",
  "missing",
  "equals",
  "not_equals",
  "contains",
  "in",
  "in_file",
  "regex",
] as const;

/** One operator of a condition. */
type FilterOperator = typeof FILTER_OPERATORS[number];

/** Groups nest at most this deep (a condition does not count as a level). */
export const MAX_FILTER_DEPTH = 16;

/** At most this many characters of a value are tested against a `regex`. */
export const MAX_REGEX_INPUT_CHARS = 10_000;

/** Options of {@linkcode parseFilters}. */
export interface ParseOptions {
  /**
   * The folder a relative `in_file` path is read from (the gateway passes `<home>`), so a list
   * does not depend on the directory the gateway was started in. Without it, relative paths are
   * kept as written.
   */
  baseDir?: string;
}

/** A condition on one field: `field` + one operator. */
export type FilterCondition =
  | { field: string; op: "exists" | "missing" }
  | { field: string; op: "equals" | "not_equals" | "contains"; value: unknown }
  | { field: string; op: "in"; values: unknown[] }
  | { field: string; op: "in_file"; path: string }
  | {
    field: string;
    op: "regex";
    pattern: string;
    /** The pattern compiled by {@linkcode parseFilters}, once per load. */
    regex?: RegExp;
    /** Why the pattern is not a valid regular expression: the condition is false. */
    invalid?: string;
  };

/** A group: every, some or none of its filters match. */
export type FilterGroup = { all: Filter[] } | { any: Filter[] } | { not: Filter };

/** A parsed filter tree. */
export type Filter = FilterGroup | FilterCondition;

/** What a filter is matched against. */
export interface FilterInput {
  /** The request's JSON payload (after any route script). */
  payload: unknown;
  /** The event name the listener derived. */
  event: string;
  /** Request headers, any case. */
  headers: Headers | Record<string, string>;
}

/** Hooks of {@linkcode matchFilter}; both have working defaults. */
export interface MatchOptions {
  /** Reads an `in_file` list; `undefined` when it cannot. Default: `Deno.readTextFileSync`. */
  readFile?: (path: string) => string | undefined;
  /** Hears why a condition evaluated to false (bad regex, unreadable file). Default: ignore. */
  warn?: (message: string) => void;
}

const GROUP_KEYS = ["all", "any", "not"] as const;
const GROUP_ALIASES: Record<string, string> = { and: "all", or: "any", none: "not" };
const OPERATOR_ALIASES: Record<string, FilterOperator> = {
  eq: "equals",
  is: "equals",
  ne: "not_equals",
  neq: "not_equals",
  not_equal: "not_equals",
  includes: "contains",
  one_of: "in",
  match: "regex",
  matches: "regex",
  pattern: "regex",
  present: "exists",
  absent: "missing",
};
const OPERATOR_LIST = FILTER_OPERATORS.join(", ");
const REGEX_CACHE_SIZE = 256;
/** A compiled pattern, or why it is not used. */
const regexCache = new Map<string, RegExp | string>();

/**
 * Parses the `filters` of a route, as read from YAML, into a {@linkcode Filter}.
 *
 * `undefined` and `null` mean "no filter". A list means `all`. Every problem names its place
 * (`where`, then `[i]`, `.all[i]`, `.not` …) and what to write instead; when there is any
 * problem, no filter is returned, because a filter with a condition dropped would let through
 * events it was written to stop.
 *
 * Each `regex` is compiled here, once. An invalid one is not a problem but a warning (the route
 * is served, and the condition evaluates to false, decisions.md §6): it is returned in
 * `warnings` and kept in the condition as `invalid`, so that matching never reports it again.
 *
 * A `regex` with a nested quantifier (see {@linkcode nestedQuantifier}) is a problem: such a
 * pattern can take seconds or minutes on a short crafted value, and regexes run on the
 * gateway's only thread. A relative `in_file` path is resolved against `options.baseDir`.
 *
 * @param raw The config value of `filters`.
 * @param where Where the value sits in the config, for the problems, e.g.
 *   `platforms.webhook.extra.routes.deploy.filters`.
 * @param options Where relative `in_file` paths are read from.
 * @returns The filter when there is one and it is valid, the problems found, and the warnings
 *   (invalid regexes), each naming its place.
 *
 * @example
 * ```ts
 * import { parseFilters } from "./filters.ts";
 * import assert from "node:assert/strict";
 *
 * const ok = parseFilters([{ field: "action", in: ["opened", "reopened"] }], "filters");
 * assert.deepEqual(ok, {
 *   filter: { all: [{ field: "action", op: "in", values: ["opened", "reopened"] }] },
 *   problems: [],
 *   warnings: [],
 * });
 *
 * const bad = parseFilters({ field: "action", equal: "opened" }, "filters");
 * assert.equal(bad.filter, undefined);
 * assert.match(bad.problems[0], /^filters: unknown key 'equal' \(did you mean 'equals'\?\)/);
 *
 * const listed = parseFilters({ field: "sender.login", in_file: "lists/owners.txt" }, "filters", {
 *   baseDir: "/home/me/.agent",
 * });
 * assert.deepEqual(listed.filter, {
 *   field: "sender.login",
 *   op: "in_file",
 *   path: "/home/me/.agent/lists/owners.txt",
 * });
 *
 * const slow = parseFilters({ field: "title", regex: "(a+)+$" }, "filters");
 * assert.match(slow.problems[0], /nested quantifier/);
 *
 * const typo = parseFilters({ any: [{ field: "a", regex: "[" }, { field: "b", equals: 1 }] }, "f");
 * assert.ok(typo.filter); // served: `b` still decides
 * assert.deepEqual(typo.problems, []);
 * assert.match(typo.warnings[0], /^f\.any\[0\]: filter on .a.: regex "\[" is not a valid/);
 * ```
 */
export function parseFilters(
  raw: unknown,
  where: string,
  options: ParseOptions = {},
): { filter?: Filter; problems: string[]; warnings: string[] } {
  if (raw === undefined || raw === null) return { problems: [], warnings: [] };
  const problems: string[] = [];
  const warnings: string[] = [];
  const filter = parseNode(raw, where, 0, { problems, warnings, baseDir: options.baseDir });
  return problems.length === 0 && filter ? { filter, problems, warnings } : { problems, warnings };
}

/**
 * Tells whether an event matches a filter.
 *
 * Fields are dot paths. The first segment decides where the path starts: `payload` → the
 * payload's nested `payload` object when it has one, else the payload itself; `event` or
 * `event_type` → the event name (no further segments); `headers` → the header named by the rest
 * of the path, in any case; anything else → the payload root. Numeric segments index arrays
 * (`commits.0.id`); a missing step gives no value.
 *
 * Operators: `exists` (any value, `null` included) and `missing` (no value); `equals` and
 * `not_equals` compare JSON values deeply, and scalars of different types compare by their
 * string forms, so `equals: "42"` matches `42` and `equals: 5` matches the header `"5"`;
 * `not_equals` is true for a missing field; `contains` is a substring of a string or an element
 * of an array; `in` is equality with one of a list; `in_file` looks the value's string form up in
 * a file of one value per line (blank and `#` lines skipped; {@linkcode parseFilters} resolved a
 * relative path against its `baseDir`); `regex` searches the value's string form (strings as is,
 * numbers and booleans as printed, others as JSON, at most {@linkcode MAX_REGEX_INPUT_CHARS}
 * characters) with a JavaScript regular expression, a leading `(?i)`, `(?m)` or `(?s)` becoming
 * its flag. An invalid regex, a regex with a nested quantifier, an unreadable file or a tree
 * nested too deep evaluate to false and are reported through `options.warn` — except an invalid
 * regex that {@linkcode parseFilters} already reported (it warns once, when the route is loaded,
 * not on every request).
 *
 * @param filter A filter from {@linkcode parseFilters}.
 * @param input The payload, event name and headers of the request.
 * @param options How to read `in_file` lists and where warnings go.
 * @returns `true` when the event should be processed, `false` when it should be ignored.
 *
 * @example
 * ```ts
 * import { matchFilter, parseFilters } from "./filters.ts";
 * import assert from "node:assert/strict";
 *
 * const { filter } = parseFilters([
 *   { field: "event", equals: "push" },
 *   { field: "headers.X-GitHub-Event", exists: true },
 *   { any: [{ field: "ref", regex: "^refs/tags/v" }, { field: "commits.0.id", equals: "abc" }] },
 * ], "filters");
 * const input = {
 *   payload: { ref: "refs/heads/main", commits: [{ id: "abc" }] },
 *   event: "push",
 *   headers: new Headers({ "x-github-event": "push" }),
 * };
 * assert.equal(matchFilter(filter!, input), true);
 * assert.equal(matchFilter(filter!, { ...input, event: "issues" }), false);
 * ```
 */
export function matchFilter(
  filter: Filter,
  input: FilterInput,
  options: MatchOptions = {},
): boolean {
  const files = new Map<string, Set<string> | undefined>();
  const context: EvalContext = {
    input,
    warn: options.warn ?? (() => {}),
    lookup: (path) => {
      if (!files.has(path)) files.set(path, readList(path, options.readFile ?? readTextFile));
      return files.get(path);
    },
  };
  return evaluate(filter, context, 0);
}

// --- parsing --------------------------------------------------------------------------------

interface ParseState {
  problems: string[];
  warnings: string[];
  baseDir?: string;
}

function parseNode(
  raw: unknown,
  where: string,
  depth: number,
  state: ParseState,
): Filter | undefined {
  const { problems } = state;
  if (Array.isArray(raw)) return parseGroup("all", raw, where, where, depth, state);
  if (!isRecord(raw)) {
    problems.push(
      `${where}: a filter is a mapping (a condition with \`field\`, or a group \`all\`, \`any\` ` +
        `or \`not\`) or a list of them, not ${describe(raw)}`,
    );
    return undefined;
  }
  const keys = Object.keys(raw);
  const group = GROUP_KEYS.find((key) => Object.hasOwn(raw, key));
  if (group) {
    if (keys.length !== 1) {
      const others = keys.filter((key) => key !== group).map((key) => `'${key}'`).join(", ");
      problems.push(
        `${where}: a group has only its \`${group}\` key; move ${others} into a filter of its own ` +
          `inside it`,
      );
      return undefined;
    }
    return parseGroup(group, raw[group], `${where}.${group}`, where, depth, state);
  }
  return parseCondition(raw, keys, where, state);
}

function parseGroup(
  kind: "all" | "any" | "not",
  raw: unknown,
  at: string,
  where: string,
  depth: number,
  state: ParseState,
): Filter | undefined {
  const { problems } = state;
  if (depth + 1 > MAX_FILTER_DEPTH) {
    problems.push(
      `${where}: filters nest more than ${MAX_FILTER_DEPTH} groups deep; flatten them (conditions ` +
        "side by side in one `all` or `any` need no extra level)",
    );
    return undefined;
  }
  if (kind === "not") {
    const inner = parseNode(raw, at, depth + 1, state);
    return inner && { not: inner };
  }
  if (!Array.isArray(raw)) {
    problems.push(`${at}: \`${kind}\` takes a list of filters, not ${describe(raw)}`);
    return undefined;
  }
  const filters: Filter[] = [];
  raw.forEach((item, index) => {
    const parsed = parseNode(item, `${at}[${index}]`, depth + 1, state);
    if (parsed) filters.push(parsed);
  });
  return kind === "all" ? { all: filters } : { any: filters };
}

function parseCondition(
  raw: Record<string, unknown>,
  keys: string[],
  where: string,
  state: ParseState,
): FilterCondition | undefined {
  const { problems } = state;
  const before = problems.length;
  const unknown = keys.filter((key) => key !== "field" && !isOperator(key));
  for (const key of unknown) {
    const hint = suggest(key);
    problems.push(
      `${where}: unknown key '${key}'${hint ? ` (did you mean '${hint}'?)` : ""}; a condition ` +
        `has \`field\` and one operator of: ${OPERATOR_LIST}; a group is \`all\`, \`any\` or \`not\``,
    );
  }
  const operators = keys.filter(isOperator);
  if (operators.length > 1) {
    problems.push(
      `${where}: one condition has one operator, this one has ${operators.join(" and ")}; ` +
        "split it into conditions of their own in a list (all must match) or an `any` group",
    );
  } else if (operators.length === 0 && unknown.length === 0) {
    problems.push(`${where}: the condition has no operator; add one of: ${OPERATOR_LIST}`);
  }
  const field = checkField(raw.field, where, problems);
  if (problems.length > before || field === undefined) return undefined;
  const op = operators[0];
  const value = raw[op];
  switch (op) {
    case "exists":
    case "missing":
      if (value === true) return { field, op };
      problems.push(
        `${where}: \`${op}\` takes true` +
          (value === false
            ? `; write \`${op === "exists" ? "missing" : "exists"}: true\` for the opposite`
            : `, not ${describe(value)}`),
      );
      return undefined;
    case "equals":
    case "not_equals":
    case "contains": {
      const inexact = inexactInteger(value);
      if (inexact === undefined) return { field, op, value };
      problems.push(inexactProblem(where, op, inexact));
      return undefined;
    }
    case "in": {
      if (Array.isArray(value)) {
        const inexact = inexactInteger(value);
        if (inexact === undefined) return { field, op, values: value };
        problems.push(inexactProblem(where, op, inexact));
        return undefined;
      }
      problems.push(
        `${where}: \`in\` takes a list of values, e.g. \`in: [opened, reopened]\`, not ` +
          describe(value) + (typeof value === "string" ? "; use `equals` for a single value" : ""),
      );
      return undefined;
    }
    case "in_file":
      if (typeof value === "string" && value.trim() !== "") {
        return { field, op, path: state.baseDir ? resolve(state.baseDir, value) : value };
      }
      problems.push(
        `${where}: \`in_file\` takes the path of a file with one value per line, not ${
          describe(value)
        }`,
      );
      return undefined;
    case "regex": {
      if (typeof value !== "string") {
        problems.push(
          `${where}: \`regex\` takes a regular expression as a string (quote it in YAML), not ${
            describe(value)
          }`,
        );
        return undefined;
      }
      const nested = nestedQuantifier(withoutInlineFlags(value).source);
      if (nested) {
        problems.push(
          `${where}: regex ${JSON.stringify(value)} ${nestedQuantifierProblem(nested)}`,
        );
        return undefined;
      }
      const regex = compile(value);
      if (typeof regex !== "string") return { field, op, pattern: value, regex };
      state.warnings.push(
        `${where}: ${invalidRegexWarning(field, value, regex)} (the route is served: its ` +
          "other conditions still decide)",
      );
      return { field, op, pattern: value, invalid: regex };
    }
  }
}

function checkField(raw: unknown, where: string, problems: string[]): string | undefined {
  if (raw === undefined) {
    problems.push(
      `${where}: the condition has no \`field\`; add the dot path it tests, e.g. ` +
        "`field: pull_request.state`, `field: event` or `field: headers.x-github-event`",
    );
    return undefined;
  }
  if (typeof raw !== "string" || raw.trim() === "") {
    problems.push(
      `${where}: \`field\` is a dot path such as \`repository.name\`, not ${describe(raw)}`,
    );
    return undefined;
  }
  const segments = raw.split(".");
  if (segments.some((segment) => segment === "")) {
    problems.push(
      `${where}: field '${raw}' has an empty segment; separate names with single dots, e.g. ` +
        "`commits.0.id`",
    );
    return undefined;
  }
  if ((segments[0] === "event" || segments[0] === "event_type") && segments.length > 1) {
    problems.push(
      `${where}: field '${raw}': \`${segments[0]}\` is the event name and has no fields; to test ` +
        `a payload field of that name write \`payload.${raw}\``,
    );
    return undefined;
  }
  if (segments[0] === "headers" && segments.length === 1) {
    problems.push(`${where}: field 'headers' needs a header name, e.g. \`headers.x-github-event\``);
    return undefined;
  }
  return raw;
}

function isOperator(key: string): key is FilterOperator {
  return (FILTER_OPERATORS as readonly string[]).includes(key);
}

function suggest(key: string): string | undefined {
  const lower = key.toLowerCase();
  if (isOperator(lower) || lower === "field") return lower;
  const alias = OPERATOR_ALIASES[lower] ?? GROUP_ALIASES[lower];
  if (alias) return alias;
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of [...FILTER_OPERATORS, ...GROUP_KEYS, "field"]) {
    const distance = editDistance(lower, candidate);
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        previous[j] + 1,
        current[j - 1] + 1,
        previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length];
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  if (typeof value === "string") return `the string ${JSON.stringify(value)}`;
  return `${typeof value} ${String(value)}`;
}

// --- evaluation -----------------------------------------------------------------------------

interface EvalContext {
  input: FilterInput;
  warn: (message: string) => void;
  lookup: (path: string) => Set<string> | undefined;
}

function evaluate(filter: Filter, context: EvalContext, depth: number): boolean {
  if ("all" in filter || "any" in filter || "not" in filter) {
    if (depth + 1 > MAX_FILTER_DEPTH) {
      context.warn(
        `filter groups nest more than ${MAX_FILTER_DEPTH} deep; the filter does not match ` +
          "(flatten the route's filters)",
      );
      return false;
    }
    if ("all" in filter) return filter.all.every((inner) => evaluate(inner, context, depth + 1));
    if ("any" in filter) return filter.any.some((inner) => evaluate(inner, context, depth + 1));
    return !evaluate(filter.not, context, depth + 1);
  }
  return test(filter, resolveField(filter.field, context.input), context);
}

function test(condition: FilterCondition, value: unknown, context: EvalContext): boolean {
  switch (condition.op) {
    case "exists":
      return value !== undefined;
    case "missing":
      return value === undefined;
    case "equals":
      return value !== undefined && looseEqual(value, condition.value);
    case "not_equals":
      return !(value !== undefined && looseEqual(value, condition.value));
    case "contains":
      if (typeof value === "string") {
        const needle = scalarText(condition.value);
        return needle !== undefined && value.includes(needle);
      }
      return Array.isArray(value) && value.some((item) => looseEqual(item, condition.value));
    case "in":
      return value !== undefined && condition.values.some((item) => looseEqual(value, item));
    case "in_file": {
      const text = scalarText(value);
      if (text === undefined) return false;
      const list = context.lookup(condition.path);
      if (list === undefined) {
        context.warn(
          `filter on '${condition.field}': cannot read the in_file list ${condition.path}; the ` +
            "condition is false until the file exists and is readable (one value per line)",
        );
        return false;
      }
      return list.has(text);
    }
    case "regex": {
      // Reported when the route was loaded: false, quietly, on every request.
      if (value === undefined || condition.invalid !== undefined) return false;
      // A condition built without parseFilters has no compiled pattern yet.
      const regex = condition.regex ?? compile(condition.pattern);
      if (typeof regex === "string") {
        context.warn(invalidRegexWarning(condition.field, condition.pattern, regex));
        return false;
      }
      const text = scalarText(value) ?? stringifyJsonExact(value);
      return regex.test(text.slice(0, MAX_REGEX_INPUT_CHARS));
    }
  }
}

function resolveField(field: string, input: FilterInput): unknown {
  const [first, ...rest] = field.split(".");
  if (first === "event" || first === "event_type") {
    return rest.length === 0 ? input.event : undefined;
  }
  if (first === "headers") {
    return rest.length === 0 ? undefined : header(input.headers, rest.join("."));
  }
  if (first === "payload") {
    const nested = isRecord(input.payload) ? input.payload.payload : undefined;
    return walk(isRecord(nested) ? nested : input.payload, rest);
  }
  return walk(input.payload, [first, ...rest]);
}

function walk(root: unknown, segments: readonly string[]): unknown {
  let value = root;
  for (const segment of segments) {
    if (Array.isArray(value)) {
      if (!/^\d+$/.test(segment)) return undefined;
      value = value[Number(segment)];
    } else if (isRecord(value)) {
      if (!Object.hasOwn(value, segment)) return undefined;
      value = value[segment];
    } else {
      return undefined;
    }
  }
  return value;
}

function header(headers: Headers | Record<string, string>, name: string): string | undefined {
  if (headers instanceof Headers) {
    try {
      return headers.get(name) ?? undefined;
    } catch {
      return undefined; // not a valid header name, so no such header
    }
  }
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === wanted) return value;
  }
  return undefined;
}

/** JSON equality, where scalars of different types are equal when their string forms are. */
function looseEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (isScalar(a) && isScalar(b)) return typeof a !== typeof b && String(a) === String(b);
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length &&
      a.every((item, index) => looseEqual(item, b[index]));
  }
  if (isRecord(a) && isRecord(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length &&
      keys.every((key) => Object.hasOwn(b, key) && looseEqual(a[key], b[key]));
  }
  return false;
}

/**
 * An integer in a filter's value that YAML or JSON already rounded (beyond 2^53 a number is not
 * exact: `1234567890123456789` reads as `1234567890123456768`), so it could never match the id
 * it was meant to; searched in lists and objects too.
 */
function inexactInteger(value: unknown, depth = 0): number | undefined {
  if (typeof value === "number") {
    return Number.isInteger(value) && !Number.isSafeInteger(value) ? value : undefined;
  }
  if (depth > 32 || typeof value !== "object" || value === null) return undefined;
  for (const item of Object.values(value)) {
    const found = inexactInteger(item, depth + 1);
    if (found !== undefined) return found;
  }
  return undefined;
}

function inexactProblem(where: string, op: string, value: number): string {
  return `${where}: \`${op}\` holds the number ${BigInt(value)}, too large to be exact (it is ` +
    `rounded when read); write it in quotes, as the payload's digits, e.g. \`${op}: ` +
    `"1234567890123456789"\` (numbers and strings compare by their digits)`;
}

function isScalar(value: unknown): value is string | number | boolean | bigint {
  const type = typeof value;
  return type === "string" || type === "number" || type === "boolean" || type === "bigint";
}

/** Strings as they are, numbers and booleans as printed; nothing for other values. */
function scalarText(value: unknown): string | undefined {
  return isScalar(value) ? String(value) : undefined;
}

function invalidRegexWarning(field: string, pattern: string, why: string): string {
  return `filter on '${field}': regex ${JSON.stringify(pattern)} ${why}; the condition is ` +
    "false until the pattern is fixed";
}

function compile(pattern: string): RegExp | string {
  const cached = regexCache.get(pattern);
  if (cached !== undefined) return cached;
  let compiled: RegExp | string;
  const { source, flags } = withoutInlineFlags(pattern);
  const nested = nestedQuantifier(source);
  if (nested) {
    compiled = nestedQuantifierProblem(nested);
  } else {
    try {
      compiled = new RegExp(source, flags);
    } catch (error) {
      compiled = `is not a valid JavaScript regular expression (${
        error instanceof Error ? error.message : String(error)
      })`;
    }
  }
  if (regexCache.size >= REGEX_CACHE_SIZE) regexCache.delete(regexCache.keys().next().value!);
  regexCache.set(pattern, compiled);
  return compiled;
}

/** `(?i)` and friends are how Python patterns (the reference's) set flags; JavaScript has flags. */
function withoutInlineFlags(pattern: string): { source: string; flags: string } {
  const inline = /^\(\?([ims]+)\)/.exec(pattern);
  return inline
    ? { source: pattern.slice(inline[0].length), flags: [...new Set(inline[1])].join("") }
    : { source: pattern, flags: "" };
}

function nestedQuantifierProblem(nested: string): string {
  return `is refused: its nested quantifier ${JSON.stringify(nested)} (a repeated group that ` +
    "itself holds a repetition) can take minutes on a short crafted value and stall the " +
    "gateway. Fix: repeat once, e.g. `(a+)+` → `a+`, `(\\w+\\s?)+` → `[\\w\\s]+`, or split the " +
    "test into several conditions";
}

/**
 * Finds a nested quantifier in a regular expression: a group repeated more than once (`*`, `+`,
 * `{n,}`, `{n,m}`) that holds a repetition of its own — the shape of most catastrophic
 * backtracking (`(a+)+$`, `(\w+\s?)*x`, `((ab)*c)+`). A group of a fixed count holding a
 * bounded repetition (`(\d{1,3}\.){3}`) passes. It is a heuristic: overlapping alternatives
 * (`(a|aa)+`) are not found, and a safe pattern such as `([a-z]+\.)+` is refused.
 *
 * @param source The pattern, without inline `(?i)` flags.
 * @returns The offending group and its quantifier, e.g. `(a+)+`, or `undefined`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nestedQuantifier } from "./filters.ts";
 * assert.equal(nestedQuantifier("(a+)+$"), "(a+)+");
 * assert.equal(nestedQuantifier("^(?:x|(\\w+\\s?))*!"), "(?:x|(\\w+\\s?))*");
 * assert.equal(nestedQuantifier("^(\\d{1,3}\\.){3}\\d{1,3}$"), undefined);
 * assert.equal(nestedQuantifier("[(a+)+]"), undefined);
 * ```
 */
export function nestedQuantifier(source: string): string | undefined {
  const stack: Group[] = [newGroup(0)];
  // What a quantifier here would repeat: a group (which may hold repetitions), a single atom, or
  // nothing (after `(` or `|`).
  let atom: Group | undefined;
  let i = 0;
  while (i < source.length) {
    const char = source[i];
    if (char === "\\") {
      atom = newGroup(i);
      i += 2;
    } else if (char === "[") {
      atom = newGroup(i);
      i = classEnd(source, i);
    } else if (char === "(") {
      stack.push(newGroup(i));
      atom = undefined;
      i = groupBodyStart(source, i);
    } else if (char === ")") {
      const group = stack.length > 1 ? stack.pop()! : newGroup(i);
      const outer = stack.at(-1)!;
      outer.repeats ||= group.repeats;
      outer.unbounded ||= group.unbounded;
      atom = group;
      i += 1;
    } else if (char === "|") {
      atom = undefined;
      i += 1;
    } else {
      const quantifier = readQuantifier(source, i);
      if (!quantifier) {
        atom = newGroup(i);
        i += 1;
        continue;
      }
      let end = i + quantifier.length;
      if (source[end] === "?") end += 1; // lazy: the same backtracking, in another order
      const { min, max } = quantifier;
      const varies = max > 1 && max > min;
      if (atom) {
        // `(a+)+`, `(a{1,3})*`; and `(a+){3}`, which tries every split of a run in three.
        if ((atom.repeats && varies) || (atom.unbounded && max > 1)) {
          return source.slice(atom.start, end);
        }
        if (varies) {
          const group = stack.at(-1)!;
          group.repeats = true;
          group.unbounded ||= max === Infinity;
        }
      }
      atom = undefined;
      i = end;
    }
  }
  return undefined;
}

/** A group of a pattern while {@linkcode nestedQuantifier} reads it. */
interface Group {
  start: number;
  /** It holds a repetition of a varying count (directly or in a group inside). */
  repeats: boolean;
  /** It holds a repetition without an upper bound. */
  unbounded: boolean;
}

function newGroup(start: number): Group {
  return { start, repeats: false, unbounded: false };
}

/** `*`, `+`, `?`, `{n}`, `{n,}` or `{n,m}` at `at`, with its bounds and length. */
function readQuantifier(
  source: string,
  at: number,
): { min: number; max: number; length: number } | undefined {
  const char = source[at];
  if (char === "*") return { min: 0, max: Infinity, length: 1 };
  if (char === "+") return { min: 1, max: Infinity, length: 1 };
  if (char === "?") return { min: 0, max: 1, length: 1 };
  if (char !== "{") return undefined;
  const braces = /^\{(\d+)(,(\d*))?\}/.exec(source.slice(at, at + 40));
  if (!braces) return undefined; // a literal `{`
  const min = Number(braces[1]);
  const max = braces[2] === undefined ? min : braces[3] === "" ? Infinity : Number(braces[3]);
  return { min, max, length: braces[0].length };
}

/** The index after the character class opened at `at`. */
function classEnd(source: string, at: number): number {
  let i = at + 1;
  while (i < source.length && source[i] !== "]") i += source[i] === "\\" ? 2 : 1;
  return i + 1;
}

/** The index after `(` and its `?:`, `?=`, `?!`, `?<=`, `?<!`, `?<name>` or `?i:` prefix. */
function groupBodyStart(source: string, at: number): number {
  const prefix = /^\(\?(?:[:=!]|<[=!]|<[^>]*>|[a-zA-Z-]*[:)])?/.exec(source.slice(at));
  return at + (prefix ? prefix[0].length : 1);
}

function readList(
  path: string,
  readFile: (path: string) => string | undefined,
): Set<string> | undefined {
  let text: string | undefined;
  try {
    text = readFile(path);
  } catch {
    return undefined;
  }
  if (text === undefined) return undefined;
  return new Set(
    text.split(/\r?\n/).map((line) => line.trim()).filter((line) =>
      line !== "" && !line.startsWith("#")
    ),
  );
}

function readTextFile(path: string): string | undefined {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
