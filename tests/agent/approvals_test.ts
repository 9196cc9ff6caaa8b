import assert from "node:assert/strict";
import {
  type ApprovalRequest,
  type ApprovalSurface,
  type AskLine,
  PolicyApprovals,
  PromptApprovals,
} from "../../src/agent/approvals.ts";

// The approval timeout must not outlive the question.
Deno.test.sanitizer({ ops: true, resources: true });

const REQUEST: ApprovalRequest = {
  kind: "tool_call",
  summary: "call tool write_note of MCP server 'notes'",
  server: "notes",
};

/** A resolvable promise. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** An ask function that answers `answer` and records the questions. */
function answering(answer: string | null) {
  const questions: string[] = [];
  const ask: AskLine = (question) => {
    questions.push(question);
    return Promise.resolve(answer);
  };
  return { ask, questions };
}

/** An ask function that never answers: it rejects when its signal aborts, like LineReader. */
function waitingForAbort(onAsked?: (signal: AbortSignal) => void): AskLine {
  return (_question, signal) =>
    new Promise((_resolve, reject) => {
      signal.addEventListener("abort", () => reject(signal.reason), { once: true });
      onAsked?.(signal);
    });
}

function prompt(ask: AskLine, timeoutMs = 60_000) {
  const written: string[] = [];
  const surface = new PromptApprovals(ask, { timeoutMs, write: (text) => written.push(text) });
  return { surface, written, output: () => written.join("") };
}

// --- PolicyApprovals -----------------------------------------------------------------------

Deno.test("PolicyApprovals: deny denies, allow approves, neither is interactive", async () => {
  const deny = new PolicyApprovals("deny");
  const allow = new PolicyApprovals("allow");

  assert.equal(await deny.approve(REQUEST), "denied");
  assert.equal(await allow.approve({ kind: "sampling", summary: "sample" }), "approved");
  assert.equal(deny.interactive, false);
  assert.equal(allow.interactive, false);
  assert.equal(deny.policy, "deny");
  assert.equal(allow.policy, "allow");
});

Deno.test("PolicyApprovals: used through the ApprovalSurface interface", async () => {
  const surfaces: ApprovalSurface[] = [new PolicyApprovals("deny"), new PolicyApprovals("allow")];
  const answers = [];
  for (const surface of surfaces) {
    answers.push(await surface.approve(REQUEST, { signal: AbortSignal.abort() }));
  }

  assert.deepEqual(answers, ["denied", "approved"]);
});

// --- PromptApprovals: answers --------------------------------------------------------------

for (const answer of ["y", "Y", "yes", "YES", " yes ", "Yes\t", "y\r"]) {
  Deno.test(`PromptApprovals: ${JSON.stringify(answer)} approves`, async () => {
    const { ask } = answering(answer);
    const { surface, output } = prompt(ask);

    assert.equal(await surface.approve(REQUEST), "approved");
    assert.match(output(), /Approved once\.\n$/);
  });
}

for (const answer of ["n", "no", "", "   ", "yess", "yes please", "ok", "sure", "1", null]) {
  Deno.test(`PromptApprovals: ${JSON.stringify(answer)} denies`, async () => {
    const { ask } = answering(answer);
    const { surface, output } = prompt(ask);

    assert.equal(await surface.approve(REQUEST), "denied");
    assert.match(output(), /Not approved\.\n$/);
  });
}

Deno.test("PromptApprovals: interactive; the question says y/N and the timeout in seconds", async () => {
  const { ask, questions } = answering("n");
  const { surface } = prompt(ask, 45_000);

  await surface.approve(REQUEST);

  assert.equal(surface.interactive, true);
  assert.deepEqual(questions, ["Approve once? [y/N] (no answer in 45 s denies) "]);
});

Deno.test("PromptApprovals: the summary and the indented detail are written before asking", async () => {
  let writtenWhenAsked = "";
  const { surface, output } = prompt((_question) => {
    writtenWhenAsked = output();
    return Promise.resolve("y");
  });

  await surface.approve({ ...REQUEST, detail: '{\n  "text": "hi"\n}' });

  assert.equal(
    writtenWhenAsked,
    "\nApproval needed: call tool write_note of MCP server 'notes'\n" +
      '    {\n      "text": "hi"\n    }\n',
  );
  assert.equal(output(), `${writtenWhenAsked}Approved once.\n`);
});

Deno.test("PromptApprovals: without detail only the summary is written", async () => {
  let writtenWhenAsked = "";
  const { surface, output } = prompt(() => {
    writtenWhenAsked = output();
    return Promise.resolve("n");
  });

  await surface.approve(REQUEST);

  assert.equal(writtenWhenAsked, `\nApproval needed: ${REQUEST.summary}\n`);
});

Deno.test("PromptApprovals: the model's arguments cannot hide or rewrite what is approved", async () => {
  // A prompt-injected model sends arguments that, written raw, would erase the line above and
  // show a harmless call instead.
  const { surface, output } = prompt(() => Promise.resolve("n"));

  await surface.approve({
    ...REQUEST,
    detail: 'arguments: {"path": "/etc/passwd"}\r\x1b[2K\x1b[1Aarguments: {"text": "hi"} \u202Eok',
  });

  assert.equal(
    output(),
    `\nApproval needed: ${REQUEST.summary}\n` +
      '    arguments: {"path": "/etc/passwd"}\\u{d}\\u{1b}[2K\\u{1b}[1Aarguments: {"text": "hi"} ' +
      "\\u{202e}ok\nNot approved.\n",
  );
});

// --- PromptApprovals: timeout and cancellation ---------------------------------------------

Deno.test("PromptApprovals: no answer within the timeout → timed_out, and the user is told", async () => {
  let askSignal: AbortSignal | undefined;
  const { surface, output } = prompt(waitingForAbort((signal) => (askSignal = signal)), 50);

  const started = performance.now();
  const decision = await surface.approve(REQUEST);
  const waited = performance.now() - started;

  assert.equal(decision, "timed_out");
  // After the 50 ms asked for (the notice says "0 s" whatever the timer was).
  assert.ok(waited >= 40 && waited < 400, `timed out after ${Math.round(waited)} ms`);
  assert.equal(askSignal?.aborted, true, "the question is stopped");
  assert.match(output(), /\nNo answer within 0 s: not approved\.\n$/);
  assert.doesNotMatch(output(), /Approved once/);
});

Deno.test("PromptApprovals: the timeout message rounds to whole seconds (600 ms → 1 s)", async () => {
  const { surface, output } = prompt(waitingForAbort(), 600);

  assert.equal(await surface.approve(REQUEST), "timed_out");
  assert.match(output(), /No answer within 1 s: not approved/);
});

Deno.test("PromptApprovals: an already aborted caller signal → denied without asking", async () => {
  const { ask, questions } = answering("y");
  const { surface, written } = prompt(ask);

  const decision = await surface.approve(REQUEST, { signal: AbortSignal.abort() });

  assert.equal(decision, "denied");
  assert.deepEqual(questions, []);
  assert.deepEqual(written, []);
});

Deno.test("PromptApprovals: the caller aborting while asking → denied, not timed_out", async () => {
  const asked = deferred<AbortSignal>();
  const { surface, output } = prompt(waitingForAbort((signal) => asked.resolve(signal)));
  const controller = new AbortController();

  const pending = surface.approve(REQUEST, { signal: controller.signal });
  const askSignal = await asked.promise;
  controller.abort();

  assert.equal(await pending, "denied");
  assert.equal(askSignal.aborted, true, "the question is stopped");
  assert.doesNotMatch(output(), /No answer within/);
});

Deno.test("PromptApprovals: an ask failure rejects that approval; the next one is still asked", async () => {
  let calls = 0;
  const { surface } = prompt(() => {
    calls++;
    return calls === 1 ? Promise.reject(new Error("terminal gone")) : Promise.resolve("y");
  });

  const first = surface.approve(REQUEST);
  const second = surface.approve(REQUEST);

  await assert.rejects(first, /terminal gone/);
  assert.equal(await second, "approved");
  assert.equal(calls, 2);
});

// --- PromptApprovals: one question at a time -----------------------------------------------

Deno.test("PromptApprovals: concurrent approvals are asked one after the other", async () => {
  const firstAnswer = deferred<string>();
  const firstAsked = deferred();
  const questions: string[] = [];
  let firstAnswered = false;
  let askedEarly = false;
  const { surface, output } = prompt((question) => {
    questions.push(question);
    if (questions.length === 1) {
      firstAsked.resolve();
      return firstAnswer.promise;
    }
    if (!firstAnswered) askedEarly = true;
    return Promise.resolve("n");
  });

  const first = surface.approve({ kind: "tool_call", summary: "first call" });
  const second = surface.approve({ kind: "tool_call", summary: "second call" });
  await firstAsked.promise;

  assert.equal(questions.length, 1, "the second question waits for the first answer");
  assert.doesNotMatch(output(), /second call/);

  firstAnswered = true;
  firstAnswer.resolve("yes");

  assert.equal(await first, "approved");
  assert.equal(await second, "denied");
  assert.equal(askedEarly, false);
  assert.equal(questions.length, 2);
  const text = output();
  assert.ok(
    text.indexOf("first call") < text.indexOf("Approved once.") &&
      text.indexOf("Approved once.") < text.indexOf("second call") &&
      text.indexOf("second call") < text.indexOf("Not approved."),
    text,
  );
});

Deno.test("PromptApprovals: a queued approval whose caller aborts meanwhile is denied unasked", async () => {
  const firstAnswer = deferred<string>();
  const firstAsked = deferred();
  let calls = 0;
  const { surface, output } = prompt(() => {
    calls++;
    firstAsked.resolve();
    return firstAnswer.promise;
  });
  const controller = new AbortController();

  const first = surface.approve({ kind: "tool_call", summary: "first call" });
  const second = surface.approve(
    { kind: "tool_call", summary: "second call" },
    { signal: controller.signal },
  );
  await firstAsked.promise;
  controller.abort();
  firstAnswer.resolve("y");

  assert.equal(await first, "approved");
  assert.equal(await second, "denied");
  assert.equal(calls, 1);
  assert.doesNotMatch(output(), /second call/);
});
