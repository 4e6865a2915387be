// Calling a tool from the dashboard: a form whose JSON arguments are checked against the
// tool's input schema before sending, the call streamed (progress, then the result; aborting
// the fetch cancels it on the server), and the result shown as the model sees it.

import { h } from "./dom.js";
import { $, enc, showLogin, state } from "./core.js";
import { skeleton, validate } from "./schema.js";

export function callForm(tool, draft) {
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
export function outputFor(toolName) {
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
  if (errors.incomplete) {
    errorList.append(h("li", { class: "note", text: "The schema is too complex to check here in full: the server checks it." }));
  }
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
