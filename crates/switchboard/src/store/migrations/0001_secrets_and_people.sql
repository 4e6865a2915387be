-- switchboard's team store, version 1: sealed secrets (each person's and the host's upstream
-- logins, each person's input values) and the people who signed in. A value in `sealed` is
-- `sb1:<key id>:<base64>` (AES-256-GCM, bound to its kind, owner and key): never plaintext.
CREATE TABLE switchboard_secrets (
    kind TEXT NOT NULL,
    owner TEXT NOT NULL,
    key TEXT NOT NULL,
    label TEXT NOT NULL DEFAULT '',
    sealed TEXT NOT NULL,
    updated_ms BIGINT NOT NULL,
    PRIMARY KEY (kind, owner, key)
);

CREATE TABLE switchboard_people (
    key TEXT PRIMARY KEY,
    principal JSONB NOT NULL,
    seen_ms BIGINT NOT NULL
);
