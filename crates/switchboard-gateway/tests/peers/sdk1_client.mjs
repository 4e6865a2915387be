// The TypeScript SDK's client (@modelcontextprotocol/sdk 1.x) through `switchboard gateway`,
// over stdio or Streamable HTTP. Prints one JSON line of what it saw; exits non-zero on error.
//
//   node sdk1_client.mjs <sdk folder> stdio <switchboard> <args...>
//   node sdk1_client.mjs <sdk folder> http <url> <token>
import { loadSdk, transportFor } from "./sdk.mjs";

const [sdkDir, mode, ...rest] = process.argv.slice(2);
const classes = await loadSdk("sdk1", sdkDir);
const { Client, types } = classes;

const seen = { logs: [], progress: [], toolsChanged: 0 };
const client = new Client({ name: "sdk1-test", version: "1.0.0" }, { capabilities: { elicitation: {} } });
client.setNotificationHandler(types.LoggingMessageNotificationSchema, (n) => seen.logs.push(n.params));
client.setNotificationHandler(types.ToolListChangedNotificationSchema, () => seen.toolsChanged++);
client.setRequestHandler(types.ElicitRequestSchema, async () => ({ action: "accept", content: { name: "Ada" } }));

const transport = transportFor(classes, mode, rest);
const out = {};
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
  out.server = client.getServerVersion()?.name;
  await client.setLoggingLevel("debug");
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
    undefined,
    { onprogress: (p) => seen.progress.push(p.progress) },
  );
  out.slow = slow.content?.[0]?.text;
  const asked = await client.callTool({ name: "fx__ask", arguments: {} });
  out.ask = asked.content?.[0]?.text;
  // Cancel mid-call: the upstream must see notifications/cancelled.
  const ac = new AbortController();
  const pending = client.callTool({ name: "fx__slow", arguments: { ms: 500, steps: 20 } }, undefined, { signal: ac.signal });
  setTimeout(() => ac.abort("test"), 700);
  try {
    await pending;
    out.cancelled = false;
  } catch {
    out.cancelled = true;
  }
  if (tools.includes("ev__echo")) {
    await client.callTool({ name: "ev__toggle-simulated-logging", arguments: {} });
    await new Promise((r) => setTimeout(r, 2500));
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
  console.error("sdk1 client failed:", e);
  console.log(JSON.stringify({ ...out, error: String(e), seen }));
  process.exit(1);
}
