/**
 * Whether a URL's host is this machine (loopback), for the places that allow plain `http://` or
 * no key only there: a metrics endpoint, a model's base URL, an MCP server's URL.
 *
 * @module
 */

/**
 * Whether `hostname` is a loopback host: `localhost`, `::1` (bracketed as `URL.hostname` gives
 * it, or not), or a dotted IPv4 address in 127.0.0.0/8; any case. It takes the host as the URL
 * parser normalised it, which writes every IPv4 form (`127.1`, `0x7f.0.0.1`) dotted and IPv6 in
 * its shortest form (`[0:0:0:0:0:0:0:1]` as `[::1]`). A name that only starts like one
 * (`127.0.0.1.example.com`, `localhost.example.com`) is another machine's.
 *
 * @param hostname A URL's `hostname`.
 * @returns Whether it names this machine.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isLoopbackHost } from "./loopback.ts";
 * assert(isLoopbackHost(new URL("http://127.0.0.2:8080/").hostname));
 * assert(isLoopbackHost(new URL("http://[::1]:8080/").hostname));
 * assert(isLoopbackHost("localhost"));
 * assert(!isLoopbackHost(new URL("http://127.0.0.1.example.com/").hostname));
 * ```
 */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase();
  if (host === "localhost" || host === "::1" || host === "[::1]") return true;
  const octets = host.split(".");
  return octets.length === 4 && octets[0] === "127" &&
    octets.every((octet) => /^\d{1,3}$/.test(octet) && Number(octet) <= 255);
}
