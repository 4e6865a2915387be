// A TypeScript SDK client through `switchboard gateway`, against a poisoned upstream: 1.x
// (@modelcontextprotocol/sdk, 2025-11-25) or 2.x pinned to 2026-07-28
// (@modelcontextprotocol/client, `modern`), over stdio or Streamable HTTP. Prints one JSON line
// with what a model would be given (every tool definition, the gateway's instructions, an echo
// call's result, what calling `fx__summarize` gives, the `switchboard://servers` text, the eras
// in use), so the test can check that no hidden character reached it and that a tool with a
// denied finding is neither listed nor called.
//
//   node screen_client.mjs <sdk1|modern> <sdk folder> <text to echo> stdio <switchboard> <args...>
//   node screen_client.mjs <sdk1|modern> <sdk folder> <text to echo> http <url> <token>
import { loadSdk, transportFor } from "./sdk.mjs";

const [sdk, sdkDir, text, mode, ...rest] = process.argv.slice(2);
const classes = await loadSdk(sdk === "modern" ? "sdk2" : "sdk1", sdkDir);
const { Client } = classes;

const options = { capabilities: {} };
if (sdk === "modern") options.versionNegotiation = { mode: { pin: "2026-07-28" } };
const client = new Client({ name: "screen-test", version: "1.0.0" }, options);
const transport = transportFor(classes, mode, rest);

const out = {};
// The SDK 1.x client keeps the era it agreed on nowhere but in a transport that asks for it.
const setVersion = transport.setProtocolVersion?.bind(transport);
let agreed = null;
transport.setProtocolVersion = (v) => {
  agreed = v;
  setVersion?.(v);
};
try {
  await client.connect(transport);
  out.protocol = client.getNegotiatedProtocolVersion?.() ?? agreed;
  let tools = [];
  for (const started = Date.now(); Date.now() - started < 20000; await new Promise((r) => setTimeout(r, 200))) {
    tools = (await client.listTools()).tools;
    if (tools.some((t) => t.name === "fx__echo")) break;
  }
  out.definitions = tools;
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
  try {
    out.upstream = JSON.parse(out.servers).servers.find((s) => s.name === "fx")?.status?.protocol_version ?? null;
  } catch {
    out.upstream = null;
  }
} catch (e) {
  out.error = String(e?.stack ?? e);
}
console.log(JSON.stringify(out));
await client.close().catch(() => {});
process.exit(out.error ? 1 : 0);
