-- switchboard's team store, version 9: the dashboard's one-time login links asked for with
-- `POST /api/login-links`, so that a link made at one replica is taken at whichever the
-- balancer sends the browser to, once. Kept by the SHA-256 of the link's code (the code itself
-- is never kept), until it expires.
CREATE TABLE switchboard_login_links (
    digest TEXT PRIMARY KEY,
    until_ms BIGINT NOT NULL
);
