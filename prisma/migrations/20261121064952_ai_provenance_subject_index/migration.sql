-- CreateIndex
CREATE INDEX "AIProvenance_tenantId_subjectRef_createdAt_idx" ON "AIProvenance"("tenantId", "subjectRef", "createdAt");
