/**
 * The token scopes that open the catalog (the decision table is docs/rest-compat.md, "Scopes").
 * An administrator reads what it changes, so catalog.admin opens every read too.
 */
export const CATALOG_READ = ['catalog.read', 'catalog.admin'] as const;
export const CATALOG_ADMIN = ['catalog.admin'] as const;
