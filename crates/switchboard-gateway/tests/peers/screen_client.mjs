// The TypeScript SDK's client (1.x) through `switchboard gateway` on stdio, against a poisoned
// upstream: prints one JSON line with what a model would be given (the `fx__weather`
// definition, the tools' names, the gateway's instructions, an echo call's result, and what
// calling `fx__summarize` gives), so the test can check that no hidden character reached it and
// that a tool with a denied finding is neither listed nor called.
//
//   node screen_client.mjs <sdk folder> <text to echo> <switchboard> <args...>
import { pathToFileURL } from "node:url";
import path from "node:path";

const [sdkDir, text, command, ...args] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(sdkDir, "node_modules/@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");

const client = new Client({ name: "screen-test", version: "1.0.0" }, { capabilities: {} });
const out = {};
try {
  await client.connect(new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" }));
  let tools = [];
  for (const started = Date.now(); Date.now() - started < 20000; await new Promise((r) => setTimeout(r, 200))) {
    tools = (await client.listTools()).tools;
    if (tools.some((t) => t.name === "fx__echo")) break;
  }
  out.weather = tools.find((t) => t.name === "fx__weather") ?? null;
  out.tools = tools.map((t) => t.name);
  // A tool of the poisoned corpus (when the fixture lists it): what calling it gives.
  const summarize = await client.callTool({ name: "fx__summarize", arguments: {} }).catch((e) => ({ error: String(e) }));
  out.summarize = summarize.content ? { isError: summarize.isError ?? false, text: summarize.content.map((c) => c.text).join("") } : summarize;
  out.instructions = client.getInstructions() ?? null;
  const result = await client.callTool({ name: "fx__echo", arguments: { text } });
  out.result = result.content.map((c) => c.text).join("");
  const servers = await client.readResource({ uri: "switchboard://servers" }).catch((e) => ({ error: String(e) }));
  out.servers = servers.contents ? servers.contents.map((c) => c.text).join("") : servers.error;
} catch (e) {
  out.error = String(e?.stack ?? e);
}
console.log(JSON.stringify(out));
await client.close().catch(() => {});
process.exit(out.error ? 1 : 0);
