// The TypeScript SDK 1.x client answering switchboard's approval questions (an `ask` rule
// becomes an elicitation to the client that made the call). Answers each question with the
// next of <answers> (comma-separated decision values; `none` declares no elicitation at all),
// calls `mcp__fx__echo` once per answer, then `mcp__fx__crash` (denied by a rule) and `add`
// with a string where a number belongs. Prints one JSON line.
//
//   node approve_sdk1.mjs <sdk folder> <answers> stdio <switchboard> <args...>
import { pathToFileURL } from "node:url";
import path from "node:path";

const [sdkDir, answersArg, mode, ...rest] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(sdkDir, "node_modules/@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");
const types = await load("types.js");

const elicits = answersArg !== "none";
const answers = elicits ? answersArg.split(",") : ["-"];
const asked = [];
const client = new Client({ name: "approver-sdk1", version: "1.0.0" }, { capabilities: elicits ? { elicitation: {} } : {} });
if (elicits) {
  client.setRequestHandler(types.ElicitRequestSchema, async (req) => {
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
  for (let i = 0; i < answers.length; i++) {
    const r = await client.callTool({ name: "mcp__fx__echo", arguments: { text: `call ${i}` } });
    out.calls.push({ isError: r.isError === true, text: r.content?.[0]?.text });
  }
  const denied = await client.callTool({ name: "mcp__fx__crash", arguments: {} });
  out.denied = { isError: denied.isError === true, text: denied.content?.[0]?.text };
  const invalid = await client.callTool({ name: "mcp__fx__add", arguments: { a: "two", b: 3 } });
  out.invalid = { isError: invalid.isError === true, text: invalid.content?.[0]?.text };
} catch (e) {
  out.error = String(e?.stack ?? e);
}
out.asked = asked;
console.log(JSON.stringify(out));
await client.close();
process.exit(out.error ? 1 : 0);
