/**
 * Skills: `<home>/skills/<name>/SKILL.md`, markdown with YAML front matter (`name`,
 * `description`), loaded by name into a run's system prompt. A skill that is missing or broken
 * is a warning: the run goes on without it.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { parse } from "yaml";

/** A skill loaded for a run. */
export interface Skill {
  /** The name it was asked for (its folder name). */
  name: string;
  /** `description` of the front matter, or empty. */
  description: string;
  /** The markdown after the front matter. */
  body: string;
  /** The file it came from. */
  path: string;
  /** sha256 of the file, to notice edits between uses. */
  digest: string;
}

/** The skills found, and what the user should hear about the others. */
export interface SkillLoad {
  skills: Skill[];
  warnings: string[];
  /** The names of the skills not loaded, one per warning, in the same order. */
  notLoaded: string[];
}

/** A skill's name: its folder under `<home>/skills/` (never a path: no `/`, no leading `.`). */
const SKILL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const MAX_SKILL_BYTES = 256 * 1024;

/**
 * Why some of `names` can never be skills (`../etc`, `a/b`), or `undefined` when each is a valid
 * name. Commands refuse such names (usage error) rather than warn at every run.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { skillNameProblem } from "./skills.ts";
 * assert.equal(skillNameProblem(["triage", "review.v2"], "/h/skills"), undefined);
 * assert.match(skillNameProblem(["../etc"], "/h/skills")!, /^"\.\.\/etc" is not a skill name/);
 * ```
 */
export function skillNameProblem(names: readonly string[], skillsDir: string): string | undefined {
  const bad = names.filter((name) => !SKILL_NAME.test(name));
  if (bad.length === 0) return undefined;
  return `${bad.map((name) => JSON.stringify(name)).join(", ")} ${
    bad.length === 1 ? "is not a skill name" : "are not skill names"
  }: a skill is a folder under ${skillsDir} named with 1 to 64 letters, digits, '.', '_' and ` +
    "'-', starting with a letter or digit";
}
const FRONT_MATTER = /^---[ \t]*\r?\n(?:([\s\S]*?)\r?\n)?---[ \t]*(?:\r?\n|$)/;

/**
 * Loads the named skills from `skillsDir`, in the order given, each once.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { loadSkills } from "./skills.ts";
 * const dir = await Deno.makeTempDir();
 * Deno.mkdirSync(`${dir}/triage`);
 * Deno.writeTextFileSync(
 *   `${dir}/triage/SKILL.md`,
 *   "---\nname: triage\ndescription: Label new issues\n---\nRead the issue, then label it.\n",
 * );
 * const { skills, warnings, notLoaded } = loadSkills(dir, ["triage", "missing"]);
 * assert(skills[0].description === "Label new issues");
 * assert(warnings[0].includes("missing") && notLoaded[0] === "missing");
 * ```
 */
export function loadSkills(skillsDir: string, names: readonly string[]): SkillLoad {
  const skills: Skill[] = [];
  const warnings: string[] = [];
  const notLoaded: string[] = [];
  for (const name of new Set(names.map((n) => n.trim()).filter((n) => n !== ""))) {
    const loaded = SKILL_NAME.test(name)
      ? readSkill(name, join(skillsDir, name, "SKILL.md"))
      : `skill '${name}' was not loaded: a skill name is a folder name under ${skillsDir} ` +
        "(letters, digits, '.', '_', '-')";
    if (typeof loaded !== "string") {
      skills.push(loaded);
      continue;
    }
    warnings.push(loaded);
    notLoaded.push(name);
  }
  return { skills, warnings, notLoaded };
}

/**
 * Names of the skills in `skillsDir` (folders holding a `SKILL.md`), sorted.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { listSkills } from "./skills.ts";
 * assert(listSkills("/nonexistent").length === 0);
 * ```
 */
export function listSkills(skillsDir: string): string[] {
  const names: string[] = [];
  try {
    for (const entry of Deno.readDirSync(skillsDir)) {
      if (!SKILL_NAME.test(entry.name)) continue;
      try {
        if (Deno.statSync(join(skillsDir, entry.name, "SKILL.md")).isFile) names.push(entry.name);
      } catch { /* a folder without SKILL.md is not a skill */ }
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return names.sort();
}

function readSkill(name: string, path: string): Skill | string {
  let bytes: Uint8Array;
  try {
    const info = Deno.statSync(path);
    if (!info.isFile) return `skill '${name}' was not loaded: ${path} is not a file`;
    if (info.size > MAX_SKILL_BYTES) {
      return `skill '${name}' was not loaded: ${path} is larger than ${MAX_SKILL_BYTES / 1024} KiB`;
    }
    bytes = Deno.readFileSync(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      return `skill '${name}' was not found (expected ${path}); the run goes on without it`;
    }
    return `skill '${name}' was not loaded: ${error instanceof Error ? error.message : error}`;
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes).replace(/^\uFEFF/, "");
  } catch {
    return `skill '${name}' was not loaded: ${path} is not UTF-8 text`;
  }
  let description = "";
  let body = text;
  const match = FRONT_MATTER.exec(text);
  if (match) {
    let meta: unknown;
    try {
      meta = parse(match[1] ?? "");
    } catch (error) {
      const reason = error instanceof Error ? error.message.split("\n")[0] : String(error);
      return `skill '${name}' was not loaded: the front matter of ${path} is not valid YAML (${reason})`;
    }
    if (meta !== null && (typeof meta !== "object" || Array.isArray(meta))) {
      return `skill '${name}' was not loaded: the front matter of ${path} must be a mapping ` +
        "with name and description";
    }
    const fields = (meta ?? {}) as Record<string, unknown>;
    if (typeof fields.description === "string") description = fields.description.trim();
    body = text.slice(match[0].length);
  }
  return {
    name,
    description,
    body: body.trim(),
    path,
    digest: createHash("sha256").update(bytes).digest("hex"),
  };
}
