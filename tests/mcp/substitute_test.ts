import assert from "node:assert/strict";
import { SecretScope } from "../../src/home/secrets.ts";
import {
  substituteDeep,
  substituteString,
  type SubstitutionContext,
  unresolvedPlaceholders,
} from "../../src/mcp/substitute.ts";

/** A context over fixed variables; records every name looked up. */
function contextOf(
  vars: Record<string, string> = {},
  overrides: Partial<SubstitutionContext> = {},
): SubstitutionContext & { looked: string[] } {
  const looked: string[] = [];
  return {
    lookup: (name) => {
      looked.push(name);
      return Object.hasOwn(vars, name) ? vars[name] : undefined;
    },
    userHome: "/home/ada",
    workspaceFolder: "/work/project",
    pathSeparator: "/",
    ...overrides,
    looked,
  };
}

// --- variables -------------------------------------------------------------------------------

Deno.test("substituteString: ${VAR} and ${env:VAR} read the same variable", () => {
  const context = contextOf({ TOKEN: "s3cret" });
  assert.equal(substituteString("${TOKEN}", context), "s3cret");
  assert.equal(substituteString("${env:TOKEN}", context), "s3cret");
  assert.equal(substituteString("Bearer ${TOKEN}!", context), "Bearer s3cret!");
  assert.deepEqual(context.looked, ["TOKEN", "TOKEN", "TOKEN"]);
});

Deno.test("substituteString: the body is trimmed, with or without env:", () => {
  const context = contextOf({ TOKEN: "s3cret" });
  assert.equal(substituteString("${ TOKEN }", context), "s3cret");
  assert.equal(substituteString("${\tTOKEN\t}", context), "s3cret");
  assert.equal(substituteString("${ env:TOKEN }", context), "s3cret");
  // After `env:` the name is trimmed too (a choice: names cannot carry spaces in .env).
  assert.equal(substituteString("${env: TOKEN }", context), "s3cret");
  assert.deepEqual(context.looked, ["TOKEN", "TOKEN", "TOKEN", "TOKEN"]);
});

Deno.test("substituteString: any other name is looked up as a variable, exactly as written", () => {
  const context = contextOf({ "my.var-1": "dotted", API_KEY: "k" });
  assert.equal(substituteString("${my.var-1}/${API_KEY}", context), "dotted/k");
  assert.deepEqual(context.looked, ["my.var-1", "API_KEY"]);
});

Deno.test("substituteString: an unset variable keeps its placeholder exactly as written", () => {
  const context = contextOf();
  assert.equal(substituteString("${FOO}", context), "${FOO}");
  assert.equal(substituteString("${ FOO }", context), "${ FOO }");
  assert.equal(substituteString("${env:FOO}", context), "${env:FOO}");
  assert.equal(substituteString("a ${ env: FOO } b", context), "a ${ env: FOO } b");
});

Deno.test("substituteString: an empty variable keeps its placeholder too", () => {
  const context = contextOf({ EMPTY: "", SET: "x" });
  assert.equal(substituteString("${EMPTY}", context), "${EMPTY}");
  assert.equal(substituteString("${ env:EMPTY }-${SET}", context), "${ env:EMPTY }-x");
});

Deno.test("substituteString: a whitespace-only body is kept and never looked up", () => {
  const context = contextOf({ "": "never" });
  assert.equal(substituteString("${ }", context), "${ }");
  assert.equal(substituteString("${env:}", context), "${env:}");
  assert.deepEqual(context.looked, []);
});

Deno.test("substituteString: text that is not a placeholder is left alone", () => {
  const context = contextOf({ A: "1", VAR: "v" });
  assert.equal(substituteString("$VAR ${} $ {VAR} ${VAR", context), "$VAR ${} $ {VAR} ${VAR");
  assert.equal(substituteString("${A}}", context), "1}");
  assert.equal(substituteString("${A}${A}", context), "11");
  assert.equal(substituteString("", context), "");
});

// --- context names ---------------------------------------------------------------------------

Deno.test("substituteString: userHome, workspaceFolder and its basename come from the context", () => {
  const context = contextOf();
  assert.equal(substituteString("${userHome}/.cache", context), "/home/ada/.cache");
  assert.equal(substituteString("${workspaceFolder}", context), "/work/project");
  assert.equal(substituteString("${workspaceFolderBasename}", context), "project");
  assert.equal(substituteString("${ userHome }", context), "/home/ada");
  assert.deepEqual(context.looked, [], "context names never reach the variable lookup");
});

Deno.test("substituteString: context names win over variables of the same name", () => {
  const context = contextOf({ userHome: "/from/env", workspaceFolder: "/from/env" });
  assert.equal(substituteString("${userHome}", context), "/home/ada");
  assert.equal(substituteString("${workspaceFolder}", context), "/work/project");
});

Deno.test("substituteString: ${pathSeparator} and ${/} are the context's separator", () => {
  const windows = contextOf({}, { pathSeparator: "\\" });
  assert.equal(substituteString("a${pathSeparator}b${/}c", windows), "a\\b\\c");
  assert.equal(substituteString("${ / }", windows), "\\");
  assert.equal(substituteString("${/}", contextOf()), "/");
});

Deno.test("substituteString: workspaceFolderBasename ignores trailing separators", () => {
  const basename = (workspaceFolder: string, pathSeparator = "/") =>
    substituteString(
      "${workspaceFolderBasename}",
      contextOf({}, { workspaceFolder, pathSeparator }),
    );
  assert.equal(basename("/work/project/"), "project");
  assert.equal(basename("project"), "project");
  assert.equal(basename("C:\\Users\\ada\\repo\\", "\\"), "repo");
  assert.equal(basename("C:/Users/ada/repo", "\\"), "repo");
  assert.equal(basename("/"), "");
});

Deno.test("substituteString: names are case-sensitive (${USERHOME} is a variable)", () => {
  const context = contextOf({ USERHOME: "/var-home" });
  assert.equal(substituteString("${USERHOME}", context), "/var-home");
  assert.equal(substituteString("${UserHome}", context), "${UserHome}");
  assert.equal(substituteString("${PATHSEPARATOR}", context), "${PATHSEPARATOR}");
  assert.equal(substituteString("${workspacefolder}", context), "${workspacefolder}");
  assert.deepEqual(context.looked, ["USERHOME", "UserHome", "PATHSEPARATOR", "workspacefolder"]);
});

Deno.test("substituteString: ${env:userHome} is the variable named userHome", () => {
  assert.equal(substituteString("${env:userHome}", contextOf()), "${env:userHome}");
  assert.equal(substituteString("${env:userHome}", contextOf({ userHome: "/v" })), "/v");
  assert.equal(substituteString("${env:/}", contextOf({ "/": "slash" })), "slash");
});

Deno.test("substituteString: one pass only; substituted values are not expanded again", () => {
  const context = contextOf({ A: "${B}", B: "b", C: "${userHome}", D: "${" });
  assert.equal(substituteString("${A}", context), "${B}");
  assert.equal(substituteString("${C}", context), "${userHome}");
  assert.equal(substituteString("${D}A}", context), "${A}");
});

Deno.test("substituteString: .env wins over the process environment through SecretScope", () => {
  const processEnv: Record<string, string> = { TOKEN: "from-process", ONLY_ENV: "process-only" };
  const scope = SecretScope.fromText("TOKEN=from-dotenv\n", (name) => processEnv[name]);
  const context = contextOf();
  context.lookup = scope.get.bind(scope);
  assert.equal(substituteString("${TOKEN}", context), "from-dotenv");
  assert.equal(substituteString("${ONLY_ENV}", context), "process-only");
  assert.equal(substituteString("${NOWHERE}", context), "${NOWHERE}");
});

// --- substituteDeep --------------------------------------------------------------------------

Deno.test("substituteDeep: every nested string is expanded; keys and other values are not", () => {
  const context = contextOf({ KEY: "k-1", HOST: "mcp.example.com" });
  const entry = {
    url: "https://${HOST}/mcp",
    args: ["--root", "${workspaceFolder}", 3, ["${KEY}"]],
    env: { "${KEY}": "${KEY}", NESTED: { deeper: ["${userHome}"] } },
    headers: { Authorization: "Bearer ${KEY}" },
    tools: { include: ["${KEY}_*"], resources: false },
    timeout: 30,
    enabled: true,
    oauth: null,
  };
  assert.deepEqual(substituteDeep(entry, context), {
    url: "https://mcp.example.com/mcp",
    args: ["--root", "/work/project", 3, ["k-1"]],
    env: { "${KEY}": "k-1", NESTED: { deeper: ["/home/ada"] } },
    headers: { Authorization: "Bearer k-1" },
    tools: { include: ["k-1_*"], resources: false },
    timeout: 30,
    enabled: true,
    oauth: null,
  });
});

Deno.test("substituteDeep: the input is not modified", () => {
  const context = contextOf({ KEY: "k" });
  const entry = { args: ["${KEY}"], env: { A: "${KEY}" } };
  const copy = structuredClone(entry);
  const result = substituteDeep(entry, context);
  assert.deepEqual(entry, copy);
  assert.notEqual(result, entry);
  assert.notEqual(result.args, entry.args);
});

Deno.test("substituteDeep: top-level strings and scalars work too", () => {
  const context = contextOf({ KEY: "k" });
  assert.equal(substituteDeep("${KEY}", context), "k");
  assert.equal(substituteDeep(5, context), 5);
  assert.equal(substituteDeep(null, context), null);
  assert.equal(substituteDeep(undefined, context), undefined);
  assert.deepEqual(substituteDeep(["${KEY}", "${userHome}"], context), ["k", "/home/ada"]);
});

Deno.test("substituteDeep: a __proto__ key stays a plain key", () => {
  const entry = JSON.parse('{"env": {"__proto__": "${KEY}"}}');
  const result = substituteDeep(entry, contextOf({ KEY: "k" }));
  assert.ok(Object.hasOwn(result.env, "__proto__"));
  assert.equal(Object.getOwnPropertyDescriptor(result.env, "__proto__")?.value, "k");
  assert.equal(Object.getPrototypeOf(result.env), Object.prototype);
});

Deno.test("substituteDeep: non-plain objects are values, not containers", () => {
  const date = new Date(0);
  const result = substituteDeep({ when: date }, contextOf());
  assert.equal(result.when, date);
});

// --- unresolvedPlaceholders ------------------------------------------------------------------

Deno.test("unresolvedPlaceholders: lists the unset and empty variables as written, once", () => {
  const context = contextOf({ SET: "x", EMPTY: "" });
  assert.deepEqual(
    unresolvedPlaceholders(
      "${SET} ${ UNSET } ${EMPTY} ${userHome} ${/} ${ UNSET } ${env:userHome}",
      context,
    ),
    ["${ UNSET }", "${EMPTY}", "${env:userHome}"],
  );
  assert.deepEqual(unresolvedPlaceholders("no placeholders", context), []);
});
