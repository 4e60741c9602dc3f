-- The erasure record names the user by the SHA-256 of the id (subgraphs/catalog/gdpr/
-- redaction.logic.ts, erasureKey), so it is not itself a copy of the id it keeps erased.
--
-- Erasures recorded before this migration were applied to authors only; their versions'
-- publishedBy, taxonomy versions and stored events still hold the id. Those rows keep "userId"
-- until the catalog has applied the erasure to every copy with the configured retention classes
-- (completeRecordedErasures, run when the catalog starts), which then clears it; new records
-- never hold it.
ALTER TABLE "ErasedAuthor" ADD COLUMN "userIdSha256" TEXT;
UPDATE "ErasedAuthor" SET "userIdSha256" = encode(sha256(convert_to("userId", 'UTF8')), 'hex');
ALTER TABLE "ErasedAuthor" ALTER COLUMN "userIdSha256" SET NOT NULL;

ALTER TABLE "ErasedAuthor" DROP CONSTRAINT "ErasedAuthor_pkey";
ALTER TABLE "ErasedAuthor" ADD CONSTRAINT "ErasedAuthor_pkey" PRIMARY KEY ("tenantId", "userIdSha256");
ALTER TABLE "ErasedAuthor" ALTER COLUMN "userId" DROP NOT NULL;
