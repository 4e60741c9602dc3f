// `npx tsx bench/result-shaping-cost.ts`: CPU per answer of the gateway's result shaping (the copy of
// the subgraphs' merged answer into the answer the client asked for) on the gateway bench's wide
// page — 50 courses with every field, 3 versions and 3 AI provenance records each, ~270 KB — with
// Apollo Gateway's `computeResponse` and with ours (gateway/result-shaping/result-shaping.ts,
// GATEWAY_RESULT_SHAPING=lean), alternately in one process. No services needed: the merged answer
// is built from the operation and the supergraph, the same on every run.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import { parse } from 'graphql';
import type { FieldSelection, NamedType, Schema, SelectionSet, Type } from '@apollo/federation-internals';
import { computeResponse } from '../gateway/result-shaping/result-shaping.js';
import { WIDE } from './gateway.js';
import { cpuPerCallRounds, type CostTarget, heading, table } from './lib.js';

const CALLS = Number(process.env.BENCH_STATEMENTS ?? 400);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** Items per list field by name, as on the bench's wide page; any other list holds two. */
const LIST_LENGTHS: Record<string, number> = { edges: 50, versions: 3, aiProvenance: 3 };

const gatewayRequire = createRequire(createRequire(import.meta.url).resolve('@apollo/gateway'));
const fi = gatewayRequire('@apollo/federation-internals') as typeof import('@apollo/federation-internals');
const apollo = (gatewayRequire('@apollo/gateway/dist/resultShaping.js') as { computeResponse: typeof computeResponse })
  .computeResponse;

const api = fi.Supergraph.build(fs.readFileSync(new URL('../gateway/supergraph.graphql', import.meta.url), 'utf8')).apiSchema();
const operation = fi.operationFromDocument(api, parse(WIDE), { validate: false });

/** A value of `type` for the field `name`: what a subgraph would answer, every field present. */
function sampleValue(schema: Schema, type: Type, name: string, selectionSet: SelectionSet | undefined, seed: number): unknown {
  if (type.kind === 'NonNullType') return sampleValue(schema, type.ofType, name, selectionSet, seed);
  if (type.kind === 'ListType') {
    return Array.from({ length: LIST_LENGTHS[name] ?? 2 }, (_, i) =>
      sampleValue(schema, type.ofType, name, selectionSet, seed * 7 + i),
    );
  }
  if (selectionSet) return sampleObject(schema, selectionSet, type as NamedType, seed);
  const leaf = type as NamedType;
  if (leaf.kind === 'EnumType') return leaf.values[seed % leaf.values.length]!.name;
  switch (leaf.name) {
    case 'Int':
      return seed % 500;
    case 'Float':
      return seed / 7;
    case 'Boolean':
      return seed % 2 === 0;
    case 'String':
    case 'ID':
      return `${name}-${seed}`;
    default:
      return name.endsWith('At') ? new Date(1_700_000_000_000 + seed * 1000).toISOString() : { en: `${name} ${seed}` };
  }
}

function sampleObject(schema: Schema, selectionSet: SelectionSet, type: NamedType, seed: number): Record<string, unknown> {
  const object: Record<string, unknown> = { __typename: type.name };
  for (const selection of selectionSet.selections()) {
    if (selection.kind !== 'FieldSelection') {
      Object.assign(object, sampleObject(schema, selection.selectionSet, type, seed));
      continue;
    }
    const field = (selection as FieldSelection).element;
    if (field.name === '__typename') continue;
    object[field.responseName()] = sampleValue(schema, field.definition.type!, field.name, selection.selectionSet, seed);
  }
  return object;
}

const input = sampleObject(api, operation.selectionSet, api.schemaDefinition.rootType('query')!, 1);
const shape = (implementation: typeof computeResponse) => () =>
  Promise.resolve(implementation({ operation, variables: { after: null }, input, introspectionHandling: () => null }));

// Both must give the same answer before either is timed.
const ours = shape(computeResponse);
const theirs = shape(apollo);
const [oursAnswer, theirsAnswer] = [JSON.stringify(await ours()), JSON.stringify(await theirs())];
if (oursAnswer !== theirsAnswer) throw new Error('result shaping: ours and Apollo Gateway answer the wide page differently');
if (oursAnswer.includes('"errors":[{'))
  throw new Error(`result shaping: the sample answer has errors: ${oursAnswer.slice(0, 300)}`);

const targets: CostTarget[] = [
  { name: "Apollo Gateway's computeResponse", run: theirs },
  { name: 'ours (GATEWAY_RESULT_SHAPING=lean)', run: ours },
];
const rows = await cpuPerCallRounds(targets, { calls: CALLS, inFlight: 1, rounds: ROUNDS });
heading(`gateway result shaping: the wide page (${(oursAnswer.length / 1024).toFixed(0)} KB), one answer at a time`);
console.log(table(['>round', 'shaping', '>answers', '>CPU µs per answer', '>wall ms'], rows));
