// A colleague at the pages of a person of a team (the gateway's `/inputs` and `/sign-in`, and
// the `/oauth/callback` of her sign-in to her own upstream), each tried at every address given
// (the balancer, each replica), in browsers as people use them, signed in on the way with the
// organisation's provider (`oidc-provider`'s own pages):
//
// - a browser signed in nowhere opens her values page: sent to sign in first, then back;
// - Bob's browser (signed in as bob) opens her values page, posts values to it, opens her
//   sign-in page, and lands on her callback with the code her provider gave her;
// - then Alice's browser: her sign-in page to her upstream's provider and back to her callback,
//   her values page at every address, and her values kept.
//
//   node colleague_pages.mjs <her sign-in URL> <her values URL> <addresses JSON> <callback prefix>
//
// Prints one JSON line: what each browser got (status, where it was sent, the page's first
// words).
const [signIn, inputs, basesJson, callback] = process.argv.slice(2);
const bases = JSON.parse(basesJson);
const { Browser } = await import(new URL("./browser.mjs", import.meta.url).href);

/** `url` at the address `base` (same path and query). */
const at = (url, base) => {
  const u = new URL(url);
  const b = new URL(base);
  u.protocol = b.protocol;
  u.host = b.host;
  return u.href;
};
const text = (page) => page.replace(/<[^>]+>/g, " ").replace(/\s+/g, " ").trim().slice(0, 400);
const shown = (opened) =>
  opened instanceof URL ? { sent: opened.href } : { status: opened.status, url: opened.url, page: text(opened.page) };
const form = (fields) => ({
  method: "POST",
  headers: { "content-type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams(fields).toString(),
});
const state = new URL(inputs).searchParams.get("state");
const report = { nobody: [], bob: { inputs: [], posted: [], signIn: [], callback: [] }, alice: { inputs: [] } };

// Signed in nowhere: to the organisation's sign-in first, the page to come back to named.
for (const base of bases) {
  const res = await new Browser("nobody", undefined, bases).get(at(inputs, base));
  report.nobody.push({ base, status: res.status, location: res.headers.get("location") });
}

// Bob, signed in as himself.
const bob = new Browser("bob", callback, bases);
report.bob.signedIn = shown(await bob.open(`${bases[0]}/people/login`));
for (const base of bases) {
  report.bob.inputs.push({ base, ...shown(await bob.open(at(inputs, base))) });
  const posted = await bob.get(at(new URL("/inputs", inputs).href, base), form({ state, input0: "set-by-bob" }));
  report.bob.posted.push({ base, status: posted.status, page: text(await posted.text()) });
  report.bob.signIn.push({ base, ...shown(await bob.open(at(signIn, base))) });
}

// Alice's sign-in to her upstream, up to the redirect back (her code, her state), not opened.
const alice = new Browser("alice", callback, bases);
const back = await alice.signIn(signIn);
report.alice.authorization = alice.authorization;
for (const base of bases) {
  const res = await bob.land(at(back.href, base));
  report.bob.callback.push({ base, status: res.status, page: text(res.page) });
}
const landed = await alice.land(back.href);
report.alice.callback = { status: landed.status, page: text(landed.page) };

// Her values page, at every address; then her values, kept.
for (const base of bases) report.alice.inputs.push({ base, ...shown(await alice.open(at(inputs, base))) });
const kept = await alice.get(new URL("/inputs", inputs).href, form({ state, input0: "alice-token" }));
report.alice.kept = { status: kept.status, page: text(await kept.text()) };
process.stdout.write(JSON.stringify(report) + "\n");
