import type { GatewayExecutor, GatewayGraphQLRequestContext, GatewayInterface } from '@apollo/server-gateway-interface';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { execute, GraphQLError, type ExecutionResult, type GraphQLSchema } from 'graphql';

/**
 * Compiled documents kept per process. A subgraph sees the gateway's query plans (a fixed set per
 * gateway document) and REST-compat's fixed documents, so a few hundred cover the traffic; the
 * bound keeps a caller sending ever-new documents from growing the process (the least recently
 * used is compiled again if it comes back).
 */
const MAX_COMPILED_DOCUMENTS = 1_000;

export interface CompiledExecutionOptions {
  /** Compiled documents kept (default MAX_COMPILED_DOCUMENTS). */
  maxDocuments?: number;
  /** graphql-jit's compiler; a test counts its calls through this. */
  compile?: typeof compileQuery;
}

/**
 * Apollo Server's seam for "someone else executes" (the GatewayInterface; @apollo/gateway uses the
 * same one): Apollo still parses, validates, applies the limits and plugins and formats errors;
 * only the execution of an admitted operation is ours. Queries run compiled; mutations stay with
 * graphql-js, whose serial execution and resolve info the keyed-mutation wrapper was written
 * against, and whose cost is the transaction's, not the fields'.
 */
export function compiledQueryExecution(schema: GraphQLSchema, options: CompiledExecutionOptions = {}): GatewayInterface {
  const documents = new CompiledDocuments(
    schema,
    options.maxDocuments ?? MAX_COMPILED_DOCUMENTS,
    options.compile ?? compileQuery,
  );
  const executor: GatewayExecutor = async (request) => {
    const compiled = request.operation.operation === 'query' ? documents.get(request) : undefined;
    if (!compiled) return interpreted(schema, request);
    const result = await compiled.query(undefined, request.context, request.request.variables);
    if (!result.errors) return result;
    // No data: the operation failed before any field ran (its variables did not coerce). graphql-js
    // answers that with the very errors Apollo classifies as the caller's (400 BAD_USER_INPUT).
    if (result.data === undefined) return interpreted(schema, request);
    return { ...result, errors: result.errors.map(asGraphQLJsError) };
  };
  return {
    load: async () => ({ executor }),
    onSchemaLoadOrUpdate: (callback) => {
      callback({ apiSchema: schema, coreSupergraphSdl: '' });
      return () => {};
    },
    stop: async () => {},
  };
}

function interpreted(schema: GraphQLSchema, request: GatewayGraphQLRequestContext): Promise<ExecutionResult> {
  return Promise.resolve(
    execute({
      schema,
      document: request.document,
      contextValue: request.context,
      variableValues: request.request.variables,
      operationName: request.operationName,
    }),
  );
}

/**
 * graphql-jit's errors are its own GraphQLError subclass, built without `extensions`, which Apollo
 * reads while formatting (it would answer every resolver error as a 500 about `code`). graphql-js
 * builds a field's error from what the resolver threw, taking its extensions; so does this.
 */
export function asGraphQLJsError(error: GraphQLError): GraphQLError {
  const converted = new GraphQLError(error.message, { path: error.path, originalError: error.originalError });
  if (error.locations) (converted as { locations?: GraphQLError['locations'] }).locations = error.locations;
  return converted;
}

/** The compiled function of each document (by Apollo's query hash and operation name), least recently used dropped first. */
class CompiledDocuments {
  private readonly byKey = new Map<string, CompiledQuery | null>();

  constructor(
    private readonly schema: GraphQLSchema,
    private readonly max: number,
    private readonly compile: typeof compileQuery,
  ) {}

  /** The document's compiled function; undefined where graphql-jit refuses it (graphql-js runs it then). */
  get(request: GatewayGraphQLRequestContext): CompiledQuery | undefined {
    const key = `${request.queryHash}\u0000${request.operationName ?? ''}`;
    let compiled = this.byKey.get(key);
    if (compiled === undefined) {
      const result = this.compile(this.schema, request.document, request.operationName ?? undefined);
      compiled = isCompiledQuery(result) ? result : null;
    } else {
      this.byKey.delete(key);
    }
    this.byKey.set(key, compiled);
    if (this.byKey.size > this.max) this.byKey.delete(this.byKey.keys().next().value as string);
    return compiled ?? undefined;
  }
}
