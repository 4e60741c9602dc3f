-- CreateTable
CREATE TABLE "TenantSettings" (
    "tenantId" TEXT NOT NULL,
    "dataResidency" TEXT NOT NULL DEFAULT 'EU',
    "retentionClass" TEXT NOT NULL DEFAULT 'operational',
    "quotaEnabled" BOOLEAN NOT NULL DEFAULT false,
    "requestsPerMinute" INTEGER NOT NULL DEFAULT 600,
    "tokensPerDay" INTEGER NOT NULL DEFAULT 2000000,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "TenantSettings_pkey" PRIMARY KEY ("tenantId")
);

-- CreateTable
CREATE TABLE "FeatureFlag" (
    "tenantId" TEXT NOT NULL,
    "featureKey" TEXT NOT NULL,
    "flag" TEXT NOT NULL,
    "enabled" BOOLEAN NOT NULL,
    "updatedBy" TEXT NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "FeatureFlag_pkey" PRIMARY KEY ("tenantId","featureKey","flag")
);

-- CreateTable
CREATE TABLE "FeatureFlagChange" (
    "id" BIGSERIAL NOT NULL,
    "tenantId" TEXT NOT NULL,
    "featureKey" TEXT NOT NULL,
    "flag" TEXT NOT NULL,
    "enabled" BOOLEAN NOT NULL,
    "changedBy" TEXT NOT NULL,
    "reason" TEXT,
    "changedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "FeatureFlagChange_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Course" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "slug" TEXT NOT NULL,
    "title" JSONB NOT NULL,
    "description" JSONB NOT NULL,
    "defaultLocale" TEXT NOT NULL,
    "visibility" TEXT NOT NULL,
    "authors" JSONB NOT NULL,
    "taxonomy" JSONB NOT NULL,
    "tags" TEXT[],
    "cover" JSONB,
    "etag" TEXT NOT NULL,
    "sourceDraftId" TEXT,
    "state" TEXT NOT NULL DEFAULT 'registered',
    "retentionClass" TEXT NOT NULL DEFAULT 'operational',
    "dataResidency" TEXT NOT NULL DEFAULT 'EU',
    "versionSeq" INTEGER NOT NULL DEFAULT 0,
    "latestVersionLabel" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Course_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "CourseVersion" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "courseId" TEXT NOT NULL,
    "versionLabel" TEXT NOT NULL,
    "major" INTEGER NOT NULL,
    "minor" INTEGER NOT NULL,
    "patch" INTEGER NOT NULL,
    "publishedBy" TEXT NOT NULL,
    "durationMinutes" INTEGER NOT NULL,
    "estimatedReadingMinutes" INTEGER,
    "locales" TEXT[],
    "moduleSummaries" JSONB,
    "playPackageId" TEXT NOT NULL,
    "playPackageSha256" TEXT NOT NULL,
    "playPackageFormat" TEXT NOT NULL,
    "changelog" JSONB,
    "state" TEXT NOT NULL DEFAULT 'published',
    "becameLatest" BOOLEAN NOT NULL DEFAULT false,
    "sequence" INTEGER NOT NULL,
    "sourceEventId" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "CourseVersion_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Taxonomy" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "namespace" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "nodes" JSONB NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Taxonomy_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "TaxonomyVersion" (
    "taxonomyId" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "tenantId" TEXT NOT NULL,
    "diff" JSONB NOT NULL,
    "createdBy" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "TaxonomyVersion_pkey" PRIMARY KEY ("taxonomyId","version")
);

-- CreateTable
CREATE TABLE "OutboxEvent" (
    "id" BIGSERIAL NOT NULL,
    "txid" BIGINT NOT NULL DEFAULT ((pg_current_xact_id())::text)::bigint,
    "eventId" TEXT NOT NULL,
    "eventType" TEXT NOT NULL,
    "eventVersion" INTEGER NOT NULL,
    "subject" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "partitionKey" TEXT NOT NULL,
    "envelope" JSONB NOT NULL,
    "headers" JSONB NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "publishedAt" TIMESTAMP(3),
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "lastError" TEXT,

    CONSTRAINT "OutboxEvent_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "InboxEvent" (
    "consumer" TEXT NOT NULL,
    "eventId" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "processedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "InboxEvent_pkey" PRIMARY KEY ("consumer","eventId")
);

-- CreateTable
CREATE TABLE "IdempotencyRecord" (
    "key" TEXT NOT NULL,
    "fingerprint" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "status" INTEGER,
    "headers" JSONB,
    "body" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "IdempotencyRecord_pkey" PRIMARY KEY ("key")
);

-- CreateTable
CREATE TABLE "ProviderRoutingRule" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT,
    "featureKey" TEXT,
    "residency" TEXT,
    "activeVersion" INTEGER,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ProviderRoutingRule_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ProviderRoutingRuleVersion" (
    "ruleId" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "primary" JSONB NOT NULL,
    "fallbacks" JSONB NOT NULL,
    "createdBy" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ProviderRoutingRuleVersion_pkey" PRIMARY KEY ("ruleId","version")
);

-- CreateTable
CREATE TABLE "PromptTemplate" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT,
    "featureKey" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "body" TEXT NOT NULL,
    "variables" TEXT[],
    "hash" TEXT NOT NULL,
    "active" BOOLEAN NOT NULL DEFAULT false,
    "publishedBy" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "PromptTemplate_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "AIProvenance" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "actorType" TEXT NOT NULL,
    "actorId" TEXT NOT NULL,
    "featureKey" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "mode" TEXT NOT NULL DEFAULT 'live',
    "templateId" TEXT,
    "templateVersion" INTEGER,
    "templateHash" TEXT,
    "renderedPromptHash" TEXT,
    "ruleId" TEXT,
    "ruleVersion" INTEGER,
    "provider" TEXT,
    "model" TEXT,
    "attempts" JSONB NOT NULL DEFAULT '[]',
    "outputHash" TEXT,
    "inputTokens" INTEGER,
    "outputTokens" INTEGER,
    "moderation" JSONB,
    "reviewState" TEXT,
    "review" JSONB,
    "facilityId" TEXT,
    "specialty" TEXT,
    "subjectRef" TEXT,
    "residency" TEXT,
    "legacyBackfill" BOOLEAN NOT NULL DEFAULT false,
    "legacyId" TEXT,
    "heldText" TEXT,
    "heldTextExpiresAt" TIMESTAMP(3),
    "errorCode" TEXT,
    "latencyMs" INTEGER,
    "providerLatencyMs" INTEGER,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "completedAt" TIMESTAMP(3),

    CONSTRAINT "AIProvenance_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "HITLPolicy" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT,
    "featureKey" TEXT NOT NULL,
    "mode" TEXT NOT NULL,
    "updatedBy" TEXT NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "HITLPolicy_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ReviewQueue" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "facilityId" TEXT,
    "specialty" TEXT,
    "members" TEXT[],
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ReviewQueue_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ReviewTask" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "provenanceId" TEXT NOT NULL,
    "queueId" TEXT NOT NULL,
    "featureKey" TEXT NOT NULL,
    "state" TEXT NOT NULL DEFAULT 'open',
    "claimedBy" TEXT,
    "claimExpiresAt" TIMESTAMP(3),
    "decidedBy" TEXT,
    "decidedAt" TIMESTAMP(3),
    "decision" TEXT,
    "reason" TEXT,
    "editDiff" JSONB,
    "version" INTEGER NOT NULL DEFAULT 0,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ReviewTask_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "DataProtectionAssessment" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "residency" TEXT NOT NULL,
    "signedBy" TEXT NOT NULL,
    "signedAt" TIMESTAMP(3) NOT NULL,
    "documentHash" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "DataProtectionAssessment_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ConsumerCutover" (
    "tenantId" TEXT NOT NULL,
    "serviceName" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "cutoverAt" TIMESTAMP(3) NOT NULL,
    "retiredAt" TIMESTAMP(3),

    CONSTRAINT "ConsumerCutover_pkey" PRIMARY KEY ("tenantId","serviceName","provider")
);

-- CreateTable
CREATE TABLE "ShadowLatencySample" (
    "id" BIGSERIAL NOT NULL,
    "tenantId" TEXT NOT NULL,
    "featureKey" TEXT NOT NULL,
    "source" TEXT NOT NULL,
    "latencyMs" INTEGER NOT NULL,
    "recordedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ShadowLatencySample_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "FeatureFlagChange_tenantId_changedAt_idx" ON "FeatureFlagChange"("tenantId", "changedAt");

-- CreateIndex
CREATE INDEX "Course_tenantId_id_idx" ON "Course"("tenantId", "id");

-- CreateIndex
CREATE UNIQUE INDEX "Course_tenantId_slug_key" ON "Course"("tenantId", "slug");

-- CreateIndex
CREATE INDEX "CourseVersion_tenantId_courseId_idx" ON "CourseVersion"("tenantId", "courseId");

-- CreateIndex
CREATE UNIQUE INDEX "CourseVersion_courseId_versionLabel_key" ON "CourseVersion"("courseId", "versionLabel");

-- CreateIndex
CREATE UNIQUE INDEX "CourseVersion_courseId_sequence_key" ON "CourseVersion"("courseId", "sequence");

-- CreateIndex
CREATE INDEX "Taxonomy_tenantId_id_idx" ON "Taxonomy"("tenantId", "id");

-- CreateIndex
CREATE UNIQUE INDEX "Taxonomy_tenantId_namespace_key" ON "Taxonomy"("tenantId", "namespace");

-- CreateIndex
CREATE UNIQUE INDEX "OutboxEvent_eventId_key" ON "OutboxEvent"("eventId");

-- CreateIndex
CREATE INDEX "OutboxEvent_publishedAt_id_idx" ON "OutboxEvent"("publishedAt", "id");

-- CreateIndex
CREATE INDEX "OutboxEvent_tenantId_eventType_createdAt_idx" ON "OutboxEvent"("tenantId", "eventType", "createdAt");

-- CreateIndex
CREATE INDEX "InboxEvent_processedAt_idx" ON "InboxEvent"("processedAt");

-- CreateIndex
CREATE INDEX "IdempotencyRecord_expiresAt_idx" ON "IdempotencyRecord"("expiresAt");

-- CreateIndex
CREATE INDEX "ProviderRoutingRule_tenantId_featureKey_residency_idx" ON "ProviderRoutingRule"("tenantId", "featureKey", "residency");

-- CreateIndex
CREATE INDEX "PromptTemplate_featureKey_active_idx" ON "PromptTemplate"("featureKey", "active");

-- CreateIndex
CREATE UNIQUE INDEX "PromptTemplate_featureKey_tenantId_version_key" ON "PromptTemplate"("featureKey", "tenantId", "version");

-- CreateIndex
CREATE INDEX "AIProvenance_tenantId_featureKey_createdAt_idx" ON "AIProvenance"("tenantId", "featureKey", "createdAt");

-- CreateIndex
CREATE UNIQUE INDEX "AIProvenance_tenantId_legacyId_key" ON "AIProvenance"("tenantId", "legacyId");

-- CreateIndex
CREATE UNIQUE INDEX "HITLPolicy_tenantId_featureKey_key" ON "HITLPolicy"("tenantId", "featureKey");

-- CreateIndex
CREATE UNIQUE INDEX "ReviewQueue_tenantId_name_key" ON "ReviewQueue"("tenantId", "name");

-- CreateIndex
CREATE UNIQUE INDEX "ReviewTask_provenanceId_key" ON "ReviewTask"("provenanceId");

-- CreateIndex
CREATE INDEX "ReviewTask_tenantId_queueId_state_createdAt_idx" ON "ReviewTask"("tenantId", "queueId", "state", "createdAt");

-- CreateIndex
CREATE INDEX "DataProtectionAssessment_tenantId_residency_idx" ON "DataProtectionAssessment"("tenantId", "residency");

-- CreateIndex
CREATE INDEX "ShadowLatencySample_tenantId_featureKey_recordedAt_idx" ON "ShadowLatencySample"("tenantId", "featureKey", "recordedAt");

-- AddForeignKey
ALTER TABLE "CourseVersion" ADD CONSTRAINT "CourseVersion_courseId_fkey" FOREIGN KEY ("courseId") REFERENCES "Course"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ProviderRoutingRuleVersion" ADD CONSTRAINT "ProviderRoutingRuleVersion_ruleId_fkey" FOREIGN KEY ("ruleId") REFERENCES "ProviderRoutingRule"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

