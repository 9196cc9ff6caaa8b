import assert from "node:assert/strict";
import { join } from "node:path";
import {
  findSandbox,
  MAX_STDERR_BYTES,
  parseScriptOutput,
  resolveScript,
  runRouteScript,
  SANDBOX_PATH,
  scriptInterpreter,
  type ScriptOutcome,
  type ScriptRequest,
  type ScriptSandbox,
} from "../../src/webhook/scripts.ts";

// --- optional tools: tests that need them are ignored, saying why ---------------------------

const SANDBOX = await findSandbox();
const NO_SANDBOX = "error" in SANDBOX;
if ("error" in SANDBOX) console.log(`scripts_test: skipping bubblewrap tests: ${SANDBOX.error}`);

const HOST_PYTHON = await commandWorks("python3", ["--version"]);
if (!HOST_PYTHON) console.log("scripts_test: skipping python tests: python3 is not on PATH");
const SANDBOX_PYTHON = SANDBOX_PATH.split(":").some((dir) => isFile(join(dir, "python3")));
if (!NO_SANDBOX && !SANDBOX_PYTHON) {
  console.log(`scripts_test: skipping sandboxed python tests: no python3 in ${SANDBOX_PATH}`);
}

const HOST_SETSID = await commandWorks("setsid", ["true"]);
if (!HOST_SETSID) {
  console.log("scripts_test: skipping detached-child tests: setsid (util-linux) is not on PATH");
}

// --- helpers --------------------------------------------------------------------------------

const PAYLOAD = { action: "opened", number: 7, title: "Fix it" };

interface Home extends AsyncDisposable {
  home: string;
  scriptsDir: string;
}

/** A temporary `<home>` with a `.env` secret and `scripts/` holding `files`. */
async function makeHome(files: Record<string, string> = {}): Promise<Home> {
  const home = await Deno.realPath(await Deno.makeTempDir({ prefix: "scripts_test_" }));
  const scriptsDir = join(home, "scripts");
  await Deno.mkdir(scriptsDir);
  await Deno.writeTextFile(join(home, ".env"), "OPENAI_API_KEY=sk-home-secret\n");
  await Deno.writeTextFile(join(home, "config.yaml"), "model: x\n");
  for (const [name, text] of Object.entries(files)) {
    await Deno.mkdir(join(scriptsDir, name, ".."), { recursive: true });
    await Deno.writeTextFile(join(scriptsDir, name), text);
  }
  return {
    home,
    scriptsDir,
    [Symbol.asyncDispose]: () => Deno.remove(home, { recursive: true }),
  };
}

function request(
  scriptsDir: string,
  script: string,
  overrides: Partial<ScriptRequest> = {},
): ScriptRequest {
  return {
    scriptsDir,
    script,
    payload: PAYLOAD,
    event: "pull_request",
    deliveryId: "d-42",
    route: "ci",
    timeoutMs: 30_000, // a ceiling for a stuck test, never waited for
    sandbox: "off",
    ...overrides,
  };
}

/** Runs one script in a fresh home. */
async function runScript(
  script: string,
  text: string,
  overrides: Partial<ScriptRequest> = {},
): Promise<ScriptOutcome> {
  await using home = await makeHome({ [script]: text });
  return await runRouteScript(request(home.scriptsDir, script, overrides));
}

Deno.test("a script reads and writes integers beyond 2^53 with every digit", async () => {
  const outcome = await runScript(
    "pass.sh",
    '#!/bin/bash\nread -r line\necho "{\\"in\\": ${line}, \\"out\\": 98765432109876543210}"\n',
    { payload: { id: 1234567890123456789n } },
  );
  assert.deepEqual(outcome, {
    kind: "payload",
    payload: { in: { id: 1234567890123456789n }, out: 98765432109876543210n },
  });
});

function errorOf(result: { path: string } | { error: string }): string {
  assert.ok("error" in result, `expected an error, got ${JSON.stringify(result)}`);
  return result.error;
}

function ignored(outcome: ScriptOutcome, reason: string): string {
  assert.equal(outcome.kind, "ignored", JSON.stringify(outcome));
  const { reason: actual, detail } = outcome as { reason: string; detail: string };
  assert.equal(actual, reason, detail);
  return detail;
}

function scriptOutput(outcome: ScriptOutcome): string {
  assert.equal(outcome.kind, "payload", JSON.stringify(outcome));
  const payload = (outcome as { payload: Record<string, unknown> }).payload;
  assert.equal(typeof payload.script_output, "string", JSON.stringify(payload));
  return payload.script_output as string;
}

async function commandWorks(program: string, args: string[]): Promise<boolean> {
  try {
    return (await new Deno.Command(program, { args, stdout: "null", stderr: "null" }).output())
      .success;
  } catch {
    return false;
  }
}

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/** Live (not zombie) processes whose command line holds `marker`. */
function processesWith(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      if (!Deno.readTextFileSync(`/proc/${entry.name}/cmdline`).includes(marker)) continue;
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      const state = stat.slice(stat.lastIndexOf(")") + 2)[0];
      if (state !== "Z" && state !== "X") pids.push(Number(entry.name));
    } catch {
      // Gone while we looked.
    }
  }
  return pids;
}

/**
 * Polls until `condition` holds: the death of a process that is not our child cannot be awaited,
 * and SIGKILL takes effect a moment after kill() returns.
 */
async function waitFor(condition: () => boolean, what: string, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

// --- resolveScript --------------------------------------------------------------------------

Deno.test("resolveScript: a file in the folder or below resolves to its real path", async () => {
  await using h = await makeHome({ "a.sh": "", "ci/b.py": "" });
  assert.deepEqual(resolveScript(h.scriptsDir, "a.sh"), { path: join(h.scriptsDir, "a.sh") });
  assert.deepEqual(resolveScript(h.scriptsDir, "ci/b.py"), { path: join(h.scriptsDir, "ci/b.py") });
  assert.deepEqual(resolveScript(h.scriptsDir, "ci/../a.sh"), {
    path: join(h.scriptsDir, "a.sh"),
  });
});

Deno.test("resolveScript: an absolute path is rejected, even one inside the folder", async () => {
  await using h = await makeHome({ "a.sh": "" });
  for (const script of ["/etc/passwd", join(h.scriptsDir, "a.sh")]) {
    const error = errorOf(resolveScript(h.scriptsDir, script));
    assert.match(error, /is an absolute path: name a file relative to/);
    assert.ok(error.includes(JSON.stringify(script)), error);
  }
});

Deno.test("resolveScript: .. escapes are rejected before touching the file system", async () => {
  await using h = await makeHome();
  await Deno.writeTextFile(join(h.home, "x.sh"), "echo escaped\n");
  for (const script of ["../x.sh", "a/../../x.sh", "../scripts/../x.sh", ".."]) {
    assert.match(errorOf(resolveScript(h.scriptsDir, script)), /points outside .*move it there/);
  }
});

Deno.test("resolveScript: a symlink to a file outside the folder is rejected", async () => {
  await using h = await makeHome();
  await Deno.writeTextFile(join(h.home, "outside.sh"), "echo escaped\n");
  await Deno.symlink(join(h.home, "outside.sh"), join(h.scriptsDir, "link.sh"));
  await Deno.symlink("..", join(h.scriptsDir, "up"));
  const error = errorOf(resolveScript(h.scriptsDir, "link.sh"));
  assert.match(error, /"link\.sh" resolves to .*outside\.sh, outside .*scripts: only files/);
  assert.match(errorOf(resolveScript(h.scriptsDir, "up/outside.sh")), /resolves to .* outside/);
});

Deno.test("resolveScript: a symlink inside the folder resolves to its target", async () => {
  await using h = await makeHome({ "v2/run.sh": "" });
  await Deno.symlink("v2/run.sh", join(h.scriptsDir, "latest.sh"));
  assert.deepEqual(resolveScript(h.scriptsDir, "latest.sh"), {
    path: join(h.scriptsDir, "v2/run.sh"),
  });
});

Deno.test("resolveScript: a scripts folder that is itself a symlink works", async () => {
  await using h = await makeHome({ "a.sh": "" });
  const link = join(h.home, "scripts-link");
  await Deno.symlink(h.scriptsDir, link);
  assert.deepEqual(resolveScript(link, "a.sh"), { path: join(h.scriptsDir, "a.sh") });
});

Deno.test("resolveScript: a folder or a non-regular file is rejected", async () => {
  await using h = await makeHome({ "ci/run.sh": "" });
  assert.match(errorOf(resolveScript(h.scriptsDir, "ci")), /"ci" is a folder .*"ci\/run\.sh"/);
  assert.match(errorOf(resolveScript(h.scriptsDir, ".")), /is a folder/);
  const fifo = await new Deno.Command("mkfifo", { args: [join(h.scriptsDir, "pipe")] }).output();
  assert.ok(fifo.success);
  assert.match(errorOf(resolveScript(h.scriptsDir, "pipe")), /not a regular file: use a plain/);
});

Deno.test("resolveScript: a missing file or folder is named with what to do", async () => {
  await using h = await makeHome();
  assert.match(
    errorOf(resolveScript(h.scriptsDir, "nope.sh")),
    /"nope\.sh" not found at .*scripts\/nope\.sh: create it there or fix the route's script/,
  );
  await Deno.symlink("gone.sh", join(h.scriptsDir, "dangling.sh"));
  assert.match(errorOf(resolveScript(h.scriptsDir, "dangling.sh")), /not found/);
  assert.match(
    errorOf(resolveScript(join(h.home, "missing"), "a.sh")),
    /scripts folder .*missing does not exist: create it and put "a\.sh" there/,
  );
  assert.match(errorOf(resolveScript(h.scriptsDir, " ")), /route script is empty/);
});

// --- scriptInterpreter ----------------------------------------------------------------------

Deno.test("scriptInterpreter: .sh/.bash → bash, .ts/.js → deno, anything else → python3", () => {
  const cases: [string, string][] = [
    ["a.sh", "bash"],
    ["ci/a.BASH", "bash"],
    ["a.ts", "deno"],
    ["a.js", "deno"],
    ["a.py", "python3"],
    ["a", "python3"],
    ["a.sh.txt", "python3"],
    [".sh", "bash"], // SPEC: "files ending .sh"
    ["a.mjs", "python3"],
  ];
  for (const [script, interpreter] of cases) {
    assert.equal(scriptInterpreter(script), interpreter, script);
  }
});

// --- parseScriptOutput ----------------------------------------------------------------------

Deno.test("parseScriptOutput: blank and [SILENT] ignore, objects replace, the rest is added", () => {
  assert.equal((parseScriptOutput(" \n\t", PAYLOAD) as { reason: string }).reason, "empty");
  assert.equal((parseScriptOutput("\n[SILENT]\n", PAYLOAD) as { reason: string }).reason, "silent");
  assert.deepEqual(parseScriptOutput('{"a":{"b":[1]}}', PAYLOAD), {
    kind: "payload",
    payload: { a: { b: [1] } },
  });
  for (const text of ["[1,2]", "42", '"str"', "null", "[SILENT] and more", "{broken"]) {
    assert.deepEqual(parseScriptOutput(`${text}\n`, PAYLOAD), {
      kind: "payload",
      payload: { ...PAYLOAD, script_output: text },
    });
  }
});

Deno.test("parseScriptOutput: a JSON object that repeats a key or nests too deep ignores the event, saying why", () => {
  assert.deepEqual(parseScriptOutput('{"labels":["a"],"title":"t","labels":["b"]}\n', PAYLOAD), {
    kind: "ignored",
    reason: "ambiguous_output",
    detail: 'the script\'s JSON output has the key "labels" twice in the object at $; each key ' +
      "may appear once per object",
  });
  const deep = '{"a":'.repeat(70) + "1" + "}".repeat(70);
  const outcome = parseScriptOutput(deep, PAYLOAD) as { reason: string; detail: string };
  assert.equal(outcome.reason, "ambiguous_output");
  assert.match(outcome.detail, /^the script's JSON output nests objects and arrays more than 64/);
  // The same key in two different objects is not a repeat.
  assert.deepEqual(parseScriptOutput('{"a":{"id":1},"b":{"id":2}}', PAYLOAD), {
    kind: "payload",
    payload: { a: { id: 1 }, b: { id: 2 } },
  });
});

// --- runRouteScript: outside the sandbox only ----------------------------------------------

Deno.test("runRouteScript: a script outside the folder is blocked, not run", async () => {
  await using h = await makeHome();
  // An absolute path: a script runs in the scripts folder, where a bare `pwned` would land.
  const pwned = join(h.home, "pwned");
  await Deno.writeTextFile(join(h.home, "evil.sh"), `touch '${pwned}'\n`);
  const outcome = await runRouteScript(request(h.scriptsDir, "../evil.sh"));
  assert.equal(outcome.kind, "blocked");
  assert.match((outcome as { detail: string }).detail, /points outside/);
  assert.equal(isFile(pwned), false, "the script did not run");
  assert.equal((await runRouteScript(request(h.scriptsDir, "missing.sh"))).kind, "blocked");
});

Deno.test("runRouteScript: sandbox bwrap without bwrap on PATH is blocked; auto runs bare", async () => {
  // Only bash on PATH: the script uses builtins.
  await using h = await makeHome({ "read_env.sh": 'read -r line < ../.env; echo "$line"\n' });
  const bin = join(h.home, "bin");
  await Deno.mkdir(bin);
  await Deno.symlink("/bin/bash", join(bin, "bash"));
  const env = (name: string) => name === "PATH" ? bin : undefined;
  const blocked = await runRouteScript(
    request(h.scriptsDir, "read_env.sh", { sandbox: "bwrap", env }),
  );
  assert.equal(blocked.kind, "blocked");
  assert.match(
    (blocked as { detail: string }).detail,
    /script_sandbox is bwrap but bwrap \(bubblewrap\) is not on PATH: install it/,
  );
  const bare = await runRouteScript(request(h.scriptsDir, "read_env.sh", { sandbox: "auto", env }));
  assert.equal(scriptOutput(bare), "OPENAI_API_KEY=sk-home-secret");
});

Deno.test("runRouteScript: a bwrap that cannot sandbox here blocks bwrap; auto runs bare", async () => {
  await using h = await makeHome({ "read_env.sh": 'read -r line < ../.env; echo "$line"\n' });
  const bin = join(h.home, "bin");
  await Deno.mkdir(bin);
  await Deno.symlink("/bin/bash", join(bin, "bash"));
  await Deno.writeTextFile(
    join(bin, "bwrap"),
    "#!/bin/bash\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n",
    { mode: 0o755 },
  );
  const env = (name: string) => name === "PATH" ? bin : undefined;
  const found = await findSandbox(env);
  assert.match(
    errorOf(found),
    /bwrap at .*bin\/bwrap cannot create a sandbox here \(bwrap: No permissions to create new namespace\): .*script_sandbox to off/,
  );
  const blocked = await runRouteScript(
    request(h.scriptsDir, "read_env.sh", { sandbox: "bwrap", env }),
  );
  assert.equal(blocked.kind, "blocked");
  assert.match((blocked as { detail: string }).detail, /cannot create a sandbox here/);
  const bare = await runRouteScript(request(h.scriptsDir, "read_env.sh", { sandbox: "auto", env }));
  assert.equal(scriptOutput(bare), "OPENAI_API_KEY=sk-home-secret");
});

Deno.test("runRouteScript: without a sandbox a script can read <home>/.env", async () => {
  // The control of the bubblewrap test below: what the sandbox is there to prevent.
  const outcome = await runScript("peek.sh", "cat ../.env\n");
  assert.equal(scriptOutput(outcome), "OPENAI_API_KEY=sk-home-secret");
});

Deno.test("runRouteScript: a missing interpreter is ignored with what to install", async () => {
  await using h = await makeHome({ "f.py": "print(1)\n", "f.sh": "echo 1\n", "f.ts": "1;\n" });
  const bin = join(h.home, "bin");
  await Deno.mkdir(bin);
  const env = (name: string) => name === "PATH" ? bin : undefined;
  const python = ignored(await runRouteScript(request(h.scriptsDir, "f.py", { env })), "exit");
  assert.ok(
    python.includes(`python3 not found in PATH (${bin}), needed for f.py: install`),
    python,
  );
  const bash = ignored(await runRouteScript(request(h.scriptsDir, "f.sh", { env })), "exit");
  assert.match(bash, /bash not found in PATH/);
  const denoPath = join(bin, "deno");
  const deno = ignored(await runRouteScript(request(h.scriptsDir, "f.ts", { denoPath })), "exit");
  assert.match(deno, /deno not found at .*bin\/deno, needed for f\.ts/);
});

Deno.test("runRouteScript: a compiled agent runs .ts scripts with the deno on PATH", async () => {
  // In a compiled agent, Deno.execPath() is the agent itself: it must not be asked to `run`.
  await using h = await makeHome({ "f.ts": "console.log(JSON.stringify({ via: 'deno' }));\n" });
  const empty = join(h.home, "empty");
  const bin = join(h.home, "bin");
  await Deno.mkdir(empty);
  await Deno.mkdir(bin);
  await Deno.symlink(Deno.execPath(), join(bin, "deno"));
  const standalone = { standalone: true };
  const missing = ignored(
    await runRouteScript(request(h.scriptsDir, "f.ts", {
      ...standalone,
      env: (name) => name === "PATH" ? empty : undefined,
    })),
    "exit",
  );
  assert.ok(missing.includes(`deno not found in PATH (${empty}), needed for f.ts`), missing);
  assert.match(missing, /compiled agent cannot run \.ts\/\.js scripts itself; install Deno/);
  const found = await runRouteScript(request(h.scriptsDir, "f.ts", {
    ...standalone,
    env: (name) => name === "PATH" ? `${empty}:${bin}` : undefined,
  }));
  assert.deepEqual(found, { kind: "payload", payload: { via: "deno" } });
});

Deno.test("runRouteScript: the environment holds no secret of the gateway", async () => {
  const canary = `canary-${crypto.randomUUID()}`;
  const asked = new Set<string>();
  const env = (name: string) => {
    asked.add(name);
    return ["PATH", "LANG", "LC_ALL", "TZ"].includes(name) ? Deno.env.get(name) : canary;
  };
  Deno.env.set("AGENT_TEST_CANARY_SECRET", canary);
  try {
    await using h = await makeHome({ "env.sh": "env\n" });
    const output = scriptOutput(await runRouteScript(request(h.scriptsDir, "env.sh", { env })));
    assert.ok(!output.includes(canary), output);
    const vars = new Map(
      output.split("\n").map((line) => {
        const at = line.indexOf("=");
        return [line.slice(0, at), line.slice(at + 1)] as const;
      }),
    );
    assert.equal(vars.get("AGENT_WEBHOOK_EVENT"), "pull_request");
    assert.equal(vars.get("AGENT_WEBHOOK_DELIVERY_ID"), "d-42");
    assert.equal(vars.get("AGENT_WEBHOOK_ROUTE"), "ci");
    assert.equal(vars.get("HOME"), h.scriptsDir);
    assert.equal(vars.get("PWD"), h.scriptsDir);
    assert.equal(vars.get("PATH"), Deno.env.get("PATH"));
    const allowed = [
      ...["PATH", "LANG", "LC_ALL", "TZ", "HOME", "TMPDIR"],
      ...["AGENT_WEBHOOK_EVENT", "AGENT_WEBHOOK_DELIVERY_ID", "AGENT_WEBHOOK_ROUTE"],
      ...["PWD", "SHLVL", "_"], // set by bash itself
    ];
    assert.deepEqual([...vars.keys()].filter((name) => !allowed.includes(name)), []);
    assert.deepEqual(
      [...asked].filter((name) => !["PATH", "LANG", "LC_ALL", "TZ"].includes(name)),
      [],
    );
  } finally {
    Deno.env.delete("AGENT_TEST_CANARY_SECRET");
  }
});

Deno.test("runRouteScript: a private TMPDIR outside the sandbox is removed afterwards", async () => {
  const output = scriptOutput(
    await runScript("tmp.sh", 'echo hi > "$TMPDIR/note"; echo "$TMPDIR"\n'),
  );
  assert.match(output, /agent-script-/);
  assert.equal(isFile(join(output, "note")), false);
});

// --- runRouteScript: with and without bubblewrap -------------------------------------------

const MODES: { sandbox: ScriptSandbox; ignore: boolean }[] = [
  { sandbox: "off", ignore: false },
  { sandbox: "bwrap", ignore: NO_SANDBOX },
];

for (const { sandbox, ignore } of MODES) {
  const test = (name: string, fn: () => Promise<void>, skip = false) =>
    Deno.test({ name: `runRouteScript [sandbox ${sandbox}]: ${name}`, ignore: ignore || skip, fn });
  const run = (script: string, text: string, overrides: Partial<ScriptRequest> = {}) =>
    runScript(script, text, { sandbox, ...overrides });

  test("a bash script replaces the payload with the JSON object it prints", async () => {
    const outcome = await run(
      "tag.sh",
      'read -r body\nprintf \'{"route":"%s","event":"%s","delivery":"%s","original":%s}\\n\' ' +
        '"$AGENT_WEBHOOK_ROUTE" "$AGENT_WEBHOOK_EVENT" "$AGENT_WEBHOOK_DELIVERY_ID" "$body"\n',
    );
    assert.deepEqual(outcome, {
      kind: "payload",
      payload: { route: "ci", event: "pull_request", delivery: "d-42", original: PAYLOAD },
    });
  });

  test("text output is added to the payload as script_output", async () => {
    const outcome = await run("note.bash", "echo '  looks risky'\necho 'second line'\n");
    assert.deepEqual(outcome, {
      kind: "payload",
      payload: { ...PAYLOAD, script_output: "looks risky\nsecond line" },
    });
    assert.equal(scriptOutput(await run("list.sh", "echo '[1, 2]'\n")), "[1, 2]");
  });

  test("printing nothing or [SILENT] ignores the event", async () => {
    assert.match(ignored(await run("quiet.sh", "true\n"), "empty"), /printed nothing/);
    assert.match(ignored(await run("silent.sh", "echo '[SILENT]'\n"), "silent"), /\[SILENT\]/);
  });

  test("a nonzero exit ignores the event, with stderr in the detail", async () => {
    const detail = ignored(
      await run("fail.sh", "echo '{\"a\":1}'\necho 'no token configured' >&2\nexit 3\n"),
      "exit",
    );
    assert.equal(detail, 'route script "fail.sh" exited with code 3: no token configured');
  });

  test("bytes that are not UTF-8 become U+FFFD; a closed stdout is empty output", async () => {
    assert.equal(
      scriptOutput(await run("bytes.sh", "printf 'ok \\377\\376 end'\n")),
      "ok \uFFFD\uFFFD end",
    );
    assert.deepEqual(await run("bytes_json.sh", `printf '{"a":"\\377"}'\n`), {
      kind: "payload",
      payload: { a: "\uFFFD" },
    });
    const closed = "exec >&-\necho '{\"late\":1}' 2>/dev/null\necho 'stdout is closed' >&2\n";
    assert.equal(ignored(await run("closed.sh", closed), "empty"), "the script printed nothing");
  });

  test("a script killed by a signal ignores the event, saying so", async () => {
    const detail = ignored(await run("killed.sh", "echo '{\"a\":1}'\nkill -KILL $$\n"), "exit");
    // bubblewrap reports a signal of its child as exit code 128 + the signal's number, as it
    // does a script's own `exit 137`: the answer names both.
    assert.equal(
      detail,
      sandbox === "off"
        ? 'route script "killed.sh" was killed by SIGKILL'
        : 'route script "killed.sh" exited with code 137 (or was killed by SIGKILL: in the ' +
          "sandbox both end so)",
    );
  });

  test("stderr is cut at 64 KiB and a flood of it does not block the script", async () => {
    const detail = ignored(
      await run("noisy.sh", "head -c 1000000 /dev/zero | tr '\\0' e >&2\nexit 1\n"),
      "exit",
    );
    assert.ok(detail.endsWith("e".repeat(100)));
    assert.ok(detail.length <= MAX_STDERR_BYTES + 100, String(detail.length));
  });

  test("a .ts script runs in deno and its JSON replaces the payload", async () => {
    const outcome = await run(
      "enrich.ts",
      "const payload: Record<string, unknown> = await new Response(Deno.stdin.readable).json();\n" +
        "console.log(JSON.stringify({ ...payload, seen: true }));\n",
    );
    assert.deepEqual(outcome, { kind: "payload", payload: { ...PAYLOAD, seen: true } });
    assert.deepEqual(await run("plain.js", "console.log(JSON.stringify({ js: 1 }));\n"), {
      kind: "payload",
      payload: { js: 1 },
    });
  });

  test("a .ts script reads the event variables it is given", async () => {
    const outcome = await run(
      "vars.ts",
      "const names = ['AGENT_WEBHOOK_EVENT', 'AGENT_WEBHOOK_DELIVERY_ID', 'AGENT_WEBHOOK_ROUTE'];\n" +
        "console.log(JSON.stringify(Object.fromEntries(names.map((n) => [n, Deno.env.get(n)]))));\n",
    );
    assert.deepEqual(outcome, {
      kind: "payload",
      payload: {
        AGENT_WEBHOOK_EVENT: "pull_request",
        AGENT_WEBHOOK_DELIVERY_ID: "d-42",
        AGENT_WEBHOOK_ROUTE: "ci",
      },
    });
  });

  test("a .ts script has no permissions: no file reads or writes, no network, no other env, no subprocess", async () => {
    const read = ignored(await run("read.ts", 'Deno.readTextFileSync("/etc/hostname");\n'), "exit");
    assert.match(
      read,
      /exited with code 1: .*NotCapable: Requires read access to "\/etc\/hostname"/s,
    );
    const net = ignored(await run("net.ts", 'await fetch("https://example.com/");\n'), "exit");
    assert.match(net, /NotCapable: Requires net access/);
    const env = ignored(await run("env.ts", 'Deno.env.get("HOME");\n'), "exit");
    assert.match(env, /NotCapable: Requires env access/);
    const write = ignored(
      await run("write.ts", 'Deno.writeTextFileSync("made.txt", "x");\n'),
      "exit",
    );
    assert.match(write, /NotCapable: Requires write access to "made\.txt"/);
    const spawn = ignored(await run("spawn.ts", 'new Deno.Command("id").outputSync();\n'), "exit");
    assert.match(spawn, /NotCapable: Requires run access to "id"/);
  });

  test("a .ts script imports its own modules, but no remote, npm or outside module", async () => {
    await using h = await makeHome({
      "lib/tag.ts": 'export const tag = "from-lib";\n',
      "own.ts": 'import { tag } from "./lib/tag.ts";\nconsole.log(JSON.stringify({ tag }));\n',
      // Deno loads these without asking: a remote host of its default list, npm, any local file.
      "remote.ts": 'await import("https://deno.land/x/anything/mod.ts");\n',
      "npm.ts": 'import "npm:left-pad@1.3.0";\n',
      "dotenv.ts": 'import env from "../.env" with { type: "text" };\nconsole.log(env);\n',
      "system.ts": 'import host from "/etc/hostname" with { type: "text" };\nconsole.log(host);\n',
    });
    const runIn = async (script: string) =>
      await runRouteScript(request(h.scriptsDir, script, { sandbox }));
    assert.deepEqual(await runIn("own.ts"), { kind: "payload", payload: { tag: "from-lib" } });
    assert.match(
      ignored(await runIn("remote.ts"), "exit"),
      /A remote specifier was requested: "https:\/\/deno\.land\/x\/anything\/mod\.ts", but --no-remote/,
    );
    assert.match(ignored(await runIn("npm.ts"), "exit"), /but --no-npm is specified/);
    const dotenv = ignored(await runIn("dotenv.ts"), "exit");
    assert.ok(
      dotenv.includes(
        `Unsupported scheme "outside-the-scripts-folder" for module ` +
          `"outside-the-scripts-folder:${h.home}/.env"`,
      ),
      dotenv,
    );
    assert.ok(!dotenv.includes("sk-home-secret"), dotenv);
    assert.match(
      ignored(await runIn("system.ts"), "exit"),
      /Unsupported scheme "outside-the-scripts-folder" for module "outside-the-scripts-folder:\/etc\/hostname"/,
    );
  });

  test(
    "a python script gets the payload on stdin",
    async () => {
      const outcome = await run(
        "count.py",
        "import json, os, sys\npayload = json.load(sys.stdin)\n" +
          'print(json.dumps({"n": payload["number"] + 1, "route": os.environ["AGENT_WEBHOOK_ROUTE"]}))\n',
      );
      assert.deepEqual(outcome, { kind: "payload", payload: { n: 8, route: "ci" } });
    },
    sandbox === "off" ? !HOST_PYTHON : !SANDBOX_PYTHON,
  );

  test("a timeout kills the script and what it started in the background", async () => {
    const marker = `agent-test-sleeper-${crypto.randomUUID()}`;
    const started = Date.now();
    const running = run("slow.sh", `(exec -a ${marker} sleep 30) &\nwait\n`, { timeoutMs: 500 });
    await waitFor(() => processesWith(marker).length > 0, "the background sleep to start");
    const detail = ignored(await running, "timeout");
    assert.ok(Date.now() - started < 10_000, "the run waited for the sleep instead of killing it");
    assert.match(detail, /ran longer than 0\.5 s and was killed: .*script_timeout_seconds/);
    await waitFor(() => processesWith(marker).length === 0, "the background sleep to die");
  });

  test("what a script leaves running when it exits is killed", async () => {
    const marker = `agent-test-leftover-${crypto.randomUUID()}`;
    const outcome = await run("leave.sh", `(exec -a ${marker} sleep 30) &\necho '{"ok":true}'\n`, {
      timeoutMs: 10_000,
    });
    assert.deepEqual(outcome, { kind: "payload", payload: { ok: true } });
    await waitFor(() => processesWith(marker).length === 0, "the leftover sleep to die");
  });

  test(
    "a child detached with setsid that keeps stdout open does not hold the outcome",
    async () => {
      const marker = `agent-test-detached-${crypto.randomUUID()}`;
      // The script goes on once the child is in its own session (out of reach of the group kill).
      const detach = `cat >/dev/null\nfifo="$TMPDIR/up"\nmkfifo "$fifo"\n` +
        `setsid bash -c 'echo up > "$1"; exec -a ${marker} sleep 42' _ "$fifo" &\n` +
        `read -r _ < "$fifo"\n`;
      const warnings: string[] = [];
      const overrides = { timeoutMs: 20_000, warn: (text: string) => warnings.push(text) };
      try {
        const started = Date.now();
        const outcome = await run("bgsetsid.sh", `${detach}echo '{"bgs":true}'\n`, overrides);
        const failed = await run("bgfail.sh", `${detach}echo 'no token' >&2\nexit 3\n`, overrides);
        const elapsed = Date.now() - started;
        assert.deepEqual(outcome, { kind: "payload", payload: { bgs: true } });
        assert.equal(
          ignored(failed, "exit"),
          'route script "bgfail.sh" exited with code 3: no token',
        );
        // Both runs together well under one timeout: neither waited for the detached sleep.
        assert.ok(elapsed < 10_000, `the runs took ${elapsed} ms, as if waiting for the child`);
        if (sandbox === "off") {
          // It left the script's process group: only the warning can tell about it.
          assert.equal(warnings.length, 2, warnings.join("\n"));
          assert.match(
            warnings[0],
            /^route script "bgsetsid\.sh" exited, but a process it started \(with setsid, .*kept its stdout or stderr open: the gateway stopped reading 200 ms after the script exited.*>\/dev\/null 2>&1 &/,
          );
          assert.ok(!warnings[0].includes("ran longer"), warnings[0]);
          assert.match(warnings[1], /^route script "bgfail\.sh" exited, but/);
        } else {
          // The sandbox's pid namespace ends with the script, and the child with it.
          assert.deepEqual(warnings, []);
          await waitFor(() => processesWith(marker).length === 0, "the detached sleep to die");
        }
      } finally {
        for (const pid of processesWith(marker)) Deno.kill(pid, "SIGKILL");
      }
    },
    !HOST_SETSID,
  );

  test("a flood of stdout stops the script at maxOutputBytes", async () => {
    const marker = `agent-test-flood-${crypto.randomUUID()}`;
    const detail = ignored(
      await run("flood.sh", `exec -a ${marker} yes\n`, { maxOutputBytes: 64 * 1024 }),
      "output_too_large",
    );
    assert.match(detail, /printed more than 65536 bytes and was killed/);
    await waitFor(() => processesWith(marker).length === 0, "yes to die");
    // Exactly at the cap is fine.
    const exact = await run("exact.sh", "head -c 1000 /dev/zero | tr '\\0' a\n", {
      maxOutputBytes: 1000,
    });
    assert.equal(scriptOutput(exact), "a".repeat(1000));
  });

  test("a script that does not read a large payload does not break the run", async () => {
    const payload = { blob: "x".repeat(4 * 1024 * 1024) };
    assert.deepEqual(await run("ignore_input.sh", "echo '{\"ok\":true}'\n", { payload }), {
      kind: "payload",
      payload: { ok: true },
    });
    assert.equal(
      ignored(await run("bail.sh", "exit 0\n", { payload }), "empty"),
      "the script printed nothing",
    );
  });
}

// --- runRouteScript: what only bubblewrap prevents -----------------------------------------

function sandboxTest(name: string, fn: () => Promise<void>): void {
  Deno.test({ name: `runRouteScript [sandbox bwrap]: ${name}`, ignore: NO_SANDBOX, fn });
}

sandboxTest("nothing of <home> but scripts/ is visible", async () => {
  await using h = await makeHome();
  await Deno.writeTextFile(join(h.scriptsDir, "list.sh"), `ls -A ${h.home}\n`);
  await Deno.writeTextFile(join(h.scriptsDir, "peek.sh"), `cat ${h.home}/.env\n`);
  const sandboxed = request(h.scriptsDir, "", { sandbox: "bwrap" });
  assert.equal(scriptOutput(await runRouteScript({ ...sandboxed, script: "list.sh" })), "scripts");
  const detail = ignored(await runRouteScript({ ...sandboxed, script: "peek.sh" }), "exit");
  assert.match(detail, /\.env: No such file or directory/);
  assert.ok(!detail.includes("sk-home-secret"));
});

sandboxTest("/tmp is private", async () => {
  const id = crypto.randomUUID();
  const hostFile = `/tmp/agent-test-host-${id}`;
  await Deno.writeTextFile(hostFile, "host");
  try {
    const outcome = await runScript(
      "tmp.sh",
      `[ -e ${hostFile} ] && echo visible || echo hidden\n` +
        `echo inside > /tmp/agent-test-inside-${id}\ncat /tmp/agent-test-inside-${id}\n`,
      { sandbox: "bwrap" },
    );
    assert.equal(scriptOutput(outcome), "hidden\ninside");
    assert.equal(isFile(`/tmp/agent-test-inside-${id}`), false);
  } finally {
    await Deno.remove(hostFile);
  }
});

sandboxTest("the scripts folder and the system are read-only", async () => {
  await using h = await makeHome({ "write.sh": "echo x > made.txt\n", "sys.sh": "touch /usr/x\n" });
  const sandboxed = request(h.scriptsDir, "", { sandbox: "bwrap" });
  const scripts = ignored(await runRouteScript({ ...sandboxed, script: "write.sh" }), "exit");
  assert.match(scripts, /made\.txt: Read-only file system/);
  assert.equal(isFile(join(h.scriptsDir, "made.txt")), false);
  const system = ignored(await runRouteScript({ ...sandboxed, script: "sys.sh" }), "exit");
  assert.match(system, /Read-only file system/);
});

sandboxTest("there is no network", async () => {
  const detail = ignored(
    await runScript("net.sh", "exec 3<>/dev/tcp/1.1.1.1/80\n", { sandbox: "bwrap" }),
    "exit",
  );
  assert.match(detail, /Network is unreachable/);
});

sandboxTest("auto uses the sandbox when it works", async () => {
  await using h = await makeHome({ "peek.sh": "cat ../.env\n" });
  const outcome = await runRouteScript(request(h.scriptsDir, "peek.sh", { sandbox: "auto" }));
  assert.match(ignored(outcome, "exit"), /No such file or directory/);
});
