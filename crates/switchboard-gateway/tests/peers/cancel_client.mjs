// A TypeScript SDK client through `switchboard gateway`: 1.x (@modelcontextprotocol/sdk,
// 2025-11-25) or 2.x pinned to 2026-07-28 (@modelcontextprotocol/client, `modern`). Cancels a
// prompt, a resource read and a completion in flight (each upstream answer takes ten seconds),
// and over HTTP in the 2025-11-25 era ends its session (DELETE) with a tool call in flight. The
// test reads the upstream's call log for what reached it. Prints one JSON line; exits non-zero
// on error.
//
//   node cancel_client.mjs <sdk1|modern> <sdk folder> stdio <switchboard> <args...>
//   node cancel_client.mjs <sdk1|modern> <sdk folder> http <url> <token>
import { loadSdk, transportFor } from "./sdk.mjs";

const [sdk, sdkDir, mode, ...rest] = process.argv.slice(2);
const classes = await loadSdk(sdk === "modern" ? "sdk2" : "sdk1", sdkDir);
const { Client } = classes;

const options = { capabilities: {} };
if (sdk === "modern") options.versionNegotiation = { mode: { pin: "2026-07-28" } };
const client = new Client({ name: "cancel-test", version: "1.0.0" }, options);
const transport = transportFor(classes, mode, rest);

// Starts `request(signal)`, aborts it after 400 ms; what the client saw, and how long it took.
async function abandon(request) {
  const ac = new AbortController();
  const started = Date.now();
  const timer = setTimeout(() => ac.abort("test"), 400);
  try {
    await request(ac.signal);
    return { outcome: "answered", ms: Date.now() - started };
  } catch (e) {
    return { outcome: "aborted", ms: Date.now() - started, error: String(e).slice(0, 200) };
  } finally {
    clearTimeout(timer);
  }
}

const out = {};
try {
  await client.connect(transport);
  out.protocol = client.getNegotiatedProtocolVersion?.() ?? transport.protocolVersion;
  // The gateway's first list waits 5 s at most for servers still starting: list again until
  // the slow prompt is there, within 20 s.
  let prompt;
  for (const started = Date.now(); !prompt && Date.now() - started < 20000; await new Promise((r) => setTimeout(r, 200))) {
    prompt = (await client.listPrompts()).prompts.find((p) => p.name.endsWith("slow"));
  }
  const resource = (await client.listResources()).resources.find((r) => r.uri.endsWith("://slow"));
  out.found = { prompt: prompt?.name, resource: resource?.uri };
  // The era the gateway speaks with the upstream, as it says.
  const servers = JSON.parse((await client.readResource({ uri: "switchboard://servers" })).contents[0].text);
  out.upstream = servers.servers.find((s) => s.name === "fx")?.status?.protocol_version;
  out.prompt = await abandon((signal) => client.getPrompt({ name: prompt.name, arguments: {} }, { signal }));
  out.resource = await abandon((signal) => client.readResource({ uri: resource.uri }, { signal }));
  out.completion = await abandon((signal) =>
    client.complete({ ref: { type: "ref/prompt", name: prompt.name }, argument: { name: "topic", value: "x" } }, { signal }),
  );
  // The session still answers after three cancellations.
  out.after = (await client.callTool({ name: "fx__add", arguments: { a: 1, b: 2 } })).structuredContent?.sum;
  if (mode === "http" && sdk !== "modern") {
    // The session ends (DELETE /mcp) with a tool call in flight.
    const pending = client.callTool({ name: "fx__slow", arguments: { ms: 500, steps: 40 } }).catch(() => "failed");
    await new Promise((r) => setTimeout(r, 700));
    await transport.terminateSession();
    out.deleted = true;
    pending.then(() => {});
  }
  await client.close();
  console.log(JSON.stringify(out));
  process.exit(0);
} catch (e) {
  console.error("cancel client failed:", e);
  console.log(JSON.stringify({ ...out, error: String(e) }));
  process.exit(1);
}
