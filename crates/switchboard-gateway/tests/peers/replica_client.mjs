// One agent at a gateway of several replicas behind a load balancer: the TypeScript SDK 1.x
// client (2025-11-25: one `Mcp-Session-Id` session for the whole run, questions as ordinary
// requests on the call's stream) or the 2.x client pinned to 2026-07-28 (no session; questions
// as `input_required` rounds, answered by calling again with the round's state). Calls tools
// one after another for <seconds>: `fx__echo` with a counter, and every 7th call `fx__ask`,
// whose upstream asks the caller a question in the middle of the call (answered with a name
// the result must repeat). Subscribed all along to a resource of server-everything (`ev`, whose
// updates the test turns on): 1.x with `resources/subscribe` on its session, 2.x with a
// `subscriptions/listen` stream, opened again whenever it ends (a replica killed under it).
// Writes `started` on stderr once connected, then prints one JSON line: calls ok and failed,
// each failure's message, how many questions came, the session's ids, when each update came.
//
//   node replica_client.mjs sdk1|sdk2 <sdk folder> <url> <token> <seconds>
import path from "node:path";
import { pathToFileURL } from "node:url";

const [kind, dir, url, token, seconds] = process.argv.slice(2);
const out = { ok: 0, failed: 0, failures: [], asked: 0, sessions: [], protocol: null, updates: [], listens: 0, listenErrors: [] };
let uri;
const onUpdate = (n) => {
  if (n.params?.uri === uri) out.updates.push(Date.now());
};
let lastName = "";
let n = 0;
const onElicit = async (r) => {
  out.asked += 1;
  lastName = `person-${n}`;
  return { action: "accept", content: { name: lastName } };
};
const headers = { Authorization: `Bearer ${token}` };
let client, transport;
if (kind === "sdk1") {
  const load = (p) => import(pathToFileURL(path.join(dir, "node_modules/@modelcontextprotocol/sdk/dist/esm", p)).href);
  const { Client } = await load("client/index.js");
  const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
  const t = await load("types.js");
  client = new Client({ name: "replica-client", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler(t.ElicitRequestSchema, onElicit);
  client.setNotificationHandler(t.ResourceUpdatedNotificationSchema, onUpdate);
  transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
} else {
  const load = (p) => import(pathToFileURL(path.join(dir, "node_modules/@modelcontextprotocol/client/dist", p)).href);
  const sdk = await load("index.mjs");
  client = new sdk.Client(
    { name: "replica-client", version: "2.0.0" },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  client.setRequestHandler("elicitation/create", onElicit);
  client.setNotificationHandler("notifications/resources/updated", onUpdate);
  transport = new sdk.StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
}
out.transport = [];
try {
  await client.connect(transport);
  const onerror = transport.onerror;
  transport.onerror = (e) => {
    if (out.transport.length < 20) out.transport.push(`${new Date().toISOString()} ${String(e).slice(0, 300)}`);
    onerror?.(e);
  };
  out.protocol = client.transport?.protocolVersion ?? client.getNegotiatedProtocolVersion?.() ?? null;
  const session = () => transport.sessionId ?? null;
  out.sessions.push(session());
  const listed = await client.listResources();
  uri = listed.resources.map((r) => r.uri).find((u) => u.startsWith("demo://"));
  if (!uri) throw new Error(`no resource of server-everything: ${JSON.stringify(listed).slice(0, 300)}`);
  out.uri = uri;
  const end = Date.now() + Number(seconds) * 1000;
  let listening;
  let current;
  if (kind === "sdk1") {
    await client.subscribeResource({ uri });
  } else {
    // The first listen is acknowledged before the calls start; later ones as they come.
    const listen = async () => {
      current = await client.listen({ resourceSubscriptions: [uri] });
      out.listens += 1;
    };
    await listen();
    listening = (async () => {
      while (Date.now() < end) {
        await current?.closed;
        if (Date.now() >= end) break;
        try {
          await listen();
        } catch (e) {
          current = undefined;
          if (out.listenErrors.length < 20) out.listenErrors.push(`${new Date().toISOString()} ${String(e).slice(0, 300)}`);
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    })();
  }
  process.stderr.write("started\n");
  while (Date.now() < end) {
    n += 1;
    const ask = n % 7 === 0;
    try {
      const result = ask
        ? await client.callTool({ name: "fx__ask", arguments: {} })
        : await client.callTool({ name: "fx__echo", arguments: { text: `call ${n}` } });
      const text = (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
      const want = ask ? lastName : `call ${n}`;
      if (result.isError || !text.includes(want)) throw new Error(`unexpected result: ${JSON.stringify(result).slice(0, 300)}`);
      out.ok += 1;
    } catch (e) {
      out.failed += 1;
      if (out.failures.length < 20) out.failures.push(`${new Date().toISOString()} call ${n}${ask ? " (ask)" : ""}: ${String(e).slice(0, 400)}`);
    }
    if (session() !== out.sessions[out.sessions.length - 1]) out.sessions.push(session());
  }
  await current?.close();
  await listening;
  await client.close();
} catch (e) {
  out.error = String(e);
}
console.log(JSON.stringify(out));
