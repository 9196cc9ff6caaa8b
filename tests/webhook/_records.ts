/** Shared fixtures of the webhook tests. */
import type { SubscriptionRecord } from "../../src/webhook/routes.ts";

/** A valid subscription record, with `overrides` on top. */
export function record(overrides: Record<string, unknown> = {}): SubscriptionRecord {
  return {
    description: "CI",
    events: [],
    secret: "0123456789abcdef0123",
    prompt: "hello",
    skills: [],
    deliver: "log",
    created_at: "2026-03-10T12:00:00Z",
    ...overrides,
  } as SubscriptionRecord;
}
