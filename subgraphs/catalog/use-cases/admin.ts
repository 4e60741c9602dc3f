import type { Tx } from '../../../platform/db/database.js';
import type { Actor, CatalogEmitter } from '../outbox-port.js';

/** Who is acting and how to stamp and emit, for one admin mutation in one transaction. */
export interface AdminCommandContext {
  tx: Tx;
  tenantId: string;
  actor: Actor;
  events: CatalogEmitter;
  now: Date;
  /** The request id: ties the admin edit's stamp to the request in logs and events. */
  requestId: string;
  gdprZeroingRetentionClasses: readonly string[];
}
