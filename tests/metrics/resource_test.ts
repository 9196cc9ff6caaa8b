import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { INSTALL_STAMP_FILE, installStampPath, resourceOf } from "../../src/metrics/resource.ts";

const REPO = dirname(dirname(dirname(fileURLToPath(import.meta.url))));

Deno.test("installStampPath: beside a compiled agent's executable, else at the project root", () => {
  // In a compiled agent the module URL points into the embedded code, not where it was installed.
  assert.equal(installStampPath(true, "/opt/agent/bin/agent"), "/opt/agent/bin/.install-method");
  assert.equal(installStampPath(false, "/usr/bin/deno"), join(REPO, INSTALL_STAMP_FILE));
  assert.equal(installStampPath(), join(REPO, INSTALL_STAMP_FILE), "this test runs under deno");
});

Deno.test("resourceOf: a version is kept to the schema's 64 characters, an emoji never cut in half", () => {
  const facts = { os: "linux", arch: "x86_64", installMethodEnv: "npm" };
  const long = `1.0.0-${"b".repeat(57)}😀tail`; // the emoji is character 64, UTF-16 units 64 and 65
  assert.equal(resourceOf({ ...facts, version: long }).agent_version, long.slice(0, 65));
  assert.equal(resourceOf({ ...facts, version: "  2.1.0 " }).agent_version, "2.1.0");
  assert.equal(resourceOf({ ...facts, version: "   " }).agent_version, "unknown");
});
