/**
 * Helpers of the end-to-end gateway tests: the real gateway process (`deno run -A main.ts gateway
 * run`) on a temp home, its config, subscriptions made through the CLI, senders' signatures
 * computed here independently of `src/`, a look into the durable inbox, and polling with a
 * deadline (never a sleep).
 *
 * @module
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createHmac } from "node:crypto";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { childEnv, cliJson, MAIN, REPO, tempHome } from "../cli/_helpers.ts";
import { freePort } from "../cli/_mcp_helpers.ts";
import { type FakeModel, type FakeModelOptions, startFakeModel } from "../fixtures/fake_model.ts";
import { type FakePlatforms, startFakePlatforms } from "../fixtures/fake_platforms.ts";

/** A GitHub `issues` event (opened), as GitHub documents it, trimmed. */
export const ISSUES_PAYLOAD = {
  action: "opened",
  issue: {
    number: 1347,
    title: "Found a bug",
    body: "I'm having a problem with this.",
    user: { login: "octocat" },
    html_url: "https://github.com/octocat/Hello-World/issues/1347",
  },
  repository: { id: 1296269, full_name: "octocat/Hello-World" },
  sender: { login: "octocat" },
};

/** How the gateway process ended. */
export interface GatewayExit {
  code: number;
  signal: Deno.Signal | null;
  stdout: string;
  stderr: string;
}

/** The real gateway process on a home. */
export interface GatewayProcess extends AsyncDisposable {
  /** The pid of the gateway itself (the `deno` process running main.ts). */
  pid: number;
  home: string;
  /** The webhook port (from `WEBHOOK_PORT`). */
  port: number;
  /** `http://127.0.0.1:<port><path>`. */
  url(path: string): string;
  /** What it printed on stdout so far. */
  stdout(): string;
  /** What it printed on stderr so far. */
  stderr(): string;
  /** `<home>/logs/gateway.log` as it is now ("" before it exists). */
  log(): string;
  /** SIGTERM, then waits for the exit and the end of its output. */
  stop(): Promise<GatewayExit>;
  /** Sends `signal` (e.g. SIGKILL), then waits for the exit and the end of its output. */
  kill(signal: Deno.Signal): Promise<GatewayExit>;
  /** Sends `signal` and returns at once (a second Ctrl-C while it stops). */
  signal(signal: Deno.Signal): void;
  /** Resolves with the exit once the process ended by itself (or by signals sent). */
  exited(): Promise<GatewayExit>;
}

/** Options of {@linkcode startGateway}. */
export interface StartOptions {
  /** The process's open-file limit (`ulimit -n`), set through bash before deno starts. */
  fileLimit?: number;
  /**
   * Starts it with SIGXFSZ ignored (through bash), so that a file-size limit set on it later
   * (`prlimit --pid <pid> --fsize=…`) makes its writes past the limit fail, as on a full disk,
   * instead of killing it.
   */
  fileSizeLimitable?: boolean;
}

/**
 * Starts `agent gateway run` on `home` with a clean environment plus `env` (which must set
 * `WEBHOOK_PORT`), and resolves once it printed that it is listening. Its stdout and stderr are
 * read all along, so a chatty gateway never blocks on a full pipe.
 *
 * A port found free a moment ago may have been taken since by another test running in parallel:
 * then the gateway is started again on another free port, written to `env.WEBHOOK_PORT` (so a
 * restart with the same `env` uses it too).
 */
export async function startGateway(
  home: string,
  env: Record<string, string>,
  options: StartOptions = {},
): Promise<GatewayProcess> {
  for (let attempt = 1;; attempt++) {
    try {
      return await startGatewayOnce(home, env, options);
    } catch (error) {
      if (attempt >= 3 || !(error instanceof PortTaken)) throw error;
      env.WEBHOOK_PORT = String(freePort());
    }
  }
}

/** The gateway exited at start because its port was in use. */
class PortTaken extends Error {}

async function startGatewayOnce(
  home: string,
  env: Record<string, string>,
  options: StartOptions,
): Promise<GatewayProcess> {
  const port = Number(env.WEBHOOK_PORT);
  assert.ok(Number.isInteger(port) && port > 0, "startGateway needs env.WEBHOOK_PORT");
  const command = [Deno.execPath(), "run", "-A", MAIN, "gateway", "run"];
  // `exec` keeps the pid: signals reach the gateway itself.
  const setup = [
    ...(options.fileLimit === undefined ? [] : [`ulimit -n ${options.fileLimit}`]),
    ...(options.fileSizeLimitable ? ["trap '' XFSZ"] : []),
  ];
  const [program, ...args] = setup.length === 0
    ? command
    : ["bash", "-c", `${setup.join(" && ")} && exec "$@"`, "bash", ...command];
  const child = new Deno.Command(program, {
    args,
    cwd: REPO,
    clearEnv: true,
    env: childEnv(home, env),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const text = { stdout: "", stderr: "" };
  let onOutput = () => {};
  const drain = async (stream: ReadableStream<Uint8Array>, key: "stdout" | "stderr") => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) {
      text[key] += decoder.decode(chunk, { stream: true });
      onOutput();
    }
  };
  const drained = Promise.all([drain(child.stdout, "stdout"), drain(child.stderr, "stderr")]);
  let exited = false;
  const status = child.status.then((status) => {
    exited = true;
    onOutput();
    return status;
  });
  await new Promise<void>((resolve) => {
    onOutput = () => {
      if (text.stdout.includes("Press Ctrl-C to stop.") || exited) resolve();
    };
    onOutput();
  });
  onOutput = () => {};
  if (exited) {
    await drained;
    const message = `the gateway exited early:\n${text.stdout}\n${text.stderr}`;
    throw /port \d+ is in use/.test(text.stderr) ? new PortTaken(message) : new Error(message);
  }
  let ending: Promise<GatewayExit> | undefined;
  const end = (signal: Deno.Signal) =>
    ending ??= (async () => {
      try {
        child.kill(signal);
      } catch {
        // already exited
      }
      const { code, signal: by } = await status;
      await drained;
      return { code, signal: by, stdout: text.stdout, stderr: text.stderr };
    })();
  return {
    pid: child.pid,
    home,
    port,
    url: (path) => `http://127.0.0.1:${port}${path}`,
    stdout: () => text.stdout,
    stderr: () => text.stderr,
    log: () => {
      try {
        return Deno.readTextFileSync(join(home, "logs", "gateway.log"));
      } catch (error) {
        if (error instanceof Deno.errors.NotFound) return "";
        throw error;
      }
    },
    stop: () => end("SIGTERM"),
    kill: (signal) => end(signal),
    signal: (signal) => {
      try {
        child.kill(signal);
      } catch {
        // already exited
      }
    },
    exited: async () => {
      const { code, signal: by } = await status;
      await drained;
      return { code, signal: by, stdout: text.stdout, stderr: text.stderr };
    },
    [Symbol.asyncDispose]: async () => {
      await end("SIGTERM");
    },
  };
}

/** What {@linkcode writeGatewayConfig} writes. */
export interface GatewayConfig {
  /** `platforms.webhook.extra` entries (port comes from `WEBHOOK_PORT`). */
  webhook?: Record<string, unknown>;
  /** API roots by target (`fake_platforms`' `baseUrls`). */
  apiBaseUrls?: Record<string, string>;
  /** The fake model's base URL; without it no model is configured. */
  modelBaseUrl?: string;
}

/** Writes `<home>/config.yaml`: webhooks enabled, the given extras, API roots and model. */
export function writeGatewayConfig(home: string, config: GatewayConfig): void {
  let yaml = "platforms:\n  webhook:\n    enabled: true\n";
  const extra = Object.entries(config.webhook ?? {});
  if (extra.length > 0) {
    yaml += "    extra:\n";
    // JSON is valid YAML, so every value goes in as JSON.
    for (const [key, value] of extra) yaml += `      ${key}: ${JSON.stringify(value)}\n`;
  }
  for (const [target, url] of Object.entries(config.apiBaseUrls ?? {})) {
    yaml += `  ${target}:\n    extra:\n      api_base_url: ${JSON.stringify(url)}\n`;
  }
  if (config.modelBaseUrl) {
    yaml += `model:\n  default: gpt-4.1-mini\n  base_url: ${JSON.stringify(config.modelBaseUrl)}\n`;
  }
  Deno.writeTextFileSync(join(home, "config.yaml"), yaml);
}

/** A temp home, the fake platforms and a fake model, and a config.yaml that uses them. */
export interface FakeStack extends AsyncDisposable {
  home: string;
  /** The gateway's environment: a free `WEBHOOK_PORT`, a global secret, the platforms' tokens. */
  env: Record<string, string>;
  platforms: FakePlatforms;
  model: FakeModel;
}

/**
 * Starts the fake platforms and a fake model playing `model`, and writes a config with `webhook`
 * that sends every API call to them; the gateway is left to the test. Disposed in reverse: the
 * model, the platforms, then the home.
 */
export async function startFakeStack(
  options: { model?: FakeModelOptions; webhook?: GatewayConfig["webhook"] } = {},
): Promise<FakeStack> {
  await using stack = new AsyncDisposableStack();
  const h = stack.use(await tempHome());
  const platforms = stack.use(await startFakePlatforms());
  const model = stack.use(await startFakeModel(options.model));
  const env = {
    WEBHOOK_PORT: String(freePort()),
    WEBHOOK_SECRET: "global-secret-not-used-by-subscriptions",
    ...platforms.env,
  };
  writeGatewayConfig(h.home, {
    webhook: options.webhook,
    apiBaseUrls: platforms.baseUrls,
    modelBaseUrl: model.baseUrl,
  });
  const owned = stack.move();
  return {
    home: h.home,
    env,
    platforms,
    model,
    [Symbol.asyncDispose]: () => owned.disposeAsync(),
  };
}

/** A {@linkcode FakeStack} with a gateway running on it. */
export interface GatewayStack extends FakeStack {
  gateway: GatewayProcess;
}

/**
 * A home, the five fake platforms, the fake model and a gateway using them, with `webhook` as
 * `platforms.webhook.extra`. Disposed in reverse: the gateway stops (and must exit 0) before the
 * fakes it calls close.
 */
export async function startGatewayStack(
  webhook: GatewayConfig["webhook"] = {},
): Promise<GatewayStack> {
  await using stack = new AsyncDisposableStack();
  const fakes = stack.use(await startFakeStack({ webhook }));
  const gateway = await startGateway(fakes.home, fakes.env);
  stack.defer(async () => {
    const exit = await gateway.stop();
    assert.equal(exit.code, 0, `the gateway did not stop cleanly:\n${exit.stderr}`);
  });
  const owned = stack.move();
  return { ...fakes, gateway, [Symbol.asyncDispose]: () => owned.disposeAsync() };
}

/** A subscription as `agent webhook subscribe --json` prints it. */
export interface Subscription {
  name: string;
  webhook_url: string;
  secret: string;
  [key: string]: unknown;
}

/** Runs `agent webhook subscribe <name> <args…> --json` and returns what it printed. */
export async function subscribe(
  home: string,
  env: Record<string, string>,
  name: string,
  args: string[],
): Promise<Subscription> {
  return await cliJson(home, ["webhook", "subscribe", name, ...args, "--json"], 0, { env });
}

// --- senders' signatures, computed from the senders' documentation, not from src/ -----------

/** GitHub: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>`. */
export function signGithub(secret: string, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

/**
 * Standard Webhooks: `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`; a `whsec_` secret's
 * key is its base64 payload, any other secret is used as its bytes.
 */
export function signStandard(secret: string, id: string, timestamp: number, body: string): string {
  const key = secret.startsWith("whsec_")
    ? Buffer.from(secret.slice("whsec_".length), "base64")
    : Buffer.from(secret);
  return `v1,${createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64")}`;
}

/** Generic v2: `X-Webhook-Signature-V2: <hex HMAC-SHA256 of "<timestamp>.<body>">`. */
export function signGenericV2(secret: string, timestamp: number, body: string): string {
  return createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex");
}

/** Generic: `X-Webhook-Signature: <hex HMAC-SHA256 of the body>`. */
export function signGeneric(secret: string, body: string): string {
  return createHmac("sha256", secret).update(body).digest("hex");
}

/** Now in whole seconds, as timestamped senders send it. */
export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

/** POSTs `body` to a route of the gateway and reads the JSON answer. */
export async function post(
  gateway: Pick<GatewayProcess, "url">,
  route: string,
  body: string,
  headers: Record<string, string>,
): Promise<{ status: number; json: Record<string, unknown>; headers: Headers }> {
  const response = await fetch(gateway.url(`/webhooks/${route}`), {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
  const text = await response.text();
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error(`HTTP ${response.status} from /webhooks/${route} is not JSON: ${text}`);
  }
  return { status: response.status, json, headers: response.headers };
}

/**
 * POSTs `payload` as JSON to `sub`'s route as GitHub sends it: `X-GitHub-Event: <event>`,
 * `X-GitHub-Delivery: <id>` and the body signed with the route's secret.
 */
export function postGithub(
  gateway: Pick<GatewayProcess, "url">,
  sub: Pick<Subscription, "name" | "secret">,
  event: string,
  id: string,
  payload: unknown,
): ReturnType<typeof post> {
  const body = JSON.stringify(payload);
  return post(gateway, sub.name, body, {
    "x-github-event": event,
    "x-github-delivery": id,
    "x-hub-signature-256": signGithub(sub.secret, body),
  });
}

/**
 * Sends `request` as written (CRLFs included; text as UTF-8, or the bytes given) on a new TCP
 * connection to 127.0.0.1:`port` and reads the answer up to the end of its body (by its
 * `Content-Length`; `100 Continue` skipped), or what came before the connection was closed. For
 * what `fetch` cannot send: no `Host` header, malformed framing, header bytes that are not UTF-8, a
 * body that stops arriving. With `closeWrite`, the sending side is closed after the request: a
 * sender that hangs up mid-body.
 */
export async function rawRequest(
  port: number,
  request: string | Uint8Array,
  options: { closeWrite?: boolean } = {},
): Promise<string> {
  const connection = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    const bytes = typeof request === "string" ? new TextEncoder().encode(request) : request;
    for (let sent = 0; sent < bytes.length;) sent += await connection.write(bytes.subarray(sent));
    if (options.closeWrite) await connection.closeWrite();
    const buffer = new Uint8Array(65_536);
    let text = "";
    while (!answered(text)) {
      const read = await within(connection.read(buffer), "the answer to a raw request").catch(
        (error) => error instanceof Deno.errors.ConnectionReset ? null : Promise.reject(error),
      );
      if (read === null) break;
      text += new TextDecoder().decode(buffer.subarray(0, read));
    }
    return text.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, "");
  } finally {
    connection.close();
  }
}

/** Whether `text` holds a whole final answer (the answers read are ASCII: length is bytes). */
function answered(text: string): boolean {
  const final = text.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, "");
  const end = final.indexOf("\r\n\r\n");
  if (end === -1) return false;
  const length = /\r\ncontent-length: *(\d+)\r\n/i.exec(final.slice(0, end + 2));
  return length !== null && final.length - end - 4 >= Number(length[1]);
}

/** One entry of the gateway log (`<home>/logs/gateway.log`, a JSON object a line). */
export interface LogEntry {
  level: string;
  message: string;
  properties: Record<string, unknown>;
}

/** The entries of a gateway log's text, as {@linkcode GatewayProcess.log} returns it. */
export function logEntries(log: string): LogEntry[] {
  return log.split("\n").filter(Boolean).map((line) => JSON.parse(line));
}

// --- the durable inbox -----------------------------------------------------------------------

/** One row of `events` in `<home>/gateway/inbox.sqlite3`, the columns the tests look at. */
export interface InboxRow {
  id: string;
  route: string;
  delivery_id: string;
  state: "queued" | "running" | "delivering" | "done" | "failed";
  run_attempts: number;
  delivery_attempts: number;
}

/** The events of the inbox, read through a read-only connection (the gateway may be running). */
export function inboxEvents(home: string): InboxRow[] {
  return inboxQuery(
    home,
    `SELECT id, route, delivery_id, state, run_attempts, delivery_attempts FROM events
     ORDER BY created_at`,
  ) as unknown as InboxRow[];
}

/**
 * Rows of any query on the inbox, read through a read-only connection (the gateway may be
 * running); none while the inbox does not exist yet.
 */
export function inboxQuery(
  home: string,
  sql: string,
  ...params: (string | number)[]
): Record<string, unknown>[] {
  const path = join(home, "gateway", "inbox.sqlite3");
  try {
    Deno.statSync(path);
  } catch {
    return [];
  }
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    db.exec("PRAGMA busy_timeout = 5000");
    return db.prepare(sql).all(...params) as Record<string, unknown>[];
  } finally {
    db.close();
  }
}

/** How many events of the inbox are in each state. */
export function inboxCounts(home: string): Record<InboxRow["state"], number> {
  const counts = { queued: 0, running: 0, delivering: 0, done: 0, failed: 0 };
  const rows = inboxQuery(home, "SELECT state, COUNT(*) AS n FROM events GROUP BY state");
  for (const row of rows as { state: InboxRow["state"]; n: number }[]) counts[row.state] = row.n;
  return counts;
}

/** Whether every event of the inbox has reached `done` or `failed` (nothing left to do). */
export function inboxIdle(home: string): boolean {
  const counts = inboxCounts(home);
  return counts.queued + counts.running + counts.delivering === 0;
}

// --- waiting ---------------------------------------------------------------------------------

/**
 * Polls `condition` every 20 ms until it holds; fails naming `what` after `timeoutMs`.
 * For conditions that have no promise to await (a file's content, a database row).
 */
export async function waitUntil(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** `promise`, or a failure naming `what` after `timeoutMs`. */
export async function within<T>(promise: Promise<T>, what: string, timeoutMs = 10_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)),
          timeoutMs,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

// --- messages long enough to be split -------------------------------------------------------

/** `count` paragraphs `<label> <i>: <sentence × repeat>`, long enough to be split into parts. */
export function paragraphs(count: number, label: string, sentence: string, repeat: number): string {
  return Array.from(
    { length: count },
    (_, i) => `${label} ${i}: ${`${sentence} `.repeat(repeat).trim()}`,
  ).join("\n\n");
}

/**
 * A deliver-only `digest` route posting `{summary}` to a Discord channel, and a summary long
 * enough to be split into several messages.
 */
export async function digestRoute(
  s: Pick<FakeStack, "home" | "env">,
): Promise<{ sub: Subscription; summary: string }> {
  const sub = await subscribe(s.home, s.env, "digest", [
    "--deliver",
    "discord",
    "--deliver-chat-id",
    "1100000000000000001",
    "--deliver-only",
    "--prompt",
    "{summary}",
  ]);
  const summary = paragraphs(30, "Item", "a line of the nightly digest that is long enough.", 3);
  return { sub, summary };
}

/** The texts the fake Discord received, in order. */
export function discordTexts(platforms: FakePlatforms): string[] {
  return platforms.discord.requests.map((r) => (r.body as { content: string }).content);
}

/**
 * Asserts that the `parts` of a split message, where part `resent` (from 0) went out twice (cut
 * off or refused, then sent again, `why`), make `whole` once that first try is left out.
 */
export function assertResentOnce(parts: string[], resent: number, whole: string, why: string) {
  assert.ok(parts.length >= resent + 3, `${parts.length} requests`);
  assert.equal(parts[resent], parts[resent + 1], why);
  // Cut at paragraph breaks, which go with the cut.
  assert.equal([...parts.slice(0, resent), ...parts.slice(resent + 1)].join("\n\n"), whole);
}
