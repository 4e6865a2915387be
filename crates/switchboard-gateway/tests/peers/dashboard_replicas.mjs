// A person's browser on a team's dashboard served by several replicas: signs in as <login>,
// starting at one replica (<start>/people/login) and finishing at another (the provider sends
// the browser back to the balancer's <public>/people/callback: it is taken to <finish>
// instead), then asks `GET /api/me` with the session cookie at each of <me...>.
//
//   node dashboard_replicas.mjs <public> <start> <finish> <login> <me>...
//
// Prints one JSON line: {"callback": {"status", "body"}, "me": [{"at", "status", "body"}], "session"}.
const [publicUrl, start, finish, login, ...mes] = process.argv.slice(2);
const { Browser } = await import(new URL("./browser.mjs", import.meta.url).href);
// The balancer and each replica are one site (what the browser reaches; the test goes round it).
const browser = new Browser(login, `${publicUrl}/people/callback`, [publicUrl, start, finish, ...mes]);
const back = await browser.signIn(`${start}/people/login`);
const res = await browser.get(new URL(back.pathname + back.search, finish).href);
const callback = { status: res.status, body: res.status === 303 ? "" : await res.text() };
const me = [];
for (const at of mes) {
  const r = await browser.get(`${at}/api/me`);
  const text = await r.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  me.push({ at, status: r.status, body });
}
// The session cookie's value, for the test to try the person's part as them.
const session = browser.jar(publicUrl).get("switchboard_person");
process.stdout.write(JSON.stringify({ callback, me, session }) + "\n");
