/**
 * The approval surface: one interface through which a run asks the user before something
 * sensitive happens (a write-capable call of an untrusted MCP server), and through which MCP
 * servers' elicitation forms are filled in. At a terminal the user is asked with a timeout;
 * where nobody can be asked (the gateway, a piped `agent run`) the `approvals.gateway` policy
 * answers approvals and every form is declined (decisions.md §5 "Trust").
 *
 * @module
 */
import { visibleLines } from "../home/text.ts";
import {
  describeField,
  type ElicitationForm,
  type FieldValue,
  type FormAnswer,
  type FormField,
  parseFieldAnswer,
} from "../mcp/elicitation.ts";
import type { ApprovalPolicy } from "./settings.ts";

/** The answer to an approval request. */
export type ApprovalDecision = "approved" | "denied" | "timed_out";

/** Something that needs the user's consent. */
export interface ApprovalRequest {
  /** What asks. */
  kind: "tool_call" | "elicitation" | "sampling";
  /** One line saying what would happen, e.g. `call tool write_note of MCP server 'notes'`. */
  summary: string;
  /** More detail shown under the summary, e.g. the arguments. */
  detail?: string;
  /** The MCP server asking, when there is one. */
  server?: string;
}

/** Answers approval requests. */
export interface ApprovalSurface {
  /** Whether a person answers (a terminal), rather than a policy. */
  readonly interactive: boolean;
  /** Asks; never throws for a timeout (that is `timed_out`). An aborted signal denies. */
  approve(request: ApprovalRequest, options?: { signal?: AbortSignal }): Promise<ApprovalDecision>;
  /**
   * Fills in an MCP elicitation form: `accept` with checked values, `decline`, or `cancel`. The
   * caller applies the schema defaults and the timeout (the signal aborts). A surface without
   * this method declines every form.
   */
  collectForm?(form: ElicitationForm, options?: { signal?: AbortSignal }): Promise<FormAnswer>;
}

/**
 * Answers every request from a fixed policy: `deny` (the default) or `allow`. Elicitation forms
 * are declined whatever the policy: nobody is there to fill them in.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PolicyApprovals } from "./approvals.ts";
 * const surface = new PolicyApprovals("allow");
 * assert(await surface.approve({ kind: "tool_call", summary: "x" }) === "approved");
 * const form = { server: "s", message: "Name?", fields: [], timeoutSeconds: 300 };
 * assert((await surface.collectForm(form)).action === "decline");
 * ```
 */
export class PolicyApprovals implements ApprovalSurface {
  readonly interactive = false;
  readonly policy: ApprovalPolicy;
  constructor(policy: ApprovalPolicy) {
    this.policy = policy;
  }
  approve(_request: ApprovalRequest): Promise<ApprovalDecision> {
    return Promise.resolve(this.policy === "allow" ? "approved" : "denied");
  }
  collectForm(_form: ElicitationForm): Promise<FormAnswer> {
    return Promise.resolve({ action: "decline" });
  }
}

/** Reads one answer line; resolves `null` at end of input. Must stop when `signal` aborts. */
export type AskLine = (question: string, signal: AbortSignal) => Promise<string | null>;

/**
 * Asks at a terminal: the request is shown, and `y`/`yes` approves this one call; anything else
 * denies; no answer within the timeout is `timed_out`. Requests that arrive together (parallel
 * tool calls) are asked one after the other.
 *
 * An elicitation form is shown with the server's message; `y` fills it in (`n` declines, anything
 * else cancels). Each field is asked with its title, description, type, choices and default; an
 * empty answer takes the default (or leaves an optional field out); a bad answer is explained and
 * asked again. The filled-in values are shown before `y` sends them (anything else declines). End
 * of input cancels; the caller's signal (the elicitation timeout) ends the questions.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PromptApprovals } from "./approvals.ts";
 * const shown: string[] = [];
 * const surface = new PromptApprovals(() => Promise.resolve("y"), {
 *   timeoutMs: 1000,
 *   write: (text) => shown.push(text),
 * });
 * const answer = await surface.approve({ kind: "tool_call", summary: "call tool rm" });
 * assert(answer === "approved" && shown.join("").includes("call tool rm"));
 * ```
 */
export class PromptApprovals implements ApprovalSurface {
  readonly interactive = true;
  readonly #ask: AskLine;
  readonly #timeoutMs: number;
  readonly #write: (text: string) => void;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(ask: AskLine, options: { timeoutMs: number; write: (text: string) => void }) {
    // What is shown comes in part from the model (a call's arguments) and from MCP servers (a
    // form's texts): escaped, so neither can hide or rewrite what the user is asked to approve.
    this.#ask = (question, signal) => ask(visibleLines(question), signal);
    this.#timeoutMs = options.timeoutMs;
    this.#write = (text) => options.write(visibleLines(text));
  }

  approve(
    request: ApprovalRequest,
    options: { signal?: AbortSignal } = {},
  ): Promise<ApprovalDecision> {
    const turn = this.#queue.then(() => this.#askOnce(request, options.signal));
    this.#queue = turn.catch(() => {});
    return turn;
  }

  collectForm(form: ElicitationForm, options: { signal?: AbortSignal } = {}): Promise<FormAnswer> {
    const turn = this.#queue.then(() => this.#fillIn(form, options.signal));
    this.#queue = turn.catch(() => {});
    return turn;
  }

  async #fillIn(form: ElicitationForm, signal?: AbortSignal): Promise<FormAnswer> {
    try {
      return await this.#askFields(form, signal);
    } catch (error) {
      if (!signal?.aborted) throw error;
      const timedOut = (signal.reason as { name?: unknown } | undefined)?.name === "TimeoutError";
      this.#write(
        timedOut
          ? `\nNo answer within ${form.timeoutSeconds} s: the form was cancelled.\n`
          : `\nMCP server '${form.server}' withdrew the form.\n`,
      );
      throw error;
    }
  }

  async #askFields(form: ElicitationForm, signal?: AbortSignal): Promise<FormAnswer> {
    const never = new AbortController().signal;
    const ask = (question: string) => {
      if (signal?.aborted) throw signal.reason;
      return this.#ask(question, signal ?? never);
    };
    this.#write(`\nMCP server '${form.server}' asks for information:\n${indent(form.message)}\n`);
    const fields = form.fields.map((field) =>
      `${field.label}${field.required ? " (required)" : ""}`
    );
    if (fields.length > 0) this.#write(`    Fields: ${fields.join(", ")}\n`);
    const start = await ask(
      `Fill in the form? [y = yes, n = decline, anything else cancels] ` +
        `(no answer in ${form.timeoutSeconds} s cancels) `,
    );
    const choice = start?.trim().toLowerCase() ?? "";
    if (choice === "n" || choice === "no") {
      this.#write("Declined.\n");
      return { action: "decline" };
    }
    if (choice !== "y" && choice !== "yes") {
      this.#write("Cancelled.\n");
      return { action: "cancel" };
    }
    const content: Record<string, FieldValue> = {};
    for (const field of form.fields) {
      this.#write(
        `\n  ${field.label}${field.required ? " (required)" : ""}: ${describeField(field)}\n`,
      );
      if (field.description) this.#write(`${indent(field.description)}\n`);
      for (;;) {
        const answer = await ask(`  ${field.label}${defaultHint(field)}: `);
        if (answer === null) {
          this.#write("\nCancelled.\n");
          return { action: "cancel" };
        }
        const parsed = parseFieldAnswer(field, answer);
        if ("error" in parsed) {
          this.#write(`    ${parsed.error}; try again\n`);
          continue;
        }
        if (parsed.value !== undefined) content[field.name] = parsed.value;
        break;
      }
    }
    this.#write(`\nSend to MCP server '${form.server}':\n`);
    for (const field of form.fields) {
      const value = content[field.name];
      this.#write(`    ${field.label}: ${value === undefined ? "(left out)" : showValue(value)}\n`);
    }
    const send = await ask("Send? [y/N] ");
    if (/^\s*(y|yes)\s*$/i.test(send ?? "")) {
      this.#write("Sent.\n");
      return { action: "accept", content };
    }
    this.#write("Declined.\n");
    return { action: "decline" };
  }

  async #askOnce(request: ApprovalRequest, signal?: AbortSignal): Promise<ApprovalDecision> {
    if (signal?.aborted) return "denied";
    const seconds = Math.round(this.#timeoutMs / 1000);
    this.#write(`\nApproval needed: ${request.summary}\n`);
    if (request.detail) this.#write(`${indent(request.detail)}\n`);
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    const both = signal ? AbortSignal.any([signal, timeout]) : timeout;
    let answer: string | null;
    try {
      answer = await this.#ask(`Approve once? [y/N] (no answer in ${seconds} s denies) `, both);
    } catch (error) {
      if (timeout.aborted && !signal?.aborted) {
        this.#write(`\nNo answer within ${seconds} s: not approved.\n`);
        return "timed_out";
      }
      if (signal?.aborted) return "denied";
      throw error;
    }
    const approved = /^\s*(y|yes)\s*$/i.test(answer ?? "");
    this.#write(approved ? "Approved once.\n" : "Not approved.\n");
    return approved ? "approved" : "denied";
  }
}

function defaultHint(field: FormField): string {
  return field.default === undefined ? "" : ` [${showValue(field.default)}]`;
}

function showValue(value: FieldValue): string {
  if (Array.isArray(value)) return value.join(", ");
  if (typeof value === "boolean") return value ? "yes" : "no";
  return String(value);
}

function indent(text: string): string {
  return text.split("\n").map((line) => `    ${line}`).join("\n");
}
