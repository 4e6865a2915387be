// What servers and the policy ask the person, waiting in one list on the page: servers'
// questions (elicitation), calls the policy asks about (approval), servers' requests for a
// completion (sampling). Each kind has its card, its list endpoint and its answer endpoint;
// a card goes when it is answered here, elsewhere, or withdrawn.

import { approvalCard } from "./approvals.js";
import { $, api, state } from "./core.js";
import { questionCard } from "./questions.js";
import { samplingCard } from "./sampling.js";

const KINDS = {
  elicitation: {
    list: async () => (await api("GET", "/api/elicitations")).elicitations,
    card: (q, done) => questionCard(q, async (action, content) => done(action === "accept" ? { action, content } : { action })),
    answer: (id, body) => api("POST", `/api/elicitations/${id}`, body),
  },
  approval: {
    list: async () => (await api("GET", "/api/approvals")).approvals,
    card: (p, done) => approvalCard(p, async (decision) => done({ decision })),
    answer: (id, body) => api("POST", `/api/approvals/${id}`, body),
  },
  sampling: {
    list: async () => (await api("GET", "/api/sampling")).requests,
    card: (p, done) => samplingCard(p, done),
    answer: (id, body) => api("POST", `/api/sampling/${id}`, body),
  },
};

const key = (kind, id) => `${kind}:${id}`;

/** The card of item `id` of `kind`, if it is on the page. */
export function cardOf(kind, id) {
  return state.asking.get(key(kind, id));
}

/** Shows `item` of `kind` (once). */
export function add(kind, item) {
  const k = key(kind, item.id);
  if (state.asking.has(k)) return;
  const spec = KINDS[kind];
  const card = spec.card(item, async (body) => {
    await spec.answer(item.id, body);
    remove(kind, item.id);
  });
  state.asking.set(k, card);
  $("questions").append(card);
  $("questions").hidden = false;
}

/** Takes item `id` of `kind` off the page. */
export function remove(kind, id) {
  const k = key(kind, id);
  const card = state.asking.get(k);
  if (!card) return;
  card.remove();
  state.asking.delete(k);
  $("questions").hidden = state.asking.size === 0;
}

/** Shows exactly what waits now, of every kind. */
export async function load() {
  await Promise.all(
    Object.entries(KINDS).map(async ([kind, spec]) => {
      const items = await spec.list();
      const waiting = new Set(items.map((i) => key(kind, i.id)));
      for (const k of [...state.asking.keys()]) if (k.startsWith(`${kind}:`) && !waiting.has(k)) remove(kind, k.slice(kind.length + 1));
      for (const item of items) add(kind, item);
    }),
  );
}
