import { buildSubgraphSchema } from '@apollo/subgraph';
import { printSchemaWithDirectives, type IResolvers } from '@graphql-tools/utils';
import { parse, specifiedDirectives, type GraphQLFieldResolver, type GraphQLSchema } from 'graphql';
import { buildSchema, createResolversMap, type BuildSchemaOptions } from 'type-graphql';

const FEDERATION_LINK =
  'extend schema @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key", "@shareable", "@external", "@requires"])';

/**
 * type-graphql builds the schema from the decorated classes; @apollo/subgraph then turns its SDL
 * (directives included) into a subgraph with `_entities`/`_service`. Reference resolvers are merged
 * into the same resolver map because type-graphql has no notion of `__resolveReference`, and
 * @apollo/subgraph only records it when it attaches the resolvers itself.
 */
export async function buildFederatedSchema(
  options: Omit<BuildSchemaOptions, 'skipCheck'>,
  referenceResolvers?: IResolvers,
  /** Wraps every root Mutation field's resolver (the subgraphs record keyed effects with it). */
  aroundMutation?: (resolve: GraphQLFieldResolver<unknown, unknown>) => GraphQLFieldResolver<unknown, unknown>,
): Promise<GraphQLSchema> {
  const schema = await buildSchema({
    ...options,
    directives: [...specifiedDirectives, ...(options.directives ?? [])],
    skipCheck: true,
    validate: false,
  });
  const sdl = `${FEDERATION_LINK}\n${printSchemaWithDirectives(schema)}`;
  const resolvers = createResolversMap(schema) as Record<string, Record<string, unknown>>;
  for (const [typeName, fields] of Object.entries(referenceResolvers ?? {})) {
    resolvers[typeName] = { ...(resolvers[typeName] ?? {}), ...(fields as Record<string, unknown>) };
  }
  if (aroundMutation && resolvers.Mutation) {
    for (const [field, resolve] of Object.entries(resolvers.Mutation)) {
      resolvers.Mutation[field] = aroundMutation(resolve as GraphQLFieldResolver<unknown, unknown>);
    }
  }
  return buildSubgraphSchema([{ typeDefs: parse(sdl), resolvers: resolvers as never }]);
}
