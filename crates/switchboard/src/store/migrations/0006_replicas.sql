-- switchboard's team store, version 6: the gateways serving from this store (replicas behind
-- a load balancer), each with the address the others reach it by directly, so that a request
-- for what one of them holds (a 2026-07-28 client's answers to an `input_required` round of a
-- call it runs; any request of a legacy session it serves) is passed to it whichever replica
-- it reached. Each replica says it is alive every few seconds; one not heard from is taken as
-- gone, and another takes its sessions over.
CREATE TABLE switchboard_replicas (
    id TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    started_ms BIGINT NOT NULL,
    seen_ms BIGINT NOT NULL
);
-- The replica serving each legacy session (NULL: none yet, as for sessions of version 5).
ALTER TABLE switchboard_sessions ADD COLUMN replica TEXT;
