/**
 * The version of this build, from `deno.json`.
 *
 * @module
 */
import manifest from "../deno.json" with { type: "json" };

/** The service version, e.g. `0.1.0`. */
export const AGENT_VERSION: string = manifest.version;
