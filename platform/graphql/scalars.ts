export { GraphQLJSON, GraphQLJSONObject, GraphQLDateTime } from 'graphql-scalars';
