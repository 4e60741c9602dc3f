-- The outbox relay's leadership lease with a fencing token (events/relay-lease.ts).
CREATE TABLE "OutboxRelayLease" (
    "name" TEXT NOT NULL,
    "holder" TEXT NOT NULL,
    "token" BIGINT NOT NULL,
    "acquiredAt" TIMESTAMP(3) NOT NULL,
    "renewedAt" TIMESTAMP(3) NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "OutboxRelayLease_pkey" PRIMARY KEY ("name")
);
