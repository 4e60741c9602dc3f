import fs from 'node:fs';
import { Supergraph } from '@apollo/federation-internals';
import { isObjectType, parse, type OperationDefinitionNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import { SUPERGRAPH_PATH } from '../../../gateway/supergraph.js';
import { FIELD_COSTS, SCAN_COST } from '../../../platform/graphql/field-costs.js';
import { operationCost } from '../../../platform/graphql/query-cost.js';
import { loadSystemConfig } from '../../../processes/config.js';

/**
 * The cost table is keyed by schema coordinates of subgraph fields: each must name a field of the
 * committed supergraph (a renamed field would silently lose its cost), and the table must do at
 * the gateway what issue #24 asked — 29 aliased shadowParity refused, ordinary use admitted.
 */
const api = Supergraph.build(fs.readFileSync(SUPERGRAPH_PATH, 'utf8')).apiSchema().toGraphQLJSSchema();
const limits = loadSystemConfig({}).ops.limits;

function gatewayCost(query: string): number {
  const document = parse(query);
  const operation = document.definitions[0] as OperationDefinitionNode;
  return operationCost(api, document, operation, {}, { ...limits, fieldCosts: FIELD_COSTS });
}

const PARITY = (alias: string) =>
  `${alias}: shadowParity(featureKey: "medication.reconciliation_assist", from: "2026-11-01T00:00:00Z", to: "2026-11-08T00:00:00Z") { gatewayP95 legacyP95 ratio parityHolds sampleCounts { gateway legacy } }`;

describe('the cost table (platform/graphql/field-costs.ts)', () => {
  it.each(Object.keys(FIELD_COSTS))('%s is a field of the supergraph', (coordinate) => {
    const [typeName, fieldName] = coordinate.split('.');
    const type = api.getType(typeName);
    expect(type && isObjectType(type) && type.getFields()[fieldName], coordinate).toBeTruthy();
  });

  it('refuses the 29 aliased shadowParity of issue #24 at the gateway (about 1.4 KB, inside every other limit)', () => {
    const document = `{ ${Array.from({ length: 29 }, (_, i) => PARITY(`p${i}`)).join(' ')} }`;
    expect(gatewayCost(document)).toBeGreaterThan(limits.maxCost);
    expect(gatewayCost(document)).toBeGreaterThanOrEqual(29 * SCAN_COST);
  });

  it('admits the uses it is for: a parity check per phase-1 feature, and a DLQ replay', () => {
    expect(gatewayCost(`{ ${PARITY('a')} ${PARITY('b')} }`)).toBeLessThanOrEqual(limits.maxCost);
    const page = 'courses(first: 20) { edges { node { courseId slug title } } }';
    expect(gatewayCost(`{ ${PARITY('a')} ${page} }`)).toBeLessThanOrEqual(limits.maxCost);
    expect(gatewayCost('mutation { replayDeadLetters(filter: { maxCount: 1000 }) { matched replayed } }')).toBeLessThanOrEqual(
      limits.maxCost,
    );
  });
});
