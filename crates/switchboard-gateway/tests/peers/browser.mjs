// What a person does in a browser and an MCP client keeps while signing in, shared by the team
// tests' client scripts:
//
// - `OAuthState`: the TypeScript SDK's `OAuthClientProvider` (registration, tokens, PKCE
//   verifier), kept in memory for one run, with a loopback redirect URI nobody listens on (the
//   browser's last redirect is caught here, not followed);
// - `Browser`: a cookie jar that follows a URL through `oidc-provider`'s own sign-in and consent
//   pages (devInteractions) as `login` would, as many as come (a person's page of the gateway
//   signs them in with the organisation's provider first, then sends them to the upstream's),
//   until the browser is sent to a URL that starts with `until` (the client's redirect URI, or
//   the gateway's callback) or shown a page of the gateway.

export const REDIRECT = "http://127.0.0.1:9/callback";

export class OAuthState {
  constructor() {
    this.info = undefined;
    this.saved = undefined;
    this.verifier = undefined;
    this.authorizationUrl = undefined;
  }
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata() {
    return {
      client_name: "switchboard team test",
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
      application_type: "native",
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(v) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
}

export class Browser {
  /**
   * A browser with no cookies, that signs in as `login` and stops at URLs under `until`. Its
   * cookies are kept per origin (each provider and the gateway are sites of their own, though
   * all listen on 127.0.0.1), but the origins of `oneSite` share theirs (a balancer and the
   * replicas behind it, reached directly by the test).
   */
  constructor(login, until, oneSite = []) {
    this.login = login;
    this.until = until;
    this.jars = new Map();
    this.oneSite = oneSite.map((o) => new URL(o).origin);
    this.visited = [];
  }

  /** The last authorization URL visited that sends the browser back to `until`. */
  get authorization() {
    return this.visited.findLast((u) => {
      const back = new URL(u).searchParams.get("redirect_uri");
      return this.until && back?.startsWith(this.until);
    });
  }

  /** The cookie jar of `url`'s site. */
  jar(url) {
    const origin = new URL(url).origin;
    const site = this.oneSite.includes(origin) ? this.oneSite[0] : origin;
    if (!this.jars.has(site)) this.jars.set(site, new Map());
    return this.jars.get(site);
  }

  async get(url, init = {}) {
    this.visited.push(String(url));
    const jar = this.jar(url);
    const headers = { ...(init.headers ?? {}), cookie: [...jar].map(([k, v]) => `${k}=${v}`).join("; ") };
    const res = await fetch(url, { ...init, headers, redirect: "manual" });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(";");
      const at = pair.indexOf("=");
      jar.set(pair.slice(0, at), pair.slice(at + 1));
    }
    return res;
  }

  /** Follows redirects from `url` until one goes to `until` (that URL), or a page (`this.at`: its URL). */
  async follow(url, init) {
    let res = await this.get(url, init);
    for (let hops = 0; hops < 20; hops++) {
      this.at = url;
      const to = res.headers.get("location");
      if (!to) return res;
      const next = new URL(to, url);
      if (this.until && next.href.startsWith(this.until)) return next;
      url = next.href;
      res = await this.get(url);
    }
    throw new Error(`too many redirects from ${url}`);
  }

  /**
   * Opens `url` as the person: through every provider's sign-in and consent page on the way
   * (the organisation's, that a person's page of the gateway asks for first, then an upstream's),
   * until the browser is sent to a URL under `until` (returned) or shown a page that is not a
   * provider's (returned as `{status, url, page}`).
   */
  async open(url) {
    let at = await this.follow(new URL(url).href);
    for (let forms = 0; forms < 8; forms++) {
      if (at instanceof URL) return at;
      const page = await at.text();
      const action = /<form[^>]*action="([^"]+)"/.exec(page)?.[1];
      if (!action || !action.includes("/interaction/")) return { status: at.status, url: this.at, page };
      const fields = /name="login"/.test(page)
        ? { prompt: "login", login: this.login, password: "any" }
        : { prompt: "consent" };
      at = await this.follow(new URL(action.replaceAll("&amp;", "&"), this.at).href, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(fields).toString(),
      });
    }
    throw new Error(`more than 8 provider pages from ${url}`);
  }

  /** Signs in at `url` (an authorization URL, or a page that leads to one) and consents; the URL the browser is sent back to. */
  async signIn(url) {
    const at = await this.open(url);
    if (!(at instanceof URL)) throw new Error(`the browser was not sent back (${at.status} at ${at.url}): ${at.page.slice(0, 400)}`);
    const error = at.searchParams.get("error");
    if (error) throw new Error(`the provider refused: ${error}: ${at.searchParams.get("error_description")}`);
    return at;
  }

  /** The page at `url` (a GET with this browser's cookies), as `{status, page}`. */
  async land(url) {
    const res = await this.get(url);
    return { status: res.status, page: await res.text() };
  }
}
