// The switchboard dashboard: every server with its live status (from /api/events, no
// polling), its tools with their schemas, a call form checked against the schema, results
// as the model sees them, and the server actions. Everything the servers send is shown as
// text (textContent), never parsed as HTML. This module renders the server list and detail and
// follows the events; core.js holds the state and the API client, calls.js calls tools,
// library.js shows resources and prompts, questions.js servers' questions.

import { callForm, outputFor } from "./calls.js";
import { $, activity, announce, api, enc, state } from "./core.js";
import { h } from "./dom.js";
import { firstLine, renderPrompts, renderResources } from "./library.js";
import * as asking from "./asking.js";
import { followPeople } from "./people.js";

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

// What the person can do so that a server works, as the library decides it
// (`server.remedy`): a button, or what to do by hand.
function remedyAction(server, button) {
  const remedy = server.remedy;
  if (!remedy) return null;
  switch (remedy.action) {
    case "trust":
      return button("Trust and start", () => act(server.name, "trust"), { class: "primary" });
    case "login":
      return button("Authenticate", () => authenticate(server.name), { class: "primary" });
    case "register_client":
      return h("p", {
        class: "hint",
        text: "Its authorization server offers no registration: register a client with it, set oauth.client_id (and oauth.client_secret) in this server's config, then authenticate.",
      });
    default:
      return null;
  }
}

function toolCount(server) {
  const c = server.status && server.status.counts;
  return c ? c.tools : null;
}

function lastError(server) {
  const s = server.status || {};
  if (s.state === "failed") return (s.message || "").split("\n")[0] + retryText(s.retry);
  if (s.state === "disconnected") {
    let what = "disconnected";
    if (s.exit_code !== undefined && s.exit_code !== null) what = `exited with code ${s.exit_code}`;
    else if (s.signal !== undefined && s.signal !== null) what = `killed by signal ${s.signal}`;
    else if (s.reason) what = s.reason;
    return what + retryText(s.retry);
  }
  return null;
}

// A schema as JSON; one too big to show whole is cut, and says so.
const SCHEMA_SHOWN = 100000;
function schemaText(schema) {
  const text = JSON.stringify(schema, null, 2) || "";
  if (text.length <= SCHEMA_SHOWN) return h("pre", { text });
  return h(
    "div",
    {},
    h("p", { class: "note", text: `This schema is ${text.length} characters: the first ${SCHEMA_SHOWN} are shown.` }),
    h("pre", { text: text.slice(0, SCHEMA_SHOWN) + "…" }),
  );
}

// When a server that went away is tried again (the hub's own timer, or the next call).
function retryText(retry) {
  if (!retry) return "";
  if (retry.at_ms === undefined || retry.at_ms === null) return "; reconnects on the next call";
  const secs = Math.ceil((retry.at_ms - Date.now()) / 1000);
  const when = secs < 1 ? "retrying now" : `retrying in ${secs} s`;
  return `; ${when}` + (retry.attempt > 0 ? ` (attempt ${retry.attempt + 1})` : "");
}

// ---------------------------------------------------------------- server list

// A tool shown under the filter: its name or description holds the text, or the hub's tool
// search (by the words, BM25 over names, titles, descriptions and parameters, and by what they
// mean) found it for them.
function toolMatches(server, tool) {
  const f = state.filter;
  if (!f) return true;
  if (server.toLowerCase().includes(f) || tool.name.toLowerCase().includes(f)) return true;
  if ((tool.description || "").toLowerCase().includes(f)) return true;
  return !!state.found && state.found.has(tool.name);
}

function matchesFilter(server) {
  const f = state.filter;
  if (!f) return true;
  if (server.name.toLowerCase().includes(f)) return true;
  const detail = state.details.get(server.name);
  return !!detail && detail.tools.some((t) => toolMatches(server.name, t));
}

// Asks the hub's tool search for the filter's words (a quarter second after the last key).
let searchTimer = null;
function searchTools() {
  clearTimeout(searchTimer);
  state.found = null;
  const words = state.filter;
  if (!words) return;
  searchTimer = setTimeout(async () => {
    try {
      const found = await api("GET", `/api/tools?limit=50&search=${enc(words)}`);
      if (state.filter !== words) return;
      state.found = new Set(found.tools.map((t) => t.name));
      renderList();
      renderDetail();
    } catch {
      // A pattern the search cannot take (`/(`): the text filter alone.
    }
  }, 250);
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
  // A filter that matches nothing says so, rather than leaving the list blank.
  const none = state.servers.size !== 0 && shown.length === 0;
  $("no-match").hidden = !none;
  if (none) $("no-match").textContent = `No server or tool matches “${state.filter}”. Esc clears the filter.`;
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
  const fix = remedyAction(server, button);
  if (fix) actions.append(fix);
  if (["stopped", "failed", "disconnected", "needs_auth"].includes(st)) actions.append(button("Connect", () => act(name, "connect")));
  if (st === "connected") actions.append(button("Revalidate", () => act(name, "revalidate")));
  if (["connected", "connecting", "disconnected", "needs_auth"].includes(st)) {
    actions.append(button("Disconnect", () => act(name, "disconnect")));
  } else if (st === "failed" && status.retry && status.retry.at_ms) {
    // A failed server is tried again on a timer: what the person can end is that.
    actions.append(button("Stop retrying", () => act(name, "disconnect")));
  }
  // Logging in again is for a remote server that is connected (another account, more scopes):
  // one that fails for another reason (its host does not resolve, nothing listens) is not
  // fixed by a login, and one that needs a login has "Authenticate".
  if (server.transport !== "stdio" && st === "connected") actions.append(button("Log in again", () => authenticate(name)));

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
  if (status.diagnostics && status.diagnostics.length) {
    children.push(h("section", { class: "diagnostics" }, h("h3", { text: "Problems" }), h("ul", {}, ...status.diagnostics.map((d) => h("li", { class: "error-text", text: d })))));
  }
  if (server.findings && server.findings.length) {
    // What screening its definitions found: hidden characters removed, and what they said
    // (shown here to the person; the model never gets it).
    const where = (f) => (f.target.name ? `${f.target.kind} ${f.target.name}` : f.target.kind) + `, ${f.field}`;
    children.push(h("section", { class: "findings", "data-testid": "findings" }, h("h3", { text: `Findings (${server.findings.length})` }),
      h("ul", {}, ...server.findings.map((f) => h("li", { class: "notes", text: `${f.severity}: ${where(f)}: ${f.why}` })))));
  }
  const sandbox = server.sandbox;
  if (sandbox && sandbox.on === false) {
    children.push(h("p", { class: "notes", "data-testid": "sandbox-off", text: "No sandbox (\"sandbox\": false in its entry): it runs with all your rights." }));
  }
  if (sandbox && sandbox.refused && sandbox.refused.length) {
    // What its sandbox refused, each with the line that allows it and a button that writes it.
    children.push(h("section", { class: "refused", "data-testid": "sandbox-refused" }, h("h3", { text: `Refused by its sandbox (${sandbox.refused.length})` }),
      h("ul", {}, ...sandbox.refused.map((r) => h("li", { class: "notes" },
        h("span", { text: `${r.kind} ${r.target} (${r.count}×): ` }), h("code", { text: r.allow }), " ",
        button("Allow", () => allowRefused(name, r)))))));
  }
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

// What a server's tool definitions cost in tokens, asked of the hub once per server.
async function countTokens(name) {
  try {
    const found = await api("GET", `/api/tools?server=${enc(name)}&tokens=true`);
    const per = new Map(found.tools.map((t) => [t.name, t.tokens]));
    state.tokens.set(name, { total: found.tools.reduce((n, t) => n + t.tokens, 0), per });
    announce(`${name}: ${state.tokens.get(name).total} tokens of tool definitions`);
    renderDetail();
  } catch (e) {
    announce(`Counting tokens failed: ${e.message}`);
  }
}

function renderTools(name, detail, openTools) {
  const section = h("section", { class: "tools", "aria-label": "Tools" });
  const tools = detail ? detail.tools : [];
  const counted = state.tokens.get(name);
  const f = state.filter;
  const matching = f ? tools.filter((t) => toolMatches(name, t)).length : tools.length;
  // Under a filter the heading says how many of them it shows.
  const heading = h("h3", { text: f && detail ? `Tools (${matching} of ${tools.length} match “${f}”)` : `Tools (${tools.length})` });
  if (counted) {
    heading.append(h("span", { class: "tokens", text: ` · ${counted.total} tokens of definitions` }));
  } else if (tools.length) {
    // The hub loads its token table only when someone asks.
    heading.append(
      h("button", { type: "button", class: "count-tokens", title: "Estimate what these definitions cost in a model's context (o200k_base)", onclick: () => countTokens(name), text: "Count tokens" }),
    );
  }
  section.append(heading);
  if (!detail) {
    section.append(h("p", { class: "empty", text: "Loading…" }));
    return section;
  }
  if (tools.length === 0) {
    section.append(h("p", { class: "empty", text: stateOf(state.servers.get(name)) === "connected" ? "This server offers no tools." : "Connect the server to see its tools." }));
    return section;
  }
  if (f && matching === 0) {
    section.append(h("p", { class: "empty", text: `No tool of ${name} matches “${f}”. Esc clears the filter.` }));
    return section;
  }
  for (const tool of tools) {
    if (f && !toolMatches(name, tool)) continue;
    const shown = state.results.get(tool.name);
    const open = openTools.has(tool.name) || state.calls.has(tool.name) || (!!shown && shown.childElementCount > 0);
    const details = h(
      "details",
      { class: "tool", dataset: { tool: tool.name }, open },
      h(
        "summary",
        {},
        h("span", { class: "tool-name", text: tool.title || tool.tool }),
        counted && counted.per.has(tool.name) ? h("span", { class: "tool-tokens", text: `${counted.per.get(tool.name)} tok` }) : null,
        h("span", { class: "tool-desc", text: firstLine(tool.description) }),
      ),
      tool.description ? h("p", { class: "tool-full", text: tool.description }) : null,
      h("p", { class: "mono small" }, "model-visible name: ", h("code", { text: tool.name })),
      h("details", { class: "schema" }, h("summary", { text: "Input schema" }), schemaText(tool.input_schema)),
      callForm(tool, state.drafts.get(tool.name)),
      outputFor(tool.name),
    );
    section.append(details);
  }
  return section;
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

async function allowRefused(name, refusal) {
  try {
    const done = await api("POST", `/api/servers/${enc(name)}/sandbox/allow`, { kind: refusal.kind, target: refusal.target });
    activity("action", `${name}: allowed ${refusal.kind} ${refusal.target} in ${done.file}; it starts again under the new rules`);
  } catch (e) {
    if (e.status !== 401) activity("error", `${name}: could not allow ${refusal.target}: ${e.message}`);
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

// ---------------------------------------------------------------- live events

function connectEvents() {
  const live = $("live");
  const source = new EventSource("/api/events");
  source.onopen = () => {
    live.dataset.state = "live";
    live.textContent = "live";
    // A question asked while the stream was away is still waiting.
    asking.load().catch(() => {});
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
  // The server stops: its last event. Try again now and then (it may be restarted).
  source.addEventListener("shutdown", () => {
    source.close();
    live.dataset.state = "stopped";
    live.textContent = "switchboard stopped";
    activity("status", "switchboard stopped");
    setTimeout(connectEvents, 5000);
  });
  const on = (type, handler) =>
    source.addEventListener(type, (e) => {
      try {
        handler(JSON.parse(e.data));
      } catch (err) {
        console.error("event", type, err);
      }
    });
  on("status_changed", ({ server, status, remedy }) => {
    const known = state.servers.get(server);
    if (!known) {
      loadAll();
      return;
    }
    const before = stateLabel(known);
    known.status = status;
    known.remedy = remedy;
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
  on("config_reloaded", ({ report }) => {
    const parts = [["added", report.added], ["removed", report.removed], ["restarted", report.restarted], ["updated", report.updated]]
      .filter(([, names]) => names.length)
      .map(([what, names]) => `${what} ${names.join(", ")}`);
    for (const [name, why] of report.kept) activity("error", `${name}: its entry is invalid now, it keeps running as it was (${why})`);
    if (parts.length) {
      activity("config", `config reloaded: ${parts.join("; ")}`);
      loadAll().catch(() => {});
    }
  });
  on("config_rejected", ({ diagnostics }) => {
    for (const d of diagnostics) activity("error", `config not reloaded: ${d.file}: ${d.message}`);
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
    asking.add("elicitation", question);
    activity("question", `${question.server} asks: ${question.message}`);
    announce(`${question.server} asks: ${question.message}`);
  });
  on("elicitation_settled", ({ id, action }) => {
    const card = asking.cardOf("elicitation", id);
    if (card && action === "withdrawn") activity("question", `${card.dataset.server}: its question was withdrawn`);
    asking.remove("elicitation", id);
  });
  on("approval_requested", (pending) => {
    asking.add("approval", pending);
    const r = pending.request || {};
    activity("question", `allow ${r.name}? (${pending.rule})`);
    announce(`Allow ${r.name}?`);
  });
  on("approval_settled", ({ id, decision }) => {
    const card = asking.cardOf("approval", id);
    if (card && decision === "withdrawn") activity("question", `${card.dataset.server}: the call waiting for approval ended`);
    asking.remove("approval", id);
  });
  on("sampling_requested", (pending) => {
    asking.add("sampling", pending);
    activity("question", `${pending.server} asks for a completion`);
    announce(`${pending.server} asks for a completion`);
  });
  on("sampling_settled", ({ id, action }) => {
    const card = asking.cardOf("sampling", id);
    if (card && action === "withdrawn") activity("question", `${card.dataset.server}: its request for a completion was withdrawn`);
    asking.remove("sampling", id);
  });
  on("tool_called", ({ name, outcome, decision }) => {
    if (outcome === "denied") activity("error", `${name}: denied (${decision})`);
    auditSoon();
  });
  source.addEventListener("reset", () => loadAll());
}

// ---------------------------------------------------------------- the audit log's health

let auditTimer = null;
/** Records the log itself says were lost in the last day, as read at start. */
let lostInLog = 0;

/** Looks at the audit log again within 2 s (once, however many calls end meanwhile). */
function auditSoon() {
  if (auditTimer) return;
  auditTimer = setTimeout(() => {
    auditTimer = null;
    loadAudit(false);
  }, 2000);
}

/** Shows whether audit records are being lost: the log cannot be written now, records wait
 * for the disk, or (`readLog`: the day's log is read, at start) the log says some were lost. */
async function loadAudit(readLog = true) {
  const box = $("audit-warning");
  let view;
  try {
    view = await api("GET", readLog ? "/api/audit?limit=0" : "/api/audit/health");
  } catch {
    return;
  }
  if (readLog) lostInLog = view.lost_records || 0;
  const health = view.health || {};
  const parts = [];
  if (health.failing) parts.push(`The audit log cannot be written: ${health.failing}.`);
  if (health.held) parts.push(`${health.held} record${health.held === 1 ? "" : "s"} wait${health.held === 1 ? "s" : ""} for the disk.`);
  const lost = Math.max(lostInLog, health.lost || 0);
  if (lost) parts.push(`${lost} record${lost === 1 ? " was" : "s were"} lost (see switchboard audit).`);
  box.textContent = parts.join(" ");
  box.hidden = parts.length === 0;
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
  await Promise.all([...servers.map((s) => loadDetail(s.name)), asking.load(), loadAudit()]);
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
      searchTools();
      renderList();
      renderDetail();
      $("server-list").focus();
    }
  });
  $("filter").addEventListener("input", (e) => {
    state.filter = e.target.value.trim().toLowerCase();
    searchTools();
    renderList();
    renderDetail();
  });
}

/** Who this browser is: the host's session (or none), or a person of a team who signed in
 * with the organisation's provider (`/people/login`), who sees their own part (everyone's, in
 * an admin group). Shows the way to sign in when a team's serve offers it. */
async function whoAmI() {
  let response;
  try {
    response = await fetch("/api/me", { headers: { accept: "application/json" }, credentials: "same-origin" });
  } catch {
    return null;
  }
  const signIn = response.headers.get("x-switchboard-sign-in");
  if (signIn) {
    $("sign-in-link").href = signIn;
    $("sign-in").hidden = false;
  }
  return response.ok ? response.json() : null;
}

function personMode(me) {
  const who = me.principal.name ? `${me.principal.name} (${me.principal.subject})` : me.principal.subject;
  $("summary").textContent = `Signed in as ${who}` + (me.everyone ? " · you see everyone" : " · your own logins and calls");
  $("live").dataset.state = "live";
  $("live").textContent = "person";
  $("login").hidden = true;
  $("app").hidden = true;
  $("filter").closest("label").hidden = true;
  followPeople({ always: true });
}

async function main() {
  keyboard();
  const me = await whoAmI();
  if (me && me.kind === "person") return personMode(me);
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
  followPeople();
}

main();
