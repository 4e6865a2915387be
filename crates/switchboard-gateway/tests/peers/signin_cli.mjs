// The browser's part of a sign-in, for a client script in another language: opens the sign-in
// URL the gateway gave (its `/sign-in` page: the organisation's sign-in first, then the
// upstream's authorization URL) as <login> on `oidc-provider`'s own pages, follows the redirect back to
// <until> (the gateway's callback) and says how that page answered.
//
//   node signin_cli.mjs <authorization URL> <login> <until>
//
// Prints one JSON line: {"status": <HTTP status of the callback>}.
const [url, login, until] = process.argv.slice(2);
const { Browser } = await import(new URL("./browser.mjs", import.meta.url).href);
const browser = new Browser(login, until);
const back = await browser.signIn(url);
// The callback in the same browser: signed in there as <login>.
const res = await browser.land(back.href);
process.stdout.write(JSON.stringify({ status: res.status }) + "\n");
