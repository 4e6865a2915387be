// The people who signed in to this host's gateway (`identity`): each with their own servers'
// statuses, their logins to them (server, scopes, expiry: never a token) and, on asking, their
// calls from the audit log. Shown only when there is anyone; looked at again every 15 s.

import { $, api, enc } from "./core.js";
import { h } from "./dom.js";

const EVERY_MS = 15000;

/** Loads the people and shows them (nothing when no one signed in here, unless `always`: a
 * person's own dashboard). */
export async function loadPeople(always = false) {
  let people;
  try {
    ({ people } = await api("GET", "/api/people"));
  } catch {
    return;
  }
  const panel = $("people-panel");
  panel.hidden = people.length === 0 && !always;
  if (people.length === 0) return;
  const list = $("people");
  list.replaceChildren(...people.map(person));
}

function person(p) {
  const who = p.principal;
  const name = who.name ? `${who.name} (${who.subject})` : who.subject;
  const calls = h("div", { class: "person-calls" });
  const servers = p.servers.map((s) =>
    h("li", {}, h("code", { text: s.name }), " ", h("span", { class: "state", dataset: { state: s.status.state }, text: s.status.state })),
  );
  const logins = p.logins
    .filter((l) => l.logged_in)
    .map((l) =>
      h(
        "li",
        {},
        h("code", { text: l.servers.join(", ") || l.url }),
        l.scopes.length ? ` · ${l.scopes.join(" ")}` : "",
        l.expires_at ? ` · until ${new Date(l.expires_at * 1000).toLocaleTimeString()}` : "",
        l.refreshable ? " · refreshable" : "",
      ),
    );
  return h(
    "li",
    { class: "person", dataset: { active: String(p.active) } },
    h("strong", { text: name }),
    who.groups.length ? h("span", { class: "groups", text: ` · ${who.groups.join(", ")}` }) : "",
    h("span", { class: "seen", text: p.active ? " · active" : p.seen_ms ? ` · last seen ${new Date(p.seen_ms).toLocaleString()}` : "" }),
    servers.length ? h("ul", { class: "person-servers", "aria-label": "Their servers" }, servers) : "",
    h("ul", { class: "person-logins", "aria-label": "Their logins" }, logins.length ? logins : h("li", { text: "no login to their own servers" })),
    h("button", { type: "button", onclick: () => showCalls(who.subject, calls) }, "Their calls"),
    calls,
  );
}

async function showCalls(subject, into) {
  let view;
  try {
    view = await api("GET", `/api/audit?principal=${enc(subject)}&limit=50`);
  } catch (e) {
    into.replaceChildren(h("p", { class: "error", text: e.message }));
    return;
  }
  const rows = view.calls
    .slice()
    .reverse()
    .map((c) => h("li", {}, h("time", { text: new Date(c.time).toLocaleString() }), ` ${c.name} · ${c.decision} · ${c.outcome}`));
  into.replaceChildren(rows.length ? h("ol", {}, rows) : h("p", { text: "no calls in the last day" }));
}

/** Shows the people now and keeps them current. */
export function followPeople({ always = false } = {}) {
  loadPeople(always);
  setInterval(() => loadPeople(always), EVERY_MS);
}
