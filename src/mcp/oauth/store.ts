/**
 * The OAuth records of one MCP server under `<home>/mcp-tokens/` (decisions.md §5): the folder is
 * 0700, every file 0600 and written atomically.
 *
 * | file | content |
 * |---|---|
 * | `<server>.json` | tokens as the authorization server issued them, plus `expires_at` (epoch seconds) and, after a 403 `insufficient_scope`, `required_scope` |
 * | `<server>.client.json` | the client registration (dynamic, or the client metadata document URL) |
 * | `<server>.meta.json` | discovery state: authorization-server metadata, so refresh works after a restart |
 * | `<server>.cimd-off` | empty marker: the server refused the client metadata document |
 *
 * @module
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import type {
  OAuthDiscoveryState,
  StoredOAuthClientInformation,
  StoredOAuthTokens,
} from "@modelcontextprotocol/client";
import {
  ensurePrivateDir,
  PRIVATE_DIR_MODE,
  readTextIfExists,
  writeFileAtomic,
} from "../../home/files.ts";

/** The four records of a server. */
export type OAuthRecord = "tokens" | "client" | "meta" | "cimdOff";

const SUFFIX: Record<OAuthRecord, string> = {
  tokens: ".json",
  client: ".client.json",
  meta: ".meta.json",
  cimdOff: ".cimd-off",
};

/**
 * The file-name stem of a server's records: the name itself when it is only letters, digits,
 * `_` and `-`; otherwise those characters with the rest replaced by `_`, plus 8 hex digits of
 * the name's SHA-256, so two names never share records and no name leaves the folder.
 *
 * @param server The configured server name.
 * @returns The stem.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { recordStem } from "./store.ts";
 * assert.equal(recordStem("github"), "github");
 * assert.match(recordStem("../evil"), /^___evil-[0-9a-f]{8}$/);
 * ```
 */
export function recordStem(server: string): string {
  if (/^[A-Za-z0-9_-]{1,128}$/.test(server)) return server;
  const readable = server.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 100);
  return `${readable}-${createHash("sha256").update(server).digest("hex").slice(0, 8)}`;
}

/**
 * Reads and writes the OAuth records of one server. Unreadable or malformed files read as absent
 * (the next login rewrites them).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { OAuthStore } from "./store.ts";
 * const dir = await Deno.makeTempDir();
 * const store = new OAuthStore(dir, "api", () => 1_000_000);
 * store.writeTokens({ access_token: "a", token_type: "Bearer", expires_in: 60 });
 * assert.equal(store.tokenExpiry(), 1_060_000);
 * assert.equal((Deno.statSync(store.path("tokens")).mode! & 0o777), 0o600);
 * store.clear();
 * assert.equal(store.readTokens(), undefined);
 * ```
 */
export class OAuthStore {
  /** The `mcp-tokens` folder. */
  readonly dir: string;
  /** The server name. */
  readonly server: string;
  readonly #now: () => number;

  constructor(dir: string, server: string, now: () => number = Date.now) {
    this.dir = dir;
    this.server = server;
    this.#now = now;
  }

  /** The path of one record. */
  path(record: OAuthRecord): string {
    return join(this.dir, `${recordStem(this.server)}${SUFFIX[record]}`);
  }

  /** The stored tokens; `expires_in` is what is left of the stored `expires_at`. */
  readTokens(): StoredOAuthTokens | undefined {
    const data = this.#readJson("tokens");
    if (typeof data?.access_token !== "string" || typeof data.token_type !== "string") {
      return undefined;
    }
    const { expires_at: expiresAt, required_scope: _, ...tokens } = data;
    if (typeof expiresAt === "number") {
      tokens.expires_in = Math.max(0, Math.floor(expiresAt - this.#now() / 1000));
    }
    return tokens as StoredOAuthTokens;
  }

  /** When the stored access token expires (ms since epoch), when known. */
  tokenExpiry(): number | undefined {
    const expiresAt = this.#readJson("tokens")?.expires_at;
    return typeof expiresAt === "number" ? expiresAt * 1000 : undefined;
  }

  /**
   * Saves tokens with an absolute `expires_at` (epoch seconds) computed from `expires_in`; a
   * recorded {@linkcode OAuthStore.requiredScope} is kept.
   */
  writeTokens(tokens: StoredOAuthTokens): void {
    const record: Record<string, unknown> = { ...tokens };
    if (typeof tokens.expires_in === "number") {
      record.expires_at = this.#now() / 1000 + tokens.expires_in;
    }
    const required = this.requiredScope();
    if (required !== undefined) record.required_scope = required;
    this.#writeJson("tokens", record);
  }

  /**
   * The scope the server asked for (403 `insufficient_scope`) that the stored token lacks, kept
   * in the tokens record as `required_scope` so that the next login asks for it.
   */
  requiredScope(): string | undefined {
    const scope = this.#readJson("tokens")?.required_scope;
    return typeof scope === "string" && scope.trim() !== "" ? scope : undefined;
  }

  /** Records {@linkcode OAuthStore.requiredScope} beside the stored tokens. */
  writeRequiredScope(scope: string): void {
    const data = this.#readJson("tokens");
    if (data === undefined) return;
    this.#writeJson("tokens", { ...data, required_scope: scope });
  }

  /** The stored client registration. */
  readClient(): StoredOAuthClientInformation | undefined {
    const data = this.#readJson("client");
    return typeof data?.client_id === "string"
      ? data as unknown as StoredOAuthClientInformation
      : undefined;
  }

  /** Saves the client registration. */
  writeClient(client: StoredOAuthClientInformation): void {
    this.#writeJson("client", client as unknown as Record<string, unknown>);
  }

  /** The stored discovery state (a bare authorization-server metadata document is accepted too). */
  readDiscovery(): OAuthDiscoveryState | undefined {
    const data = this.#readJson("meta");
    if (data === undefined) return undefined;
    if (typeof data.authorizationServerUrl === "string") {
      return data as unknown as OAuthDiscoveryState;
    }
    if (typeof data.issuer === "string" && typeof data.token_endpoint === "string") {
      return {
        authorizationServerUrl: data.issuer,
        authorizationServerMetadata: data as unknown as OAuthDiscoveryState[
          "authorizationServerMetadata"
        ],
      };
    }
    return undefined;
  }

  /** Saves the discovery state. */
  writeDiscovery(state: OAuthDiscoveryState): void {
    this.#writeJson("meta", state as unknown as Record<string, unknown>);
  }

  /** Whether `<server>.cimd-off` exists. */
  isCimdOff(): boolean {
    return readTextIfExists(this.path("cimdOff")) !== undefined;
  }

  /** Writes the empty `<server>.cimd-off` marker. */
  markCimdOff(): void {
    ensurePrivateDir(this.dir);
    Deno.chmodSync(this.dir, PRIVATE_DIR_MODE);
    writeFileAtomic(this.path("cimdOff"), "");
  }

  /**
   * Runs `work` holding an exclusive lock shared with other processes on this home (the gateway
   * and an `agent mcp` command, say): `flock` on the records folder, so no lock file is left and
   * a process killed while holding it lets it go. Waiting for it does not block the event loop.
   */
  async withLock<T>(work: () => Promise<T>): Promise<T> {
    ensurePrivateDir(this.dir);
    using folder = Deno.openSync(this.dir, { read: true });
    await folder.lock(true); // closing the folder releases it
    return await work();
  }

  /** Deletes the given records (missing ones are fine). */
  remove(...records: OAuthRecord[]): void {
    for (const record of records) {
      try {
        Deno.removeSync(this.path(record));
      } catch (error) {
        if (!(error instanceof Deno.errors.NotFound)) throw error;
      }
    }
  }

  /** Deletes all four records. */
  clear(): void {
    this.remove("tokens", "client", "meta", "cimdOff");
  }

  #readJson(record: OAuthRecord): Record<string, unknown> | undefined {
    let text: string | undefined;
    try {
      text = readTextIfExists(this.path(record));
    } catch {
      return undefined;
    }
    if (text === undefined) return undefined;
    try {
      const data = JSON.parse(text);
      return typeof data === "object" && data !== null && !Array.isArray(data) ? data : undefined;
    } catch {
      return undefined;
    }
  }

  #writeJson(record: OAuthRecord, data: Record<string, unknown>): void {
    ensurePrivateDir(this.dir);
    Deno.chmodSync(this.dir, PRIVATE_DIR_MODE);
    writeFileAtomic(this.path(record), JSON.stringify(data, null, 2) + "\n");
  }
}
