// Suggestions as you type, from the server (`completion/complete` through POST /api/complete):
// an input gets a datalist, filled with the server's values for what is typed so far and the
// arguments already chosen. A server that does not offer completion is asked once, not on
// every key. Values are the server's: shown as text, never as markup.

import { h } from "./dom.js";
import { api } from "./core.js";

let lists = 0;

/**
 * Gives `input` suggestions for `argument` of a prompt (`what = {prompt}`) or a resource
 * template (`what = {resource_template}`) of `server`; `context()` returns the other arguments
 * already chosen ({name: value}). Returns the datalist, to be put in the page beside the input.
 */
export function suggest(input, server, what, argument, context) {
  const list = h("datalist", { id: `suggest-${++lists}` });
  input.setAttribute("list", list.id);
  input.setAttribute("autocomplete", "off");
  let timer = null;
  let asked = 0;
  let unsupported = false;
  const ask = async () => {
    if (unsupported) return;
    const mine = ++asked;
    try {
      const r = await api("POST", "/api/complete", { server, ...what, argument, value: input.value, context: context() });
      if (mine !== asked) return; // a newer question is on its way
      if (!r.supported) unsupported = true;
      list.replaceChildren(...(r.values || []).map((v) => h("option", { value: v })));
      list.dataset.count = String((r.values || []).length);
    } catch {
      // No suggestions is not an error worth showing: the field still takes any value.
    }
  };
  const soon = () => {
    clearTimeout(timer);
    timer = setTimeout(ask, 150);
  };
  input.addEventListener("input", soon);
  input.addEventListener("focus", soon);
  return list;
}

/** The variables of a URI template (`{id}`, `{+path}`, `{?q,page}`), in order, once each. */
export function templateVariables(template) {
  const names = [];
  for (const m of template.matchAll(/\{([^}]*)\}/g)) {
    for (const part of m[1].replace(/^[+#./;?&]/, "").split(",")) {
      const name = part.replace(/[:*].*$/, "").trim();
      if (name && !names.includes(name)) names.push(name);
    }
  }
  return names;
}

/** `template` with simple `{name}` variables filled in from `values` (others left as written). */
export function fillTemplate(template, values) {
  return template.replace(/\{([A-Za-z0-9_.%]+)\}/g, (whole, name) => (values[name] ? encodeURIComponent(values[name]) : whole));
}
