import { COURSE_FIELDS } from './shape.logic.js';

/**
 * The GraphQL operations the REST table runs, one document per operation, named `Rest…` so
 * metrics and logs tell them apart from clients' own operations.
 */

export const COURSES = `query RestCourses($first: Int, $after: String) {
  courses(first: $first, after: $after) { edges { cursor node { ${COURSE_FIELDS} } } pageInfo { hasNextPage endCursor } }
}`;

export const COURSE = `query RestCourse($courseId: ID!) { course(courseId: $courseId) { ${COURSE_FIELDS} } }`;

export const UPDATE_COURSE_METADATA = `mutation RestUpdateCourseMetadata($courseId: ID!, $input: UpdateCourseMetadataInput!) {
  updateCourseMetadata(courseId: $courseId, input: $input) { ${COURSE_FIELDS} }
}`;

export const ASSIST = `mutation RestAssist($input: AssistInput!) {
  assist(input: $input) {
    provenanceId status mode text provider model reviewState outputHash
    template { templateId version hash }
    timings { totalMs providerMs queueMs }
  }
}`;

export const PROVENANCE = `query RestProvenance($provenanceId: ID!) {
  provenance(provenanceId: $provenanceId) {
    provenanceId tenantId actorType actorId featureKey status mode
    templateId templateVersion templateHash renderedPromptHash ruleId ruleVersion provider model
    attempts { provider model outcome latencyMs errorCode }
    outputHash moderation reviewState review facilityId specialty subjectRef residency
    legacyBackfill errorCode latencyMs createdAt completedAt
  }
}`;

export const PROVENANCE_RECEIPT = `query RestProvenanceReceipt($provenanceId: ID!) {
  provenance(provenanceId: $provenanceId) {
    provenanceId
    receipt { seq event kid hash signedAt jws }
  }
}`;

export const RECEIPT_EXPORT = `query RestReceiptExport($from: DateTimeISO!, $to: DateTimeISO!) {
  provenanceReceiptExport(from: $from, to: $to)
}`;

export const CREATE_ROUTING_RULE = `mutation RestCreateRoutingRule($input: CreateRoutingRuleInput!) {
  createRoutingRule(input: $input) {
    ruleId tenantId featureKey residency activeVersion
    versions { version primary { provider model } fallbacks { provider model } createdBy createdAt }
  }
}`;

export const ROUTING_RULE = `query RestRoutingRule($ruleId: ID!) {
  routingRule(ruleId: $ruleId) {
    ruleId tenantId featureKey residency activeVersion
    versions { version primary { provider model } fallbacks { provider model } createdBy createdAt }
  }
}`;

const QUOTA_FIELDS = 'enabled requestsPerMinute tokensPerDay etag updatedAt';
export const QUOTA_SETTINGS = `query RestQuotaSettings { quotaSettings { ${QUOTA_FIELDS} } }`;
export const SET_QUOTA_SETTINGS = `mutation RestSetQuotaSettings($input: QuotaSettingsInput!) {
  setQuotaSettings(input: $input) { ${QUOTA_FIELDS} }
}`;

export const REPLAY_DEAD_LETTERS = `mutation RestReplayDeadLetters($filter: DeadLetterFilterInput!) {
  replayDeadLetters(filter: $filter) { matched replayed }
}`;

/** Every GraphQL document the table runs. */
export const REST_DOCUMENTS: readonly string[] = [
  COURSES,
  COURSE,
  UPDATE_COURSE_METADATA,
  ASSIST,
  PROVENANCE,
  QUOTA_SETTINGS,
  SET_QUOTA_SETTINGS,
  CREATE_ROUTING_RULE,
  ROUTING_RULE,
  REPLAY_DEAD_LETTERS,
];

/**
 * The operations of the table by name (`RestCourses`, ...): the operations this service knows,
 * which metrics may label by name (every other operation name is `other`).
 */
export const REST_OPERATION_NAMES: ReadonlySet<string> = new Set(
  REST_DOCUMENTS.map((document) => /^(?:query|mutation)\s+(\w+)/.exec(document)![1]),
);
