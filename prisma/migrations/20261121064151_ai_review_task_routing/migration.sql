-- AlterTable
ALTER TABLE "ReviewTask" ADD COLUMN     "facilityId" TEXT,
ADD COLUMN     "specialty" TEXT,
ALTER COLUMN "queueId" DROP NOT NULL;

