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

const { Browser, OAuthState, REDIRECT } = await import(new URL("./browser.mjs", import.meta.url).href);

const provider = new OAuthState();
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
  const back = await new Browser(login, REDIRECT).signIn(first);
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
