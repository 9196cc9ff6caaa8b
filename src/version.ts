/**
 * The version of this build, from `deno.json`.
 *
 * @module
 */
import manifest from "../deno.json" with { type: "json" };

/** The service version, e.g. `0.1.0`. */
export const AGENT_VERSION: string = manifest.version;

/**
 * The `User-Agent` of this service's own HTTP requests (model calls, deliveries, usage-metrics
 * packages): `agent-service/<version>`. The runtime's default, `Deno/<version>`, would tell a
 * model provider, a platform or a collector nothing about the sender.
 */
export const USER_AGENT: string = `agent-service/${AGENT_VERSION}`;
