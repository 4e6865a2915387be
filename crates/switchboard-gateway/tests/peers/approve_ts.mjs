// The TypeScript SDK clients answering switchboard's approval questions (an `ask` rule becomes
// an elicitation to the client that made the call; for a 2026-07-28 client an `input_required`
// round the SDK answers with the same handler). Answers each question with the next of
// <answers> (comma-separated decision values; `none` declares no elicitation at all), calls
// `fx__echo` once per answer, then `fx__crash` (denied by a rule) and `add` with a
// string where a number belongs. Prints one JSON line.
//
//   node approve_ts.mjs <sdk1|sdk2-legacy|sdk2-modern> <sdk folder> <answers> stdio <switchboard> <args...>
import { pathToFileURL } from "node:url";
import path from "node:path";

const [flavour, sdkDir, answersArg, mode, ...rest] = process.argv.slice(2);
const sdk2 = flavour.startsWith("sdk2");
const load = sdk2
  ? (p) => import(pathToFileURL(path.join(sdkDir, "node_modules/@modelcontextprotocol/client/dist", p)).href)
  : (p) => import(pathToFileURL(path.join(sdkDir, "node_modules/@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await load(sdk2 ? "index.mjs" : "client/index.js");
const { StdioClientTransport } = await load(sdk2 ? "stdio.mjs" : "client/stdio.js");
const types = sdk2 ? null : await load("types.js");

const elicits = answersArg !== "none";
const answers = elicits ? answersArg.split(",") : ["-"];
const asked = [];
const options = { capabilities: elicits ? { elicitation: sdk2 ? { form: {} } : {} } : {} };
if (flavour === "sdk2-modern") options.versionNegotiation = { mode: { pin: "2026-07-28" } };
const client = new Client({ name: `approver-${flavour}`, version: "1.0.0" }, options);
if (elicits) {
  client.setRequestHandler(sdk2 ? "elicitation/create" : types.ElicitRequestSchema, async (req) => {
    const decision = answers[asked.length] ?? "deny";
    const prop = req.params.requestedSchema?.properties?.decision;
    asked.push({ message: req.params.message, choices: (prop?.oneOf ?? []).map((c) => `${c.const}=${c.title}`), decision });
    return { action: "accept", content: { decision } };
  });
}
const [command, ...args] = rest;
const out = { calls: [] };
try {
  await client.connect(new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" }));
  out.protocol = client.getNegotiatedProtocolVersion?.() ?? null;
  for (let i = 0; i < answers.length; i++) {
    const r = await client.callTool({ name: "fx__echo", arguments: { text: `call ${i}` } });
    out.calls.push({ isError: r.isError === true, text: r.content?.[0]?.text });
  }
  const denied = await client.callTool({ name: "fx__crash", arguments: {} });
  out.denied = { isError: denied.isError === true, text: denied.content?.[0]?.text };
  const invalid = await client.callTool({ name: "fx__add", arguments: { a: "two", b: 3 } });
  out.invalid = { isError: invalid.isError === true, text: invalid.content?.[0]?.text };
} catch (e) {
  out.error = String(e?.stack ?? e);
}
out.asked = asked;
console.log(JSON.stringify(out));
await client.close();
process.exit(out.error ? 1 : 0);
