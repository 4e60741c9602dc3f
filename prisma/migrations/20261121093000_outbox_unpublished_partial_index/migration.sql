-- The relay polls `WHERE "publishedAt" IS NULL ORDER BY id`. Through the full index
-- ("publishedAt", id) every poll after a drained backlog walked the dead entries the backlog's
-- UPDATEs left until vacuum removed them (12,000-15,000 buffers, 98-354 ms per idle poll in
-- bench/README.md, scale). A partial index holds only unpublished rows.
-- Written by hand: Prisma 6.19's engine (prisma/draft-migration.sh) does not diff partial indexes.
CREATE INDEX "OutboxEvent_unpublished_idx" ON "OutboxEvent"("id") WHERE "publishedAt" IS NULL;
