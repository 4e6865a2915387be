// The TypeScript SDK 1.x client signing in to a protected switchboard gateway through its own
// OAuth support (RFC 9728 discovery from the 401, the provider's metadata, dynamic
// registration, authorization code with PKCE, RFC 8707 resource), as one person:
//
//   node oidc_client.mjs <sdk folder> <gateway /mcp URL> <login> <tool to call>...
//
// The browser's part is played here: the authorization URL the SDK hands over is followed
// with a cookie jar, the provider's sign-in page is filled in with <login> and its consent page
// confirmed; the code it redirects with goes back to the SDK (`finishAuth`). Prints one JSON
// object: the access token's claims, the tools listed, and each call's result.
import path from "node:path";
import { pathToFileURL } from "node:url";

const [sdkDir, gateway, login, ...calls] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(sdkDir, "node_modules/@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
const { UnauthorizedError } = await load("client/auth.js");

const REDIRECT = "http://127.0.0.1:9/callback";

/** What an MCP client keeps between the steps of a sign-in (in memory: one run). */
class Provider {
  constructor() {
    this.info = undefined;
    this.saved = undefined;
    this.verifier = undefined;
    this.authorizationUrl = undefined;
  }
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata() {
    return {
      client_name: "switchboard team test",
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
      application_type: "native",
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(v) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/** A browser's cookies, as far as one sign-in needs them (by name; one host). */
const jar = new Map();
async function get(url, init = {}) {
  const headers = { ...(init.headers ?? {}), cookie: [...jar].map(([k, v]) => `${k}=${v}`).join("; ") };
  const res = await fetch(url, { ...init, headers, redirect: "manual" });
  for (const c of res.headers.getSetCookie()) {
    const [pair] = c.split(";");
    const at = pair.indexOf("=");
    jar.set(pair.slice(0, at), pair.slice(at + 1));
  }
  return res;
}

/** Follows redirects from `url` until one leaves the provider (the client's redirect URI). */
async function follow(url, init) {
  let res = await get(url, init);
  for (let hops = 0; hops < 10; hops++) {
    const to = res.headers.get("location");
    if (!to) return res;
    const next = new URL(to, url);
    if (next.href.startsWith(REDIRECT)) return next;
    url = next.href;
    res = await get(url);
  }
  throw new Error(`too many redirects from ${url}`);
}

/** The provider's page at `res`: its form's action, submitted with `fields`. */
async function submit(res, base, fields) {
  const page = await res.text();
  const action = /<form[^>]*action="([^"]+)"/.exec(page)?.[1];
  if (!action) throw new Error(`no form on the provider's page (${res.status}): ${page.slice(0, 400)}`);
  return follow(new URL(action.replaceAll("&amp;", "&"), base).href, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields).toString(),
  });
}

/** Plays the person in the browser: signs in as `login`, consents; the code it ends with. */
async function signIn(url) {
  let at = await follow(url.href);
  if (at instanceof URL) return at;
  at = await submit(at, url, { prompt: "login", login, password: "any" });
  if (!(at instanceof URL)) at = await submit(at, url, { prompt: "consent" });
  if (!(at instanceof URL)) throw new Error(`the provider did not send the browser back (${at.status}): ${await at.text()}`);
  const error = at.searchParams.get("error");
  if (error) throw new Error(`the provider refused: ${error}: ${at.searchParams.get("error_description")}`);
  return at;
}

const provider = new Provider();
const connect = async () => {
  const transport = new StreamableHTTPClientTransport(new URL(gateway), { authProvider: provider });
  const client = new Client({ name: "oidc-test", version: "1.0.0" }, { capabilities: {} });
  await client.connect(transport);
  return client;
};

let client;
let first;
try {
  client = await connect();
} catch (e) {
  if (!(e instanceof UnauthorizedError) || !provider.authorizationUrl) throw e;
  first = provider.authorizationUrl;
  const back = await signIn(first);
  const transport = new StreamableHTTPClientTransport(new URL(gateway), { authProvider: provider });
  await transport.finishAuth(back.searchParams.get("code"));
  client = await connect();
}

const token = provider.tokens()?.access_token ?? "";
const claims = JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString() || "null");
const tools = (await client.listTools()).tools.map((t) => t.name);
const results = {};
for (const name of calls) {
  const r = await client.callTool({ name, arguments: name.endsWith("echo") ? { text: `from ${login}` } : {} });
  results[name] = { isError: r.isError === true, text: r.content.map((c) => c.text ?? "").join("") };
}
await client.close();
const asked = first ? Object.fromEntries(["resource", "scope", "code_challenge_method"].map((k) => [k, first.searchParams.get(k)])) : null;
process.stdout.write(JSON.stringify({ claims, tools, results, asked, token }) + "\n");
