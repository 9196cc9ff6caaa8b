/**
 * Elicitation forms on the approval surfaces: `PromptApprovals` asks field by field at a
 * terminal (title, description, type, choices, default; re-asks bad answers; accept, decline,
 * cancel; stops when the timeout aborts), `PolicyApprovals` declines whatever its policy.
 */
import assert from "node:assert/strict";
import { type AskLine, PolicyApprovals, PromptApprovals } from "../../src/agent/approvals.ts";
import { answerElicitation, type ElicitationForm, formFields } from "../../src/mcp/elicitation.ts";

Deno.test.sanitizer({ ops: true, resources: true });

const SCHEMA = {
  type: "object" as const,
  properties: {
    name: { type: "string" as const, title: "Your name", default: "John Doe" },
    age: {
      type: "integer" as const,
      description: "In whole years",
      minimum: 0,
      maximum: 150,
    },
    plan: {
      type: "string" as const,
      oneOf: [{ const: "free", title: "Free plan" }, { const: "pro", title: "Pro plan" }],
      default: "free",
    },
    newsletter: { type: "boolean" as const, default: false },
    nickname: { type: "string" as const },
  },
  required: ["age"],
};

const FORM: ElicitationForm = {
  server: "crm",
  message: "We need a few details\nto open your account.",
  fields: formFields(SCHEMA),
  timeoutSeconds: 300,
};

/** A terminal that answers from a script (null = end of input) and records the questions. */
function terminal(answers: (string | null)[]) {
  const questions: string[] = [];
  const written: string[] = [];
  const ask: AskLine = (question) => {
    questions.push(question);
    assert.ok(answers.length > 0, `unexpected question: ${question}`);
    return Promise.resolve(answers.shift()!);
  };
  const surface = new PromptApprovals(ask, {
    timeoutMs: 60_000,
    write: (text) => written.push(text),
  });
  return { surface, questions, output: () => written.join(""), left: () => answers.length };
}

Deno.test("PromptApprovals.collectForm: asks each field, applies defaults, re-asks bad answers", async () => {
  const t = terminal(["y", "", "forty", "200", "41", "2", "", "", "y"]);
  const answer = await t.surface.collectForm(FORM);
  assert.deepEqual(answer, {
    action: "accept",
    content: { name: "John Doe", age: 41, plan: "pro", newsletter: false },
  });
  assert.equal(t.left(), 0);
  assert.deepEqual(t.questions, [
    "Fill in the form? [y = yes, n = decline, anything else cancels] (no answer in 300 s cancels) ",
    "  Your name [John Doe]: ",
    "  age: ",
    "  age: ",
    "  age: ",
    "  plan [free]: ",
    "  newsletter [no]: ",
    "  nickname: ",
    "Send? [y/N] ",
  ]);
  const output = t.output();
  assert.ok(
    output.startsWith(
      "\nMCP server 'crm' asks for information:\n    We need a few details\n" +
        "    to open your account.\n" +
        "    Fields: Your name, age (required), plan, newsletter, nickname\n",
    ),
    output,
  );
  assert.ok(output.includes("\n  age (required): whole number, at least 0, at most 150\n"));
  assert.ok(output.includes("    In whole years\n"), "the description is shown");
  assert.ok(output.includes("\n  plan: one of: 1) Free plan, 2) Pro plan\n"));
  assert.ok(
    output.includes("    age: expected whole number, at least 0, at most 150; try again\n"),
  );
  assert.ok(
    output.endsWith(
      "\nSend to MCP server 'crm':\n    Your name: John Doe\n    age: 41\n    plan: pro\n" +
        "    newsletter: no\n    nickname: (left out)\nSent.\n",
    ),
    output,
  );
});

Deno.test("PromptApprovals.collectForm: a server's texts are shown with control characters escaped", async () => {
  const t = terminal(["n"]);
  const form: ElicitationForm = {
    server: "crm",
    message: "Sign in\x1b[8m hidden \x1b[0m\tplease\nnow",
    fields: formFields({
      type: "object",
      properties: { name: { type: "string", title: "Name\r\x1b[2KPassword" } },
    }),
    timeoutSeconds: 300,
  };
  assert.deepEqual(await t.surface.collectForm(form), { action: "decline" });
  assert.equal(
    t.output(),
    "\nMCP server 'crm' asks for information:\n" +
      "    Sign in\\u{1b}[8m hidden \\u{1b}[0m\tplease\n    now\n" +
      "    Fields: Name\\u{d}\\u{1b}[2KPassword\nDeclined.\n",
  );
});

Deno.test("PromptApprovals.collectForm: decline, cancel, and a form not sent", async () => {
  for (const [answers, action] of [[["n"], "decline"], [["no"], "decline"]] as const) {
    const t = terminal([...answers]);
    assert.deepEqual(await t.surface.collectForm(FORM), { action });
    assert.match(t.output(), /Declined\.\n$/);
  }
  for (const answers of [[""], ["c"], [null], ["y", "", null]]) {
    const t = terminal([...answers]);
    assert.deepEqual(await t.surface.collectForm(FORM), { action: "cancel" }, String(answers));
    assert.match(t.output(), /Cancelled\.\n$/);
  }
  const t = terminal(["y", "Ada", "36", "", "y", "Countess", "n"]);
  assert.deepEqual(await t.surface.collectForm(FORM), { action: "decline" });
  assert.match(t.output(), /newsletter: yes\n {4}nickname: Countess\nDeclined\.\n$/);
});

Deno.test("PromptApprovals.collectForm: the elicitation timeout ends the questions", async () => {
  const written: string[] = [];
  let asked: AbortSignal | undefined;
  const surface = new PromptApprovals((_question, signal) => {
    asked = signal;
    return new Promise((_, reject) =>
      signal.addEventListener("abort", () => reject(signal.reason), { once: true })
    );
  }, { timeoutMs: 60_000, write: (text) => written.push(text) });
  const result = await answerElicitation({ message: "Age?", requestedSchema: SCHEMA }, {
    server: "crm",
    timeoutSeconds: 0.2,
    collector: surface,
  });
  assert.deepEqual(result, { action: "cancel" });
  assert.ok(asked?.aborted, "the question was withdrawn");
  // The surface writes its notice once the aborted question settles.
  await surface.approve({ kind: "tool_call", summary: "after" }, { signal: AbortSignal.abort() });
  assert.match(written.join(""), /No answer within 0\.2 s: the form was cancelled\.\n$/);
});

Deno.test("PromptApprovals.collectForm: forms and approvals are asked one at a time", async () => {
  const order: string[] = [];
  let release!: () => void;
  const gate = new Promise<void>((resolve) => release = resolve);
  const surface = new PromptApprovals(async (question) => {
    order.push(question.trim().split(" ")[0]);
    if (question.startsWith("Fill")) await gate;
    return question.trim().startsWith("age") ? "7" : question.startsWith("  ") ? "" : "y";
  }, { timeoutMs: 60_000, write: () => {} });
  const form = surface.collectForm(FORM);
  const approval = surface.approve({ kind: "tool_call", summary: "write" });
  await Promise.resolve();
  release();
  assert.equal((await form).action, "accept");
  assert.equal(await approval, "approved");
  assert.deepEqual(order, [
    "Fill",
    "Your",
    "age:",
    "plan",
    "newsletter",
    "nickname:",
    "Send?",
    "Approve",
  ]);
});

Deno.test("PolicyApprovals.collectForm: declines whatever the policy", async () => {
  for (const policy of ["allow", "deny"] as const) {
    const surface = new PolicyApprovals(policy);
    assert.deepEqual(await surface.collectForm(FORM), { action: "decline" });
    const result = await answerElicitation(
      { message: "Age?", requestedSchema: SCHEMA },
      { server: "crm", timeoutSeconds: 300, collector: surface },
    );
    assert.deepEqual(result, { action: "decline" });
  }
});
