/**
 * The usage-metrics settings' warnings (a `send: true` that sends nothing, an
 * `AGENT_SHARED_METRICS` that is not true or false, an endpoint not used while metrics are off)
 * from every metrics command that reads them: once on stderr after the config file's, with
 * `--json` too, where they are also in `warnings` (an error document has none: stderr keeps
 * them). `send` leaves out the two its refusal says in other words.
 */
import assert from "node:assert/strict";
import { cli, parseOneJson, tempHome } from "./_helpers.ts";

/** Runs `agent metrics <argv>` with and without --json and checks what it says, and where. */
async function assertWarns(
  home: string,
  argv: string[],
  expected: { code: number; warnings: string[]; fileWarning: string; env?: Record<string, string> },
): Promise<void> {
  for (const json of [false, true]) {
    const label = `agent metrics ${argv.join(" ")}${json ? " --json" : ""}`;
    const result = await cli(home, ["metrics", ...argv, ...(json ? ["--json"] : [])], {
      env: expected.env,
    });
    assert.equal(result.code, expected.code, `${label}\n${result.stdout}\n${result.stderr}`);
    const said = result.stderr.split("\n").filter((line) => line.startsWith("warning: "));
    assert.deepEqual(
      said,
      [expected.fileWarning, ...expected.warnings].map((warning) => `warning: ${warning}`),
      label,
    );
    if (!json) continue;
    const doc = parseOneJson(result.stdout);
    // A refusal's document is the error alone, as every command's: its warnings are on stderr.
    assert.deepEqual(
      doc.warnings,
      expected.code === 0 ? [expected.fileWarning, ...expected.warnings] : undefined,
      label,
    );
  }
}

Deno.test("metrics status, preview, export and enable say send: true without an endpoint once; send's refusal says it itself", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(
    h.config,
    "modle: x\ntelemetry:\n  shared_metrics:\n    enabled: true\n    send: true\n",
  );
  const fileWarning = `${h.config}:1: modle: unknown key \`modle\` is ignored; did you mean ` +
    "`model`?";
  const noEndpoint = "telemetry.shared_metrics.send is true but telemetry.shared_metrics." +
    "endpoint is not set; nothing is sent";
  for (const argv of [["status"], ["preview"], ["export"], ["enable"]]) {
    await assertWarns(h.home, argv, { code: 0, warnings: [noEndpoint], fileWarning });
  }
  await assertWarns(h.home, ["send"], { code: 1, warnings: [], fileWarning });
  const send = await cli(h.home, ["metrics", "send"]);
  assert.match(send.stderr, /^agent: sending is on but .* is not set in .*, so nothing is sent/m);
});

Deno.test("metrics status, preview, export, send and disable say an ignored AGENT_SHARED_METRICS and an endpoint not used while off, once", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(
    h.config,
    "modle: x\ntelemetry:\n  shared_metrics:\n    endpoint: http://metrics.example.com/v2\n",
  );
  const fileWarning = `${h.config}:1: modle: unknown key \`modle\` is ignored; did you mean ` +
    "`model`?";
  const maybe = "AGENT_SHARED_METRICS=maybe in the environment is not true or false; ignored";
  const unused = `${h.config}:4 (key telemetry.shared_metrics.endpoint): ` +
    'telemetry.shared_metrics.endpoint uses http:// to "metrics.example.com", which is not a ' +
    "loopback host; it must be an https:// URL, or http:// only to a loopback host (127.0.0.1, " +
    "[::1], localhost); not used while usage metrics are off. Fix: set it to an https:// URL " +
    "(or http:// to 127.0.0.1, [::1] or localhost), or run `agent metrics enable --endpoint " +
    "<url>` before enabling them";
  const env = { AGENT_SHARED_METRICS: "maybe" };
  for (const argv of [["status"], ["preview"], ["export"]]) {
    await assertWarns(h.home, argv, { code: 0, warnings: [maybe, unused], fileWarning, env });
  }
  // Said before the refusal, which names only what decided that metrics are off.
  await assertWarns(h.home, ["send"], { code: 1, warnings: [maybe, unused], fileWarning, env });
  // disable writes enabled: false, so the environment's default no longer counts.
  await assertWarns(h.home, ["disable"], { code: 0, warnings: [unused], fileWarning, env });
});
