/**
 * MCP elicitation (SPEC "Events" 4, decisions.md §5 "Trust"): a server asks the user for input
 * in the middle of a request. Form-mode requests go to a {@linkcode FormCollector} (the approval
 * surface: a terminal asks field by field, the gateway declines); URL-mode requests are declined;
 * a form still unanswered after `elicitation.timeout` is answered `cancel`, as the MCP spec
 * defines a dismissal without an explicit choice.
 *
 * The requested schema is read once into {@linkcode FormField}s; answers typed at a terminal are
 * parsed and checked against them ({@linkcode parseFieldAnswer}), and every accepted form gets the
 * schema's defaults for the fields left empty ({@linkcode withDefaults}, SEP-1034).
 *
 * Only form mode is declared ({@linkcode elicitationCapability}), so a compliant server never
 * sends a URL-mode request; one that does is refused by the SDK before it gets here, and
 * {@linkcode answerElicitation} declines any that still arrives.
 *
 * @module
 */
import type {
  ElicitRequestFormParams,
  ElicitRequestParams,
  ElicitResult,
  PrimitiveSchemaDefinition,
  StringSchema,
} from "@modelcontextprotocol/client";
import type { ElicitationSettings } from "./config.ts";

/** A value one form field can take. */
export type FieldValue = string | number | boolean | string[];

/** One choice of an enum field: the value sent, and the label shown. */
export interface FieldOption {
  value: string;
  label: string;
}

/** Formats a string field may require (the MCP elicitation subset of JSON Schema). */
export type StringFormat = "email" | "uri" | "date" | "date-time";

/** One field of a form, read from the requested schema's `properties`. */
export type FormField =
  & {
    /** The property name (the key in the answer). */
    name: string;
    /** What to call the field (the schema's `title`, else the name). */
    label: string;
    description?: string;
    required: boolean;
    /** The schema's `default`, used when the field is left empty. */
    default?: FieldValue;
  }
  & (
    | { type: "string"; format?: StringFormat; minLength?: number; maxLength?: number }
    | { type: "number" | "integer"; minimum?: number; maximum?: number }
    | { type: "boolean" }
    | { type: "enum"; options: FieldOption[] }
    | { type: "multi_enum"; options: FieldOption[]; minItems?: number; maxItems?: number }
  );

/** A form to fill in: who asks, why, and the fields. */
export interface ElicitationForm {
  /** The MCP server asking. */
  server: string;
  /** The server's explanation of what it needs. */
  message: string;
  fields: FormField[];
  /** Seconds before the request is cancelled when nobody answers. */
  timeoutSeconds: number;
}

/** The user's answer to a form. `content` of an accepted form holds checked values only. */
export type FormAnswer =
  | { action: "accept"; content: Record<string, FieldValue> }
  | { action: "decline" }
  | { action: "cancel" };

/**
 * Fills in forms: the approval surface. A collector without `collectForm` declines every form.
 * An aborted `signal` (the timeout, or the server cancelling) must end the collection.
 */
export interface FormCollector {
  collectForm?(form: ElicitationForm, options?: { signal?: AbortSignal }): Promise<FormAnswer>;
}

/** How one elicitation request ended, for logs (never the values). */
export interface ElicitationOutcome {
  server: string;
  mode: "form" | "url";
  action: ElicitResult["action"];
  /**
   * `answered` (the collector's answer), `url_mode` (declined), `no_form_support` (the collector
   * cannot fill forms), `timeout`, `cancelled` (the server withdrew the request), `invalid` (the
   * collector's content broke the schema), `failed` (the collector threw).
   */
  reason:
    | "answered"
    | "url_mode"
    | "no_form_support"
    | "timeout"
    | "cancelled"
    | "invalid"
    | "failed";
  /** What went wrong, for `invalid` and `failed`. */
  detail?: string;
}

/** Options of {@linkcode answerElicitation}. */
export interface AnswerElicitationOptions {
  /** The server asking. */
  server: string;
  /** `elicitation.timeout` of the server. */
  timeoutSeconds: number;
  /** Who fills in the form. */
  collector: FormCollector;
  /** Aborted when the server cancels the request. */
  signal?: AbortSignal;
  /** Told how the request ended. */
  onOutcome?: (outcome: ElicitationOutcome) => void;
}

/**
 * The client capability declared for elicitation: form mode only (URL mode is declined).
 *
 * @returns A fresh capability object.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { elicitationCapability } from "./elicitation.ts";
 *
 * assert.deepEqual(elicitationCapability(), { form: {} });
 * ```
 */
export function elicitationCapability(): { form: Record<string, never> } {
  return { form: {} };
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const URI_SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4}-\d{2}-\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const DECIMAL = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$/i;
const YES = ["y", "yes", "true", "1", "on"];
const NO = ["n", "no", "false", "0", "off"];

/**
 * Reads a form request's `requestedSchema` into fields, in property order.
 *
 * @param schema The `requestedSchema` of a form-mode request.
 * @returns One field per property.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { formFields } from "./elicitation.ts";
 *
 * const fields = formFields({
 *   type: "object",
 *   properties: {
 *     name: { type: "string", title: "Your name", default: "Ada" },
 *     status: { type: "string", enum: ["active", "inactive"] },
 *   },
 *   required: ["status"],
 * });
 * assert.equal(fields[0].label, "Your name");
 * assert.equal(fields[0].default, "Ada");
 * assert.equal(fields[1].type, "enum");
 * assert.equal(fields[1].required, true);
 * ```
 */
export function formFields(schema: ElicitRequestFormParams["requestedSchema"]): FormField[] {
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties).map(([name, property]) =>
    fieldOf(name, property, required.has(name))
  );
}

function fieldOf(name: string, property: PrimitiveSchemaDefinition, required: boolean): FormField {
  const base = {
    name,
    label: property.title?.trim() || name,
    ...(property.description ? { description: property.description } : {}),
    required,
    ...(property.default === undefined ? {} : { default: property.default as FieldValue }),
  };
  if (property.type === "boolean") return { ...base, type: "boolean" };
  if (property.type === "number" || property.type === "integer") {
    return {
      ...base,
      type: property.type,
      ...(property.minimum === undefined ? {} : { minimum: property.minimum }),
      ...(property.maximum === undefined ? {} : { maximum: property.maximum }),
    };
  }
  if (property.type === "array") {
    const items = property.items;
    const options = "enum" in items
      ? items.enum.map((value) => ({ value, label: value }))
      : items.anyOf.map((option) => ({ value: option.const, label: option.title }));
    return {
      ...base,
      type: "multi_enum",
      options,
      ...(property.minItems === undefined ? {} : { minItems: property.minItems }),
      ...(property.maxItems === undefined ? {} : { maxItems: property.maxItems }),
    };
  }
  if ("oneOf" in property) {
    return {
      ...base,
      type: "enum",
      options: property.oneOf.map((option) => ({ value: option.const, label: option.title })),
    };
  }
  if ("enum" in property) {
    const names = "enumNames" in property ? property.enumNames : undefined;
    return {
      ...base,
      type: "enum",
      options: property.enum.map((value, index) => ({ value, label: names?.[index] ?? value })),
    };
  }
  const text = property as StringSchema;
  return {
    ...base,
    type: "string",
    ...(text.format === undefined ? {} : { format: text.format }),
    ...(text.minLength === undefined ? {} : { minLength: text.minLength }),
    ...(text.maxLength === undefined ? {} : { maxLength: text.maxLength }),
  };
}

/**
 * What a field expects, in words, for a prompt: `integer from 0 to 120`, `yes or no`, …
 *
 * @param field The field.
 * @returns A short description.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { describeField } from "./elicitation.ts";
 *
 * assert.equal(
 *   describeField({ name: "age", label: "age", required: true, type: "integer", minimum: 0 }),
 *   "whole number, at least 0",
 * );
 * ```
 */
export function describeField(field: FormField): string {
  switch (field.type) {
    case "boolean":
      return "yes or no";
    case "number":
    case "integer": {
      const kind = field.type === "integer" ? "whole number" : "number";
      return [kind, ...range(field.minimum, field.maximum, "at least", "at most")].join(", ");
    }
    case "enum":
      return `one of: ${field.options.map((option, i) => `${i + 1}) ${option.label}`).join(", ")}`;
    case "multi_enum":
      return [
        `any of: ${
          field.options.map((option, i) => `${i + 1}) ${option.label}`).join(", ")
        } (comma-separated)`,
        ...range(field.minItems, field.maxItems, "at least", "at most").map((text) =>
          `${text} item(s)`
        ),
      ].join(", ");
    case "string": {
      const format = field.format === undefined ? "text" : {
        email: "email address",
        uri: "URI such as https://example.com",
        date: "date as YYYY-MM-DD",
        "date-time": "date and time as YYYY-MM-DDTHH:MM:SSZ",
      }[field.format];
      return [
        format,
        ...range(field.minLength, field.maxLength, "at least", "at most")
          .map((text) => `${text} characters`),
      ].join(", ");
    }
  }
}

function range(min: number | undefined, max: number | undefined, low: string, high: string) {
  return [
    ...(min === undefined ? [] : [`${low} ${min}`]),
    ...(max === undefined ? [] : [`${high} ${max}`]),
  ];
}

/**
 * Parses what a person typed for `field`. An empty answer takes the field's default, or leaves
 * an optional field out (`value: undefined`); a required field without default needs a value.
 * Enum choices may be given by value, label or 1-based number; `yes`/`no` answer booleans.
 *
 * @param field The field asked.
 * @param text The answer as typed.
 * @returns The value, or an error saying what is expected.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseFieldAnswer } from "./elicitation.ts";
 *
 * const age = { name: "age", label: "Age", required: true, type: "integer", default: 30 } as const;
 * assert.deepEqual(parseFieldAnswer(age, ""), { value: 30 });
 * assert.deepEqual(parseFieldAnswer(age, "41"), { value: 41 });
 * assert.ok("error" in parseFieldAnswer(age, "4.5"));
 * ```
 */
export function parseFieldAnswer(
  field: FormField,
  text: string,
): { value: FieldValue | undefined } | { error: string } {
  const typed = text.trim();
  if (typed === "") {
    if (field.default !== undefined) return { value: field.default };
    return field.required ? { error: `${field.label} is required` } : { value: undefined };
  }
  let value: FieldValue | undefined;
  switch (field.type) {
    case "string":
      value = text.trim();
      break;
    case "number":
    case "integer":
      if (DECIMAL.test(typed)) value = Number(typed);
      break;
    case "boolean": {
      const lower = typed.toLowerCase();
      value = YES.includes(lower) ? true : NO.includes(lower) ? false : undefined;
      break;
    }
    case "enum":
      value = choose(field.options, typed);
      break;
    case "multi_enum": {
      const chosen = typed.split(",").map((part) => part.trim()).filter((part) => part !== "")
        .map((part) => choose(field.options, part));
      if (chosen.every((item) => item !== undefined)) value = [...new Set(chosen as string[])];
      break;
    }
  }
  if (value === undefined) return { error: `${field.label}: expected ${describeField(field)}` };
  const problem = checkFieldValue(field, value);
  return problem === undefined ? { value } : { error: problem };
}

function choose(options: readonly FieldOption[], typed: string): string | undefined {
  const lower = typed.toLowerCase();
  const found = options.find((option) => option.value === typed) ??
    options.find((option) =>
      option.value.toLowerCase() === lower || option.label.toLowerCase() === lower
    );
  if (found) return found.value;
  const index = /^\d+$/.test(typed) ? Number(typed) : NaN;
  return index >= 1 && index <= options.length ? options[index - 1].value : undefined;
}

/**
 * Checks a value against its field (type, format, length, range, choices).
 *
 * @param field The field.
 * @param value The value to check.
 * @returns What is wrong, or `undefined` when the value fits.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkFieldValue } from "./elicitation.ts";
 *
 * const email = { name: "email", label: "Email", required: true, type: "string", format: "email" } as const;
 * assert.equal(checkFieldValue(email, "ada@example.com"), undefined);
 * assert.equal(checkFieldValue(email, "ada"), "Email: expected email address");
 * ```
 */
export function checkFieldValue(field: FormField, value: unknown): string | undefined {
  const expected = `${field.label}: expected ${describeField(field)}`;
  switch (field.type) {
    case "string": {
      if (typeof value !== "string") return expected;
      const length = [...value].length;
      if (field.minLength !== undefined && length < field.minLength) return expected;
      if (field.maxLength !== undefined && length > field.maxLength) return expected;
      if (field.format !== undefined && !hasFormat(value, field.format)) return expected;
      return undefined;
    }
    case "number":
    case "integer":
      if (typeof value !== "number" || !Number.isFinite(value)) return expected;
      if (field.type === "integer" && !Number.isInteger(value)) return expected;
      if (field.minimum !== undefined && value < field.minimum) return expected;
      if (field.maximum !== undefined && value > field.maximum) return expected;
      return undefined;
    case "boolean":
      return typeof value === "boolean" ? undefined : expected;
    case "enum":
      return field.options.some((option) => option.value === value) ? undefined : expected;
    case "multi_enum": {
      if (!Array.isArray(value)) return expected;
      const known = value.every((item) => field.options.some((option) => option.value === item));
      if (!known) return expected;
      if (field.minItems !== undefined && value.length < field.minItems) return expected;
      if (field.maxItems !== undefined && value.length > field.maxItems) return expected;
      return undefined;
    }
  }
}

function hasFormat(value: string, format: StringFormat): boolean {
  switch (format) {
    case "email":
      return EMAIL.test(value);
    case "uri":
      if (!URI_SCHEME.test(value)) return false;
      try {
        new URL(value);
        return true;
      } catch {
        return false;
      }
    case "date":
      return isCalendarDate(value);
    case "date-time": {
      const match = DATE_TIME.exec(value);
      return match !== null && isCalendarDate(match[1]) && Number(match[2]) < 24 &&
        Number(match[3]) < 60 && Number(match[4]) < 61;
    }
  }
}

function isCalendarDate(text: string): boolean {
  const match = DATE.exec(text);
  if (!match) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 &&
    date.getUTCDate() === day;
}

/**
 * Fills the fields missing from `content` with their schema defaults (SEP-1034). Keys that are
 * not fields of the form are dropped, so nothing but what the server asked for is sent.
 *
 * @param fields The form's fields.
 * @param content The values given.
 * @returns A new object: the given values, then the defaults of the fields left out.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { withDefaults } from "./elicitation.ts";
 *
 * const fields = [
 *   { name: "name", label: "name", required: false, type: "string", default: "Ada" },
 *   { name: "verified", label: "verified", required: false, type: "boolean", default: true },
 * ] as const;
 * assert.deepEqual(withDefaults([...fields], { name: "Grace", extra: 1 }), {
 *   name: "Grace",
 *   verified: true,
 * });
 * ```
 */
export function withDefaults(
  fields: readonly FormField[],
  content: Record<string, unknown>,
): Record<string, FieldValue> {
  const filled: [string, FieldValue][] = [];
  for (const field of fields) {
    const given = Object.hasOwn(content, field.name) ? content[field.name] : undefined;
    if (given !== undefined && given !== null) filled.push([field.name, given as FieldValue]);
    else if (field.default !== undefined) filled.push([field.name, field.default]);
  }
  return Object.fromEntries(filled);
}

/**
 * A collector that answers without asking anyone: it accepts every form with the schema's
 * defaults when each required field has one, and declines otherwise. For unattended clients
 * that trust their servers' defaults (the conformance suite's SEP-1034 scenario).
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { acceptDefaults, formFields } from "./elicitation.ts";
 *
 * const answer = await acceptDefaults.collectForm({
 *   server: "s",
 *   message: "Who are you?",
 *   fields: formFields({ type: "object", properties: { name: { type: "string", default: "Ada" } } }),
 *   timeoutSeconds: 300,
 * });
 * assert.deepEqual(answer, { action: "accept", content: { name: "Ada" } });
 * ```
 */
export const acceptDefaults: Required<FormCollector> = {
  collectForm(form) {
    const missing = form.fields.some((field) => field.required && field.default === undefined);
    return Promise.resolve(
      missing
        ? { action: "decline" }
        : { action: "accept", content: withDefaults(form.fields, {}) },
    );
  },
};

/**
 * Answers one `elicitation/create` request: URL mode → `decline`; form mode → the collector's
 * answer, with defaults filled in and every value checked; no answer within `timeoutSeconds`, or
 * the server cancelling, → `cancel`. Never throws.
 *
 * @param params The request's parameters.
 * @param options The server, its timeout, the collector.
 * @returns The result sent back to the server.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { acceptDefaults, answerElicitation } from "./elicitation.ts";
 *
 * const result = await answerElicitation({
 *   mode: "form",
 *   message: "Confirm the defaults",
 *   requestedSchema: { type: "object", properties: { age: { type: "integer", default: 30 } } },
 * }, { server: "s", timeoutSeconds: 300, collector: acceptDefaults });
 * assert.deepEqual(result, { action: "accept", content: { age: 30 } });
 *
 * const url = await answerElicitation({
 *   mode: "url",
 *   message: "Log in",
 *   url: "https://example.com/login",
 *   elicitationId: "e1",
 * }, { server: "s", timeoutSeconds: 300, collector: acceptDefaults });
 * assert.deepEqual(url, { action: "decline" });
 * ```
 */
export async function answerElicitation(
  params: ElicitRequestParams,
  options: AnswerElicitationOptions,
): Promise<ElicitResult> {
  const { server } = options;
  const end = (
    action: ElicitResult["action"],
    mode: ElicitationOutcome["mode"],
    reason: ElicitationOutcome["reason"],
    detail?: string,
  ): ElicitResult => {
    options.onOutcome?.({ server, mode, action, reason, ...(detail ? { detail } : {}) });
    return { action };
  };
  if (params.mode === "url") return end("decline", "url", "url_mode");
  const collector = options.collector;
  if (!collector.collectForm) return end("decline", "form", "no_form_support");
  const fields = formFields(params.requestedSchema);
  const form = { server, message: params.message, fields, timeoutSeconds: options.timeoutSeconds };

  const timeout = new AbortController();
  const timer = setTimeout(
    () => timeout.abort(new DOMException("elicitation timed out", "TimeoutError")),
    options.timeoutSeconds * 1000,
  );
  const signal = options.signal
    ? AbortSignal.any([timeout.signal, options.signal])
    : timeout.signal;
  let onAbort = () => {};
  const aborted = new Promise<"aborted">((resolve) => {
    onAbort = () => resolve("aborted");
    if (signal.aborted) resolve("aborted");
    else signal.addEventListener("abort", onAbort, { once: true });
  });
  let answer: FormAnswer | "aborted";
  try {
    // A collector that ignores the signal still cannot hold the request past the timeout.
    const collecting = collector.collectForm(form, { signal });
    collecting.catch(() => {});
    answer = await Promise.race([collecting, aborted]);
  } catch (error) {
    if (!signal.aborted) {
      return end(
        "cancel",
        "form",
        "failed",
        error instanceof Error ? error.message : String(error),
      );
    }
    answer = "aborted";
  } finally {
    clearTimeout(timer);
    signal.removeEventListener("abort", onAbort);
  }
  if (answer === "aborted" || signal.aborted) {
    return end("cancel", "form", timeout.signal.aborted ? "timeout" : "cancelled");
  }
  if (answer.action !== "accept") return end(answer.action, "form", "answered");
  const content = withDefaults(fields, answer.content);
  for (const field of fields) {
    const value = content[field.name];
    const problem = value === undefined
      ? (field.required ? `${field.label} is required` : undefined)
      : checkFieldValue(field, value);
    if (problem !== undefined) return end("cancel", "form", "invalid", problem);
  }
  options.onOutcome?.({ server, mode: "form", action: "accept", reason: "answered" });
  return { action: "accept", content };
}

/**
 * The `onElicitation` handler of a connection (see `ConnectOptions`): every request of a server
 * is answered by {@linkcode answerElicitation} with that server's `elicitation.timeout`.
 *
 * @param collector Who fills in forms.
 * @param onOutcome Told how each request ended.
 * @returns The handler.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { acceptDefaults, elicitationHandler } from "./elicitation.ts";
 *
 * const handle = elicitationHandler(acceptDefaults);
 * const result = await handle(
 *   { name: "s", elicitation: { enabled: true, timeoutSeconds: 300 } },
 *   { message: "OK?", requestedSchema: { type: "object", properties: {} } },
 *   new AbortController().signal,
 * );
 * assert.equal(result.action, "accept");
 * ```
 */
export function elicitationHandler(
  collector: FormCollector,
  onOutcome?: (outcome: ElicitationOutcome) => void,
): (
  server: { name: string; elicitation: ElicitationSettings },
  params: ElicitRequestParams,
  signal: AbortSignal,
) => Promise<ElicitResult> {
  return (server, params, signal) =>
    answerElicitation(params, {
      server: server.name,
      timeoutSeconds: server.elicitation.timeoutSeconds,
      collector,
      signal,
      onOutcome,
    });
}
