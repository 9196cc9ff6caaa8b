/**
 * The secret scope: `<home>/.env` first, then the process environment. The process environment
 * is only read, never changed.
 *
 * @module
 */
import { parse } from "dotenv";
import type { EnvReader } from "./paths.ts";

/** Where a variable's value came from. */
export type SecretSource = ".env" | "environment";

/**
 * Variables as the service sees them: `<home>/.env` wins over the process environment.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SecretScope } from "./secrets.ts";
 * const scope = SecretScope.fromText("TOKEN=from-dotenv\n", (name) => name === "TOKEN" ? "env" : "x");
 * assert(scope.get("TOKEN") === "from-dotenv");
 * assert(scope.get("OTHER") === "x");
 * ```
 */
export class SecretScope {
  readonly #dotenv: Readonly<Record<string, string>>;
  readonly #env: EnvReader;

  constructor(dotenv: Readonly<Record<string, string>>, env: EnvReader) {
    this.#dotenv = dotenv;
    this.#env = env;
  }

  /** Parses `.env` text (dotenv format) into a scope over `env`. */
  static fromText(dotenvText: string | undefined, env: EnvReader): SecretScope {
    return new SecretScope(dotenvText ? parse(dotenvText) : {}, env);
  }

  /**
   * The same scope over `.env` text read again (the process environment is the same): for
   * settings a long-running process follows while it runs, such as usage-metrics consent.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { SecretScope } from "./secrets.ts";
   * const scope = SecretScope.fromText("A=1\n", (name) => name === "B" ? "env" : undefined);
   * const again = scope.withDotenvText("A=2\n");
   * assert.equal(again.get("A"), "2");
   * assert.equal(again.get("B"), "env");
   * ```
   */
  withDotenvText(dotenvText: string | undefined): SecretScope {
    return SecretScope.fromText(dotenvText, this.#env);
  }

  /** The value of `name`, or `undefined` when neither source has it. */
  get(name: string): string | undefined {
    return Object.hasOwn(this.#dotenv, name) ? this.#dotenv[name] : this.#env(name);
  }

  /** Which source supplies `name`, if any. */
  source(name: string): SecretSource | undefined {
    if (Object.hasOwn(this.#dotenv, name)) return ".env";
    return this.#env(name) === undefined ? undefined : "environment";
  }

  /**
   * The value of `name` in each source, for settings where the two must not shadow each other
   * (consent: `DO_NOT_TRACK` in either forces metrics off; the operator's environment beats `.env`).
   */
  both(name: string): { dotenv?: string; environment?: string } {
    return {
      dotenv: Object.hasOwn(this.#dotenv, name) ? this.#dotenv[name] : undefined,
      environment: this.#env(name),
    };
  }

  /** Names defined in `.env` (values are never listed). */
  dotenvNames(): string[] {
    return Object.keys(this.#dotenv);
  }
}
