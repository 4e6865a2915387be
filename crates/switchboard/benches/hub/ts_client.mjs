// The TypeScript SDK's client (@modelcontextprotocol/sdk 1.x) as a peer row of
// `cargo bench -p switchboard --bench hub`: the same echo server, the same measures, one round.
// Prints one JSON line: {seq, p50, p99, conc, mbs, hwm_kb}.
//
//   node ts_client.mjs <sdk folder> <window ms> <in flight> <big bytes> <command> <args...>
import { pathToFileURL } from "node:url";
import { readFileSync } from "node:fs";
import path from "node:path";

const [sdkDir, windowMs, inFlight, bigBytes, command, ...args] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(sdkDir, "node_modules/@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");

const client = new Client({ name: "bench", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command, args, stderr: "inherit" }));
const window = Number(windowMs);
const now = () => performance.now();
const echo = (i) => client.callTool({ name: "echo", arguments: { text: `hello ${i}` } });

// Warm up (the JIT), as the Rust clients are.
for (let start = now(); now() - start < 300; ) await echo(0);

let lat = [];
let start = now();
while (now() - start < window) {
  const t = now();
  await echo(lat.length);
  lat.push((now() - t) * 1000);
}
const seq = lat.length / ((now() - start) / 1000);
lat.sort((a, b) => a - b);
const at = (q) => lat[Math.min(Math.floor(lat.length * q), lat.length - 1)];

let done = 0;
start = now();
while (now() - start < window) {
  await Promise.all(Array.from({ length: Number(inFlight) }, (_, i) => echo(done + i)));
  done += Number(inFlight);
}
const conc = done / ((now() - start) / 1000);

let n = 0;
start = now();
while (now() - start < window) {
  const r = await client.callTool({ name: "big", arguments: { bytes: Number(bigBytes) } });
  if (!r.content.length) throw new Error("an empty result");
  n++;
}
const mbs = (n * Number(bigBytes)) / 1e6 / ((now() - start) / 1000);
const hwm = /VmHWM:\s+(\d+)/.exec(readFileSync("/proc/self/status", "utf8"));
console.log(JSON.stringify({ seq, p50: at(0.5), p99: at(0.99), conc, mbs, hwm_kb: hwm ? Number(hwm[1]) : 0 }));
await client.close();
