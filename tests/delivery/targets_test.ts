import assert from "node:assert/strict";
import fc from "fast-check";
import {
  defaultApiBaseUrl,
  deliver,
  type DeliveryContext,
  type DeliveryRequest,
  type DeliveryResult,
  MESSAGE_LIMITS,
  missingToken,
  type PlatformTarget,
  splitMessage,
} from "../../src/delivery/mod.ts";
import { SecretScope } from "../../src/home/secrets.ts";
import type { DeliveryTargetName } from "../../src/webhook/routes.ts";
import { renderExtra } from "../../src/webhook/templates.ts";
import {
  FAKE_TOKENS,
  type FakePlatformName,
  type FakePlatformOptions,
  startFakePlatform,
  startFakePlatforms,
  TARGET_OF,
  TOKEN_VARIABLE,
} from "../fixtures/fake_platforms.ts";

// Delivery promises no leaked timers, bodies or connections.
Deno.test.sanitizer({ ops: true, resources: true });

const PLATFORMS: FakePlatformName[] = ["telegram", "slack", "discord", "github", "gitlab"];

/** A valid destination of each platform. */
const EXTRA: Record<FakePlatformName, Record<string, unknown>> = {
  telegram: { chat_id: "-1001234567890" },
  slack: { chat_id: "C0123456789" },
  discord: { chat_id: "1100000000000000001" },
  github: { repo: "octo-org/app", number: 42 },
  gitlab: { project: "group/app", iid: 3 },
};

/** Where nothing listens: a target whose base URL is this must never be called. */
const UNUSED = "http://127.0.0.1:1/never-called";

interface Line {
  message: string;
  properties?: Record<string, unknown>;
}

/** Starts the fake of `name` and a context whose `.env` holds its token (plus `env`). */
async function setup(
  name: FakePlatformName,
  options: {
    fake?: FakePlatformOptions;
    env?: Record<string, string | undefined>;
    timeoutMs?: number;
    baseUrl?: string;
    dotenv?: string;
    /** The text of `.env`: the secrets are then a `SecretScope` over it and `env`. */
    dotenvText?: string;
  } = {},
) {
  const fake = await startFakePlatform(name, options.fake);
  const env: Record<string, string | undefined> = {
    [TOKEN_VARIABLE[name]]: fake.token,
    ...options.env,
  };
  const logs: Line[] = [];
  const warnings: Line[] = [];
  const context: DeliveryContext = {
    secrets: options.dotenvText === undefined
      ? { get: (variable) => env[variable] }
      : SecretScope.fromText(options.dotenvText, (variable) => env[variable]),
    apiBaseUrl: (target) => target === TARGET_OF[name] ? options.baseUrl ?? fake.baseUrl : UNUSED,
    log: (message, properties) => logs.push({ message, properties }),
    warn: (message, properties) => warnings.push({ message, properties }),
    timeoutMs: options.timeoutMs,
    dotenv: options.dotenv,
  };
  return { fake, context, logs, warnings, env };
}

function request(
  target: DeliveryTargetName,
  message: string,
  extra: Record<string, unknown> = {},
  more: Partial<DeliveryRequest> = {},
): DeliveryRequest {
  return {
    target,
    message,
    extra,
    payload: {},
    event: "push",
    route: "ci",
    direct: false,
    ...more,
  };
}

/** Asserts a failure and returns it. */
function failed(result: DeliveryResult): Extract<DeliveryResult, { ok: false }> {
  assert.equal(result.ok, false, `expected a failure, got ${JSON.stringify(result)}`);
  return result as Extract<DeliveryResult, { ok: false }>;
}

/** A port on 127.0.0.1 that nothing listens on. */
function closedPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** 10 000 characters with no blank, line break or space: only hard cuts are possible. */
const TEN_THOUSAND = Array.from({ length: 10_000 }, (_, i) => String.fromCharCode(97 + i % 26))
  .join("");

// --- each platform's wire format ------------------------------------------------------------

Deno.test("telegram: POST /bot<token>/sendMessage with JSON {chat_id, text}", async () => {
  const { fake, context } = await setup("telegram");
  await using _ = fake;

  const result = await deliver(
    request("telegram", "Build #42 passed ✅", { chat_id: "-1001234567890" }),
    context,
  );

  assert.deepEqual(result, {
    ok: true,
    target: "telegram",
    parts: 1,
    detail: "telegram chat -1001234567890",
  });
  assert.equal(fake.requests.length, 1);
  const [sent] = fake.requests;
  assert.equal(sent.method, "POST");
  assert.equal(sent.path, `/bot${fake.token}/sendMessage`);
  assert.equal(sent.headers["content-type"], "application/json");
  assert.deepEqual(sent.body, { chat_id: "-1001234567890", text: "Build #42 passed ✅" });
});

Deno.test("telegram: @channelname, a number from YAML, and TELEGRAM_HOME_CHANNEL when no chat_id", async () => {
  const { fake, context } = await setup("telegram", {
    env: { TELEGRAM_HOME_CHANNEL: "@home_chan" },
  });
  await using _ = fake;

  assert.equal(
    (await deliver(request("telegram", "a", { chat_id: "@my_channel" }), context)).ok,
    true,
  );
  assert.equal((await deliver(request("telegram", "b", { chat_id: -100123 }), context)).ok, true);
  assert.equal((await deliver(request("telegram", "c"), context)).ok, true);

  assert.deepEqual(fake.requests.map((r) => r.body), [
    { chat_id: "@my_channel", text: "a" },
    { chat_id: "-100123", text: "b" },
    { chat_id: "@home_chan", text: "c" },
  ]);
});

Deno.test("telegram, slack, discord: a chat_id that is set but empty is an error, never the home channel", async () => {
  for (const name of ["telegram", "slack", "discord"] as const) {
    const home = `${name.toUpperCase()}_HOME_CHANNEL`;
    const { fake, context } = await setup(name, {
      env: { [home]: EXTRA[name].chat_id as string },
    });
    await using _ = fake;
    // `{chat}` rendered from a payload whose `chat` is "" or blank, or a YAML `chat_id:` (null).
    const rendered = ["", "  "].map((chat) =>
      renderExtra({ chat_id: "{chat}" }, { chat }, "push").chat_id
    );
    assert.deepEqual(rendered, ["", "  "]);
    for (const chatId of [...rendered, "\t\n", null]) {
      const error = failed(
        await deliver(request(TARGET_OF[name], "hi", { chat_id: chatId }), context),
      );
      assert.equal(error.retryable, false, `${name} ${JSON.stringify(chatId)}`);
      assert.match(
        error.error,
        new RegExp(
          `deliver_extra\\.chat_id is empty .*${home} only applies when the route sets none`,
        ),
      );
    }
    assert.equal(fake.requests.length, 0, `${name}: nothing was sent`);
    // Absent: the home channel.
    assert.equal((await deliver(request(TARGET_OF[name], "hi"), context)).ok, true, name);
    assert.equal(fake.requests.length, 1, name);
  }
});

Deno.test("slack: POST /api/chat.postMessage, Bearer token, JSON {channel, text} with charset", async () => {
  const { fake, context } = await setup("slack");
  await using _ = fake;

  const result = await deliver(request("slack", "Deploy done", { chat_id: "#deploys" }), context);

  assert.deepEqual(result, {
    ok: true,
    target: "slack",
    parts: 1,
    detail: "slack channel #deploys",
  });
  const [sent] = fake.requests;
  assert.equal(sent.path, "/api/chat.postMessage");
  assert.equal(sent.headers.authorization, `Bearer ${fake.token}`);
  assert.equal(sent.headers["content-type"], "application/json; charset=utf-8");
  assert.deepEqual(sent.body, { channel: "#deploys", text: "Deploy done" });
});

Deno.test("slack: &, < and > are escaped, so payload text cannot ping <!channel>", async () => {
  const { fake, context } = await setup("slack");
  await using _ = fake;

  await deliver(request("slack", "a <!channel> & <@U123> b", EXTRA.slack), context);

  assert.deepEqual(fake.requests[0].body, {
    channel: "C0123456789",
    text: "a &lt;!channel&gt; &amp; &lt;@U123&gt; b",
  });
});

Deno.test("discord: POST /api/v10/channels/<id>/messages, Bot token, {content} without pings", async () => {
  const { fake, context } = await setup("discord");
  await using _ = fake;

  const result = await deliver(
    request("discord", "@everyone build failed", { chat_id: "1100000000000000001" }),
    context,
  );

  assert.deepEqual(result, {
    ok: true,
    target: "discord",
    parts: 1,
    detail: "discord channel 1100000000000000001",
  });
  const [sent] = fake.requests;
  assert.equal(sent.path, "/api/v10/channels/1100000000000000001/messages");
  assert.equal(sent.headers.authorization, `Bot ${fake.token}`);
  assert.match(sent.headers["user-agent"], /^DiscordBot \(agent-service, \d+\.\d+\.\d+\)$/);
  assert.equal(sent.headers["content-type"], "application/json");
  assert.deepEqual(sent.body, {
    content: "@everyone build failed",
    allowed_mentions: { parse: [] },
  });
});

Deno.test("github_comment: POST /repos/<owner>/<repo>/issues/<n>/comments with GitHub's headers", async () => {
  const { fake, context } = await setup("github");
  await using _ = fake;

  const result = await deliver(
    request("github_comment", "LGTM", { repo: "octo-org/app.js", number: "42" }),
    context,
  );

  assert.deepEqual(result, {
    ok: true,
    target: "github_comment",
    parts: 1,
    detail: "github_comment octo-org/app.js#42",
  });
  const [sent] = fake.requests;
  assert.equal(sent.path, "/repos/octo-org/app.js/issues/42/comments");
  assert.equal(sent.headers.authorization, `Bearer ${fake.token}`);
  assert.equal(sent.headers.accept, "application/vnd.github+json");
  assert.equal(sent.headers["x-github-api-version"], "2022-11-28");
  assert.match(sent.headers["user-agent"], /^agent-service\/\d+\.\d+\.\d+$/);
  assert.equal(sent.headers["content-type"], "application/json");
  assert.deepEqual(sent.body, { body: "LGTM" });
});

Deno.test("github_comment: number 2^31 is the largest accepted", async () => {
  const { fake, context } = await setup("github");
  await using _ = fake;

  const result = await deliver(
    request("github_comment", "x", { repo: "o/r", number: 2 ** 31 }),
    context,
  );

  assert.equal(result.ok, true);
  assert.equal(fake.requests[0].path, "/repos/o/r/issues/2147483648/comments");
});

Deno.test("gitlab_comment: issue note at /projects/<encoded path>/issues/<iid>/notes with PRIVATE-TOKEN", async () => {
  const { fake, context } = await setup("gitlab");
  await using _ = fake;

  const result = await deliver(
    request("gitlab_comment", "Triaged", { project: "group/sub/app", iid: "3" }),
    context,
  );

  assert.deepEqual(result, {
    ok: true,
    target: "gitlab_comment",
    parts: 1,
    detail: "gitlab_comment group/sub/app#3",
  });
  const [sent] = fake.requests;
  assert.equal(sent.path, "/api/v4/projects/group%2Fsub%2Fapp/issues/3/notes");
  assert.equal(sent.headers["private-token"], fake.token);
  assert.equal(sent.headers.authorization, undefined);
  assert.equal(sent.headers["content-type"], "application/json");
  assert.deepEqual(sent.body, { body: "Triaged" });
});

Deno.test("gitlab_comment: kind merge_request and a numeric project id; another kind is refused", async () => {
  const { fake, context } = await setup("gitlab");
  await using _ = fake;

  const result = await deliver(
    request("gitlab_comment", "Reviewed", { project: 278964, iid: 5, kind: "merge_request" }),
    context,
  );
  const refused = failed(
    await deliver(
      request("gitlab_comment", "x", { project: "g/a", iid: 5, kind: "pull" }),
      context,
    ),
  );

  assert.deepEqual(result, {
    ok: true,
    target: "gitlab_comment",
    parts: 1,
    detail: "gitlab_comment 278964!5",
  });
  assert.equal(fake.requests[0].path, "/api/v4/projects/278964/merge_requests/5/notes");
  assert.match(refused.error, /deliver_extra\.kind is "pull"; expected "issue" or "merge_request"/);
  assert.equal(fake.requests.length, 1);
});

Deno.test("api_base_url: a self-hosted root with a trailing slash works", async () => {
  const { fake, context } = await setup("gitlab");
  await using _ = fake;
  const withSlash: DeliveryContext = { ...context, apiBaseUrl: () => `${fake.baseUrl}/` };

  const result = await deliver(request("gitlab_comment", "x", EXTRA.gitlab), withSlash);

  assert.equal(result.ok, true);
  assert.equal(fake.requests[0].path, "/api/v4/projects/group%2Fapp/issues/3/notes");
});

Deno.test("api_base_url: not an http(s) root → refused naming the setting, nothing sent", async () => {
  for (
    const raw of [
      "not a url",
      "ftp://gitlab.example/api/v4",
      "http://u:p@host/api",
      "http://h/api?x=1",
    ]
  ) {
    const { fake, context } = await setup("gitlab", { baseUrl: raw });
    await using _ = fake;

    const error = failed(await deliver(request("gitlab_comment", "x", EXTRA.gitlab), context));

    assert.equal(error.retryable, false);
    assert.match(
      error.error,
      /platforms\.gitlab_comment\.extra\.api_base_url is .*https:\/\/gitlab\.com\/api\/v4/,
    );
  }
});

Deno.test("defaultApiBaseUrl: the public API roots", () => {
  assert.deepEqual(
    (["telegram", "slack", "discord", "github_comment", "gitlab_comment"] as PlatformTarget[]).map(
      defaultApiBaseUrl,
    ),
    [
      "https://api.telegram.org",
      "https://slack.com/api",
      "https://discord.com/api/v10",
      "https://api.github.com",
      "https://gitlab.com/api/v4",
    ],
  );
});

Deno.test("context: an injected fetch is used; without warn, warnings go to log at level warning", async () => {
  const urls: string[] = [];
  const lines: Line[] = [];
  const context: DeliveryContext = {
    secrets: { get: (name) => name === "GITLAB_TOKEN" ? "glpat-x" : undefined },
    apiBaseUrl: () => "https://gitlab.example/api/v4",
    log: (message, properties) => lines.push({ message, properties }),
    fetch: (input) => {
      urls.push(String(input));
      return Promise.resolve(Response.json({ id: 1 }, { status: 201 }));
    },
  };

  const sent = await deliver(request("gitlab_comment", "x", EXTRA.gitlab), context);
  await deliver(request("origin", "y", {}, { payload: {} }), context);

  assert.equal(sent.ok, true);
  assert.deepEqual(urls, ["https://gitlab.example/api/v4/projects/group%2Fapp/issues/3/notes"]);
  assert.equal(lines.length, 2);
  assert.equal(lines[0].properties?.level, "warning");
  assert.match(lines[0].message, /^origin \(route ci\): /);
  assert.deepEqual(lines[1], {
    message: "y",
    properties: { target: "origin", route: "ci", event: "push" },
  });
});

// --- log and [SILENT] ----------------------------------------------------------------------

Deno.test("log: the message goes to context.log with route and event", async () => {
  const { fake, context, logs } = await setup("telegram");
  await using _ = fake;

  const result = await deliver(request("log", "Nightly summary"), context);

  assert.deepEqual(result, { ok: true, target: "log", parts: 1, detail: "log" });
  assert.deepEqual(logs, [{
    message: "Nightly summary",
    properties: { target: "log", route: "ci", event: "push" },
  }]);
  assert.equal(fake.requests.length, 0);
  // With the sender's delivery id, the line names it.
  logs.length = 0;
  await deliver(request("log", "Nightly summary", {}, { deliveryId: "d-7" }), context);
  assert.deepEqual(logs[0].properties, {
    target: "log",
    route: "ci",
    event: "push",
    delivery_id: "d-7",
  });
});

Deno.test("[SILENT]: not delivered to any target, nothing requested or logged", async () => {
  await using fakes = await startFakePlatforms();
  const logs: string[] = [];
  const context: DeliveryContext = {
    secrets: { get: (name) => fakes.env[name] },
    apiBaseUrl: (target) => fakes.baseUrls[target],
    log: (message) => logs.push(message),
  };
  const targets: DeliveryTargetName[] = [
    "log",
    "origin",
    "telegram",
    "discord",
    "slack",
    "github_comment",
    "gitlab_comment",
  ];
  const extra = { ...EXTRA.telegram, ...EXTRA.github, ...EXTRA.gitlab };
  const payload = { repository: { full_name: "o/r" }, issue: { number: 1 } };

  for (const target of targets) {
    for (const message of ["[SILENT]", "  [SILENT]\n"]) {
      assert.deepEqual(
        await deliver(request(target, message, extra, { payload, direct: true }), context),
        { ok: true, target, parts: 0, detail: "silent" },
      );
    }
  }
  const notSilent = await deliver(request("telegram", "[SILENT] (not quite)", extra), context);

  assert.equal(notSilent.ok, true);
  assert.deepEqual(logs, []);
  assert.equal(fakes.telegram.requests.length, 1);
  for (const name of ["slack", "discord", "github", "gitlab"] as const) {
    assert.equal(fakes[name].requests.length, 0, name);
  }
});

Deno.test("an empty message is not sent (platforms refuse it) and says so", async () => {
  const { fake, context } = await setup("telegram");
  await using _ = fake;

  const error = failed(await deliver(request("telegram", " \n\n ", EXTRA.telegram), context));

  assert.equal(error.retryable, false);
  assert.match(
    error.error,
    /^telegram: the message is empty; nothing was sent to chat -1001234567890$/,
  );
  assert.equal(fake.requests.length, 0);
});

Deno.test("an unknown target is refused, listing the known ones", async () => {
  const { fake, context } = await setup("telegram");
  await using _ = fake;

  const error = failed(
    await deliver(request("matrix" as DeliveryTargetName, "x"), context),
  );

  assert.equal(error.retryable, false);
  assert.match(error.error, /unknown delivery target "matrix"; use one of log, origin, telegram/);
});

// --- splitting ------------------------------------------------------------------------------

Deno.test("splitting: 10 000 characters → 3 Telegram, 3 Slack, 5 Discord parts, 1 comment each; order kept", async () => {
  await using fakes = await startFakePlatforms();
  const context: DeliveryContext = {
    secrets: { get: (name) => fakes.env[name] },
    apiBaseUrl: (target) => fakes.baseUrls[target],
    log: () => {},
  };
  const expected: Record<FakePlatformName, number[]> = {
    telegram: [4096, 4096, 1808],
    slack: [4000, 4000, 2000],
    discord: [2000, 2000, 2000, 2000, 2000],
    github: [10_000],
    gitlab: [10_000],
  };

  for (const name of PLATFORMS) {
    const result = await deliver(request(TARGET_OF[name], TEN_THOUSAND, EXTRA[name]), context);

    assert.equal(result.ok && result.parts, expected[name].length, name);
    const texts = fakes[name].requests.map((sent) => {
      const body = sent.body as Record<string, string>;
      return body.text ?? body.content ?? body.body;
    });
    assert.deepEqual(texts.map((text) => text.length), expected[name], name);
    assert.equal(texts.join(""), TEN_THOUSAND, name);
  }
});

Deno.test("splitting: parts end at paragraph breaks when there are some", async () => {
  const { fake, context } = await setup("discord");
  await using _ = fake;
  const paragraphs = Array.from(
    { length: 20 },
    (_, i) => `Paragraph ${i}: ${"lorem ipsum ".repeat(40).trim()}.`,
  );
  const message = paragraphs.join("\n\n");

  const result = await deliver(request("discord", message, EXTRA.discord), context);

  const texts = fake.requests.map((sent) => (sent.body as { content: string }).content);
  assert.equal(result.ok && result.parts, texts.length);
  assert.ok(texts.length > 1);
  // The blank lines between the parts are dropped with the cut.
  assert.equal(texts.join("\n\n"), message);
  for (const [i, text] of texts.entries()) {
    assert.ok(text.length <= MESSAGE_LIMITS.discord);
    assert.match(text, /^Paragraph \d+: /, `part ${i} starts a paragraph`);
    assert.ok(text.endsWith("."), `part ${i} ends a paragraph`);
  }
});

Deno.test("splitMessage: a blank line is preferred to a line break, a line break to a space", () => {
  // The separator where a part ends is dropped with the cut.
  assert.deepEqual(splitMessage("aaaaaa\n\nbbb\ncccccc", 14), ["aaaaaa", "bbb\ncccccc"]);
  assert.deepEqual(splitMessage("aaaaaaaa\nbb\n\ncccccc", 11), ["aaaaaaaa", "bb\n\ncccccc"]);
  assert.deepEqual(splitMessage("aaaaaa\nbb cc dd", 12), ["aaaaaa", "bb cc dd"]);
  assert.deepEqual(splitMessage("aaaa bbbb cccc dddd", 12), ["aaaa bbbb", "cccc dddd"]);
});

Deno.test("splitMessage: a boundary in the first half is not used; the part is cut at the limit", () => {
  assert.deepEqual(splitMessage("a\n\nbbbbbbbbbbbbbbb", 8), ["a\n\nbbbbb", "bbbbbbbb", "bb"]);
  assert.deepEqual(splitMessage("abcdefghij", 4), ["abcd", "efgh", "ij"]);
});

Deno.test("splitMessage: text within the limit is the only part, also the empty text", () => {
  assert.deepEqual(splitMessage("", 10), [""]);
  assert.deepEqual(splitMessage("exactly 10", 10), ["exactly 10"]);
});

Deno.test("splitMessage: never between the halves of a surrogate pair", () => {
  const parts = splitMessage("a😀😀😀😀😀", 4);

  assert.deepEqual(parts, ["a😀", "😀😀", "😀😀"]);
  assert.ok(parts.every((part) => part.isWellFormed()));
});

Deno.test("splitMessage: a limit below 2 or not an integer is refused", () => {
  for (const limit of [1, 0, -5, 2.5, Number.NaN]) {
    assert.throws(() => splitMessage("abc", limit), RangeError, String(limit));
  }
});

const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" });

/** Text from units that make boundaries and surrogate pairs likely. */
const messageText = fc.string({
  unit: fc.constantFrom("a", "b", "é", " ", "\n", "\n\n", "\r\n", "😀", "👍🏽", "\t"),
  maxLength: 300,
});

/**
 * Where each part (of a text without fences) starts in `text`; asserts that the parts are the
 * text's own pieces, in order, with only whitespace left out between them and at both ends.
 */
function partStarts(text: string, parts: string[]): number[] {
  const starts: number[] = [];
  let offset = 0;
  for (const part of parts) {
    const blanks = /^\s*/.exec(text.slice(offset))![0].length;
    const indent = /^\s*/.exec(part)![0].length;
    assert.ok(indent <= blanks, `${JSON.stringify(part)} starts in ${JSON.stringify(text)}`);
    const start = offset + blanks - indent;
    assert.ok(text.startsWith(part, start), `${JSON.stringify(part)} of ${JSON.stringify(text)}`);
    starts.push(start);
    offset = start + part.length;
  }
  assert.equal(text.slice(offset).trim(), "", "only whitespace after the last part");
  return starts;
}

Deno.test("splitMessage (property): parts fit, are the text's pieces in order with only whitespace left out, and stay well-formed", () => {
  fc.assert(
    fc.property(messageText, fc.integer({ min: 2, max: 60 }), (text, limit) => {
      const parts = splitMessage(text, limit);
      const starts = partStarts(text, parts);
      assert.equal(parts.join("").replace(/\s/g, ""), text.replace(/\s/g, ""));
      for (const part of parts) {
        assert.ok(part.length <= limit, `part of ${part.length} > ${limit}`);
        assert.ok(part.isWellFormed(), `lone surrogate in ${JSON.stringify(part)}`);
        assert.doesNotMatch(part, /^[^\S\n]*\n|\s$/, `blank line or whitespace at an end`);
      }
      // No tiny parts: each part but the last takes at least half the limit of the text (the
      // whitespace after it that was dropped included), or the part could not have reached the
      // end of the next one's first character (a grapheme cluster, never cut when it fits a
      // part), the whitespace between them included.
      for (let i = 0; i + 1 < starts.length; i++) {
        const next = graphemes.segment(text).containing(starts[i + 1])!;
        const nextEnd = next.index + next.segment.length;
        assert.ok(
          starts[i + 1] - starts[i] >= Math.ceil(limit / 2) || nextEnd - starts[i] > limit,
          `${JSON.stringify(parts[i])} is short, yet ${JSON.stringify(next.segment)} would fit`,
        );
      }
      assert.ok(
        text.trim() === "" ? parts.length === 1 && parts[0] === "" : parts.every((p) => p.trim()),
      );
    }),
    { numRuns: 500, seed: Number(Deno.env.get("FUZZ_SEED") ?? 20261122) },
  );
});

Deno.test("splitMessage (property): a part ends at a boundary whenever one is in its second half", () => {
  fc.assert(
    fc.property(messageText, fc.integer({ min: 2, max: 60 }), (text, limit) => {
      const parts = splitMessage(text, limit);
      const starts = partStarts(text, parts);
      for (const [i, part] of parts.slice(0, -1).entries()) {
        const window = text.slice(starts[i], starts[i] + limit);
        const reachable = ["\n\n", "\n", " "].some((boundary) => {
          const at = window.lastIndexOf(boundary);
          return at >= 0 && at + boundary.length >= Math.ceil(limit / 2);
        });
        if (reachable) {
          // The boundary itself was dropped with the cut: whitespace follows the part.
          const after = text.slice(starts[i] + part.length);
          assert.match(after, /^\s/, `${JSON.stringify(part)} of ${JSON.stringify(text)}`);
        }
      }
    }),
    { numRuns: 500, seed: Number(Deno.env.get("FUZZ_SEED") ?? 20261123) },
  );
});

// --- origin ---------------------------------------------------------------------------------

Deno.test("origin: GitHub issue, pull request and issue comment events → a comment on that item", async () => {
  const { fake, context } = await setup("github");
  await using _ = fake;
  const repository = { full_name: "octo/app", name: "app", owner: { login: "octo" } };
  const payloads = [
    { action: "opened", issue: { number: 7, title: "Crash" }, repository },
    { action: "opened", number: 12, pull_request: { number: 12, title: "Fix" }, repository },
    { action: "created", issue: { number: 9, pull_request: {} }, comment: { id: 1 }, repository },
  ];

  const results = [];
  for (const payload of payloads) {
    results.push(await deliver(request("origin", "Noted", {}, { payload }), context));
  }

  assert.deepEqual(results, [
    { ok: true, target: "origin", parts: 1, detail: "github_comment octo/app#7" },
    { ok: true, target: "origin", parts: 1, detail: "github_comment octo/app#12" },
    { ok: true, target: "origin", parts: 1, detail: "github_comment octo/app#9" },
  ]);
  assert.deepEqual(fake.requests.map((sent) => sent.path), [
    "/repos/octo/app/issues/7/comments",
    "/repos/octo/app/issues/12/comments",
    "/repos/octo/app/issues/9/comments",
  ]);
  assert.deepEqual(fake.requests[0].body, { body: "Noted" });
});

Deno.test("origin: GitLab issue, merge request and note events → a note on that item", async () => {
  const { fake, context } = await setup("gitlab");
  await using _ = fake;
  const project = { id: 42, path_with_namespace: "group/app" };
  const payloads = [
    { object_kind: "issue", project, object_attributes: { iid: 3, id: 900 } },
    { object_kind: "merge_request", project, object_attributes: { iid: 4, id: 901 } },
    {
      object_kind: "note",
      project,
      object_attributes: { id: 1, note: "hi", noteable_type: "Issue" },
      issue: { iid: 5 },
    },
    {
      object_kind: "note",
      project,
      object_attributes: { id: 2, note: "hi", noteable_type: "MergeRequest" },
      merge_request: { iid: 6 },
    },
    { object_kind: "issue", project: { id: 42 }, object_attributes: { iid: 8 } },
  ];

  const details = [];
  for (const payload of payloads) {
    const result = await deliver(request("origin", "Noted", {}, { payload }), context);
    details.push(result.ok ? result.detail : result.error);
  }

  assert.deepEqual(details, [
    "gitlab_comment group/app#3",
    "gitlab_comment group/app!4",
    "gitlab_comment group/app#5",
    "gitlab_comment group/app!6",
    "gitlab_comment 42#8",
  ]);
  assert.deepEqual(fake.requests.map((sent) => sent.path), [
    "/api/v4/projects/group%2Fapp/issues/3/notes",
    "/api/v4/projects/group%2Fapp/merge_requests/4/notes",
    "/api/v4/projects/group%2Fapp/issues/5/notes",
    "/api/v4/projects/group%2Fapp/merge_requests/6/notes",
    "/api/v4/projects/42/issues/8/notes",
  ]);
});

Deno.test("origin: no code-host item → the message is logged with a warning", async () => {
  const { fake, context, logs, warnings } = await setup("github");
  await using _ = fake;
  const payloads: Array<[Record<string, unknown>, RegExp]> = [
    [{ ref: "refs/heads/main", commits: [] }, /neither a GitHub event .* nor a GitLab event/],
    [{ repository: { full_name: "octo/app" }, ref: "refs/heads/main" }, /no issue or pull request/],
    [
      { object_kind: "note", project: { id: 1 }, object_attributes: { noteable_type: "Commit" } },
      /a note on "Commit", not about an issue or merge request/,
    ],
    [{ object_kind: "push", project: { id: 1 } }, /a "push" event/],
  ];

  for (const [payload, why] of payloads) {
    logs.length = 0;
    warnings.length = 0;
    const result = await deliver(
      request("origin", "Summary", {}, { payload, deliveryId: "d-9" }),
      context,
    );

    assert.equal(result.ok, true);
    assert.equal(result.ok && result.parts, 1);
    assert.deepEqual(logs, [{
      message: "Summary",
      properties: { target: "origin", route: "ci", event: "push", delivery_id: "d-9" },
    }]);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0].message, why);
    assert.match(
      warnings[0].message,
      /^origin \(route ci\): .*; the message is written to the log instead$/,
    );
  }
  assert.equal(fake.requests.length, 0);
});

Deno.test("origin with deliver-only: no code-host item is a failed delivery, nothing logged", async () => {
  const { fake, context, logs, warnings } = await setup("github");
  await using _ = fake;

  const error = failed(
    await deliver(request("origin", "x", {}, { payload: { zen: "hi" }, direct: true }), context),
  );

  assert.equal(error.target, "origin");
  assert.equal(error.retryable, false);
  assert.match(error.error, /deliver-only route to origin needs events about a GitHub issue/);
  assert.deepEqual([logs, warnings, fake.requests.length], [[], [], 0]);
});

Deno.test("origin: payload values that do not fit are no origin (never put in a URL)", async () => {
  const { fake, context, warnings } = await setup("github");
  await using _ = fake;
  const payloads = [
    { repository: { full_name: "a/b/../../orgs" }, issue: { number: 1 } },
    { repository: { full_name: "octo/app" }, issue: { number: "1?x=y" } },
    {
      object_kind: "issue",
      project: { path_with_namespace: "g/../admin" },
      object_attributes: { iid: 1 },
    },
    { object_kind: "issue", project: { id: 1 }, object_attributes: { iid: "2/../../3" } },
  ];

  for (const payload of payloads) {
    const result = await deliver(request("origin", "x", {}, { payload }), context);
    assert.equal(result.ok, true);
    const direct = failed(
      await deliver(request("origin", "x", {}, { payload, direct: true }), context),
    );
    assert.equal(direct.retryable, false);
    assert.match(direct.error, /expected a (GitHub repository|positive integer|GitLab project)/);
  }
  assert.equal(warnings.length, 4);
  assert.equal(fake.requests.length, 0);
});

Deno.test("origin: a missing GITHUB_TOKEN fails, naming it", async () => {
  const { fake, context } = await setup("github", { env: { GITHUB_TOKEN: undefined } });
  await using _ = fake;
  const payload = { repository: { full_name: "octo/app" }, issue: { number: 7 } };

  const error = failed(await deliver(request("origin", "x", {}, { payload }), context));

  assert.equal(error.target, "origin");
  assert.equal(error.retryable, false);
  assert.equal(
    error.error,
    "origin → github_comment: GITHUB_TOKEN is not set. Fix: add GITHUB_TOKEN=<token> to " +
      "<home>/.env, then restart the gateway",
  );
});

// --- identifiers are checked before anything is sent ---------------------------------------

/** [platform, deliver_extra, expected words in the error]. */
const REFUSED: Array<[FakePlatformName, Record<string, unknown>, RegExp]> = [
  [
    "telegram",
    { chat_id: "123/../../x" },
    /deliver_extra\.chat_id is "123\/\.\.\/\.\.\/x"; expected a Telegram chat id/,
  ],
  [
    "telegram",
    { chat_id: "@abc" },
    /deliver_extra\.chat_id is "@abc"; expected a Telegram chat id/,
  ],
  ["telegram", { chat_id: "123?x=1" }, /expected a Telegram chat id/],
  ["telegram", { chat_id: 1.5 }, /deliver_extra\.chat_id is 1\.5; expected a Telegram chat id/],
  ["telegram", { chat_id: true }, /deliver_extra\.chat_id is true; expected/],
  [
    "discord",
    { chat_id: "123/../../x" },
    /deliver_extra\.chat_id is .*expected a Discord channel id/,
  ],
  [
    "discord",
    { chat_id: "12345" },
    /expected a Discord channel id \(a snowflake of 15 to 25 digits/,
  ],
  [
    "discord",
    { chat_id: 1100000000000000001 },
    /is the number .*too large to be exact; write it in quotes/,
  ],
  [
    "slack",
    { chat_id: "general" },
    /deliver_extra\.chat_id is "general"; expected a Slack channel id/,
  ],
  ["slack", { chat_id: "C0123/../x" }, /expected a Slack channel id/],
  ["slack", { chat_id: "#Général" }, /expected a Slack channel id/],
  [
    "github",
    { repo: "a/b/../../orgs", number: 1 },
    /deliver_extra\.repo is "a\/b\/\.\.\/\.\.\/orgs"; expected a GitHub repository owner\/name/,
  ],
  ["github", { repo: "../b", number: 1 }, /deliver_extra\.repo is .*expected a GitHub repository/],
  ["github", { repo: "a/..", number: 1 }, /deliver_extra\.repo/],
  ["github", { repo: "a/.", number: 1 }, /deliver_extra\.repo/],
  ["github", { repo: "a/b/c", number: 1 }, /deliver_extra\.repo/],
  ["github", { repo: "a%2Fb/c", number: 1 }, /deliver_extra\.repo/],
  ["github", { repo: "a/b?x=1", number: 1 }, /deliver_extra\.repo/],
  ["github", { repo: "octo", number: 1 }, /deliver_extra\.repo/],
  ["github", { number: 1 }, /deliver_extra\.repo is null; expected a GitHub repository/],
  [
    "github",
    { repo: "o/r", number: "1?x=y" },
    /deliver_extra\.number is "1\?x=y"; expected a positive integer up to 2147483648/,
  ],
  ["github", { repo: "o/r", number: 0 }, /deliver_extra\.number is 0; expected a positive integer/],
  ["github", { repo: "o/r", number: -3 }, /deliver_extra\.number is -3; expected/],
  ["github", { repo: "o/r", number: 1.5 }, /deliver_extra\.number is 1\.5; expected/],
  ["github", { repo: "o/r", number: "1.0" }, /deliver_extra\.number/],
  ["github", { repo: "o/r", number: 2 ** 31 + 1 }, /deliver_extra\.number is 2147483649; expected/],
  ["github", { repo: "o/r", number: "99999999999999999999" }, /deliver_extra\.number/],
  ["github", { repo: "o/r", number: "1e3" }, /deliver_extra\.number/],
  ["github", { repo: "o/r", number: "0x10" }, /deliver_extra\.number/],
  ["github", { repo: "o/r", number: "007" }, /deliver_extra\.number/],
  ["github", { repo: "o/r" }, /deliver_extra\.number is null; expected/],
  [
    "github",
    { repo: "o/r", number: "{issue.number}" },
    /a template placeholder the payload did not fill/,
  ],
  [
    "gitlab",
    { project: "group/../admin", iid: 1 },
    /deliver_extra\.project is "group\/\.\.\/admin"; expected a GitLab project path/,
  ],
  ["gitlab", { project: "a//b", iid: 1 }, /deliver_extra\.project/],
  ["gitlab", { project: "/a", iid: 1 }, /deliver_extra\.project/],
  ["gitlab", { project: "a/", iid: 1 }, /deliver_extra\.project/],
  ["gitlab", { project: "a?b=1", iid: 1 }, /deliver_extra\.project/],
  ["gitlab", { project: "app", iid: 1 }, /deliver_extra\.project/],
  ["gitlab", { project: 0, iid: 1 }, /deliver_extra\.project is 0/],
  [
    "gitlab",
    { project: "g/a", iid: "3/../../x" },
    /deliver_extra\.iid is .*expected a positive integer/,
  ],
  ["gitlab", { project: "g/a", iid: -1 }, /deliver_extra\.iid is -1/],
  ["gitlab", { project: "g/a" }, /deliver_extra\.iid is null/],
];

for (const name of PLATFORMS) {
  Deno.test(`${name}: identifiers that do not fit are refused, naming the field, nothing sent`, async () => {
    const { fake, context } = await setup(name);
    await using _ = fake;
    const cases = REFUSED.filter(([platform]) => platform === name);
    assert.ok(cases.length > 0);

    for (const [, extra, expected] of cases) {
      const error = failed(await deliver(request(TARGET_OF[name], "hello", extra), context));
      assert.equal(error.retryable, false, JSON.stringify(extra));
      assert.equal(error.target, TARGET_OF[name]);
      assert.match(error.error, expected, JSON.stringify(extra));
    }
    assert.equal(fake.requests.length, 0);
  });
}

Deno.test("chat targets: no chat_id and no home channel → refused naming both settings", async () => {
  for (const name of ["telegram", "slack", "discord"] as const) {
    const { fake, context } = await setup(name);
    await using _ = fake;
    const home = `${name.toUpperCase()}_HOME_CHANNEL`;

    const error = failed(await deliver(request(name, "x"), context));

    assert.equal(error.retryable, false);
    assert.equal(
      error.error,
      `${name}: no chat to send to. Fix: set deliver_extra.chat_id on the route ` +
        `(--deliver-chat-id) or ${home} in <home>/.env`,
    );
    assert.equal(fake.requests.length, 0);
  }
});

Deno.test("chat targets: a home channel that does not fit is refused naming the variable", async () => {
  const { fake, context } = await setup("discord", {
    env: { DISCORD_HOME_CHANNEL: "../../users/@me" },
  });
  await using _ = fake;

  const error = failed(await deliver(request("discord", "x"), context));

  assert.match(
    error.error,
    /^discord: DISCORD_HOME_CHANNEL \(in <home>\/\.env\) is "\.\.\/\.\.\/users\/@me"; expected a Discord channel id/,
  );
  assert.equal(fake.requests.length, 0);
});

// --- tokens ---------------------------------------------------------------------------------

Deno.test("a missing token is refused naming its .env variable, nothing sent", async () => {
  for (const name of PLATFORMS) {
    const variable = TOKEN_VARIABLE[name];
    const { fake, context } = await setup(name, { env: { [variable]: undefined } });
    await using _ = fake;

    const error = failed(await deliver(request(TARGET_OF[name], "x", EXTRA[name]), context));

    assert.equal(error.retryable, false);
    assert.equal(
      error.error,
      `${TARGET_OF[name]}: ${variable} is not set. Fix: add ${variable}=<token> to ` +
        "<home>/.env, then restart the gateway",
    );
    assert.equal(fake.requests.length, 0);
  }
});

Deno.test("a token with spaces, or a Telegram token of the wrong shape, is refused", async () => {
  const spaced = await setup("github", { env: { GITHUB_TOKEN: "ghp_abc def" } });
  await using _a = spaced.fake;
  const shaped = await setup("telegram", { env: { TELEGRAM_BOT_TOKEN: "../../admin" } });
  await using _b = shaped.fake;

  const spacedError = failed(
    await deliver(request("github_comment", "x", EXTRA.github), spaced.context),
  );
  const shapedError = failed(
    await deliver(request("telegram", "x", EXTRA.telegram), shaped.context),
  );

  assert.match(spacedError.error, /GITHUB_TOKEN holds spaces, control or non-ASCII characters/);
  assert.match(shapedError.error, /TELEGRAM_BOT_TOKEN does not look like a Telegram bot token/);
  assert.equal(spaced.fake.requests.length + shaped.fake.requests.length, 0);
});

Deno.test("a token the platform refuses → not retryable, names the variable (Slack: invalid_auth at HTTP 200)", async () => {
  const wrong: Record<FakePlatformName, string> = {
    telegram: "7000000000:AAwrongTokenWrongToken",
    slack: "xoxb-wrong",
    discord: "wrong.discord.token",
    github: "ghp_wrong",
    gitlab: "glpat-wrong",
  };
  for (const name of PLATFORMS) {
    const variable = TOKEN_VARIABLE[name];
    const { fake, context } = await setup(name, { env: { [variable]: wrong[name] } });
    await using _ = fake;

    const error = failed(await deliver(request(TARGET_OF[name], "x", EXTRA[name]), context));

    assert.equal(error.retryable, false, name);
    assert.match(error.error, new RegExp(`check ${variable} in <home>/\\.env`), name);
    if (name === "slack") assert.match(error.error, /ok: false, error: invalid_auth/);
    else assert.match(error.error, /refused the token \(HTTP 401/, name);
    assert.equal(fake.requests.length, 1);
  }
});

Deno.test("every fix that points at .env names the home's real .env file given in the context", async () => {
  // The gateway passes config.paths.dotenv; the messages said `<home>/.env` literally.
  const dotenv = "/srv/agent-home/.env";
  const errorOf = async (
    name: FakePlatformName,
    env: Record<string, string | undefined>,
    extra: Record<string, unknown> = EXTRA[name],
  ) => {
    const { fake, context } = await setup(name, { env, dotenv });
    await using _ = fake;
    return failed(await deliver(request(TARGET_OF[name], "x", extra), context)).error;
  };
  const said = [
    await errorOf("github", { GITHUB_TOKEN: undefined }),
    await errorOf("github", { GITHUB_TOKEN: "ghp_abc def" }),
    await errorOf("telegram", { TELEGRAM_BOT_TOKEN: "../../admin" }),
    await errorOf("slack", {}, {}),
    await errorOf("discord", { DISCORD_HOME_CHANNEL: "../../users/@me" }, {}),
    await errorOf("gitlab", { GITLAB_TOKEN: "glpat-wrong" }),
    await errorOf("slack", { SLACK_BOT_TOKEN: "xoxb-wrong" }),
  ];
  assert.deepEqual(said.map((error) => error.replace(/^.*(Fix:|DISCORD_HOME)/, "$1")), [
    `Fix: add GITHUB_TOKEN=<token> to ${dotenv}, then restart the gateway`,
    `Fix: copy the token again into ${dotenv}`,
    `Fix: copy the token again into ${dotenv}`,
    "Fix: set deliver_extra.chat_id on the route (--deliver-chat-id) or SLACK_HOME_CHANNEL in " +
    dotenv,
    `DISCORD_HOME_CHANNEL (in ${dotenv}) is "../../users/@me"; expected a Discord channel id ` +
    "(a snowflake of 15 to 25 digits, in quotes)",
    `Fix: check GITLAB_TOKEN in ${dotenv}`,
    `Fix: check SLACK_BOT_TOKEN in ${dotenv} (a bot token with the chat:write scope)`,
  ]);
});

Deno.test("a token or home channel from the process environment: the fix names the environment variable, not .env", async () => {
  const dotenv = "/srv/agent-home/.env";
  const errorOf = async (
    name: FakePlatformName,
    dotenvText: string,
    env: Record<string, string | undefined>,
    extra: Record<string, unknown> = EXTRA[name],
  ) => {
    const { fake, context } = await setup(name, {
      env: { [TOKEN_VARIABLE[name]]: undefined, ...env },
      dotenv,
      dotenvText,
    });
    await using _ = fake;
    return failed(await deliver(request(TARGET_OF[name], "x", extra), context)).error;
  };
  const fix = (error: string) => error.replace(/^.*(Fix:|DISCORD_HOME)/, "$1");
  const token = FAKE_TOKENS.discord;
  const said = [
    await errorOf("github", "", { GITHUB_TOKEN: "ghp_abc def" }),
    await errorOf("telegram", "", { TELEGRAM_BOT_TOKEN: "../../admin" }),
    await errorOf("gitlab", "", { GITLAB_TOKEN: "glpat-wrong" }),
    await errorOf("slack", "", { SLACK_BOT_TOKEN: "xoxb-wrong" }),
    await errorOf("discord", `DISCORD_BOT_TOKEN=${token}\n`, {
      DISCORD_HOME_CHANNEL: "../../users/@me",
    }, {}),
    // The same in .env: its file is named.
    await errorOf("gitlab", "GITLAB_TOKEN=glpat-wrong\n", { GITLAB_TOKEN: "glpat-other" }),
  ];
  assert.deepEqual(said.map(fix), [
    "Fix: copy the token again into the environment variable GITHUB_TOKEN",
    "Fix: copy the token again into the environment variable TELEGRAM_BOT_TOKEN",
    "Fix: check the environment variable GITLAB_TOKEN",
    "Fix: check the environment variable SLACK_BOT_TOKEN (a bot token with the chat:write scope)",
    'DISCORD_HOME_CHANNEL (in the environment) is "../../users/@me"; expected a Discord ' +
    "channel id (a snowflake of 15 to 25 digits, in quotes)",
    `Fix: check GITLAB_TOKEN in ${dotenv}`,
  ]);
});

Deno.test("a token set empty: in .env it hides the environment's, and the message says so", async () => {
  const dotenv = "/srv/agent-home/.env";
  const errorOf = async (dotenvText: string, env: Record<string, string | undefined>) => {
    const { fake, context } = await setup("slack", { env, dotenv, dotenvText });
    await using _ = fake;
    const error = failed(await deliver(request("slack", "x", EXTRA.slack), context)).error;
    assert.equal(fake.requests.length, 0);
    return error;
  };
  assert.equal(
    await errorOf("SLACK_BOT_TOKEN=\n", { SLACK_BOT_TOKEN: FAKE_TOKENS.slack }),
    `slack: SLACK_BOT_TOKEN is empty in ${dotenv}, which is read before the environment. Fix: ` +
      "set SLACK_BOT_TOKEN=<token> there, or remove the line to use the environment variable, " +
      "then restart the gateway",
  );
  assert.equal(
    await errorOf("", { SLACK_BOT_TOKEN: " " }),
    "slack: the environment variable SLACK_BOT_TOKEN is empty. Fix: set it to the token, or " +
      `add SLACK_BOT_TOKEN=<token> to ${dotenv}, then restart the gateway`,
  );
  assert.equal(
    await errorOf("", { SLACK_BOT_TOKEN: undefined }),
    `slack: SLACK_BOT_TOKEN is not set. Fix: add SLACK_BOT_TOKEN=<token> to ${dotenv}, then ` +
      "restart the gateway",
  );
});

Deno.test("missingToken: an empty .env line or environment variable is said as such, not as not set", () => {
  const scope = (text: string, env: Record<string, string>) =>
    SecretScope.fromText(text, (name) => env[name]);
  assert.equal(
    missingToken("telegram", scope("TELEGRAM_BOT_TOKEN=\n", { TELEGRAM_BOT_TOKEN: "7:a" })),
    "TELEGRAM_BOT_TOKEN is empty in .env, which is read before the environment",
  );
  assert.equal(
    missingToken("discord", scope("", { DISCORD_BOT_TOKEN: "" })),
    "the environment variable DISCORD_BOT_TOKEN is empty",
  );
  assert.equal(missingToken("slack", scope("", {})), "SLACK_BOT_TOKEN is not set");
  assert.equal(missingToken("slack", scope("", { SLACK_BOT_TOKEN: "xoxb-1" })), undefined);
});

Deno.test("tokens never appear in errors, also when the platform echoes them", async () => {
  for (const name of PLATFORMS) {
    const { fake, context } = await setup(name);
    await using _ = fake;
    const said = `bad request from ${fake.token}`;
    const body = name === "telegram"
      ? { ok: false, error_code: 400, description: said }
      : name === "slack"
      ? { ok: false, error: said }
      : { message: said };
    fake.push({ status: name === "slack" ? 200 : 400, body });

    const error = failed(await deliver(request(TARGET_OF[name], "x", EXTRA[name]), context));

    assert.ok(!error.error.includes(fake.token), error.error);
    assert.match(error.error, /bad request from \[REDACTED\]/, name);
  }
});

Deno.test("tokens never appear in warnings", async () => {
  const { fake, context, warnings } = await setup("github");
  await using _ = fake;
  const payload = { object_kind: fake.token };

  await deliver(request("origin", "x", {}, { payload }), context);

  assert.equal(warnings.length, 1);
  assert.ok(!warnings[0].message.includes(fake.token));
  assert.match(warnings[0].message, /\[REDACTED\]/);
});

Deno.test("a token cut short in a warning (its start, then …) is redacted too", async () => {
  const { fake, context, warnings } = await setup("github");
  await using _ = fake;
  // The shown value is cut to 40 characters: `"xx` and the token's first 36, then `…`.
  const payload = { object_kind: `xx${fake.token}` };

  await deliver(request("origin", "x", {}, { payload }), context);

  assert.equal(warnings.length, 1);
  assert.ok(!warnings[0].message.includes(fake.token.slice(0, 8)), warnings[0].message);
  assert.match(warnings[0].message, /a "xx\[REDACTED\]… event/);
});

// --- failures: what may be retried ---------------------------------------------------------

Deno.test("HTTP 500 from each platform → retryable", async () => {
  for (const name of PLATFORMS) {
    const { fake, context } = await setup(name, { fake: { answers: ["server_error"] } });
    await using _ = fake;

    const error = failed(await deliver(request(TARGET_OF[name], "x", EXTRA[name]), context));

    assert.equal(error.retryable, true, name);
    assert.match(error.error, /failed \(HTTP 500/, name);
    assert.equal(error.partsSent, 0);
  }
});

Deno.test("HTTP 429 from each platform → retryable, with the wait the platform asked for", async () => {
  for (const name of PLATFORMS) {
    const { fake, context } = await setup(name, { fake: { answers: [{ rateLimit: 7 }] } });
    await using _ = fake;

    const error = failed(await deliver(request(TARGET_OF[name], "x", EXTRA[name]), context));

    assert.equal(error.retryable, true, name);
    assert.equal(error.retryAfterMs, 7000, name);
    assert.match(error.error, /rate-limited the request \(HTTP 429.*\); retry after 7 s$/, name);
  }
});

Deno.test("telegram: parameters.retry_after wins over the header; discord: its fractional retry_after", async () => {
  const telegram = await setup("telegram");
  await using _a = telegram.fake;
  const discord = await setup("discord");
  await using _b = discord.fake;
  telegram.fake.push({
    status: 429,
    body: {
      ok: false,
      error_code: 429,
      description: "Too Many Requests",
      parameters: { retry_after: 12 },
    },
    headers: { "retry-after": "3" },
  });
  discord.fake.push({
    status: 429,
    body: { message: "You are being rate limited.", retry_after: 0.25, global: false },
  });

  const fromTelegram = failed(
    await deliver(request("telegram", "x", EXTRA.telegram), telegram.context),
  );
  const fromDiscord = failed(
    await deliver(request("discord", "x", EXTRA.discord), discord.context),
  );

  assert.equal(fromTelegram.retryAfterMs, 12_000);
  assert.equal(fromDiscord.retryAfterMs, 250);
});

Deno.test("discord: a 429 with no retry_after and no Retry-After waits X-RateLimit-Reset-After", async () => {
  const { fake, context } = await setup("discord");
  await using _ = fake;
  fake.push(
    {
      status: 429,
      body: { message: "You are being rate limited.", global: false },
      headers: { "x-ratelimit-reset-after": "1.5", "x-ratelimit-remaining": "0" },
    },
    {
      status: 429,
      body: { message: "You are being rate limited.", global: false },
      headers: { "retry-after": "4", "x-ratelimit-reset-after": "1.5" },
    },
  );

  const fromResetAfter = failed(await deliver(request("discord", "x", EXTRA.discord), context));
  const fromRetryAfter = failed(await deliver(request("discord", "x", EXTRA.discord), context));

  assert.equal(fromResetAfter.retryAfterMs, 1500);
  assert.match(fromResetAfter.error, /; retry after 1\.5 s$/);
  assert.equal(fromRetryAfter.retryAfterMs, 4000);
});

Deno.test("a platform's fractional wait is said as the gateway's log says the next try's wait", async () => {
  const { fake, context } = await setup("discord");
  await using _ = fake;
  fake.push({
    status: 429,
    body: { message: "You are being rate limited.", retry_after: 89.766, global: false },
  });

  const error = failed(await deliver(request("discord", "x", EXTRA.discord), context));

  assert.equal(error.retryAfterMs, 89_766);
  assert.match(error.error, /; retry after 89\.8 s$/);
});

Deno.test("github: 403 with x-ratelimit-remaining 0 is a rate limit (retryable); a plain 403 is not", async () => {
  const { fake, context } = await setup("github");
  await using _ = fake;
  const resetAt = Math.floor(Date.now() / 1000) + 120;
  fake.push(
    {
      status: 403,
      body: { message: "API rate limit exceeded for user ID 1." },
      headers: { "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(resetAt) },
    },
    { status: 403, body: { message: "Resource not accessible by integration" } },
  );

  const limited = failed(await deliver(request("github_comment", "x", EXTRA.github), context));
  const forbidden = failed(await deliver(request("github_comment", "x", EXTRA.github), context));

  assert.equal(limited.retryable, true);
  assert.ok(limited.retryAfterMs !== undefined && limited.retryAfterMs > 100_000);
  assert.match(limited.error, /rate-limited .*API rate limit exceeded/);
  assert.equal(forbidden.retryable, false);
  assert.match(
    forbidden.error,
    /refused the token \(HTTP 403: Resource not accessible by integration\)/,
  );
});

Deno.test("github: a secondary rate limit said only in its message (403 or 429, no headers) is retried after a minute", async () => {
  const { fake, context } = await setup("github");
  await using _ = fake;
  const secondary = "You have exceeded a secondary rate limit. Please wait a few minutes before " +
    "you try again. If you reach out to GitHub Support for help, please include the request ID " +
    "C0DE:1234:5678:9ABC:DEF0.";
  fake.push(
    { status: 403, body: { message: secondary, documentation_url: "https://docs.github.com" } },
    { status: 429, body: { message: secondary } },
    // Requests remain: the reset of the primary window is not the wait of a secondary limit.
    {
      status: 403,
      body: { message: secondary },
      headers: {
        "x-ratelimit-remaining": "4000",
        "x-ratelimit-reset": String(Math.floor(Date.now() / 1000) + 3000),
      },
    },
  );

  for (const status of [403, 429, 403]) {
    const error = failed(await deliver(request("github_comment", "x", EXTRA.github), context));

    assert.equal(error.retryable, true, String(status));
    assert.equal(error.retryAfterMs, 60_000, String(status));
    assert.match(
      error.error,
      new RegExp(
        `rate-limited the request \\(HTTP ${status}: You have exceeded a secondary rate limit.*; ` +
          "retry after 60 s$",
      ),
    );
    assert.doesNotMatch(error.error, /GITHUB_TOKEN/);
  }
});

Deno.test("telegram, discord: HTTP 403 means the bot may not write to that chat; the fix names the chat, not the token", async () => {
  const cases: Array<[FakePlatformName, unknown, RegExp]> = [
    [
      "telegram",
      {
        ok: false,
        error_code: 403,
        description: "Forbidden: bot is not a member of the channel chat",
      },
      /HTTP 403: Forbidden: bot is not a member of the channel chat\)\. Fix: check the chat id \(deliver_extra\.chat_id or TELEGRAM_HOME_CHANNEL\), and that the bot is a member of that chat/,
    ],
    [
      "telegram",
      { ok: false, error_code: 403, description: "Forbidden: bot was blocked by the user" },
      /HTTP 403: Forbidden: bot was blocked by the user\)\. Fix: check the chat id/,
    ],
    [
      "discord",
      { message: "Missing Access", code: 50001 },
      /HTTP 403: Missing Access \(code 50001\)\)\. Fix: check the channel id \(deliver_extra\.chat_id or DISCORD_HOME_CHANNEL\), and that the bot may send messages there/,
    ],
    [
      "discord",
      { message: "Missing Permissions", code: 50013 },
      /HTTP 403: Missing Permissions \(code 50013\)\)\. Fix: check the channel id/,
    ],
  ];
  for (const [name, body, expected] of cases) {
    const { fake, context } = await setup(name, { fake: { answers: [{ status: 403, body }] } });
    await using _ = fake;

    const error = failed(await deliver(request(TARGET_OF[name], "x", EXTRA[name]), context));

    assert.equal(error.retryable, false, name);
    assert.match(error.error, expected, name);
    assert.doesNotMatch(error.error, /refused the token|_TOKEN/, name);
  }
});

Deno.test("slack: ok:false at HTTP 200 is a failure; internal_error may be retried, channel_not_found not", async () => {
  const { fake, context } = await setup("slack", { fake: { known: ["C0123456789"] } });
  await using _ = fake;
  fake.push({ status: 200, body: { ok: false, error: "internal_error" } });

  const internal = failed(await deliver(request("slack", "x", EXTRA.slack), context));
  const unknown = failed(await deliver(request("slack", "x", { chat_id: "C0999999999" }), context));

  assert.equal(internal.retryable, true);
  assert.match(internal.error, /ok: false, error: internal_error/);
  assert.equal(unknown.retryable, false);
  assert.equal(
    unknown.error,
    `slack: channel C0999999999: the Slack Web API at ${fake.baseUrl} refused the message ` +
      "(ok: false, error: channel_not_found). Fix: check the channel (deliver_extra.chat_id or " +
      "SLACK_HOME_CHANNEL) and invite the bot to it",
  );
});

Deno.test("4xx answers are not retryable and carry the platform's own words", async () => {
  const cases: Array<[FakePlatformName, string, RegExp]> = [
    ["telegram", "-1009", /HTTP 400: Bad Request: chat not found\). Fix: check the chat id/],
    ["discord", "1100000000000000009", /HTTP 404: Unknown Channel \(code 10003\)\)/],
    ["github", "octo/other", /HTTP 404: Not Found\). Fix: check deliver_extra\.repo/],
    ["gitlab", "group/other", /HTTP 404: 404 Project Not Found\)/],
  ];
  for (const [name, destination, expected] of cases) {
    const known = [
      name === "github"
        ? "octo-org/app"
        : name === "gitlab"
        ? "group/app"
        : String(EXTRA[name].chat_id),
    ];
    const { fake, context } = await setup(name, { fake: { known } });
    await using _ = fake;
    const extra = name === "github"
      ? { repo: destination, number: 1 }
      : name === "gitlab"
      ? { project: destination, iid: 1 }
      : { chat_id: destination };

    const error = failed(await deliver(request(TARGET_OF[name], "x", extra), context));

    assert.equal(error.retryable, false, name);
    assert.match(error.error, expected, name);
  }
});

Deno.test("telegram: a group that became a supergroup → the new chat id in the fix", async () => {
  const { fake, context } = await setup("telegram");
  await using _ = fake;
  fake.push({
    status: 400,
    body: {
      ok: false,
      error_code: 400,
      description: "Bad Request: group chat was upgraded to a supergroup chat",
      parameters: { migrate_to_chat_id: -1001234567899 },
    },
  });

  const error = failed(await deliver(request("telegram", "x", { chat_id: "-4001" }), context));

  assert.equal(error.retryable, false);
  assert.match(error.error, /Fix: set deliver_extra\.chat_id to -1001234567899$/);
});

Deno.test("a platform that never answers → retryable timeout after timeoutMs", async () => {
  for (const name of PLATFORMS) {
    const { fake, context } = await setup(name, { fake: { answers: ["hang"] }, timeoutMs: 300 });
    await using _ = fake;

    const started = performance.now();
    const error = failed(await deliver(request(TARGET_OF[name], "x", EXTRA[name]), context));
    const waited = performance.now() - started;

    // After timeoutMs itself, not another (the message names the option whatever the timer).
    assert.ok(waited >= 250 && waited < 2_000, `${name}: gave up after ${Math.round(waited)} ms`);
    assert.equal(error.retryable, true, name);
    assert.match(error.error, /did not answer within 0\.3 s$/, name);
    assert.equal(fake.requests.length, 1);
  }
});

Deno.test("an API nobody listens on → retryable, naming the base URL setting", async () => {
  const { fake, context } = await setup("telegram", {
    baseUrl: `http://127.0.0.1:${closedPort()}`,
  });
  await using _ = fake;

  const error = failed(await deliver(request("telegram", "x", EXTRA.telegram), context));

  assert.equal(error.retryable, true);
  assert.match(
    error.error,
    /cannot reach the Telegram Bot API at .*Fix: check platforms\.telegram\.extra\.api_base_url/,
  );
  assert.ok(!error.error.includes(fake.token));
});

Deno.test("a redirect is not followed (it would carry the token) and is not retryable", async () => {
  const { fake, context } = await setup("github");
  await using _ = fake;
  const elsewhere = await startFakePlatform("github");
  await using _e = elsewhere;
  fake.push({
    status: 301,
    headers: { location: `${elsewhere.baseUrl}/repos/octo-org/app/issues/42/comments` },
  });

  const error = failed(await deliver(request("github_comment", "x", EXTRA.github), context));

  assert.equal(error.retryable, false);
  assert.match(error.error, /redirects \(HTTP 301 to .*\); requests are not followed there/);
  assert.equal(fake.requests.length, 1);
  assert.equal(elsewhere.requests.length, 0);
});

Deno.test("a 2xx answer that is not the platform's → not retryable, check the base URL", async () => {
  const { fake, context } = await setup("telegram");
  await using _ = fake;
  fake.push({ status: 200, body: "<html>Welcome to nginx</html>" });

  const error = failed(await deliver(request("telegram", "x", EXTRA.telegram), context));

  assert.equal(error.retryable, false);
  assert.match(
    error.error,
    /answered HTTP 200 but not as that API does.*Fix: check platforms\.telegram\.extra\.api_base_url/,
  );
});

/**
 * A fetch whose answer has a body of 64 MiB, made as it is read, in 64 KiB chunks of `fill`; the
 * stats say how much was read and whether the reader gave up (cancelled the body).
 */
function hugeAnswerFetch(status: number, fill: string) {
  const chunk = new TextEncoder().encode(
    fill.repeat(Math.ceil(65536 / fill.length)).slice(0, 65536),
  );
  const stats = { requests: 0, pulled: 0, cancelled: false };
  const fetch: typeof globalThis.fetch = () => {
    stats.requests++;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (stats.pulled >= 64 * 1024 * 1024) return controller.close();
        stats.pulled += chunk.byteLength;
        controller.enqueue(chunk);
      },
      cancel() {
        stats.cancelled = true;
      },
    });
    return Promise.resolve(
      new Response(body, { status, headers: { "content-type": "text/html" } }),
    );
  };
  return { fetch, stats };
}

Deno.test("an answer's body is read up to 1 MiB, no further: a huge 2xx is delivered once, a huge 500 is a short retryable error", async () => {
  // 1 MiB, the chunk that crosses it, and one the stream queues ahead of the reader.
  const limit = 1024 * 1024 + 2 * 65536;
  const ok = hugeAnswerFetch(200, '{"id": "1", "content": "');
  const discord = await deliver(request("discord", "x", EXTRA.discord), {
    secrets: { get: () => FAKE_TOKENS.discord },
    apiBaseUrl: () => "https://discord.example/api/v10",
    log: () => {},
    fetch: ok.fetch,
  });
  const broken = hugeAnswerFetch(500, "<html><body>Server Error ");
  const telegram = failed(
    await deliver(request("telegram", "x", EXTRA.telegram), {
      secrets: { get: () => FAKE_TOKENS.telegram },
      apiBaseUrl: () => "https://telegram.example",
      log: () => {},
      fetch: broken.fetch,
    }),
  );

  assert.deepEqual(discord, {
    ok: true,
    target: "discord",
    parts: 1,
    detail: "discord channel 1100000000000000001",
  });
  assert.equal(telegram.retryable, true);
  assert.equal(
    telegram.error,
    "telegram: chat -1001234567890: the Telegram Bot API at https://telegram.example failed " +
      "(HTTP 500); it may work when tried again",
  );
  for (const { stats } of [ok, broken]) {
    assert.equal(stats.requests, 1);
    assert.ok(stats.pulled <= limit, `read ${stats.pulled} bytes`);
    assert.equal(stats.cancelled, true);
  }
});

Deno.test("a part that fails stops the rest and says how many were sent", async () => {
  const { fake, context } = await setup("discord", { fake: { answers: ["ok", "server_error"] } });
  await using _ = fake;

  const error = failed(await deliver(request("discord", TEN_THOUSAND, EXTRA.discord), context));

  assert.equal(error.retryable, true);
  assert.equal(error.partsSent, 1);
  assert.match(
    error.error,
    /^discord: channel 1100000000000000001: part 2 of 5 not sent \(1 sent before it\): .*HTTP 500/,
  );
  assert.equal(fake.requests.length, 2);
});

Deno.test("skipParts: a retry sends only the parts an earlier attempt did not deliver", async () => {
  const { fake, context } = await setup("discord", {
    fake: { answers: ["ok", "ok", "server_error"] },
  });
  await using _ = fake;
  const whole = splitMessage(TEN_THOUSAND, MESSAGE_LIMITS.discord);
  const sent = () => fake.requests.map((r) => (r.body as { content: string }).content);

  const first = failed(await deliver(request("discord", TEN_THOUSAND, EXTRA.discord), context));
  assert.equal(first.partsSent, 2);
  assert.match(first.error, /part 3 of 5 not sent \(2 sent before it\)/);

  const retry = await deliver(
    request("discord", TEN_THOUSAND, EXTRA.discord, { skipParts: first.partsSent }),
    context,
  );

  assert.deepEqual(retry, {
    ok: true,
    target: "discord",
    parts: 3,
    detail: "discord channel 1100000000000000001",
  });
  // Parts 1 and 2 once, part 3 twice (refused, then sent), parts 4 and 5 once: nothing doubled.
  assert.deepEqual(sent(), [whole[0], whole[1], whole[2], whole[2], whole[3], whole[4]]);
});

Deno.test("skipParts: a failure after resuming counts the parts from the first", async () => {
  const { fake, context } = await setup("discord", { fake: { answers: ["ok", "server_error"] } });
  await using _ = fake;

  const error = failed(
    await deliver(request("discord", TEN_THOUSAND, EXTRA.discord, { skipParts: 2 }), context),
  );

  assert.equal(error.partsSent, 3);
  assert.match(error.error, /part 4 of 5 not sent \(3 sent before it\)/);
  assert.equal(fake.requests.length, 2);
});

Deno.test("skipParts: a value that is not a whole number sends every part", async () => {
  const { fake, context } = await setup("discord");
  await using _ = fake;

  for (const skipParts of [Number.NaN, -1, 1.5]) {
    const result = await deliver(
      request("discord", TEN_THOUSAND, EXTRA.discord, { skipParts }),
      context,
    );
    assert.equal(result.ok && result.parts, 5, String(skipParts));
  }
  assert.equal(fake.requests.length, 15);
});
