/**
 * The client metadata document (CIMD) side of OAuth client identification: the default
 * published document URL, the ten loopback redirect URIs it must declare, and the checks a
 * self-hosted `oauth.client_metadata_url` must pass (SPEC "MCP HTTP servers" 4–6).
 *
 * @module
 */
import { PINNED_CALLBACK_PORTS } from "./ports.ts";

/**
 * Where `docs/oauth/client-metadata.json` is published, and so the `client_id` sent when the
 * authorization server accepts client metadata documents. It is the default of
 * `oauth.client_metadata_url`. A github.io origin serves `application/json` without redirects,
 * which document fetchers require.
 */
export const DEFAULT_CLIENT_METADATA_URL =
  "https://agent-service.github.io/agent/oauth/client-metadata.json";

/** The path of every loopback redirect URI (the callback listener serves it). */
export const CALLBACK_PATH = "/callback";

/**
 * The loopback redirect URIs a client metadata document must declare: for each pinned port
 * `http://127.0.0.1:<port>/callback`, then the same with `localhost` (ten in all).
 *
 * @param ports The pinned ports (default 27890 to 27894).
 * @returns The URIs, `127.0.0.1` ones first.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { loopbackRedirectUris } from "./metadata_url.ts";
 * const uris = loopbackRedirectUris();
 * assert.equal(uris.length, 10);
 * assert.equal(uris[0], "http://127.0.0.1:27890/callback");
 * assert.equal(uris[9], "http://localhost:27894/callback");
 * ```
 */
export function loopbackRedirectUris(
  ports: readonly number[] = PINNED_CALLBACK_PORTS,
): string[] {
  return ["127.0.0.1", "localhost"].flatMap((host) =>
    ports.map((port) => `http://${host}:${port}${CALLBACK_PATH}`)
  );
}

const DOT_SEGMENTS = new Set([".", "..", "%2e", "%2e%2e", ".%2e", "%2e."]);

/**
 * Why `url` cannot be a client metadata document URL, or `undefined` when it can: it must be
 * an `https` URL with a path (not a bare origin), without a fragment, without user information,
 * and without `.` or `..` segments (they would be normalised away, so the URL the server fetches
 * would not be the `client_id` sent).
 *
 * @param url The configured `oauth.client_metadata_url`.
 * @returns A sentence saying what is wrong, or `undefined`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { clientMetadataUrlProblem } from "./metadata_url.ts";
 * assert.equal(clientMetadataUrlProblem("https://example.com/oauth/client.json"), undefined);
 * assert.match(clientMetadataUrlProblem("http://example.com/client.json")!, /https/);
 * assert.match(clientMetadataUrlProblem("https://example.com")!, /path/);
 * assert.match(clientMetadataUrlProblem("https://example.com/a/../client.json")!, /segments/);
 * ```
 */
export function clientMetadataUrlProblem(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "is not a URL";
  }
  if (parsed.protocol !== "https:") return `must use https, not ${parsed.protocol.slice(0, -1)}`;
  if (parsed.username !== "" || parsed.password !== "") {
    return "must not contain user information (user:password@)";
  }
  if (url.includes("#")) return "must not have a fragment (#…)";
  const path = rawPath(url);
  if (path === "" || path === "/") {
    return "must have a path after the host (a bare origin cannot be a client_id)";
  }
  if (path.split("/").some((segment) => DOT_SEGMENTS.has(segment.toLowerCase()))) {
    return "must not contain . or .. path segments";
  }
  return undefined;
}

/** The path of `url` exactly as written (before the URL parser normalises dot segments). */
function rawPath(url: string): string {
  const afterScheme = url.slice(url.indexOf("//") + 2);
  const start = afterScheme.search(/[/?#]/);
  if (start < 0) return "";
  return afterScheme.slice(start).split(/[?#]/)[0];
}

/**
 * What is wrong with a client metadata document served at `url`: its `client_id` must equal
 * `url`, it must declare all ten loopback redirect URIs, and (a public client) use
 * `token_endpoint_auth_method: none`.
 *
 * @param document The parsed JSON document.
 * @param url The URL it is published at.
 * @returns One sentence per problem; empty when the document is usable.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { clientMetadataDocumentProblems, loopbackRedirectUris } from "./metadata_url.ts";
 * const url = "https://example.com/oauth/client.json";
 * assert.deepEqual(
 *   clientMetadataDocumentProblems(
 *     { client_id: url, redirect_uris: loopbackRedirectUris(), token_endpoint_auth_method: "none" },
 *     url,
 *   ),
 *   [],
 * );
 * assert.equal(clientMetadataDocumentProblems({ client_id: url }, url).length, 1);
 * ```
 */
export function clientMetadataDocumentProblems(document: unknown, url: string): string[] {
  if (typeof document !== "object" || document === null || Array.isArray(document)) {
    return ["the document is not a JSON object"];
  }
  const fields = document as Record<string, unknown>;
  const problems: string[] = [];
  if (fields.client_id !== url) {
    problems.push(
      `client_id is ${
        JSON.stringify(fields.client_id)
      }, but it must equal the document's URL ${url}`,
    );
  }
  const declared = Array.isArray(fields.redirect_uris) ? fields.redirect_uris : [];
  const missing = loopbackRedirectUris().filter((uri) => !declared.includes(uri));
  if (missing.length > 0) {
    problems.push(`redirect_uris lacks ${missing.join(", ")}`);
  }
  const method = fields.token_endpoint_auth_method;
  if (method !== undefined && method !== "none") {
    problems.push(`token_endpoint_auth_method is ${JSON.stringify(method)}; it must be "none"`);
  }
  return problems;
}
