/**
 * The checks of Redocly's `recommended` ruleset (OpenAPI 3.1) that apply to a document like ours,
 * done on the generated document in a unit test's time (the real linter, `@redocly/openapi-core`,
 * runs in test/integration/rest/openapi-clients.test.ts). Each finding is `rule: where: what`, the rule named as Redocly names it; a rule that
 * Redocly rates a warning is a finding too (we want none of either). Also flags object schemas
 * that admit no member at all, which `openapi-typescript` turns into `Record<string, never>`.
 */
type Json = Record<string, unknown>;

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

function resolve(document: Json, value: unknown): unknown {
  if (!isObject(value) || typeof value.$ref !== 'string') return value;
  if (!value.$ref.startsWith('#/')) return undefined;
  let node: unknown = document;
  for (const part of value.$ref.slice(2).split('/'))
    node = isObject(node) ? node[part.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
  return node;
}

/** Every schema object of the document, with a JSON Pointer-ish location. */
function schemasOf(document: Json): Array<{ at: string; schema: Json }> {
  const found: Array<{ at: string; schema: Json }> = [];
  const walkSchema = (schema: unknown, at: string): void => {
    if (!isObject(schema)) return;
    found.push({ at, schema });
    for (const key of ['items', 'additionalProperties', 'propertyNames', 'not', 'contains'])
      walkSchema(schema[key], `${at}/${key}`);
    for (const key of ['allOf', 'anyOf', 'oneOf', 'prefixItems']) {
      if (Array.isArray(schema[key])) (schema[key] as unknown[]).forEach((member, i) => walkSchema(member, `${at}/${key}/${i}`));
    }
    for (const key of ['properties', 'patternProperties', '$defs']) {
      if (isObject(schema[key]))
        for (const [name, member] of Object.entries(schema[key])) walkSchema(member, `${at}/${key}/${name}`);
    }
  };
  const walkContent = (content: unknown, at: string) => {
    if (isObject(content))
      for (const [type, media] of Object.entries(content)) if (isObject(media)) walkSchema(media.schema, `${at}/${type}`);
  };
  const components = isObject(document.components) ? document.components : {};
  for (const [name, schema] of Object.entries(isObject(components.schemas) ? components.schemas : {})) {
    walkSchema(schema, `#/components/schemas/${name}`);
  }
  for (const [name, parameter] of Object.entries(isObject(components.parameters) ? components.parameters : {})) {
    if (isObject(parameter)) walkSchema(parameter.schema, `#/components/parameters/${name}`);
  }
  for (const [path, item] of Object.entries(isObject(document.paths) ? document.paths : {})) {
    for (const [method, operation] of Object.entries(isObject(item) ? item : {})) {
      if (!isObject(operation)) continue;
      const at = `${method.toUpperCase()} ${path}`;
      for (const parameter of (operation.parameters as unknown[] | undefined) ?? []) {
        if (isObject(parameter) && parameter.schema) walkSchema(parameter.schema, `${at} parameter ${String(parameter.name)}`);
      }
      if (isObject(operation.requestBody)) walkContent(operation.requestBody.content, `${at} requestBody`);
      for (const [status, response] of Object.entries(isObject(operation.responses) ? operation.responses : {})) {
        if (!isObject(response)) continue;
        walkContent(response.content, `${at} ${status}`);
        for (const [name, header] of Object.entries(isObject(response.headers) ? response.headers : {})) {
          if (isObject(header)) walkSchema(header.schema, `${at} ${status} header ${name}`);
        }
      }
    }
  }
  return found;
}

/** The members a schema declares, its own and those of its allOf and anyOf parts (as Redocly elevates them). */
function declaredProperties(document: Json, schema: unknown, seen = new Set<unknown>()): Set<string> {
  const node = resolve(document, schema);
  if (!isObject(node) || seen.has(node)) return new Set();
  seen.add(node);
  const names = new Set(Object.keys(isObject(node.properties) ? node.properties : {}));
  for (const key of ['allOf', 'anyOf']) {
    for (const part of (node[key] as unknown[] | undefined) ?? [])
      for (const name of declaredProperties(document, part, seen)) names.add(name);
  }
  return names;
}

const typesOf = (schema: Json): string[] =>
  Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type as string] : [];

function enumMismatch(schema: Json): boolean {
  const types = typesOf(schema);
  if (!types.length || !Array.isArray(schema.enum)) return false;
  const typeOf = (value: unknown) =>
    value === null ? 'null' : Array.isArray(value) ? 'array' : Number.isInteger(value) ? ['integer', 'number'] : typeof value;
  return schema.enum.some((value) => {
    const actual = typeOf(value);
    return Array.isArray(actual) ? !actual.some((type) => types.includes(type)) : !types.includes(actual);
  });
}

/** An object schema a generator can only type as an object without members. */
function admitsNoMember(schema: Json): boolean {
  if (!typesOf(schema).includes('object')) return false;
  if (['allOf', 'anyOf', 'oneOf', '$ref'].some((key) => key in schema)) return false;
  const hasProperties = isObject(schema.properties) && Object.keys(schema.properties).length > 0;
  const hasPatterns = isObject(schema.patternProperties) && Object.keys(schema.patternProperties).length > 0;
  const open = schema.additionalProperties !== undefined && schema.additionalProperties !== false;
  return !hasProperties && !hasPatterns && !open;
}

export function lintOpenApi(document: Json): string[] {
  const findings: string[] = [];
  const report = (rule: string, at: string, what: string) => findings.push(`${rule}: ${at}: ${what}`);

  const info = isObject(document.info) ? document.info : {};
  const license = info.license;
  if (!isObject(license)) report('info-license', 'info', 'no license');
  else if (!license.url && !license.identifier) report('info-license-strict', 'info.license', 'neither url nor identifier');

  const servers = document.servers;
  if (!Array.isArray(servers) || servers.length === 0) report('no-empty-servers', 'servers', 'none');
  for (const server of Array.isArray(servers) ? servers : []) {
    const url = isObject(server) ? String(server.url ?? '') : '';
    if (url.endsWith('/') && url !== '/') report('no-server-trailing-slash', url, 'trailing slash');
    if (/example\.com/.test(url)) report('no-server-example.com', url, 'example.com');
  }

  const tags = Array.isArray(document.tags) ? (document.tags as Json[]) : [];
  const tagNames = tags.map((tag) => String(tag.name));
  if (new Set(tagNames).size !== tagNames.length) report('no-duplicated-tag-names', 'tags', tagNames.join(', '));
  for (const tag of tags) if (!tag.description) report('tag-description', `tag ${String(tag.name)}`, 'no description');

  const operationIds = new Set<string>();
  const securitySchemes =
    isObject(document.components) && isObject(document.components.securitySchemes) ? document.components.securitySchemes : {};
  for (const [path, item] of Object.entries(isObject(document.paths) ? document.paths : {})) {
    if (path.endsWith('/') && path !== '/') report('no-path-trailing-slash', path, 'trailing slash');
    if (path.includes('?')) report('path-not-include-query', path, 'query in path');
    if (/\{\}/.test(path)) report('path-declaration-must-exist', path, 'empty {}');
    const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]);
    for (const [method, operation] of Object.entries(isObject(item) ? item : {})) {
      if (!METHODS.includes(method) || !isObject(operation)) continue;
      const at = `${method.toUpperCase()} ${path}`;
      const id = operation.operationId;
      if (typeof id !== 'string' || !id) report('operation-operationId', at, 'no operationId');
      else {
        if (operationIds.has(id)) report('operation-operationId-unique', at, id);
        operationIds.add(id);
        if (!/^[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=]*$/.test(id)) report('operation-operationId-url-safe', at, id);
      }
      if (typeof operation.summary !== 'string' || !operation.summary) report('operation-summary', at, 'no summary');
      const statuses = Object.keys(isObject(operation.responses) ? operation.responses : {});
      if (!statuses.some((status) => /^2[0-9Xx]{2}$/.test(status))) report('operation-2xx-response', at, 'no 2xx');
      if (!statuses.some((status) => /^4[0-9Xx]{2}$/.test(status))) report('operation-4xx-response', at, 'no 4xx');
      const parameters = ((operation.parameters as unknown[] | undefined) ?? [])
        .map((p) => resolve(document, p))
        .filter(isObject);
      const keys = parameters.map((p) => `${String(p.in)}:${String(p.name)}`);
      if (new Set(keys).size !== keys.length) report('operation-parameters-unique', at, keys.join(', '));
      const inPath = parameters.filter((p) => p.in === 'path').map((p) => String(p.name));
      for (const name of templated) if (!inPath.includes(name)) report('path-parameters-defined', at, `{${name}} not declared`);
      for (const name of inPath) if (!templated.includes(name)) report('path-parameters-defined', at, `${name} not in the path`);
      const security = (operation.security ?? document.security) as unknown;
      if (!Array.isArray(security)) report('security-defined', at, 'no security (use [] for a public operation)');
      for (const requirement of Array.isArray(security) ? security : []) {
        for (const scheme of Object.keys(isObject(requirement) ? requirement : {})) {
          if (!(scheme in securitySchemes)) report('security-defined', at, `unknown scheme ${scheme}`);
        }
      }
      if (Array.isArray(operation.tags)) {
        for (const tag of operation.tags)
          if (!tagNames.includes(String(tag))) report('operation-tag-defined', at, `tag ${String(tag)}`);
      }
    }
  }

  // no-unused-components: every component is referenced somewhere.
  const text = JSON.stringify({ ...document, components: undefined });
  const componentText = JSON.stringify(document.components ?? {});
  for (const kind of ['schemas', 'parameters', 'responses', 'headers', 'requestBodies', 'examples']) {
    const named = isObject(document.components) && isObject(document.components[kind]) ? document.components[kind] : {};
    for (const name of Object.keys(named)) {
      const ref = `"#/components/${kind}/${name}"`;
      const usedOutside = text.includes(ref);
      // A component used only by itself is still unused; count references from other components too.
      const usedByOthers = componentText.split(ref).length - 1 > (JSON.stringify(named[name]).includes(ref) ? 1 : 0);
      if (!usedOutside && !usedByOthers) report('no-unused-components', `#/components/${kind}/${name}`, 'never used');
    }
  }

  for (const { at, schema } of schemasOf(document)) {
    if (schema.type === 'object' && 'items' in schema) report('no-schema-type-mismatch', at, "object with 'items'");
    if (schema.type === 'array' && 'properties' in schema) report('no-schema-type-mismatch', at, "array with 'properties'");
    if (enumMismatch(schema)) report('no-enum-type-mismatch', at, 'enum value of another type');
    if (('minimum' in schema && 'exclusiveMinimum' in schema) || ('maximum' in schema && 'exclusiveMaximum' in schema)) {
      report('no-mixed-number-range-constraints', at, 'inclusive and exclusive bound together');
    }
    if (Array.isArray(schema.required)) {
      const declared = declaredProperties(document, schema);
      for (const name of schema.required)
        if (!declared.has(String(name))) report('no-required-schema-properties-undefined', at, String(name));
    }
    if (admitsNoMember(schema)) report('object-admits-no-member', at, 'openapi-typescript makes this Record<string, never>');
  }
  return findings;
}
