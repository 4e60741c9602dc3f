-- CreateTable
CREATE TABLE "IdempotentEffect" (
    "key" TEXT NOT NULL,
    "fingerprint" TEXT NOT NULL,
    "value" JSONB NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "IdempotentEffect_pkey" PRIMARY KEY ("key")
);

-- CreateIndex
CREATE INDEX "IdempotentEffect_expiresAt_idx" ON "IdempotentEffect"("expiresAt");

