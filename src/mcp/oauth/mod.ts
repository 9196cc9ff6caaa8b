/**
 * OAuth 2.1 for `auth: oauth` MCP servers (SPEC "MCP HTTP servers" 3–7, decisions.md §5
 * "OAuth"): the SDK's `OAuthClientProvider` on `<home>/mcp-tokens/` records, the pinned callback
 * ports, the loopback callback listener, the client metadata document checks, and the
 * interactive login of `agent mcp login <server>`.
 *
 * @module
 */
export { type CallbackListener, startCallbackListener } from "./callback.ts";
export {
  type AuthorizedSession,
  type ClientIdentification,
  describeWait,
  LOGIN_TIMEOUT_MS,
  loginMcpServer,
  type LoginOptions,
  type LoginOutcome,
  openAuthorizedSession,
  openInBrowser,
} from "./flow.ts";
export {
  CALLBACK_PATH,
  clientMetadataDocumentProblems,
  clientMetadataUrlProblem,
  DEFAULT_CLIENT_METADATA_URL,
  loopbackRedirectUris,
} from "./metadata_url.ts";
export {
  CallbackPortPool,
  type LoginDriver,
  PINNED_CALLBACK_PORTS,
  type PinningFacts,
  pinningObstacle,
  processCallbackPorts,
} from "./ports.ts";
export {
  type AuthorizationDriver,
  DEFAULT_CLIENT_NAME,
  McpOAuthProvider,
  type McpOAuthProviderOptions,
  oauthFailure,
  OAuthLoginRequired,
  type OAuthTransportFactory,
  storedOAuth,
  type StoredOAuthOptions,
} from "./provider.ts";
export { type OAuthRecord, OAuthStore, recordStem } from "./store.ts";
