/**
 * Commands that change `config.yaml` or `.env` take turns under the edit lock of `<home>`: run at once,
 * each keeps its change (before, the last writer's copy of the file won).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { spawnCli, tempHome } from "./_helpers.ts";

Deno.test("parallel mcp add and metrics enable processes keep every change to config.yaml", async () => {
  await using h = await tempHome();
  const names = Array.from({ length: 8 }, (_, i) => `s${i + 1}`);
  const results = await Promise.all([
    ...names.map((name) =>
      spawnCli(h.home, ["mcp", "add", name, "--url", `http://127.0.0.1:9/${name}`])
    ),
    spawnCli(h.home, ["metrics", "enable"]),
  ]);
  for (const result of results) assert.equal(result.code, 0, result.stderr);
  const config = parseYaml(Deno.readTextFileSync(join(h.home, "config.yaml")));
  assert.deepEqual(Object.keys(config.mcp_servers).sort(), names);
  assert.equal(config.telemetry.shared_metrics.enabled, true);
  assert(!Deno.readDirSync(h.home).some((entry) => entry.name.endsWith(".lock")), "no lock file");
});
