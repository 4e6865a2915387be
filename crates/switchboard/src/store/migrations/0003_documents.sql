-- switchboard's team store, version 3: documents kept whole, changed in one transaction under
-- the row's lock (the remembered "always" approvals: `approvals`).
CREATE TABLE switchboard_documents (
    name TEXT PRIMARY KEY,
    body JSONB NOT NULL,
    updated_ms BIGINT NOT NULL
);
