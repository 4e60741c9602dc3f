import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ResponseCache } from '../../../gateway/response-cache/response-cache.js';
import { createLogger } from '../../../platform/observability/logger.js';
import { createMetrics } from '../../../platform/observability/metrics.js';
import { MEASURED, readArbitrary } from '../../support/cache-documents.js';
import {
  CatalogModel,
  changeArbitrary,
  checkNoStaleAnswer,
  checkReadsOwnWrites,
  modelServer,
  writeArbitrary,
  type ModelServer,
} from '../../support/cache-model.js';

/**
 * Generative: whatever a read document looks like (aliases, fragments, @skip/@include with
 * literals and variables, __typename, nested entity paths), once the catalog changed and its
 * events were followed, the cache serves no answer that differs from a fresh one (issue #33:
 * `courseId @skip(if: $x)` made an entry look fully tagged while its answer held no id).
 */
const SETTINGS = { memoryBytes: 8_000_000, ttlSeconds: 600, maxEntryBytes: 1_000_000, redisSlots: 100, feedGraceMs: 5_000 };

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
        (reads, changes) => checkNoStaleAnswer([{ cache, server }], () => (model = new CatalogModel()), reads, changes),
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

  it("serves no answer that the writer's own mutation made differ, before any event (a write drops what it changed)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(readArbitrary, { minLength: 1, maxLength: 6 }),
        fc.array(writeArbitrary, { minLength: 1, maxLength: 3 }),
        (reads, writes) => checkReadsOwnWrites({ cache, server }, () => (model = new CatalogModel()), reads, writes),
      ),
      {
        numRuns: 300,
        // A course answer that names its course (so it is not on the list tag) and shows a field its
        // versions decide: the version mutation's answer does not name that course.
        examples: [
          [
            [{ query: 'query { course(courseId: "c1") { courseId latestVersionLabel } }', variables: {} }],
            [{ query: 'mutation { deprecateCourseVersion(courseVersionId: "v2") { state } }', variables: {} }],
          ],
        ],
      },
    );
  }, 120_000);
});
