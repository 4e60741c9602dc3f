/**
 * Every error code the service can emit, with the HTTP status it answers and what it means: the
 * one registry that platform/errors/errors.ts takes statuses from, docs/error-codes.md is generated from
 * (`npm run docs:error-codes`) and error-codes.snapshot.json guards. Client teams code against
 * these strings (GraphQL `extensions.code`, REST problem+json `code`), so a code is never renamed
 * or given another status without a CHANGELOG entry (test/unit/platform/error-codes.test.ts).
 *
 * Ours are lower-case `area.reason`; the upper-case ones are GraphQL's and Apollo's standard codes,
 * kept as clients know them. Pure data: no imports.
 *
 * ERROR_DETAIL_MEMBERS below is the other half of the contract: the members an error may carry
 * beside `code` and `status` (GraphQL `extensions`, REST problem members).
 */

export interface ErrorCodeEntry {
  /** The HTTP status the code answers (REST status; GraphQL `extensions.status` and HTTP status). */
  readonly status: number;
  /** One line: when the code is answered, and what the caller can do. */
  readonly meaning: string;
}

export const ERROR_CODES = {
  // GraphQL / Apollo standard codes.
  BAD_REQUEST: { status: 400, meaning: 'A GraphQL-over-HTTP request Apollo Server cannot read (no query, a malformed body)' },
  BAD_USER_INPUT: {
    status: 400,
    meaning: 'Input rejected by a subgraph or by GraphQL variable coercion (invalid cursor, missing template variable, …)',
  },
  GRAPHQL_PARSE_FAILED: { status: 400, meaning: 'A GraphQL document that does not parse' },
  GRAPHQL_VALIDATION_FAILED: { status: 400, meaning: 'A GraphQL document that does not validate against the supergraph' },
  OPERATION_RESOLUTION_FAILURE: {
    status: 400,
    meaning: '`operationName` not in the document, or several operations and no name',
  },
  PERSISTED_QUERY_NOT_FOUND: {
    status: 200,
    meaning: 'An automatic persisted query hash the server does not hold: send the hash with the query text (APQ protocol)',
  },
  PERSISTED_QUERY_NOT_SUPPORTED: { status: 200, meaning: 'Automatic persisted queries are off on this server (APQ protocol)' },
  UNAUTHENTICATED: {
    status: 401,
    meaning: 'Missing, invalid or expired bearer token; `WWW-Authenticate` says which',
  },
  FORBIDDEN: { status: 403, meaning: 'A tenant changing a global prompt template (publish a tenant version instead)' },
  INTERNAL_SERVER_ERROR: {
    status: 500,
    meaning: 'An internal error; its text never leaves the service (see the logs by request id)',
  },

  // The request itself, at any HTTP door.
  'request.validation_failed': {
    status: 400,
    meaning: 'A REST path, query or body fails its schema; `path` (JSON Pointer), `location`, `errors[]`',
  },
  'request.not_found': { status: 404, meaning: 'Unknown route, or a resource absent in the tenant' },
  'request.method_not_allowed': { status: 405, meaning: 'Known path, other method (`Allow` lists the methods)' },
  'request.conflict': {
    status: 409,
    meaning: 'In conflict with the current state (a duplicate routing rule, a taxonomy version mismatch, …)',
  },
  'request.precondition_failed': { status: 412, meaning: 'Stale or weak `If-Match`: re-read the resource and retry' },
  'request.payload_too_large': { status: 413, meaning: 'The body is larger than `MAX_BODY_BYTES`' },
  'request.unsupported_media_type': {
    status: 415,
    meaning: 'The body is not JSON, or a PATCH type other than JSON and merge patch (`Accept-Patch`)',
  },
  'request.unsupported_content_encoding': {
    status: 415,
    meaning: 'A request body with a `Content-Encoding` (gzip, br, …): bodies are read uncompressed',
  },
  'request.precondition_required': { status: 428, meaning: '`If-Match` is required and missing' },
  'request.client_closed': {
    status: 499,
    meaning: 'The client went away mid-request; never seen by it, only in the access log',
  },
  'request.not_implemented': { status: 501, meaning: 'The graph lacks the operation of this REST route' },

  // GraphQL documents.
  'graphql.subscription_not_supported': { status: 400, meaning: 'A subscription operation (send a query or a mutation)' },
  'query.too_many_tokens': { status: 400, meaning: 'A document over `QUERY_MAX_TOKENS`; `limit`, `found`, `max`' },
  'query.too_deep': { status: 400, meaning: 'A document over `QUERY_MAX_DEPTH`; `limit`, `found`, `max`' },
  'query.too_many_aliases': { status: 400, meaning: 'A document over `QUERY_MAX_ALIASES`; `limit`, `found`, `max`' },
  'query.too_many_directives': { status: 400, meaning: 'A document over `QUERY_MAX_DIRECTIVES`; `limit`, `found`, `max`' },
  'query.too_costly': { status: 400, meaning: 'An operation over `QUERY_MAX_COST`; `limit`, `found`, `max`' },
  'query.too_many_representations': {
    status: 400,
    meaning: 'An `_entities` request over `QUERY_MAX_REPRESENTATIONS` (subgraph ports)',
  },
  'query.string_too_long': {
    status: 400,
    meaning: 'A string literal longer than `QUERY_MAX_STRING_LITERAL`; long text goes in variables',
  },

  // Authentication, tenancy and scopes.
  'authz.tenant_header_required': { status: 400, meaning: 'No `X-Tenant-Id` header' },
  'authz.tenant_not_a_member': { status: 403, meaning: '`X-Tenant-Id` names a tenant other than the token `tid`' },
  'authz.scope_missing': { status: 403, meaning: 'The token has none of the accepted scopes (`acceptedScopes`)' },
  'cors.origin_not_allowed': { status: 403, meaning: 'A CORS preflight from an origin not in `CORS_ORIGINS`' },

  // Idempotency-Key.
  'idempotency.key_required': { status: 400, meaning: 'A write without `Idempotency-Key` (also on a subgraph port)' },
  'idempotency.key_invalid': { status: 400, meaning: '`Idempotency-Key` is not a ULID' },
  'idempotency.query_text_required': {
    status: 400,
    meaning: 'A GraphQL mutation sent as a persisted-query hash only (send its query text)',
  },
  'idempotency.in_flight': {
    status: 409,
    meaning: 'A request with the same key is still running; `Retry-After` is what is left of its lease',
  },
  'idempotency.key_reused': { status: 422, meaning: 'The same key with a different request' },

  // Catalog.
  'lifecycle.illegal_transition': { status: 409, meaning: 'A course lifecycle transition that is not allowed from its state' },

  // AI gateway: assist, routing, providers, moderation, quotas, templates.
  'template.not_found': { status: 422, meaning: 'No active prompt template for the feature (`featureKey`)' },
  'routing.no_rule': { status: 422, meaning: 'No routing rule for the feature and residency' },
  'routing.no_provider_for_residency': { status: 422, meaning: 'No provider of the rule may serve the residency' },
  'routing.assessment_required': {
    status: 422,
    meaning: 'A rule routes to a provider whose assessment for the residency is missing',
  },
  'routing.residency_not_allowed': {
    status: 422,
    meaning: "A residency the tenant's mapping does not allow (AF from an ON_PREM tenant); `allowed` lists the tenant's",
  },
  'routing.residency_unavailable': {
    status: 503,
    meaning: "No configured provider serves the residency the tenant's mapping imposes; nothing was sent elsewhere",
  },
  'routing.provider_not_configured': { status: 422, meaning: 'A rule names the on-prem provider, which is not configured here' },
  'routing.global_rule_forbidden': {
    status: 403,
    meaning: 'A tenant admin changing a global routing rule (those need `platform.admin`)',
  },
  'moderation.blocked': { status: 422, meaning: 'The input or output was blocked by moderation (with `provenanceId`)' },
  'provider.content_filter': {
    status: 422,
    meaning: "A blocked assist result whose provider's own content filter refused (GraphQL `AssistResult.code`)",
  },
  'moderation.unavailable': {
    status: 503,
    meaning: 'Moderation is required but the classifier cannot judge the content, or none is configured',
  },
  'provider.unavailable': { status: 503, meaning: 'No provider produced an output (with `provenanceId`); `Retry-After`' },
  'quota.exceeded': { status: 429, meaning: "Over the tenant's quota; `Retry-After`" },
  'quota.unavailable': { status: 503, meaning: 'The quota store cannot decide right now; `Retry-After`' },

  // Provenance receipts (docs/ai-gateway.md, "Receipts"). The break codes are the verifier's
  // findings (npm run provenance:verify, the auditor's standalone script): 422, the export is
  // readable but does not prove what it claims.
  'receipt.signing_unavailable': {
    status: 503,
    meaning:
      'The receipt signing key cannot be read from the vault or signing failed: the answer is not recorded, as for any recording failure; `Retry-After`',
  },
  'receipt.malformed': { status: 422, meaning: 'Verifier: a receipt or export line that is not what a receipt export holds' },
  'receipt.unknown_kid': { status: 422, meaning: 'Verifier: a receipt signed with a key the JWKS does not hold' },
  'receipt.signature_invalid': {
    status: 422,
    meaning: 'Verifier: a receipt (or the export seal) whose signature does not verify',
  },
  'receipt.chain_gap': { status: 422, meaning: "Verifier: sequence numbers skip: a receipt of the tenant's chain is missing" },
  'receipt.chain_reordered': { status: 422, meaning: 'Verifier: receipts out of sequence order' },
  'receipt.chain_fork': {
    status: 422,
    meaning: 'Verifier: two receipts with one sequence number, or a receipt naming another predecessor than the one before it',
  },
  'receipt.export_truncated': {
    status: 422,
    meaning: 'Verifier: the export was cut: no seal, a cut line, or receipts the seal does not count',
  },
  'receipt.record_mismatch': {
    status: 422,
    meaning: "Verifier: an exported provenance row differs from its receipt's signed claims",
  },
  'receipt.output_hash_mismatch': {
    status: 422,
    meaning: "Verifier: a supplied output text does not hash to the receipt's output hash",
  },

  // Human review.
  'review.not_a_member': { status: 403, meaning: 'Only members of the queue review its tasks' },
  'review.self_review_forbidden': {
    status: 403,
    meaning: 'A reviewer claiming or deciding an output it requested, or a waiting task it steered (`reason`)',
  },
  'review.already_decided': { status: 409, meaning: 'The review task has already been decided' },
  'review.claimed_by_other': { status: 409, meaning: 'Another reviewer holds the claim on the task' },
  'review.claim_expired': { status: 409, meaning: 'Your claim expired; claim the task again' },
  'review.not_claimed': { status: 409, meaning: 'Claim the task before deciding it' },
  'review.not_open': { status: 409, meaning: 'Only an open (unclaimed) task can be moved to another queue' },
  'review.unrouted': { status: 409, meaning: 'The task is in no queue yet; an admin routes it or adds a matching queue' },
  'review.expired': { status: 409, meaning: 'The held output passed its retention before it was reviewed' },
  'review.rejected': {
    status: 422,
    meaning: 'Provenance `errorCode` of an output a reviewer rejected (a record, never an HTTP answer of its own)',
  },

  // Provider keys.
  'keys.already_retired': { status: 409, meaning: 'The key was already retired' },
  'keys.retention_window_open': { status: 409, meaning: 'The key must stay available for rollback until `retainUntil`' },

  // Events, dead letters and replays.
  'events.replay_filter_required': {
    status: 400,
    meaning: 'A dead-letter replay without a filter (give one, or set `dryRun`)',
  },
  'events.replay_failed': {
    status: 503,
    meaning: 'A dead-letter or archive replay stopped part-way (`stoppedAt`); what moved stays moved',
  },
  'events.invalid_draft': { status: 400, meaning: 'An event draft that cannot be completed into a valid envelope' },
  'events.unparseable': { status: 400, meaning: 'A consumed message whose body is not JSON (dead-lettered)' },
  'events.permanent_failure': { status: 422, meaning: 'A consumed event no retry can handle (dead-lettered)' },
  'events.stream_missing': { status: 503, meaning: "A producer's JetStream stream does not exist yet (the worker waits)" },
  'events.ambiguous_payload': { status: 500, meaning: 'A publisher gave both `payload` and `payloads` (a bug)' },
  'events.missing_version_payload': {
    status: 500,
    meaning: 'A dual-published event without a payload for each version (a bug)',
  },
  'schema.invalid_event': { status: 400, meaning: 'An event that does not match its JSON schema' },
  'schema.unknown_event': { status: 400, meaning: 'No schema is registered for the event type and version' },
  'archive_replay.argument_missing': { status: 400, meaning: '`npm run events:replay-archive`: a required option is missing' },
  'archive_replay.argument_invalid': { status: 400, meaning: '`npm run events:replay-archive`: an option has an invalid value' },
  'archive_replay.argument_unknown': { status: 400, meaning: '`npm run events:replay-archive`: an unknown option' },
  'archive_replay.range_empty': { status: 400, meaning: '`npm run events:replay-archive`: `--since` is not before `--until`' },
  'archive_replay.nats_required': { status: 400, meaning: '`npm run events:replay-archive` needs `NATS_URL`' },
  // Start-up refusals with NODE_ENV=production (docs/configuration.md, "Production refusals"): one
  // line on stderr and exit 2, never an HTTP answer; the status is the class of mistake.
  'production.embedded_database': {
    status: 400,
    meaning: 'Start-up with NODE_ENV=production without `DATABASE_URL` (else: an embedded database)',
  },
  'production.development_signing_key': {
    status: 400,
    meaning: 'Start-up with NODE_ENV=production without `AUTH_JWKS_URL` or `AUTH_PUBLIC_KEY` (else: a development signing key)',
  },
  'production.in_process_bus': {
    status: 400,
    meaning: 'Start-up with NODE_ENV=production without `NATS_URL` (else: an in-process event bus)',
  },
  'production.in_memory_quotas': {
    status: 400,
    meaning: 'Start-up with NODE_ENV=production without `REDIS_URL` (else: quotas counted in one process)',
  },
  'production.cors_any_origin': {
    status: 400,
    meaning: 'Start-up with NODE_ENV=production and `CORS_ORIGINS=*` without `CORS_ALLOW_ANY_ORIGIN=true`',
  },
  'production.mock_provider': {
    status: 400,
    meaning: 'Start-up of the AI part with NODE_ENV=production and no real model provider, without `AI_ALLOW_MOCK_PROVIDER=true`',
  },

  // Availability.
  'service.unavailable': {
    status: 503,
    meaning: 'A part this request needs is not reachable or not wired in (retry later or on another replica)',
  },
  'dependency.unavailable': {
    status: 503,
    meaning: 'The database or the Idempotency-Key store cannot be reached; `Retry-After: 1`',
  },
  'subgraph.unavailable': { status: 503, meaning: 'The gateway could not reach a subgraph (its fields only); `Retry-After: 1`' },
} as const satisfies Record<string, ErrorCodeEntry>;

export type KnownErrorCode = keyof typeof ERROR_CODES;

/**
 * Every member an error may carry beside `code` and `status`: an AppError's `details` are typed by
 * this list (platform/errors/errors.ts), so a new member is added here first, and the gateway keeps only
 * these (plus `serviceName`) of what a subgraph sends (platform/graphql/format-error.ts): whatever
 * else an error carries — `exception`, `stacktrace`, a library's own members — never reaches a
 * client. Sorted; listed in docs/error-codes.md.
 */
export const ERROR_DETAIL_MEMBERS = [
  'acceptedScopes',
  'activeVersion',
  'allowed',
  'argument',
  'attempts',
  'claimExpiresAt',
  'code_detail',
  'currentVersion',
  'duplicates',
  'errors',
  'etag',
  'eventType',
  'expectedVersion',
  'featureKey',
  'field',
  'flags',
  'found',
  'from',
  'knownProviders',
  'limit',
  'location',
  'matched',
  'max',
  'message',
  'missing',
  'option',
  'path',
  'provenanceId',
  'published',
  'queueId',
  'reason',
  'replayed',
  'required',
  'residency',
  'result',
  'retainUntil',
  'retentionDays',
  'retiredAt',
  'retryAfterSeconds',
  'ruleId',
  'stage',
  'state',
  'stoppedAt',
  'to',
  'variable',
  'variables',
  'version',
  'versions',
] as const;

export type ErrorDetailMember = (typeof ERROR_DETAIL_MEMBERS)[number];
