/**
 * Which usage-metrics endpoints (`telemetry.shared_metrics.endpoint`, decisions.md §4) packages
 * may be sent to. Read when the config is resolved, so a refused endpoint turns sending off with
 * a warning, and again by the sender before any request.
 *
 * @module
 */
import { isLoopbackHost } from "./loopback.ts";

/** The config.yaml key of the endpoint. */
export const ENDPOINT_KEY = "telemetry.shared_metrics.endpoint";
const ENDPOINT_RULE =
  "it must be an https:// URL, or http:// only to a loopback host (127.0.0.1, [::1], localhost)";

/**
 * Checks that a metrics endpoint is safe to send to: `https:`, or `http:` only to a loopback host
 * (127.0.0.0/8, `[::1]`, `localhost`), with no user name or password in the URL.
 *
 * The refusal reason is a sentence for the user that names `telemetry.shared_metrics.endpoint`
 * and what to set it to; it never repeats credentials.
 *
 * @example Usage
 * ```ts
 * import { validateEndpoint } from "./metrics_endpoint.ts";
 * import assert from "node:assert/strict";
 *
 * const good = validateEndpoint("https://metrics.example.com/v2/packages");
 * assert.ok(good.ok && good.url.hostname === "metrics.example.com");
 * assert.ok(validateEndpoint("http://127.0.0.1:8080/ingest").ok);
 *
 * const bad = validateEndpoint("http://metrics.example.com/");
 * assert.ok(!bad.ok && bad.reason.includes("telemetry.shared_metrics.endpoint"));
 * ```
 *
 * @param url The configured endpoint.
 * @returns The parsed URL, or the reason it is refused.
 */
export function validateEndpoint(
  url: string,
): { ok: true; url: URL } | { ok: false; reason: string } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { ok: false, reason: `${ENDPOINT_KEY} is not a valid URL; ${ENDPOINT_RULE}.` };
  }
  if (parsed.username !== "" || parsed.password !== "") {
    return {
      ok: false,
      reason: `${ENDPOINT_KEY} must not contain a user name or password; remove the ` +
        `"user:password@" part (${ENDPOINT_RULE}).`,
    };
  }
  if (parsed.protocol === "https:") {
    if (parsed.hostname === "") {
      return { ok: false, reason: `${ENDPOINT_KEY} has no host; ${ENDPOINT_RULE}.` };
    }
    return { ok: true, url: parsed };
  }
  if (parsed.protocol === "http:") {
    if (isLoopbackHost(parsed.hostname)) return { ok: true, url: parsed };
    return {
      ok: false,
      reason: `${ENDPOINT_KEY} uses http:// to "${parsed.hostname}", which is not a loopback ` +
        `host; ${ENDPOINT_RULE}.`,
    };
  }
  return {
    ok: false,
    reason: `${ENDPOINT_KEY} uses the unsupported scheme "${parsed.protocol}"; ${ENDPOINT_RULE}.`,
  };
}
