/**
 * The proxy a request to a URL goes through, read from `HTTPS_PROXY` / `HTTP_PROXY` /
 * `ALL_PROXY` and `NO_PROXY` (either case) as Deno's fetch reads them, so that the one request
 * path that does not use Deno's fetch (`ssl_verify: false`) goes the same way, and errors can say
 * which proxy was in the path.
 *
 * @module
 */

/** A proxy in the path of a request. */
export interface ProxyRoute {
  /** The proxy's URL as set, without any user name or password. */
  shown: string;
  /** The proxy's URL as set (credentials included). */
  url: URL;
  /** The variable it was read from, e.g. `HTTPS_PROXY`. */
  variable: string;
}

/**
 * The proxy that a request to `target` goes through, or `undefined` when none is set or
 * `NO_PROXY` names the host (an exact name or IP, a domain and its subdomains, `.domain` for
 * subdomains, an IP network in CIDR form, or `*`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { proxyFor } from "./proxy.ts";
 * const env = (name: string) =>
 *   ({ HTTPS_PROXY: "http://user:pw@proxy.corp:3128", NO_PROXY: "internal.corp,10.0.0.0/8" })[
 *     name
 *   ];
 * assert.equal(proxyFor(new URL("https://api.example.com/mcp"), env)?.shown, "http://proxy.corp:3128");
 * assert.equal(proxyFor(new URL("https://mcp.internal.corp/mcp"), env), undefined);
 * assert.equal(proxyFor(new URL("https://10.1.2.3/mcp"), env), undefined);
 * assert.equal(proxyFor(new URL("http://api.example.com/mcp"), env), undefined);
 * ```
 */
export function proxyFor(
  target: URL,
  env: (name: string) => string | undefined,
): ProxyRoute | undefined {
  const scheme = target.protocol === "https:" ? "HTTPS_PROXY" : "HTTP_PROXY";
  const found = [scheme, "ALL_PROXY"].flatMap((name) =>
    [name, name.toLowerCase()].map((variable) => ({ variable, value: env(variable)?.trim() }))
  ).find(({ value }) => value);
  if (!found?.value) return undefined;
  const noProxy = env("NO_PROXY") ?? env("no_proxy") ?? "";
  if (excluded(target.hostname, noProxy)) return undefined;
  let url: URL;
  try {
    url = new URL(found.value.includes("://") ? found.value : `http://${found.value}`);
  } catch {
    return undefined; // Deno ignores a proxy it cannot parse
  }
  const shown = new URL(url);
  shown.username = "";
  shown.password = "";
  return { url, shown: shown.href.replace(/\/$/, ""), variable: found.variable };
}

/** Whether the `NO_PROXY` list `list` names `hostname`. */
function excluded(hostname: string, list: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  for (const raw of list.split(",")) {
    const entry = raw.trim().toLowerCase().replace(/^\[|\]$/g, "");
    if (entry === "") continue;
    if (entry === "*") return true;
    if (entry.includes("/")) {
      if (inNetwork(host, entry)) return true;
      continue;
    }
    const domain = entry.replace(/^\./, "");
    if (host === domain) return true;
    if (host.endsWith(`.${domain}`)) return true;
  }
  return false;
}

/** Whether the IPv4 address `host` is in the network `cidr` (a.b.c.d/n). */
function inNetwork(host: string, cidr: string): boolean {
  const [network, bits] = cidr.split("/");
  const a = ipv4(host);
  const b = ipv4(network);
  const n = Number(bits);
  if (a === undefined || b === undefined || !Number.isInteger(n) || n < 0 || n > 32) return false;
  const mask = n === 0 ? 0 : (~0 << (32 - n)) >>> 0;
  return ((a & mask) >>> 0) === ((b & mask) >>> 0);
}

function ipv4(text: string): number | undefined {
  const parts = text.split(".");
  if (parts.length !== 4 || parts.some((part) => !/^\d{1,3}$/.test(part) || Number(part) > 255)) {
    return undefined;
  }
  return parts.reduce((sum, part) => sum * 256 + Number(part), 0);
}
