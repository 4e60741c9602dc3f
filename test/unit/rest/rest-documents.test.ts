import fs from 'node:fs';
import { Supergraph } from '@apollo/federation-internals';
import { parse, specifiedRules, validate, type OperationDefinitionNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import { SUPERGRAPH_PATH } from '../../../gateway/supergraph.js';
import { loadSystemConfig } from '../../../processes/config.js';
import { FIELD_COSTS } from '../../../platform/graphql/field-costs.js';
import { operationCost } from '../../../platform/graphql/query-cost.js';
import { queryLimitOptions } from '../../../platform/graphql/query-limits.js';
import { REST_DOCUMENTS, REST_OPERATION_NAMES } from '../../../rest-compat/documents.js';

/**
 * REST-compat's documents are exempt from the cost limit at the gateway, but the subgraphs check
 * every fetch against the same limits: each document, at the largest page a route asks for, must
 * fit them, or a legal REST request would be refused one hop later.
 */
const api = Supergraph.build(fs.readFileSync(SUPERGRAPH_PATH, 'utf8')).apiSchema().toGraphQLJSSchema();
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
