"""A Python MCP server (the `mcp` package's auth support) with its own authorization server, for
switchboard's OAuth tests: dynamic registration, PKCE, an authorize endpoint that approves at
once (an HTTP client following redirects plays the browser), short-lived access tokens and
refresh tokens that rotate on every use (a used one is refused with `invalid_grant`).

`python py_oauth_server.py PORT TTL_SECONDS [--no-registration] [--secret-ttl N] [--issuer URL]`
serves http://127.0.0.1:PORT/mcp; `--no-registration` leaves dynamic client registration off
(clients must be pre-registered); `--secret-ttl N` gives every registered client a secret that
expires after N seconds (`client_secret_expires_at`); `--issuer URL` names the authorization
server by another address (a proxy in front of this same process, which a test can take down
while the resource server stays up). Clients and tokens live in memory: a restart forgets them.
"""
import secrets
import sys
import time

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

PORT = int(sys.argv[1])
TTL = int(sys.argv[2])
REGISTRATION = "--no-registration" not in sys.argv
SECRET_TTL = int(sys.argv[sys.argv.index("--secret-ttl") + 1]) if "--secret-ttl" in sys.argv else None

if SECRET_TTL is not None:
    # Those clients authenticate in the request body, and the metadata says only that (the SDK's
    # token endpoint wants `client_id` in the body even with Basic authentication).
    import mcp.server.auth.routes as _routes

    _build = _routes.build_metadata

    def _post_only(*args, **kwargs):
        metadata = _build(*args, **kwargs)
        metadata.token_endpoint_auth_methods_supported = ["client_secret_post"]
        return metadata

    _routes.build_metadata = _post_only
BASE = f"http://127.0.0.1:{PORT}"
ISSUER = sys.argv[sys.argv.index("--issuer") + 1] if "--issuer" in sys.argv else BASE


class Provider:
    def __init__(self):
        self.clients = {}
        self.codes = {}
        self.access = {}
        self.refresh = {}
        self.refreshes = 0

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull):
        if SECRET_TTL is not None:
            # As some authorization servers do: every client gets a secret, which expires.
            client_info.token_endpoint_auth_method = "client_secret_post"
            client_info.client_secret = secrets.token_urlsafe(16)
            client_info.client_secret_expires_at = int(time.time()) + SECRET_TTL
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client, params: AuthorizationParams):
        code = secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or ["mcp"],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code):
        return self.codes.get(authorization_code)

    def _issue(self, client_id, scopes, resource):
        access, refresh = "at-" + secrets.token_urlsafe(16), "rt-" + secrets.token_urlsafe(16)
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=int(time.time()) + TTL, resource=resource
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(access_token=access, expires_in=TTL, scope=" ".join(scopes), refresh_token=refresh)

    async def exchange_authorization_code(self, client, authorization_code):
        self.codes.pop(authorization_code.code, None)
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client, refresh_token):
        token = self.refresh.get(refresh_token)
        return token if token and token.client_id == client.client_id else None

    async def exchange_refresh_token(self, client, refresh_token, scopes):
        # Rotation: the refresh token is spent.
        if self.refresh.pop(refresh_token.token, None) is None:
            raise TokenError("invalid_grant", "refresh token already used")
        self.refreshes += 1
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token):
        found = self.access.get(token)
        if found and found.expires_at and found.expires_at < time.time():
            return None
        return found

    async def revoke_token(self, token):
        self.access.clear()
        self.refresh.clear()


provider = Provider()
mcp = MCPServer(
    "python-oauth-peer",
    auth_server_provider=provider,
    auth=AuthSettings(
        issuer_url=ISSUER,
        resource_server_url=f"{BASE}/mcp",
        client_registration_options=ClientRegistrationOptions(
            enabled=REGISTRATION,
            valid_scopes=["mcp"],
            default_scopes=["mcp"],
            client_secret_expiry_seconds=SECRET_TTL,
        ),
        revocation_options=RevocationOptions(enabled=True),
        required_scopes=["mcp"],
    ),
)


@mcp.tool()
def whoami() -> str:
    """Says the call was authorised, and how many refreshes the server granted so far."""
    return f"authorised; refreshes={provider.refreshes}"


@mcp.tool()
def revoke_everything() -> str:
    """Revokes every token this server issued (the next request needs a new login)."""
    provider.access.clear()
    provider.refresh.clear()
    return "revoked"


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=PORT)
