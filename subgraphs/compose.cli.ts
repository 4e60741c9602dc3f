// `npm run compose`: recomposes gateway/supergraph.graphql from the subgraphs' schemas, and the
// Apollo Client cache configuration clients take from it (gateway/client/apollo-cache.json).
import 'reflect-metadata';
import fs from 'node:fs/promises';
import { APOLLO_CACHE_PATH } from '../gateway/client/apollo-cache.js';
import { apolloCacheFile } from '../gateway/client/apollo-cache-config.js';
import { SUPERGRAPH_PATH } from '../gateway/supergraph.js';
import { composeSupergraph } from './compose.js';

const supergraph = await composeSupergraph();
await fs.writeFile(SUPERGRAPH_PATH, supergraph);
console.log(`wrote ${SUPERGRAPH_PATH.pathname}`);
await fs.writeFile(APOLLO_CACHE_PATH, apolloCacheFile(supergraph));
console.log(`wrote ${APOLLO_CACHE_PATH.pathname}`);
