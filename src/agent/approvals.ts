/**
 * The approval surface: one interface through which a run asks the user before something
 * sensitive happens (a write-capable call of an untrusted MCP server now; elicitation and
 * sampling requests later). At a terminal the user is asked with a timeout; where nobody can be
 * asked (the gateway, a piped `agent run`) the `approvals.gateway` policy answers.
 *
 * @module
 */
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
}

/**
 * Answers every request from a fixed policy: `deny` (the default) or `allow`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PolicyApprovals } from "./approvals.ts";
 * const surface = new PolicyApprovals("deny");
 * assert(await surface.approve({ kind: "tool_call", summary: "x" }) === "denied");
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
}

/** Reads one answer line; resolves `null` at end of input. Must stop when `signal` aborts. */
export type AskLine = (question: string, signal: AbortSignal) => Promise<string | null>;

/**
 * Asks at a terminal: the request is shown, and `y`/`yes` approves this one call; anything else
 * denies; no answer within the timeout is `timed_out`. Requests that arrive together (parallel
 * tool calls) are asked one after the other.
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
    this.#ask = ask;
    this.#timeoutMs = options.timeoutMs;
    this.#write = options.write;
  }

  approve(
    request: ApprovalRequest,
    options: { signal?: AbortSignal } = {},
  ): Promise<ApprovalDecision> {
    const turn = this.#queue.then(() => this.#askOnce(request, options.signal));
    this.#queue = turn.catch(() => {});
    return turn;
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

function indent(text: string): string {
  return text.split("\n").map((line) => `    ${line}`).join("\n");
}
