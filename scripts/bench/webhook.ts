/**
 * Webhook intake benchmark: `deno run -A scripts/bench/webhook.ts [--duration 10]
 * [--connections 32] [--threads 2] [--warmup 3] [--only ours,floor,ceiling,adnanh]
 * [--rate-window 60] [--cpu-prof <dir>]`.
 *
 * Drives four servers, one after another (never at once), with the same `wrk` settings and the
 * same signed GitHub `issues` POST (fixed body and X-Hub-Signature-256, a unique
 * X-GitHub-Delivery per request, see webhook_wrk.lua), after a short warm-up run each:
 * - ours: the real `deno run -A main.ts gateway run` on a temp <home>, with a subscription made by
 *   `agent webhook subscribe`; every request is answered 202 once its event is committed to the
 *   durable inbox (checked against the inbox afterwards);
 * - floor: the ceiling plus the least that "202 only after commit" needs: JSON parse, a
 *   delivery-id claim and the insert of the event into SQLite, answered after its (group)
 *   commit (webhook_floor.ts); not a target, it shows what durability alone costs here;
 * - ceiling: a bare `Deno.serve` handler in its own process that reads the body, checks the
 *   HMAC-SHA256 signature in constant time and answers 202 (webhook_ceiling.ts);
 * - adnanh/webhook: one hook whose trigger rule is `payload-hmac-sha256` on the same header and
 *   secret, running /bin/true and answering 202.
 * Before measuring, each server must accept a correctly signed request and reject a wrongly
 * signed and an unsigned one; otherwise the benchmark stops. Prints accepted requests/s, latency
 * p50/p99, non-2xx counts and the server's CPU time per accepted request (which, unlike
 * throughput, other load on the machine hardly changes), then the targets: ours ≥ 50 % of the
 * ceiling, ours ≥ 3× adnanh, our p99 < 25 ms, and the CPU time per request each throughput
 * target leaves a server once wrk has had its share (both cores busy all the time). Exits 1 when a measured target is missed; a missing `wrk` or `webhook`
 * binary is reported with its Debian package and skips only what needs it (exit 0).
 * `--rate-window` sets our route's rate-limit window (its limit is far above what is sent);
 * `--cpu-prof <dir>` writes a V8 CPU profile of our gateway there.
 */
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { githubSignature } from "../../src/webhook/signatures.ts";
import { startFakeModel } from "../../tests/fixtures/fake_model.ts";
import { ROOT } from "./_fixture.ts";

const SERVERS = ["ours", "floor", "ceiling", "adnanh"] as const;
type ServerName = typeof SERVERS[number];
const TARGET_CEILING_SHARE = 0.5;
const TARGET_ADNANH_RATIO = 3;
const TARGET_P99_MS = 25;
/** How long the model of our gateway's runs takes to answer: about a fast real model's turn. */
const MODEL_LATENCY_MS = 2_000;
const SECRET = "bench-secret-4f1d0c5e9a7b2d8c";
const EVENT = "issues";
const LUA = join(ROOT, "scripts", "bench", "webhook_wrk.lua");
const CEILING = join(ROOT, "scripts", "bench", "webhook_ceiling.ts");
const FLOOR = join(ROOT, "scripts", "bench", "webhook_floor.ts");

/** A GitHub `issues` / `opened` delivery, trimmed to the fields a triage prompt uses (≈2 KB). */
const PAYLOAD = {
  action: "opened",
  issue: {
    url: "https://api.github.com/repos/octo-org/hello-world/issues/1347",
    html_url: "https://github.com/octo-org/hello-world/issues/1347",
    id: 1_234_567_890,
    number: 1347,
    title: "Gateway drops the second delivery when two arrive in the same second",
    user: { login: "octocat", id: 583_231, type: "User" },
    labels: [{ id: 208_045_946, name: "bug", color: "f29513", default: true }],
    state: "open",
    locked: false,
    assignees: [],
    comments: 0,
    created_at: "2026-03-10T12:00:00Z",
    updated_at: "2026-03-10T12:00:00Z",
    author_association: "CONTRIBUTOR",
    body: "Steps to reproduce:\n\n1. Subscribe a route with `agent webhook subscribe`.\n" +
      "2. Send two deliveries within one second.\n3. Only the first one is run.\n\n" +
      "Expected: both are run. Seen on v0.1.0, Linux x86_64. ".repeat(4),
  },
  repository: {
    id: 1_296_269,
    name: "hello-world",
    full_name: "octo-org/hello-world",
    private: false,
    owner: { login: "octo-org", id: 9_919, type: "Organization" },
    html_url: "https://github.com/octo-org/hello-world",
    default_branch: "main",
    open_issues_count: 42,
  },
  organization: { login: "octo-org", id: 9_919 },
  sender: { login: "octocat", id: 583_231, type: "User" },
};
const PROMPT = "Triage issue #{issue.number} in {repository.full_name} by {sender.login}: " +
  "{issue.title}\n\n{issue.body}";

interface WrkFigures {
  requests: number;
  duration_us: number;
  non2xx: number;
  connect: number;
  read: number;
  write: number;
  timeout: number;
  p50_us: number;
  p90_us: number;
  p99_us: number;
  max_us: number;
}

interface Measured {
  server: ServerName;
  label: string;
  wrk: WrkFigures;
  acceptedPerSecond: number;
  /** The server's CPU time (with its reaped children) per accepted request, in µs (Linux). */
  cpuPerRequestUs?: number;
  /** The server's busiest thread over the run: its name and its share of one core (Linux). */
  busiestThread?: { name: string; share: number };
  /** The share of all the machine's CPU time that was busy over the run, wrk included (Linux). */
  machineBusy?: number;
  note?: string;
}

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    duration: { type: "string", default: "10" },
    warmup: { type: "string", default: "3" },
    connections: { type: "string", default: "32" },
    threads: { type: "string", default: "2" },
    only: { type: "string", default: SERVERS.join(",") },
    "rate-window": { type: "string", default: "60" },
    "cpu-prof": { type: "string" },
  },
});
const duration = positiveInt("duration", flags.duration);
const warmup = positiveInt("warmup", flags.warmup);
const connections = positiveInt("connections", flags.connections);
const threads = Math.min(positiveInt("threads", flags.threads), connections);
const rateWindow = positiveInt("rate-window", flags["rate-window"]);
const only = flags.only.split(",").map((name) => name.trim()).filter(Boolean);
for (const name of only) {
  if (!(SERVERS as readonly string[]).includes(name)) {
    usage(`--only: unknown server '${name}'; use ${SERVERS.join(", ")}`);
  }
}

const wrkPath = which("wrk");
const webhookPath = which("webhook");
if (!wrkPath) {
  console.log(
    "wrk is not installed, so nothing can be measured: install the Debian package `wrk` " +
      "(sudo apt-get install wrk) and run this again.",
  );
  Deno.exit(0);
}

const body = JSON.stringify(PAYLOAD);
const signature = githubSignature(SECRET, body);
const work = await Deno.makeTempDir({ prefix: "webhook-bench-" });
const bodyFile = join(work, "body.json");
Deno.writeTextFileSync(bodyFile, body);
/** Every process started here, so that cleanup can end them whatever happened. */
const children = new Set<Deno.ChildProcess>();
let cleaned: Promise<void> | undefined;
const onInterrupt = () => cleanup().finally(() => Deno.exit(130));
Deno.addSignalListener("SIGINT", onInterrupt);

const results: Measured[] = [];
const skipped: string[] = [];
try {
  console.log(
    `webhook intake: wrk -t${threads} -c${connections} -d${duration}s --latency ` +
      `(warm-up ${warmup} s) on ${navigator.hardwareConcurrency} cores; ` +
      `signed POST of ${body.length.toLocaleString("en")} bytes, unique X-GitHub-Delivery each`,
  );
  for (const name of SERVERS) {
    if (!only.includes(name)) continue;
    if (name === "adnanh" && !webhookPath) {
      const message = "adnanh/webhook is not installed: install the Debian package `webhook` " +
        "(sudo apt-get install webhook) to compare with it";
      console.log(message);
      skipped.push(message);
      continue;
    }
    results.push(await measure(name));
  }
} finally {
  await cleanup();
  Deno.removeSignalListener("SIGINT", onInterrupt);
}
report();

// ---------------------------------------------------------------------------------------------

async function measure(name: ServerName): Promise<Measured> {
  const server = name === "ours"
    ? await startOurs()
    : name === "floor"
    ? await startFloor()
    : name === "ceiling"
    ? await startCeiling()
    : await startAdnanh();
  try {
    await checkSignatures(server.label, server.url, server.acceptedBody);
    const busy = await otherLoad(server.pid);
    if (busy !== undefined && busy > 0.1) {
      console.log(
        `  warning: the CPUs were ${(busy * 100).toFixed(0)} % busy with other work just ` +
          "before this measurement; its figures may be low",
      );
    }
    await runWrk(server.url, warmup, `${name}-warm`);
    const cpuBefore = cpuTimeUs(server.pid);
    const threadsBefore = threadTicks(server.pid);
    const machineBefore = machineTicks();
    const wrk = await runWrk(server.url, duration, `${name}-run`);
    const cpuAfter = cpuTimeUs(server.pid);
    const threadsAfter = threadTicks(server.pid);
    const machineAfter = machineTicks();
    const accepted = wrk.requests - wrk.non2xx;
    const measured: Measured = {
      server: name,
      label: server.label,
      wrk,
      acceptedPerSecond: accepted / (wrk.duration_us / 1e6),
      cpuPerRequestUs: cpuBefore === undefined || cpuAfter === undefined
        ? undefined
        : (cpuAfter - cpuBefore) / accepted,
      busiestThread: busiest(threadsBefore, threadsAfter, wrk.duration_us),
      machineBusy: machineBefore && machineAfter
        ? (machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total)
        : undefined,
    };
    if (server.afterRun) measured.note = server.afterRun(`${name}-run`, accepted);
    console.log(
      `  ${server.label}: ${fmtRate(measured.acceptedPerSecond)} accepted/s, p50 ${
        fmtMs(wrk.p50_us)
      }, p99 ${fmtMs(wrk.p99_us)}, non-2xx ${wrk.non2xx}`,
    );
    if (measured.note) console.log(`    ${measured.note}`);
    if (measured.busiestThread && measured.machineBusy !== undefined) {
      console.log(
        `    busiest thread: ${measured.busiestThread.name}, ${
          (measured.busiestThread.share * 100).toFixed(0)
        } % of a core; all CPUs ${(measured.machineBusy * 100).toFixed(0)} % busy (wrk included)`,
      );
    }
    return measured;
  } finally {
    await server.stop();
  }
}

interface RunningServer {
  label: string;
  url: string;
  pid: number;
  /** Checks the answer to a correctly signed request beyond its status. */
  acceptedBody?: (status: number, text: string) => string | undefined;
  /** Checks what the server did with the measured run (tag of its delivery ids). */
  afterRun?: (tag: string, accepted: number) => string;
  stop(): Promise<void>;
}

/**
 * The real gateway on a temp <home>. The route is `deliver: log`, and the model is a local
 * OpenAI-compatible server (tests/fixtures/fake_model.ts) answering each run after
 * {@linkcode MODEL_LATENCY_MS}, as a real model takes seconds. So while requests are measured its
 * 2 workers take committed events from the inbox, run them (waiting on the model as in real use),
 * record the answer, write it to the `log` target (logs/gateway.log) and mark the event done.
 */
async function startOurs(): Promise<RunningServer> {
  const home = join(work, "home");
  Deno.mkdirSync(home, { recursive: true });
  const port = freePort();
  // Far above what is sent in one window, so that it never answers 429; the limiter still runs.
  // 60 s is the window of the documented `rate_limit: <requests per minute>` form.
  const rateLimit = 10_000_000;
  const model = await startFakeModel({
    fallback: { content: "Triaged: a bug in the gateway's intake.", delayMs: MODEL_LATENCY_MS },
  });
  Deno.writeTextFileSync(
    join(home, "config.yaml"),
    "platforms:\n  webhook:\n    enabled: true\n    extra:\n      host: 127.0.0.1\n" +
      `      port: ${port}\n      rate_limit:\n        requests: ${rateLimit}\n` +
      `        window_seconds: ${rateWindow}\n` +
      `model:\n  default: gpt-4.1-mini\n  base_url: ${JSON.stringify(model.baseUrl)}\n`,
  );
  Deno.writeTextFileSync(join(home, ".env"), "WEBHOOK_SECRET=unused-global-secret\n");
  const env = denoEnv({ AGENT_HOME: home, NO_COLOR: "1" });
  const subscribe = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "main.ts",
      "webhook",
      "subscribe",
      "bench",
      "--json",
      "--events",
      EVENT,
      "--deliver",
      "log",
      "--prompt",
      PROMPT,
      "--secret",
      SECRET,
    ],
    cwd: ROOT,
    clearEnv: true,
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  if (!subscribe.success) {
    throw new Error(`agent webhook subscribe failed:\n${decoder.decode(subscribe.stderr)}`);
  }
  const url = JSON.parse(decoder.decode(subscribe.stdout)).webhook_url.replace(
    "localhost",
    "127.0.0.1",
  );
  const profile = flags["cpu-prof"];
  const child = spawn(Deno.execPath(), [
    "run",
    "-A",
    ...(profile ? ["--cpu-prof", `--cpu-prof-dir=${profile}`] : []),
    "main.ts",
    "gateway",
    "run",
  ], env);
  const output = drain(child);
  await output.until("Press Ctrl-C to stop.", "the gateway");
  const inboxPath = join(home, "gateway", "inbox.sqlite3");
  return {
    label: "ours (agent gateway)",
    url,
    pid: child.pid,
    acceptedBody: (_status, text) => {
      const answer = JSON.parse(text);
      return answer.status === "accepted" ? undefined : `answered ${text}, not accepted`;
    },
    afterRun: (tag, accepted) => {
      const db = new DatabaseSync(inboxPath);
      try {
        const rows = db.prepare(
          "SELECT state, COUNT(*) AS n FROM events WHERE delivery_id LIKE ? GROUP BY state",
        ).all(`${tag}-%`) as { state: string; n: number }[];
        const byState = Object.fromEntries(rows.map((row) => [row.state, Number(row.n)]));
        const committed = rows.reduce((sum, row) => sum + Number(row.n), 0);
        // wrk counts responses that arrived in time; requests under way at the end may commit too.
        if (committed < accepted || committed > accepted + connections) {
          throw new Error(
            `ours: wrk counted ${accepted} accepted answers but the inbox holds ${committed} ` +
              `events of this run; some 2xx answers were not durable enqueues`,
          );
        }
        const finished = (byState.done ?? 0) + (byState.failed ?? 0);
        // The warm-up's events come first in the queue, so count what the workers did overall.
        const { total, done } = db.prepare(
          "SELECT COUNT(*) AS total, SUM(state IN ('done', 'failed')) AS done FROM events",
        ).get() as { total: number; done: number | null };
        return `inbox: ${committed.toLocaleString("en")} events of this run committed; the ` +
          `workers had finished ${finished.toLocaleString("en")} of them and ` +
          `${Number(done ?? 0).toLocaleString("en")} of all ${
            Number(total).toLocaleString("en")
          } ` +
          `(each run waits ${MODEL_LATENCY_MS / 1000} s for the model)`;
      } finally {
        db.close();
      }
    },
    stop: async () => {
      await stopChild(child, "the gateway");
      await model[Symbol.asyncDispose]();
    },
  };
}

async function startFloor(): Promise<RunningServer> {
  const database = join(work, "floor.sqlite3");
  const child = spawn(
    Deno.execPath(),
    ["run", "-A", "--quiet", FLOOR],
    denoEnv({ BENCH_SECRET: SECRET, BENCH_DB: database }),
  );
  const output = drain(child);
  const port = Number(
    /listening (\d+)/.exec(await output.until("\n", "the floor server"))![1],
  );
  return {
    label: "floor (+ parse, SQLite commit)",
    url: `http://127.0.0.1:${port}/webhooks/bench`,
    pid: child.pid,
    afterRun: (tag, accepted) => {
      const db = new DatabaseSync(database);
      try {
        const { n } = db.prepare("SELECT COUNT(*) AS n FROM events WHERE delivery_id LIKE ?")
          .get(`${tag}-%`) as { n: number };
        if (Number(n) < accepted) {
          throw new Error(
            `floor: wrk counted ${accepted} accepted answers but only ${n} committed`,
          );
        }
        return `committed: ${Number(n).toLocaleString("en")} events of this run`;
      } finally {
        db.close();
      }
    },
    stop: () => stopChild(child, "the floor server"),
  };
}

async function startCeiling(): Promise<RunningServer> {
  const child = spawn(
    Deno.execPath(),
    ["run", "-A", "--quiet", CEILING],
    denoEnv({ BENCH_SECRET: SECRET }),
  );
  const output = drain(child);
  const port = Number(
    /listening (\d+)/.exec(await output.until("\n", "the ceiling server"))![1],
  );
  return {
    label: "ceiling (bare Deno.serve + HMAC)",
    url: `http://127.0.0.1:${port}/webhooks/bench`,
    pid: child.pid,
    stop: () => stopChild(child, "the ceiling server"),
  };
}

async function startAdnanh(): Promise<RunningServer> {
  const hooks = join(work, "hooks.json");
  Deno.writeTextFileSync(
    hooks,
    JSON.stringify([{
      id: "bench",
      "execute-command": "/bin/true",
      "response-message": "accepted",
      "success-http-response-code": 202,
      "trigger-rule-mismatch-http-response-code": 401,
      "trigger-rule": {
        match: {
          type: "payload-hmac-sha256",
          secret: SECRET,
          parameter: { source: "header", name: "X-Hub-Signature-256" },
        },
      },
    }]),
  );
  const port = freePort();
  const child = spawn(webhookPath!, [
    "-hooks",
    hooks,
    "-port",
    String(port),
    "-ip",
    "127.0.0.1",
  ], { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" });
  const output = drain(child);
  await untilListening(port, child, output, "adnanh/webhook");
  return {
    label: `adnanh/webhook ${await webhookVersion()} (/bin/true)`,
    url: `http://127.0.0.1:${port}/hooks/bench`,
    pid: child.pid,
    stop: () => stopChild(child, "adnanh/webhook"),
  };
}

/**
 * Accepts a correctly signed request, rejects a wrongly signed and an unsigned one, or throws.
 * (adnanh/webhook answers a signature mismatch with 500, an error evaluating its trigger rule.)
 */
async function checkSignatures(
  label: string,
  url: string,
  acceptedBody?: (status: number, text: string) => string | undefined,
): Promise<void> {
  const post = async (headers: Record<string, string>) => {
    const response = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": EVENT,
        "x-github-delivery": `check-${crypto.randomUUID()}`,
        ...headers,
      },
      body,
    });
    return { status: response.status, text: await response.text() };
  };
  const good = await post({ "x-hub-signature-256": signature });
  const problem = good.status !== 202
    ? `answered ${good.status} (${good.text.slice(0, 200)})`
    : acceptedBody?.(good.status, good.text);
  if (problem) {
    throw new Error(`${label} did not accept a correctly signed request: ${problem}`);
  }
  const forged = await post({ "x-hub-signature-256": githubSignature(`${SECRET}-wrong`, body) });
  const unsigned = await post({});
  for (const [what, answer] of [["a wrongly signed", forged], ["an unsigned", unsigned]] as const) {
    if (answer.status < 400) {
      throw new Error(
        `${label} accepted ${what} request (${answer.status} ${answer.text.slice(0, 200)}); ` +
          "the comparison would not be honest",
      );
    }
  }
  console.log(
    `${label}: signed → ${good.status}, wrong signature → ${forged.status}, ` +
      `unsigned → ${unsigned.status}`,
  );
}

async function runWrk(url: string, seconds: number, tag: string): Promise<WrkFigures> {
  const child = spawn(wrkPath!, [
    `-t${threads}`,
    `-c${connections}`,
    `-d${seconds}s`,
    "--latency",
    "-s",
    LUA,
    url,
    "--",
    tag,
    bodyFile,
    signature,
    EVENT,
  ], { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" });
  try {
    const [stdout, stderr, status] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.status,
    ]);
    const line = stdout.split("\n").find((text) => text.startsWith("WRKJSON "));
    if (!status.success || !line) {
      throw new Error(`wrk failed (exit ${status.code}):\n${stdout}\n${stderr}`);
    }
    const figures = JSON.parse(line.slice("WRKJSON ".length)) as WrkFigures;
    if (figures.requests === 0) throw new Error(`wrk completed no request:\n${stdout}`);
    return figures;
  } finally {
    children.delete(child);
  }
}

function report(): void {
  if (results.length === 0) return;
  console.log(
    `\n${"server".padEnd(36)} ${"accepted req/s".padStart(14)} ${"p50".padStart(9)} ${
      "p99".padStart(9)
    } ${"non-2xx".padStart(8)} ${"socket errors".padStart(13)} ${"CPU/request".padStart(11)}`,
  );
  for (const r of results) {
    const socket = r.wrk.connect + r.wrk.read + r.wrk.write + r.wrk.timeout;
    console.log(
      `${r.label.padEnd(36)} ${fmtRate(r.acceptedPerSecond).padStart(14)} ${
        fmtMs(r.wrk.p50_us).padStart(9)
      } ${fmtMs(r.wrk.p99_us).padStart(9)} ${String(r.wrk.non2xx).padStart(8)} ${
        String(socket).padStart(13)
      } ${
        (r.cpuPerRequestUs === undefined ? "n/a" : `${Math.round(r.cpuPerRequestUs)} µs`)
          .padStart(11)
      }`,
    );
  }
  const by = (name: ServerName) => results.find((r) => r.server === name);
  const ours = by("ours");
  const floor = by("floor");
  const ceiling = by("ceiling");
  const adnanh = by("adnanh");
  if (floor && ceiling) {
    console.log(
      `\nfloor / ceiling: ${percent(floor, ceiling)} (what a durable commit before 202 leaves)` +
        (ours ? `; ours / floor: ${percent(ours, floor)}` : ""),
    );
  }
  const targets: { name: string; value: string; target: string; ok: boolean }[] = [];
  if (ours && ceiling) {
    const share = ours.acceptedPerSecond / ceiling.acceptedPerSecond;
    targets.push({
      name: "ours / bare ceiling, throughput",
      value: `${(share * 100).toFixed(1)} %`,
      target: `>= ${TARGET_CEILING_SHARE * 100} %`,
      ok: share >= TARGET_CEILING_SHARE,
    });
  }
  if (ours && adnanh) {
    const ratio = ours.acceptedPerSecond / adnanh.acceptedPerSecond;
    targets.push({
      name: "ours / adnanh/webhook, throughput",
      value: `${ratio.toFixed(2)}x`,
      target: `>= ${TARGET_ADNANH_RATIO}x`,
      ok: ratio >= TARGET_ADNANH_RATIO,
    });
  }
  if (ours) {
    targets.push({
      name: `our p99 latency at ${connections} connections`,
      value: fmtMs(ours.wrk.p99_us),
      target: `< ${TARGET_P99_MS} ms`,
      ok: ours.wrk.p99_us / 1000 < TARGET_P99_MS,
    });
  }
  if (targets.length > 0) {
    console.log(`\n${"target".padEnd(40)} ${"value".padEnd(10)} ${"target".padEnd(10)}`);
    for (const t of targets) {
      console.log(
        `${t.name.padEnd(40)} ${t.value.padEnd(10)} ${t.target.padEnd(10)} ${
          t.ok ? "met" : "NOT met"
        }`,
      );
    }
  }
  printCpuBudget(ours, [
    ...(ceiling
      ? [{ rate: ceiling.acceptedPerSecond * TARGET_CEILING_SHARE, what: "50 % of the ceiling" }]
      : []),
    ...(adnanh
      ? [{ rate: adnanh.acceptedPerSecond * TARGET_ADNANH_RATIO, what: "3x adnanh/webhook" }]
      : []),
  ], [floor, ceiling]);
  for (const message of skipped) console.log(`skipped: ${message}`);
  if (targets.some((t) => !t.ok)) Deno.exitCode = 1;
}

/**
 * What a throughput target leaves a request in CPU time: the machine's cores give
 * `cores × 1 s / rate` per request, of which wrk (measured in our run: the machine's busy time
 * less the server's) takes its share, whichever server it loads. A server that needs more CPU per
 * request than what is left cannot reach the rate on this machine, however its work is spread over
 * threads (Linux only: needs the CPU figures).
 */
function printCpuBudget(
  ours: Measured | undefined,
  goals: { rate: number; what: string }[],
  others: (Measured | undefined)[],
): void {
  if (!ours?.cpuPerRequestUs || ours.machineBusy === undefined || goals.length === 0) return;
  const cores = navigator.hardwareConcurrency;
  const loadUs = ours.machineBusy * cores * 1e6 / ours.acceptedPerSecond - ours.cpuPerRequestUs;
  const used = [ours, ...others].flatMap((r) =>
    r?.cpuPerRequestUs ? [`${r.label.split(" (")[0]} ${Math.round(r.cpuPerRequestUs)} µs`] : []
  );
  console.log(
    `\nCPU budget per request (${cores} cores all busy; ${Math.round(loadUs)} µs per request ` +
      `taken out for wrk and whatever else ran during ours); used: ${used.join(", ")}`,
  );
  for (const goal of goals) {
    const budget = cores * 1e6 / goal.rate - loadUs;
    console.log(
      `  ${goal.what} = ${fmtRate(goal.rate)} req/s leaves ${Math.round(budget)} µs per request`,
    );
  }
}

// --- processes --------------------------------------------------------------------------------

function spawn(command: string, args: string[], env: Record<string, string>): Deno.ChildProcess {
  const child = new Deno.Command(command, {
    args,
    cwd: ROOT,
    clearEnv: true,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  children.add(child);
  return child;
}

/** Reads a child's stdout and stderr to the end (so pipes never fill), keeping the text. */
function drain(child: Deno.ChildProcess) {
  let text = "";
  let wake: () => void = () => {};
  let ended = false;
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      text += chunk;
      wake();
    }
  };
  Promise.all([pump(child.stdout), pump(child.stderr)]).catch(() => {}).finally(() => {
    ended = true;
    wake();
  });
  return {
    text: () => text,
    /** Waits until `marker` was printed; throws if the process ends or 60 s pass first. */
    async until(marker: string, what: string): Promise<string> {
      const deadline = Date.now() + 60_000;
      while (!text.includes(marker)) {
        if (ended) throw new Error(`${what} exited before it was ready:\n${text}`);
        if (Date.now() > deadline) throw new Error(`${what} was not ready after 60 s:\n${text}`);
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, 1000);
        });
      }
      return text;
    },
  };
}

/** adnanh/webhook says nothing when it listens (unless -verbose, which logs every request). */
async function untilListening(
  port: number,
  child: Deno.ChildProcess,
  output: ReturnType<typeof drain>,
  what: string,
): Promise<void> {
  let exited = false;
  child.status.then(() => exited = true);
  const deadline = Date.now() + 30_000;
  while (true) {
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
      return;
    } catch {
      if (exited) throw new Error(`${what} exited before it listened:\n${output.text()}`);
      if (Date.now() > deadline) throw new Error(`${what} did not listen within 30 s`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/** SIGTERM, then SIGKILL if the process is still there after 30 s. */
async function stopChild(child: Deno.ChildProcess, what: string): Promise<void> {
  if (!children.has(child)) return;
  try {
    child.kill("SIGTERM");
  } catch { /* already gone */ }
  const timer = setTimeout(() => {
    console.error(`${what} did not stop within 30 s of SIGTERM; killing it`);
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
  }, 30_000);
  try {
    await child.status;
  } finally {
    clearTimeout(timer);
    children.delete(child);
  }
}

function cleanup(): Promise<void> {
  cleaned ??= (async () => {
    await Promise.allSettled([...children].map((child) => stopChild(child, "a child process")));
    await Deno.remove(work, { recursive: true }).catch(() => {});
  })();
  return cleaned;
}

// --- helpers ----------------------------------------------------------------------------------

/** The environment of a Deno child: what Deno needs to find its cache, plus `extra`. */
function denoEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ["PATH", "HOME", "DENO_DIR", "TMPDIR", "XDG_CACHE_HOME"]) {
    const value = Deno.env.get(name);
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...extra };
}

/**
 * CPU time of a process and of its children it has reaped (adnanh/webhook's /bin/true runs), in
 * µs, from /proc (Linux, USER_HZ 100); undefined elsewhere.
 */
function cpuTimeUs(pid: number): number | undefined {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // utime, stime, cutime, cstime are fields 14 to 17 of stat(5); `fields` starts at field 3.
    return fields.slice(11, 15).reduce((sum, ticks) => sum + Number(ticks), 0) * 10_000;
  } catch {
    return undefined;
  }
}

/** CPU time (ticks of 10 ms) of each thread of `pid`, by thread id, from /proc (Linux). */
function threadTicks(pid: number): Map<string, { name: string; ticks: number }> | undefined {
  try {
    const threads = new Map<string, { name: string; ticks: number }>();
    for (const entry of Deno.readDirSync(`/proc/${pid}/task`)) {
      const stat = Deno.readTextFileSync(`/proc/${pid}/task/${entry.name}/stat`);
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      threads.set(entry.name, { name, ticks: Number(fields[11]) + Number(fields[12]) });
    }
    return threads;
  } catch {
    return undefined; // not Linux, or the process is gone
  }
}

/** The thread that used the most CPU between two {@linkcode threadTicks} samples. */
function busiest(
  before: Map<string, { name: string; ticks: number }> | undefined,
  after: Map<string, { name: string; ticks: number }> | undefined,
  durationUs: number,
): { name: string; share: number } | undefined {
  if (!before || !after || durationUs <= 0) return undefined;
  let top: { name: string; ticks: number } | undefined;
  for (const [id, thread] of after) {
    const ticks = thread.ticks - (before.get(id)?.ticks ?? 0);
    if (!top || ticks > top.ticks) top = { name: thread.name, ticks };
  }
  return top && { name: top.name, share: (top.ticks * 10_000) / durationUs };
}

/** Busy and total CPU ticks of the whole machine, from /proc/stat (Linux). */
function machineTicks(): { busy: number; total: number } | undefined {
  try {
    const fields = Deno.readTextFileSync("/proc/stat").split("\n")[0].trim().split(/\s+/);
    const ticks = fields.slice(1).map(Number);
    const total = ticks.reduce((sum, value) => sum + value, 0);
    return { busy: total - ticks[3] - ticks[4], total }; // all but idle and iowait
  } catch {
    return undefined;
  }
}

/**
 * The share of the machine's CPU time that went to processes other than `pid` over half a second
 * (Linux /proc/stat, USER_HZ 100), else undefined.
 */
async function otherLoad(pid: number): Promise<number | undefined> {
  const sample = () => {
    const machine = machineTicks();
    return machine && { ...machine, server: cpuTimeUs(pid) ?? 0 };
  };
  const before = sample();
  await new Promise((resolve) => setTimeout(resolve, 500));
  const after = sample();
  if (!before || !after || after.total <= before.total) return undefined;
  const busy = after.busy - before.busy - (after.server - before.server) / 10_000;
  return Math.max(0, busy) / (after.total - before.total);
}

function which(command: string): string | undefined {
  for (const dir of (Deno.env.get("PATH") ?? "/usr/bin:/bin").split(":")) {
    const path = join(dir || ".", command);
    try {
      if (Deno.statSync(path).isFile) return path;
    } catch { /* not here */ }
  }
  return undefined;
}

async function webhookVersion(): Promise<string> {
  const { stdout } = await new Deno.Command(webhookPath!, { args: ["-version"] }).output();
  return /version (\S+)/.exec(new TextDecoder().decode(stdout))?.[1] ?? "";
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

function positiveInt(name: string, text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) usage(`--${name} takes a whole number ≥ 1`);
  return value;
}

function usage(message: string): never {
  console.error(
    `${message}\nusage: deno run -A scripts/bench/webhook.ts [--duration 10] ` +
      "[--connections 32] [--threads 2] [--warmup 3] [--only ours,floor,ceiling,adnanh] " +
      "[--rate-window 60] [--cpu-prof <dir>]",
  );
  Deno.exit(2);
}

function percent(part: Measured, whole: Measured): string {
  return `${(part.acceptedPerSecond / whole.acceptedPerSecond * 100).toFixed(1)} %`;
}

function fmtRate(perSecond: number): string {
  return Math.round(perSecond).toLocaleString("en");
}

function fmtMs(us: number): string {
  return `${(us / 1000).toFixed(2)} ms`;
}
