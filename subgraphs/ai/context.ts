import type { Db } from '../../platform/db/database.js';
import type { RequestInfo } from '../shared/request-context.js';
import type { AiServices } from './services.js';

export interface AiContext extends RequestInfo {
  db: Db;
  now: () => Date;
  services: AiServices;
}
