/** Shared helpers of the `<home>` tests, and of the tests of settings read from config.yaml. */
import assert from "node:assert/strict";
import process from "node:process";
import { ConfigError } from "../../src/home/errors.ts";
import type { EnvReader } from "../../src/home/paths.ts";

/** An environment reader over a fixed record; the real process environment is never read. */
export function envOf(vars: Record<string, string> = {}): EnvReader {
  return (name) => Object.hasOwn(vars, name) ? vars[name] : undefined;
}

/** Permission bits of `path` (e.g. `0o600`). */
export function modeOf(path: string): number {
  const mode = Deno.statSync(path).mode;
  if (mode === null) throw new Error(`no mode for ${path} on this platform`);
  return mode & 0o777;
}

/** Names in `dir`, sorted. */
export function namesIn(dir: string): string[] {
  return [...Deno.readDirSync(dir)].map((entry) => entry.name).sort();
}

/** Runs `body` with a fresh temp folder and removes the folder afterwards. */
export async function withTempDir<T>(body: (dir: string) => T | Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "home-test-" });
  try {
    return await body(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Escapes `text` for use inside a regular expression. */
export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Runs `body`, asserts it throws a ConfigError and returns it. */
export function configError(body: () => unknown): ConfigError {
  try {
    body();
  } catch (error) {
    assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${error}`);
    return error;
  }
  assert.fail("expected a ConfigError, nothing was thrown");
}

/**
 * Collects what libraries would print as warnings (`process.emitWarning`, `console.warn`) while
 * the result is not disposed; use with `using`.
 */
export function collectWarnings(): { warnings: unknown[] } & Disposable {
  const warnings: unknown[] = [];
  const { emitWarning } = process;
  const { warn } = console;
  process.emitWarning = (warning: string | Error) => void warnings.push(warning);
  console.warn = (...args: unknown[]) => void warnings.push(args);
  return {
    warnings,
    [Symbol.dispose]: () => {
      process.emitWarning = emitWarning;
      console.warn = warn;
    },
  };
}
