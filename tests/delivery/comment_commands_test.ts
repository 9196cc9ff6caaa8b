/**
 * A GitHub or GitLab comment never starts a line with `/`: GitLab runs a note's quick actions
 * (`/merge`, `/close`, `/assign`) with the token's rights, and ChatOps bots on GitHub (`/approve`,
 * `/deploy`) trust the commenter. A payload's text in a template, or an answer it steered, must
 * not give such a command as the bot.
 */
import assert from "node:assert/strict";
import { deliver, type DeliveryContext } from "../../src/delivery/mod.ts";
import type { DeliveryTargetName } from "../../src/webhook/routes.ts";
import {
  type FakePlatformName,
  startFakePlatform,
  TARGET_OF,
  TOKEN_VARIABLE,
} from "../fixtures/fake_platforms.ts";

Deno.test.sanitizer({ ops: true, resources: true });

const EXTRA: Partial<Record<FakePlatformName, Record<string, unknown>>> = {
  github: { repo: "octo-org/app", number: 42 },
  gitlab: { project: "group/app", iid: 3 },
};

async function sentBodies(name: FakePlatformName, message: string): Promise<unknown[]> {
  await using fake = await startFakePlatform(name);
  const context: DeliveryContext = {
    secrets: { get: (variable) => variable === TOKEN_VARIABLE[name] ? fake.token : undefined },
    apiBaseUrl: () => fake.baseUrl,
    log: () => {},
  };
  const result = await deliver({
    target: TARGET_OF[name] as DeliveryTargetName,
    message,
    extra: EXTRA[name]!,
    payload: {},
    event: "note",
    route: "ci",
    direct: true,
  }, context);
  assert.equal(result.ok, true, JSON.stringify(result));
  return fake.requests.map((request) => request.body);
}

for (const name of ["gitlab", "github"] as const) {
  Deno.test(`${TARGET_OF[name]}: a line starting with / is sent with a space before it`, async () => {
    const message = "/approve\nNew comment by mallory:\n/merge\r\n/close\n\r/label ~ok\n" +
      "not /a command, nor\n  /one\n`/code`";
    assert.deepEqual(await sentBodies(name, message), [{
      body: " /approve\nNew comment by mallory:\n /merge\r\n /close\n\r /label ~ok\n" +
        "not /a command, nor\n  /one\n`/code`",
    }]);
  });
}

Deno.test("gitlab_comment: a part of a split message that starts with / gets the space too", async () => {
  // One line longer than GitLab's limit: split at a space, the second part starts with "/close".
  const message = `${"x".repeat(999_995)} /close now`;
  const bodies = await sentBodies("gitlab", message) as { body: string }[];
  assert.equal(bodies.length, 2);
  assert.equal(bodies[1].body, " /close now");
});
