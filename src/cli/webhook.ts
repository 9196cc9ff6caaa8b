/**
 * `agent webhook`: list, subscribe, remove, test (events and redeliver: webhook_events.ts).
 *
 * @module
 */
import type { Command } from "@commander-js/extra-typings";
import { basename, dirname, isAbsolute, join, normalize, relative, resolve } from "node:path";
import { missingToken } from "../delivery/targets.ts";
import { skillNameProblem } from "../agent/skills.ts";
import {
  isPlainObject,
  MAX_TIMER_SECONDS,
  parseBoolish,
  type ResolvedConfig,
} from "../home/config.ts";
import { parseJsonExact, stringifyJsonExact } from "../home/exact_json.ts";
import { configuredLogLevel, type LogLevel, logWrites } from "../home/log.ts";
import type { EnvReader } from "../home/paths.ts";
import type { SecretScope } from "../home/secrets.ts";
import { closestKey } from "../home/suggest.ts";
import { cut, listInWords } from "../home/text.ts";
import { gatewayRunning } from "../gateway/home_lock.ts";
import { escapeControls } from "../metrics/mod.ts";
import { checkDeliverExtra } from "../webhook/deliver_extra.ts";
import { parseFilters } from "../webhook/filters.ts";
import { RouteTable, type ServedRoute } from "../webhook/route_table.ts";
import {
  checkSecret,
  createdAtNow,
  defaultDescription,
  DELIVERY_TARGETS,
  type DeliveryTargetName,
  generateSecret,
  isValidRouteName,
  normaliseRouteName,
  type Route,
  routeFromRaw,
  splitList,
  type SubscriptionRecord,
  takesEvent,
} from "../webhook/routes.ts";
import {
  acceptsUnsigned,
  disabledByVariable,
  noSecretFix,
  readWebhookSettings,
  routeUrl,
  webhookBaseUrl,
  type WebhookSettings,
} from "../webhook/settings.ts";
import {
  BLANK_TEMPLATE_WARNING,
  DELIVERY_FAILED_ERROR_END,
  DELIVERY_FAILED_LOG_LEVEL,
  EMPTY_MESSAGE_ERROR,
  INVALID_SIGNATURE_ERROR,
  SCRIPT_BLOCKED_ERROR,
  SCRIPT_BLOCKED_LOG_LEVEL,
  templateFix,
  UNKNOWN_ROUTE_ERROR,
} from "../webhook/listener.ts";
import { isInside, resolveScript } from "../webhook/scripts.ts";
import { githubSignature } from "../webhook/signatures.ts";
import { renderPrompt, unfilledPlaceholders } from "../webhook/templates.ts";
import {
  dynamicRoutes,
  readSubscriptions,
  SubscriptionFileError,
  type SubscriptionRecords,
  updateSubscriptions,
} from "../webhook/subscriptions.ts";
import {
  CliError,
  type CliIo,
  commandConfig,
  configFileWarnings,
  printJson,
  UsageError,
} from "./io.ts";
import { jsonObjectOption } from "./json_option.ts";
import { addWebhookEventCommands } from "./webhook_events.ts";
import type { CommandState } from "./mod.ts";

/** How long `webhook test` waits for the gateway's answer unless --timeout says otherwise. */
const TEST_TIMEOUT_MS = 30_000;

const TEST_PAYLOAD = { test: true, event_type: "test", message: "Hello from agent webhook test" };

/** What an event name may hold, in `test --event` and `subscribe --events` alike. */
const EVENT_NAME_RULE = "printable ASCII, single spaces only between words, as in GitLab's " +
  "`Issue Hook`";

/** Adds the `webhook` group to `program`. */
export function addWebhookCommands(program: Command, io: CliIo, state: CommandState): void {
  const webhook = program.command("webhook").description(
    "manage webhook subscriptions (<home>/webhook_subscriptions.json)",
  ).addHelpText(
    "after",
    "\nA subscription is a URL that external services POST signed JSON events to. Each event\n" +
      "becomes a prompt for an agent run whose answer goes to --deliver, or, with --deliver-only,\n" +
      "the rendered prompt itself is sent to the target. Static routes can also be declared under\n" +
      "platforms.webhook.extra.routes in config.yaml; a subscription never replaces one.",
  );

  webhook.command("list").alias("ls").description("list subscriptions and static routes")
    .option("--json", "print one JSON document").action((options) => {
      const { config, settings } = load(io, state);
      const records = read(config);
      // The gateway's own route table decides what is served, and says why not.
      const problems = [...settings.routeProblems];
      const warnings: string[] = [];
      const table = new RouteTable({
        file: config.paths.subscriptions,
        staticRoutes: settings.routes,
        report: (problem) => problems.push(problem),
        warn: (warning) => warnings.push(warning),
      });
      const rows = [
        ...settings.routes.map((route) => listRow(config, settings, route, table.get(route.name))),
        // A static route with problems is not served, but it is still in config.yaml.
        ...unservedStaticRoutes(config, settings).map(({ name, route, problems }) =>
          invalidRow(settings, name, route, problems, "static")
        ),
        // Every record is a row, an invalid one too: it may still be served (its last good
        // version) by a running gateway, so it must not vanish from the list.
        ...Object.entries(records).map(([name, record]) => {
          const { route, problems } = checkRecord(config, name, record);
          return problems.length > 0
            ? invalidRow(settings, name, route, problems)
            : listRow(config, settings, route!, table.get(name));
        }),
      ];
      // The routes' problems are warnings here (the gateway serves the others): on stderr in
      // both modes, and in --json's `warnings` as well as its `problems`.
      const said = [...problems, ...warnings];
      const warn = () => said.forEach((warning) => io.err(`warning: ${escapeControls(warning)}\n`));
      if (options.json) {
        warn();
        return printJson(io, {
          enabled: settings.enabled,
          base_url: webhookBaseUrl(settings),
          subscriptions: rows,
          problems,
          // What every command says on stderr first (unknown keys, .env lines) comes first.
          warnings: [...configFileWarnings(config), ...said],
        });
      }
      if (!settings.enabled) io.out(`${notEnabled(config)}\n`);
      warn();
      if (rows.length === 0) {
        io.out("No subscriptions. Create one with `agent webhook subscribe <name>`.\n");
        return;
      }
      for (const row of rows) io.out(rowText(row));
    });

  webhook.command("subscribe").alias("add").description(
    "create a subscription (or replace one, keeping its secret) and print its URL and secret",
  )
    .argument("<name>", "subscription name: lower-case letters, digits, '-', '_'")
    .option("--prompt <template>", "prompt template; {a.b.c} inserts payload fields")
    .option("--events <list>", "comma-separated event names to accept, any case (default: all)")
    .option("--description <text>", "free text")
    .option("--skills <list>", "comma-separated skills loaded for the run")
    .option(
      "--deliver <target>",
      `where the answer goes: ${DELIVERY_TARGETS.join(", ")} (default: log)`,
    )
    .option("--deliver-chat-id <id>", "chat id at the target (telegram, discord, slack)")
    .option(
      "--deliver-extra <key=value>",
      "another target detail, e.g. repo=owner/name or number={issue.number} (repeatable)",
      collect,
      [] as string[],
    )
    .option("--secret <secret>", "HMAC secret (default: keep the current one, or generate one)")
    .option("--script <file>", "a script under <home>/scripts/ run on each payload first")
    .option("--deliver-only", "send the rendered prompt to the target directly, with no agent run")
    .option("--json", "print one JSON document").action((rawName, options) => {
      const { config, settings } = load(io, state);
      const name = routeName(rawName);
      // Also while that route has problems (and is not served): once fixed, it would shadow the
      // subscription.
      const staticAt = staticRouteLocation(config, name);
      if (staticAt) {
        throw new CliError(
          `a static route named '${name}' is declared at ${staticAt}; a subscription cannot ` +
            "replace it. Choose another name.",
          2,
        );
      }
      const deliver = (options.deliver ?? "log").trim().toLowerCase();
      if (!(DELIVERY_TARGETS as readonly string[]).includes(deliver)) {
        const meant = closestKey(deliver, DELIVERY_TARGETS);
        throw new UsageError(
          `unknown --deliver target '${options.deliver}'` +
            (meant ? ` (did you mean '${meant}'?)` : "") +
            `; use one of ${DELIVERY_TARGETS.join(", ")}`,
        );
      }
      if (options.deliverOnly && deliver === "log") {
        throw new UsageError(
          "--deliver-only sends the message straight to a target, and 'log' is not one: add " +
            "--deliver telegram|discord|slack|github_comment|gitlab_comment|origin",
        );
      }
      const warnings: string[] = [];
      const script = scriptOption(config.paths.scripts, options.script?.trim());
      if (script !== undefined) {
        checkScriptName(config.paths.scripts, script);
        const checked = checkScript(config.paths.scripts, script);
        if ("error" in checked) throw new UsageError(`--script: ${checked.error}`);
        if (checked.warning) warnings.push(checked.warning);
      }
      const skills = options.skills ? splitList(options.skills) : [];
      const missingSkills = checkSkills(config.paths.skills, skills);
      if (options.deliverOnly && skills.length > 0) {
        warnings.push(
          "--skills: a --deliver-only route has no agent run, so its skills are never loaded; " +
            "leave --skills out",
        );
      } else {
        warnings.push(...missingSkills);
      }
      const givenSecret = options.secret?.trim();
      if (givenSecret !== undefined) {
        if (givenSecret === "") {
          throw new UsageError("--secret is empty; leave it out to keep or generate a secret");
        }
        const problem = checkSecret(givenSecret);
        if (problem !== true) throw new UsageError(`--secret: ${problem}`);
      }
      // No prototype: `--deliver-extra __proto__=x` is a key like any other (and refused).
      const extra: Record<string, unknown> = Object.create(null);
      const extraOptions: Record<string, string> = Object.create(null);
      for (const pair of options.deliverExtra) {
        const at = pair.indexOf("=");
        const key = at > 0 ? pair.slice(0, at).trim() : "";
        if (!key) throw new UsageError(`--deliver-extra takes KEY=VALUE, got '${pair}'`);
        if (key in extra) {
          throw new UsageError(
            `--deliver-extra ${key} is given twice; give each key once (which value is meant?)`,
          );
        }
        extra[key] = pair.slice(at + 1);
        extraOptions[key] = `--deliver-extra ${key}`;
      }
      if (options.deliverChatId !== undefined) {
        if ("chat_id" in extra) {
          throw new UsageError(
            "the chat id is given twice, by --deliver-chat-id and --deliver-extra chat_id; " +
              "give it once",
          );
        }
        extra.chat_id = options.deliverChatId;
        extraOptions.chat_id = "--deliver-chat-id";
      }
      const events = options.events === undefined ? [] : eventsOption(options.events, warnings);
      warnings.push(
        ...checkExtraOptions(
          deliver as DeliveryTargetName,
          extra,
          extraOptions,
          config,
          options.deliver !== undefined,
        ),
      );
      const missing = missingToken(deliver as DeliveryTargetName, config.secrets);
      if (missing) {
        warnings.push(
          `${missing}: deliveries to ${deliver} fail until you add it to ` +
            `${config.paths.dotenv} and restart the gateway`,
        );
      }
      const typed = rawName.replace(/^ +| +$/g, "");
      const { record, previous } = update(config, (records) => {
        const previous = Object.hasOwn(records, name) ? records[name] : undefined;
        if (previous !== undefined && typed !== name) {
          // Replaced, as decisions.md §6 has it (a provisioning script may run the same
          // `subscribe "My Hook"` each time), but said: `CI` may have been meant as a new one.
          warnings.push(
            `${JSON.stringify(typed)} is the name '${name}' (A-Z are lower-cased and spaces ` +
              `become '-'): the existing subscription '${name}' was replaced. If you meant a ` +
              "new one, subscribe it under another name and this one again as it was",
          );
        }
        // Re-subscribing replaces the record; only the secret is kept (decisions.md §6).
        const dropped = droppedByResubscribe(previous);
        if (dropped.length > 0) {
          const them = dropped.length === 1 ? "it" : "them";
          warnings.push(
            `re-subscribing replaced the whole record of '${name}', and no option of subscribe ` +
              `sets what was written into it by hand: ${dropped.join("; ")}. To keep ${them}, ` +
              `add ${them} to ${JSON.stringify(name)} in ${config.paths.subscriptions} again`,
          );
        }
        const kept = isPlainObject(previous) && typeof previous.secret === "string"
          ? previous.secret.trim()
          : "";
        const record: SubscriptionRecord = {
          description: options.description ?? defaultDescription(name),
          events,
          secret: givenSecret || kept || generateSecret(),
          prompt: options.prompt ?? "",
          skills,
          deliver,
          created_at: createdAtNow(io.now()),
          ...(options.deliverOnly ? { deliver_only: true } : {}),
          ...(script ? { script } : {}),
          ...(Object.keys(extra).length > 0 ? { deliver_extra: extra } : {}),
        };
        records[name] = record;
        return { record, previous };
      });
      const secret = record.secret;
      const url = routeUrl(settings, name);
      // Last, after what the command printed: the subscription waits for the platform.
      if (!settings.enabled) warnings.push(notEnabled(config));
      // On stderr in both modes: stdout holds the one JSON document.
      const warn = () =>
        warnings.forEach((warning) => io.err(`warning: ${escapeControls(warning)}\n`));
      if (options.json) {
        warn();
        return printJson(io, {
          name,
          webhook_url: url,
          ...record,
          updated: previous !== undefined,
          platform_enabled: settings.enabled,
          // What every command says on stderr first (unknown keys, .env lines), as `list`.
          warnings: [...configFileWarnings(config), ...warnings],
        });
      }
      io.out(printableLines([
        `Subscription '${name}' ${previous ? "updated" : "created"}.`,
        `  URL:     ${url}`,
        // A kept secret comes from the file, which may have been edited by hand.
        `  Secret:  ${secret}`,
        `  Events:  ${events.length > 0 ? events.join(", ") : "all"}`,
        `  Deliver: ${deliver}${options.deliverOnly ? " (direct, no agent run)" : ""}`,
      ]));
      io.out(
        "Point the sender at the URL with content type application/json and the secret; GitHub " +
          "signs with X-Hub-Signature-256.\n",
      );
      warn();
    });

  webhook.command("remove").alias("rm").description(
    "remove a subscription (a static route stays: edit config.yaml to remove it)",
  )
    .argument("<name>", "subscription name").option("--json", "print one JSON document")
    .action((rawName, options) => {
      const { config } = load(io, state);
      const name = routeName(rawName);
      const staticAt = staticRouteLocation(config, name);
      const records = read(config);
      if (!Object.hasOwn(records, name)) {
        if (staticAt) {
          throw new UsageError(
            `'${name}' is a static route at ${staticAt}, not a subscription; remove it there ` +
              "(and restart the gateway)",
          );
        }
        throw noSubscription(name, records);
      }
      update(config, (current) => {
        // Another command may have removed it since it was read.
        if (!Object.hasOwn(current, name)) throw noSubscription(name, current);
        delete current[name];
      });
      if (options.json) {
        return printJson(io, {
          removed: name,
          ...(staticAt ? { static_route_kept: true } : {}),
          // What every command says on stderr first (unknown keys, .env lines), as `list`.
          warnings: configFileWarnings(config),
        });
      }
      io.out(`Subscription '${name}' removed.\n`);
      if (staticAt) {
        io.out(
          `The static route '${name}' at ${staticAt} stays; it is the one the gateway serves. ` +
            "Remove it there if you no longer want it.\n",
        );
      }
    });

  webhook.command("test").description(
    "POST a signed test event to a subscription on the running gateway and print the answer",
  )
    .argument("<name>", "subscription name")
    .option("--payload <json>", "the JSON object to send (default: a small test event)")
    .option(
      "--event <name>",
      "the event name sent as X-GitHub-Event; a route with --events takes only those",
      "test",
    )
    .option(
      "--timeout <seconds>",
      `how long to wait for the gateway's answer (default: ${TEST_TIMEOUT_MS / 1000})`,
    )
    .option("--json", "print one JSON document").action(async (rawName, options) => {
      const { config, settings } = load(io, state);
      const name = routeName(rawName);
      const timeoutMs = options.timeout === undefined
        ? TEST_TIMEOUT_MS
        : Number(options.timeout) * 1000;
      // A timer past 2 147 483 s fires at once: a day is the limit, as for config waits.
      if (!(timeoutMs > 0) || timeoutMs > MAX_TIMER_SECONDS * 1000) {
        throw new UsageError(
          `--timeout takes a number of seconds > 0, at most ${MAX_TIMER_SECONDS} ` +
            `(got '${options.timeout}'), e.g. --timeout 60`,
        );
      }
      const records = read(config);
      const routes = [
        ...settings.routes,
        ...dynamicRoutes(records, config.paths.subscriptions).routes,
      ];
      const route = routes.find((candidate) => candidate.name === name);
      if (!route) {
        if (Object.hasOwn(records, name) || staticRouteLocation(config, name)) {
          throw new CliError(
            `'${name}' is not served: it has problems (see \`agent webhook list\`); fix them ` +
              "first",
          );
        }
        throw unknownName(
          "subscription or static route",
          name,
          [...new Set(routes.map((candidate) => candidate.name))],
        );
      }
      let payload: unknown = TEST_PAYLOAD;
      if (options.payload !== undefined) {
        // Read as the gateway reads a body (a 19-digit id stays exact, a key given twice is
        // refused), so what it would answer 400 is said here, before anything is sent.
        payload = jsonObjectOption(
          options.payload,
          "--payload",
          `a JSON object such as --payload '{"action":"opened"}', or an event saved from the ` +
            'sender with --payload "$(cat event.json)"',
        ).value;
      }
      const event = options.event.trim();
      if (!isEventName(event)) {
        throw new UsageError(
          `--event must be a non-empty name of ${EVENT_NAME_RULE}` +
            (event === "" ? "" : ` (got '${escapeControls(event)}')`),
        );
      }
      const secret = route.secret ?? settings.secret;
      // INSECURE_NO_AUTH on a loopback host: the gateway takes such a route's events unsigned.
      if (!secret && !acceptsUnsigned(settings)) {
        throw new CliError(
          `route '${name}' has no secret of its own and no global secret is set, so the ` +
            "gateway answers it 403. Fix: " +
            (route.source === "static"
              ? noSecretFix(config.source, name)
              : `subscribe it again (\`agent webhook subscribe ${name} …\` generates one), or ` +
                "set a global secret with `agent gateway setup --generate-secret`; then restart " +
                "the gateway"),
        );
      }
      const body = stringifyJsonExact(payload);
      const url = routeUrl(settings, name);
      // The `note:` lines of stderr, each said once; --json lists them in `notes` as well.
      const notes: string[] = [];
      const note = (text: string) => {
        notes.push(text);
        io.err(`note: ${escapeControls(text)}\n`);
      };
      // A template that renders blank sends nothing (said after the answer); known here only when
      // no script replaces the payload first.
      const blank = !route.script && renderPrompt(route, payload, event).trim() === "";
      if (
        route.deliverOnly && route.deliver !== "log" && takesEvent(route.events, event) && !blank
      ) {
        // No agent run between the test and the target: what the sender would cause, it causes.
        note(
          `'${name}' delivers directly (deliver_only): this test sends a real message to ` +
            `${route.deliver}, rendered from the test payload`,
        );
      }
      const deliveryId = crypto.randomUUID();
      let response: Response;
      try {
        response = await fetch(url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            ...(secret ? { "x-hub-signature-256": githubSignature(secret, body) } : {}),
            "x-github-event": event,
            "x-github-delivery": deliveryId,
          },
          body,
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch (error) {
        if (error instanceof DOMException && error.name === "TimeoutError") {
          throw new CliError(
            `no answer from ${url} within ${timeoutMs / 1000} s: something accepts ` +
              "connections on that port but did not reply (a gateway stuck on its inbox, or " +
              "another program on the port); see logs/gateway.log",
          );
        }
        throw new CliError(
          `cannot reach ${url} (${error instanceof Error ? error.message : error}); ` +
            "start the gateway with `agent gateway run`" +
            (settings.enabled ? "" : `. ${notEnabled(config)}`),
        );
      }
      const text = await response.text();
      if (!response.ok) state.exitCode = 1;
      const reply = answerObject(text);
      // The gateway tells a sender only that the reason is in its log; this user may read it.
      const lineLevel = loggedReasonLevel(response.status, reply);
      const levelNote = lineLevel && logLevelNote(config, io.env, lineLevel);
      // No line to wait for when the log level leaves it out; the log is still read once, for
      // a gateway started with another AGENT_LOG_LEVEL.
      const reason = lineLevel
        ? await loggedReason(config, name, deliveryId, levelNote === undefined)
        : undefined;
      // Said after the answer: what to make of it, or to change.
      const after: string[] = [];
      if (reason) after.push(`${config.paths.gatewayLog} says: ${reason}`);
      else if (levelNote) after.push(levelNote);
      else if (lineLevel) {
        after.push(
          `the reason is in the gateway's log (this home's: ${config.paths.gatewayLog}), under ` +
            `delivery id ${deliveryId}`,
        );
      }
      const hint = reply &&
        answerHint(response.status, reply, { config, settings, route, event });
      if (hint) after.push(hint);
      // A route's script replaces the payload before the prompt is rendered, and may add the
      // fields: what this payload lacks then says nothing of the prompt.
      const rendered = (response.status === 202 || reply?.status === "delivered") && !route.script;
      const unfilled = rendered ? unfilledPlaceholders(route.prompt, payload) : [];
      if (unfilled.length > 0) {
        // The default test event has none of a code host's fields: the prompt went out with
        // `{issue.number}` in it, which the answer alone does not show.
        const names = listInWords(unfilled);
        after.push(
          `the route's prompt template names ${names}, which this payload does not have, so ` +
            `the prompt holds ${unfilled.length === 1 ? "it" : "them"} as written ` +
            `({${unfilled[0]}}); send an event saved from the sender with ` +
            '--payload "$(cat event.json)"',
        );
      }
      if (options.json) {
        after.forEach(note);
        let parsed: unknown = text;
        try {
          parsed = parseJsonExact(text);
        } catch { /* not JSON: keep the text */ }
        const answer = {
          url,
          status: response.status,
          body: parsed,
          ...(reason ? { reason } : {}),
          // What every command says on stderr first (unknown keys, .env lines), as `list`.
          warnings: configFileWarnings(config),
          notes,
        };
        io.out(`${stringifyJsonExact(answer, 2)}\n`);
        return;
      }
      io.out(`POST ${url}\nHTTP ${response.status}\n${text}\n`);
      after.forEach(note);
    });

  addWebhookEventCommands(webhook, io, state);
}

/** Whether `name` keeps {@linkcode EVENT_NAME_RULE}; a route matches event names exactly. */
function isEventName(name: string): boolean {
  return /^[\x21-\x7e]+(?: [\x21-\x7e]+)*$/.test(name);
}

/**
 * The event names of `--events`: comma-separated, each keeping the rule of `test --event` (a name
 * with a control character never matches what a sender sends), exact repeats dropped. A name with
 * a space that is not GitLab's (they end in ` Hook`, in any case) is likely a list without its
 * commas: said in `warnings`.
 */
function eventsOption(value: string, warnings: string[]): string[] {
  const names = splitList(value);
  if (names.length === 0) {
    // An empty list accepts every event: that must be said by leaving the option out.
    throw new UsageError(
      `--events ${JSON.stringify(value)} names no event; leave --events out to accept every event`,
    );
  }
  const bad = names.find((name) => !isEventName(name));
  if (bad !== undefined) {
    throw new UsageError(
      `--events: '${escapeControls(bad)}' is not an event name (${EVENT_NAME_RULE}). Fix: ` +
        "separate the names with commas and write each as the sender sends it, e.g. " +
        "--events issues,pull_request",
    );
  }
  for (const name of names) {
    // Names match in any case (`merge request hook` takes `Merge Request Hook`): so does this.
    if (name.includes(" ") && !name.toLowerCase().endsWith(" hook")) {
      warnings.push(
        `--events: '${name}' is one event name with a space in it; only GitLab's names have ` +
          "spaces (`Issue Hook`): separate several names with commas",
      );
    }
  }
  return [...new Set(names)];
}

/** How long `webhook test` waits for the gateway's log line about its event. */
const LOG_LINE_WAIT_MS = 2_000;

/** The part of `gateway.log` searched for a test event's line: the newest lines. */
const LOG_TAIL_BYTES = 256 * 1024;

/**
 * Why the gateway refused the test event `deliveryId` on `route` (a failed direct delivery, a
 * script that cannot run), from this home's `gateway.log`; `undefined` when it holds no such line.
 * The gateway writes its log a moment after it answers, so with `wait`, while it runs on this home,
 * the log is read again for a little while.
 */
async function loggedReason(
  config: ResolvedConfig,
  route: string,
  deliveryId: string,
  wait: boolean,
): Promise<string | undefined> {
  const waitMs = wait && gatewayRunning(config.paths.gatewayLock) ? LOG_LINE_WAIT_MS : 0;
  const deadline = Date.now() + waitMs;
  for (;;) {
    const reason = reasonInLog(logTail(config.paths.gatewayLog), route, deliveryId);
    if (reason !== undefined || Date.now() >= deadline) return reason;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The last {@linkcode LOG_TAIL_BYTES} of the log ("" when it cannot be read). */
function logTail(path: string): string {
  let file: Deno.FsFile;
  try {
    file = Deno.openSync(path, { read: true });
  } catch {
    return "";
  }
  try {
    const size = file.statSync().size;
    const start = Math.max(0, size - LOG_TAIL_BYTES);
    file.seekSync(start, Deno.SeekMode.Start);
    const bytes = new Uint8Array(size - start);
    let read = 0;
    while (read < bytes.length) {
      const count = file.readSync(bytes.subarray(read));
      if (count === null) break;
      read += count;
    }
    return new TextDecoder().decode(bytes.subarray(0, read));
  } catch {
    return "";
  } finally {
    file.close();
  }
}

/**
 * The reason a log line of the gateway gives for refusing `deliveryId` on `route`: the `error` of
 * a failed direct delivery, the `detail` of a script that cannot run.
 */
function reasonInLog(log: string, route: string, deliveryId: string): string | undefined {
  for (const line of log.split("\n").reverse()) {
    if (!line.includes(deliveryId)) continue;
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch {
      continue; // the first, cut line of the tail, or one torn by a crash
    }
    if (!isPlainObject(record) || !isPlainObject(record.properties)) continue;
    const { properties } = record;
    if (properties.route !== route || properties.delivery_id !== deliveryId) continue;
    if (typeof properties.error === "string" && typeof properties.target === "string") {
      return `delivery to ${properties.target} failed: ${properties.error}`;
    }
    if (typeof properties.detail === "string") {
      return `its script cannot run: ${properties.detail}`;
    }
  }
  return undefined;
}

/** What `webhook test` knows about the route it sent to. */
interface TestContext {
  config: ResolvedConfig;
  settings: WebhookSettings;
  route: Route;
  event: string;
}

/** The gateway's answer as a JSON object, `undefined` when it is not one. */
function answerObject(text: string): Record<string, unknown> | undefined {
  try {
    const answer: unknown = JSON.parse(text);
    return isPlainObject(answer) ? answer : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The level of the log line with the reason, when the gateway's answer says the reason is in its
 * log only: a route's script that cannot run (503), a failed direct delivery (502).
 */
function loggedReasonLevel(
  status: number,
  answer: Record<string, unknown> | undefined,
): LogLevel | undefined {
  const error = answer?.error;
  if (typeof error !== "string") return undefined;
  if (status === 503 && error === SCRIPT_BLOCKED_ERROR) return SCRIPT_BLOCKED_LOG_LEVEL;
  if (status === 502 && error.endsWith(` ${DELIVERY_FAILED_ERROR_END}`)) {
    return DELIVERY_FAILED_LOG_LEVEL;
  }
  return undefined;
}

/**
 * What to change when the log level this home sets (`AGENT_LOG_LEVEL`, else `logging.level`, as
 * the gateway reads it at start) leaves out the log lines of `lineLevel`; `undefined` when it
 * keeps them, or is not a level (the gateway does not start with that).
 */
function logLevelNote(
  config: ResolvedConfig,
  env: EnvReader,
  lineLevel: LogLevel,
): string | undefined {
  let level: LogLevel | undefined;
  try {
    level = configuredLogLevel(config.source, env);
  } catch {
    return undefined;
  }
  if (logWrites(level, lineLevel)) return undefined;
  const [setting, where] = env("AGENT_LOG_LEVEL") === undefined
    ? ["logging.level", `logging.level in ${config.paths.config}`]
    : ["AGENT_LOG_LEVEL", "AGENT_LOG_LEVEL"];
  return `the gateway logs the reason at level ${lineLevel}, and ${where} is ${level}, so a ` +
    `gateway started with it leaves that line out of ${config.paths.gatewayLog}; set ${setting} ` +
    `to ${lineLevel} (or lower), restart the gateway and test again`;
}

/**
 * What the tester can change after the gateway's answer: an event it ignored, a route it does not
 * serve (404), a signature it refused (401), a template that rendered blank (202 with a warning,
 * or 502 with nothing sent).
 */
function answerHint(
  status: number,
  answer: Record<string, unknown>,
  context: TestContext,
): string | undefined {
  const { error, warning } = answer;
  if (status === 202 && warning === BLANK_TEMPLATE_WARNING) {
    return "the fields the route's prompt template names are empty in this payload; send one " +
      "that fills them with --payload, or change the template (see `agent webhook list`)";
  }
  if (status === 502 && error === EMPTY_MESSAGE_ERROR) {
    return `nothing was sent to ${context.route.deliver}: the route's prompt template renders ` +
      "blank for this payload (the fields it names are empty or blank); send one that fills " +
      `them with --payload, or change the template: ${templateFix(context.route)}`;
  }
  if (
    status === 404 && typeof error === "string" && error.startsWith(`${UNKNOWN_ROUTE_ERROR}:`)
  ) {
    return unknownRouteHint(context);
  }
  if (status === 401 && error === INVALID_SIGNATURE_ERROR) return signatureHint(context);
  return ignoredHint(answer, context);
}

/** The problems the gateway finds in a route's filters: it does not serve such a route. */
function filterProblems(config: ResolvedConfig, route: Route): string[] {
  if (route.filters === undefined) return [];
  return parseFilters(route.filters, "filters", { baseDir: config.paths.home }).problems;
}

/**
 * Why the gateway on this home's port does not know a route this home has. Subscriptions are
 * re-read on each request and static routes at start, so only a static route calls for a restart.
 */
function unknownRouteHint({ config, settings, route }: TestContext): string {
  if (filterProblems(config, route).length > 0) {
    return `the gateway does not serve '${route.name}' while its filters have problems; see ` +
      "`agent webhook list`";
  }
  const at = `the gateway at ${webhookBaseUrl(settings)} does not serve '${route.name}'`;
  const otherHome = `from another home than ${config.paths.home} (AGENT_HOME)`;
  if (route.source === "static") {
    return `${at}: static routes are read when the gateway starts, so restart it if the route ` +
      `is new in config.yaml; else it runs ${otherHome}`;
  }
  return `${at}; it re-reads the subscriptions file on each request, so a restart does not ` +
    `help: it likely runs ${otherHome}`;
}

/** Why the gateway checks another secret than this home gives the route. */
function signatureHint({ config, route }: TestContext): string {
  const otherHome = `from another home than ${config.paths.home} (AGENT_HOME)`;
  if (route.secret === undefined) {
    return `'${route.name}' has no secret of its own, and the gateway's global secret ` +
      "(WEBHOOK_SECRET, else extra.secret; read when it starts) differs from this one: it was " +
      `started with another WEBHOOK_SECRET, before the secret changed, or ${otherHome}`;
  }
  if (route.source === "static") {
    return `the gateway checks '${route.name}' with another secret than config.yaml gives: ` +
      "static routes are read when the gateway starts, so restart it if the secret changed; " +
      `else it runs ${otherHome}`;
  }
  if (filterProblems(config, route).length > 0) {
    return `the gateway keeps the previous version of '${route.name}' (and its secret) while ` +
      "its filters have problems; see `agent webhook list`";
  }
  return `the gateway checks '${route.name}' with another secret than this home's ` +
    `subscription, though it re-reads the file on each request: it likely runs ${otherHome}`;
}

/**
 * Why the gateway answered "ignored", when the reason is something the tester can change: the
 * route takes other events, its filters or its script said no.
 */
function ignoredHint(
  answer: object,
  { config, route: { events }, event }: TestContext,
): string | undefined {
  const { status, reason } = answer as { status?: unknown; reason?: unknown };
  if (status !== "ignored") return undefined;
  if (reason === "filter") {
    return "the route's filters did not match this payload; send one they match with --payload";
  }
  if (reason === "script") {
    return `the route's script ignored the event; see ${config.paths.gatewayLog} for what it said`;
  }
  if (!takesEvent(events, event)) {
    return `the route takes only ${events.join(", ")} events; send one with --event ${events[0]}`;
  }
  return undefined;
}

/**
 * `text` on one line (line breaks shown as `⏎`, other control characters escaped), cut to `max`
 * characters, the last one `…`.
 */
function oneLine(text: string, max: number): string {
  return cut(escapeControls(text.replace(/\r?\n/g, "⏎")), max);
}

/**
 * `lines` as terminal text: each value in them may come from a hand-edited file (subscriptions,
 * config.yaml), so a control character in one is escaped rather than breaking the layout or
 * driving the terminal.
 */
function printableLines(lines: string[]): string {
  return lines.map((line) => `${escapeControls(line)}\n`).join("");
}

/**
 * What re-subscribing drops of `previous` (the record as stored) that no option of `subscribe`
 * can give again, each with what changes: hand-written `filters`, and `enabled: false`.
 */
function droppedByResubscribe(previous: unknown): string[] {
  if (!isPlainObject(previous)) return [];
  return [
    // `[]` (all of no condition) takes every event already: nothing changes without it.
    ...(previous.filters !== undefined && previous.filters !== null &&
        !(Array.isArray(previous.filters) && previous.filters.length === 0)
      ? ["its `filters` are not kept (it now takes every event --events allows)"]
      : []),
    ...(parseBoolish(previous.enabled) === false
      ? ["its `enabled: false` is not kept (it is served again)"]
      : []),
  ];
}

/** The lines `list` prints for one route. */
function rowText(row: ReturnType<typeof listRow>): string {
  const source = row.source === "static" ? " (static, config.yaml)" : "";
  const tag = row.status === "active" ? "" : ` [${row.status.replace("_", " ")}]`;
  const to = Object.entries(row.deliver_extra).map(([key, value]) =>
    `${key}=${typeof value === "string" ? value : stringifyJsonExact(value)}`
  );
  return printableLines([
    `${row.name}${source}${tag}`,
    ...(row.webhook_url ? [`  url:     ${row.webhook_url}`] : []),
    `  events:  ${row.events.length > 0 ? row.events.join(", ") : "all"}`,
    `  deliver: ${row.deliver}${to.length > 0 ? ` (${to.join(", ")})` : ""}` +
    `${row.deliver_only ? ", direct, no agent run" : ""}`,
    `  prompt:  ${row.prompt ? oneLine(row.prompt, 72) : "(the event and payload)"}`,
    ...(row.skills.length > 0 ? [`  skills:  ${row.skills.join(", ")}`] : []),
    ...(row.script ? [`  script:  ${row.script}`] : []),
    // Only the file sets them: without this line a filtered route looks like it takes all.
    ...(row.filters === null
      ? []
      : [`  filters: ${oneLine(stringifyJsonExact(row.filters), 200)}`]),
    ...(row.status_reason ? [`  status:  ${row.status_reason}`] : []),
    ...row.problems.map((problem) => `  problem: ${problem}`),
    ...(row.description ? [`  ${row.description}`] : []),
  ]);
}

/**
 * Why the webhook platform is off and how to turn it on. `agent gateway setup` alone keeps what
 * is set (it asks at a terminal, and keeps `WEBHOOK_ENABLED=no` of `.env` without one), so the
 * advice is `--enable`, which also rewrites that line; a variable of the environment it cannot
 * change.
 */
function notEnabled(config: ResolvedConfig): string {
  const byVariable = disabledByVariable(config);
  if (byVariable) {
    return `The webhook platform is not enabled: ${byVariable.problem}. Fix: ${byVariable.fix}.`;
  }
  return "The webhook platform is not enabled. Enable it with `agent gateway setup --enable`, or " +
    `set platforms.webhook.enabled: true in ${config.paths.config}.`;
}

function load(
  io: CliIo,
  state: CommandState,
): { config: ResolvedConfig; settings: WebhookSettings } {
  const config = commandConfig(io, state);
  return { config, settings: readWebhookSettings(config) };
}

/** The normalised name of a `<name>` argument; a name that breaks the rule is a usage error. */
function routeName(rawName: string): string {
  const result = normaliseRouteName(rawName);
  if (!result.ok) throw new UsageError(result.error);
  return result.name;
}

function read(config: ResolvedConfig): SubscriptionRecords {
  try {
    return readSubscriptions(config.paths.subscriptions);
  } catch (error) {
    if (error instanceof SubscriptionFileError) throw new CliError(error.message);
    throw error;
  }
}

/** Changes the subscriptions file under its lock (see `updateSubscriptions`). */
function update<T>(
  config: ResolvedConfig,
  change: (records: SubscriptionRecords) => T,
): T {
  try {
    return updateSubscriptions(config.paths.subscriptions, change);
  } catch (error) {
    if (error instanceof SubscriptionFileError) throw new CliError(error.message);
    throw error;
  }
}

function noSubscription(name: string, records: SubscriptionRecords): UsageError {
  return unknownName("subscription", name, Object.keys(records));
}

/**
 * A name that names nothing is a usage error (exit 2), as in `agent mcp remove`; the message lists
 * the names there are and the closest one.
 */
function unknownName(what: string, name: string, names: string[]): UsageError {
  const suggestion = closestKey(name, names);
  return new UsageError(
    `no ${what} named '${name}'` + (names.length > 0 ? ` (have: ${names.join(", ")})` : "") +
      (suggestion === undefined ? "" : `; did you mean '${suggestion}'?`),
  );
}

/** `<config.yaml>:<line> (platforms.webhook.extra.routes.<name>)` when that key exists. */
function staticRouteLocation(config: ResolvedConfig, name: string): string | undefined {
  const routes = config.source.get("platforms.webhook.extra.routes");
  if (!isPlainObject(routes) || !Object.hasOwn(routes, name)) return undefined;
  const key = `platforms.webhook.extra.routes.${name}`;
  const line = config.source.lineOf(key);
  return `${config.source.file}${line === undefined ? "" : `:${line}`} (${key})`;
}

/** What the gateway does with a route: the same answer `list` prints. */
type RouteStatus =
  | "active"
  | "disabled"
  | "no_secret"
  | "shadowed"
  | "not_served"
  | "invalid"
  | "script_blocked";

/** The route of one subscription record, with the problems that keep the gateway from using it. */
function checkRecord(
  config: ResolvedConfig,
  name: string,
  record: unknown,
): { route?: Route; problems: string[] } {
  const file = config.paths.subscriptions;
  const { problems } = dynamicRoutes({ [name]: record }, file);
  const route = isValidRouteName(name) && isPlainObject(record)
    ? routeFromRaw(name, record, "dynamic", `${file}: ${name}`).route
    : undefined;
  if (problems.length === 0 && route?.filters !== undefined) {
    // The gateway's own filter check (refused regexes, unreadable in_file, …).
    const where = `${file}: ${name}.filters`;
    problems.push(...parseFilters(route.filters, where, { baseDir: config.paths.home }).problems);
  }
  return { route, problems };
}

const INVALID_REASON = {
  dynamic: "invalid: a running gateway keeps serving its last good version until the record " +
    "is fixed (if it had one); a restarted gateway does not serve it",
  static: "invalid: not served (answered 404) until it is fixed in config.yaml and the gateway " +
    "restarted",
};

/**
 * The static routes of config.yaml the gateway does not serve because of their problems, with
 * as much of each as could be read.
 */
function unservedStaticRoutes(
  config: ResolvedConfig,
  settings: WebhookSettings,
): { name: string; route?: Route; problems: string[] }[] {
  const raw = config.source.get("platforms.webhook.extra.routes");
  if (!isPlainObject(raw)) return [];
  const served = new Set(settings.routes.map((route) => route.name));
  return Object.entries(raw).filter(([name]) => !served.has(name)).map(([name, value]) => {
    const key = `(platforms.webhook.extra.routes.${name})`;
    return {
      name,
      route: routeFromRaw(name, value, "static", key).route,
      problems: settings.routeProblems.filter((problem) => problem.includes(key)),
    };
  });
}

/** The row of a record the gateway cannot use, with as much of it as could be read. */
function invalidRow(
  settings: WebhookSettings,
  name: string,
  route: Route | undefined,
  problems: string[],
  source: Route["source"] = "dynamic",
): ReturnType<typeof listRow> {
  return {
    name,
    source,
    webhook_url: isValidRouteName(name) ? routeUrl(settings, name) : null,
    description: route?.description ?? "",
    events: route?.events ?? [],
    deliver: route?.deliver ?? "log",
    deliver_extra: route?.deliverExtra ?? {},
    deliver_only: route?.deliverOnly ?? false,
    prompt: route?.prompt ?? "",
    skills: route?.skills ?? [],
    script: route?.script ?? null,
    filters: route?.filters ?? null,
    enabled: route?.enabled ?? true,
    status: "invalid",
    status_reason: INVALID_REASON[source],
    problems,
    created_at: route?.createdAt ?? null,
  };
}

function listRow(
  config: ResolvedConfig,
  settings: WebhookSettings,
  route: Route,
  served: ServedRoute | undefined,
): {
  name: string;
  source: Route["source"];
  webhook_url: string | null;
  description: string;
  events: string[];
  deliver: string;
  deliver_extra: Record<string, unknown>;
  deliver_only: boolean;
  prompt: string;
  skills: string[];
  script: string | null;
  filters: unknown;
  enabled: boolean;
  status: RouteStatus;
  status_reason: string | null;
  problems: string[];
  created_at: string | null;
} {
  let status: RouteStatus = "active";
  let reason: string | null = null;
  if (served?.source === route.source) {
    if (!route.enabled) {
      status = "disabled";
      reason = "disabled (enabled: false): requests are answered 403";
    } else if (!route.secret && !settings.secret && !acceptsUnsigned(settings)) {
      // The gateway refuses every request of such a route before it looks at the signature.
      status = "no_secret";
      reason = "no secret: requests are answered 403 until the route has a `secret` of its own " +
        "or a global secret is set (`agent gateway setup --generate-secret`, then restart the " +
        "gateway)";
    }
  } else if (route.source === "dynamic" && served?.source === "static") {
    status = "shadowed";
    reason = `not served: the static route '${route.name}' of config.yaml has this name and ` +
      `answers instead. Fix: \`agent webhook remove ${route.name}\` deletes this subscription ` +
      "(the static route stays), or subscribe again under another name";
  } else {
    status = "not_served";
    reason = "not served (requests are answered 404) until the problems listed for it are fixed" +
      (route.source === "static"
        ? " in config.yaml and the gateway restarted"
        : "; the gateway picks up the fixed record without a restart");
  }
  const script = status === "active" && route.script
    ? resolveScript(config.paths.scripts, route.script)
    : undefined;
  if (script && "error" in script) {
    // As the gateway finds it on each event, which it then refuses for the sender to retry.
    status = "script_blocked";
    reason = `events are refused (503, the sender retries later) until its script can run: ` +
      script.error;
  }
  return {
    name: route.name,
    source: route.source,
    webhook_url: routeUrl(settings, route.name),
    description: route.description,
    events: route.events,
    deliver: route.deliver,
    deliver_extra: route.deliverExtra,
    deliver_only: route.deliverOnly,
    prompt: route.prompt,
    skills: route.skills,
    script: route.script ?? null,
    filters: route.filters ?? null,
    enabled: route.enabled,
    status,
    status_reason: reason,
    problems: [],
    created_at: route.createdAt ?? null,
  };
}

/**
 * Checks `deliver_extra` as delivery will use it ({@linkcode checkDeliverExtra}, as for routes
 * read from files): what can never work is a usage error; a missing home channel a warning, as
 * it may still be set later.
 *
 * @param options The option that gave each key (`--deliver-chat-id`, `--deliver-extra repo`).
 */
function checkExtraOptions(
  deliver: DeliveryTargetName,
  extra: Record<string, unknown>,
  options: Record<string, string>,
  config: { secrets: SecretScope; paths: { dotenv: string } },
  deliverGiven = true,
): string[] {
  const { problems, homeChannel } = checkDeliverExtra(deliver, extra, {
    key: (key) => options[key] ?? key,
    target: "--deliver",
    targetIs: (name) => `--deliver ${name}`,
    targetVerb: "add",
    targetGiven: deliverGiven,
    whole: "",
    add: (key) => `--deliver-extra ${key}=…`,
    assignment: (key, value) => `${key}=${value}`,
  });
  if (problems.length > 0) throw new UsageError(problems.join("\n"));
  if (homeChannel === undefined || config.secrets.get(homeChannel)?.trim()) return [];
  return [
    `no chat to deliver to: deliveries fail until you subscribe again with ` +
    `--deliver-chat-id or set ${homeChannel} in ${config.paths.dotenv}`,
  ];
}

/**
 * `--script` as stored: relative to the scripts folder. An absolute path into that folder (as a
 * shell completes it) is made relative, so it names the same file the gateway will run.
 */
function scriptOption(scriptsDir: string, script: string | undefined): string | undefined {
  if (script === undefined || !isAbsolute(script)) return script;
  const real = (path: string) => {
    try {
      return Deno.realPathSync(path);
    } catch {
      return undefined; // not there (yet): the lexical path only
    }
  };
  // The file's own name is kept (a symlink in the folder names what it names), its folder is
  // compared as written and as resolved (a home reached through a symlink).
  const lexical = normalize(script);
  const folder = real(dirname(lexical));
  const candidates = [lexical, ...(folder ? [join(folder, basename(lexical))] : [])];
  for (const dir of [normalize(scriptsDir), real(scriptsDir)]) {
    if (dir === undefined) continue;
    const path = candidates.find((candidate) => candidate !== dir && isInside(dir, candidate));
    if (path !== undefined) return relative(dir, path);
  }
  return script;
}

/**
 * A script left as given by {@linkcode scriptOption} must be a path relative to the scripts
 * folder that stays in it: an absolute path there was already made relative.
 */
function checkScriptName(scriptsDir: string, script: string): void {
  const normal = normalize(script);
  if (
    script === "" || isAbsolute(script) || normal.startsWith("..") ||
    normal.split("/").includes("..")
  ) {
    throw new UsageError(
      `--script '${script}' must name a file inside <home>/scripts/ (${scriptsDir}/): give its ` +
        `path relative to that folder (e.g. --script triage.sh) or an absolute path inside it`,
    );
  }
}

/**
 * Checks `--script` as the gateway will before running it ({@linkcode resolveScript}): a file
 * that resolves outside the scripts folder (through a symlink too), a folder or another
 * non-file is an error now, not a refusal on every POST. A script not there yet is a warning,
 * unless a symlink already on its way leads outside.
 */
function checkScript(scriptsDir: string, script: string): { error: string } | { warning?: string } {
  const resolved = resolveScript(scriptsDir, script);
  if (!("error" in resolved)) return {};
  const lexical = join(scriptsDir, script);
  const landing = missingScriptTarget(scriptsDir, lexical);
  if (landing === undefined) return { error: resolved.error };
  if (!landing.inside) {
    return {
      error: `route script ${JSON.stringify(script)} leads to ${landing.path}, outside ` +
        `${scriptsDir}: only files under the scripts folder run; a symlink must point inside it`,
    };
  }
  return { warning: `${lexical} does not exist yet` };
}

/**
 * Where a missing script would be, following the symlinks that exist on its way: `undefined`
 * when something is at `lexical` after all (then the resolver's error stands).
 */
function missingScriptTarget(
  scriptsDir: string,
  lexical: string,
): { path: string; inside: boolean } | undefined {
  let realDir: string;
  try {
    realDir = Deno.realPathSync(scriptsDir);
  } catch (error) {
    // No scripts folder yet: the script is simply not there yet.
    return error instanceof Deno.errors.NotFound ? { path: lexical, inside: true } : undefined;
  }
  let path = lexical;
  for (let hops = 0; hops < 40; hops++) {
    // The nearest part of the path that exists (a dangling symlink counts).
    let existing = path;
    while (!lexists(existing)) existing = dirname(existing);
    const rest = relative(existing, path);
    let real: string | undefined;
    try {
      real = Deno.realPathSync(existing);
    } catch { /* a dangling symlink: follow it by hand */ }
    if (real !== undefined) {
      if (rest === "") return undefined; // it is there: the resolver's error stands
      // `rest` names parts that do not exist, so the landing is never the folder itself.
      const landing = join(real, rest);
      return { path: landing, inside: isInside(realDir, landing) };
    }
    let target: string;
    try {
      target = Deno.readLinkSync(existing);
    } catch {
      return undefined;
    }
    path = join(resolve(dirname(existing), target), rest);
  }
  return undefined; // a symlink loop: the resolver's error says so
}

function lexists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Checks `--skills` names as the skills loader will: a name that is not a folder name under
 * `skillsDir` (`../../etc`) is a usage error; a skill not there yet is a warning.
 */
function checkSkills(skillsDir: string, skills: string[]): string[] {
  const problem = skillNameProblem(skills, skillsDir);
  if (problem) throw new UsageError(`--skills: ${problem}`);
  return skills.filter((skill) => !isFile(join(skillsDir, skill, "SKILL.md"))).map((skill) =>
    `skill '${skill}' not found (expected ${
      join(skillsDir, skill, "SKILL.md")
    }); runs go on without it until it is there`
  );
}

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}
