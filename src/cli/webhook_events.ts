/**
 * `agent webhook events` and `agent webhook redeliver`: what the gateway's inbox holds, and
 * sending a finished event's answer again (or running its agent again), for instance once the
 * token whose absence made its delivery fail for good is set; a delivery waiting for its retry
 * is sent now instead of after its backoff.
 *
 * @module
 */
import type { Command } from "@commander-js/extra-typings";
import { existsSync } from "node:fs";
import { gatewayRunning } from "../gateway/home_lock.ts";
import {
  EMPTY_ANSWER,
  type EventState,
  type EventSummary,
  Inbox,
  type RequeueResult,
} from "../gateway/inbox.ts";
import { IDLE_POLL_MS } from "../gateway/worker.ts";
import type { ResolvedConfig } from "../home/config.ts";
import { waitSeconds } from "../home/seconds.ts";
import { visible } from "../home/text.ts";
import { normaliseRouteName } from "../webhook/routes.ts";
import {
  CliError,
  type CliIo,
  commandConfig,
  configFileWarnings,
  printJson,
  UsageError,
} from "./io.ts";
import type { CommandState } from "./mod.ts";

const STATES: readonly EventState[] = ["queued", "running", "delivering", "done", "failed"];
const DEFAULT_LIMIT = 20;

/** Adds `events` and `redeliver` to the `webhook` command group. */
export function addWebhookEventCommands(webhook: Command, io: CliIo, state: CommandState): void {
  webhook.command("events").description(
    "list the events the gateway accepted for agent runs, newest first (<home>/gateway/inbox.sqlite3)",
  )
    .option("--route <name>", "only the events of this route")
    .option("--state <state>", `only events in this state: ${STATES.join(", ")}`)
    .option("--limit <n>", `show at most n events (default ${DEFAULT_LIMIT})`)
    .option("--json", "print one JSON document")
    .addHelpText(
      "after",
      "\nStates: queued (waiting for its run), running, delivering (the answer is being sent or\n" +
        "waits for a retry; `agent webhook redeliver <id>` makes a waiting retry due now), done\n" +
        "(delivered, or nothing to deliver), failed (delivery gave up; `agent webhook redeliver\n" +
        "<id>` sends it again). Finished events are kept for a week.\n" +
        "While no gateway runs on this home, an event whose run or delivery it was doing when it\n" +
        'stopped is shown as interrupted (in --json: its state and "interrupted": true); the\n' +
        "next `agent gateway run` resumes it.\n" +
        "Direct deliveries (--deliver-only) are answered at once and are not listed.",
    )
    .action((options) => {
      const filter = {
        route: routeOption(options.route),
        state: stateOption(options.state),
        limit: limitOption(options.limit),
      };
      const config = commandConfig(io, state);
      // One more than shown, to tell whether --limit hides some.
      const found = withInbox(
        config,
        (inbox) => inbox.list({ ...filter, limit: filter.limit + 1 }),
      );
      const events = (found ?? []).slice(0, filter.limit);
      const more = (found ?? []).length > filter.limit;
      // Asked after reading: a gateway that stopped meanwhile left its events as they were.
      const served = events.some(pending) ? gatewayServes(config) : undefined;
      if (options.json) {
        return printJson(io, {
          events: events.map((event) => eventJson(event, served)),
          // What every command says on stderr first (unknown keys, .env lines).
          warnings: configFileWarnings(config),
        });
      }
      if (events.length === 0) {
        io.out(
          found === undefined
            ? "No events: the gateway has not accepted an event for an agent run yet.\n"
            : `No events${describeFilter(filter)}.\n`,
        );
        return;
      }
      const now = io.now();
      for (const event of events) io.out(eventText(event, now, served));
      if (more) {
        io.out(`(the newest ${filter.limit}; --limit shows more)\n`);
      }
      if (served === false) {
        io.out(
          "No gateway is running on this home: the events above that are not finished wait " +
            "for the next `agent gateway run`.\n",
        );
      }
    });

  webhook.command("redeliver").description(
    "send a finished event's answer again (a delivery waiting for its retry: now), or run its " +
      "agent again with --rerun",
  )
    .argument("[ids...]", "event ids or delivery ids (see `agent webhook events`)")
    .option("--failed", "every event whose delivery failed for good (with --route: of that route)")
    .option("--route <name>", "with --failed: only the events of this route")
    .option("--rerun", "run the agent on the event's prompt again and deliver the new answer")
    .option("--json", "print one JSON document")
    .addHelpText(
      "after",
      "\nA failed event gets the parts of its answer that were not sent; a done one is sent\n" +
        "whole. A delivery waiting for its retry is due now instead (its tries start again; the\n" +
        "parts already sent are skipped); one a gateway is sending right now is refused. The\n" +
        "running gateway picks requeued events up within a few seconds; a stopped one at its\n" +
        "next start. The route's target as it was when the event arrived is used.",
    )
    .action((ids, options) => {
      if (ids.length === 0 && !options.failed) {
        throw new UsageError(
          "name the events to redeliver (ids from `agent webhook events`), or use --failed",
        );
      }
      if (ids.length > 0 && options.failed) {
        throw new UsageError("give event ids or --failed, not both");
      }
      if (options.route !== undefined && !options.failed) {
        throw new UsageError("--route goes with --failed (ids already name their events)");
      }
      const route = routeOption(options.route);
      const config = commandConfig(io, state);
      const now = io.now();
      const found = withInbox(config, (inbox) => {
        const targets = options.failed
          ? inbox.list({ state: "failed", route, limit: -1 })
            .reverse()
          : ids.flatMap((key) => resolveKey(inbox, key.trim()));
        const unique = [...new Map(targets.map((event) => [event.id, event])).values()];
        return unique.map((event) => ({
          event,
          result: inbox.requeue(event.id, { rerun: options.rerun === true }, now),
        }));
      });
      if (found === undefined && !options.failed) {
        throw new CliError("no events: the gateway has not accepted any event on this <home> yet");
      }
      const outcomes = found ?? [];
      const failed = outcomes.filter(({ result }) => !result.ok);
      const served = failed.length > 0 ? gatewayServes(config) : undefined;
      if (failed.length > 0) state.exitCode = 1;
      if (options.json) {
        // Each names its event: there are no lines above it to say which.
        const notes = outcomes.flatMap(({ event, result }) => {
          const note = noticeNote(result);
          return note ? [`${describeEvent(event)}: ${note}`] : [];
        });
        for (const note of notes) io.err(`note: ${note}\n`);
        return printJson(io, {
          requeued: outcomes.filter(({ result }) => result.ok).map(({ event, result }) => ({
            id: event.id,
            route: event.route,
            delivery_id: event.deliveryId,
            state: (result as { state: string }).state,
            // `delivering`: a delivery that was waiting for its retry, now due.
            previous_state: waitedRetry(result) === undefined ? event.state : "delivering",
          })),
          refused: failed.map(({ event, result }) => ({
            id: event.id,
            route: event.route,
            delivery_id: event.deliveryId,
            reason: refusal(event, result, served),
          })),
          // What every command says on stderr first (unknown keys, .env lines).
          warnings: configFileWarnings(config),
          notes,
        });
      }
      if (outcomes.length === 0) {
        io.out(
          `No failed events${route ? ` of route '${route}'` : ""}.\n`,
        );
        return;
      }
      for (const { event, result } of outcomes) {
        const what = describeEvent(event);
        if (!result.ok) {
          io.err(`${what}: not requeued: ${refusal(event, result, served)}\n`);
          continue;
        }
        const waited = waitedRetry(result);
        io.out(
          result.state === "queued"
            ? `${what}: queued to run again; its new answer goes to ${event.deliver}\n`
            : waited !== undefined
            ? `${what}: its delivery to ${event.deliver} was waiting for a retry ` +
              `in ${waitSeconds(waited - now)} s; ` +
              "it is due now, its tries start again, and the parts already sent are skipped\n"
            : `${what}: queued for delivery to ${event.deliver} again\n`,
        );
        const note = noticeNote(result);
        if (note) io.err(`note: ${note}\n`);
      }
      if (outcomes.some(({ result }) => result.ok)) {
        io.out(
          `A running gateway picks this up within ${IDLE_POLL_MS / 1000} s; otherwise it ` +
            "happens at the next `agent gateway run`.\n",
        );
      }
    });
}

/** When the retry a requeued delivery was waiting for was due, if it was one. */
function waitedRetry(result: RequeueResult): number | undefined {
  return result.ok && result.state === "delivering" ? result.retryWasDueAt : undefined;
}

/** `event <id> (<route>, <event>, delivery <delivery id>)`, as redeliver names an event. */
function describeEvent(event: EventSummary): string {
  return `event ${event.id} (${event.route}, ${visible(event.event)}, delivery ${
    visible(event.deliveryId)
  })`;
}

/**
 * The note on an event requeued to deliver the notice its run left instead of an answer (it
 * failed, timed out, or the answer was empty): `--rerun` runs the agent again.
 */
function noticeNote(result: RequeueResult): string | undefined {
  if (!result.ok || result.state !== "delivering" || !result.noAnswer) return undefined;
  const why = result.noAnswer === EMPTY_ANSWER
    ? "the model's answer was empty when it ran"
    : `its run ended ${result.noAnswer}`;
  return `${why}, so what is delivered is the notice saying so; add --rerun to run the agent again`;
}

/**
 * Opens the inbox for `work`, or returns undefined when there is none yet (the gateway never
 * accepted an event here); opening never creates it.
 */
function withInbox<T>(config: ResolvedConfig, work: (inbox: Inbox) => T): T | undefined {
  const path = config.paths.gatewayInbox;
  if (!existsSync(path)) return undefined;
  using inbox = Inbox.open(path);
  return work(inbox);
}

/**
 * Whether a gateway serves this `<home>` now (it holds the home's gateway lock), `undefined` when
 * that cannot be told.
 */
function gatewayServes(config: ResolvedConfig): boolean | undefined {
  return gatewayRunning(config.paths.gatewayLock);
}

/** Not finished: a gateway has yet to run or deliver it. */
function pending(event: EventSummary): boolean {
  return event.state === "queued" || event.state === "running" || event.state === "delivering";
}

/**
 * Whether the gateway that was running or delivering `event` is gone (`served` is false): nothing
 * works on it until the next `agent gateway run` resumes it. A delivery waiting for its retry
 * was not cut off, and neither was anything while it cannot be told whether a gateway runs.
 */
function interrupted(event: EventSummary, served: boolean | undefined): boolean {
  if (served !== false) return false;
  return event.state === "running" || (event.state === "delivering" && event.leased);
}

/** The events `key` names: an event id, else a delivery id (which may reach several routes). */
function resolveKey(inbox: Inbox, key: string): EventSummary[] {
  const found = inbox.find(key);
  if (found.length === 0) {
    throw new UsageError(
      `no event with the id or delivery id '${key}' (see \`agent webhook events\`; finished ` +
        "events are kept for a week)",
    );
  }
  return found;
}

/** What redeliver takes, as its refusals say. */
const REQUEUED = "only done or failed events, and deliveries waiting for a retry, are requeued";

function refusal(
  event: EventSummary,
  result: RequeueResult,
  served: boolean | undefined,
): string {
  if (result.ok) return "";
  switch (result.problem) {
    case "unknown":
      return "it is no longer in the inbox";
    case "pending":
    case "leased":
      return interrupted({ ...event, state: result.state, leased: true }, served)
        ? `it was ${result.state} when the gateway stopped; the next \`agent gateway run\` ` +
          `resumes it (${REQUEUED})`
        : result.problem === "leased"
        ? `the gateway is delivering it to ${event.deliver} right now; once that attempt is ` +
          "over, `agent webhook events` shows how it went (a failed attempt waits for a retry, " +
          "which redeliver can make due now)"
        : `it is ${result.state} already; ${REQUEUED}`;
    case "due":
      return `it is delivering already and due now: a running gateway sends it within ` +
        `${IDLE_POLL_MS / 1000} s, a stopped one at its next \`agent gateway run\``;
    case "silent":
      return `its answer was [SILENT], so there is nothing to deliver; --rerun runs the agent ` +
        `again (route ${event.route})`;
  }
}

/**
 * `--route` as `subscribe`, `test` and `remove` take a name (`GitHub Issues` is `github-issues`,
 * the name the inbox stores); blank is no filter, a name no route can have a usage error.
 */
function routeOption(value: string | undefined): string | undefined {
  if (value === undefined || value.trim() === "") return undefined;
  const result = normaliseRouteName(value);
  if (!result.ok) throw new UsageError(`--route: ${result.error}`);
  return result.name;
}

function stateOption(value: string | undefined): EventState | undefined {
  if (value === undefined) return undefined;
  const state = value.trim().toLowerCase();
  if (!(STATES as readonly string[]).includes(state)) {
    throw new UsageError(`--state must be one of ${STATES.join(", ")} (got '${value}')`);
  }
  return state as EventState;
}

function limitOption(value: string | undefined): number {
  if (value === undefined) return DEFAULT_LIMIT;
  const limit = Number(value);
  if (!Number.isInteger(limit) || limit < 1) {
    throw new UsageError(`--limit takes a whole number ≥ 1 (got '${value}')`);
  }
  return limit;
}

function describeFilter(filter: { route?: string; state?: EventState }): string {
  return (filter.state ? ` in state ${filter.state}` : "") +
    (filter.route ? ` of route '${filter.route}'` : "");
}

function eventJson(event: EventSummary, served: boolean | undefined) {
  return {
    id: event.id,
    route: event.route,
    event: event.event,
    delivery_id: event.deliveryId,
    deliver: event.deliver,
    state: event.state,
    run_attempts: event.runAttempts,
    delivery_attempts: event.deliveryAttempts,
    parts_sent: event.partsSent,
    end_reason: event.endReason ?? null,
    error: event.error ?? null,
    created_at: isoTime(event.createdAt),
    updated_at: isoTime(event.updatedAt),
    next_attempt_at: event.state === "queued" || event.state === "delivering"
      ? isoTime(event.nextAttemptAt)
      : null,
    interrupted: interrupted(event, served),
  };
}

function eventText(event: EventSummary, now: number, served: boolean | undefined): string {
  const cut = interrupted(event, served);
  const state = cut
    ? `interrupted (was ${event.state}; the next \`agent gateway run\` resumes it)`
    : event.state;
  // The event name and the error can hold a sender's or a platform's text: shown inert.
  const lines = [`${event.id}  ${state}  ${event.route} (${visible(event.event)})`];
  lines.push(`  delivery id: ${visible(event.deliveryId)}`);
  lines.push(`  received:    ${isoTime(event.createdAt)}`);
  const progress = [
    event.endReason ? `run ${event.endReason}` : "",
    event.deliveryAttempts > 0
      ? `${event.deliveryAttempts} delivery ${
        event.deliveryAttempts === 1 ? "attempt" : "attempts"
      }`
      : "",
  ].filter(Boolean);
  lines.push(
    `  deliver:     ${event.deliver}${progress.length ? ` (${progress.join(", ")})` : ""}`,
  );
  if (event.state === "delivering" && !cut && event.nextAttemptAt > now) {
    lines.push(
      // As the gateway's retry log line says a wait: 0.2 s left is not "in 1 s".
      `  next try:    in ${waitSeconds(event.nextAttemptAt - now)} s` +
        (served === false ? ", if a gateway runs then" : ""),
    );
  }
  if (event.error) lines.push(`  error:       ${visible(event.error.replace(/\s+/g, " "))}`);
  return `${lines.join("\n")}\n`;
}

function isoTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}
