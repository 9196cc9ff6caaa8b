import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { buildSystemPrompt } from "../../src/agent/prompt.ts";
import { listSkills, loadSkills, type Skill } from "../../src/agent/skills.ts";

/** Runs `body` with a fresh temp folder and removes the folder afterwards. */
async function withTempDir<T>(body: (dir: string) => T | Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "skills-test-" });
  try {
    return await body(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Writes `<dir>/<name>/SKILL.md` and returns its path. */
function writeSkill(dir: string, name: string, content: string | Uint8Array): string {
  Deno.mkdirSync(join(dir, name), { recursive: true });
  const path = join(dir, name, "SKILL.md");
  if (typeof content === "string") Deno.writeTextFileSync(path, content);
  else Deno.writeFileSync(path, content);
  return path;
}

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

const TRIAGE = "---\nname: triage\ndescription:  Label new issues  \n---\n\nRead the issue.\n\n" +
  "Then label it.\n\n";

// --- loadSkills ----------------------------------------------------------------------------

Deno.test("loadSkills: front matter description, trimmed body, path and sha256 digest", async () => {
  await withTempDir((dir) => {
    const path = writeSkill(dir, "triage", TRIAGE);

    const { skills, warnings } = loadSkills(dir, ["triage"]);

    assert.deepEqual(warnings, []);
    assert.deepEqual(skills, [{
      name: "triage",
      description: "Label new issues",
      body: "Read the issue.\n\nThen label it.",
      path,
      digest: sha256(Deno.readFileSync(path)),
    }]);
    assert.match(skills[0].digest, /^[0-9a-f]{64}$/);
  });
});

Deno.test("loadSkills: the digest changes when the file changes", async () => {
  await withTempDir((dir) => {
    writeSkill(dir, "triage", TRIAGE);
    const before = loadSkills(dir, ["triage"]).skills[0].digest;
    const again = loadSkills(dir, ["triage"]).skills[0].digest;
    writeSkill(dir, "triage", TRIAGE.replace("label it", "label it twice"));
    const after = loadSkills(dir, ["triage"]).skills[0];

    assert.equal(again, before);
    assert.notEqual(after.digest, before);
    assert.match(after.body, /label it twice/);
  });
});

Deno.test("loadSkills: a file without front matter is all body, description empty", async () => {
  await withTempDir((dir) => {
    writeSkill(dir, "plain", "\n# Plain skill\n\nDo the thing.\n");

    const [skill] = loadSkills(dir, ["plain"]).skills;

    assert.equal(skill.description, "");
    assert.equal(skill.body, "# Plain skill\n\nDo the thing.");
  });
});

Deno.test("loadSkills: front matter without a string description → empty description", async () => {
  await withTempDir((dir) => {
    writeSkill(dir, "a", "---\nname: a\n---\nBody A\n");
    writeSkill(dir, "b", "---\ndescription: 42\n---\nBody B\n");
    writeSkill(dir, "c", "---\n\n---\nBody C\n");

    const { skills, warnings } = loadSkills(dir, ["a", "b", "c"]);

    assert.deepEqual(warnings, []);
    assert.deepEqual(skills.map((s) => [s.description, s.body]), [
      ["", "Body A"],
      ["", "Body B"],
      ["", "Body C"],
    ]);
  });
});

Deno.test({
  name: "loadSkills: an empty front matter block (---, ---) is not part of the body",
  fn: async () => {
    await withTempDir((dir) => {
      writeSkill(dir, "empty", "---\n---\nJust the body.\n");

      const [skill] = loadSkills(dir, ["empty"]).skills;

      assert.equal(skill.body, "Just the body.");
    });
  },
});

Deno.test("loadSkills: a UTF-8 BOM and CRLF line endings are handled", async () => {
  await withTempDir((dir) => {
    const path = writeSkill(
      dir,
      "win",
      "\uFEFF---\r\nname: win\r\ndescription: Written on Windows\r\n---\r\nLine 1\r\nLine 2\r\n",
    );

    const { skills, warnings } = loadSkills(dir, ["win"]);

    assert.deepEqual(warnings, []);
    assert.equal(skills[0].description, "Written on Windows");
    assert.deepEqual(skills[0].body.split(/\r?\n/), ["Line 1", "Line 2"]);
    assert.equal(skills[0].digest, sha256(Deno.readFileSync(path)));
  });
});

Deno.test("loadSkills: a BOM before a file without front matter is dropped", async () => {
  await withTempDir((dir) => {
    writeSkill(dir, "bom", "\uFEFFHello\n");

    assert.equal(loadSkills(dir, ["bom"]).skills[0].body, "Hello");
  });
});

Deno.test("loadSkills: a missing skill → warning with the name and expected path; others load", async () => {
  await withTempDir((dir) => {
    writeSkill(dir, "triage", TRIAGE);

    const { skills, warnings } = loadSkills(dir, ["ghost", "triage"]);

    assert.deepEqual(skills.map((s) => s.name), ["triage"]);
    assert.equal(warnings.length, 1);
    assert.ok(warnings[0].includes("'ghost'"), warnings[0]);
    assert.ok(warnings[0].includes(join(dir, "ghost", "SKILL.md")), warnings[0]);
    assert.match(warnings[0], /not found/);
  });
});

Deno.test("loadSkills: a folder without SKILL.md counts as missing", async () => {
  await withTempDir((dir) => {
    Deno.mkdirSync(join(dir, "empty"));

    const { skills, warnings } = loadSkills(dir, ["empty"]);

    assert.deepEqual(skills, []);
    assert.match(warnings[0], /skill 'empty' was not found/);
  });
});

Deno.test("loadSkills: invalid names are warned about and nothing outside the folder is read", async () => {
  await withTempDir((root) => {
    const dir = join(root, "skills");
    Deno.mkdirSync(dir);
    // Files an escaping name would reach.
    writeSkill(root, "x", "---\ndescription: outside\n---\nsecret\n");
    writeSkill(join(dir, "a"), "b", "nested\n");
    writeSkill(dir, ".hidden", "hidden\n");

    const names = ["../x", "a/b", ".hidden", "-dash", "x".repeat(65), "/etc", "a\\b"];
    const { skills, warnings } = loadSkills(dir, names);

    assert.deepEqual(skills, []);
    assert.equal(warnings.length, names.length);
    for (const [index, name] of names.entries()) {
      assert.ok(warnings[index].includes(`skill '${name}' was not loaded`), warnings[index]);
      assert.ok(warnings[index].includes(dir), warnings[index]);
      assert.match(warnings[index], /letters, digits/);
    }
  });
});

Deno.test("loadSkills: names are trimmed; blank names are skipped silently", async () => {
  await withTempDir((dir) => {
    writeSkill(dir, "triage", TRIAGE);

    const { skills, warnings } = loadSkills(dir, ["", "  ", " triage\t"]);

    assert.deepEqual(warnings, []);
    assert.deepEqual(skills.map((s) => s.name), ["triage"]);
  });
});

Deno.test("loadSkills: a directory named SKILL.md → warning", async () => {
  await withTempDir((dir) => {
    Deno.mkdirSync(join(dir, "odd", "SKILL.md"), { recursive: true });

    const { skills, warnings } = loadSkills(dir, ["odd"]);

    assert.deepEqual(skills, []);
    assert.equal(warnings.length, 1);
    assert.ok(warnings[0].includes(`${join(dir, "odd", "SKILL.md")} is not a file`), warnings[0]);
  });
});

Deno.test("loadSkills: over 256 KiB → warning; exactly 256 KiB loads", async () => {
  await withTempDir((dir) => {
    writeSkill(dir, "big", "a".repeat(256 * 1024 + 1));
    writeSkill(dir, "edge", "a".repeat(256 * 1024));

    const { skills, warnings } = loadSkills(dir, ["big", "edge"]);

    assert.deepEqual(skills.map((s) => s.name), ["edge"]);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /skill 'big' was not loaded: .* is larger than 256 KiB/);
  });
});

Deno.test("loadSkills: invalid UTF-8 → warning", async () => {
  await withTempDir((dir) => {
    writeSkill(dir, "binary", new Uint8Array([0x48, 0x69, 0xff, 0xfe, 0xc3, 0x28, 0x0a]));

    const { skills, warnings } = loadSkills(dir, ["binary"]);

    assert.deepEqual(skills, []);
    assert.match(warnings[0], /skill 'binary' was not loaded: .* is not UTF-8 text/);
  });
});

Deno.test("loadSkills: broken YAML front matter → warning naming the file", async () => {
  await withTempDir((dir) => {
    const path = writeSkill(dir, "broken", "---\ndescription: [unclosed\nname: x\n---\nbody\n");

    const { skills, warnings } = loadSkills(dir, ["broken"]);

    assert.deepEqual(skills, []);
    assert.equal(warnings.length, 1);
    assert.ok(warnings[0].includes(`the front matter of ${path} is not valid YAML`), warnings[0]);
    assert.ok(!warnings[0].includes("\n"), "the YAML error is cut to its first line");
  });
});

Deno.test("loadSkills: front matter that is a list or a scalar → warning", async () => {
  await withTempDir((dir) => {
    writeSkill(dir, "list", "---\n- name\n- description\n---\nbody\n");
    writeSkill(dir, "scalar", "---\njust text\n---\nbody\n");

    const { skills, warnings } = loadSkills(dir, ["list", "scalar"]);

    assert.deepEqual(skills, []);
    assert.equal(warnings.length, 2);
    assert.match(warnings[0], /skill 'list' was not loaded: .* must be a mapping/);
    assert.match(warnings[1], /skill 'scalar' was not loaded: .* must be a mapping/);
  });
});

Deno.test("loadSkills: duplicates are loaded once, in the order first given", async () => {
  await withTempDir((dir) => {
    writeSkill(dir, "alpha", "A\n");
    writeSkill(dir, "beta", "B\n");
    writeSkill(dir, "gamma", "G\n");

    const { skills, warnings } = loadSkills(dir, ["gamma", "alpha", "gamma", " alpha ", "beta"]);

    assert.deepEqual(warnings, []);
    assert.deepEqual(skills.map((s) => s.name), ["gamma", "alpha", "beta"]);
  });
});

Deno.test("loadSkills: a missing skills folder → a warning per name, no throw", () => {
  const dir = join(Deno.makeTempDirSync({ prefix: "skills-test-" }), "nope");
  try {
    const { skills, warnings } = loadSkills(dir, ["a", "b"]);

    assert.deepEqual(skills, []);
    assert.equal(warnings.length, 2);
  } finally {
    Deno.removeSync(join(dir, ".."), { recursive: true });
  }
});

// --- listSkills ----------------------------------------------------------------------------

Deno.test("listSkills: only folders with a SKILL.md file, sorted", async () => {
  await withTempDir((dir) => {
    writeSkill(dir, "zeta", "z\n");
    writeSkill(dir, "alpha", "a\n");
    writeSkill(dir, "Mid", "m\n");
    Deno.mkdirSync(join(dir, "no-skill-file"));
    Deno.mkdirSync(join(dir, "dir-named-skill", "SKILL.md"), { recursive: true });
    writeSkill(dir, ".hidden", "h\n");
    Deno.writeTextFileSync(join(dir, "loose.md"), "not a folder\n");

    assert.deepEqual(listSkills(dir), ["Mid", "alpha", "zeta"]);
  });
});

Deno.test("listSkills: [] for a missing or empty folder", async () => {
  await withTempDir((dir) => {
    assert.deepEqual(listSkills(dir), []);
    assert.deepEqual(listSkills(join(dir, "missing")), []);
  });
});

// --- buildSystemPrompt ---------------------------------------------------------------------

function skill(name: string, description: string, body: string): Skill {
  return { name, description, body, path: `/h/skills/${name}/SKILL.md`, digest: "d" };
}

Deno.test("buildSystemPrompt: the base prompt alone, without a Skills section", () => {
  for (const prompt of [buildSystemPrompt(), buildSystemPrompt({ skills: [] })]) {
    assert.match(prompt, /^You are an agent running on the user's own machine\./);
    assert.doesNotMatch(prompt, /# Skills/);
    assert.doesNotMatch(prompt, /## Skill:/);
  }
});

Deno.test("buildSystemPrompt: extra text follows the base prompt", () => {
  const base = buildSystemPrompt();

  const prompt = buildSystemPrompt({ extra: "Answer in French." });

  assert.equal(prompt, `${base}\n\nAnswer in French.`);
  assert.doesNotMatch(prompt, /# Skills/);
});

Deno.test("buildSystemPrompt: each skill's heading, description and body, in order, after the extra", () => {
  const prompt = buildSystemPrompt({
    extra: "Be brief.",
    skills: [
      skill("triage", "Label new issues", "Read the issue.\n\nLabel it."),
      skill("release", "", "Tag and publish."),
      skill("bare", "Only a description", ""),
    ],
  });

  assert.ok(
    prompt.endsWith(
      "\n\nBe brief.\n\n# Skills\nFollow these skills where they apply.\n\n" +
        "## Skill: triage\nLabel new issues\n\nRead the issue.\n\nLabel it.\n\n" +
        "## Skill: release\n\nTag and publish.\n\n" +
        "## Skill: bare\nOnly a description",
    ),
    prompt,
  );
  assert.equal(prompt.match(/# Skills/g)?.length, 1);
});

Deno.test("buildSystemPrompt: works on skills loaded from disk", async () => {
  await withTempDir((dir) => {
    writeSkill(dir, "triage", TRIAGE);
    const { skills } = loadSkills(dir, ["triage"]);

    const prompt = buildSystemPrompt({ skills });

    assert.match(
      prompt,
      /## Skill: triage\nLabel new issues\n\nRead the issue\.\n\nThen label it\.$/,
    );
  });
});
