// A model API mocked on loopback, for agents' command-line tools driven non-interactively:
// Anthropic's Messages API (`POST /v1/messages`, Claude Code), OpenAI's Responses API
// (`POST /v1/responses`, Codex), Chat Completions (`POST /v1/chat/completions`, Qwen Code) and
// Gemini's `generateContent` (`POST /v1beta/models/M:streamGenerateContent`, Gemini CLI),
// streamed as each streams, or whole when not asked to stream.
//
// Every request is recorded as one JSON line in the file named by argv[2]: when it came (ms
// since this process began listening), the path, every tool name it carries (its `tools`, and
// any name of the form mcp__… written in its system prompt or messages: agents that defer
// tools name them there), and the tool results it carries.
//
// The model it plays: a request that carries tools is a turn of the agent's loop. It calls, in
// order, one tool for each pattern in argv[3] (comma-separated: a tool whose name ends with the
// pattern; a tool the agent defers through its own search (Claude Code's ToolSearch) or its
// own caller (Qwen Code's tool_call) through that), one per turn, with the arguments of argv[4]
// (a JSON object: pattern → arguments),
// and once every pattern was called (or no tool matches the next one), it answers with text
// that quotes the results it was given. A request that carries no tools (a title, a summary)
// gets a short text.
//
// Prints `listening <port>` on stdout once it listens on 127.0.0.1 (an ephemeral port).
import http from "node:http";
import fs from "node:fs";

const [, , logFile, patternsArg = "", argsArg = "{}"] = process.argv;
const patterns = patternsArg.split(",").filter(Boolean);
const argsFor = JSON.parse(argsArg);
let began = 0;
let seq = 0;

function record(entry) {
  fs.appendFileSync(logFile, JSON.stringify({ at: Date.now() - began, ...entry }) + "\n");
}

/// Every string inside `v`, depth first.
function strings(v, out = []) {
  if (typeof v === "string") out.push(v);
  else if (Array.isArray(v)) v.forEach((x) => strings(x, out));
  else if (v && typeof v === "object") Object.values(v).forEach((x) => strings(x, out));
  return out;
}

/// Tool names a request carries: its tools' (nested under a namespace too), and mcp__ names
/// written anywhere in its text.
function toolNames(body) {
  const names = new Set();
  const walk = (tools) => {
    for (const t of tools || []) {
      const name = t.name || t.function?.name;
      if (name) names.add(name);
      if (Array.isArray(t.tools)) walk(t.tools);
      if (Array.isArray(t.functionDeclarations)) walk(t.functionDeclarations);
    }
  };
  walk(body.tools);
  const text = strings([body.system, body.messages, body.input, body.instructions, body.contents, body.systemInstruction]).join("\n");
  for (const m of text.matchAll(/mcp__[A-Za-z0-9_-]+/g)) names.add(m[0]);
  return [...names];
}

/// The tool results in a conversation, in order (Anthropic's `tool_result` blocks, OpenAI's
/// `function_call_output` items).
function results(body) {
  const out = [];
  for (const m of body.messages || []) {
    if (m.role === "tool") {
      out.push(typeof m.content === "string" ? m.content : strings(m.content).join(" "));
      continue;
    }
    if (!Array.isArray(m.content)) continue;
    for (const block of m.content) {
      if (block.type === "tool_result") out.push(strings(block.content).join(" "));
    }
  }
  for (const c of body.contents || []) {
    for (const part of c.parts || []) {
      if (part.functionResponse) out.push(strings(part.functionResponse.response).join(" "));
    }
  }
  for (const item of Array.isArray(body.input) ? body.input : []) {
    if (item.type === "function_call_output" || item.type === "custom_tool_call_output") {
      out.push(typeof item.output === "string" ? item.output : strings(item.output).join(" "));
    }
  }
  return out;
}

/// The tools a request offers, each with its name as the model calls it (Codex nests a
/// server's tools under a namespace: the call names the namespace and the tool).
function offered(body) {
  const out = [];
  for (const t of body.tools || []) {
    if (Array.isArray(t.functionDeclarations)) {
      for (const f of t.functionDeclarations) out.push({ name: f.name });
    } else if (Array.isArray(t.tools)) {
      for (const inner of t.tools) out.push({ name: inner.name, namespace: t.name });
    } else {
      const name = t.name || t.function?.name;
      if (name) out.push({ name });
    }
  }
  return out;
}

/// The names of the tools the model called so far in a conversation.
function called(body) {
  const out = [];
  for (const m of body.messages || []) {
    if (m.role !== "assistant") continue;
    for (const call of m.tool_calls || []) {
      // Qwen Code calls a deferred tool through its `tool_call`, naming it in the arguments.
      if (call.function?.name === "tool_call") {
        try {
          out.push(JSON.parse(call.function.arguments).name);
        } catch {
          out.push("tool_call");
        }
      } else {
        out.push(call.function?.name);
      }
    }
    if (!Array.isArray(m.content)) continue;
    for (const block of m.content) if (block.type === "tool_use") out.push(block.name);
  }
  for (const item of Array.isArray(body.input) ? body.input : []) {
    if (item.type === "function_call") out.push(`${item.namespace || ""}${item.name}`);
  }
  for (const c of body.contents || []) {
    if (c.role !== "model") continue;
    for (const part of c.parts || []) if (part.functionCall) out.push(part.functionCall.name);
  }
  return out;
}

/// What the model does next: a tool to call, or text. A tool the agent defers (named in its
/// prompt, its schema not sent: Claude Code's ToolSearch) is loaded first with the agent's
/// own search tool.
function decide(body) {
  const done = results(body);
  const tools = offered(body);
  if (tools.length === 0) return { text: "ok" };
  const made = called(body);
  const pattern = patterns.find((p) => !made.some((name) => name.endsWith(p)));
  if (pattern !== undefined) {
    const tool = tools.find((t) => t.name.endsWith(pattern) || `${t.namespace || ""}${t.name}`.endsWith(pattern));
    if (tool) return { call: tool, args: argsFor[pattern] || {} };
    const deferred = toolNames(body).find((name) => name.endsWith(pattern));
    // Qwen Code: a deferred tool is called through `tool_call` with its name and arguments.
    const through = tools.find((t) => t.name === "tool_call");
    if (deferred && through) return { call: through, args: { name: deferred, arguments: argsFor[pattern] || {} } };
    const search = tools.find((t) => t.name === "ToolSearch");
    const searched = made.filter((name) => name === "ToolSearch").length;
    if (deferred && search && searched <= patterns.length) {
      return { call: search, args: { query: `select:${deferred}`, max_results: 5 } };
    }
  }
  return { text: `done: ${done.map((r) => r.slice(0, 200)).join(" | ") || "no results"}` };
}

function sse(res, events) {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  for (const [event, data] of events) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  res.end();
}

function anthropic(body, res) {
  const next = decide(body);
  const id = `msg_${++seq}`;
  const usage = { input_tokens: 10, output_tokens: 5 };
  const block = next.call
    ? { type: "tool_use", id: `toolu_${seq}`, name: next.call.name, input: next.args }
    : { type: "text", text: next.text };
  const stop = next.call ? "tool_use" : "end_turn";
  const message = { id, type: "message", role: "assistant", model: body.model, content: [block], stop_reason: stop, stop_sequence: null, usage };
  if (!body.stream) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(message));
    return;
  }
  const start = next.call ? { ...block, input: {} } : { type: "text", text: "" };
  const delta = next.call
    ? { type: "input_json_delta", partial_json: JSON.stringify(next.args) }
    : { type: "text_delta", text: next.text };
  sse(res, [
    ["message_start", { type: "message_start", message: { ...message, content: [], stop_reason: null } }],
    ["content_block_start", { type: "content_block_start", index: 0, content_block: start }],
    ["content_block_delta", { type: "content_block_delta", index: 0, delta }],
    ["content_block_stop", { type: "content_block_stop", index: 0 }],
    ["message_delta", { type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } }],
    ["message_stop", { type: "message_stop" }],
  ]);
}

function openai(body, res) {
  const next = decide(body);
  const id = `resp_${++seq}`;
  const item = next.call
    ? {
        type: "function_call",
        id: `fc_${seq}`,
        call_id: `call_${seq}`,
        name: next.call.name,
        ...(next.call.namespace ? { namespace: next.call.namespace } : {}),
        arguments: JSON.stringify(next.args),
        status: "completed",
      }
    : { type: "message", id: `m_${seq}`, role: "assistant", status: "completed", content: [{ type: "output_text", text: next.text, annotations: [] }] };
  const usage = { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 15 };
  const response = { id, object: "response", status: "completed", model: body.model, output: [item], usage };
  if (body.stream === false) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(response));
    return;
  }
  sse(res, [
    ["response.created", { type: "response.created", response: { ...response, status: "in_progress", output: [] } }],
    ["response.output_item.added", { type: "response.output_item.added", output_index: 0, item }],
    ["response.output_item.done", { type: "response.output_item.done", output_index: 0, item }],
    ["response.completed", { type: "response.completed", response }],
  ]);
}

function chat(body, res) {
  const next = decide(body);
  const id = `chatcmpl_${++seq}`;
  const message = next.call
    ? { role: "assistant", content: null, tool_calls: [{ index: 0, id: `call_${seq}`, type: "function", function: { name: next.call.name, arguments: JSON.stringify(next.args) } }] }
    : { role: "assistant", content: next.text };
  const finish = next.call ? "tool_calls" : "stop";
  const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
  if (!body.stream) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ id, object: "chat.completion", created: 0, model: body.model, choices: [{ index: 0, message, finish_reason: finish }], usage }));
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const chunk = (delta, finish_reason, extra = {}) =>
    res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 0, model: body.model, choices: [{ index: 0, delta, finish_reason }], ...extra })}\n\n`);
  chunk(message, null);
  chunk({}, finish, { usage });
  res.write("data: [DONE]\n\n");
  res.end();
}

function gemini(body, res, stream) {
  const next = decide(body);
  const part = next.call ? { functionCall: { name: next.call.name, args: next.args } } : { text: next.text };
  const answer = {
    candidates: [{ content: { role: "model", parts: [part] }, finishReason: "STOP", index: 0 }],
    usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
    modelVersion: "mock-model",
  };
  if (!stream) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(answer));
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  res.write(`data: ${JSON.stringify(answer)}\n\n`);
  res.end();
}

const server = http.createServer((req, res) => {
  let raw = "";
  req.on("data", (c) => (raw += c));
  req.on("end", () => {
    let body = {};
    try {
      body = raw ? JSON.parse(raw) : {};
    } catch {
      body = {};
    }
    const path = req.url.split("?")[0];
    const main =
      path.endsWith("/messages") || path.endsWith("/responses") || path.endsWith("/chat/completions") || path.includes(":streamGenerateContent") || path.endsWith(":generateContent");
    record({ path, method: req.method, tools: main ? toolNames(body) : [], results: main ? results(body) : [] });
    // Each request whole, for a person reading what an agent sent.
    if (process.env.MODEL_API_BODIES) fs.appendFileSync(process.env.MODEL_API_BODIES, raw + "\n");
    if (path.endsWith("/messages/count_tokens")) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ input_tokens: 10 }));
    } else if (path.endsWith("/messages") && req.method === "POST") {
      anthropic(body, res);
    } else if (path.endsWith("/responses") && req.method === "POST") {
      openai(body, res);
    } else if (path.endsWith("/chat/completions") && req.method === "POST") {
      chat(body, res);
    } else if (path.endsWith(":streamGenerateContent") && req.method === "POST") {
      gemini(body, res, true);
    } else if (path.endsWith(":generateContent") && req.method === "POST") {
      gemini(body, res, false);
    } else if (path.endsWith(":countTokens")) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ totalTokens: 10 }));
    } else if (path.endsWith("/models")) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ object: "list", data: [{ id: "mock-model", object: "model", created: 0, owned_by: "mock" }], models: [] }));
    } else {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: `no ${path} here` } }));
    }
  });
});

server.listen(0, "127.0.0.1", () => {
  began = Date.now();
  console.log(`listening ${server.address().port}`);
});
