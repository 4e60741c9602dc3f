import fs from 'node:fs';
import { operationFromDocument, Supergraph } from '@apollo/federation-internals';
import { QueryPlanner } from '@apollo/query-planner';
import { parse, specifiedRules, validate, type OperationDefinitionNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import { SUPERGRAPH_PATH } from '../../../gateway/supergraph.js';
import { loadSystemConfig } from '../../../processes/config.js';
import { FIELD_COSTS } from '../../../platform/graphql/field-costs.js';
import { operationCost } from '../../../platform/graphql/query-cost.js';
import { queryLimitOptions } from '../../../platform/graphql/query-limits.js';
import { ASSIST, REST_DOCUMENTS, REST_OPERATION_NAMES, SERVED_BY_ONE_SUBGRAPH } from '../../../rest-compat/documents.js';

/**
 * REST-compat's documents are exempt from the cost limit at the gateway, but the subgraphs check
 * every fetch against the same limits: each document, at the largest page a route asks for, must
 * fit them, or a legal REST request would be refused one hop later.
 */
const supergraph = Supergraph.build(fs.readFileSync(SUPERGRAPH_PATH, 'utf8'));
const api = supergraph.apiSchema().toGraphQLJSSchema();
const limits = loadSystemConfig({}).ops.limits;

describe('the route table documents', () => {
  it.each(REST_DOCUMENTS.map((document) => [/^\w+\s+(\w+)/.exec(document)![1], document]))(
    '%s fits the default limits at its largest page',
    (_name, document) => {
      const parsed = parse(document);
      const errors = validate(api, parsed, [...specifiedRules, ...queryLimitOptions(limits).validationRules]);
      expect(errors).toEqual([]);
      const operation = parsed.definitions[0] as OperationDefinitionNode;
      expect(operationCost(api, parsed, operation, { first: 100 }, { ...limits, fieldCosts: FIELD_COSTS })).toBeLessThanOrEqual(
        limits.maxCost,
      );
    },
  );

  it('are the operations metrics name', () => {
    expect(REST_OPERATION_NAMES).toEqual(
      new Set([
        'RestCourses',
        'RestCourse',
        'RestUpdateCourseMetadata',
        'RestAssist',
        'RestProvenance',
        'RestQuotaSettings',
        'RestSetQuotaSettings',
        'RestCreateRoutingRule',
        'RestRoutingRule',
        'RestReplayDeadLetters',
      ]),
    );
  });
});

describe('documents one subgraph serves alone', () => {
  const planner = new QueryPlanner(supergraph);

  it('include the assist operation, on the AI subgraph', () => {
    expect(SERVED_BY_ONE_SUBGRAPH.get(ASSIST)).toBe('ai');
  });

  // Run on that subgraph directly (one-process mode), a document must be exactly what the gateway
  // would have sent it: one fetch of the plan, to that subgraph, with every field of the document.
  it.each([...SERVED_BY_ONE_SUBGRAPH].map(([document, subgraph]) => [/^\w+\s+(\w+)/.exec(document)![1], document, subgraph]))(
    '%s is one fetch of the query plan, to its subgraph, with the whole document',
    (_name, document, subgraph) => {
      const plan = planner.buildQueryPlan(operationFromDocument(supergraph.schema, parse(document)));
      expect(plan.node).toMatchObject({ kind: 'Fetch', serviceName: subgraph });
      const sent = (plan.node as { operation: string }).operation;
      // Names, fields and types; not the operation's name (the planner's is `RestAssist__ai__0`).
      const words = (text: string) =>
        new Set(text.match(/[A-Za-z_]\w*/g)!.filter((word) => !/^(mutation|query|Rest\w+)$/.test(word)));
      expect(words(sent)).toEqual(words(document));
    },
  );
});
