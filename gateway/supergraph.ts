import fs from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { projectPath, RUNTIME_FILES } from '../platform/project-files.js';

/**
 * The composed schema the gateway serves: a committed file (`npm run compose` regenerates it), so
 * the gateway process needs no subgraph code to start and every environment runs the same graph.
 */
export const SUPERGRAPH_PATH = pathToFileURL(projectPath(RUNTIME_FILES.supergraph));

/**
 * Subgraph URLs in the committed supergraph are placeholders: the gateway maps each subgraph name
 * to the URL of its configuration at start, so one artifact serves every environment.
 */
export const SUBGRAPH_NAMES = ['catalog', 'ai'] as const;
export type SubgraphName = (typeof SUBGRAPH_NAMES)[number];

export function readSupergraph(): Promise<string> {
  return fs.readFile(SUPERGRAPH_PATH, 'utf8');
}
