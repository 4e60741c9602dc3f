import { Writable } from 'node:stream';
import { ROOT_CONTEXT, context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, scrubText, scrubValue } from '../../../platform/observability/logger.js';
import { withRequestScope } from '../../../platform/observability/request-scope.js';

const JWT = 'eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJzdmM6dGVzdCIsInRpZCI6InRlbl8xIn0.c2lnbmF0dXJlLXNpZ25hdHVyZQ';
const PROMPT = 'Summarise the chart of patient Jane Roe, born 1970-01-02';
const SECRET = 'vault-s3cr3t-value-91f2';

function capture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  return { logger: createLogger({ level: 'debug', destination }), lines, text: () => lines.join('\n') };
}

describe('scrubbing', () => {
  it('censors sensitive keys at any depth, whatever their case or separator', () => {
    const out = scrubValue({
      a: { b: { c: { headers: { Authorization: `Bearer ${JWT}`, 'x-api-key': SECRET } } } },
      request: { body: { variables: { input: { prompt: PROMPT } } } },
      provider: { api_key: SECRET, Output_Text: 'the answer' },
      keep: { featureKey: 'portal.triage', count: 3 },
    });
    expect(JSON.stringify(out)).not.toContain(JWT);
    expect(JSON.stringify(out)).not.toContain(SECRET);
    expect(JSON.stringify(out)).not.toContain(PROMPT);
    expect(JSON.stringify(out)).not.toContain('the answer');
    expect(out).toMatchObject({ keep: { featureKey: 'portal.triage', count: 3 } });
  });

  it('removes tokens and key=value secrets from free text', () => {
    expect(scrubText(`verification of ${JWT} failed`)).toBe('verification of [redacted] failed');
    expect(scrubText('header was Bearer abcdefghijklmnop')).toBe('header was Bearer [redacted]');
    expect(scrubText(`GET /x?api_key=${SECRET}&a=1`)).toBe('GET /x?api_key=[redacted]&a=1');
    expect(scrubText('provider key sk-live-0123456789abcdef')).toBe('provider key [redacted]');
  });
});

describe('createLogger', () => {
  const manager = new AsyncLocalStorageContextManager();
  beforeAll(() => context.setGlobalContextManager(manager.enable()));
  afterAll(() => {
    context.disable();
  });

  it('never writes a token, a secret or prompt/output text, whatever the call site passes', () => {
    const { logger, text, lines } = capture();
    logger.info({ headers: { authorization: `Bearer ${JWT}` } }, 'incoming');
    logger.info({ deep: { deeper: { deepest: { token: JWT, secret: SECRET } } } }, 'nested');
    logger.warn({ err: new Error(`provider rejected api_key=${SECRET} (Authorization: Bearer ${JWT})`) }, 'provider failed');
    logger.error({ err: `upstream said Bearer ${JWT}` }, 'string error');
    logger.info({ assist: { prompt: PROMPT, renderedPrompt: PROMPT, output: 'model output text' } }, 'assist');
    logger.info(`message text with ${JWT}`);
    logger.child({ vaultToken: SECRET }).info('child binding');
    expect(lines).toHaveLength(7);
    expect(text()).not.toContain(JWT);
    expect(text()).not.toContain(PROMPT);
    expect(text()).not.toContain('model output text');
    expect(text()).not.toContain(SECRET);
    expect(text()).toContain('[redacted]');
  });

  it('adds the request id, trace id and tenant of the request being served to every line', () => {
    const { logger, lines } = capture();
    const span = trace.wrapSpanContext({
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      traceFlags: 1,
    });
    const scoped = withRequestScope(trace.setSpan(ROOT_CONTEXT, span), { requestId: 'req_1', tenantId: 'ten_1' });
    context.with(scoped, () => logger.info({ step: 'inside' }, 'in request'));
    logger.info('outside any request');
    const [inside, outside] = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(inside).toMatchObject({
      requestId: 'req_1',
      tenantId: 'ten_1',
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      step: 'inside',
    });
    expect(outside.requestId).toBeUndefined();
    // A child logger that already binds the ids keeps one copy of each key.
    const child = capture();
    context.with(scoped, () => child.logger.child({ requestId: 'req_1' }).info('child'));
    expect(child.lines[0].match(/"requestId"/g)).toHaveLength(1);
  });
});
