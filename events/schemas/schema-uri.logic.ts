import { SCHEMA_URI } from './envelope-schema.js';

/**
 * How a consumed envelope's `schemaUri` relates to our copy of the schema it names. Only naming
 * another event or version is an error; the digest is the producer's metadata (tolerant reader).
 */
export type SchemaUriReading =
  | { kind: 'absent' }
  | { kind: 'same_digest' }
  | { kind: 'no_digest' }
  /** The producer's schema differs from our copy: worth a log line and a metric, not a dead letter. */
  | { kind: 'digest_differs'; digest: string }
  | { kind: 'other_schema'; id: string };

export function readSchemaUri(uri: string | undefined, ours: { id: string; digest: string }): SchemaUriReading {
  if (uri === undefined) return { kind: 'absent' };
  const match = SCHEMA_URI.exec(uri);
  if (!match || match[1] !== ours.id) return { kind: 'other_schema', id: match?.[1] ?? uri };
  const digest = match[2];
  if (digest === undefined) return { kind: 'no_digest' };
  return digest === ours.digest ? { kind: 'same_digest' } : { kind: 'digest_differs', digest };
}
