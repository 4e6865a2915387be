// The switchboard dashboard: every server with its live status (from /api/events, no
// polling), its tools with their schemas, a call form checked against the schema, results
// as the model sees them, and the server actions. Everything the servers send is shown as
// text (textContent), never parsed as HTML.

import { h } from "./dom.js";
import { questionCard } from "./questions.js";
import { skeleton, validate } from "./schema.js";

const state = {
  servers: new Map(), // name -> server view from /api/servers
  details: new Map(), // name -> {tools, stderr_tail}
  selected: null,
  filter: "",
  authNeeded: new Map(), // name -> reason
  calls: new Map(), // tool name -> AbortController of the call in flight
  drafts: new Map(), // tool name -> {args, timeout} typed in its call form
  results: new Map(), // tool name -> the element showing its last result
  questions: new Map(), // question id -> its form (a server asks the person)
};

// ---------------------------------------------------------------- helpers

const $ = (id) => document.getElementById(id);

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function api(method, path, body) {
  const init = { method, headers: { accept: "application/json" }, credentials: "same-origin" };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (response.status === 401) {
    showLogin();
    throw new ApiError(401, "unauthorized", "not logged in");
  }
  if (response.status === 204) return null;
  const text = await response.text();
  let data;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    throw new ApiError(response.status, "bad_response", text.slice(0, 200));
  }
  if (!response.ok) {
    const e = data && data.error ? data.error : { code: "http_" + response.status, message: text };
    throw new ApiError(response.status, e.code, e.message);
  }
  return data;
}

const enc = encodeURIComponent;

function announce(message) {
  $("announce").textContent = message;
}

function activity(kind, text) {
  const list = $("activity");
  $("activity-panel").hidden = false;
  const time = new Date().toLocaleTimeString();
  list.prepend(h("li", { class: "activity-" + kind }, h("time", { text: time }), " ", text));
  while (list.children.length > 200) list.lastElementChild.remove();
}

function showLogin() {
  $("login").hidden = false;
  $("app").hidden = true;
  $("live").dataset.state = "offline";
  $("live").textContent = "not logged in";
}

// ---------------------------------------------------------------- status words

const STATE_LABEL = {
  connected: "connected",
  connecting: "connecting",
  failed: "failed",
  disconnected: "disconnected",
  stopped: "stopped",
  disabled: "disabled",
  untrusted: "untrusted",
};

function stateOf(server) {
  const s = server.status || {};
  if (s.state === "failed" && (s.kind === "needs_auth" || s.kind === "needs_client_registration")) return "needs_auth";
  return s.state || "unknown";
}

function stateLabel(server) {
  const st = stateOf(server);
  if (st === "needs_auth") return server.status.kind === "needs_client_registration" ? "needs client" : "needs login";
  return STATE_LABEL[st] || st;
}

function toolCount(server) {
  const c = server.status && server.status.counts;
  return c ? c.tools : null;
}

function lastError(server) {
  const s = server.status || {};
  if (s.state === "failed") return s.message;
  if (s.state === "disconnected") {
    if (s.exit_code !== undefined && s.exit_code !== null) return `exited with code ${s.exit_code}`;
    if (s.signal !== undefined && s.signal !== null) return `killed by signal ${s.signal}`;
    return "disconnected";
  }
  return null;
}

// ---------------------------------------------------------------- server list

function matchesFilter(server) {
  const f = state.filter;
  if (!f) return true;
  if (server.name.toLowerCase().includes(f)) return true;
  const detail = state.details.get(server.name);
  return !!detail && detail.tools.some((t) => t.name.toLowerCase().includes(f) || (t.description || "").toLowerCase().includes(f));
}

function renderSummary() {
  const all = [...state.servers.values()];
  const connected = all.filter((s) => stateOf(s) === "connected").length;
  const tools = all.reduce((n, s) => n + (toolCount(s) || 0), 0);
  const problems = all.filter((s) => ["failed", "disconnected", "needs_auth"].includes(stateOf(s))).length;
  let text = `${connected} of ${all.length} servers connected · ${tools} tools`;
  if (problems) text += ` · ${problems} need attention`;
  $("summary").textContent = text;
}

function renderList() {
  const list = $("server-list");
  const focused = document.activeElement && document.activeElement.closest("#server-list") ? document.activeElement.dataset.name : null;
  list.replaceChildren();
  const shown = [...state.servers.values()].filter(matchesFilter);
  for (const server of shown) {
    const st = stateOf(server);
    const count = toolCount(server);
    const selected = server.name === state.selected;
    const item = h(
      "li",
      {
        role: "option",
        class: "server-item",
        "aria-selected": selected ? "true" : "false",
        tabindex: selected || (!state.selected && server === shown[0]) ? "0" : "-1",
        dataset: { name: server.name, state: st },
        onclick: () => select(server.name),
      },
      h("span", { class: "dot", "aria-hidden": "true" }),
      h("span", { class: "server-name", text: server.name }),
      h("span", { class: "badge state-" + st, text: stateLabel(server) }),
      h("span", { class: "server-meta", text: `${server.transport} · ${server.scope}` + (count !== null ? ` · ${count} tools` : "") }),
    );
    list.append(item);
    if (focused === server.name) item.focus();
  }
  $("no-servers").hidden = state.servers.size !== 0;
  renderSummary();
}

function moveSelection(delta) {
  const items = [...$("server-list").querySelectorAll(".server-item")];
  if (items.length === 0) return;
  const focused = document.activeElement && document.activeElement.closest(".server-item");
  const from = focused ? focused.dataset.name : state.selected;
  const at = items.findIndex((i) => i.dataset.name === from);
  const next = items[Math.max(0, Math.min(items.length - 1, at + delta))];
  select(next.dataset.name, { focusList: true });
}

// ---------------------------------------------------------------- server detail

async function loadDetail(name) {
  try {
    const detail = await api("GET", `/api/servers/${enc(name)}`);
    const counts = (detail.status && detail.status.counts) || {};
    const [res, prompts] = await Promise.all([
      counts.resources || counts.resource_templates ? api("GET", `/api/resources?server=${enc(name)}`) : null,
      counts.prompts ? api("GET", `/api/prompts?server=${enc(name)}`) : null,
    ]);
    state.details.set(name, {
      tools: detail.tools || [],
      stderr_tail: detail.stderr_tail || [],
      resources: res ? res.resources : [],
      templates: res ? res.resource_templates : [],
      prompts: prompts ? prompts.prompts : [],
    });
    state.servers.set(name, stripDetail(detail));
  } catch (e) {
    if (e.status === 404) {
      state.servers.delete(name);
      state.details.delete(name);
    }
  }
}

function stripDetail(detail) {
  const { tools, stderr_tail, ...server } = detail;
  return server;
}

async function select(name, { focusList = false } = {}) {
  state.selected = name;
  history.replaceState(null, "", "#" + enc(name));
  renderList();
  if (focusList) {
    const item = $("server-list").querySelector(`[data-name="${CSS.escape(name)}"]`);
    if (item) item.focus();
  }
  renderDetail();
  await loadDetail(name);
  if (state.selected === name) {
    renderList();
    renderDetail();
  }
}

function fact(term, value, attrs = {}) {
  if (value === null || value === undefined || value === "") return [];
  return [h("dt", { text: term }), h("dd", attrs, value)];
}

function renderDetail() {
  const pane = $("detail");
  const name = state.selected;
  const server = name && state.servers.get(name);
  if (!server) {
    pane.replaceChildren(h("p", { class: "empty", text: state.servers.size ? "Choose a server." : "" }));
    return;
  }
  // Which tools are open survives re-renders of the same server (typed arguments and results
  // are kept per tool in `state`, across servers too).
  const openTools =
    pane.dataset.server === name ? new Set([...pane.querySelectorAll("details.tool[open]")].map((d) => d.dataset.tool)) : new Set();

  const st = stateOf(server);
  const status = server.status || {};
  const detail = state.details.get(name);
  const err = lastError(server);
  const auth = state.authNeeded.get(name);

  const actions = h("div", { class: "actions", role: "group", "aria-label": "Server actions" });
  const button = (label, handler, attrs = {}) => h("button", { type: "button", onclick: handler, ...attrs, text: label });
  if (st === "untrusted") actions.append(button("Trust and start", () => act(name, "trust"), { class: "primary" }));
  if (st === "needs_auth") actions.append(button("Authenticate", () => authenticate(name), { class: "primary" }));
  if (["stopped", "failed", "disconnected", "needs_auth"].includes(st)) actions.append(button("Connect", () => act(name, "connect")));
  if (st === "connected") actions.append(button("Revalidate", () => act(name, "revalidate")));
  if (["connected", "connecting", "failed", "disconnected", "needs_auth"].includes(st)) {
    actions.append(button("Disconnect", () => act(name, "disconnect")));
  }
  if (server.transport !== "stdio" && st !== "needs_auth") actions.append(button("Log in again", () => authenticate(name)));

  const stderr = (detail && detail.stderr_tail && detail.stderr_tail.length ? detail.stderr_tail : status.stderr_tail) || [];
  const facts = h(
    "dl",
    { class: "facts" },
    fact("State", h("span", { class: "badge state-" + st, text: stateLabel(server) })),
    fact("Scope", server.scope),
    fact("Source", server.source, { class: "mono" }),
    fact("Transport", server.transport),
    fact("Target", server.target, { class: "mono" }),
    fact("Server", status.server_name ? `${status.server_name} ${status.server_version || ""}` : null),
    fact("Protocol", status.protocol_version),
    fact("Tools", status.counts ? String(status.counts.tools) : null),
    fact("Resources", status.counts ? String(status.counts.resources + status.counts.resource_templates) : null),
    fact("Prompts", status.counts ? String(status.counts.prompts) : null),
    fact("Last error", err, { class: "error-text" }),
    fact("Login", auth || null, { class: "error-text" }),
  );

  const children = [
    h("div", { class: "detail-head" }, h("h2", { text: name }), actions),
    h("p", { class: "status-line", role: "status", "data-testid": "status-line", text: summaryOf(server) }),
    facts,
  ];
  if (status.instructions) children.push(h("details", { class: "instructions" }, h("summary", { text: "Instructions for the model" }), h("pre", { text: status.instructions })));
  if (stderr.length) {
    children.push(h("section", { class: "stderr" }, h("h3", { text: "Last lines on stderr" }), h("pre", { class: "log", text: stderr.join("\n") })));
  }
  children.push(renderTools(name, detail, openTools));
  if (detail && (detail.resources.length || detail.templates.length)) children.push(renderResources(name, detail, openTools));
  if (detail && detail.prompts.length) children.push(renderPrompts(name, detail, openTools));
  pane.dataset.server = name;
  pane.replaceChildren(...children);
}

function summaryOf(server) {
  const s = server.status || {};
  switch (s.state) {
    case "connected":
      return `Connected to ${s.server_name} ${s.server_version} over ${server.transport} (protocol ${s.protocol_version}).`;
    case "failed":
      return `Failed: ${s.message}`;
    case "disconnected":
      return `Disconnected (${lastError(server)}); the next call reconnects.`;
    case "stopped":
      return "Disconnected on request.";
    case "untrusted":
      return "From a project file, not trusted yet: it does not start until you trust it.";
    case "disabled":
      return "Disabled in its config file.";
    case "connecting":
      return "Connecting…";
    default:
      return s.state || "";
  }
}

function renderTools(name, detail, openTools) {
  const section = h("section", { class: "tools", "aria-label": "Tools" });
  const tools = detail ? detail.tools : [];
  section.append(h("h3", { text: `Tools (${tools.length})` }));
  if (!detail) {
    section.append(h("p", { class: "empty", text: "Loading…" }));
    return section;
  }
  if (tools.length === 0) {
    section.append(h("p", { class: "empty", text: stateOf(state.servers.get(name)) === "connected" ? "This server offers no tools." : "Connect the server to see its tools." }));
    return section;
  }
  const f = state.filter;
  for (const tool of tools) {
    if (f && !name.toLowerCase().includes(f) && !tool.name.toLowerCase().includes(f) && !(tool.description || "").toLowerCase().includes(f)) continue;
    const shown = state.results.get(tool.name);
    const open = openTools.has(tool.name) || state.calls.has(tool.name) || (!!shown && shown.childElementCount > 0);
    const details = h(
      "details",
      { class: "tool", dataset: { tool: tool.name }, open },
      h("summary", {}, h("span", { class: "tool-name", text: tool.title || tool.tool }), h("span", { class: "tool-desc", text: firstLine(tool.description) })),
      tool.description ? h("p", { class: "tool-full", text: tool.description }) : null,
      h("p", { class: "mono small" }, "model-visible name: ", h("code", { text: tool.name })),
      h("details", { class: "schema" }, h("summary", { text: "Input schema" }), h("pre", { text: JSON.stringify(tool.input_schema, null, 2) })),
      callForm(tool, state.drafts.get(tool.name)),
      outputFor(tool.name),
    );
    section.append(details);
  }
  return section;
}

function firstLine(text) {
  if (!text) return "";
  const line = text.split("\n")[0];
  return line.length > 120 ? line.slice(0, 117) + "…" : line;
}

// ---------------------------------------------------------------- resources and prompts

/** A `details` block kept open across re-renders, for `key`, with an output area. */
function block(key, openTools, summary, ...body) {
  const shown = state.results.get(key);
  const open = openTools.has(key) || (!!shown && shown.childElementCount > 0);
  return h("details", { class: "tool", dataset: { tool: key }, open }, h("summary", {}, ...summary), ...body, outputFor(key));
}

function renderResources(name, detail, openTools) {
  const section = h("section", { class: "tools", "aria-label": "Resources" });
  section.append(h("h3", { text: `Resources (${detail.resources.length + detail.templates.length})` }));
  for (const { resource } of detail.resources) {
    const key = `resource:${name}:${resource.uri}`;
    section.append(
      block(
        key,
        openTools,
        [h("span", { class: "tool-name", text: resource.title || resource.name || resource.uri }), h("span", { class: "tool-desc", text: resource.uri })],
        resource.description ? h("p", { class: "tool-full", text: resource.description }) : null,
        resource.mimeType ? h("p", { class: "small", text: resource.mimeType }) : null,
        h("button", { type: "button", text: "Read", onclick: () => readResource(name, resource.uri, key) }),
      ),
    );
  }
  for (const { template } of detail.templates) {
    const key = `template:${name}:${template.uriTemplate}`;
    const draft = state.drafts.get(key);
    const input = h("input", { type: "text", class: "mono wide", "aria-label": `URI for ${template.uriTemplate}`, spellcheck: "false" });
    input.value = draft ? draft.args : template.uriTemplate;
    input.addEventListener("input", () => state.drafts.set(key, { args: input.value }));
    input.addEventListener("keydown", (e) => e.key === "Enter" && readResource(name, input.value, key));
    section.append(
      block(
        key,
        openTools,
        [h("span", { class: "tool-name", text: template.title || template.name }), h("span", { class: "tool-desc", text: template.uriTemplate })],
        template.description ? h("p", { class: "tool-full", text: template.description }) : null,
        h("div", { class: "call-row" }, input, h("button", { type: "button", text: "Read", onclick: () => readResource(name, input.value, key) })),
      ),
    );
  }
  return section;
}

async function readResource(server, uri, key) {
  const out = outputFor(key);
  out.replaceChildren(h("p", { class: "progress-text", text: "reading…" }));
  try {
    const result = await api("GET", `/api/resources/read?server=${enc(server)}&uri=${enc(uri)}`);
    const parts = (result.contents || []).map((c) => {
      if (typeof c.text === "string") return h("pre", { class: "block block-text", text: c.text });
      if (typeof c.blob === "string" && /^image\//.test(c.mimeType || "")) {
        return h("figure", { class: "block block-image" }, h("img", { src: `data:${c.mimeType};base64,${c.blob}`, alt: c.uri }));
      }
      return h("p", { class: "small", text: `${Math.floor(((c.blob || "").length * 3) / 4)} bytes of ${c.mimeType || "binary"}` });
    });
    out.replaceChildren(h("div", { class: "result", "data-testid": "result" }, h("p", { class: "result-head" }, h("strong", { text: uri })), ...parts));
  } catch (e) {
    if (e.status !== 401) out.replaceChildren(h("div", { class: "result result-error", role: "alert" }, `Read failed (${e.code}): ${e.message}`));
  }
}

function renderPrompts(name, detail, openTools) {
  const section = h("section", { class: "tools", "aria-label": "Prompts" });
  section.append(h("h3", { text: `Prompts (${detail.prompts.length})` }));
  for (const { prompt } of detail.prompts) {
    const key = `prompt:${name}:${prompt.name}`;
    const draft = state.drafts.get(key) || { args: {} };
    const inputs = (prompt.arguments || []).map((a) => {
      const input = h("input", { type: "text", name: a.name, required: a.required ? true : null });
      input.value = draft.args[a.name] || "";
      input.addEventListener("input", () => {
        draft.args[a.name] = input.value;
        state.drafts.set(key, draft);
      });
      return h("label", { class: "arg" }, h("span", { text: a.name + (a.required ? " *" : "") }), input, a.description ? h("span", { class: "small", text: a.description }) : null);
    });
    const form = h("form", { class: "call", novalidate: true }, ...inputs, h("div", { class: "call-row" }, h("button", { type: "submit", class: "primary", text: "Get" })));
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      getPrompt(name, prompt, form, key);
    });
    section.append(
      block(key, openTools, [h("span", { class: "tool-name", text: prompt.title || prompt.name }), h("span", { class: "tool-desc", text: firstLine(prompt.description) })], form),
    );
  }
  return section;
}

async function getPrompt(server, prompt, form, key) {
  const out = outputFor(key);
  const args = {};
  const missing = [];
  for (const a of prompt.arguments || []) {
    const value = form.elements[a.name].value;
    if (value !== "") args[a.name] = value;
    else if (a.required) missing.push(a.name);
  }
  if (missing.length) {
    out.replaceChildren(h("div", { class: "result result-error", role: "alert" }, `Required: ${missing.join(", ")}`));
    return;
  }
  try {
    const result = await api("POST", `/api/prompts/${enc(server)}/${enc(prompt.name)}`, { arguments: args });
    const messages = (result.messages || []).map((m) => {
      const c = m.content || {};
      const body = c.type === "text" ? c.text : JSON.stringify(c, null, 2);
      return h("div", { class: "message" }, h("strong", { text: m.role }), h("pre", { class: "block block-text", text: body }));
    });
    out.replaceChildren(h("div", { class: "result", "data-testid": "result" }, result.description ? h("p", { class: "result-head", text: result.description }) : null, ...messages));
  } catch (e) {
    if (e.status !== 401) out.replaceChildren(h("div", { class: "result result-error", role: "alert" }, `Failed (${e.code}): ${e.message}`));
  }
}

// ---------------------------------------------------------------- calling a tool

function callForm(tool, draft) {
  const id = "args-" + tool.name.replace(/[^A-Za-z0-9_-]/g, "_");
  const initial = draft ? draft.args : JSON.stringify(skeleton(tool.input_schema) ?? {}, null, 2);
  const textarea = h("textarea", { id, name: "arguments", rows: "6", spellcheck: "false", class: "mono", "aria-describedby": id + "-help " + id + "-errors" });
  textarea.value = initial;
  const timeout = h("input", { name: "timeout", type: "number", min: "1", step: "1", placeholder: "server default", inputmode: "numeric" });
  if (draft) timeout.value = draft.timeout;
  const errors = h("ul", { id: id + "-errors", class: "errors", role: "alert" });
  const form = h(
    "form",
    { class: "call", dataset: { tool: tool.name }, novalidate: true },
    h("label", { for: id, text: "Arguments (JSON)" }),
    textarea,
    h("p", { id: id + "-help", class: "help", text: "Checked against the input schema before sending. Ctrl+Enter calls." }),
    errors,
    h(
      "div",
      { class: "call-row" },
      h("label", { class: "inline" }, "Timeout (ms) ", timeout),
      h("button", { type: "submit", class: "primary", text: "Call" }),
      h("button", { type: "button", class: "cancel", hidden: true, text: "Cancel", onclick: () => cancelCall(tool.name) }),
    ),
  );
  if (state.calls.has(tool.name)) {
    form.querySelector("button[type=submit]").disabled = true;
    form.querySelector("button.cancel").hidden = false;
  }
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    call(tool, form);
  });
  const keep = () => state.drafts.set(tool.name, { args: textarea.value, timeout: timeout.value });
  textarea.addEventListener("input", keep);
  timeout.addEventListener("input", keep);
  textarea.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
  return form;
}

function checkArguments(tool, text) {
  let args;
  try {
    args = text.trim() === "" ? {} : JSON.parse(text);
  } catch (e) {
    return { errors: [{ path: "", message: "not JSON: " + e.message }] };
  }
  if (args === null || typeof args !== "object" || Array.isArray(args)) {
    return { errors: [{ path: "", message: "the arguments must be a JSON object" }] };
  }
  return { args, errors: validate(tool.input_schema || {}, args) };
}

/** The element showing a tool's last result (kept while other servers are shown). */
function outputFor(toolName) {
  let out = state.results.get(toolName);
  if (!out) {
    out = h("div", { class: "call-output", dataset: { tool: toolName }, "aria-live": "polite" });
    state.results.set(toolName, out);
  }
  return out;
}

async function call(tool, form) {
  const errorList = form.querySelector(".errors");
  errorList.replaceChildren();
  const { args, errors } = checkArguments(tool, form.elements.arguments.value);
  if (errors.length) {
    for (const e of errors) errorList.append(h("li", {}, h("code", { text: e.path || "arguments" }), " " + e.message));
    form.elements.arguments.setAttribute("aria-invalid", "true");
    form.elements.arguments.focus();
    return;
  }
  form.elements.arguments.removeAttribute("aria-invalid");
  const body = { arguments: args };
  const timeout = parseInt(form.elements.timeout.value, 10);
  if (timeout > 0) body.timeout_ms = timeout;

  const controller = new AbortController();
  state.calls.set(tool.name, controller);
  setCalling(tool.name, true);
  const out = outputFor(tool.name);
  const progress = h("progress", { max: "1", "aria-label": "Progress" });
  progress.removeAttribute("value");
  const progressText = h("span", { class: "progress-text", text: "calling…" });
  out.replaceChildren(h("div", { class: "progress" }, progress, progressText));
  const started = performance.now();
  try {
    const response = await fetch(`/api/tools/${enc(tool.name)}/call`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify(body),
      signal: controller.signal,
      credentials: "same-origin",
    });
    if (response.status === 401) return showLogin();
    if (!response.ok) {
      const data = await response.json().catch(() => ({}));
      const e = data.error || { message: `HTTP ${response.status}` };
      return showCallError(tool.name, `${e.message}`, e.code);
    }
    for await (const event of sseEvents(response.body)) {
      if (event.type === "progress") {
        const p = JSON.parse(event.data);
        if (typeof p.total === "number" && p.total > 0) {
          progress.max = p.total;
          progress.value = p.progress;
        }
        progressText.textContent = `${p.progress}${typeof p.total === "number" ? " / " + p.total : ""}${p.message ? " — " + p.message : ""}`;
      } else if (event.type === "result") {
        showResult(tool.name, JSON.parse(event.data), performance.now() - started);
      } else if (event.type === "error") {
        const e = JSON.parse(event.data).error || {};
        showCallError(tool.name, e.message || "the call failed");
      }
    }
  } catch (e) {
    if (e.name === "AbortError") showCallError(tool.name, "cancelled (the server was told)");
    else showCallError(tool.name, String(e.message || e));
  } finally {
    state.calls.delete(tool.name);
    setCalling(tool.name, false);
  }
}

function cancelCall(toolName) {
  const c = state.calls.get(toolName);
  if (c) c.abort();
}

function setCalling(toolName, busy) {
  const form = $("detail").querySelector(`form.call[data-tool="${CSS.escape(toolName)}"]`);
  if (!form) return;
  form.querySelector("button[type=submit]").disabled = busy;
  form.querySelector("button.cancel").hidden = !busy;
}

async function* sseEvents(stream) {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replaceAll("\r\n", "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let type = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) type = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) yield { type, data: data.join("\n") };
    }
  }
}

function showCallError(toolName, message, code) {
  const out = outputFor(toolName);
  if (!out) return;
  out.replaceChildren(h("div", { class: "result result-error", role: "alert" }, h("strong", { text: "Call failed" + (code ? ` (${code})` : "") + ": " }), message));
}

function showResult(toolName, result, ms) {
  const out = outputFor(toolName);
  if (!out) return;
  const model = result.model || {};
  const blocks = (model.blocks || []).map((b) => {
    if (b.type === "image" && typeof b.data_url === "string" && b.data_url.startsWith("data:image/")) {
      return h("figure", { class: "block block-image" }, h("img", { src: b.data_url, alt: `image from ${toolName} (${b.mime_type})` }), h("figcaption", { text: b.mime_type }));
    }
    if (b.type === "text") return h("pre", { class: "block block-text", text: b.text });
    return h("pre", { class: "block", text: JSON.stringify(b, null, 2) });
  });
  const notes = [];
  if (model.truncated) notes.push(h("li", { text: "Cut to fit the model's budget; the model sees this note in the text." }));
  for (const file of model.spilled || []) notes.push(h("li", {}, "Full output kept in ", h("code", { text: file })));
  out.replaceChildren(
    h(
      "div",
      { class: "result" + (result.is_error ? " result-error" : ""), "data-testid": "result" },
      h("p", { class: "result-head" }, h("strong", { text: result.is_error ? "The tool reported an error" : "Result" }), ` · as the model sees it · ${Math.round(ms)} ms`),
      ...blocks,
      notes.length ? h("ul", { class: "notes" }, ...notes) : null,
      h("details", { class: "raw" }, h("summary", { text: "Raw result from the server" }), h("pre", { text: JSON.stringify(result.raw, null, 2) })),
    ),
  );
}

// ---------------------------------------------------------------- actions

async function act(name, action) {
  try {
    const result = await api("POST", `/api/servers/${enc(name)}/${action}`, {});
    if (result && result.server) state.servers.set(name, result.server);
    if (action !== "disconnect") state.authNeeded.delete(name);
    activity("action", `${name}: ${action} → ${stateLabel(state.servers.get(name))}`);
  } catch (e) {
    if (e.status !== 401) activity("error", `${name}: ${action} failed: ${e.message}`);
  }
  await loadDetail(name);
  renderList();
  renderDetail();
}

async function authenticate(name) {
  // Open the window now, while the click still counts as a user action (a popup opened
  // after an await may be blocked); point it at the authorization server when we know it.
  const popup = window.open("about:blank", "_blank");
  try {
    const started = await api("POST", `/api/servers/${enc(name)}/auth`, {});
    if (!started.authorization_url) {
      if (popup) popup.close();
      if (started.server) state.servers.set(name, started.server);
      activity("action", `${name}: no login needed (${stateLabel(state.servers.get(name))})`);
      renderList();
      renderDetail();
      return;
    }
    activity("auth", `${name}: log in in the new window; this page updates when it is done`);
    if (popup) {
      popup.opener = null;
      popup.location.href = started.authorization_url;
    } else {
      const link = h("a", { href: started.authorization_url, target: "_blank", rel: "noopener noreferrer", text: "Open the login page" });
      $("detail").querySelector(".status-line").append(" ", link);
    }
  } catch (e) {
    if (popup) popup.close();
    if (e.status !== 401) activity("error", `${name}: login could not start: ${e.message}`);
  }
}

// ---------------------------------------------------------------- questions from servers

function addQuestion(question) {
  if (state.questions.has(question.id)) return;
  const card = questionCard(question, async (action, content) => {
    await api("POST", `/api/elicitations/${question.id}`, action === "accept" ? { action, content } : { action });
    removeQuestion(question.id);
  });
  state.questions.set(question.id, card);
  $("questions").append(card);
  $("questions").hidden = false;
}

function removeQuestion(id) {
  const card = state.questions.get(id);
  if (!card) return;
  card.remove();
  state.questions.delete(id);
  $("questions").hidden = state.questions.size === 0;
}

async function loadQuestions() {
  const { elicitations } = await api("GET", "/api/elicitations");
  const waiting = new Set(elicitations.map((q) => q.id));
  for (const id of [...state.questions.keys()]) if (!waiting.has(id)) removeQuestion(id);
  for (const q of elicitations) addQuestion(q);
}

// ---------------------------------------------------------------- live events

function connectEvents() {
  const live = $("live");
  const source = new EventSource("/api/events");
  source.onopen = () => {
    live.dataset.state = "live";
    live.textContent = "live";
    // A question asked while the stream was away is still waiting.
    loadQuestions().catch(() => {});
  };
  source.onerror = async () => {
    live.dataset.state = "reconnecting";
    live.textContent = "reconnecting…";
    // A closed stream after a 401 means the session is gone.
    if (source.readyState === EventSource.CLOSED) {
      try {
        await api("GET", "/api/servers");
        setTimeout(connectEvents, 2000);
      } catch (e) {
        // A 401 showed the login: nothing to reconnect to until then. Anything else: the
        // server is away; try again later.
        if (e.status !== 401) setTimeout(connectEvents, 5000);
      }
    }
  };
  const on = (type, handler) =>
    source.addEventListener(type, (e) => {
      try {
        handler(JSON.parse(e.data));
      } catch (err) {
        console.error("event", type, err);
      }
    });
  on("status_changed", ({ server, status }) => {
    const known = state.servers.get(server);
    if (!known) {
      loadAll();
      return;
    }
    const before = stateLabel(known);
    known.status = status;
    if (stateOf(known) === "connected") state.authNeeded.delete(server);
    const after = stateLabel(known);
    if (before !== after) {
      activity("status", `${server}: ${before} → ${after}` + (lastError(known) ? ` (${lastError(known)})` : ""));
      if (server === state.selected) announce(`${server} is ${after}`);
    }
    renderList();
    if (server === state.selected) {
      renderDetail();
      loadDetail(server).then(() => server === state.selected && renderDetail());
    }
  });
  on("catalog_changed", ({ server, tools }) => {
    activity("catalog", `${server}: catalog changed (${tools} tools)`);
    loadDetail(server).then(() => {
      renderList();
      if (server === state.selected) renderDetail();
    });
  });
  on("server_removed", ({ server }) => {
    const tools = (state.details.get(server) || { tools: [] }).tools.map((t) => t.name);
    for (const t of tools) {
      state.results.delete(t);
      state.drafts.delete(t);
    }
    state.servers.delete(server);
    state.details.delete(server);
    activity("status", `${server}: removed`);
    if (state.selected === server) state.selected = null;
    renderList();
    renderDetail();
  });
  on("auth_needed", ({ server, reason, scope }) => {
    state.authNeeded.set(server, reason + (scope ? ` (scope: ${scope})` : ""));
    activity("auth", `${server}: login needed — ${reason}`);
    if (server === state.selected) renderDetail();
  });
  on("log", ({ server, level, data }) => {
    activity("log", `${server} [${level}] ${typeof data === "string" ? data : JSON.stringify(data)}`);
  });
  on("progress", ({ server, tool, progress, total, message }) => {
    if (state.calls.has(tool)) return; // shown on the call itself
    activity("progress", `${server}: ${tool} ${progress}${total ? "/" + total : ""}${message ? " " + message : ""}`);
  });
  on("elicitation_requested", (question) => {
    addQuestion(question);
    activity("question", `${question.server} asks: ${question.message}`);
    announce(`${question.server} asks: ${question.message}`);
  });
  on("elicitation_settled", ({ id, action }) => {
    const card = state.questions.get(id);
    if (card && action === "withdrawn") activity("question", `${card.dataset.server}: its question was withdrawn`);
    removeQuestion(id);
  });
  source.addEventListener("reset", () => loadAll());
}

// ---------------------------------------------------------------- start

async function loadAll() {
  const { servers } = await api("GET", "/api/servers");
  const names = new Set(servers.map((s) => s.name));
  for (const s of servers) state.servers.set(s.name, s);
  for (const name of [...state.servers.keys()]) if (!names.has(name)) state.servers.delete(name);
  if (!state.selected || !state.servers.has(state.selected)) {
    const wanted = decodeURIComponent(location.hash.slice(1));
    state.selected = state.servers.has(wanted) ? wanted : servers.length ? servers[0].name : null;
  }
  // Tool lists for filtering by tool name, in the background; questions waiting.
  await Promise.all([...servers.map((s) => loadDetail(s.name)), loadQuestions()]);
  renderList();
  renderDetail();
}

function keyboard() {
  $("server-list").addEventListener("keydown", (e) => {
    if (e.key === "ArrowDown" || e.key === "j") {
      e.preventDefault();
      moveSelection(1);
    } else if (e.key === "ArrowUp" || e.key === "k") {
      e.preventDefault();
      moveSelection(-1);
    } else if (e.key === "Home" || e.key === "End") {
      e.preventDefault();
      moveSelection(e.key === "Home" ? -Infinity : Infinity);
    } else if (e.key === "Enter" || e.key === "ArrowRight") {
      e.preventDefault();
      $("detail").focus();
    }
  });
  document.addEventListener("keydown", (e) => {
    const typing = e.target.closest && e.target.closest("input, textarea, select");
    if (e.key === "/" && !typing) {
      e.preventDefault();
      $("filter").focus();
    } else if (e.key === "Escape" && typing === $("filter")) {
      $("filter").value = "";
      state.filter = "";
      renderList();
      renderDetail();
      $("server-list").focus();
    }
  });
  $("filter").addEventListener("input", (e) => {
    state.filter = e.target.value.trim().toLowerCase();
    renderList();
    renderDetail();
  });
}

async function main() {
  keyboard();
  try {
    await loadAll();
  } catch (e) {
    if (e.status !== 401) {
      $("summary").textContent = "The hub did not answer: " + e.message;
    }
    return;
  }
  $("login").hidden = true;
  $("app").hidden = false;
  connectEvents();
}

main();
