-- switchboard's team store, version 5: the durable part of the HTTP front's sessions (clients
-- of 2025-11-25 and earlier): what their `initialize` said (rmcp's `SessionState`), whose
-- session it is (the principal's key; '' for a caller who did not sign in), and whether its
-- streams are primed, so that a gateway started again (or another one on the store) resumes a
-- session it does not hold instead of answering 404.
CREATE TABLE switchboard_sessions (
    id TEXT PRIMARY KEY,
    owner TEXT,
    primed BOOLEAN NOT NULL DEFAULT TRUE,
    state JSONB NOT NULL,
    created_ms BIGINT NOT NULL
);
CREATE INDEX switchboard_sessions_created ON switchboard_sessions (created_ms);
