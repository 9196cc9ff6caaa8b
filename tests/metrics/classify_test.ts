import assert from "node:assert/strict";
import fc from "fast-check";
import {
  architecture,
  installMethod,
  locality,
  modelFamily,
  osFamily,
  providerFamily,
  routeValue,
} from "../../src/metrics/classify.ts";
import {
  ARCHITECTURES,
  INSTALL_METHODS,
  LOCALITIES,
  MODEL_FAMILIES,
  OS_FAMILIES,
  PROVIDER_FAMILIES,
  ROUTE_VALUE_PATTERN,
} from "../../src/metrics/contract.ts";

// ---------------------------------------------------------------------------------------------
// modelFamily

Deno.test("modelFamily: reference cases", () => {
  assert.equal(modelFamily("google/gemma-3"), "gemma");
  assert.equal(modelFamily("xiaomi/mimo-v2"), "mimo");
  assert.equal(modelFamily("supernova-private"), "unknown");
});

Deno.test("modelFamily: common model ids", () => {
  const cases: Array<[string, string]> = [
    ["gpt-4o", "gpt"],
    ["openai/gpt-4.1-mini", "gpt"],
    ["gpt4o", "gpt"],
    ["openai/gpt-oss-120b", "gpt"],
    ["o3-mini", "o3"],
    ["openai/o3", "o3"],
    ["o1", "o1"],
    ["o1-preview", "o1"],
    ["o4-mini-high", "o4"],
    ["anthropic/claude-sonnet-4.5", "claude"],
    ["claude-3-5-haiku", "claude"],
    ["claude-3-5-sonnet@20240620", "claude"],
    ["meta-llama/llama-3.1-8b-instruct", "llama"],
    ["llama3.1:8b", "llama"],
    ["qwen2.5-coder", "qwen"],
    ["qwen/qwen3-235b-a22b", "qwen"],
    ["qwen3:32b", "qwen"],
    ["deepseek-r1", "deepseek"],
    ["deepseek/deepseek-chat-v3.1", "deepseek"],
    ["mistral-large", "mistral"],
    ["mistralai/mistral-small", "mistral"],
    ["nvidia/llama-3.1-nemotron-70b", "nemotron"],
    ["amazon/nova-pro", "nova"],
    ["amazon.nova-lite-v1:0", "nova"],
    ["x-ai/grok-4", "grok"],
    ["grok-code-fast-1", "grok"],
    ["moonshotai/kimi-k2", "kimi"],
    ["z-ai/glm-4.6", "glm"],
    ["minimax/minimax-m2", "minimax"],
    ["stepfun/step-3", "step"],
    ["arcee-ai/trinity-mini", "trinity"],
    ["google/gemini-2.5-pro", "gemini"],
    ["gemma3:27b", "gemma"],
    ["models/gemini-2.0-flash", "gemini"],
    ["mimo-7b", "mimo"],
  ];
  for (const [id, expected] of cases) {
    assert.equal(modelFamily(id), expected, `modelFamily(${JSON.stringify(id)})`);
  }
});

Deno.test("modelFamily: case and surrounding whitespace do not matter", () => {
  assert.equal(modelFamily("Anthropic/Claude-Opus-4"), "claude");
  assert.equal(modelFamily("GPT-4O"), "gpt");
  assert.equal(modelFamily("  gpt-4o\n"), "gpt");
});

Deno.test("modelFamily: a label must sit at a boundary on both sides", () => {
  const cases = [
    "",
    "novastar", // label followed by a letter
    "supernova", // label preceded by a letter
    "stepfun-model",
    "mistralai", // `mistral` followed by a letter
    "gpts",
    "chatgpt-4o-latest", // `gpt` preceded by a letter
    "lo1", // `o1` preceded by a letter
    "4o1", // `o1` preceded by a digit
    "hermes-4-405b",
    "unknown", // `unknown` is never matched as a label
    "my/unknown-model",
    "gpt 4", // a space is not a boundary after the label
    "o", // a prefix of a label
    "phi-4",
  ];
  for (const id of cases) {
    assert.equal(modelFamily(id), "unknown", `modelFamily(${JSON.stringify(id)})`);
  }
});

Deno.test("modelFamily: the longest label wins, ties in schema order", () => {
  // nemotron (8) beats llama (5); deepseek (8) beats llama/qwen (5/4).
  assert.equal(modelFamily("nvidia/llama-3.1-nemotron-70b"), "nemotron");
  assert.equal(modelFamily("deepseek-r1-distill-llama-70b"), "deepseek");
  assert.equal(modelFamily("deepseek-r1-distill-qwen-32b"), "deepseek");
  // claude (6) beats gpt (3) whatever the order in the id.
  assert.equal(modelFamily("gpt-vs-claude"), "claude");
  // gemini and claude both have 6 letters: schema order puts claude first.
  assert.equal(modelFamily("gemini-claude-merge"), "claude");
  // o1, o3, o4 have 2 letters: schema order puts o1 first.
  assert.equal(modelFamily("o4-o1-mix"), "o1");
});

Deno.test("modelFamily: repeated calls agree (memo) and the memo stays correct past its bound", () => {
  for (let i = 0; i < 2_000; i++) {
    assert.equal(modelFamily(`vendor/gpt-${i}`), "gpt");
    assert.equal(modelFamily(`vendor/model-${i}`), "unknown");
  }
  assert.equal(modelFamily("google/gemma-3"), "gemma");
  assert.equal(modelFamily("google/gemma-3"), "gemma");
  const long = `${"x".repeat(10_000)}/claude-4`;
  assert.equal(modelFamily(long), "claude");
  assert.equal(modelFamily(long), "claude");
});

Deno.test("property: modelFamily never throws and returns a MODEL_FAMILIES member", () => {
  fc.assert(
    fc.property(fc.string({ unit: "binary", maxLength: 300 }), (id) => {
      return MODEL_FAMILIES.includes(modelFamily(id));
    }),
    { numRuns: 2_000 },
  );
});

Deno.test("property: modelFamily finds a label placed between separators", () => {
  const labels = MODEL_FAMILIES.filter((label) => label !== "unknown");
  const separator = fc.constantFrom("/", "_", ".", ":", "-");
  const filler = fc.stringMatching(/^[a-z]{0,8}$/);
  fc.assert(
    fc.property(
      fc.constantFrom(...labels),
      separator,
      separator,
      filler,
      filler,
      (label, before, after, prefix, suffix) => {
        const family = modelFamily(`${prefix}${before}${label}${after}${suffix}`);
        // The placed label, or a label at least as long that the filler happened to spell.
        return family !== "unknown" && family.length >= label.length;
      },
    ),
  );
});

Deno.test("property: a label glued to letters on both sides is never found", () => {
  const labels = MODEL_FAMILIES.filter((label) => label !== "unknown");
  const letter = fc.constantFrom(..."bhjuvwxz"); // letters that start/end no label
  fc.assert(
    fc.property(
      fc.constantFrom(...labels),
      letter,
      letter,
      (label, a, b) => modelFamily(`${a}${label}${b}`) === "unknown",
    ),
  );
});

// ---------------------------------------------------------------------------------------------
// providerFamily

Deno.test("providerFamily: reference lists", () => {
  const cases: Array<[string, string]> = [
    ["ollama", "local"],
    ["mlx", "local"],
    ["lmstudio", "local"],
    ["local", "local"],
    ["custom", "custom"],
    ["custom:my-box", "custom"],
    ["openrouter", "aggregator"],
    ["nous", "aggregator"],
    ["huggingface", "aggregator"],
    ["novita", "aggregator"],
    ["kilo", "aggregator"],
    ["openai", "direct"],
    ["anthropic", "direct"],
    ["google", "direct"],
    ["deepseek", "direct"],
    ["mistral", "direct"],
    ["xai", "direct"],
    ["acme", "unknown"],
    ["", "unknown"],
  ];
  for (const [provider, expected] of cases) {
    assert.equal(providerFamily(provider), expected, `providerFamily(${provider})`);
  }
});

Deno.test("providerFamily: documented extras", () => {
  for (const provider of ["lm-studio", "llama.cpp", "llamacpp", "llama-cpp", "vllm"]) {
    assert.equal(providerFamily(provider), "local", provider);
  }
  assert.equal(providerFamily("kilocode"), "aggregator");
  const direct = [
    "gemini",
    "vertex",
    "x-ai",
    "zai",
    "z-ai",
    "zhipu",
    "moonshot",
    "kimi",
    "minimax",
    "qwen",
    "alibaba",
    "dashscope",
    "cohere",
    "groq",
    "nvidia",
    "amazon",
    "bedrock",
    "azure",
    "xiaomi",
  ];
  for (const provider of direct) assert.equal(providerFamily(provider), "direct", provider);
});

Deno.test("providerFamily: trimmed and case-insensitive; near misses are unknown", () => {
  assert.equal(providerFamily("  OpenRouter "), "aggregator");
  assert.equal(providerFamily("OLLAMA"), "local");
  assert.equal(providerFamily("Custom:Box"), "custom");
  assert.equal(providerFamily("customer"), "unknown");
  assert.equal(providerFamily("custom-box"), "unknown");
  assert.equal(providerFamily("openai2"), "unknown");
  assert.equal(providerFamily("ollama.example.com"), "unknown");
});

Deno.test("property: providerFamily never throws and returns a PROVIDER_FAMILIES member", () => {
  fc.assert(
    fc.property(
      fc.string({ unit: "binary" }),
      (provider) => PROVIDER_FAMILIES.includes(providerFamily(provider)),
    ),
  );
});

// ---------------------------------------------------------------------------------------------
// locality

Deno.test("locality: loopback and private base URLs are local whatever the provider", () => {
  const urls = [
    "http://localhost:11434",
    "http://LOCALHOST:1234/v1",
    "http://localhost./v1",
    "http://ollama.localhost/v1",
    "http://127.0.0.1:8080/v1",
    "http://127.1.2.3/",
    "http://127.1/", // the URL parser normalises short IPv4 forms
    "http://0x7f000001/",
    "http://0.0.0.0:8000",
    "http://[::1]:8080/v1",
    "http://[::]:8080/v1",
    "http://10.0.0.5/v1",
    "http://172.16.0.1/",
    "http://172.31.255.255/",
    "http://192.168.1.20:8080/v1",
    "https://169.254.169.254/",
    "http://[fc00::1]/",
    "http://[fd12:3456:789a::1]/",
    "http://[fe80::1]/",
    "http://[febf::1]/",
    "http://[::ffff:10.0.0.1]/",
    "http://[::ffff:127.0.0.1]:11434/",
    "http://[0:0:0:0:0:ffff:c0a8:0101]/",
    "localhost:11434", // scheme-less shorthand reads as http
    "192.168.0.2:8000/v1",
  ];
  for (const url of urls) {
    for (const provider of ["custom", "openai", "acme"]) {
      assert.equal(locality(provider, url), "local", `locality(${provider}, ${url})`);
    }
  }
});

Deno.test("locality: public hosts fall through to the provider family", () => {
  const urls = [
    "https://api.openai.com/v1",
    "http://172.15.0.1/",
    "http://172.32.0.1/",
    "http://192.169.0.1/",
    "http://11.0.0.1/",
    "http://128.0.0.1/",
    "http://169.255.0.1/",
    "http://[2001:db8::1]/",
    "http://[fec0::1]/", // just past fe80::/10
    "http://[::ffff:8.8.8.8]/",
    "http://[::2]/",
    "http://localhost.example.com/",
    "http://mylocalhost/",
    "http://10.example.com/",
  ];
  for (const url of urls) {
    assert.equal(locality("openai", url), "remote", `locality(openai, ${url})`);
    assert.equal(locality("custom", url), "unknown", `locality(custom, ${url})`);
    assert.equal(locality("ollama", url), "local", `locality(ollama, ${url})`);
  }
});

Deno.test("locality: without a base URL the provider family decides", () => {
  assert.equal(locality("ollama"), "local");
  assert.equal(locality("lmstudio", null), "local");
  assert.equal(locality("openrouter"), "remote");
  assert.equal(locality("anthropic", undefined), "remote");
  assert.equal(locality("custom"), "unknown");
  assert.equal(locality("acme"), "unknown");
});

Deno.test("locality: a malformed base URL is ignored", () => {
  for (const url of ["", "   ", "http://", "http://[::1", "http://exa mple.com", "::::"]) {
    assert.equal(locality("openai", url), "remote", `locality(openai, ${JSON.stringify(url)})`);
    assert.equal(locality("custom", url), "unknown", `locality(custom, ${JSON.stringify(url)})`);
  }
});

Deno.test("property: locality never throws and returns a LOCALITIES member", () => {
  fc.assert(
    fc.property(
      fc.string(),
      fc.oneof(fc.webUrl(), fc.string({ unit: "binary" }), fc.constant(null)),
      (provider, baseUrl) => LOCALITIES.includes(locality(provider, baseUrl)),
    ),
  );
});

Deno.test("property: every 127/8, 10/8 and 192.168/16 address is local", () => {
  const octet = fc.integer({ min: 0, max: 255 });
  fc.assert(
    fc.property(fc.constantFrom("127", "10", "192.168"), octet, octet, octet, (head, b, c, d) => {
      const rest = head === "192.168" ? [c, d] : [b, c, d];
      return locality("acme", `http://${head}.${rest.join(".")}:8080/`) === "local";
    }),
  );
});

// ---------------------------------------------------------------------------------------------
// routeValue

Deno.test("routeValue: lower-cases and trims valid values", () => {
  assert.equal(routeValue("Anthropic/Claude-Sonnet-4.5", 256), "anthropic/claude-sonnet-4.5");
  assert.equal(routeValue("  OpenRouter ", 64), "openrouter");
  assert.equal(routeValue("qwen3:32b", 256), "qwen3:32b");
  assert.equal(routeValue("claude@2024+beta_x", 256), "claude@2024+beta_x");
  assert.equal(routeValue("a", 64), "a");
});

Deno.test("routeValue: length bounds are inclusive", () => {
  assert.equal(routeValue("x".repeat(64), 64), "x".repeat(64));
  assert.equal(routeValue("x".repeat(65), 64), "unknown");
  assert.equal(routeValue("m".repeat(256), 256), "m".repeat(256));
  assert.equal(routeValue("m".repeat(257), 256), "unknown");
});

Deno.test("routeValue: values outside the pattern are unknown", () => {
  const cases = [
    "",
    "   ",
    "-leading-dash",
    ".hidden",
    "/abs/path",
    "my model",
    "model\n2",
    "modèle",
    "a?b",
    "a#b",
    "a,b",
    "https://user:pw@host/x?y",
  ];
  for (const value of cases) {
    assert.equal(routeValue(value, 256), "unknown", `routeValue(${JSON.stringify(value)})`);
  }
});

Deno.test("routeValue: a maxLength that cannot hold `unknown` is a programming error", () => {
  for (const maxLength of [0, 6, 7.5, Number.NaN, -1]) {
    assert.throws(() => routeValue("gpt", maxLength), RangeError, `maxLength ${maxLength}`);
  }
  assert.equal(routeValue("abcdefgh", 7), "unknown");
});

Deno.test("property: routeValue output fits the pattern and length, or is unknown", () => {
  fc.assert(
    fc.property(
      fc.oneof(
        fc.string({ unit: "binary", maxLength: 300 }),
        fc.stringMatching(/^[A-Za-z0-9._:/@+\-]{1,300}$/),
      ),
      fc.constantFrom(64, 256),
      (value, maxLength) => {
        const out = routeValue(value, maxLength);
        return out === "unknown" ||
          (ROUTE_VALUE_PATTERN.test(out) && out.length >= 1 && out.length <= maxLength &&
            out === value.trim().toLowerCase());
      },
    ),
  );
});

Deno.test("property: routeValue keeps every valid value unchanged", () => {
  fc.assert(
    fc.property(
      fc.stringMatching(/^[a-z0-9][a-z0-9._:/@+\-]{0,63}$/),
      (value) => routeValue(value, 64) === value,
    ),
  );
});

// ---------------------------------------------------------------------------------------------
// osFamily, architecture, installMethod

Deno.test("osFamily: normalises OS names", () => {
  const cases: Array<[string, string]> = [
    ["darwin", "macos"],
    ["macOS", "macos"],
    ["linux", "linux"],
    ["Linux", "linux"],
    ["windows", "windows"],
    ["win32", "windows"],
    ["android", "unknown"],
    ["freebsd", "unknown"],
    ["", "unknown"],
  ];
  for (const [os, expected] of cases) assert.equal(osFamily(os), expected, `osFamily(${os})`);
  assert.ok(OS_FAMILIES.includes(osFamily(Deno.build.os)));
  assert.equal(osFamily("constructor"), "unknown"); // no prototype keys leak through
});

Deno.test("architecture: normalises machine names", () => {
  const cases: Array<[string, string]> = [
    ["x86_64", "x86_64"],
    ["amd64", "x86_64"],
    ["x64", "x86_64"],
    ["X86-64", "x86_64"],
    ["aarch64", "arm64"],
    ["arm64", "arm64"],
    ["armv7l", "arm"],
    ["armv6l", "arm"],
    ["arm", "arm"],
    ["armhf", "arm"],
    ["i386", "x86"],
    ["i686", "x86"],
    ["x86", "x86"],
    ["ia32", "x86"],
    ["riscv64", "unknown"],
    ["ppc64le", "unknown"],
    ["s390x", "unknown"],
    ["armv7", "arm"],
    ["armv8l", "arm"],
    ["armvirt", "unknown"],
    ["", "unknown"],
    ["toString", "unknown"],
  ];
  for (const [arch, expected] of cases) {
    assert.equal(architecture(arch), expected, `architecture(${arch})`);
  }
  assert.notEqual(architecture(Deno.build.arch), "unknown");
});

Deno.test("installMethod: the env value wins over the stamp file", () => {
  assert.equal(installMethod("docker", "pip"), "docker");
  assert.equal(installMethod(" Home-Manager \n", undefined), "home-manager");
  assert.equal(installMethod(undefined, "homebrew\n"), "homebrew");
  assert.equal(installMethod("", "nixos"), "nixos"); // a blank env value counts as unset
  assert.equal(installMethod("   ", "apt"), "apt");
  assert.equal(installMethod(undefined, undefined), "unknown");
  assert.equal(installMethod(undefined, ""), "unknown");
});

Deno.test("installMethod: values outside INSTALL_METHODS are unknown", () => {
  assert.equal(installMethod("curl", "pip"), "unknown"); // no fallback past an explicit env value
  assert.equal(installMethod(undefined, "pip\ngit"), "unknown");
  assert.equal(installMethod("nix", undefined), "unknown");
  assert.equal(installMethod("__proto__", undefined), "unknown");
  for (const method of INSTALL_METHODS) {
    assert.equal(installMethod(method.toUpperCase(), ""), method);
  }
});

Deno.test("property: resource classifiers never throw and stay in the contract", () => {
  fc.assert(
    fc.property(
      fc.string({ unit: "binary" }),
      fc.option(fc.string(), { nil: undefined }),
      (text, other) =>
        OS_FAMILIES.includes(osFamily(text)) && ARCHITECTURES.includes(architecture(text)) &&
        INSTALL_METHODS.includes(installMethod(text, other)) &&
        INSTALL_METHODS.includes(installMethod(other, text)),
    ),
  );
});
