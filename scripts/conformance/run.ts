/**
 * Runs the MCP conformance suite's client scenarios against `client.ts` and prints one line
 * per scenario, then `N passed, M failed` (checks across all scenarios).
 *
 * Usage: deno task conformance [scenario ...]   (default: initialize tools_call sse-retry)
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const DEFAULT_SCENARIOS = ["initialize", "tools_call", "sse-retry"];
const scenarios = Deno.args.length > 0 ? Deno.args : DEFAULT_SCENARIOS;
const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const config = join(root, "deno.json");
const client = `${Deno.execPath()} run -A --config ${config} ${
  join(root, "scripts", "conformance", "client.ts")
}`;
const workdir = await Deno.makeTempDir({ prefix: "conformance-" });

let passed = 0;
let failed = 0;
try {
  for (const scenario of scenarios) {
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "--config",
        config,
        "npm:@modelcontextprotocol/conformance@0.1.16",
        "client",
        "--command",
        client,
        "--scenario",
        scenario,
        "--timeout",
        "60000",
      ],
      cwd: workdir,
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
    const summary = /Passed: (\d+)\/(\d+), (\d+) failed/.exec(text);
    if (!summary) {
      failed++;
      console.log(`${scenario}: no result (exit ${output.code})\n${text.slice(-2000)}`);
      continue;
    }
    const [ok, total, bad] = [Number(summary[1]), Number(summary[2]), Number(summary[3])];
    passed += ok;
    failed += bad;
    console.log(`${scenario}: ${ok}/${total} checks passed${bad ? `, ${bad} failed` : ""}`);
    if (bad) console.log(text.split("\n").filter((line) => /FAILURE/.test(line)).join("\n"));
  }
} finally {
  await Deno.remove(workdir, { recursive: true });
}
console.log(`${passed} passed, ${failed} failed`);
Deno.exit(failed > 0 ? 1 : 0);
