// An upstream MCP server that each person signs in to as themselves: the TypeScript SDK 1.x
// server (stateless Streamable HTTP, express) protected by an OpenID provider with the SDK's
// own bearer middleware (RFC 9728 metadata, 401 with `WWW-Authenticate`), access tokens checked
// with `jose` against the provider's keys, issuer and audience (this server's URL). Its one
// tool, `whoami`, says whose token the request carried: the token's `sub` and a digest of the
// token itself (never the token). `whoami_admin` says the same, for a token with the scope
// `mcp:admin` only: a call without it is refused with 403 `insufficient_scope` naming the
// scopes it needs (a step-up, as the MCP authorization spec has it).
//
//   node whoami_upstream.mjs <sdk folder> <issuer>
//
// Prints one line `{"url": "http://127.0.0.1:PORT/mcp"}` once it listens; ends when stdin closes.
import { createHash } from "node:crypto";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [sdkDir, issuer] = process.argv.slice(2);
const modules = path.join(sdkDir, "node_modules");
const load = (p) => import(pathToFileURL(path.join(modules, "@modelcontextprotocol/sdk/dist/esm", p)).href);
const { McpServer } = await load("server/mcp.js");
const { StreamableHTTPServerTransport } = await load("server/streamableHttp.js");
const { requireBearerAuth } = await load("server/auth/middleware/bearerAuth.js");
const { mcpAuthMetadataRouter, getOAuthProtectedResourceMetadataUrl } = await load("server/auth/router.js");
const { default: express } = await import(pathToFileURL(path.join(modules, "express/index.js")).href);
const jose = await import(pathToFileURL(path.join(modules, "jose/dist/webapi/index.js")).href);

const metadata = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json();
const keys = jose.createRemoteJWKSet(new URL(metadata.jwks_uri));

const app = express();
app.use(express.json());
const listening = await new Promise((resolve) => {
  const s = app.listen(0, "127.0.0.1", () => resolve(s));
});
const resource = new URL(`http://127.0.0.1:${listening.address().port}/mcp`);

app.use(mcpAuthMetadataRouter({ oauthMetadata: metadata, resourceServerUrl: resource, scopesSupported: ["mcp"], resourceName: "whoami" }));
const verifier = {
  async verifyAccessToken(token) {
    const { payload } = await jose.jwtVerify(token, keys, { issuer, audience: resource.href });
    return {
      token,
      clientId: String(payload.client_id ?? ""),
      scopes: String(payload.scope ?? "").split(" ").filter(Boolean),
      expiresAt: payload.exp,
      resource,
      extra: { sub: payload.sub },
    };
  },
};
const bearer = requireBearerAuth({ verifier, resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(resource) });

function server() {
  const s = new McpServer({ name: "whoami", version: "1.0.0" });
  s.registerTool("whoami", { description: "Says whose token the request carried." }, async (extra) => {
    const auth = extra.authInfo;
    const digest = createHash("sha256").update(auth?.token ?? "").digest("hex").slice(0, 16);
    return { content: [{ type: "text", text: JSON.stringify({ sub: auth?.extra?.sub ?? null, token: digest }) }] };
  });
  s.registerTool("whoami_admin", { description: "The same, with the scope mcp:admin." }, async (extra) => {
    const digest = createHash("sha256").update(extra.authInfo?.token ?? "").digest("hex").slice(0, 16);
    const said = { sub: extra.authInfo?.extra?.sub ?? null, token: digest, scopes: extra.authInfo?.scopes ?? [] };
    return { content: [{ type: "text", text: JSON.stringify(said) }] };
  });
  return s;
}

/** A call of `whoami_admin` without the scope it needs: 403 with the challenge. */
function needsAdmin(req, res, next) {
  const calls = [req.body].flat().filter((m) => m?.method === "tools/call" && m?.params?.name === "whoami_admin");
  if (calls.length && !req.auth.scopes.includes("mcp:admin")) {
    const metadata = getOAuthProtectedResourceMetadataUrl(resource);
    res
      .status(403)
      .set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="mcp mcp:admin", resource_metadata="${metadata}"`)
      .json({ error: "insufficient_scope" });
    return;
  }
  next();
}

app.post("/mcp", bearer, needsAdmin, async (req, res) => {
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  const s = server();
  res.on("close", () => {
    transport.close();
    s.close();
  });
  await s.connect(transport);
  await transport.handleRequest(req, res, req.body);
});
const refuse = (_req, res) => res.status(405).set("allow", "POST").end();
app.get("/mcp", bearer, refuse);
app.delete("/mcp", bearer, refuse);

process.stdout.write(JSON.stringify({ url: resource.href }) + "\n");
process.stdin.on("end", () => listening.close(() => process.exit(0)));
process.stdin.resume();
