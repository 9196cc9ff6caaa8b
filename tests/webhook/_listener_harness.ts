/**
 * The listener of src/webhook/listener.ts built in process against the real inbox and route table,
 * with a recorded script runner and direct delivery: shared by the listener's tests.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Inbox } from "../../src/gateway/inbox.ts";
import { ResilientServer } from "../../src/gateway/listen.ts";
import {
  createWebhookApp,
  type DirectDelivery,
  type ListenerDeps,
  type ScriptVerdict,
} from "../../src/webhook/listener.ts";
import { RouteTable } from "../../src/webhook/route_table.ts";
import { routeFromRaw } from "../../src/webhook/routes.ts";
import { githubSignature } from "../../src/webhook/signatures.ts";

/** The secret of the routes {@linkcode route} makes. */
export const SECRET = "route-secret";
/** The harness's clock, unless told another. */
export const NOW = 1_700_000_000_000;

export interface Harness extends AsyncDisposable {
  app: ReturnType<typeof createWebhookApp>;
  inbox: Inbox;
  inboxPath: string;
  subscriptions: string;
  delivered: { message: string; extra: Record<string, unknown> }[];
  /** The parts each direct delivery was told to skip (sent by an earlier try). */
  skipped: number[];
  scripts: string[];
  accepted: number;
  logs: string[];
  post(
    route: string,
    body: string,
    headers?: Record<string, string>,
  ): Promise<Response>;
  signed(route: string, payload: unknown, headers?: Record<string, string>): Promise<Response>;
  /**
   * Serves the app on 127.0.0.1 as the gateway does (a port the system picks); stopped with the
   * harness. Returns the port.
   */
  serve(): number;
}

/** A listener app with its own temporary inbox and subscriptions file; disposed with `await using`. */
export async function harness(
  options: {
    routes?: Record<string, unknown>;
    script?: ScriptVerdict;
    /** The script runner throws this instead of answering. */
    scriptError?: Error;
    delivery?: DirectDelivery;
    /** Direct deliveries wait for this before they answer. */
    deliveryGate?: Promise<void>;
    /** Direct deliveries say that this many parts went out before they wait for the gate. */
    partsSentBeforeGate?: number;
    maxBodyBytes?: number;
    bodyTimeoutSeconds?: number;
    rate?: number;
    now?: () => number;
    /** Wraps the real inbox the listener uses. */
    wrapInbox?: (inbox: Inbox) => Inbox;
    /** Events are committed on the inbox's writer thread, as in the gateway. */
    writerThread?: boolean;
    /** Whether the gateway is stopping. */
    stopping?: () => boolean;
    /** `INSECURE_NO_AUTH` and the bind host (routes without a secret take unsigned requests). */
    insecureNoAuth?: boolean;
    host?: string;
  } = {},
): Promise<Harness> {
  const dir = await Deno.makeTempDir();
  const subscriptions = join(dir, "webhook_subscriptions.json");
  const staticRoutes = Object.entries(options.routes ?? {}).map(([name, raw]) => {
    const { route, problems } = routeFromRaw(name, raw, "static", name);
    assert.deepEqual(problems, []);
    return route!;
  });
  const inbox = Inbox.open(join(dir, "inbox.sqlite3"), { writerThread: options.writerThread });
  const logs: string[] = [];
  let server: ResilientServer | undefined;
  const h = {
    inbox,
    subscriptions,
    delivered: [] as Harness["delivered"],
    skipped: [] as number[],
    scripts: [] as string[],
    accepted: 0,
    logs,
  } as Harness;
  const deps: ListenerDeps = {
    settings: {
      secret: undefined,
      host: options.host,
      insecureNoAuth: options.insecureNoAuth ?? false,
      maxBodyBytes: options.maxBodyBytes ?? 1024,
      bodyTimeoutSeconds: options.bodyTimeoutSeconds ?? 30,
      rateLimit: { requests: options.rate ?? 100, windowSeconds: 60 },
      idempotencyTtlSeconds: 3600,
    },
    routes: new RouteTable({ file: subscriptions, staticRoutes, report: (p) => logs.push(p) }),
    inbox: options.wrapInbox?.(inbox) ?? inbox,
    now: options.now ?? (() => NOW),
    runScript: (route) => {
      h.scripts.push(route.name);
      if (options.scriptError) return Promise.reject(options.scriptError);
      return Promise.resolve(options.script ?? { kind: "ignored", reason: "empty" });
    },
    deliverDirect: async (_route, message, extra, _payload, _event, skipParts, onPartSent) => {
      h.delivered.push({ message, extra });
      h.skipped.push(skipParts);
      if (options.partsSentBeforeGate) onPartSent(options.partsSentBeforeGate);
      await options.deliveryGate;
      return options.delivery ?? { ok: true };
    },
    onAccepted: () => h.accepted++,
    stopping: options.stopping,
    log: (level, message, properties) =>
      logs.push(`${level}: ${message} ${JSON.stringify(properties)}`),
  };
  h.app = createWebhookApp(deps);
  h.post = async (route, body, headers = {}) =>
    await h.app.fetch(
      new Request(`http://localhost/webhooks/${route}`, {
        method: "POST",
        body,
        headers: { "content-type": "application/json", ...headers },
      }),
    );
  h.signed = async (route, payload, headers = {}) => {
    const body = JSON.stringify(payload);
    return await h.post(route, body, {
      "x-hub-signature-256": githubSignature(SECRET, body),
      ...headers,
    });
  };
  h.serve = () => {
    server = new ResilientServer({ hostname: "127.0.0.1", port: 0 }, h.app.fetch);
    return server.addr.port;
  };
  h.inboxPath = join(dir, "inbox.sqlite3");
  h[Symbol.asyncDispose] = async () => {
    await server?.shutdown();
    inbox.close();
    await Deno.remove(dir, { recursive: true });
  };
  return h;
}

/** A static route's raw config: signed with {@linkcode SECRET}, delivered to the log. */
export function route(extra: Record<string, unknown> = {}) {
  return { secret: SECRET, prompt: "Issue {issue.title}", deliver: "log", ...extra };
}

let goodEvents = 0;

/** Asserts that the listener still accepts a good event: one signed for route `name`, 202. */
export async function assertServing(h: Harness, name: string): Promise<void> {
  const id = `good-${++goodEvents}`;
  const response = await h.signed(name, { issue: { title: id } }, { "x-github-delivery": id });
  const text = await response.text();
  assert.equal(response.status, 202, `a good event to ${name} after a refusal: ${text}`);
}
