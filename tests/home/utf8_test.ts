/**
 * `config.yaml` and `.env` must be UTF-8: a byte that is not is refused with its file, line and
 * column, instead of being read as U+FFFD (a secret in `.env` would be silently wrong).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadConfig, readUtf8IfExists } from "../../src/home/config.ts";
import { ConfigError } from "../../src/home/errors.ts";
import { cli, tempHome } from "../cli/_helpers.ts";

const bytes = (...parts: (string | number[])[]) =>
  new Uint8Array(
    parts.flatMap((part) => typeof part === "string" ? [...new TextEncoder().encode(part)] : part),
  );

Deno.test("readUtf8IfExists: the first invalid sequence is named by line, column and byte", async () => {
  const file = await Deno.makeTempFile();
  try {
    const cases: [Uint8Array, RegExp][] = [
      [bytes("a: 1\nb: caf", [0xe9], "\n"), /:2:7: the file is not UTF-8 text: the byte 0xE9/],
      [bytes("é: x", [0x80]), /:1:5: .*the byte 0x80/], // a stray continuation byte, after "é: x"
      [bytes("k: ", [0xc0, 0x80]), /:1:4: .*the byte 0xC0/], // an overlong NUL
      [bytes("k: ", [0xed, 0xa0, 0x80]), /:1:4: .*the byte 0xED/], // a surrogate
      [bytes("k: ", [0xf5, 0x80, 0x80, 0x80]), /:1:4: .*the byte 0xF5/], // beyond U+10FFFF
      [bytes("k: v", [0xe2, 0x82]), /:1:5: .*the byte 0xE2/], // cut short at the end
    ];
    for (const [content, expected] of cases) {
      Deno.writeFileSync(file, content);
      let error: unknown;
      try {
        readUtf8IfExists(file);
      } catch (thrown) {
        error = thrown;
      }
      assert.ok(error instanceof ConfigError, String(error));
      assert.match(error.message, expected);
      assert.match(error.message, /Fix: save the file as UTF-8/);
    }
    Deno.writeFileSync(file, bytes([0xff, 0xfe], "a\0:\0"));
    assert.throws(() => readUtf8IfExists(file), /:1: the file is UTF-16 text, not UTF-8/);
    // Valid text, a U+FFFD written as such and a UTF-8 BOM included, is read as it is.
    const valid = "\uFEFFname: café € 😀 \uFFFD\n";
    Deno.writeTextFileSync(file, valid);
    assert.equal(readUtf8IfExists(file), valid);
    assert.equal(readUtf8IfExists(`${file}.missing`), undefined);
  } finally {
    Deno.removeSync(file);
  }
});

Deno.test("a config.yaml or .env that is not UTF-8 stops every command with its file and line", async () => {
  await using h = await tempHome();
  const config = join(h.home, "config.yaml");
  const dotenv = join(h.home, ".env");
  Deno.writeFileSync(config, bytes("mcp_servers:\n  fs:\n    command: caf", [0xe9], "\n"));
  assert.throws(() => loadConfig({ home: h.home, env: () => undefined }), /config\.yaml:3:17: /);
  const result = await cli(h.home, ["mcp", "list"]);
  assert.equal(result.code, 2, result.stderr); // as every config error
  assert.equal(
    result.stderr,
    `agent: ${config}:3:17: the file is not UTF-8 text: the byte 0xE9 there is not valid UTF-8 ` +
      "(Latin-1 or Windows-1252 text?). Fix: save the file as UTF-8 (most editors offer the " +
      "encoding when saving)\n",
  );

  Deno.writeTextFileSync(config, "");
  Deno.writeFileSync(dotenv, bytes("A=1\nTOKEN=s", [0xe9], "cret\n"));
  const secret = await cli(h.home, ["mcp", "list"]);
  assert.equal(secret.code, 2, secret.stderr);
  assert.match(secret.stderr, /\.env:2:8: the file is not UTF-8 text: the byte 0xE9/);
});
