import type { FormattedExecutionResult } from 'graphql';

/**
 * A cached answer's `data` as the JSON text it was stored as, carried through Apollo's pipeline
 * without being parsed: a hit on a 48 KB page spent 13 % of the gateway's CPU parsing the stored
 * text and 7 % serialising it again (bench/results/2026-11-26T0740-gateway-cache-profile.md).
 * Whoever needs it as an object gets it parsed: `toJSON` for any serialiser that does not know
 * this class, `resultWithParsedData` for the execute port (REST-compat reads the data).
 */
export class StoredData {
  /** `body` is the stored answer, `{"data":…}`, exactly as JSON.stringify wrote it. */
  constructor(readonly body: string) {}

  toJSON(): unknown {
    return (JSON.parse(this.body) as { data: unknown }).data;
  }
}

/**
 * Apollo's `stringifyResult`: a stored answer without errors or extensions is sent as stored (the
 * bytes Apollo's own `JSON.stringify(result) + '\n'` would write); anything else is serialised.
 */
export function stringifyResult(result: FormattedExecutionResult): string {
  if (result.data instanceof StoredData && result.errors === undefined && result.extensions === undefined) {
    return `${result.data.body}\n`;
  }
  return `${JSON.stringify(result)}\n`;
}

/** The result with stored data parsed, for callers that read `data` as an object. */
export function resultWithParsedData<T extends { data?: unknown }>(result: T): T {
  return result.data instanceof StoredData ? { ...result, data: result.data.toJSON() } : result;
}
