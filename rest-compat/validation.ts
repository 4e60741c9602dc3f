import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { AppError } from '../platform/errors/errors.js';

// ajv-formats is CommonJS; under NodeNext its default export arrives wrapped or not depending on the loader.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv2020,
) => Ajv2020;

export type JsonSchema = Record<string, unknown>;
export type RequestPart = 'body' | 'query' | 'path';

/** Bodies are taken literally; query strings are text, so only there do "20" and 20 mean the same. */
const strict = addFormats(new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true }));
const coercing = addFormats(new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true, coerceTypes: true }));

export interface Validator {
  /** Returns the value (coerced for query strings) or throws 400 request.validation_failed. */
  (value: unknown): unknown;
}

export function compileValidator(schema: JsonSchema, part: RequestPart): Validator {
  const validate: ValidateFunction = (part === 'query' ? coercing : strict).compile(schema);
  return (value) => {
    if (validate(value)) return value;
    throw validationError(part, (validate.errors ?? []).map(describe));
  };
}

export interface FieldError {
  /** JSON Pointer (RFC 6901) to the failing member, '' for the whole document. */
  path: string;
  message: string;
}

export function validationError(part: RequestPart, errors: FieldError[]): AppError {
  const [first] = errors;
  const where = first.path === '' ? `the request ${part}` : `${part} ${first.path}`;
  return new AppError('request.validation_failed', `Invalid ${where}: ${first.message}`, {
    status: 400,
    details: { location: part, path: first.path, errors: errors.slice(0, 20) },
  });
}

/** Points at the member that is wrong, including the unknown or missing property itself. */
function describe(error: ErrorObject): FieldError {
  const params = error.params as Record<string, unknown>;
  const escape = (name: string) => name.replace(/~/g, '~0').replace(/\//g, '~1');
  if (error.keyword === 'additionalProperties') {
    return { path: `${error.instancePath}/${escape(String(params.additionalProperty))}`, message: 'is not an allowed field' };
  }
  if (error.keyword === 'required') {
    return { path: `${error.instancePath}/${escape(String(params.missingProperty))}`, message: 'is required' };
  }
  if (error.propertyName !== undefined || error.keyword === 'propertyNames') {
    const name = error.propertyName ?? String(params.propertyName);
    return { path: `${error.instancePath}/${escape(name)}`, message: 'is not an allowed name' };
  }
  return { path: error.instancePath, message: error.message ?? 'is invalid' };
}
