/**
 * The client metadata document: the self-hosted URL checks of SPEC "MCP HTTP servers" 6, and
 * the document shipped in `docs/oauth/client-metadata.json`.
 */
import assert from "node:assert/strict";
import {
  clientMetadataDocumentProblems,
  clientMetadataUrlProblem,
  DEFAULT_CLIENT_METADATA_URL,
  loopbackRedirectUris,
  PINNED_CALLBACK_PORTS,
} from "../../../src/mcp/oauth/mod.ts";

const TEN_URIS = [
  "http://127.0.0.1:27890/callback",
  "http://127.0.0.1:27891/callback",
  "http://127.0.0.1:27892/callback",
  "http://127.0.0.1:27893/callback",
  "http://127.0.0.1:27894/callback",
  "http://localhost:27890/callback",
  "http://localhost:27891/callback",
  "http://localhost:27892/callback",
  "http://localhost:27893/callback",
  "http://localhost:27894/callback",
];

Deno.test("the pinned callback ports are 27890 to 27894 and give the ten loopback URIs", () => {
  assert.deepEqual([...PINNED_CALLBACK_PORTS], [27890, 27891, 27892, 27893, 27894]);
  assert.deepEqual(loopbackRedirectUris(), TEN_URIS);
});

Deno.test("docs/oauth/client-metadata.json declares exactly the ten loopback redirect URIs", async () => {
  const text = await Deno.readTextFile(
    new URL("../../../docs/oauth/client-metadata.json", import.meta.url),
  );
  const document = JSON.parse(text);
  assert.deepEqual([...document.redirect_uris].sort(), [...TEN_URIS].sort());
  assert.equal(document.redirect_uris.length, 10, "no duplicates, nothing else");
  assert.equal(document.client_id, DEFAULT_CLIENT_METADATA_URL, "client_id is its own URL");
  assert.equal(document.token_endpoint_auth_method, "none");
  assert.deepEqual(clientMetadataDocumentProblems(document, DEFAULT_CLIENT_METADATA_URL), []);
  assert.equal(clientMetadataUrlProblem(DEFAULT_CLIENT_METADATA_URL), undefined);
});

Deno.test("clientMetadataUrlProblem accepts https URLs with a path (a query is fine)", () => {
  for (
    const url of [
      "https://example.com/client.json",
      "https://example.com/oauth/client-metadata.json",
      "https://example.com:8443/a/b?v=2",
      "https://conformance-test.local/client-metadata.json",
    ]
  ) {
    assert.equal(clientMetadataUrlProblem(url), undefined, url);
  }
});

Deno.test("clientMetadataUrlProblem rejects each unusable URL with its reason", () => {
  const cases: [string, RegExp][] = [
    ["not a url", /not a URL/],
    ["http://example.com/client.json", /must use https, not http/],
    ["ftp://example.com/client.json", /must use https/],
    ["https://example.com", /must have a path/],
    ["https://example.com/", /must have a path/],
    ["https://example.com/client.json#frag", /fragment/],
    ["https://example.com/client.json#", /fragment/],
    ["https://user@example.com/client.json", /user information/],
    ["https://user:pw@example.com/client.json", /user information/],
    ["https://example.com/a/../client.json", /\. or \.\. path segments/],
    ["https://example.com/./client.json", /\. or \.\. path segments/],
    ["https://example.com/a/..", /\. or \.\. path segments/],
    ["https://example.com/a/%2e%2e/client.json", /\. or \.\. path segments/],
    ["https://example.com/a/%2E/client.json", /\. or \.\. path segments/],
  ];
  for (const [url, reason] of cases) {
    const problem = clientMetadataUrlProblem(url);
    assert.ok(problem !== undefined, `${url} must be rejected`);
    assert.match(problem, reason, url);
  }
});

Deno.test("clientMetadataDocumentProblems names a wrong client_id, missing URIs and a secret method", () => {
  const url = "https://example.com/client.json";
  const problems = clientMetadataDocumentProblems({
    client_id: "https://example.com/other.json",
    redirect_uris: TEN_URIS.slice(1),
    token_endpoint_auth_method: "client_secret_basic",
  }, url);
  assert.equal(problems.length, 3);
  assert.match(problems[0], /must equal the document's URL/);
  assert.match(problems[1], /lacks http:\/\/127\.0\.0\.1:27890\/callback/);
  assert.match(problems[2], /must be "none"/);
  assert.deepEqual(clientMetadataDocumentProblems([], url), ["the document is not a JSON object"]);
});
