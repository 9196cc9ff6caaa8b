/**
 * Usage-metrics consent as `config.yaml` and `.env` say it now, for processes that run for long
 * (the gateway, `agent chat`): an opt-out (`agent metrics disable`, `DO_NOT_TRACK=1` in `.env`)
 * stops their recording and sending at once, not at their next start.
 *
 * @module
 */
import { fileStamp } from "../home/files.ts";
import {
  ConfigSource,
  readUtf8IfExists,
  type ResolvedConfig,
  resolveTelemetry,
  type TelemetrySettings,
} from "../home/config.ts";

/**
 * Consent that follows `config.yaml` and `.env`: each look costs one `stat` of each file, and
 * they are read again only when one of them changed. A file that cannot be read or parsed any
 * more (a hand edit under way) is no consent until it is fixed, said once through `onWarning`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { loadConfig } from "../home/config.ts";
 * import { LiveConsent } from "./consent.ts";
 * const home = await Deno.makeTempDir();
 * const file = `${home}/config.yaml`;
 * Deno.writeTextFileSync(file, "telemetry:\n  shared_metrics:\n    enabled: true\n");
 * const consent = new LiveConsent(loadConfig({ home, env: () => undefined }));
 * assert(consent.current().enabled);
 * Deno.writeTextFileSync(file, "telemetry:\n  shared_metrics:\n    enabled: false\n");
 * assert(!consent.current().enabled);
 * ```
 */
export class LiveConsent {
  readonly #config: ResolvedConfig;
  readonly #warn: (message: string) => void;
  #settings: TelemetrySettings;
  /** What the files looked like when {@linkcode #settings} was resolved; unknown at first. */
  #stamp: string | undefined;
  /** The last problem said, so a broken file is said once, not at every look. */
  #problem: string | undefined;

  constructor(config: ResolvedConfig, onWarning: (message: string) => void = () => {}) {
    this.#config = config;
    this.#warn = onWarning;
    this.#settings = config.telemetry;
  }

  /** The settings as the files say them now. Never throws. */
  current(): TelemetrySettings {
    const stamp = this.#currentStamp();
    if (stamp === this.#stamp) return this.#settings;
    this.#stamp = stamp;
    const { paths, secrets } = this.#config;
    try {
      const source = ConfigSource.read(paths.config);
      this.#settings = resolveTelemetry(
        source,
        secrets.withDotenvText(readUtf8IfExists(paths.dotenv)),
      );
      this.#problem = undefined;
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      this.#settings = {
        enabled: false,
        send: false,
        decidedBy: `the configuration cannot be read (${reason})`,
        warnings: [],
      };
      if (this.#problem !== reason) {
        this.#problem = reason;
        this.#warn(
          `usage metrics are paused: nothing is recorded or sent until the configuration can be ` +
            `read again (${reason})`,
        );
      }
    }
    return this.#settings;
  }

  /** The identity, time and size of `config.yaml` and `.env` (an atomic rewrite is a new file). */
  #currentStamp(): string {
    return [this.#config.paths.config, this.#config.paths.dotenv].map(fileStamp).join("|");
  }
}
