/**
 * The webhook listener: a Hono app whose POST pipeline is one step per concern, in the order of
 * decisions.md §6: route → enabled → size → auth → rate → parse → events → filters → claim →
 * script → render → direct delivery (200 / 502) or durable enqueue (202 after commit). An agent
 * run whose route's template renders blank for the payload gets the default prompt (a warning in
 * the log and in the 202).
 * Before any of them, for every path, a request's `Host` header, when it has one, is checked (400
 * when it is not a host with an optional port).
 * Each step answers or passes on; none can be made to answer 500 by what a request holds.
 * For a route with neither a script nor direct delivery, the claim is taken together with the
 * enqueue, in one transaction (`Inbox.accept`, on the inbox's writer thread in the gateway).
 *
 * @module
 */
import { createHash } from "node:crypto";
import { type Context as HonoContext, Hono, type MiddlewareHandler } from "hono";
import type { Inbox } from "../gateway/inbox.ts";
import { concatBytes } from "../home/files.ts";
import { isLoopbackHost } from "../home/loopback.ts";
import { cut } from "../home/text.ts";
import { matchFilter } from "./filters.ts";
import { LATE, ReadDeadlines } from "./read_deadline.ts";
import { deliveryId, eventName, parsePayload } from "./request.ts";
import type { RouteTable, ServedRoute } from "./route_table.ts";
import { type Route, takesEvent } from "./routes.ts";
import { acceptsUnsigned, type WebhookSettings } from "./settings.ts";
import { type SignatureFamily, verifySignature } from "./signatures.ts";
import { defaultPrompt, renderExtra, renderPrompt } from "./templates.ts";

// The answers `agent webhook test` tells apart: it compares against these, not fragments of them.

/** The 404 `error` for a route the gateway does not serve is `Unknown route: <name>`. */
export const UNKNOWN_ROUTE_ERROR = "Unknown route";

/** The 401 `error` for a signature or token that is missing or wrong. */
export const INVALID_SIGNATURE_ERROR = "Invalid signature";

/**
 * The 403 `error` of an unsigned request (to a route without a secret, `INSECURE_NO_AUTH` on) that
 * a web page may have sent: a browser, or a `Host` that is not loopback.
 */
export const UNSIGNED_BROWSER_ERROR = "a route without a secret takes no requests from web " +
  "browsers or for other host names; give the route a secret";

/** The 503 `error` of an event whose route's script cannot run: the detail is in the log only. */
export const SCRIPT_BLOCKED_ERROR = "the route's script cannot run; see the gateway's log";

/** The level of the log line with the detail of a {@linkcode SCRIPT_BLOCKED_ERROR}. */
export const SCRIPT_BLOCKED_LOG_LEVEL = "error";

/**
 * How the 502 `error` of a failed direct delivery ends (`delivery to <target> failed; …`): the
 * reason is in the log only, as it can name API roots and settings of this machine.
 */
export const DELIVERY_FAILED_ERROR_END = "failed; the reason is in the gateway's log";

/** The level of the log line with the reason of a {@linkcode DELIVERY_FAILED_ERROR_END}. */
export const DELIVERY_FAILED_LOG_LEVEL = "warning";

/** The `warning` of the 202 for an event whose route's template rendered blank. */
export const BLANK_TEMPLATE_WARNING = "the route's prompt template renders blank for this " +
  "payload, so the agent runs on the default prompt (the event and its payload)";

/**
 * The 502 `error` of a direct delivery whose template renders an empty message for its payload:
 * nothing is sent.
 */
export const EMPTY_MESSAGE_ERROR = "nothing to deliver: the route's prompt template renders an " +
  "empty message for this payload";

/** What a route script decided. */
export type ScriptVerdict =
  | { kind: "payload"; payload: Record<string, unknown> }
  | { kind: "ignored"; reason: string; detail?: string }
  | { kind: "blocked"; detail: string };

/** The outcome of a direct delivery. */
export type DirectDelivery =
  | { ok: true; detail?: string }
  | {
    ok: false;
    error: string;
    /** Parts of a split message delivered before the failure, counted from the first. */
    partsSent?: number;
  };

/** What the listener needs from the gateway. */
export interface ListenerDeps {
  settings: Pick<
    WebhookSettings,
    | "secret"
    | "host"
    | "insecureNoAuth"
    | "maxBodyBytes"
    | "bodyTimeoutSeconds"
    | "rateLimit"
    | "idempotencyTtlSeconds"
  >;
  routes: RouteTable;
  inbox: Inbox;
  /** Clock (ms since epoch). */
  now(): number;
  runScript(
    route: ServedRoute,
    payload: Record<string, unknown>,
    event: string,
    deliveryId: string,
  ): Promise<ScriptVerdict>;
  /**
   * Delivers `message`, leaving out its first `skipParts` parts (sent by an earlier try), and
   * calling `onPartSent` after each part of a split message that went out (but the last).
   */
  deliverDirect(
    route: ServedRoute,
    message: string,
    extra: Record<string, unknown>,
    payload: Record<string, unknown>,
    event: string,
    skipParts: number,
    onPartSent: (partsSent: number) => void,
  ): Promise<DirectDelivery>;
  /** Called after an event was committed, to wake the workers. */
  onAccepted(): void;
  /**
   * Whether the gateway is stopping: the HTTP layer then ends the reading of bodies still under
   * way, and their senders are told to retry (503) rather than that their request was bad.
   */
  stopping?(): boolean;
  log(
    level: "info" | "warning" | "error",
    message: string,
    properties?: Record<string, unknown>,
  ): void;
}

type Env = {
  Variables: {
    route: ServedRoute;
    body: Uint8Array;
    payload: Record<string, unknown>;
    /** `payload`'s JSON text as received; gone once a script replaced the payload. */
    payloadJson: string | undefined;
    event: string;
    /** The delivery id the request's signature covers, when it covers one. */
    signedId: string | undefined;
    /** The signature family the request was verified with; none when unsigned ones are taken. */
    family: SignatureFamily | undefined;
    deliveryId: string;
    /**
     * The claim was taken held, by the claim step: it waits for an outcome decided later (see
     * `Inbox.claim`). Otherwise it is taken with the enqueue.
     */
    claimHeld: boolean;
  };
};

/** A route's URL, with or without a trailing slash. */
const WEBHOOK_PATHS: ["/webhooks/:name", "/webhooks/:name/"] = [
  "/webhooks/:name",
  "/webhooks/:name/",
];

type Step = MiddlewareHandler<Env, "/webhooks/:name">;

/** `Retry-After` of a 409 for a delivery id whose first request is still being served. */
const IN_PROGRESS_RETRY_SECONDS = 10;

/**
 * Builds the listener app.
 *
 * @example
 * ```ts ignore
 * const app = createWebhookApp(deps);
 * Deno.serve({ port: 8644 }, app.fetch);
 * ```
 */
export function createWebhookApp(deps: ListenerDeps): Hono<Env> {
  const app = new Hono<Env>();
  const refused = refusalLog(deps);
  app.use(checkHost(refused));
  app.get("/health", (c) => c.json({ status: "ok", platform: "webhook" }));
  app.all("/health", (c) => {
    c.header("Allow", "GET, HEAD");
    return c.json({ error: `Method ${shortened(c.req.method)} not allowed; send GET` }, 405);
  });
  // `/webhooks/<name>/` is the same URL: a trailing slash is an easy slip in a sender's form.
  app.on(
    "POST",
    WEBHOOK_PATHS,
    findRoute(deps, refused),
    checkEnabled(refused),
    readBody(deps, refused),
    authenticate(deps, refused),
    rateLimit(deps, refused),
    parse(refused),
    matchEvents,
    applyFilters(deps),
    claimDelivery(deps),
    runScript(deps),
    dispatch(deps),
  );
  app.on("ALL", WEBHOOK_PATHS, (c) => {
    deps.routes.refresh();
    const name = c.req.param("name");
    if (!routeNamed(deps.routes, name)) {
      return c.json({ error: `${UNKNOWN_ROUTE_ERROR}: ${shortened(name)}` }, 404);
    }
    c.header("Allow", "POST");
    return c.json({ error: `Method ${shortened(c.req.method)} not allowed; send POST` }, 405);
  });
  app.notFound((c) => {
    const path = pathOf(c.req.url);
    return c.json({ error: `Not found: ${shortened(path)}${doubledSlashHint(path)}` }, 404);
  });
  app.onError((error, c) => {
    deps.log("error", "webhook request failed: {error}", { error: String(error) });
    return c.json({ error: "internal error; see logs/gateway.log" }, 500);
  });
  return app;
}

/**
 * Refuses (400) a request whose `Host` header is not a host with an optional port. First, for
 * every path: Deno builds the URL from the header as is, so an invalid host would change the path
 * the router sees. A request without one is served: the handler is not told the HTTP version, and
 * an HTTP/2 request (no `Host` header) naming `localhost:<port>` looks the same as an HTTP/1.1
 * one without `Host`; its URL names this server either way.
 */
function checkHost(refused: RefusalLog): MiddlewareHandler<Env> {
  return (c, next) => {
    const host = c.req.header("host");
    if (host === undefined || HOST_HEADER.test(host)) return next();
    const shown = shortened(host);
    refused("warning", "bad host", "refused a request with the Host header {host} (400)", {
      host: shown,
    });
    return Promise.resolve(c.json({
      error: `the Host header must be a host name or address with an optional port ` +
        `(got ${JSON.stringify(shown)})`,
    }, 400));
  };
}

/** `uri-host [":" port]` of RFC 3986, not empty: a name, an IPv4 address or a bracketed IPv6 one. */
const HOST_HEADER =
  /^(?:\[[0-9A-Fa-f:.]+\]|(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})+)(?::\d*)?$/;

/**
 * The path of a URL as the sender wrote it: not decoded, dot segments kept, as the router saw it.
 * Not `new URL`, which throws for authorities Deno passes on (`http://xn--a/`, `http://a:99999/`).
 */
function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start === -1) return "/";
  const end = url.slice(start).search(/[?#]/);
  return end === -1 ? url.slice(start) : url.slice(start, start + end);
}

function findRoute(deps: ListenerDeps, refused: RefusalLog): Step {
  return async (c, next) => {
    deps.routes.refresh();
    const name = c.req.param("name");
    const route = routeNamed(deps.routes, name);
    if (!route) {
      // Often a sender set up with a mistyped or removed route. The name is the sender's text:
      // one line a minute for all unknown names, so no name can flood the log.
      const shown = shortened(name);
      refused("warning", "unknown route", "refused a POST to unknown route {name} (404)", {
        name: shown,
      });
      return c.json({ error: `${UNKNOWN_ROUTE_ERROR}: ${shown}` }, 404);
    }
    c.set("route", route);
    await next();
  };
}

/**
 * The route `name` (a URL's path segment) names. Route names are lower-case, and the CLI takes a
 * `<name>` in any ASCII case (`normaliseRouteName`): so does the URL, so that a sender set up with
 * `/webhooks/GitHub` reaches `github`. Lower-cased only after a miss: no work on the usual path.
 * ASCII only, as `normaliseRouteName`: `toLowerCase` would turn U+212A (Kelvin sign) into `k`.
 */
function routeNamed(routes: RouteTable, name: string): ServedRoute | undefined {
  return routes.get(name) ??
    (/[A-Z]/.test(name) ? routes.get(name.replace(/[A-Z]/g, (c) => c.toLowerCase())) : undefined);
}

/**
 * An unknown route name or path as the log and the 404 quote it: the sender's text, up to ~100 KB
 * of it, cut to {@linkcode MAX_QUOTED_NAME} characters (the last one `…`).
 */
function shortened(name: string): string {
  return cut(name, MAX_QUOTED_NAME);
}

const MAX_QUOTED_NAME = 100;

/**
 * What to say of a path that is a route URL but for a doubled slash (`//webhooks/github`, from a
 * base URL ending in `/` pasted before `/webhooks/...`); nothing for any other path.
 */
function doubledSlashHint(path: string): string {
  if (!path.includes("//") || path.length > MAX_QUOTED_NAME) return "";
  const single = path.replace(/\/{2,}/g, "/");
  return /^\/webhooks\/[^/]+\/?$/.test(single)
    ? ` (did you mean ${single}? the URL has a doubled slash)`
    : "";
}

function checkEnabled(refused: RefusalLog): Step {
  return async (c, next) => {
    const route = c.get("route");
    if (!route.enabled) {
      refused("info", "disabled", "refused an event to {route}: it is disabled (403)", {
        route: route.name,
      });
      return c.json({ error: "route disabled" }, 403);
    }
    await next();
  };
}

/**
 * Reads the body up to the cap; never buffers past it. A body that cannot be read to its end is
 * answered 400 (the sender hung up or sent a broken body), logged as a warning at most once a
 * minute per route: anyone who can reach the port can cause it; or 503 with `Retry-After` when the
 * gateway is stopping, which ended the read. One that has not arrived in full within
 * `body_timeout_seconds` (a stalled sender, or a `Content-Length` larger than what it sends) is
 * answered 408; a chunked body's read is then stopped, and what was read of it let go.
 */
function readBody(deps: ListenerDeps, refused: RefusalLog): Step {
  const seconds = deps.settings.bodyTimeoutSeconds;
  const deadlines = new ReadDeadlines(seconds * 1000);
  return async (c, next) => {
    const cap = deps.settings.maxBodyBytes;
    let body: Awaited<ReturnType<typeof readCapped>>;
    try {
      body = await readCapped(c.req.raw, cap, deadlines);
    } catch (error) {
      if (deps.stopping?.()) {
        c.header("Retry-After", String(STOPPING_RETRY_SECONDS));
        return c.json({ error: "the gateway is stopping; send the request again later" }, 503);
      }
      const route = c.get("route").name;
      refused(
        "warning",
        "unread",
        "route {route}: the request body could not be read: {error}",
        { route, error: String(error) },
      );
      return c.json({ error: "the request body could not be read to its end" }, 400);
    }
    if (body === LATE) {
      const route = c.get("route").name;
      refused(
        "warning",
        "late",
        "refused an event to {route}: its body had not arrived in full after {seconds} s (408)",
        { route, seconds },
      );
      return c.json({
        error: `the request body did not arrive in full within ${seconds} s` +
          (c.req.header("content-length") === undefined
            ? ""
            : " (check that Content-Length is the body's size in bytes)"),
      }, 408);
    }
    if (body === undefined) {
      const route = c.get("route").name;
      refused(
        "warning",
        "size",
        "refused an event to {route}: body over {cap} bytes (413)",
        { route, cap },
      );
      return c.json({ error: `body larger than ${cap} bytes` }, 413);
    }
    c.set("body", body);
    await next();
  };
}

/**
 * The body of `request`; `undefined` when it is larger than `cap` bytes, {@linkcode LATE} when it
 * did not arrive in full within the deadline.
 */
function readCapped(
  request: Request,
  cap: number,
  deadlines: ReadDeadlines,
): Promise<Uint8Array | undefined | typeof LATE> {
  const header = request.headers.get("content-length");
  const declared = header !== null && /^\d+$/.test(header) ? Number(header) : undefined;
  if (declared !== undefined && declared > cap) return Promise.resolve(undefined);
  if (declared !== undefined && declared <= WHOLE_READ_BYTES) {
    // The HTTP layer delivers exactly Content-Length bytes (a body that disagrees is a broken
    // request, not a bigger one), so one read cannot pass the cap. This read cannot be stopped
    // (the HTTP layer's own, much faster than a loop of reads): a late one is left to end with
    // its connection, holding a buffer of the declared size, so only small bodies are read so.
    return deadlines.within(
      request.arrayBuffer().then((buffer) => {
        const body = new Uint8Array(buffer);
        return body.byteLength > cap ? undefined : body; // a Request built in-process could lie
      }),
    );
  }
  const stream = request.body;
  if (!stream) return Promise.resolve(new Uint8Array());
  const reader = stream.getReader();
  return deadlines.within(readChunks(reader, cap), () => reader.cancel().catch(() => {}));
}

/**
 * The largest declared body read in one go. Deno allocates the declared length as such a read
 * starts, and a sender that then stops keeps it until it hangs up: larger bodies are read chunk by
 * chunk, a read that can be stopped at its deadline. 64 KiB: what a head Deno is still reading can
 * hold too.
 */
const WHOLE_READ_BYTES = 64 * 1024;

/** The rest of a body read by `reader`, or `undefined` once it passes `cap` bytes. */
async function readChunks(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  cap: number,
): Promise<Uint8Array | undefined> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (true) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > cap) {
      await reader.cancel().catch(() => {});
      return undefined;
    }
    chunks.push(value);
  }
  return concatBytes(chunks, size);
}

/**
 * Logs a refusal that anyone who can reach the port can cause: its route (`properties.route`,
 * none for an unknown one) and `kind` (what was refused, of a bounded set) choose the line. Each is
 * logged at most once a minute, with how many more were refused since: a flood of bad requests
 * must not flush the log's history out through its rotation, nor hide another kind of refusal.
 */
type RefusalLog = (
  level: "info" | "warning" | "error",
  kind: string,
  message: string,
  properties: Record<string, unknown>,
) => void;

function refusalLog(deps: ListenerDeps): RefusalLog {
  const windows = new Map<string, { start: number; more: number }>();
  return (level, kind, message, properties) => {
    // Bounded: routes are the configured ones (an unknown name is not one), kinds a few texts.
    const key = `${level} ${properties.route ?? ""} ${kind}`;
    const now = deps.now();
    const window = windows.get(key);
    if (window && now - window.start < REFUSAL_LOG_INTERVAL_MS) {
      window.more++;
      return;
    }
    const more = window?.more ?? 0;
    windows.set(key, { start: now, more: 0 });
    deps.log(
      level,
      more > 0 ? `${message} ({more} more refused like it since the last such line)` : message,
      more > 0 ? { ...properties, more } : properties,
    );
  };
}

/** `Retry-After` of a request whose body was still being read when the gateway began to stop. */
const STOPPING_RETRY_SECONDS = 10;

/** `Retry-After` of an event refused because its route's script cannot run. */
const BLOCKED_SCRIPT_RETRY_SECONDS = 300;

/** Refusals of one kind on one route are logged at most this often. */
const REFUSAL_LOG_INTERVAL_MS = 60_000;

function authenticate(deps: ListenerDeps, refused: RefusalLog): Step {
  return async (c, next) => {
    const route = c.get("route");
    const secret = route.secret ?? deps.settings.secret;
    if (!secret) {
      if (acceptsUnsigned(deps.settings)) {
        const browser = fromBrowser(c.req.raw.headers);
        if (!browser) return await next();
        refused("warning", "browser", "refused an unsigned request to {route}: {why} (403)", {
          route: route.name,
          why: browser,
        });
        return c.json({ error: UNSIGNED_BROWSER_ERROR }, 403);
      }
      refused(
        "error",
        "secret",
        "route {route} has no secret and no global secret is set",
        { route: route.name },
      );
      return c.json({ error: "no secret is configured for this route" }, 403);
    }
    let verdict;
    try {
      verdict = verifySignature({
        headers: c.req.raw.headers,
        body: c.get("body"),
        secret,
        nowMs: deps.now(),
      });
    } catch {
      verdict = { ok: false as const, reason: "unreadable signature headers" };
    }
    if (!verdict.ok) {
      // A reason is one of a few texts, some with a number (how far off a timestamp is).
      refused(
        "warning",
        verdict.reason.replace(/\d+/g, "#"),
        "rejected a request to {route}: {reason}",
        { route: route.name, reason: verdict.reason },
      );
      return c.json({ error: INVALID_SIGNATURE_ERROR }, 401);
    }
    c.set("signedId", verdict.signedId);
    c.set("family", verdict.family);
    await next();
  };
}

/**
 * Why an unsigned request (`INSECURE_NO_AUTH` on a loopback host) may come from a web page rather
 * than a local sender, or `undefined`. A page the user visits can POST to `http://localhost:<port>`
 * (a "simple" request needs no CORS preflight, and any content type is read as JSON), and one
 * whose name resolves to 127.0.0.1 (DNS rebinding) can too: either would start agent runs with its
 * own text. Browsers say so with `Origin` (sent on every POST) and `Sec-Fetch-Site`; a rebound
 * page's `Host` is its own name. Webhook senders and curl send neither header, and a loopback
 * `Host`.
 */
function fromBrowser(headers: Headers): string | undefined {
  if (headers.has("origin")) return "it has an Origin header, as a web page's request has";
  const site = headers.get("sec-fetch-site");
  if (site !== null && site !== "none") {
    return "it has a Sec-Fetch-Site header, as a web page's request has";
  }
  const host = headers.get("host");
  if (host !== null && !isLoopbackHost(hostOfHeader(host))) {
    return `its Host header ${JSON.stringify(shortened(host))} is not a loopback name or address`;
  }
  return undefined;
}

/** The host of a valid `Host` header, without its port (`[::1]:8644` → `[::1]`). */
function hostOfHeader(host: string): string {
  return host.replace(/:\d*$/, "");
}

/**
 * Sliding window per route, counted after authentication; memory is one timestamp per allowed
 * request. Timestamps are kept in arrival order, so expired ones are dropped from the front:
 * constant work per request whatever the limit.
 */
function rateLimit(deps: ListenerDeps, refused: RefusalLog): Step {
  const windows = new Map<string, { times: number[]; start: number }>();
  return async (c, next) => {
    const { requests, windowSeconds } = deps.settings.rateLimit;
    const windowMs = windowSeconds * 1000;
    const now = deps.now();
    const name = c.get("route").name;
    let window = windows.get(name);
    if (!window) windows.set(name, window = { times: [], start: 0 });
    while (window.start < window.times.length && window.times[window.start] <= now - windowMs) {
      window.start++;
    }
    if (window.start > 1024 && window.start * 2 > window.times.length) {
      window.times = window.times.slice(window.start);
      window.start = 0;
    }
    if (window.times.length - window.start >= requests) {
      const oldest = window.times[window.start];
      const retryAfter = Math.max(1, Math.ceil((oldest + windowMs - now) / 1000));
      refused(
        "warning",
        "rate",
        "refused an event to {route}: over its rate limit of {requests} per {seconds} s (429)",
        { route: name, requests, seconds: windowSeconds },
      );
      c.header("Retry-After", String(retryAfter));
      return c.json({ error: `rate limit: ${requests} requests per ${windowSeconds} s` }, 429);
    }
    window.times.push(now);
    await next();
  };
}

function parse(refused: RefusalLog): Step {
  return async (c, next) => {
    const result = parsePayload(c.get("body"), c.req.header("content-type") ?? null);
    if (!result.ok) {
      const route = c.get("route").name;
      // The answer names the place in the body; the kind of problem is its words before that.
      refused(
        "warning",
        result.error.replace(/[("'\d].*$/s, ""),
        "refused an event to {route}: {error} (400)",
        { route, error: result.error },
      );
      return c.json({ error: result.error }, 400);
    }
    c.set("payload", result.payload);
    c.set("payloadJson", result.json);
    // A Standard Webhooks payload names its event (`type`) under the signature; no header does.
    const payloadSigned = c.get("family") === "standard_webhooks";
    c.set("event", eventName(c.req.raw.headers, result.payload, payloadSigned));
    c.set("deliveryId", deliveryId(c.req.raw.headers, c.get("body"), c.get("signedId")));
    await next();
  };
}

/** `--events` names match whatever their case: GitLab's are `Merge Request Hook`, GitHub's `push`. */
const matchEvents: Step = async (c, next) => {
  const { events } = c.get("route");
  const event = c.get("event");
  if (!takesEvent(events, event)) return c.json({ status: "ignored", event });
  await next();
};

function applyFilters(deps: ListenerDeps): Step {
  return async (c, next) => {
    const { filter, name } = c.get("route");
    if (filter) {
      const matched = matchFilter(filter, {
        payload: c.get("payload"),
        event: c.get("event"),
        headers: c.req.raw.headers,
      }, {
        warn: (message) =>
          deps.log("warning", "route {route}: {message}", { route: name, message }),
      });
      if (!matched) return c.json({ status: "ignored", reason: "filter" });
    }
    await next();
  };
}

function claimDelivery(deps: ListenerDeps): Step {
  return async (c, next) => {
    const { name, script, deliverOnly } = c.get("route");
    // An agent-run event without a script is claimed by its enqueue, in the same transaction. A
    // script or a direct delivery decides the outcome later, so the claim is taken now, held: a
    // crash before then must not turn the sender's retry into a duplicate.
    const held = Boolean(script) || deliverOnly;
    c.set("claimHeld", held);
    if (!held) return await next();
    const id = c.get("deliveryId");
    let claimed: boolean;
    try {
      claimed = deps.inbox.claim(name, id, deps.now(), ttlOf(deps), true);
    } catch (error) {
      // The inbox cannot be written (read-only, gone): nothing was claimed; the sender retries.
      deps.log("error", "route {route}: could not store event {delivery_id}: {error}", {
        route: name,
        delivery_id: id,
        error: String(error),
      });
      return notStored(c);
    }
    if (!claimed) {
      if (deps.inbox.isHeld(name, id)) return inProgress(c, id);
      // The claim may be one a request of this turn took, whose commit is still to come and may
      // fail (then it is rolled back): "duplicate" tells the sender to drop the event, so it is
      // said only once the claim is committed.
      return await deps.inbox.durable().then(() => duplicate(c, id), () => notStored(c));
    }
    await next();
    // A later step that threw was answered 500 by onError: Hono records the error as `c.error`
    // rather than throwing it out of next(). Nothing was accepted: the sender's retry must not
    // find the claim held (409) or taken (duplicate). (A direct delivery that threw has let it go
    // already, keeping the parts that went out.)
    if (c.error && deps.inbox.isHeld(name, id)) {
      recordClaim(deps, name, id, () => deps.inbox.release(name, id));
    }
  };
}

type Context = HonoContext<Env, "/webhooks/:name">;

/** The answer to a delivery id whose first request is still being served, and may yet fail. */
function inProgress(c: Context, id: string): Response {
  // A 2xx now would make the sender drop the event if the first request fails.
  c.header("Retry-After", String(IN_PROGRESS_RETRY_SECONDS));
  return c.json(
    { error: `delivery ${id} is still being processed; retry later`, delivery_id: id },
    409,
  );
}

/** The answer to a delivery id claimed (and committed) before. */
function duplicate(c: Context, id: string): Response {
  return c.json({ status: "duplicate", delivery_id: id });
}

/** The answer when the inbox could not commit. */
function notStored(c: Context): Response {
  c.header("Retry-After", "30");
  return c.json({ error: "the event could not be stored; try again later" }, 503);
}

function runScript(deps: ListenerDeps): Step {
  return async (c, next) => {
    const route = c.get("route");
    if (!route.script) return await next();
    const verdict = await deps.runScript(
      route,
      c.get("payload"),
      c.get("event"),
      c.get("deliveryId"),
    );
    if (verdict.kind === "blocked") {
      // Not the script's answer but a setup to fix (a missing file, one outside scripts/): the
      // sender keeps the event and sends it again, by then perhaps to a fixed route.
      recordClaim(
        deps,
        route.name,
        c.get("deliveryId"),
        () => deps.inbox.release(route.name, c.get("deliveryId")),
      );
      deps.log(
        SCRIPT_BLOCKED_LOG_LEVEL,
        "route {route}: event {delivery_id} refused (503), its script cannot run: {detail}",
        { route: route.name, delivery_id: c.get("deliveryId"), detail: verdict.detail },
      );
      c.header("Retry-After", String(BLOCKED_SCRIPT_RETRY_SECONDS));
      return c.json({ error: SCRIPT_BLOCKED_ERROR }, 503);
    }
    if (verdict.kind === "ignored") {
      recordClaim(
        deps,
        route.name,
        c.get("deliveryId"),
        () => deps.inbox.settle(route.name, c.get("deliveryId")),
      );
      // Printing nothing or [SILENT] is the script's way to say no; anything else is a failure
      // its author needs to see (the exit code and stderr, the timeout, the output cap).
      const chosen = verdict.reason === "empty" || verdict.reason === "silent";
      deps.log(
        chosen ? "info" : "warning",
        "route {route}: event {delivery_id} ignored because of its script ({reason}): {detail}",
        {
          route: route.name,
          delivery_id: c.get("deliveryId"),
          reason: verdict.reason,
          detail: verdict.detail ?? verdict.reason,
        },
      );
      return c.json({ status: "ignored", reason: "script" });
    }
    c.set("payload", verdict.payload);
    c.set("payloadJson", undefined);
    await next();
  };
}

function dispatch(deps: ListenerDeps): Step {
  return async (c) => {
    const route = c.get("route");
    const payload = c.get("payload");
    const event = c.get("event");
    const id = c.get("deliveryId");
    const rendered = renderPrompt(route, payload, event);
    const extra = renderExtra(route.deliverExtra, payload, event);
    if (route.deliverOnly) return deliverNow(deps, c, route, rendered, extra, payload, event, id);
    // An empty user message leaves the model nothing to work on: it gets the whole event instead.
    const blank = rendered.trim() === "";
    const prompt = blank ? defaultPrompt(route.name, payload, event) : rendered;
    const newEvent = {
      route: route.name,
      event,
      deliveryId: id,
      payload,
      payloadJson: c.get("payloadJson"),
      prompt,
      plan: { deliver: route.deliver, deliverExtra: extra, skills: route.skills },
    };
    const accepted = () => {
      deps.onAccepted();
      const answer = { status: "accepted", route: route.name, event, delivery_id: id };
      if (!blank) return c.json(answer, 202);
      blankTemplate(deps, route, id);
      return c.json({ ...answer, warning: BLANK_TEMPLATE_WARNING }, 202);
    };
    const failed = (error: unknown) => {
      deps.log("error", "route {route}: could not store event {delivery_id}: {error}", {
        route: route.name,
        delivery_id: id,
        error: String(error),
      });
      return notStored(c);
    };
    if (!c.get("claimHeld")) {
      // Claimed and enqueued in one transaction; answered once it is committed.
      let result;
      try {
        result = await deps.inbox.accept(newEvent, deps.now(), ttlOf(deps));
      } catch (error) {
        return failed(error); // neither the claim nor the event was written
      }
      if (result.kind === "held") return inProgress(c, id);
      return result.kind === "duplicate" ? duplicate(c, id) : accepted();
    }
    // 202 only once the event is committed (with the other writes of this turn).
    try {
      deps.inbox.enqueue(newEvent, deps.now());
      deps.inbox.settle(route.name, id); // committed with the event
      await deps.inbox.durable();
    } catch (error) {
      // The event was not stored, but the claim was held since an earlier commit: it is given
      // up, so that the sender's retry is not a duplicate.
      try {
        deps.inbox.release(route.name, id);
      } catch { /* the store is failing: a restart frees the held claim */ }
      return failed(error);
    }
    return accepted();
  };
}

/**
 * Logs that an agent run's template rendered blank for event `id`, so that it runs on the default
 * prompt (decisions.md §6, no template): said once the event is accepted.
 */
function blankTemplate(deps: ListenerDeps, route: ServedRoute, id: string): void {
  deps.log(
    "warning",
    "route {route}: event {delivery_id}: the prompt template renders blank for this payload " +
      "(the fields it names are empty or blank), so the agent runs on the default prompt (the " +
      "event and its payload); to change the template, {fix}",
    { route: route.name, delivery_id: id, fix: templateFix(route) },
  );
}

/**
 * How to change a route's prompt template: where a static route or a subscription keeps it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { templateFix } from "./listener.ts";
 * assert.equal(
 *   templateFix({ name: "ci", source: "dynamic" }),
 *   "subscribe it again with another --prompt (agent webhook subscribe ci ...)",
 * );
 * ```
 */
export function templateFix(route: Pick<Route, "name" | "source">): string {
  return route.source === "static"
    ? `edit the prompt of platforms.webhook.extra.routes.${route.name} in config.yaml`
    : `subscribe it again with another --prompt (agent webhook subscribe ${route.name} ...)`;
}

/**
 * A direct delivery whose template renders an empty message for this payload: nothing is sent
 * (every platform refuses an empty text) and, as for any failed direct delivery, the answer is 502
 * with the claim released, so the sender's retry is delivered once the route's prompt is fixed.
 */
function emptyMessage(
  deps: ListenerDeps,
  c: Context,
  route: ServedRoute,
  id: string,
): Response {
  recordClaim(deps, route.name, id, () => deps.inbox.release(route.name, id));
  deps.log(
    "warning",
    "route {route}: direct delivery {delivery_id} to {target} not sent: the route's prompt " +
      "template renders an empty message for this payload (the fields it names are empty or " +
      "blank); to change the template, {fix}",
    { route: route.name, delivery_id: id, target: route.deliver, fix: templateFix(route) },
  );
  return c.json({
    error: EMPTY_MESSAGE_ERROR,
    route: route.name,
    delivery_id: id,
  }, 502);
}

/**
 * Records what became of a held claim (settled, released, parts sent) without changing the
 * answer, which stands (the message went out, the script said no): when the inbox cannot take
 * the write (read-only, gone), that is logged, and the gateway's next start frees the claim.
 */
function recordClaim(deps: ListenerDeps, route: string, id: string, write: () => void): void {
  try {
    write();
  } catch (error) {
    deps.log(
      "error",
      "route {route}: could not record what became of delivery {delivery_id} in the inbox " +
        "({error}); its delivery id stays claimed until the gateway restarts",
      { route, delivery_id: id, error: String(error) },
    );
  }
}

/** How long a delivery id stays claimed, in ms. */
function ttlOf(deps: ListenerDeps): number {
  return deps.settings.idempotencyTtlSeconds * 1000;
}

async function deliverNow(
  deps: ListenerDeps,
  c: Context,
  route: ServedRoute,
  message: string,
  extra: Record<string, unknown>,
  payload: Record<string, unknown>,
  event: string,
  id: string,
): Promise<Response> {
  if (message.trim() === "") return emptyMessage(deps, c, route, id);
  // A sender retrying after a 502 gets the parts of a split message that did not go out, not
  // the ones it already delivered (when it is the same message to the same place).
  const messageKey = createHash("sha256")
    .update(JSON.stringify([route.deliver, extra, message])).digest("hex");
  const skipParts = deps.inbox.partsDelivered(route.name, id, messageKey);
  let sent = skipParts;
  let result: DirectDelivery;
  try {
    result = await deps.deliverDirect(route, message, extra, payload, event, skipParts, (parts) => {
      sent = parts;
      recordClaim(
        deps,
        route.name,
        id,
        () => deps.inbox.recordDirectParts(route.name, id, { messageKey, partsSent: parts }),
      );
    });
  } catch (error) {
    // Answered 500 by onError: the sender's retry resumes after the parts that went out.
    recordClaim(
      deps,
      route.name,
      id,
      () => deps.inbox.release(route.name, id, { messageKey, partsSent: sent, atMs: deps.now() }),
    );
    throw error;
  }
  if (result.ok) {
    recordClaim(deps, route.name, id, () => deps.inbox.settle(route.name, id));
    deps.log("info", "route {route}: direct delivery {delivery_id} went to {where}", {
      route: route.name,
      delivery_id: id,
      where: result.detail ?? route.deliver,
    });
    return c.json({
      status: "delivered",
      route: route.name,
      target: route.deliver,
      delivery_id: id,
    });
  }
  recordClaim(deps, route.name, id, () =>
    deps.inbox.release(route.name, id, {
      messageKey,
      partsSent: result.partsSent ?? skipParts,
      atMs: deps.now(),
    }));
  deps.log(
    DELIVERY_FAILED_LOG_LEVEL,
    "route {route}: direct delivery {delivery_id} to {target} failed: {error}",
    {
      route: route.name,
      delivery_id: id,
      target: route.deliver,
      error: result.error,
    },
  );
  // The reason can name API roots and settings of this machine: it goes to the log only.
  return c.json({
    error: `delivery to ${route.deliver} ${DELIVERY_FAILED_ERROR_END}`,
    route: route.name,
    delivery_id: id,
  }, 502);
}
