// A team's dashboard in a real browser: Debian's Chromium, headless, driven by playwright-core.
// Run by tests/team.rs, which serves a team's gateway (`serve` with `identity` and
// `admin_groups: ["admins"]`) where alice (group devs) made CALLS calls, and passes BASE (its
// URL), CALLS, SHOTS (a folder for screenshots), CHROMIUM and PLAYWRIGHT.
//
// Alice opens the dashboard with no session: it offers the organisation's sign-in; she signs in
// on oidc-provider's own pages and lands back on the dashboard, which shows her alone, her login
// and her calls. Bob (an admin) signs in the same way and sees both of them.
import { createRequire } from "node:module";
import { strict as assert } from "node:assert";

const { BASE, CALLS, SHOTS, CHROMIUM, PLAYWRIGHT } = process.env;
const { chromium } = createRequire(`${PLAYWRIGHT}/`)("playwright-core");
const step = (text) => console.log(`- ${text}`);

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-sync"],
});

/** Signs `login` in to the dashboard in a browser of their own; their page. */
async function signIn(login) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(`${BASE}/`);
  await page.locator("#sign-in").waitFor({ state: "visible", timeout: 10000 });
  step(`${login}: the dashboard offers the organisation's sign-in`);
  await page.locator("#sign-in-link").click();
  await page.locator("input[name=login]").waitFor({ timeout: 10000 });
  await page.fill("input[name=login]", login);
  await page.fill("input[name=password]", "any");
  await page.locator("button[type=submit]").first().click();
  // The consent page (the first sign-in of this client for this person).
  await page.waitForURL((u) => u.href.startsWith(`${BASE}/`) || u.pathname.includes("/interaction/"), { timeout: 10000 });
  if (!page.url().startsWith(`${BASE}/`)) {
    await page.locator("button[type=submit]").first().click();
  }
  await page.waitForURL(`${BASE}/`, { timeout: 10000 });
  step(`${login}: signed in at the provider, back on the dashboard`);
  return { page, errors };
}

const alice = await signIn("alice");
await alice.page.locator("#summary", { hasText: "Signed in as Alice (alice)" }).waitFor({ timeout: 10000 });
assert.match(await alice.page.locator("#summary").textContent(), /your own logins and calls/);
assert.equal(await alice.page.locator("#app").isHidden(), true, "the host's part is not shown");
await alice.page.locator("#people-panel").waitFor({ state: "visible", timeout: 10000 });
await alice.page.locator(".person").first().waitFor({ timeout: 10000 });
assert.equal(await alice.page.locator(".person").count(), 1);
assert.match(await alice.page.locator(".person").textContent(), /Alice \(alice\)/);
assert.match(await alice.page.locator(".person-logins").textContent(), /up/);
step("alice: sees herself alone, with her login to `up`");
await alice.page.getByRole("button", { name: "Their calls" }).click();
await alice.page.locator(".person-calls li").first().waitFor({ timeout: 10000 });
assert.equal(await alice.page.locator(".person-calls li").count(), Number(CALLS));
assert.match(await alice.page.locator(".person-calls").textContent(), /whoami · allow · ok/);
step(`alice: her ${CALLS} calls`);
await alice.page.screenshot({ path: `${SHOTS}/people-alice.png`, fullPage: true });

const bob = await signIn("bob");
await bob.page.locator("#summary", { hasText: "Signed in as Bob (bob)" }).waitFor({ timeout: 10000 });
assert.match(await bob.page.locator("#summary").textContent(), /you see everyone/);
await bob.page.locator(".person").nth(1).waitFor({ timeout: 10000 });
const names = await bob.page.locator(".person strong").allTextContents();
assert.deepEqual(names.sort(), ["Alice (alice)", "Bob (bob)"]);
step("bob (admins): sees everyone");
await bob.page.screenshot({ path: `${SHOTS}/people-bob.png`, fullPage: true });

assert.deepEqual([...alice.errors, ...bob.errors], [], "no error on the pages");
await browser.close();
console.log("all steps passed");
