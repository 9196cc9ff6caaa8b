import assert from "node:assert/strict";
import {
  MAX_DEFAULT_PAYLOAD_CHARS,
  MAX_RAW_CHARS,
  MAX_VALUE_CHARS,
  renderExtra,
  renderPrompt,
  renderTemplate,
} from "../../src/webhook/templates.ts";

const PAYLOAD = {
  action: "opened",
  number: 42,
  ratio: 0.5,
  big: 12345678901234567890,
  draft: false,
  merged_at: null,
  labels: ["bug", "ci"],
  pull_request: { title: "Fix it", user: { login: "octo" } },
  commits: [{ id: "abc" }, { id: "def" }],
  tricky: "see {event_type} and {action} and $& $1",
};

const render = (template: string, payload: unknown = PAYLOAD) =>
  renderTemplate(template, payload, { event: "pull_request" });

// --- renderTemplate -------------------------------------------------------------------------

Deno.test("renderTemplate: nested paths insert strings as they are", () => {
  assert.equal(
    render("{pull_request.user.login} opened '{pull_request.title}' ({action})"),
    "octo opened 'Fix it' (opened)",
  );
});

Deno.test("renderTemplate: numeric segments index arrays", () => {
  assert.equal(render("{labels.0}/{labels.1} {commits.1.id}"), "bug/ci def");
  assert.equal(render("{0.name}", [{ name: "first" }]), "first");
  assert.equal(render("{a.0}", { a: { "0": "key zero" } }), "key zero");
});

Deno.test("renderTemplate: a path that leads nowhere keeps its placeholder", () => {
  assert.equal(
    render("{nope} {labels.2} {labels.x} {action.length} {pull_request.constructor} {a..b} {.}"),
    "{nope} {labels.2} {labels.x} {action.length} {pull_request.constructor} {a..b} {.}",
  );
  assert.equal(render("{number.x}"), "{number.x}");
  assert.equal(render("{x}", "just a string"), "{x}");
});

Deno.test("renderTemplate: scalars are inserted as JSON text", () => {
  assert.equal(render("{number} {ratio} {draft} {merged_at}"), "42 0.5 false null");
  assert.equal(render("{big}"), JSON.stringify(PAYLOAD.big));
  assert.equal(render("{n}", { n: 10 ** 15 }), "1000000000000000");
  assert.equal(render("{n}", { n: 12345678901234567890n }), "12345678901234567890");
  assert.equal(
    render("{n}", { n: { m: 12345678901234567890n } }),
    '{\n  "m": 12345678901234567890\n}',
  );
});

Deno.test("renderTemplate: objects and arrays are 2-space JSON", () => {
  assert.equal(render("{pull_request.user}"), '{\n  "login": "octo"\n}');
  assert.equal(render("{labels}"), '[\n  "bug",\n  "ci"\n]');
  assert.equal(render("{e}", { e: {} }), "{}");
});

Deno.test("renderTemplate: objects are cut to 2000 characters, the last one an ellipsis", () => {
  const items = Array.from({ length: 400 }, (_, i) => `item-${i}`);
  const full = JSON.stringify(items, null, 2);
  assert.ok(full.length > MAX_VALUE_CHARS);
  const out = render("{items}", { items });
  assert.equal(out, full.slice(0, MAX_VALUE_CHARS - 1) + "…");
  const exact = JSON.stringify(["x".repeat(MAX_VALUE_CHARS - 8)], null, 2);
  assert.equal(exact.length, MAX_VALUE_CHARS);
  assert.equal(render("{a}", { a: JSON.parse(exact) }), exact, "exactly 2000 is not cut");
  // Long strings are not objects: they go in whole.
  const long = "y".repeat(MAX_VALUE_CHARS * 3);
  assert.equal(render("{s}", { s: long }), long);
});

Deno.test("renderTemplate: a cut never splits a surrogate pair; an emoji counts once", () => {
  // `[\n  "` is 5 characters: by UTF-16 units, the 2000th is the first half of an emoji.
  const text = "a".repeat(MAX_VALUE_CHARS - 6) + "😀😀😀";
  const out = render("{o}", { o: [text] });
  assert.equal(out, `[\n  "${"a".repeat(MAX_VALUE_CHARS - 6)}…`);
  // Only emoji: 1994 of them whole (3988 UTF-16 units) after `[\n  "`, then `…`.
  const emoji = render("{o}", { o: ["😀".repeat(MAX_VALUE_CHARS)] });
  assert.equal(emoji, `[\n  "${"😀".repeat(MAX_VALUE_CHARS - 6)}…`);
  assert.ok(out.isWellFormed() && emoji.isWellFormed());
  assert.doesNotThrow(() => encodeURIComponent(emoji));
});

Deno.test("renderTemplate: {__raw__} is the whole payload, cut to 4000 characters", () => {
  assert.equal(render("raw: {__raw__}", { a: 1 }), 'raw: {\n  "a": 1\n}');
  const big = { text: "z".repeat(MAX_RAW_CHARS * 2) };
  assert.equal(
    render("{__raw__}", big),
    JSON.stringify(big, null, 2).slice(0, MAX_RAW_CHARS - 1) + "…",
  );
});

Deno.test("renderTemplate: {event_type} is the event name, even over a payload field", () => {
  assert.equal(render("{event_type}"), "pull_request");
  assert.equal(render("{event_type}", { event_type: "other" }), "pull_request");
});

Deno.test("renderTemplate: one pass: inserted payload text is never expanded again", () => {
  assert.equal(render("{tricky}"), PAYLOAD.tricky);
  assert.equal(
    render("{title}", { title: "{__raw__}{event_type}" }),
    "{__raw__}{event_type}",
  );
});

Deno.test("renderTemplate: braces around other characters are plain text", () => {
  const template = '{a-b} { action } {action } {"x":1} {} {{action}} {ac tion} {é}';
  assert.equal(render(template), '{a-b} { action } {action } {"x":1} {} {opened} {ac tion} {é}');
});

// --- renderPrompt ---------------------------------------------------------------------------

Deno.test("renderPrompt: without a template, the payload as a JSON code block", () => {
  const payload = { action: "opened", n: 1 };
  const expected = "Webhook event 'pull_request' on route 'deploy':\n\n```json\n" +
    JSON.stringify(payload, null, 2) + "\n```";
  assert.equal(renderPrompt({ name: "deploy" }, payload, "pull_request"), expected);
  assert.equal(renderPrompt({ name: "deploy", prompt: "" }, payload, "pull_request"), expected);
  assert.equal(renderPrompt({ name: "deploy", prompt: " \n" }, payload, "pull_request"), expected);
});

Deno.test("renderPrompt: with a template, the rendered template", () => {
  assert.equal(
    renderPrompt({ name: "deploy", prompt: "Review #{number} ({event_type})" }, PAYLOAD, "pr"),
    "Review #42 (pr)",
  );
});

Deno.test("renderPrompt: a payload with backticks gets a longer fence", () => {
  const out = renderPrompt({ name: "r" }, { body: "```js\nx\n```" }, "e");
  assert.ok(out.startsWith("Webhook event 'e' on route 'r':\n\n````json\n"));
  assert.ok(out.endsWith("\n````"));
});

Deno.test("renderPrompt: a huge payload is cut, with a note saying so", () => {
  const payload = { text: "q".repeat(MAX_DEFAULT_PAYLOAD_CHARS) };
  const json = JSON.stringify(payload, null, 2);
  const out = renderPrompt({ name: "r" }, payload, "e");
  assert.equal(
    out,
    "Webhook event 'e' on route 'r':\n\n```json\n" + json.slice(0, MAX_DEFAULT_PAYLOAD_CHARS - 1) +
      `…\n\`\`\`\n\n(payload cut: the first ${MAX_DEFAULT_PAYLOAD_CHARS - 1} of ${json.length} ` +
      "characters shown)",
  );
});

// --- renderExtra ----------------------------------------------------------------------------

Deno.test("renderExtra: string values are rendered, others kept, input unchanged", () => {
  const extra = {
    repo: "{repository.full_name}",
    number: "{number}",
    chat_id: 12345,
    flags: { keep: "{action}" },
    missing: "{nope}",
  };
  const copy = structuredClone(extra);
  const payload = { repository: { full_name: "octo/app" }, number: 7, action: "opened" };
  assert.deepEqual(renderExtra(extra, payload, "push"), {
    repo: "octo/app",
    number: "7",
    chat_id: 12345,
    flags: { keep: "{action}" },
    missing: "{nope}",
  });
  assert.deepEqual(extra, copy);
  assert.deepEqual(renderExtra({ e: "{event_type}" }, {}, "push"), { e: "push" });
});
