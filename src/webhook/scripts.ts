/**
 * Route scripts (SPEC.md "Payload filters and scripts", decisions.md §6 "Route scripts"): a route's
 * `script` names a file under `<home>/scripts/` that gets the payload as JSON on stdin and decides
 * what happens to the event by what it prints.
 *
 * - The file must resolve (symlinks followed) inside `<home>/scripts/`; anything else is blocked.
 * - `.sh`/`.bash` run with bash, `.ts`/`.js` in a Deno subprocess with no permissions but reading
 *   the three variables below and importing modules of the scripts folder (no remote, `npm:` or
 *   other local module), all others with python3.
 * - The script runs in the scripts folder with a minimal environment (no secrets of the parent)
 *   plus `AGENT_WEBHOOK_EVENT`, `AGENT_WEBHOOK_DELIVERY_ID` and `AGENT_WEBHOOK_ROUTE`, in its own
 *   process group that is killed on timeout and when it exits; its stdout is capped. Once it has
 *   exited, its output is read for at most 200 ms more (a process it started
 *   outside its group may hold it open), with a warning when that cut it short.
 * - With bubblewrap (`script_sandbox: auto|bwrap|off`) it sees a read-only system and scripts
 *   folder, a private `/tmp`, no network and nothing else of `<home>`.
 * - Nonzero exit, timeout, empty stdout or `[SILENT]` → the event is ignored; a JSON object
 *   replaces the payload; any other text is added to it as `script_output`.
 *
 * @module
 */

import { isAbsolute, join, normalize, relative } from "node:path";
import { pathToFileURL } from "node:url";
import { concatBytes } from "../home/files.ts";
import { parseJsonExact, stringifyJsonExact } from "../home/exact_json.ts";
import { jsonAmbiguity } from "./request.ts";
import { logger } from "../home/log.ts";

/** The default cap of a script's stdout: 1 MiB. */
const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;

/** At most this much of a script's stderr is kept for the detail of a failed run. */
export const MAX_STDERR_BYTES = 64 * 1024;

/**
 * Once the script has exited, its stdout and stderr are read for at most this much longer. A
 * process it started outside its process group (`setsid`, a daemon) inherits them and may keep
 * them open for as long as it runs; the script's own output is complete when it exits, so the
 * outcome is decided from what was read and the exit status, with a warning.
 */
const OUTPUT_GRACE_MS = 200;

/** A script printing exactly this (after trimming) asks for the event to be ignored. */
const SILENT_MARKER = "[SILENT]";

/** The `PATH` inside the sandbox, where interpreters are looked up when sandboxed. */
export const SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin";

/** The value of the `script_sandbox` setting. */
export type ScriptSandbox = "auto" | "bwrap" | "off";

/** What runs a script, chosen by its file name. */
export type ScriptInterpreter = "bash" | "deno" | "python3";

/** One run of a route script. */
export interface ScriptRequest {
  /** `<home>/scripts` (may not exist). */
  scriptsDir: string;
  /** The route's `script` value, relative to `scriptsDir`. */
  script: string;
  /** The request's JSON payload, written to the script's stdin. */
  payload: Record<string, unknown>;
  /** The event name, as `AGENT_WEBHOOK_EVENT`. */
  event: string;
  /** The delivery id, as `AGENT_WEBHOOK_DELIVERY_ID`. */
  deliveryId: string;
  /** The route name, as `AGENT_WEBHOOK_ROUTE`. */
  route: string;
  /** The script is killed (with its process group) after this many milliseconds. */
  timeoutMs: number;
  /** `auto`: bubblewrap when it works here; `bwrap`: bubblewrap or blocked; `off`: never. */
  sandbox: ScriptSandbox;
  /** Stdout beyond this many bytes stops the script. Default 1 MiB. */
  maxOutputBytes?: number;
  /** Reads the gateway's environment for `PATH`, `LANG`, `LC_ALL`, `TZ`. Default `Deno.env.get`. */
  env?: (name: string) => string | undefined;
  /**
   * The deno binary that runs `.ts`/`.js` scripts. Default `Deno.execPath()`, or, in a compiled
   * agent (see `standalone`), the `deno` found on the gateway's `PATH`.
   */
  denoPath?: string;
  /**
   * Whether this process is a compiled agent (`deno compile`), whose own executable is the agent,
   * not deno. Default `Deno.build.standalone`.
   */
  standalone?: boolean;
  /**
   * Hears what went wrong around a run that still has an outcome (a process the script started
   * kept its output open). Default: a warning in the gateway's log naming the route.
   */
  warn?: (message: string) => void;
}

/** Why a script's event is ignored. */
export type IgnoredReason =
  | "empty"
  | "silent"
  | "exit"
  | "timeout"
  | "output_too_large"
  | "ambiguous_output";

/** What a route script decided about its event. */
export type ScriptOutcome =
  /** Go on with this payload: the script's JSON object, or the old one + `script_output`. */
  | { kind: "payload"; payload: Record<string, unknown> }
  /** Ignore the event (HTTP 200), for the reason given. */
  | { kind: "ignored"; reason: IgnoredReason; detail: string }
  /** The script was not run: outside the scripts folder, missing, not a file, no sandbox. */
  | { kind: "blocked"; detail: string };

const DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin";
const SYSTEM_DIRS = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];
const ROOT_LINKS = ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];
// Only what interpreters need of /etc: the rest may hold secrets (shadow, keys, app configs).
const ETC_ENTRIES = [
  "/etc/alternatives",
  "/etc/ld.so.cache",
  "/etc/ld.so.conf",
  "/etc/ld.so.conf.d",
  "/etc/localtime",
  "/etc/timezone",
  "/etc/passwd",
  "/etc/group",
  "/etc/nsswitch.conf",
  "/etc/locale.alias",
  "/etc/mime.types",
  "/etc/os-release",
  "/etc/ssl",
  "/etc/ca-certificates",
];
const SANDBOX_PROBE_TIMEOUT_MS = 10_000;
/** A usable bwrap, or why there is none: in full, and as its reason and the fix of that reason. */
type SandboxProbe = { path: string } | { error: string; reason: string; fix: string };
const sandboxProbes = new Map<string, Promise<SandboxProbe>>();
const encoder = new TextEncoder();

/**
 * Resolves a route's `script` to the real path of a regular file inside `scriptsDir`. Rejects
 * absolute paths, `..` escapes, symlinks whose target lies outside the folder, folders, other
 * non-regular files and missing files, with an error that names the file and what to do.
 *
 * @param scriptsDir `<home>/scripts`.
 * @param script The route's `script` value.
 * @returns The real path of the script, or why it may not run.
 *
 * @example
 * ```ts
 * import { resolveScript } from "./scripts.ts";
 * import assert from "node:assert/strict";
 *
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/tag.sh`, "echo hi\n");
 * assert.deepEqual(resolveScript(dir, "tag.sh"), { path: `${await Deno.realPath(dir)}/tag.sh` });
 * assert.match((resolveScript(dir, "/etc/passwd") as { error: string }).error, /absolute path/);
 * assert.match((resolveScript(dir, "../x.sh") as { error: string }).error, /outside/);
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export function resolveScript(scriptsDir: string, script: string): { path: string } | {
  error: string;
} {
  const resolved = resolveIn(scriptsDir, script);
  return "error" in resolved ? resolved : { path: resolved.path };
}

/** {@linkcode resolveScript}, also giving the real path of the scripts folder. */
function resolveIn(scriptsDir: string, script: string): { path: string; dir: string } | {
  error: string;
} {
  const shown = JSON.stringify(script);
  if (script.trim() === "") {
    return { error: `route script is empty: name a file under ${scriptsDir}, e.g. "filter.sh"` };
  }
  if (isAbsolute(script)) {
    return {
      error: `route script ${shown} is an absolute path: name a file relative to ${scriptsDir} ` +
        `and put it there`,
    };
  }
  const lexical = normalize(join(scriptsDir, script));
  if (!isInside(normalize(scriptsDir), lexical)) {
    return {
      error: `route script ${shown} points outside ${scriptsDir}: only files under the scripts ` +
        `folder run; move it there and name it without ".."`,
    };
  }
  let realDir: string;
  try {
    realDir = Deno.realPathSync(scriptsDir);
  } catch (error) {
    return {
      error: error instanceof Deno.errors.NotFound
        ? `scripts folder ${scriptsDir} does not exist: create it and put ${shown} there`
        : `cannot open scripts folder ${scriptsDir} (${message(error)}): check its permissions`,
    };
  }
  let real: string;
  try {
    real = Deno.realPathSync(lexical);
  } catch (error) {
    return {
      error: error instanceof Deno.errors.NotFound
        ? `route script ${shown} not found at ${lexical}: create it there or fix the route's ` +
          `script`
        : `cannot open route script ${shown} at ${lexical} (${message(error)}): check its ` +
          `permissions`,
    };
  }
  if (!isInside(realDir, real)) {
    return {
      error: `route script ${shown} resolves to ${real}, outside ${realDir}: only files under ` +
        `the scripts folder run; move the file there (a symlink must point inside it too)`,
    };
  }
  const info = stat(real);
  if (info === undefined) {
    return { error: `route script ${shown} (${real}) vanished while it was checked: try again` };
  }
  if (info.isDirectory) {
    return {
      error: `route script ${shown} is a folder (${real}): name a file, e.g. "${
        join(script, "run.sh")
      }"`,
    };
  }
  if (!info.isFile) {
    return { error: `route script ${shown} (${real}) is not a regular file: use a plain file` };
  }
  return { path: real, dir: realDir };
}

/**
 * The interpreter of a script by how its name ends: `.sh`/`.bash` → bash, `.ts`/`.js` → deno,
 * anything else → python3, in any case. The route's name decides, not a symlink's target.
 *
 * @param script The route's `script` value (its file name decides).
 * @returns The interpreter.
 *
 * @example
 * ```ts
 * import { scriptInterpreter } from "./scripts.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(scriptInterpreter("ci/filter.sh"), "bash");
 * assert.equal(scriptInterpreter("Filter.TS"), "deno");
 * assert.equal(scriptInterpreter("filter"), "python3");
 * ```
 */
export function scriptInterpreter(script: string): ScriptInterpreter {
  const name = script.toLowerCase();
  if (name.endsWith(".sh") || name.endsWith(".bash")) return "bash";
  if (name.endsWith(".ts") || name.endsWith(".js")) return "deno";
  return "python3";
}

/**
 * Reads what a script printed (its exit code was 0): blank → ignored (`empty`), `[SILENT]` →
 * ignored (`silent`), a JSON object → that object is the new payload (but one that repeats a key
 * in an object or nests too deep is ignored, `ambiguous_output`), anything else (text, JSON
 * arrays, numbers, strings) → the old payload plus `script_output` with the trimmed text.
 *
 * @param stdout The script's stdout.
 * @param payload The payload the script was given.
 * @returns The outcome.
 *
 * @example
 * ```ts
 * import { parseScriptOutput } from "./scripts.ts";
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(parseScriptOutput('{"b":2}\n', { a: 1 }), { kind: "payload", payload: { b: 2 } });
 * assert.deepEqual(parseScriptOutput(" looks fine \n", { a: 1 }), {
 *   kind: "payload",
 *   payload: { a: 1, script_output: "looks fine" },
 * });
 * assert.equal(parseScriptOutput("[SILENT]\n", { a: 1 }).kind, "ignored");
 * ```
 */
export function parseScriptOutput(
  stdout: string,
  payload: Record<string, unknown>,
): ScriptOutcome {
  const text = stdout.trim();
  if (text === "") {
    return { kind: "ignored", reason: "empty", detail: "the script printed nothing" };
  }
  if (text === SILENT_MARKER) {
    return { kind: "ignored", reason: "silent", detail: `the script printed ${SILENT_MARKER}` };
  }
  const json = parseJson(text);
  if (typeof json === "object" && json !== null && !Array.isArray(json)) {
    // The same rule as for a sender's body: which of two values for one key was meant is not
    // for the gateway to guess.
    const ambiguity = jsonAmbiguity(text, json, "the script's JSON output");
    if (ambiguity) return { kind: "ignored", reason: "ambiguous_output", detail: ambiguity };
    return { kind: "payload", payload: json as Record<string, unknown> };
  }
  return { kind: "payload", payload: { ...payload, script_output: text } };
}

/**
 * Finds a working bubblewrap: `bwrap` on `PATH` that can set up the sandbox scripts run in (probed
 * once per binary by running `true` in that sandbox; the answer is cached for the process).
 *
 * @param env Reads `PATH`. Default `Deno.env.get`.
 * @returns The path of bwrap, or why there is no sandbox and what to do.
 *
 * @example
 * ```ts
 * import { findSandbox } from "./scripts.ts";
 * import assert from "node:assert/strict";
 *
 * const found = await findSandbox((name) => name === "PATH" ? "/nowhere" : undefined);
 * assert.match((found as { error: string }).error, /bwrap.*not on PATH/);
 * ```
 */
export async function findSandbox(
  env: (name: string) => string | undefined = (name) => Deno.env.get(name),
): Promise<{ path: string } | { error: string }> {
  const probe = await lookUpSandbox(env);
  return "path" in probe ? { path: probe.path } : { error: probe.error };
}

/**
 * The warning for `script_sandbox: auto` where bubblewrap does not work: scripts then run bare,
 * which the user chose no more than they chose `off`. Nothing when bubblewrap works.
 *
 * @param dotenv The `.env` file of the home, named as what a bare script can read.
 * @param env Reads `PATH`. Default `Deno.env.get`.
 * @returns The warning, or `undefined` when scripts run in bubblewrap.
 *
 * @example
 * ```ts
 * import { unsandboxedScriptsWarning } from "./scripts.ts";
 * import assert from "node:assert/strict";
 *
 * const warning = await unsandboxedScriptsWarning(
 *   "/home/me/.agent/.env",
 *   (name) => name === "PATH" ? "/nowhere" : undefined,
 * );
 * assert.match(warning!, /^script_sandbox is auto but bwrap \(bubblewrap\) is not on PATH/);
 * ```
 */
export async function unsandboxedScriptsWarning(
  dotenv: string,
  env: (name: string) => string | undefined = (name) => Deno.env.get(name),
): Promise<string | undefined> {
  const probe = await lookUpSandbox(env);
  if ("path" in probe) return undefined;
  return `script_sandbox is auto but ${probe.reason}: bash and python route scripts run ` +
    `without a sandbox, able to read and change all the gateway can (${dotenv} included) and to ` +
    `use the network (.ts/.js scripts keep Deno's lack of permissions). Fix: ${probe.fix}, or ` +
    "set platforms.webhook.extra.script_sandbox to bwrap to refuse to run scripts without it " +
    "(or to off to run them so without this warning)";
}

function lookUpSandbox(env: (name: string) => string | undefined): Promise<SandboxProbe> {
  const path = findExecutable("bwrap", env("PATH") ?? DEFAULT_PATH);
  if (path === undefined) {
    return Promise.resolve({
      error: "bwrap (bubblewrap) is not on PATH: install it (apt-get install bubblewrap) or set " +
        "script_sandbox to auto or off",
      reason: "bwrap (bubblewrap) is not on PATH",
      fix: "install bubblewrap (apt-get install bubblewrap)",
    });
  }
  let probe = sandboxProbes.get(path);
  if (probe === undefined) {
    probe = probeSandbox(path);
    sandboxProbes.set(path, probe);
  }
  return probe;
}

/**
 * Runs a route script on a payload and says what to do with the event. Never throws for anything
 * the script does: a missing interpreter, a crash, a timeout or a flood of output are `ignored`
 * outcomes with a detail for the log; a script that may not run is `blocked`.
 *
 * @param request The script, payload, event context and limits.
 * @returns The outcome.
 *
 * @example
 * ```ts
 * import { runRouteScript } from "./scripts.ts";
 * import assert from "node:assert/strict";
 *
 * const scriptsDir = await Deno.makeTempDir();
 * await Deno.writeTextFile(
 *   `${scriptsDir}/tag.sh`,
 *   'read -r body\nprintf \'{"route":"%s","seen":%s}\' "$AGENT_WEBHOOK_ROUTE" "$body"\n',
 * );
 * const outcome = await runRouteScript({
 *   scriptsDir,
 *   script: "tag.sh",
 *   payload: { action: "opened" },
 *   event: "pull_request",
 *   deliveryId: "d-1",
 *   route: "ci",
 *   timeoutMs: 10_000,
 *   sandbox: "off",
 * });
 * assert.deepEqual(outcome, {
 *   kind: "payload",
 *   payload: { route: "ci", seen: { action: "opened" } },
 * });
 * await Deno.remove(scriptsDir, { recursive: true });
 * ```
 */
export async function runRouteScript(request: ScriptRequest): Promise<ScriptOutcome> {
  const resolved = resolveIn(request.scriptsDir, request.script);
  if ("error" in resolved) return { kind: "blocked", detail: resolved.error };
  const env = request.env ?? ((name: string) => Deno.env.get(name));
  const sandbox = await chooseSandbox(request.sandbox, env);
  if ("error" in sandbox) {
    return { kind: "blocked", detail: `script_sandbox is bwrap but ${sandbox.error}` };
  }
  // Outside the sandbox the script gets a private TMPDIR (and deno its cache) removed afterwards.
  let tempDir: string | undefined;
  try {
    if (!sandbox.bwrap) tempDir = await Deno.makeTempDir({ prefix: "agent-script-" });
  } catch (error) {
    return {
      kind: "ignored",
      reason: "exit",
      detail: `no temporary folder for route script ${JSON.stringify(request.script)} ` +
        `(${message(error)}): check that the temporary folder is writable`,
    };
  }
  try {
    const plan = planCommand(request, resolved.path, resolved.dir, env, sandbox.bwrap, tempDir);
    if ("error" in plan) return { kind: "ignored", reason: "exit", detail: plan.error };
    const input = encoder.encode(stringifyJsonExact(request.payload) + "\n");
    const maxOutputBytes = request.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    const run = await execute(plan, input, request.timeoutMs, maxOutputBytes);
    if (run.outputHeld && run.stop === undefined) {
      const warn = request.warn ??
        ((text: string) =>
          logger("webhook").warn("route {route}: {message}", {
            route: request.route,
            message: text,
          }));
      warn(heldOutputWarning(request.script));
    }
    return outcomeOf(run, request, maxOutputBytes, sandbox.bwrap !== undefined);
  } finally {
    if (tempDir) await Deno.remove(tempDir, { recursive: true }).catch(() => {});
  }
}

// --- choosing what to run -------------------------------------------------------------------

interface CommandPlan {
  program: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  /** The program runs under `setsid`: its pid is its process group id. */
  ownGroup: boolean;
}

async function chooseSandbox(
  mode: ScriptSandbox,
  env: (name: string) => string | undefined,
): Promise<{ bwrap?: string } | { error: string }> {
  if (mode === "off") return {};
  const found = await findSandbox(env);
  if ("path" in found) return { bwrap: found.path };
  return mode === "bwrap" ? found : {};
}

/** What a script is told about its event, in its environment: event, delivery id, route. */
const EVENT_VARIABLES = [
  "AGENT_WEBHOOK_EVENT",
  "AGENT_WEBHOOK_DELIVERY_ID",
  "AGENT_WEBHOOK_ROUTE",
] as const;

function planCommand(
  request: ScriptRequest,
  scriptPath: string,
  scriptsDir: string,
  env: (name: string) => string | undefined,
  bwrap: string | undefined,
  tempDir: string | undefined,
): CommandPlan | { error: string } {
  const interpreter = scriptInterpreter(request.script);
  const searchPath = bwrap ? SANDBOX_PATH : env("PATH") ?? DEFAULT_PATH;
  const tmp = tempDir ?? "/tmp";
  const scriptEnv: Record<string, string> = {
    PATH: searchPath,
    HOME: scriptsDir,
    TMPDIR: tmp,
    [EVENT_VARIABLES[0]]: request.event,
    [EVENT_VARIABLES[1]]: request.deliveryId,
    [EVENT_VARIABLES[2]]: request.route,
  };
  for (const name of ["LANG", "LC_ALL", "TZ"]) {
    const value = env(name);
    if (value !== undefined) scriptEnv[name] = value;
  }
  let argv: string[];
  const extraBinds: string[] = [];
  if (interpreter === "deno") {
    const wanted = request.denoPath ??
      ((request.standalone ?? Deno.build.standalone)
        ? findExecutable("deno", env("PATH") ?? DEFAULT_PATH)
        : Deno.execPath());
    if (wanted === undefined) {
      return {
        error: `deno not found in PATH (${env("PATH") ?? DEFAULT_PATH}), needed for ` +
          `${request.script}: this compiled agent cannot run .ts/.js scripts itself; install ` +
          "Deno so that the gateway finds `deno` on its PATH, or rewrite the script for bash " +
          "or python3",
      };
    }
    const deno = realPath(wanted);
    if (deno === undefined) {
      return {
        error: `deno not found at ${wanted}, needed for ` +
          `${request.script}: fix the deno path or rewrite the script for bash or python3`,
      };
    }
    if (!deno.startsWith("/usr/")) extraBinds.push(deno);
    // No permission but reading the three variables the script is given (no other, no secret).
    const allowEnv = `--allow-env=${EVENT_VARIABLES.join(",")}`;
    argv = [
      deno,
      "run",
      "--no-prompt",
      "--quiet",
      "--no-config",
      "--no-lock",
      // Deno loads imported modules without asking for permissions: remote ones from a list of
      // hosts, local ones from anywhere. Neither may serve as a way around "no permissions".
      "--no-remote",
      "--no-npm",
      `--import-map=${scriptsImportMap(scriptsDir)}`,
      allowEnv,
      scriptPath,
    ];
    scriptEnv.DENO_DIR = join(tmp, "deno");
    scriptEnv.DENO_NO_UPDATE_CHECK = "1";
    scriptEnv.NO_COLOR = "1"; // plain errors in the log
  } else {
    const program = findExecutable(interpreter, searchPath);
    if (program === undefined) {
      const where = bwrap ? `${searchPath} (what the sandbox shows)` : `PATH (${searchPath})`;
      return {
        error: `${interpreter} not found in ${where}, needed for ${request.script}: install ` +
          `${interpreter} or rename the script for another interpreter`,
      };
    }
    argv = [program, scriptPath];
    if (interpreter === "python3") scriptEnv.PYTHONDONTWRITEBYTECODE = "1";
  }
  if (bwrap) argv = [bwrap, ...sandboxArgs(scriptsDir, extraBinds), "--", ...argv];
  const setsid = findExecutable("setsid", `${env("PATH") ?? ""}:${SYSTEM_DIRS.join(":")}`);
  if (setsid) argv = [setsid, ...argv];
  return {
    program: argv[0],
    args: argv.slice(1),
    cwd: scriptsDir,
    env: scriptEnv,
    ownGroup: !!setsid,
  };
}

/** The bubblewrap options: read-only system and scripts folder, private /tmp, no network. */
function sandboxArgs(scriptsDir?: string, extraBinds: string[] = []): string[] {
  const args = ["--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr"];
  for (const path of ROOT_LINKS) {
    const info = lstat(path);
    if (info?.isSymlink) args.push("--symlink", Deno.readLinkSync(path), path);
    else if (info?.isDirectory) args.push("--ro-bind", path, path);
  }
  for (const path of [...ETC_ENTRIES, ...pythonEtcEntries()]) {
    args.push("--ro-bind-try", path, path);
  }
  args.push("--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp");
  // After the /tmp tmpfs, so that a scripts folder under /tmp stays visible.
  if (scriptsDir) args.push("--ro-bind", scriptsDir, scriptsDir, "--chdir", scriptsDir);
  for (const path of extraBinds) args.push("--ro-bind", path, path);
  return args;
}

/** The scheme local imports from outside the scripts folder are mapped to: Deno names it. */
const OUTSIDE_SCRIPTS_SCHEME = "outside-the-scripts-folder";

/**
 * An import map (as a `data:` URL, readable in the sandbox too) that leaves the modules of the
 * scripts folder alone and sends every other `file:` import to a scheme Deno refuses, naming it:
 * `import("../.env", { with: { type: "text" } })` would otherwise read `<home>/.env` without any
 * permission.
 */
function scriptsImportMap(scriptsDir: string): string {
  const inside = `${pathToFileURL(scriptsDir).href.replace(/\/$/, "")}/`;
  const map = { imports: { "file:///": `${OUTSIDE_SCRIPTS_SCHEME}:/`, [inside]: inside } };
  return `data:application/json,${encodeURIComponent(JSON.stringify(map))}`;
}

/** Debian's python links `sitecustomize.py` into `/etc/python3.X`. */
function pythonEtcEntries(): string[] {
  try {
    return [...Deno.readDirSync("/etc")]
      .filter((entry) => /^python3(\.\d+)?$/.test(entry.name))
      .map((entry) => `/etc/${entry.name}`);
  } catch {
    return [];
  }
}

async function probeSandbox(path: string): Promise<SandboxProbe> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), SANDBOX_PROBE_TIMEOUT_MS);
  try {
    const { success, stderr } = await new Deno.Command(path, {
      // The very setup scripts get, so that `auto` never picks a bwrap that fails on every script.
      args: [...sandboxArgs(), "--", findExecutable("true", SANDBOX_PATH) ?? "/bin/true"],
      stdin: "null",
      stdout: "null",
      stderr: "piped",
      signal: controller.signal,
    }).output();
    if (success) return { path };
    const why = new TextDecoder().decode(stderr).trim() || "it failed";
    const reason = `bwrap at ${path} cannot create a sandbox here (${why})`;
    const fix = "allow unprivileged user namespaces or run with the needed privileges";
    return { error: `${reason}: ${fix}, or set script_sandbox to off`, reason, fix };
  } catch (error) {
    const reason = `bwrap at ${path} could not be started (${message(error)})`;
    return { error: reason, reason, fix: `check that ${path} runs` };
  } finally {
    clearTimeout(timer);
  }
}

// --- running --------------------------------------------------------------------------------

interface Run {
  stop?: "timeout" | "output_too_large";
  status?: Deno.CommandStatus;
  /** The script exited, but its stdout or stderr stayed open {@linkcode OUTPUT_GRACE_MS} later. */
  outputHeld?: boolean;
  spawnError?: string;
  stdout: Uint8Array;
  stderr: string;
}

async function execute(
  plan: CommandPlan,
  input: Uint8Array,
  timeoutMs: number,
  maxOutputBytes: number,
): Promise<Run> {
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(plan.program, {
      args: plan.args,
      cwd: plan.cwd,
      env: plan.env,
      clearEnv: true,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
  } catch (error) {
    return { spawnError: message(error), stdout: new Uint8Array(), stderr: "" };
  }
  const stdout = child.stdout.getReader();
  const stderr = child.stderr.getReader();
  let stop: Run["stop"];
  let exited = false;
  let outputHeld = false;
  let readDone = false;
  let released!: () => void;
  const releasedSignal = new Promise<void>((resolve) => released = resolve);
  const stopReading = () => {
    stdout.cancel().catch(() => {});
    stderr.cancel().catch(() => {});
    released();
  };
  const halt = (reason: NonNullable<Run["stop"]>) => {
    stop ??= reason;
    killProcess(child.pid, plan.ownGroup, exited);
    stopReading();
  };
  const timer = setTimeout(() => halt("timeout"), timeoutMs);
  let grace: ReturnType<typeof setTimeout> | undefined;
  try {
    const [[out, err], status] = await Promise.all([
      Promise.all([
        readUpTo(stdout, maxOutputBytes, () => halt("output_too_large")),
        readUpTo(stderr, MAX_STDERR_BYTES),
      ]).finally(() => {
        readDone = true;
      }),
      child.status.then((status) => {
        exited = true;
        // The script is done: what follows is no timeout of its own.
        clearTimeout(timer);
        // Whatever the script left running in its group goes with it (as in the sandbox).
        killProcess(child.pid, plan.ownGroup, exited);
        // A process that left the group (setsid, a daemon) may hold stdout or stderr open for
        // as long as it runs: the output of the script itself is complete by now.
        grace = setTimeout(() => {
          if (!readDone) outputHeld = true;
          stopReading();
        }, OUTPUT_GRACE_MS);
        return status;
      }),
      // A process that escaped the group could hold stdin unread forever: stop waiting at halt
      // or once the grace after the exit is over.
      Promise.race([writeInput(child.stdin, input), releasedSignal]),
    ]);
    return { stop, status, outputHeld, stdout: out, stderr: new TextDecoder().decode(err) };
  } finally {
    clearTimeout(timer);
    clearTimeout(grace);
  }
}

/** SIGKILLs the script's process group, or the script alone without `setsid`. */
function killProcess(pid: number, ownGroup: boolean, exited: boolean): void {
  if (ownGroup) {
    try {
      Deno.kill(-pid, "SIGKILL");
      return;
    } catch {
      // No such group: already gone, or setsid has not run yet (then the pid below).
    }
  }
  // A reaped pid may belong to another process by now.
  if (exited) return;
  try {
    Deno.kill(pid, "SIGKILL");
  } catch {
    // Already gone.
  }
}

/**
 * Reads `reader` keeping its first `max` bytes. Past them, `onOverflow` is called and reading
 * stops; without `onOverflow`, the rest is read and dropped, so the script never blocks on a full
 * pipe. A read cancelled at a timeout keeps what was read.
 */
async function readUpTo(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  max: number,
  onOverflow?: () => void,
): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      if (onOverflow && size + value.length > max) {
        onOverflow();
        break;
      }
      const kept = value.subarray(0, max - size);
      if (kept.length > 0) chunks.push(kept);
      size += kept.length;
    }
  } catch {
    // Cancelled at a timeout: keep what was read.
  }
  return concatBytes(chunks, size);
}

async function writeInput(stream: WritableStream<Uint8Array>, bytes: Uint8Array): Promise<void> {
  const writer = stream.getWriter();
  try {
    await writer.write(bytes);
    await writer.close();
  } catch {
    // The script exited (or was killed) without reading all of its input: not our problem.
  }
}

function heldOutputWarning(script: string): string {
  return `route script ${JSON.stringify(script)} exited, but a process it started (with setsid, ` +
    `nohup or as a daemon) kept its stdout or stderr open: the gateway stopped reading ` +
    `${OUTPUT_GRACE_MS} ms after the script exited, used what the script had printed, and could ` +
    `not stop that process (it left the script's process group). Redirect the output of what ` +
    `the script starts in the background (\`cmd >/dev/null 2>&1 &\`) or wait for it to finish`;
}

function outcomeOf(
  run: Run,
  request: ScriptRequest,
  maxOutputBytes: number,
  sandboxed: boolean,
): ScriptOutcome {
  const name = `route script ${JSON.stringify(request.script)}`;
  if (run.spawnError !== undefined) {
    return {
      kind: "ignored",
      reason: "exit",
      detail: `${name} could not start: ${run.spawnError}`,
    };
  }
  if (run.stop === "timeout") {
    return {
      kind: "ignored",
      reason: "timeout",
      // The setting is in seconds: the limit is said in them too.
      detail: `${name} ran longer than ${request.timeoutMs / 1000} s and was killed: make it ` +
        `faster or raise script_timeout_seconds`,
    };
  }
  if (run.stop === "output_too_large") {
    return {
      kind: "ignored",
      reason: "output_too_large",
      detail: `${name} printed more than ${maxOutputBytes} bytes and was killed: print a ` +
        `smaller JSON object or text`,
    };
  }
  const status = run.status!;
  if (!status.success) {
    const how = status.signal
      ? `was killed by ${status.signal}`
      : `exited with code ${status.code}${sandboxed ? sandboxedSignal(status.code) : ""}`;
    const stderr = run.stderr.trim();
    return {
      kind: "ignored",
      reason: "exit",
      detail: stderr === "" ? `${name} ${how}` : `${name} ${how}: ${stderr}`,
    };
  }
  return parseScriptOutput(new TextDecoder().decode(run.stdout), request.payload);
}

/**
 * What an exit code above 128 may mean inside bubblewrap, which ends with 128 + the signal's
 * number when the script is killed by one: the two cannot be told apart, so both are said.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sandboxedSignal } from "./scripts.ts";
 * assert.equal(sandboxedSignal(137), " (or was killed by SIGKILL: in the sandbox both end so)");
 * assert.equal(sandboxedSignal(1), "");
 * ```
 */
export function sandboxedSignal(code: number): string {
  const signal = SIGNAL_NAMES[code - 128];
  return signal ? ` (or was killed by ${signal}: in the sandbox both end so)` : "";
}

/** The signals a script is killed by in practice, by their Linux numbers. */
const SIGNAL_NAMES: Record<number, string> = {
  1: "SIGHUP",
  2: "SIGINT",
  3: "SIGQUIT",
  4: "SIGILL",
  6: "SIGABRT",
  7: "SIGBUS",
  8: "SIGFPE",
  9: "SIGKILL",
  11: "SIGSEGV",
  13: "SIGPIPE",
  14: "SIGALRM",
  15: "SIGTERM",
  24: "SIGXCPU",
  25: "SIGXFSZ",
};

// --- small helpers --------------------------------------------------------------------------

/** Whether `path` is `dir` or lies under it (both absolute, already resolved). */
export function isInside(dir: string, path: string): boolean {
  const rel = relative(dir, path);
  return rel !== ".." && !rel.startsWith("../") && !isAbsolute(rel);
}

function findExecutable(name: string, searchPath: string): string | undefined {
  for (const dir of searchPath.split(":")) {
    if (!isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    const info = stat(candidate);
    if (info?.isFile && ((info.mode ?? 0o111) & 0o111) !== 0) return candidate;
  }
  return undefined;
}

function realPath(path: string): string | undefined {
  try {
    return Deno.realPathSync(path);
  } catch {
    return undefined;
  }
}

function stat(path: string): Deno.FileInfo | undefined {
  try {
    return Deno.statSync(path);
  } catch {
    return undefined;
  }
}

function lstat(path: string): Deno.FileInfo | undefined {
  try {
    return Deno.lstatSync(path);
  } catch {
    return undefined;
  }
}

function parseJson(text: string): unknown {
  try {
    return parseJsonExact(text);
  } catch {
    return undefined;
  }
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
