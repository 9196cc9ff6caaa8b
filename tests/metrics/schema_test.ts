import assert from "node:assert/strict";
import { Ajv2020 } from "ajv/dist/2020";
import ajvFormats from "ajv-formats";
import {
  APPROVAL_ATTRIBUTIONS,
  APPROVAL_OUTCOMES,
  ARCHITECTURES,
  COUNT_BUCKETS,
  DURATION_BUCKETS,
  END_REASONS,
  EXECUTION_SURFACES,
  INSTALL_METHODS,
  LOCALITIES,
  METRIC_NAMES,
  type MetricItem,
  type MetricName,
  type MetricsPackage,
  MODEL_CALL_OUTCOMES,
  MODEL_FAMILIES,
  OS_FAMILIES,
  POST_PATCH_STATES,
  PROVIDER_FAMILIES,
  REUSE_STATES,
  SCHEMA_VERSION,
  SKILL_ACTIONS,
  SKILL_PROVENANCES,
  TASK_ENTRYPOINTS,
  TASK_OUTCOMES,
  TERMINATIONS,
  TOOL_APPROVAL_OUTCOMES,
  TOOL_CALL_OUTCOMES,
  TOOL_CATEGORIES,
  TOOL_LATENCY_BUCKETS,
  TOOL_RETRY_BUCKETS,
} from "../../src/metrics/contract.ts";
import { sharedMetricsSchema, validateMetricsPackage } from "../../src/metrics/schema.ts";

// ---------------------------------------------------------------------------------------------
// Fixtures

/** One valid item of every metric kind, in METRIC_NAMES order. */
const VALID_ITEMS: Record<MetricName, MetricItem> = {
  "agent.client.active": {
    name: "agent.client.active",
    type: "counter",
    dimensions: {},
    value: 1,
  },
  "agent.model_call.count": {
    name: "agent.model_call.count",
    type: "counter",
    dimensions: {
      call_role: "primary",
      locality: "remote",
      model_family: "claude",
      outcome: "success",
      provider_family: "direct",
    },
    value: 7,
  },
  "agent.model_route.count": {
    name: "agent.model_route.count",
    type: "counter",
    dimensions: { model: "anthropic/claude-sonnet-4.5", provider: "openrouter" },
    value: 3,
  },
  "agent.task_run.started": {
    name: "agent.task_run.started",
    type: "counter",
    dimensions: { entrypoint: "interactive", execution_surface: "cli" },
    value: 2,
  },
  "agent.task_run.finished": {
    name: "agent.task_run.finished",
    type: "counter",
    dimensions: {
      duration_bucket: "5s_to_30s",
      end_reason: "completed",
      entrypoint: "interactive",
      execution_surface: "cli",
      model_call_count_bucket: "2",
      outcome: "success",
      retry_count_bucket: "0",
      termination: "none",
      tool_call_count_bucket: "3_to_5",
    },
    value: 2,
  },
  "agent.tool_call.count": {
    name: "agent.tool_call.count",
    type: "counter",
    dimensions: {
      approval_outcome: "not_required",
      latency_bucket: "100ms_to_250ms",
      outcome: "success",
      retry_count_bucket: "unknown",
      tool_category: "mcp",
    },
    value: 11,
  },
  "agent.tool_approval.count": {
    name: "agent.tool_approval.count",
    type: "counter",
    dimensions: { attribution: "tool_call", outcome: "approved" },
    value: 1,
  },
  "agent.skill.lifecycle.count": {
    name: "agent.skill.lifecycle.count",
    type: "counter",
    dimensions: { action: "created", provenance: "agent_created" },
    value: 1,
  },
  "agent.skill.load.count": {
    name: "agent.skill.load.count",
    type: "counter",
    dimensions: {
      post_patch_state: "not_applicable",
      provenance: "local",
      reuse_state: "first_use",
      use_count_bucket: "1",
    },
    value: 4,
  },
};

/** The enumeration every enum-typed dimension of every kind must have, per SPEC.md. */
const KIND_ENUMS: Record<MetricName, Record<string, readonly string[]>> = {
  "agent.client.active": {},
  "agent.model_call.count": {
    locality: LOCALITIES,
    model_family: MODEL_FAMILIES,
    outcome: MODEL_CALL_OUTCOMES,
    provider_family: PROVIDER_FAMILIES,
  },
  "agent.model_route.count": {},
  "agent.task_run.started": { entrypoint: TASK_ENTRYPOINTS, execution_surface: EXECUTION_SURFACES },
  "agent.task_run.finished": {
    duration_bucket: DURATION_BUCKETS,
    end_reason: END_REASONS,
    entrypoint: TASK_ENTRYPOINTS,
    execution_surface: EXECUTION_SURFACES,
    model_call_count_bucket: COUNT_BUCKETS,
    outcome: TASK_OUTCOMES,
    retry_count_bucket: COUNT_BUCKETS,
    termination: TERMINATIONS,
    tool_call_count_bucket: COUNT_BUCKETS,
  },
  "agent.tool_call.count": {
    approval_outcome: TOOL_APPROVAL_OUTCOMES,
    latency_bucket: TOOL_LATENCY_BUCKETS,
    outcome: TOOL_CALL_OUTCOMES,
    retry_count_bucket: TOOL_RETRY_BUCKETS,
    tool_category: TOOL_CATEGORIES,
  },
  "agent.tool_approval.count": { attribution: APPROVAL_ATTRIBUTIONS, outcome: APPROVAL_OUTCOMES },
  "agent.skill.lifecycle.count": { action: SKILL_ACTIONS, provenance: SKILL_PROVENANCES },
  "agent.skill.load.count": {
    post_patch_state: POST_PATCH_STATES,
    provenance: SKILL_PROVENANCES,
    reuse_state: REUSE_STATES,
    use_count_bucket: COUNT_BUCKETS,
  },
};

const RESOURCE_ENUMS: Record<string, readonly string[]> = {
  architecture: ARCHITECTURES,
  install_method: INSTALL_METHODS,
  os_family: OS_FAMILIES,
};

const TOP_LEVEL_FIELDS = [
  "schema_version",
  "package_id",
  "install_id",
  "period_start",
  "period_end",
  "generated_at",
  "resource",
  "metrics",
] as const;
const RESOURCE_FIELDS = ["architecture", "agent_version", "install_method", "os_family"] as const;
const ITEM_FIELDS = ["name", "type", "dimensions", "value"] as const;
const UUID_FIELDS = ["package_id", "install_id"] as const;
const DATE_TIME_FIELDS = ["period_start", "period_end", "generated_at"] as const;

const VALID_PACKAGE: MetricsPackage = {
  schema_version: SCHEMA_VERSION,
  package_id: "3f1c2a9e-8b7d-4c6e-9a5f-1e2d3c4b5a69",
  install_id: "9b8a7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
  period_start: "2026-03-01T00:00:00Z",
  period_end: "2026-03-02T00:00:00Z",
  generated_at: "2026-03-02T00:05:12.345Z",
  resource: {
    architecture: "x86_64",
    agent_version: "0.1.0",
    install_method: "git",
    os_family: "linux",
  },
  metrics: METRIC_NAMES.map((name) => VALID_ITEMS[name]),
};

/** Index of a kind's item in VALID_PACKAGE.metrics. */
const at = (name: MetricName): number => METRIC_NAMES.indexOf(name);

type Path = readonly (string | number)[];
type Mutable = Record<string | number, unknown>;

/** A deep copy of the valid package with the value at `path` replaced. */
function withValue(path: Path, value: unknown, base: unknown = VALID_PACKAGE): unknown {
  const copy = structuredClone(base);
  let node = copy as Mutable;
  for (const key of path.slice(0, -1)) node = node[key] as Mutable;
  node[path[path.length - 1]] = value;
  return copy;
}

/** A deep copy of the valid package with the property at `path` removed. */
function without(path: Path): unknown {
  const copy = structuredClone(VALID_PACKAGE);
  let node = copy as unknown as Mutable;
  for (const key of path.slice(0, -1)) node = node[key] as Mutable;
  delete node[path[path.length - 1]];
  return copy;
}

/** A package holding exactly the given metric items. */
function packageOf(...items: unknown[]): unknown {
  return withValue(["metrics"], items);
}

/** A package with one metric item whose `dimensions[key]` is `value`. */
function routeWith(key: "model" | "provider", value: string): unknown {
  return withValue(["metrics", at("agent.model_route.count"), "dimensions", key], value);
}

const pointerOf = (path: Path): string => path.length === 0 ? "" : `/${path.join("/")}`;

// A bare validator compiled from the same schema: the oracle for "valid".
const bareAjv = new Ajv2020({ allErrors: true, strict: true });
ajvFormats.default(bareAjv);
const bareValidate = bareAjv.compile(sharedMetricsSchema);

interface Expected {
  pointer: string;
  rule: string;
  value?: unknown;
}

/** Assert `pkg` is rejected with exactly the expected (pointer, rule) pairs. */
function assertRejected(pkg: unknown, expected: readonly Expected[]): void {
  assert.equal(bareValidate(pkg), false, "the bare schema validator should reject the package");
  const result = validateMetricsPackage(pkg);
  assert.equal(result.valid, false);
  if (result.valid) return;
  const key = (e: { pointer: string; rule: string }) => `${e.rule} at ${JSON.stringify(e.pointer)}`;
  assert.deepEqual(result.errors.map(key).sort(), expected.map(key).sort());
  for (const error of result.errors) {
    assert.ok(
      error.message.includes(error.pointer === "" ? "(root)" : error.pointer),
      `message names the pointer: ${error.message}`,
    );
    assert.ok(error.message.includes(error.rule), `message names the rule: ${error.message}`);
    const wanted = expected.find((e) => e.pointer === error.pointer && e.rule === error.rule);
    if (wanted !== undefined && "value" in wanted) assert.deepEqual(error.value, wanted.value);
  }
}

/** Assert `pkg` is accepted, by both the bare validator and validateMetricsPackage. */
function assertAccepted(pkg: unknown): void {
  const result = validateMetricsPackage(pkg);
  assert.deepEqual(result, { valid: true }, JSON.stringify(result, null, 2));
  assert.equal(bareValidate(pkg), true);
}

// ---------------------------------------------------------------------------------------------
// Valid packages

Deno.test("accepts a package holding one valid item of each of the nine kinds", () => {
  assert.equal(VALID_PACKAGE.metrics.length, 9);
  assertAccepted(VALID_PACKAGE);
});

for (const name of METRIC_NAMES) {
  Deno.test(`accepts a package holding only ${name}`, () => {
    assertAccepted(packageOf(VALID_ITEMS[name]));
  });
}

Deno.test("accepts every allowed value of every enumeration", () => {
  for (const [field, values] of Object.entries(RESOURCE_ENUMS)) {
    for (const value of values) assertAccepted(withValue(["resource", field], value));
  }
  for (const name of METRIC_NAMES) {
    for (const [dimension, values] of Object.entries(KIND_ENUMS[name])) {
      for (const value of values) {
        assertAccepted(withValue(["metrics", at(name), "dimensions", dimension], value));
      }
    }
  }
});

Deno.test("accepts the boundary values", () => {
  assertAccepted(withValue(["resource", "agent_version"], "1"));
  assertAccepted(withValue(["resource", "agent_version"], "v".repeat(64)));
  assertAccepted(routeWith("model", "m".repeat(256)));
  assertAccepted(routeWith("model", "0"));
  assertAccepted(routeWith("model", "a0._:/@+-z"));
  assertAccepted(routeWith("provider", "p".repeat(64)));
  assertAccepted(routeWith("provider", "custom:my-llm"));
  assertAccepted(withValue(["metrics", at("agent.tool_call.count"), "value"], 1));
  assertAccepted(withValue(["metrics", at("agent.tool_call.count"), "value"], 2 ** 40));
  for (const version of "12345") {
    for (const variant of "89ab") {
      const id = `3f1c2a9e-8b7d-${version}c6e-${variant}a5f-1e2d3c4b5a69`;
      for (const field of UUID_FIELDS) assertAccepted(withValue([field], id));
    }
  }
  for (const stamp of ["2026-03-01T00:00:00+02:00", "2026-03-01T23:59:59.999-05:30"]) {
    for (const field of DATE_TIME_FIELDS) assertAccepted(withValue([field], stamp));
  }
});

// ---------------------------------------------------------------------------------------------
// One broken rule per package

interface Case {
  /** What is broken, naming the rule. */
  name: string;
  pkg: unknown;
  expected: Expected[];
}

const cases: Case[] = [];

/** A case whose package has `value` at `path`, rejected by `rule` at that path. */
function badValue(rule: string, path: Path, value: unknown, what = JSON.stringify(value)): void {
  const pointer = pointerOf(path);
  cases.push({
    name: `[${rule}] ${pointer} = ${what}`,
    pkg: withValue(path, value),
    expected: [{ pointer, rule, value }],
  });
}

// Closed objects: an extra property at every level.
cases.push({
  name: "[additionalProperties] extra top-level property",
  pkg: withValue(["extra"], true),
  expected: [{ pointer: "/extra", rule: "additionalProperties", value: true }],
});
cases.push({
  name: "[additionalProperties] extra property in resource",
  pkg: withValue(["resource", "agent_version_full"], "0.1.0+abc"),
  expected: [{
    pointer: "/resource/agent_version_full",
    rule: "additionalProperties",
    value: "0.1.0+abc",
  }],
});
for (const name of METRIC_NAMES) {
  const i = at(name);
  cases.push({
    name: `[additionalProperties] extra property in a ${name} item`,
    pkg: withValue(["metrics", i, "unit"], "calls"),
    expected: [{ pointer: `/metrics/${i}/unit`, rule: "additionalProperties", value: "calls" }],
  });
  const extraDimension: Expected[] = [
    { pointer: `/metrics/${i}/dimensions/tool_name`, rule: "additionalProperties", value: "x" },
  ];
  if (name === "agent.client.active") {
    // "an object with zero properties" is also stated as maxProperties: 0.
    extraDimension.push({ pointer: `/metrics/${i}/dimensions`, rule: "maxProperties" });
  }
  cases.push({
    name: `[additionalProperties] extra dimension in ${name}`,
    pkg: withValue(["metrics", i, "dimensions", "tool_name"], "x"),
    expected: extraDimension,
  });
}

// Required fields.
for (const field of TOP_LEVEL_FIELDS) {
  cases.push({
    name: `[required] missing top-level ${field}`,
    pkg: without([field]),
    expected: [{ pointer: `/${field}`, rule: "required", value: undefined }],
  });
}
for (const field of RESOURCE_FIELDS) {
  cases.push({
    name: `[required] missing resource.${field}`,
    pkg: without(["resource", field]),
    expected: [{ pointer: `/resource/${field}`, rule: "required", value: undefined }],
  });
}
for (const name of METRIC_NAMES) {
  const i = at(name);
  for (const field of ITEM_FIELDS) {
    cases.push({
      name: `[${field === "name" ? "oneOf" : "required"}] missing ${field} in a ${name} item`,
      pkg: without(["metrics", i, field]),
      // Without a name the kind is unknown: one oneOf error for the item's name.
      expected: [{
        pointer: `/metrics/${i}/${field}`,
        rule: field === "name" ? "oneOf" : "required",
        value: undefined,
      }],
    });
  }
  for (const dimension of Object.keys(VALID_ITEMS[name].dimensions)) {
    cases.push({
      name: `[required] missing dimension ${dimension} in ${name}`,
      pkg: without(["metrics", i, "dimensions", dimension]),
      expected: [{ pointer: `/metrics/${i}/dimensions/${dimension}`, rule: "required" }],
    });
  }
}

// Enumerations.
for (const field of Object.keys(RESOURCE_ENUMS)) {
  badValue("enum", ["resource", field], "beos");
  badValue("enum", ["resource", field], RESOURCE_ENUMS[field][0].toUpperCase());
}
for (const name of METRIC_NAMES) {
  for (const dimension of Object.keys(KIND_ENUMS[name])) {
    badValue("enum", ["metrics", at(name), "dimensions", dimension], "not_a_value");
  }
}

// Constants.
badValue("const", ["schema_version"], "agent.shared_metrics.v1");
badValue("const", ["schema_version"], "AGENT.SHARED_METRICS.V2");
for (const name of METRIC_NAMES) badValue("const", ["metrics", at(name), "type"], "gauge");
badValue(
  "const",
  ["metrics", at("agent.model_call.count"), "dimensions", "call_role"],
  "auxiliary",
);

// Values.
for (const name of METRIC_NAMES) {
  const path = ["metrics", at(name), "value"];
  if (name === "agent.client.active") {
    badValue("const", path, 2);
    badValue("const", path, 0);
    // Not an integer breaks the type and, being unequal to 1, the const too.
    for (const bad of [1.5, "1"]) {
      cases.push({
        name: `[type] ${pointerOf(path)} = ${JSON.stringify(bad)}`,
        pkg: withValue(path, bad),
        expected: [
          { pointer: pointerOf(path), rule: "type", value: bad },
          { pointer: pointerOf(path), rule: "const", value: bad },
        ],
      });
    }
  } else {
    badValue("minimum", path, 0);
    badValue("minimum", path, -3);
    badValue("type", path, 1.5);
    badValue("type", path, "1");
  }
}

// model / provider of agent.model_route.count.
const route = ["metrics", at("agent.model_route.count"), "dimensions"] as const;
for (const key of ["model", "provider"] as const) {
  for (const bad of ["Claude-3", ".hidden", "gpt 4", "-lead", "a\\b", "ümlaut"]) {
    badValue("pattern", [...route, key], bad);
  }
  cases.push({
    name: `[minLength] ${key} empty`,
    pkg: routeWith(key, ""),
    // The empty string also fails the pattern, which needs a first character.
    expected: [
      { pointer: pointerOf([...route, key]), rule: "minLength", value: "" },
      { pointer: pointerOf([...route, key]), rule: "pattern", value: "" },
    ],
  });
}
badValue("maxLength", [...route, "model"], "m".repeat(257), "257 characters");
badValue("maxLength", [...route, "provider"], "p".repeat(65), "65 characters");

// resource.agent_version length.
badValue("minLength", ["resource", "agent_version"], "");
badValue("maxLength", ["resource", "agent_version"], "v".repeat(65), "65 characters");

// metrics array.
badValue("minItems", ["metrics"], []);
badValue("type", ["metrics"], {});
badValue("type", ["metrics"], "agent.client.active");
cases.push({
  name: "[oneOf] unknown metric name",
  pkg: withValue(["metrics", 2, "name"], "agent.model_route.total"),
  expected: [{ pointer: "/metrics/2/name", rule: "oneOf", value: "agent.model_route.total" }],
});
cases.push({
  name: "[oneOf] metric name of the wrong type",
  pkg: withValue(["metrics", 0, "name"], 42),
  expected: [{ pointer: "/metrics/0/name", rule: "oneOf", value: 42 }],
});
cases.push({
  name: "[oneOf] metric item that is not an object",
  pkg: withValue(["metrics", 4], "agent.task_run.finished"),
  expected: [{ pointer: "/metrics/4", rule: "oneOf", value: "agent.task_run.finished" }],
});

// UUIDs.
const BAD_UUIDS: Record<string, string> = {
  "uppercase hex": "3F1C2A9E-8B7D-4C6E-9A5F-1E2D3C4B5A69",
  "version digit 0": "3f1c2a9e-8b7d-0c6e-9a5f-1e2d3c4b5a69",
  "version digit 6": "3f1c2a9e-8b7d-6c6e-9a5f-1e2d3c4b5a69",
  "variant digit c": "3f1c2a9e-8b7d-4c6e-ca5f-1e2d3c4b5a69",
  "variant digit 7": "3f1c2a9e-8b7d-4c6e-7a5f-1e2d3c4b5a69",
  "short first group": "3f1c2a9-8b7d-4c6e-9a5f-1e2d3c4b5a69",
  "long last group": "3f1c2a9e-8b7d-4c6e-9a5f-1e2d3c4b5a690",
  "groups 8-4-4-5-11": "3f1c2a9e-8b7d-4c6e-9a5f1-e2d3c4b5a69",
  "missing dashes": "3f1c2a9e8b7d4c6e9a5f1e2d3c4b5a69",
  "braces": "{3f1c2a9e-8b7d-4c6e-9a5f-1e2d3c4b5a69}",
  "non-hex letter": "3f1c2a9g-8b7d-4c6e-9a5f-1e2d3c4b5a69",
  "trailing newline": "3f1c2a9e-8b7d-4c6e-9a5f-1e2d3c4b5a69\n",
};
for (const field of UUID_FIELDS) {
  for (const [what, bad] of Object.entries(BAD_UUIDS)) badValue("pattern", [field], bad, what);
  badValue("type", [field], 12345);
}

// date-time.
const BAD_DATE_TIMES: Record<string, string> = {
  "not a date": "yesterday",
  "date without time": "2026-03-01",
  "missing timezone": "2026-03-01T00:00:00",
  "impossible day": "2026-02-30T00:00:00Z",
  "hour 24": "2026-03-01T24:00:00Z",
  "epoch number as string": "1772323200",
};
for (const field of DATE_TIME_FIELDS) {
  for (const [what, bad] of Object.entries(BAD_DATE_TIMES)) badValue("format", [field], bad, what);
  badValue("type", [field], 1772323200);
}

// The package itself.
const NOT_OBJECTS: [string, unknown][] = [["null", null], ["an array", []], ["a string", "x"], [
  "a number",
  1,
]];
for (const [what, bad] of NOT_OBJECTS) {
  cases.push({
    name: `[type] package is ${what}`,
    pkg: bad,
    expected: [{ pointer: "", rule: "type", value: bad }],
  });
}

for (const { name, pkg, expected } of cases) {
  Deno.test(`rejects: ${name}`, () => assertRejected(pkg, expected));
}

Deno.test("case names are unique, so each broken rule is reported separately", () => {
  const names = cases.map((c) => c.name);
  assert.deepEqual([...new Set(names)], names);
});

// ---------------------------------------------------------------------------------------------
// Error reports

Deno.test("an empty object reports each missing top-level field", () => {
  assertRejected({}, TOP_LEVEL_FIELDS.map((field) => ({ pointer: `/${field}`, rule: "required" })));
});

Deno.test("errors in several items are each explained by their own kind", () => {
  let pkg = withValue(["metrics", at("agent.skill.load.count"), "dimensions", "reuse_state"], "x");
  pkg = withValue(["metrics", at("agent.client.active"), "value"], 5, pkg);
  pkg = withValue(["resource", "os_family"], "plan9", pkg);
  pkg = withValue(["metrics", at("agent.task_run.started"), "name"], "agent.task_run.begun", pkg);
  assertRejected(pkg, [
    { pointer: "/resource/os_family", rule: "enum", value: "plan9" },
    { pointer: "/metrics/0/value", rule: "const", value: 5 },
    { pointer: "/metrics/3/name", rule: "oneOf", value: "agent.task_run.begun" },
    { pointer: "/metrics/8/dimensions/reuse_state", rule: "enum", value: "x" },
  ]);
});

Deno.test("an item with several faults reports all of them, and only them", () => {
  const i = at("agent.tool_call.count");
  const item = {
    name: "agent.tool_call.count",
    type: "counter",
    dimensions: { latency_bucket: "slow", outcome: "success", retry_count_bucket: "7" },
    value: 0,
    tags: [],
  };
  assertRejected(withValue(["metrics", i], item), [
    { pointer: `/metrics/${i}/tags`, rule: "additionalProperties", value: [] },
    { pointer: `/metrics/${i}/dimensions/approval_outcome`, rule: "required" },
    { pointer: `/metrics/${i}/dimensions/tool_category`, rule: "required" },
    { pointer: `/metrics/${i}/dimensions/latency_bucket`, rule: "enum", value: "slow" },
    { pointer: `/metrics/${i}/dimensions/retry_count_bucket`, rule: "enum", value: "7" },
    { pointer: `/metrics/${i}/value`, rule: "minimum", value: 0 },
  ]);
});

Deno.test("messages name the pointer, rule and value, and list an enum's allowed values", () => {
  const result = validateMetricsPackage(withValue(["resource", "os_family"], "beos"));
  assert.equal(result.valid, false);
  if (result.valid) return;
  const [error] = result.errors;
  assert.equal(result.errors.length, 1);
  assert.equal(error.pointer, "/resource/os_family");
  assert.equal(error.rule, "enum");
  assert.equal(error.value, "beos");
  assert.match(error.message, /\/resource\/os_family/);
  assert.match(error.message, /\benum\b/);
  assert.match(error.message, /"beos"/);
  assert.match(error.message, /"linux", "macos", "unknown", "windows"/);
});

Deno.test("an unknown metric name is reported with the nine valid names", () => {
  const result = validateMetricsPackage(withValue(["metrics", 0, "name"], "agent.client.idle"));
  assert.equal(result.valid, false);
  if (result.valid) return;
  assert.equal(result.errors.length, 1);
  for (const name of METRIC_NAMES) assert.ok(result.errors[0].message.includes(`"${name}"`));
  assert.match(result.errors[0].message, /"agent\.client\.idle"/);
});

Deno.test("pointers escape '/' and '~' in property names (RFC 6901)", () => {
  assertRejected(withValue(["resource", "a/b~c"], 1), [
    { pointer: "/resource/a~1b~0c", rule: "additionalProperties", value: 1 },
  ]);
});

Deno.test("a valid package always gets the same frozen answer", () => {
  const first = validateMetricsPackage(VALID_PACKAGE);
  assert.equal(validateMetricsPackage(structuredClone(VALID_PACKAGE)), first);
  assert.ok(Object.isFrozen(first));
});

// ---------------------------------------------------------------------------------------------
// The schema itself

type SchemaNode = { readonly [key: string]: unknown };
const defs = sharedMetricsSchema.$defs as Record<string, SchemaNode>;

Deno.test("schema identity and dialect", () => {
  assert.equal(sharedMetricsSchema.$schema, "https://json-schema.org/draft/2020-12/schema");
  assert.equal(sharedMetricsSchema.$id, "urn:agent:schema:shared-metrics:v2");
  const properties = sharedMetricsSchema.properties as Record<string, SchemaNode>;
  assert.deepEqual(properties.schema_version, {
    description: "The version of this schema.",
    type: "string",
    const: SCHEMA_VERSION,
  });
  assert.deepEqual(sharedMetricsSchema.required, [...TOP_LEVEL_FIELDS]);
});

Deno.test("the $defs enumerations equal the tuples of contract.ts", () => {
  const tuples: Record<string, readonly string[]> = {
    execution_surface: EXECUTION_SURFACES,
    task_entrypoint: TASK_ENTRYPOINTS,
    duration_bucket: DURATION_BUCKETS,
    count_bucket: COUNT_BUCKETS,
    tool_latency_bucket: TOOL_LATENCY_BUCKETS,
    tool_retry_bucket: TOOL_RETRY_BUCKETS,
    skill_provenance: SKILL_PROVENANCES,
    model_family: MODEL_FAMILIES,
  };
  for (const [def, tuple] of Object.entries(tuples)) {
    assert.equal(defs[def]?.type, "string", def);
    assert.deepEqual(defs[def]?.enum, [...tuple], def);
  }
  assert.equal(MODEL_FAMILIES.length, 21);
  assert.equal(MODEL_FAMILIES.at(-1), "unknown");
  assert.deepEqual(TOOL_RETRY_BUCKETS, [...COUNT_BUCKETS, "unknown"]);
});

Deno.test("metrics.items is oneOf the nine metric kinds, one $ref each", () => {
  const properties = sharedMetricsSchema.properties as Record<string, SchemaNode>;
  const items = properties.metrics.items as { oneOf: { $ref: string }[] };
  const kinds = [
    "client_active",
    "model_call_count",
    "model_route_count",
    "task_run_started",
    "task_run_finished",
    "tool_call_count",
    "tool_approval_count",
    "skill_lifecycle_count",
    "skill_load_count",
  ];
  assert.deepEqual(items.oneOf, kinds.map((kind) => ({ $ref: `#/$defs/${kind}` })));
  kinds.forEach((kind, index) => {
    const def = defs[kind] as { properties: Record<string, SchemaNode>; required: string[] };
    assert.equal(def.properties.name.const, METRIC_NAMES[index]);
    assert.equal(def.properties.type.const, "counter");
    assert.deepEqual(def.required, [...ITEM_FIELDS]);
    const dimensions = def.properties.dimensions as { required?: string[] };
    assert.deepEqual(
      dimensions.required ?? [],
      Object.keys(VALID_ITEMS[METRIC_NAMES[index]].dimensions),
    );
  });
  assert.equal(
    (defs.uuid as { pattern: string }).pattern,
    "^[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$",
  );
});

Deno.test("every object node of the schema has additionalProperties: false", () => {
  const objectNodes: string[] = [];
  let visited = 0;
  const walk = (schema: SchemaNode, pointer: string): void => {
    visited++;
    if (schema.type === "object" || "properties" in schema || "required" in schema) {
      objectNodes.push(pointer);
      assert.equal(schema.additionalProperties, false, `${pointer || "(root)"} is not closed`);
    }
    // Descend into every keyword that holds sub-schemas.
    for (const keyword of ["properties", "$defs", "patternProperties", "dependentSchemas"]) {
      const map = schema[keyword] as Record<string, SchemaNode> | undefined;
      for (const [key, sub] of Object.entries(map ?? {})) walk(sub, `${pointer}/${keyword}/${key}`);
    }
    for (const keyword of ["items", "additionalProperties", "not", "if", "then", "else"]) {
      const sub = schema[keyword];
      if (typeof sub === "object" && sub !== null) walk(sub as SchemaNode, `${pointer}/${keyword}`);
    }
    for (const keyword of ["oneOf", "anyOf", "allOf", "prefixItems"]) {
      const list = (schema[keyword] ?? []) as SchemaNode[];
      list.forEach((sub, i) => walk(sub, `${pointer}/${keyword}/${i}`));
    }
  };
  walk(sharedMetricsSchema, "");
  // Top level, resource, and for each of the nine kinds the item and its dimensions.
  assert.equal(objectNodes.length, 2 + 9 * 2, objectNodes.join("\n"));
  assert.ok(visited > 100, `walked only ${visited} schema nodes`);
});
