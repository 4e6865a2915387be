-- switchboard's team store, version 2: the service accounts' API keys (their SHA-256, name
-- and groups as one record; a key itself is shown once and never kept).
CREATE TABLE switchboard_api_keys (
    name TEXT PRIMARY KEY,
    record JSONB NOT NULL
);
