// A server's question for the person (elicitation, form mode), as a form built from the
// question's flat schema: text (email, URL, date and date-time inputs by `format`), numbers
// and integers with their bounds, yes/no, one choice (`enum`, or `oneOf` titled consts) and
// several choices (arrays of `enum` or `anyOf` titled consts). The values are checked against
// the schema before they are sent. Decline and Cancel send no values.

import { h } from "./dom.js";
import { validate } from "./schema.js";

/** The choices a property (or an array's items) offers: [{value, label}], or null. */
export function choicesOf(prop) {
  if (!prop || typeof prop !== "object") return null;
  if (Array.isArray(prop.enum)) {
    const names = Array.isArray(prop.enumNames) ? prop.enumNames : [];
    return prop.enum.map((value, i) => ({ value, label: String(names[i] ?? value) }));
  }
  const options = prop.oneOf || prop.anyOf;
  if (Array.isArray(options) && options.every((o) => o && "const" in o)) {
    return options.map((o) => ({ value: o.const, label: String(o.title ?? o.const) }));
  }
  return null;
}

const INPUT_TYPE = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" };

/** One field: its element and how to read its value (undefined: left empty). */
function field(name, prop, required, id) {
  const type = prop.type;
  const label = prop.title || name;
  const hint = prop.description ? h("small", { class: "hint", text: prop.description }) : null;
  const choices = choicesOf(prop);
  const itemChoices = type === "array" ? choicesOf(prop.items) : null;
  const mark = required ? h("span", { class: "required", title: "required", text: " *" }) : null;

  if (type === "boolean") {
    const box = h("input", { type: "checkbox", id, name, checked: prop.default === true });
    return {
      el: h("div", { class: "q-field q-check" }, box, h("label", { for: id }, label, mark), hint),
      read: () => box.checked,
    };
  }
  if (itemChoices) {
    const chosen = new Set(Array.isArray(prop.default) ? prop.default.map((v) => JSON.stringify(v)) : []);
    const boxes = itemChoices.map((c, i) => {
      const box = h("input", { type: "checkbox", id: `${id}-${i}`, checked: chosen.has(JSON.stringify(c.value)) });
      box.choice = c.value;
      return h("label", { class: "q-option", for: `${id}-${i}` }, box, " ", c.label);
    });
    return {
      el: h("fieldset", { class: "q-field" }, h("legend", {}, label, mark), hint, boxes),
      read: () => boxes.map((l) => l.querySelector("input")).filter((b) => b.checked).map((b) => b.choice),
    };
  }
  if (choices) {
    const select = h("select", { id, name });
    if (!required || prop.default === undefined) select.append(h("option", { value: "", text: "—" }));
    choices.forEach((c, i) => {
      const option = h("option", { value: String(i), text: c.label });
      if (JSON.stringify(c.value) === JSON.stringify(prop.default)) option.selected = true;
      select.append(option);
    });
    return {
      el: h("div", { class: "q-field" }, h("label", { for: id }, label, mark), select, hint),
      read: () => (select.value === "" ? undefined : choices[Number(select.value)].value),
    };
  }
  const numeric = type === "number" || type === "integer";
  const attrs = { id, name, required };
  if (numeric) {
    Object.assign(attrs, { type: "number", step: type === "integer" ? "1" : "any", min: prop.minimum, max: prop.maximum });
  } else {
    Object.assign(attrs, { type: INPUT_TYPE[prop.format] || "text", minlength: prop.minLength, maxlength: prop.maxLength });
  }
  const input = h("input", attrs);
  if (prop.default !== undefined && prop.default !== null) input.value = String(prop.default);
  return {
    el: h("div", { class: "q-field" }, h("label", { for: id }, label, mark), input, hint),
    read: () => {
      const v = input.value;
      if (v === "") return undefined;
      if (numeric) return Number(v);
      // A local date and time, sent as RFC 3339 (the schema's `date-time`).
      if (input.type === "datetime-local") return new Date(v).toISOString();
      return v;
    },
  };
}

/** The URL of a URL-mode question, if it is one this page may open (http or https only). */
function openable(url) {
  try {
    const u = new URL(url);
    return u.protocol === "https:" || u.protocol === "http:" ? u : null;
  } catch {
    return null;
  }
}

/**
 * A URL-mode question: the whole URL shown, its host set apart; it opens only when the person
 * presses Open (which is their consent, sent as `accept`), in a new window without a way back.
 */
function urlCard(question, answer) {
  const url = openable(question.url);
  const errors = h("ul", { class: "errors", "aria-live": "polite" });
  const buttons = h("div", { class: "q-buttons" });
  const send = async (action) => {
    errors.replaceChildren();
    for (const b of buttons.querySelectorAll("button")) b.disabled = true;
    try {
      if (action === "accept" && url) window.open(url.href, "_blank", "noopener,noreferrer");
      await answer(action);
    } catch (e) {
      errors.append(h("li", { text: e.message }));
      for (const b of buttons.querySelectorAll("button")) b.disabled = false;
    }
  };
  if (url) buttons.append(h("button", { type: "button", class: "primary", text: `Open ${url.host}`, onclick: () => send("accept") }));
  buttons.append(
    h("button", { type: "button", text: "Decline", onclick: () => send("decline") }),
    h("button", { type: "button", text: "Cancel", title: "Dismiss what the server is doing", onclick: () => send("cancel") }),
  );
  return h(
    "div",
    { class: "question", role: "group", dataset: { question: String(question.id), server: question.server }, "aria-label": `${question.server} asks` },
    h("p", { class: "q-asker" }, h("strong", { text: question.server }), " asks you to open a page:"),
    h("p", { class: "q-message", text: question.message }),
    h("p", { class: "q-url" }, h("code", { text: question.url })),
    url ? h("p", { class: "hint", text: `It opens ${url.host} in a new window. Open it only if you expected this.` })
      : h("p", { class: "error-text", text: "This is not a web address; it cannot be opened from here." }),
    errors,
    buttons,
  );
}

/** A question whose form is too big to draw: its schema as JSON (cut), Decline and Cancel. */
function tooBigCard(question, answer) {
  const errors = h("ul", { class: "errors", "aria-live": "polite" });
  const text = JSON.stringify(question.schema, null, 2) || "";
  const send = async (action) => {
    try {
      await answer(action, undefined);
    } catch (e) {
      errors.append(h("li", { text: e.message }));
    }
  };
  return h(
    "form",
    { class: "question", dataset: { question: String(question.id), server: question.server }, "aria-label": `${question.server} asks` },
    h("p", { class: "q-asker" }, h("strong", { text: question.server }), " asks:"),
    h("p", { class: "q-message", text: question.message }),
    h("p", { class: "note", text: "This form is too big to show here; its schema follows. Answer it from another client, or decline it." }),
    h("pre", { text: text.length > 20000 ? text.slice(0, 20000) + "…" : text }),
    errors,
    h(
      "div",
      { class: "q-buttons" },
      h("button", { type: "button", text: "Decline", onclick: () => send("decline") }),
      h("button", { type: "button", text: "Cancel", onclick: () => send("cancel") }),
    ),
  );
}

/**
 * The card for `question` ({id, server, message, schema} or, URL mode, {id, server, message,
 * url}). `answer(action, content)` sends the answer and resolves, or throws an error.
 */
/** More fields than a form can sensibly show: the schema is shown as JSON instead. */
export const MAX_FIELDS = 100;

export function questionCard(question, answer) {
  if (question.url) return urlCard(question, answer);
  const schema = question.schema || {};
  if (Object.keys(schema.properties || {}).length > MAX_FIELDS || JSON.stringify(schema).length > 200000) {
    return tooBigCard(question, answer);
  }
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const props = Object.entries(schema.properties || {});
  const fields = props.map(([name, prop], i) =>
    [name, field(name, prop || {}, required.has(name), `q${question.id}-${i}`)],
  );
  const errors = h("ul", { class: "errors", "aria-live": "polite" });
  const buttons = h("div", { class: "q-buttons" });
  const form = h(
    "form",
    { class: "question", novalidate: true, dataset: { question: String(question.id), server: question.server }, "aria-label": `${question.server} asks` },
    h("p", { class: "q-asker" }, h("strong", { text: question.server }), " asks:"),
    h("p", { class: "q-message", text: question.message }),
    fields.map(([, f]) => f.el),
    errors,
    buttons,
  );
  const send = async (action) => {
    errors.replaceChildren();
    let content;
    if (action === "accept") {
      content = {};
      for (const [name, f] of fields) {
        const v = f.read();
        if (v !== undefined) content[name] = v;
      }
      const problems = validate(schema, content);
      if (problems.length) {
        errors.append(...problems.map((p) => h("li", { text: `${p.path || "/"} ${p.message}` })));
        return;
      }
    }
    for (const b of buttons.querySelectorAll("button")) b.disabled = true;
    try {
      await answer(action, content);
    } catch (e) {
      errors.append(h("li", { text: e.message }));
      for (const b of buttons.querySelectorAll("button")) b.disabled = false;
    }
  };
  buttons.append(
    h("button", { type: "submit", class: "primary", text: "Send" }),
    h("button", { type: "button", text: "Decline", onclick: () => send("decline") }),
    h("button", { type: "button", text: "Cancel", title: "Dismiss what the server is doing", onclick: () => send("cancel") }),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    send("accept");
  });
  return form;
}
