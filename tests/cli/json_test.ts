/**
 * `--json`: every metrics command prints exactly one JSON document on stdout and nothing else,
 * in success and in failure, whatever goes to stderr.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  cli,
  type FakeIoOptions,
  parseOneJson,
  recordEvents,
  SAMPLE_EVENTS,
  startCollector,
  tempHome,
  validPackage,
} from "./_helpers.ts";

interface Case {
  argv: string[];
  code: number;
  options?: FakeIoOptions;
  /** Top-level keys the document must have. */
  keys: string[];
}

async function checkCases(home: string, cases: Case[]): Promise<void> {
  for (const { argv, code, options, keys } of cases) {
    const result = await cli(home, argv, options);
    const label = `agent ${argv.join(" ")}`;
    assert.equal(result.code, code, `${label}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
    const doc = parseOneJson(result.stdout);
    assert.deepEqual(Object.keys(doc).sort(), [...keys].sort(), `${label}: keys`);
    // Warnings go into the document, never as text on stdout; progress only to stderr.
    assert.doesNotMatch(result.stdout, /^(warning|Sending packages)/m, label);
  }
}

const STATUS_KEYS = [
  "enabled",
  "decided_by",
  "send",
  "endpoint",
  "store",
  "store_exists",
  "store_writable",
  "install_id",
  "pending_counters",
  "pending_events",
  "packages",
  "sending_now",
  "deferred",
  "due_now",
  "warnings",
];
const CONSENT_KEYS = [
  "enabled",
  "decided_by",
  "send",
  "endpoint",
  "config",
  "replaced",
  "warnings",
];

Deno.test("--json on a fresh home: one document per command", async () => {
  await using h = await tempHome();
  await checkCases(h.home, [
    { argv: ["metrics", "status", "--json"], code: 0, keys: STATUS_KEYS },
    { argv: ["metrics", "preview", "--json"], code: 0, keys: ["packages", "warnings"] },
    { argv: ["metrics", "export", "--json"], code: 0, keys: ["packages", "sent", "warnings"] },
    { argv: ["metrics", "reset", "--json"], code: 0, keys: ["deleted", "path", "warnings"] },
    { argv: ["metrics", "send", "--json"], code: 1, keys: ["error"] },
    { argv: ["metrics", "enable", "--send", "--json"], code: 2, keys: ["error"] },
    {
      argv: ["metrics", "enable", "--endpoint", "http://example.com/", "--json"],
      code: 2,
      keys: ["error"],
    },
    { argv: ["metrics", "disable", "--json"], code: 0, keys: CONSENT_KEYS },
    { argv: ["metrics", "enable", "--json"], code: 0, keys: CONSENT_KEYS },
  ]);
});

Deno.test("--json with data, sending on, and a terminal on stderr: stdout stays pure", async () => {
  await using h = await tempHome();
  await using collector = startCollector(202);
  const enabled = await cli(h.home, [
    "metrics",
    "enable",
    "--send",
    "--endpoint",
    collector.endpoint,
    "--json",
  ]);
  assert.equal(parseOneJson(enabled.stdout).send, true);
  recordEvents(h.home, SAMPLE_EVENTS);
  const tty: FakeIoOptions = { stderrIsTerminal: true, stdinIsTerminal: true };

  await checkCases(h.home, [
    { argv: ["metrics", "status", "--json"], code: 0, keys: STATUS_KEYS },
    { argv: ["metrics", "preview", "--json"], code: 0, keys: ["packages", "warnings"] },
  ]);
  const exported = await cli(h.home, ["metrics", "export", "--json"], tty);
  assert.equal(exported.code, 0, exported.stderr);
  const doc = parseOneJson(exported.stdout) as { sent: { status: string }[] };
  assert.deepEqual(doc.sent.map((s) => s.status), ["sent"]);
  assert.match(exported.stderr, /Sending packages to http:\/\/127\.0\.0\.1:\d+/);

  await checkCases(h.home, [
    { argv: ["metrics", "send", "--json"], code: 0, options: tty, keys: ["sent", "warnings"] },
    {
      argv: ["metrics", "reset", "--json"],
      code: 1,
      options: { ...tty, confirms: [false] },
      keys: ["error"],
    },
    { argv: ["metrics", "reset", "--json"], code: 2, keys: ["error"] },
    {
      argv: ["metrics", "reset", "--yes", "--json"],
      code: 0,
      keys: ["deleted", "path", "warnings"],
    },
    { argv: ["metrics", "disable", "--json"], code: 0, keys: CONSENT_KEYS },
  ]);
});

Deno.test("--json with warnings: each is in the document and once on stderr, as without --json", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(
    join(h.home, "config.yaml"),
    "telemetry:\n  shared_metrics:\n    enabled: true\n    send: true\n",
  );
  const result = await cli(h.home, ["metrics", "status", "--json"]);
  assert.equal(result.code, 0);
  const doc = parseOneJson(result.stdout) as { send: boolean; warnings: string[] };
  assert.equal(doc.send, false);
  assert.equal(doc.warnings.length, 1);
  assert.match(doc.warnings[0], /endpoint is not set/);
  assert.equal(result.stderr, `warning: ${doc.warnings[0]}\n`);

  const text = await cli(h.home, ["metrics", "status"]);
  assert.equal(text.stderr, result.stderr);
});

Deno.test("validate --json: one document of one shape for one file, several files, and errors", async () => {
  await using h = await tempHome();
  const file = join(h.home, "p.json");
  Deno.writeTextFileSync(file, JSON.stringify(validPackage()));
  const notJson = join(h.home, "n.json");
  Deno.writeTextFileSync(notJson, "{");
  const keys = ["valid", "results", "warnings"];
  await checkCases(h.home, [
    { argv: ["metrics", "validate", file, "--json"], code: 0, keys },
    { argv: ["metrics", "validate", "--json", notJson], code: 2, keys },
    { argv: ["metrics", "validate", "--json", file, notJson], code: 2, keys },
    {
      argv: ["metrics", "validate", "--json", "-"],
      code: 0,
      options: { stdin: JSON.stringify(validPackage()) },
      keys,
    },
    { argv: ["metrics", "validate", "--json", join(h.home, "missing.json")], code: 2, keys },
    { argv: ["metrics", "validate", "--json", h.home], code: 2, keys },
  ]);
});

Deno.test("a usage error caught by the argument parser is a JSON document too with --json", async () => {
  await using h = await tempHome();
  for (
    const argv of [["metrics", "validate", "--json"], ["metrics", "status", "--json", "--bogus"]]
  ) {
    const result = await cli(h.home, argv);
    assert.equal(result.code, 2, argv.join(" "));
    const doc = parseOneJson(result.stdout) as { error: { message: string; exit_code: number } };
    assert.equal(doc.error.exit_code, 2);
    assert.match(doc.error.message, /missing required argument|unknown option/);
    // The document is the answer: no text error besides it on stderr, as for any other error.
    assert.equal(result.stderr, "", argv.join(" "));
  }
});
