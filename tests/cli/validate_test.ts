/**
 * `agent metrics validate`: files, stdin, several files, and what a broken file reports.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  cli,
  cliJson,
  filesIn,
  parseOneJson,
  spawnCli,
  tempHome,
  validPackage,
} from "./_helpers.ts";

function writeJson(dir: string, name: string, value: unknown): string {
  const path = join(dir, name);
  Deno.writeTextFileSync(path, JSON.stringify(value, null, 2));
  return path;
}

/**
 * Runs `metrics validate` on `file` (`-`: `stdin`): exit 2, and one error under the file's name,
 * `not valid JSON: <reason>`.
 */
async function assertNotJson(
  home: string,
  file: string,
  reason: string,
  stdin?: string,
): Promise<void> {
  const result = await cli(home, ["metrics", "validate", file], { stdin });
  assert.equal(result.code, 2, result.stderr);
  assert.equal(result.stdout, `${file}: invalid (1 error)\n  /: not valid JSON: ${reason}\n`);
}

/** A package with an extra top-level property and a bad enum value. */
function invalidPackage(): Record<string, unknown> {
  const pkg = validPackage() as unknown as Record<string, unknown>;
  pkg.hostname = "my-laptop";
  (pkg.resource as Record<string, unknown>).os_family = "beos";
  return pkg;
}

Deno.test("a valid package file is exit 0 and 'valid'; validate touches no <home>", async () => {
  await using h = await tempHome();
  const work = await Deno.makeTempDir();
  try {
    const file = writeJson(work, "ok.json", validPackage());
    const result = await cli(h.home, ["metrics", "validate", file]);
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.equal(result.stdout, `${file}: valid agent.shared_metrics.v2 package\n`);
    assert.equal(result.stderr, "");

    const doc = await cliJson(h.home, ["metrics", "validate", file, "--json"]);
    assert.deepEqual(doc, {
      valid: true,
      results: [{ file, valid: true, errors: [] }],
      warnings: [],
    });
    assert.deepEqual(filesIn(h.home), []);
  } finally {
    await Deno.remove(work, { recursive: true });
  }
});

Deno.test("an invalid package is exit 2 naming each JSON pointer and rule", async () => {
  await using h = await tempHome();
  const file = writeJson(h.home, "bad.json", invalidPackage());
  const result = await cli(h.home, ["metrics", "validate", file]);
  assert.equal(result.code, 2);
  assert.match(result.stdout, new RegExp(`^${file}: invalid \\(2 errors\\)$`, "m"));
  // Each pointer once: the messages begin with it.
  assert.match(result.stdout, /^ {2}\/hostname is not allowed: .*rule additionalProperties/m);
  assert.match(result.stdout, /^ {2}\/resource\/os_family .*rule enum.*"beos"/m);
  assert.doesNotMatch(result.stdout, /\/hostname: \/hostname/);
  assert.doesNotMatch(result.stdout, /: valid /);
});

Deno.test("validate --json reports { valid, results: [{ file, valid, errors: [{ pointer, rule, message, value }] }] }", async () => {
  await using h = await tempHome();
  const file = writeJson(h.home, "bad.json", invalidPackage());
  const doc = await cliJson(h.home, ["metrics", "validate", "--json", file], 2);
  assert.equal(doc.valid, false);
  assert.equal(doc.results.length, 1);
  const [result] = doc.results;
  assert.equal(result.file, file);
  assert.equal(result.valid, false);
  assert.ok(Array.isArray(result.errors));
  const byPointer = Object.fromEntries(
    result.errors.map((e: { pointer: string }) => [e.pointer, e]),
  );
  assert.deepEqual(Object.keys(byPointer).sort(), ["/hostname", "/resource/os_family"]);
  assert.equal(byPointer["/hostname"].rule, "additionalProperties");
  assert.equal(byPointer["/hostname"].value, "my-laptop");
  assert.equal(byPointer["/resource/os_family"].rule, "enum");
  assert.equal(byPointer["/resource/os_family"].value, "beos");
  for (const error of result.errors) {
    assert.deepEqual(Object.keys(error).sort(), ["message", "pointer", "rule", "value"]);
    assert.equal(typeof error.message, "string");
    assert.ok(error.message.includes(error.pointer));
  }
});

Deno.test("validate reports a bad metric value and a bad counter in metrics[]", async () => {
  await using h = await tempHome();
  const pkg = validPackage();
  (pkg.metrics[1] as { value: number }).value = 0;
  const file = writeJson(h.home, "zero.json", pkg);
  const doc = await cliJson(h.home, ["metrics", "validate", file, "--json"], 2);
  assert.equal(doc.valid, false);
  const { errors } = doc.results[0];
  assert.ok(
    errors.some((e: { pointer: string }) => e.pointer.startsWith("/metrics/1")),
    JSON.stringify(errors),
  );
});

Deno.test("several files: one invalid → exit 2 with a result per file", async () => {
  await using h = await tempHome();
  const good = writeJson(h.home, "a.json", validPackage());
  const bad = writeJson(h.home, "b.json", invalidPackage());
  const good2 = writeJson(h.home, "c.json", validPackage());

  const text = await cli(h.home, ["metrics", "validate", good, bad, good2]);
  assert.equal(text.code, 2);
  const lines = text.stdout.split("\n").filter((line) => !line.startsWith("  ") && line);
  assert.deepEqual(lines, [
    `${good}: valid agent.shared_metrics.v2 package`,
    `${bad}: invalid (2 errors)`,
    `${good2}: valid agent.shared_metrics.v2 package`,
  ]);

  const doc = await cliJson(h.home, ["metrics", "validate", "--json", good, bad, good2], 2);
  assert.equal(doc.valid, false);
  assert.deepEqual(
    doc.results.map((r: { file: string; valid: boolean }) => [r.file, r.valid]),
    [[good, true], [bad, false], [good2, true]],
  );
  assert.equal(doc.results[1].errors.length, 2);

  const allGood = await cliJson(h.home, ["metrics", "validate", "--json", good, good2]);
  assert.equal(allGood.valid, true);
  assert.equal(allGood.results.length, 2);
});

Deno.test("`-` reads the package from stdin", async () => {
  await using h = await tempHome();
  const ok = await cli(h.home, ["metrics", "validate", "-"], {
    stdin: JSON.stringify(validPackage()),
  });
  assert.equal(ok.code, 0, ok.stdout);
  assert.equal(ok.stdout, "-: valid agent.shared_metrics.v2 package\n");
  assert.equal(ok.fake.stdinReads(), 1);

  const bad = await cli(h.home, ["metrics", "validate", "-", "--json"], {
    stdin: JSON.stringify(invalidPackage()),
  });
  assert.equal(bad.code, 2);
  const doc = parseOneJson(bad.stdout) as {
    valid: boolean;
    results: { file: string; errors: { pointer: string }[] }[];
  };
  assert.equal(doc.valid, false);
  assert.equal(doc.results[0].file, "-");
  assert.ok(doc.results[0].errors.some((e) => e.pointer === "/hostname"));
});

Deno.test("a file that is not JSON is exit 2 'not valid JSON' with the line, column and what was expected", async () => {
  await using h = await tempHome();
  const file = join(h.home, "notjson.json");
  Deno.writeTextFileSync(file, "schema_version: agent.shared_metrics.v2\n");
  // Before: V8's "Unexpected token 's', "schema_ver"... is not valid JSON".
  await assertNotJson(h.home, file, "line 1, column 1: expected a value");

  const doc = await cliJson(h.home, ["metrics", "validate", file, "--json"], 2);
  assert.deepEqual(doc, {
    valid: false,
    results: [{
      file,
      valid: false,
      errors: [{
        pointer: "",
        rule: "json",
        message: "not valid JSON: line 1, column 1: expected a value",
        value: null,
      }],
    }],
    warnings: [],
  });

  // Before: "Unexpected end of JSON input".
  await assertNotJson(h.home, "-", "stdin is empty", "");
  const emptyFile = join(h.home, "empty.json");
  Deno.writeTextFileSync(emptyFile, " \n");
  await assertNotJson(h.home, emptyFile, "the file holds only whitespace");
});

Deno.test("a UTF-16 package (Windows PowerShell's >) is named as such, exit 2; a UTF-8 BOM is fine", async () => {
  await using h = await tempHome();
  const json = JSON.stringify(validPackage());
  const utf16 = join(h.home, "utf16.json");
  const units = new Uint16Array([0xfeff, ...[...json].map((c) => c.charCodeAt(0))]);
  Deno.writeFileSync(utf16, new Uint8Array(units.buffer)); // little-endian: FF FE first
  await assertNotJson(
    h.home,
    utf16,
    "the text is UTF-16, and a package is UTF-8 JSON; save it as UTF-8 (in Windows PowerShell, " +
      "`| Out-File -Encoding utf8` instead of `>`)",
  );
  const doc = await cliJson(h.home, ["metrics", "validate", utf16, "--json"], 2);
  assert.equal(doc.results[0].errors[0].rule, "json");

  const bom = join(h.home, "bom.json");
  Deno.writeTextFileSync(bom, `\ufeff${json}`);
  assert.equal((await cli(h.home, ["metrics", "validate", bom])).code, 0);
});

Deno.test("a missing file is exit 2 naming it", async () => {
  await using h = await tempHome();
  const missing = join(h.home, "nope.json");
  const result = await cli(h.home, ["metrics", "validate", missing]);
  assert.equal(result.code, 2);
  assert.ok(result.stderr.includes(missing), result.stderr);
  assert.match(result.stderr, /no such file/);
  assert.equal(result.stdout, "");

  // With --json a missing file is a result like any other (one shape for any number of files).
  const doc = await cliJson(h.home, ["metrics", "validate", missing, "--json"], 2);
  assert.equal(doc.valid, false);
  assert.equal(doc.results[0].file, missing);
  assert.equal(doc.results[0].errors[0].rule, "file");
  assert.match(doc.results[0].errors[0].message, /no such file/);
});

Deno.test("a directory is exit 2 naming it", async () => {
  await using h = await tempHome();
  const result = await cli(h.home, ["metrics", "validate", h.home]);
  assert.equal(result.code, 2);
  assert.ok(result.stderr.includes(h.home), result.stderr);
  assert.match(result.stderr, /folder/);
});

Deno.test("e2e: validate reads a piped package from stdin; a missing file exits 2", async () => {
  await using h = await tempHome();
  const ok = await spawnCli(h.home, ["metrics", "validate", "-"], {
    stdin: JSON.stringify(validPackage()),
  });
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(ok.stdout, "-: valid agent.shared_metrics.v2 package\n");

  const bad = await spawnCli(h.home, ["metrics", "validate", "--json", "-"], {
    stdin: JSON.stringify(invalidPackage()),
  });
  assert.equal(bad.code, 2, bad.stderr);
  const doc = parseOneJson(bad.stdout) as {
    valid: boolean;
    results: { errors: { rule: string }[] }[];
  };
  assert.equal(doc.valid, false);
  assert.deepEqual(doc.results[0].errors.map((e) => e.rule).sort(), [
    "additionalProperties",
    "enum",
  ]);

  const missing = await spawnCli(h.home, ["metrics", "validate", join(h.home, "x.json")]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /x\.json: no such file/);
});

Deno.test("validate: a JSON error quotes none of the text (a secret, a line break): line, column and what was expected", async () => {
  await using h = await tempHome();
  const file = join(h.home, "broken.json");
  Deno.writeTextFileSync(file, '{"a":\n sk-TOPSECRET}');
  await assertNotJson(h.home, file, "line 2, column 2: expected a value");
  const doc = await cliJson(h.home, ["metrics", "validate", file, "--json"], 2);
  assert.doesNotMatch(JSON.stringify(doc), /TOPSECRET/);
});
