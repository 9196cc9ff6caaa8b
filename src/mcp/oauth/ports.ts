/**
 * The pinned OAuth callback ports (SPEC "MCP HTTP servers" 5): which logins may use one, and
 * the in-process pool that binds them. A client metadata document declares exact redirect URIs,
 * so a login that presents the document must listen on one of the five declared ports; every
 * other login listens on a random port.
 *
 * @module
 */
import type { OAuthSettings } from "../config.ts";
import type { CallbackListener } from "./callback.ts";

/** The callback ports the client metadata document declares: 27890 to 27894. */
export const PINNED_CALLBACK_PORTS: readonly number[] = Object.freeze([
  27890,
  27891,
  27892,
  27893,
  27894,
]);

/** Who drives a login: the terminal, or a dashboard / desktop app with its own redirect URL. */
export type LoginDriver = "cli" | "dashboard" | "desktop";

/** What decides whether a login may pin a port (and so present the client metadata document). */
export interface PinningFacts {
  /** The server's `oauth` settings. */
  settings: OAuthSettings;
  /** Who drives the login. */
  driver: LoginDriver;
  /** The `client_id` of `<server>.client.json`, when one is stored. */
  storedClientId?: string;
  /** Whether `<server>.cimd-off` exists (the server refused the document before). */
  cimdOff: boolean;
  /** The authorization-server metadata cached in `<server>.meta.json`, when any. */
  cachedMetadata?: { client_id_metadata_document_supported?: unknown };
  /**
   * Whether these are the records as they were before the login cleared them (`agent mcp login`
   * does): its registration is then not reused, and a refusal record gets another try.
   */
  cleared?: boolean;
}

/**
 * Why a login may not pin a callback port (and so uses dynamic client registration on a random
 * port), or `undefined` when it may. The pin is chosen before the server's capabilities are
 * known: a server never reached before gets one; one whose cached metadata does not advertise
 * client metadata documents does not.
 *
 * Records a login cleared (`facts.cleared`) count only for what they tell about the server: a
 * refusal record does not rule out the pin (the document gets another try), and a dynamic
 * registration rules it out only when neither the cached metadata nor a refusal record shows
 * that the server takes client metadata documents.
 *
 * @param facts The settings and what is stored for the server.
 * @returns The reason, in words, or `undefined`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pinningObstacle } from "./ports.ts";
 * const settings = { clientMetadataUrl: "https://example.com/client.json", cimd: true };
 * assert.equal(pinningObstacle({ settings, driver: "cli", cimdOff: false }), undefined);
 * assert.match(
 *   pinningObstacle({ settings: { ...settings, cimd: false }, driver: "cli", cimdOff: false })!,
 *   /cimd: false/,
 * );
 * ```
 */
export function pinningObstacle(facts: PinningFacts): string | undefined {
  const { settings } = facts;
  if (!settings.cimd) return "oauth.cimd: false forces dynamic client registration";
  if (settings.clientMetadataUrlProblem !== undefined) {
    return `oauth.client_metadata_url ${settings.clientMetadataUrlProblem}`;
  }
  if (settings.clientId !== undefined) return "a pre-registered oauth.client_id is configured";
  if (settings.clientSecret !== undefined) return "oauth.client_secret is configured";
  if (settings.clientName !== undefined) return "a custom oauth.client_name is configured";
  if (
    settings.tokenEndpointAuthMethod !== undefined && settings.tokenEndpointAuthMethod !== "none"
  ) {
    return `oauth.token_endpoint_auth_method is ${settings.tokenEndpointAuthMethod}, not none`;
  }
  if (settings.redirectUri !== undefined) return "oauth.redirect_uri overrides the callback";
  if (settings.redirectPort !== undefined) return "oauth.redirect_port overrides the callback";
  if (facts.driver !== "cli") return `the login is driven by the ${facts.driver}`;
  const registered = facts.storedClientId !== undefined &&
    facts.storedClientId !== settings.clientMetadataUrl;
  const metadata = facts.cachedMetadata;
  const advertised = metadata?.client_id_metadata_document_supported === true;
  if (facts.cleared) {
    if (metadata !== undefined && !advertised) return NO_DOCUMENTS_IN_METADATA;
    if (registered && !advertised && !facts.cimdOff) {
      return "a dynamically registered client was stored for this server, and no cached " +
        "metadata shows whether its authorization server takes client metadata documents";
    }
    return undefined;
  }
  if (registered) return "a client registration is stored for this server";
  if (facts.cimdOff) {
    return "the authorization server refused the client metadata document before (cimd-off record)";
  }
  if (metadata !== undefined && !advertised) return NO_DOCUMENTS_IN_METADATA;
  return undefined;
}

const NO_DOCUMENTS_IN_METADATA =
  "the cached authorization-server metadata does not advertise client metadata documents";

/**
 * The pinned ports this process holds. A port is bound when a login claims it and stays held
 * until that login's redirect arrived (the listener is closed), so two logins running at the
 * same time never share a listener.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { startCallbackListener } from "./callback.ts";
 * import { CallbackPortPool } from "./ports.ts";
 * const free = () => {
 *   const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
 *   const port = (probe.addr as Deno.NetAddr).port;
 *   probe.close();
 *   return port;
 * };
 * const pool = new CallbackPortPool([free(), free()]);
 * const bind = (port: number) => startCallbackListener({ port, expectedState: () => undefined });
 * const first = pool.claim(bind)!;
 * const second = pool.claim(bind)!;
 * assert.notEqual(first.port, second.port);
 * assert.equal(pool.claim(bind), undefined);
 * await first.close();
 * await second.close();
 * assert.deepEqual(pool.held(), []);
 * ```
 */
export class CallbackPortPool {
  /** The ports this pool hands out, in order of preference. */
  readonly ports: readonly number[];
  readonly #held = new Set<number>();

  constructor(ports: readonly number[] = PINNED_CALLBACK_PORTS) {
    this.ports = ports;
  }

  /**
   * Binds the first port that no other login of this process holds and no other process uses.
   *
   * @param bind Starts a listener on a port; throws `Deno.errors.AddrInUse` when it is taken.
   * @returns The listener (closing it releases the port), or `undefined` when every port is busy.
   */
  claim(bind: (port: number) => CallbackListener): CallbackListener | undefined {
    for (const port of this.ports) {
      if (this.#held.has(port)) continue;
      let listener: CallbackListener;
      try {
        listener = bind(port);
      } catch (error) {
        if (
          error instanceof Deno.errors.AddrInUse || error instanceof Deno.errors.PermissionDenied
        ) {
          continue;
        }
        throw error;
      }
      this.#held.add(port);
      return this.#releasing(listener);
    }
    return undefined;
  }

  /** Binds `port` itself when it is one of the pool's ports and free (a re-authorization). */
  rebind(port: number, bind: (port: number) => CallbackListener): CallbackListener {
    if (this.#held.has(port)) {
      throw new Deno.errors.AddrInUse(`callback port ${port} is held by another login`);
    }
    const listener = bind(port);
    this.#held.add(port);
    return this.#releasing(listener);
  }

  /** The ports held right now. */
  held(): number[] {
    return [...this.#held].sort((a, b) => a - b);
  }

  #releasing(listener: CallbackListener): CallbackListener {
    const held = this.#held;
    return {
      port: listener.port,
      path: listener.path,
      url: listener.url,
      redirect: listener.redirect,
      get closed() {
        return listener.closed;
      },
      async close() {
        held.delete(listener.port);
        await listener.close();
      },
    };
  }
}

/** The pool of the running process (one per process, so concurrent logins take turns). */
export const processCallbackPorts: CallbackPortPool = new CallbackPortPool();
