/**
 * Fields whose resolver does far more work than the one value it answers — it scans or aggregates
 * rows — keyed by schema coordinate (`Type.field`), with the cost the cost walk counts for each
 * resolution instead of 1 (platform/graphql/query-cost.ts). Every other field costs 1.
 *
 * The table lives here, beside the walk, rather than with the subgraphs that own the fields: every
 * GraphQL door applies it — each subgraph over its own schema, and the gateway over the supergraph,
 * which may not import subgraph code — so one table serves all of them, with the same coordinates
 * in both schemas. test/unit/graphql/field-costs.test.ts checks each coordinate against the
 * committed supergraph, so renaming a field without its entry here fails there.
 *
 * 5,000 is a quarter of the default QUERY_MAX_COST (20,000): one document asks for at most four such
 * scans (three beside a page of other fields), where 29 aliased ones passed before (3.6 s, a 0.9 s
 * event-loop stall: issue #24). One scan costs about half the REST door's largest page (100
 * courses, about 9,900), so a client that needs more asks in more requests, each under the rate
 * limits. Lowering QUERY_MAX_COST below 5,000 makes these fields unaskable: keep it above.
 */
export const SCAN_COST = 5_000;

export const FIELD_COSTS: Readonly<Record<string, number>> = {
  // Counts, then loads, every latency of a window of up to 31 days on both sides (up to 200,000
  // values each, then a random sample) and sorts them in memory for the percentiles.
  'Query.shadowParity': SCAN_COST,
  // Reads the shared dead-letter stream to select the tenant's letters, then republishes up to
  // 1,000 of them (events/dead-letters/dead-letters.ts).
  'Mutation.replayDeadLetters': SCAN_COST,
};
