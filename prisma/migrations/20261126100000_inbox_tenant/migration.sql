-- The inbox is keyed by (consumer, tenant, event id): producers choose event ids, and two
-- tenants' producers can choose the same one (docs/catalog-and-events.md, "Inbox").
--
-- Existing rows never recorded their tenant, and nothing in them names it (consumer, event id,
-- subject), so no backfill can find it. They keep tenant '' and are read as they were written:
-- a row with tenant '' matches its event id in every tenant (events/inbox.ts). They age out
-- with the inbox's retention like any other row.
ALTER TABLE "InboxEvent" ADD COLUMN "tenantId" TEXT NOT NULL DEFAULT '';

ALTER TABLE "InboxEvent" DROP CONSTRAINT "InboxEvent_pkey";
ALTER TABLE "InboxEvent" ADD CONSTRAINT "InboxEvent_pkey" PRIMARY KEY ("consumer", "tenantId", "eventId");
