// Tool names as two agents make them, by their own code: each one's `DiscoveredMCPTool`, the
// class that turns an MCP server's tool into the agent's tool (Gemini CLI's and Qwen Code's
// npm bundles). Reads `{"entry": NAME, "tools": [...]}` on stdin (the agent's name for the
// server, and the tools' names as the server lists them); writes `{"gemini": [...],
// "qwen": [...]}`, the names their models are given.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const root = process.argv[2];

// The module under `dir` that exports the class.
async function discoveredTool(dir) {
  for (const file of readdirSync(dir)) {
    if (!file.endsWith(".js")) continue;
    const path = join(dir, file);
    const text = readFileSync(path, "utf8");
    if (text.includes("var DiscoveredMCPTool = class") && /^export \{[^}]*\bDiscoveredMCPTool,/m.test(text)) {
      return (await import(pathToFileURL(path))).DiscoveredMCPTool;
    }
  }
  throw new Error(`no DiscoveredMCPTool exported under ${dir}`);
}

const input = JSON.parse(readFileSync(0, "utf8"));
const schema = { type: "object", properties: {} };
const made = async (dir) => {
  const Tool = await discoveredTool(join(root, dir));
  // (mcpTool, serverName, serverToolName, description, parameterSchema, ...): the rest are
  // for calls, not names.
  return input.tools.map((t) => new Tool({}, input.entry, t, "", schema).name);
};
const out = {
  gemini: await made("@google/gemini-cli/bundle"),
  qwen: await made("@qwen-code/qwen-code/chunks"),
};
process.stdout.write(JSON.stringify(out));
process.exit(0);
