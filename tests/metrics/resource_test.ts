import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { INSTALL_STAMP_FILE, installStampPath } from "../../src/metrics/resource.ts";

const REPO = dirname(dirname(dirname(fileURLToPath(import.meta.url))));

Deno.test("installStampPath: beside a compiled agent's executable, else at the project root", () => {
  // In a compiled agent the module URL points into the embedded code, not where it was installed.
  assert.equal(installStampPath(true, "/opt/agent/bin/agent"), "/opt/agent/bin/.install-method");
  assert.equal(installStampPath(false, "/usr/bin/deno"), join(REPO, INSTALL_STAMP_FILE));
  assert.equal(installStampPath(), join(REPO, INSTALL_STAMP_FILE), "this test runs under deno");
});
