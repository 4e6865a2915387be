// A person's access token from the organisation's provider, as a browser gets one: a public
// client registered at <issuer> (RFC 7591), the authorization code flow with PKCE S256 and the
// resource indicator <resource>, signed in as <login> on `oidc-provider`'s own pages.
//
//   node person_token.mjs <issuer> <login> <resource>
//
// Prints one JSON line: {"access_token": "..."}.
import { createHash, randomBytes } from "node:crypto";

const [issuer, login, resource] = process.argv.slice(2);
const { Browser, REDIRECT } = await import(new URL("./browser.mjs", import.meta.url).href);
const meta = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json();
const registered = await fetch(meta.registration_endpoint, {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({
    client_name: "switchboard person token",
    redirect_uris: [REDIRECT],
    grant_types: ["authorization_code"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
    application_type: "native",
  }),
});
const client = await registered.json();
if (!client.client_id) throw new Error(`registration: ${registered.status} ${JSON.stringify(client)}`);
const verifier = randomBytes(32).toString("base64url");
const challenge = createHash("sha256").update(verifier).digest("base64url");
const url = new URL(meta.authorization_endpoint);
for (const [k, v] of Object.entries({
  response_type: "code",
  client_id: client.client_id,
  redirect_uri: REDIRECT,
  scope: "openid mcp",
  state: randomBytes(16).toString("base64url"),
  code_challenge: challenge,
  code_challenge_method: "S256",
  resource,
})) url.searchParams.set(k, v);
const back = await new Browser(login, REDIRECT).signIn(url.href);
const answer = await fetch(meta.token_endpoint, {
  method: "POST",
  headers: { "content-type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams({
    grant_type: "authorization_code",
    code: back.searchParams.get("code"),
    redirect_uri: REDIRECT,
    code_verifier: verifier,
    client_id: client.client_id,
    resource,
  }).toString(),
});
const token = await answer.json();
if (!token.access_token) throw new Error(`token: ${answer.status} ${JSON.stringify(token)}`);
process.stdout.write(JSON.stringify({ access_token: token.access_token }) + "\n");
