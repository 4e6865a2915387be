// What every part of the dashboard shares: its state, the API client, announcements and the
// activity list.

import { h } from "./dom.js";

export const state = {
  servers: new Map(), // name -> server view from /api/servers
  details: new Map(), // name -> {tools, stderr_tail}
  selected: null,
  filter: "",
  // Tool names the hub's search found for the filter's words (null: not asked yet).
  found: null,
  tokens: new Map(), // server -> {total, per: Map(tool name -> tokens)}
  authNeeded: new Map(), // name -> reason
  calls: new Map(), // tool name -> AbortController of the call in flight
  drafts: new Map(), // tool name -> {args, timeout} typed in its call form
  results: new Map(), // tool name -> the element showing its last result
  asking: new Map(), // "kind:id" -> its card (a server's question, an approval, a sampling request)
};

export const $ = (id) => document.getElementById(id);

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export async function api(method, path, body) {
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

export const enc = encodeURIComponent;

export function announce(message) {
  $("announce").textContent = message;
}

export function activity(kind, text) {
  const list = $("activity");
  $("activity-panel").hidden = false;
  const time = new Date().toLocaleTimeString();
  list.prepend(h("li", { class: "activity-" + kind }, h("time", { text: time }), " ", text));
  while (list.children.length > 200) list.lastElementChild.remove();
}

export function showLogin() {
  $("login").hidden = false;
  $("app").hidden = true;
  $("live").dataset.state = "offline";
  $("live").textContent = "not logged in";
}
