-- switchboard's team store, version 10: where each page a person was sent to is held. A
-- URL-mode elicitation's page (a person's own input values, a person's sign-in to their own
-- upstream) and the sign-in's callback are served by the replica holding what the page
-- completes (in its memory: the login's PKCE verifier, the person's hub); a replica the
-- browser reaches instead finds it here, by the SHA-256 of the page's `state` (the state itself
-- is never kept), and passes the request on. `owner` is the principal's key of the person the
-- page is for.
CREATE TABLE switchboard_pages (
    digest TEXT PRIMARY KEY,
    replica TEXT NOT NULL,
    owner TEXT NOT NULL,
    created_ms BIGINT NOT NULL
);
