/**
 * The `origin` target: the issue, pull request or merge request a code-host webhook event came
 * from, read from its payload.
 *
 * @module
 */
import { isRecord, shownValue } from "./_json.ts";
import { checkGithubRepo, checkGitlabProject, checkItemNumber } from "./identifiers.ts";

/** Where the answer to a code-host event goes: a comment on the item the event came from. */
export type Origin =
  | { target: "github_comment"; repo: string; number: number }
  | { target: "gitlab_comment"; project: string; kind: GitlabItemKind; iid: number };

/** The GitLab items that take notes (comments) by iid. */
export type GitlabItemKind = "issue" | "merge_request";

/**
 * Finds the item a webhook payload is about:
 *
 * - GitLab (the payload has `object_kind`): the project (`project.path_with_namespace`, else
 *   `project.id`) and, for `issue` and `merge_request` events, `object_attributes.iid`; for
 *   `note` events, the noted issue or merge request (`object_attributes.noteable_type`, with
 *   `issue.iid` or `merge_request.iid`).
 * - GitHub: `repository.full_name` with `issue.number` (issues, and comments on issues and pull
 *   requests) or `pull_request.number` (pull requests, reviews, review comments).
 *
 * Values are checked like configured ones; a payload whose values do not fit is not an origin.
 *
 * @param payload The webhook payload (after any route script).
 * @returns The origin, or why there is none.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resolveOrigin } from "./origin.ts";
 *
 * assert.deepEqual(
 *   resolveOrigin({ repository: { full_name: "octo/app" }, pull_request: { number: 12 } }),
 *   { target: "github_comment", repo: "octo/app", number: 12 },
 * );
 * assert.deepEqual(
 *   resolveOrigin({
 *     object_kind: "note",
 *     project: { path_with_namespace: "group/app" },
 *     object_attributes: { noteable_type: "MergeRequest" },
 *     merge_request: { iid: 4 },
 *   }),
 *   { target: "gitlab_comment", project: "group/app", kind: "merge_request", iid: 4 },
 * );
 * assert.ok("unresolved" in resolveOrigin({ ref: "refs/heads/main" }));
 * ```
 */
export function resolveOrigin(
  payload: Record<string, unknown>,
): Origin | { unresolved: string } {
  if (typeof payload.object_kind === "string") return gitlabOrigin(payload, payload.object_kind);
  const repository = record(payload.repository);
  if (repository.full_name !== undefined) return githubOrigin(payload, repository.full_name);
  return {
    unresolved: "the payload is neither a GitHub event (repository.full_name) nor a GitLab " +
      "event (object_kind)",
  };
}

function githubOrigin(
  payload: Record<string, unknown>,
  fullName: unknown,
): Origin | { unresolved: string } {
  const repo = checkGithubRepo(fullName, "repository.full_name");
  if (!repo.ok) return { unresolved: repo.error };
  const [field, number] = record(payload.issue).number !== undefined
    ? ["issue.number", record(payload.issue).number]
    : ["pull_request.number", record(payload.pull_request).number];
  if (number === undefined) {
    return {
      unresolved: "the GitHub event is about no issue or pull request (no issue.number or " +
        "pull_request.number)",
    };
  }
  const checked = checkItemNumber(number, field);
  if (!checked.ok) return { unresolved: checked.error };
  return {
    target: "github_comment",
    repo: `${repo.value.owner}/${repo.value.name}`,
    number: checked.value,
  };
}

function gitlabOrigin(
  payload: Record<string, unknown>,
  objectKind: string,
): Origin | { unresolved: string } {
  const project = record(payload.project);
  const [projectField, projectValue] = project.path_with_namespace !== undefined
    ? ["project.path_with_namespace", project.path_with_namespace]
    : ["project.id", project.id];
  const attributes = record(payload.object_attributes);
  let kind: GitlabItemKind;
  let iidField: string;
  let iid: unknown;
  if (objectKind === "issue" || objectKind === "merge_request") {
    [kind, iidField, iid] = [objectKind, "object_attributes.iid", attributes.iid];
  } else if (objectKind === "note" && attributes.noteable_type === "Issue") {
    [kind, iidField, iid] = ["issue", "issue.iid", record(payload.issue).iid];
  } else if (objectKind === "note" && attributes.noteable_type === "MergeRequest") {
    [kind, iidField, iid] = [
      "merge_request",
      "merge_request.iid",
      record(payload.merge_request).iid,
    ];
  } else {
    const what = objectKind === "note"
      ? `a note on ${shownValue(attributes.noteable_type ?? null, 40)}`
      : `a ${shownValue(objectKind, 40)} event`;
    return { unresolved: `the GitLab event is ${what}, not about an issue or merge request` };
  }
  if (projectValue === undefined) {
    return { unresolved: "the GitLab event names no project (project.path_with_namespace or id)" };
  }
  const checkedProject = checkGitlabProject(projectValue, projectField);
  if (!checkedProject.ok) return { unresolved: checkedProject.error };
  const checkedIid = checkItemNumber(iid, iidField);
  if (!checkedIid.ok) return { unresolved: checkedIid.error };
  return {
    target: "gitlab_comment",
    project: checkedProject.value,
    kind,
    iid: checkedIid.value,
  };
}

function record(value: unknown): Record<string, unknown> {
  return isRecord(value) ? value : {};
}
