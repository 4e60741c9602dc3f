-- Separation of duties in human review (issue #24): the admins whose queue or routing change
-- steered a waiting task, barred from claiming or deciding it. Existing tasks start with nobody.
ALTER TABLE "ReviewTask" ADD COLUMN "steeredBy" TEXT[] DEFAULT ARRAY[]::TEXT[];
