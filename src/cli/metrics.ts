/**
 * `agent metrics`: consent, status, preview, export, send, validate, reset.
 *
 * @module
 */
import type { Command } from "@commander-js/extra-typings";
import { dirname, join, resolve } from "node:path";
import type { Document } from "yaml";
import {
  checkedMetricsEndpoint,
  type ConfigSource,
  isPlainObject,
  loadConfig,
  parseBoolish,
  type ResolvedConfig,
  SEND_WHILE_OFF_WARNING,
  SEND_WITHOUT_ENDPOINT_WARNING,
  unusedWhileOff,
} from "../home/config.ts";
import {
  editConfigFile,
  type ReplacedValue,
  setConfigValue,
  type ValueRule,
} from "../home/config_edit.ts";
import { ConfigError } from "../home/errors.ts";
import { homePaths, resolveHome } from "../home/paths.ts";
import { ensurePrivateDir, writeFileAtomic } from "../home/files.ts";
import { jsonSyntaxProblem } from "../home/json_syntax.ts";
import { blankness } from "../home/text.ts";
import { ENDPOINT_KEY } from "../home/metrics_endpoint.ts";
import {
  droppedUnsentWarning,
  escapeControls,
  InvalidStoredCountsError,
  type MetricsPackage,
  MetricsStoreBusyError,
  MetricsStoreDamagedError,
  MetricsStoreUnavailableError,
  type MetricsValidationError,
  openExistingUsageMetrics,
  openUsageMetrics,
  type OutboxSendOutcome,
  type SenderClaim,
  type SendQueue,
  storeAccessFix,
  type UsageMetrics,
  type UsageMetricsOptions,
  validateEndpoint,
  validateMetricsPackage,
} from "../metrics/mod.ts";
import {
  CliError,
  type CliIo,
  configFileWarnings,
  ExitCode,
  loadedConfigFileWarnings,
  printJson,
  UsageError,
} from "./io.ts";
import type { CommandState } from "./mod.ts";
import { clockTime, comingTime } from "./time_words.ts";

/** Adds the `metrics` group to `program`. */
export function addMetricsCommands(program: Command, io: CliIo, state: CommandState): void {
  const metrics = program.command("metrics").description(
    "opt-in anonymous usage metrics (agent.shared_metrics.v2): consent, preview, export",
  ).addHelpText(
    "after",
    "\nNothing is collected or created on disk until you run `agent metrics enable`.\n" +
      "DO_NOT_TRACK=1 forces collection off; AGENT_SHARED_METRICS=true|false is a default\n" +
      "below the config key telemetry.shared_metrics.enabled.",
  );

  metrics.command("status").description("show consent, store location, counts and install id")
    .option("--json", "print one JSON document").action((options) => {
      const config = loadMetricsConfig(io);
      const service = openForReading(config, io);
      try {
        storeGuard(() => showStatus(io, config, service, options.json === true));
      } finally {
        service?.close();
      }
    });

  metrics.command("enable").description(
    "opt in: collect usage counters locally (with --send, also send them)",
  )
    .option("--send", "also send packages to the endpoint")
    .option("--no-send", "collect locally only: stop sending (the endpoint is kept)")
    .option("--endpoint <url>", "where packages are sent: https, or http on loopback")
    .option("--json", "print one JSON document")
    .action((options) => {
      if (options.endpoint !== undefined) {
        const checked = validateEndpoint(options.endpoint);
        if (!checked.ok) throw new UsageError(`--endpoint: ${checked.reason}`);
      }
      const replaced = editConsent(io, "enable", (doc, source) => {
        // What this command keeps must be valid already (a new --endpoint replaces a bad one).
        if (options.send === undefined) {
          keptValue(source, SEND_KEY, () => source.boolean(SEND_KEY));
        }
        const endpoint = options.endpoint ??
          keptValue(source, ENDPOINT_KEY, () => checkedMetricsEndpoint(source));
        if (options.send && !endpoint) {
          throw new UsageError(
            "--send needs an endpoint: pass --endpoint <url> (https, or http on loopback)",
          );
        }
        return [
          ...setConfigValue(doc, source, keyPath(ENABLED_KEY), true, BOOLEAN_VALUE),
          ...(options.send === undefined
            ? []
            : setConfigValue(doc, source, keyPath(SEND_KEY), options.send, BOOLEAN_VALUE)),
          ...(options.endpoint === undefined
            ? []
            : setConfigValue(doc, source, keyPath(ENDPOINT_KEY), options.endpoint, URL_VALUE)),
        ];
      });
      reportConsentChange(io, options.json === true, loadMetricsConfig(io), replaced);
    });

  metrics.command("disable").description(
    "opt out: stop collecting and sending (data is kept; `agent metrics reset` deletes it)",
  )
    .option("--json", "print one JSON document").action((options) => {
      const replaced = editConsent(io, "disable", (doc, source) => {
        const replaced = setConfigValue(doc, source, keyPath(ENABLED_KEY), false, BOOLEAN_VALUE);
        if (doc.hasIn(keyPath(SEND_KEY))) {
          replaced.push(...setConfigValue(doc, source, keyPath(SEND_KEY), false, BOOLEAN_VALUE));
        }
        return replaced;
      });
      reportConsentChange(io, options.json === true, loadMetricsConfig(io), replaced);
    });

  metrics.command("preview").description(
    "print the packages an export would build now (nothing is written)",
  ).option("--json", "print the exact packages as one JSON document").action((options) => {
    const config = loadMetricsConfig(io);
    const service = openExisting(config, io);
    try {
      const said = sayMetricsWarnings(io, config);
      const packages = storeGuard(() => service?.preview() ?? []);
      if (options.json) return printJson(io, { packages, warnings: jsonWarnings(config, said) });
      if (packages.length === 0) {
        io.out(
          service
            ? "Nothing recorded since the last export.\n"
            : `Nothing recorded: ${consentLine(config)}.\n`,
        );
        return;
      }
      for (const pkg of packages) io.out(describePackage(pkg));
      io.out("(--json prints the exact packages)\n");
    } finally {
      service?.close();
    }
  });

  metrics.command("export").description(
    "build packages of everything recorded so far into the outbox (today included); with " +
      "sending on, also send the packages that are due",
  ).option("--out <dir>", "also copy the new packages to this folder")
    .option("--json", "print one JSON document").action(async (options) => {
      const config = loadMetricsConfig(io);
      if (options.out?.trim() === "") {
        throw new UsageError("--out needs a folder, e.g. --out ./metrics (it got an empty value)");
      }
      // Check the copy target before anything is exported, so a bad --out loses nothing.
      const out = options.out === undefined ? undefined : prepareOutDir(resolve(options.out));
      const outDir = out?.dir;
      // Said before the send pass, which may wait on a slow endpoint (or be stopped).
      const said = sayMetricsWarnings(io, config);
      // Folders this command made for --out stay only when something is copied into them.
      let copying = false;
      let opened: UsageMetrics | undefined;
      try {
        const service = opened = openExisting(config, io);
        // Packages are validated before they are written: a failure writes and sends nothing.
        const built = storeGuard(() => service?.exportNow() ?? []);
        const dropped = storeGuard(() => reportDropped(io, service));
        copying = outDir !== undefined && built.length > 0;
        const { copies, failed } = outDir
          ? copyPackages(built, outDir)
          : { copies: [], failed: undefined };
        if (!options.json) {
          // Said before the send pass, which may wait on a slow endpoint (or be stopped).
          if (built.length === 0) {
            io.out(
              service
                ? "Nothing to export: no counts recorded since the last export.\n"
                : `Nothing to export: ${consentLine(config)}.\n`,
            );
          }
          for (const [i, entry] of built.entries()) {
            const counters = plural(entry.package.metrics.length, "counter");
            io.out(
              `Exported ${entry.package.package_id} (${entry.package.period_start.slice(0, 10)}, ` +
                `${counters}) to ${copies[i] ?? entry.path}\n`,
            );
          }
        }
        const sent = service ? await storeGuardAsync(() => sendWithProgress(io, service)) : [];
        if (!allSent(sent)) state.exitCode = ExitCode.failed;
        if (options.json) {
          printJson(io, {
            packages: built.map((entry, i) => ({
              package_id: entry.package.package_id,
              day: entry.package.period_start.slice(0, 10),
              metrics: entry.package.metrics.length,
              path: entry.path,
              copy: copies[i],
            })),
            sent: sent.map(sentJson),
            ...dropped.json,
            warnings: jsonWarnings(config, [...said, ...dropped.warnings]),
          });
          if (failed) throw copyFailure(failed, outDir!, built);
          return;
        }
        reportSent(io, sent);
        if (failed) throw copyFailure(failed, outDir!, built);
      } finally {
        opened?.close();
        if (out && !copying) removeCreated(out.created);
      }
    });

  metrics.command("send").description("send outbox packages that are due to the endpoint now")
    .option("--json", "print one JSON document").action(async (options) => {
      const config = loadMetricsConfig(io);
      // A refusal below says what these two would (sending is off, or has no endpoint).
      const said = sayMetricsWarnings(io, config, [
        SEND_WHILE_OFF_WARNING,
        SEND_WITHOUT_ENDPOINT_WARNING,
      ]);
      if (!config.telemetry.enabled) {
        const hint = config.telemetry.decidedBy.startsWith("DO_NOT_TRACK")
          ? ""
          : `; ${turnOnSending(config, "them")}`;
        throw new CliError(
          `nothing is sent: usage metrics are off (${decidedBy(config)})${hint}`,
        );
      }
      if (!config.telemetry.send) {
        if (config.source.boolean("telemetry.shared_metrics.send") === true) {
          throw new CliError(
            `sending is on but ${ENDPOINT_KEY} is not set in ${config.paths.config}, so ` +
              "nothing is sent: run `agent metrics enable --send --endpoint <url>` to set it",
          );
        }
        throw new CliError(`sending is off: ${turnOnSending(config, "it")}`);
      }
      const service = storeGuard(() =>
        openUsageMetrics(config, { now: io.now, onStoreUnavailable: storeFailure })
      );
      try {
        const dropped = storeGuard(() => reportDropped(io, service));
        const sent = await storeGuardAsync(() => sendWithProgress(io, service));
        // Another process (a second `metrics send`, the gateway) claimed the due packages.
        const elsewhere = sent.length === 0 ? storeGuard(() => service.packagesBeingSent()) : 0;
        // Packages a failed attempt or a Retry-After put off: why nothing went out now.
        const waiting = sent.length === 0 && elsewhere === 0
          ? storeGuard(() => service.sendQueue()).deferred
          : undefined;
        if (!allSent(sent)) state.exitCode = ExitCode.failed;
        if (options.json) {
          return printJson(io, {
            sent: sent.map(sentJson),
            ...(elsewhere > 0 ? { being_sent_elsewhere: elsewhere } : {}),
            ...(waiting && waiting.packages > 0 ? { deferred: deferredJson(waiting) } : {}),
            ...dropped.json,
            warnings: jsonWarnings(config, [...said, ...dropped.warnings]),
          });
        }
        if (elsewhere > 0) {
          io.out(
            `Nothing sent: another agent process is sending ${elsewhere} package` +
              `${elsewhere === 1 ? "" : "s"} now; \`agent metrics status\` shows the result.\n`,
          );
        } else if (waiting && waiting.packages > 0) {
          io.out(
            `Nothing due to send: ${plural(waiting.packages, "package")} ` +
              `${waiting.packages === 1 ? "waits" : "wait"}; ${
                waitingDetail(waiting, io.now())
              }.\n`,
          );
        } else if (sent.length === 0) io.out("Nothing due to send.\n");
        reportSent(io, sent);
      } finally {
        service.close();
      }
    });

  metrics.command("validate").description(
    "check package files against the v2 schema (`-` reads stdin); exit 2 if any is invalid",
  ).argument("<files...>", "package files, or - for stdin")
    .option("--json", "print one JSON document: { valid, results: [{ file, valid, errors }] }")
    .action(async (files, options) => {
      if (files.filter((file) => file === "-").length > 1) {
        throw new UsageError(
          "validate: - (stdin) is named more than once; stdin can be read only once, so name it " +
            "once (save the package to a file to check it twice)",
        );
      }
      const results: ValidationReport[] = [];
      for (const file of files) {
        const read = file === "-" ? await readStdinPackage(io) : readPackageFile(file);
        results.push(
          "text" in read
            ? { file, ...validateText(read.text, file === "-" ? "stdin" : "the file") }
            : { file, valid: false, errors: [read.error], unreadable: read.unreadable },
        );
      }
      const allValid = results.every((result) => result.valid);
      state.exitCode = results.some((result) => result.unreadable)
        ? ExitCode.failed
        : allValid
        ? ExitCode.ok
        : ExitCode.usage;
      if (options.json) {
        return printJson(io, {
          valid: allValid,
          results: results.map(({ file, valid, errors }) => ({ file, valid, errors })),
          // Said on stderr first by every command, though validate does not read the config.
          warnings: loadedConfigFileWarnings(state),
        });
      }
      // Text output goes to a terminal: keys and values of a hostile file must not drive it.
      for (const result of results) {
        const file = escapeControls(result.file);
        if (result.valid) io.out(`${file}: valid agent.shared_metrics.v2 package\n`);
        else if (result.errors[0].rule === "file") {
          io.err(`agent: ${file}: ${escapeControls(result.errors[0].message)}\n`);
        } else {
          io.out(
            `${file}: invalid (${result.errors.length} error${
              result.errors.length === 1 ? "" : "s"
            })\n`,
          );
          for (const error of result.errors) {
            // One line each; the pointer once (most messages start with it already).
            const message = escapeControls(error.message);
            const pointer = escapeControls(error.pointer || "/");
            io.out(
              message.startsWith(`${pointer} `) ? `  ${message}\n` : `  ${pointer}: ${message}\n`,
            );
          }
        }
      }
    });

  metrics.command("reset").description("delete the usage-metrics store and outbox (asks first)")
    .option("-y, --yes", "do not ask for confirmation")
    .option("--json", "print one JSON document").action(async (options) => {
      const config = loadConfig({ env: io.env });
      const folder = config.paths.metrics;
      if (!storeFolderExists(folder)) {
        if (options.json) {
          return printJson(io, {
            deleted: false,
            path: folder,
            warnings: configFileWarnings(config),
          });
        }
        io.out(`Nothing to delete: ${folder} does not exist.\n`);
        return;
      }
      if (!options.yes) {
        if (!io.stdinIsTerminal) {
          throw new UsageError("reset deletes all collected usage data; pass --yes to confirm");
        }
        if (!(await io.confirm(`Delete ${folder} and all usage data in it?`))) {
          throw new CliError("reset cancelled; nothing was deleted");
        }
      }
      try {
        Deno.removeSync(folder, { recursive: true });
      } catch (error) {
        throw new CliError(
          `cannot delete ${folder} (${messageOf(error)}); part of it may be deleted already. ` +
            `${storeAccessFix(folder)}, then run \`agent metrics reset\` again`,
        );
      }
      if (options.json) {
        return printJson(io, { deleted: true, path: folder, warnings: configFileWarnings(config) });
      }
      io.out(
        config.telemetry.enabled
          ? `Deleted ${folder}. Collection is still on (${decidedBy(config)}): the next ` +
            "agent run starts a new store with a new install id; run `agent metrics disable` to " +
            "stop collecting.\n"
          : `Deleted ${folder}. A new install id is created if collection is enabled again.\n`,
      );
    });
}

function showStatus(
  io: CliIo,
  config: ResolvedConfig,
  service: UsageMetrics | undefined,
  json: boolean,
) {
  const t = config.telemetry;
  const dropped = reportDropped(io, service);
  const summary = service?.summary();
  const queue = service?.sendQueue() ?? { sending: [], deferred: { packages: 0 }, due: 0 };
  if (json) {
    return printJson(io, {
      enabled: t.enabled,
      decided_by: t.decidedBy,
      send: t.send,
      endpoint: t.endpoint ?? null,
      store: config.paths.metricsDb,
      store_exists: summary !== undefined,
      // Only an existing store can be writable or not: status never writes to find out.
      store_writable: service ? !service.readOnly : null,
      install_id: summary?.installId ?? null,
      pending_counters: summary?.pendingRows ?? 0,
      pending_events: summary?.pendingEvents ?? 0,
      packages: summary?.packages ?? { pending: 0, sent: 0, rejected: 0 },
      sending_now: queue.sending.map((sender) => ({
        pid: sender.pid ?? null,
        host: sender.host ?? null,
        this_host: sender.thisHost,
        since: isoOrNull(sender.since),
        packages: sender.packages,
      })),
      deferred: deferredJson(queue.deferred),
      due_now: queue.due,
      ...dropped.json,
      // In the order stderr has them: the dropped packages first, as in the text.
      warnings: jsonWarnings(config, [...dropped.warnings, ...sayMetricsWarnings(io, config)]),
    });
  }
  io.out(`Usage metrics: ${t.enabled ? "collecting" : "off"} (${decidedBy(config)})\n`);
  const idle = idleEndpoint(config);
  io.out(
    `Sending:       ${
      t.send ? `on, to ${t.endpoint}` : idle ? `off (${enableSendTo(idle)})` : "off"
    }\n`,
  );
  io.out(`Store:         ${config.paths.metricsDb}${summary ? "" : " (not created)"}\n`);
  if (summary) {
    io.out(`Install id:    ${summary.installId} (random, this home only; in every package)\n`);
    io.out(
      `Pending:       ${plural(summary.pendingEvents, "event")} in ` +
        `${plural(summary.pendingRows, "counter")}\n`,
    );
    const p = summary.packages;
    const exported = p.pending + p.sent + p.rejected;
    io.out(
      `Exported:      ${exported} package${exported === 1 ? "" : "s"} ` +
        `(${p.sent} sent, ${p.pending} unsent, ${p.rejected} rejected)\n`,
    );
  }
  const nowMs = io.now();
  for (const sender of queue.sending) io.out(`Sending now:   ${senderLine(sender, nowMs)}\n`);
  const deferred = queue.deferred;
  if (deferred.packages > 0) {
    const detail = t.send
      ? waitingDetail(deferred, nowMs)
      : `none is tried while sending is off${lastAttempt(deferred)}`;
    io.out(`Waiting:       ${plural(deferred.packages, "package")} to send; ${detail}\n`);
  }
  if (queue.due > 0 && t.send) {
    io.out(
      `Due now:       ${plural(queue.due, "package")}; the next \`agent metrics send\`, agent ` +
        "run or gateway pass sends them\n",
    );
  }
  sayMetricsWarnings(io, config);
}

/** The `deferred` object of `--json` (status, send): what waits, until when and why. */
function deferredJson(deferred: SendQueue["deferred"]) {
  return {
    packages: deferred.packages,
    next_attempt_at: isoOrNull(deferred.nextAttemptAt),
    reason: deferred.reason ?? null,
  };
}

/** `next attempt at 2026-11-21 12:30 UTC (in 14 min); last attempt: HTTP 503 (after 3 tries)`. */
function waitingDetail(deferred: SendQueue["deferred"], nowMs: number): string {
  return `next attempt at ${comingTime(deferred.nextAttemptAt!, nowMs)}${lastAttempt(deferred)}`;
}

function lastAttempt(deferred: SendQueue["deferred"]): string {
  return deferred.reason ? `; last attempt: ${escapeControls(deferred.reason)}` : "";
}

/**
 * Says once, as a warning on stderr, which unsent packages the 30-day retention dropped (in this
 * command or, unreported, in another process); returns them for the command's `--json` document:
 * `json` is its `dropped_unsent` (none when nothing was dropped), `warnings` the warning said.
 */
function reportDropped(io: CliIo, service: UsageMetrics | undefined): {
  json: {
    dropped_unsent?: {
      packages: number;
      reason: string;
      days: { day: string; packages: number }[];
    };
  };
  warnings: string[];
} {
  const dropped = service?.takeDroppedUnsent();
  if (!dropped) return { json: {}, warnings: [] };
  const { what, why } = droppedUnsentWarning(dropped);
  const warning = `${what}: ${why}`;
  io.err(`warning: ${warning}\n`);
  const { packages, reason, days } = dropped;
  return { json: { dropped_unsent: { packages, reason, days } }, warnings: [warning] };
}

/** `process 1234 on this host since 12:01:05 UTC (2 packages)`, for a live send claim. */
function senderLine(sender: SenderClaim, nowMs: number): string {
  const who = sender.pid === undefined
    ? "an agent process of an older version"
    : `process ${sender.pid} on ${
      sender.thisHost ? "this host" : `host ${escapeControls(sender.host ?? "")}`
    }`;
  const since = sender.since === undefined ? "" : ` since ${clockTime(sender.since, nowMs)}`;
  return `${who}${since} (${plural(sender.packages, "package")})`;
}

/**
 * `run <command> to turn <what> on`: the command takes `--endpoint <url>` only when config.yaml
 * has no endpoint that would do (the one it has need not be typed again).
 */
function turnOnSending(config: ResolvedConfig, what: string): string {
  const endpoint = config.telemetry.endpoint;
  return endpoint !== undefined && validateEndpoint(endpoint).ok
    ? `run \`agent metrics enable --send\` to turn ${what} on; packages go to ` +
      escapeControls(endpoint)
    : `run \`agent metrics enable --send --endpoint <url>\` to turn ${what} on`;
}

/** The endpoint config.yaml sets while collecting without sending, if it is one the sender takes. */
function idleEndpoint(config: ResolvedConfig): string | undefined {
  const { enabled, send, endpoint } = config.telemetry;
  return enabled && !send && endpoint !== undefined && validateEndpoint(endpoint).ok
    ? endpoint
    : undefined;
}

function enableSendTo(endpoint: string): string {
  return `\`agent metrics enable --send\` sends to ${escapeControls(endpoint)}`;
}

/** Whether a store file (or anything in its place) was created, so something was collected. */
function storeCreated(config: ResolvedConfig): boolean {
  try {
    Deno.statSync(config.paths.metricsDb);
    return true;
  } catch {
    return false;
  }
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

function isoOrNull(ms: number | undefined): string | null {
  return ms === undefined ? null : new Date(ms).toISOString();
}

function reportConsentChange(
  io: CliIo,
  json: boolean,
  config: ResolvedConfig,
  replaced: ReplacedValue[],
): void {
  const t = config.telemetry;
  if (json) {
    return printJson(io, {
      enabled: t.enabled,
      decided_by: t.decidedBy,
      send: t.send,
      endpoint: t.endpoint ?? null,
      config: config.paths.config,
      replaced: replaced.map((entry) => ({
        key: entry.key,
        line: entry.line ?? null,
        was: entry.value ?? null,
        expected: entry.expected,
      })),
      warnings: jsonWarnings(config, sayMetricsWarnings(io, config)),
    });
  }
  for (const entry of replaced) {
    const where = `${config.paths.config}${entry.line === undefined ? "" : `:${entry.line}`}`;
    const was = entry.written === undefined
      ? `it was not ${entry.expected} (not shown: it may hold credentials)`
      : `it was ${escapeControls(entry.written)}, not ${entry.expected}`;
    io.out(`Replaced the invalid value of ${entry.key} (${where}): ${was}.\n`);
  }
  const configured = config.source.boolean("telemetry.shared_metrics.enabled");
  io.out(`Usage metrics ${configured ? "enabled" : "disabled"} in ${config.paths.config}.\n`);
  if (configured && !t.enabled) {
    io.out(`Collection stays off for now (${decidedBy(config)}).\n`);
  }
  if (configured === false && storeCreated(config)) {
    // What the opt-out means for what is already there, and for processes running now.
    io.out(
      "Nothing more is recorded or sent, also by a gateway or chat already running.\n" +
        `What was collected stays in ${config.paths.metricsDb} and its outbox, unsent; ` +
        "`agent metrics reset` deletes it.\n",
    );
  }
  if (t.enabled) {
    const idle = idleEndpoint(config);
    const off = idle ? `off (local only; ${enableSendTo(idle)})` : "off (local only)";
    io.out(`Sending: ${t.send ? `on, to ${t.endpoint}` : off}.\n`);
  }
  sayMetricsWarnings(io, config);
}

/**
 * Says the usage-metrics settings' warnings (a `send: true` that sends nothing, an
 * `AGENT_SHARED_METRICS` that is not true or false …) once on stderr, with `--json` too; returns
 * what it said, for the `--json` document ({@linkcode jsonWarnings}). `except` leaves out what
 * the command says in other words.
 */
function sayMetricsWarnings(
  io: CliIo,
  config: ResolvedConfig,
  except: string[] = [],
): string[] {
  const said = config.telemetry.warnings.filter((warning) => !except.includes(warning));
  for (const warning of said) io.err(`warning: ${warning}\n`);
  return said;
}

/**
 * A metrics command's `--json` warnings: the config file's (every command says them on stderr
 * first), then the command's own, which it said on stderr too.
 */
function jsonWarnings(config: ResolvedConfig, own: string[]): string[] {
  return [...configFileWarnings(config), ...own];
}

function consentLine(config: ResolvedConfig): string {
  return config.telemetry.enabled
    ? "collection is on but nothing was recorded yet"
    : `usage metrics are off (${decidedBy(config)})`;
}

/**
 * What decided consent, for one pair of brackets in a sentence: `resolveTelemetry` words some
 * reasons with a bracket of their own ("default (off until you opt in)"), which would nest.
 */
function decidedBy(config: ResolvedConfig): string {
  return config.telemetry.decidedBy.replace(/ \((.*)\)$/, ": $1");
}

function describePackage(pkg: MetricsPackage): string {
  const r = pkg.resource;
  let text =
    `Package for ${
      pkg.period_start.slice(0, 10)
    } (${r.os_family}/${r.architecture}, agent ${r.agent_version}, ` +
    `install ${r.install_method}): ${plural(pkg.metrics.length, "counter")}\n`;
  for (const item of pkg.metrics) {
    const dims = Object.entries(item.dimensions).map(([k, v]) => `${k}=${v}`).join(", ");
    text += `  ${item.name}${dims ? ` {${dims}}` : ""} ${item.value}\n`;
  }
  return text;
}

/**
 * The send pass of `export` and `send`. Ctrl-C, SIGTERM or SIGHUP stop it: a package whose answer
 * had not come is due again at once, and the command ends saying so.
 */
async function sendWithProgress(io: CliIo, service: UsageMetrics) {
  if (!service.settings.send) return [];
  if (io.stderrIsTerminal) io.err(`Sending packages to ${service.settings.endpoint} …\n`);
  const stop = new AbortController();
  const stopped = (how: string) => {
    if (stop.signal.aborted) return;
    stop.abort(
      new CliError(
        `stopped by ${how} while sending; a package the endpoint had not answered is sent ` +
          "again by the next `agent metrics send`",
      ),
    );
  };
  const stopInterrupt = io.onInterrupt?.(() => stopped("Ctrl-C"));
  const stopTerminate = io.onTerminate?.((signal) => stopped(signal));
  try {
    const sent = await service.sendDue({ signal: stop.signal });
    stop.signal.throwIfAborted();
    return sent;
  } finally {
    stopInterrupt?.();
    stopTerminate?.();
  }
}

/** Whether every package of this pass went out (none deferred, rejected, invalid or unreadable). */
function allSent(sent: OutboxSendOutcome[]): boolean {
  return sent.every((outcome) => outcome.status === "sent");
}

/**
 * One send outcome as the CLI's JSON prints it: snake_case like every `--json` document, and a
 * missing or unreadable outbox file as what it is for the user, a rejected package.
 */
function sentJson(outcome: OutboxSendOutcome): Record<string, unknown> {
  const package_id = outcome.packageId;
  switch (outcome.status) {
    case "sent":
      return { package_id, status: "sent", http_status: outcome.httpStatus ?? null };
    case "rejected":
      return {
        package_id,
        status: "rejected",
        http_status: outcome.httpStatus,
        reason: `the endpoint refused it (HTTP ${outcome.httpStatus}); it is not retried`,
      };
    case "deferred":
      return {
        package_id,
        status: "deferred",
        retry_at: new Date(outcome.retryAt).toISOString(),
        reason: outcome.reason,
      };
    case "invalid":
      return {
        package_id,
        status: "invalid",
        file: outcome.file,
        moved_to: outcome.movedTo,
        reason: outcome.reason,
      };
    case "unreadable":
      return {
        package_id,
        status: "rejected",
        http_status: null,
        file: outcome.file,
        reason: `${outcome.reason}; it is not retried`,
      };
  }
}

function reportSent(io: CliIo, sent: OutboxSendOutcome[]): void {
  for (const outcome of sent) {
    if (outcome.status === "sent") io.out(`Sent ${outcome.packageId}\n`);
    else if (outcome.status === "unreadable") {
      const reason = escapeControls(outcome.reason);
      io.out(`Not sent ${outcome.packageId}: ${reason}\n`);
      io.err(
        `agent: ${outcome.file}: not sent, ${reason}. Its package is marked rejected ` +
          "and is never sent (`agent metrics status` counts it as rejected)\n",
      );
    } else if (outcome.status === "invalid") {
      io.out(`Not sent ${outcome.packageId}: the file does not validate\n`);
      io.err(
        `agent: ${outcome.file}: not sent, it does not validate against agent.shared_metrics.v2 ` +
          `(${escapeControls(outcome.reason)}). It was moved to ${outcome.movedTo} and is never ` +
          "sent. " +
          "Fix: look at it, then delete it (or run `agent metrics reset` to start over)\n",
      );
    } else if (outcome.status === "rejected") {
      io.out(
        `Rejected ${outcome.packageId} by the endpoint (HTTP ${outcome.httpStatus}); it will not be retried\n`,
      );
    } else {
      io.out(
        `Deferred ${outcome.packageId} until ${new Date(outcome.retryAt).toISOString()}: ${
          escapeControls(outcome.reason)
        }\n`,
      );
    }
  }
  const failed = sent.filter((outcome) => outcome.status !== "sent");
  if (failed.length === 0) return;
  const deferred = failed.filter((outcome) => outcome.status === "deferred").length;
  const refused = failed.length - deferred;
  const why: string[] = [];
  if (deferred > 0) {
    why.push(
      `${deferred} deferred: retried after the time shown, by \`agent metrics send\`, the ` +
        "next agent run or the gateway",
    );
  }
  if (refused > 0) why.push(`${refused} rejected: never sent again, see the reason above`);
  io.err(
    `agent: ${failed.length} of ${sent.length} package${sent.length === 1 ? "" : "s"} ` +
      `not sent (${why.join("; ")})\n`,
  );
}

/**
 * Makes `dir` ready for the copies of `export --out`, before anything is exported. `created`
 * lists the folders it made, outermost first, for {@linkcode removeCreated}.
 */
function prepareOutDir(dir: string): { dir: string; created: string[] } {
  const created = missingFolders(dir);
  try {
    ensurePrivateDir(dir);
  } catch (error) {
    removeCreated(created);
    const reason = error instanceof Deno.errors.AlreadyExists
      ? "it exists and is not a folder"
      : error instanceof Error
      ? error.message
      : String(error);
    throw new UsageError(`--out ${dir}: cannot use it as the export folder (${reason})`);
  }
  if (!Deno.statSync(dir).isDirectory) {
    throw new UsageError(`--out ${dir}: cannot use it as the export folder (it is not a folder)`);
  }
  // Try a write now: packages exported to the outbox are not exported again.
  const probe = join(dir, `.agent-export-check-${crypto.randomUUID()}.tmp`);
  try {
    Deno.writeTextFileSync(probe, "", { createNew: true });
    Deno.removeSync(probe);
  } catch (error) {
    removeCreated(created);
    throw new UsageError(
      `--out ${dir}: cannot write there (${
        error instanceof Error ? error.message : String(error)
      }); nothing was exported. Pick a folder you can write to`,
    );
  }
  return { dir, created };
}

/** `dir` and its parents that do not exist yet, outermost first. */
function missingFolders(dir: string): string[] {
  const missing: string[] = [];
  for (let path = dir; dirname(path) !== path; path = dirname(path)) {
    try {
      Deno.lstatSync(path); // a link, even a broken one, is not this command's to remove
      break;
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) break;
      missing.unshift(path);
    }
  }
  return missing;
}

/** Removes the folders `export --out` made (innermost first), as long as they are empty. */
function removeCreated(created: string[]): void {
  for (const folder of created.toReversed()) {
    try {
      Deno.removeSync(folder);
    } catch {
      return; // not empty (or gone): what is in it stays
    }
  }
}

type Built = { package: MetricsPackage; path: string }[];

/**
 * Copies the new packages to `--out`. A failure stops the copies (the disk is full, say) but
 * not the export: the packages are in the outbox and marked exported either way.
 */
function copyPackages(
  built: Built,
  dir: string,
): { copies: (string | undefined)[]; failed?: { reason: string } } {
  const copies: (string | undefined)[] = [];
  for (const entry of built) {
    const target = join(dir, `${entry.package.package_id}.json`);
    try {
      writeFileAtomic(target, Deno.readTextFileSync(entry.path));
    } catch (error) {
      return { copies, failed: { reason: error instanceof Error ? error.message : String(error) } };
    }
    copies.push(target);
  }
  return { copies };
}

/** The packages not copied to `--out` are in the outbox: say where and how to copy them. */
function copyFailure(failed: { reason: string }, dir: string, built: Built): CliError {
  const outbox = built.length > 0 ? dirname(built[0].path) : "the outbox";
  const missing = built.filter((entry) => !exists(join(dir, `${entry.package.package_id}.json`)))
    .map((entry) => entry.path);
  return new CliError(
    `cannot copy to ${dir} (${failed.reason}). The package${
      missing.length === 1 ? " is" : "s are"
    } ` +
      `exported all the same (a later export does not repeat ${
        missing.length === 1 ? "it" : "them"
      }) and kept in ${outbox}; copy ${missing.length === 1 ? "it" : "them"} with: ` +
      `cp ${missing.join(" ")} ${dir}/`,
  );
}

/**
 * `loadConfig` plus the rules the metrics commands need at load: a configured endpoint must pass
 * the same check as `metrics enable --endpoint` (a ConfigError naming config.yaml, line and key).
 * While usage metrics are off the endpoint is not used, so a bad one is only a warning.
 */
function loadMetricsConfig(io: CliIo): ResolvedConfig {
  const config = loadConfig({ env: io.env });
  try {
    if (config.telemetry.endpoint !== undefined) checkedMetricsEndpoint(config.source);
  } catch (error) {
    if (config.telemetry.enabled || !(error instanceof ConfigError)) throw error;
    config.telemetry.warnings.push(unusedWhileOff(error));
    config.telemetry.endpoint = undefined; // not shown either: it may hold credentials
  }
  return config;
}

const ENABLED_KEY = "telemetry.shared_metrics.enabled";
const SEND_KEY = "telemetry.shared_metrics.send";

function keyPath(key: string): string[] {
  return key.split(".");
}

/** What `enabled` and `send` may hold: what the config reads as a boolean (`true`, `yes`, `1`). */
const BOOLEAN_VALUE: ValueRule = {
  accepts: (value) => parseBoolish(value) !== undefined,
  expected: "true or false",
};

/** What `endpoint` may hold before a new one replaces it; a URL may carry credentials. */
const URL_VALUE: ValueRule = {
  accepts: (value) => typeof value === "string",
  expected: "a URL",
  secret: true,
};

/**
 * Runs the consent edit of `agent metrics <command>` on `config.yaml` and returns the invalid
 * values it replaced. A file that cannot be read as YAML is refused, naming the file, the line,
 * and the key the command would set; so is a problem outside the consent keys.
 */
function editConsent(
  io: CliIo,
  command: "enable" | "disable",
  edit: (doc: Document, source: ConfigSource) => ReplacedValue[],
): ReplacedValue[] {
  const file = homePaths(resolveHome(io.env)).config;
  try {
    loadConfig({ env: io.env });
  } catch (error) {
    // A bad consent value is what the edit repairs, or refuses naming the key it keeps.
    const consent = error instanceof ConfigError && error.location.file === file &&
      error.location.key?.startsWith("telemetry");
    if (!consent) throw unparsable(error, command);
  }
  let replaced: ReplacedValue[] = [];
  try {
    editConfigFile(file, (doc, source) => {
      replaced = edit(doc, source);
    });
  } catch (error) {
    throw unparsable(error, command);
  }
  return replaced;
}

/** A file-level ConfigError (not YAML, not UTF-8) says that nothing changed and what to rerun. */
function unparsable(error: unknown, command: "enable" | "disable"): unknown {
  if (!(error instanceof ConfigError) || error.location.key !== undefined) return error;
  return new ConfigError(
    error.location,
    `${error.problem}; nothing was changed`,
    `${error.fix ?? "correct the file"}, then run \`agent metrics ${command}\` again to set ` +
      ENABLED_KEY,
  );
}

/**
 * Reads a consent key the command keeps as it is (`read` refuses a bad value), or `undefined`
 * when a section on its way is not a mapping: the edit replaces that section, so the key is gone.
 */
function keptValue<T>(source: ConfigSource, key: string, read: () => T): T | undefined {
  const sections = keyPath(key).slice(0, -1);
  for (let depth = 1; depth <= sections.length; depth++) {
    const value = source.get(sections.slice(0, depth).join("."));
    if (value === undefined || value === null || !isPlainObject(value)) return undefined;
  }
  return read();
}

/** Opens the existing store for a metrics command; a damaged file is exit 1 naming the fix. */
function openExisting(config: ResolvedConfig, io: CliIo): UsageMetrics | undefined {
  return storeGuard(() => openExistingUsageMetrics(config, { now: io.now }));
}

/**
 * {@linkcode openExisting} for a command that only reads: a store this user may not write is
 * opened read-only, with a warning in the config's warnings naming the fix.
 */
function openForReading(config: ResolvedConfig, io: CliIo): UsageMetrics | undefined {
  try {
    return openExistingUsageMetrics(config, { now: io.now });
  } catch (error) {
    if (!(error instanceof MetricsStoreUnavailableError) || !error.accessDenied) {
      throw asCliError(error);
    }
    let service: UsageMetrics | undefined;
    try {
      service = openExistingUsageMetrics(config, { now: io.now, readOnly: true });
    } catch {
      throw asCliError(error); // it cannot be read either: the first reason is the one to fix
    }
    const folder = dirname(error.path);
    config.telemetry.warnings.push(
      `the metrics store ${error.path} cannot be written (${messageOf(error.cause)}), so it is ` +
        "shown read-only and nothing is recorded, exported or sent from it. " +
        storeAccessFix(folder),
    );
    return service;
  }
}

/** Store problems the user can fix become one-line CLI errors (exit 1), not stack traces. */
function storeGuard<T>(work: () => T): T {
  try {
    return work();
  } catch (error) {
    throw asCliError(error);
  }
}

/** {@linkcode storeGuard} for async work. */
async function storeGuardAsync<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw asCliError(error);
  }
}

function asCliError(error: unknown): unknown {
  return error instanceof MetricsStoreUnavailableError ||
      error instanceof InvalidStoredCountsError ||
      error instanceof MetricsStoreDamagedError ||
      error instanceof MetricsStoreBusyError
    ? new CliError(error.message)
    : error;
}

const storeFailure: UsageMetricsOptions["onStoreUnavailable"] = (error) => {
  throw new CliError(error.message);
};

/** One file's answer in `metrics validate` (`errors` is empty when valid). */
interface ValidationReport {
  file: string;
  valid: boolean;
  errors: MetricsValidationError[];
  /** The file could not be read for a reason other than missing or a folder (exit 1). */
  unreadable?: boolean;
}

/** Packages are a few KiB; anything near this is not one (and must not be read into memory). */
const MAX_PACKAGE_FILE_BYTES = 16 * 1024 * 1024;
const MAX_SIZE_TEXT = "16 MiB";

type PackageRead = { text: string } | { error: MetricsValidationError; unreadable: boolean };

function fileProblem(message: string, unreadable = false): PackageRead {
  return { error: { pointer: "", rule: "file", message, value: null }, unreadable };
}

/**
 * The file's text, or why it cannot be checked (rule `file`, pointer `""`). Only regular files
 * are read (a device such as /dev/zero or a FIFO never ends), and only up to
 * {@linkcode MAX_PACKAGE_FILE_BYTES}, checked before reading.
 */
function readPackageFile(file: string): PackageRead {
  const problem = fileProblem;
  try {
    const info = Deno.statSync(file);
    if (info.isDirectory) {
      return problem("is a folder, not a package file; name the .json files in it");
    }
    if (!info.isFile) {
      return problem(
        "is not a regular file (a device, pipe or socket); save the package to a file, or pipe " +
          "it to stdin with -",
      );
    }
    if (info.size > MAX_PACKAGE_FILE_BYTES) {
      return problem(
        `is ${info.size} bytes, more than the ${MAX_SIZE_TEXT} a package file may have; ` +
          "packages are a few KiB, so this is not one",
      );
    }
    using handle = Deno.openSync(file, { read: true });
    const bytes = readCapped(handle);
    if (bytes === undefined) {
      return problem(`grew past ${MAX_SIZE_TEXT} while being read; it is not a package file`);
    }
    return packageText(bytes);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      return problem("no such file; check the path (or pass - to read stdin)");
    }
    if (error instanceof Deno.errors.IsADirectory) {
      return problem("is a folder, not a package file; name the .json files in it");
    }
    return problem(`cannot read (${error instanceof Error ? error.message : error})`, true);
  }
}

/** All bytes of `handle`, or `undefined` past {@linkcode MAX_PACKAGE_FILE_BYTES}. */
function readCapped(handle: Deno.FsFile): Uint8Array | undefined {
  const chunks: Uint8Array[] = [];
  let total = 0;
  const buffer = new Uint8Array(64 * 1024);
  for (;;) {
    const n = handle.readSync(buffer);
    if (n === null) break;
    total += n;
    if (total > MAX_PACKAGE_FILE_BYTES) return undefined;
    chunks.push(buffer.slice(0, n));
  }
  return concat(chunks, total);
}

function concat(chunks: Uint8Array[], total: number): Uint8Array {
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return bytes;
}

/** stdin's text, read up to {@linkcode MAX_PACKAGE_FILE_BYTES} when it is a stream. */
async function readStdinPackage(io: CliIo): Promise<PackageRead> {
  if (!io.stdin) return { text: await io.readStdin() };
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = io.stdin().getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.length;
      if (total > MAX_PACKAGE_FILE_BYTES) {
        return fileProblem(
          `is more than the ${MAX_SIZE_TEXT} a package may have; packages are a few KiB, so ` +
            "this is not one",
        );
      }
      chunks.push(value);
    }
  } finally {
    await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
  return packageText(concat(chunks, total));
}

/**
 * The package's text, decoded as UTF-8 (a UTF-8 byte order mark is dropped). UTF-16 text, which
 * Windows PowerShell 5 writes with `>`, is refused by name instead of as garbled JSON.
 */
function packageText(bytes: Uint8Array): PackageRead {
  if ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff)) {
    return {
      error: {
        pointer: "",
        rule: "json",
        message: "not valid JSON: the text is UTF-16, and a package is UTF-8 JSON; save it as " +
          "UTF-8 (in Windows PowerShell, `| Out-File -Encoding utf8` instead of `>`)",
        value: null,
      },
      unreadable: false,
    };
  }
  return { text: new TextDecoder().decode(bytes) };
}

/** `text`, read from `source` ("the file", "stdin"), checked as a package. */
function validateText(
  text: string,
  source: string,
): { valid: boolean; errors: MetricsValidationError[] } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // Where and what was expected, as for --args: V8's message quotes the text around the error.
    const blank = blankness(text);
    const reason = blank ? `${source} ${blank}` : jsonSyntaxProblem(text);
    return {
      valid: false,
      errors: [{
        pointer: "",
        rule: "json",
        message: `not valid JSON: ${reason}`,
        value: null,
      }],
    };
  }
  const result = validateMetricsPackage(value);
  if (result.valid) return { valid: true, errors: [] };
  // JSON has no undefined: report a missing value as null so every error has the same keys.
  return { valid: false, errors: result.errors.map((e) => ({ ...e, value: e.value ?? null })) };
}

/**
 * Whether the metrics folder is there for `reset` to delete. One this user may not even look at
 * is not "nothing to delete": that is said, with the fix.
 */
function storeFolderExists(folder: string): boolean {
  try {
    Deno.statSync(folder);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) {
      return false;
    }
    throw new CliError(`cannot look at ${folder} (${messageOf(error)}). ${storeAccessFix(folder)}`);
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}
