/**
 * The request headers the gateway's signature families read (Standard Webhooks / Svix, GitHub,
 * GitLab, the generic HMAC ones), for tests that send them with hostile or random values.
 *
 * @module
 */

/** Every header a signature check reads, lower-case. */
export const SIGNATURE_HEADER_NAMES: readonly string[] = [
  "webhook-id",
  "webhook-timestamp",
  "webhook-signature",
  "svix-id",
  "svix-timestamp",
  "svix-signature",
  "x-hub-signature-256",
  "x-gitlab-token",
  "x-webhook-signature-v2",
  "x-webhook-timestamp",
  "x-webhook-signature",
];
