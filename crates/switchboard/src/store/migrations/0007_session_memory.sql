-- switchboard's team store, version 7: what each legacy session's client was given (a digest
-- of each list it was last sent, the resources it subscribed to), so that a replica taking the
-- session over tells the client which lists changed meanwhile and subscribes again.
ALTER TABLE switchboard_sessions ADD COLUMN memory JSONB NOT NULL DEFAULT '{}'::jsonb;
