-- The producer-order guard's own floor per durable consumer (events/order-guard.ts).
CREATE TABLE "ConsumerWatermark" (
    "consumer" TEXT NOT NULL,
    "settledThrough" BIGINT NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ConsumerWatermark_pkey" PRIMARY KEY ("consumer")
);
