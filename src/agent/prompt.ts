/**
 * The system prompt of a run: what the agent is, the user's extra instructions
 * (`agent.system_prompt`), and the skills loaded for the run.
 *
 * @module
 */
import type { Skill } from "./skills.ts";

const BASE_PROMPT =
  "You are an agent running on the user's own machine. Answer the user's request. When a tool " +
  "helps, call it; tool results come back as tool messages. When a tool call was not approved or " +
  "failed, say so instead of pretending it succeeded. Reply with the final answer only when you " +
  "are done.";

/**
 * Builds the system prompt.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { buildSystemPrompt } from "./prompt.ts";
 * const prompt = buildSystemPrompt({
 *   extra: "Answer in French.",
 *   skills: [{ name: "triage", description: "Label issues", body: "Steps…", path: "", digest: "" }],
 * });
 * assert(prompt.includes("Answer in French.") && prompt.includes("## Skill: triage"));
 * ```
 */
export function buildSystemPrompt(
  options: { extra?: string; skills?: readonly Skill[] } = {},
): string {
  const parts = [BASE_PROMPT];
  if (options.extra) parts.push(options.extra);
  const skills = options.skills ?? [];
  if (skills.length > 0) {
    parts.push("# Skills\nFollow these skills where they apply.");
    for (const skill of skills) {
      const heading = `## Skill: ${skill.name}` +
        (skill.description ? `\n${skill.description}` : "");
      parts.push(skill.body ? `${heading}\n\n${skill.body}` : heading);
    }
  }
  return parts.join("\n\n");
}
