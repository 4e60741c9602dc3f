/**
 * What `npm start` prints once every part is up. Pure, so the addresses it names are tested: with
 * METRICS_PORT, /metrics is served on the ops port only (the door answers 404 there), so the
 * banner names the ops port's URL.
 */
export interface BannerFacts {
  gatewayUrl: string;
  catalogUrl: string;
  aiUrl: string;
  /** Where /metrics answers: the ops port's URL when METRICS_PORT moved it, else undefined (the door). */
  opsUrl?: string;
  database: string;
  runtime: string;
  demoTenant?: string;
  usesDevKey: boolean;
}

/** The base URL that serves /metrics. */
export function metricsBaseUrl(facts: Pick<BannerFacts, 'gatewayUrl' | 'opsUrl'>): string {
  return facts.opsUrl ?? facts.gatewayUrl;
}

export function startupBanner(facts: BannerFacts): string {
  const { gatewayUrl } = facts;
  const ops = metricsBaseUrl(facts);
  return `
  Catalog + AI gateway federation is up.
    GraphQL (gateway):   ${gatewayUrl}/graphql   (open it in a browser: Apollo Sandbox)
    REST-compat:         ${gatewayUrl}/api/v1/courses, ${gatewayUrl}/v1/ai/assist, ...
    Health, readiness:   ${gatewayUrl}/healthz, ${gatewayUrl}/readyz
    GraphiQL (offline):  ${gatewayUrl}/graphiql     Metrics: ${ops}/metrics
    Subgraphs:           catalog ${facts.catalogUrl}, ai ${facts.aiUrl}
    Database:            ${facts.database}
    Runtime:             ${facts.runtime}${
      facts.demoTenant ? `\n    Demo catalog:        tenant ${facts.demoTenant} (DEMO_DATA=false turns it off)` : ''
    }
  ${
    facts.usesDevKey
      ? `Get a token signed by the development key:
    npm run token -- --tenant ten_01JD0000000000000000000000 --scope "catalog.read catalog.admin ai.assist ai.admin"
  then send:  Authorization: Bearer <token>   and   X-Tenant-Id: <the same tenant>`
      : 'Tokens are verified with AUTH_JWKS_URL / AUTH_PUBLIC_KEY: use tokens from your identity provider.'
  }
`;
}
