import fs from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { APOLLO_CACHE_PATH } from '../../gateway/client/apollo-cache.js';
import { apolloCacheConfig } from '../../gateway/client/apollo-cache-config.js';
import { SUPERGRAPH_PATH } from '../../gateway/supergraph.js';
import { composeSupergraph } from '../../subgraphs/compose.js';

describe('committed supergraph', () => {
  it('is what `npm run compose` produces from the current subgraph schemas', async () => {
    const committed = await fs.readFile(SUPERGRAPH_PATH, 'utf8');
    const fresh = await composeSupergraph();
    // A failure here means a subgraph schema changed: run `npm run compose` and commit the result.
    expect(committed).toBe(fresh);
  });
});

describe('the Apollo Client cache configuration', () => {
  it('is what `npm run compose` derives from the committed supergraph', async () => {
    const supergraph = await fs.readFile(SUPERGRAPH_PATH, 'utf8');
    const committed = JSON.parse(await fs.readFile(APOLLO_CACHE_PATH, 'utf8')) as unknown;
    // A failure here: run `npm run compose` and commit gateway/client/apollo-cache.json.
    expect(committed).toEqual(apolloCacheConfig(supergraph));
  });

  it('keys every entity by its @key fields, nested keys as Apollo Client writes them', () => {
    const config = apolloCacheConfig(`
      type Course @join__type(graph: CATALOG, key: "courseId") @join__type(graph: AI, key: "courseId") { courseId: ID! }
      type Seat @join__type(graph: CATALOG, key: "course { courseId } seatNo") { seatNo: Int! }
      type Money { amount: Int! }
      interface Node { nodeId: ID! }
      type Query { course: Course }
      union Result = Course | Seat
    `);
    expect(config.typePolicies).toEqual({
      Course: { keyFields: ['courseId'] },
      Seat: { keyFields: ['course', ['courseId'], 'seatNo'] },
    });
    expect(config.possibleTypes).toEqual({ Result: ['Course', 'Seat'] });
  });
});
