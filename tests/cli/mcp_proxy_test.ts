/**
 * HTTPS_PROXY / NO_PROXY for remote MCP servers, through the real CLI (`agent mcp test`) as a
 * subprocess, since Deno's fetch reads them from the process environment: every request goes
 * through the proxy, `ssl_verify: false` too (it does not use Deno's fetch), and when nothing
 * answers the error names the proxy it went through and NO_PROXY as the way around it. An
 * `http://` url goes through HTTP_PROXY or ALL_PROXY, and the proxy's 502 for a server it cannot
 * reach names the proxy too.
 */
import assert from "node:assert/strict";
import { spawnCli, tempHome } from "./_helpers.ts";
import { freePort, writeConfig, yamlValue } from "./_mcp_helpers.ts";
import { startConnectProxy } from "../fixtures/connect_proxy.ts";
import { makeTestCertificates } from "../fixtures/mcp/certs.ts";
import { startHttpFixture } from "../fixtures/mcp/spawn.ts";

/** Deno's own update check would go through the proxy too. */
const QUIET = { DENO_NO_UPDATE_CHECK: "1" };

Deno.test("mcp test: HTTPS_PROXY carries every request, ssl_verify: false too; a dead proxy is named", async (t) => {
  await using home = await tempHome();
  const certs = await makeTestCertificates(home.home);
  await using server = await startHttpFixture([
    "--transport",
    "http",
    "--tls-cert",
    certs.serverCert,
    "--tls-key",
    certs.serverKey,
    "--tools",
    "echo",
  ]);
  const authority = new URL(server.url).host;
  const configure = (sslVerify: unknown) =>
    writeConfig(home.home, [
      "mcp_servers:",
      "  corp:",
      `    url: ${yamlValue(server.url)}`,
      `    ssl_verify: ${yamlValue(sslVerify)}`,
      "    connect_timeout: 20",
    ]);

  for (const [name, sslVerify] of [["CA bundle", certs.caCert], ["ssl_verify: false", false]]) {
    await t.step(`${name}: through the proxy`, async () => {
      await using proxy = await startConnectProxy();
      configure(sslVerify);
      const result = await spawnCli(home.home, ["mcp", "test", "corp"], {
        env: { HTTPS_PROXY: proxy.url, ...QUIET },
      });
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual([...new Set(proxy.connects)], [authority]);
      if (sslVerify === false) {
        assert.match(result.stderr + result.stdout, /ssl_verify is false, so the certificate of /);
      }
    });
  }

  for (const [name, sslVerify] of [["CA bundle", certs.caCert], ["ssl_verify: false", false]]) {
    await t.step(
      `${name}: a proxy that does not answer is named, NO_PROXY goes around it`,
      async () => {
        configure(sslVerify);
        const dead = `http://127.0.0.1:${freePort()}`;
        const failed = await spawnCli(home.home, ["mcp", "test", "corp"], {
          env: { HTTPS_PROXY: dead, ...QUIET },
        });
        assert.equal(failed.code, 1, failed.stdout);
        assert.match(
          failed.stderr,
          new RegExp(
            `^MCP server 'corp': cannot reach ${RegExp.escape(server.url)}: .* \\(through the ` +
              `proxy ${RegExp.escape(dead)} from HTTPS_PROXY: is the proxy running, and does it ` +
              `reach the server\\? If the server is reachable without it, add 127\\.0\\.0\\.1 to ` +
              `NO_PROXY\\)$`,
            "m",
          ),
        );
        const around = await spawnCli(home.home, ["mcp", "test", "corp"], {
          env: { HTTPS_PROXY: dead, NO_PROXY: "localhost,127.0.0.1", ...QUIET },
        });
        assert.equal(around.code, 0, around.stderr);
      },
    );
  }
});

Deno.test("mcp test: HTTP_PROXY and ALL_PROXY carry an http:// url; the proxy's 502 for a dead server names the proxy", async (t) => {
  await using home = await tempHome();
  await using server = await startHttpFixture(["--transport", "http", "--tools", "echo"]);
  await using proxy = await startConnectProxy();
  const configure = (url: string) =>
    writeConfig(home.home, [
      "mcp_servers:",
      "  plain:",
      `    url: ${yamlValue(url)}`,
      "    connect_timeout: 20",
    ]);

  for (const variable of ["HTTP_PROXY", "ALL_PROXY"]) {
    await t.step(`${variable}: through the proxy`, async () => {
      configure(server.url);
      proxy.forwarded.length = 0;
      const result = await spawnCli(home.home, ["mcp", "test", "plain"], {
        env: { [variable]: proxy.url, ...QUIET },
      });
      assert.equal(result.code, 0, result.stderr);
      assert.ok(proxy.forwarded.length > 0, "nothing went through the proxy");
      assert.deepEqual(
        [...new Set(proxy.forwarded.map((line) => line.split(" ")[1]))],
        [server.url],
      );
    });
  }

  await t.step("a server the proxy cannot reach: its HTTP 502 names the proxy", async () => {
    const dead = `http://127.0.0.1:${freePort()}/mcp`;
    configure(dead);
    const failed = await spawnCli(home.home, ["mcp", "test", "plain"], {
      env: { HTTP_PROXY: proxy.url, ...QUIET },
    });
    assert.equal(failed.code, 1, failed.stdout);
    assert.match(
      failed.stderr,
      new RegExp(
        `^MCP server 'plain': HTTP 502 from ${RegExp.escape(dead)}: proxy: cannot connect to .* ` +
          `\\(through the proxy ${RegExp.escape(proxy.url)} from HTTP_PROXY: does it reach the ` +
          `server\\? If the server is reachable without it, add ` +
          `127\\.0\\.0\\.1 to NO_PROXY\\)$`,
        "m",
      ),
    );
  });
});
