/**
 * The gateway's webhook listener served in-process on a free port of 127.0.0.1, for CLI tests of
 * `agent webhook test` (no agent runs, scripts or deliveries behind it).
 *
 * @module
 */
import { join } from "node:path";
import { Inbox } from "../../src/gateway/inbox.ts";
import { createWebhookApp, type ListenerDeps } from "../../src/webhook/listener.ts";
import type { Route } from "../../src/webhook/routes.ts";
import { RouteTable } from "../../src/webhook/route_table.ts";
import { type TempHome, tempHome } from "./_helpers.ts";

/** A running listener: its port and inbox; `stop` (or disposal) shuts it down. */
export interface TestListener extends AsyncDisposable {
  port: number;
  inbox: Inbox;
  /** Stops listening (the inbox stays open until disposal). */
  stop(): Promise<void>;
}

/** What a test listener's routes meet behind it; by default every direct delivery succeeds. */
export interface ListenerBehind {
  /** Default: rejects (no scripts here). */
  runScript?: ListenerDeps["runScript"];
  /** Default: delivered. */
  deliverDirect?: ListenerDeps["deliverDirect"];
}

/** Serves `home`'s subscriptions and `staticRoutes`, checked with the global `secret`. */
export function startListener(
  home: string,
  options: { staticRoutes?: Route[]; secret?: string } & ListenerBehind = {},
): TestListener {
  const inbox = Inbox.open(join(home, "gateway", "inbox.sqlite3"));
  const app = createWebhookApp({
    settings: {
      secret: options.secret,
      maxBodyBytes: 1 << 20,
      bodyTimeoutSeconds: 30,
      insecureNoAuth: false,
      rateLimit: { requests: 30, windowSeconds: 60 },
      idempotencyTtlSeconds: 3600,
    },
    routes: new RouteTable({
      file: join(home, "webhook_subscriptions.json"),
      staticRoutes: options.staticRoutes ?? [],
      report: () => {},
    }),
    inbox,
    now: Date.now,
    runScript: options.runScript ?? (() => Promise.reject(new Error("no scripts here"))),
    deliverDirect: options.deliverDirect ?? (() => Promise.resolve({ ok: true })),
    onAccepted: () => {},
    log: () => {},
  });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, app.fetch);
  let stopped: Promise<void> | undefined;
  const stop = () => stopped ??= server.shutdown();
  return {
    port: server.addr.port,
    inbox,
    stop,
    [Symbol.asyncDispose]: async () => {
      await stop();
      inbox.close();
    },
  };
}

/** A temp `<home>` served by a {@linkcode TestListener}. */
export interface ListeningHome extends TempHome {
  listener: TestListener;
  /** What `agent webhook` commands need to reach the listener (its port, webhooks enabled). */
  env: Record<string, string>;
}

/** Makes a temp `<home>` and serves it; use with `await using` (stops, then removes the home). */
export async function listeningHome(behind: ListenerBehind = {}): Promise<ListeningHome> {
  const home = await tempHome();
  const listener = startListener(home.home, behind);
  return {
    ...home,
    listener,
    env: { WEBHOOK_PORT: String(listener.port), WEBHOOK_ENABLED: "true" },
    [Symbol.asyncDispose]: async () => {
      await listener[Symbol.asyncDispose]();
      await home[Symbol.asyncDispose]();
    },
  };
}
