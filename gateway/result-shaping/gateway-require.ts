import { createRequire } from 'node:module';

/**
 * `require` as seen from @apollo/gateway's own folder, so what it loads is the very instance the gateway
 * loaded (its federation-internals classes, schema objects and module exports), not a second copy a
 * different resolution could find.
 */
export const gatewayRequire = createRequire(createRequire(import.meta.url).resolve('@apollo/gateway'));
