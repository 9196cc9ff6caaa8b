/**
 * A custom model, tool host and approval surface built from `mod.ts` alone: every type a caller of
 * `runLoop` needs to write them is exported there (this file type-checks only if it is).
 */
import assert from "node:assert/strict";
import {
  type ApprovalSurface,
  type ElicitationForm,
  type FormAnswer,
  type FunctionTool,
  type ModelHost,
  type ModelReply,
  type RegisteredTool,
  type RunLimits,
  runLoop,
  type ToolCallRequest,
  type ToolHost,
} from "../../mod.ts";

Deno.test("mod.ts exports what a custom runLoop host needs, and such hosts run", async () => {
  const tool: RegisteredTool = {
    name: "mcp__calc__add",
    server: "calc",
    originalName: "add",
    kind: "tool",
    description: "adds two numbers",
    inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } } },
    readOnly: true,
    trust: "full",
  };
  const tools: ToolHost = {
    tools: () => [tool],
    callTool: (_name, args) =>
      Promise.resolve({
        content: [{ type: "text", text: String(Number(args.a) + Number(args.b)) }],
      }),
  };
  const offered: FunctionTool[][] = [];
  const model: ModelHost = {
    settings: { model: "scripted", provider: "custom", baseUrl: "http://127.0.0.1:1/v1" },
    complete(messages, functions): Promise<ModelReply> {
      offered.push([...functions]);
      const toolResult = messages.find((message) => message.role === "tool");
      if (toolResult) {
        return Promise.resolve({
          content: `sum: ${toolResult.content}`,
          toolCalls: [],
          retries: 0,
        });
      }
      const call: ToolCallRequest = {
        id: "c1",
        type: "function",
        function: { name: "mcp__calc__add", arguments: '{"a":2,"b":3}' },
      };
      return Promise.resolve({ content: null, toolCalls: [call], retries: 0 });
    },
  };
  const approvals: ApprovalSurface = {
    interactive: false,
    approve: () => Promise.resolve("denied"),
    collectForm: (_form: ElicitationForm): Promise<FormAnswer> =>
      Promise.resolve({ action: "decline" }),
  };
  const limits: RunLimits = { maxIterations: 4, runTimeoutSeconds: 10 };
  const result = await runLoop({
    systemPrompt: "Be terse.",
    prompt: "add 2 and 3",
    model,
    tools,
    approvals,
    limits,
    entrypoint: "interactive",
    surface: "cli",
  });
  assert.equal(result.endReason, "completed", result.error);
  assert.equal(result.answer, "sum: 5");
  assert.deepEqual(result.toolCalls.map((call) => [call.name, call.outcome]), [
    ["mcp__calc__add", "success"],
  ]);
  assert.equal(offered[0][0].function.name, "mcp__calc__add");
});
