// One person of a team at a gateway whose callers sign in, with an upstream each person signs
// in to as themselves (`whoami_upstream.mjs` behind a second OpenID provider): the TypeScript
// SDK 1.x client signs in to the gateway through its own OAuth support as <login>, declares
// URL-mode elicitation, and when the gateway asks it to open the upstream's sign-in (an
// `elicitation/create` with `mode: "url"`) accepts, and plays the browser: signs in to the
// upstream's provider as <login>, consents, and lands on the gateway's `/oauth/callback` (the
// gateway's `/sign-in` page it opens signs it in with the organisation's provider first). Then
// it waits for the upstream's tool to be listed and calls it <calls> times, 25 in flight.
//
//   node team_client.mjs <sdk folder> <gateway /mcp URL> <login> <calls> [<tool suffix> [<step-up tool>]]
//
// With <step-up tool>, that tool is called once more at the end: when the gateway answers
// -32042 (the upstream wants a scope the login lacks), the URL it gives is signed in to, the
// completion awaited, and the call made again.
//
// A URL that is the gateway's own page for the person's values (`/inputs?state=`) is filled
// in with `<login>-token` for every field. The tool called is the one whose name ends with
// <tool suffix> (default `whoami`).
//
// Prints one JSON object: the gateway token's claims and digest, the elicitations it got and
// the ones it was told are complete, where the browser landed, the tools listed, and what the
// upstream said of each call (whose token: `sub` and token digest, counted; other tools'
// texts, counted). With `TEAM_CLIENT_TOKEN_FILE` set, the access token itself is written to
// that file (0600), for a test that uses it on the gateway's API as the person.
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [sdkDir, gateway, login, count, suffix = "whoami", stepUpTool] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(sdkDir, "node_modules/@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
const { UnauthorizedError } = await load("client/auth.js");
const { ElicitRequestSchema, ElicitationCompleteNotificationSchema } = await load("types.js");
const { Browser, OAuthState, REDIRECT } = await import(new URL("./browser.mjs", import.meta.url).href);

const digest = (token) => createHash("sha256").update(token).digest("hex").slice(0, 16);
const callback = `${new URL(gateway).origin}/oauth/callback`;
const state = new OAuthState();
const elicited = [];
const completed = [];
const landed = [];

function client() {
  const c = new Client({ name: `team-${login}`, version: "1.0.0" }, { capabilities: { elicitation: { url: {} } } });
  c.setRequestHandler(ElicitRequestSchema, async (request) => {
    const p = request.params;
    elicited.push({ mode: p.mode, url: p.url, elicitationId: p.elicitationId, message: p.message });
    if (p.mode !== "url") return { action: "decline" };
    // The person agreed to open it: the answer goes back now, the browser takes its time.
    landed.push(
      (async () => {
        if (new URL(p.url).pathname === "/inputs") return fillIn(p.url);
        const browser = new Browser(login, callback);
        const back = await browser.signIn(p.url);
        const res = await browser.land(back.href);
        const authorization = browser.authorization;
        return { status: res.status, at: back.origin + back.pathname, page: res.page.slice(0, 300), authorization };
      })().catch((e) => ({ error: String(e) })),
    );
    return { action: "accept" };
  });
  c.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => completed.push(n.params.elicitationId));
  return c;
}

/**
 * The gateway's page for this person's values, opened in a browser (signed in there first with
 * the organisation's provider as <login>): every field given `<login>-token`.
 */
async function fillIn(url) {
  const browser = new Browser(login);
  const opened = await browser.open(url);
  if (opened instanceof URL) return { error: `sent to ${opened}` };
  const fields = [...opened.page.matchAll(/<input name="([^"]+)" type="(text|password)"/g)].map((m) => m[1]);
  const body = new URLSearchParams({ state: new URL(url).searchParams.get("state") });
  for (const f of fields) body.set(f, `${login}-token`);
  const res = await browser.get(new URL("/inputs", url), {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: body.toString(),
  });
  return { status: res.status, at: "/inputs", fields, page: (await res.text()).slice(0, 300) };
}

async function connect() {
  const c = client();
  await c.connect(new StreamableHTTPClientTransport(new URL(gateway), { authProvider: state }));
  return c;
}

let c;
try {
  c = await connect();
} catch (e) {
  if (!(e instanceof UnauthorizedError) || !state.authorizationUrl) throw e;
  const back = await new Browser(login, REDIRECT).signIn(state.authorizationUrl);
  await new StreamableHTTPClientTransport(new URL(gateway), { authProvider: state }).finishAuth(back.searchParams.get("code"));
  c = await connect();
}

// The upstream's tool, once this person's login to it is done (told by `list_changed`, or
// found on looking again).
let tools = [];
const until = Date.now() + 30000;
while (Date.now() < until) {
  tools = (await c.listTools()).tools.map((t) => t.name);
  if (tools.some((t) => t.endsWith(suffix))) break;
  await new Promise((r) => setTimeout(r, 100));
}
const whoami = tools.find((t) => t.endsWith(suffix));
const report = { subs: {}, digests: {}, texts: {}, errors: [] };
if (whoami) {
  let left = Number(count);
  const worker = async () => {
    while (left > 0) {
      left--;
      try {
        const r = await c.callTool({ name: whoami, arguments: JSON.parse(process.env.TEAM_ARGS ?? "{}") });
        const text = r.content.map((c) => c.text ?? "").join("");
        if (suffix !== "whoami") {
          report.texts[text] = (report.texts[text] ?? 0) + 1;
          continue;
        }
        const said = JSON.parse(text);
        report.subs[said.sub] = (report.subs[said.sub] ?? 0) + 1;
        report.digests[said.token] = (report.digests[said.token] ?? 0) + 1;
      } catch (e) {
        report.errors.push(String(e));
      }
    }
  };
  const began = performance.now();
  await Promise.all(Array.from({ length: 25 }, worker));
  report.ms = Math.round(performance.now() - began);
}
let stepUp = null;
if (stepUpTool) {
  const name = tools.find((t) => t.endsWith(stepUpTool));
  stepUp = { name };
  try {
    await c.callTool({ name, arguments: {} });
    stepUp.first = "ok";
  } catch (e) {
    stepUp.first = { code: e.code, message: e.message };
    const elicitation = e.data?.elicitations?.[0] ?? e.elicitations?.[0];
    if (elicitation?.url) {
      try {
        const browser = new Browser(login, callback);
        stepUp.opened = elicitation.url;
        // The gateway's sign-in page sends the browser on to the upstream's authorization URL.
        const back = await browser.signIn(elicitation.url);
        stepUp.authorization = browser.authorization;
        stepUp.scope = browser.authorization ? new URL(browser.authorization).searchParams.get("scope") : null;
        const res = await browser.land(back.href);
        stepUp.landed = res.status;
        stepUp.page = res.page.slice(0, 300);
        const until = Date.now() + 15000;
        while (!completed.includes(elicitation.elicitationId) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
        stepUp.completed = completed.includes(elicitation.elicitationId);
        const r = await c.callTool({ name, arguments: {} });
        stepUp.then = JSON.parse(r.content.map((x) => x.text ?? "").join(""));
      } catch (e) {
        stepUp.error = String(e);
      }
    }
  }
}
const browser = await Promise.all(landed);
await c.close();
const token = state.tokens()?.access_token ?? "";
const claims = JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString() || "null");
if (process.env.TEAM_CLIENT_TOKEN_FILE) writeFileSync(process.env.TEAM_CLIENT_TOKEN_FILE, token, { mode: 0o600 });
process.stdout.write(JSON.stringify({ claims, token: digest(token), elicited, completed, browser, tools, whoami: report, stepUp }) + "\n");
