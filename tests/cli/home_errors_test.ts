/**
 * A `<home>` the CLI cannot use: `AGENT_HOME` naming a file, a home on a read-only file system.
 * The user gets one line naming the file and the problem, never a stack trace.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { existsSync } from "node:fs";
import {
  childEnv,
  cli,
  enable,
  MAIN,
  recordEvents,
  REPO,
  SAMPLE_EVENTS,
  status,
  tempHome,
} from "./_helpers.ts";

Deno.test("AGENT_HOME naming a file: one line saying it is not a folder, exit 1", async () => {
  await using h = await tempHome();
  const file = join(h.home, "not-a-folder");
  await Deno.writeTextFile(file, "x");
  for (const args of [["metrics", "status"], ["webhook", "list"], ["mcp", "list"]]) {
    const result = await cli(file, args);
    assert.equal(result.code, 1, args.join(" "));
    assert.equal(
      result.stderr,
      `agent: <home> ${file} is not a folder: set AGENT_HOME to a folder (it is created when ` +
        "missing), or unset it to use ~/.agent\n",
    );
  }
  const json = await cli(file, ["metrics", "status", "--json"]);
  assert.match(JSON.parse(json.stdout).error.message, /is not a folder/);
});

Deno.test("AGENT_HOME under a file: one line naming the file in the way, exit 1", async () => {
  await using h = await tempHome();
  const file = join(h.home, "not-a-folder");
  await Deno.writeTextFile(file, "x");
  for (const home of [join(file, "home"), join(file, "a", "b")]) {
    for (const args of [["metrics", "status"], ["webhook", "subscribe", "x"], ["gateway", "run"]]) {
      const result = await cli(home, args);
      assert.equal(result.code, 1, args.join(" "));
      assert.equal(
        result.stderr,
        `agent: <home> ${home} cannot be created: ${file} is a file, not a folder. Set ` +
          "AGENT_HOME to a folder (it is created when missing), or unset it to use ~/.agent\n",
      );
    }
  }
  assert.equal(Deno.readTextFileSync(file), "x");
});

Deno.test("agent run and chat with a log they cannot write: one line naming the folder and the fix", async () => {
  await using h = await tempHome();
  const logs = join(h.home, "logs");
  Deno.mkdirSync(join(logs, "gateway.log"), { recursive: true });
  for (const args of [["run", "hi"], ["chat"]]) {
    const result = await cli(h.home, args, { stdin: "" });
    assert.equal(result.code, 1, args.join(" "));
    assert.equal(
      result.stderr,
      `agent: cannot write the log under ${logs}: Is a directory (os error 21): open ` +
        `'${join(logs, "gateway.log")}'. Fix: make ${logs} a folder this user can write, with ` +
        "gateway.log in it a file or absent (check their owner and mode; files created with sudo " +
        "belong to root)\n",
    );
  }
});

Deno.test("gateway run with a log it cannot write: one line naming the folder and the fix, as run", async () => {
  await using h = await tempHome();
  const logs = join(h.home, "logs");
  Deno.mkdirSync(join(logs, "gateway.log"), { recursive: true });
  const result = await cli(h.home, ["gateway", "run"]); // fails before it listens
  assert.equal(result.code, 1, result.stdout);
  assert.equal(
    result.stderr,
    `agent: cannot write the log under ${logs}: Is a directory (os error 21): open ` +
      `'${join(logs, "gateway.log")}'. Fix: make ${logs} a folder this user can write, with ` +
      "gateway.log in it a file or absent (check their owner and mode; files created with sudo " +
      "belong to root)\n",
  );
});

/** Whether bubblewrap can run a process with `sandbox` here (it needs user namespaces). */
async function canSandbox(sandbox: string[]): Promise<boolean> {
  try {
    const { success } = await new Deno.Command("bwrap", {
      args: ["--bind", "/", "/", ...sandbox, "--dev", "/dev", "true"],
      stdout: "null",
      stderr: "null",
    }).output();
    return success;
  } catch {
    return false;
  }
}

/**
 * Runs `agent <args>` on `home` under bubblewrap with `sandbox` (a read-only mount, or no
 * capabilities, so that even root gets "Permission denied" from a mode-000 folder).
 */
async function sandboxedCli(sandbox: string[], home: string, args: string[]) {
  const output = await new Deno.Command("bwrap", {
    args: [
      ...["--bind", "/", "/", ...sandbox, "--dev", "/dev", "--proc", "/proc"],
      ...[Deno.execPath(), "run", "-A", "--quiet", "--config", join(REPO, "deno.json")],
      ...[MAIN, ...args],
    ],
    env: childEnv(home),
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
}

const probe = await Deno.makeTempDir();
const READ_ONLY = await canSandbox(["--ro-bind", probe, probe]);
await Deno.remove(probe);
if (!READ_ONLY) console.log("home_errors_test: skipping: bubblewrap cannot mount read-only here");
const NO_CAPABILITIES = ["--cap-drop", "ALL"];
const UNPRIVILEGED = await canSandbox(NO_CAPABILITIES);
if (!UNPRIVILEGED) console.log("home_errors_test: skipping: bubblewrap cannot drop capabilities");

Deno.test({
  name: "a read-only <home>: the write names the real file and the fix, no stack trace",
  ignore: !READ_ONLY,
  fn: async () => {
    await using h = await tempHome();
    await Deno.writeTextFile(h.config, "# mine\n");
    const run = (args: string[]) => sandboxedCli(["--ro-bind", h.home, h.home], h.home, args);
    const text = await run(["metrics", "enable"]);
    assert.equal(text.code, 1, text.stderr);
    const message = `cannot write ${h.config}: Read-only file system (os error 30). Fix: ` +
      `${h.home} is on a read-only file system: remount it read-write, or set AGENT_HOME to a ` +
      "folder on a writable one, then run the command again";
    assert.equal(text.stderr, `agent: ${message}\n`);
    const json = await run(["metrics", "enable", "--json"]);
    assert.equal(json.code, 1);
    assert.equal(JSON.parse(json.stdout).error.message, message);
    assert.equal(await Deno.readTextFile(h.config), "# mine\n");
  },
});

/** What `metrics status` says of a store it could only open read-only. */
function readOnlyWarning(db: string, folder: string): RegExp {
  const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(
    `the metrics store ${escape(db)} cannot be written \\(.+\\), so it is shown read-only and ` +
      `nothing is recorded, exported or sent from it\\. ${escape(accessFix(folder))}`,
  );
}

/** The fix of a metrics folder this user may not read or write, as the CLI words it. */
function accessFix(folder: string): string {
  return `Fix: make ${folder} and the files in it readable and writable by this user (check ` +
    "their owner and mode, and that the file system is not read-only; files created with sudo " +
    "belong to root)";
}

Deno.test({
  name: "a read-only metrics store: the fix is access, not `metrics reset`; reset says it failed",
  ignore: !READ_ONLY,
  fn: async () => {
    await using h = await tempHome();
    await enable(h.home);
    recordEvents(h.home, SAMPLE_EVENTS);
    const db = join(h.metrics, "metrics.sqlite3");
    const readOnly = ["--ro-bind", h.metrics, h.metrics];
    const result = await sandboxedCli(readOnly, h.home, ["metrics", "export"]);
    assert.equal(result.code, 1, result.stderr);
    assert.ok(
      result.stderr.startsWith(`agent: the metrics store ${db} cannot be opened (`) &&
        result.stderr.endsWith(`). ${accessFix(h.metrics)}; the counts in it are kept\n`),
      result.stderr,
    );
    assert.doesNotMatch(result.stderr, /metrics reset/);
    const reset = await sandboxedCli(readOnly, h.home, ["metrics", "reset", "--yes", "--json"]);
    assert.equal(reset.code, 1, reset.stdout);
    assert.equal(reset.stderr, "");
    assert.equal(
      JSON.parse(reset.stdout).error.message,
      `cannot delete ${h.metrics} (Read-only file system (os error 30): remove '${h.metrics}'); ` +
        `part of it may be deleted already. ${accessFix(h.metrics)}, then run ` +
        "`agent metrics reset` again",
    );
    assert.ok(Deno.statSync(db).isFile);
  },
});

Deno.test({
  name: "metrics status on a store it cannot write shows it read-only, with the fix",
  ignore: !READ_ONLY || !UNPRIVILEGED,
  fn: async (t) => {
    await using h = await tempHome();
    await enable(h.home);
    recordEvents(h.home, SAMPLE_EVENTS);
    const expected = await status(h.home);
    assert.equal(expected.store_writable, true);
    const db = join(h.metrics, "metrics.sqlite3");
    const check = async (sandbox: string[]) => {
      const json = await sandboxedCli(sandbox, h.home, ["metrics", "status", "--json"]);
      assert.equal(json.code, 0, json.stderr);
      const doc = JSON.parse(json.stdout);
      assert.equal(doc.store_exists, true);
      assert.equal(doc.store_writable, false);
      assert.equal(doc.install_id, expected.install_id);
      assert.equal(doc.pending_counters, expected.pending_counters);
      assert.equal(doc.warnings.length, 1, doc.warnings);
      assert.match(doc.warnings[0], readOnlyWarning(db, h.metrics));
      // On stderr too, once, as without --json.
      assert.equal(json.stderr, `warning: ${doc.warnings[0]}\n`);
      const text = await sandboxedCli(sandbox, h.home, ["metrics", "status"]);
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, new RegExp(`Install id: +${expected.install_id}`));
      assert.match(text.stderr, /^warning: the metrics store .* cannot be written/);
      assert.match(text.stderr, readOnlyWarning(db, h.metrics));
    };
    await t.step("a read-only file system", () => check(["--ro-bind", h.metrics, h.metrics]));
    await t.step("a folder this user may not write", async () => {
      Deno.chmodSync(h.metrics, 0o500);
      try {
        await check(NO_CAPABILITIES);
      } finally {
        Deno.chmodSync(h.metrics, 0o700);
      }
    });
    assert.deepEqual(await status(h.home), expected, "nothing was changed");
  },
});

Deno.test("metrics status --json without a store: store_writable is null, and nothing is created", async () => {
  await using h = await tempHome();
  const doc = await status(h.home);
  assert.deepEqual([doc.store_exists, doc.store_writable], [false, null]);
  assert.equal(existsSync(h.metrics), false);
});

Deno.test({
  name:
    "a metrics folder this user may not look at: reset says so (exit 1), not 'nothing to delete'",
  ignore: !UNPRIVILEGED,
  fn: async () => {
    await using h = await tempHome();
    await enable(h.home);
    recordEvents(h.home, SAMPLE_EVENTS);
    const telemetry = join(h.home, "telemetry");
    Deno.chmodSync(telemetry, 0o000);
    try {
      const reset = await sandboxedCli(NO_CAPABILITIES, h.home, ["metrics", "reset", "--yes"]);
      assert.equal(reset.code, 1, reset.stdout);
      assert.equal(reset.stdout, "");
      assert.equal(
        reset.stderr,
        `agent: cannot look at ${h.metrics} (Permission denied (os error 13): stat ` +
          `'${h.metrics}'). ${accessFix(h.metrics)}\n`,
      );
      const status = await sandboxedCli(NO_CAPABILITIES, h.home, ["metrics", "status"]);
      assert.equal(status.code, 1, status.stdout);
      assert.match(status.stderr, /cannot be opened \(Permission denied/);
      assert.ok(status.stderr.includes(accessFix(h.metrics)), status.stderr);
    } finally {
      Deno.chmodSync(telemetry, 0o700);
    }
    assert.ok(Deno.statSync(join(h.metrics, "metrics.sqlite3")).isFile);
  },
});

Deno.test({
  name: "a <home> this user may not open: the error names that folder to fix, not config.yaml",
  ignore: !UNPRIVILEGED,
  fn: async () => {
    await using h = await tempHome();
    await Deno.writeTextFile(h.config, "# mine\n");
    Deno.chmodSync(h.home, 0o000);
    try {
      for (const args of [["metrics", "status"], ["mcp", "add", "x", "--command", "ls"]]) {
        const result = await sandboxedCli(NO_CAPABILITIES, h.home, args);
        assert.equal(result.code, 1, args.join(" "));
        assert.equal(
          result.stderr,
          `agent: Permission denied (os error 13): cannot read '${h.config}': this user may not ` +
            `open the folder '${h.home}'. Fix: give this user access to it (chmod u+rwx ` +
            `'${h.home}' if it is theirs; otherwise check its owner and mode: folders created ` +
            "with sudo belong to root), then run the command again\n",
        );
      }
    } finally {
      Deno.chmodSync(h.home, 0o700);
    }
    assert.equal(await Deno.readTextFile(h.config), "# mine\n");
  },
});

/** The fix of a write the folder `folder` refused, as the CLI words it. */
function writeFix(folder: string, created?: string): string {
  return `Fix: make ${folder} a folder this user can write` +
    (created ? `, so that ${created} can be created in it` : "") +
    " (check its owner and mode; folders created with sudo belong to root), then run the " +
    "command again";
}

Deno.test({
  name: "a <home> this user may not write: each write names the file, the folder and the fix",
  ignore: !UNPRIVILEGED,
  fn: async () => {
    await using h = await tempHome();
    await Deno.writeTextFile(h.config, "# mine\n");
    const subscriptions = join(h.home, "webhook_subscriptions.json");
    const cases: [string[], string][] = [
      [["mcp", "add", "wiki", "--command", "ls"], h.config],
      [["metrics", "enable"], h.config],
      [["webhook", "subscribe", "github"], subscriptions],
    ];
    Deno.chmodSync(h.home, 0o500);
    try {
      for (const [args, file] of cases) {
        const result = await sandboxedCli(NO_CAPABILITIES, h.home, args);
        assert.equal(result.code, 1, args.join(" "));
        assert.equal(
          result.stderr,
          `agent: cannot write ${file}: Permission denied (os error 13). ${writeFix(h.home)}\n`,
        );
      }
    } finally {
      Deno.chmodSync(h.home, 0o700);
    }
    assert.equal(await Deno.readTextFile(h.config), "# mine\n");
    assert.equal(existsSync(subscriptions), false);
  },
});

Deno.test({
  name: "a missing <home> in a folder this user may not write: that folder is named, not mkdir",
  ignore: !UNPRIVILEGED,
  fn: async () => {
    await using h = await tempHome();
    const home = join(h.home, "agent");
    Deno.chmodSync(h.home, 0o500);
    try {
      const add = await sandboxedCli(NO_CAPABILITIES, home, ["mcp", "add", "x", "--command", "ls"]);
      assert.equal(add.code, 1, add.stdout);
      assert.equal(
        add.stderr,
        `agent: cannot write ${join(home, "config.yaml")}: Permission denied (os error 13). ` +
          `${writeFix(h.home, home)}\n`,
      );
      const setup = await sandboxedCli(NO_CAPABILITIES, home, [
        ...["gateway", "setup", "--enable", "--port", "8700"],
      ]);
      assert.equal(setup.code, 1, setup.stdout);
      assert.equal(
        setup.stderr,
        `agent: cannot write ${join(home, ".env")}: Permission denied (os error 13); nothing ` +
          `was changed. ${writeFix(h.home, home)}\n`,
      );
    } finally {
      Deno.chmodSync(h.home, 0o700);
    }
    assert.equal(existsSync(home), false);
  },
});

Deno.test({
  name: "gateway setup on a <home> it may not write: the folder and the fix, nothing changed",
  ignore: !UNPRIVILEGED || !READ_ONLY,
  fn: async () => {
    await using h = await tempHome();
    await Deno.writeTextFile(h.config, "# mine\n");
    const dotenv = join(h.home, ".env");
    const args = ["gateway", "setup", "--enable", "--port", "8700"];
    const before = `agent: cannot write ${dotenv}: `;
    Deno.chmodSync(h.home, 0o500);
    try {
      const denied = await sandboxedCli(NO_CAPABILITIES, h.home, args);
      assert.equal(denied.code, 1, denied.stdout);
      assert.equal(
        denied.stderr,
        `${before}Permission denied (os error 13); nothing was changed. Fix: make ${h.home} a ` +
          "folder this user can write (check its owner and mode; folders created with sudo " +
          "belong to root), then run setup again\n",
      );
    } finally {
      Deno.chmodSync(h.home, 0o700);
    }
    const readOnly = await sandboxedCli(["--ro-bind", h.home, h.home], h.home, args);
    assert.equal(readOnly.code, 1, readOnly.stdout);
    assert.equal(
      readOnly.stderr,
      `${before}Read-only file system (os error 30); nothing was changed. Fix: ${h.home} is on ` +
        "a read-only file system: remount it read-write, or set AGENT_HOME to a folder on a " +
        "writable one, then run setup again\n",
    );
    assert.equal(await Deno.readTextFile(h.config), "# mine\n");
    assert.equal(existsSync(dotenv), false);
  },
});
