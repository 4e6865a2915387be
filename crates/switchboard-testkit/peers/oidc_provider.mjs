// A real OpenID provider for the team tests: `oidc-provider` (a certified implementation, from
// npm) on 127.0.0.1, with two people in two groups and the settings an organisation gives a
// protected MCP resource:
//
//   node oidc_provider.mjs <oidc-provider folder>   (started by switchboard_testkit::oidc)
//
// - people: alice (group devs) and bob (group admins); any other login is refused;
// - dynamic client registration (what MCP clients use), PKCE S256 (required), refresh tokens, the provider's own sign-in and consent pages (devInteractions), which the client
//   scripts fill in as a person would;
// - resource indicators (RFC 8707): an access token is a JWT for the one loopback resource the
//   client names, with the scopes asked of `mcp` and `mcp:admin` and the person's `name` and
//   `groups` as claims;
// - two confidential clients for the refusal cases: `robot` (client credentials, tokens of an
//   hour) and `brief` (tokens of one second);
// - with `--exchange-from <issuer>`: token exchange (RFC 8693, registered as an extension grant
//   of `oidc-provider`) for the confidential client `exchanger`: a subject token that is an
//   access token of that issuer (checked against its keys) is exchanged for this provider's
//   JWT for the loopback `resource` asked, with the same `sub`; `GET /test/exchanges` counts the
//   exchanges made per `sub`.
//
//   node oidc_provider.mjs <oidc-provider folder> [--exchange-from <issuer>]
//
// Prints one line `{"issuer": "http://127.0.0.1:PORT"}` once it listens; ends when stdin closes.
import { generateKeyPairSync } from "node:crypto";
import { createServer } from "node:net";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [dir, ...options] = process.argv.slice(2);
const { default: Provider } = await import(pathToFileURL(path.join(dir, "node_modules/oidc-provider/lib/index.js")).href);
const jose = await import(pathToFileURL(path.join(dir, "node_modules/jose/dist/webapi/index.js")).href);
const trusted = options[0] === "--exchange-from" ? options[1] : undefined;
const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token";

const PEOPLE = {
  alice: { name: "Alice", groups: ["devs"] },
  bob: { name: "Bob", groups: ["admins"] },
};

/** A free loopback port. */
const port = await new Promise((resolve, reject) => {
  const s = createServer();
  s.on("error", reject);
  s.listen(0, "127.0.0.1", () => {
    const { port } = s.address();
    s.close(() => resolve(port));
  });
});
const issuer = `http://127.0.0.1:${port}`;

const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ format: "jwk" });
const ec = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ format: "jwk" });

const loopback = (url) => {
  try {
    const u = new URL(url);
    return u.protocol === "http:" && u.hostname === "127.0.0.1";
  } catch {
    return false;
  }
};

const provider = new Provider(issuer, {
  jwks: { keys: [{ ...rsa, kid: "rsa-1", alg: "RS256", use: "sig" }, { ...ec, kid: "ec-1", alg: "ES256", use: "sig" }] },
  cookies: { keys: ["switchboard-test-cookie-key"] },
  clients: [
    {
      client_id: "robot",
      client_secret: "robot-secret",
      grant_types: ["client_credentials"],
      response_types: [],
      redirect_uris: [],
    },
    {
      client_id: "brief",
      client_secret: "brief-secret",
      grant_types: ["client_credentials"],
      response_types: [],
      redirect_uris: [],
    },
    ...(trusted
      ? [{ client_id: "exchanger", client_secret: "exchanger-secret", grant_types: [TOKEN_EXCHANGE], response_types: [], redirect_uris: [] }]
      : []),
  ],
  async findAccount(_ctx, id) {
    const person = PEOPLE[id];
    if (!person) return undefined;
    return { accountId: id, async claims() { return { sub: id, name: person.name, groups: person.groups }; } };
  },
  claims: { openid: ["sub"], profile: ["name"], groups: ["groups"] },
  scopes: ["openid", "profile", "groups", "mcp", "mcp:admin"],
  pkce: { required: () => true },
  // Refresh tokens for clients registered for them (as an organisation's provider gives MCP
  // clients), which also offers the grant to registration.
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed("refresh_token"),
  ttl: {
    ClientCredentials: (_ctx, _token, client) => (client.clientId === "brief" ? 1 : 3600),
    AccessToken: 600,
  },
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async (_ctx, _client, oneOf) => oneOf,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, resource) => {
        if (!loopback(resource)) throw new Provider.errors.InvalidTarget();
        return { scope: "mcp mcp:admin", audience: resource, accessTokenFormat: "jwt", jwt: { sign: { alg: "ES256" } } };
      },
    },
  },
  async extraTokenClaims(_ctx, token) {
    const person = PEOPLE[token.accountId];
    return person ? { name: person.name, groups: person.groups } : undefined;
  },
});
provider.on("server_error", (_ctx, err) => console.error("oidc-provider:", err));

// Token exchange: the subject token must be an access token of the trusted issuer.
const exchanges = {};
if (trusted) {
  const metadata = await (await fetch(`${trusted}/.well-known/openid-configuration`)).json();
  const trustedKeys = jose.createRemoteJWKSet(new URL(metadata.jwks_uri));
  const signingKey = await jose.importJWK({ ...ec, alg: "ES256" }, "ES256");
  const params = ["subject_token", "subject_token_type", "requested_token_type", "resource", "scope", "audience"];
  provider.registerGrantType(
    TOKEN_EXCHANGE,
    async (ctx) => {
      const { subject_token: subject, subject_token_type: kind, resource } = ctx.oidc.params;
      if (kind !== ACCESS_TOKEN) throw new Provider.errors.InvalidRequest("subject_token_type must be an access token");
      if (!loopback(resource)) throw new Provider.errors.InvalidTarget("a loopback resource is required");
      let claims;
      try {
        ({ payload: claims } = await jose.jwtVerify(subject, trustedKeys, { issuer: trusted }));
      } catch (e) {
        throw new Provider.errors.InvalidGrant(`subject_token: ${e.message}`);
      }
      exchanges[claims.sub] = (exchanges[claims.sub] ?? 0) + 1;
      const now = Math.floor(Date.now() / 1000);
      const client = ctx.oidc.client.clientId;
      const token = await new jose.SignJWT({ scope: "mcp", client_id: client, act: { sub: client } })
        .setProtectedHeader({ alg: "ES256", kid: "ec-1", typ: "at+jwt" })
        .setIssuer(issuer)
        .setSubject(claims.sub)
        .setAudience(resource)
        .setIssuedAt(now)
        .setExpirationTime(now + 300)
        .setJti(crypto.randomUUID())
        .sign(signingKey);
      ctx.body = { access_token: token, issued_token_type: ACCESS_TOKEN, token_type: "Bearer", expires_in: 300, scope: "mcp" };
    },
    params,
    ["resource", "audience"],
  );
  provider.use(async (ctx, next) => {
    if (ctx.path === "/test/exchanges") {
      ctx.body = exchanges;
      return;
    }
    await next();
  });
}

const server = provider.listen(port, "127.0.0.1", () => {
  process.stdout.write(JSON.stringify({ issuer }) + "\n");
});
process.stdin.on("end", () => server.close(() => process.exit(0)));
process.stdin.resume();
