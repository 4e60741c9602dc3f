import fs from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
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
