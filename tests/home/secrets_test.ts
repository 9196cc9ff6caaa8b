import assert from "node:assert/strict";
import { join } from "node:path";
import { loadConfig } from "../../src/home/config.ts";
import { SecretScope } from "../../src/home/secrets.ts";
import { envOf, withTempDir } from "./_helpers.ts";

Deno.test("SecretScope: .env wins over the process environment", () => {
  const scope = SecretScope.fromText(
    "GITHUB_TOKEN=from-dotenv\n",
    envOf({ GITHUB_TOKEN: "from-env" }),
  );
  assert.equal(scope.get("GITHUB_TOKEN"), "from-dotenv");
  assert.equal(scope.source("GITHUB_TOKEN"), ".env");
});

Deno.test("SecretScope: an empty value in .env still wins (it is set)", () => {
  const scope = SecretScope.fromText("SLACK_BOT_TOKEN=\n", envOf({ SLACK_BOT_TOKEN: "env" }));
  assert.equal(scope.get("SLACK_BOT_TOKEN"), "");
  assert.equal(scope.source("SLACK_BOT_TOKEN"), ".env");
});

Deno.test("SecretScope: falls back to the process environment", () => {
  const scope = SecretScope.fromText("OTHER=1\n", envOf({ TELEGRAM_BOT_TOKEN: "tg" }));
  assert.equal(scope.get("TELEGRAM_BOT_TOKEN"), "tg");
  assert.equal(scope.source("TELEGRAM_BOT_TOKEN"), "environment");
  assert.equal(scope.get("MISSING"), undefined);
  assert.equal(scope.source("MISSING"), undefined);
});

Deno.test("SecretScope: an empty env value is still 'environment'", () => {
  const scope = SecretScope.fromText(undefined, envOf({ EMPTY: "" }));
  assert.equal(scope.get("EMPTY"), "");
  assert.equal(scope.source("EMPTY"), "environment");
});

Deno.test("SecretScope: no .env text (undefined or empty) → environment only", () => {
  for (const text of [undefined, ""]) {
    const scope = SecretScope.fromText(text, envOf({ A: "env-a" }));
    assert.equal(scope.get("A"), "env-a");
    assert.deepEqual(scope.dotenvNames(), []);
  }
});

Deno.test("SecretScope: constructor over a record", () => {
  const scope = new SecretScope({ A: "dot" }, envOf({ A: "env", B: "env-b" }));
  assert.equal(scope.get("A"), "dot");
  assert.equal(scope.get("B"), "env-b");
  assert.deepEqual(scope.dotenvNames(), ["A"]);
});

Deno.test("SecretScope: inherited object keys are not secrets", () => {
  const scope = SecretScope.fromText("A=1\n", envOf());
  for (const name of ["constructor", "toString", "__proto__", "hasOwnProperty"]) {
    assert.equal(scope.get(name), undefined, name);
    assert.equal(scope.source(name), undefined, name);
  }
});

Deno.test("SecretScope.fromText: dotenv format (quotes, export, comments, multi-line)", () => {
  const text = [
    "# a full-line comment",
    "   # an indented comment",
    "",
    "export EXPORTED=exp-value",
    "PLAIN=plain value # inline comment",
    'DOUBLE="double # not a comment"',
    "SINGLE='single $HOME raw'",
    'ESCAPED="a\\nb"',
    'MULTI="line one',
    'line two"',
    "  SPACED  =  spaced  ",
    "EQUALS=a=b=c",
    "URL=https://example.com/path?x=1&y=2",
    "#COMMENTED=out",
    "",
  ].join("\n");
  const scope = SecretScope.fromText(text, envOf({ EXPORTED: "env" }));
  const expected: Record<string, string> = {
    EXPORTED: "exp-value",
    PLAIN: "plain value",
    DOUBLE: "double # not a comment",
    SINGLE: "single $HOME raw",
    ESCAPED: "a\nb",
    MULTI: "line one\nline two",
    SPACED: "spaced",
    EQUALS: "a=b=c",
    URL: "https://example.com/path?x=1&y=2",
  };
  for (const [name, value] of Object.entries(expected)) {
    assert.equal(scope.get(name), value, name);
    assert.equal(scope.source(name), ".env", name);
  }
  assert.deepEqual(scope.dotenvNames().sort(), Object.keys(expected).sort());
  assert.equal(scope.get("COMMENTED"), undefined);
  assert.equal(scope.get("export EXPORTED"), undefined);
});

Deno.test("SecretScope.fromText: CRLF line endings", () => {
  const scope = SecretScope.fromText("A=1\r\nB='two'\r\n", envOf());
  assert.equal(scope.get("A"), "1");
  assert.equal(scope.get("B"), "two");
});

Deno.test("SecretScope: variables are not expanded (no ${VAR} in .env values)", () => {
  const scope = SecretScope.fromText("A=${B}\nB=x\n", envOf({ B: "env" }));
  assert.equal(scope.get("A"), "${B}");
});

Deno.test("SecretScope: never modifies the process environment", async () => {
  const name = `AGENT_HOME_TEST_${crypto.randomUUID().replaceAll("-", "_").toUpperCase()}`;
  assert.equal(Deno.env.get(name), undefined);
  const before = Deno.env.toObject();
  await withTempDir((home) => {
    Deno.writeTextFileSync(join(home, ".env"), `${name}=secret-value\nexport ${name}_2="x"\n`);
    const config = loadConfig({ home, env: envOf() });
    assert.equal(config.secrets.get(name), "secret-value");
    const scope = SecretScope.fromText(`${name}=other\n`, (n) => Deno.env.get(n));
    assert.equal(scope.get(name), "other");
  });
  assert.deepEqual(Deno.env.toObject(), before);
  assert.equal(Deno.env.get(name), undefined);
  assert.equal(Deno.env.get(`${name}_2`), undefined);
});

Deno.test("SecretScope: dotenvNames lists names only, never values", () => {
  const scope = SecretScope.fromText("A=secret-a\nB=secret-b\n", envOf({ C: "c" }));
  const names = scope.dotenvNames();
  assert.deepEqual(names.sort(), ["A", "B"]);
  assert.ok(!JSON.stringify(names).includes("secret"));
});
