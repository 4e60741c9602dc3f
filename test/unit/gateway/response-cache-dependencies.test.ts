import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventTags } from '../../../gateway/response-cache/cache-policy.logic.js';
import { ResponseCache } from '../../../gateway/response-cache/response-cache.js';
import { createLogger } from '../../../platform/logger.js';
import { createMetrics } from '../../../platform/metrics.js';
import { readArbitrary, type GeneratedRead } from '../../support/cache-documents.js';
import {
  CatalogModel,
  changeArbitrary,
  freshAnswer,
  modelServer,
  type Change,
  type ModelServer,
} from '../../support/cache-model.js';

/**
 * Generative: whatever a read document looks like (aliases, fragments, @skip/@include with
 * literals and variables, __typename, nested entity paths), once the catalog changed and its
 * events were followed, the cache serves no answer that differs from a fresh one (issue #33:
 * `courseId @skip(if: $x)` made an entry look fully tagged while its answer held no id).
 */
const SETTINGS = { memoryBytes: 8_000_000, ttlSeconds: 600, maxEntryBytes: 1_000_000, redisSlots: 100 };

/** The cases measured on commit 6446199 (issue #33): an id under @skip/@include, by variable, literal, named fragment. */
const MEASURED: Array<[GeneratedRead[], Change[]]> = [
  [
    [
      {
        query:
          'query Read($s: Boolean!) { r0: courseVersion(courseVersionId: "v1") { courseVersionId courseId @skip(if: $s) course { courseId @skip(if: $s) title } } }',
        variables: { s: true },
      },
    ],
    [{ kind: 'retitle', course: 0, title: 'New' }],
  ],
  [
    [
      {
        query:
          'query Read { r0: courseVersion(courseVersionId: "v3") { courseVersionId courseId @include(if: false) course { courseId @include(if: false) authors { displayName } } } }',
        variables: {},
      },
    ],
    [{ kind: 'renameAuthor', course: 1, name: 'erased' }],
  ],
  [
    [
      {
        query:
          'query Read($i: Boolean!) { r0: courseVersion(courseVersionId: "v2") { ...V } }\n' +
          'fragment V on CourseVersion { courseVersionId courseId @include(if: $i) course { ...C } }\n' +
          'fragment C on Course { courseId @include(if: $i) title }',
        variables: { i: false },
      },
    ],
    [{ kind: 'retitle', course: 0, title: 'New' }],
  ],
];

let model = new CatalogModel();
const metrics = createMetrics();
const cache = new ResponseCache(SETTINGS, { logger: createLogger({ level: 'silent' }), metrics });
let server: ModelServer;

beforeAll(async () => {
  server = await modelServer(() => model, cache);
});
afterAll(() => server.stop());

describe('response cache dependencies (generative)', () => {
  it('serves no answer that a followed catalog change made differ', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(readArbitrary, { minLength: 1, maxLength: 6 }),
        fc.array(changeArbitrary, { minLength: 1, maxLength: 3 }),
        async (reads, changes) => {
          model = new CatalogModel();
          cache.clearLocal();
          for (const read of reads) {
            const first = await server.answer(read.query, read.variables);
            // A generator bug (an invalid document) must not pass as "nothing cached".
            expect(first.text).not.toContain('"errors"');
            expect((await server.answer(read.query, read.variables)).text).toBe(first.text);
          }
          for (const change of changes) await cache.invalidate(eventTags(model.apply(change)), 'event');
          for (const read of reads) {
            expect((await server.answer(read.query, read.variables)).text).toBe(
              await freshAnswer(model, read.query, read.variables),
            );
          }
        },
      ),
      { numRuns: 500, examples: MEASURED },
    );
    // Not vacuous: answers were served from the cache, and entries were dropped.
    const text = (await metrics.render()).body;
    const count = (result: string) =>
      Number(new RegExp(`^response_cache_requests_total\\{result="${result}"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
    expect(count('hit')).toBeGreaterThan(500);
    expect(count('miss')).toBeGreaterThan(500);
  }, 120_000);
});
