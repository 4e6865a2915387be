// A server's resources (read; a template's URI filled in) and prompts (their arguments, the
// messages got), in blocks that stay open across re-renders.

import { outputFor } from "./calls.js";
import { fillTemplate, suggest, templateVariables } from "./complete.js";
import { h } from "./dom.js";
import { api, enc, state } from "./core.js";

export function firstLine(text) {
  if (!text) return "";
  const line = text.split("\n")[0];
  return line.length > 120 ? line.slice(0, 117) + "…" : line;
}

/** A `details` block kept open across re-renders, for `key`, with an output area. */
function block(key, openTools, summary, ...body) {
  const shown = state.results.get(key);
  const open = openTools.has(key) || (!!shown && shown.childElementCount > 0);
  return h("details", { class: "tool", dataset: { tool: key }, open }, h("summary", {}, ...summary), ...body, outputFor(key));
}

export function renderResources(name, detail, openTools) {
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
    // One field per variable, with the server's suggestions; the URI follows them.
    const values = {};
    const variables = templateVariables(template.uriTemplate).map((v) => {
      const field = h("input", { type: "text", name: v, spellcheck: "false", "aria-label": v });
      const list = suggest(field, name, { resource_template: template.uriTemplate }, v, () => ({ ...values }));
      field.addEventListener("input", () => {
        values[v] = field.value;
        input.value = fillTemplate(template.uriTemplate, values);
        state.drafts.set(key, { args: input.value });
      });
      return h("label", { class: "arg" }, h("span", { text: v }), field, list);
    });
    section.append(
      block(
        key,
        openTools,
        [h("span", { class: "tool-name", text: template.title || template.name }), h("span", { class: "tool-desc", text: template.uriTemplate })],
        template.description ? h("p", { class: "tool-full", text: template.description }) : null,
        ...variables,
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

export function renderPrompts(name, detail, openTools) {
  const section = h("section", { class: "tools", "aria-label": "Prompts" });
  section.append(h("h3", { text: `Prompts (${detail.prompts.length})` }));
  for (const { prompt } of detail.prompts) {
    const key = `prompt:${name}:${prompt.name}`;
    const draft = state.drafts.get(key) || { args: {} };
    // The arguments chosen so far, as context for the server's suggestions.
    const chosen = (except) => Object.fromEntries(Object.entries(draft.args).filter(([k, v]) => k !== except && v !== ""));
    const inputs = (prompt.arguments || []).map((a) => {
      const input = h("input", { type: "text", name: a.name, required: a.required ? true : null });
      input.value = draft.args[a.name] || "";
      input.addEventListener("input", () => {
        draft.args[a.name] = input.value;
        state.drafts.set(key, draft);
      });
      const list = suggest(input, name, { prompt: prompt.name }, a.name, () => chosen(a.name));
      return h("label", { class: "arg" }, h("span", { text: a.name + (a.required ? " *" : "") }), input, list, a.description ? h("span", { class: "small", text: a.description }) : null);
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
