/**
 * `.env` rewriting keeps an `export ` prefix and an inline `# comment` on the line whose value it
 * replaces, and every other line's inline comment byte for byte.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse } from "dotenv";
import { setDotenvValues } from "../../src/home/dotenv_edit.ts";
import { withTempDir } from "./_helpers.ts";

Deno.test("setDotenvValues: `export KEY=value  # comment` keeps export and the comment; other comments kept", async () => {
  await withTempDir((dir) => {
    const file = join(dir, ".env");
    const others = [
      "OTHER=1 # other's note",
      "export PORT=8000  # port note",
      "QUOTED='a # b'   # quoted note",
    ];
    for (const eol of ["\n", "\r\n"]) {
      Deno.writeTextFileSync(
        file,
        ["# secrets", "export KEY=value  # comment", ...others, ""].join(eol),
      );
      setDotenvValues(file, { KEY: "new value" });
      const text = Deno.readTextFileSync(file);
      assert.equal(
        text,
        ["# secrets", "export KEY='new value' # comment", ...others, ""].join(eol),
        JSON.stringify(eol),
      );
      assert.deepEqual(parse(text), {
        KEY: "new value",
        OTHER: "1",
        PORT: "8000",
        QUOTED: "a # b",
      });
    }
  });
});
