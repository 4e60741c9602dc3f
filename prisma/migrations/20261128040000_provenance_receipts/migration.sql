-- Verifiable AI provenance (docs/ai-gateway.md, "Receipts"): one signed receipt per provenance
-- record, chained per tenant through ReceiptChainHead; the public keys that verify them.
-- CreateTable
CREATE TABLE "ProvenanceReceipt" (
    "tenantId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "provenanceId" TEXT NOT NULL,
    "event" TEXT NOT NULL,
    "jws" TEXT NOT NULL,
    "hash" TEXT NOT NULL,
    "kid" TEXT NOT NULL,
    "signedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ProvenanceReceipt_pkey" PRIMARY KEY ("tenantId","seq")
);

-- CreateTable
CREATE TABLE "ReceiptChainHead" (
    "tenantId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "hash" TEXT,

    CONSTRAINT "ReceiptChainHead_pkey" PRIMARY KEY ("tenantId")
);

-- CreateTable
CREATE TABLE "ReceiptSigningKey" (
    "kid" TEXT NOT NULL,
    "publicJwk" JSONB NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ReceiptSigningKey_pkey" PRIMARY KEY ("kid")
);

-- CreateIndex
CREATE INDEX "ProvenanceReceipt_provenanceId_idx" ON "ProvenanceReceipt"("provenanceId");

-- CreateIndex
CREATE INDEX "ProvenanceReceipt_tenantId_signedAt_idx" ON "ProvenanceReceipt"("tenantId", "signedAt");

