-- Enum widening is a minor change and consumers must tolerate unknown values (the spec's
-- versioning table): what the catalog does with one, instead of dead-lettering it
-- (docs/catalog-and-events.md, "Unknown enum values").

-- GDPR requests acknowledged without being applied, and why (no subject id: the request id
-- finds the request at the GDPR service).
CREATE TABLE "GdprRequestNotApplied" (
    "tenantId" TEXT NOT NULL,
    "eventId" TEXT NOT NULL,
    "requestId" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "requestType" TEXT NOT NULL,
    "subjectType" TEXT NOT NULL,
    "receivedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "GdprRequestNotApplied_pkey" PRIMARY KEY ("tenantId","eventId")
);
CREATE INDEX "GdprRequestNotApplied_reason_receivedAt_idx" ON "GdprRequestNotApplied"("reason", "receivedAt");

-- Built play packages of a format the catalog does not know yet, held until it does.
CREATE TABLE "HeldPlayPackage" (
    "tenantId" TEXT NOT NULL,
    "eventId" TEXT NOT NULL,
    "slug" TEXT NOT NULL,
    "format" TEXT NOT NULL,
    "envelope" JSONB NOT NULL,
    "heldAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lastError" TEXT,

    CONSTRAINT "HeldPlayPackage_pkey" PRIMARY KEY ("tenantId","eventId")
);
CREATE INDEX "HeldPlayPackage_format_heldAt_idx" ON "HeldPlayPackage"("format", "heldAt");
