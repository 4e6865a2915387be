// A TypeScript SDK 1.x client of an earlier release, as agents ship it (Gemini CLI 0.61 pins
// @modelcontextprotocol/sdk 1.23.0, whose newest revision is 2025-06-18 and whose Streamable
// HTTP transport runs JSON.parse on every event's data). Lists the tools and calls one through
// the gateway over HTTP; prints one JSON line; exits non-zero on error.
//
//   node old_sdk_client.mjs <folder with the sdk> <url> <token> <tool>
import { pathToFileURL } from "node:url";
import path from "node:path";

const [dir, url, token, tool] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(dir, "node_modules/@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
const errors = [];
const client = new Client({ name: "old-sdk", version: "1.23.0" });
client.onerror = (e) => errors.push(String(e));
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
const out = {};
const timer = setTimeout(() => { console.log(JSON.stringify({ ...out, errors, error: "timed out" })); process.exit(2); }, 20000);
try {
  await client.connect(transport);
  out.protocol = transport.protocolVersion;
  out.tools = (await client.listTools()).tools.map((t) => t.name);
  const r = await client.callTool({ name: tool, arguments: { text: "from an old client" } });
  out.text = r.content?.[0]?.text;
  await client.close();
} catch (e) {
  out.error = String(e);
}
clearTimeout(timer);
console.log(JSON.stringify({ ...out, errors }));
process.exit(out.error || errors.length ? 1 : 0);
