/**
 * The `auth/*` scenarios of the conformance client: an `auth: oauth` entry parsed like
 * `config.yaml` (with the scenario's pre-registered credentials from `MCP_CONFORMANCE_CONTEXT`),
 * logged in through the project's own OAuth provider and login flow. The "browser" GETs the
 * authorization URL and follows its redirect to the callback listener over HTTP.
 *
 * @module
 */
import { ConfigSource } from "../../src/home/config.ts";
import { parseMcpServers } from "../../src/mcp/config.ts";
import { openAuthorizedSession } from "../../src/mcp/oauth/mod.ts";
import { AGENT_VERSION } from "../../src/version.ts";

/** The client metadata document URL the `auth/basic-cimd` scenario expects as `client_id`. */
const CONFORMANCE_DOCUMENT_URL = "https://conformance-test.local/client-metadata.json";

/**
 * Logs in to the scenario's server, lists its tools, and calls the first one (answering any
 * further authorization, such as a scope step-up). Returns the process exit code.
 */
export async function runAuthScenario(url: string, scenario: string): Promise<number> {
  const context = readContext();
  const oauth: Record<string, string> = {};
  if (scenario === "auth/basic-cimd") oauth.client_metadata_url = CONFORMANCE_DOCUMENT_URL;
  if (typeof context.client_id === "string") oauth.client_id = context.client_id;
  if (typeof context.client_secret === "string") oauth.client_secret = context.client_secret;
  const yaml = [
    "mcp_servers:",
    "  conformance:",
    `    url: ${JSON.stringify(url)}`,
    "    connect_timeout: 20",
    "    timeout: 20",
    "    auth: oauth",
    `    oauth: ${JSON.stringify(oauth)}`,
  ].join("\n");
  const { servers, issues } = parseMcpServers(ConfigSource.parse("conformance.yaml", yaml), {
    lookup: () => undefined,
    userHome: "/",
    workspaceFolder: Deno.cwd(),
    pathSeparator: "/",
  });
  for (const issue of issues) console.error(`${issue.severity}: ${issue.message}`);
  if (servers.length !== 1) return 1;
  const tokenDir = await Deno.makeTempDir({ prefix: "conformance-tokens-" });
  const visits: Promise<void>[] = [];
  try {
    const session = await openAuthorizedSession(servers[0], {
      tokenDir,
      clientInfo: { name: "agent-conformance-client", version: AGENT_VERSION },
      processEnv: (name) => Deno.env.get(name),
      print: (text) => console.error(text.trimEnd()),
      openBrowser: (authorizationUrl) => void visits.push(followRedirect(authorizationUrl)),
      timeoutMs: 20_000,
    });
    try {
      const { outcome } = session;
      console.log(
        `logged in: client ${outcome.client}, redirect ${outcome.redirectUri}, ` +
          `${outcome.authorizations} authorization(s), tools: ${
            session.tools.map((tool) => tool.name).join(", ")
          }`,
      );
      const tool = session.tools[0];
      if (tool) {
        const result = await session.authorized(() =>
          session.connection.client.callTool({ name: tool.name, arguments: {} })
        );
        console.log(`result: ${JSON.stringify(result.content)}`);
      }
    } finally {
      await session.close();
    }
    return 0;
  } catch (error) {
    console.error(`conformance client: ${error instanceof Error ? error.message : error}`);
    return 1;
  } finally {
    await Promise.all(visits);
    await Deno.remove(tokenDir, { recursive: true });
  }
}

/** The "browser": the authorization endpoint's redirect, followed to the callback. */
async function followRedirect(authorizationUrl: string): Promise<void> {
  try {
    const response = await fetch(authorizationUrl, { redirect: "manual" });
    await response.body?.cancel();
    const location = response.headers.get("location");
    if (!location) {
      console.error(`browser: the authorization endpoint answered ${response.status}, no redirect`);
      return;
    }
    const callback = await fetch(new URL(location, authorizationUrl));
    await callback.body?.cancel();
  } catch (error) {
    console.error(`browser: ${error instanceof Error ? error.message : error}`);
  }
}

/** `MCP_CONFORMANCE_CONTEXT`: the scenario name and, for some, client credentials. */
function readContext(): Record<string, unknown> {
  const raw = Deno.env.get("MCP_CONFORMANCE_CONTEXT");
  if (!raw) return {};
  try {
    const value = JSON.parse(raw);
    return typeof value === "object" && value !== null ? value : {};
  } catch {
    console.error("MCP_CONFORMANCE_CONTEXT is not JSON; ignored");
    return {};
  }
}
