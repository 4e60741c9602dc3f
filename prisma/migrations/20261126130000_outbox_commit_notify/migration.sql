-- Every transaction that writes outbox rows sends one notification on the channel
-- "outbox_committed" when it commits (Postgres delivers NOTIFY only at commit, and folds the
-- identical notifications of one transaction into one). The relay leader LISTENs on it
-- (events/publish/outbox-wakeup.ts), so rows committed by other processes (the catalog, the AI
-- subgraph) are published at once instead of at the next poll (OUTBOX_POLL_INTERVAL_MS).
-- Statement-level: a multi-row insert notifies once. Written by hand: Prisma does not model triggers.
CREATE FUNCTION "outbox_committed_notify"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('outbox_committed', '');
  RETURN NULL;
END;
$$;

CREATE TRIGGER "OutboxEvent_committed_notify"
  AFTER INSERT ON "OutboxEvent"
  FOR EACH STATEMENT EXECUTE FUNCTION "outbox_committed_notify"();
