// What a person does in a browser and an MCP client keeps while signing in, shared by the team
// tests' client scripts:
//
// - `OAuthState`: the TypeScript SDK's `OAuthClientProvider` (registration, tokens, PKCE
//   verifier), kept in memory for one run, with a loopback redirect URI nobody listens on (the
//   browser's last redirect is caught here, not followed);
// - `Browser`: a cookie jar that follows an authorization URL through `oidc-provider`'s own
//   sign-in and consent pages (devInteractions) as `login` would, until the browser is sent to a
//   URL that starts with `until` (the client's redirect URI, or the gateway's callback).

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
  /** A browser with no cookies, that signs in as `login` and stops at URLs under `until`. */
  constructor(login, until) {
    this.login = login;
    this.until = until;
    this.jar = new Map();
  }

  async get(url, init = {}) {
    const headers = { ...(init.headers ?? {}), cookie: [...this.jar].map(([k, v]) => `${k}=${v}`).join("; ") };
    const res = await fetch(url, { ...init, headers, redirect: "manual" });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(";");
      const at = pair.indexOf("=");
      this.jar.set(pair.slice(0, at), pair.slice(at + 1));
    }
    return res;
  }

  /** Follows redirects from `url` until one goes to `until` (that URL), or a page. */
  async follow(url, init) {
    let res = await this.get(url, init);
    for (let hops = 0; hops < 10; hops++) {
      const to = res.headers.get("location");
      if (!to) return res;
      const next = new URL(to, url);
      if (next.href.startsWith(this.until)) return next;
      url = next.href;
      res = await this.get(url);
    }
    throw new Error(`too many redirects from ${url}`);
  }

  /** The provider's page at `res`: its form's action, submitted with `fields`. */
  async submit(res, base, fields) {
    const page = await res.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(page)?.[1];
    if (!action) throw new Error(`no form on the provider's page (${res.status}): ${page.slice(0, 400)}`);
    return this.follow(new URL(action.replaceAll("&amp;", "&"), base).href, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(fields).toString(),
    });
  }

  /** Signs in at the authorization URL `url` and consents; the URL the browser is sent back to. */
  async signIn(url) {
    url = new URL(url);
    let at = await this.follow(url.href);
    if (at instanceof URL) return at;
    at = await this.submit(at, url, { prompt: "login", login: this.login, password: "any" });
    if (!(at instanceof URL)) at = await this.submit(at, url, { prompt: "consent" });
    if (!(at instanceof URL)) throw new Error(`the provider did not send the browser back (${at.status}): ${await at.text()}`);
    const error = at.searchParams.get("error");
    if (error) throw new Error(`the provider refused: ${error}: ${at.searchParams.get("error_description")}`);
    return at;
  }
}
