import assert from "node:assert/strict";
import { join } from "node:path";
import { parse } from "dotenv";
import fc from "fast-check";
import { dotenvLine, setDotenvValues } from "../../src/home/dotenv_edit.ts";
import { modeOf, namesIn, withTempDir } from "./_helpers.ts";

/** Writes `text` to `<dir>/.env` with `mode` and returns the path. */
function dotenvFile(dir: string, text: string, mode = 0o600): string {
  const file = join(dir, ".env");
  Deno.writeTextFileSync(file, text, { mode });
  Deno.chmodSync(file, mode);
  return file;
}

/** Asserts `body` throws a RangeError matching `message`, and that `file` kept its bytes. */
function assertRefused(file: string, body: () => unknown, message: RegExp): void {
  const before = readBytesIfExists(file);
  assert.throws(body, (error: unknown) => {
    assert.ok(error instanceof RangeError, `expected a RangeError, got ${error}`);
    assert.match(error.message, message);
    return true;
  });
  assert.deepEqual(readBytesIfExists(file), before, "the file is left untouched");
}

function readBytesIfExists(file: string): Uint8Array | undefined {
  try {
    return Deno.readFileSync(file);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
}

// --- dotenvLine ----------------------------------------------------------------------------

Deno.test("dotenvLine: plain values unquoted, others single-quoted", () => {
  assert.equal(dotenvLine("A", "sk-1"), "A=sk-1");
  assert.equal(dotenvLine("A", ""), "A=");
  assert.equal(dotenvLine("_x9", "a.b~c+d/e=f:g@h%i,j_k-l"), "_x9=a.b~c+d/e=f:g@h%i,j_k-l");
  assert.equal(dotenvLine("A", "new secret"), "A='new secret'");
  assert.equal(dotenvLine("A", "a#b"), "A='a#b'");
  assert.equal(dotenvLine("A", '"x"'), `A='"x"'`);
  assert.equal(dotenvLine("A", "$HOME"), "A='$HOME'");
  assert.equal(dotenvLine("A", " "), "A=' '");
});

Deno.test("dotenvLine: a single quote or a line break is refused", () => {
  for (const value of ["it's", "'", "a\nb", "a\rb", "a\r\nb", "\n"]) {
    assert.throws(
      () => dotenvLine("TOKEN", value),
      (error: unknown) =>
        error instanceof RangeError &&
        error.message === "the value of TOKEN cannot hold a single quote or a line break",
      JSON.stringify(value),
    );
  }
});

Deno.test("dotenvLine: an invalid variable name is refused", () => {
  for (const name of ["", "1BAD", "BAD-NAME", "A B", "A.B", "É", " A", "A=", "export A"]) {
    assert.throws(
      () => dotenvLine(name, "x"),
      (error: unknown) =>
        error instanceof RangeError && error.message === `'${name}' is not a valid variable name`,
      JSON.stringify(name),
    );
  }
});

// --- setDotenvValues -----------------------------------------------------------------------

Deno.test("setDotenvValues: a missing file is created with mode 0600", async () => {
  await withTempDir((dir) => {
    const file = join(dir, ".env");
    setDotenvValues(file, { WEBHOOK_SECRET: "s3cret", WEBHOOK_PORT: "9000" });
    assert.equal(Deno.readTextFileSync(file), "WEBHOOK_SECRET=s3cret\nWEBHOOK_PORT=9000\n");
    assert.equal(modeOf(file), 0o600);
    assert.deepEqual(namesIn(dir), [".env"], "no temporary file is left behind");
  });
});

Deno.test("setDotenvValues: a missing folder is created too", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "home", ".env");
    setDotenvValues(file, { A: "1" });
    assert.equal(Deno.readTextFileSync(file), "A=1\n");
    assert.equal(modeOf(file), 0o600);
  });
});

Deno.test("setDotenvValues: replaces in place, keeping every other line byte for byte", async () => {
  await withTempDir((dir) => {
    const head = [
      "# API keys",
      "OPENAI_API_KEY=sk-1",
      "",
      "  # an indented comment",
      "# WEBHOOK_SECRET=commented-out",
      'QUOTED="with # hash"  # trailing comment',
      "SPACED = spaced value",
      'MULTI="line one',
      'line two"',
      "\t",
    ];
    const tail = ["", "LAST='x y'", "# end"];
    const file = dotenvFile(dir, [...head, "WEBHOOK_SECRET=old", ...tail, ""].join("\n"));
    const before = parse(Deno.readTextFileSync(file));
    setDotenvValues(file, { WEBHOOK_SECRET: "new" });
    const text = Deno.readTextFileSync(file);
    assert.equal(text, [...head, "WEBHOOK_SECRET=new", ...tail, ""].join("\n"));
    assert.deepEqual(parse(text), { ...before, WEBHOOK_SECRET: "new" });
  });
});

Deno.test("setDotenvValues: export, indented and spaced assignments are replaced", async () => {
  await withTempDir((dir) => {
    const cases: [string, string][] = [
      ["export WEBHOOK_SECRET=old", "export WEBHOOK_SECRET=new"],
      ["export   WEBHOOK_SECRET=old", "export WEBHOOK_SECRET=new"],
      ["  WEBHOOK_SECRET=old", "WEBHOOK_SECRET=new"],
      ["WEBHOOK_SECRET = old", "WEBHOOK_SECRET=new"],
      ["WEBHOOK_SECRET='old value'", "WEBHOOK_SECRET=new"],
      ['WEBHOOK_SECRET="old" # note', "WEBHOOK_SECRET=new # note"],
      ["WEBHOOK_SECRET=old   #note", "WEBHOOK_SECRET=new #note"],
      ["export WEBHOOK_SECRET='a b' # why", "export WEBHOOK_SECRET=new # why"],
      ["WEBHOOK_SECRET=", "WEBHOOK_SECRET=new"],
    ];
    for (const [line, expected] of cases) {
      const file = dotenvFile(dir, `A=1\n${line}\nB=2\n`);
      setDotenvValues(file, { WEBHOOK_SECRET: "new" });
      const text = Deno.readTextFileSync(file);
      assert.equal(text, `A=1\n${expected}\nB=2\n`, line);
      assert.deepEqual(parse(text), { A: "1", WEBHOOK_SECRET: "new", B: "2" }, line);
    }
  });
});

Deno.test("setDotenvValues: a quoted multi-line value is replaced whole; others stay byte-identical", async () => {
  await withTempDir((dir) => {
    const key = 'PRIVATE_KEY="-----BEGIN KEY-----\nMIIB\n-----END KEY-----"\n';
    for (const old of ['"abc\ndef"', "'abc\ndef'", "`abc\n\ndef` # note", '"a\nb\nc"']) {
      const file = dotenvFile(dir, `WEBHOOK_SECRET=${old}\n${key}`);
      setDotenvValues(file, { WEBHOOK_SECRET: "new-secret" });
      const text = Deno.readTextFileSync(file);
      const comment = old.endsWith("# note") ? " # note" : "";
      assert.equal(text, `WEBHOOK_SECRET=new-secret${comment}\n${key}`, old);
      assert.deepEqual(parse(text), {
        WEBHOOK_SECRET: "new-secret",
        PRIVATE_KEY: "-----BEGIN KEY-----\nMIIB\n-----END KEY-----",
      });
    }
    // The multi-line value last, without a final newline; and a later multi-line duplicate.
    const last = dotenvFile(dir, `${key}A=1\nWEBHOOK_SECRET="x\ny"`);
    setDotenvValues(last, { WEBHOOK_SECRET: "n" });
    assert.equal(Deno.readTextFileSync(last), `${key}A=1\nWEBHOOK_SECRET=n\n`);
    const dup = dotenvFile(dir, `W=1\n${key}W="2\n3"\nB=4\n`);
    setDotenvValues(dup, { W: "new" });
    assert.equal(Deno.readTextFileSync(dup), `W=new\n${key}B=4\n`);
    // CRLF: the value's lines go too, every other line keeps its CRLF.
    const crlf = dotenvFile(dir, 'A=1\r\nW="x\r\ny"\r\nB=2\r\n');
    setDotenvValues(crlf, { W: "n" });
    assert.equal(Deno.readTextFileSync(crlf), "A=1\r\nW=n\r\nB=2\r\n");
  });
});

Deno.test("setDotenvValues: a similar name or a commented line is not replaced", async () => {
  await withTempDir((dir) => {
    const text =
      "WEBHOOK_SECRET_OLD=1\nMY_WEBHOOK_SECRET=2\n# WEBHOOK_SECRET=3\n#WEBHOOK_SECRET=4\n";
    const file = dotenvFile(dir, text);
    setDotenvValues(file, { WEBHOOK_SECRET: "new" });
    assert.equal(Deno.readTextFileSync(file), `${text}WEBHOOK_SECRET=new\n`);
  });
});

Deno.test("setDotenvValues: a later duplicate is removed so the new value wins", async () => {
  await withTempDir((dir) => {
    const text = "A=1\nW=old\nB=2\nexport W=older\nC=3\nW=oldest\n";
    assert.equal(parse(text).W, "oldest", "dotenv takes the last assignment");
    const file = dotenvFile(dir, text);
    setDotenvValues(file, { W: "new" });
    const after = Deno.readTextFileSync(file);
    assert.equal(after, "A=1\nW=new\nB=2\nC=3\n");
    assert.deepEqual(parse(after), { A: "1", W: "new", B: "2", C: "3" });
  });
});

Deno.test("setDotenvValues: new names are appended in order; a final newline is added", async () => {
  await withTempDir((dir) => {
    const file = dotenvFile(dir, "# keys\nA=1");
    setDotenvValues(file, { B: "2", C: "three four" });
    assert.equal(Deno.readTextFileSync(file), "# keys\nA=1\nB=2\nC='three four'\n");
    // A trailing blank line stays where it was.
    const spaced = dotenvFile(dir, "A=1\n\n");
    setDotenvValues(spaced, { B: "2" });
    assert.equal(Deno.readTextFileSync(spaced), "A=1\n\nB=2\n");
  });
});

Deno.test("setDotenvValues: several names at once, replaced and appended", async () => {
  await withTempDir((dir) => {
    const file = dotenvFile(dir, "# gateway\nWEBHOOK_ENABLED=false\nOPENAI_API_KEY=sk-1\n");
    setDotenvValues(file, {
      WEBHOOK_ENABLED: "true",
      WEBHOOK_SECRET: "abc",
      WEBHOOK_PORT: "8644",
    });
    assert.equal(
      Deno.readTextFileSync(file),
      "# gateway\nWEBHOOK_ENABLED=true\nOPENAI_API_KEY=sk-1\nWEBHOOK_SECRET=abc\nWEBHOOK_PORT=8644\n",
    );
  });
});

Deno.test("setDotenvValues: an empty file or no values", async () => {
  await withTempDir((dir) => {
    const empty = dotenvFile(dir, "");
    setDotenvValues(empty, { A: "1" });
    assert.equal(Deno.readTextFileSync(empty), "A=1\n");
    const kept = dotenvFile(dir, "# only\nA=1\n");
    setDotenvValues(kept, {});
    assert.equal(Deno.readTextFileSync(kept), "# only\nA=1\n");
  });
});

Deno.test("setDotenvValues: values needing quotes read back identical through dotenv", async () => {
  await withTempDir((dir) => {
    const values = [
      "new secret",
      " leading and trailing ",
      "a#b",
      "a #b",
      "#start",
      '"double"',
      '"',
      "`back`",
      "back\\slash \\ in the middle",
      "\\n stays \\n",
      "$HOME ${USER}",
      "tab\there",
      "x=y # z",
      '{"json": [1, 2]}',
      "é ü 日本",
    ];
    for (const value of values) {
      const file = dotenvFile(dir, "BEFORE=1\nTOKEN=old\nAFTER=2\n");
      setDotenvValues(file, { TOKEN: value });
      const text = Deno.readTextFileSync(file);
      assert.ok(text.includes(`TOKEN='${value}'\n`), text);
      assert.deepEqual(parse(text), { BEFORE: "1", TOKEN: value, AFTER: "2" }, value);
    }
  });
});

Deno.test("setDotenvValues: a single quote or a line break is refused, the file untouched", async () => {
  await withTempDir((dir) => {
    for (const value of ["it's", "a\nb", "a\r\nb", "trailing\n", "\r"]) {
      // Replacing an existing name and appending a new one both refuse.
      const file = dotenvFile(dir, "# keep\nTOKEN=old\n");
      assertRefused(
        file,
        () => setDotenvValues(file, { TOKEN: value }),
        /^the value of TOKEN cannot hold a single quote or a line break$/,
      );
      assertRefused(
        file,
        () => setDotenvValues(file, { FINE: "ok", NEW: value }),
        /^the value of NEW cannot hold a single quote or a line break$/,
      );
    }
    // A missing file is not created.
    const missing = join(dir, "missing.env");
    assertRefused(missing, () => setDotenvValues(missing, { A: "it's" }), /single quote/);
    assert.deepEqual(namesIn(dir), [".env"], "no temporary file is left behind");
  });
});

Deno.test("setDotenvValues: an invalid variable name is refused, the file untouched", async () => {
  await withTempDir((dir) => {
    for (const name of ["1BAD", "BAD-NAME", "A B", "", "A.B"]) {
      const file = dotenvFile(dir, "A=1\n");
      assertRefused(
        file,
        () => setDotenvValues(file, { OK: "1", [name]: "x" }),
        /is not a valid variable name$/,
      );
    }
    assert.deepEqual(namesIn(dir), [".env"]);
  });
});

Deno.test("setDotenvValues: a look-alike assignment inside a multi-line value is left alone", async () => {
  await withTempDir((dir) => {
    const cert = 'CERT="-----BEGIN\nNAME=inside\n-----END"\n';
    const first = dotenvFile(dir, `NAME=old\n${cert}B=2\n`);
    assert.deepEqual(parse(Deno.readTextFileSync(first)), {
      NAME: "old",
      CERT: "-----BEGIN\nNAME=inside\n-----END",
      B: "2",
    });
    setDotenvValues(first, { NAME: "new" });
    assert.equal(Deno.readTextFileSync(first), `NAME=new\n${cert}B=2\n`);
    // The look-alike comes first: dotenv reads it as part of CERT, so the real one is replaced.
    const second = dotenvFile(dir, `${cert}NAME=old\n`);
    setDotenvValues(second, { NAME: "new" });
    assert.equal(Deno.readTextFileSync(second), `${cert}NAME=new\n`);
    // Only a look-alike, no real assignment: the name is appended.
    const only = dotenvFile(dir, 'CERT="a\nNAME=inside\nb"\n');
    setDotenvValues(only, { NAME: "new" });
    assert.equal(Deno.readTextFileSync(only), 'CERT="a\nNAME=inside\nb"\nNAME=new\n');
    assert.deepEqual(parse(Deno.readTextFileSync(only)), {
      CERT: "a\nNAME=inside\nb",
      NAME: "new",
    });
    // Setting another name leaves the multi-line value alone.
    const other = dotenvFile(dir, 'CERT="a\nNAME=inside\nb"\n');
    setDotenvValues(other, { OTHER: "1" });
    assert.equal(Deno.readTextFileSync(other), 'CERT="a\nNAME=inside\nb"\nOTHER=1\n');
    assert.deepEqual(namesIn(dir), [".env"]);
  });
});

Deno.test("setDotenvValues: a CRLF file", async () => {
  await withTempDir((dir) => {
    const lines = ["# keys", "A=1", "TOKEN=old", "", "B='x y'", "export C=3"];
    const file = dotenvFile(dir, lines.join("\r\n") + "\r\n");
    setDotenvValues(file, { TOKEN: "new", D: "4" });
    const text = Deno.readTextFileSync(file);
    // Every line keeps its content and its CRLF end; the new value replaces the old in place.
    assert.equal(
      text,
      ["# keys", "A=1", "TOKEN=new", "", "B='x y'", "export C=3", "D=4"].join("\r\n") + "\r\n",
    );
    assert.deepEqual(parse(text), { A: "1", TOKEN: "new", B: "x y", C: "3", D: "4" });
  });
});

Deno.test("setDotenvValues: a `NAME: value` line (dotenv reads it) is replaced in place", async () => {
  await withTempDir((dir) => {
    const file = dotenvFile(dir, "A=1\nWEBHOOK_SECRET: old\nB: 2\nURL:x\n");
    assert.deepEqual(parse(Deno.readTextFileSync(file)).WEBHOOK_SECRET, "old");
    setDotenvValues(file, { WEBHOOK_SECRET: "new", URL: "y" });
    // `URL:x` (no blank after the colon) is not an assignment to dotenv, so it stays.
    assert.equal(Deno.readTextFileSync(file), "A=1\nWEBHOOK_SECRET=new\nB: 2\nURL:x\nURL=y\n");
    assert.deepEqual(parse(Deno.readTextFileSync(file)), {
      A: "1",
      WEBHOOK_SECRET: "new",
      B: "2",
      URL: "y",
    });
  });
});

Deno.test("setDotenvValues: an existing file's mode is 0600 after writing", async () => {
  await withTempDir((dir) => {
    for (const mode of [0o644, 0o640, 0o666, 0o400]) {
      const file = dotenvFile(dir, "A=1\n", mode);
      assert.equal(modeOf(file), mode);
      setDotenvValues(file, { A: "2" });
      assert.equal(modeOf(file), 0o600, mode.toString(8));
      assert.equal(Deno.readTextFileSync(file), "A=2\n");
    }
  });
});

// --- a value ending in a backslash ---------------------------------------------------------
//
// dotenv reads `\'` inside single quotes as an escaped quote whenever a later `'` exists in the
// file, so `A='x\'` swallows the following lines up to the next single quote.

Deno.test("setDotenvValues: a value ending in a backslash does not swallow later lines", async () => {
  await withTempDir((dir) => {
    const file = join(dir, ".env");
    let written = false;
    try {
      setDotenvValues(file, { TOOLS_DIR: "C:\\tools\\" });
      written = true;
    } catch (error) {
      // Refusing the value is acceptable; writing a line that breaks the next edit is not.
      assert.ok(error instanceof RangeError, `expected a RangeError, got ${error}`);
    }
    if (!written) return;
    assert.equal(parse(Deno.readTextFileSync(file)).TOOLS_DIR, "C:\\tools\\");
    // A later value that starts with `#` (a colour) is where dotenv's reading goes wrong.
    setDotenvValues(file, { COLOR: "#ff0000" });
    assert.deepEqual(parse(Deno.readTextFileSync(file)), {
      TOOLS_DIR: "C:\\tools\\",
      COLOR: "#ff0000",
    });
  });
});

Deno.test("dotenvLine: a line ending in a backslash composes with a later quoted line", () => {
  const later = dotenvLine("B", "#ff0000");
  assert.equal(later, "B='#ff0000'");
  for (const value of ["\\", "C:\\tools\\", "a b\\", "#\\"]) {
    let line: string;
    try {
      line = dotenvLine("A", value);
    } catch (error) {
      assert.ok(error instanceof RangeError, `expected a RangeError, got ${error}`);
      continue;
    }
    assert.deepEqual(parse(`${line}\n${later}\n`), { A: value, B: "#ff0000" }, line);
  }
});

// --- properties ----------------------------------------------------------------------------

/** Visible ASCII and space, without the single quote. */
const ALLOWED = Array.from({ length: 0x7f - 0x20 }, (_, i) => String.fromCharCode(0x20 + i))
  .filter((char) => char !== "'");
/** An allowed value; a trailing backslash (the hard case) is made frequent. */
const allowedValue = fc.oneof(
  fc.string({ unit: fc.constantFrom(...ALLOWED), maxLength: 40 }),
  fc.string({ unit: fc.constantFrom(...ALLOWED), maxLength: 20 }).map((value) => `${value}\\`),
);
const otherName = fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,7}$/).filter((name) => name !== "TARGET");

/**
 * `dotenvLine(name, value)`, or `undefined` when it refuses the value. Only a value ending in a
 * backslash may be refused (no quoting keeps it safe from a later quote in the file).
 */
function lineOrRefused(name: string, value: string): string | undefined {
  try {
    return dotenvLine(name, value);
  } catch (error) {
    assert.ok(error instanceof RangeError, `expected a RangeError, got ${error}`);
    assert.ok(value.endsWith("\\"), `only a trailing backslash may be refused: ${value}`);
    return undefined;
  }
}

Deno.test("dotenvLine: any allowed value reads back identical through dotenv", () => {
  fc.assert(
    fc.property(allowedValue, (value) => {
      const line = lineOrRefused("TARGET", value);
      if (line !== undefined) assert.equal(parse(`${line}\n`).TARGET, value);
    }),
    { numRuns: 2000 },
  );
});

Deno.test("dotenvLine: lines of any allowed values compose in one file", () => {
  fc.assert(
    fc.property(allowedValue, allowedValue, allowedValue, (a, b, c) => {
      const lines = [lineOrRefused("A", a), lineOrRefused("B", b), lineOrRefused("C", c)];
      fc.pre(lines.every((line) => line !== undefined));
      assert.deepEqual(parse(`${lines.join("\n")}\n`), { A: a, B: b, C: c });
    }),
    { numRuns: 2000 },
  );
});

Deno.test("setDotenvValues: any allowed value reads back, other variables unchanged", async () => {
  await withTempDir((dir) => {
    const file = join(dir, ".env");
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(otherName, allowedValue), { selector: ([name]) => name }),
        fc.option(fc.tuple(fc.nat(), fc.constantFrom("", "export "), allowedValue)),
        fc.boolean(),
        allowedValue,
        (others, existing, comments, value) => {
          const lines: string[] = [];
          for (const [name, old] of others) {
            const line = lineOrRefused(name, old);
            fc.pre(line !== undefined);
            lines.push(...(comments ? [`# ${name}`, ""] : []), line!);
          }
          if (existing) {
            const [at, prefix, old] = existing;
            const line = lineOrRefused("TARGET", old);
            fc.pre(line !== undefined);
            lines.splice(at % (lines.length + 1), 0, `${prefix}${line}`);
          }
          const original = lines.length === 0 ? "" : `${lines.join("\n")}\n`;
          Deno.writeTextFileSync(file, original);
          if (lineOrRefused("TARGET", value) === undefined) {
            assertRefused(file, () => setDotenvValues(file, { TARGET: value }), /TARGET/);
            return;
          }
          setDotenvValues(file, { TARGET: value });
          const text = Deno.readTextFileSync(file);
          const after = parse(text);
          assert.equal(after.TARGET, value);
          const before = parse(original);
          delete before.TARGET;
          delete after.TARGET;
          assert.deepEqual(after, before);
          assert.deepEqual(after, Object.fromEntries(others));
          // Only the TARGET line changed: everything else is there in order.
          assert.deepEqual(
            text.split("\n").filter((line) => !/^(export )?TARGET=/.test(line)),
            original.split("\n").filter((line) => !/^(export )?TARGET=/.test(line)),
          );
        },
      ),
      { numRuns: 300 },
    );
  });
});

Deno.test("setDotenvValues: processes setting different names at once keep every value", async () => {
  await withTempDir(async (dir) => {
    const file = join(dir, ".env");
    const module = new URL("../../src/home/dotenv_edit.ts", import.meta.url).href;
    const names = Array.from({ length: 8 }, (_, i) => `NAME_${i}`);
    const results = await Promise.all(names.map((name) =>
      new Deno.Command(Deno.execPath(), {
        args: [
          "eval",
          `import { setDotenvValues } from ${JSON.stringify(module)};` +
          `setDotenvValues(${JSON.stringify(file)}, { ${name}: "value-${name}" });`,
        ],
        stdout: "null",
        stderr: "piped",
      }).output()
    ));
    for (const result of results) {
      assert.equal(result.code, 0, new TextDecoder().decode(result.stderr));
    }
    const parsed = parse(Deno.readTextFileSync(file));
    assert.deepEqual(parsed, Object.fromEntries(names.map((name) => [name, `value-${name}`])));
  });
});
