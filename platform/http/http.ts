import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppError, answerableError, isAppError } from '../errors/errors.js';
import type { Logger } from '../observability/logger.js';

export type Headers = Record<string, string>;

export function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Reads the body up to `limit` bytes; a larger body is refused without buffering the rest. A
 * client that goes away mid-body is its own choice, not our failure: `request.client_closed`
 * (nginx's 499), which nothing logs but the request's one access-log line.
 */
export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) throw new AppError('request.payload_too_large', `The request body exceeds ${limit} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > limit) throw new AppError('request.payload_too_large', `The request body exceeds ${limit} bytes`);
      chunks.push(chunk as Buffer);
    }
  } catch (error) {
    if (isAppError(error) || !(req.destroyed || req.socket?.destroyed)) throw error;
    throw new AppError('request.client_closed', 'The client closed the connection before sending the whole body', {
      status: 499,
    });
  }
  return Buffer.concat(chunks);
}

export function isJsonContentType(value: string | undefined): boolean {
  if (!value) return false;
  const type = value.split(';')[0].trim().toLowerCase();
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

/**
 * JSON nested deeper than this is refused: the code that reads a body after parsing (the
 * Idempotency-Key fingerprint, schema validation, GraphQL coercion) recurses, and a body of a few
 * thousand levels exhausts the stack (a 500) long before it reaches the size limit.
 */
export const MAX_JSON_DEPTH = 64;

/** Whether `value` nests objects or arrays more than `max` levels deep (iteratively, so it cannot overflow). */
export function nestedDeeperThan(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth > max) return true;
    for (const child of Object.values(node)) if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
  }
  return false;
}

/**
 * Whether any key or string value is not well-formed UTF-16 (a lone surrogate, which JSON's
 * `\ud800` escape can carry). Such text has no UTF-8 form: the canonical JSON behind the
 * Idempotency-Key fingerprint refuses it and Postgres would store a replacement character, so it is
 * refused at the door as the client's mistake rather than failing later as a 500.
 */
export function holdsIllFormedText(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length) {
    const node = stack.pop();
    if (typeof node === 'string') {
      if (!node.isWellFormed()) return true;
      continue;
    }
    if (node === null || typeof node !== 'object') continue;
    for (const [key, child] of Object.entries(node)) {
      if (!key.isWellFormed()) return true;
      stack.push(child);
    }
  }
  return false;
}

/** Parses a JSON body; only JSON media types are accepted (415 otherwise). */
export async function readJson(req: IncomingMessage, limit: number): Promise<unknown> {
  const raw = await readBody(req, limit);
  if (raw.length === 0) return undefined;
  if (!isJsonContentType(header(req, 'content-type'))) {
    throw new AppError('request.unsupported_media_type', 'Only application/json request bodies are accepted');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new AppError('BAD_USER_INPUT', 'The request body is not valid JSON');
  }
  if (nestedDeeperThan(parsed, MAX_JSON_DEPTH)) {
    throw new AppError('BAD_USER_INPUT', `The request body nests deeper than ${MAX_JSON_DEPTH} levels`);
  }
  if (holdsIllFormedText(parsed)) {
    throw new AppError('BAD_USER_INPUT', 'The request body holds text that is not well-formed Unicode (a lone surrogate)');
  }
  return parsed;
}

export function send(res: ServerResponse, status: number, body: string | Buffer, headers: Headers = {}): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Headers = {}): void {
  send(res, status, JSON.stringify(body), { 'content-type': 'application/json; charset=utf-8', ...headers });
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  instance?: string;
  [extension: string]: unknown;
}

/** RFC 9457 problem details; internal errors never expose their message or stack. */
export function toProblem(error: unknown, logger?: Logger): { problem: Problem; headers: Headers } {
  const known = answerableError(error);
  if (known && !isAppError(error)) logger?.warn({ err: (error as Error).message }, 'database unreachable');
  if (known) {
    return {
      problem: {
        type: `urn:problem:${known.code}`,
        title: titleFor(known.status),
        status: known.status,
        detail: known.message,
        code: known.code,
        ...(known.details ?? {}),
      },
      headers: known.headers ?? {},
    };
  }
  logger?.error({ err: error }, 'unhandled error');
  return {
    problem: {
      type: 'urn:problem:INTERNAL_SERVER_ERROR',
      title: 'Internal Server Error',
      status: 500,
      detail: 'An internal error occurred',
      code: 'INTERNAL_SERVER_ERROR',
    },
    headers: {},
  };
}

export function sendProblem(res: ServerResponse, error: unknown, logger?: Logger, extraHeaders: Headers = {}): void {
  const { problem, headers } = toProblem(error, logger);
  send(res, problem.status, JSON.stringify(problem), {
    'content-type': 'application/problem+json; charset=utf-8',
    ...headers,
    ...extraHeaders,
  });
}

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  412: 'Precondition Failed',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  428: 'Precondition Required',
  429: 'Too Many Requests',
  499: 'Client Closed Request',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
};

function titleFor(status: number): string {
  return TITLES[status] ?? 'Error';
}
