/**
 * Which browser origins may call this server: `*` (any), or a list of exact origins
 * (`https://studio.apollographql.com`). Same-origin pages need no entry: a browser does not ask.
 */
export type CorsOrigins = '*' | readonly string[];

/** Apollo Sandbox and its embedded variant: the analysts' explorer loads from these origins. */
export const SANDBOX_ORIGINS = ['https://studio.apollographql.com', 'https://sandbox.embed.apollographql.com'] as const;
