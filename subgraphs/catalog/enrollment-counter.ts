import type { Logger } from '../../platform/observability/logger.js';

export interface EnrollmentCount {
  count: number;
  /** Where the number comes from; `none-configured` means nobody was asked and 0 is not a fact. */
  source: string;
}

/**
 * Enrollments belong to the enrollment service. withdrawCourseVersion reports an approximate
 * count of affected enrollments, read through this port.
 */
export interface EnrollmentCounter {
  approximateActiveEnrollments(tenantId: string, courseVersionId: string): Promise<EnrollmentCount>;
}

/** The default until an enrollment service is wired in: 0, and it says so, in the answer and the log. */
export function unconfiguredEnrollmentCounter(logger: Logger): EnrollmentCounter {
  return {
    async approximateActiveEnrollments(tenantId, courseVersionId) {
      logger.warn({ tenantId, courseVersionId }, 'no enrollment counter configured; affectedEnrollmentsApprox reported as 0');
      return { count: 0, source: 'none-configured' };
    },
  };
}
