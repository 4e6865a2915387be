// What the TypeScript client scripts share: the SDK a test installed, 1.x
// (`@modelcontextprotocol/sdk`, `sdk1`) or 2.x (`@modelcontextprotocol/client`, any other
// word), and the transport to `switchboard gateway`: `stdio <command> <args...>` or
// `http <url> <token>`.
import { pathToFileURL } from "node:url";
import path from "node:path";

/** The SDK's `Client`, its two transports, and (1.x) its `types` module. */
export async function loadSdk(sdk, sdkDir) {
  if (sdk === "sdk1") {
    const load = (p) => import(pathToFileURL(path.join(sdkDir, "node_modules/@modelcontextprotocol/sdk/dist/esm", p)).href);
    const { Client } = await load("client/index.js");
    const { StdioClientTransport } = await load("client/stdio.js");
    const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
    return { Client, StdioClientTransport, StreamableHTTPClientTransport, types: await load("types.js") };
  }
  const load = (p) => import(pathToFileURL(path.join(sdkDir, "node_modules/@modelcontextprotocol/client/dist", p)).href);
  const { Client, StreamableHTTPClientTransport } = await load("index.mjs");
  const { StdioClientTransport } = await load("stdio.mjs");
  return { Client, StdioClientTransport, StreamableHTTPClientTransport, types: null };
}

/** The transport the command line asks for (`mode` and the rest of the arguments). */
export function transportFor({ StdioClientTransport, StreamableHTTPClientTransport }, mode, rest) {
  if (mode === "stdio") {
    const [command, ...args] = rest;
    return new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
  }
  const [url, token] = rest;
  return new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
}
