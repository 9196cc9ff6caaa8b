/**
 * The lock that makes a gateway the only one serving its `<home>` (`<home>/gateway/inbox.sqlite3.lock`,
 * an `flock` held for as long as the gateway runs, released by the system however the process
 * ends), and the question other commands ask of it: does a gateway serve this home now, and on
 * which port (written into the lock file once it listens)?
 *
 * @module
 */
import { dirname } from "node:path";
import { ensurePrivateDir } from "../home/files.ts";

/** Another gateway already serves this `<home>`. */
export class GatewayBusyError extends Error {
  override name = "GatewayBusyError";
}

/**
 * How long a starting gateway retries a lock held by someone else: {@linkcode gatewayRunning}
 * holds it for a moment only, and must not make a gateway starting then refuse to run.
 */
const PROBE_GRACE_MS = 250;
const RETRY_EVERY_MS = 10;

/**
 * Takes the lock that makes a gateway the only one on its `<home>`: two would take each other's
 * runs and claims for those of a crashed process at start, and run and deliver them twice.
 * Held until the returned file is closed (or the process ends, however it ends). Rejects with a
 * {@linkcode GatewayBusyError} while another gateway holds it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { gatewayRunning, lockGatewayHome } from "./home_lock.ts";
 * const path = `${await Deno.makeTempDir()}/gateway/inbox.sqlite3.lock`;
 * const lock = await lockGatewayHome(path);
 * assert.equal(gatewayRunning(path), true);
 * lock.close();
 * assert.equal(gatewayRunning(path), false);
 * ```
 */
export async function lockGatewayHome(path: string): Promise<Deno.FsFile> {
  ensurePrivateDir(dirname(path));
  const file = Deno.openSync(path, { read: true, write: true, create: true, mode: 0o600 });
  const deadline = Date.now() + PROBE_GRACE_MS;
  while (!file.tryLockSync(true)) {
    if (Date.now() >= deadline) {
      file.close();
      throw new GatewayBusyError(
        `another gateway is running on this home (it holds the lock ${path}). Stop it first, or ` +
          "give this one a home of its own (AGENT_HOME)",
      );
    }
    await new Promise((resolve) => setTimeout(resolve, RETRY_EVERY_MS));
  }
  // Where a gateway that ran before listened is not where this one will.
  file.truncateSync(0);
  return file;
}

/**
 * Writes where the gateway holding `lock` listens into the lock file, for
 * {@linkcode runningGateway}: `agent gateway setup` tells by it whether a port in use is this
 * home's gateway. Emptied again by the next {@linkcode lockGatewayHome}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { lockGatewayHome, recordGatewayAddress, runningGateway } from "./home_lock.ts";
 * const path = `${await Deno.makeTempDir()}/gateway/inbox.sqlite3.lock`;
 * const lock = await lockGatewayHome(path);
 * assert.deepEqual(runningGateway(path), { running: true });
 * recordGatewayAddress(lock, { hostname: "::", port: 8644 });
 * assert.deepEqual(runningGateway(path), { running: true, hostname: "::", port: 8644 });
 * lock.close();
 * assert.deepEqual(runningGateway(path), { running: false });
 * ```
 */
export function recordGatewayAddress(
  lock: Deno.FsFile,
  address: { hostname: string; port: number },
): void {
  const text = `${JSON.stringify({ hostname: address.hostname, port: address.port })}\n`;
  lock.truncateSync(0);
  lock.seekSync(0, Deno.SeekMode.Start);
  const bytes = new TextEncoder().encode(text);
  for (let written = 0; written < bytes.length;) {
    written += lock.writeSync(bytes.subarray(written));
  }
}

/**
 * What {@linkcode runningGateway} can tell of a home's gateway: whether it runs (`undefined`: it
 * cannot be told), and, once it listens, where ({@linkcode recordGatewayAddress}).
 */
export type GatewayState =
  | { running: false | undefined }
  | { running: true; hostname?: string; port?: number };

/**
 * Whether a gateway holds the lock at `path` now (see {@linkcode lockGatewayHome}): `false` when
 * the lock is free or was never created, `undefined` when it cannot be told (the file cannot be
 * opened, e.g. it belongs to another user). Never creates anything. The lock is tried shared and
 * let go at once; a gateway starting meanwhile waits for that.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { gatewayRunning } from "./home_lock.ts";
 * assert.equal(gatewayRunning(`${await Deno.makeTempDir()}/gateway/inbox.sqlite3.lock`), false);
 * ```
 */
export function gatewayRunning(path: string): boolean | undefined {
  return runningGateway(path).running;
}

/**
 * Whether a gateway holds the lock at `path` now (as {@linkcode gatewayRunning}), and where it
 * listens when it recorded that ({@linkcode recordGatewayAddress}); a gateway still starting has
 * not yet.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { runningGateway } from "./home_lock.ts";
 * const path = `${await Deno.makeTempDir()}/gateway/inbox.sqlite3.lock`;
 * assert.deepEqual(runningGateway(path), { running: false });
 * ```
 */
export function runningGateway(path: string): GatewayState {
  let file: Deno.FsFile;
  try {
    file = Deno.openSync(path, { read: true });
  } catch (error) {
    return { running: error instanceof Deno.errors.NotFound ? false : undefined };
  }
  try {
    if (file.tryLockSync(false)) return { running: false };
  } catch {
    return { running: undefined };
  } finally {
    file.close(); // closing releases a lock taken
  }
  return { running: true, ...recordedAddress(path) };
}

/** The address in the lock file, if one was recorded whole. */
function recordedAddress(path: string): { hostname?: string; port?: number } {
  try {
    const { hostname, port } = JSON.parse(Deno.readTextFileSync(path));
    return typeof hostname === "string" && Number.isSafeInteger(port) ? { hostname, port } : {};
  } catch {
    return {}; // not written yet, or being written
  }
}
