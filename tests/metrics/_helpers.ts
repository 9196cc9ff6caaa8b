/** Shared helpers of the metrics tests. */
import type { MetricsResource } from "../../src/metrics/contract.ts";
import { MetricsStore } from "../../src/metrics/store.ts";

/** A fixed resource tuple. */
export const RESOURCE: MetricsResource = {
  agent_version: "0.1.0",
  architecture: "x86_64",
  install_method: "git",
  os_family: "linux",
};

/** A settable clock. */
export class TestClock {
  ms: number;
  constructor(iso: string) {
    this.ms = Date.parse(iso);
  }
  now = (): number => this.ms;
  set(iso: string): void {
    this.ms = Date.parse(iso);
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

/** A temp folder with a fresh store; removed on dispose. */
export async function tempStore(): Promise<
  { dir: string; store: MetricsStore; outbox: string } & AsyncDisposable
> {
  const dir = await Deno.makeTempDir({ prefix: "metrics-test-" });
  const store = MetricsStore.open(`${dir}/metrics.sqlite3`);
  return {
    dir,
    store,
    outbox: `${dir}/outbox`,
    async [Symbol.asyncDispose]() {
      store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** Names of the files in `dir` (none when it does not exist). */
export function listFiles(dir: string): string[] {
  try {
    return [...Deno.readDirSync(dir)].map((entry) => entry.name).sort();
  } catch {
    return [];
  }
}

/** Sum of `value` per metric name over packages. */
export function sumByName(
  packages: { metrics: { name: string; value: number }[] }[],
): Record<string, number> {
  const sums: Record<string, number> = {};
  for (const pkg of packages) {
    for (const item of pkg.metrics) sums[item.name] = (sums[item.name] ?? 0) + item.value;
  }
  return sums;
}
