-- AlterTable
ALTER TABLE "Course" ADD COLUMN     "metadataProvenance" JSONB NOT NULL DEFAULT '{}';

-- CreateTable
CREATE TABLE "ErasedAuthor" (
    "tenantId" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "requestId" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ErasedAuthor_pkey" PRIMARY KEY ("tenantId","userId")
);

