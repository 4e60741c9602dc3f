import type { TokenVerifier } from '../../platform/auth/verifier.js';
import type { Logger } from '../../platform/observability/logger.js';
import type { Metrics } from '../../platform/observability/metrics.js';
import { pipeline, type EndpointTable, type Handler } from '../../platform/http/pipeline.js';
import { answerWithEndpoint } from '../../platform/http/serve.js';
import { accessLog } from '../../platform/http/stages/access-log.js';
import { authenticate, tenantGuard } from '../../platform/http/stages/authenticate.js';
import { readBody } from '../../platform/http/stages/body.js';
import { compression } from '../../platform/http/stages/compression.js';
import { cors, type CorsOrigins } from '../../platform/http/stages/cors.js';
import { errorReplies } from '../../platform/http/stages/error-replies.js';
import { prepare } from '../../platform/http/stages/prepare.js';
import { requestId } from '../../platform/http/stages/request-id.js';
import { route } from '../../platform/http/stages/route.js';
import { traceContext } from '../../platform/http/stages/trace-context.js';
import { idempotency, idempotencyKey } from '../../platform/idempotency/stage.js';
import type { IdempotencyStore } from '../../platform/idempotency/store.js';

export interface FrontDoorDeps {
  logger: Logger;
  metrics?: Metrics;
  verifier: TokenVerifier;
  idempotency: IdempotencyStore;
  corsOrigins: CorsOrigins;
  maxBodyBytes: number;
  /** Asked in order: probes, GraphiQL, /graphql, REST-compat. */
  endpoints: readonly EndpointTable[];
}

/**
 * Every request to the gateway passes these stages, in this order, then the endpoint answers:
 * Apollo for /graphql, the route table for REST, or an operations endpoint. Each stage is one
 * concern and is tested on its own (test/unit/http/).
 */
export function frontDoor(deps: FrontDoorDeps): Handler {
  return pipeline(
    [
      requestId(),
      traceContext('gateway'),
      accessLog({ service: 'gateway', logger: deps.logger, metrics: deps.metrics }),
      cors(deps.corsOrigins),
      compression(),
      errorReplies(deps.logger),
      route(deps.endpoints),
      // The caller is known from its headers before a byte of its body is read: a client without
      // a valid token cannot hold a connection open by sending its body slowly.
      authenticate(deps.verifier),
      tenantGuard(),
      readBody(deps.maxBodyBytes),
      idempotencyKey(),
      prepare(),
      idempotency(deps.idempotency, deps.logger),
    ],
    answerWithEndpoint,
  );
}
