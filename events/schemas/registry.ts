import fs from 'node:fs';
import path from 'node:path';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import { AppError } from '../../platform/errors/errors.js';
import { projectPath, RUNTIME_FILES } from '../../platform/project-files.js';
import { canonicalHash } from '../../platform/text/canonical-json.js';
import { CONSUMED_ENVELOPE_SCHEMA, ENVELOPE_SCHEMA, type ConsumedEnvelope, type EventEnvelope } from './envelope-schema.js';
import { readSchemaUri, type SchemaUriReading } from './schema-uri.logic.js';
import { consumerSchema, producerSchema } from './schema-modes.logic.js';
import type { JsonSchema } from './schema-walk.logic.js';
import type { RegistryInfo } from './dual-publish.logic.js';

export const SCHEMAS_DIR = projectPath(RUNTIME_FILES.eventSchemas);
export const RELEASED_FILE = path.join(SCHEMAS_DIR, 'released.json');

/** One schema file: `<domain>/<aggregate>/<event>/v<N>.json` holds schema `<domain>.<aggregate>.<event>` vN. */
export interface SchemaFile {
  name: string;
  version: number;
  schema: JsonSchema;
}

export interface ReleasedEntry {
  eventType: string;
  version: number;
  releasedAt: string;
  digest: string;
  schema: JsonSchema;
}

export interface ReleasedFile {
  $comment?: string;
  schemas: ReleasedEntry[];
}

/**
 * Event types that share one schema. The AI gateway's audit events differ only in their action,
 * so every `audit.ai.<action>` is validated by `audit.ai.event`.
 */
const SCHEMA_FAMILIES: Array<{ pattern: RegExp; schema: string }> = [
  { pattern: /^audit\.ai\.[a-z][a-z0-9_]*$/, schema: 'audit.ai.event' },
];

export type ValidationMode = 'produce' | 'consume';

/**
 * Domains whose events this service produces. Every other schema file (content, authoring, gdpr)
 * is our reader's copy of another service's schema: the release check lets a reader's copy
 * loosen (see compat.logic.ts), and a consumed event's schemaUri digest is compared with it.
 */
export const PRODUCED_DOMAINS: readonly string[] = ['catalog', 'audit', 'ai'];

export function isReaderCopy(eventType: string): boolean {
  return !PRODUCED_DOMAINS.includes(eventType.split('.')[0]);
}

export interface SchemaRegistry {
  /** Schema names (event types, or `audit.ai.event` for the audit family). */
  names(): string[];
  /** The schema name an event type is validated with, or undefined when none is registered. */
  schemaName(eventType: string): string | undefined;
  versions(eventType: string): number[];
  has(eventType: string, version: number): boolean;
  schema(eventType: string, version: number): JsonSchema;
  digest(eventType: string, version: number): string;
  /** `schemas://<domain>/<aggregate>/<event>/v<N>#sha256-<digest>` */
  schemaUri(eventType: string, version: number): string;
  /** Throws AppError 'schema.invalid_event' with details {path, message} of the first failure. */
  validate(eventType: string, version: number, payload: unknown, mode?: ValidationMode): void;
  /** Envelope shape only; the payload is checked by `validate`. */
  validateEnvelope(value: unknown): asserts value is EventEnvelope;
  /**
   * A consumed envelope, read tolerantly (CONSUMED_ENVELOPE_SCHEMA), and its schemaUri against our
   * copy of the schema: naming another event or version throws 'schema.invalid_event'; the answer
   * says whether the digest was absent, the same or different.
   */
  readConsumedEnvelope(value: unknown): { envelope: ConsumedEnvelope; schemaUri: SchemaUriReading };
  info(eventType: string): RegistryInfo;
}

interface Compiled {
  file: SchemaFile;
  digest: string;
  produce: ValidateFunction;
  consume: ValidateFunction;
}

// ajv-formats is CommonJS: module.exports is the plugin and so is its `default`, which is the
// member NodeNext typing exposes on the default import.
const addFormats = ajvFormats.default;

function newAjv(): Ajv2020 {
  const ajv = new Ajv2020({ allErrors: false, strict: true });
  addFormats(ajv);
  return ajv;
}

export function schemaIdFor(name: string, version: number): string {
  return `schemas://${name.split('.').join('/')}/v${version}`;
}

/** Reads every `<domain>/<aggregate>/<event>/v<N>.json` below `dir`. */
export function readSchemaFiles(dir: string = SCHEMAS_DIR): SchemaFile[] {
  const files: SchemaFile[] = [];
  const walk = (current: string) => {
    for (const entry of fs.readdirSync(current, { withFileTypes: true })) {
      const full = path.join(current, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (/^v[1-9][0-9]*\.json$/.test(entry.name)) {
        const parts = path.relative(dir, full).split(path.sep);
        if (parts.length !== 4) throw new Error(`schema file ${full} is not at <domain>/<aggregate>/<event>/v<N>.json`);
        const name = parts.slice(0, 3).join('.');
        const version = Number(entry.name.slice(1, -'.json'.length));
        const schema = JSON.parse(fs.readFileSync(full, 'utf8')) as JsonSchema;
        if (schema.$id !== schemaIdFor(name, version)) {
          throw new Error(`schema file ${full} has $id ${String(schema.$id)}, expected ${schemaIdFor(name, version)}`);
        }
        files.push({ name, version, schema });
      }
    }
  };
  walk(dir);
  return files.sort((a, b) => a.name.localeCompare(b.name) || a.version - b.version);
}

export function readReleasedFile(file: string = RELEASED_FILE): ReleasedFile {
  if (!fs.existsSync(file)) return { schemas: [] };
  return JSON.parse(fs.readFileSync(file, 'utf8')) as ReleasedFile;
}

/** The registry over the committed schema files and release dates. */
export function loadSchemaRegistry(options: { dir?: string; releasedFile?: string } = {}): SchemaRegistry {
  const dir = options.dir ?? SCHEMAS_DIR;
  return createSchemaRegistry(
    readSchemaFiles(dir),
    readReleasedFile(options.releasedFile ?? path.join(dir, 'released.json')).schemas,
  );
}

export function createSchemaRegistry(files: SchemaFile[], released: ReleasedEntry[] = []): SchemaRegistry {
  const envelopeValidator = newAjv().compile(ENVELOPE_SCHEMA);
  const consumedEnvelopeValidator = newAjv().compile(CONSUMED_ENVELOPE_SCHEMA);
  const byName = compileSchemas(files);
  const releasedAt = new Map(released.map((entry) => [`${entry.eventType}@${entry.version}`, entry.releasedAt]));

  const schemaName = (eventType: string): string | undefined => {
    if (byName.has(eventType)) return eventType;
    return SCHEMA_FAMILIES.find((family) => family.pattern.test(eventType) && byName.has(family.schema))?.schema;
  };
  const lookup = (eventType: string, version: number): Compiled => {
    const name = schemaName(eventType);
    const compiled = name ? byName.get(name)?.get(version) : undefined;
    if (!compiled) {
      throw new AppError('schema.unknown_event', `No schema is registered for ${eventType} v${version}`, {
        details: { eventType, version },
      });
    }
    return compiled;
  };

  return {
    names: () => [...byName.keys()],
    schemaName,
    versions: (eventType) => {
      const name = schemaName(eventType);
      return name ? [...byName.get(name)!.keys()].sort((a, b) => a - b) : [];
    },
    has: (eventType, version) => {
      const name = schemaName(eventType);
      return !!name && !!byName.get(name)?.has(version);
    },
    schema: (eventType, version) => lookup(eventType, version).file.schema,
    digest: (eventType, version) => lookup(eventType, version).digest,
    schemaUri: (eventType, version) => {
      const compiled = lookup(eventType, version);
      return `${schemaIdFor(compiled.file.name, version)}#sha256-${compiled.digest}`;
    },
    validate: (eventType, version, payload, mode = 'produce') => {
      const compiled = lookup(eventType, version);
      const validator = mode === 'produce' ? compiled.produce : compiled.consume;
      if (!validator(payload)) throw invalidEvent(`${eventType} v${version} payload`, validator.errors);
    },
    validateEnvelope(value: unknown): asserts value is EventEnvelope {
      if (!envelopeValidator(value)) throw invalidEvent('event envelope', envelopeValidator.errors);
    },
    readConsumedEnvelope(value) {
      if (!consumedEnvelopeValidator(value)) throw invalidEvent('event envelope', consumedEnvelopeValidator.errors);
      const envelope = value as ConsumedEnvelope;
      return { envelope, schemaUri: checkedSchemaUri(envelope, lookup(envelope.eventType, envelope.eventVersion)) };
    },
    info: (eventType) => {
      const name = schemaName(eventType);
      const versions = name ? [...byName.get(name)!.keys()].sort((a, b) => a - b) : [];
      return {
        eventType,
        versions: versions.map((version) => ({ version, releasedAt: releasedAt.get(`${name}@${version}`) })),
      };
    },
  };
}

/** Every schema file compiled for producing and for consuming, by name and version. */
function compileSchemas(files: SchemaFile[]): Map<string, Map<number, Compiled>> {
  // The same $id may not be compiled twice in one Ajv, and each mode is a different document.
  const produceAjv = newAjv();
  const consumeAjv = newAjv();
  const byName = new Map<string, Map<number, Compiled>>();
  for (const file of files) {
    const versions = byName.get(file.name) ?? new Map<number, Compiled>();
    if (versions.has(file.version)) throw new Error(`schema ${file.name} v${file.version} is registered twice`);
    versions.set(file.version, {
      file,
      digest: canonicalHash(file.schema),
      produce: produceAjv.compile(producerSchema(file.schema)),
      consume: consumeAjv.compile(consumerSchema(file.schema)),
    });
    byName.set(file.name, versions);
  }
  return byName;
}

/** A consumed envelope's schemaUri, read against our copy; one naming another schema is refused. */
function checkedSchemaUri(envelope: ConsumedEnvelope, compiled: Compiled) {
  const schemaUri = readSchemaUri(envelope.schemaUri, {
    id: schemaIdFor(compiled.file.name, envelope.eventVersion),
    digest: compiled.digest,
  });
  if (schemaUri.kind === 'other_schema') {
    throw new AppError(
      'schema.invalid_event',
      `Invalid event envelope: /schemaUri names ${schemaUri.id}, not the schema of ${envelope.eventType} v${envelope.eventVersion}`,
      { details: { path: '/schemaUri', message: 'names another schema' } },
    );
  }
  return schemaUri;
}

function invalidEvent(what: string, errors: ErrorObject[] | null | undefined): AppError {
  const first = errors?.[0];
  const params = (first?.params ?? {}) as { missingProperty?: string; additionalProperty?: string };
  const member = params.missingProperty ?? params.additionalProperty;
  const at = first?.instancePath ?? '';
  const failingPath = member !== undefined ? `${at}/${member}` : at || '/';
  const message = first?.message ?? 'is invalid';
  return new AppError('schema.invalid_event', `Invalid ${what}: ${failingPath} ${message}`, {
    details: { path: failingPath, message },
  });
}
