import { freePort } from './child-env.js';
import { startSystemWithDatabase, type StartOptions, type SystemProcess } from './system-process.js';
import type { TestDatabase } from './database.js';

export interface ReliabilitySystem {
  system: SystemProcess;
  db: TestDatabase;
  /** The subgraphs' own GraphQL endpoints, for calls that bypass the gateway. */
  catalogUrl: string;
  aiUrl: string;
  close(): Promise<void>;
}

/**
 * `startSystemWithDatabase` with the subgraph ports chosen here, so a test can also call each
 * subgraph directly (as an attacker inside the network would, without the gateway).
 */
export async function startReliabilitySystem(
  env: Record<string, string | undefined> = {},
  options: StartOptions = {},
): Promise<ReliabilitySystem> {
  const [catalogPort, aiPort] = [await freePort(), await freePort()];
  const { system, db, close } = await startSystemWithDatabase(
    { CATALOG_PORT: String(catalogPort), AI_PORT: String(aiPort), ...env },
    options,
  );
  return {
    system,
    db,
    catalogUrl: `http://127.0.0.1:${catalogPort}/graphql`,
    aiUrl: `http://127.0.0.1:${aiPort}/graphql`,
    close,
  };
}

export interface HttpAnswer {
  status: number;
  headers: Headers;
  text: string;
  // Bodies are matched member by member against documented shapes.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

/** One HTTP exchange, body read whole; JSON parsed when it is JSON. */
export async function exchange(url: string, init: RequestInit = {}): Promise<HttpAnswer> {
  const response = await fetch(url, init);
  const text = await response.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

export function graphqlRequest(
  url: string,
  body: { query: string; variables?: Record<string, unknown> },
  headers: Record<string, string>,
): Promise<HttpAnswer> {
  return exchange(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}
