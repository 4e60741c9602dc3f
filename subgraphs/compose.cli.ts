// `npm run compose`: recomposes gateway/supergraph.graphql from the subgraphs' schemas.
import 'reflect-metadata';
import fs from 'node:fs/promises';
import { SUPERGRAPH_PATH } from '../gateway/supergraph.js';
import { composeSupergraph } from './compose.js';

await fs.writeFile(SUPERGRAPH_PATH, await composeSupergraph());
console.log(`wrote ${SUPERGRAPH_PATH.pathname}`);
