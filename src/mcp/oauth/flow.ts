/**
 * The interactive OAuth login of one server (`agent mcp login <server>`): choose the callback
 * port (pinned when the login may present the client metadata document, random otherwise),
 * connect, and whenever the SDK asks for an authorization print the URL, open the browser, wait
 * up to five minutes for the redirect on 127.0.0.1, check its `state`, exchange the code and try
 * again. A document refused at the token endpoint (`invalid_client`) is recorded and the login
 * starts over once with dynamic client registration.
 *
 * @module
 */
import {
  computeScopeUnion,
  StreamableHTTPClientTransport,
  type Tool,
} from "@modelcontextprotocol/client";
import type { McpServerConfig, OAuthSettings } from "../config.ts";
import { type ConnectOptions, connectServer, type McpConnection } from "../connect.ts";
import { McpServerError, messageOf } from "../errors.ts";
import { httpAccessFor } from "../http.ts";
import { type CallbackListener, startCallbackListener } from "./callback.ts";
import { CALLBACK_PATH } from "./metadata_url.ts";
import {
  type CallbackPortPool,
  type LoginDriver,
  type PinningFacts,
  pinningObstacle,
  processCallbackPorts,
} from "./ports.ts";
import { type AuthorizationDriver, McpOAuthProvider, oauthFailure } from "./provider.ts";
import { OAuthStore } from "./store.ts";

/** How long a login waits for the browser's redirect: five minutes. */
export const LOGIN_TIMEOUT_MS = 5 * 60_000;

/** Authorizations one step (connect, list, call) may ask for before it gives up. */
const MAX_AUTHORIZATIONS_PER_STEP = 2;

/** What a login needs from the outside world. */
export interface LoginOptions
  extends Pick<ConnectOptions, "clientInfo" | "processEnv" | "processEnvNames"> {
  /** `<home>/mcp-tokens`. */
  tokenDir: string;
  /** Shows progress to the user (the authorization URL is always shown). */
  print: (text: string) => void;
  /** Opens a URL in the browser; failures are ignored (the URL is printed). Default {@linkcode openInBrowser}. */
  openBrowser?: (url: string) => void | Promise<void>;
  /** The wait for the redirect, in ms (default five minutes). */
  timeoutMs?: number;
  /** Waits `ms` (or until `signal` aborts); injectable so tests need no real five minutes. */
  wait?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** The pinned-port pool (default: the process's). */
  ports?: CallbackPortPool;
  /** Who drives the login (default `cli`); a dashboard or desktop never pins a port. */
  driver?: LoginDriver;
  /** Clear the server's four records first (default true, as `agent mcp login` does). */
  clear?: boolean;
  /** Cancels the login (Ctrl-C). */
  signal?: AbortSignal;
  /** Clock (ms since epoch) for token expiry. */
  now?: () => number;
  /** Receives things worth logging (a refused client metadata document). */
  onWarning?: (message: string) => void;
}

/** How the client identified itself to the authorization server. */
export type ClientIdentification = "cimd" | "dcr" | "pre_registered" | "none";

/** What a login did. */
export interface LoginOutcome {
  server: string;
  /** `cimd` (the document URL), `dcr` (registered), `pre_registered`, or `none` (no OAuth asked). */
  client: ClientIdentification;
  /** The redirect URI of the (last) login round. */
  redirectUri: string;
  /** Whether the callback port was one of the pinned ones. */
  pinned: boolean;
  /** Why no port was pinned, when none was. */
  pinningObstacle?: string;
  /** Whether the document was refused and the login went on with registration. */
  cimdRejected: boolean;
  /** Authorizations completed in the browser. */
  authorizations: number;
  /** Whether tokens are stored now. */
  loggedIn: boolean;
  /** `<home>/mcp-tokens/<server>.json`. */
  tokensFile: string;
  /** The server's tools (as it lists them, before filtering). */
  toolCount: number;
}

/** A connection obtained by a login, still able to ask for authorizations (scope step-up). */
export interface AuthorizedSession {
  readonly connection: McpConnection;
  readonly tools: Tool[];
  readonly outcome: LoginOutcome;
  /** Runs `operation`, completing any authorization it asks for (at most two) and retrying. */
  authorized<T>(operation: () => Promise<T>): Promise<T>;
  /** Closes the connection and any callback listener. */
  close(): Promise<void>;
}

/**
 * Runs the login of `config`'s server and closes the connection it made.
 *
 * @param config An `auth: oauth` HTTP server.
 * @param options Token folder, output, browser and waits.
 * @returns What happened; throws an {@linkcode McpServerError} naming the server when it failed.
 *
 * @example
 * ```ts ignore
 * const outcome = await loginMcpServer(server, {
 *   tokenDir: `${home}/mcp-tokens`,
 *   clientInfo: { name: "agent", version: "1.0.0" },
 *   processEnv: (name) => Deno.env.get(name),
 *   print: (text) => console.error(text),
 * });
 * console.log(`${outcome.toolCount} tools`);
 * ```
 */
export async function loginMcpServer(
  config: McpServerConfig,
  options: LoginOptions,
): Promise<LoginOutcome> {
  const session = await openAuthorizedSession(config, options);
  await session.close();
  return session.outcome;
}

/**
 * Like {@linkcode loginMcpServer}, but keeps the connection open, with
 * {@linkcode AuthorizedSession.authorized} for later calls that may need another authorization.
 *
 * @param config An `auth: oauth` HTTP server.
 * @param options Token folder, output, browser and waits.
 * @returns The session; close it when done.
 *
 * @example
 * ```ts ignore
 * const session = await openAuthorizedSession(server, options);
 * const result = await session.authorized(() =>
 *   session.connection.client.callTool({ name: "search", arguments: {} })
 * );
 * await session.close();
 * ```
 */
export async function openAuthorizedSession(
  config: McpServerConfig,
  options: LoginOptions,
): Promise<AuthorizedSession> {
  if (config.auth !== "oauth" || config.oauth === undefined || config.url === undefined) {
    throw new McpServerError(
      config.name,
      "config",
      "does not use OAuth; add `auth: oauth` to its entry (HTTP servers only)",
    );
  }
  const settings = config.oauth;
  const store = new OAuthStore(options.tokenDir, config.name, options.now);
  // A scope the server asked for and the stored token lacked (403 insufficient_scope).
  const requiredScope = store.requiredScope();
  // The first round's port follows what the records said before they were cleared (SPEC 5).
  let records: StoredFacts | undefined;
  if (options.clear ?? true) {
    // Under the records' lock: a refresh running in another process (the gateway) finishes
    // first, and one starting later finds the tokens gone and writes none.
    await store.withLock(() => {
      records = { ...storedFacts(store), cleared: true };
      store.clear();
      return Promise.resolve();
    });
  }
  let cimdRejected = false;
  for (let attempt = 1;; attempt++) {
    const session = LoginSession.open(config, settings, store, options, records, requiredScope);
    records = undefined;
    let connection: McpConnection | undefined;
    try {
      connection = await session.authorized(() =>
        connectServer(config, {
          clientInfo: options.clientInfo,
          processEnv: options.processEnv,
          processEnvNames: options.processEnvNames,
          signal: options.signal,
          oauth: (_, fetch) => ({
            authProvider: session.provider,
            fetch: session.provider.fetchFor(fetch),
          }),
        })
      );
      const live = connection;
      const tools = await session.authorized(() => listTools(config, live));
      const outcome = outcomeOf(config, settings, store, session, cimdRejected, tools.length);
      return {
        connection: live,
        tools,
        outcome,
        authorized: (operation) => session.authorized(operation),
        close: async () => {
          await live.close();
          await session.close();
        },
      };
    } catch (error) {
      await connection?.close();
      await session.close();
      if (attempt === 1 && session.provider.cimdRejected) {
        cimdRejected = true;
        options.print(
          `The authorization server refused the client metadata document ${settings.clientMetadataUrl} ` +
            `(invalid_client); this is recorded in ${store.path("cimdOff")}. ` +
            "Logging in again with dynamic client registration: authorize once more.\n",
        );
        continue;
      }
      throw asServerError(config, error);
    }
  }
}

/**
 * Opens `url` in the user's browser (`open` on macOS, the URL handler on Windows, `xdg-open`
 * elsewhere) without waiting; a missing opener or a failure is ignored, since the URL is printed.
 *
 * @param url The authorization URL.
 *
 * @example
 * ```ts ignore
 * openInBrowser("https://auth.example.com/authorize?client_id=…");
 * ```
 */
export function openInBrowser(url: string): void {
  const [command, ...args] = Deno.build.os === "darwin"
    ? ["open", url]
    : Deno.build.os === "windows"
    ? ["rundll32", "url.dll,FileProtocolHandler", url]
    : ["xdg-open", url];
  try {
    const child = new Deno.Command(command, {
      args,
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    child.status.catch(() => {});
    child.unref();
  } catch {
    // No opener here (a server, a container): the printed URL is the way.
  }
}

/**
 * Formats a wait for messages: `5 minutes`, `1 minute`, `30 seconds`.
 *
 * @param ms The wait in milliseconds.
 * @returns The wait in words.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { describeWait, LOGIN_TIMEOUT_MS } from "./flow.ts";
 * assert.equal(describeWait(LOGIN_TIMEOUT_MS), "5 minutes");
 * assert.equal(describeWait(90_000), "90 seconds");
 * ```
 */
export function describeWait(ms: number): string {
  if (ms >= 60_000 && ms % 60_000 === 0) {
    const minutes = ms / 60_000;
    return `${minutes} minute${minutes === 1 ? "" : "s"}`;
  }
  const seconds = Math.max(1, Math.round(ms / 1000));
  return `${seconds} second${seconds === 1 ? "" : "s"}`;
}

async function listTools(config: McpServerConfig, connection: McpConnection): Promise<Tool[]> {
  if (!connection.client.getServerCapabilities()?.tools) return [];
  const result = await connection.client.listTools(undefined, {
    timeout: config.connectTimeoutSeconds * 1000,
  });
  return result.tools;
}

function outcomeOf(
  config: McpServerConfig,
  settings: OAuthSettings,
  store: OAuthStore,
  session: LoginSession,
  cimdRejected: boolean,
  toolCount: number,
): LoginOutcome {
  const client = store.readClient();
  const identification: ClientIdentification = settings.clientId !== undefined
    ? "pre_registered"
    : client === undefined
    ? "none"
    : client.client_id === settings.clientMetadataUrl
    ? "cimd"
    : "dcr";
  return {
    server: config.name,
    client: identification,
    redirectUri: session.redirectUrl,
    pinned: session.pinned,
    ...(session.obstacle === undefined ? {} : { pinningObstacle: session.obstacle }),
    cimdRejected,
    authorizations: session.authorizations,
    loggedIn: store.readTokens() !== undefined,
    tokensFile: store.path("tokens"),
    toolCount,
  };
}

function asServerError(config: McpServerConfig, error: unknown): McpServerError {
  const failure = error instanceof McpServerError ? error : oauthFailure(config, error) ??
    new McpServerError(config.name, "protocol", `login failed: ${messageOf(error)}`, {
      cause: error,
    });
  return failure.masked(config.substitutions);
}

/** One login round: its callback port and listener, its provider, and the waits. */
class LoginSession implements AuthorizationDriver {
  readonly provider: McpOAuthProvider;
  readonly redirectUrl: string;
  readonly clientMetadataUrl: string | undefined;
  readonly pinned: boolean;
  readonly obstacle: string | undefined;
  /** Authorizations completed in the browser. */
  authorizations = 0;
  readonly #config: McpServerConfig;
  readonly #options: LoginOptions;
  readonly #port: number;
  readonly #bind: (port: number) => CallbackListener;
  readonly #expected: { state: string | undefined };
  readonly #requiredScope: string | undefined;
  #listener: CallbackListener | undefined;
  #pending = false;
  #presentedDocument = false;

  private constructor(
    config: McpServerConfig,
    store: OAuthStore,
    options: LoginOptions,
    choice: PortChoice,
    requiredScope: string | undefined,
  ) {
    this.#config = config;
    this.#requiredScope = requiredScope;
    this.#options = options;
    this.#listener = choice.listener;
    this.#port = choice.listener.port;
    this.#bind = choice.bind;
    this.#expected = choice.expected;
    this.pinned = choice.pinned;
    this.obstacle = choice.obstacle;
    this.clientMetadataUrl = choice.pinned ? config.oauth!.clientMetadataUrl : undefined;
    this.redirectUrl = config.oauth!.redirectUri ??
      `http://127.0.0.1:${choice.listener.port}${CALLBACK_PATH}`;
    this.provider = new McpOAuthProvider(config, store, {
      driver: this,
      onWarning: options.onWarning,
    });
  }

  /**
   * Chooses and binds the callback port now, before the server's capabilities are known, from
   * `records` (what the records said before the login cleared them) or else the store.
   */
  static open(
    config: McpServerConfig,
    settings: OAuthSettings,
    store: OAuthStore,
    options: LoginOptions,
    records?: StoredFacts,
    requiredScope?: string,
  ): LoginSession {
    const choice = choosePort(config, settings, store, options, records ?? storedFacts(store));
    return new LoginSession(config, store, options, choice, requiredScope);
  }

  state(): string {
    const state = crypto.randomUUID();
    this.#expected.state = state;
    return state;
  }

  authorize(url: URL): void {
    if (this.#listener === undefined || this.#listener.closed) this.#listener = this.#rebind();
    this.#pending = true;
    if (this.#requiredScope !== undefined) {
      const scope = computeScopeUnion(
        url.searchParams.get("scope") ?? undefined,
        this.#requiredScope,
      );
      if (scope) url.searchParams.set("scope", scope);
    }
    if (this.clientMetadataUrl && url.searchParams.get("client_id") === this.clientMetadataUrl) {
      this.#presentedDocument = true;
    }
    const wait = describeWait(this.#options.timeoutMs ?? LOGIN_TIMEOUT_MS);
    this.#options.print(
      `MCP server '${this.#config.name}' needs your authorization. Open this URL in a browser ` +
        `(one is opened for you when possible):\n\n  ${url.href}\n\n` +
        `Waiting up to ${wait} for the redirect to ${this.redirectUrl} …\n`,
    );
    const open = this.#options.openBrowser ?? openInBrowser;
    try {
      Promise.resolve(open(url.href)).catch(() => {});
    } catch {
      // The URL is printed; that is enough.
    }
  }

  /** Runs `operation`, completing the authorizations it asks for, and retries it. */
  async authorized<T>(operation: () => Promise<T>): Promise<T> {
    for (let round = 0;; round++) {
      try {
        return await operation();
      } catch (error) {
        if (!this.#pending) throw error;
        if (round >= MAX_AUTHORIZATIONS_PER_STEP) {
          await this.#stopWaiting();
          throw error;
        }
        const params = await this.#awaitRedirect();
        await this.#finish(params);
      }
    }
  }

  async close(): Promise<void> {
    await this.#stopWaiting();
  }

  async #awaitRedirect(): Promise<URLSearchParams> {
    const listener = this.#listener!;
    const timeoutMs = this.#options.timeoutMs ?? LOGIN_TIMEOUT_MS;
    const wait = this.#options.wait ?? sleep;
    const stop = new AbortController();
    const signal = this.#options.signal;
    let onAbort = () => {};
    const cancelled = new Promise<never>((_, reject) => {
      onAbort = () =>
        reject(new McpServerError(this.#config.name, "closed", "the login was cancelled"));
      if (signal?.aborted) onAbort();
      signal?.addEventListener("abort", onAbort, { once: true });
    });
    try {
      const outcome = await Promise.race([
        listener.redirect.then((params) => ({ params })),
        wait(timeoutMs, stop.signal).then(() => ({ params: undefined })),
        cancelled,
      ]);
      if (outcome.params === undefined) {
        throw new McpServerError(this.#config.name, "auth", this.#timeoutMessage(timeoutMs));
      }
      return outcome.params;
    } finally {
      stop.abort();
      signal?.removeEventListener("abort", onAbort);
      cancelled.catch(() => {});
      await this.#stopWaiting();
    }
  }

  /** Exchanges the code of `params` (the SDK checks `iss`, reads `code` or `error`). */
  async #finish(params: URLSearchParams): Promise<void> {
    const access = httpAccessFor(this.#config);
    try {
      const transport = new StreamableHTTPClientTransport(new URL(this.#config.url!), {
        authProvider: this.provider,
        fetch: this.provider.fetchFor(access.fetch),
      });
      await transport.finishAuth(params);
      this.authorizations++;
    } catch (error) {
      throw oauthFailure(this.#config, error) ??
        new McpServerError(
          this.#config.name,
          "auth",
          `the authorization could not be completed: ${messageOf(error)}`,
          { cause: error },
        );
    } finally {
      access[Symbol.dispose]();
    }
  }

  async #stopWaiting(): Promise<void> {
    this.#pending = false;
    this.#expected.state = undefined;
    const listener = this.#listener;
    this.#listener = undefined;
    await listener?.close();
  }

  /** The same port again, for a later authorization of this session (scope step-up). */
  #rebind(): CallbackListener {
    const pool = this.#options.ports ?? processCallbackPorts;
    try {
      return this.pinned ? pool.rebind(this.#port, this.#bind) : this.#bind(this.#port);
    } catch (error) {
      throw new McpServerError(
        this.#config.name,
        "auth",
        `the OAuth callback port ${this.#port} is no longer free (${
          messageOf(error)
        }); close the program using it and run \`agent mcp login ${this.#config.name}\` again`,
      );
    }
  }

  #timeoutMessage(timeoutMs: number): string {
    const name = this.#config.name;
    const base = `no authorization arrived within ${describeWait(timeoutMs)}.`;
    if (this.#presentedDocument) {
      return `${base} If the browser showed an invalid-client error, the authorization server ` +
        `could not fetch or accept the client metadata document ${this.clientMetadataUrl}. Set ` +
        `\`cimd: false\` under mcp_servers.${name}.oauth in config.yaml to use dynamic client ` +
        `registration instead (or fix the document), then run \`agent mcp login ${name}\` again`;
    }
    return `${base} Run \`agent mcp login ${name}\` again and finish the authorization in the browser`;
  }
}

/** The callback port of a login round, bound. */
interface PortChoice {
  listener: CallbackListener;
  bind: (port: number) => CallbackListener;
  expected: { state: string | undefined };
  pinned: boolean;
  obstacle?: string;
}

/** What the server's records tell the port choice. */
type StoredFacts = Pick<PinningFacts, "storedClientId" | "cimdOff" | "cachedMetadata" | "cleared">;

function storedFacts(store: OAuthStore): StoredFacts {
  return {
    storedClientId: store.readClient()?.client_id,
    cimdOff: store.isCimdOff(),
    cachedMetadata: store.readDiscovery()?.authorizationServerMetadata,
  };
}

/**
 * Pinned when nothing rules it out and a pinned port is free; otherwise the configured port
 * (`redirect_uri` / `redirect_port`), the port of a stored registration, or a random one.
 */
function choosePort(
  config: McpServerConfig,
  settings: OAuthSettings,
  store: OAuthStore,
  options: LoginOptions,
  records: StoredFacts,
): PortChoice {
  const pool = options.ports ?? processCallbackPorts;
  const expected: { state: string | undefined } = { state: undefined };
  const path = settings.redirectUri ? new URL(settings.redirectUri).pathname : CALLBACK_PATH;
  const bind = (port: number) =>
    startCallbackListener({ port, path, expectedState: () => expected.state });
  let obstacle = pinningObstacle({ settings, driver: options.driver ?? "cli", ...records });
  if (obstacle === undefined) {
    const listener = pool.claim(bind);
    if (listener) return { listener, bind, expected, pinned: true };
    obstacle = `all pinned callback ports (${pool.ports.join(", ")}) are in use`;
  }
  const fixed = settings.redirectPort ??
    (settings.redirectUri ? Number(new URL(settings.redirectUri).port) : undefined);
  if (fixed !== undefined) {
    try {
      return { listener: bind(fixed), bind, expected, pinned: false, obstacle };
    } catch (error) {
      if (!(error instanceof Deno.errors.AddrInUse)) throw error;
      const key = settings.redirectUri ? "redirect_uri" : "redirect_port";
      throw new McpServerError(
        config.name,
        "config",
        `the OAuth callback port ${fixed} (oauth.${key}) is in use; close the program using it or choose another port`,
      );
    }
  }
  const registered = registeredPort(store.readClient());
  if (registered !== undefined) {
    try {
      const listener = pool.ports.includes(registered)
        ? pool.rebind(registered, bind)
        : bind(registered);
      return { listener, bind, expected, pinned: false, obstacle };
    } catch (error) {
      if (!(error instanceof Deno.errors.AddrInUse)) throw error;
    }
  }
  return { listener: bind(0), bind, expected, pinned: false, obstacle };
}

/** The port of a stored registration's loopback `/callback` redirect URI (it is bound to it). */
function registeredPort(client: unknown): number | undefined {
  const uris = (client as { redirect_uris?: unknown } | undefined)?.redirect_uris;
  if (!Array.isArray(uris)) return undefined;
  for (const uri of uris) {
    try {
      const url = new URL(String(uri));
      if (
        url.protocol === "http:" && ["127.0.0.1", "localhost"].includes(url.hostname) &&
        url.pathname === CALLBACK_PATH && url.port !== ""
      ) return Number(url.port);
    } catch {
      // not a URL
    }
  }
  return undefined;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}
