import { ApolloClient, CombinedGraphQLErrors, HttpLink, InMemoryCache, gql, type TypedDocumentNode } from '@apollo/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import apolloCache from '../../gateway/client/apollo-cache.json' with { type: 'json' };
import { newId, newUlid } from '../../platform/ids.js';
import { courseRow } from '../support/course-row.js';
import { startSystemWithDatabase, type SystemWithDatabase } from '../support/system-process.js';

/**
 * A real Apollo Client 4 against the gateway, configured as docs/clients.md tells client teams:
 * the committed cache configuration normalises our entities (keyed by `courseId`, not `id`), so a
 * mutation's answer updates a list already in the cache; and a refusal of the front door (401,
 * 403) reaches the client as GraphQL errors with their code, not as an opaque HTTP failure.
 */
interface CoursesData {
  courses: { edges: Array<{ node: { courseId: string; slug: string; title: Record<string, string> } }> };
}

const COURSES: TypedDocumentNode<CoursesData> = gql`
  query Courses {
    courses(first: 10) {
      edges {
        node {
          courseId
          slug
          title
        }
      }
    }
  }
`;
const RENAME = gql`
  mutation Rename($courseId: ID!, $input: UpdateCourseMetadataInput!) {
    updateCourseMetadata(courseId: $courseId, input: $input) {
      courseId
      title
    }
  }
`;

describe('Apollo Client against the gateway', () => {
  const tenant = newId('tenant');
  const courses = [courseRow(tenant), courseRow(tenant)];
  let running: SystemWithDatabase;

  const client = (headers: Record<string, string>) =>
    new ApolloClient({
      link: new HttpLink({ uri: `${running.system.baseUrl}/graphql`, headers }),
      cache: new InMemoryCache({ typePolicies: apolloCache.typePolicies, possibleTypes: apolloCache.possibleTypes }),
    });

  beforeAll(async () => {
    running = await startSystemWithDatabase();
    await running.db.prisma.course.createMany({ data: courses });
  });
  afterAll(async () => running?.close());

  it('normalises courses by courseId, and a mutation updates the cached list without a refetch', async () => {
    const token = await running.system.mintToken(tenant, 'catalog.read catalog.admin');
    const apollo = client({ authorization: `Bearer ${token}`, 'x-tenant-id': tenant });
    const listed = await apollo.query({ query: COURSES });
    expect(listed.data?.courses.edges).toHaveLength(2);
    const cached = apollo.cache.extract() as Record<string, unknown>;
    for (const course of courses) {
      expect(cached[`Course:{"courseId":"${course.id}"}`]).toMatchObject({
        __typename: 'Course',
        courseId: course.id,
        slug: course.slug,
      });
    }

    const [first] = courses;
    await apollo.mutate({
      mutation: RENAME,
      variables: { courseId: first.id, input: { title: { en: 'Recognising sepsis, revised' } } },
      context: { headers: { 'idempotency-key': newUlid(), 'if-match': first.etag } },
    });
    // The list, read from the cache alone, shows the new title: the mutation's Course was merged
    // into the entry the list points at.
    const again = apollo.readQuery({ query: COURSES });
    const node = again?.courses.edges.find((edge) => edge.node.courseId === first.id)?.node;
    expect(node?.title).toEqual({ en: 'Recognising sepsis, revised' });
  });

  it('surfaces the code of a front-door refusal as a GraphQL error (401, 403)', async () => {
    const refusal = async (headers: Record<string, string>) => {
      const error = await client(headers)
        .query({ query: COURSES })
        .then(
          (result) => result.error,
          (thrown: unknown) => thrown,
        );
      expect(CombinedGraphQLErrors.is(error), String(error)).toBe(true);
      return (error as CombinedGraphQLErrors).errors[0]?.extensions?.code;
    };
    expect(await refusal({ 'x-tenant-id': tenant })).toBe('UNAUTHENTICATED');
    const token = await running.system.mintToken(tenant, 'catalog.read');
    expect(await refusal({ authorization: `Bearer ${token}`, 'x-tenant-id': newId('tenant') })).toBe('authz.tenant_not_a_member');
  });
});
