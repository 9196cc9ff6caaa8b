/** Helpers of the OAuth tests: free ports, a private pinned-port pool, server entries. */
import type { McpServerConfig } from "../../../src/mcp/config.ts";
import { CallbackPortPool, loopbackRedirectUris } from "../../../src/mcp/oauth/mod.ts";
import { serverEntry } from "../_helpers.ts";

/**
 * `count` ports free now, below the kernel's range of ports handed out for port 0: nothing else
 * can take one of them before the test binds it (a random callback port, or the local end of any
 * connection, is an ephemeral port), as it can a port found free with port 0 and let go.
 */
export function freePorts(count: number): number[] {
  let low = 32768;
  try {
    low = Number(Deno.readTextFileSync("/proc/sys/net/ipv4/ip_local_port_range").split(/\s+/)[0]);
  } catch { /* not Linux: its usual range */ }
  const [from, to] = [10_000, low - 1];
  const listeners: Deno.Listener[] = [];
  while (listeners.length < count) {
    // Where no such range is left (a lowered ip_local_port_range), the OS picks.
    const port = to - from >= 1_000 ? from + Math.floor(Math.random() * (to - from + 1)) : 0;
    try {
      listeners.push(Deno.listen({ hostname: "127.0.0.1", port }));
    } catch { /* in use: another */ }
  }
  const ports = listeners.map((listener) => (listener.addr as Deno.NetAddr).port);
  for (const listener of listeners) listener.close();
  return ports;
}

/**
 * Five "pinned" ports of this test's own (so parallel test files never compete for 27890–27894),
 * the pool over them, and the ten redirect URIs a document would declare for them.
 */
export function testPins(): { ports: number[]; pool: CallbackPortPool; documentUris: string[] } {
  const ports = freePorts(5);
  return { ports, pool: new CallbackPortPool(ports), documentUris: loopbackRedirectUris(ports) };
}

/** An `auth: oauth` entry for `url` with the given `oauth` mapping. */
export function oauthServer(
  name: string,
  url: string,
  oauth: Record<string, unknown> = {},
): McpServerConfig {
  return serverEntry(name, { url, auth: "oauth", oauth, connect_timeout: 10 });
}

/** The client info and environment every connect of these tests uses. */
export const CLIENT = {
  clientInfo: { name: "agent-test", version: "0" },
  processEnv: (name: string) => Deno.env.get(name),
};
