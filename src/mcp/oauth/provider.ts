/**
 * The SDK's `OAuthClientProvider` for one `auth: oauth` server, on the records of
 * {@linkcode OAuthStore}. Discovery, PKCE, the choice between the client metadata document and
 * dynamic client registration, the code exchange and refresh are the SDK's; this class supplies
 * storage, client identity, the browser step (through an {@linkcode AuthorizationDriver}) and
 * two token-endpoint policies: `oauth.user_agent`, and the `<server>.cimd-off` record when the
 * token endpoint answers `invalid_client` for the document URL.
 *
 * Without a driver (the gateway, and any connect not started by a login) the provider never
 * starts a login: it fails with {@linkcode OAuthLoginRequired}, whose message names
 * `agent mcp login <server>`.
 *
 * @module
 */
import {
  type AuthorizationServerMetadata,
  extractWWWAuthenticateParams,
  OAuthClientFlowError,
  type OAuthClientInformationContext,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  OAuthError,
  SdkHttpError,
  type StoredOAuthClientInformation,
  type StoredOAuthTokens,
  UnauthorizedError,
} from "@modelcontextprotocol/client";
import type { McpServerConfig, OAuthSettings } from "../config.ts";
import { McpServerError, messageOf, quotedServerText } from "../errors.ts";
import type { FetchFunction } from "../http.ts";
import { CALLBACK_PATH, DEFAULT_CLIENT_METADATA_URL } from "./metadata_url.ts";
import { PINNED_CALLBACK_PORTS, pinningObstacle } from "./ports.ts";
import { OAuthStore } from "./store.ts";
import { quietSdkOAuthWarnings } from "./_sdk_console.ts";

/** The client name sent with dynamic client registration unless `oauth.client_name` says otherwise. */
export const DEFAULT_CLIENT_NAME = "agent";

/** The interactive part of a login: where the browser comes back to, and how it is sent off. */
export interface AuthorizationDriver {
  /** The redirect URI of this login (`http://127.0.0.1:<port>/callback`). */
  readonly redirectUrl: string;
  /** The client metadata document URL when this login may present it (a pinned port). */
  readonly clientMetadataUrl: string | undefined;
  /** A fresh `state` for the next authorization request. */
  state(): string;
  /** Shows the authorization URL (and opens the browser); does not wait for the redirect. */
  authorize(url: URL): void | Promise<void>;
}

/** A connect needs a login the user has to run: the message names `agent mcp login <server>`. */
export class OAuthLoginRequired extends Error {
  /** The server's configured name. */
  readonly server: string;

  constructor(server: string, reason: string) {
    super(`${reason}; run \`agent mcp login ${server}\``);
    this.name = "OAuthLoginRequired";
    this.server = server;
  }
}

/** Options of {@linkcode McpOAuthProvider}. */
export interface McpOAuthProviderOptions {
  /** The browser step; absent = non-interactive (a needed login fails with {@linkcode OAuthLoginRequired}). */
  driver?: AuthorizationDriver;
  /** Receives things worth logging (a refused client metadata document). */
  onWarning?: (message: string) => void;
}

/**
 * `OAuthClientProvider` of one server.
 *
 * @example A non-interactive provider refuses to start a login
 * ```ts
 * import assert from "node:assert/strict";
 * import { McpOAuthProvider, OAuthLoginRequired } from "./provider.ts";
 * import { OAuthStore } from "./store.ts";
 * const dir = await Deno.makeTempDir();
 * const config = {
 *   name: "api",
 *   url: "https://mcp.example.com/mcp",
 *   auth: "oauth",
 *   oauth: { clientMetadataUrl: "https://example.com/client.json", cimd: true },
 * } as const;
 * const provider = new McpOAuthProvider(config, new OAuthStore(dir, "api"));
 * assert.throws(() => provider.clientInformation(), OAuthLoginRequired);
 * assert.throws(() => provider.redirectToAuthorization(new URL("https://as.example.com/authorize")), /agent mcp login api/);
 * ```
 */
export class McpOAuthProvider implements OAuthClientProvider {
  /** The server's records. */
  readonly store: OAuthStore;
  /** Whether the token endpoint refused the client metadata document while this provider ran. */
  cimdRejected = false;
  readonly #server: string;
  readonly #configFile: string | undefined;
  readonly #settings: OAuthSettings;
  readonly #driver: AuthorizationDriver | undefined;
  readonly #warn: (message: string) => void;
  #verifier: string | undefined;
  #tokensDiscarded = false;
  /** A refresh found the stored tokens removed (by a login in another process, say). */
  #tokensRemoved = false;
  /** The scope of the last 403 `insufficient_scope` challenge not yet authorized. */
  #insufficientScope: string | undefined;
  /**
   * What the last token request presented, when the authorization server refused it (400/401):
   * the credentials the SDK's {@linkcode McpOAuthProvider.invalidateCredentials} then means.
   */
  #refused: { clientId?: string; refreshToken?: string } | undefined;

  constructor(
    config: Pick<McpServerConfig, "name" | "oauth" | "configFile">,
    store: OAuthStore,
    options: McpOAuthProviderOptions = {},
  ) {
    this.#server = config.name;
    this.#configFile = config.configFile;
    this.#settings = config.oauth ?? { clientMetadataUrl: DEFAULT_CLIENT_METADATA_URL, cimd: true };
    this.store = store;
    this.#driver = options.driver;
    this.#warn = options.onWarning ?? (() => {});
    // The SDK's own "[mcp-sdk] OAuth …" console lines would repeat what this provider reports.
    quietSdkOAuthWarnings();
  }

  /**
   * The redirect URI: the login's; without one, the registered one (never used to redirect, but
   * the SDK needs one to recognise an authorization-code client).
   */
  get redirectUrl(): string {
    if (this.#driver) return this.#driver.redirectUrl;
    const registered = (this.store.readClient() as { redirect_uris?: unknown } | undefined)
      ?.redirect_uris;
    const first = Array.isArray(registered) ? registered[0] : undefined;
    return typeof first === "string" ? first : this.#settings.redirectUri ??
      `http://127.0.0.1:${this.#settings.redirectPort ?? PINNED_CALLBACK_PORTS[0]}${CALLBACK_PATH}`;
  }

  /** The document URL, only while a login may present it (the SDK then uses it as `client_id`). */
  get clientMetadataUrl(): string | undefined {
    return this.#driver?.clientMetadataUrl;
  }

  /** What dynamic client registration sends. */
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.#settings.clientName ?? DEFAULT_CLIENT_NAME,
      redirect_uris: [this.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: this.#settings.tokenEndpointAuthMethod ?? "none",
    };
  }

  state(): string {
    return this.#driver?.state() ?? crypto.randomUUID();
  }

  clientInformation(
    context?: OAuthClientInformationContext,
  ): StoredOAuthClientInformation | undefined {
    const settings = this.#settings;
    if (settings.clientId !== undefined) {
      return {
        client_id: settings.clientId,
        ...(settings.clientSecret === undefined ? {} : { client_secret: settings.clientSecret }),
        ...(settings.tokenEndpointAuthMethod === undefined
          ? {}
          : { token_endpoint_auth_method: settings.tokenEndpointAuthMethod }),
        ...(context?.issuer === undefined ? {} : { issuer: context.issuer }),
      };
    }
    const stored = this.store.readClient();
    if (stored) {
      // The document identity goes with the pinned redirect URIs it declares: a login on another
      // port registers instead.
      const isDocument = stored.client_id === settings.clientMetadataUrl;
      if (this.#driver && isDocument && this.#driver.clientMetadataUrl !== stored.client_id) {
        return undefined;
      }
      return stored;
    }
    if (!this.#driver) {
      throw new OAuthLoginRequired(
        this.#server,
        this.#documentRefused()
          ? this.#documentRefusedReason()
          : "not logged in (no OAuth client is stored)",
      );
    }
    return undefined;
  }

  /**
   * Whether the document was refused, now or by an earlier run (`<server>.cimd-off`), and a
   * login would present it again (not when the settings now choose dynamic registration).
   */
  #documentRefused(): boolean {
    if (this.cimdRejected) return true;
    const settings = this.#settings;
    return this.store.isCimdOff() &&
      pinningObstacle({ settings, driver: "cli", cimdOff: false }) === undefined;
  }

  /** Why no client is stored after a refused document, and what a new login will do. */
  #documentRefusedReason(): string {
    const refused = `not logged in, as the authorization server refused the client metadata ` +
      `document ${this.#settings.clientMetadataUrl} (invalid_client; recorded in ${
        this.store.path("cimdOff")
      }) and no OAuth client is stored. `;
    // What `agent mcp login` decides from these records once it has cleared them.
    const obstacle = pinningObstacle({
      settings: this.#settings,
      driver: "cli",
      cimdOff: true,
      cachedMetadata: this.store.readDiscovery()?.authorizationServerMetadata,
      cleared: true,
    });
    if (obstacle !== undefined) {
      return `${refused}A new login registers the client dynamically, as ${obstacle}`;
    }
    const where = this.#configFile === undefined ? "" : ` in ${this.#configFile}`;
    return `${refused}A new login tries the document again, then registers the client ` +
      `dynamically (set mcp_servers.${this.#server}.oauth.cimd to false${where} to register ` +
      "dynamically at once)";
  }

  saveClientInformation(client: StoredOAuthClientInformation): void {
    this.store.writeClient(client);
  }

  tokens(): StoredOAuthTokens | undefined {
    return this.store.readTokens();
  }

  /**
   * Saves tokens under the records' lock, so a refresh in another process cannot write between.
   * Without a login (a refresh's answer, an issuer added) only while the file still holds them:
   * tokens a login removed or replaced meanwhile stay so.
   */
  async saveTokens(tokens: StoredOAuthTokens): Promise<void> {
    await this.store.withLock(() => {
      if (this.#driver || this.store.readTokens()?.access_token === tokens.access_token) {
        this.store.writeTokens(tokens);
      }
      return Promise.resolve();
    });
  }

  redirectToAuthorization(url: URL): void | Promise<void> {
    const stepUp = this.#insufficientScope;
    this.#insufficientScope = undefined;
    if (this.#driver) return this.#driver.authorize(url);
    if (stepUp !== undefined && !this.#tokensDiscarded && this.store.readTokens()) {
      // The SDK asks for what the token had plus what the server wants: the next login does too.
      const wanted = url.searchParams.get("scope");
      if (wanted) this.store.writeRequiredScope(wanted);
      throw new OAuthLoginRequired(
        this.#server,
        `the server needs the OAuth scope ${
          quotedServerText(stepUp)
        } (403 insufficient_scope), which the stored token does not grant; a new login asks for it`,
      );
    }
    throw new OAuthLoginRequired(
      this.#server,
      this.#tokensDiscarded
        ? "the OAuth token refresh failed, so the stored tokens were discarded and a new login is needed"
        : this.#tokensRemoved && this.store.readTokens() === undefined
        ? "not logged in, as its stored OAuth tokens were removed while they were being " +
          "refreshed (by a new login, say)"
        : this.store.readTokens()
        ? "the stored OAuth tokens were refused and could not be refreshed, so a new login is needed"
        : "not logged in (no OAuth tokens are stored)",
    );
  }

  saveCodeVerifier(verifier: string): void {
    this.#verifier = verifier;
  }

  codeVerifier(): string {
    if (this.#verifier === undefined) {
      throw new Error("no PKCE code verifier: the authorization was not started by this login");
    }
    return this.#verifier;
  }

  /**
   * Deletes credentials the authorization server refused (the SDK calls this on
   * `invalid_client`, `unauthorized_client`, `invalid_grant`). Under the records' lock, as a
   * refresh is, and only while the records still hold what was refused: another process may have
   * refreshed the tokens or logged in again since the refusal, and its records stay.
   */
  async invalidateCredentials(
    scope: "all" | "client" | "tokens" | "verifier" | "discovery",
  ): Promise<void> {
    if (scope === "verifier" || scope === "all") this.#verifier = undefined;
    if (scope === "verifier") return;
    await this.store.withLock(() => {
      if (scope === "client" || scope === "all") this.#discardRefusedClient();
      if (scope === "tokens" || scope === "all") this.#discardRefusedTokens();
      if (scope === "discovery" || scope === "all") this.store.remove("meta");
      return Promise.resolve();
    });
  }

  /** Removes the stored client, unless it is another one than the refused token request's. */
  #discardRefusedClient(): void {
    const refused = this.#refused?.clientId;
    const stored = this.store.readClient();
    if (stored !== undefined && refused !== undefined && stored.client_id !== refused) return;
    this.store.remove("client");
  }

  /** Removes the stored tokens, unless they are others than the ones whose refresh was refused. */
  #discardRefusedTokens(): void {
    const refused = this.#refused?.refreshToken;
    const stored = this.store.readTokens();
    if (stored !== undefined && refused !== undefined && stored.refresh_token !== refused) return;
    this.store.remove("tokens");
    this.#tokensDiscarded = true;
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.store.readDiscovery();
  }

  /**
   * Saves the discovery state, refusing an authorization server whose metadata does not declare
   * PKCE S256 (`code_challenge_methods_supported`): the MCP authorization spec says a client
   * must not proceed with it.
   */
  saveDiscoveryState(state: OAuthDiscoveryState): void {
    const metadata = state.authorizationServerMetadata;
    if (metadata !== undefined && !supportsS256(metadata)) {
      const declared = metadata.code_challenge_methods_supported;
      throw new McpServerError(
        this.#server,
        "auth",
        `the authorization server ${quotedServerText(String(metadata.issuer))} ${
          declared === undefined
            ? "does not declare PKCE support (no code_challenge_methods_supported in its metadata)"
            : `does not support PKCE S256 (code_challenge_methods_supported: ${
              quotedServerText(declared.join(" "))
            })`
        }; OAuth for MCP requires PKCE with S256, so no login is attempted. Ask the server's operator to enable it`,
      );
    }
    this.store.writeDiscovery(state);
  }

  /**
   * `base` with the token-endpoint policies: on token requests (a form POST with `grant_type`:
   * code exchange and refresh) the `oauth.user_agent` header, and the `<server>.cimd-off` record
   * when the answer is 400/401 `invalid_client` for the document URL. Every other request (MCP
   * traffic, discovery, registration) passes unchanged.
   *
   * @param base The fetch of the server's HTTP access (headers, TLS).
   * @returns The fetch for the transport.
   */
  fetchFor(base: FetchFunction): FetchFunction {
    return async (input, init) => {
      const body = init?.body;
      const isTokenRequest = (init?.method ?? "GET").toUpperCase() === "POST" &&
        body instanceof URLSearchParams && body.has("grant_type");
      if (!isTokenRequest) {
        const response = await base(input, init);
        if (response.status === 403) {
          const challenge = extractWWWAuthenticateParams(response);
          if (challenge.error === "insufficient_scope") {
            this.#insufficientScope = challenge.scope ?? "";
          }
        }
        return response;
      }
      const form = body as URLSearchParams;
      const headers = new Headers(init?.headers);
      if (this.#settings.userAgent !== undefined) {
        headers.set("user-agent", this.#settings.userAgent);
      }
      const send = () => base(input, { ...init, headers });
      const refreshToken = form.get("grant_type") === "refresh_token"
        ? form.get("refresh_token")
        : null;
      this.#refused = undefined;
      const response = refreshToken === null
        ? await send()
        : await this.#refreshOnce(refreshToken, form.has("scope"), send);
      const clientId = clientIdOf(form, headers);
      if (response.status === 400 || response.status === 401) {
        this.#refused = { clientId, refreshToken: refreshToken ?? undefined };
      }
      if (
        (response.status === 400 || response.status === 401) &&
        clientId === this.#settings.clientMetadataUrl
      ) {
        const answer = await response.clone().json().catch(() => undefined);
        if (answer?.error === "invalid_client") this.#recordDocumentRefusal();
      }
      return response;
    };
  }

  /**
   * One refresh per refresh token: concurrent requests of one server (a keepalive ping and a tool
   * call after expiry) would otherwise present a rotated refresh token twice, and the second
   * `invalid_grant` would discard the tokens the first one just obtained. The same holds across
   * processes (the gateway and an `agent mcp` command): the refresh runs under the records'
   * lock ({@linkcode OAuthStore.withLock}), its answer is stored before the lock is let go, and
   * a process that finds other tokens stored than the ones it read takes those instead. One that
   * finds none (a login cleared them) does not refresh: the old grant's tokens are not written.
   */
  async #refreshOnce(
    refreshToken: string,
    scopeRequested: boolean,
    send: () => Promise<Response>,
  ): Promise<Response> {
    const key = this.store.path("tokens");
    const entry = refreshes.get(key) ?? { last: Promise.resolve() };
    refreshes.set(key, entry);
    const run = entry.last.then(() =>
      this.store.withLock(async () => {
        const stored = this.store.readTokens();
        if (stored?.refresh_token !== refreshToken) {
          // Refreshed by another process since this one read them, or replaced by a login.
          if (stored !== undefined) return Response.json(stored);
          this.#tokensRemoved = true;
          // Not an OAuth error answer: the SDK discards nothing and asks for a login instead.
          throw new OAuthLoginRequired(this.#server, "its stored OAuth tokens were removed");
        }
        if (entry.rotated?.from === refreshToken) return Response.json(entry.rotated.answer);
        const response = await send();
        if (response.ok) {
          let answer = await response.clone().json().catch(() => undefined);
          if (typeof answer?.access_token === "string" && typeof answer.token_type === "string") {
            // No scope in the answer to a refresh that asked for none: the scope is unchanged
            // (RFC 6749 5.1, 6), and a later step-up needs to know it.
            const keepScope = answer.scope === undefined && !scopeRequested &&
              typeof stored?.scope === "string";
            if (keepScope) answer = { ...answer, scope: stored!.scope };
            entry.rotated = { from: refreshToken, answer };
            // As the SDK saves them next (it keeps the refresh token when none is issued), but
            // before another process can read the file.
            this.store.writeTokens({
              ...(stored?.issuer === undefined ? {} : { issuer: stored.issuer }),
              refresh_token: refreshToken,
              ...answer,
            });
            if (keepScope) return Response.json(answer);
          }
        }
        return response;
      })
    );
    entry.last = run.catch(() => {});
    return await run;
  }

  #recordDocumentRefusal(): void {
    this.cimdRejected = true;
    this.store.markCimdOff();
    this.#warn(
      `MCP server '${this.#server}': the authorization server refused the client metadata document ` +
        `${this.#settings.clientMetadataUrl} (invalid_client); recorded in ${
          this.store.path("cimdOff")
        }. Dynamic client registration is used for this server until \`agent mcp login ${this.#server}\` clears the record.`,
    );
  }
}

/** Whether authorization-server metadata lists S256 among its PKCE methods. */
function supportsS256(metadata: AuthorizationServerMetadata): boolean {
  const methods: unknown = metadata.code_challenge_methods_supported;
  return Array.isArray(methods) && methods.includes("S256");
}

/** The last refresh of each token file, shared by every provider of the process. */
const refreshes = new Map<
  string,
  { last: Promise<unknown>; rotated?: { from: string; answer: unknown } }
>();

/** The `client_id` a token request presents (form field, or HTTP Basic user). */
function clientIdOf(body: URLSearchParams, headers: Headers): string | undefined {
  const field = body.get("client_id");
  if (field !== null) return field;
  const basic = headers.get("authorization")?.match(/^Basic\s+(\S+)$/i);
  if (!basic) return undefined;
  try {
    return decodeURIComponent(atob(basic[1]).split(":")[0]);
  } catch {
    return undefined;
  }
}

/** What connect needs for an `auth: oauth` server: the provider and the transport's fetch. */
export type OAuthTransportFactory = (
  config: McpServerConfig,
  fetch: FetchFunction,
) => { authProvider: OAuthClientProvider; fetch: FetchFunction };

/** Options of {@linkcode storedOAuth}. */
export interface StoredOAuthOptions {
  /** Receives things worth logging, with the server name. */
  onWarning?: (server: string, message: string) => void;
  /** Clock (ms since epoch) for token expiry. */
  now?: () => number;
}

/**
 * The non-interactive OAuth of the gateway and the CLI's connects: tokens from
 * `<tokenDir>/<server>.json`, refreshed when the server refuses them; a needed login fails with a
 * message naming `agent mcp login <server>`.
 *
 * @param tokenDir `<home>/mcp-tokens`.
 * @param options Warning sink and clock.
 * @returns The factory {@linkcode connectServer} calls for `auth: oauth` servers.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { storedOAuth } from "./provider.ts";
 * const oauth = storedOAuth(await Deno.makeTempDir());
 * const { authProvider } = oauth({ name: "api", auth: "oauth" } as never, fetch);
 * assert.equal(await authProvider.tokens(), undefined);
 * ```
 */
export function storedOAuth(
  tokenDir: string,
  options: StoredOAuthOptions = {},
): OAuthTransportFactory {
  return (config, fetch) => {
    const provider = new McpOAuthProvider(
      config,
      new OAuthStore(tokenDir, config.name, options.now),
      { onWarning: (message) => options.onWarning?.(config.name, message) },
    );
    return { authProvider: provider, fetch: provider.fetchFor(fetch) };
  };
}

/**
 * The error to report when `error` is an OAuth failure of `config`'s server, else `undefined`.
 * Failures a login can fix name `agent mcp login <server>`.
 *
 * @param config The server.
 * @param error What the SDK or the provider threw.
 * @returns An `auth` {@linkcode McpServerError}, or `undefined`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { oauthFailure, OAuthLoginRequired } from "./provider.ts";
 * const config = { name: "api", auth: "oauth" } as never;
 * const failure = oauthFailure(config, new OAuthLoginRequired("api", "not logged in"));
 * assert.equal(failure?.message, "MCP server 'api': not logged in; run `agent mcp login api`");
 * assert.equal(oauthFailure(config, new Error("other")), undefined);
 * ```
 */
export function oauthFailure(
  config: Pick<McpServerConfig, "name" | "auth">,
  error: unknown,
): McpServerError | undefined {
  const name = config.name;
  if (error instanceof McpServerError) return undefined;
  if (error instanceof OAuthLoginRequired) {
    return new McpServerError(name, "auth", error.message, { cause: error });
  }
  if (config.auth !== "oauth") return undefined;
  const login = `run \`agent mcp login ${name}\``;
  if (error instanceof UnauthorizedError) {
    return new McpServerError(name, "auth", `the server asks for an OAuth login; ${login}`, {
      cause: error,
    });
  }
  if (error instanceof OAuthError) {
    // The message is the server's error_description (or its error code): its words, quoted.
    return new McpServerError(
      name,
      "auth",
      `OAuth failed: ${quotedServerText(error.message)}; ${login}`,
      { cause: error },
    );
  }
  if (error instanceof OAuthClientFlowError) {
    return new McpServerError(name, "auth", `OAuth failed: ${messageOf(error)}`, { cause: error });
  }
  if (error instanceof SdkHttpError && (error.status === 401 || error.status === 403)) {
    return new McpServerError(
      name,
      "auth",
      `the server refused the OAuth token (HTTP ${error.status}); ${login}`,
      { cause: error },
    );
  }
  return undefined;
}
