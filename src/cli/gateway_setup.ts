/**
 * `agent gateway setup`: enables the webhook listener, chooses its port and bind address, and
 * sets the global secret. Asks at a terminal (explaining who can reach the listener); runs from
 * flags otherwise. Writes `config.yaml` (comments kept) and `WEBHOOK_SECRET` in `.env`. On a fresh
 * `<home>` (no `config.yaml`), the file starts from the commented starter `agent gateway run`
 * writes, with the choices applied to it.
 *
 * @module
 */
import { isIP } from "node:net";
import { basename, dirname, join } from "node:path";
import type { Command } from "@commander-js/extra-typings";
import { parse as parseDotenv } from "dotenv";
import { type Document, isAlias, isNode, visit } from "yaml";
import { ConfigSource, loadConfig, parseBoolish, type ResolvedConfig } from "../home/config.ts";
import { copyMergedSections, editConfigFile, fillNullSection } from "../home/config_edit.ts";
import { dotenvLine, setDotenvValues } from "../home/dotenv_edit.ts";
import { readTextIfExists } from "../home/files.ts";
import { SecretScope } from "../home/secrets.ts";
import { STARTER_CONFIG } from "../gateway/starter_config.ts";
import { type GatewayState, runningGateway } from "../gateway/home_lock.ts";
import { checkSecret as checkSecretRule, generateSecret } from "../webhook/routes.ts";
import {
  bindFailure,
  dotenvLineOf,
  readWebhookSettings,
  WEBHOOK_DEFAULTS,
  webhookBaseUrl,
  type WebhookSettings,
} from "../webhook/settings.ts";
import {
  type AnswerCheck,
  CliError,
  type CliIo,
  configFileWarnings,
  printJson,
  PromptCancelled,
  type Prompter,
  UsageError,
} from "./io.ts";

/** What setup writes. */
interface SetupChoices {
  enabled: boolean;
  port: number;
  /** Bind address; `undefined` = every interface, IPv4 and IPv6. */
  host?: string;
  secret: { kind: "keep" } | { kind: "generate" } | { kind: "set"; value: string };
}

/** Flags of `agent gateway setup`. */
interface SetupFlags {
  enable?: true;
  disable?: true;
  port?: string;
  host?: string;
  allInterfaces?: true;
  secret?: string;
  generateSecret?: true;
  json?: true;
}

const EXTRA = ["platforms", "webhook", "extra"] as const;

/** The `.env` variables setup writes whenever `.env` has them, so a bad value there is fixed. */
const REWRITTEN_VARIABLES = ["WEBHOOK_ENABLED", "WEBHOOK_PORT"] as const;

/** The exposure explanation shown before the questions. */
const EXPOSURE_NOTE =
  `The webhook listener accepts HTTP POSTs from anyone who can reach its port. Each request must
be signed with a secret (a subscription's own, or the global one set here), so keep secrets
private. Listening on every interface means other machines on your network can reach it, and the
internet too if a router or firewall forwards the port. Choose "this machine only" when the
senders run here or when a reverse proxy or tunnel (with HTTPS) forwards to it.
`;

/** Adds `gateway setup` to the `gateway` command group. */
export function addGatewaySetupCommand(gateway: Command, io: CliIo): void {
  gateway.command("setup").description(
    "enable webhooks, choose the port and bind address, set the global secret",
  )
    .option(
      "--enable",
      "enable the webhook listener (the default when nothing disables it yet)",
    )
    .option("--disable", "disable the webhook listener")
    .option(
      "--port <port>",
      `port to listen on (default: the current one, or ${WEBHOOK_DEFAULTS.port})`,
    )
    .option("--host <address>", "listen on this address only, e.g. 127.0.0.1")
    .option("--all-interfaces", "listen on every interface, IPv4 and IPv6 (removes host)")
    .option("--secret <value>", "set the global secret (at least 16 characters)")
    .option("--generate-secret", "generate a new global secret")
    .option("--json", "print one JSON document (never asks)")
    .addHelpText(
      "after",
      "\nAt a terminal and without flags, setup asks each question and explains who can reach\n" +
        "the listener. With flags, or without a terminal, it asks nothing: unset choices keep\n" +
        "their current value (as the gateway reads it: config.yaml, .env, the environment),\n" +
        "the listener is enabled unless config.yaml, .env or the environment disables it, and\n" +
        "a global secret is generated when there is none.\n" +
        "It writes platforms.webhook in config.yaml (comments kept) and WEBHOOK_SECRET in .env;\n" +
        "on a fresh home, config.yaml starts from the commented starter `gateway run` writes.\n" +
        "Restart a running gateway afterwards.\n\n" +
        "Examples:\n" +
        "  agent gateway setup\n" +
        "  agent gateway setup --port 8644 --host 127.0.0.1 --generate-secret\n",
    )
    .action(async (flags) => {
      const config = loadConfig({ env: io.env });
      const current = currentChoices(config, io, flags);
      const fromFlags = choicesFromFlags(flags, current);
      const interactive = fromFlags === undefined && !flags.json && io.stdinIsTerminal &&
        io.prompter !== undefined;
      let choices: SetupChoices;
      if (interactive) {
        try {
          choices = await askChoices(io, io.prompter!, current);
        } catch (error) {
          if (error instanceof PromptCancelled) {
            throw new CliError("setup cancelled; nothing was changed");
          }
          throw error;
        }
      } else {
        choices = fromFlags ?? defaultChoices(current);
      }
      const report = applyChoices(config, current, choices, io, interactive ? "wizard" : "flags");
      if (flags.json) {
        for (const warning of report.warnings) io.err(`warning: ${warning}\n`);
        // What every command says on stderr first (unknown keys, .env lines) comes first.
        return printJson(io, {
          ...report,
          warnings: [...configFileWarnings(config), ...report.warnings],
        });
      }
      printReport(io, report);
    });
}

/** The values in effect now, resolved as the gateway resolves them. */
interface CurrentSetup {
  enabled: boolean;
  /** Whether config.yaml, `.env` or the environment sets `enabled` (else it is the default). */
  enabledIsSet: boolean;
  port: number;
  host?: string;
  /** Whether a global secret exists, and where. */
  secretIn?: ".env" | "environment" | "config.yaml";
  /** Malformed values of keys setup overwrites, as warnings saying so (the value is added). */
  replaced: { key: string; warning: string }[];
}

const ENABLED_KEY = "platforms.webhook.enabled";
const PORT_KEY = "platforms.webhook.extra.port";
const HOST_KEY = "platforms.webhook.extra.host";
const SECRET_KEY = "platforms.webhook.extra.secret";

function currentChoices(config: ResolvedConfig, io: CliIo, flags: SetupFlags): CurrentSetup {
  const { source, secrets } = config;
  // A malformed value of a key this run overwrites does not stop it: it is replaced, with a
  // warning. Setup always writes enabled and port; host and the secret only when flags set them.
  const owned: [string, (value: unknown) => boolean][] = [
    [ENABLED_KEY, (value) => parseBoolish(value) !== undefined],
    // As the gateway reads a port: a number or a string, so `[1]` (text "1") is malformed too.
    [
      PORT_KEY,
      (value) =>
        (typeof value === "number" || typeof value === "string") &&
        checkPort(String(value)) === true,
    ],
  ];
  if (flags.host !== undefined || flags.allInterfaces) {
    owned.push([HOST_KEY, (value) => typeof value === "string"]);
  }
  if (flags.secret !== undefined || flags.generateSecret) {
    owned.push([SECRET_KEY, (value) => typeof value === "string"]);
  }
  const replaced: CurrentSetup["replaced"] = [];
  for (const [key, valid] of owned) {
    const value = source.get(key);
    if (value === undefined || value === null || valid(value)) continue;
    const line = source.lineOf(key);
    replaced.push({
      key,
      warning: `${key} in ${source.file}${line === undefined ? "" : `:${line}`} was ` +
        `${JSON.stringify(value)}, which is not valid; replaced with`,
    });
  }
  const replacing = replaced.map((item) => item.key);
  // The current values are the ones the gateway resolves (config.yaml, then .env over the
  // environment, each variable on its own). A malformed variable setup rewrites in .env reads
  // as unset, so it does not block the run that replaces it.
  const rewritten = Object.fromEntries(
    REWRITTEN_VARIABLES.filter((name) =>
      secrets.source(name) === ".env" && !validVariable(name, secrets.get(name) ?? "")
    ).map((name) => [name, ""]),
  );
  const resolved = readWebhookSettings({ ...withChanges(config, io, rewritten), replacing });
  const read = <T>(key: string, get: () => T): T | undefined =>
    replacing.includes(key) ? undefined : get();
  return {
    enabled: resolved.enabled,
    enabledIsSet: resolved.enabledBy !== DEFAULT_ENABLED_BY,
    port: resolved.port,
    host: resolved.host,
    secretIn: secrets.get("WEBHOOK_SECRET")?.trim()
      ? secrets.source("WEBHOOK_SECRET")
      : read(SECRET_KEY, () => source.string(SECRET_KEY))?.trim()
      ? "config.yaml"
      : undefined,
    replaced,
  };
}

/** `enabledBy` of {@linkcode readWebhookSettings} when nothing sets `enabled`. */
const DEFAULT_ENABLED_BY = "default (off)";

/** Whether `value` of a variable setup rewrites is usable (blank counts as unset, so usable). */
function validVariable(name: (typeof REWRITTEN_VARIABLES)[number], value: string): boolean {
  const text = value.trim();
  if (text === "") return true;
  return name === "WEBHOOK_PORT" ? checkPort(text) === true : parseBoolish(text) !== undefined;
}

/** Unset choices keep their current value; a fresh setup (nothing sets `enabled`) enables. */
function defaultChoices(current: CurrentSetup): SetupChoices {
  return {
    enabled: current.enabledIsSet ? current.enabled : true,
    port: current.port,
    host: current.host,
    secret: { kind: current.secretIn ? "keep" : "generate" },
  };
}

/** The choices the flags make, or `undefined` when no setting flag was given. */
function choicesFromFlags(flags: SetupFlags, current: CurrentSetup): SetupChoices | undefined {
  const given = [
    flags.enable,
    flags.disable,
    flags.port,
    flags.host,
    flags.allInterfaces,
    flags.secret,
    flags.generateSecret,
  ];
  if (given.every((flag) => flag === undefined)) return undefined;
  if (flags.enable && flags.disable) {
    throw new UsageError("--enable and --disable contradict: choose one");
  }
  if (flags.host !== undefined && flags.allInterfaces) {
    throw new UsageError("--host and --all-interfaces contradict: choose one");
  }
  if (flags.secret !== undefined && flags.generateSecret) {
    throw new UsageError("--secret and --generate-secret contradict: choose one");
  }
  const choices = defaultChoices(current);
  if (flags.enable) choices.enabled = true;
  if (flags.disable) choices.enabled = false;
  if (flags.port !== undefined) {
    const problem = checkPort(flags.port);
    if (problem !== true) throw new UsageError(`--port: ${problem}`);
    choices.port = Number(flags.port);
  }
  if (flags.host !== undefined) {
    const problem = checkHost(flags.host);
    if (problem !== true) throw new UsageError(`--host: ${problem}`);
    choices.host = stripBrackets(flags.host.trim());
  }
  if (flags.allInterfaces) choices.host = undefined;
  if (flags.secret !== undefined) {
    const problem = checkSecret(flags.secret);
    if (problem !== true) throw new UsageError(`--secret: ${problem}`);
    choices.secret = { kind: "set", value: flags.secret };
  }
  if (flags.generateSecret) choices.secret = { kind: "generate" };
  return choices;
}

async function askChoices(
  io: CliIo,
  prompter: Prompter,
  current: CurrentSetup,
): Promise<SetupChoices> {
  io.out(`${EXPOSURE_NOTE}\n`);
  // Enter keeps what is set; a fresh home (nothing sets it) enables, which is what setup is for.
  const enabled = await prompter.confirm(
    "Enable the webhook listener?",
    current.enabledIsSet ? current.enabled : true,
  );
  if (!enabled) return { ...defaultChoices(current), enabled: false, secret: { kind: "keep" } };
  const port = Number(
    await prompter.input("Port to listen on", {
      default: String(current.port),
      validate: checkPort,
    }),
  );
  const where = await prompter.select(
    "Who may connect?",
    [
      {
        value: "local",
        name: "This machine only (127.0.0.1)",
        description: "for local senders, or behind a reverse proxy or tunnel on this machine",
      },
      {
        value: "all",
        name: "Every interface, IPv4 and IPv6",
        description: "other machines on the network can reach it; signatures are still required",
      },
      { value: "address", name: "One address of this machine…" },
    ] as const,
    current.host === undefined ? "all" : current.host === "127.0.0.1" ? "local" : "address",
  );
  let host: string | undefined;
  if (where === "local") host = "127.0.0.1";
  else if (where === "address") {
    host = stripBrackets(
      (await prompter.input("Address to listen on", {
        default: current.host,
        validate: (value) => {
          const problem = checkHost(value);
          return problem === true ? localAddressCheck(stripBrackets(value.trim())) : problem;
        },
      })).trim(),
    );
  }
  const secretChoices = [
    ...(current.secretIn
      ? [{ value: "keep", name: `Keep the current secret (in ${current.secretIn})` } as const]
      : []),
    { value: "generate", name: "Generate a new secret" } as const,
    { value: "enter", name: "Enter my own secret" } as const,
  ];
  const secretChoice = await prompter.select(
    "Global webhook secret (signs requests to routes without their own)",
    secretChoices,
    current.secretIn ? "keep" : "generate",
  );
  const secret: SetupChoices["secret"] = secretChoice === "keep"
    ? { kind: "keep" }
    : secretChoice === "generate"
    ? { kind: "generate" }
    : { kind: "set", value: await prompter.password("Secret", checkSecret) };
  return { enabled, port, host, secret };
}

/**
 * Whether the gateway could listen on `host`: an address of another machine (or a name that does
 * not resolve) is asked again at once, rather than written and found out at the gateway's start.
 * A port in use or a refusal is not about the address: those are warned about once written.
 */
function localAddressCheck(host: string): true | string {
  if (bindFailure(listenError(host, 0), host) !== "not_local") return true;
  return `${host} is not an address of this machine, so the gateway cannot listen on it; ` +
    "enter one of its addresses, or choose every interface";
}

/** What binding (then closing) a listener on `host` and `port` throws, or `undefined`. */
function listenError(host: string, port: number): unknown {
  try {
    Deno.listen({ hostname: host, port }).close();
    return undefined;
  } catch (error) {
    return error;
  }
}

/** What setup did, as printed (and as `--json`). */
interface SetupReport {
  config: string;
  dotenv: string;
  enabled: boolean;
  port: number;
  host: string | null;
  base_url: string;
  secret: "kept" | "generated" | "set" | "moved to .env" | "none";
  /** The files written: `config.yaml`, and `.env` when a value there was set. */
  written: string[];
  warnings: string[];
}

function applyChoices(
  config: ResolvedConfig,
  current: CurrentSetup,
  choices: SetupChoices,
  io: CliIo,
  asked: ChoicesFrom,
): SetupReport {
  const { paths, secrets } = config;
  const dotenv: Record<string, string> = {};
  const warnings: string[] = [];
  let secretOutcome: SetupReport["secret"] = "kept";
  if (choices.secret.kind === "generate") {
    dotenv.WEBHOOK_SECRET = generateSecret();
    secretOutcome = "generated";
  } else if (choices.secret.kind === "set") {
    dotenv.WEBHOOK_SECRET = choices.secret.value;
    secretOutcome = "set";
  } else if (current.secretIn === "config.yaml") {
    // A secret belongs in .env (0600, never shared with the config); move it there.
    dotenv.WEBHOOK_SECRET = config.source.string("platforms.webhook.extra.secret")!.trim();
    secretOutcome = "moved to .env";
  } else if (!current.secretIn) secretOutcome = "none";
  if (secretOutcome === "kept" || secretOutcome === "moved to .env") {
    warnings.push(...keptSecretWarnings(config, current));
  }
  // .env values override config.yaml: keep any there in step with the choices.
  const chosen = { WEBHOOK_ENABLED: String(choices.enabled), WEBHOOK_PORT: String(choices.port) };
  for (const name of REWRITTEN_VARIABLES) {
    if (secrets.source(name) !== ".env") continue;
    const before = secrets.get(name)?.trim() ?? "";
    const valid = name === "WEBHOOK_PORT"
      ? checkPort(before) === true
      : parseBoolish(before) !== undefined;
    if (before !== "" && !valid) {
      warnings.push(
        `${name}=${before} in ${paths.dotenv} was not valid; replaced with ${chosen[name]}`,
      );
    }
    dotenv[name] = chosen[name];
  }
  const newValue: Record<string, string> = {
    [ENABLED_KEY]: String(choices.enabled),
    [PORT_KEY]: String(choices.port),
    [HOST_KEY]: choices.host === undefined ? "nothing (every interface)" : choices.host,
    [SECRET_KEY]: `WEBHOOK_SECRET in ${paths.dotenv}`,
  };
  for (const { key, warning } of current.replaced) warnings.push(`${warning} ${newValue[key]}`);
  const edit = (doc: Document) => void editWebhookSection(doc, choices, dotenv);

  // Everything is prepared and checked before the first write: a failure writes nothing.
  for (const [name, value] of Object.entries(dotenv)) {
    try {
      dotenvLine(name, value);
    } catch (error) {
      if (error instanceof RangeError) {
        throw new CliError(
          `cannot write ${name} to ${paths.dotenv}: ${error.message}. Fix: choose another ` +
            "value (for the secret: --secret with another value, or --generate-secret)",
          2,
        );
      }
      throw error;
    }
  }
  refuseSharedAnchors(config.source);
  // A fresh home's config.yaml is the starter with the choices applied (see writeSetupConfig).
  const edited = readTextIfExists(paths.config) === undefined
    ? ConfigSource.parse(paths.config, STARTER_CONFIG).document
    : config.source.document.clone();
  warnings.push(...editWebhookSection(edited, choices, dotenv));
  const after = readWebhookSettings({
    ...withChanges(config, io, dotenv),
    source: ConfigSource.parse(paths.config, edited.toString()),
  });

  writeSetupFiles({ ...paths, dotenvValues: dotenv, edit, secret: secretOutcome, asked });

  const overridden = (name: string, what: string) =>
    warnings.push(
      `${name}=${io.env(name)} in the environment overrides ${what}; unset it for this to apply`,
    );
  if (after.enabled !== choices.enabled) overridden("WEBHOOK_ENABLED", "platforms.webhook.enabled");
  if (after.port !== choices.port) overridden("WEBHOOK_PORT", "platforms.webhook.extra.port");
  if (after.enabled) {
    const problem = listenProblem(after, asked, paths.gatewayLock);
    if (problem) warnings.push(problem);
  }
  const written = [paths.config, ...(Object.keys(dotenv).length > 0 ? [paths.dotenv] : [])];
  return report(config, after, secretOutcome, written, warnings);
}

/**
 * Why the gateway could not listen where `settings` say, tried now by binding and closing a
 * listener there (as the gateway binds: `host`, or `::` for every interface); `undefined` when it
 * could. Whether a port in use is this home's gateway is read from its lock (`gatewayLock`).
 */
function listenProblem(
  settings: Pick<WebhookSettings, "host" | "port">,
  asked: ChoicesFrom,
  gatewayLock: string,
): string | undefined {
  const error = listenError(settings.host ?? "::", settings.port);
  return error === undefined
    ? undefined
    : listenProblemText(error, settings, asked, runningGateway(gatewayLock));
}

/**
 * How the choices were made, which decides how a warning says to change one: by a flag of
 * `agent gateway setup`, or (after the wizard) by running it again.
 */
export type ChoicesFrom = "flags" | "wizard";

/**
 * The warning for `error` from binding `settings.host`/`settings.port`. For a port in use,
 * `gateway` (this home's, as {@linkcode runningGateway} reads its lock) tells whether a restart
 * of that gateway frees it; by default it cannot be told.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { listenProblemText } from "./gateway_setup.ts";
 * const denied = new Deno.errors.PermissionDenied("Permission denied (os error 13)");
 * assert.equal(
 *   listenProblemText(denied, { port: 443 }),
 *   "cannot listen on port 443 as this user (Permission denied (os error 13)): " +
 *     "ports below 1024 need privileges; choose 1024 or above (--port)",
 * );
 * ```
 */
export function listenProblemText(
  error: unknown,
  settings: { host?: string; port: number },
  asked: ChoicesFrom = "flags",
  gateway: GatewayState = { running: undefined },
): string {
  const where = settings.host === undefined
    ? `port ${settings.port}`
    : `${settings.host} port ${settings.port}`;
  const reason = error instanceof Error ? error.message.split("\n")[0] : String(error);
  /** How to choose again: the flag, or the wizard's question. */
  const choose = (what: string, flag: string) =>
    asked === "flags"
      ? `choose ${what} (${flag})`
      : `run \`agent gateway setup\` again and choose ${what}`;
  switch (bindFailure(error, settings.host)) {
    case "in_use":
      return portInUseText(where, settings.port, gateway, choose("a free port", "--port"));
    case "denied":
      return `cannot listen on ${where} as this user (${reason})` +
        (settings.port < 1024
          ? `: ports below 1024 need privileges; ${choose("1024 or above", "--port")}`
          : "");
    case "not_local":
      return `${settings.host} is not an address of this machine, so the gateway cannot listen ` +
        `on it; ${
          asked === "flags"
            ? "choose one of its addresses (--host), or --all-interfaces"
            : "run `agent gateway setup` again and choose one of its addresses, or every interface"
        }`;
  }
  return `could not check that the gateway can listen on ${where}: ${reason}`;
}

/**
 * Who holds a port in use: this home's gateway when it runs and listens on that port (a restart
 * applies the new settings), else another program (another port is the way out).
 */
function portInUseText(
  where: string,
  port: number,
  gateway: GatewayState,
  chooseFreePort: string,
): string {
  if (gateway.running === true && gateway.port === port) {
    return `${where} is in use by this home's gateway, which is running: restart it to apply ` +
      "these settings";
  }
  if (gateway.running === true && gateway.port !== undefined) {
    return `${where} is in use by another program (this home's gateway is running on port ` +
      `${gateway.port}); ${chooseFreePort}, then restart the gateway to apply these settings`;
  }
  if (gateway.running === false) {
    return `${where} is in use by another program (this home's gateway is not running); ` +
      chooseFreePort;
  }
  // Cannot be told: the lock is not readable, or the gateway is still starting.
  return `${where} is in use right now: if that is this home's gateway, restart it to apply ` +
    `these settings; otherwise ${chooseFreePort}`;
}

/** The writes of {@linkcode writeSetupFiles}; tests pass failing ones. */
export interface SetupWriters {
  dotenv: (file: string, values: Readonly<Record<string, string>>) => void;
  config: (file: string, edit: (document: Document) => void) => void;
}

/** What {@linkcode writeSetupFiles} writes. */
export interface SetupWrites {
  /** `<home>/config.yaml`. */
  config: string;
  /** `<home>/.env`. */
  dotenv: string;
  /** Variables to set in `.env` (none: `.env` is not written). */
  dotenvValues: Readonly<Record<string, string>>;
  /** The edit of `config.yaml`. */
  edit: (document: Document) => void;
  /** What happens to the global secret, to say what `.env` holds without printing it. */
  secret: "kept" | "generated" | "set" | "moved to .env" | "none";
  /** How the choices were made, for how a failure says to try again (default: flags). */
  asked?: ChoicesFrom;
}

/**
 * Writes `.env`, then `config.yaml`. Both are checked to be writable first, so a predictable
 * failure changes nothing. `.env` goes first because it never loses a secret: when the secret
 * moves out of `config.yaml`, it is in `.env` before it leaves `config.yaml`. If `config.yaml`
 * still fails after `.env` was written, the `CliError` names what `.env` now holds (never the
 * secret itself) and how to finish.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { writeSetupFiles } from "./gateway_setup.ts";
 * const dir = await Deno.makeTempDir();
 * writeSetupFiles({
 *   config: `${dir}/config.yaml`,
 *   dotenv: `${dir}/.env`,
 *   dotenvValues: { WEBHOOK_PORT: "9000" },
 *   edit: (doc) => void doc.setIn(["platforms", "webhook", "enabled"], true),
 *   secret: "kept",
 * });
 * assert.equal(Deno.readTextFileSync(`${dir}/.env`), "WEBHOOK_PORT=9000\n");
 * ```
 */
export function writeSetupFiles(
  writes: SetupWrites,
  writers: SetupWriters = { dotenv: setDotenvValues, config: writeSetupConfig },
): void {
  const { config, dotenv, dotenvValues } = writes;
  const wizard = writes.asked === "wizard";
  const writingDotenv = Object.keys(dotenvValues).length > 0;
  for (const file of writingDotenv ? [dotenv, config] : [config]) {
    const refused = unwritable(file);
    if (refused !== undefined) {
      throw new CliError(
        `cannot write ${file}: ${refused.problem}; nothing was changed. Fix: ${refused.fix}, ` +
          "then run setup again",
      );
    }
  }
  if (writingDotenv) {
    try {
      writers.dotenv(dotenv, dotenvValues);
    } catch (error) {
      if (!(error instanceof Error)) throw error;
      const message = error instanceof RangeError
        ? `cannot update ${dotenv}: ${error.message}`
        : error.message;
      // "nothing was changed" goes before the fix of a write the folder refused, if any.
      const fixAt = message.indexOf(". Fix: ");
      throw new CliError(
        fixAt < 0
          ? `${message}; nothing was changed`
          : `${message.slice(0, fixAt)}; nothing was changed${message.slice(fixAt)}`,
      );
    }
  }
  try {
    writers.config(config, writes.edit);
  } catch (error) {
    if (!writingDotenv || !(error instanceof Error)) throw error;
    const held = Object.entries(dotenvValues).map(([name, value]) =>
      name === "WEBHOOK_SECRET"
        ? `WEBHOOK_SECRET holds ${
          {
            generated: "a newly generated secret",
            set: wizard ? "the secret you entered" : "the secret given with --secret",
            "moved to .env": "the secret from config.yaml (still there too)",
            kept: "the current secret",
            none: "a secret",
          }[writes.secret]
        } (not shown)`
        : `${name}=${value}`
    );
    const renewed = writes.secret === "generated" || writes.secret === "set";
    const again = wizard
      ? `again with the same answers${
        renewed ? ", but keep the current secret (the new one, in .env)" : ""
      }`
      : `again with the same options${
        renewed ? " but without --generate-secret/--secret (the new secret in .env is kept)" : ""
      }`;
    throw new CliError(
      // The write's own fix, if any, is replaced by one saying what is left to do.
      `${
        error.message.replace(/\. Fix: .*$/s, "").replace(/\.$/, "")
      }. ${dotenv} was already updated: ${held.join(", ")}; ` +
        `${config} is unchanged. Fix: make ${config} writable, then run \`agent gateway setup\` ` +
        again,
    );
  }
}

/**
 * Edits `config.yaml` keeping its comments; a missing one starts from the commented starter
 * `agent gateway run` writes, so a home set up first by either command gets the same file.
 */
function writeSetupConfig(file: string, edit: (document: Document) => void): void {
  editConfigFile(file, edit, { whenMissing: STARTER_CONFIG });
}

/**
 * Why an atomic write of `file` (temp file beside its target, then rename) would fail, if so,
 * and what to do: the folder that refuses it is named, as other commands' writes name it.
 */
function unwritable(file: string): { problem: string; fix: string } | undefined {
  let target = file;
  try {
    target = Deno.realPathSync(file);
    if (Deno.statSync(target).isDirectory) {
      return { problem: "it is a folder", fix: `move or delete the folder ${target}` };
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) {
      return {
        problem: reasonOf(error),
        fix: `make ${file} (and the folder it is in) writable`,
      };
    }
  }
  const folder = dirname(target);
  const probe = join(folder, `.${basename(target)}.${crypto.randomUUID()}.probe`);
  try {
    Deno.openSync(probe, { write: true, createNew: true, mode: 0o600 }).close();
  } catch (error) {
    // A missing folder is created by the write itself.
    if (error instanceof Deno.errors.NotFound) return undefined;
    const fix = (error as { code?: unknown }).code === "EROFS"
      ? `${folder} is on a read-only file system: remount it read-write, or set AGENT_HOME to ` +
        "a folder on a writable one"
      : `make ${folder} a folder this user can write (check its owner and mode; folders ` +
        "created with sudo belong to root)";
    return { problem: reasonOf(error), fix };
  }
  Deno.removeSync(probe);
  return undefined;
}

function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message.replace(/: [a-z_]+ '[^']*'$/, "") : String(error);
}

/**
 * Warnings about a global secret setup keeps that breaks its own secret rules (too short, …),
 * and about a `.env` line whose value a `#` cuts short (dotenv reads the rest as a comment).
 * The secret itself is never printed.
 */
function keptSecretWarnings(config: ResolvedConfig, current: CurrentSetup): string[] {
  const { paths, secrets, source } = config;
  const warnings: string[] = [];
  const fix = "Fix: `agent gateway setup --generate-secret` (or `--secret <new>`), then give " +
    "the new secret to the senders of routes without their own";
  let where: string;
  let secret: string;
  if (current.secretIn === "config.yaml") {
    where = `${SECRET_KEY} in ${source.file}`;
    secret = source.string(SECRET_KEY)?.trim() ?? "";
  } else if (current.secretIn === ".env") {
    const text = readTextIfExists(paths.dotenv) ?? "";
    const line = dotenvLineOf(text, "WEBHOOK_SECRET");
    where = `WEBHOOK_SECRET in ${paths.dotenv}${line === undefined ? "" : `:${line}`}`;
    secret = secrets.get("WEBHOOK_SECRET")?.trim() ?? "";
    const raw = line === undefined
      ? undefined
      : /=\s*(.*)$/.exec(text.split(/\r?\n/)[line - 1])?.[1].trim();
    // `value # note` is a comment as meant; `abc#def` most likely is not.
    if (raw !== undefined && !/^["'`]/.test(raw) && /^[^#\s]+#/.test(raw)) {
      warnings.push(
        `${where} has a '#' after ${raw.indexOf("#")} characters: .env reads the rest of the ` +
          `line as a comment, so the secret in effect is only the part before it. Fix: quote ` +
          `the value (WEBHOOK_SECRET="…") if the '#' belongs to it, or ` +
          "`agent gateway setup --generate-secret`",
      );
    }
  } else if (current.secretIn === "environment") {
    where = "WEBHOOK_SECRET in the environment";
    secret = secrets.get("WEBHOOK_SECRET")?.trim() ?? "";
  } else {
    return warnings;
  }
  const problem = checkSecret(secret);
  if (problem !== true) {
    warnings.push(
      `the kept global secret (${where}) breaks setup's secret rules: ${
        problem.replace(/ \(or let setup generate one with --generate-secret\)$/, "")
      }. ${fix}`,
    );
  }
  return warnings;
}

function report(
  config: ResolvedConfig,
  after: WebhookSettings,
  secret: SetupReport["secret"],
  written: string[],
  warnings: string[],
): SetupReport {
  return {
    config: config.paths.config,
    dotenv: config.paths.dotenv,
    enabled: after.enabled,
    port: after.port,
    host: after.host ?? null,
    base_url: webhookBaseUrl(after),
    secret,
    written,
    warnings,
  };
}

/**
 * Writes the choices into `platforms.webhook`. A section whose keys are all commented out reads
 * as null: it becomes a mapping (its comments kept) instead of stopping the YAML library. A
 * section that is an alias (`extra: *defaults`) becomes a copy of the aliased mapping, so the
 * edit lands here and not in the anchor other keys share; so does a section merged in with `<<`
 * (a key set in a new section would hide the merged one). Sections of another type never get
 * here: {@linkcode readWebhookSettings} refuses them first. Returns what it had to replace.
 */
function editWebhookSection(
  doc: Document,
  choices: SetupChoices,
  dotenv: Record<string, string>,
): string[] {
  const replaced = copyMergedSections(doc, EXTRA).map((key) =>
    `${key} in config.yaml came from a merge key (<<); setup wrote a copy of it in place, so ` +
    `its changes apply to ${key} only`
  );
  for (const path of [["platforms"], ["platforms", "webhook"], [...EXTRA]]) {
    const node = doc.getIn(path, true);
    if (isAlias(node)) {
      const target = node.resolve(doc);
      const copy = isNode(target) ? target.clone() : doc.createNode(null);
      (copy as { anchor?: string }).anchor = undefined; // the anchor stays on the original
      doc.setIn(path, copy);
      replaced.push(
        `${path.join(".")} in config.yaml was an alias (*${node.source}); setup replaced it by ` +
          `a copy of the mapping it pointed to, so its changes apply to ${path.join(".")} only`,
      );
    }
    fillNullSection(doc, path); // the copy too, when the alias pointed at a null
  }
  doc.setIn(["platforms", "webhook", "enabled"], choices.enabled);
  doc.setIn([...EXTRA, "port"], choices.port);
  if (choices.host === undefined) doc.deleteIn([...EXTRA, "host"]);
  else doc.setIn([...EXTRA, "host"], choices.host);
  if (dotenv.WEBHOOK_SECRET !== undefined) doc.deleteIn([...EXTRA, "secret"]);
  return replaced;
}

/**
 * A key setup edits that carries an anchor other keys alias (`extra: &d {...}` and
 * `other: *d`) would change those keys too: refused, naming the key and the fix.
 */
function refuseSharedAnchors(source: ConfigSource): void {
  const aliased = new Set<string>();
  visit(source.document, { Alias: (_key, node) => void aliased.add(node.source) });
  const paths = [["platforms"], ["platforms", "webhook"], [...EXTRA]];
  for (const key of ["enabled"]) paths.push(["platforms", "webhook", key]);
  for (const key of ["port", "host", "secret"]) paths.push([...EXTRA, key]);
  for (const path of paths) {
    const node = source.document.getIn(path, true);
    if (!isNode(node) || !node.anchor || !aliased.has(node.anchor)) continue;
    throw source.error(
      path.join("."),
      `it carries the anchor &${node.anchor} that other keys use (*${node.anchor}), so ` +
        "setup's changes would apply to them too",
      `move the anchor to a mapping setup does not edit, or write the values out at the ` +
        `keys that use *${node.anchor}; then run setup again`,
    );
  }
}

/** `config` as it reads with `changes` made to `.env` (a blank value counts as unset). */
function withChanges(
  config: ResolvedConfig,
  io: CliIo,
  changes: Record<string, string>,
): ResolvedConfig {
  const dotenv = parseDotenv(readTextIfExists(config.paths.dotenv) ?? "");
  return { ...config, secrets: new SecretScope({ ...dotenv, ...changes }, io.env) };
}

function printReport(io: CliIo, report: SetupReport): void {
  // .env is written for WEBHOOK_ENABLED / WEBHOOK_PORT there too, not only for the secret.
  io.out(`Wrote ${report.written.join(" and ")}.\n`);
  io.out(`  webhooks: ${report.enabled ? "enabled" : "disabled"}\n`);
  io.out(
    `  listens:  ${report.host ?? "every interface, IPv4 and IPv6"}, port ${report.port}\n`,
  );
  const secret = {
    kept: "unchanged",
    generated: `generated: WEBHOOK_SECRET in ${report.dotenv}`,
    set: `set: WEBHOOK_SECRET in ${report.dotenv}`,
    "moved to .env": `moved from config.yaml to WEBHOOK_SECRET in ${report.dotenv}`,
    none: "none",
  }[report.secret];
  io.out(`  secret:   ${secret}\n`);
  for (const warning of report.warnings) io.err(`warning: ${warning}\n`);
  if (report.enabled) {
    io.out(
      `\nNext: start it with \`agent gateway run\` (restart it if it is running), then add a\n` +
        `subscription with \`agent webhook subscribe <name>\`. Health check: ${report.base_url}/health\n`,
    );
  }
}

/** A port number 1–65535. */
const checkPort: AnswerCheck = (value) => {
  const text = value.trim();
  const port = Number(text);
  return /^\d+$/.test(text) && port >= 1 && port <= 65535
    ? true
    : `'${value}' is not a port: use a whole number from 1 to 65535`;
};

/** An IP address (IPv6 with or without brackets) or a host name. */
const checkHost: AnswerCheck = (value) => {
  const host = stripBrackets(value.trim());
  if (isIP(host) !== 0) return true;
  const labels = host.split(".");
  // An all-numeric last label is a mistyped IPv4 address (999.1.1.1), never a host name.
  const hostname = host.length <= 253 && !/^\d+$/.test(labels.at(-1)!) &&
    labels.every((label) => /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/.test(label));
  return hostname
    ? true
    : `'${value}' is not an IP address or host name (e.g. 127.0.0.1, ::1, 192.168.1.20)`;
};

/**
 * A secret a sender can be given: 16–512 visible ASCII characters, no single quote; a `whsec_`
 * secret must decode (the same rule as `webhook subscribe --secret`).
 */
const checkSecret: AnswerCheck = (value) =>
  checkSecretRule(value, "let setup generate one with --generate-secret");

function stripBrackets(host: string): string {
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}
