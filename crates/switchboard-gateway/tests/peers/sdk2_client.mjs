// The TypeScript SDK 2.x client (@modelcontextprotocol/client) through `switchboard gateway`,
// in either era: `legacy` (initialize, 2025-11-25) or `modern` (pinned 2026-07-28:
// server/discover, per-request _meta, input_required rounds, subscriptions/listen).
// Prints one JSON line of what it saw; exits non-zero on error.
//
//   node sdk2_client.mjs <folder> <legacy|modern> stdio <switchboard> <args...>
//   node sdk2_client.mjs <folder> <legacy|modern> http <url> <token>
import { loadSdk, transportFor } from "./sdk.mjs";

const [dir, era, mode, ...rest] = process.argv.slice(2);
const classes = await loadSdk("sdk2", dir);
const { Client } = classes;

const seen = { logs: [], progress: [], toolsChanged: 0 };
const options = {
  capabilities: { elicitation: { form: {} } },
  listChanged: { tools: { onChanged: () => seen.toolsChanged++ } },
};
if (era === "modern") options.versionNegotiation = { mode: { pin: "2026-07-28" } };
const client = new Client({ name: "sdk2-test", version: "2.0.0" }, options);
client.setNotificationHandler("notifications/message", (n) => seen.logs.push(n.params));
client.setRequestHandler("elicitation/create", async () => ({ action: "accept", content: { name: "Ada" } }));

const transport = transportFor(classes, mode, rest);
const out = { era };
try {
  await client.connect(transport);
  // What came on the wire, in order: progress steps, then the `slow` call's result. The SDK
  // runs notification handlers in a microtask but a response at once, so a last step read in
  // the same chunk as the result never reaches `onprogress` (the SDK's race: a server in front
  // of it directly loses it the same way); the wire order is what the gateway answers for.
  seen.wire = [];
  let watching = false;
  const deliver = transport.onmessage;
  transport.onmessage = (message, ...rest) => {
    if (watching && message.method === "notifications/progress") seen.wire.push(message.params.progress);
    else if (watching && message.method === undefined && ("result" in message || "error" in message)) {
      seen.wire.push("result");
      watching = false;
    }
    deliver?.(message, ...rest);
  };
  out.protocol = client.getNegotiatedProtocolVersion();
  out.server = client.getServerVersion()?.name;
  // The gateway's first list waits 5 s at most for servers still starting (a loaded machine
  // can start the fixture later): list again until its tools are there, within 20 s.
  const wanted = ["fx__add", "fx__slow", "fx__ask"];
  let tools = [];
  for (const started = Date.now(); Date.now() - started < 20000; await new Promise((r) => setTimeout(r, 200))) {
    tools = (await client.listTools()).tools.map((t) => t.name);
    if (wanted.every((n) => tools.includes(n))) break;
  }
  out.tools = tools.length;
  out.has = wanted.every((n) => tools.includes(n));
  const sum = await client.callTool({ name: "fx__add", arguments: { a: 2, b: 3 } });
  out.sum = sum.structuredContent?.sum;
  watching = true;
  const slow = await client.callTool(
    { name: "fx__slow", arguments: { ms: 20, steps: 3 } },
    { onprogress: (p) => seen.progress.push(p.progress) },
  );
  out.slow = slow.content?.[0]?.text;
  try {
    const asked = await client.callTool({ name: "fx__ask", arguments: {} });
    out.ask = asked.content?.[0]?.text;
  } catch (e) {
    out.ask = `error: ${e}`;
  }
  const ac = new AbortController();
  const pending = client.callTool({ name: "fx__slow", arguments: { ms: 500, steps: 20 } }, { signal: ac.signal });
  setTimeout(() => ac.abort("test"), 700);
  try {
    await pending;
    out.cancelled = false;
  } catch {
    out.cancelled = true;
  }
  const before = seen.toolsChanged;
  await client.callTool({ name: "fx__mutate", arguments: {} });
  const deadline = Date.now() + 10000;
  while (seen.toolsChanged === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  out.added = (await client.listTools()).tools.some((t) => t.name === "fx__added_0");
  out.seen = seen;
  await client.close();
  console.log(JSON.stringify(out));
} catch (e) {
  console.error("sdk2 client failed:", e);
  console.log(JSON.stringify({ ...out, error: String(e), seen }));
  process.exit(1);
}
