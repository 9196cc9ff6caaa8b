/**
 * The `resource` tuple of a package: architecture, version, install method, OS family.
 *
 * @module
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { AGENT_VERSION } from "../version.ts";
import { architecture, installMethod, osFamily } from "./classify.ts";
import type { MetricsResource } from "./contract.ts";
import { firstCodePoints } from "../home/text.ts";

/** Facts the resource tuple is derived from. */
export interface ResourceFacts {
  /** e.g. `Deno.build.os`. */
  os: string;
  /** e.g. `Deno.build.arch`. */
  arch: string;
  /** The service version. */
  version: string;
  /** `AGENT_INSTALL_METHOD`, if set. */
  installMethodEnv?: string;
  /** Content of the `.install-method` stamp file beside the program, if present. */
  installStamp?: string;
}

/**
 * Classifies the facts into a `resource` object (an over-long version is cut to 64 characters).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resourceOf } from "./resource.ts";
 * const resource = resourceOf({ os: "darwin", arch: "aarch64", version: "1.2.3", installMethodEnv: "homebrew" });
 * assert(resource.os_family === "macos" && resource.architecture === "arm64");
 * ```
 */
export function resourceOf(facts: ResourceFacts): MetricsResource {
  // The schema's maxLength counts characters (code points): never half a surrogate pair.
  const version = firstCodePoints(facts.version.trim(), 64) || "unknown";
  return {
    agent_version: version,
    architecture: architecture(facts.arch),
    install_method: installMethod(facts.installMethodEnv, facts.installStamp),
    os_family: osFamily(facts.os),
  };
}

/** The stamp file a packager (apt, Homebrew, Nix …) writes beside the program. */
export const INSTALL_STAMP_FILE = ".install-method";

/**
 * Where a packager puts the install stamp: beside the executable of a compiled agent
 * (`/opt/agent/.install-method` for `/opt/agent/agent`), else at the project root (beside
 * `main.ts`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { installStampPath } from "./resource.ts";
 * assert.equal(installStampPath(true, "/opt/agent/agent"), "/opt/agent/.install-method");
 * ```
 */
export function installStampPath(
  standalone: boolean = Deno.build.standalone,
  execPath: string = Deno.execPath(),
): string {
  const root = standalone
    ? dirname(execPath)
    : dirname(dirname(dirname(fileURLToPath(import.meta.url))));
  return join(root, INSTALL_STAMP_FILE);
}

/**
 * The resource tuple of this process: `Deno.build`, this build's version,
 * `AGENT_INSTALL_METHOD` (from `env`), and the stamp file ({@linkcode installStampPath}).
 */
export function currentResource(env: (name: string) => string | undefined): MetricsResource {
  let installStamp: string | undefined;
  try {
    installStamp = Deno.readTextFileSync(installStampPath());
  } catch {
    installStamp = undefined;
  }
  return resourceOf({
    os: Deno.build.os,
    arch: Deno.build.arch,
    version: AGENT_VERSION,
    installMethodEnv: env("AGENT_INSTALL_METHOD"),
    installStamp,
  });
}

/**
 * Canonical JSON: object keys sorted at every level, no spaces. Used for the aggregation key.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { canonicalJson } from "./resource.ts";
 * assert(canonicalJson({ b: "1", a: "2" }) === '{"a":"2","b":"1"}');
 * ```
 */
export function canonicalJson(value: Record<string, string>): string {
  const keys = Object.keys(value).sort();
  let out = "{";
  for (let i = 0; i < keys.length; i++) {
    if (i > 0) out += ",";
    out += JSON.stringify(keys[i]) + ":" + JSON.stringify(value[keys[i]]);
  }
  return out + "}";
}
