/**
 * Delivery targets: `log`, `origin`, `telegram`, `discord`, `slack`, `github_comment` and
 * `gitlab_comment`, each through its real HTTP API (see {@linkcode deliver}).
 *
 * @example Deliver an answer to where a GitHub event came from (here a local stand-in)
 * ```ts
 * import assert from "node:assert/strict";
 * import { deliver } from "./mod.ts";
 *
 * const paths: string[] = [];
 * const github = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
 *   paths.push(new URL(request.url).pathname);
 *   return Response.json({ id: 1, body: "Looks good" }, { status: 201 });
 * });
 * const result = await deliver({
 *   target: "origin",
 *   message: "Looks good",
 *   extra: {},
 *   payload: { repository: { full_name: "octo/app" }, issue: { number: 7 } },
 *   event: "issues",
 *   route: "triage",
 *   direct: false,
 * }, {
 *   secrets: { get: (name) => name === "GITHUB_TOKEN" ? "ghp_example" : undefined },
 *   apiBaseUrl: () => `http://127.0.0.1:${github.addr.port}`,
 *   log: () => {},
 * });
 * assert.deepEqual(result, { ok: true, target: "origin", parts: 1, detail: "github_comment octo/app#7" });
 * assert.deepEqual(paths, ["/repos/octo/app/issues/7/comments"]);
 * await github.shutdown();
 * ```
 *
 * @module
 */
export {
  defaultApiBaseUrl,
  deliver,
  DELIVERY_TIMEOUT_MS,
  type DeliveryContext,
  type DeliveryRequest,
  type DeliveryResult,
  isSilentAnswer,
  MESSAGE_LIMITS,
  missingToken,
  type PlatformTarget,
  SILENT_ANSWER,
} from "./targets.ts";
export { splitMessage } from "./split.ts";
export { type GitlabItemKind, type Origin, resolveOrigin } from "./origin.ts";
export {
  checkDiscordChannel,
  type Checked,
  checkGithubRepo,
  checkGitlabProject,
  checkItemNumber,
  checkSlackChannel,
  checkTelegramChat,
  MAX_ITEM_NUMBER,
} from "./identifiers.ts";
