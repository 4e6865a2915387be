// A TypeScript SDK client that answers every server-to-client request (elicitation, sampling,
// roots), for the era-crossing tests: the 1.x client (`@modelcontextprotocol/sdk`, 2025-11-25,
// ordinary requests) or the 2.x client pinned to 2026-07-28 (`@modelcontextprotocol/client`,
// where questions come as input_required rounds the SDK answers through the same handlers).
// Makes each call named on the command line in turn and prints one JSON line: per call, what it
// was asked (in order) and the result.
//
//   node era_client.mjs sdk1 <sdk folder> <url> <call>...
//   node era_client.mjs sdk2 <client folder> <url> <call>...
// A call is `tool:NAME` or `prompt:NAME`, optionally followed by `=` and JSON arguments.
import { pathToFileURL } from "node:url";
import path from "node:path";

const [kind, dir, url, ...calls] = process.argv.slice(2);
const caps = { elicitation: { form: {} }, sampling: {}, roots: { listChanged: true } };
let asked = [];
const onElicit = async (r) => {
  asked.push({ method: "elicitation/create", message: r.params.message });
  // Every field the form asks for, from its default when it has one (SEP-1034).
  const content = {};
  for (const [k, s] of Object.entries(r.params.requestedSchema?.properties ?? {})) {
    content[k] = s.default ?? (s.type === "number" || s.type === "integer" ? 7 : s.type === "boolean" ? true : s.enum?.[0] ?? s.oneOf?.[0]?.const ?? `answer-${k}`);
  }
  return { action: "accept", content };
};
const onSample = async (r) => {
  asked.push({ method: "sampling/createMessage" });
  return { role: "assistant", content: { type: "text", text: "sampled by the client" }, model: "test-model", stopReason: "endTurn" };
};
const onRoots = async () => {
  asked.push({ method: "roots/list" });
  return { roots: [{ uri: "file:///home/ada/project", name: "project" }] };
};

let client, Transport;
if (kind === "sdk1") {
  const load = (p) => import(pathToFileURL(path.join(dir, "node_modules/@modelcontextprotocol/sdk/dist/esm", p)).href);
  const { Client } = await load("client/index.js");
  ({ StreamableHTTPClientTransport: Transport } = await load("client/streamableHttp.js"));
  const t = await load("types.js");
  client = new Client({ name: "era-client", version: "1.0.0" }, { capabilities: caps });
  client.setRequestHandler(t.ElicitRequestSchema, onElicit);
  client.setRequestHandler(t.CreateMessageRequestSchema, onSample);
  client.setRequestHandler(t.ListRootsRequestSchema, onRoots);
} else {
  const load = (p) => import(pathToFileURL(path.join(dir, "node_modules/@modelcontextprotocol/client/dist", p)).href);
  const sdk = await load("index.mjs");
  Transport = sdk.StreamableHTTPClientTransport;
  client = new sdk.Client({ name: "era-client", version: "2.0.0" }, { capabilities: caps, versionNegotiation: { mode: { pin: "2026-07-28" } } });
  client.setRequestHandler("elicitation/create", onElicit);
  client.setRequestHandler("sampling/createMessage", onSample);
  client.setRequestHandler("roots/list", onRoots);
}

const out = { calls: {} };
try {
  await client.connect(new Transport(new URL(url)));
  out.protocol = client.transport?.protocolVersion ?? client.getNegotiatedProtocolVersion?.() ?? null;
  for (const call of calls) {
    const [what, json] = call.split(/=(.*)/s);
    const args = json ? JSON.parse(json) : {};
    asked = [];
    let result;
    try {
      result = what.startsWith("prompt:")
        ? await client.getPrompt({ name: what.slice(7), arguments: args })
        : await client.callTool({ name: what.slice(5), arguments: args });
    } catch (e) {
      result = { error: String(e) };
    }
    const text = (result.content ?? result.messages?.map((m) => m.content) ?? [])
      .filter((c) => c.type === "text").map((c) => c.text).join("\n");
    out.calls[what] = { asked, text, error: result.error ?? null };
  }
  await client.close();
} catch (e) {
  out.error = String(e);
}
console.log(JSON.stringify(out));
