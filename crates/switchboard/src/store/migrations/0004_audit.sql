-- switchboard's team store, version 4: the audit log. One row per tool call (`kind` 'call'),
-- and rows that say records were lost (`kind` 'lost': the database refused them for longer
-- than the writer could hold them). The record is kept as written (JSON, not JSONB: its
-- text unchanged); the columns beside it are what questions select on.
CREATE TABLE switchboard_audit (
    id BIGSERIAL PRIMARY KEY,
    time_ms BIGINT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('call', 'lost')),
    subject TEXT,
    server TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    record JSON NOT NULL
);
CREATE INDEX switchboard_audit_time ON switchboard_audit (time_ms);
CREATE INDEX switchboard_audit_subject ON switchboard_audit (subject, time_ms);
