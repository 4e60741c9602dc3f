import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS; under NodeNext its default export arrives wrapped or not depending on the loader.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv2020,
) => Ajv2020;

type JsonObject = Record<string, unknown>;

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

/** One operation of the document: `GET` and `/api/v1/courses/{courseId}` as the document names it. */
export interface OperationRef {
  method: string;
  path: string;
}

const DOCUMENT_ID = 'urn:test:openapi.json';
/** A JSON Pointer (RFC 6901) as a URI fragment. */
const pointer = (...segments: string[]) =>
  segments.map((s) => encodeURIComponent(s.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/');

/**
 * Checks real answers against the OpenAPI document: the status is documented for the operation,
 * each required header is present, the body is of a documented media type and valid against its
 * schema (a problem's `code` is one of those listed for the status), and a bodiless answer is
 * documented as one. Returns what is wrong, so a test can show every violation at once.
 */
export function contractChecker(document: JsonObject) {
  const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
  ajv.addSchema(document, DOCUMENT_ID);
  const compiled = new Map<string, ValidateFunction>();
  const validator = (ref: string) => {
    if (!compiled.has(ref)) compiled.set(ref, ajv.compile({ $ref: `${DOCUMENT_ID}#/${ref}` }));
    return compiled.get(ref)!;
  };
  const paths = document.paths as Record<string, Record<string, JsonObject>>;

  return function check(operation: OperationRef, answer: Answer): string[] {
    const method = operation.method.toLowerCase();
    const op = paths[operation.path]?.[method];
    if (!op) return [`${operation.method} ${operation.path} is not in the document`];
    const responses = op.responses as Record<string, JsonObject>;
    const response = responses[String(answer.status)];
    const where = `${operation.method} ${operation.path} → ${answer.status}`;
    if (!response) return [`${where}: status not documented (documented: ${Object.keys(responses).join(', ')})`];
    const problems: string[] = [];
    for (const [name, header] of Object.entries((response.headers ?? {}) as Record<string, { required?: boolean }>)) {
      if (header.required && !answer.headers.has(name)) problems.push(`${where}: header ${name} is missing`);
    }
    const content = response.content as Record<string, unknown> | undefined;
    if (!content) {
      if (answer.text !== '') problems.push(`${where}: documented without a body, answered ${answer.text.slice(0, 200)}`);
      return problems;
    }
    const type = (answer.headers.get('content-type') ?? '').split(';')[0].trim();
    if (!(type in content))
      return [...problems, `${where}: media type ${type} not documented (${Object.keys(content).join(', ')})`];
    // A JSON Lines body (a receipt export) is one string to its schema; any other is one JSON document.
    let body: unknown = answer.text;
    if (type !== 'application/jsonl')
      try {
        body = JSON.parse(answer.text);
      } catch {
        return [...problems, `${where}: the body is not JSON: ${answer.text.slice(0, 200)}`];
      }
    const validate = validator(
      pointer('paths', operation.path, method, 'responses', String(answer.status), 'content', type, 'schema'),
    );
    if (!validate(body)) {
      problems.push(
        `${where}: body does not match its schema: ${ajv.errorsText(validate.errors)} in ${answer.text.slice(0, 300)}`,
      );
    }
    return problems;
  };
}
