// A tool call the policy asks about: a card with the tool, its server, the arguments (long
// values cut), the server's annotations (its own hints, not facts), the rule that asks,
// whether the tool changed since it was last approved, and the four answers. Everything a
// server sent is shown as text.

import { h } from "./dom.js";

/** Strings longer than `max` characters cut, at any depth. */
function cut(value, max = 300) {
  if (typeof value === "string") return value.length > max ? `${value.slice(0, max)}… (${value.length} characters)` : value;
  if (Array.isArray(value)) return value.map((v) => cut(v, max));
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, cut(v, max)]));
  return value;
}

const HINTS = ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"];

/**
 * The card for `pending` ({id, request: {server, tool, name, arguments, annotations, changed,
 * caller}, rule, choices: [{value, title}], origin?}): `origin` is the process that asks when it
 * is not this server (a standalone gateway). `decide(value)` sends the decision and resolves, or throws.
 */
export function approvalCard(pending, decide) {
  const r = pending.request || {};
  const errors = h("ul", { class: "errors", "aria-live": "polite" });
  const buttons = h("div", { class: "q-buttons" });
  for (const choice of pending.choices || []) {
    const deny = choice.value === "deny";
    buttons.append(
      h("button", {
        type: "button",
        class: deny ? "danger" : choice.value === "allow_once" ? "primary" : "",
        text: choice.title,
        dataset: { decision: choice.value },
        onclick: async () => {
          errors.replaceChildren();
          for (const b of buttons.querySelectorAll("button")) b.disabled = true;
          try {
            await decide(choice.value);
          } catch (e) {
            errors.append(h("li", { text: e.message }));
            for (const b of buttons.querySelectorAll("button")) b.disabled = false;
          }
        },
      }),
    );
  }
  const annotations = r.annotations || {};
  const hints = HINTS.filter((k) => typeof annotations[k] === "boolean").map((k) => `${k}: ${annotations[k]}`);
  const args = r.arguments && Object.keys(r.arguments).length ? JSON.stringify(cut(r.arguments), null, 2) : null;
  const caller = r.caller || {};
  const client = caller.kind === "gateway" && caller.client ? `for the MCP client ${cut(caller.client, 80)}` : null;
  const from = [pending.origin ? `From ${pending.origin}` : null, client].filter(Boolean).join(", ");
  return h(
    "div",
    { class: "question approval", role: "group", dataset: { approval: String(pending.id), server: r.server || "" }, "aria-label": `Allow ${r.name}?` },
    h("p", { class: "q-asker" }, "Allow ", h("strong", { text: r.name || "" }), " (", h("code", { text: `${r.server}/${r.tool}` }), ")?"),
    r.changed ? h("p", { class: "error-text", text: "This tool's definition changed since it was last allowed always." }) : null,
    args ? h("pre", { class: "q-arguments", text: args }) : h("p", { class: "hint", text: "No arguments." }),
    hints.length ? h("p", { class: "hint", text: `The server's own hints: ${hints.join(", ")}` }) : null,
    h("p", { class: "hint", text: `Asked by ${pending.rule}` }),
    from ? h("p", { class: "hint q-origin", text: `${from}.` }) : null,
    errors,
    buttons,
  );
}
