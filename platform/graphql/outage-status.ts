import type { ApolloServerPlugin, BaseContext } from '@apollo/server';

/**
 * GraphQL answers execution errors with 200, which tells a client nothing about retrying. When no
 * root field of an operation could answer because of a dependency outage (every error has a status
 * of 503 in its extensions: the database or the idempotency store unreachable, and each root field
 * is null with such an error at its path), the answer is 503 with `Retry-After`, like the REST
 * door's. A root field that is null without an error is an answer (not found), so it keeps 200.
 */
export function outageStatus<TContext extends BaseContext>(): ApolloServerPlugin<TContext> {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ response }) {
          if (response.body.kind !== 'single') return;
          const { data, errors } = response.body.singleResult;
          if (!errors?.length || !errors.every((error) => error.extensions?.status === 503)) return;
          if (answeredAny(data, errors)) return;
          const retryAfter = Math.max(
            1,
            ...errors.map((error) => Number(error.extensions?.retryAfterSeconds)).filter((seconds) => Number.isFinite(seconds)),
          );
          response.http.status = 503;
          response.http.headers.set('retry-after', String(Math.ceil(retryAfter)));
        },
      };
    },
  };
}

function answeredAny(
  data: Record<string, unknown> | null | undefined,
  errors: ReadonlyArray<{ path?: ReadonlyArray<string | number> }>,
): boolean {
  if (!data) return false;
  const failed = new Set(errors.map((error) => error.path?.[0]));
  return Object.entries(data).some(([field, value]) => (value !== null && value !== undefined) || !failed.has(field));
}
