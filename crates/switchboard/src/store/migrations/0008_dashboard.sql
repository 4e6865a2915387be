-- switchboard's team store, version 8: what `serve`'s dashboard keeps so that any replica
-- behind a load balancer serves it. People's sign-ins under way (the PKCE verifier sealed,
-- by the sign-in's `state`), their dashboard sessions (by the SHA-256 of the cookie's value:
-- the value itself is never kept), the calls waiting for approval at each process (by the
-- process's `Database::origin`), and how many follow each process's events (said every few
-- seconds, so that a process knows whether anyone anywhere can be asked).
CREATE TABLE switchboard_sign_ins (
    state TEXT PRIMARY KEY,
    sealed TEXT NOT NULL,
    created_ms BIGINT NOT NULL
);
CREATE TABLE switchboard_dashboard_sessions (
    digest TEXT PRIMARY KEY,
    principal JSONB NOT NULL,
    until_ms BIGINT NOT NULL
);
CREATE TABLE switchboard_approvals (
    id BIGSERIAL PRIMARY KEY,
    origin TEXT NOT NULL,
    sealed TEXT NOT NULL,
    asked_ms BIGINT NOT NULL
);
CREATE TABLE switchboard_watchers (
    origin TEXT PRIMARY KEY,
    watchers INTEGER NOT NULL,
    seen_ms BIGINT NOT NULL
);
