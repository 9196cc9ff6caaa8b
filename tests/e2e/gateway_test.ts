/**
 * The real gateway process on a fresh home: bootstrap, /health on 127.0.0.1 and ::1, a signed
 * GitHub `issues` event delivered to the fake Telegram API both through an agent run (fake model)
 * and with --deliver-only, bad signatures refused, and a clean stop on SIGTERM.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { STARTER_CONFIG } from "../../src/gateway/starter_config.ts";
import { githubSignature } from "../../src/webhook/signatures.ts";
import { startFakeModel } from "../fixtures/fake_model.ts";
import { startFakePlatforms } from "../fixtures/fake_platforms.ts";
import { cli, tempHome } from "../cli/_helpers.ts";
import { freePort } from "../cli/_mcp_helpers.ts";
import { ISSUES_PAYLOAD, logEntries, startGateway, waitUntil } from "./_gateway.ts";

Deno.test("gateway: fresh home, health on both stacks, agent run and direct delivery to Telegram, clean stop", async () => {
  await using h = await tempHome();
  await using model = await startFakeModel();
  await using platforms = await startFakePlatforms();
  const port = freePort();
  const env = { WEBHOOK_PORT: String(port), ...platforms.env };
  const gateway = await startGateway(h.home, env);
  let stopped = false;
  try {
    // The starter file says 8644; the message also names the port WEBHOOK_PORT sets instead.
    assert.ok(
      gateway.stdout().includes(
        `config.yaml (webhook platform enabled on port 8644; WEBHOOK_PORT sets port ${env.WEBHOOK_PORT} instead).\n`,
      ),
      gateway.stdout(),
    );
    assert.match(gateway.stdout(), /WEBHOOK_SECRET/);
    // The same commented starter a fresh `agent gateway setup` starts from.
    assert.equal(Deno.readTextFileSync(join(h.home, "config.yaml")), STARTER_CONFIG);
    for (const host of ["127.0.0.1", "[::1]"]) {
      const health = await fetch(`http://${host}:${port}/health`);
      assert.deepEqual(await health.json(), { status: "ok", platform: "webhook" }, host);
    }
    // The model and the Telegram API root are read at start: point them at the fakes and restart.
    const config = Deno.readTextFileSync(join(h.home, "config.yaml")).replace(
      "platforms:\n",
      `platforms:\n  telegram:\n    extra:\n      api_base_url: ${platforms.baseUrls.telegram}\n`,
    );
    Deno.writeTextFileSync(
      join(h.home, "config.yaml"),
      `${config}\nmodel:\n  default: gpt-4.1-mini\n  base_url: ${model.baseUrl}\n`,
    );
    const first = await gateway.stop();
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /Gateway stopped\./);
    stopped = true;
  } finally {
    if (!stopped) await gateway.stop();
  }

  const again = await startGateway(h.home, env);
  try {
    const subscribe = (name: string, extra: string[]) =>
      cli(h.home, [
        "webhook",
        "subscribe",
        name,
        "--events",
        "issues",
        "--deliver",
        "telegram",
        "--deliver-chat-id",
        "-1001234",
        "--json",
        ...extra,
      ], { env });
    const direct = JSON.parse(
      (await subscribe("direct", ["--deliver-only", "--prompt", "New issue: {issue.title}"]))
        .stdout,
    );
    const agentic = JSON.parse(
      (await subscribe("triage", ["--prompt", "Triage #{issue.number}: {issue.title}"])).stdout,
    );
    const post = (url: string, secret: string, body: string, delivery: string) =>
      fetch(url.replace("localhost", "127.0.0.1"), {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-github-event": "issues",
          "x-github-delivery": delivery,
          "x-hub-signature-256": githubSignature(secret, body),
        },
        body,
      });
    const body = JSON.stringify(ISSUES_PAYLOAD);

    const tampered = await fetch(direct.webhook_url.replace("localhost", "127.0.0.1"), {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-hub-signature-256": githubSignature(direct.secret, body + "x"),
      },
      body,
    });
    assert.equal(tampered.status, 401);
    await tampered.body?.cancel();

    const delivered = await post(direct.webhook_url, direct.secret, body, "d-direct");
    assert.equal(delivered.status, 200);
    assert.equal((await delivered.json()).status, "delivered");
    assert.equal(platforms.telegram.requests.length, 1);
    assert.deepEqual(platforms.telegram.requests[0].body, {
      chat_id: "-1001234",
      text: "New issue: Found a bug",
    });

    model.push({ content: "Looks like a bug in the parser; labelled it." });
    const accepted = await post(agentic.webhook_url, agentic.secret, body, "d-agent");
    assert.equal(accepted.status, 202);
    assert.equal((await accepted.json()).status, "accepted");
    await platforms.telegram.waitForRequests(2);
    assert.deepEqual(platforms.telegram.requests[1].body, {
      chat_id: "-1001234",
      text: "Looks like a bug in the parser; labelled it.",
    });
    assert.equal(model.requests.at(-1)!.messages.at(-1)!.content, "Triage #1347: Found a bug");

    const duplicate = await post(agentic.webhook_url, agentic.secret, body, "d-agent");
    assert.deepEqual(await duplicate.json(), { status: "duplicate", delivery_id: "d-agent" });
  } finally {
    const end = await again.stop();
    assert.equal(end.code, 0, end.stderr);
  }
});

Deno.test("gateway without a model: direct delivery works, an agent run delivers a notice and logs why it failed", async () => {
  await using h = await tempHome();
  await using platforms = await startFakePlatforms();
  const port = freePort();
  const env = { WEBHOOK_PORT: String(port), WEBHOOK_SECRET: "global-secret", ...platforms.env };
  Deno.writeTextFileSync(
    join(h.home, "config.yaml"),
    `platforms:\n  webhook:\n    enabled: true\n  telegram:\n    extra:\n      api_base_url: ${platforms.baseUrls.telegram}\n`,
  );
  const common = ["--deliver", "telegram", "--deliver-chat-id", "-1001234", "--json"];
  for (const [name, extra] of [["direct", ["--deliver-only"]], ["agentic", []]] as const) {
    const made = await cli(h.home, ["webhook", "subscribe", name, ...common, ...extra], { env });
    assert.equal(made.code, 0, made.stderr);
  }
  const secrets = JSON.parse(Deno.readTextFileSync(join(h.home, "webhook_subscriptions.json")));
  const gateway = await startGateway(h.home, env);
  try {
    const body = JSON.stringify(ISSUES_PAYLOAD);
    const post = (name: string) =>
      fetch(`http://127.0.0.1:${port}/webhooks/${name}`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-github-event": "issues",
          "x-hub-signature-256": githubSignature(secrets[name].secret, body),
        },
        body,
      });
    const direct = await post("direct");
    assert.equal(direct.status, 200);
    assert.equal((await direct.json()).status, "delivered");
    const run = await post("agentic");
    assert.equal(run.status, 202);
    await run.body?.cancel();
    await platforms.telegram.waitForRequests(2);
    const notice = (platforms.telegram.requests[1].body as { text: string }).text;
    assert.match(notice, /ended without an answer: failed\. The gateway log has the details\./);
    // The notice may be public: why the run failed (and how to fix it) is in the log only.
    assert.doesNotMatch(notice, /model\.default/);
    await waitUntil(
      () =>
        gateway.log().split("\n").filter(Boolean).map((line) => JSON.parse(line)).some((entry) =>
          entry.properties?.endReason === "failed" &&
          /model\.default/.test(entry.properties?.error)
        ),
      "the reason to be logged",
    );
  } finally {
    const end = await gateway.stop();
    assert.equal(end.code, 0, end.stderr);
  }
});

Deno.test("gateway run on a port in use fails with a message naming the setting that gave the port", async () => {
  await using h = await tempHome();
  const listener = Deno.listen({ hostname: "::", port: 0 });
  const inUse = (fix: string) =>
    `is in use by another program (perhaps a gateway of another home). Fix: stop it, or ${fix}`;
  const overrides = "to a free port (it overrides platforms.webhook.extra.port)";
  const lastLine = (stderr: string) => stderr.trimEnd().split("\n").at(-1);
  try {
    const port = (listener.addr as Deno.NetAddr).port;
    const fromEnv = await cli(h.home, ["gateway", "run"], { env: { WEBHOOK_PORT: String(port) } });
    assert.equal(fromEnv.code, 1);
    assert.equal(
      lastLine(fromEnv.stderr),
      `agent: port ${port} ${inUse(`set WEBHOOK_PORT in the environment ${overrides}`)}`,
    );
    // A fresh home is set up before the bind: the files it says it created are kept (the fix may
    // be the port key of that config.yaml), and the next start does not set the home up again.
    const config = join(h.home, "config.yaml");
    const dotenv = join(h.home, ".env");
    assert.ok(fromEnv.stdout.startsWith(`Created ${config} (`), fromEnv.stdout);
    assert.ok(fromEnv.stdout.includes(`WEBHOOK_SECRET in ${dotenv}.\n`), fromEnv.stdout);
    assert.equal(Deno.readTextFileSync(config), STARTER_CONFIG);
    assert.match(Deno.readTextFileSync(dotenv), /^WEBHOOK_SECRET=[A-Za-z0-9_-]{43}\n$/);
    // WEBHOOK_PORT in .env: changing extra.port in config.yaml would not help.
    Deno.writeTextFileSync(dotenv, `WEBHOOK_PORT=${port}\n`);
    const fromDotenv = await cli(h.home, ["gateway", "run"]);
    assert.equal(fromDotenv.code, 1);
    assert.doesNotMatch(fromDotenv.stdout, /Created|Generated/);
    assert.equal(
      lastLine(fromDotenv.stderr),
      `agent: port ${port} ${inUse(`set WEBHOOK_PORT in ${dotenv} ${overrides}`)}`,
    );
    Deno.writeTextFileSync(dotenv, "");
    Deno.writeTextFileSync(
      config,
      `platforms:\n  webhook:\n    enabled: true\n    extra:\n      host: 127.0.0.1\n      port: ${port}\n`,
    );
    const fromConfig = await cli(h.home, ["gateway", "run"]);
    assert.equal(fromConfig.code, 1);
    assert.equal(
      lastLine(fromConfig.stderr),
      `agent: 127.0.0.1 port ${port} ${
        inUse(`set platforms.webhook.extra.port in ${config} to a free port`)
      }`,
    );
  } finally {
    listener.close();
  }
});

Deno.test("gateway run on an address that is not this machine's: exit 1 naming platforms.webhook.extra.host, no stack", async () => {
  await using h = await tempHome();
  // 192.0.2.1 (TEST-NET-1) is documentation-only: no interface has it.
  Deno.writeTextFileSync(
    join(h.home, "config.yaml"),
    "platforms:\n  webhook:\n    enabled: true\n    extra:\n      host: 192.0.2.1\n",
  );
  const result = await cli(h.home, ["gateway", "run"], {
    env: { WEBHOOK_PORT: String(freePort()), WEBHOOK_SECRET: "a-global-secret-of-32-chars!!" },
  });
  assert.equal(result.code, 1, result.stderr);
  assert.match(result.stderr, /^agent: cannot listen on 192\.0\.2\.1 port \d+: /m);
  assert.match(
    result.stderr,
    /Set platforms\.webhook\.extra\.host in .*config\.yaml to an address/,
  );
  assert.doesNotMatch(result.stderr, /^\s+at /m);
});

Deno.test("gateway run on a home set up before generates no global secret: a static route without one answers 403", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(
    join(h.home, "config.yaml"),
    "platforms:\n  webhook:\n    enabled: true\n    extra:\n      routes:\n" +
      "        bare:\n          deliver: log\n",
  );
  const port = freePort();
  const gateway = await startGateway(h.home, { WEBHOOK_PORT: String(port) });
  try {
    await waitUntil(() => gateway.stderr().includes("route bare"), "the route error");
    assert.match(
      gateway.stderr(),
      new RegExp(
        "route bare has no secret and no global secret is set; it answers 403\\. Fix: add " +
          "`secret: <secret>` to platforms\\.webhook\\.extra\\.routes\\.bare \\(" +
          `${join(h.home, "config.yaml").replace(/[.]/g, "\\.")}:6\\), or set a global secret ` +
          "with `agent gateway setup --generate-secret`; then restart the gateway",
      ),
    );
    assert.doesNotMatch(gateway.stdout(), /Generated a global webhook secret/);
    let dotenv = "";
    try {
      dotenv = Deno.readTextFileSync(join(h.home, ".env"));
    } catch { /* not written: as it should be */ }
    assert.doesNotMatch(dotenv, /WEBHOOK_SECRET/);
    const response = await fetch(`http://127.0.0.1:${port}/webhooks/bare`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    assert.equal(response.status, 403);
    assert.deepEqual(await response.json(), { error: "no secret is configured for this route" });
    // `webhook test` says so too, with the same fix.
    const tested = await cli(h.home, ["webhook", "test", "bare"], {
      env: { WEBHOOK_PORT: String(port) },
    });
    assert.equal(tested.code, 1, tested.stderr);
    assert.equal(
      tested.stderr,
      "agent: route 'bare' has no secret of its own and no global secret is set, so the gateway " +
        "answers it 403. Fix: add `secret: <secret>` to platforms.webhook.extra.routes.bare " +
        `(${join(h.home, "config.yaml")}:6), or set a global secret with ` +
        "`agent gateway setup --generate-secret`; then restart the gateway\n",
    );
  } finally {
    const end = await gateway.stop();
    assert.equal(end.code, 0, end.stderr);
  }
});

Deno.test("webhook test of a route without a secret sends it unsigned when INSECURE_NO_AUTH applies (host 127.0.0.1)", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(
    join(h.home, "config.yaml"),
    "platforms:\n  webhook:\n    enabled: true\n    extra:\n      host: 127.0.0.1\n" +
      "      routes:\n        bare:\n          deliver: log\n",
  );
  const env = { WEBHOOK_PORT: String(freePort()), INSECURE_NO_AUTH: "true" };
  const gateway = await startGateway(h.home, env);
  try {
    const tested = await cli(h.home, ["webhook", "test", "bare"], { env });
    assert.equal(tested.code, 0, tested.stderr);
    assert.match(tested.stdout, /^HTTP 202$/m);
    assert.match(tested.stdout, /"status":"accepted","route":"bare","event":"test"/);
  } finally {
    const end = await gateway.stop();
    assert.equal(end.code, 0, end.stderr);
  }
});

Deno.test("gateway: a weak global or static-route secret is served but warned about at start", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(
    join(h.home, "config.yaml"),
    "platforms:\n  webhook:\n    enabled: true\n    extra:\n      routes:\n" +
      "        short:\n          secret: tiny\n          deliver: log\n" +
      "        fine:\n          secret: a-route-secret-long-enough\n          deliver: log\n" +
      "        global:\n          deliver: log\n",
  );
  const gateway = await startGateway(h.home, {
    WEBHOOK_PORT: String(freePort()),
    WEBHOOK_SECRET: "abc",
  });
  try {
    // Served: an event signed with the weak secret of the route (or the global one) is accepted.
    for (const [route, secret] of [["short", "tiny"], ["global", "abc"]]) {
      const body = JSON.stringify({ action: route });
      const response = await fetch(gateway.url(`/webhooks/${route}`), {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-hub-signature-256": githubSignature(secret, body),
        },
        body,
      });
      assert.equal(response.status, 202, `${route}: ${await response.text()}`);
    }
    await waitUntil(() => gateway.stderr().includes("static route short"), "the route warning");
    assert.match(
      gateway.stderr(),
      /global webhook secret \(WEBHOOK_SECRET or platforms\.webhook\.extra\.secret\) is weak: .*at least 16 characters.*--generate-secret/,
    );
    assert.match(gateway.stderr(), /the secret of static route short is weak: .*at least 16/);
    assert.doesNotMatch(gateway.stderr(), /static route fine/);
    assert.ok(!gateway.stderr().includes("tiny"), "the secret itself is never printed");
  } finally {
    const end = await gateway.stop();
    assert.equal(end.code, 0, end.stderr);
  }
});

Deno.test("gateway: a route whose target has no token or no chat is warned about at start and at subscribe", async () => {
  await using h = await tempHome();
  Deno.writeTextFileSync(
    join(h.home, "config.yaml"),
    "platforms:\n  webhook:\n    enabled: true\n    extra:\n      routes:\n" +
      "        tg:\n          deliver: telegram\n          deliver_extra:\n            chat_id: 5\n" +
      "        dc:\n          deliver: discord\n          deliver_extra:\n" +
      "            chat_id: '123456789012345678'\n" +
      "        quiet:\n          deliver: log\n" +
      "        sl:\n          deliver: slack\n" +
      "        home:\n          deliver: discord\n",
  );
  const env = {
    WEBHOOK_SECRET: "a-global-secret-of-32-chars!!",
    DISCORD_BOT_TOKEN: "d-token",
    DISCORD_HOME_CHANNEL: "123456789012345678",
    SLACK_BOT_TOKEN: "xoxb-token",
  };
  const subscribed = await cli(h.home, ["webhook", "subscribe", "gh", "--deliver", "origin"], {
    env,
  });
  assert.equal(subscribed.code, 0, subscribed.stderr);
  assert.match(
    subscribed.stderr,
    /^warning: neither GITHUB_TOKEN \(for GitHub events\) nor GITLAB_TOKEN \(for GitLab events\) is set: deliveries to origin fail until you add it to .*\.env and restart the gateway$/m,
  );
  const gateway = await startGateway(h.home, { WEBHOOK_PORT: String(freePort()), ...env });
  try {
    await waitUntil(() => /route gh /.test(gateway.stderr()), "the origin route warning");
    assert.match(
      gateway.stderr(),
      /^warning: route tg delivers to telegram, but TELEGRAM_BOT_TOKEN is not set: its deliveries fail until it is added to .*\.env and the gateway is restarted$/m,
    );
    assert.match(gateway.stderr(), /route gh delivers to origin, but neither GITHUB_TOKEN/);
    // A chat route without a chat_id sends to the platform's home channel: said when it is unset.
    assert.match(
      gateway.stderr(),
      /^warning: route sl delivers to slack, but deliver_extra\.chat_id is not given and SLACK_HOME_CHANNEL is not set: its deliveries fail until it is added to .*\.env and the gateway is restarted$/m,
    );
    assert.doesNotMatch(gateway.stderr(), /route (dc|quiet|home) delivers/);
  } finally {
    const end = await gateway.stop();
    assert.equal(end.code, 0, end.stderr);
  }
});

Deno.test("gateway: logging.level debug writes each run's transcript, redacted; an unknown level is exit 2 at logging.level", async () => {
  await using h = await tempHome();
  await using model = await startFakeModel();
  const config = (level: string) =>
    Deno.writeTextFileSync(
      join(h.home, "config.yaml"),
      `logging:\n  level: ${level}\nmodel:\n  default: gpt-4.1-mini\n  base_url: ${model.baseUrl}\n` +
        "platforms:\n  webhook:\n    enabled: true\n    extra:\n      routes:\n" +
        "        ci:\n          secret: a-route-secret-long-enough\n          deliver: log\n" +
        "          prompt: 'Summarise {issue.title}'\n",
    );
  const env = { WEBHOOK_PORT: String(freePort()), WEBHOOK_SECRET: "a-global-secret-long-enough" };

  config("loud");
  const refused = await cli(h.home, ["gateway", "run"], { env });
  assert.equal(refused.code, 2, refused.stderr);
  assert.match(refused.stderr, /config\.yaml:2 \(key logging\.level\): unknown log level "loud"/);

  config("debug");
  Deno.writeTextFileSync(join(h.home, ".env"), "CANARY_VALUE=never-in-the-log-canary\n");
  const gateway = await startGateway(h.home, env);
  try {
    assert.doesNotMatch(gateway.stderr(), /unknown key/);
    const body = JSON.stringify({ issue: { title: "never-in-the-log-canary is broken" } });
    const response = await fetch(gateway.url("/webhooks/ci"), {
      method: "POST",
      body,
      headers: {
        "x-github-event": "issues",
        "x-hub-signature-256": githubSignature("a-route-secret-long-enough", body),
      },
    });
    assert.equal(response.status, 202, await response.text());
    const entries = () => gateway.log().split("\n").filter(Boolean).map((line) => JSON.parse(line));
    await waitUntil(
      () => entries().some((entry) => entry.level === "DEBUG" && /^run ended/.test(entry.message)),
      "the end of the run's transcript",
    );
    const request = entries().find((entry) => /^model request/.test(entry.message));
    assert.ok(request, "the model request is in the transcript");
    assert.match(JSON.stringify(request), /Summarise \[REDACTED\] is broken/);
    assert.ok(!gateway.log().includes("never-in-the-log-canary"), "values of .env are redacted");
  } finally {
    const end = await gateway.stop();
    assert.equal(end.code, 0, end.stderr);
  }
});

Deno.test("gateway: INSECURE_NO_AUTH opens a secretless route on a loopback host only, with a warning each way", async () => {
  await using h = await tempHome();
  const port = freePort();
  const env = { WEBHOOK_PORT: String(port), INSECURE_NO_AUTH: "true" };
  const config = (host: string) =>
    Deno.writeTextFileSync(
      join(h.home, "config.yaml"),
      "platforms:\n  webhook:\n    enabled: true\n    extra:\n" + host +
        "      routes:\n        open:\n          prompt: 'opened {action}'\n" +
        "          deliver: log\n",
    );
  const unsigned = async (gateway: { url(path: string): string }) => {
    const response = await fetch(gateway.url("/webhooks/open"), {
      method: "POST",
      headers: { "content-type": "application/json", "x-github-event": "issues" },
      body: JSON.stringify({ action: "opened" }),
    });
    return { status: response.status, json: await response.json() };
  };

  config("      host: 127.0.0.1\n");
  const loopback = await startGateway(h.home, env);
  try {
    const answer = await unsigned(loopback);
    assert.equal(answer.status, 202, JSON.stringify(answer.json));
    assert.equal(answer.json.status, "accepted");
    assert.match(loopback.log(), /INSECURE_NO_AUTH is on: routes without a secret accept unsigned/);
    // The address list reads as words; the entry keeps the list.
    const listening = logEntries(loopback.log()).find((entry) => entry.properties?.addresses);
    assert.equal(listening?.message, `gateway listening on "http://127.0.0.1:${loopback.port}"`);
    assert.deepEqual(listening?.properties, { addresses: [`http://127.0.0.1:${loopback.port}`] });
    assert.equal(readDotenv(h.home), "", "no global secret was generated to defeat it");
  } finally {
    assert.equal((await loopback.stop()).code, 0);
  }

  config(""); // every interface: the variable must not open anything
  const everywhere = await startGateway(h.home, env);
  try {
    // Not a fresh home: no global secret is generated, so the route has none and stays closed.
    assert.equal(readDotenv(h.home), "");
    const answer = await unsigned(everywhere);
    assert.equal(answer.status, 403);
    assert.deepEqual(answer.json, { error: "no secret is configured for this route" });
    assert.match(everywhere.log(), /INSECURE_NO_AUTH is ignored: it applies only when/);
  } finally {
    assert.equal((await everywhere.stop()).code, 0);
  }
});

Deno.test("gateway: a global secret in config.yaml is used as is; no WEBHOOK_SECRET is generated over it", async () => {
  await using h = await tempHome();
  const port = freePort();
  Deno.writeTextFileSync(
    join(h.home, "config.yaml"),
    "platforms:\n  webhook:\n    enabled: true\n    extra:\n      secret: from-config-yaml\n" +
      "      routes:\n        ci:\n          prompt: 'CI {action}'\n          deliver: log\n",
  );
  const gateway = await startGateway(h.home, { WEBHOOK_PORT: String(port) });
  try {
    assert.equal(readDotenv(h.home), "");
    const body = JSON.stringify({ action: "completed" });
    const response = await fetch(gateway.url("/webhooks/ci"), {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": "workflow_run",
        "x-hub-signature-256": githubSignature("from-config-yaml", body),
      },
      body,
    });
    assert.equal(response.status, 202, await response.text());
  } finally {
    assert.equal((await gateway.stop()).code, 0);
  }
});

/** `<home>/.env`, or "" when there is none. */
function readDotenv(home: string): string {
  try {
    return Deno.readTextFileSync(join(home, ".env"));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return "";
    throw error;
  }
}
