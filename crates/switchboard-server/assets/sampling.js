// A server asking for a completion (sampling) when no MCP client can answer: the person reads
// what it asks (its system prompt, each message, the token limit, the models it prefers),
// writes or edits the reply, and sends it as the model's answer, or declines. Everything a
// server sent is shown as text.

import { h } from "./dom.js";

/** A message's content for people: its text, other kinds named. */
function describe(content) {
  const one = (c) => {
    if (!c || typeof c !== "object") return String(c ?? "");
    if (c.type === "text") return c.text || "";
    if (c.type === "image" || c.type === "audio") return `[${c.type} ${c.mimeType || "?"}, ${Math.floor(((c.data || "").length * 3) / 4)} bytes]`;
    if (c.type === "tool_use") return `[asks to use tool ${c.name}]`;
    return `[${c.type || "unknown"} content]`;
  };
  return Array.isArray(content) ? content.map(one).join("\n") : one(content);
}

/**
 * The card for `pending` ({id, server, request: {messages, systemPrompt, maxTokens,
 * modelPreferences}}). `answer({action, text?, model?})` sends the person's answer, or throws.
 */
export function samplingCard(pending, answer) {
  const r = pending.request || {};
  const errors = h("ul", { class: "errors", "aria-live": "polite" });
  const reply = h("textarea", { rows: 5, name: "reply", "aria-label": "Your reply, as the model" });
  const model = h("input", { type: "text", name: "model", value: "human", "aria-label": "Model named in the reply" });
  const hints = ((r.modelPreferences || {}).hints || []).map((x) => x.name).filter(Boolean);
  const limits = [r.maxTokens ? `at most ${r.maxTokens} tokens` : null, hints.length ? `models it prefers: ${hints.join(", ")}` : null].filter(Boolean);
  const buttons = h("div", { class: "q-buttons" });
  const act = (action) => async () => {
    errors.replaceChildren();
    if (action === "send" && reply.value.trim() === "") {
      errors.append(h("li", { text: "Write the reply first (or decline)." }));
      return;
    }
    for (const b of buttons.querySelectorAll("button")) b.disabled = true;
    try {
      await answer(action === "send" ? { action, text: reply.value, model: model.value } : { action });
    } catch (e) {
      errors.append(h("li", { text: e.message }));
      for (const b of buttons.querySelectorAll("button")) b.disabled = false;
    }
  };
  buttons.append(
    h("button", { type: "button", class: "primary", text: "Send reply", onclick: act("send") }),
    h("button", { type: "button", class: "danger", text: "Decline", onclick: act("decline") }),
  );
  return h(
    "div",
    { class: "question sampling", role: "group", dataset: { sampling: String(pending.id), server: pending.server || "" }, "aria-label": `${pending.server} asks for a completion` },
    h("p", { class: "q-asker" }, h("strong", { text: pending.server }), " asks for a completion: you answer as the model."),
    r.systemPrompt ? h("p", { class: "hint", text: `System: ${r.systemPrompt}` }) : null,
    ...(r.messages || []).map((m) => h("div", { class: "message" }, h("strong", { text: m.role }), h("pre", { class: "block block-text", text: describe(m.content) }))),
    limits.length ? h("p", { class: "hint", text: limits.join("; ") }) : null,
    h("label", { class: "arg" }, h("span", { text: "Reply" }), reply),
    h("label", { class: "arg" }, h("span", { text: "Model" }), model),
    errors,
    buttons,
  );
}
