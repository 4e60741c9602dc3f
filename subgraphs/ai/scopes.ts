/**
 * The token scopes that open the AI gateway (the decision table is docs/rest-compat.md, "Scopes").
 *
 * Routing rules, prompt templates and HITL policies are the gateway's own configuration: only
 * ai.admin reads them. Consumers (ai.assist) never render a template themselves: `assist` renders
 * it and answers the template's id, version and hash, which is what a consumer keeps; a missing
 * variable is named in its BAD_USER_INPUT. Provenance is read by whoever stored the id (ai.assist),
 * reviews it (ai.review) or governs the gateway (ai.admin).
 */
export const AI_ADMIN = ['ai.admin'] as const;
/**
 * The platform operator's scope: the global routing rules every tenant inherits. Not a tenant
 * admin's: a tenant's ai.admin changes its own overrides only, and platform.admin opens nothing of
 * a tenant's (its token still names a tenant, where its changes are audited).
 */
export const PLATFORM_ADMIN = ['platform.admin'] as const;
export const AI_ASSIST = ['ai.assist'] as const;
export const AI_REVIEW = ['ai.review'] as const;
/**
 * Auditors (a data-protection or clinical safety officer, an external auditor): the signed receipts
 * of the tenant's provenance records and their export (docs/ai-gateway.md, "Receipts"), and the
 * records themselves (hashes, never text: releasedText stays ai.assist's).
 */
export const AI_AUDIT = ['ai.audit'] as const;
export const PROVENANCE_READ = ['ai.assist', 'ai.review', 'ai.admin', 'ai.audit'] as const;
export const REVIEW_READ = ['ai.review', 'ai.admin'] as const;
export const SHADOW_PARITY_READ = ['ai.assist', 'ai.admin'] as const;
