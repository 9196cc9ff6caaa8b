/**
 * The port-pinning rules of SPEC "MCP HTTP servers" 5 and decisions.md §5: which logins may
 * present the client metadata document on a pinned port, and the in-process pool that binds the
 * pinned ports (bound at choice, held until released, never shared by concurrent logins).
 */
import assert from "node:assert/strict";
import type { OAuthSettings } from "../../../src/mcp/config.ts";
import {
  type CallbackListener,
  CallbackPortPool,
  type PinningFacts,
  pinningObstacle,
  startCallbackListener,
} from "../../../src/mcp/oauth/mod.ts";
import { freePorts } from "./_helpers.ts";

const URL_OF_DOCUMENT = "https://example.com/oauth/client.json";
const SETTINGS: OAuthSettings = { clientMetadataUrl: URL_OF_DOCUMENT, cimd: true };
const FACTS: PinningFacts = { settings: SETTINGS, driver: "cli", cimdOff: false };

Deno.test("a server never reached before may pin a port", () => {
  assert.equal(pinningObstacle(FACTS), undefined);
  assert.equal(
    pinningObstacle({ ...FACTS, settings: { ...SETTINGS, userAgent: "ua/1" } }),
    undefined,
  );
  assert.equal(
    pinningObstacle({ ...FACTS, settings: { ...SETTINGS, tokenEndpointAuthMethod: "none" } }),
    undefined,
    "token_endpoint_auth_method: none is what the document says",
  );
  assert.equal(
    pinningObstacle({ ...FACTS, storedClientId: URL_OF_DOCUMENT }),
    undefined,
    "a stored document identity is no registration",
  );
  assert.equal(
    pinningObstacle({
      ...FACTS,
      cachedMetadata: { client_id_metadata_document_supported: true },
    }),
    undefined,
    "cached metadata that advertises documents keeps the pin",
  );
});

Deno.test("every ineligibility condition rules out the pin, with its reason", () => {
  const cases: [string, PinningFacts, RegExp][] = [
    ["cimd: false", { ...FACTS, settings: { ...SETTINGS, cimd: false } }, /cimd: false/],
    [
      "an invalid client_metadata_url",
      { ...FACTS, settings: { ...SETTINGS, clientMetadataUrlProblem: "must use https" } },
      /client_metadata_url must use https/,
    ],
    ["client_id", { ...FACTS, settings: { ...SETTINGS, clientId: "c" } }, /client_id/],
    ["client_secret", { ...FACTS, settings: { ...SETTINGS, clientSecret: "s" } }, /client_secret/],
    ["client_name", { ...FACTS, settings: { ...SETTINGS, clientName: "Mine" } }, /client_name/],
    [
      "token_endpoint_auth_method",
      { ...FACTS, settings: { ...SETTINGS, tokenEndpointAuthMethod: "client_secret_post" } },
      /token_endpoint_auth_method is client_secret_post/,
    ],
    [
      "redirect_uri",
      { ...FACTS, settings: { ...SETTINGS, redirectUri: "http://127.0.0.1:9/cb" } },
      /redirect_uri/,
    ],
    ["redirect_port", { ...FACTS, settings: { ...SETTINGS, redirectPort: 9 } }, /redirect_port/],
    ["a dashboard-driven login", { ...FACTS, driver: "dashboard" }, /dashboard/],
    ["a desktop-driven login", { ...FACTS, driver: "desktop" }, /desktop/],
    [
      "a client registration on disk",
      { ...FACTS, storedClientId: "dcr-123" },
      /client registration is stored/,
    ],
    ["the cimd-off record", { ...FACTS, cimdOff: true }, /refused the client metadata document/],
    [
      "cached metadata without document support",
      { ...FACTS, cachedMetadata: { client_id_metadata_document_supported: false } },
      /does not advertise/,
    ],
    [
      "cached metadata that does not mention documents",
      { ...FACTS, cachedMetadata: {} },
      /does not advertise/,
    ],
  ];
  for (const [condition, facts, reason] of cases) {
    const obstacle = pinningObstacle(facts);
    assert.ok(obstacle !== undefined, `${condition} must rule out the pin`);
    assert.match(obstacle, reason, condition);
  }
});

Deno.test("records a login cleared count for what they tell about the server only", () => {
  const cleared: PinningFacts = { ...FACTS, cleared: true };
  const takesDocuments = { client_id_metadata_document_supported: true };
  const pinned: [string, PinningFacts][] = [
    ["a refusal record (the document gets another try)", { ...cleared, cimdOff: true }],
    ["the document identity", { ...cleared, storedClientId: URL_OF_DOCUMENT }],
    [
      "a registration, with metadata that advertises documents",
      { ...cleared, storedClientId: "dcr-1", cachedMetadata: takesDocuments },
    ],
    [
      "a registration, with a refusal record (it advertised documents)",
      { ...cleared, storedClientId: "dcr-1", cimdOff: true },
    ],
  ];
  for (const [condition, facts] of pinned) {
    assert.equal(pinningObstacle(facts), undefined, condition);
  }
  const random: [string, PinningFacts, RegExp][] = [
    ["metadata without documents", { ...cleared, cachedMetadata: {} }, /does not advertise/],
    [
      "metadata without documents, with a refusal record",
      {
        ...cleared,
        storedClientId: "dcr-1",
        cimdOff: true,
        cachedMetadata: { client_id_metadata_document_supported: false },
      },
      /does not advertise/,
    ],
    [
      "a registration and nothing else",
      { ...cleared, storedClientId: "dcr-1" },
      /dynamically registered client was stored/,
    ],
    ["cimd: false", { ...cleared, settings: { ...SETTINGS, cimd: false } }, /cimd: false/],
  ];
  for (const [condition, facts, reason] of random) {
    assert.match(pinningObstacle(facts) ?? "", reason, condition);
  }
});

const bind = (port: number) => startCallbackListener({ port, expectedState: () => undefined });

Deno.test("the pool binds the first free port at choice and holds it until released", async () => {
  const ports = freePorts(3);
  const pool = new CallbackPortPool(ports);
  const first = pool.claim(bind)!;
  assert.equal(first.port, ports[0]);
  // Bound at choice: nobody else can take it while the login waits.
  assert.throws(
    () => Deno.listen({ hostname: "127.0.0.1", port: ports[0] }),
    Deno.errors.AddrInUse,
  );
  assert.deepEqual(pool.held(), [ports[0]]);
  await first.close();
  assert.deepEqual(pool.held(), []);
  const again = pool.claim(bind)!;
  assert.equal(again.port, ports[0], "a released port is handed out again");
  await again.close();
});

Deno.test("concurrent logins of one process get different pinned ports", async () => {
  const ports = freePorts(5);
  const pool = new CallbackPortPool(ports);
  const listeners: CallbackListener[] = [];
  for (let i = 0; i < 5; i++) listeners.push(pool.claim(bind)!);
  assert.deepEqual(listeners.map((listener) => listener.port), ports);
  assert.equal(pool.claim(bind), undefined, "a sixth login gets no pinned port");
  await Promise.all(listeners.map((listener) => listener.close()));
});

Deno.test("ports held by other sockets are skipped; all five held gives no pinned port", async () => {
  const ports = freePorts(5);
  const pool = new CallbackPortPool(ports);
  const others = ports.slice(0, 2).map((port) => Deno.listen({ hostname: "127.0.0.1", port }));
  const listener = pool.claim(bind)!;
  assert.equal(listener.port, ports[2]);
  await listener.close();
  others.push(...ports.slice(2).map((port) => Deno.listen({ hostname: "127.0.0.1", port })));
  assert.equal(pool.claim(bind), undefined);
  assert.deepEqual(pool.held(), []);
  for (const other of others) other.close();
});

Deno.test("rebind takes the same port again unless another login holds it", async () => {
  const ports = freePorts(1);
  const pool = new CallbackPortPool(ports);
  const held = pool.claim(bind)!;
  assert.throws(() => pool.rebind(ports[0], bind), Deno.errors.AddrInUse);
  await held.close();
  const again = pool.rebind(ports[0], bind);
  assert.equal(again.port, ports[0]);
  await again.close();
});
