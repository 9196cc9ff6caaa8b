/**
 * Classifiers that turn raw runtime values (model ids, provider names, base URLs, platform
 * names) into the closed vocabularies of the usage-metrics contract (decisions.md §4,
 * "Classification"). Every function is total: input it does not recognise maps to
 * `unknown`, so nothing raw ever reaches a metric dimension.
 *
 * @module
 */

import {
  type Architecture,
  INSTALL_METHODS,
  type InstallMethod,
  type Locality,
  MODEL_FAMILIES,
  type ModelFamily,
  type OsFamily,
  type ProviderFamily,
  ROUTE_VALUE_PATTERN,
} from "./contract.ts";

// ---------------------------------------------------------------------------------------------
// model_family

type FamilyLabel = Exclude<ModelFamily, "unknown">;

/** Every label but `unknown`, longest first; `sort` is stable, so ties keep schema order. */
const FAMILY_MATCHERS: ReadonlyArray<{ label: FamilyLabel; pattern: RegExp }> = MODEL_FAMILIES
  .filter((label): label is FamilyLabel => label !== "unknown")
  .sort((a, b) => b.length - a.length)
  .map((label) => ({
    label,
    pattern: new RegExp(`(?:^|[/_.:-])${escapeRegExp(label)}(?:$|[/_.:\\-]|[0-9])`),
  }));

/** Model ids repeat on every call; a small memo keeps the hot path to one map lookup. */
const FAMILY_CACHE = new Map<string, ModelFamily>();
const FAMILY_CACHE_MAX_ENTRIES = 512;
/** Longer ids are classified but not memoised, so the memo's memory stays bounded. */
const FAMILY_CACHE_MAX_KEY_LENGTH = 512;

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function classifyModelFamily(modelId: string): ModelFamily {
  const id = modelId.trim().toLowerCase();
  for (const { label, pattern } of FAMILY_MATCHERS) {
    if (id.includes(label) && pattern.test(id)) return label;
  }
  return "unknown";
}

/**
 * The family of a model, from its id: the longest family label that appears in the
 * lower-cased (and trimmed) id at a boundary, i.e. preceded by the start or one of
 * `/ _ . : -`, and followed by the end, one of those separators, or a digit
 * (`qwen2.5` is `qwen`, `novastar` is not `nova`). Ties in length keep schema order.
 * Ids without such a label are `unknown`.
 *
 * Results are memoised in a small bounded map; the answer depends on the input only.
 *
 * @param modelId The model id as configured or reported (any case, provider prefix allowed).
 * @returns The model family.
 *
 * @example Usage
 * ```ts
 * import { modelFamily } from "./classify.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(modelFamily("google/gemma-3"), "gemma");
 * assert.equal(modelFamily("Qwen2.5-Coder"), "qwen");
 * assert.equal(modelFamily("nvidia/llama-3.1-nemotron-70b"), "nemotron");
 * assert.equal(modelFamily("supernova-private"), "unknown");
 * ```
 */
export function modelFamily(modelId: string): ModelFamily {
  if (typeof modelId !== "string") return "unknown";
  const cached = FAMILY_CACHE.get(modelId);
  if (cached !== undefined) return cached;
  const family = classifyModelFamily(modelId);
  if (modelId.length <= FAMILY_CACHE_MAX_KEY_LENGTH) {
    // Dropping everything at the limit is cheap and bounds memory; real ids are few.
    if (FAMILY_CACHE.size >= FAMILY_CACHE_MAX_ENTRIES) FAMILY_CACHE.clear();
    FAMILY_CACHE.set(modelId, family);
  }
  return family;
}

// ---------------------------------------------------------------------------------------------
// provider_family and locality

/**
 * Providers that serve models on this machine. Beyond the reference list (`ollama, mlx,
 * lmstudio, local`) this accepts the common spellings of other local servers: `lm-studio`,
 * `llama.cpp`, `llamacpp`, `llama-cpp` and `vllm`.
 */
const LOCAL_PROVIDERS: ReadonlySet<string> = new Set([
  "ollama",
  "mlx",
  "lmstudio",
  "local",
  "lm-studio",
  "llama.cpp",
  "llamacpp",
  "llama-cpp",
  "vllm",
]);

/**
 * Providers that route to many upstream model hosts: the reference list
 * (`openrouter, nous, huggingface, novita, kilo`) plus `kilocode`, Kilo's provider id.
 */
const AGGREGATOR_PROVIDERS: ReadonlySet<string> = new Set([
  "openrouter",
  "nous",
  "huggingface",
  "novita",
  "kilo",
  "kilocode",
]);

/**
 * First-party APIs: a model maker's own endpoint, or a cloud's own inference API. Each entry
 * is a provider id as users configure it (both `xai` and `x-ai`, `zai` and `z-ai`).
 */
const DIRECT_PROVIDERS: ReadonlySet<string> = new Set([
  "openai",
  "anthropic",
  "google",
  "gemini",
  "vertex",
  "deepseek",
  "mistral",
  "xai",
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
]);

/**
 * The kind of provider serving a model, from its provider id (trimmed, any case):
 *
 * - `local`: `ollama`, `mlx`, `lmstudio`, `local`, and `lm-studio`, `llama.cpp`, `llamacpp`,
 *   `llama-cpp`, `vllm`;
 * - `custom`: `custom` or `custom:<name>`;
 * - `aggregator`: `openrouter`, `nous`, `huggingface`, `novita`, `kilo`, `kilocode`;
 * - `direct`: a known first-party API (`openai`, `anthropic`, `google`, `gemini`, `vertex`,
 *   `deepseek`, `mistral`, `xai`/`x-ai`, `zai`/`z-ai`, `zhipu`, `moonshot`, `kimi`, `minimax`,
 *   `qwen`, `alibaba`, `dashscope`, `cohere`, `groq`, `nvidia`, `amazon`, `bedrock`, `azure`,
 *   `xiaomi`);
 * - anything else: `unknown`.
 *
 * @param provider The provider id as configured.
 * @returns The provider family.
 *
 * @example Usage
 * ```ts
 * import { providerFamily } from "./classify.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(providerFamily("Ollama"), "local");
 * assert.equal(providerFamily("custom:my-box"), "custom");
 * assert.equal(providerFamily("openrouter"), "aggregator");
 * assert.equal(providerFamily("anthropic"), "direct");
 * assert.equal(providerFamily("acme"), "unknown");
 * ```
 */
export function providerFamily(provider: string): ProviderFamily {
  if (typeof provider !== "string") return "unknown";
  const id = provider.trim().toLowerCase();
  if (LOCAL_PROVIDERS.has(id)) return "local";
  if (id === "custom" || id.startsWith("custom:")) return "custom";
  if (AGGREGATOR_PROVIDERS.has(id)) return "aggregator";
  if (DIRECT_PROVIDERS.has(id)) return "direct";
  return "unknown";
}

/** Four decimal octets, as the WHATWG URL parser normalises every IPv4 host of http(s). */
function parseIPv4(host: string): number[] | undefined {
  const parts = host.split(".");
  if (parts.length !== 4) return undefined;
  const octets: number[] = [];
  for (const part of parts) {
    if (!/^[0-9]{1,3}$/.test(part)) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    octets.push(octet);
  }
  return octets;
}

function isLocalIPv4([a, b, c, d]: number[]): boolean {
  return a === 127 || // loopback 127.0.0.0/8
    a === 10 || // private 10.0.0.0/8
    (a === 172 && b >= 16 && b <= 31) || // private 172.16.0.0/12
    (a === 192 && b === 168) || // private 192.168.0.0/16
    (a === 169 && b === 254) || // link-local 169.254.0.0/16
    (a === 0 && b === 0 && c === 0 && d === 0); // unspecified: a server bound to all interfaces
}

/**
 * The eight 16-bit groups of an IPv6 address (brackets removed), or undefined. The URL
 * parser has already serialised it in compressed hex (`::ffff:10.0.0.1` as `::ffff:a00:1`).
 */
function parseIPv6(text: string): number[] | undefined {
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const head = parseIPv6Groups(halves[0]);
  const rest = halves.length === 2 ? parseIPv6Groups(halves[1]) : [];
  if (head === undefined || rest === undefined) return undefined;
  const explicit = head.length + rest.length;
  if (halves.length === 1 ? explicit !== 8 : explicit > 7) return undefined;
  return [...head, ...new Array<number>(8 - explicit).fill(0), ...rest];
}

function parseIPv6Groups(part: string): number[] | undefined {
  if (part === "") return [];
  const groups: number[] = [];
  for (const group of part.split(":")) {
    if (!/^[0-9a-f]{1,4}$/.test(group)) return undefined;
    groups.push(parseInt(group, 16));
  }
  return groups;
}

function isLocalIPv6(groups: number[]): boolean {
  const [g0, g1, g2, g3, g4, g5, g6, g7] = groups;
  const firstFiveZero = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0;
  if (firstFiveZero && g5 === 0 && g6 === 0 && (g7 === 0 || g7 === 1)) return true; // ::, ::1
  if (firstFiveZero && g5 === 0xffff) { // IPv4-mapped ::ffff:a.b.c.d
    return isLocalIPv4([g6 >> 8, g6 & 0xff, g7 >> 8, g7 & 0xff]);
  }
  return (g0 & 0xfe00) === 0xfc00 || // unique local fc00::/7
    (g0 & 0xffc0) === 0xfe80; // link-local fe80::/10
}

function isLocalHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, "");
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  if (host.startsWith("[") && host.endsWith("]")) {
    const groups = parseIPv6(host.slice(1, -1));
    return groups !== undefined && isLocalIPv6(groups);
  }
  const octets = parseIPv4(host);
  return octets !== undefined && isLocalIPv4(octets);
}

function hostOf(baseUrl: string): string | undefined {
  const text = baseUrl.trim();
  if (text === "") return undefined;
  // `localhost:11434` is a common shorthand; read a scheme-less value as http.
  const candidate = text.includes("://") ? text : `http://${text}`;
  try {
    return new URL(candidate).hostname || undefined;
  } catch {
    return undefined;
  }
}

/**
 * Where a model runs relative to this machine. A base URL whose host is loopback
 * (`localhost`, `*.localhost`, 127.0.0.0/8, `::1`, `0.0.0.0`, `::`) or private (10/8,
 * 172.16/12, 192.168/16, 169.254/16, fc00::/7, fe80::/10, and IPv4-mapped forms such as
 * `::ffff:10.0.0.1`) is `local`. Otherwise the provider decides: a `local` provider family is
 * `local`, `aggregator` and `direct` are `remote`, anything else `unknown`. A base URL that
 * does not parse is ignored; one without a scheme is read as `http://`.
 *
 * @param provider The provider id as configured.
 * @param baseUrl The base URL the model is called at, if configured.
 * @returns The locality.
 *
 * @example Usage
 * ```ts
 * import { locality } from "./classify.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(locality("custom", "http://192.168.1.20:8080/v1"), "local");
 * assert.equal(locality("openai", "https://api.openai.com/v1"), "remote");
 * assert.equal(locality("ollama"), "local");
 * assert.equal(locality("custom", "https://llm.example.com/v1"), "unknown");
 * ```
 */
export function locality(provider: string, baseUrl?: string | null): Locality {
  if (typeof baseUrl === "string") {
    const host = hostOf(baseUrl);
    if (host !== undefined && isLocalHost(host)) return "local";
  }
  switch (providerFamily(provider)) {
    case "local":
      return "local";
    case "aggregator":
    case "direct":
      return "remote";
    default:
      return "unknown";
  }
}

// ---------------------------------------------------------------------------------------------
// model_route

const UNKNOWN = "unknown";

/**
 * A `model` or `provider` dimension of `agent.model_route.count`: the value trimmed and
 * lower-cased when it then matches {@linkcode ROUTE_VALUE_PATTERN} and is 1 to `maxLength`
 * characters long; otherwise `unknown`. The contract uses `maxLength` 256 for `model` and 64
 * for `provider`.
 *
 * @param value The raw model or provider id.
 * @param maxLength The longest value kept; an integer of at least 7, so that `unknown` fits.
 * @returns The value as recorded, or `unknown`.
 * @throws {RangeError} If `maxLength` is not an integer >= 7 (a programming error).
 *
 * @example Usage
 * ```ts
 * import { routeValue } from "./classify.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(routeValue(" Anthropic/Claude-Sonnet-4.5 ", 256), "anthropic/claude-sonnet-4.5");
 * assert.equal(routeValue("my model", 256), "unknown");
 * assert.equal(routeValue("x".repeat(65), 64), "unknown");
 * ```
 */
export function routeValue(value: string, maxLength: number): string {
  if (!Number.isInteger(maxLength) || maxLength < UNKNOWN.length) {
    throw new RangeError(
      `Cannot bound a route value to maxLength ${maxLength}: expected an integer >= ${UNKNOWN.length}`,
    );
  }
  if (typeof value !== "string") return UNKNOWN;
  const normalized = value.trim().toLowerCase();
  if (normalized.length < 1 || normalized.length > maxLength) return UNKNOWN;
  return ROUTE_VALUE_PATTERN.test(normalized) ? normalized : UNKNOWN;
}

/** Model weight files: a model id ending like this is a file name or path, not an id. */
const MODEL_FILE_EXTENSION =
  /\.(gguf|ggml|ggjt|bin|safetensors|pt|pth|ckpt|onnx|h5|tflite|llamafile|mlmodel|mlpackage|npz)$/;
/** `name@host.example`: an e-mail address or user@host, not a version tag like `@20240620`. */
const AT_DOMAIN = /@[a-z0-9-]+(\.[a-z0-9-]+)*\.[a-z]{2,}(:[0-9]+)?$/;
/** A host name with two or more dots ending in letters (`ada-laptop.corp.acme.com`), maybe a port. */
const HOST_NAME = /^[a-z0-9-]+(\.[a-z0-9-]+)+\.[a-z]{2,}(:[0-9]+)?$/;
const IPV4 = /^[0-9]{1,3}(\.[0-9]{1,3}){3}(:[0-9]+)?$/;
/** Only what an IPv6 address is made of (hex digits, colons, and dots of an embedded IPv4). */
const IPV6_CHARACTERS = /^[0-9a-f:.]+$/;
/** Ollama's way to run a Hugging Face repository: `hf.co/<org>/<repo>[:<quant>]`. */
const HUGGING_FACE_HOST = /^(hf\.co|huggingface\.co)\//;

/**
 * Whether an already normalised route value names a place or a person rather than a model or a
 * provider: a URL (`://`, or any `:/` such as `c:/`), an e-mail address, `user@host.domain` or
 * `user@<IP address>`, an IPv4 or IPv6 address or a host name with two or more dots, a path
 * (more than one `/`, or an `org` part with a dot or a colon, such as `host:8080/x`), or a model
 * file (`….gguf`, `….bin`, …).
 */
function namesAPlace(value: string): boolean {
  if (value.includes(":/") || AT_DOMAIN.test(value)) return true;
  if (isIpAddress(value) || HOST_NAME.test(value)) return true;
  // `ada@10.0.0.5` or `ada@fd00::5`: a person at a machine, as `ada@host.example` is.
  const at = value.lastIndexOf("@");
  if (at >= 0 && isIpAddress(value.slice(at + 1))) return true;
  const segments = value.split("/");
  if (segments.length > 2) return true;
  if (segments.length === 2 && /[.:@]/.test(segments[0])) return true;
  return MODEL_FILE_EXTENSION.test(value);
}

/** An IPv4 address (maybe with a port) or an IPv6 address (`2001:db8::1`, `fe80::1`). */
function isIpAddress(value: string): boolean {
  if (IPV4.test(value)) return true;
  if (!value.includes(":") || value.indexOf(":") === value.lastIndexOf(":")) return false;
  if (!IPV6_CHARACTERS.test(value)) return false;
  // The URL parser knows every IPv6 spelling (`::`, embedded IPv4); `qwen2.5:7b` never gets here.
  return URL.canParse(`http://[${value}]/`);
}

/**
 * The `model` dimension of `agent.model_route.count`: the model id as configured, lower-cased,
 * when it is an id; `unknown` when it names a place or a person instead (privacy: paths, URLs,
 * host names and e-mail addresses are never stored). An id is a name with an optional tag or
 * version (`gpt-4o`, `qwen2.5:7b`, `claude-3-5-sonnet@20240620`) and at most one `org/` in
 * front (`meta-llama/llama-3.1-8b-instruct`, `openai/gpt-4o:free`). Ollama's
 * `hf.co/<org>/<repo>:<quant>` is recorded as `<org>/<repo>:<quant>`. Anything with more than
 * one `/`, a `://` or `:/`, an `@` followed by a domain, a host name or IP address, or a
 * model-file extension (`.gguf`, `.bin`, `.safetensors`, …) is `unknown`; so is a value outside
 * {@linkcode ROUTE_VALUE_PATTERN} or longer than 256 characters.
 *
 * @param model The model id as configured.
 * @returns The value recorded.
 *
 * @example Usage
 * ```ts
 * import { routeModel } from "./classify.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(routeModel("Meta-Llama/Llama-3.1-8B-Instruct"), "meta-llama/llama-3.1-8b-instruct");
 * assert.equal(routeModel("qwen2.5:7b"), "qwen2.5:7b");
 * assert.equal(routeModel("home/ada/models/acme-secret-merger.gguf"), "unknown");
 * assert.equal(routeModel("http://10.0.0.5:8080/v1"), "unknown");
 * ```
 */
export function routeModel(model: string): string {
  const value = routeValue(model, 256);
  if (value === UNKNOWN) return UNKNOWN;
  const id = value.replace(HUGGING_FACE_HOST, "");
  return id.length > 0 && ROUTE_VALUE_PATTERN.test(id) && !namesAPlace(id) ? id : UNKNOWN;
}

/**
 * The `provider` dimension of `agent.model_route.count`: the provider id as configured,
 * lower-cased; `custom` for `custom` and every `custom:<anything>` (what follows the colon is
 * the user's own name or address for their endpoint); `unknown` for a value that names a place
 * or a person (the same rules as {@linkcode routeModel}: URLs, paths, host names, IP addresses,
 * e-mail addresses) or that is outside {@linkcode ROUTE_VALUE_PATTERN} or longer than 64.
 *
 * @param provider The provider id as configured.
 * @returns The value recorded.
 *
 * @example Usage
 * ```ts
 * import { routeProvider } from "./classify.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(routeProvider("OpenRouter"), "openrouter");
 * assert.equal(routeProvider("custom:http://ada-laptop.corp.acme.com:8080"), "custom");
 * assert.equal(routeProvider("ada@acme.com"), "unknown");
 * ```
 */
export function routeProvider(provider: string): string {
  if (typeof provider !== "string") return UNKNOWN;
  const trimmed = provider.trim().toLowerCase();
  if (trimmed === "custom" || trimmed.startsWith("custom:")) return "custom";
  const value = routeValue(trimmed, 64);
  return value === UNKNOWN || namesAPlace(value) ? UNKNOWN : value;
}

// ---------------------------------------------------------------------------------------------
// resource

const OS_FAMILY_ALIASES: Readonly<Record<string, OsFamily>> = {
  darwin: "macos",
  macos: "macos",
  linux: "linux",
  windows: "windows",
  win32: "windows",
};

/**
 * The `resource.os_family` of a package, from an OS name such as `Deno.build.os` (any case):
 * `darwin`/`macos` → `macos`, `linux` → `linux`, `windows`/`win32` → `windows`, anything else
 * (including `android` and the BSDs) → `unknown`.
 *
 * @param os The OS name.
 * @returns The OS family.
 *
 * @example Usage
 * ```ts
 * import { osFamily } from "./classify.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(osFamily("darwin"), "macos");
 * assert.equal(osFamily("Windows"), "windows");
 * assert.equal(osFamily("freebsd"), "unknown");
 * ```
 */
export function osFamily(os: string): OsFamily {
  if (typeof os !== "string") return "unknown";
  const name = os.trim().toLowerCase();
  return Object.hasOwn(OS_FAMILY_ALIASES, name) ? OS_FAMILY_ALIASES[name] : "unknown";
}

const ARCHITECTURE_ALIASES: Readonly<Record<string, Architecture>> = {
  x86_64: "x86_64",
  amd64: "x86_64",
  x64: "x86_64",
  aarch64: "arm64",
  arm64: "arm64",
  arm: "arm",
  armhf: "arm",
  armel: "arm",
  i386: "x86",
  i486: "x86",
  i586: "x86",
  i686: "x86",
  x86: "x86",
  ia32: "x86",
};

/**
 * The `resource.architecture` of a package, from a machine name such as `Deno.build.arch` or
 * `uname -m` (any case; `-` reads as `_`, so `x86-64` is `x86_64`): `x86_64`/`amd64`/`x64` →
 * `x86_64`, `aarch64`/`arm64` → `arm64`, `arm`/`armhf`/`armel`/`armv<N>…` (e.g. `armv7l`) →
 * `arm`, `i386`…`i686`/`x86`/`ia32` → `x86`, anything else → `unknown`.
 *
 * @param arch The machine architecture name.
 * @returns The architecture.
 *
 * @example Usage
 * ```ts
 * import { architecture } from "./classify.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(architecture("aarch64"), "arm64");
 * assert.equal(architecture("amd64"), "x86_64");
 * assert.equal(architecture("armv7l"), "arm");
 * assert.equal(architecture("riscv64"), "unknown");
 * ```
 */
export function architecture(arch: string): Architecture {
  if (typeof arch !== "string") return "unknown";
  const name = arch.trim().toLowerCase().replaceAll("-", "_");
  if (Object.hasOwn(ARCHITECTURE_ALIASES, name)) return ARCHITECTURE_ALIASES[name];
  return /^armv[0-9]/.test(name) ? "arm" : "unknown"; // armv6l, armv7l, armv8l: 32-bit ARM
}

const INSTALL_METHOD_SET: ReadonlySet<string> = new Set(INSTALL_METHODS);

/**
 * The `resource.install_method` of a package. The `AGENT_INSTALL_METHOD` value wins when it is
 * set and not blank; else the install stamp file's content is used. The chosen value is
 * trimmed and lower-cased and must be one of {@linkcode INSTALL_METHODS}, else `unknown` (an
 * invalid env value does not fall back to the stamp file: the operator's word is final).
 *
 * The caller reads the environment and the file; this function only decides.
 *
 * @param fromEnv The value of `AGENT_INSTALL_METHOD`, if set.
 * @param fromStampFile The content of the install stamp file, if it exists.
 * @returns The install method.
 *
 * @example Usage
 * ```ts
 * import { installMethod } from "./classify.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(installMethod("Docker", "pip\n"), "docker");
 * assert.equal(installMethod(undefined, "homebrew\n"), "homebrew");
 * assert.equal(installMethod(undefined, undefined), "unknown");
 * assert.equal(installMethod("curl", "pip"), "unknown");
 * ```
 */
export function installMethod(
  fromEnv: string | undefined,
  fromStampFile: string | undefined,
): InstallMethod {
  const env = typeof fromEnv === "string" ? fromEnv.trim() : "";
  const stamp = typeof fromStampFile === "string" ? fromStampFile.trim() : "";
  const chosen = (env !== "" ? env : stamp).toLowerCase();
  return INSTALL_METHOD_SET.has(chosen) ? chosen as InstallMethod : "unknown";
}
